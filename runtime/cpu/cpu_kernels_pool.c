/* runtime/cpu/cpu_kernels_pool.c — max_pool and avg_pool (kind WINDOW).
 *
 * The geometry is graph/window.h's (every pool seen as 3-D). Work is split
 * over the pool by output rows (one plane, one position of the two outer
 * spatial axes, the whole inner axis), so results do not depend on the
 * thread count. Each output element walks its taps, already clipped to the
 * input (padding reads nothing), in float64: max is exact in any dtype and
 * an average's sum in double divided once and rounded by the store gives
 * the reference's bits (graph/window.c computes the same sum in the same
 * order). f32 and f64 are read directly, f16/bf16/i32 through bg_load.
 * max_pool on f32 (ResNet's stem) has its own row loop, max_rows_f32:
 * whole rows per tap instead of a window walk per element, 16 outputs at a
 * time with AVX-512 where the CPU has it. */
#include "graph/window.h"
#include "runtime/cpu/cpu_kernels.h"

#include <math.h>
#include <stdint.h>

typedef struct pool_ctx {
    bg_window w;   /* the geometry */
    braid_dtype t; /* dtype of x and the output */
    bool max;      /* max_pool, else avg_pool */
    const void *x; /* the input */
    void *out;     /* the output */
} pool_ctx;

/* Window sum or max over taps [j0, j1) per axis starting at input element
 * base (taps' element steps st[]), reading x through LOAD(i). */
#define POOL_TAPS(LOAD)                                                        \
    for (int64_t i = j0[0]; i < j1[0]; i++)                                    \
        for (int64_t j = j0[1]; j < j1[1]; j++) {                              \
            int64_t at = base + i * st[0] + j * st[1];                         \
            for (int64_t k = j0[2]; k < j1[2]; k++) {                          \
                double v = LOAD(at + k * st[2]);                               \
                if (!c->max)                                                   \
                    acc += v;                                                  \
                else if (v > acc || v != v)                                    \
                    acc = v;                                                   \
            }                                                                  \
        }

#define LOAD_F32(i) ((double)((const float *)c->x)[i])
#define LOAD_F64(i) (((const double *)c->x)[i])
#define LOAD_ANY(i) bg_load(c->t, c->x, i)

/* One output element: the taps of position o of plane pl (channels last,
 * a plane's positions are w->inner elements apart). */
static double pool_one(const pool_ctx *c, int64_t pl, const int64_t *o) {
    const bg_window *w = &c->w;
    int64_t j0[3], j1[3], pad[3], st[3], s = 0;
    for (int a = 0; a < 3; a++) {
        bg_window_taps(w, a, o[a], &j0[a], &j1[a], &pad[a]);
        s = s * w->in[a] + o[a] * w->stride[a] - w->pad_lo[a];
    }
    /* s may be negative (a window starting in the pads): bg_window_at's
     * division is of pl, not s, so the offset stays exact */
    int64_t base = bg_window_at(w, pl, w->in[0] * w->in[1] * w->in[2], s);
    st[2] = w->dilation[2] * w->inner;
    st[1] = w->in[2] * w->dilation[1] * w->inner;
    st[0] = w->in[1] * w->in[2] * w->dilation[0] * w->inner;
    double acc = c->max ? -INFINITY : 0;
    if (c->t == BRAID_F32) {
        POOL_TAPS(LOAD_F32)
    } else if (c->t == BRAID_F64) {
        POOL_TAPS(LOAD_F64)
    } else {
        POOL_TAPS(LOAD_ANY)
    }
    if (c->max) return acc;
    int64_t n = (w->flags & BG_POOL_COUNT_PAD)
                    ? pad[0] * pad[1] * pad[2]
                    : (j1[0] - j0[0]) * (j1[1] - j0[1]) * (j1[2] - j0[2]);
    return acc / (double)n;
}

/* Output rows [b, e): row r is plane r / (out0·out1), positions of the
 * outer two axes from the rest; each writes out[2] elements. */
static void pool_rows(void *ctx, int64_t b, int64_t e) {
    const pool_ctx *c = ctx;
    const bg_window *w = &c->w;
    int64_t len = w->out[2];
    double v[BR_BLOCK];
    size_t esz = braid_dtype_size(c->t);
    for (int64_t r = b; r < e; r++) {
        int64_t o[3] = {(r / w->out[1]) % w->out[0], r % w->out[1], 0};
        int64_t pl = r / (w->out[0] * w->out[1]);
        for (int64_t k0 = 0; k0 < len; k0 += BR_BLOCK) {
            int64_t m = len - k0 < BR_BLOCK ? len - k0 : BR_BLOCK;
            for (int64_t k = 0; k < m; k++) {
                o[2] = k0 + k;
                v[k] = pool_one(c, pl, o);
            }
            br_store_f64(c->t, (char *)c->out + (r * len + k0) * (int64_t)esz,
                         m, v);
        }
    }
}

