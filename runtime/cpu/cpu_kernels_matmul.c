/* runtime/cpu/cpu_kernels_matmul.c — batched matmul through br_gemm
 * (OpenBLAS, cpu_gemm.c) or, against constant f32 weights, braid's own
 * GEMM (cpu_sgemm.c).
 *
 * Where braid's GEMM is enabled (br_sgemm_enabled), an f32 product whose A
 * is not transposed and whose B is one matrix for every batch (the weights
 * of a Linear layer) runs br_sgemm_run: against B as packed once when the
 * executor was made (br_matmul_derive) when B is a constant, else against
 * B packed in the scratch, a block of panels at a time, each run — the
 * same bits either way. Every other product: each
 * batch is one GEMM (br_gemm: OpenBLAS, split over the pool) on
 * row-major matrices; the transpose flags become BLAS transposes instead of
 * copies. Broadcast batch dims read the same matrix through a zero stride.
 * An operand that is a strided view (a slice / permute of another tensor's
 * bytes, passes/layout.h) is read in place through its leading dimension,
 * batch strides and, where its rows are its memory's columns, a transpose;
 * a result the memory pass lays out as the permute reading it wants is
 * written through ldc. f16/bf16 matrices are widened to f32 in scratch,
 * multiplied, and rounded back. Small products, or many of them (at least
 * four per thread), are spread over the pool one product per call;
 * otherwise products run one after another, each split over the pool by
 * br_gemm. */
#include "passes/layout.h"
#include "runtime/cpu/cpu_kernels.h"

#include <limits.h>
#include <string.h>

#define MM_SMALL BR_GEMM_SMALL

typedef struct mm_ctx {
    braid_dtype t;              /* dtype of a, b and the output */
    size_t esz;                 /* its size */
    int64_t M, N, K;            /* product dims */
    int nb;                     /* batch dims of the output */
    int64_t bd[BRAID_MAX_RANK]; /* their sizes */
    bp_gemm_operand oa, ob, oc; /* a, b and the output as BLAS sees them:
                                   leading dims, transposes, batch strides */
    int64_t nbatch;             /* product of bd */
    const char *a, *b;          /* operands */
    char *c;                    /* output */
    float *scratch;             /* f16/bf16: A, B and C as f32 */
} mm_ctx;

/* Operand k of n (strides s, NULL: dense) against the output's batch. */
static void mm_operand(const mm_ctx *m, const bg_node *x, const int64_t *s,
                       bool t, bp_gemm_operand *o) {
    int64_t dense[BRAID_MAX_RANK];
    if (!s) {
        bp_layout_dense(x->rank, x->dims, dense);
        s = dense;
    }
    bp_layout_gemm_operand(x->rank, x->dims, s, t, m->nb, m->bd, o);
}

static void mm_analyze(const braid_graph *g, const bg_node *n,
                       const int64_t *const *is, const int64_t *os,
                       mm_ctx *m) {
    const bg_node *a = bg_node_at(g, n->inputs[0]);
    const bg_node *b = bg_node_at(g, n->inputs[1]);
    bool ta = (n->attr.flags & BRAID_TRANSPOSE_A) != 0;
    bool tb = (n->attr.flags & BRAID_TRANSPOSE_B) != 0;
    m->t = n->dtype;
    m->esz = braid_dtype_size(n->dtype);
    m->M = n->dims[n->rank - 2];
    m->N = n->dims[n->rank - 1];
    m->K = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    m->nb = n->rank - 2;
    m->nbatch = 1;
    for (int i = 0; i < m->nb; i++) {
        m->bd[i] = n->dims[i];
        m->nbatch *= n->dims[i];
    }
    mm_operand(m, a, is ? is[0] : NULL, ta, &m->oa);
    mm_operand(m, b, is ? is[1] : NULL, tb, &m->ob);
    mm_operand(m, n, os, false, &m->oc);
}

/* Element offsets of batch i in a, b and the output. */
static void batch_offsets(const mm_ctx *m, int64_t i, int64_t *ao,
                          int64_t *bo, int64_t *co) {
    *ao = *bo = *co = 0;
    for (int d = m->nb - 1; d >= 0; d--) {
        int64_t k = i % m->bd[d];
        i /= m->bd[d];
        *ao += k * m->oa.batch[d];
        *bo += k * m->ob.batch[d];
        *co += k * m->oc.batch[d];
    }
}

