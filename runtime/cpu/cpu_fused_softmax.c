/* runtime/cpu/cpu_fused_softmax.c — SOFTMAX programs: softmax over the last
 * axis of the value the program computes (x, maybe a prologue of loads
 * and elementwise ops), row by row.
 *
 * Per row: the max of x (NaN propagating), then e = exp(x - max) and the
 * sum of the e's, then e / sum stored. The steps round as the unfused
 * graph's nodes do: for f16/bf16, x - max and exp(...) are rounded to the
 * dtype, and the sum too before the division; exp is the unfused kernels'
 * own loop (runtime/cpu/cpu_ew.h), sums accumulate in double. So results agree
 * with the unfused plan within the order of the additions.
 *
 * x is evaluated by the tile interpreter: rows no longer than a tile are
 * evaluated several whole rows at a time, once; a longer row is evaluated
 * in pieces for each of its passes (three, or two when the output holds
 * the compute type: the e's are stored there and divided in place). Work
 * is split over the pool by rows, so results do not depend on the thread
 * count. */
#include "runtime/cpu/cpu_ew.h"
#include "runtime/cpu/cpu_fused.h"

#include <math.h>
#include <string.h>

/* Values per step of the row loops (the size of their stack buffers). */
#define SM_CHUNK 1024

typedef struct sm {
    const br_fz *z;  /* x's program over the space (= the output's) */
    braid_dtype t;   /* the output's dtype (= x's): f32, f16, bf16, f64 */
    bool f64;        /* computed in double, else in float */
    bool half;       /* f16/bf16: steps rounded to the dtype */
    bool in_out;     /* the e's are stored in the output, then divided in
                        place (output of the compute type, sharing no
                        input's bytes) */
    char *out;       /* the output */
    int64_t rows, C; /* rows, and the row length (the last dim, ≥ 1) */
    int64_t per;     /* C ≤ tile: whole rows per evaluation, else 0 */
    int64_t piece;   /* positions per evaluation of a long row */
} sm;

/* Where one row's x comes from. */
typedef struct row_src {
    const sm *c;     /* the run */
    br_fz_mem *mem;  /* the thread's tile memory */
    int64_t r;       /* the row */
    bool have;       /* the whole row is in `whole` */
    br_fz_ref whole; /* the row's values (have) */
} row_src;

/* x[j, j + m) of the row (m ≤ the chunk of chunk_of). */
static br_fz_ref part(const row_src *rs, int64_t j, int64_t m) {
    const sm *c = rs->c;
    if (rs->have) {
        br_fz_ref x = rs->whole;
        size_t esz = c->f64 ? sizeof(double) : sizeof(float);
        x.p = (const char *)x.p + j * x.step * (int64_t)esz;
        return x;
    }
    return br_fz_eval(c->z, rs->mem, rs->r * c->C + j, m, NULL);
}

static int64_t chunk_of(const row_src *rs) {
    return rs->have || rs->c->piece > SM_CHUNK ? SM_CHUNK : rs->c->piece;
}

/* x[0, n) rounded to the dtype t (f16/bf16) and widened back. */
static void round_half(braid_dtype t, float *x, int64_t n) {
    uint16_t tmp[SM_CHUNK];
    br_store_f32(t, tmp, n, x);
    br_load_f32(t, tmp, 1, n, x);
}

static float round_one(const sm *c, float v) {
    if (c->half) round_half(c->t, &v, 1);
    return v;
}

/* ---- float rows (f32, f16, bf16) ------------------------------------------
 */

/* max(acc, x[0, m)); NaN once any value is NaN. */
static float max_f32(br_fz_ref x, int64_t m, float acc) {
    const float *p = x.p;
    for (int64_t k = 0; k < m; k++) {
        float v = p[k * x.step];
        if (v > acc || v != v) acc = v;
    }
    return acc;
}

/* e[0, m) = exp(x - mx), rounded like the unfused nodes. */
static void exps_f32(const sm *c, br_fz_ref x, int64_t m, float mx, float *e) {
    float d[SM_CHUNK];
    const float *p = x.p;
    for (int64_t k = 0; k < m; k++)
        d[k] = p[k * x.step] - mx;
    if (c->half) round_half(c->t, d, m);
    br_ew_unary_f32(BRAID_OP_EXP, m, e, d);
    if (c->half) round_half(c->t, e, m);
}

static void row_f32(const row_src *rs) {
    const sm *c = rs->c;
    int64_t C = c->C, ch = chunk_of(rs);
    float mx = -INFINITY, e[SM_CHUNK];
    for (int64_t j = 0; j < C; j += ch) {
        int64_t m = C - j < ch ? C - j : ch;
        mx = max_f32(part(rs, j, m), m, mx);
    }
    float *o = (float *)c->out + rs->r * C;
    double sum = 0;
    for (int64_t j = 0; j < C; j += ch) {
        int64_t m = C - j < ch ? C - j : ch;
        exps_f32(c, part(rs, j, m), m, mx, e);
        for (int64_t k = 0; k < m; k++)
            sum += e[k];
        if (c->in_out) memcpy(o + j, e, (size_t)m * sizeof *e);
    }
    float s = round_one(c, (float)sum);
    if (c->in_out) {
        for (int64_t k = 0; k < C; k++)
            o[k] = o[k] / s;
        return;
    }
    size_t osz = braid_dtype_size(c->t);
    for (int64_t j = 0; j < C; j += ch) {
        int64_t m = C - j < ch ? C - j : ch;
        exps_f32(c, part(rs, j, m), m, mx, e);
        for (int64_t k = 0; k < m; k++)
            e[k] = e[k] / s;
        br_store_f32(c->t, c->out + (rs->r * C + j) * (int64_t)osz, m, e);
    }
}

