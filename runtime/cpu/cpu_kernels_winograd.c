/* runtime/cpu/cpu_kernels_winograd.c — 3×3 stride-1 convolutions on the CPU
 * as Winograd F(4×4, 3×3) or F(2×2, 3×3) (Lavin and Gray, "Fast Algorithms
 * for Convolutional Neural Networks", 2015): 4× or 2.25× fewer
 * multiplications than im2col + GEMM, most of ResNet's convolution work.
 *
 * Each m×m block of output pixels (a tile, m = 4 or 2) of each output
 * channel is
 *   Y = Aᵀ [ Σ_c (G g_c Gᵀ) ⊙ (Bᵀ d_c B) ] A
 * with d_c the (m+2)×(m+2) input patch of channel c under the tile (zeros
 * in the pads) and g_c the 3×3 filter of (output channel, c). Transformed,
 * the sum over c is (m+2)² independent products (36 or 16), one per
 * position ξ of the transform: M[ξ] [OC, T] = U[ξ] [OC, C] · V[ξ] [C, T]
 * over T tiles, each
 * one product: braid's GEMM where it runs (cpu_sgemm.c; U packed in row
 * tiles when it is made, V written in the GEMM's panels by the input
 * transform, so nothing is packed per product), else one br_gemm
 * (OpenBLAS in blocks over the pool, cpu_gemm.c). So a
 * convolution is: the filter transform (U), then per chunk of tiles the
 * input transform (V), the (m+2)² products (M) and the output transform with
 * the bias. Chunks bound the scratch (WG_CHUNK_BYTES) and depend on the
 * shape alone, as br_gemm's blocks do, so results are the same bits for
 * every thread count. With several chunks and threads, each thread takes
 * whole chunks (transform, products, transform in its own scratch slot,
 * while the chunk's V and M are still in its caches); with one chunk, the
 * threads share each step.
 *
 * Used for f32 convolutions (not transposed) with a 3×3 kernel, stride
 * and dilation 1, one group, any pads, at least WG_MIN_CHANNELS input and
 * output channels (fewer make the products too small to gain); every
 * other convolution keeps im2col (cpu_kernels_conv.c). The transforms'
 * rounding differs from a direct sum's: F(2×2) by a few ulps of the partial
 * sums, F(4×4) by about 5× more (its transforms' coefficients reach 5/2 and
 * 8; measured against an f64 reference, about 4e-6 of the output's largest
 * magnitude at 256–512 channels against F(2×2)'s 6e-7: docs/ops.md,
 * tests/test_op_conv.c). m = 4 wherever it makes fewer multiplications
 * (br_winograd_tile), unless BRAID_CPU_WINOGRAD=f2 is set. */
#include "runtime/cpu/cpu_kernels.h"

#include <stdlib.h>
#include <string.h>

/* Scratch for one chunk's V and M (the transformed inputs and products):
 * small enough to stay in a core's caches between the transforms and the
 * products (8 MiB made ResNet's 64-channel 3×3 convolutions 1.4× slower
 * on a Zen 3), unless that leaves fewer than WG_MIN_TILES tiles. */
#define WG_CHUNK_BYTES ((size_t)2 << 20)
/* Fewest input and output channels worth the transforms. */
#define WG_MIN_CHANNELS 16
/* Fewest tiles in a chunk (when the channels are many): the products'
 * columns; fewer make OpenBLAS repack U for too little work (1.5× slower
 * at 256 channels with 64). */
#define WG_MIN_TILES 256
/* Floats between one ξ's packed V and the next beyond its panels (a
 * multiple of 16: the panels stay 64-byte aligned), so that the 16 stores
 * of a tile's transform do not fall 4 KiB apart, where each would wait on
 * the others (4K aliasing: V's planes are whole pages of panels). */
#define WG_PLANE_SKEW 80
/* Most chunk slots in the scratch (one per thread working at once). */
#define WG_MAX_SLOTS 16

typedef struct wg_ctx {
    int m;   /* output tile: m × m (F(2×2, 3×3) or F(4×4, 3×3)) */
    int nxi; /* transform positions ξ: (m + 2)² (16 or 36) */
    int64_t N, C, OC;     /* batch, input and output channels */
    int64_t H, W, OH, OW; /* input and output planes */
    int64_t ph, pw;       /* pads before rows and columns */
    int64_t th, tw, T;    /* tiles per column, per row, in all */
    int64_t cap;          /* tiles per chunk at most */
    int64_t nchunks;      /* chunks of the T tiles */
    int64_t t0, tb;       /* the chunk: first tile, its tiles */
    const float *x, *w, *bias;
    br_conv_ep ep; /* the epilogue (all 0: none) */
    float *y;
    const float *U; /* [nxi][OC][C], or own: [nxi] A-packed [OC, C] */
    float *slots;   /* the chunks' scratch slots, slot_floats each */
    bool own;       /* products through br_sgemm_run_pa, U and V packed */
    int64_t uplane; /* floats of one ξ's U */
    int64_t panels; /* own: V's panels of the chunk's tiles */
    int64_t vplane; /* floats of one ξ's V: C · tb, or own: C · panels · NR */
    float *V;       /* [nxi][C][tb], or own: [nxi] packed [C, tb] */
    float *M;       /* [nxi][OC][tb] */
} wg_ctx;