/* C = op(A) · op(B), row-major with leading dims lda, ldb, ldc; split over
 * pool (NULL: on this thread alone). */
static void gemm(const mm_ctx *m, br_pool *pool, const void *A, int64_t lda,
                 const void *B, int64_t ldb, void *C, int64_t ldc, bool f64) {
    int M = (int)m->M, N = (int)m->N, K = (int)m->K;
    br_gemm(pool, f64, m->oa.trans, m->ob.trans, M, N, K, A, (int)lda, B,
            (int)ldb, C, (int)ldc);
}

/* The stored rows × cols matrix at src (leading dim ld) widened densely. */
static void widen(const mm_ctx *m, const char *src, int64_t rows,
                  int64_t cols, int64_t ld, float *dst) {
    for (int64_t r = 0; r < rows; r++)
        br_load_f32(m->t, src + (size_t)(r * ld) * m->esz, 1, cols,
                    dst + r * cols);
}

static void run_batch(const mm_ctx *m, br_pool *pool, int64_t i) {
    int64_t ao, bo, co;
    batch_offsets(m, i, &ao, &bo, &co);
    const char *A = m->a + ao * m->esz, *B = m->b + bo * m->esz;
    char *C = m->c + co * m->esz;
    if (m->t == BRAID_F32 || m->t == BRAID_F64) {
        gemm(m, pool, A, m->oa.ld, B, m->ob.ld, C, m->oc.ld,
             m->t == BRAID_F64);
        return;
    }
    float *fa = m->scratch, *fb = fa + m->M * m->K, *fc = fb + m->K * m->N;
    int64_t ar = m->oa.trans ? m->K : m->M, ac = m->oa.trans ? m->M : m->K;
    int64_t br = m->ob.trans ? m->N : m->K, bc = m->ob.trans ? m->K : m->N;
    widen(m, A, ar, ac, m->oa.ld, fa);
    widen(m, B, br, bc, m->ob.ld, fb);
    gemm(m, pool, fa, ac > 0 ? ac : 1, fb, bc > 0 ? bc : 1, fc, m->N, false);
    for (int64_t r = 0; r < m->M; r++)
        br_store_f32(m->t, C + (size_t)(r * m->oc.ld) * m->esz, m->N,
                     fc + r * m->N);
}

/* Whole products [b, e), each on the calling pool thread. */
static void batch_range(void *ctx, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++)
        run_batch(ctx, NULL, i);
}

/* An empty sum (K = 0): zeros in every row of every batch (BLAS rejects
 * lda = 0). */
static void zero_rows(const mm_ctx *m) {
    for (int64_t i = 0; i < m->nbatch; i++) {
        int64_t ao, bo, co;
        batch_offsets(m, i, &ao, &bo, &co);
        for (int64_t r = 0; r < m->M; r++)
            memset(m->c + (size_t)(co + r * m->oc.ld) * m->esz, 0,
                   (size_t)m->N * m->esz);
    }
}

/* Whether braid's GEMM runs the product: f32, A not transposed, B the same
 * matrix for every batch, C row-major (and the dims in int range, which
 * br_matmul_prepare checked). Depends on the shapes and layouts alone,
 * never on whether B is a constant. */
static bool own_gemm(const mm_ctx *m) {
    if (m->t != BRAID_F32 || !br_sgemm_enabled() || m->oa.trans ||
        m->oc.trans || (m->M > 1 && (m->oa.ld < m->K || m->oc.ld < m->N)))
        return false;
    for (int d = 0; d < m->nb; d++)
        if (m->ob.batch[d] != 0 && m->bd[d] != 1) return false;
    return true;
}

/* The product by braid's GEMM: B as packed at executor creation when
 * that matches, else packed here into the scratch a block of panels at a
 * time (br_matmul_prepare sized it; false, nothing done, if it holds not
 * even one panel). */
