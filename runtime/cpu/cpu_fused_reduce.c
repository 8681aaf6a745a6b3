/* runtime/cpu/cpu_fused_reduce.c — REDUCE programs: a reduction of the
 * prologue's values, which are never stored.
 *
 * Two arrangements, chosen from the shape alone (so results do not depend
 * on the thread count):
 *   rows: the innermost non-trivial axes are kept, at least ROW_MIN long
 *     (sum over the rows of a matrix): tiles are blocks of an output row
 *     evaluated row after row of the reduced axes, and accumulated
 *     elementwise, like runtime/cpu/cpu_kernels_reduce.c's inner-kept loop;
 *   runs: otherwise the tile space visits the kept axes first and the
 *     reduced axes last, so each output's R values are one contiguous
 *     stretch of it: tiles inside one output (R ≥ tile: split into pieces
 *     over threads when there are few outputs) or holding whole outputs
 *     (R < tile).
 * Float sums accumulate in double, i32 sums wrap, max/min keep NaN (the
 * meaning of graph/scalar.h; the sums and the axis grouping are
 * runtime/cpu/cpu_reduce.h's, shared with the unfused kernel); the order of
 * additions differs from the unfused kernel, within the f32 tolerance. */
#include "graph/scalar.h"
#include "runtime/cpu/cpu_fused.h"
#include "runtime/cpu/cpu_reduce.h"

#include <string.h>

/* Shortest kept inner run for the rows arrangement. */
#define ROW_MIN 64
/* Longest block of an output row (its accumulators live on the stack). */
#define ROW_BLOCK 1024
/* Outputs below which a long reduction is split into pieces. */
#define FEW_OUTPUTS 16
/* Most pieces (outputs × pieces per output) of a split reduction. */
#define MAX_PIECES 256

typedef struct red {
    const br_fz *z; /* the prologue, set up for the arrangement */
    braid_op op;    /* sum, mean, reduce_max, reduce_min, reduce_prod */
    braid_dtype t;  /* the output's dtype (= the prologue value's) */
    br_fz_ct ct;    /* the prologue value's compute type */
    char *out;      /* the output */
    br_red_groups gr; /* rows: the axis groups; O outputs, R values each */
    /* runs */
    int64_t per;     /* R ≥ tile: tiles per output; else outputs per tile */
    int64_t npieces; /* pieces per output when split (else 1) */
    double *partial; /* split: O × npieces piece results */
    /* rows */
    int64_t W; /* the inner kept run (outputs per row) */
} red;

/* ---- accumulation ----------------------------------------------------------
 */

/* acc combined with v (an i32 sum may hold a uint32 residue). */
static double combine(const red *c, double acc, double v) {
    return bg_reduce_combine(c->op, c->t, acc, v);
}

/* Element i of a tile as a double. */
static double elem(br_fz_ct ct, br_fz_ref r, int64_t i) {
    switch (ct) {
    case BR_FZ_F32:
        return ((const float *)r.p)[i * r.step];
    case BR_FZ_F64:
        return ((const double *)r.p)[i * r.step];
    case BR_FZ_I32:
        return ((const int32_t *)r.p)[i * r.step];
    case BR_FZ_BOOL:
        break;
    }
    return ((const uint8_t *)r.p)[i * r.step];
}

/* The reduction of n values of r from value i0 on. */
static double segment(const red *c, br_fz_ref r, int64_t i0, int64_t n) {
    if (r.step == 0) { /* n copies of one value */
        double v = elem(c->ct, r, 0);
        if (c->op == BRAID_OP_REDUCE_PROD) { /* v^n, as n products */
            double acc = bg_reduce_identity(c->op);
            for (int64_t i = 0; i < n; i++)
                acc = combine(c, acc, v);
            return acc;
        }
        if (!bg_reduce_is_sum(c->op))
            return n > 0 ? combine(c, bg_reduce_identity(c->op), v) : 0;
        if (c->ct == BR_FZ_I32)
            return (uint32_t)((uint32_t)(int32_t)v * (uint64_t)n);
        return v * (double)n;
    }
    r.p = (const char *)r.p + i0 * (int64_t)br_fz_size(c->ct);
    if (bg_reduce_is_sum(c->op)) {
        if (c->ct == BR_FZ_F32) return br_red_sum_f32(r.p, n);
        if (c->ct == BR_FZ_F64) return br_red_sum_f64(r.p, n);
        return br_red_sum_i32(r.p, n);
    }
    double acc = bg_reduce_identity(c->op);
    for (int64_t i = 0; i < n; i++)
        acc = combine(c, acc, elem(c->ct, r, i));
    return acc;
}

