/* runtime/cpu/cpu_kernels_conv.c — conv and conv_transpose (the conv ops)
 * as im2col plus one GEMM per (image, group): braid's own (cpu_sgemm.c,
 * the col packed per run) for f32 where it runs, else br_gemm (OpenBLAS,
 * cpu_gemm.c).
 *
 * conv: the group's input patches are unrolled into col [Cg·kvol, out-vol]
 * (zeros where the dilated kernel overhangs the pads) and
 * y[b, group] = w[group] · col. conv_transpose is the same product read
 * backwards: col [OCg·kvol, in-vol] = w[group]ᵀ · x[b, group], then each
 * column entry is added to the output position its tap reaches (col2im).
 * A 1×1 conv with stride 1 and no pads multiplies x itself. f64 through
 * dgemm; f16/bf16 are refused at executor creation
 * (compile them for a GPU, or cast around the conv).
 *
 * 3×3 stride-1 f32 convolutions with enough channels go to Winograd
 * F(4×4, 3×3) or F(2×2, 3×3) instead (cpu_kernels_winograd.c), and where
 * braid's GEMM runs, the other 2-D f32 convs of one group with kernels
 * larger than 1×1 and more than 16 output channels (the stem and stride-2
 * convs of a ResNet) are computed straight from their input, with no
 * im2col (cpu_kernels_conv_direct.c).
 *
 * Blocks: with braid's GEMM, every im2col conv runs in blocks of about
 * CONV_BLOCK_N output positions (whole panels of the GEMM), written by
 * im2col straight into the GEMM's packed panels (no col, no packing
 * copy), multiplied at once while they sit in the core's L2, with the bias
 * added as the product is stored; blocks run side by side over the pool,
 * one per scratch slot (br_waves: no barrier between them). Images of at
 * least CONV_BLOCK_N positions are cut into blocks of their own, smaller
 * ones share blocks (several images in one product, scattered to their
 * rows after). With OpenBLAS the same blocks are used for a conv with a
 * large col matrix or small images; otherwise, when one (image, group)
 * product is small (depthwise and grouped convolutions, tiny images) the
 * items are spread over the pool, one col buffer per item in flight, and
 * a large item runs its im2col and GEMM split over the pool. A large
 * conv_transpose runs its items one after another with the GEMM and
 * col2im split over the pool. Every block depends on the shape alone, so
 * results are the same bits for any thread count. */
#include "runtime/cpu/cpu_kernels.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

/* Multiply-adds below which one (image, group) is one thread's work. */
#define CONV_SMALL BR_GEMM_SMALL
/* Scratch kept for col buffers of items run side by side. */
#define CONV_SCRATCH_MAX ((size_t)256 << 20)
/* Output positions per block of a large conv (as br_gemm's column blocks:
 * wide enough that repacking the weights per block costs little). */
#define CONV_BLOCK_N 384
/* With OpenBLAS, col bytes of one item above which a conv runs in blocks:
 * ResNet's stem (7.4 MB per image) ran 1.2× faster so on one Zen 3 core;
 * its stride-2 3×3 convolutions (1.8 MB) ran 1.1× slower (im2col of a
 * block walks more, shorter runs), so they keep one col per item. (With
 * braid's GEMM every im2col conv runs in blocks.) */
#define CONV_BLOCKED_COL ((size_t)4 << 20)
/* Output bytes above which braid's GEMM writes a conv's output with
 * streaming stores (br_sgemm_ep): ResNet-18's stem at batch 8 writes 25.7
 * MB, and reading each line for ownership before writing it ran its
 * products at 105 GFLOP/s a core where they reach 155 in cache (125
 * streamed). */
#define CONV_STREAM_BYTES ((size_t)16 << 20)
/* Most blocks in flight (scratch slots). */
#define CONV_MAX_SLOTS 64

typedef struct conv_ctx {
    bg_conv_geom c;
    bg_conv_geom ra; /* c with its spatial axes moved last (im2col) */
    bool f64;
    size_t esz;
    int64_t Cg, OCg, kv, iv, ov; /* channels per group, volumes */
    int64_t M, N, K;             /* one item's GEMM */
    bool direct;                 /* 1×1, stride 1, no pads: col is x */
    size_t col_bytes;            /* one item's col buffer (0 when direct) */
    bool own;          /* f32 products through br_sgemm_run (cpu_sgemm.c) */
    bool stream;       /* own: the output written with streaming stores */
    br_conv_ep ep;     /* f32: the epilogue (all 0: none) */
    size_t pack_bytes; /* own and direct: x packed per run, a block of
                          columns at a time */
    const char *x, *w, *bias;
    char *y;
    char *scratch;
    int64_t slots; /* col buffers in scratch */
    int64_t item;  /* the item the split loops work on */
    int64_t block; /* blocked conv: output positions per block */
    int64_t bpi;   /* blocked conv: blocks per image, or 0 (across images) */
    int64_t nblk;  /* blocked conv: blocks per group */
} conv_ctx;

/* r = c with its nspatial axes moved to the end and the unused ones (size
 * 1, kernel 1, stride 1, no pad) in front: the same flat positions, taps
 * and volumes, but a 2-D conv's innermost axis is its width, not a size-1
 * axis, so im2col's inner loop runs along rows of the image. */
static void right_align(const bg_conv_geom *c, bg_conv_geom *r) {
    *r = *c;
    int sh = BG_CONV_MAX_SPATIAL - c->nspatial;
    for (int i = BG_CONV_MAX_SPATIAL - 1; i >= 0; i--) {
        int j = i - sh;
        r->in[i] = j >= 0 ? c->in[j] : 1;
        r->out[i] = j >= 0 ? c->out[j] : 1;
        r->k[i] = j >= 0 ? c->k[j] : 1;
        r->stride[i] = j >= 0 ? c->stride[j] : 1;
        r->dil[i] = j >= 0 ? c->dil[j] : 1;
        r->pb[i] = j >= 0 ? c->pb[j] : 0;
        r->pe[i] = j >= 0 ? c->pe[j] : 0;
    }
}

