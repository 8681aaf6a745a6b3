/* runtime/cuda/cuda_blas.c — matmul nodes (and the product of fused MATMUL
 * programs) through cuBLAS.
 *
 * braid's tensors are row-major; cuBLAS is column-major. A row-major
 * M×N result C = A·B is, read column-major, the N×M matrix Cᵀ = Bᵀ·Aᵀ, and
 * a row-major operand read column-major is already its transpose. So one
 * call gemm(op(B), op(A), N, M, K, B, A → C) computes C with no data
 * movement; BRAID_TRANSPOSE_A/B become the op flags and the leading
 * dimensions.
 *
 * Strided views (passes/layout.h): an operand that is a slice / permute
 * of another tensor's bytes is read in place through its leading
 * dimension, its batch strides and, where its rows are its memory's
 * columns, the opposite op flag; a result laid out as the permute reading
 * it (the memory pass's output side) is written through ldc and its batch
 * strides. cublasGemmStridedBatchedEx takes all of them as they are.
 *
 * Batch dims broadcast: each batch dim of the result gets strides (in
 * elements) for a, b and c, zero where an operand is broadcast; adjacent
 * dims whose strides compose are merged; the innermost group is one
 * strided-batched call and the remaining outer groups (rare: broadcasting
 * both ways) are a loop of calls.
 *
 * Types: f32 (TF32 tensor cores only when the plan allows them), f64, and
 * f16 / bf16 stored as such with f32 accumulation, rounded once on store,
 * as the CPU executor does. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include "passes/layout.h"

#include <stdlib.h>
#include <string.h>

typedef br_gemm_shape gemm_shape;

/* Drops size-1 batch dims and merges neighbours whose strides (in
 * elements) compose. */
static void merge_batch(gemm_shape *g, int rb, const int64_t *odims,
                        const int64_t *sa, const int64_t *sb,
                        const int64_t *sc) {
    g->nb = 0;
    for (int i = 0; i < rb; i++) {
        if (odims[i] == 1) continue;
        int j = g->nb - 1;
        if (j >= 0 && g->sa[j] == sa[i] * odims[i] &&
            g->sb[j] == sb[i] * odims[i] && g->sc[j] == sc[i] * odims[i]) {
            g->bdim[j] *= odims[i];
            g->sa[j] = sa[i];
            g->sb[j] = sb[i];
            g->sc[j] = sc[i];
            continue;
        }
        g->bdim[g->nb] = odims[i];
        g->sa[g->nb] = sa[i];
        g->sb[g->nb] = sb[i];
        g->sc[g->nb] = sc[i];
        g->nb++;
    }
}

/* Operand x (node id x) of the product as cuBLAS reads it: its layout's
 * strides when a strided view, else dense. */
static void operand(const bp_plan *p, uint32_t x, bool t, int rb,
                    const int64_t *odims, bp_gemm_operand *o) {
    const bg_node *xn = bg_node_at(p->res.graph, x);
    int64_t s[BRAID_MAX_RANK];
    bp_layout_strides(p, x, s);
    bp_layout_gemm_operand(xn->rank, xn->dims, s, t, rb, odims, o);
}