/* Writes output o from its accumulated value. */
static void finish(const red *c, int64_t o, double v) {
    br_red_store(c->op, c->t, c->out, o, v, c->gr.R);
}

/* ---- runs: outputs in contiguous stretches of the space -------------------
 */

/* Tiles [t0, t1) of output o's R values, in order. */
static double tiles_of(const red *c, br_fz_mem *mem, int64_t o, int64_t t0,
                       int64_t t1) {
    const br_fz *z = c->z;
    double acc = bg_reduce_identity(c->op);
    for (int64_t t = t0; t < t1; t++) {
        int64_t j = t * z->tile,
                m = c->gr.R - j < z->tile ? c->gr.R - j : z->tile;
        br_fz_ref r = br_fz_eval(z, mem, o * c->gr.R + j, m, NULL);
        acc = combine(c, acc, segment(c, r, 0, m));
    }
    return acc;
}

static void long_outputs(void *ctx, int64_t b, int64_t e) {
    const red *c = ctx;
    br_fz_mem mem;
    for (int64_t o = b; o < e; o++)
        finish(c, o, tiles_of(c, &mem, o, 0, c->per));
}

/* Work item k: piece k % npieces of output k / npieces. */
static void pieces(void *ctx, int64_t b, int64_t e) {
    const red *c = ctx;
    br_fz_mem mem;
    int64_t tpp = (c->per + c->npieces - 1) / c->npieces;
    for (int64_t k = b; k < e; k++) {
        int64_t o = k / c->npieces, t0 = (k % c->npieces) * tpp;
        int64_t t1 = t0 + tpp < c->per ? t0 + tpp : c->per;
        c->partial[k] = tiles_of(c, &mem, o, t0, t1);
    }
}

/* Unit u: the `per` whole outputs from u · per on, in one tile. */
static void short_outputs(void *ctx, int64_t b, int64_t e) {
    const red *c = ctx;
    br_fz_mem mem;
    for (int64_t u = b; u < e; u++) {
        int64_t o0 = u * c->per;
        int64_t o1 = o0 + c->per < c->gr.O ? o0 + c->per : c->gr.O;
        br_fz_ref r =
            br_fz_eval(c->z, &mem, o0 * c->gr.R, (o1 - o0) * c->gr.R, NULL);
        for (int64_t o = o0; o < o1; o++)
            finish(c, o, segment(c, r, (o - o0) * c->gr.R, c->gr.R));
    }
}

static void run_runs(red *c, const br_kernel_args *a) {
    const br_fz *z = c->z;
    int64_t grain;
    if (c->gr.R < z->tile) {
        c->per = z->tile / c->gr.R;
        int64_t units = (c->gr.O + c->per - 1) / c->per;
        grain = (BR_GRAIN + z->tile - 1) / z->tile;
        br_parallel_for(a->pool, units, grain, short_outputs, c);
        return;
    }
    c->per = (c->gr.R + z->tile - 1) / z->tile;
    if (c->gr.O >= FEW_OUTPUTS) {
        grain = c->gr.R >= BR_GRAIN ? 1 : BR_GRAIN / c->gr.R;
        br_parallel_for(a->pool, c->gr.O, grain, long_outputs, c);
        return;
    }
    double partial[MAX_PIECES];
    c->npieces = MAX_PIECES / c->gr.O < c->per ? MAX_PIECES / c->gr.O : c->per;
    int64_t tpp = (c->per + c->npieces - 1) / c->npieces;
    c->npieces = (c->per + tpp - 1) / tpp; /* no empty piece */
    c->partial = partial;
    grain = tpp * z->tile >= BR_GRAIN ? 1 : BR_GRAIN / (tpp * z->tile);
    br_parallel_for(a->pool, c->gr.O * c->npieces, grain, pieces, c);
    for (int64_t o = 0; o < c->gr.O; o++) {
        double acc = bg_reduce_identity(c->op);
        for (int64_t k = 0; k < c->npieces; k++)
            acc = combine(c, acc, partial[o * c->npieces + k]);
        finish(c, o, acc);
    }
}

