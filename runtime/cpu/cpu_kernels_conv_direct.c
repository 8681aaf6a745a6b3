/* runtime/cpu/cpu_kernels_conv_direct.c — 2-D f32 convolutions computed
 * straight from their input, with no im2col: ResNet's stem (7×7, stride
 * 2) and its stride-2 3×3 convolutions, and the other 2-D convs Winograd
 * does not take except 1×1 ones (x86-64 with AVX-512F, where braid's GEMM
 * runs).
 *
 * A tile is P output pixels of one output row (P = 14, or 7 for rows of at
 * most 7) by 16·V output channels (V = 2, or 4 with P = 7): P·V
 * accumulators of 16 channels, 28 of AVX-512's 32 registers. For each of
 * the K = C·KH·KW products k = (c, kh, kw) in turn, the tile loads V
 * vectors of weights (packed per block of 16·V channels, k after k) and
 * broadcasts the P input values that tap reads,
 * x[c][oh·sh + kh][(ow0 + p)·sw + kw] in the padded input: P addresses sw
 * floats apart, so their offsets are constants of the kernel and one table
 * gives each k's first. Two vector loads and 14 broadcasts feed 28 FMAs, as
 * in braid's GEMM's micro-kernel (cpu_sgemm.c), but nothing is unrolled
 * first: im2col wrote 9/4 of the input for a stride-2 3×3 conv and 49/4
 * for the stem, and the GEMM read it back (ResNet-18's stride-2 convs spent
 * 18–25 % of their time in it).
 *
 * The input is first copied with its pads (zeros) into the scratch when it
 * has any, or when its rows hold fewer than P output pixels: the tile's
 * extra pixels then read on into the next row (they are computed, never
 * stored; the copy ends in slack for the last row's). A row of at least P
 * pixels ends with a tile shifted left to end at OW, which stores only the
 * pixels the tile before it did not: an output that overwrites the
 * residual it adds reads each residual before writing there.
 *
 * A tile's sums (pixels × channels) get the bias, are transposed in
 * registers into rows of the output (channels × pixels) and stored with
 * the epilogue (residual, relu), the operations an unfused pass would make
 * in the same order. Every output's sum runs over k in order, in one
 * tile, whatever the thread count or split: the same bits for any. */
#include "runtime/cpu/cpu_kernels.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define DC_X86 1
#include <immintrin.h>
#endif

/* Output channels at or below which im2col's GEMM stays: a tile's 32
 * channels would be more than half zeros. */
#define DC_MIN_OC 16
/* Tasks per thread: (channel block, image, rows) cuts enough that a
 * thread slowed by other work does not hold the rest up. */
#define DC_TASKS_PER_THREAD 4
/* Most bytes of the padded input copy (all images at once). */
#define DC_PAD_MAX ((size_t)256 << 20)
/* Channels ahead whose input rows a tile prefetches: a tap's rows sit a
 * plane apart from the last channel's, where no hardware prefetcher looks
 * (the tiles' broadcasts waited on L2 without it). */
#define DC_PREFETCH_CHANNELS 2

typedef struct dc_geom {
    int64_t N, C, OC, H, W, OH, OW, KH, KW, sh, sw;
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    bool padded;            /* the input is read from a padded copy */
    int64_t Hp, Wp;         /* its planes (the input's own when !padded) */
    int P, V;               /* a tile: pixels, vectors of 16 channels */
    int64_t L;              /* channels per block: 16·V */
    int64_t nob;            /* channel blocks */
    int64_t K;              /* products per output: C·KH·KW */
} dc_geom;

