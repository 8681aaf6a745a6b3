/* runtime/cuda/cuda_lt.c — fused MATMUL nodes whose epilogue cuBLASLt computes
 * inside the matmul: act(A·B + bias) in one cublasLtMatmul with the BIAS
 * or RELU_BIAS epilogue, instead of cuBLAS followed by the generated
 * epilogue kernel (one pass over the product fewer).
 *
 * Taken only when the result is exactly the program's: the program is
 * LOAD a, LOAD b, MATMUL, LOAD bias, ADD(matmul, bias) [, RELU]; one dtype
 * throughout (f32, f16 or bf16; f32 uses TF32 only with allow_tf32, as
 * the cuBLAS path); the bias a row vector [N] or [1, N]; K > 0 (K = 0 is
 * the bias alone); batches either absent, a plain strided batch, or a
 * broadcast b with a contiguous a, which is one product with batch·M rows.
 * GELU stays on the cuBLAS path: cuBLASLt documents its GELU epilogue
 * only as "x := GELU(x)", never as docs/ops.md's erf form (it is reported
 * to be the tanh approximation), so its results are not braid's gelu. So
 * do SiLU, sigmoid and tanh (cuBLASLt has no epilogue for them). ReLU is
 * taken only when it keeps NaN as braid's relu does (docs/ops.md): a
 * ReLU written max(x, 0) turns NaN into 0 and cuBLASLt does not say which
 * it is, so at creation the node's own algorithm runs once with a bias of
 * NaNs and every output element must come back NaN.
 *
 * Layout: braid's row-major C [M, N] read column-major is Cᵀ, an N×M
 * matrix with leading dimension N, and Cᵀ = Bᵀ·Aᵀ where braid's row-major
 * operands read column-major already are Bᵀ and Aᵀ. So cuBLASLt's A is
 * braid's b, its B is braid's a, D has N rows, and braid's bias (one value
 * per column n of C) is one value per row of D — what the BIAS epilogue
 * adds (a vector of D's row count, broadcast over D's columns).
 *
 * cuBLASLt picks its algorithm for the operands' alignment (the bias
 * pointer included), so the heuristic runs at creation on the device
 * addresses a run will use (arenas and uploaded constants never move); a
 * run that finds other addresses takes the cuBLAS path. Each compute
 * stream running such nodes has its own handle and workspace. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#include "passes/layout.h"

#ifdef BRAID_HAVE_CUDA

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const WHERE = "braid_exec_new";

/* One cublasLtMatmul of L with algorithm algo on queue q's handle and
 * workspace, stream s: D = A·B + bias, or with a residual D = A·B + C +
 * bias (C the residual, beta 1; else C is D with beta 0). */
static cublasStatus_t lt_call(const br_cuda *c, uint32_t q, const br_lt *L,
                              const cublasLtMatmulAlgo_t *algo,
                              cudaStream_t s) {
    static const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(c->blas.lt_handle[q], L->desc, &one, L->pb, L->lay_b,
                          L->pa, L->lay_a, L->pr ? &one : &zero,
                          L->pr ? L->pr : L->pd, L->lay_c, L->pd, L->lay_c,
                          algo, c->blas.lt_ws[q], BR_LT_WORKSPACE, s);
}

/* What the pattern match found. */
typedef struct lt_match {
    br_gemm_shape g;        /* the product (a broadcast batch folded) */
    uint32_t bias;          /* bias node id */
    uint32_t resid;         /* residual node id (C, beta 1), or BG_NONE */
    cublasLtEpilogue_t epi; /* BIAS or RELU_BIAS */
} lt_match;

/* ---- deciding ------------------------------------------------------------ */

/* A batch whose b is broadcast, with a not transposed and a and the
 * result contiguous stacks of matrices, is one product of batch·M rows:
 * a [B, M, K] is the row-major matrix [B·M, K], the result [B·M, N]. */
static void fold_batch(br_gemm_shape *g) {
    if (g->nb != 1 || g->sb[0] != 0 || g->ta || g->sa[0] != g->m * g->k ||
        g->sc[0] != g->m * g->n)
        return;
    g->m *= g->bdim[0];
    g->nb = 0;
}

/* The program of GEMM_EPI node id is matmul + bias [+ relu]: NULL, else
 * why not. */