bool br_gemm_shape_of(const bp_plan *p, uint32_t id, gemm_shape *g) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    memset(g, 0, sizeof *g);
    int rank = n->rank;
    const int64_t *odims = n->dims;
    unsigned flags = n->attr.flags;
    g->dtype = n->dtype;
    if (n->op == BRAID_OP_MATMUL && n->ninputs == 2) {
        g->a = n->inputs[0];
        g->b = n->inputs[1];
    } else {
        uint32_t pi = p->res.info[id].program;
        if (n->op != BRAID_OP_FUSED || pi >= p->res.nprograms) return false;
        const bp_program *pr = &p->res.programs[pi];
        uint32_t mi = 0; /* the matmul instruction (the first, by plan.h) */
        while (mi < pr->ninstr && pr->instr[mi].op != BRAID_OP_MATMUL)
            mi++;
        if (pr->kind != BP_PROGRAM_MATMUL || mi >= pr->ninstr) return false;
        const bp_instr *mm = &pr->instr[mi];
        if (mm->arg[0] >= pr->ninstr || mm->arg[1] >= pr->ninstr ||
            pr->instr[mm->arg[0]].op != BP_INSTR_LOAD ||
            pr->instr[mm->arg[1]].op != BP_INSTR_LOAD ||
            pr->instr[mm->arg[0]].input >= n->ninputs ||
            pr->instr[mm->arg[1]].input >= n->ninputs)
            return false;
        g->a = n->inputs[pr->instr[mm->arg[0]].input];
        g->b = n->inputs[pr->instr[mm->arg[1]].input];
        g->dtype = mm->dtype;
        rank = pr->rank;
        odims = pr->dims;
        flags = pr->flags;
    }
    const bg_node *a = bg_node_at(p->res.graph, g->a),
                  *b = bg_node_at(p->res.graph, g->b);
    if (rank < 2 || a->rank < 2 || b->rank < 2) return false;
    bool ta = (flags & BRAID_TRANSPOSE_A) != 0;
    bool tb = (flags & BRAID_TRANSPOSE_B) != 0;
    g->m = odims[rank - 2];
    g->n = odims[rank - 1];
    g->k = a->dims[a->rank - (ta ? 2 : 1)];
    int rb = rank - 2;
    bp_gemm_operand oa, ob, oc;
    operand(p, g->a, ta, rb, odims, &oa);
    operand(p, g->b, tb, rb, odims, &ob);
    const int64_t *cs = bp_layout_of(p, id);
    int64_t dense[BRAID_MAX_RANK];
    if (!cs || n->rank != rank) { /* a fused result is never strided */
        bp_layout_dense(rank, odims, dense);
        cs = dense;
    }
    bp_layout_gemm_operand(rank, odims, cs, false, rb, odims, &oc);
    g->ta = oa.trans;
    g->tb = ob.trans;
    g->lda = oa.ld;
    g->ldb = ob.ld;
    g->ldc = oc.ld;
    g->strided = bp_layout_of(p, g->a) || bp_layout_of(p, g->b) ||
                 bp_layout_of(p, id);
    merge_batch(g, rb, odims, oa.batch, ob.batch, oc.batch);
    return true;
}

braid_status br_cuda_gemm_check(const br_cuda *c, uint32_t id) {
    const bp_plan *p = c->plan;
    gemm_shape g;
    if (!br_gemm_shape_of(p, id, &g))
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: node %u (%s) is not a "
                                 "matmul cuBLAS can run",
                                 id,
                                 bg_op(bg_node_at(p->res.graph, id)->op)->name);
    if (!braid_dtype_is_float(g.dtype))
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: matmul of %s on "
                                 "a GPU (float dtypes only)",
                                 id, braid_dtype_name(g.dtype));
    return BRAID_OK;
}

braid_status br_cuda_gemm_result(const br_cuda *c, uint32_t id,
                                 braid_dtype *dtype, uint64_t *bytes) {
    gemm_shape g;
    if (!br_gemm_shape_of(c->plan, id, &g))
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: node %u is not a matmul", id);
    uint64_t n = (uint64_t)g.m * (uint64_t)g.n;
    for (int i = 0; i < g.nb; i++)
        n *= (uint64_t)g.bdim[i];
    *dtype = g.dtype;
    *bytes = n * braid_dtype_size(g.dtype);
    return BRAID_OK;
}

void br_blas_types(const br_cuda *c, braid_dtype t, cudaDataType *data,
                   cublasComputeType_t *compute) {
    switch (t) {
    case BRAID_F64:
        *data = CUDA_R_64F;
        *compute = CUBLAS_COMPUTE_64F;
        return;
    case BRAID_F16:
        *data = CUDA_R_16F;
        *compute = CUBLAS_COMPUTE_32F;
        return;
    case BRAID_BF16:
        *data = CUDA_R_16BF;
        *compute = CUBLAS_COMPUTE_32F;
        return;
    default:
        *data = CUDA_R_32F;
        *compute =
            c->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        return;
    }
}

