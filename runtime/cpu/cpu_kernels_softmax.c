/* runtime/cpu/cpu_kernels_softmax.c — the softmax op: softmax over the last
 * axis of its one input, row by row.
 *
 * Per row: the max of x (NaN propagating), then e = exp(x - max) and the
 * sum of the e's, then e / sum stored. For f16/bf16, x - max and exp(...)
 * are rounded to the dtype, and the sum too before the division (what the
 * same steps written as separate nodes give); exp is the elementwise
 * kernels' own loop (runtime/cpu/cpu_ew.h), sums accumulate in double.
 * Rows are read in chunks of SM_CHUNK values (widened to float for
 * f16/bf16): the max pass, the exp-and-sum pass, and — unless the e's could
 * be kept in the output (f32/f64 output sharing no input's bytes) — a
 * second exp pass that divides. Work is split over the pool by rows, so
 * results do not depend on the thread count. */
#include "runtime/cpu/cpu_ew.h"
#include "runtime/cpu/cpu_kernels.h"

#include <math.h>
#include <string.h>

/* Values per step of the row loops (the size of their stack buffers). */
#define SM_CHUNK 1024

typedef struct sm {
    braid_dtype t;  /* the dtype of x and the output: f32, f16, bf16, f64 */
    bool half;      /* f16/bf16: steps rounded to the dtype */
    bool in_out;    /* the e's are stored in the output, then divided in
                       place (output of the compute type, sharing no
                       input's bytes) */
    const char *in; /* x */
    char *out;      /* the output */
    int64_t C;      /* the row length (the last dim, ≥ 1) */
} sm;

/* x[j, j + m) of row r as floats: in place for f32, else widened into buf
 * (m ≤ SM_CHUNK). */
static const float *part_f32(const sm *c, int64_t r, int64_t j, int64_t m,
                             float *buf) {
    int64_t at = r * c->C + j;
    if (c->t == BRAID_F32) return (const float *)c->in + at;
    br_load_f32(c->t, c->in + at * (int64_t)braid_dtype_size(c->t), 1, m, buf);
    return buf;
}

/* x[0, n) rounded to the dtype t (f16/bf16) and widened back. */
static void round_half(braid_dtype t, float *x, int64_t n) {
    uint16_t tmp[SM_CHUNK];
    br_store_f32(t, tmp, n, x);
    br_load_f32(t, tmp, 1, n, x);
}

/* ---- float rows (f32, f16, bf16) ------------------------------------------
 */

/* max(acc, x[0, m)); NaN once any value is NaN. */
static float max_f32(const float *p, int64_t m, float acc) {
    for (int64_t k = 0; k < m; k++) {
        float v = p[k];
        if (v > acc || v != v) acc = v;
    }
    return acc;
}

/* e[0, m) = exp(x - mx), rounded to the dtype step by step. */
static void exps_f32(const sm *c, const float *p, int64_t m, float mx,
                     float *e) {
    float d[SM_CHUNK];
    for (int64_t k = 0; k < m; k++)
        d[k] = p[k] - mx;
    if (c->half) round_half(c->t, d, m);
    br_ew_unary_f32(BRAID_OP_EXP, m, e, d);
    if (c->half) round_half(c->t, e, m);
}

static void row_f32(const sm *c, int64_t r) {
    int64_t C = c->C;
    float mx = -INFINITY, e[SM_CHUNK], buf[SM_CHUNK];
    for (int64_t j = 0; j < C; j += SM_CHUNK) {
        int64_t m = C - j < SM_CHUNK ? C - j : SM_CHUNK;
        mx = max_f32(part_f32(c, r, j, m, buf), m, mx);
    }
    float *o = (float *)c->out + r * C;
    double sum = 0;
    for (int64_t j = 0; j < C; j += SM_CHUNK) {
        int64_t m = C - j < SM_CHUNK ? C - j : SM_CHUNK;
        exps_f32(c, part_f32(c, r, j, m, buf), m, mx, e);
        for (int64_t k = 0; k < m; k++)
            sum += e[k];
        if (c->in_out) memcpy(o + j, e, (size_t)m * sizeof *e);
    }
    float s = (float)sum;
    if (c->half) round_half(c->t, &s, 1);
    if (c->in_out) {
        for (int64_t k = 0; k < C; k++)
            o[k] = o[k] / s;
        return;
    }
    size_t osz = braid_dtype_size(c->t);
    for (int64_t j = 0; j < C; j += SM_CHUNK) {
        int64_t m = C - j < SM_CHUNK ? C - j : SM_CHUNK;
        exps_f32(c, part_f32(c, r, j, m, buf), m, mx, e);
        for (int64_t k = 0; k < m; k++)
            e[k] = e[k] / s;
        br_store_f32(c->t, c->out + (r * C + j) * (int64_t)osz, m, e);
    }
}