static const char *epilogue_kind(const bp_plan *p, uint32_t id, lt_match *m,
                                 char *buf, size_t size) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    const bp_instr *in = pr->instr;
    if (pr->ninstr < 5 || pr->ninstr > 7 || in[2].op != BRAID_OP_MATMUL ||
        in[3].op != BP_INSTR_LOAD || in[3].input >= n->ninputs ||
        in[4].op != BRAID_OP_ADD ||
        !((in[4].arg[0] == 2 && in[4].arg[1] == 3) ||
          (in[4].arg[0] == 3 && in[4].arg[1] == 2)))
        return "the epilogue is not matmul + bias [+ activation]";
    m->bias = n->inputs[in[3].input];
    m->epi = CUBLASLT_EPILOGUE_BIAS;
    m->resid = BG_NONE;
    if (pr->ninstr == 5) return NULL;
    if (pr->ninstr == 7) { /* + a residual: D = A·B + C + bias, C = r */
        if (in[5].op != BP_INSTR_LOAD || in[5].input >= n->ninputs ||
            in[6].op != BRAID_OP_ADD ||
            !((in[6].arg[0] == 4 && in[6].arg[1] == 5) ||
              (in[6].arg[0] == 5 && in[6].arg[1] == 4)))
            return "the epilogue is not matmul + bias [+ activation] [+ "
                   "residual]";
        m->resid = n->inputs[in[5].input];
        return NULL;
    }
    if (in[5].arg[0] != 4)
        return "the epilogue is not matmul + bias [+ activation]";
    if (in[5].op == BRAID_OP_GELU)
        return "gelu: cuBLASLt's GELU epilogue is not documented as the "
               "erf form braid computes";
    if (in[5].op != BRAID_OP_RELU) {
        snprintf(buf, size, "%s has no cuBLASLt epilogue",
                 bg_op(in[5].op)->name);
        return buf;
    }
    m->epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    return NULL;
}

/* NULL when one cublasLtMatmul computes GEMM_EPI node id exactly (fills
 * m), else why not (buf may hold the text). */
static const char *why_not(const br_cuda *c, uint32_t id, lt_match *m,
                           char *buf, size_t size) {
    const bp_plan *p = c->plan;
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (!br_gemm_shape_of(p, id, &m->g) ||
        p->res.info[id].program >= p->res.nprograms)
        return "not a matmul program";
    if (m->g.strided)
        return "an operand is a strided view (cuBLASLt layouts here are "
               "dense)";
    const char *why = epilogue_kind(p, id, m, buf, size);
    if (why) return why;
    braid_dtype t = m->g.dtype;
    if (t != BRAID_F32 && t != BRAID_F16 && t != BRAID_BF16) {
        snprintf(buf, size, "%s (cuBLASLt epilogues for f32, f16, bf16)",
                 braid_dtype_name(t));
        return buf;
    }
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    for (uint32_t i = 3; i < pr->ninstr; i++)
        if (pr->instr[i].dtype != t) return "the epilogue changes the dtype";
    if (n->dtype != t) return "the epilogue changes the dtype";
    const bg_node *bn = bg_node_at(p->res.graph, m->bias);
    bool row = bn->dtype == t &&
               ((bn->rank == 1 && bn->dims[0] == m->g.n) ||
                (bn->rank == 2 && bn->dims[0] == 1 && bn->dims[1] == m->g.n));
    if (!row) return "the bias is not a row vector [N] or [1, N]";
    if (m->resid != BG_NONE) { /* C: laid out as D */
        const bg_node *rn = bg_node_at(p->res.graph, m->resid);
        if (rn->dtype != t || rn->rank != n->rank ||
            memcmp(rn->dims, n->dims, sizeof n->dims[0] * (size_t)n->rank) ||
            bp_layout_of(p, m->resid))
            return "the residual is not a dense tensor of the result's "
                   "shape";
    }
    if (m->g.m == 0 || m->g.n == 0 || m->g.k == 0)
        return "an empty dimension (K = 0 is the bias alone)";
    fold_batch(&m->g);
    if (m->g.nb > 1) return "batch dims broadcast both ways";
    if (m->g.nb == 1 && (m->g.sa[0] == 0 || m->g.sb[0] == 0))
        return "a broadcast batch operand";
    if (m->g.nb == 1 && m->g.bdim[0] > INT32_MAX)
        return "more than 2^31 batches";
    return NULL;
}