/* What every cuBLAS call of node id's product shares: its queue's handle,
 * the types, alpha 1 and beta 0 in the scale type, and the op flags (on
 * cuBLAS's A, braid's b, and on its B, braid's a). */
typedef struct blas_call {
    cublasHandle_t h;
    cudaDataType dt;
    cublasComputeType_t ct;
    const void *alpha, *beta;
    cublasOperation_t opa, opb;
} blas_call;

static blas_call call_of(const br_cuda *c, uint32_t id, const gemm_shape *g) {
    static const double one64 = 1.0, zero64 = 0.0;
    static const float one32 = 1.0f, zero32 = 0.0f;
    blas_call k = {.h = c->blas.handle[c->node[id].queue]};
    br_blas_types(c, g->dtype, &k.dt, &k.ct);
    bool f64 = g->dtype == BRAID_F64;
    k.alpha = f64 ? (const void *)&one64 : (const void *)&one32;
    k.beta = f64 ? (const void *)&zero64 : (const void *)&zero32;
    k.opa = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    k.opb = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    return k;
}

/* One strided-batched call over the innermost batch group (count
 * matrices) at the given element offsets. */
static braid_status gemm_call(br_cuda *c, uint32_t id, const gemm_shape *g,
                              const char *a, const char *b, char *out,
                              int64_t count) {
    blas_call k = call_of(c, id, g);
    int last = g->nb - 1;
    int64_t sa = last >= 0 ? g->sa[last] : 0, sb = last >= 0 ? g->sb[last] : 0;
    int64_t sc = last >= 0 ? g->sc[last] : g->m * g->n;
    if (count == 1)
        return br_blas(c, "braid_run", id, "cublasGemmEx",
                       cublasGemmEx_64(k.h, k.opa, k.opb, g->n, g->m, g->k,
                                       k.alpha, b, k.dt, g->ldb, a, k.dt,
                                       g->lda, k.beta, out, k.dt, g->ldc, k.ct,
                                       CUBLAS_GEMM_DEFAULT));
    return br_blas(c, "braid_run", id, "cublasGemmStridedBatchedEx",
                   cublasGemmStridedBatchedEx_64(
                       k.h, k.opa, k.opb, g->n, g->m, g->k, k.alpha, b, k.dt,
                       g->ldb, sb, a, k.dt, g->lda, sa, k.beta, out, k.dt,
                       g->ldc, sc, count, k.ct, CUBLAS_GEMM_DEFAULT));
}

/* The whole batch in one cublasGemmBatchedEx over P's pointer arrays. */
static braid_status ptrs_call(br_cuda *c, uint32_t id, const gemm_shape *g,
                              const br_gemm_ptrs *P) {
    blas_call k = call_of(c, id, g);
    int64_t n = P->count;
    return br_blas(
        c, "braid_run", id, "cublasGemmBatchedEx",
        cublasGemmBatchedEx_64(k.h, k.opa, k.opb, g->n, g->m, g->k, k.alpha,
                               (const void *const *)P->arr, k.dt, g->ldb,
                               (const void *const *)(P->arr + n), k.dt, g->lda,
                               k.beta, P->arr + 2 * n, k.dt, g->ldc, n, k.ct,
                               CUBLAS_GEMM_DEFAULT));
}