/* Output elements [b, e) of a channels-last pool, one at a time. */
static void pool_elems(void *ctx, int64_t b, int64_t e) {
    const pool_ctx *c = ctx;
    const bg_window *w = &c->w;
    int64_t ovol = w->out[0] * w->out[1] * w->out[2];
    for (int64_t i = b; i < e; i++) {
        int64_t pl, s;
        bg_window_split(w, i, ovol, &pl, &s);
        int64_t o[3] = {s / (w->out[1] * w->out[2]), s / w->out[2] % w->out[1],
                        s % w->out[2]};
        double v = pool_one(c, pl, o);
        br_store_f64(c->t, (char *)c->out + i * (int64_t)braid_dtype_size(c->t),
                     1, &v);
    }
}

/* Most window rows (clipped to the input) and inner-axis taps the AVX-512
 * row loop takes; wider windows take the scalar loop. */
#define POOL_VEC_ROWS 8
#define POOL_VEC_TAPS 8

/* One output row of an f32 max pool, s2 1 or 2: y[k] = the max over the
 * window rows src[i] (nrows of them) and taps t of src[i][k·s2 + b2[t]],
 * for k in [lo[t], hi[t]) of each tap (inside the input), −∞ where no tap
 * reads. 16 outputs at a time with AVX-512, each kept in a register over
 * every tap (masked loads at the row's ends; a stride-2 tap's lanes picked
 * from two loads by a permute), stored once: updating y in memory tap by
 * tap loaded and stored each chunk nine times for ResNet's stem pool (which
 * went 2.48-2.52 -> 2.41-2.44 ms alone, its input in the L3 cache). The
 * same comparisons in the same order as the scalar loop (v > acc or v is NaN:
 * the last NaN in tap order), so the same values. */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void
max_row_avx512(float *y, const float *const *src, int nrows, int ntaps,
               const int64_t *b2, const int64_t *lo, const int64_t *hi,
               int64_t len, int64_t s2) {
    for (int64_t k0 = 0; k0 < len; k0 += 16) {
        int64_t n = len - k0 < 16 ? len - k0 : 16;
        __m512 acc = _mm512_set1_ps(-INFINITY);
        for (int i = 0; i < nrows; i++)
            for (int t = 0; t < ntaps; t++) {
                int64_t l = lo[t] - k0 < 0 ? 0 : lo[t] - k0;
                int64_t h = hi[t] - k0 > n ? n : hi[t] - k0;
                if (h <= l) continue;
                __m512 v = br_load_lanes(src[i] + s2 * k0 + b2[t], s2, l, h);
                __mmask16 m = br_lanes(l, h);
                __mmask16 up = _mm512_mask_cmp_ps_mask(m, v, acc, _CMP_GT_OQ) |
                               _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
                acc = _mm512_mask_mov_ps(acc, up, v);
            }
        _mm512_mask_storeu_ps(y + k0, (__mmask16)((1u << n) - 1), acc);
    }
}

#else
static void max_row_avx512(float *y, const float *const *src, int nrows,
                           int ntaps, const int64_t *b2, const int64_t *lo,
                           const int64_t *hi, int64_t len, int64_t s2) {
    (void)y, (void)src, (void)nrows, (void)ntaps, (void)b2, (void)lo;
    (void)hi, (void)len, (void)s2;
}
#endif

/* Output rows ahead whose newest input row max_rows_f32 asks for: the
 * input of ResNet's stem pool comes from memory (the stem streams it). */
#define POOL_AHEAD 2

/* Inner-axis tap t of an output row of len: output k reads input
 * k·stride + *b2, inside the input for k in [*lo, *hi). */
static void inner_tap(const bg_window *w, int64_t t, int64_t len, int64_t *b2,
                      int64_t *lo, int64_t *hi) {
    int64_t s2 = w->stride[2];
    *b2 = t * w->dilation[2] - w->pad_lo[2];
    *lo = *b2 >= 0 ? 0 : (-*b2 + s2 - 1) / s2;
    *hi = w->in[2] - *b2 <= 0 ? 0 : (w->in[2] - *b2 + s2 - 1) / s2;
    if (*hi > len) *hi = len;
}

/* max_pool on f32, rows [b, e) (as pool_rows): the window's taps on the
 * outer two axes are clipped once per row, and each tap of the inner axis
 * is applied to the whole row at once, over the output positions where it
 * reads inside the input, so the inner loop has no bounds tests. Max does
 * not depend on the taps' order; a NaN tap makes the element NaN, as in
 * pool_one (v > acc fails for every v once acc is NaN). */
