/* tests/cuda_mock/cudart_mock.c — a host emulation of the part of the CUDA
 * runtime and cuBLAS braid's CUDA backend uses, so the backend (dispatcher,
 * events, staging, deferral, CUDA graphs, bindings) runs on a machine
 * without a GPU. Development tool only (tests/cuda_mock/run.sh builds the
 * library against it); never part of braid.
 *
 * Model:
 *   - one device (compute capability 9.0); device memory is host memory
 *     mapped PROT_NONE except while a mock operation runs, so the host
 *     touching device memory directly crashes (as it would on a GPU);
 *     pinned memory is plain host memory the mock remembers;
 *   - streams are lazy FIFOs: async calls enqueue, nothing runs until a
 *     synchronising call (stream/event synchronise, a copy from pageable
 *     memory, free) needs it; then ready stream heads run in a random order
 *     (seeded by $MOCK_SEED), honouring only FIFO order and event waits —
 *     so a missing event or synchronisation shows up as wrong values;
 *   - kernels: a launch runs the CPU executor's kernel for the plan node
 *     being launched (br_cpu_run) on the launch's pointers; "_final"
 *     launches do nothing (the first launch computed everything). The plan
 *     and node come from br_cuda_mock_hook, which runtime/cuda_kernels.c
 *     calls before each launch when built with -DBRAID_CUDA_MOCK;
 *   - cuBLAS gemm: a naive column-major gemm (f32, f64, f16, bf16);
 *   - cuBLASLt: descriptors, layouts and preferences keep their attributes
 *     (wrong attribute sizes abort); the heuristic checks that the layouts
 *     describe one consistent product and records the alignments it was
 *     asked for; cublasLtMatmul checks dimensions, leading dimensions,
 *     the bias (device memory, one value per row of D), the workspace and
 *     the pointers' alignment against the algorithm's, then runs the naive
 *     gemm with the BIAS / RELU_BIAS epilogue (its ReLU keeps NaN unless
 *     $MOCK_LT_RELU_DROPS_NAN=1);
 *   - stream capture: every operation issued while capturing is recorded
 *     in issue order; launching the graph enqueues one operation that runs
 *     the record in order. Synchronising or copying pageable memory while
 *     capturing is an error, as on a GPU. */
#define _GNU_SOURCE
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "graph/graph.h"
#include "runtime/runtime.h"

/* ---- memory -------------------------------------------------------------- */

typedef struct region {
    char *base;
    size_t size; /* mapped bytes (page multiple) */
    int kind;    /* 1 device, 2 pinned */
} region;

static region *regions;
static size_t nregions, cap_regions;
static int unprotected; /* nesting of "device memory readable" */

static void add_region(void *p, size_t size, int kind) {
    if (nregions == cap_regions) {
        cap_regions = cap_regions ? 2 * cap_regions : 64;
        regions = realloc(regions, cap_regions * sizeof *regions);
    }
    regions[nregions++] = (region){p, size, kind};
}

static region *find_region(const void *p) {
    for (size_t i = 0; i < nregions; i++)
        if ((const char *)p >= regions[i].base &&
            (const char *)p < regions[i].base + regions[i].size)
            return &regions[i];
    return NULL;
}

static void protect_all(int prot) {
    for (size_t i = 0; i < nregions; i++)
        if (regions[i].kind == 1)
            mprotect(regions[i].base, regions[i].size, prot);
}

static void device_open(void) {
    if (unprotected++ == 0) protect_all(PROT_READ | PROT_WRITE);
}
static void device_close(void) {
    if (--unprotected == 0) protect_all(PROT_NONE);
}

static size_t page_round(size_t n) {
    return (n + 4095) / 4096 * 4096;
}

/* ---- operations and streams ---------------------------------------------- */

typedef enum op_kind {
    OP_COPY,
    OP_SET,
    OP_RECORD,
    OP_WAIT,
    OP_KERNEL,
    OP_GEMM,
    OP_GRAPH
} op_kind;