/* ---- rows: blocks of an output row, accumulated row after row --------------
 */

/* acc[j] combined with the tile's values. */
static void accumulate(const red *c, double *acc, uint32_t *uacc, br_fz_ref r,
                       int64_t m) {
    if (c->ct == BR_FZ_I32 && bg_reduce_is_sum(c->op)) {
        const int32_t *x = r.p;
        for (int64_t j = 0; j < m; j++)
            uacc[j] += (uint32_t)x[j * r.step];
    } else if (bg_reduce_is_sum(c->op) && c->ct == BR_FZ_F32 && r.step == 1) {
        const float *x = r.p;
        for (int64_t j = 0; j < m; j++)
            acc[j] += x[j];
    } else {
        for (int64_t j = 0; j < m; j++)
            acc[j] = combine(c, acc[j], elem(c->ct, r, j));
    }
}

static void row_units(void *ctx, int64_t b, int64_t e) {
    const red *c = ctx;
    br_fz_mem mem;
    double acc[ROW_BLOCK];
    uint32_t uacc[ROW_BLOCK];
    int64_t bl = c->z->tile, nb = (c->W + bl - 1) / bl;
    for (int64_t u = b; u < e; u++) {
        int64_t p = u / nb, j0 = (u % nb) * bl;
        int64_t m = c->W - j0 < bl ? c->W - j0 : bl;
        for (int64_t j = 0; j < m; j++)
            acc[j] = bg_reduce_identity(c->op), uacc[j] = 0;
        int64_t base = br_red_decode(p, c->gr.nk - 1, c->gr.kd, c->gr.ks) + j0;
        for (int64_t r = 0; r < c->gr.R; r++) {
            int64_t s = base + br_red_decode(r, c->gr.nr, c->gr.rd, c->gr.rs);
            accumulate(c, acc, uacc, br_fz_eval(c->z, &mem, s, m, NULL), m);
        }
        bool usum = c->ct == BR_FZ_I32 && bg_reduce_is_sum(c->op);
        for (int64_t j = 0; j < m; j++)
            finish(c, p * c->W + j0 + j, usum ? (double)uacc[j] : acc[j]);
    }
}

static void run_rows(red *c, const br_kernel_args *a) {
    int64_t bl = c->z->tile, nb = (c->W + bl - 1) / bl;
    int64_t work = c->gr.R * bl;
    br_parallel_for(a->pool, c->gr.O / c->W * nb,
                    work >= BR_GRAIN ? 1 : BR_GRAIN / work, row_units, c);
}

/* ---- the arrangement
 * ----------------------------------------------------------- */

/* The iteration dims in groups (runtime/cpu/cpu_reduce.h); returns whether
 * the innermost group is kept. */
static bool analyze(red *c, const bp_program *p) {
    br_red_groups_of(p->rank, p->dims, p->axes, &c->gr);
    c->W = c->gr.last == 0 ? c->gr.kd[c->gr.nk - 1] : 1;
    return c->gr.last == 0;
}

void br_fz_run_reduce(const br_kernel_args *a) {
    const bp_program *p = a->program;
    const bp_instr *rin = &p->instr[p->ninstr - 1];
    red c = {.op = rin->op, .t = rin->dtype, .out = a->out, .npieces = 1};
    c.ct = br_fz_ct_of(c.t);
    bool inner_kept = analyze(&c, p);
    if (c.gr.O == 0) return;
    if (c.gr.R == 0) {
        for (int64_t o = 0; o < c.gr.O; o++)
            finish(&c, o, 0.0);
        return;
    }
    br_fz *z = a->scratch;
    c.z = z;
    uint32_t last = rin->arg[0];
    if (inner_kept && c.W >= ROW_MIN && c.gr.nr > 0) {
        br_fz_setup(z, a, 0, last, NULL, ROW_BLOCK);
        run_rows(&c, a);
        return;
    }
    int perm[BRAID_MAX_RANK], np = 0;
    for (int pass = 0; pass < 2; pass++) /* kept axes, then reduced */
        for (int i = 0; i < p->rank; i++)
            if ((int)((p->axes >> i) & 1) == pass) perm[np++] = i;
    br_fz_setup(z, a, 0, last, perm, BR_FZ_TILE_MAX);
    run_runs(&c, a);
}