static void dc_init(const bg_conv_geom *c, dc_geom *d) {
    memset(d, 0, sizeof *d);
    d->N = c->N, d->C = c->C, d->OC = c->OC;
    d->H = c->in[0], d->W = c->in[1];
    d->OH = c->out[0], d->OW = c->out[1];
    d->KH = c->k[0], d->KW = c->k[1];
    d->sh = c->stride[0], d->sw = c->stride[1];
    d->pt = c->pb[0], d->pl = c->pb[1], d->pb = c->pe[0], d->pr = c->pe[1];
    d->V = d->OW <= 7 && d->OC > 32 ? 4 : 2;
    d->P = d->V == 4 ? 7 : 14;
    d->L = 16 * d->V;
    d->padded = d->pt || d->pl || d->pb || d->pr || d->OW < d->P;
    d->Hp = d->padded ? d->pt + d->H + d->pb : d->H;
    d->Wp = d->padded ? d->pl + d->W + d->pr : d->W;
    d->nob = (d->OC + d->L - 1) / d->L;
    d->K = d->C * d->KH * d->KW;
}

/* Floats past the padded copy that the last row's extra pixels may read. */
static int64_t slack(const dc_geom *d) {
    return d->P * d->sw + d->KW + 16;
}

static int64_t padded_floats(const dc_geom *d) {
    return d->padded ? d->N * d->C * d->Hp * d->Wp + slack(d) : 0;
}

static int64_t filter_floats(const dc_geom *d) {
    return d->nob * d->K * d->L;
}

/* Whether BRAID_CPU_CONV=im2col keeps every conv on im2col. */
static bool im2col_only(void) {
    static int state;
    return br_env_is("BRAID_CPU_CONV", "im2col", &state);
}

bool br_conv_direct_applies(const bg_conv_geom *c, braid_dtype t) {
    if (t != BRAID_F32 || c->transpose || c->channels_last ||
        c->nspatial != 2 || c->G != 1 || c->N < 1 || c->C < 1 ||
        c->OC <= DC_MIN_OC || c->out[0] < 1 || c->out[1] < 1)
        return false;
    if (c->dil[0] != 1 || c->dil[1] != 1 || c->stride[0] < 1 ||
        (c->stride[1] != 1 && c->stride[1] != 2))
        return false;
    for (int i = 0; i < 2; i++)
        if (c->pb[i] < 0 || c->pe[i] < 0) return false;
    /* 1×1 kernels stay on im2col: their col is a strided copy of at most
     * the input, and with K = C a tile's transposed stores weigh: ResNet's
     * stride-2 1×1 convolution (K = 64) ran 1.2× slower here */
    if (c->k[0] == 1 && c->k[1] == 1) return false;
    if (br_winograd_applies(c, t)) return false;
    dc_geom d;
    dc_init(c, &d);
    /* the offsets inside one image's (padded) input are int32; the padded
     * copy of every image sits in the scratch, so a batch whose copy would
     * pass DC_PAD_MAX keeps im2col's blocks (their scratch is bounded) */
    if (d.C * d.Hp * d.Wp + slack(&d) > INT_MAX || d.K > INT_MAX ||
        (size_t)padded_floats(&d) * sizeof(float) > DC_PAD_MAX)
        return false;
    return br_sgemm_enabled() && !im2col_only();
}

size_t br_conv_direct_scratch(const bg_conv_geom *c) {
    dc_geom d;
    dc_init(c, &d);
    return br_lines((size_t)filter_floats(&d) * sizeof(float)) +
           br_lines((size_t)(2 * d.K) * sizeof(int32_t)) +
           br_lines((size_t)padded_floats(&d) * sizeof(float));
}

/* ---- the filter ----------------------------------------------------------
 */

typedef struct pack_job {
    const dc_geom *d;
    const float *w;
    float *wp;
} pack_job;

/* Channel blocks [b, e) of w [OC, K] packed: block ob holds, k after k,
 * the L weights of its channels (zeros past OC). */
static void pack_range(void *ctx, int64_t b, int64_t e) {
    const pack_job *j = ctx;
    const dc_geom *d = j->d;
    for (int64_t ob = b; ob < e; ob++) {
        float *blk = j->wp + ob * d->K * d->L;
        for (int64_t l = 0; l < d->L; l++) {
            int64_t oc = ob * d->L + l;
            const float *src = j->w + oc * d->K;
            for (int64_t k = 0; k < d->K; k++)
                blk[k * d->L + l] = oc < d->OC ? src[k] : 0.0f;
        }
    }
}