bool br_winograd_applies(const bg_conv_geom *c, braid_dtype t) {
    return t == BRAID_F32 && !c->transpose && c->nspatial == 2 && c->G == 1 &&
           c->k[0] == 3 && c->k[1] == 3 && c->stride[0] == 1 &&
           c->stride[1] == 1 && c->dil[0] == 1 && c->dil[1] == 1 &&
           c->C >= WG_MIN_CHANNELS && c->OC >= WG_MIN_CHANNELS &&
           c->out[0] >= 1 && c->out[1] >= 1 && c->N >= 1;
}

/* Whether BRAID_CPU_WINOGRAD=f2 asks for F(2×2) alone. */
static bool f2_only(void) {
    static int state;
    return br_env_is("BRAID_CPU_WINOGRAD", "f2", &state);
}

int br_winograd_tile(const bg_conv_geom *c) {
    int64_t oh = c->out[0], ow = c->out[1];
    int64_t f4 = 36 * ((oh + 3) / 4) * ((ow + 3) / 4);
    int64_t f2 = 16 * ((oh + 1) / 2) * ((ow + 1) / 2);
    return f4 < f2 && !f2_only() ? 4 : 2;
}

static void wg_init(wg_ctx *x, const bg_conv_geom *c) {
    memset(x, 0, sizeof *x);
    x->m = br_winograd_tile(c);
    x->nxi = (x->m + 2) * (x->m + 2);
    x->N = c->N, x->C = c->C, x->OC = c->OC;
    x->H = c->in[0], x->W = c->in[1], x->OH = c->out[0], x->OW = c->out[1];
    x->own = br_sgemm_enabled();
    x->uplane = x->own ? (int64_t)br_sgemm_apack_floats((int)c->OC, (int)c->C)
                       : c->OC * c->C;
    x->ph = c->pb[0], x->pw = c->pb[1];
    x->th = (x->OH + x->m - 1) / x->m, x->tw = (x->OW + x->m - 1) / x->m;
    x->T = x->N * x->th * x->tw;
    int64_t per_tile = x->nxi * (x->C + x->OC) * (int64_t)sizeof(float);
    int64_t cap = (int64_t)WG_CHUNK_BYTES / per_tile;
    if (cap < WG_MIN_TILES) cap = WG_MIN_TILES;
    int64_t chunks = (x->T + cap - 1) / cap; /* then equal chunks */
    x->cap = chunks > 0 ? (x->T + chunks - 1) / chunks : 0;
    x->nchunks = x->cap > 0 ? (x->T + x->cap - 1) / x->cap : 0;
}

/* Floats of U, and of one chunk's slot (V and M). */
static int64_t u_floats(const wg_ctx *x) {
    return x->nxi * x->uplane;
}
static int64_t slot_floats(const wg_ctx *x) {
    int64_t vcols = x->own
                        ? (x->cap + BR_SGEMM_NR - 1) / BR_SGEMM_NR * BR_SGEMM_NR
                        : x->cap;
    return x->nxi *
           (x->C * vcols + (x->own ? WG_PLANE_SKEW : 0) + x->OC * x->cap);
}

size_t br_winograd_scratch(const bg_conv_geom *c, int threads) {
    wg_ctx x;
    wg_init(&x, c);
    int64_t slots = threads < 1 ? 1 : threads;
    if (slots > x.nchunks) slots = x.nchunks > 0 ? x.nchunks : 1;
    if (slots > WG_MAX_SLOTS) slots = WG_MAX_SLOTS;
    return (size_t)(u_floats(&x) + slots * slot_floats(&x)) * sizeof(float);
}

/* ---- the three transforms ------------------------------------------------ */

/* Input channels the filter transform stages at once: U's (m+2)² rows of a
 * block are then written as contiguous runs rather than scattered
 * stores per filter. */
#define WG_FILTER_BLOCK 64

/* The filter transform's context: the geometry, the weights and U. */
typedef struct wg_filter {
    const wg_ctx *x;
    float *U;
} wg_filter;

/* F(4×4, 3×3) is built on the points 0, 1, −1, 2, −½ (and ∞) rather
 * than Lavin and Gray's 0, ±1, ±2: the same operation count, and about a
 * third of the rounding error (bench/RESULTS.md, 2026-11-30). Its G: */
static const double G4[6][3] = {{1, 0, 0},
                                {-1.0 / 3, -1.0 / 3, -1.0 / 3},
                                {1.0 / 3, -1.0 / 3, 1.0 / 3},
                                {1.0 / 15, 2.0 / 15, 4.0 / 15},
                                {-16.0 / 15, 8.0 / 15, -4.0 / 15},
                                {0, 0, 1}};

/* The 36 entries of G g Gᵀ for F(4×4, 3×3), ξ = 6 i + j, in double and
 * rounded once. */
static void filter4(const float *g, float *v, int64_t stride) {
    double u[6][3];
    for (int i = 0; i < 6; i++) /* G g */
        for (int j = 0; j < 3; j++)
            u[i][j] =
                G4[i][0] * g[j] + G4[i][1] * g[3 + j] + G4[i][2] * g[6 + j];
    for (int i = 0; i < 6; i++) /* (G g) Gᵀ */
        for (int j = 0; j < 6; j++)
            v[(6 * i + j) * stride] =
                (float)(u[i][0] * G4[j][0] + u[i][1] * G4[j][1] +
                        u[i][2] * G4[j][2]);
}