/* ---- double rows (f64) ------------------------------------------------------
 */

static double max_f64(br_fz_ref x, int64_t m, double acc) {
    const double *p = x.p;
    for (int64_t k = 0; k < m; k++) {
        double v = p[k * x.step];
        if (v > acc || v != v) acc = v;
    }
    return acc;
}

static void exps_f64(br_fz_ref x, int64_t m, double mx, double *e) {
    double d[SM_CHUNK];
    const double *p = x.p;
    for (int64_t k = 0; k < m; k++)
        d[k] = p[k * x.step] - mx;
    br_ew_unary_f64(BRAID_OP_EXP, m, e, d);
}

/* The output is f64, so always in_out unless it shares an input's bytes. */
static void row_f64(const row_src *rs) {
    const sm *c = rs->c;
    int64_t C = c->C, ch = chunk_of(rs);
    double mx = -INFINITY, e[SM_CHUNK], sum = 0;
    for (int64_t j = 0; j < C; j += ch) {
        int64_t m = C - j < ch ? C - j : ch;
        mx = max_f64(part(rs, j, m), m, mx);
    }
    double *o = (double *)c->out + rs->r * C;
    for (int64_t j = 0; j < C; j += ch) {
        int64_t m = C - j < ch ? C - j : ch;
        exps_f64(part(rs, j, m), m, mx, e);
        for (int64_t k = 0; k < m; k++)
            sum += e[k];
        if (c->in_out) memcpy(o + j, e, (size_t)m * sizeof *e);
    }
    if (c->in_out) {
        for (int64_t k = 0; k < C; k++)
            o[k] = o[k] / sum;
        return;
    }
    for (int64_t j = 0; j < C; j += ch) {
        int64_t m = C - j < ch ? C - j : ch;
        exps_f64(part(rs, j, m), m, mx, e);
        for (int64_t k = 0; k < m; k++)
            o[j + k] = e[k] / sum;
    }
}

/* ---- the run
 * ------------------------------------------------------------------ */

/* Unit u: rows u·per .. (short rows, evaluated together), or row u. */
static void units(void *ctx, int64_t b, int64_t e) {
    const sm *c = ctx;
    br_fz_mem mem;
    row_src rs = {.c = c, .mem = &mem};
    size_t esz = c->f64 ? sizeof(double) : sizeof(float);
    for (int64_t u = b; u < e; u++) {
        if (c->per == 0) {
            rs.r = u;
            rs.have = false;
            (c->f64 ? row_f64 : row_f32)(&rs);
            continue;
        }
        int64_t r0 = u * c->per;
        int64_t r1 = r0 + c->per < c->rows ? r0 + c->per : c->rows;
        br_fz_ref all =
            br_fz_eval(c->z, &mem, r0 * c->C, (r1 - r0) * c->C, NULL);
        rs.have = true;
        for (rs.r = r0; rs.r < r1; rs.r++) {
            rs.whole = all;
            rs.whole.p = (const char *)all.p +
                         (rs.r - r0) * c->C * all.step * (int64_t)esz;
            (c->f64 ? row_f64 : row_f32)(&rs);
        }
    }
}

static bool overlaps(const void *a, size_t na, const void *b, size_t nb) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na > 0 && nb > 0 && x < y + nb && y < x + na;
}

/* The output may hold the e's: of the compute type, sharing no input's
 * bytes (the memory pass never computes a softmax in place, but a plan
 * from elsewhere might). */
static bool output_free(const br_kernel_args *a, braid_dtype t) {
    if (t != BRAID_F32 && t != BRAID_F64) return false;
    size_t bytes = bg_nbytes(a->node);
    for (uint32_t k = 0; k < a->node->ninputs; k++)
        if (overlaps(a->out, bytes, a->in[k],
                     bg_nbytes(bg_node_at(a->g, a->node->inputs[k]))))
            return false;
    return true;
}

void br_fz_run_softmax(const br_kernel_args *a) {
    const bp_program *p = a->program;
    int64_t numel = bg_numel(a->node);
    if (numel == 0 || p->rank == 0) return;
    br_fz *z = a->scratch;
    br_fz_setup(z, a, 0, p->ninstr - 1, NULL, BR_FZ_TILE_MAX);
    sm c = {.z = z, .t = a->node->dtype, .out = a->out};
    c.f64 = c.t == BRAID_F64;
    c.half = c.t == BRAID_F16 || c.t == BRAID_BF16;
    c.in_out = output_free(a, c.t);
    c.C = p->dims[p->rank - 1];
    c.rows = numel / c.C;
    int64_t units_n, work;
    if (c.C <= z->tile) {
        c.per = z->tile / c.C;
        units_n = (c.rows + c.per - 1) / c.per;
        work = c.per * c.C;
    } else {
        c.piece = z->tile;
        units_n = c.rows;
        work = c.C;
    }
    br_parallel_for(a->pool, units_n, work >= BR_GRAIN ? 1 : BR_GRAIN / work,
                    units, &c);
}