static bool run_own(const mm_ctx *m, const br_kernel_args *a) {
    const br_sgemm_packed *p = a->derived;
    int K = (int)m->K, N = (int)m->N;
    if (p && p->K == K && p->N == N) {
        for (int64_t i = 0; i < m->nbatch; i++) {
            int64_t ao, bo, co;
            batch_offsets(m, i, &ao, &bo, &co);
            br_sgemm_run(a->pool, (int)m->M, (const float *)m->a + ao,
                         (int)m->oa.ld, p, (float *)m->c + co, (int)m->oc.ld);
        }
        return true;
    }
    size_t per_panel = (size_t)K * BR_SGEMM_NR * sizeof(float);
    size_t fit = a->scratch_bytes / per_panel;
    if (fit == 0) return false;
    int cols = fit * BR_SGEMM_NR < (size_t)N ? (int)fit * BR_SGEMM_NR : N;
    for (int n0 = 0; n0 < N; n0 += cols) {
        int nc = N - n0 < cols ? N - n0 : cols;
        br_sgemm_packed v;
        br_sgemm_pack_into((const float *)m->b, K, (int)m->ob.ld, m->ob.trans,
                           n0, nc, a->scratch, a->pool, &v);
        for (int64_t i = 0; i < m->nbatch; i++) {
            int64_t ao, bo, co;
            batch_offsets(m, i, &ao, &bo, &co);
            br_sgemm_run(a->pool, (int)m->M, (const float *)m->a + ao,
                         (int)m->oa.ld, &v, (float *)m->c + co + n0,
                         (int)m->oc.ld);
        }
    }
    return true;
}

void *br_matmul_derive(const braid_graph *g, const bg_node *n, uint32_t flags,
                       const void *const *in, br_pool *pool) {
    if (!in[1] || n->dtype != BRAID_F32 || !br_sgemm_enabled() ||
        (flags & BRAID_TRANSPOSE_A))
        return NULL;
    const bg_node *b = bg_node_at(g, n->inputs[1]);
    if (b->dtype != BRAID_F32 || b->rank < 2) return NULL;
    for (int d = 0; d + 2 < b->rank; d++)
        if (b->dims[d] != 1) return NULL;
    bool tb = (flags & BRAID_TRANSPOSE_B) != 0;
    int64_t r = b->dims[b->rank - 2], c = b->dims[b->rank - 1];
    int64_t K = tb ? c : r, N = tb ? r : c;
    if (K <= 0 || N <= 0 || K > INT_MAX || N > INT_MAX) return NULL;
    return br_sgemm_pack(in[1], (int)K, (int)N, (int)c, tb, pool);
}

void br_matmul_run(const br_kernel_args *a) {
    mm_ctx m = {0};
    mm_analyze(a->g, a->node, a->in_strides, a->out_strides, &m);
    m.a = a->in[0];
    m.b = a->in[1];
    m.c = a->out;
    m.scratch = a->scratch;
    if (m.nbatch == 0 || m.M == 0 || m.N == 0) return;
    if (m.K == 0) {
        zero_rows(&m);
        return;
    }
    if (own_gemm(&m) && run_own(&m, a)) return;
    int64_t work = m.M * m.N * m.K;
    bool widen = m.t == BRAID_F16 || m.t == BRAID_BF16;
    int64_t threads = br_pool_threads(a->pool);
    if (!widen && m.nbatch > 1 &&
        (work <= MM_SMALL || m.nbatch >= 4 * threads))
        br_parallel_for(a->pool, m.nbatch,
                        work <= MM_SMALL ? MM_SMALL / work : 1, batch_range,
                        &m);
    else
        for (int64_t i = 0; i < m.nbatch; i++)
            run_batch(&m, a->pool, i);
}

braid_status br_matmul_prepare(const braid_graph *g, uint32_t id,
                               size_t *scratch) {
    const bg_node *n = bg_node_at(g, id);
    if (!braid_dtype_is_float(n->dtype))
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: no CPU matmul for "
                                 "%s",
                                 id, braid_dtype_name(n->dtype));
    mm_ctx m = {0};
    mm_analyze(g, n, NULL, NULL, &m);
    if (m.M > INT_MAX || m.N > INT_MAX || m.K > INT_MAX)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: matmul dims M=%lld "
                                 "N=%lld K=%lld exceed BLAS's int range",
                                 id, (long long)m.M, (long long)m.N,
                                 (long long)m.K);
    if (n->dtype == BRAID_F32 && br_sgemm_enabled() && !m.oa.trans) {
        size_t bytes = br_sgemm_pack_scratch(m.K, m.N); /* B per run */
        if (bytes > *scratch) *scratch = bytes;
    }
    if (n->dtype == BRAID_F16 || n->dtype == BRAID_BF16) {
        /* Each fits in BG_MAX_BYTES, so the sum cannot overflow. */
        size_t bytes =
            (size_t)(m.M * m.K + m.K * m.N + m.M * m.N) * sizeof(float);
        if (bytes > *scratch) *scratch = bytes;
    }
    return BRAID_OK;
}