typedef struct gemm_args {
    cublasOperation_t ta, tb;
    int64_t m, n, k, lda, ldb, ldc, sa, sb, sc, count;
    const void *A, *B;
    void *C;
    cudaDataType type;
    uint32_t epi;     /* cuBLASLt epilogue (0: none) */
    const void *bias; /* BIAS: one value per row of C */
} gemm_args;

struct CUgraph_st;

typedef struct op {
    op_kind kind;
    uint64_t id;              /* global issue number */
    void *dst;                /* COPY/SET */
    const void *src;          /* COPY */
    size_t n;                 /* COPY/SET bytes */
    int value;                /* SET */
    uint64_t wait_for;        /* WAIT: record op id (0: none) */
    struct CUevent_st *event; /* RECORD */
    const bp_plan *plan;      /* KERNEL */
    uint32_t node;            /* KERNEL */
    void **ptrs;              /* KERNEL: out, inputs (owned) */
    uint32_t nptrs;
    gemm_args gemm;           /* GEMM */
    struct CUgraph_st *graph; /* GRAPH */
    struct op *next;
} op;

struct CUstream_st {
    op *head, *tail; /* pending FIFO */
    int live;
};

struct CUevent_st {
    uint64_t last_record; /* op id of the latest record, 0 none */
    int captured;         /* recorded during a capture */
};

struct CUgraph_st {
    op **ops;
    size_t n, cap;
};

struct CUgraphExec_st {
    struct CUgraph_st *g;
};

static uint64_t next_id = 1;
static unsigned char *done; /* done[id]: op id executed */
static size_t done_cap;
static struct CUstream_st *streams[512];
static int nstreams;
static uint64_t rng = 0x1234567;
static struct CUgraph_st *capturing; /* NULL: not capturing */
static cudaError_t sticky = cudaSuccess;