/* ---- creating ------------------------------------------------------------ */

/* The largest power of two up to 256 dividing p's address. */
static uint32_t align_of(const void *p) {
    uintptr_t x = (uintptr_t)p;
    uint32_t a = 256;
    while (a > 1 && x % a)
        a /= 2;
    return a;
}

static bool disjoint(const char *x, uint64_t nx, const char *y, uint64_t ny) {
    return x + nx <= y || y + ny <= x;
}

/* Node addresses for L; NULL when they are fine, else why not. */
static const char *addresses(const br_cuda *c, uint32_t id, const lt_match *m,
                             br_lt *L) {
    const braid_graph *g = c->plan->res.graph;
    L->node = id;
    L->a = m->g.a;
    L->b = m->g.b;
    L->bias = m->bias;
    L->pa = br_cuda_fixed_addr(c, L->a);
    L->pb = br_cuda_fixed_addr(c, L->b);
    L->pbias = br_cuda_fixed_addr(c, L->bias);
    L->pd = br_cuda_fixed_addr(c, id);
    L->resid = m->resid;
    L->pr = m->resid != BG_NONE ? br_cuda_fixed_addr(c, m->resid) : NULL;
    if (!L->pa || !L->pb || !L->pbias || !L->pd ||
        (m->resid != BG_NONE && !L->pr))
        return "an operand's device address is not fixed at creation";
    uint64_t nd = bg_nbytes(bg_node_at(g, id));
    if (L->pr && L->pr != L->pd && !disjoint(L->pd, nd, L->pr, nd))
        return "the output overlaps the residual";
    if (!disjoint(L->pd, nd, L->pa, bg_nbytes(bg_node_at(g, L->a))) ||
        !disjoint(L->pd, nd, L->pb, bg_nbytes(bg_node_at(g, L->b))) ||
        !disjoint(L->pd, nd, L->pbias, bg_nbytes(bg_node_at(g, L->bias))))
        return "the output overlaps an operand";
    return NULL;
}

static void destroy(br_lt *L) {
    if (L->lay_a) cublasLtMatrixLayoutDestroy(L->lay_a);
    if (L->lay_b) cublasLtMatrixLayoutDestroy(L->lay_b);
    if (L->lay_c) cublasLtMatrixLayoutDestroy(L->lay_c);
    if (L->desc) cublasLtMatmulDescDestroy(L->desc);
    memset(L, 0, sizeof *L);
}

/* One column-major layout: rows × cols, leading dimension ld, and the
 * batch (count, stride in elements) when the product has one. */
static cublasStatus_t layout(cublasLtMatrixLayout_t *l, cudaDataType t,
                             int64_t rows, int64_t cols, int64_t ld,
                             const br_gemm_shape *g, int64_t stride) {
    cublasStatus_t st =
        cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld);
    if (st != CUBLAS_STATUS_SUCCESS || g->nb == 0) return st;
    int32_t count = (int32_t)g->bdim[0];
    st = cublasLtMatrixLayoutSetAttribute(
        *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(
            *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof stride);
    return st;
}