/* U[ξ][oc][c] = (G g Gᵀ)[ξ] for output channels [b, e): for F(2×2, 3×3)
 * G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1], for F(4×4, 3×3) G4. */
static void filter_range(void *ctx, int64_t b, int64_t e) {
    const wg_filter *f = ctx;
    const wg_ctx *x = f->x;
    float v[36][WG_FILTER_BLOCK];
    for (int64_t oc = b; oc < e; oc++)
        for (int64_t c0 = 0; c0 < x->C; c0 += WG_FILTER_BLOCK) {
            int64_t cn =
                x->C - c0 < WG_FILTER_BLOCK ? x->C - c0 : WG_FILTER_BLOCK;
            for (int64_t c = 0; c < cn; c++) {
                const float *g = x->w + (oc * x->C + c0 + c) * 9;
                if (x->m == 4) {
                    filter4(g, &v[0][c], WG_FILTER_BLOCK);
                    continue;
                }
                float u[4][3];
                for (int j = 0; j < 3; j++) { /* G g: rows */
                    u[0][j] = g[j];
                    u[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
                    u[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
                    u[3][j] = g[6 + j];
                }
                for (int i = 0; i < 4; i++) { /* (G g) Gᵀ: columns */
                    v[4 * i + 0][c] = u[i][0];
                    v[4 * i + 1][c] = 0.5f * (u[i][0] + u[i][1] + u[i][2]);
                    v[4 * i + 2][c] = 0.5f * (u[i][0] - u[i][1] + u[i][2]);
                    v[4 * i + 3][c] = u[i][2];
                }
            }
            if (x->own) { /* A-packed: entry (oc, c) of each ξ */
                for (int k = 0; k < x->nxi; k++)
                    for (int64_t c = 0; c < cn; c++)
                        f->U[k * x->uplane +
                             (int64_t)br_sgemm_apack_at(
                                 (int)x->C, (int)oc, (int)(c0 + c))] = v[k][c];
                continue;
            }
            float *dst = f->U + oc * x->C + c0;
            for (int k = 0; k < x->nxi; k++)
                memcpy(dst + k * x->uplane, v[k], (size_t)cn * sizeof(float));
        }
}

/* Tiles a row of the transforms handles at once (its buffers live on the
 * stack). */
#define WG_ROW_TILES 64

/* The chunk's tiles of image n, tile row ty, columns [tx0, tx1) (at most
 * WG_ROW_TILES): calls fn for each. The tiles of one row are consecutive,
 * so a chunk holds whole rows but for its first and last. */
typedef struct wg_span {
    int64_t n, ty, tx0, tx1; /* the tiles */
    int64_t off;             /* tile (n, ty, tx0) − t0: its column in V, M */
} wg_span;

/* The spans of the chunk, row by row, at most WG_ROW_TILES each: *it is
 * the next tile (start at t0); false when the chunk is done. */
static bool next_span(const wg_ctx *x, int64_t *it, wg_span *sp) {
    if (*it >= x->t0 + x->tb) return false;
    int64_t per_image = x->th * x->tw, r = *it % per_image;
    sp->n = *it / per_image;
    sp->ty = r / x->tw;
    sp->tx0 = r % x->tw;
    sp->tx1 = x->tw;
    if (sp->tx1 - sp->tx0 > WG_ROW_TILES) sp->tx1 = sp->tx0 + WG_ROW_TILES;
    if (*it + (sp->tx1 - sp->tx0) > x->t0 + x->tb)
        sp->tx1 = sp->tx0 + (x->t0 + x->tb - *it);
    if (x->own) { /* packed V: not past the end of the panel */
        int64_t left = BR_SGEMM_NR - (*it - x->t0) % BR_SGEMM_NR;
        if (sp->tx1 - sp->tx0 > left) sp->tx1 = sp->tx0 + left;
    }
    sp->off = *it - x->t0;
    *it += sp->tx1 - sp->tx0;
    return true;
}

/* Zeros for a patch row outside the input (the widest patch row). */
static const float wg_zeros[4 * WG_ROW_TILES + 2];

/* The m + 2 patch rows d_i of channel c under span sp (m: x->m), each the
 * input's row m·ty − ph + i from column col0 = m·tx0 − pw on, its part
 * inside the input, columns [*lo, *hi) of the patch, read in place as
 * r[i][j − lo] (rows outside the input read zeros): no padded copy
 * (copying the rows with memcpy and reading them back whole stalled on
 * store forwarding). Returns the patch rows' width, m·nt + 2. */
static int64_t patch_rows(const wg_ctx *x, int64_t c, const wg_span *sp,
                          const float **r, int64_t *lo, int64_t *hi) {
    const float *src = x->x + (sp->n * x->C + c) * x->H * x->W;
    int64_t m = x->m, width = m * (sp->tx1 - sp->tx0) + 2;
    int64_t col0 = m * sp->tx0 - x->pw;
    *lo = col0 < 0 ? -col0 : 0;
    *hi = x->W - col0 < width ? x->W - col0 : width;
    if (*hi < *lo) *hi = *lo;
    for (int64_t i = 0; i < m + 2; i++) {
        int64_t row = m * sp->ty - x->ph + i;
        r[i] =
            row >= 0 && row < x->H ? src + row * x->W + col0 + *lo : wg_zeros;
    }
    return width;
}

/* Where the span's entries of row c of V[0] start: a run of it (packed: of
 * one panel's row; next_span keeps a span inside a panel). */
static float *v_row(const wg_ctx *x, int64_t c, const wg_span *sp) {
    return x->V +
           (x->own ? br_sgemm_panel_row((int)x->C, (int)x->panels,
                                        (int)(sp->off / BR_SGEMM_NR), (int)c) +
                         (size_t)(sp->off % BR_SGEMM_NR)
                   : (size_t)(c * x->tb + sp->off));
}

/* The input transform of channel c under span sp, into V. */
BR_CLONES static void input_tiles(const wg_ctx *x, int64_t c,
                                  const wg_span *sp) {
    enum { PW = 2 * WG_ROW_TILES + 2 };
    float s[4][PW];
    int64_t nt = sp->tx1 - sp->tx0, lo, hi;
    const float *r[4];
    int64_t width = patch_rows(x, c, sp, r, &lo, &hi);
    for (int i = 0; i < 4; i++) /* Bᵀ d: zeros where d is */
        for (int64_t j = 0; j < lo; j++)
            s[i][j] = 0.0f;
    for (int64_t j = 0; j < hi - lo; j++) {
        s[0][lo + j] = r[0][j] - r[2][j];
        s[1][lo + j] = r[1][j] + r[2][j];
        s[2][lo + j] = r[2][j] - r[1][j];
        s[3][lo + j] = r[1][j] - r[3][j];
    }
    for (int i = 0; i < 4; i++)
        for (int64_t j = hi; j < width; j++)
            s[i][j] = 0.0f;
    float *dst = v_row(x, c, sp);
    for (int i = 0; i < 4; i++) { /* (Bᵀ d) B */
        float *v0 = dst + (4 * i + 0) * x->vplane,
              *v1 = dst + (4 * i + 1) * x->vplane,
              *v2 = dst + (4 * i + 2) * x->vplane,
              *v3 = dst + (4 * i + 3) * x->vplane;
        const float *si = s[i];
        for (int64_t k = 0; k < nt; k++) {
            v0[k] = si[2 * k] - si[2 * k + 2];
            v1[k] = si[2 * k + 1] + si[2 * k + 2];
            v2[k] = si[2 * k + 2] - si[2 * k + 1];
            v3[k] = si[2 * k + 1] - si[2 * k + 3];
        }
    }
}

/* The F(4×4, 3×3) transforms of one 6-vector, written once over the
 * operations ADD, SUB and MUL (by a constant), type T: the scalar loops and
 * the AVX-512 ones expand the same expressions, so every path rounds
 * alike (-ffp-contract=off).
 * Bᵀ d, Bᵀ = [1 3/2 −2 −3/2 1 0; 0 −1 −5/2 −1/2 1 0; 0 1 1/2 −5/2 1 0;
 *             0 −1/2 −1 1/2 1 0; 0 2 −1 −2 1 0; 0 1 3/2 −2 −3/2 1]: */
#define WG_BT6(T, ADD, SUB, MUL, d0, d1, d2, d3, d4, d5, t0, t1, t2, t3, t4,   \
               t5)                                                             \
    do {                                                                       \
        T d42_ = SUB(d4, d2);                                                  \
        t0 = SUB(ADD(ADD(d0, d4), MUL(1.5f, SUB(d1, d3))), MUL(2.0f, d2));     \
        t1 = SUB(SUB(d4, d1), ADD(MUL(2.5f, d2), MUL(0.5f, d3)));              \
        t2 = ADD(ADD(d4, d1), SUB(MUL(0.5f, d2), MUL(2.5f, d3)));              \
        t3 = ADD(d42_, MUL(0.5f, SUB(d3, d1)));                                \
        t4 = ADD(d42_, MUL(2.0f, SUB(d1, d3)));                                \
        t5 = ADD(SUB(ADD(d5, d1), MUL(2.0f, d3)), MUL(1.5f, SUB(d2, d4)));     \
    } while (0)
/* Aᵀ m, Aᵀ = [1 1 1 1 1 0; 0 1 −1 2 −1/2 0; 0 1 1 4 1/4 0;
 *             0 1 −1 8 −1/8 1]: */
#define WG_AT6(T, ADD, SUB, MUL, m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)       \
    do {                                                                       \
        T p12_ = ADD(m1, m2), d12_ = SUB(m1, m2);                              \
        o0 = ADD(ADD(ADD(m0, p12_), m3), m4);                                  \
        o1 = ADD(d12_, SUB(MUL(2.0f, m3), MUL(0.5f, m4)));                     \
        o2 = ADD(p12_, ADD(MUL(4.0f, m3), MUL(0.25f, m4)));                    \
        o3 = ADD(ADD(d12_, SUB(MUL(8.0f, m3), MUL(0.125f, m4))), m5);          \
    } while (0)
#define WG_SADD(a, b) ((a) + (b))
#define WG_SSUB(a, b) ((a) - (b))
#define WG_SMUL(c, a) ((c) * (a))
#define WG_VADD(a, b) _mm512_add_ps(a, b)
#define WG_VSUB(a, b) _mm512_sub_ps(a, b)
#define WG_VMUL(c, a) _mm512_mul_ps(_mm512_set1_ps(c), a)
#define WG_BT6_S(...) WG_BT6(float, WG_SADD, WG_SSUB, WG_SMUL, __VA_ARGS__)
#define WG_AT6_S(...) WG_AT6(float, WG_SADD, WG_SSUB, WG_SMUL, __VA_ARGS__)
#define WG_BT6_V(...) WG_BT6(__m512, WG_VADD, WG_VSUB, WG_VMUL, __VA_ARGS__)
#define WG_AT6_V(...) WG_AT6(__m512, WG_VADD, WG_VSUB, WG_VMUL, __VA_ARGS__)

#if defined(__x86_64__) && defined(__GNUC__)
#define WG_X86 1
#include <immintrin.h>

/* WG_BT6 over the nt tiles of one row of (Bᵀ d), its columns dealt into
 * e0..e3 (tile k's six: e0..e3[k], e0[k + 1], e1[k + 1]), into the six
 * planes v, v + vp, ..., v + 5 vp, 16 tiles at a time (the last masked: a
 * row of ResNet's planes has 14, 7 or 4 tiles). The same operations in the
 * same order as WG_BT6, which GCC left scalar. */
__attribute__((target("avx512f"))) static void
bt6_vectors(const float *e0, const float *e1, const float *e2, const float *e3,
            int64_t nt, float *v, int64_t vp) {
    for (int64_t k = 0; k < nt; k += 16) {
        __mmask16 m = nt - k >= 16 ? 0xffff : (__mmask16)((1u << (nt - k)) - 1);
        __m512 d0 = _mm512_maskz_loadu_ps(m, e0 + k),
               d1 = _mm512_maskz_loadu_ps(m, e1 + k),
               d2 = _mm512_maskz_loadu_ps(m, e2 + k),
               d3 = _mm512_maskz_loadu_ps(m, e3 + k),
               d4 = _mm512_maskz_loadu_ps(m, e0 + k + 1),
               d5 = _mm512_maskz_loadu_ps(m, e1 + k + 1);
        __m512 t0, t1, t2, t3, t4, t5;
        WG_BT6_V(d0, d1, d2, d3, d4, d5, t0, t1, t2, t3, t4, t5);
        _mm512_mask_storeu_ps(v + k, m, t0);
        _mm512_mask_storeu_ps(v + vp + k, m, t1);
        _mm512_mask_storeu_ps(v + 2 * vp + k, m, t2);
        _mm512_mask_storeu_ps(v + 3 * vp + k, m, t3);
        _mm512_mask_storeu_ps(v + 4 * vp + k, m, t4);
        _mm512_mask_storeu_ps(v + 5 * vp + k, m, t5);
    }
}
#endif

/* input_tiles for F(4×4, 3×3): 6 patch rows at 4·ty − ph, 6 columns a
 * tile at 4·tx − pw, 36 entries of V a tile. */
BR_CLONES static void input_tiles4(const wg_ctx *x, int64_t c,
                                   const wg_span *sp) {
    enum { PW = 4 * WG_ROW_TILES + 2 };
    float s[6][PW];
    int64_t nt = sp->tx1 - sp->tx0, lo, hi;
    const float *r[6];
    int64_t width = patch_rows(x, c, sp, r, &lo, &hi);
    for (int i = 0; i < 6; i++)
        for (int64_t j = 0; j < lo; j++)
            s[i][j] = 0.0f;
    for (int64_t j = 0; j < hi - lo; j++)
        WG_BT6_S(r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j],
                 s[0][lo + j], s[1][lo + j], s[2][lo + j], s[3][lo + j],
                 s[4][lo + j], s[5][lo + j]);
    for (int i = 0; i < 6; i++)
        for (int64_t j = hi; j < width; j++)
            s[i][j] = 0.0f;
    float *dst = v_row(x, c, sp);
    /* (Bᵀ d) B: each row's columns 4k + q dealt into e[q][k] first (tile
     * k's six columns are then e0..e3[k], e0[k + 1], e1[k + 1]), so
     * that both loops run over k in whole vectors */
    float e0[WG_ROW_TILES + 1], e1[WG_ROW_TILES + 1], e2[WG_ROW_TILES],
        e3[WG_ROW_TILES];
    int64_t vp = x->vplane;
    for (int i = 0; i < 6; i++) {
        const float *si = s[i];
        for (int64_t k = 0; k < nt; k++) {
            e0[k] = si[4 * k], e1[k] = si[4 * k + 1];
            e2[k] = si[4 * k + 2], e3[k] = si[4 * k + 3];
        }
        e0[nt] = si[4 * nt], e1[nt] = si[4 * nt + 1];
        /* six planes: distinct rows of V (restrict lets the loop run in
         * vectors without checking that they overlap) */
        float *restrict v0 = dst + 6 * i * vp, *restrict v1 = v0 + vp,
                        *restrict v2 = v1 + vp, *restrict v3 = v2 + vp,
                        *restrict v4 = v3 + vp, *restrict v5 = v4 + vp;
        const float *f0 = e0 + 1, *f1 = e1 + 1; /* columns 4k + 4, 4k + 5 */
#ifdef WG_X86
        if (x->own) { /* braid's GEMM: AVX-512F is there */
            bt6_vectors(e0, e1, e2, e3, nt, v0, vp);
            continue;
        }
#endif
        for (int64_t k = 0; k < nt; k++)
            WG_BT6_S(e0[k], e1[k], e2[k], e3[k], f0[k], f1[k], v0[k], v1[k],
                     v2[k], v3[k], v4[k], v5[k]);
    }
}