static void conv_analyze(const braid_graph *g, const bg_node *n, conv_ctx *x) {
    memset(x, 0, sizeof *x);
    bg_conv_geom_of(g, n, &x->c); /* prepare checked it */
    right_align(&x->c, &x->ra);
    const bg_conv_geom *c = &x->c;
    x->f64 = n->dtype == BRAID_F64;
    x->esz = braid_dtype_size(n->dtype);
    x->Cg = c->C / c->G;
    x->OCg = c->OC / c->G;
    x->kv = c->k[0] * c->k[1] * c->k[2];
    x->iv = c->in[0] * c->in[1] * c->in[2];
    x->ov = c->out[0] * c->out[1] * c->out[2];
    if (c->transpose) { /* col = wᵀ · x: [OCg·kv, iv] */
        x->M = x->OCg * x->kv;
        x->N = x->iv;
        x->K = x->Cg;
    } else { /* y = w · col: [OCg, ov] */
        x->M = x->OCg;
        x->N = x->ov;
        x->K = x->Cg * x->kv;
    }
    x->direct = !c->transpose && x->kv == 1;
    for (int i = 0; i < BG_CONV_MAX_SPATIAL; i++)
        x->direct &= c->stride[i] == 1 && c->pb[i] == 0 && c->pe[i] == 0;
    /* conv: col is [K, N], the GEMM's right operand; transpose: col is
     * [M, N], its result */
    x->col_bytes = c->transpose ? (size_t)(x->M * x->N) * x->esz
                   : x->direct  ? 0
                                : (size_t)(x->K * x->N) * x->esz;
    x->own = !x->f64 && !c->transpose && x->K > 0 && br_sgemm_enabled();
    /* own convs with a col run in blocks (blocked), their panels written
     * by im2col; only a direct one's x is packed per run */
    x->pack_bytes = x->own && x->direct ? br_sgemm_pack_scratch(x->K, x->N) : 0;
    x->stream = x->own && bg_nbytes(n) > CONV_STREAM_BYTES;
}

/* Scratch of one item in flight: its col, or (own, direct) its x packed. */
static size_t item_bytes(const conv_ctx *x) {
    return br_lines(x->col_bytes) + x->pack_bytes;
}

/* ---- im2col / col2im, per element type ------------------------------------
 */

/* dst[o2] = src[o2·s2 + b2] for o2 in [lo, hi), stride 2 as a constant
 * (always inlined, so each im2col clone vectorises it for its ISA). */
#define CONV_STRIDED_ROW(T)                                                    \
    static inline __attribute__((always_inline)) void strided_row_##T(         \
        T *restrict dst, const T *restrict src, int64_t lo, int64_t hi,        \
        int64_t s2, int64_t b2) {                                              \
        if (s2 == 2)                                                           \
            for (int64_t o2 = lo; o2 < hi; o2++)                               \
                dst[o2] = src[2 * o2 + b2];                                    \
        else                                                                   \
            for (int64_t o2 = lo; o2 < hi; o2++)                               \
                dst[o2] = src[o2 * s2 + b2];                                   \
    }
CONV_STRIDED_ROW(float)
CONV_STRIDED_ROW(double)

/* o2 in [a, e) of one run (one output row's positions) into dst[o2]:
 * the input element src[o2·s2 + b2] for o2 in [lo, hi), zeros around
 * (always inlined, so each im2col clone vectorises it for its ISA). */
#define CONV_RUN(T)                                                            \
    static inline __attribute__((always_inline)) void run_##T(                 \
        T *restrict dst, const T *restrict src, int64_t a, int64_t lo,         \
        int64_t hi, int64_t e, int64_t s2, int64_t b2) {                       \
        for (int64_t o2 = a; o2 < lo; o2++)                                    \
            dst[o2] = (T)0;                                                    \
        if (hi > lo) {                                                         \
            if (s2 == 1)                                                       \
                memcpy(dst + lo, src + lo + b2,                                \
                       (size_t)(hi - lo) * sizeof(T));                         \
            else                                                               \
                strided_row_##T(dst, src, lo, hi, s2, b2);                     \
        }                                                                      \
        for (int64_t o2 = hi; o2 < e; o2++)                                    \
            dst[o2] = (T)0;                                                    \
    }
CONV_RUN(float)
CONV_RUN(double)

/* Rows [r0, r1) and columns [n0, n1) of the col matrix of conv input xg
 * (the group's Cg channels of one image) into col, rows ld entries apart
 * (column n0 first): row (ci, k) holds, per output position, the input
 * element kernel tap k reads there, or 0 in the pads. A whole item's col
 * is rows [0, K), columns [0, ov), ld = ov; a block's columns may start
 * and end inside rows of the output. */
#define CONV_IM2COL(T, ATTR)                                                   \
    ATTR static void im2col_##T(const conv_ctx *x, const T *xg, T *col,        \
                                int64_t ld, int64_t r0, int64_t r1,            \
                                int64_t n0, int64_t n1) {                      \
        const bg_conv_geom *c = &x->ra;                                        \
        int64_t out2 = c->out[2];                                              \
        for (int64_t r = r0; r < r1; r++) {                                    \
            int64_t kk[3];                                                     \
            bg_conv_tap(c, r % x->kv, kk);                                     \
            const T *xc = xg + (r / x->kv) * x->iv;                            \
            /* innermost axis: o2 reads p2 = o2·s2 + b2, inside the input     \
             * for o2 in [lo2, hi2) (zeros outside), the same every row */     \
            int64_t s2 = c->stride[2], b2 = kk[2] * c->dil[2] - c->pb[2];      \
            int64_t lo2 = b2 >= 0 ? 0 : (-b2 + s2 - 1) / s2;                   \
            int64_t hi2 =                                                      \
                c->in[2] - b2 <= 0 ? 0 : (c->in[2] - b2 + s2 - 1) / s2;        \
            int64_t q = n0 / out2, a = n0 % out2; /* output row, column */     \
            int64_t o0 = q / c->out[1], o1 = q % c->out[1];                    \
            for (int64_t n = n0; n < n1; a = 0) { /* a run of one row */       \
                int64_t e = out2 - a < n1 - n ? out2 : a + (n1 - n);           \
                int64_t p0 = o0 * c->stride[0] - c->pb[0] + kk[0] * c->dil[0]; \
                int64_t p1 = o1 * c->stride[1] - c->pb[1] + kk[1] * c->dil[1]; \
                bool inside =                                                  \
                    p0 >= 0 && p0 < c->in[0] && p1 >= 0 && p1 < c->in[1];      \
                /* input read at [lo, hi) of the run [a, e), zeros around */   \
                int64_t lo = inside && lo2 > a ? lo2 : a;                      \
                int64_t hi = inside && hi2 < e ? hi2 : e;                      \
                if (!inside || lo > e) lo = e;                                 \
                if (hi < lo) hi = lo;                                          \
                const T *src =                                                 \
                    inside ? xc + (p0 * c->in[1] + p1) * c->in[2] : xc;        \
                run_##T(col + r * ld + (n - n0) - a, src, a, lo, hi, e, s2,    \
                        b2);                                                   \
                n += e - a;                                                    \
                if (++o1 == c->out[1]) o1 = 0, o0++;                           \
            }                                                                  \
        }                                                                      \
    }