/* The matmul descriptor: ops, compute and scale types, epilogue, bias. */
static cublasStatus_t descriptor(const br_cuda *c, const lt_match *m,
                                 br_lt *L) {
    const br_gemm_shape *g = &m->g;
    cudaDataType dt;
    cublasComputeType_t ct;
    br_blas_types(c, g->dtype, &dt, &ct);
    cublasStatus_t st = cublasLtMatmulDescCreate(&L->desc, ct, CUDA_R_32F);
    int32_t opa = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N; /* on braid's b */
    int32_t opb = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N; /* on braid's a */
    uint32_t epi = (uint32_t)m->epi;
    const void *bias = L->pbias; /* its type defaults to D's: braid's */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(
            L->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(
            L->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(
            L->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(
            L->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    return st;
}

/* ---- choosing the algorithm ----------------------------------------------
 * The heuristic's first choice, or with $BRAID_LT_TUNE=1 the fastest of
 * its best LT_TRY candidates timed on the node's own operands at creation.
 * Either is remembered per process for the same product (shape, dtype,
 * epilogue, residual, alignments, device, TF32, timed or not), so GPT-2's
 * 48 such matmuls ask the heuristic four times: asking for each took ~100
 * ms of its executor's creation on an H200. Timing is off by default: on
 * GPT-2 small (H200, 2026-11-28) the first choice was the fastest for each
 * of its four products; small products in the GPU suites gained up to 20%.
 * With it, results depend on timing noise (two algorithms may sum in
 * different orders). */

#define LT_TRY 8
#define LT_REPS 5

typedef struct lt_key {
    int dev;
    braid_dtype dtype;
    int epi;
    bool ta, tb, tf32, resid, timed;
    int nb;
    int64_t m, n, k, lda, ldb, ldc, batch, sa, sb, sc;
    uint32_t align[4];
} lt_key;

typedef struct lt_chosen {
    lt_key key;
    cublasLtMatmulAlgo_t algo;
} lt_chosen;

static pthread_mutex_t chosen_lock = PTHREAD_MUTEX_INITIALIZER;
static lt_chosen *chosen;
static size_t nchosen, chosen_cap;

static bool tuning_on(void) {
    const char *e = getenv("BRAID_LT_TUNE");
    return e && e[0] == '1';
}

static lt_key key_of(const br_cuda *c, uint32_t id, const lt_match *m,
                     const uint32_t al[4]) {
    lt_key k;
    memset(&k, 0, sizeof k); /* padding too: keys are compared by memcmp */
    const br_gemm_shape *g = &m->g;
    k.dev = c->node[id].dev;
    k.dtype = g->dtype;
    k.epi = (int)m->epi;
    k.ta = g->ta;
    k.tb = g->tb;
    k.tf32 = c->allow_tf32;
    k.resid = m->resid != BG_NONE;
    k.timed = tuning_on();
    k.nb = g->nb;
    k.m = g->m;
    k.n = g->n;
    k.k = g->k;
    k.lda = g->lda;
    k.ldb = g->ldb;
    k.ldc = g->ldc;
    if (g->nb) {
        k.batch = g->bdim[0];
        k.sa = g->sa[0];
        k.sb = g->sb[0];
        k.sc = g->sc[0];
    }
    memcpy(k.align, al, sizeof k.align);
    return k;
}

static bool chosen_find(const lt_key *k, cublasLtMatmulAlgo_t *algo) {
    bool hit = false;
    pthread_mutex_lock(&chosen_lock);
    for (size_t i = 0; i < nchosen && !hit; i++)
        if (!memcmp(&chosen[i].key, k, sizeof *k)) {
            *algo = chosen[i].algo;
            hit = true;
        }
    pthread_mutex_unlock(&chosen_lock);
    return hit;
}

static void chosen_add(const lt_key *k, const cublasLtMatmulAlgo_t *algo) {
    pthread_mutex_lock(&chosen_lock);
    if (nchosen == chosen_cap) {
        size_t cap = chosen_cap ? 2 * chosen_cap : 16;
        lt_chosen *t = realloc(chosen, cap * sizeof *t);
        if (t) {
            chosen = t;
            chosen_cap = cap;
        }
    }
    if (nchosen < chosen_cap) chosen[nchosen++] = (lt_chosen){*k, *algo};
    pthread_mutex_unlock(&chosen_lock);
}

/* Milliseconds per call of algo on L's operands (LT_REPS calls after one
 * untimed), on queue q's stream; a negative value when the algorithm
 * failed (it is then not a candidate). */
static float time_algo(br_cuda *c, uint32_t q, br_lt *L,
                       const cublasLtMatmulAlgo_t *algo, cudaEvent_t e0,
                       cudaEvent_t e1) {
    cudaStream_t s = br_cuda_stream(c, q);
    float ms = -1.0f;
    bool ok = true;
    for (int r = 0; ok && r <= LT_REPS; r++) {
        if (r == 1) ok = cudaEventRecord(e0, s) == cudaSuccess;
        ok = ok && lt_call(c, q, L, algo, s) == CUBLAS_STATUS_SUCCESS;
    }
    if (ok && cudaEventRecord(e1, s) == cudaSuccess &&
        cudaEventSynchronize(e1) == cudaSuccess &&
        cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess)
        return ms / LT_REPS;
    (void)cudaGetLastError(); /* a failed candidate leaves no error behind */
    return -1.0f;
}

/* The fastest of the n candidates res[] into L->algo (res[0] when none
 * could be timed); *ms_first and *ms_best for the log. */
static braid_status time_candidates(br_cuda *c, uint32_t id, uint32_t q,
                                    br_lt *L,
                                    const cublasLtMatmulHeuristicResult_t *res,
                                    int n, float *ms_first, float *ms_best) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    braid_status s =
        br_cu(c, WHERE, id, "cudaEventCreateWithFlags (matmul timing)",
              cudaEventCreateWithFlags(&e0, cudaEventDefault));
    if (s == BRAID_OK)
        s = br_cu(c, WHERE, id, "cudaEventCreateWithFlags (matmul timing)",
                  cudaEventCreateWithFlags(&e1, cudaEventDefault));
    L->algo = res[0].algo;
    *ms_first = *ms_best = -1.0f;
    for (int round = 0; s == BRAID_OK && round < 2; round++)
        for (int i = 0; i < n; i++) {
            float t = time_algo(c, q, L, &res[i].algo, e0, e1);
            if (i == 0 && (*ms_first < 0 || (t >= 0 && t < *ms_first)))
                *ms_first = t;
            if (t >= 0 && (*ms_best < 0 || t < *ms_best)) {
                *ms_best = t;
                L->algo = res[i].algo;
            }
        }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s == BRAID_OK) /* what the candidates left in flight */
        s = br_cu(c, WHERE, id, "cudaStreamSynchronize (matmul timing)",
                  cudaStreamSynchronize(br_cuda_stream(c, q)));
    return s;
}

/* Chooses L's algorithm for its addresses and workspace: the heuristic's
 * candidates, timed (above). *found 0: none. */
static cublasStatus_t choose(br_cuda *c, uint32_t id, uint32_t q,
                             const lt_match *m, br_lt *L, int *found,
                             braid_status *err) {
    uint32_t al[4] = {align_of(L->pb), align_of(L->pa),
                      align_of(L->pr ? L->pr : L->pd),
                      align_of(L->pd)}; /* A, B, C, D */
    lt_key k = key_of(c, id, m, al);
    *err = BRAID_OK;
    *found = chosen_find(&k, &L->algo) ? 1 : 0;
    if (*found) return CUBLAS_STATUS_SUCCESS; /* chosen before */
    cublasLtMatmulPreference_t pref = NULL;
    cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = BR_LT_WORKSPACE;
    static const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i],
                                                  sizeof al[i]);
    cublasLtMatmulHeuristicResult_t res[LT_TRY];
    memset(res, 0, sizeof res);
    bool tune = k.timed;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(
            c->blas.lt_handle[q], L->desc, L->lay_b, L->lay_a, L->lay_c,
            L->lay_c, pref, tune ? LT_TRY : 1, res, found);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    int n = 0; /* the usable candidates, in the heuristic's order */
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < *found; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= ws)
            res[n++] = res[i];
    *found = n;
    if (n == 0) return st;
    L->algo = res[0].algo;
    if (n == 1 || !tune) {
        chosen_add(&k, &L->algo);
        return st;
    }
    float first, best;
    *err = time_candidates(c, id, q, L, res, n, &first, &best);
    if (*err != BRAID_OK) return st;
    chosen_add(&k, &L->algo);
    br_cuda_logf(c,
                 "cublaslt: node %u: %d candidates timed, the heuristic's "
                 "first %.4f ms, the fastest %.4f ms",
                 id, n, (double)first, (double)best);
    return st;
}

