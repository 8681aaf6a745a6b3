/* runtime/cpu/cpu_kernels_matmul.c — batched matmul through br_gemm
 * (OpenBLAS, cpu_gemm.c).
 *
 * Each batch is one GEMM on row-major matrices; the transpose flags become
 * BLAS transposes instead of copies. Broadcast batch dims read the same
 * matrix through a zero stride. f16/bf16 matrices are widened to f32 in
 * scratch, multiplied, and rounded back. Small products, or many of them
 * (at least four per thread), are spread over the pool one product per
 * call; otherwise products run one after another, each split over the
 * pool by br_gemm. */
#include "runtime/cpu/cpu_kernels.h"

#include <limits.h>
#include <string.h>

#define MM_SMALL BR_GEMM_SMALL

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

/* C = op(A) · op(B), row-major, all three dense; split over pool (NULL:
 * on this thread alone). */
static void gemm(const mm_ctx *m, br_pool *pool, const void *A, const void *B,
                 void *C, bool f64) {
    int M = (int)m->M, N = (int)m->N, K = (int)m->K;
    br_gemm(pool, f64, m->ta, m->tb, M, N, K, A, m->ta ? M : K, B,
            m->tb ? K : N, C, N);
}

static void run_batch(const mm_ctx *m, br_pool *pool, int64_t i) {
    int64_t ao, bo;
    batch_offsets(m, i, &ao, &bo);
    const char *A = m->a + ao * m->esz, *B = m->b + bo * m->esz;
    char *C = m->c + i * m->M * m->N * m->esz;
    if (m->t == BRAID_F32 || m->t == BRAID_F64) {
        gemm(m, pool, A, B, C, m->t == BRAID_F64);
        return;
    }
    float *fa = m->scratch, *fb = fa + m->M * m->K, *fc = fb + m->K * m->N;
    br_load_f32(m->t, A, 1, m->M * m->K, fa);
    br_load_f32(m->t, B, 1, m->K * m->N, fb);
    gemm(m, pool, fa, fb, fc, false);
    br_store_f32(m->t, C, m->M * m->N, fc);
}

/* Whole products [b, e), each on the calling pool thread. */
static void batch_range(void *ctx, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++)
        run_batch(ctx, NULL, i);
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