/* Zeros every row of every batch of a result at leading dim ldc. */
static braid_status zero_strided(br_cuda *c, uint32_t id, const gemm_shape *g,
                                 void *out) {
    size_t es = braid_dtype_size(g->dtype);
    int64_t total = 1;
    for (int i = 0; i < g->nb; i++) total *= g->bdim[i];
    braid_status s = BRAID_OK;
    for (int64_t t = 0; s == BRAID_OK && t < total; t++) {
        int64_t rest = t, oc = 0;
        for (int i = g->nb - 1; i >= 0; i--) {
            oc += rest % g->bdim[i] * g->sc[i];
            rest /= g->bdim[i];
        }
        s = br_cu(c, "braid_run", id, "cudaMemset2DAsync",
                  cudaMemset2DAsync((char *)out + (size_t)oc * es,
                                    (size_t)g->ldc * es, 0,
                                    (size_t)g->n * es, (size_t)g->m,
                                    br_cuda_stream(c, c->node[id].queue)));
    }
    return s;
}

braid_status br_cuda_gemm(br_cuda *c, uint32_t id, void *out) {
    const bp_plan *p = c->plan;
    gemm_shape g;
    if (!br_gemm_shape_of(p, id, &g))
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_run: node %u is not a matmul", id);
    size_t es = braid_dtype_size(g.dtype);
    int64_t outer = 1, inner = g.nb > 0 ? g.bdim[g.nb - 1] : 1;
    for (int i = 0; i + 1 < g.nb; i++)
        outer *= g.bdim[i];
    if (g.m == 0 || g.n == 0 || inner == 0 || outer == 0) return BRAID_OK;
    if (g.k == 0 && g.strided) /* an empty sum into a strided result */
        return zero_strided(c, id, &g, out);
    if (g.k == 0) { /* an empty sum: zeros */
        uint64_t bytes = (uint64_t)g.m * (uint64_t)g.n * es * (uint64_t)inner *
                         (uint64_t)outer;
        return br_cu(c, "braid_run", id, "cudaMemsetAsync",
                     cudaMemsetAsync(out, 0, bytes,
                                     br_cuda_stream(c, c->node[id].queue)));
    }
    const char *a = c->run.args->ptr[g.a], *b = c->run.args->ptr[g.b];
    if (c->node[id].ptrs != BG_NONE) {
        br_gemm_ptrs *P = &c->blas.ptrs[c->node[id].ptrs];
        if (a == P->pa && b == P->pb && out == P->pc)
            return ptrs_call(c, id, &g, P);
        if (!P->moved)
            br_cuda_logf(c,
                         "matmul: node %u: device addresses differ from "
                         "creation's; such runs loop over strided batches",
                         id);
        P->moved = true;
    }
    braid_status s = BRAID_OK;
    for (int64_t o = 0; s == BRAID_OK && o < outer; o++) {
        int64_t rest = o, oa = 0, ob = 0, oc = 0;
        for (int i = g.nb - 2; i >= 0; i--) { /* decompose the outer index */
            int64_t x = rest % g.bdim[i];
            rest /= g.bdim[i];
            oa += x * g.sa[i];
            ob += x * g.sb[i];
            oc += x * g.sc[i];
        }
        s = gemm_call(c, id, &g, a + (size_t)oa * es, b + (size_t)ob * es,
                      (char *)out + (size_t)oc * es, inner);
    }
    return s;
}

/* ---- pointer arrays ------------------------------------------------------
 * A product whose batch dims do not merge into one stride would take a
 * strided-batched call per outer batch: attention's QKᵀ on q and k read
 * in place from [B·T, 3C] as [B, H, T, D] is B calls of H products, each
 * too small to fill the GPU (8 calls of 12 on GPT-2's training block:
 * 0.18 ms, where one call over all 96 takes 0.12; H200, 2026-11-29). One
 * cublasGemmBatchedEx takes every matrix's address from device arrays,
 * built here once: arenas and uploaded constants never move, so the
 * addresses are those of every run (checked per run; a run that finds
 * others takes the loop). */

static const char *const PREP = "braid_exec_new";