/* ---- ReLU and NaN -------------------------------------------------------- */

/* Bytes of output read back per copy by the NaN check. */
#define PROBE_CHUNK ((uint64_t)4 << 20)

/* n quiet NaNs of dtype t (f32, f16, bf16) into buf. */
static void fill_nan(braid_dtype t, void *buf, int64_t n) {
    uint32_t f = 0x7FC00000u;
    uint16_t h = t == BRAID_F16 ? 0x7E00u : 0x7FC0u;
    for (int64_t i = 0; i < n; i++) {
        if (t == BRAID_F32)
            memcpy((char *)buf + 4 * i, &f, 4);
        else
            memcpy((char *)buf + 2 * i, &h, 2);
    }
}

/* Element i of buf (dtype t) is a NaN. */
static bool nan_at(braid_dtype t, const void *buf, size_t i) {
    if (t == BRAID_F32) {
        uint32_t v;
        memcpy(&v, (const char *)buf + 4 * i, 4);
        return (v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu);
    }
    uint16_t v;
    memcpy(&v, (const char *)buf + 2 * i, 2);
    return t == BRAID_F16 ? (v & 0x7C00u) == 0x7C00u && (v & 0x03FFu)
                          : (v & 0x7F80u) == 0x7F80u && (v & 0x007Fu);
}