/* ---- double rows (f64) ------------------------------------------------------
 */

static double max_f64(const double *p, int64_t m, double acc) {
    for (int64_t k = 0; k < m; k++) {
        double v = p[k];
        if (v > acc || v != v) acc = v;
    }
    return acc;
}

static void exps_f64(const double *p, int64_t m, double mx, double *e) {
    double d[SM_CHUNK];
    for (int64_t k = 0; k < m; k++)
        d[k] = p[k] - mx;
    br_ew_unary_f64(BRAID_OP_EXP, m, e, d);
}

static void row_f64(const sm *c, int64_t r) {
    int64_t C = c->C;
    const double *x = (const double *)c->in + r * C;
    double mx = -INFINITY, e[SM_CHUNK], sum = 0;
    for (int64_t j = 0; j < C; j += SM_CHUNK) {
        int64_t m = C - j < SM_CHUNK ? C - j : SM_CHUNK;
        mx = max_f64(x + j, m, mx);
    }
    double *o = (double *)c->out + r * C;
    for (int64_t j = 0; j < C; j += SM_CHUNK) {
        int64_t m = C - j < SM_CHUNK ? C - j : SM_CHUNK;
        exps_f64(x + j, m, mx, e);
        for (int64_t k = 0; k < m; k++)
            sum += e[k];
        if (c->in_out) memcpy(o + j, e, (size_t)m * sizeof *e);
    }
    if (c->in_out) {
        for (int64_t k = 0; k < C; k++)
            o[k] = o[k] / sum;
        return;
    }
    for (int64_t j = 0; j < C; j += SM_CHUNK) {
        int64_t m = C - j < SM_CHUNK ? C - j : SM_CHUNK;
        exps_f64(x + j, m, mx, e);
        for (int64_t k = 0; k < m; k++)
            o[j + k] = e[k] / sum;
    }
}

/* ---- the run
 * ------------------------------------------------------------------ */

static void rows(void *ctx, int64_t b, int64_t e) {
    const sm *c = ctx;
    for (int64_t r = b; r < e; r++)
        (c->t == BRAID_F64 ? row_f64 : row_f32)(c, r);
}

/* The output may hold the e's: of the compute type, sharing no bytes with
 * x (the memory pass never computes a softmax in place, but a plan from
 * elsewhere might). */
static bool output_free(const br_kernel_args *a, braid_dtype t) {
    if (t != BRAID_F32 && t != BRAID_F64) return false;
    uintptr_t o = (uintptr_t)a->out, x = (uintptr_t)a->in[0];
    size_t n = bg_nbytes(a->node); /* x has the output's shape and dtype */
    return n == 0 || o + n <= x || x + n <= o;
}

braid_status br_softmax_prepare(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    if (n->op == BRAID_OP_SOFTMAX && braid_dtype_is_float(n->dtype) &&
        n->rank >= 1 && x->dtype == n->dtype && bg_numel(x) == bg_numel(n))
        return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: %s of a %s value has "
                             "no CPU kernel",
                             id, bg_op(n->op)->name,
                             braid_dtype_name(n->dtype));
}

void br_softmax_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    int64_t numel = bg_numel(n);
    if (numel == 0) return;
    sm c = {.t = n->dtype, .in = a->in[0], .out = a->out};
    c.half = c.t == BRAID_F16 || c.t == BRAID_BF16;
    c.in_out = output_free(a, c.t);
    c.C = n->dims[n->rank - 1];
    int64_t nrows = numel / c.C;
    br_parallel_for(a->pool, nrows, c.C >= BR_GRAIN ? 1 : BR_GRAIN / c.C, rows,
                    &c);
}