/* V[ξ][c][t − t0] = (Bᵀ d B)[ξ] for input channels [b, e) and the chunk's
 * tiles (input_tiles4 for F(4×4); for F(2×2) input_tiles, Bᵀ = [1 0 −1 0;
 * 0 1 1 0; 0 −1 1 0; 0 1 0 −1]). Per span, Bᵀ d is taken along the
 * columns of the patch rows under it, then · B per tile. Row-major V: each
 * channel's spans in turn (its rows of V are runs); packed V: each span's
 * channels in turn (a span inside one panel, its channels' rows of the
 * panel are consecutive: writing a channel's spans in turn instead touched
 * 16 × panels pages per channel). */
static void input_range(void *ctx, int64_t b, int64_t e) {
    const wg_ctx *x = ctx;
    void (*tiles)(const wg_ctx *, int64_t, const wg_span *) =
        x->m == 4 ? input_tiles4 : input_tiles;
    wg_span sp;
    if (!x->own) {
        for (int64_t c = b; c < e; c++)
            for (int64_t it = x->t0; next_span(x, &it, &sp);)
                tiles(x, c, &sp);
        return;
    }
    for (int k = 0; k < x->nxi; k++) /* the last panel's padding: zeros */
        br_sgemm_zero_padding(x->V + k * x->vplane, (int)x->C, (int)x->tb,
                              (int)b, (int)e);
    for (int64_t it = x->t0; next_span(x, &it, &sp);)
        for (int64_t c = b; c < e; c++)
            tiles(x, c, &sp);
}