/* Runs the node's matmul once on its stream with its own operands (what
 * they hold at creation does not matter) and a bias of NaNs into its own
 * output (nothing lives there yet), then reads the output back: every
 * element must be NaN. *ok false: some was not, or the call failed. */
static braid_status nan_probe(br_cuda *c, uint32_t id, const lt_match *m,
                              br_lt *L, char *host, void *dnan, bool *ok,
                              cublasStatus_t *st) {
    uint32_t q = c->node[id].queue;
    cudaStream_t s = br_cuda_stream(c, q);
    size_t es = braid_dtype_size(m->g.dtype);
    uint64_t nd = bg_nbytes(bg_node_at(c->plan->res.graph, id));
    fill_nan(m->g.dtype, host, m->g.n);
    braid_status r = br_cu(c, WHERE, id, "cudaMemcpyAsync (NaN check)",
                           cudaMemcpyAsync(dnan, host, (size_t)m->g.n * es,
                                           cudaMemcpyHostToDevice, s));
    *st = CUBLAS_STATUS_SUCCESS;
    if (r == BRAID_OK)
        *st = cublasLtMatmulDescSetAttribute(
            L->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dnan, sizeof dnan);
    if (r == BRAID_OK && *st == CUBLAS_STATUS_SUCCESS) {
        *st = lt_call(c, q, L, &L->algo, s);
        cublasLtMatmulDescSetAttribute(L->desc,
                                       CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &L->pbias, sizeof L->pbias);
    }
    if (r == BRAID_OK)
        r = br_cu(c, WHERE, id, "cudaStreamSynchronize (NaN check)",
                  cudaStreamSynchronize(s));
    *ok = r == BRAID_OK && *st == CUBLAS_STATUS_SUCCESS;
    for (uint64_t off = 0; *ok && off < nd; off += PROBE_CHUNK) {
        size_t len = (size_t)(nd - off < PROBE_CHUNK ? nd - off : PROBE_CHUNK);
        r = br_cu(c, WHERE, id, "cudaMemcpyAsync (NaN check)",
                  cudaMemcpyAsync(host, (const char *)L->pd + off, len,
                                  cudaMemcpyDeviceToHost, s));
        if (r == BRAID_OK)
            r = br_cu(c, WHERE, id, "cudaStreamSynchronize (NaN check)",
                      cudaStreamSynchronize(s));
        for (size_t i = 0; r == BRAID_OK && *ok && i < len / es; i++)
            *ok = nan_at(m->g.dtype, host, i);
        *ok = *ok && r == BRAID_OK;
    }
    return r;
}

/* braid's relu keeps NaN (docs/ops.md); a ReLU written as max(x, 0) turns
 * it into 0, and cuBLASLt does not document which its RELU_BIAS is. So
 * the node's own algorithm is tried once on a NaN bias: *why set (buf)
 * when the result was not all NaN, and the node keeps the cuBLAS path. */
static braid_status relu_check(br_cuda *c, uint32_t id, const lt_match *m,
                               br_lt *L, const char **why, char *buf,
                               size_t size) {
    size_t es = braid_dtype_size(m->g.dtype);
    size_t nb = (size_t)m->g.n * es;
    char *host = malloc(nb > PROBE_CHUNK ? nb : PROBE_CHUNK);
    void *dnan = NULL;
    if (!host)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    braid_status r =
        br_cu(c, WHERE, id, "cudaMalloc (NaN check)", cudaMalloc(&dnan, nb));
    bool ok = false;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (r == BRAID_OK) r = nan_probe(c, id, m, L, host, dnan, &ok, &st);
    if (dnan) cudaFree(dnan);
    free(host);
    if (r == BRAID_OK && !ok) {
        if (st != CUBLAS_STATUS_SUCCESS)
            snprintf(buf, size, "cublasLtMatmul (NaN check): %s",
                     cublasGetStatusString(st));
        else
            snprintf(buf, size,
                     "cuBLASLt's RELU_BIAS turns NaN into a number (braid's "
                     "relu keeps NaN)");
        *why = buf;
    }
    return r;
}

