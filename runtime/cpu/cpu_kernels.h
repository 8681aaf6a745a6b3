/* runtime/cpu/cpu_kernels.h — shared pieces of the CPU kernels (prefix br_).
 *
 * Kernels are split by family (cpu_kernels_<family>.c);
 * runtime/cpu/cpu_kernels.c dispatches on the op kind and holds what the
 * families share: the strided n-d iterator and block conversions between
 * dtypes. */
#ifndef BRAID_RUNTIME_CPU_KERNELS_H
#define BRAID_RUNTIME_CPU_KERNELS_H

#include "runtime/runtime.h"

/* Elements per block when a kernel stages values through a stack buffer
 * (f16/bf16 through f32, casts through f64). */
#define BR_BLOCK 256
/* Indices below which a parallel-for is not worth waking threads for:
 * about 32 KiB of f32 traffic per chunk. */
#define BR_GRAIN 8192

/* A hot loop's function built three times on x86-64 — AVX-512F, AVX2 and
 * the baseline the build targets — with the loader picking the widest this
 * CPU runs (GCC/clang function multiversioning). Files using it are
 * compiled with -ffp-contract=off (CMakeLists.txt), so no clone fuses a
 * multiply and an add that the others round twice: every clone gives the
 * same bits. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define BR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef BR_CLONES
#define BR_CLONES
#endif

/* Multiply-adds at or below which one GEMM is one thread's work. */
#define BR_GEMM_SMALL ((int64_t)1 << 18)

/* C [M, N] (row stride ldc) = op(A) · op(B), row-major, f64 or f32, with
 * op the transpose where ta / tb; blocks of C split over the pool (NULL:
 * one after another on this thread), one single-threaded BLAS call each
 * (cpu_gemm.c). The blocks depend on the shape only, so the result is the
 * same bits for any pool. M, N, K > 0. */
void br_gemm(br_pool *pool, bool f64, bool ta, bool tb, int M, int N, int K,
             const void *A, int lda, const void *B, int ldb, void *C, int ldc);

/* Whether this CPU runs AVX-512F code (asked once): the hand-written
 * AVX-512 kernels' (target("avx512f")) condition. */
bool br_cpu_avx512f(void);
/* Whether environment variable `name` is `value`, read once into *state
 * (a static int: 0 not read yet, then 1 yes, 2 no): a kernel setting that
 * an executor's scratch was sized by must not change under it. */
bool br_env_is(const char *name, const char *value, int *state);

/* bytes rounded up to whole 64-byte lines (scratch carved into aligned
 * parts). */