/* The m output rows of span sp's tiles of output channel oc (rows[i]:
 * m·nt values, the bias added) into y where inside the output, the
 * epilogue applied to each first. */
static void store_rows(const wg_ctx *x, const wg_span *sp, int64_t oc,
                       float *const *rows) {
    int64_t m = x->m, nt = sp->tx1 - sp->tx0;
    int64_t row = m * sp->ty, col = m * sp->tx0;
    int64_t w = x->OW - col < m * nt ? x->OW - col : m * nt;
    for (int64_t i = 0; i < m && row + i < x->OH; i++) {
        int64_t at = ((sp->n * x->OC + oc) * x->OH + row + i) * x->OW + col;
        if (x->ep.res || x->ep.relu)
            br_conv_ep_apply(&x->ep, rows[i], x->ep.res ? x->ep.res + at : NULL,
                             w);
        memcpy(x->y + at, rows[i], (size_t)w * sizeof(float));
    }
}

/* F(2×2)'s output tiles of output channels [b, e): Y = Aᵀ m A with
 * Aᵀ = [1 1 1 0; 0 1 −1 −1], plus the bias, the pixels inside the output
 * written. Per span: Aᵀ m for every tile, then · A into two output rows
 * (buffers), the epilogue applied there, copied into the output where
 * inside it. */