/* ---- creating (continued) ------------------------------------------------ */

/* The handle and workspace of queue q, on first use: from the process
 * pool, else new. */
static braid_status queue_handle(br_cuda *c, uint32_t id, uint32_t q) {
    if (c->blas.lt_handle[q]) return BRAID_OK;
    int dev = c->node[id].dev;
    braid_status s = br_cuda_use(c, WHERE, id, dev);
    br_res r = {.kind = BR_RES_LT, .dev = dev};
    if (s != BRAID_OK || br_res_take(BR_RES_LT, dev, 0, &r)) {
        c->blas.lt_handle[q] = r.obj;
        c->blas.lt_ws[q] = r.ws;
        return s;
    }
    s = br_cu(c, WHERE, id, "cudaMalloc (cuBLASLt workspace)",
              cudaMalloc(&r.ws, BR_LT_WORKSPACE));
    cublasLtHandle_t h = NULL;
    if (s == BRAID_OK)
        s = br_blas(c, WHERE, id, "cublasLtCreate", cublasLtCreate(&h));
    r.obj = h;
    if (s != BRAID_OK) {
        br_res_destroy(&r);
        return s;
    }
    br_res_created(BR_RES_LT);
    c->blas.lt_handle[q] = r.obj;
    c->blas.lt_ws[q] = r.ws;
    return BRAID_OK;
}

/* Creates L for node id. *why set (buf may hold it): cuBLASLt refused,
 * the node keeps the cuBLAS path and L is left empty. */
static braid_status setup(br_cuda *c, uint32_t id, const lt_match *m, br_lt *L,
                          const char **why, char *buf, size_t size) {
    const br_gemm_shape *g = &m->g;
    uint32_t q = c->node[id].queue;
    *why = addresses(c, id, m, L);
    if (*why) return BRAID_OK;
    braid_status s = queue_handle(c, id, q);
    if (s == BRAID_OK) s = br_cuda_use(c, WHERE, id, c->node[id].dev);
    if (s != BRAID_OK) return s;
    cudaDataType dt;
    cublasComputeType_t ct;
    br_blas_types(c, g->dtype, &dt, &ct);
    int64_t sa = g->nb ? g->sa[0] : 0, sb = g->nb ? g->sb[0] : 0,
            sc = g->nb ? g->sc[0] : 0;
    const char *call = "cublasLtMatmulDesc*";
    cublasStatus_t st = descriptor(c, m, L);
    if (st == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatrixLayout*";
        st = layout(&L->lay_b, dt, g->tb ? g->k : g->n, g->tb ? g->n : g->k,
                    g->tb ? g->k : g->n, g, sb);
    }
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(&L->lay_a, dt, g->ta ? g->m : g->k, g->ta ? g->k : g->m,
                    g->ta ? g->m : g->k, g, sa);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(&L->lay_c, dt, g->n, g->m, g->n, g, sc);
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatmulAlgoGetHeuristic";
        st = choose(c, id, q, m, L, &found, &s);
        if (s != BRAID_OK) {
            destroy(L);
            return s;
        }
    }
    if (st != CUBLAS_STATUS_SUCCESS || !found) {
        snprintf(buf, size, "%s: %s", call,
                 st != CUBLAS_STATUS_SUCCESS ? cublasGetStatusString(st)
                                             : "no algorithm");
        *why = buf;
    } else if (m->epi == CUBLASLT_EPILOGUE_RELU_BIAS) {
        s = relu_check(c, id, m, L, why, buf, size);
    }
    if (*why || s != BRAID_OK) destroy(L);
    return s;
}

static const char *node_label(const bp_plan *p, uint32_t id) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    return n->name ? n->name : bg_op(n->op)->name;
}