static uint64_t rnd(void) {
    uint64_t z = (rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static void mark_done(uint64_t id) {
    if (id >= done_cap) {
        size_t cap = done_cap ? done_cap : 4096;
        while (cap <= id)
            cap *= 2;
        done = realloc(done, cap);
        memset(done + done_cap, 0, cap - done_cap);
        done_cap = cap;
    }
    done[id] = 1;
}

static int is_done(uint64_t id) {
    return id == 0 || (id < done_cap && done[id]);
}

/* ---- executing one operation --------------------------------------------- */

static void run_kernel(op *o);
static void run_gemm(const gemm_args *g);

static void execute(op *o) {
    device_open();
    switch (o->kind) {
    case OP_COPY:
        memmove(o->dst, o->src, o->n);
        break;
    case OP_SET:
        memset(o->dst, o->value, o->n);
        break;
    case OP_KERNEL:
        run_kernel(o);
        break;
    case OP_GEMM:
        run_gemm(&o->gemm);
        break;
    case OP_GRAPH:
        for (size_t i = 0; i < o->graph->n; i++)
            execute(o->graph->ops[i]);
        break;
    default:
        break;
    }
    device_close();
    mark_done(o->id);
}

static int head_ready(struct CUstream_st *s) {
    return s->head && (s->head->kind != OP_WAIT || is_done(s->head->wait_for));
}

/* Runs one ready stream head chosen at random; 0 when none is ready. */
static int step(void) {
    int ready[512], n = 0;
    for (int i = 0; i < nstreams; i++)
        if (streams[i] && head_ready(streams[i])) ready[n++] = i;
    if (n == 0) return 0;
    struct CUstream_st *s = streams[ready[rnd() % (uint64_t)n]];
    op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    execute(o);
    free(o->ptrs);
    free(o);
    return 1;
}

/* Runs streams until op id is done; a deadlock aborts (a bug). */
static void drive_until(uint64_t id) {
    while (!is_done(id))
        if (!step()) {
            fprintf(stderr, "cuda mock: deadlock waiting for op %llu\n",
                    (unsigned long long)id);
            abort();
        }
}

static void drain_all(void) {
    while (step()) {
    }
    for (int i = 0; i < nstreams; i++)
        if (streams[i] && streams[i]->head) {
            fprintf(stderr, "cuda mock: stream %d blocked forever\n", i);
            abort();
        }
}

static op *new_op(op_kind k) {
    op *o = calloc(1, sizeof *o);
    o->kind = k;
    o->id = next_id++;
    return o;
}

/* Enqueues o on stream s (or records it into the capture). */
static void enqueue(struct CUstream_st *s, op *o) {
    if (capturing) {
        struct CUgraph_st *g = capturing;
        if (o->kind == OP_WAIT || o->kind == OP_RECORD) {
            free(o);
            return; /* the record keeps issue order */
        }
        if (g->n == g->cap) {
            g->cap = g->cap ? 2 * g->cap : 64;
            g->ops = realloc(g->ops, g->cap * sizeof *g->ops);
        }
        g->ops[g->n++] = o;
        return;
    }
    if (!s) {
        fprintf(stderr, "cuda mock: operation on the legacy default stream\n");
        abort();
    }
    o->next = NULL;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
}

/* ---- kernels (via the CPU executor's kernels) ---------------------------- */

static const bp_plan *hook_plan;
static uint32_t hook_node;

void br_cuda_mock_hook(const bp_plan *p, uint32_t node);
void br_cuda_mock_hook(const bp_plan *p, uint32_t node) {
    hook_plan = p;
    hook_node = node;
}

static void run_kernel(op *o) {
    const bp_plan *p = o->plan;
    const bg_node *n = bg_node_at(p->graph, o->node);
    size_t scratch = 0;
    if (br_cpu_prepare(p->graph, o->node, &scratch) != BRAID_OK) {
        fprintf(stderr, "cuda mock: no CPU kernel for node %u: %s\n", o->node,
                braid_last_error());
        abort();
    }
    void *sbuf = scratch ? aligned_alloc(64, (scratch + 63) / 64 * 64) : NULL;
    br_kernel_args a = {.g = p->graph,
                        .id = o->node,
                        .node = n,
                        .program = p->info[o->node].program < p->nprograms
                                       ? &p->programs[p->info[o->node].program]
                                       : NULL,
                        .out = o->ptrs[0],
                        .in = (const void *const *)(o->ptrs + 1),
                        .pool = NULL,
                        .scratch = sbuf,
                        .scratch_bytes = scratch};
    br_cpu_run(&a);
    free(sbuf);
}

/* ---- gemm ---------------------------------------------------------------- */

static double load(cudaDataType t, const void *p, int64_t i) {
    switch (t) {
    case CUDA_R_64F:
        return ((const double *)p)[i];
    case CUDA_R_16F:
        return bg_f16_to_f32(((const uint16_t *)p)[i]);
    case CUDA_R_16BF:
        return bg_bf16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

static void store(cudaDataType t, void *p, int64_t i, double v) {
    switch (t) {
    case CUDA_R_64F:
        ((double *)p)[i] = v;
        break;
    case CUDA_R_16F:
        ((uint16_t *)p)[i] = bg_f32_to_f16((float)v);
        break;
    case CUDA_R_16BF:
        ((uint16_t *)p)[i] = bg_f32_to_bf16((float)v);
        break;
    default:
        ((float *)p)[i] = (float)v;
    }
}

static size_t type_size(cudaDataType t) {
    return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

/* Column-major C(m×n) = op(A)·op(B), checking the leading dimensions.
 * The RELU epilogue keeps NaN, as braid's relu, unless
 * $MOCK_LT_RELU_DROPS_NAN=1 (then it is max(x, 0), which turns NaN into
 * 0: braid must notice and not use it). */
static void run_gemm(const gemm_args *g) {
    const char *env = getenv("MOCK_LT_RELU_DROPS_NAN");
    bool relu_drops_nan = env && env[0] == '1';
    size_t es = type_size(g->type);
    int64_t ar = g->ta == CUBLAS_OP_N ? g->m : g->k; /* rows of stored A */
    int64_t br = g->tb == CUBLAS_OP_N ? g->k : g->n;
    if (g->lda < (ar > 1 ? ar : 1) || g->ldb < (br > 1 ? br : 1) ||
        g->ldc < (g->m > 1 ? g->m : 1)) {
        fprintf(stderr, "cuda mock: gemm with bad leading dimensions\n");
        abort();
    }
    for (int64_t b = 0; b < g->count; b++) {
        const char *A = (const char *)g->A + (size_t)(b * g->sa) * es;
        const char *B = (const char *)g->B + (size_t)(b * g->sb) * es;
        char *C = (char *)g->C + (size_t)(b * g->sc) * es;
        for (int64_t j = 0; j < g->n; j++)
            for (int64_t i = 0; i < g->m; i++) {
                double s = 0;
                for (int64_t l = 0; l < g->k; l++) {
                    double a = g->ta == CUBLAS_OP_N
                                   ? load(g->type, A, i + l * g->lda)
                                   : load(g->type, A, l + i * g->lda);
                    double x = g->tb == CUBLAS_OP_N
                                   ? load(g->type, B, l + j * g->ldb)
                                   : load(g->type, B, j + l * g->ldb);
                    s += a * x;
                }
                if (g->epi & CUBLASLT_EPILOGUE_BIAS)
                    s += load(g->type, g->bias, i);
                if ((g->epi & CUBLASLT_EPILOGUE_RELU) &&
                    (relu_drops_nan ? !(s > 0) : s < 0))
                    s = 0;
                store(g->type, C, i + j * g->ldc, s);
            }
    }
}

/* ---- the CUDA runtime ---------------------------------------------------- */

static cudaError_t fail(cudaError_t e) {
    return e;
}

cudaError_t cudaGetDeviceCount(int *n) {
    const char *seed = getenv("MOCK_SEED");
    if (seed) rng = strtoull(seed, NULL, 10) * 7919 + 1;
    *n = 1;
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorMemoryAllocation:
        return "out of memory (mock)";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing (mock)";
    default:
        return "mock error";
    }
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = sticky;
    sticky = cudaSuccess;
    return e;
}

cudaError_t cudaSetDevice(int d) {
    return d == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d) {
    (void)d;
    *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n) {
    if (n > ((size_t)1 << 40)) return fail(cudaErrorMemoryAllocation);
    size_t sz = page_round(n ? n : 1);
    void *m = mmap(NULL, sz, unprotected ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
    add_region(m, sz, 1);
    *p = m;
    return cudaSuccess;
}

static void remove_region(void *p) {
    for (size_t i = 0; i < nregions; i++)
        if (regions[i].base == p) {
            regions[i] = regions[--nregions];
            return;
        }
}

cudaError_t cudaFree(void *p) {
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    drain_all();
    region *r = find_region(p);
    if (!p) return cudaSuccess;
    if (!r || r->base != p || r->kind != 1) return cudaErrorInvalidValue;
    munmap(r->base, r->size);
    remove_region(p);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
    (void)flags;
    size_t sz = page_round(n ? n : 1);
    void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
    add_region(m, sz, 2);
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    drain_all();
    region *r = find_region(p);
    if (!r || r->base != p || r->kind != 2) return cudaErrorInvalidValue;
    munmap(r->base, r->size);
    remove_region(p);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                     const void *p) {
    memset(a, 0, sizeof *a);
    region *r = find_region(p);
    a->type = !r             ? cudaMemoryTypeUnregistered
              : r->kind == 1 ? cudaMemoryTypeDevice
                             : cudaMemoryTypeHost;
    a->device = 0;
    return cudaSuccess;
}

/* Host memory a copy touches that is neither pinned nor device memory. */
static int pageable(const void *p) {
    return find_region(p) == NULL;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind k) {
    (void)k;
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    drain_all();
    device_open();
    memmove(dst, src, n);
    device_close();
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind k, cudaStream_t s) {
    (void)k;
    int sync = pageable(dst) || pageable(src);
    if (sync && capturing) return cudaErrorStreamCaptureUnsupported;
    op *o = new_op(OP_COPY);
    o->dst = dst;
    o->src = src;
    o->n = n;
    uint64_t id = o->id;
    enqueue(s, o);
    if (sync) drive_until(id); /* pageable: returns when done */
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd,
                                size_t n, cudaStream_t s) {
    (void)dd;
    (void)sd;
    return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
}

cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s) {
    op *o = new_op(OP_SET);
    o->dst = dst;
    o->value = v;
    o->n = n;
    enqueue(s, o);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    (void)flags;
    struct CUstream_st *st = calloc(1, sizeof *st);
    st->live = 1;
    streams[nstreams++] = st;
    *s = st;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    drain_all();
    for (int i = 0; i < nstreams; i++)
        if (streams[i] == s) streams[i] = NULL;
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    while (s->head)
        if (!step()) {
            fprintf(stderr, "cuda mock: deadlock in cudaStreamSynchronize\n");
            abort();
        }
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    (void)flags;
    *e = calloc(1, sizeof **e);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    free(e);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (capturing) {
        e->captured = 1;
        return cudaSuccess;
    }
    op *o = new_op(OP_RECORD);
    o->event = e;
    e->last_record = o->id;
    e->captured = 0;
    enqueue(s, o);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    (void)flags;
    if (capturing) return cudaSuccess;
    if (e->captured) {
        fprintf(stderr, "cuda mock: waiting outside a capture on an event "
                        "recorded inside one\n");
        abort();
    }
    op *o = new_op(OP_WAIT);
    o->wait_for = e->last_record;
    enqueue(s, o);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    drive_until(e->last_record);
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *ok, int a, int b) {
    *ok = a == b;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags) {
    (void)peer;
    (void)flags;
    return cudaSuccess;
}

/* ---- libraries and kernels ----------------------------------------------- */

cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                enum cudaJitOption *o, void **ov, unsigned no,
                                enum cudaLibraryOption *lo, void **lov,
                                unsigned nlo) {
    (void)code, (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
    *lib = (cudaLibrary_t)calloc(1, 16);
    return cudaSuccess;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t lib) {
    free(lib);
    return cudaSuccess;
}

/* Kernel handles: the entry name (leaked, like a loaded module's). */
cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t lib,
                                 const char *name) {
    (void)lib;
    *k = (cudaKernel_t)strdup(name);
    return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                             void **args, size_t shared, cudaStream_t s) {
    (void)shared;
    const char *name = func;
    if (grid.x == 0 || block.x == 0 || block.x * block.y * block.z > 1024)
        return cudaErrorInvalidConfiguration;
    if (strstr(name, "_final")) return cudaSuccess; /* computed already */
    /* nodes with identical code share an entry ("k3" may run node 5): the
       node is the hook's */
    unsigned id = hook_node;
    if (name[0] != 'k' || !hook_plan) {
        fprintf(stderr, "cuda mock: launch of %s without the hook\n", name);
        abort();
    }
    const bp_plan *plan = hook_plan;
    hook_plan = NULL; /* one launch per hook */
    const bg_node *n = bg_node_at(plan->graph, id);
    op *o = new_op(OP_KERNEL);
    o->plan = plan;
    o->node = id;
    o->nptrs = 1 + n->ninputs;
    o->ptrs = calloc(o->nptrs, sizeof *o->ptrs);
    for (uint32_t i = 0; i < o->nptrs; i++)
        o->ptrs[i] = *(void **)args[i];
    enqueue(s, o);
    return cudaSuccess;
}

/* ---- capture and graphs -------------------------------------------------- */

cudaError_t cudaStreamBeginCapture(cudaStream_t s,
                                   enum cudaStreamCaptureMode m) {
    (void)s;
    (void)m;
    if (capturing) return cudaErrorIllegalState;
    capturing = calloc(1, sizeof *capturing);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
    (void)s;
    *g = capturing;
    capturing = NULL;
    return *g ? cudaSuccess : cudaErrorIllegalState;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g,
                                 unsigned long long flags) {
    (void)flags;
    *e = calloc(1, sizeof **e);
    (*e)->g = g;
    return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes,
                              size_t *n) {
    (void)nodes;
    *n = g->n;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
    op *o = new_op(OP_GRAPH);
    o->graph = e->g;
    enqueue(s, o);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    free(e);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    for (size_t i = 0; i < g->n; i++) {
        free(g->ops[i]->ptrs);
        free(g->ops[i]);
    }
    free(g->ops);
    free(g);
    return cudaSuccess;
}

/* ---- cuBLAS -------------------------------------------------------------- */

struct cublasContext {
    cudaStream_t stream;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
    *h = calloc(1, sizeof **h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *w, size_t n) {
    (void)h, (void)w, (void)n;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
    (void)h, (void)m;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "success" : "mock cuBLAS error";
}

static cublasStatus_t
gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
     int64_t n, int64_t k, const void *A, cudaDataType at, int64_t lda,
     int64_t sa, const void *B, cudaDataType bt, int64_t ldb, int64_t sb,
     void *C, cudaDataType ct, int64_t ldc, int64_t sc, int64_t count) {
    if (at != bt || bt != ct) return CUBLAS_STATUS_NOT_SUPPORTED;
    op *o = new_op(OP_GEMM);
    o->gemm = (gemm_args){ta, tb, m,     n, k, lda, ldb, ldc, sa,
                          sb, sc, count, A, B, C,   at,  0,   NULL};
    enqueue(h->stream, o);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t h, cublasOperation_t ta,
                               cublasOperation_t tb, int64_t m, int64_t n,
                               int64_t k, const void *alpha, const void *A,
                               cudaDataType at, int64_t lda, const void *B,
                               cudaDataType bt, int64_t ldb, const void *beta,
                               void *C, cudaDataType ct, int64_t ldc,
                               cublasComputeType_t comp,
                               cublasGemmAlgo_t algo) {
    (void)alpha, (void)beta, (void)comp, (void)algo;
    return gemm(h, ta, tb, m, n, k, A, at, lda, 0, B, bt, ldb, 0, C, ct, ldc, 0,
                1);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
    int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType at,
    int64_t lda, long long sa, const void *B, cudaDataType bt, int64_t ldb,
    long long sb, const void *beta, void *C, cudaDataType ct, int64_t ldc,
    long long sc, int64_t count, cublasComputeType_t comp,
    cublasGemmAlgo_t algo) {
    (void)alpha, (void)beta, (void)comp, (void)algo;
    return gemm(h, ta, tb, m, n, k, A, at, lda, sa, B, bt, ldb, sb, C, ct, ldc,
                sc, count);
}

/* ---- cuBLASLt ------------------------------------------------------------ */

struct cublasLtContext {
    int live;
};

/* What the opaque descriptors hold here. */
typedef struct mock_desc {
    int32_t compute, scale, transa, transb, bias_type;
    uint32_t epi;
    const void *bias;
} mock_desc;
typedef struct mock_layout {
    int32_t type, batch;
    uint64_t rows, cols;
    int64_t ld, stride;
} mock_layout;
typedef struct mock_pref {
    uint64_t workspace;
    uint32_t align[4]; /* A, B, C, D */
} mock_pref;
typedef struct mock_algo {
    uint64_t magic;
    uint32_t align[4];
} mock_algo;
#define MOCK_ALGO_MAGIC 0x6d6f636b616c676full

_Static_assert(sizeof(mock_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "");
_Static_assert(sizeof(mock_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "");
_Static_assert(sizeof(mock_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t),
               "");
_Static_assert(sizeof(mock_algo) <= sizeof(cublasLtMatmulAlgo_t), "");

static void lt_abort(const char *what) {
    fprintf(stderr, "cuda mock: cuBLASLt: %s\n", what);
    abort();
}

static void want_size(size_t got, size_t want, const char *attr) {
    if (got != want) {
        fprintf(stderr,
                "cuda mock: cuBLASLt attribute %s set with %zu bytes, "
                "expected %zu\n",
                attr, got, want);
        abort();
    }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = calloc(1, sizeof **h);
    (*h)->live = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    *d = calloc(1, sizeof **d);
    mock_desc *m = (mock_desc *)*d;
    m->compute = (int32_t)compute;
    m->scale = (int32_t)scale;
    m->bias_type = -1;
    m->epi = CUBLASLT_EPILOGUE_DEFAULT;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a,
                                              const void *buf, size_t n) {
    mock_desc *m = (mock_desc *)d;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        want_size(n, 4, "TRANSA");
        memcpy(&m->transa, buf, 4);
        break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
        want_size(n, 4, "TRANSB");
        memcpy(&m->transb, buf, 4);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        want_size(n, 4, "EPILOGUE");
        memcpy(&m->epi, buf, 4);
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        want_size(n, sizeof(void *), "BIAS_POINTER");
        memcpy(&m->bias, buf, sizeof(void *));
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        want_size(n, 4, "BIAS_DATA_TYPE");
        memcpy(&m->bias_type, buf, 4);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    *l = calloc(1, sizeof **l);
    mock_layout *m = (mock_layout *)*l;
    *m = (mock_layout){(int32_t)type, 1, rows, cols, ld, 0};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                 cublasLtMatrixLayoutAttribute_t a,
                                 const void *buf, size_t n) {
    mock_layout *m = (mock_layout *)l;
    switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
        want_size(n, 4, "BATCH_COUNT");
        memcpy(&m->batch, buf, 4);
        break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        want_size(n, 8, "STRIDED_BATCH_OFFSET");
        memcpy(&m->stride, buf, 8);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = calloc(1, sizeof **p);
    mock_pref *m = (mock_pref *)*p;
    for (int i = 0; i < 4; i++)
        m->align[i] = 256;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t a,
                                     const void *buf, size_t n) {
    mock_pref *m = (mock_pref *)p;
    switch (a) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        want_size(n, 8, "MAX_WORKSPACE_BYTES");
        memcpy(&m->workspace, buf, 8);
        break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        want_size(n, 4, "MIN_ALIGNMENT_*");
        memcpy(&m->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf,
               4);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The product the layouts describe, checked for consistency: D is m×n,
 * op(A) m×k, op(B) k×n; every layout of one type and batch. */
static cublasStatus_t lt_shape(const mock_desc *d, const mock_layout *A,
                               const mock_layout *B, const mock_layout *C,
                               const mock_layout *D, gemm_args *g) {
    if (C != D && memcmp(C, D, sizeof *C) != 0) lt_abort("C and D differ");
    if (A->type != B->type || B->type != D->type) lt_abort("mixed types");
    if (A->batch != D->batch || B->batch != D->batch)
        lt_abort("batch counts differ");
    if (d->epi != CUBLASLT_EPILOGUE_DEFAULT &&
        d->epi != CUBLASLT_EPILOGUE_BIAS &&
        d->epi != CUBLASLT_EPILOGUE_RELU_BIAS)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((d->epi & CUBLASLT_EPILOGUE_BIAS) &&
        (!d->bias || (d->bias_type != -1 && d->bias_type != D->type)))
        lt_abort("bias epilogue without a bias of D's type");
    int64_t m = (int64_t)D->rows, n = (int64_t)D->cols;
    bool ta = d->transa != CUBLAS_OP_N, tb = d->transb != CUBLAS_OP_N;
    int64_t am = (int64_t)(ta ? A->cols : A->rows);
    int64_t k = (int64_t)(ta ? A->rows : A->cols);
    int64_t bk = (int64_t)(tb ? B->cols : B->rows);
    int64_t bn = (int64_t)(tb ? B->rows : B->cols);
    if (am != m || bk != k || bn != n) lt_abort("inconsistent dimensions");
    if (A->ld < (int64_t)A->rows || B->ld < (int64_t)B->rows ||
        D->ld < (int64_t)D->rows)
        lt_abort("leading dimension below the row count");
    *g = (gemm_args){ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                     tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                     m,
                     n,
                     k,
                     A->ld,
                     B->ld,
                     D->ld,
                     A->stride,
                     B->stride,
                     D->stride,
                     D->batch,
                     NULL,
                     NULL,
                     NULL,
                     (cudaDataType)D->type,
                     d->epi,
                     d->bias};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
    cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
    cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t pref, int want,
    cublasLtMatmulHeuristicResult_t res[], int *count) {
    if (!h || want < 1) return CUBLAS_STATUS_INVALID_VALUE;
    gemm_args g;
    *count = 0;
    cublasStatus_t st =
        lt_shape((const mock_desc *)desc, (mock_layout *)A, (mock_layout *)B,
                 (mock_layout *)C, (mock_layout *)D, &g);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    memset(&res[0], 0, sizeof res[0]);
    mock_algo *a = (mock_algo *)&res[0].algo;
    a->magic = MOCK_ALGO_MAGIC;
    memcpy(a->align, ((const mock_pref *)pref)->align, sizeof a->align);
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].workspaceSize = 0;
    res[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

static void check_align(const void *p, uint32_t align, const char *what) {
    if ((uintptr_t)p % align != 0) {
        fprintf(stderr,
                "cuda mock: cublasLtMatmul: %s %p is less aligned "
                "than the %u bytes its algorithm was chosen for\n",
                what, p, align);
        abort();
    }
}

/* p .. p + bytes lies in one device allocation. */
static void check_device(const void *p, size_t bytes, const char *what) {
    region *r = find_region(p);
    if (!r || r->kind != 1 || (const char *)p + bytes > r->base + r->size) {
        fprintf(stderr,
                "cuda mock: cublasLtMatmul: %s is not %zu bytes of "
                "device memory\n",
                what, bytes);
        abort();
    }
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc,
                              void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *ws,
                              size_t wsbytes, cudaStream_t s) {
    (void)alpha, (void)beta;
    if (!h || !h->live) lt_abort("bad handle");
    const mock_algo *al = (const mock_algo *)algo;
    if (!algo || al->magic != MOCK_ALGO_MAGIC)
        lt_abort("an algorithm the heuristic did not return");
    if (C != D) lt_abort("C and D differ (braid computes in place)");
    gemm_args g;
    cublasStatus_t st = lt_shape((const mock_desc *)desc, (mock_layout *)Adesc,
                                 (mock_layout *)Bdesc, (mock_layout *)Cdesc,
                                 (mock_layout *)Ddesc, &g);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    check_align(A, al->align[0], "A");
    check_align(B, al->align[1], "B");
    check_align(C, al->align[2], "C");
    check_align(D, al->align[3], "D");
    size_t es = type_size(g.type);
    if (g.bias) check_device(g.bias, (size_t)g.m * es, "the bias");
    if (wsbytes) check_device(ws, wsbytes, "the workspace");
    g.A = A;
    g.B = B;
    g.C = D;
    op *o = new_op(OP_GEMM);
    o->gemm = g;
    enqueue(s, o);
    return CUBLAS_STATUS_SUCCESS;
}