BR_CLONES static void output_range(void *ctx, int64_t b, int64_t e) {
    const wg_ctx *x = ctx;
    int64_t plane = x->OC * x->tb;
    float r0[2 * WG_ROW_TILES], r1[2 * WG_ROW_TILES];
    float *const rows[2] = {r0, r1};
    for (int64_t oc = b; oc < e; oc++) {
        float bias = x->bias ? x->bias[oc] : 0.0f;
        wg_span sp;
        for (int64_t it = x->t0; next_span(x, &it, &sp);) {
            int64_t nt = sp.tx1 - sp.tx0;
            const float *m = x->M + oc * x->tb + sp.off;
            for (int64_t k = 0; k < nt; k++) {
                float a[4], c[4]; /* Aᵀ m: rows 0 and 1, per column */
                for (int j = 0; j < 4; j++) {
                    float m0 = m[j * plane + k], m1 = m[(4 + j) * plane + k],
                          m2 = m[(8 + j) * plane + k],
                          m3 = m[(12 + j) * plane + k];
                    a[j] = m0 + m1 + m2;
                    c[j] = m1 - m2 - m3;
                }
                r0[2 * k] = a[0] + a[1] + a[2] + bias;
                r0[2 * k + 1] = a[1] - a[2] - a[3] + bias;
                r1[2 * k] = c[0] + c[1] + c[2] + bias;
                r1[2 * k + 1] = c[1] - c[2] - c[3] + bias;
            }
            store_rows(x, &sp, oc, rows);
        }
    }
}

#ifdef WG_X86
/* output_range4's transform of span sp's tiles of output channel oc (m:
 * tile 0 of ξ = 0, planes `plane` apart) stored into y's four rows where
 * inside the output, the bias added and then the epilogue, as store_rows
 * would: 16 tiles at a time (the last masked), each row's four values per
 * tile interleaved by a 4 × 4 transpose in each 128-bit lane and two lane
 * shuffles, each 16 values stored in place (the rows through a buffer,
 * the epilogue over it and a copy to y cost ResNet-18 a twentieth of its
 * time). */