/* Logs the decision for node id (the cuBLASLt path when why is NULL). */
static void log_choice(br_cuda *c, uint32_t id, const lt_match *m,
                       const char *why) {
    const char *what = m->epi == CUBLASLT_EPILOGUE_RELU_BIAS ? "bias + relu"
                       : m->resid != BG_NONE                 ? "bias + residual"
                                                             : "bias";
    if (why)
        br_cuda_logf(c, "cublaslt: node %u (%s): cuBLAS + epilogue kernel: %s",
                     id, node_label(c->plan, id), why);
    else if (c->dry)
        br_cuda_logf(
            c,
            "cublaslt: node %u (%s): matmul + %s qualifies for "
            "cuBLASLt (on a GPU: if its heuristic finds an algorithm%s)",
            id, node_label(c->plan, id), what,
            m->epi == CUBLASLT_EPILOGUE_RELU_BIAS ? " and its ReLU keeps NaN"
                                                  : "");
    else
        br_cuda_logf(c,
                     "cublaslt: node %u (%s): matmul + %s in one "
                     "cublasLtMatmul (%s, M %lld N %lld K %lld, %lld "
                     "batches)",
                     id, node_label(c->plan, id), what,
                     braid_dtype_name(m->g.dtype), (long long)m->g.m,
                     (long long)m->g.n, (long long)m->g.k,
                     (long long)(m->g.nb ? m->g.bdim[0] : 1));
}

braid_status br_cuda_lt_prepare(br_cuda *c) {
    uint32_t nq = c->plan->res.nqueues ? c->plan->res.nqueues : 1, count = 0;
    for (uint32_t i = 0; i < c->sched->ndev; i++)
        count += c->node[c->sched->dev_list[i]].kind == BR_NODE_GEMM_EPI;
    if (count == 0) return BRAID_OK;
    c->blas.lt = calloc(count, sizeof *c->blas.lt);
    c->blas.lt_handle = calloc(nq, sizeof *c->blas.lt_handle);
    c->blas.lt_ws = calloc(nq, sizeof *c->blas.lt_ws);
    if (!c->blas.lt || !c->blas.lt_handle || !c->blas.lt_ws)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (c->node[id].kind != BR_NODE_GEMM_EPI) continue;
        lt_match m;
        memset(&m, 0, sizeof m);
        char buf[160];
        const char *why = why_not(c, id, &m, buf, sizeof buf);
        if (!why && !c->dry) {
            braid_status s = setup(c, id, &m, &c->blas.lt[c->blas.nlt], &why,
                                   buf, sizeof buf);
            if (s != BRAID_OK) return s;
            if (!why) c->node[id].lt = c->blas.nlt++;
        }
        log_choice(c, id, &m, why);
    }
    return BRAID_OK;
}

void br_cuda_lt_free(br_cuda *c) {
    for (uint32_t i = 0; i < c->blas.nlt; i++)
        destroy(&c->blas.lt[i]);
    for (uint32_t q = 0; c->blas.lt_handle && q < c->plan->res.nqueues; q++)
        if (c->blas.lt_handle[q]) /* stateless: back to the pool */
            br_res_give(&(br_res){.kind = BR_RES_LT,
                                  .dev = c->plan->res.queues[q].device.index,
                                  .obj = c->blas.lt_handle[q],
                                  .ws = c->blas.lt_ws[q]});
    free(c->blas.lt);
    free(c->blas.lt_handle);
    free(c->blas.lt_ws);
    c->blas.lt = NULL;
    c->blas.lt_handle = NULL;
    c->blas.lt_ws = NULL;
    c->blas.nlt = 0;
}

/* ---- running ------------------------------------------------------------- */

braid_status br_cuda_lt_matmul(br_cuda *c, uint32_t id, cudaStream_t s,
                               bool *done) {
    br_lt *L = &c->blas.lt[c->node[id].lt];
    void *const *ptr = c->run.args->ptr;
    *done = false;
    if (ptr[L->a] != L->pa || ptr[L->b] != L->pb || ptr[L->bias] != L->pbias ||
        ptr[id] != L->pd || (L->pr && ptr[L->resid] != L->pr)) {
        if (!L->moved)
            br_cuda_logf(c,
                         "cublaslt: node %u: device addresses differ from "
                         "creation's; such runs use cuBLAS",
                         id);
        L->moved = true;
        return BRAID_OK;
    }
    uint32_t q = c->node[id].queue;
    braid_status r = br_blas(c, "braid_run", id, "cublasLtMatmul",
                             lt_call(c, q, L, &L->algo, s));
    *done = r == BRAID_OK;
    return r;
}

#else
typedef int br_cuda_lt_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