static inline size_t br_lines(size_t bytes) {
    return (bytes + 63) / 64 * 64;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* Lanes [lo, hi) of 16 as a mask (0 ≤ lo ≤ hi ≤ 16). */
static inline __mmask16 br_lanes(int64_t lo, int64_t hi) {
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* A fused conv's epilogue (br_conv_ep) on 16 output values v, as the
 * unfused add and relu nodes would: the residual's lanes m at res added
 * (res + v when res_first, else v + res; res NULL: none), then, with
 * relu, max(0, v): 0 where v < 0, else v (NaN and −0 kept). */
__attribute__((target("avx512f"))) static inline __m512
br_epilogue16(__m512 v, const float *res, __mmask16 m, bool res_first,
              bool relu) {
    if (res) {
        __m512 r = _mm512_maskz_loadu_ps(m, res);
        v = res_first ? _mm512_add_ps(r, v) : _mm512_add_ps(v, r);
    }
    return relu ? _mm512_max_ps(_mm512_setzero_ps(), v) : v;
}

/* For AVX-512 kernels: lanes [lo, hi) (0 ≤ lo ≤ hi ≤ 16) of p[lane · s2],
 * s2 1 or 2, zeros in the others, reading only those floats (masked loads:
 * nothing past a row's end is touched); stride 2 picks every other float
 * of two loads by a permute. The im2col of strided convs and the strided
 * taps of max pools. */
__attribute__((target("avx512f"))) static inline __m512
br_load_lanes(const float *p, int64_t s2, int64_t lo, int64_t hi) {
    __mmask16 m = br_lanes(lo, hi);
    if (s2 == 1) return _mm512_maskz_loadu_ps(m, p);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14,
                                          12, 10, 8, 6, 4, 2, 0);
    uint32_t f = hi > lo ? (uint32_t)(((uint64_t)1 << (2 * hi - 1)) - 1) &
                               ~(uint32_t)(((uint64_t)1 << (2 * lo)) - 1)
                         : 0; /* floats [2·lo, 2·hi − 1) */
    __m512 v0 = _mm512_maskz_loadu_ps((__mmask16)f, p);
    __m512 v1 = _mm512_maskz_loadu_ps((__mmask16)(f >> 16), p + 16);
    return _mm512_maskz_permutex2var_ps(m, v0, even, v1);
}
#endif

/* braid's own f32 GEMM against a packed B (cpu_sgemm.c): x86-64 with
 * AVX-512F, unless BRAID_CPU_GEMM=openblas (br_sgemm_enabled). A packed
 * B [K, N] is panels of BR_SGEMM_NR columns: panel j holds columns
 * [j·NR, +NR) as K rows of NR contiguous floats (64-byte aligned, zeros
 * past N), in blocks of K rows (cpu_sgemm.c). br_sgemm_pack packs op(B) (B
 * row-major with leading dim ldb, transposed where tb) over the pool into one
 * allocation (free() releases it); NULL when the GEMM is not enabled or
 * memory is short.
 * br_sgemm_run: C [M, N] (row stride ldc) = A [M, K] (row-major, leading
 * dim lda) · B, over the pool; the same bits for any pool. */
#define BR_SGEMM_NR 32
typedef struct br_sgemm_packed {
    int K, N;          /* the operand's shape */
    int panels;        /* ceil(N / BR_SGEMM_NR) */
    const float *data; /* panels × K × BR_SGEMM_NR floats */
} br_sgemm_packed;
bool br_sgemm_enabled(void);
br_sgemm_packed *br_sgemm_pack(const float *B, int K, int N, int ldb, bool tb,
                               br_pool *pool);
/* A B that is not a constant is packed per run, a block of panels at a
 * time, in scratch: br_sgemm_pack_scratch is the bytes for K × N (whole
 * panels, at most 8 MiB unless one panel is more); br_sgemm_pack_into packs
 * columns [n0, n0 + ncols) of op(B) into dst (64-byte aligned) and
 * describes them in *view. Each panel's products are the same bits
 * whichever block it is packed in, so a constant and an input give the
 * same result. */
size_t br_sgemm_pack_scratch(int64_t K, int64_t N);
void br_sgemm_pack_into(const float *B, int K, int ldb, bool tb, int n0,
                        int ncols, float *dst, br_pool *pool,
                        br_sgemm_packed *view);
void br_sgemm_run(br_pool *pool, int M, const float *A, int lda,
                  const br_sgemm_packed *B, float *C, int ldc);
/* br_sgemm_run with what happens as C's rows are stored, in this order:
 * bias (NULL: none) bias[i] added to each element of row i; res (NULL:
 * none) the element of res [M, N] (row stride ldr) at the same place
 * added (res + c when res_first, else c + res); relu, x < 0 ? 0 : x (NaN
 * and -0.0 kept) — the bits of doing each after the product, in that order;
 * stream, C's whole aligned rows of a product with K ≤ 384 written with
 * streaming stores (no read for ownership of C's lines, which then are not
 * in the caches: for a large C that no one reads soon, a convolution's
 * output across many images; a store fence ends the call). */
typedef struct br_sgemm_ep {
    const float *bias;
    const float *res;
    size_t ldr;
    bool res_first;
    bool relu;
    bool stream;
} br_sgemm_ep;
void br_sgemm_run_ep(br_pool *pool, int M, const float *A, int lda,
                     const br_sgemm_packed *B, float *C, int ldc,
                     const br_sgemm_ep *ep);
/* Where row k of panel j starts (in floats from the first panel) in a
 * packed operand of K rows and `panels` panels: for producers that write
 * B packed in place (the Winograd input transform). */
size_t br_sgemm_panel_row(int K, int panels, int j, int k);
/* Such a producer's last step: rows [k0, k1) of the packed operand [K, N]
 * at data get zeros in the columns of the last panel past N (the GEMM
 * computes them, and stores nothing of them). */
void br_sgemm_zero_padding(float *data, int K, int N, int k0, int k1);
/* A packed for br_sgemm_run_pa: tiles of 12 rows, tile t holding rows
 * [12t, 12t + 12) as K groups of 12 floats (k after k), zeros past M, so a
 * product streams A in one run instead of 12 rows (a constant A read from
 * memory: the Winograd filter transform U). br_sgemm_apack_floats: floats
 * of A [M, K] packed; br_sgemm_apack_at: where entry (i, k) goes. Then
 * br_sgemm_run_pa is br_sgemm_run with A packed (the same bits). */
size_t br_sgemm_apack_floats(int M, int K);
size_t br_sgemm_apack_at(int K, int i, int k);
void br_sgemm_run_pa(br_pool *pool, int M, const float *Ap,
                     const br_sgemm_packed *B, float *C, int ldc);
/* count products of one shape as one set of tasks over the pool (no
 * barrier between them): C + i·c_step = (Ap + i·a_step) · B[i], each as
 * br_sgemm_run_pa (the same bits). The Winograd products, 16 per chunk. */
void br_sgemm_run_pa_batch(br_pool *pool, int count, int M, const float *Ap,
                           size_t a_step, const br_sgemm_packed *B, float *C,
                           size_t c_step, int ldc);

/* Tasks [0, ntasks) side by side over the pool, at most `slots` at once:
 * fn(ctx, task, slot) with slot in 0 .. slots - 1 and no two tasks in
 * flight in the same slot, so each may use scratch slot `slot` of its own
 * (convolutions' col buffers and Winograd chunks). Which task gets which
 * slot varies from run to run. slots ≥ 1. */
typedef void (*br_slot_fn)(void *ctx, int64_t task, int64_t slot);
void br_waves(br_pool *pool, int64_t ntasks, int64_t slots, br_slot_fn fn,
              void *ctx);

/* ---- strided n-d iteration ----------------------------------------------- */

#define BR_ND_MAX_IN 3

/* A dense C-order output of shape dims read from up to BR_ND_MAX_IN inputs
 * through element strides (0 along broadcast dims). After br_nd_collapse
 * adjacent dims that every operand walks contiguously are merged, so the
 * innermost dim is as long as possible. */
typedef struct br_nd {
    int rank;                                 /* ≥ 1 */
    int nin;                                  /* inputs added */
    int64_t numel;                            /* output elements */
    int64_t dims[BRAID_MAX_RANK];             /* output shape */
    int64_t st[BR_ND_MAX_IN][BRAID_MAX_RANK]; /* input element strides */
} br_nd;

/* A run of n output elements starting at flat output index o; input k
 * starts at element off[k] and steps by step[k]. */
typedef void (*br_nd_seg_fn)(void *ctx, int64_t o, int64_t n,
                             const int64_t *off, const int64_t *step);

void br_nd_init(br_nd *it, int rank, const int64_t *dims);
/* An input of shape (rank, dims), dense, broadcast to the output by NumPy's
 * rules (aligned right). */
void br_nd_add_broadcast(br_nd *it, int rank, const int64_t *dims);
/* An input read through the given strides, one per output dim. */
void br_nd_add_strided(br_nd *it, const int64_t *strides);
void br_nd_collapse(br_nd *it);
/* Calls seg for every run covering output indices [begin, end). */
void br_nd_walk(const br_nd *it, int64_t begin, int64_t end, br_nd_seg_fn seg,
                void *ctx);
/* br_nd_walk over the whole output, split over the pool. */
void br_nd_parallel(br_pool *pool, const br_nd *it, br_nd_seg_fn seg,
                    void *ctx);

/* Dense C-order strides (in elements) of a shape. */
void br_dense_strides(int rank, const int64_t *dims, int64_t *strides);

/* ---- dtype conversions --------------------------------------------------- */

/* n elements of dtype t starting at element 0 of src, stepping by step
 * elements, to float / double (exact for every dtype but f64 → float). */
void br_load_f32(braid_dtype t, const void *src, int64_t step, int64_t n,
                 float *dst);
void br_load_f64(braid_dtype t, const void *src, int64_t step, int64_t n,
                 double *dst);
/* n floats / doubles stored densely as dtype t with the rules of bg_store:
 * f16/bf16 via f32 rounding to nearest even, i32 truncating and saturating
 * (NaN → 0), bool as != 0. */
void br_store_f32(braid_dtype t, void *dst, int64_t n, const float *src);
void br_store_f64(braid_dtype t, void *dst, int64_t n, const double *src);

/* ---- families (one file each) -------------------------------------------- */

braid_status br_elementwise_prepare(const braid_graph *g, uint32_t id,
                                    size_t *scratch);
void br_elementwise_run(const br_kernel_args *a);
/* BRAID_OK, or the range error of a checked cast (bg_cast_checked). */
braid_status br_cast_run(const br_kernel_args *a);
braid_status br_reduce_prepare(const braid_graph *g, uint32_t id,
                               size_t *scratch);
void br_reduce_run(const br_kernel_args *a);
braid_status br_softmax_prepare(const braid_graph *g, uint32_t id);
void br_softmax_run(const br_kernel_args *a);
braid_status br_layer_norm_prepare(const braid_graph *g, uint32_t id);
void br_layer_norm_run(const br_kernel_args *a);
/* max_pool, avg_pool (kind WINDOW): cpu_kernels_pool.c */
braid_status br_pool_prepare(const braid_graph *g, uint32_t id);
void br_pool_run(const br_kernel_args *a);
/* The pool of geometry w (w->planes planes of x, dtype t) into out: what
 * br_pool_run does, for a fused POOL program's prologue values too. */
struct bg_window;
void br_pool_window_run(br_pool *pool, const struct bg_window *w, braid_dtype t,
                        bool max, const void *x, void *out);
/* resize (kind WINDOW): cpu_kernels_resize.c */
braid_status br_resize_prepare(const braid_graph *g, uint32_t id,
                               size_t *scratch);
void br_resize_run(const br_kernel_args *a);
braid_status br_matmul_prepare(const braid_graph *g, uint32_t id,
                               size_t *scratch);
void br_matmul_run(const br_kernel_args *a);
/* br_cpu_derive for a matmul (n a MATMUL node, or a FUSED node whose
 * program is one: flags its transposes): the constant f32 B packed for
 * br_sgemm_run when A is not transposed and B is a matrix (or has batch
 * dims of 1); else NULL. */
void *br_matmul_derive(const braid_graph *g, const bg_node *n, uint32_t flags,
                       const void *const *in, br_pool *pool);
braid_status br_shape_prepare(const braid_graph *g, uint32_t id);
void br_shape_run(const br_kernel_args *a);
void br_source_run(const br_kernel_args *a);
braid_status br_index_prepare(const braid_graph *g, uint32_t id);
void br_index_run(const br_kernel_args *a); /* gather, scatter */
/* conv ops (cpu_kernels_conv.c). The _node forms take the conv node
 * itself (a fused CONV program's conv, bp_program_conv_node), id naming
 * the node in messages. */
braid_status br_conv_prepare(const braid_graph *g, uint32_t id,
                             size_t *scratch);
braid_status br_conv_prepare_node(const braid_graph *g, const bg_node *n,
                                  uint32_t id, size_t *scratch);
void br_conv_run(const br_kernel_args *a);
/* A f32 conv's epilogue (a fused CONV program's, docs/fusion.md rule 16),
 * applied to each output element y after its bias, as the conv stores it:
 * res (NULL: none) the element of res (the output's shape) at the same
 * place added (res + y when res_first, else y + res), then relu when set
 * (x < 0 ? 0 : x) — the bits of the unfused add and relu. */
typedef struct br_conv_ep {
    const float *res;
    bool res_first;
    bool relu;
} br_conv_ep;
void br_conv_run_ep(const br_kernel_args *a, const br_conv_ep *ep);
/* The epilogue e on n output values v (their bias added), their residuals
 * at r (NULL when e has none). */
void br_conv_ep_apply(const br_conv_ep *e, float *v, const float *r, int64_t n);
/* br_cpu_derive for a conv node whose weights are constant: their
 * Winograd filter transform when the conv runs as Winograd, their packed
 * filter when it runs direct (br_conv_direct_applies), else nothing. */
void *br_conv_derive(const braid_graph *g, uint32_t id, const void *const *in,
                     br_pool *pool);
void *br_conv_derive_node(const braid_graph *g, const bg_node *n,
                          const void *const *in, br_pool *pool);
/* 3×3 stride-1 f32 convolutions as Winograd F(4×4, 3×3) or F(2×2, 3×3)
 * (cpu_kernels_winograd.c): whether conv c of dtype t runs that way, its
 * output tile (br_winograd_tile: 4 where F(4×4) makes fewer
 * multiplications, from the shape alone, unless BRAID_CPU_WINOGRAD=f2; else
 * 2), the
 * scratch it needs for up to `threads` threads taking whole chunks at once,
 * the filter transform of weights w alone (malloc'd, NULL when memory is
 * short; the caller frees it), and the run (x, w, bias (or NULL), y as the
 * conv node's operands, ep its epilogue or NULL; U: w's filter transform made
 * before, or NULL to make it in the scratch; the scratch of scratch_bytes: as
 * many threads take whole chunks as it has room for, and any size from
 * br_winograd_scratch(c, 1) up works). */
bool br_winograd_applies(const bg_conv_geom *c, braid_dtype t);
int br_winograd_tile(const bg_conv_geom *c);
size_t br_winograd_scratch(const bg_conv_geom *c, int threads);
float *br_winograd_filter(const bg_conv_geom *c, br_pool *pool, const float *w);
void br_winograd_run(const bg_conv_geom *c, br_pool *pool, const float *x,
                     const float *w, const float *U, const float *bias,
                     const br_conv_ep *ep, float *y, void *scratch,
                     size_t scratch_bytes);
/* 2-D f32 convolutions straight from the input, no im2col
 * (cpu_kernels_conv_direct.c): whether conv c of dtype t runs that way
 * (one group, a kernel larger than 1×1, dilation 1, column stride 1 or 2,
 * more than 16 output channels, not Winograd's, braid's GEMM enabled, and
 * BRAID_CPU_CONV=im2col not set), the scratch it needs, its
 * packed filter (malloc'd, NULL when memory is short; the caller frees it)
 * and the run (wp: the packed filter made before, or NULL to pack it in
 * the scratch; ep the epilogue or NULL). */
bool br_conv_direct_applies(const bg_conv_geom *c, braid_dtype t);
size_t br_conv_direct_scratch(const bg_conv_geom *c);
float *br_conv_direct_filter(const bg_conv_geom *c, br_pool *pool,
                             const float *w);
void br_conv_direct_run(const bg_conv_geom *c, br_pool *pool, const float *x,
                        const float *w, const float *wp, const float *bias,
                        const br_conv_ep *ep, float *y, void *scratch);
/* argmax, argmin, topk_*, cumsum (cpu_kernels_axis.c) */
braid_status br_axis_prepare(const braid_graph *g, uint32_t id,
                             size_t *scratch);
void br_axis_run(const br_kernel_args *a);
/* attention (cpu_kernels_attention.c) */
braid_status br_attention_prepare(const braid_graph *g, uint32_t id,
                                  size_t *scratch);
void br_attention_run(const br_kernel_args *a);

#endif /* BRAID_RUNTIME_CPU_KERNELS_H */
