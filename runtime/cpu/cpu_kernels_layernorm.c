/* runtime/cpu/cpu_kernels_layernorm.c — the layer_norm op: each row of x
 * along the last axis normalised, y = (x - mean) · rsqrt(var + eps) ·
 * gamma + beta, gamma and beta rows of the row length C.
 *
 * Per row, three passes over x (the row stays in cache): the sum, giving
 * the mean; the sum of (x - mean)², giving the (biased) variance — two
 * passes, so no cancellation as in E[x²] - E[x]²; then the output. Sums
 * accumulate in double in LN_LANES independent lanes (so the compiler
 * can vectorise them) and are divided by C once. f32 and f16/bf16 compute
 * in float, f64 in double. For f16/bf16, like the softmax kernel, each
 * step is rounded to the dtype as the same steps written as separate nodes
 * would be: the mean, x - mean, its square, the variance, var + eps, the
 * rsqrt, (x - mean)·rsqrt, ·gamma and +beta; rows are read in chunks of
 * LN_CHUNK values widened to float. Work is split over the pool by rows,
 * so results do not depend on the thread count. Each element of x is read
 * before its output element is written, so an output that is x itself
 * is fine. */
#include "runtime/cpu/cpu_kernels.h"

#include <math.h>
#include <string.h>

/* Values per step of the f16/bf16 row loops (their stack buffers). */
#define LN_CHUNK 1024
/* Independent partial sums per reduction. */
#define LN_LANES 8

typedef struct ln {
    braid_dtype t;   /* the dtype of x, gamma, beta and the output */
    bool half;       /* f16/bf16: steps rounded to the dtype */
    const char *x;   /* x */
    const char *gam; /* gamma [C] */
    const char *bet; /* beta [C] */
    char *out;       /* the output */
    int64_t C;       /* the row length (≥ 1) */
    double eps;      /* attr.value[0] */
} ln;

/* ---- f32 rows ---------------------------------------------------------- */

static double sum_f32(const float *p, int64_t n) {
    double acc[LN_LANES] = {0};
    int64_t k = 0;
    for (; k + LN_LANES <= n; k += LN_LANES)
        for (int j = 0; j < LN_LANES; j++)
            acc[j] += p[k + j];
    double s = 0;
    for (; k < n; k++)
        s += p[k];
    for (int j = 0; j < LN_LANES; j++)
        s += acc[j];
    return s;
}

/* Σ (p - mu)² in double. */
static double sqdev_f32(const float *p, int64_t n, float mu) {
    double acc[LN_LANES] = {0};
    int64_t k = 0;
    for (; k + LN_LANES <= n; k += LN_LANES)
        for (int j = 0; j < LN_LANES; j++) {
            float d = p[k + j] - mu;
            acc[j] += d * d;
        }
    double s = 0;
    for (; k < n; k++) {
        float d = p[k] - mu;
        s += d * d;
    }
    for (int j = 0; j < LN_LANES; j++)
        s += acc[j];
    return s;
}

static void row_f32(const ln *c, int64_t r) {
    int64_t C = c->C;
    const float *x = (const float *)c->x + r * C;
    const float *g = (const float *)c->gam, *b = (const float *)c->bet;
    float *o = (float *)c->out + r * C;
    float mu = (float)(sum_f32(x, C) / (double)C);
    float var = (float)(sqdev_f32(x, C, mu) / (double)C);
    float rs = 1.0f / sqrtf(var + (float)c->eps);
    for (int64_t k = 0; k < C; k++)
        o[k] = (x[k] - mu) * rs * g[k] + b[k];
}

/* ---- f16 / bf16 rows ------------------------------------------------------
 */

/* p[j, j + m) of a row of dtype t as floats in buf. */
static const float *load(braid_dtype t, const char *p, int64_t j, int64_t m,
                         float *buf) {
    br_load_f32(t, p + j * (int64_t)braid_dtype_size(t), 1, m, buf);
    return buf;
}

/* x[0, n) rounded to the dtype t (f16/bf16) and widened back. */
static void round_half(braid_dtype t, float *x, int64_t n) {
    uint16_t tmp[LN_CHUNK];
    br_store_f32(t, tmp, n, x);
    br_load_f32(t, tmp, 1, n, x);
}

static float round1(braid_dtype t, float v) {
    round_half(t, &v, 1);
    return v;
}