static void pack_filter(const dc_geom *d, br_pool *pool, const float *w,
                        float *wp) {
    pack_job j = {d, w, wp};
    br_parallel_for(pool, d->nob, 1, pack_range, &j);
}

float *br_conv_direct_filter(const bg_conv_geom *c, br_pool *pool,
                             const float *w) {
    dc_geom d;
    dc_init(c, &d);
    size_t bytes = br_lines((size_t)filter_floats(&d) * sizeof(float));
    float *wp = aligned_alloc(64, bytes);
    if (wp) pack_filter(&d, pool, w, wp);
    return wp;
}

/* ---- the run ---------------------------------------------------------------
 */

#ifdef DC_X86

typedef struct dc_run {
    dc_geom d;
    const float *x;  /* the input as read: x, or its padded copy */
    const float *wp; /* the packed filter */
    const int32_t *koff;
    const float *bias;
    br_conv_ep ep;
    float *y;
    const float *src; /* the conv's own input (the padding copies it) */
    float *pad;       /* the padded copy */
    int64_t chunks;   /* row chunks per (block, image) */
} dc_run;

/* Planes [b, e) of the input (image, channel) into the padded copy. */
static void pad_range(void *ctx, int64_t b, int64_t e) {
    const dc_run *r = ctx;
    const dc_geom *d = &r->d;
    for (int64_t pl = b; pl < e; pl++) {
        const float *s = r->src + pl * d->H * d->W;
        float *t = r->pad + pl * d->Hp * d->Wp;
        memset(t, 0, (size_t)(d->pt * d->Wp) * sizeof(float));
        for (int64_t h = 0; h < d->H; h++) {
            float *row = t + (d->pt + h) * d->Wp;
            memset(row, 0, (size_t)d->pl * sizeof(float));
            memcpy(row + d->pl, s + h * d->W, (size_t)d->W * sizeof(float));
            memset(row + d->pl + d->W, 0, (size_t)d->pr * sizeof(float));
        }
        memset(t + (d->pt + d->H) * d->Wp, 0,
               (size_t)(d->pb * d->Wp) * sizeof(float));
    }
}

/* The sums of one tile into out[p·V + v] (pixel p, channels 16v..): P
 * pixels sw floats apart from xb, each k's input at xb + koff[2k] (and a
 * line to prefetch at xb + koff[2k + 1]), its V weight vectors at
 * wp + k·16·V. */