/* The float im2col is built per ISA (BR_CLONES): with the stride a
 * constant 2, GCC's AVX-512 clone reads two vectors and keeps every other
 * lane where a run-time stride leaves a scalar loop (ResNet's stride-2
 * rows: 0.46 ns an element that way). Copies are exact: every clone gives
 * the same bits. */
CONV_IM2COL(float, BR_CLONES)
CONV_IM2COL(double, )

/* The f32 im2col of columns [n0, n1) of image xg's positions, every row,
 * straight into braid's GEMM's packed operand `pack` (K rows, `panels`
 * panels: br_sgemm_panel_row), position n0 at its column j0: the GEMM
 * reads it as it is written, with no col and no packing copy between.
 * Runs (a row of output positions) go by 16 columns of the packed operand
 * (each inside one panel) with masked loads and stores, the stride-2
 * lanes picked from two loads by a permute: GCC's vectorised loop left up
 * to 15 elements of every run to a scalar tail, and ResNet's stride-2 runs
 * are 28 or 14 long. The same values as im2col_float: they are copies.
 * Only where braid's GEMM runs, which needs AVX-512F. */
#if defined(__x86_64__) && defined(__GNUC__)
/* Lanes [lo, hi) of 16 (clipped), as a mask. */
static inline __mmask16 lanes(int64_t lo, int64_t hi) {
    lo = lo < 0 ? 0 : lo > 16 ? 16 : lo;
    hi = hi < lo ? lo : hi > 16 ? 16 : hi;
    return br_lanes(lo, hi);
}

__attribute__((target("avx512f"))) static void
im2col_packed(const conv_ctx *x, const float *xg, float *pack, int64_t j0,
              int64_t n0, int64_t n1, int panels) {
    const bg_conv_geom *c = &x->ra;
    int K = (int)x->K;
    int64_t out2 = c->out[2];
    for (int r = 0; r < K; r++) {
        int64_t kk[3];
        bg_conv_tap(c, r % x->kv, kk);
        const float *xc = xg + (r / x->kv) * x->iv;
        /* row r of panel 0, and the step from panel to panel */
        size_t at = br_sgemm_panel_row(K, panels, 0, r);
        float *prow = pack + at;
        int64_t pstep =
            panels > 1 ? (int64_t)(br_sgemm_panel_row(K, panels, 1, r) - at)
                       : 0;
        int64_t s2 = c->stride[2], b2 = kk[2] * c->dil[2] - c->pb[2];
        int64_t lo2 = b2 >= 0 ? 0 : (-b2 + s2 - 1) / s2;
        int64_t hi2 = c->in[2] - b2 <= 0 ? 0 : (c->in[2] - b2 + s2 - 1) / s2;
        int64_t q = n0 / out2, a = n0 % out2;
        int64_t o0 = q / c->out[1], o1 = q % c->out[1];
        for (int64_t n = n0; n < n1; a = 0) { /* a run of one row */
            int64_t e = out2 - a < n1 - n ? out2 : a + (n1 - n);
            int64_t p0 = o0 * c->stride[0] - c->pb[0] + kk[0] * c->dil[0];
            int64_t p1 = o1 * c->stride[1] - c->pb[1] + kk[1] * c->dil[1];
            bool inside = p0 >= 0 && p0 < c->in[0] && p1 >= 0 && p1 < c->in[1];
            int64_t lo = inside && lo2 > a ? lo2 : a;
            int64_t hi = inside && hi2 < e ? hi2 : e;
            if (!inside || lo > e) lo = e;
            if (hi < lo) hi = lo;
            const float *src =
                inside ? xc + (p0 * c->in[1] + p1) * c->in[2] : xc;
            int64_t j = j0 + (n - n0) - a; /* the column of o2 = 0 */
            /* 16 columns [cb, cb + 16) at a time: o2 = cb - j + lane */
            for (int64_t cb = (j + a) & ~(int64_t)15; cb < j + e; cb += 16) {
                int64_t o = cb - j;
                float *dst =
                    prow + (cb / BR_SGEMM_NR) * pstep + cb % BR_SGEMM_NR;
                if (o >= lo && o + 16 <= hi && s2 <= 2) { /* all input */
                    _mm512_storeu_ps(
                        dst, br_load_lanes(src + s2 * o + b2, s2, 0, 16));
                    continue;
                }
                __mmask16 all = lanes(a - o, e - o);
                __mmask16 data = lanes(lo - o, hi - o);
                __m512 v = _mm512_setzero_ps();
                if (data && s2 <= 2) {
                    int64_t dl = lo - o < 0 ? 0 : lo - o;
                    int64_t dh = hi - o > 16 ? 16 : hi - o;
                    v = br_load_lanes(src + s2 * o + b2, s2, dl, dh);
                } else if (data) {
                    float t[16];
                    for (int l = 0; l < 16; l++)
                        t[l] = data >> l & 1 ? src[(o + l) * s2 + b2] : 0.0f;
                    v = _mm512_loadu_ps(t);
                }
                _mm512_mask_storeu_ps(dst, all, v);
            }
            n += e - a;
            if (++o1 == c->out[1]) o1 = 0, o0++;
        }
    }
}
#else
static void im2col_packed(const conv_ctx *x, const float *xg, float *pack,
                          int64_t j0, int64_t n0, int64_t n1, int panels) {
    (void)x, (void)xg, (void)pack, (void)j0, (void)n0, (void)n1,
        (void)panels; /* never: braid's GEMM is x86-64 only */
}
#endif

