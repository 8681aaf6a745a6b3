/* runtime/cpu/cpu_kernels_matmul.c — batched matmul through OpenBLAS.
 *
 * Each batch is one cblas_sgemm / cblas_dgemm on row-major matrices; the
 * transpose flags become CblasTrans instead of copies. Broadcast batch dims
 * read the same matrix through a zero stride. f16/bf16 matrices are widened
 * to f32 in scratch, multiplied, and rounded back. Large products run one
 * after another on OpenBLAS's own threads; many small ones (which OpenBLAS
 * runs single-threaded anyway) are spread over the pool instead. */
#include "runtime/cpu/cpu_kernels.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

/* Products of at most this many multiply-adds are one OpenBLAS thread's
 * work (its own threshold is 4 × 65536). */
#define MM_SMALL ((int64_t)1 << 18)

typedef struct mm_ctx {
    braid_dtype t;              /* dtype of a, b and the output */
    size_t esz;                 /* its size */
    bool ta, tb;                /* operands stored transposed */
    int64_t M, N, K;            /* product dims */
    int nb;                     /* batch dims of the output */
    int64_t bd[BRAID_MAX_RANK]; /* their sizes */
    int64_t as[BRAID_MAX_RANK]; /* a's element stride per batch dim */
    int64_t bs[BRAID_MAX_RANK]; /* b's element stride per batch dim */
    int64_t nbatch;             /* product of bd */
    const char *a, *b;          /* operands */
    char *c;                    /* output */
    float *scratch;             /* f16/bf16: A, B and C as f32 */
} mm_ctx;

/* Batch strides of an operand of shape (rank, dims) whose matrices hold
 * msize elements, aligned right to the output's batch dims. */
static void batch_strides(const mm_ctx *m, int rank, const int64_t *dims,
                          int64_t msize, int64_t *out) {
    int nb = rank - 2;
    int64_t s = msize;
    for (int i = m->nb - 1; i >= 0; i--) {
        int j = i - (m->nb - nb);
        out[i] = (j < 0 || dims[j] == 1) ? 0 : s;
        if (j >= 0) s *= dims[j];
    }
}

static void mm_analyze(const braid_graph *g, const bg_node *n, mm_ctx *m) {
    const bg_node *a = bg_node_at(g, n->inputs[0]);
    const bg_node *b = bg_node_at(g, n->inputs[1]);
    m->t = n->dtype;
    m->esz = braid_dtype_size(n->dtype);
    m->ta = (n->attr.flags & BRAID_TRANSPOSE_A) != 0;
    m->tb = (n->attr.flags & BRAID_TRANSPOSE_B) != 0;
    m->M = n->dims[n->rank - 2];
    m->N = n->dims[n->rank - 1];
    m->K = m->ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    m->nb = n->rank - 2;
    m->nbatch = 1;
    for (int i = 0; i < m->nb; i++) {
        m->bd[i] = n->dims[i];
        m->nbatch *= n->dims[i];
    }
    batch_strides(m, a->rank, a->dims, m->M * m->K, m->as);
    batch_strides(m, b->rank, b->dims, m->K * m->N, m->bs);
}

static void batch_offsets(const mm_ctx *m, int64_t i, int64_t *ao,
                          int64_t *bo) {
    *ao = *bo = 0;
    for (int d = m->nb - 1; d >= 0; d--) {
        int64_t k = i % m->bd[d];
        i /= m->bd[d];
        *ao += k * m->as[d];
        *bo += k * m->bs[d];
    }
}

/* C = op(A) · op(B), row-major, all three dense. */
static void gemm(const mm_ctx *m, const void *A, const void *B, void *C,
                 bool f64) {
    int M = (int)m->M, N = (int)m->N, K = (int)m->K;
    int lda = m->ta ? M : K, ldb = m->tb ? K : N;
    enum CBLAS_TRANSPOSE ta = m->ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = m->tb ? CblasTrans : CblasNoTrans;
    lda = lda > 0 ? lda : 1;
    ldb = ldb > 0 ? ldb : 1;
    if (f64)
        cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, A, lda, B, ldb, 0.0, C,
                    N > 0 ? N : 1);
    else
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f,
                    C, N > 0 ? N : 1);
}

static void run_batch(const mm_ctx *m, int64_t i) {
    int64_t ao, bo;
    batch_offsets(m, i, &ao, &bo);
    const char *A = m->a + ao * m->esz, *B = m->b + bo * m->esz;
    char *C = m->c + i * m->M * m->N * m->esz;
    if (m->t == BRAID_F32 || m->t == BRAID_F64) {
        gemm(m, A, B, C, m->t == BRAID_F64);
        return;
    }
    float *fa = m->scratch, *fb = fa + m->M * m->K, *fc = fb + m->K * m->N;
    br_load_f32(m->t, A, 1, m->M * m->K, fa);
    br_load_f32(m->t, B, 1, m->K * m->N, fb);
    gemm(m, fa, fb, fc, false);
    br_store_f32(m->t, C, m->M * m->N, fc);
}

static void batch_range(void *ctx, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++)
        run_batch(ctx, i);
}

void br_matmul_run(const br_kernel_args *a) {
    mm_ctx m = {0};
    mm_analyze(a->g, a->node, &m);
    m.a = a->in[0];
    m.b = a->in[1];
    m.c = a->out;
    m.scratch = a->scratch;
    if (m.nbatch == 0 || m.M == 0 || m.N == 0) return;
    if (m.K == 0) { /* an empty sum: zeros (BLAS rejects lda = 0) */
        memset(m.c, 0, (size_t)(m.nbatch * m.M * m.N) * m.esz);
        return;
    }
    int64_t work = m.M * m.N * m.K;
    bool widen = m.t == BRAID_F16 || m.t == BRAID_BF16;
    if (!widen && work <= MM_SMALL && m.nbatch > 1)
        br_parallel_for(a->pool, m.nbatch, MM_SMALL / work, batch_range, &m);
    else
        batch_range(&m, 0, m.nbatch);
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
    mm_analyze(g, n, &m);
    if (m.M > INT_MAX || m.N > INT_MAX || m.K > INT_MAX)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: matmul dims M=%lld "
                                 "N=%lld K=%lld exceed BLAS's int range",
                                 id, (long long)m.M, (long long)m.N,
                                 (long long)m.K);
    if (n->dtype == BRAID_F16 || n->dtype == BRAID_BF16) {
        /* Each fits in BG_MAX_BYTES, so the sum cannot overflow. */
        size_t bytes =
            (size_t)(m.M * m.K + m.K * m.N + m.M * m.N) * sizeof(float);
        if (bytes > *scratch) *scratch = bytes;
    }
    return BRAID_OK;
}