static void row_half(const ln *c, int64_t r) {
    int64_t C = c->C;
    braid_dtype t = c->t;
    size_t sz = braid_dtype_size(t);
    const char *x = c->x + r * C * (int64_t)sz;
    char *o = c->out + r * C * (int64_t)sz;
    float buf[LN_CHUNK], gb[LN_CHUNK], bb[LN_CHUNK];
    double s = 0;
    for (int64_t j = 0; j < C; j += LN_CHUNK) {
        int64_t m = C - j < LN_CHUNK ? C - j : LN_CHUNK;
        s += sum_f32(load(t, x, j, m, buf), m);
    }
    float mu = round1(t, (float)(s / (double)C));
    s = 0;
    for (int64_t j = 0; j < C; j += LN_CHUNK) {
        int64_t m = C - j < LN_CHUNK ? C - j : LN_CHUNK;
        load(t, x, j, m, buf);
        for (int64_t k = 0; k < m; k++)
            buf[k] -= mu;
        round_half(t, buf, m);
        for (int64_t k = 0; k < m; k++)
            buf[k] *= buf[k];
        round_half(t, buf, m);
        s += sum_f32(buf, m);
    }
    float var = round1(t, (float)(s / (double)C));
    float rs =
        round1(t, 1.0f / sqrtf(round1(t, var + round1(t, (float)c->eps))));
    for (int64_t j = 0; j < C; j += LN_CHUNK) {
        int64_t m = C - j < LN_CHUNK ? C - j : LN_CHUNK;
        load(t, x, j, m, buf);
        load(t, c->gam, j, m, gb);
        load(t, c->bet, j, m, bb);
        for (int64_t k = 0; k < m; k++)
            buf[k] -= mu;
        round_half(t, buf, m);
        for (int64_t k = 0; k < m; k++)
            buf[k] *= rs;
        round_half(t, buf, m);
        for (int64_t k = 0; k < m; k++)
            buf[k] *= gb[k];
        round_half(t, buf, m);
        for (int64_t k = 0; k < m; k++)
            buf[k] += bb[k];
        br_store_f32(t, o + j * (int64_t)sz, m, buf);
    }
}

/* ---- f64 rows ---------------------------------------------------------- */

static void row_f64(const ln *c, int64_t r) {
    int64_t C = c->C;
    const double *x = (const double *)c->x + r * C;
    const double *g = (const double *)c->gam, *b = (const double *)c->bet;
    double *o = (double *)c->out + r * C;
    double acc[LN_LANES] = {0}, s = 0;
    int64_t k = 0;
    for (; k + LN_LANES <= C; k += LN_LANES)
        for (int j = 0; j < LN_LANES; j++)
            acc[j] += x[k + j];
    for (; k < C; k++)
        s += x[k];
    for (int j = 0; j < LN_LANES; j++) {
        s += acc[j];
        acc[j] = 0;
    }
    double mu = s / (double)C;
    s = 0;
    for (k = 0; k + LN_LANES <= C; k += LN_LANES)
        for (int j = 0; j < LN_LANES; j++)
            acc[j] += (x[k + j] - mu) * (x[k + j] - mu);
    for (; k < C; k++)
        s += (x[k] - mu) * (x[k] - mu);
    for (int j = 0; j < LN_LANES; j++)
        s += acc[j];
    double rs = 1.0 / sqrt(s / (double)C + c->eps);
    for (k = 0; k < C; k++)
        o[k] = (x[k] - mu) * rs * g[k] + b[k];
}

/* ---- the run --------------------------------------------------------------
 */

static void rows(void *ctx, int64_t b, int64_t e) {
    const ln *c = ctx;
    void (*row)(const ln *, int64_t) = c->t == BRAID_F64 ? row_f64
                                       : c->half         ? row_half
                                                         : row_f32;
    for (int64_t r = b; r < e; r++)
        row(c, r);
}

braid_status br_layer_norm_prepare(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    bool ok = n->op == BRAID_OP_LAYER_NORM && n->ninputs == 3 &&
              braid_dtype_is_float(n->dtype) && n->rank >= 1;
    for (uint32_t i = 0; ok && i < 3; i++) {
        const bg_node *p = bg_node_at(g, n->inputs[i]);
        ok = p->dtype == n->dtype &&
             bg_numel(p) == (i == 0 ? bg_numel(n) : n->dims[n->rank - 1]);
    }
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: %s of a %s value has "
                             "no CPU kernel",
                             id, bg_op(n->op)->name,
                             braid_dtype_name(n->dtype));
}

void br_layer_norm_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    int64_t numel = bg_numel(n);
    if (numel == 0) return;
    ln c = {.t = n->dtype,
            .x = a->in[0],
            .gam = a->in[1],
            .bet = a->in[2],
            .out = a->out,
            .C = n->dims[n->rank - 1],
            .eps = n->attr.value[0]};
    c.half = c.t == BRAID_F16 || c.t == BRAID_BF16;
    int64_t nrows = numel / c.C;
    br_parallel_for(a->pool, nrows, c.C >= BR_GRAIN ? 1 : BR_GRAIN / c.C, rows,
                    &c);
}