/* Element offsets of matrix t of g's batch (last batch dim fastest). */
static void batch_offsets(const gemm_shape *g, int64_t t, int64_t *oa,
                          int64_t *ob, int64_t *oc) {
    *oa = *ob = *oc = 0;
    for (int i = g->nb - 1; i >= 0; i--) {
        int64_t x = t % g->bdim[i];
        t /= g->bdim[i];
        *oa += x * g->sa[i];
        *ob += x * g->sb[i];
        *oc += x * g->sc[i];
    }
}

/* The buffer node id's product goes to, as every run sees it; NULL when
 * not fixed at creation. */
static const void *fixed_target(const br_cuda *c, uint32_t id) {
    if (c->node[id].kind == BR_NODE_GEMM) return br_cuda_fixed_addr(c, id);
    const br_kernel *k = &c->mod.kern[c->node[id].kernel];
    return k->bk->mm_in_place ? br_cuda_fixed_addr(c, id) : k->extra;
}

/* Whether node id's product is batched over dims that do not merge (g
 * filled), with work to do. */
static bool wants_ptrs(const br_cuda *c, uint32_t id, gemm_shape *g) {
    br_node_kind kind = c->node[id].kind;
    return (kind == BR_NODE_GEMM ||
            (kind == BR_NODE_GEMM_EPI && c->node[id].lt == BG_NONE)) &&
           br_gemm_shape_of(c->plan, id, g) && g->nb >= 2 && g->m > 0 &&
           g->n > 0 && g->k > 0;
}

/* Builds P for node id (shape g): addresses, host arrays, upload. *why
 * set: not fixed at creation, P left empty. */
static braid_status ptrs_setup(br_cuda *c, uint32_t id, const gemm_shape *g,
                               br_gemm_ptrs *P, const char **why) {
    *why = NULL;
    P->pa = br_cuda_fixed_addr(c, g->a);
    P->pb = br_cuda_fixed_addr(c, g->b);
    P->pc = fixed_target(c, id);
    if (!P->pa || !P->pb || !P->pc) {
        *why = "an operand's device address is not fixed at creation";
        return BRAID_OK;
    }
    int64_t n = 1;
    for (int i = 0; i < g->nb; i++)
        n *= g->bdim[i];
    size_t es = braid_dtype_size(g->dtype),
           bytes = 3 * (size_t)n * sizeof(void *);
    void **host = malloc(bytes);
    if (!host)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "%s: out of memory for node %u's batch "
                                 "pointers",
                                 PREP, id);
    for (int64_t t = 0; t < n; t++) {
        int64_t oa, ob, oc;
        batch_offsets(g, t, &oa, &ob, &oc);
        host[t] = (char *)P->pb + (size_t)ob * es; /* cuBLAS's A */
        host[n + t] = (char *)P->pa + (size_t)oa * es;
        host[2 * n + t] = (char *)P->pc + (size_t)oc * es;
    }
    braid_status s = br_cuda_use(c, PREP, id, c->node[id].dev);
    if (s == BRAID_OK)
        s = br_cu(c, PREP, id, "cudaMalloc (batch pointers)",
                  cudaMalloc((void **)&P->arr, bytes));
    if (s == BRAID_OK)
        s = br_cu(c, PREP, id, "cudaMemcpy (batch pointers)",
                  cudaMemcpy(P->arr, host, bytes, cudaMemcpyHostToDevice));
    free(host);
    P->count = n;
    return s;
}

