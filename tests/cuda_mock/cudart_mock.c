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
 *     and node come from br_cuda_mock_hook, which runtime/cuda/cuda_kernels.c
 *     calls before each launch when built with -DBRAID_CUDA_MOCK;
 *   - cuBLAS gemm: a naive column-major gemm (f32, f64, f16, bf16);
 *   - cuBLASLt: tests/cuda_mock/cublaslt_mock.c checks each call and
 *     runs the naive gemm here with the BIAS / RELU_BIAS epilogue (its
 *     ReLU keeps NaN unless $MOCK_LT_RELU_DROPS_NAN=1);
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
#include <time.h>

#include "graph/graph.h"
#include "passes/layout.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "tests/cuda_mock/mock.h"

/* ---- memory -------------------------------------------------------------- */

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

region *mock_find_region(const void *p) {
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
    void *check;              /* KERNEL: the run check record (gather,
                                 scatter), or NULL */
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
    double when_ms;       /* host clock when the latest record ran */
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

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void execute(op *o) {
    device_open();
    switch (o->kind) {
    case OP_RECORD:
        if (o->event->last_record == o->id) o->event->when_ms = now_ms();
        break;
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
    const bg_node *n = bg_node_at(p->res.graph, o->node);
    size_t scratch = 0;
    if (br_cpu_prepare(p->res.graph, o->node, &scratch) != BRAID_OK) {
        fprintf(stderr, "cuda mock: no CPU kernel for node %u: %s\n", o->node,
                braid_last_error());
        abort();
    }
    if (n->op == BRAID_OP_FUSED &&
        p->res.info[o->node].program < p->res.nprograms)
        br_fused_scratch(p->res.graph, o->node,
                         &p->res.programs[p->res.info[o->node].program],
                         &scratch);
    void *sbuf = scratch ? aligned_alloc(64, (scratch + 63) / 64 * 64) : NULL;
    const int64_t **strides = calloc(n->ninputs + 1, sizeof *strides);
    if (!strides) abort();
    for (uint32_t k = 0; k < n->ninputs; k++)
        strides[k] = bp_layout_of(p, n->inputs[k]); /* strided views */
    br_kernel_args a = {.g = p->res.graph,
                        .id = o->node,
                        .node = n,
                        .program = p->res.info[o->node].program < p->res.nprograms
                                       ? &p->res.programs[p->res.info[o->node].program]
                                       : NULL,
                        .out = o->ptrs[0],
                        .in = (const void *const *)(o->ptrs + 1),
                        .in_strides = strides,
                        .out_strides = bp_layout_of(p, o->node),
                        .pool = NULL,
                        .scratch = sbuf,
                        .scratch_bytes = scratch,
                        .check = o->check};
    br_cpu_run(&a);
    free(sbuf);
    free(strides);
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

size_t mock_type_size(cudaDataType t) {
    return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

/* Column-major C(m×n) = op(A)·op(B), checking the leading dimensions.
 * The RELU epilogue keeps NaN, as braid's relu, unless
 * $MOCK_LT_RELU_DROPS_NAN=1 (then it is max(x, 0), which turns NaN into
 * 0: braid must notice and not use it). */
static void run_gemm(const gemm_args *g) {
    const char *env = getenv("MOCK_LT_RELU_DROPS_NAN");
    bool relu_drops_nan = env && env[0] == '1';
    size_t es = mock_type_size(g->type);
    int64_t ar = g->ta == CUBLAS_OP_N ? g->m : g->k; /* rows of stored A */
    int64_t br = g->tb == CUBLAS_OP_N ? g->k : g->n;
    if (g->lda < (ar > 1 ? ar : 1) || g->ldb < (br > 1 ? br : 1) ||
        g->ldc < (g->m > 1 ? g->m : 1)) {
        fprintf(stderr, "cuda mock: gemm with bad leading dimensions\n");
        abort();
    }
    for (int64_t b = 0; b < g->count; b++) {
        const char *A = g->arr_a
                            ? (const char *)g->arr_a[b]
                            : (const char *)g->A + (size_t)(b * g->sa) * es;
        const char *B = g->arr_b
                            ? (const char *)g->arr_b[b]
                            : (const char *)g->B + (size_t)(b * g->sb) * es;
        char *C = g->arr_c ? (char *)g->arr_c[b]
                           : (char *)g->C + (size_t)(b * g->sc) * es;
        const char *R = g->addend
                            ? (const char *)g->addend + (size_t)(b * g->sc) * es
                            : NULL;
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
                if (R) s += load(g->type, R, i + j * g->ldc);
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

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int d) {
    (void)d;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "braid mock GPU");
    prop->major = 9;
    prop->totalGlobalMem = (size_t)80 << 30;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d) {
    *d = 0;
    return cudaSuccess;
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
    region *r = mock_find_region(p);
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
    region *r = mock_find_region(p);
    if (!r || r->base != p || r->kind != 2) return cudaErrorInvalidValue;
    munmap(r->base, r->size);
    remove_region(p);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                     const void *p) {
    memset(a, 0, sizeof *a);
    region *r = mock_find_region(p);
    a->type = !r             ? cudaMemoryTypeUnregistered
              : r->kind == 1 ? cudaMemoryTypeDevice
                             : cudaMemoryTypeHost;
    a->device = 0;
    return cudaSuccess;
}

/* Host memory a copy touches that is neither pinned nor device memory. */
static int pageable(const void *p) {
    return mock_find_region(p) == NULL;
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

/* One memset per row, in stream order like the real call. */
cudaError_t cudaMemset2DAsync(void *dst, size_t pitch, int v, size_t width,
                              size_t height, cudaStream_t s) {
    for (size_t r = 0; r < height; r++)
        cudaMemsetAsync((char *)dst + r * pitch, v, width, s);
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
    if (!s) { /* the legacy default stream: synchronous with every stream */
        drain_all();
        return cudaSuccess;
    }
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

/* Host time between the two records' execution (the mock runs one op at a
 * time, so streams never overlap). */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!a->last_record || !b->last_record || a->captured || b->captured)
        return cudaErrorInvalidResourceHandle;
    if (!is_done(a->last_record) || !is_done(b->last_record))
        return cudaErrorNotReady;
    *ms = (float)(b->when_ms - a->when_ms);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    /* as on an H100 (CUDA 13): an event last recorded inside a stream
       capture is a graph node, not an ordinary event */
    if (e->captured) return cudaErrorInvalidValue;
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

/* A loaded library: the kernel handles handed out from it (each the entry
 * name), freed when it is unloaded. braid keeps modules loaded for the
 * next executor (runtime/cuda/cuda_pool.c), so the names stay reachable
 * through the library for as long as it is. */
typedef struct mock_lib {
    char **names; /* strdup'd entry names */
    size_t n, cap;
} mock_lib;

cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                enum cudaJitOption *o, void **ov, unsigned no,
                                enum cudaLibraryOption *lo, void **lov,
                                unsigned nlo) {
    (void)code, (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
    *lib = (cudaLibrary_t)calloc(1, sizeof(mock_lib));
    return *lib ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t lib) {
    mock_lib *m = (mock_lib *)lib;
    for (size_t i = 0; m && i < m->n; i++) free(m->names[i]);
    if (m) free(m->names);
    free(m);
    return cudaSuccess;
}

/* Kernel handles: the entry name, owned by the library. */
cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t lib,
                                 const char *name) {
    mock_lib *m = (mock_lib *)lib;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        char **f = realloc(m->names, cap * sizeof *f);
        if (!f) return cudaErrorMemoryAllocation;
        m->names = f;
        m->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return cudaErrorMemoryAllocation;
    m->names[m->n++] = copy;
    *k = (cudaKernel_t)copy;
    return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                             void **args, size_t shared, cudaStream_t s) {
    (void)shared;
    const char *name = func;
    if (grid.x == 0 || block.x == 0 || block.x * block.y * block.z > 1024)
        return cudaErrorInvalidConfiguration;
    if (strstr(name, "_final") || strstr(name, "_apply"))
        return cudaSuccess; /* computed already */
    /* nodes with identical code share an entry ("k3" may run node 5): the
       node is the hook's */
    unsigned id = hook_node;
    if (name[0] != 'k' || !hook_plan) {
        fprintf(stderr, "cuda mock: launch of %s without the hook\n", name);
        abort();
    }
    const bp_plan *plan = hook_plan;
    hook_plan = NULL; /* one launch per hook */
    const bg_node *n = bg_node_at(plan->res.graph, id);
    op *o = new_op(OP_KERNEL);
    o->plan = plan;
    o->node = id;
    o->nptrs = 1 + n->ninputs;
    o->ptrs = calloc(o->nptrs, sizeof *o->ptrs);
    for (uint32_t i = 0; i < o->nptrs; i++)
        o->ptrs[i] = *(void **)args[i];
    if (bp_node_run_check(plan, id)) /* the last parameter */
        o->check = *(void **)args[1 + n->ninputs];
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

/* Enqueues gemm g on h's stream (operand types must agree). */
static cublasStatus_t gemm(cublasHandle_t h, gemm_args g) {
    if (g.type == (cudaDataType)-1) return CUBLAS_STATUS_NOT_SUPPORTED;
    op *o = new_op(OP_GEMM);
    o->gemm = g;
    enqueue(h->stream, o);
    return CUBLAS_STATUS_SUCCESS;
}

/* The one type of three operands, or -1 when they differ. */
static cudaDataType one_type(cudaDataType a, cudaDataType b, cudaDataType c) {
    return a == b && b == c ? a : (cudaDataType)-1;
}

cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
    int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType at,
    int64_t lda, long long sa, const void *B, cudaDataType bt, int64_t ldb,
    long long sb, const void *beta, void *C, cudaDataType ct, int64_t ldc,
    long long sc, int64_t count, cublasComputeType_t comp,
    cublasGemmAlgo_t algo) {
    (void)alpha, (void)beta, (void)comp, (void)algo;
    return gemm(h, (gemm_args){.ta = ta,
                               .tb = tb,
                               .m = m,
                               .n = n,
                               .k = k,
                               .lda = lda,
                               .ldb = ldb,
                               .ldc = ldc,
                               .sa = sa,
                               .sb = sb,
                               .sc = sc,
                               .count = count,
                               .A = A,
                               .B = B,
                               .C = C,
                               .type = one_type(at, bt, ct)});
}

/* One product: a batch of one. */
cublasStatus_t cublasGemmEx_64(cublasHandle_t h, cublasOperation_t ta,
                               cublasOperation_t tb, int64_t m, int64_t n,
                               int64_t k, const void *alpha, const void *A,
                               cudaDataType at, int64_t lda, const void *B,
                               cudaDataType bt, int64_t ldb, const void *beta,
                               void *C, cudaDataType ct, int64_t ldc,
                               cublasComputeType_t comp,
                               cublasGemmAlgo_t algo) {
    return cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, alpha, A, at, lda,
                                         0, B, bt, ldb, 0, beta, C, ct, ldc, 0,
                                         1, comp, algo);
}

cublasStatus_t cublasGemmBatchedEx_64(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
    int64_t n, int64_t k, const void *alpha, const void *const A[],
    cudaDataType at, int64_t lda, const void *const B[], cudaDataType bt,
    int64_t ldb, const void *beta, void *const C[], cudaDataType ct,
    int64_t ldc, int64_t count, cublasComputeType_t comp,
    cublasGemmAlgo_t algo) {
    (void)alpha, (void)beta, (void)comp, (void)algo;
    const region *ra = mock_find_region(A), *rb = mock_find_region(B),
                 *rc = mock_find_region(C);
    if (!ra || ra->kind != 1 || !rb || rb->kind != 1 || !rc || rc->kind != 1) {
        fprintf(stderr, "cuda mock: gemm pointer arrays not in device "
                        "memory\n");
        abort();
    }
    return gemm(h, (gemm_args){.ta = ta,
                               .tb = tb,
                               .m = m,
                               .n = n,
                               .k = k,
                               .lda = lda,
                               .ldb = ldb,
                               .ldc = ldc,
                               .count = count,
                               .type = one_type(at, bt, ct),
                               .arr_a = A,
                               .arr_b = B,
                               .arr_c = C});
}

void mock_enqueue_gemm(cudaStream_t s, const gemm_args *g) {
    op *o = new_op(OP_GEMM);
    o->gemm = *g;
    enqueue(s, o);
}