static void max_rows_f32(void *ctx, int64_t b, int64_t e) {
    const pool_ctx *c = ctx;
    const bg_window *w = &c->w;
    const float *x = c->x;
    int64_t len = w->out[2], s2 = w->stride[2], ntaps = w->kernel[2];
    /* each inner tap's offset and output range [lo, hi) inside the input,
     * the same for every row */
    int64_t b2[POOL_VEC_TAPS], lo[POOL_VEC_TAPS], hi[POOL_VEC_TAPS];
    bool vec = s2 <= 2 && ntaps <= POOL_VEC_TAPS && br_cpu_avx512f();
    for (int64_t t = 0; vec && t < ntaps; t++)
        inner_tap(w, t, len, &b2[t], &lo[t], &hi[t]);
    for (int64_t r = b; r < e; r++) {
        int64_t o[2] = {(r / w->out[1]) % w->out[0], r % w->out[1]};
        int64_t pl = r / (w->out[0] * w->out[1]);
        int64_t j0[2], j1[2], pad;
        for (int a = 0; a < 2; a++)
            bg_window_taps(w, a, o[a], &j0[a], &j1[a], &pad);
        float *y = (float *)c->out + r * len;
        /* the newest input row the output row POOL_AHEAD rows on reads
         * (the rows before it were read by the rows between) */
        int64_t pn = (o[1] + POOL_AHEAD) * w->stride[1] - w->pad_lo[1] +
                     (w->kernel[1] - 1) * w->dilation[1];
        if (o[1] + POOL_AHEAD < w->out[1] && pn >= 0 && pn < w->in[1]) {
            int64_t p0 = o[0] * w->stride[0] - w->pad_lo[0];
            const char *a =
                (const char *)(x +
                               ((pl * w->in[0] + (p0 < 0 ? 0 : p0)) * w->in[1] +
                                pn) *
                                   w->in[2]);
            for (int64_t l = 0; l < w->in[2] * 4; l += 64)
                __builtin_prefetch(a + l, 0, 3);
        }
        /* the window's rows inside the input */
        const float *rows[POOL_VEC_ROWS];
        bool vrow = vec && (j1[0] - j0[0]) * (j1[1] - j0[1]) <= POOL_VEC_ROWS;
        if (!vrow)
            for (int64_t k = 0; k < len; k++)
                y[k] = -INFINITY;
        int nr = 0;
        for (int64_t i = j0[0]; i < j1[0]; i++)
            for (int64_t j = j0[1]; j < j1[1]; j++) {
                int64_t p0 =
                    o[0] * w->stride[0] - w->pad_lo[0] + i * w->dilation[0];
                int64_t p1 =
                    o[1] * w->stride[1] - w->pad_lo[1] + j * w->dilation[1];
                const float *src =
                    x + ((pl * w->in[0] + p0) * w->in[1] + p1) * w->in[2];
                if (vrow) {
                    rows[nr++] = src;
                    continue;
                }
                for (int64_t t = 0; t < ntaps; t++) {
                    int64_t tb, tl, th;
                    inner_tap(w, t, len, &tb, &tl, &th);
                    for (int64_t k = tl; k < th; k++) {
                        float v = src[k * s2 + tb];
                        y[k] = v > y[k] || v != v ? v : y[k];
                    }
                }
            }
        if (vrow) max_row_avx512(y, rows, nr, (int)ntaps, b2, lo, hi, len, s2);
    }
}

braid_status br_pool_prepare(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    bool ok = n->ninputs == 1 && x->dtype == n->dtype && x->rank == n->rank &&
              x->rank >= 3 && x->rank <= 5 && bg_op_accepts(n->op, n->dtype);
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: %s of a %s value has "
                             "no CPU kernel",
                             id, bg_op(n->op)->name,
                             braid_dtype_name(n->dtype));
}

void br_pool_window_run(br_pool *pool, const bg_window *w, braid_dtype t,
                        bool max, const void *x, void *out) {
    pool_ctx c = {.w = *w, .t = t, .max = max, .x = x, .out = out};
    int64_t rows = c.w.planes * c.w.out[0] * c.w.out[1];
    int64_t taps = c.w.kernel[0] * c.w.kernel[1] * c.w.kernel[2];
    if (c.w.inner > 1) { /* channels last: element by element */
        int64_t n = rows * c.w.out[2], per = taps > 0 ? taps : 1;
        br_parallel_for(pool, n, per >= BR_GRAIN ? 1 : BR_GRAIN / per,
                        pool_elems, &c);
        return;
    }
    int64_t work = c.w.out[2] * (taps > 0 ? taps : 1);
    br_parallel_for(pool, rows, work >= BR_GRAIN ? 1 : BR_GRAIN / work,
                    c.max && c.t == BRAID_F32 ? max_rows_f32 : pool_rows, &c);
}

void br_pool_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    if (bg_numel(n) == 0) return;
    bg_window w;
    bg_window_get(n, bg_node_at(a->g, n->inputs[0]), &w);
    br_pool_window_run(a->pool, &w, n->dtype, n->op == BRAID_OP_MAX_POOL,
                       a->in[0], a->out);
}