braid_status br_cuda_gemm_ptrs_prepare(br_cuda *c) {
    uint32_t count = 0;
    gemm_shape g;
    for (uint32_t i = 0; i < c->sched->ndev; i++)
        count += wants_ptrs(c, c->sched->dev_list[i], &g);
    if (count == 0) return BRAID_OK;
    c->blas.ptrs = calloc(count, sizeof *c->blas.ptrs);
    if (!c->blas.ptrs)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                 PREP);
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (!wants_ptrs(c, id, &g)) continue;
        br_gemm_ptrs *P = &c->blas.ptrs[c->blas.nptrs];
        const char *why = NULL;
        braid_status s = ptrs_setup(c, id, &g, P, &why);
        if (s != BRAID_OK) {
            c->blas.nptrs++; /* freed with the rest */
            return s;
        }
        if (why) {
            memset(P, 0, sizeof *P);
            br_cuda_logf(c,
                         "matmul: node %u: %d batch dims that do not merge, "
                         "a strided-batched call per outer batch: %s",
                         id, g.nb, why);
            continue;
        }
        c->node[id].ptrs = c->blas.nptrs++;
        br_cuda_logf(c,
                     "matmul: node %u: %d batch dims that do not merge: one "
                     "cublasGemmBatchedEx over %lld pointers (M %lld N %lld "
                     "K %lld)",
                     id, g.nb, (long long)P->count, (long long)g.m,
                     (long long)g.n, (long long)g.k);
    }
    return BRAID_OK;
}

void br_cuda_gemm_ptrs_free(br_cuda *c) {
    for (uint32_t i = 0; i < c->blas.nptrs; i++)
        if (c->blas.ptrs[i].arr) cudaFree(c->blas.ptrs[i].arr);
    free(c->blas.ptrs);
    c->blas.ptrs = NULL;
    c->blas.nptrs = 0;
}

/* ---- handles ------------------------------------------------------------ */

/* A cuBLAS handle with its workspace on device dev (current). */
static braid_status take_handle(br_cuda *c, int dev, br_res *r) {
    if (br_res_take(BR_RES_BLAS, dev, 0, r)) return BRAID_OK;
    *r = (br_res){.kind = BR_RES_BLAS, .dev = dev};
    cublasHandle_t h = NULL;
    braid_status s =
        br_blas(c, "braid_exec_new", BG_NONE, "cublasCreate", cublasCreate(&h));
    if (s != BRAID_OK) return s;
    r->obj = h;
    s = br_cu(c, "braid_exec_new", BG_NONE, "cudaMalloc (cuBLAS workspace)",
              cudaMalloc(&r->ws, BR_BLAS_WORKSPACE));
    if (s == BRAID_OK)
        s = br_blas(c, "braid_exec_new", BG_NONE, "cublasSetWorkspace",
                    cublasSetWorkspace(h, r->ws, BR_BLAS_WORKSPACE));
    if (s != BRAID_OK) {
        br_res_destroy(r);
        return s;
    }
    br_res_created(BR_RES_BLAS);
    return BRAID_OK;
}

braid_status br_cuda_blas_take(br_cuda *c, uint32_t q) {
    br_res r;
    braid_status s = take_handle(c, c->plan->res.queues[q].device.index, &r);
    if (s != BRAID_OK) return s;
    c->blas.handle[q] = r.obj;
    c->blas.ws[q] = r.ws;
    cublasMath_t mode =
        c->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    s = br_blas(c, "braid_exec_new", BG_NONE, "cublasSetStream",
                cublasSetStream(r.obj, br_cuda_stream(c, q)));
    if (s == BRAID_OK)
        s = br_blas(c, "braid_exec_new", BG_NONE, "cublasSetMathMode",
                    cublasSetMathMode(r.obj, mode));
    return s;
}

void br_cuda_blas_give(br_cuda *c) {
    for (uint32_t q = 0; c->blas.handle && q < c->plan->res.nqueues; q++) {
        if (!c->blas.handle[q]) continue;
        br_res r = {.kind = BR_RES_BLAS,
                    .dev = c->plan->res.queues[q].device.index,
                    .obj = c->blas.handle[q],
                    .ws = c->blas.ws[q]};
        cudaSetDevice(r.dev);
        /* the stream may be destroyed while the handle waits in the pool */
        if (cublasSetStream(r.obj, NULL) == CUBLAS_STATUS_SUCCESS)
            br_res_give(&r);
        else
            br_res_destroy(&r);
        c->blas.handle[q] = NULL;
        c->blas.ws[q] = NULL;
    }
}

#else
typedef int br_cuda_blas_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