__attribute__((target("avx512f"))) static void
at6_store(const wg_ctx *x, const wg_span *sp, int64_t oc, const float *m,
          int64_t plane, float bias) {
    int64_t nt = sp->tx1 - sp->tx0;
    int64_t row = 4 * sp->ty, col = 4 * sp->tx0;
    int64_t w = x->OW - col < 4 * nt ? x->OW - col : 4 * nt;
    int64_t at0 = ((sp->n * x->OC + oc) * x->OH + row) * x->OW + col;
    __m512 bv = _mm512_set1_ps(bias);
    for (int64_t k = 0; k < nt; k += 16) {
        int64_t left = nt - k;
        __mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __m512 a[4][6];
        for (int j = 0; j < 6; j++) {
            const float *mj = m + j * plane + k;
            __m512 m0 = _mm512_maskz_loadu_ps(mk, mj),
                   m1 = _mm512_maskz_loadu_ps(mk, mj + 6 * plane),
                   m2 = _mm512_maskz_loadu_ps(mk, mj + 12 * plane),
                   m3 = _mm512_maskz_loadu_ps(mk, mj + 18 * plane),
                   m4 = _mm512_maskz_loadu_ps(mk, mj + 24 * plane),
                   m5 = _mm512_maskz_loadu_ps(mk, mj + 30 * plane);
            WG_AT6_V(m0, m1, m2, m3, m4, m5, a[0][j], a[1][j], a[2][j],
                     a[3][j]);
        }
        for (int i = 0; i < 4; i++) {
            __m512 o[4];
            WG_AT6_V(a[i][0], a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], o[0],
                     o[1], o[2], o[3]);
            for (int q = 0; q < 4; q++)
                o[q] = _mm512_add_ps(o[q], bv);
            /* lane l of r[q]: tiles 4l + q's four values, then whole tiles
             * in order: f[0] tiles 0-3, f[1] 4-7, f[2] 8-11, f[3] 12-15 */
            __m512 t0 = _mm512_unpacklo_ps(o[0], o[1]),
                   t1 = _mm512_unpackhi_ps(o[0], o[1]),
                   t2 = _mm512_unpacklo_ps(o[2], o[3]),
                   t3 = _mm512_unpackhi_ps(o[2], o[3]);
            __m512 r0 = _mm512_shuffle_ps(t0, t2, 0x44),
                   r1 = _mm512_shuffle_ps(t0, t2, 0xee),
                   r2 = _mm512_shuffle_ps(t1, t3, 0x44),
                   r3 = _mm512_shuffle_ps(t1, t3, 0xee);
            __m512 s0 = _mm512_shuffle_f32x4(r0, r1, 0x88),
                   s1 = _mm512_shuffle_f32x4(r2, r3, 0x88),
                   s2 = _mm512_shuffle_f32x4(r0, r1, 0xdd),
                   s3 = _mm512_shuffle_f32x4(r2, r3, 0xdd);
            __m512 f[4] = {_mm512_shuffle_f32x4(s0, s1, 0x88),
                           _mm512_shuffle_f32x4(s2, s3, 0x88),
                           _mm512_shuffle_f32x4(s0, s1, 0xdd),
                           _mm512_shuffle_f32x4(s2, s3, 0xdd)};
            if (row + i >= x->OH) break;
            int64_t at = at0 + i * x->OW;
            for (int c = 0; c < 4; c++) {
                int64_t o = 4 * k + 16 * c; /* its first column from col */
                if (o >= w) break;
                int64_t n = w - o >= 16 ? 16 : w - o;
                __mmask16 sm = br_lanes(0, n);
                __m512 v =
                    br_epilogue16(f[c], x->ep.res ? x->ep.res + at + o : NULL,
                                  sm, x->ep.res_first, x->ep.relu);
                _mm512_mask_storeu_ps(x->y + at + o, sm, v);
            }
        }
    }
}
#endif

/* at6_store's transform without AVX-512, into four row buffers (stored by
 * store_rows): the same operations, both steps over the tiles k in loops
 * GCC vectorises. */
BR_CLONES static void at6_rows_scalar(const float *m, int64_t plane, int64_t nt,
                                      float bias,
                                      float (*rows)[4 * WG_ROW_TILES]) {
    float a[4][6][WG_ROW_TILES]; /* Aᵀ m: four rows, per column, per tile */
    for (int j = 0; j < 6; j++) {
        const float *mj = m + j * plane;
        for (int64_t k = 0; k < nt; k++)
            WG_AT6_S(mj[k], mj[6 * plane + k], mj[12 * plane + k],
                     mj[18 * plane + k], mj[24 * plane + k], mj[30 * plane + k],
                     a[0][j][k], a[1][j][k], a[2][j][k], a[3][j][k]);
    }
    for (int i = 0; i < 4; i++) {
        float *o = rows[i];
        for (int64_t k = 0; k < nt; k++) {
            float o0, o1, o2, o3;
            WG_AT6_S(a[i][0][k], a[i][1][k], a[i][2][k], a[i][3][k], a[i][4][k],
                     a[i][5][k], o0, o1, o2, o3);
            o[4 * k] = o0 + bias, o[4 * k + 1] = o1 + bias;
            o[4 * k + 2] = o2 + bias, o[4 * k + 3] = o3 + bias;
        }
    }
}

/* output_range for F(4×4, 3×3): Aᵀ m per column of each tile, then · A
 * into four output rows with the bias, stored with the epilogue (at6_store;
 * without AVX-512 at6_rows_scalar, then store_rows). */