/* Output channels [c0, c1) of the group's output yg (one image) from the
 * transposed product col [OCg·kv, iv]: entry (ocl, k; p) lands at
 * o = p · stride - pad + k · dilation when that is inside the output. Each
 * channel reads only its own rows, so channel ranges run in parallel. */
#define CONV_COL2IM(T)                                                         \
    static void col2im_##T(const conv_ctx *x, const T *col, T *yg, int64_t c0, \
                           int64_t c1) {                                       \
        const bg_conv_geom *c = &x->c;                                         \
        memset(yg + c0 * x->ov, 0, (size_t)((c1 - c0) * x->ov) * sizeof(T));   \
        for (int64_t r = c0 * x->kv; r < c1 * x->kv; r++) {                    \
            int64_t kk[3];                                                     \
            bg_conv_tap(c, r % x->kv, kk);                                     \
            T *yc = yg + (r / x->kv) * x->ov;                                  \
            const T *row = col + r * x->iv;                                    \
            for (int64_t p0 = 0; p0 < c->in[0]; p0++) {                        \
                int64_t o0 = p0 * c->stride[0] - c->pb[0] + kk[0] * c->dil[0]; \
                if (o0 < 0 || o0 >= c->out[0]) continue;                       \
                for (int64_t p1 = 0; p1 < c->in[1]; p1++) {                    \
                    int64_t o1 =                                               \
                        p1 * c->stride[1] - c->pb[1] + kk[1] * c->dil[1];      \
                    if (o1 < 0 || o1 >= c->out[1]) continue;                   \
                    const T *src = row + (p0 * c->in[1] + p1) * c->in[2];      \
                    T *dst = yc + (o0 * c->out[1] + o1) * c->out[2];           \
                    int64_t s2 = c->stride[2],                                 \
                            b2 = kk[2] * c->dil[2] - c->pb[2];                 \
                    for (int64_t p2 = 0; p2 < c->in[2]; p2++) {                \
                        int64_t o2 = p2 * s2 + b2;                             \
                        if (o2 >= 0 && o2 < c->out[2]) dst[o2] += src[p2];     \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
CONV_COL2IM(float)
CONV_COL2IM(double)

/* Adds group g's bias to its output channels [c0, c1) in y: channel oc's
 * row at y + oc·ld (elements), n positions of it (a whole image: ld = n =
 * ov; a block: its columns). */
static void add_bias(const conv_ctx *x, char *y, int64_t g, int64_t c0,
                     int64_t c1, int64_t ld, int64_t n) {
    for (int64_t oc = c0; oc < c1; oc++) {
        int64_t ch = g * x->OCg + oc;
        if (x->f64) {
            double b = ((const double *)x->bias)[ch];
            double *yr = (double *)y + oc * ld;
            for (int64_t i = 0; i < n; i++)
                yr[i] += b;
        } else {
            float b = ((const float *)x->bias)[ch];
            float *yr = (float *)y + oc * ld;
            for (int64_t i = 0; i < n; i++)
                yr[i] += b;
        }
    }
}

void br_conv_ep_apply(const br_conv_ep *e, float *v, const float *r,
                      int64_t n) {
    if (r)
        for (int64_t i = 0; i < n; i++)
            v[i] = e->res_first ? r[i] + v[i] : v[i] + r[i];
    if (e->relu)
        for (int64_t i = 0; i < n; i++)
            v[i] = v[i] < 0 ? 0.0f : v[i];
}

/* The epilogue (x->ep) on `rows` rows of n output values at y (f32, row
 * stride ldy elements), whose residuals sit at the same place of ep.res. */
static void ep_rows(const conv_ctx *x, float *y, int64_t ldy, int64_t rows,
                    int64_t n) {
    const float *res = x->ep.res ? x->ep.res + (y - (float *)x->y) : NULL;
    for (int64_t r = 0; r < rows; r++)
        br_conv_ep_apply(&x->ep, y + r * ldy, res ? res + r * ldy : NULL, n);
}

static bool has_ep(const conv_ctx *x) {
    return x->ep.res || x->ep.relu;
}

/* The epilogue over the whole output, when no kernel applied it as it
 * stored (items and split items). */
static void ep_range(void *ctx, int64_t b, int64_t e) {
    const conv_ctx *x = ctx;
    ep_rows(x, (float *)x->y + b, 0, 1, e - b);
}

/* ---- one item: (image b, group g)
 * -------------------------------------------- */

/* conv_transpose's product: row-major C [M, N] = Aᵀ · B with A [K, M],
 * split over pool (NULL: on this thread alone). */
static void transposed_product(const conv_ctx *x, br_pool *pool, const void *A,
                               const void *B, void *C) {
    int M = (int)x->M, N = (int)x->N, K = (int)x->K;
    br_gemm(pool, x->f64, true, false, M, N, K, A, M, B, N, C, N);
}

/* y [M, ncols] (row stride ldy) = w [M, K] · col [K, ncols] (row stride
 * ldc) over pool (NULL: on this thread alone): br_sgemm_run against col
 * packed into pack (64-byte aligned, pack_bytes: as many columns at a time
 * as it holds) when x->own (a direct conv's x: other own convs write their
 * blocks' panels in im2col_packed), br_gemm otherwise. Each output's sum runs
 * over k in order whatever the blocks, so the bits depend on the shape alone.
 */
static void product(const conv_ctx *x, br_pool *pool, const void *w,
                    const void *col, int64_t ldc, int64_t ncols, void *y,
                    int64_t ldy, float *pack, size_t pack_bytes) {
    int M = (int)x->M, K = (int)x->K;
    if (!x->own) {
        br_gemm(pool, x->f64, false, false, M, (int)ncols, K, w, K, col,
                (int)ldc, y, (int)ldy);
        return;
    }
    size_t panel = (size_t)K * BR_SGEMM_NR * sizeof(float);
    int64_t step = (int64_t)(pack_bytes / panel) * BR_SGEMM_NR;
    for (int64_t n0 = 0; n0 < ncols; n0 += step) {
        int64_t nc = ncols - n0 < step ? ncols - n0 : step;
        br_sgemm_packed v;
        br_sgemm_pack_into(col, K, (int)ldc, false, (int)n0, (int)nc, pack,
                           pool, &v);
        br_sgemm_run(pool, M, w, K, &v, (float *)y + n0, (int)ldy);
    }
}

static const char *x_of(const conv_ctx *x, int64_t item) {
    return x->x + (size_t)((item / x->c.G) * x->c.C + (item % x->c.G) * x->Cg) *
                      (size_t)x->iv * x->esz;
}
static char *y_of(const conv_ctx *x, int64_t item) {
    return x->y +
           (size_t)((item / x->c.G) * x->c.OC + (item % x->c.G) * x->OCg) *
               (size_t)x->ov * x->esz;
}
static const char *w_of(const conv_ctx *x, int64_t item) {
    /* conv: rows [g·OCg, +OCg) of [OC, Cg·kv]; transpose: rows [g·Cg, +Cg)
     * of [C, OCg·kv]: the same offset g · OCg · Cg · kv */
    return x->w + (size_t)((item % x->c.G) * x->OCg * x->Cg * x->kv) * x->esz;
}

/* One item alone on this thread, col (and the packed col) in its own
 * slot. */
static void run_item(const conv_ctx *x, int64_t item, char *col) {
    const char *xg = x_of(x, item);
    char *yg = y_of(x, item);
    const char *wg = w_of(x, item);
    if (x->c.transpose) {
        transposed_product(x, NULL, wg, xg, col);
        if (x->f64)
            col2im_double(x, (const double *)col, (double *)yg, 0, x->OCg);
        else
            col2im_float(x, (const float *)col, (float *)yg, 0, x->OCg);
    } else {
        if (!x->direct) {
            if (x->f64)
                im2col_double(x, (const double *)xg, (double *)col, x->ov, 0,
                              x->K, 0, x->ov);
            else
                im2col_float(x, (const float *)xg, (float *)col, x->ov, 0, x->K,
                             0, x->ov);
        }
        product(x, NULL, wg, x->direct ? xg : col, x->N, x->N, yg, x->N,
                (float *)(col + br_lines(x->col_bytes)), x->pack_bytes);
    }
    if (x->bias) add_bias(x, yg, item % x->c.G, 0, x->OCg, x->ov, x->ov);
}

/* Item `item` in col buffer `slot` (br_waves). */
static void item_in_slot(void *ctx, int64_t item, int64_t slot) {
    const conv_ctx *x = ctx;
    run_item(x, item, x->scratch + (size_t)slot * item_bytes(x));
}

/* ---- one item with its loops split over the pool
 * ------------------------------ */

static void im2col_range(void *ctx, int64_t b, int64_t e) {
    const conv_ctx *x = ctx;
    if (x->f64)
        im2col_double(x, (const double *)x_of(x, x->item), (double *)x->scratch,
                      x->ov, b, e, 0, x->ov);
    else
        im2col_float(x, (const float *)x_of(x, x->item), (float *)x->scratch,
                     x->ov, b, e, 0, x->ov);
}

static void col2im_range(void *ctx, int64_t b, int64_t e) {
    const conv_ctx *x = ctx;
    if (x->f64)
        col2im_double(x, (const double *)x->scratch, (double *)y_of(x, x->item),
                      b, e);
    else
        col2im_float(x, (const float *)x->scratch, (float *)y_of(x, x->item), b,
                     e);
}

static void bias_range(void *ctx, int64_t b, int64_t e) {
    const conv_ctx *x = ctx;
    add_bias(x, y_of(x, x->item), x->item % x->c.G, b, e, x->ov, x->ov);
}

static void run_item_split(conv_ctx *x, br_pool *pool, int64_t item) {
    x->item = item;
    int64_t row_grain = BR_GRAIN / (x->ov > 0 ? x->ov : 1) + 1;
    if (x->c.transpose) {
        transposed_product(x, pool, w_of(x, item), x_of(x, item), x->scratch);
        br_parallel_for(pool, x->OCg, row_grain / (x->kv ? x->kv : 1) + 1,
                        col2im_range, x);
    } else {
        if (!x->direct) br_parallel_for(pool, x->K, row_grain, im2col_range, x);
        product(x, pool, w_of(x, item), x->direct ? x_of(x, item) : x->scratch,
                x->N, x->N, y_of(x, item), x->N,
                (float *)(x->scratch + br_lines(x->col_bytes)), x->pack_bytes);
    }
    if (x->bias) br_parallel_for(pool, x->OCg, row_grain, bias_range, x);
}

/* ---- convolutions in blocks of output positions
 * ------------------------------- */

/* Whether conv x runs in blocks (see the file comment): a conv (not
 * transposed) with a col matrix whose products run through braid's GEMM
 * (own: each block's im2col is written straight into the GEMM's panels),
 * that outgrows the caches (CONV_BLOCKED_COL), or whose images are too
 * small to be one GEMM each (fewer than CONV_BLOCK_N output positions). */
static bool blocked(const conv_ctx *x) {
    return !x->c.transpose && !x->direct && x->col_bytes > 0 &&
           (x->own || x->col_bytes > CONV_BLOCKED_COL ||
            (x->ov < CONV_BLOCK_N && x->c.N > 1));
}

/* x->block (about CONV_BLOCK_N output positions: a multiple of the GEMM's
 * panel width when own, else of 16), x->bpi and x->nblk, from the shape
 * alone. Images of at least CONV_BLOCK_N positions are cut into bpi blocks
 * each, none crossing an image, so each block's product lands in the
 * image's rows; smaller ones (bpi 0) are blocks of the group's N·ov
 * positions, several images in one product. A product worth several
 * threads is cut in two at least, so a small image's conv of one group
 * (ResNet-18's 7×7 stride-2 layer-4 convolutions: 392 positions, 0.9
 * GFLOP) does not leave all but one thread idle. */
static void set_blocks(conv_ctx *x) {
    int64_t align = x->own ? BR_SGEMM_NR : 16;
    bool per_image = x->ov >= CONV_BLOCK_N;
    int64_t D = per_image ? x->ov : x->c.N * x->ov; /* positions to cut */
    int64_t nb = (D + CONV_BLOCK_N / 2) / CONV_BLOCK_N;
    if (nb < 2 && D >= 2 * 64 && x->M * x->K * x->c.N * x->ov > 4 * CONV_SMALL)
        nb = per_image && x->c.N > 1 ? 1 : 2;
    if (nb < 1) nb = 1;
    int64_t block = (D + nb - 1) / nb;
    x->block = (block + align - 1) / align * align;
    x->bpi = per_image ? (D + x->block - 1) / x->block : 0;
    x->nblk = per_image ? x->c.N * x->bpi : (D + x->block - 1) / x->block;
}

/* Block t's group and its positions [n0, n1) of the group's N·ov. */
static void block_range(const conv_ctx *x, int64_t t, int64_t *g, int64_t *n0,
                        int64_t *n1) {
    int64_t i = t % x->nblk, end;
    *g = t / x->nblk;
    if (x->bpi > 0) {
        int64_t img = i / x->bpi;
        *n0 = img * x->ov + (i % x->bpi) * x->block;
        end = (img + 1) * x->ov;
    } else {
        *n0 = i * x->block;
        end = x->c.N * x->ov;
    }
    *n1 = *n0 + x->block < end ? *n0 + x->block : end;
}

/* One block's packed col (own: whole panels of its columns). */
static size_t block_pack_bytes(const conv_ctx *x) {
    if (!x->own) return 0;
    int64_t panels = (x->block + BR_SGEMM_NR - 1) / BR_SGEMM_NR;
    return (size_t)(x->K * panels * BR_SGEMM_NR) * sizeof(float);
}

/* Bytes of one block's slot: own, its packed col, else its col [K,
 * block]; then, for blocks across images, its product [OCg, block] before
 * it is scattered. */
static size_t slot_bytes(const conv_ctx *x) {
    size_t prod = x->bpi > 0 ? 0 : (size_t)(x->OCg * x->block) * x->esz;
    if (x->own) return block_pack_bytes(x) + br_lines(prod);
    return br_lines((size_t)(x->K * x->block) * x->esz + prod);
}

/* Block t in slot `slot`: group g, the positions [n0, n1) (image n0 / ov
 * onwards). Its col gets each image's part (own: into the GEMM's panels),
 * then one product: a block inside one image writes y directly, one
 * across images writes the slot's product, scattered to each image's
 * rows. The bias is added as the product is stored (own) or after. */
static void run_block(const conv_ctx *x, int64_t t, char *slot) {
    int64_t g, n0, n1;
    block_range(x, t, &g, &n0, &n1);
    int64_t ncols = n1 - n0;
    int panels = (int)((ncols + BR_SGEMM_NR - 1) / BR_SGEMM_NR);
    for (int64_t n = n0; n < n1;) { /* each image's part */
        int64_t img = n / x->ov, p0 = n % x->ov;
        int64_t p1 = x->ov - p0 < n1 - n ? x->ov : p0 + (n1 - n);
        const char *xg = x_of(x, img * x->c.G + g);
        if (x->own) /* column n - n0 of the block's panels */
            im2col_packed(x, (const float *)xg, (float *)slot, n - n0, p0, p1,
                          panels);
        else if (x->f64)
            im2col_double(x, (const double *)xg,
                          (double *)(slot + (size_t)(n - n0) * x->esz), ncols,
                          0, x->K, p0, p1);
        else
            im2col_float(x, (const float *)xg,
                         (float *)(slot + (size_t)(n - n0) * x->esz), ncols, 0,
                         x->K, p0, p1);
        n += p1 - p0;
    }
    const char *w = w_of(x, g);
    const float *bias =
        x->own && x->bias ? (const float *)x->bias + g * x->OCg : NULL;
    int64_t img = n0 / x->ov, p0 = n0 % x->ov;
    bool inside = p0 + ncols <= x->ov; /* one image's positions */
    char *y = inside ? y_of(x, img * x->c.G + g) + (size_t)p0 * x->esz
                     : slot + (x->own ? block_pack_bytes(x)
                                      : (size_t)(x->K * x->block) * x->esz);
    int64_t ldy = inside ? x->ov : ncols;
    if (x->own) {
        br_sgemm_zero_padding((float *)slot, (int)x->K, (int)ncols, 0,
                              (int)x->K);
        br_sgemm_packed v = {(int)x->K, (int)ncols, panels,
                             (const float *)slot};
        br_sgemm_ep ep = {.bias = bias, .stream = inside && x->stream};
        if (inside && x->ep.res)
            ep.res = x->ep.res + ((float *)y - (float *)x->y);
        ep.ldr = (size_t)ldy;
        ep.res_first = x->ep.res_first;
        ep.relu = inside && x->ep.relu;
        br_sgemm_run_ep(NULL, (int)x->M, (const float *)w, (int)x->K, &v,
                        (float *)y, (int)ldy, &ep);
    } else {
        product(x, NULL, w, slot, ncols, ncols, y, ldy, NULL, 0);
        if (x->bias) add_bias(x, y, g, 0, x->OCg, ldy, ncols);
        if (inside && has_ep(x)) ep_rows(x, (float *)y, ldy, x->OCg, ncols);
    }
    if (inside) return;
    for (int64_t n = n0; n < n1;) { /* scatter to each image's rows */
        int64_t im = n / x->ov, q0 = n % x->ov;
        int64_t q1 = x->ov - q0 < n1 - n ? x->ov : q0 + (n1 - n);
        char *yi = y_of(x, im * x->c.G + g) + (size_t)q0 * x->esz;
        const char *src = y + (size_t)(n - n0) * x->esz;
        for (int64_t oc = 0; oc < x->OCg; oc++)
            memcpy(yi + (size_t)(oc * x->ov) * x->esz,
                   src + (size_t)(oc * ncols) * x->esz,
                   (size_t)(q1 - q0) * x->esz);
        if (has_ep(x)) ep_rows(x, (float *)yi, x->ov, x->OCg, q1 - q0);
        n += q1 - q0;
    }
}

/* Block t in scratch slot `slot` (br_waves). */
static void block_in_slot(void *ctx, int64_t t, int64_t slot) {
    const conv_ctx *x = ctx;
    run_block(x, t, x->scratch + (size_t)slot * slot_bytes(x));
}

/* ---- channels last ---------------------------------------------------------
 *
 * The form passes/channels_last.c makes for GPU convolutions reaches the
 * CPU only in the emulated executor and in hand-written graphs: direct
 * loops, one output position (all its channels) per index. Channels
 * innermost, each tap's products run over C/G contiguous values of x and
 * of w. */

typedef struct cl_ctx {
    bg_conv_geom c;
    const void *x, *w, *bias;
    void *y;
    bool f64;
} cl_ctx;

/* The channels-last input offset of tap kk at output position o of
 * image b (in elements, channel 0), or -1 when it falls in the pads. */
static int64_t cl_tap(const bg_conv_geom *c, int64_t b, const int64_t *o,
                      const int64_t *kk) {
    int64_t pos = b;
    for (int i = 0; i < BG_CONV_MAX_SPATIAL; i++) {
        int64_t p = o[i] * c->stride[i] - c->pb[i] + kk[i] * c->dil[i];
        if (p < 0 || p >= c->in[i]) return -1;
        pos = pos * c->in[i] + p;
    }
    return pos * c->C;
}

/* Chunk [k0, k1) of the taps of output position e (all its channels),
 * added to y; the first chunk starts from the bias, or 0. */
#define CL_TAPS(T)                                                             \
    do {                                                                       \
        const T *xs = x->x, *ws = x->w, *bs = x->bias;                         \
        T *ys = (T *)x->y + e * c->OC;                                         \
        for (int64_t oc = 0; oc < c->OC; oc++) {                               \
            int64_t g0 = oc / OCg * Cg;                                        \
            T acc = k0 ? ys[oc] : bs ? bs[oc] : 0;                             \
            for (int64_t k = k0; k < k1; k++) {                                \
                if (off[k - k0] < 0) continue;                                 \
                const T *xp = xs + off[k - k0] + g0;                           \
                const T *wp = ws + (oc * kv + k) * Cg;                         \
                for (int64_t ci = 0; ci < Cg; ci++)                            \
                    acc += xp[ci] * wp[ci];                                    \
            }                                                                  \
            ys[oc] = acc;                                                      \
        }                                                                      \
    } while (0)

#define CL_TAP_CHUNK 256

static void cl_range(void *ctx, int64_t lo, int64_t hi) {
    const cl_ctx *x = ctx;
    const bg_conv_geom *c = &x->c;
    int64_t Cg = c->C / c->G, OCg = c->OC / c->G;
    int64_t kv = c->k[0] * c->k[1] * c->k[2];
    int64_t ov = c->out[0] * c->out[1] * c->out[2];
    int64_t off[CL_TAP_CHUNK]; /* per tap: x's offset, -1 in the pads */
    for (int64_t e = lo; e < hi; e++) {
        int64_t b = e / ov, sp = e % ov;
        int64_t o[3] = {sp / (c->out[1] * c->out[2]),
                        sp / c->out[2] % c->out[1], sp % c->out[2]};
        for (int64_t k0 = 0; k0 < kv; k0 += CL_TAP_CHUNK) {
            int64_t k1 = kv - k0 < CL_TAP_CHUNK ? kv : k0 + CL_TAP_CHUNK;
            for (int64_t k = k0; k < k1; k++) {
                int64_t kk[3];
                bg_conv_tap(c, k, kk);
                off[k - k0] = cl_tap(c, b, o, kk);
            }
            if (x->f64)
                CL_TAPS(double);
            else
                CL_TAPS(float);
        }
    }
}

static void run_channels_last(const br_kernel_args *a, const bg_conv_geom *c) {
    cl_ctx x = {*c,       a->in[0],
                a->in[1], a->node->ninputs == 3 ? a->in[2] : NULL,
                a->out,   a->node->dtype == BRAID_F64};
    int64_t positions = c->N * c->out[0] * c->out[1] * c->out[2];
    int64_t work = c->OC * c->k[0] * c->k[1] * c->k[2] * (c->C / c->G);
    br_parallel_for(a->pool, positions, BR_GEMM_SMALL / (work ? work : 1) + 1,
                    cl_range, &x);
}

void br_conv_run(const br_kernel_args *a) {
    br_conv_run_ep(a, NULL);
}

/* The conv of x (set up from a) into the output; true when its epilogue
 * (x->ep) was applied as the output was stored: Winograd's output
 * transform, the direct conv's stores, and blocks (their products' stores, or
 * right after each block's product); the item paths leave it to br_conv_run_ep.
 */
static bool conv_compute(conv_ctx *x, const br_kernel_args *a) {
    int64_t items = x->c.N * x->c.G;
    if (items == 0 || x->M == 0 || x->N == 0) return true;
    if (br_winograd_applies(&x->c, a->node->dtype)) {
        br_winograd_run(&x->c, a->pool, (const float *)x->x,
                        (const float *)x->w, a->derived, (const float *)x->bias,
                        &x->ep, (float *)x->y, x->scratch, a->scratch_bytes);
        return true;
    }
    if (br_conv_direct_applies(&x->c, a->node->dtype)) {
        br_conv_direct_run(&x->c, a->pool, (const float *)x->x,
                           (const float *)x->w, a->derived,
                           (const float *)x->bias, &x->ep, (float *)x->y,
                           x->scratch);
        return true;
    }
    if (x->K == 0) { /* no input channels: the bias alone (BLAS takes no K=0) */
        memset(x->y, 0, bg_nbytes(a->node));
        for (int64_t i = 0; x->bias && i < items; i++)
            add_bias(x, y_of(x, i), i % x->c.G, 0, x->OCg, x->ov, x->ov);
        return false;
    }
    if (blocked(x)) { /* waves of blocks, one per slot */
        set_blocks(x);
        int64_t tasks = x->c.G * x->nblk;
        x->slots = (int64_t)(a->scratch_bytes / slot_bytes(x));
        if (x->slots > tasks) x->slots = tasks;
        if (x->slots < 1) return true; /* br_conv_prepare sized it: never */
        br_waves(a->pool, tasks, x->slots, block_in_slot, x);
        return true;
    }
    x->slots =
        item_bytes(x) ? (int64_t)(a->scratch_bytes / item_bytes(x)) : items;
    if (x->M * x->N * x->K <= CONV_SMALL && items > 1 && x->slots > 1) {
        br_waves(a->pool, items, x->slots, item_in_slot, x);
        return false;
    }
    for (int64_t i = 0; i < items; i++)
        run_item_split(x, a->pool, i);
    return false;
}

void br_conv_run_ep(const br_kernel_args *a, const br_conv_ep *ep) {
    conv_ctx x;
    conv_analyze(a->g, a->node, &x);
    if (x.c.channels_last) { /* the fuse pass gives these no epilogue */
        run_channels_last(a, &x.c);
        return;
    }
    if (ep && !x.f64) x.ep = *ep; /* f32 only: conv_epilogue (cpu_fused.c) */
    x.x = a->in[0];
    x.w = a->in[1];
    x.bias = a->node->ninputs == 3 ? a->in[2] : NULL;
    x.y = a->out;
    x.scratch = a->scratch;
    if (!conv_compute(&x, a) && has_ep(&x))
        br_parallel_for(a->pool, bg_numel(a->node), BR_GRAIN, ep_range, &x);
}

braid_status br_conv_prepare(const braid_graph *g, uint32_t id,
                             size_t *scratch) {
    return br_conv_prepare_node(g, bg_node_at(g, id), id, scratch);
}

braid_status br_conv_prepare_node(const braid_graph *g, const bg_node *n,
                                  uint32_t id, size_t *scratch) {
    bg_conv_geom c;
    if (!bg_conv_geom_of(g, n, &c))
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: node %u (%s): malformed "
                                 "convolution",
                                 id, bg_op(n->op)->name);
    if (n->dtype != BRAID_F32 && n->dtype != BRAID_F64)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: %s on the CPU "
                                 "takes f32 or f64, not %s (run it on a GPU, "
                                 "or cast around it)",
                                 id, bg_op(n->op)->name,
                                 braid_dtype_name(n->dtype));
    if (c.channels_last) return BRAID_OK; /* direct loops, no scratch */
    conv_ctx x;
    conv_analyze(g, n, &x);
    if (x.M > INT_MAX || x.N > INT_MAX || x.K > INT_MAX)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: %s GEMM dims "
                                 "M=%lld N=%lld K=%lld exceed BLAS's int "
                                 "range",
                                 id, bg_op(n->op)->name, (long long)x.M,
                                 (long long)x.N, (long long)x.K);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (br_winograd_applies(&c, n->dtype)) {
        size_t w = br_winograd_scratch(&c, cores > 1 ? (int)cores : 1);
        if (w > *scratch) *scratch = w;
        return BRAID_OK;
    }
    if (br_conv_direct_applies(&c, n->dtype)) {
        size_t d = br_conv_direct_scratch(&c);
        if (d > *scratch) *scratch = d;
        return BRAID_OK;
    }
    if (item_bytes(&x) == 0) return BRAID_OK;
    int64_t items = c.N * c.G, slots = 1;
    if (blocked(&x)) { /* a col buffer per block in flight */
        set_blocks(&x);
        size_t bytes = slot_bytes(&x);
        slots =
            cores > 1 ? (cores < CONV_MAX_SLOTS ? cores : CONV_MAX_SLOTS) : 1;
        if (slots > c.G * x.nblk) slots = c.G * x.nblk;
        while (slots > 1 && (size_t)slots * bytes > CONV_SCRATCH_MAX)
            slots--;
        if ((size_t)slots * bytes > *scratch) *scratch = (size_t)slots * bytes;
        return BRAID_OK;
    }
    /* side by side only when the items are small: one slot per core */
    if (x.M * x.N * x.K <= CONV_SMALL && items > 1) {
        slots = cores > 1 ? (cores < 64 ? cores : 64) : 1;
        slots = slots < items ? slots : items;
        while (slots > 1 && (size_t)slots * item_bytes(&x) > CONV_SCRATCH_MAX)
            slots--;
    }
    size_t bytes = (size_t)slots * item_bytes(&x);
    if (bytes > *scratch) *scratch = bytes;
    return BRAID_OK;
}

void *br_conv_derive(const braid_graph *g, uint32_t id, const void *const *in,
                     br_pool *pool) {
    return br_conv_derive_node(g, bg_node_at(g, id), in, pool);
}

void *br_conv_derive_node(const braid_graph *g, const bg_node *n,
                          const void *const *in, br_pool *pool) {
    bg_conv_geom c;
    if (!in[1] || !bg_conv_geom_of(g, n, &c)) return NULL;
    if (br_winograd_applies(&c, n->dtype))
        return br_winograd_filter(&c, pool, in[1]);
    if (br_conv_direct_applies(&c, n->dtype))
        return br_conv_direct_filter(&c, pool, in[1]);
    return NULL;
}