#define DC_KERNEL(NAME, P, V, SW)                                              \
    __attribute__((target("avx512f"))) static void NAME(                       \
        const float *xb, const int32_t *koff, const float *wp, int64_t K,      \
        __m512 *out) {                                                         \
        __m512 acc[P][V];                                                      \
        _Pragma("GCC unroll 14") for (int p = 0; p < P; p++)                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[p][v] =    \
                _mm512_setzero_ps();                                           \
        for (int64_t k = 0; k < K; k++) {                                      \
            const float *s = xb + koff[2 * k];                                 \
            _mm_prefetch((const char *)(xb + koff[2 * k + 1]), _MM_HINT_T0);   \
            __m512 wv[V];                                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) wv[v] =        \
                _mm512_loadu_ps(wp + (k * V + v) * 16);                        \
            _Pragma("GCC unroll 14") for (int p = 0; p < P; p++) {             \
                __m512 b = _mm512_set1_ps(s[p * SW]);                          \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)            \
                    acc[p][v] = _mm512_fmadd_ps(b, wv[v], acc[p][v]);          \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 14") for (int p = 0; p < P; p++)                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                \
                out[p * V + v] = acc[p][v];                                    \
    }
DC_KERNEL(tile14x2s1, 14, 2, 1)
DC_KERNEL(tile14x2s2, 14, 2, 2)
DC_KERNEL(tile7x4s1, 7, 4, 1)
DC_KERNEL(tile7x4s2, 7, 4, 2)

typedef void (*dc_kernel)(const float *xb, const int32_t *koff, const float *wp,
                          int64_t K, __m512 *out);

static dc_kernel pick_kernel(const dc_geom *d) {
    if (d->V == 4) return d->sw == 1 ? tile7x4s1 : tile7x4s2;
    return d->sw == 1 ? tile14x2s1 : tile14x2s2;
}

/* r[i] becomes column i of the 16×16 matrix whose rows were r[0..16). */
__attribute__((target("avx512f"))) static inline void transpose16(__m512 *r) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) { /* 32-bit pairs, within 128-bit lanes */
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* 64-bit pairs: lane q of u[4i + j] holds column 4q + j of rows
     * 4i..4i+3 */
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            __m512d a = _mm512_castps_pd(t[4 * i + h]);
            __m512d b = _mm512_castps_pd(t[4 * i + h + 2]);
            u[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            u[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    /* column 4q + j: lane q of u[j], u[4 + j], u[8 + j], u[12 + j] */
    for (int j = 0; j < 4; j++) {
        __m512 e0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
        __m512 e1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
        __m512 o0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd);
        __m512 o1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
        r[j] = _mm512_shuffle_f32x4(e0, e1, 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(e0, e1, 0xdd);
        r[4 + j] = _mm512_shuffle_f32x4(o0, o1, 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(o0, o1, 0xdd);
    }
}

/* Tile (image img, channel block ob, output row oh, pixels from ow0) from
 * its sums acc into y, its pixels [skip, its last inside the row) alone. */
__attribute__((target("avx512f"))) static void
store_tile(const dc_run *r, __m512 *acc, int64_t img, int64_t ob, int64_t oh,
           int64_t ow0, int64_t skip) {
    const dc_geom *d = &r->d;
    int64_t npix = d->OW - ow0 < d->P ? d->OW - ow0 : d->P;
    __mmask16 m = br_lanes(skip, npix);
    for (int v = 0; v < d->V; v++) {
        int64_t oc0 = ob * d->L + 16 * v;
        if (oc0 >= d->OC) break;
        int64_t nc = d->OC - oc0 < 16 ? d->OC - oc0 : 16;
        __m512 rows[16];
        __m512 bv = r->bias
                        ? _mm512_maskz_loadu_ps(br_lanes(0, nc), r->bias + oc0)
                        : _mm512_setzero_ps();
        for (int p = 0; p < 16; p++)
            rows[p] = p >= d->P ? _mm512_setzero_ps()
                      : r->bias ? _mm512_add_ps(acc[p * d->V + v], bv)
                                : acc[p * d->V + v];
        transpose16(rows);
        for (int64_t l = 0; l < nc; l++) {
            size_t at =
                (size_t)(((img * d->OC + oc0 + l) * d->OH + oh) * d->OW + ow0);
            __m512 val =
                br_epilogue16(rows[l], r->ep.res ? r->ep.res + at : NULL, m,
                              r->ep.res_first, r->ep.relu);
            _mm512_mask_storeu_ps(r->y + at, m, val);
        }
    }
}

/* Tasks [b, e): task t is channel block t / (N·chunks), image, and a
 * chunk of output rows; every tile of those rows. */
__attribute__((target("avx512f"))) static void tasks_range(void *ctx, int64_t b,
                                                           int64_t e) {
    const dc_run *r = ctx;
    const dc_geom *d = &r->d;
    dc_kernel kernel = pick_kernel(d);
    int64_t per_ob = d->N * r->chunks;
    int64_t rows = (d->OH + r->chunks - 1) / r->chunks;
    __m512 acc[28];
    for (int64_t t = b; t < e; t++) {
        int64_t ob = t / per_ob, img = t % per_ob / r->chunks;
        int64_t h0 = t % r->chunks * rows;
        int64_t h1 = h0 + rows < d->OH ? h0 + rows : d->OH;
        const float *wp = r->wp + ob * d->K * d->L;
        const float *xi = r->x + img * d->C * d->Hp * d->Wp;
        for (int64_t oh = h0; oh < h1; oh++)
            for (int64_t ow = 0; ow < d->OW; ow += d->P) {
                /* the last tile of a row of at least P ends at OW */
                int64_t ow0 =
                    ow + d->P > d->OW && d->OW >= d->P ? d->OW - d->P : ow;
                kernel(xi + oh * d->sh * d->Wp + ow0 * d->sw, r->koff, wp, d->K,
                       acc);
                store_tile(r, acc, img, ob, oh, ow0, ow - ow0);
            }
    }
}

void br_conv_direct_run(const bg_conv_geom *c, br_pool *pool, const float *x,
                        const float *w, const float *wp, const float *bias,
                        const br_conv_ep *ep, float *y, void *scratch) {
    dc_run r;
    memset(&r, 0, sizeof r);
    dc_init(c, &r.d);
    const dc_geom *d = &r.d;
    /* The scratch: room for the packed filter (used when none was made
     * before), the offsets, then the padded copy. */
    char *s = scratch;
    float *wscratch = (float *)s;
    s += br_lines((size_t)filter_floats(d) * sizeof(float));
    int32_t *koff = (int32_t *)s;
    s += br_lines((size_t)(2 * d->K) * sizeof(int32_t));
    if (!wp) {
        pack_filter(d, pool, w, wscratch);
        wp = wscratch;
    }
    /* koff[2k]: k's first input; koff[2k + 1]: a line to prefetch, of
     * the row the same tap reads DC_PREFETCH_CHANNELS channels on (the
     * taps of a row cover its lines) */
    int64_t span = (d->P - 1) * d->sw + d->KW;
    for (int64_t ch = 0, k = 0; ch < d->C; ch++)
        for (int64_t kh = 0; kh < d->KH; kh++)
            for (int64_t kw = 0; kw < d->KW; kw++, k++) {
                int64_t pc = ch + DC_PREFETCH_CHANNELS < d->C
                                 ? ch + DC_PREFETCH_CHANNELS
                                 : d->C - 1;
                int64_t line = 16 * kw < span - 1 ? 16 * kw : span - 1;
                koff[2 * k] = (int32_t)((ch * d->Hp + kh) * d->Wp + kw);
                koff[2 * k + 1] = (int32_t)((pc * d->Hp + kh) * d->Wp + line);
            }
    r.x = x, r.wp = wp, r.koff = koff, r.bias = bias, r.y = y;
    if (ep) r.ep = *ep;
    if (d->padded) {
        r.src = x;
        r.pad = (float *)s;
        br_parallel_for(pool, d->N * d->C, 1, pad_range, &r);
        memset(r.pad + d->N * d->C * d->Hp * d->Wp, 0,
               (size_t)slack(d) * sizeof(float));
        r.x = r.pad;
    }
    int64_t want = (int64_t)br_pool_threads(pool) * DC_TASKS_PER_THREAD;
    int64_t per = d->nob * d->N;
    r.chunks = (want + per - 1) / per;
    if (r.chunks > d->OH) r.chunks = d->OH;
    int64_t rows = (d->OH + r.chunks - 1) / r.chunks;
    r.chunks = (d->OH + rows - 1) / rows; /* none empty */
    br_parallel_for(pool, per * r.chunks, 1, tasks_range, &r);
}

#else /* not x86-64: br_sgemm_enabled is false, nothing runs here */

void br_conv_direct_run(const bg_conv_geom *c, br_pool *pool, const float *x,
                        const float *w, const float *wp, const float *bias,
                        const br_conv_ep *ep, float *y, void *scratch) {
    (void)c, (void)pool, (void)x, (void)w, (void)wp, (void)bias, (void)ep;
    (void)y, (void)scratch;
}

#endif