static void output_range4(void *ctx, int64_t b, int64_t e) {
    const wg_ctx *x = ctx;
    int64_t plane = x->OC * x->tb;
    float rows[4][4 * WG_ROW_TILES];
    float *const rp[4] = {rows[0], rows[1], rows[2], rows[3]};
    for (int64_t oc = b; oc < e; oc++) {
        float bias = x->bias ? x->bias[oc] : 0.0f;
        wg_span sp;
        for (int64_t it = x->t0; next_span(x, &it, &sp);) {
            int64_t nt = sp.tx1 - sp.tx0;
            const float *m = x->M + oc * x->tb + sp.off;
#ifdef WG_X86
            if (x->own) { /* braid's GEMM: AVX-512F is there */
                at6_store(x, &sp, oc, m, plane, bias);
                continue;
            }
#endif
            at6_rows_scalar(m, plane, nt, bias, rows);
            store_rows(x, &sp, oc, rp);
        }
    }
}

/* Items per task so that each does about BR_GRAIN element operations. */
static int64_t grain(int64_t per_item) {
    return per_item >= BR_GRAIN ? 1 : BR_GRAIN / (per_item > 0 ? per_item : 1);
}

/* Chunk t0 (its first tile) in the slot at V: the input transform, the
 * (m+2)² products and the output transform, the steps shared over the pool
 * (inline when called from a pool thread). */
static void run_chunk(wg_ctx *x, br_pool *pool, int64_t t0, float *V) {
    x->t0 = t0;
    x->tb = x->T - t0 < x->cap ? x->T - t0 : x->cap;
    x->V = V;
    x->panels = (x->tb + BR_SGEMM_NR - 1) / BR_SGEMM_NR;
    x->vplane = x->C * (x->own ? x->panels * BR_SGEMM_NR : x->tb) +
                (x->own ? WG_PLANE_SKEW : 0);
    x->M = V + x->nxi * x->vplane;
    br_parallel_for(pool, x->C, grain(4 * x->nxi * x->tb), input_range, x);
    if (x->own) { /* V written packed, U packed once: nothing to pack; the
                   * nxi products as one set of tasks */
        br_sgemm_packed v[36];
        for (int k = 0; k < x->nxi; k++)
            v[k] = (br_sgemm_packed){(int)x->C, (int)x->tb, (int)x->panels,
                                     x->V + k * x->vplane};
        br_sgemm_run_pa_batch(pool, x->nxi, (int)x->OC, x->U, (size_t)x->uplane,
                              v, x->M, (size_t)(x->OC * x->tb), (int)x->tb);
    } else {
        for (int k = 0; k < x->nxi; k++)
            br_gemm(pool, false, false, false, (int)x->OC, (int)x->tb,
                    (int)x->C, x->U + k * x->uplane, (int)x->C,
                    x->V + k * x->vplane, (int)x->tb, x->M + k * x->OC * x->tb,
                    (int)x->tb);
    }
    br_parallel_for(pool, x->OC, grain(3 * x->nxi * x->tb),
                    x->m == 4 ? output_range4 : output_range, x);
}

/* Chunk k whole in scratch slot `slot` (br_waves), on this thread. */
static void chunk_in_slot(void *ctx, int64_t k, int64_t slot) {
    wg_ctx x = *(const wg_ctx *)ctx;
    run_chunk(&x, NULL, k * x.cap, x.slots + slot * slot_floats(&x));
}

/* x's filter transform (of x->w) into U, over pool. */
static void transform_filter(const wg_ctx *x, br_pool *pool, float *U) {
    wg_filter f = {x, U};
    if (x->own) /* the packed tiles' rows past OC: zeros */
        memset(U, 0, (size_t)u_floats(x) * sizeof(float));
    br_parallel_for(pool, x->OC, grain(40 * x->C), filter_range, &f);
}

float *br_winograd_filter(const bg_conv_geom *c, br_pool *pool,
                          const float *w) {
    wg_ctx x;
    wg_init(&x, c);
    x.w = w;
    float *U = malloc((size_t)u_floats(&x) * sizeof(float));
    if (U) transform_filter(&x, pool, U);
    return U;
}

void br_winograd_run(const bg_conv_geom *c, br_pool *pool, const float *in,
                     const float *w, const float *U, const float *bias,
                     const br_conv_ep *ep, float *out, void *scratch,
                     size_t scratch_bytes) {
    wg_ctx x;
    wg_init(&x, c);
    x.x = in, x.w = w, x.bias = bias, x.y = out;
    if (ep) x.ep = *ep;
    /* The scratch: room for U (used when none was made before), then the
     * chunks' slots. */
    x.slots = (float *)scratch + u_floats(&x);
    if (!U) {
        transform_filter(&x, pool, scratch);
        U = scratch;
    }
    x.U = U;
    size_t slot_bytes = (size_t)slot_floats(&x) * sizeof(float);
    size_t u_bytes = (size_t)u_floats(&x) * sizeof(float);
    int64_t slots = scratch_bytes > u_bytes
                        ? (int64_t)((scratch_bytes - u_bytes) / slot_bytes)
                        : 0;
    if (slots > x.nchunks) slots = x.nchunks;
    if (slots >= 2 && br_pool_threads(pool) >= 2) {
        br_waves(pool, x.nchunks, slots, chunk_in_slot, &x);
        return;
    }
    for (int64_t k = 0; k < x.nchunks; k++)
        run_chunk(&x, pool, k * x.cap, x.slots);
}
