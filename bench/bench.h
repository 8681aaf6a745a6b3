/* bench/bench.h — helpers shared by the benchmark programs in bench/
 * (static functions only; each program includes this once).
 *
 * Every program prints machine-readable lines that bench/table.py reads:
 *   RESULT <workload> key=value ...   one figure set per workload
 *   ARENA <graph> arena_bytes=B lower_bound_bytes=L ratio=R
 *   SKIP <workload>: <why>            nothing measured (exit status 0)
 * and human-readable lines around them. Errors print "ERROR <program>:
 * <what>" on stderr and exit with status 1: a benchmark that cannot do
 * its job says so and stops (the script running it goes on).
 *
 * Timing rules (ANCHORS.md): medians over repetitions after warm-up runs;
 * a first call is never counted as steady state. GPU baselines are timed
 * with CUDA events; braid runs with the host clock around braid_run
 * (which returns once the GPU is done). */
#ifndef BRAID_BENCH_BENCH_H
#define BRAID_BENCH_BENCH_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"
#include "graph/graph.h"

#ifdef BRAID_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "codegen/codegen.h"
#include "passes/plan.h"
#endif

static const char *bn_prog = "bench"; /* program name in messages */

static inline double bn_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bn_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double bn_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bn_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline __attribute__((format(printf, 1, 2))) void bn_die(const char *fmt,
                                                         ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ERROR %s: ", bn_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stdout);
    exit(1);
}

/* A braid call that must succeed. */
#define BN_OK(call)                                                            \
    do {                                                                       \
        braid_status s_ = (call);                                              \
        if (s_ != BRAID_OK)                                                    \
            bn_die("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call,             \
                   braid_status_name(s_), braid_last_error());                 \
    } while (0)

static inline void *bn_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) bn_die("out of memory allocating %zu bytes", bytes);
    return p;
}

/* Uniform values in [lo, hi) from seed (splitmix64). */
static inline void bn_fill(float *x, size_t n, uint64_t s, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((double)(z >> 11) * 0x1p-53);
    }
}

/* Graph status must be OK. */
static inline void bn_graph_ok(const braid_graph *g, const char *what) {
    if (!g) bn_die("%s: out of memory", what);
    if (braid_graph_status(g) != BRAID_OK)
        bn_die("%s: %s", what, braid_graph_error(g));
}

/* Hints every node with id ≥ first that is not a graph input or a
 * constant to device (a constant used on a GPU is uploaded once). */
static inline void bn_hint_from(braid_graph *g, uint32_t first,
                                const char *device) {
    for (uint32_t id = first; id < braid_graph_node_count(g); id++) {
        braid_op op = bg_node_at(g, id)->op;
        if (op != BRAID_OP_INPUT && op != BRAID_OP_CONSTANT)
            BN_OK(braid_set_device(g, (braid_tensor){id}, device));
    }
}

static inline braid_compile_options bn_options(const char *devices) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.num_threads = 0;
    return o;
}

static inline braid_plan *bn_compile(const braid_graph *g,
                              const braid_compile_options *o) {
    braid_plan *p = NULL;
    BN_OK(braid_compile(g, o, &p));
    return p;
}

/* "ARENA name ..." for plan p: the memory planner's arenas against their
 * lower bound (ANCHORS.md: ≤ 1.05 on every benchmark graph). */
static inline void bn_arena(const char *name, const braid_plan *p) {
    braid_plan_summary s;
    BN_OK(braid_plan_summary_get(p, &s));
    double ratio = s.lower_bound_bytes
                       ? (double)s.arena_bytes / (double)s.lower_bound_bytes
                       : 1.0;
    printf("ARENA %s arena_bytes=%llu lower_bound_bytes=%llu arenas=%u "
           "ratio=%.4f\n",
           name, (unsigned long long)s.arena_bytes,
           (unsigned long long)s.lower_bound_bytes, (unsigned)s.arenas, ratio);
}

/* Median seconds of braid_run over reps runs after warm warm-up runs;
 * *first (may be NULL) receives the very first run's time. */
static inline double bn_time_runs(braid_exec *e, const braid_input_binding *in,
                           size_t nin, const braid_output_binding *out,
                           size_t nout, int warm, int reps, double *first) {
    double *t = bn_malloc((size_t)reps * sizeof *t);
    for (int r = 0; r < warm + reps; r++) {
        double t0 = bn_now();
        BN_OK(braid_run(e, in, nin, out, nout));
        double dt = bn_now() - t0;
        if (r == 0 && first) *first = dt;
        if (r >= warm) t[r - warm] = dt;
    }
    double m = bn_median(t, reps);
    free(t);
    return m;
}

/* Exits with "SKIP workload: why" (status 0) when no GPU can be used. */
static inline void bn_require_gpu(const char *workload) {
    if (braid_cuda_device_count() > 0) return;
    printf("SKIP %s: %s\n", workload, braid_cuda_status());
    exit(0);
}

#ifdef BRAID_HAVE_CUDA

/* A CUDA runtime call that must succeed. */
#define BN_CUDA(call)                                                          \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess)                                                 \
            bn_die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call,            \
                   cudaGetErrorString(e_), cudaGetErrorName(e_));              \
    } while (0)

/* A cuBLAS call that must succeed (the baselines call cuBLAS directly). */
#define BN_BLAS(call)                                                          \
    do {                                                                       \
        cublasStatus_t s_ = (call);                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                       \
            bn_die("%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #call,  \
                   (int)s_);                                                   \
    } while (0)

static inline void *bn_dev_alloc(size_t bytes) {
    void *d = NULL;
    cudaError_t e = cudaMalloc(&d, bytes ? bytes : 256);
    if (e != cudaSuccess)
        bn_die("cudaMalloc(%zu): %s", bytes, cudaGetErrorString(e));
    return d;
}

static inline void *bn_pinned_alloc(size_t bytes) {
    void *h = NULL;
    cudaError_t e = cudaHostAlloc(&h, bytes ? bytes : 256, cudaHostAllocDefault);
    if (e != cudaSuccess)
        bn_die("cudaHostAlloc(%zu): %s", bytes, cudaGetErrorString(e));
    return h;
}

/* The device's name and "sm_XY" number (90 for 9.0). */
static inline int bn_device_sm(char *name, size_t size) {
    struct cudaDeviceProp prop;
    BN_CUDA(cudaGetDeviceProperties(&prop, 0));
    if (name) snprintf(name, size, "%s", prop.name);
    return prop.major * 10 + prop.minor;
}

/* Event timer: median milliseconds of fn(arg) over reps calls on stream
 * st after warm calls, each call between its own pair of events. */
static inline double bn_event_ms(void (*fn)(void *, cudaStream_t), void *arg,
                          cudaStream_t st, int warm, int reps) {
    cudaEvent_t e0, e1;
    BN_CUDA(cudaEventCreate(&e0));
    BN_CUDA(cudaEventCreate(&e1));
    for (int w = 0; w < warm; w++)
        fn(arg, st);
    BN_CUDA(cudaStreamSynchronize(st));
    double *t = bn_malloc((size_t)reps * sizeof *t);
    for (int r = 0; r < reps; r++) {
        BN_CUDA(cudaEventRecord(e0, st));
        fn(arg, st);
        BN_CUDA(cudaEventRecord(e1, st));
        BN_CUDA(cudaEventSynchronize(e1));
        float ms = 0;
        BN_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        t[r] = ms;
    }
    double m = bn_median(t, reps);
    free(t);
    BN_CUDA(cudaEventDestroy(e0));
    BN_CUDA(cudaEventDestroy(e1));
    return m;
}

typedef struct bn_copy_args {
    void *dst;
    const void *src;
    size_t bytes;
    enum cudaMemcpyKind kind;
} bn_copy_args;

static inline void bn_copy_fn(void *arg, cudaStream_t st) {
    bn_copy_args *a = arg;
    BN_CUDA(cudaMemcpyAsync(a->dst, a->src, a->bytes, a->kind, st));
}

/* Device-to-device copy of `bytes`: median ms (events, 10 copies after 2). */
static inline double bn_d2d_ms(size_t bytes) {
    void *a = bn_dev_alloc(bytes), *b = bn_dev_alloc(bytes);
    BN_CUDA(cudaMemset(a, 1, bytes));
    bn_copy_args c = {b, a, bytes, cudaMemcpyDeviceToDevice};
    double ms = bn_event_ms(bn_copy_fn, &c, 0, 2, 10);
    BN_CUDA(cudaFree(a));
    BN_CUDA(cudaFree(b));
    return ms;
}

/* ---- braid's generated kernels, launched directly ----------------------
 *
 * Some workloads (the fused chain, softmax) start from data already on the
 * GPU, which braid's public API cannot express: its inputs are host
 * memory, so every braid_run includes host-to-device copies. For those,
 * bn_kernels_* runs the plan's GPU part without the copies: the module
 * braid generates for the plan (bc_plan_source, compiled by bc_compile
 * exactly as braid_compile does, for this GPU), every kernel node in the
 * plan's schedule order with braid's launch geometry (bc_kernel), on one
 * device buffer per tensor; graph inputs are uploaded once, copy nodes
 * alias their source (the copy is what is left out), views alias their
 * base. The time is the GPU time of all kernels of one pass, events
 * around the pass on one stream: what the executor's GPU nodes take,
 * without its launch overhead (a CUDA-graph replay of the executor adds
 * about 1-2 µs per node) and without the copies. */

typedef struct bn_kernels {
    bp_plan *plan;         /* the plan (not owned) */
    bc_source src;         /* its generated module */
    cudaLibrary_t lib;     /* the module loaded */
    void **ptr;            /* per node: its device data (or NULL) */
    void **owned;          /* per node: buffer to free */
    uint32_t *order;       /* kernel nodes in schedule order */
    uint32_t nkernels;     /* entries in order */
    cudaKernel_t *fn;      /* per kernel, per launch: the entry */
    void **scratch;        /* per kernel: its scratch buffer or NULL */
    void *check;           /* the run check record kernels of gather /
                              scatter take (zeroed), or NULL */
} bn_kernels;

static inline const void *bn_find_input(const char *name, int n, const char **names,
                                 const void **data) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return data[i];
    return NULL;
}

/* How bn_kernels_init will treat node id of p: 'i' input, 'c' constant,
 * 'a' alias (copy or view), 'k' kernel, or 0 when it cannot run it. Needs
 * no GPU, so programs check their plan before asking for one. */
static inline char bn_kernels_role(const bp_plan *p, uint32_t id) {
    const bg_node *n = bg_node_at(bp_plan_result(p)->graph, id);
    if (n->op == BRAID_OP_INPUT) return 'i';
    if (n->op == BRAID_OP_CONSTANT) return 'c';
    if (n->op == BRAID_OP_COPY) return 'a'; /* either direction */
    bc_node_class c = bc_classify(p, id);
    if (c == BC_NODE_KERNEL) return 'k';
    return bp_plan_result(p)->info[id].place.storage == BP_STORAGE_VIEW ? 'a'
                                                                        : 0;
}

/* Prints the plan's kernels ("plan: 3 kernels: %5 fused, ...") and dies
 * when some node is neither of the above (a matmul, a CPU node). */
static inline void bn_kernels_check(const braid_plan *p, const char *what) {
    bc_source src;
    BN_OK(bc_plan_source(p, &src));
    printf("%s: plan of %u nodes, GPU kernels:", what,
           (unsigned)bp_plan_result(p)->nschedule);
    for (uint32_t i = 0; i < bp_plan_result(p)->nschedule; i++) {
        uint32_t id = bp_plan_result(p)->schedule[i];
        char r = bn_kernels_role(p, id);
        const bg_node *n = bg_node_at(bp_plan_result(p)->graph, id);
        if (!r)
            bn_die("%s: node %u (%s) is not a GPU kernel, copy or view: the "
                   "kernel runner times GPU-only plans",
                   what, (unsigned)id, bg_op(n->op)->name);
        const bc_kernel *kk = bc_source_kernel(&src, id);
        if (r == 'k' && (!kk || kk->extra == BC_EXTRA_MATMUL))
            bn_die("%s: node %u (%s): no kernel this runner can launch", what,
                   (unsigned)id, bg_op(n->op)->name);
        if (r == 'k')
            printf(" %%%u %s (%u launch%s)", (unsigned)id, bg_op(n->op)->name,
                   (unsigned)kk->nlaunch, kk->nlaunch == 1 ? "" : "es");
    }
    printf("\n");
    fflush(stdout);
    bc_source_free(&src);
}

/* Prepares plan p for bn_kernels_pass: inputs (names[i], host data[i],
 * each the input's full size) are uploaded. Every node must be on the GPU
 * or be an input, a constant, a copy or a view; matmul nodes are refused
 * (nothing here needs them). */
static inline void bn_kernels_init(bn_kernels *k, braid_plan *p, int nin,
                            const char **names, const void **data) {
    memset(k, 0, sizeof *k);
    k->plan = p;
    uint32_t nn = bp_plan_result(p)->graph->nnodes;
    k->ptr = calloc(nn, sizeof *k->ptr);
    k->owned = calloc(nn, sizeof *k->owned);
    k->order = calloc(nn, sizeof *k->order);
    k->fn = calloc((size_t)nn * BC_MAX_LAUNCHES, sizeof *k->fn);
    k->scratch = calloc(nn, sizeof *k->scratch);
    if (!k->ptr || !k->owned || !k->order || !k->fn || !k->scratch)
        bn_die("out of memory");
    BN_OK(bc_plan_source(p, &k->src));
    bc_binary bin;
    char err[8192];
    int sm = bn_device_sm(NULL, 0);
    if (bc_compile(k->src.text, "bench.cu", sm, &bin, err, sizeof err) !=
        BRAID_OK)
        bn_die("compiling the plan's kernels for sm_%d: %s", sm, err);
    const void *image = bin.cubin ? bin.cubin : (const void *)bin.ptx;
    BN_CUDA(cudaLibraryLoadData(&k->lib, image, NULL, NULL, 0, NULL, NULL, 0));
    bc_binary_free(&bin);
    for (uint32_t i = 0; i < bp_plan_result(p)->nschedule; i++) {
        uint32_t id = bp_plan_result(p)->schedule[i];
        const bg_node *n = bg_node_at(bp_plan_result(p)->graph, id);
        const bp_tensor_place *pl = &bp_plan_result(p)->info[id].place;
        size_t bytes = bg_nbytes(n);
        if (n->op == BRAID_OP_INPUT) {
            const void *h = bn_find_input(n->name, nin, names, data);
            if (!h) bn_die("input \"%s\" not given", n->name);
            k->ptr[id] = k->owned[id] = bn_dev_alloc(bytes);
            BN_CUDA(cudaMemcpy(k->ptr[id], h, bytes, cudaMemcpyHostToDevice));
            continue;
        }
        if (n->op == BRAID_OP_CONSTANT) {
            k->ptr[id] = k->owned[id] = bn_dev_alloc(bytes);
            BN_CUDA(cudaMemcpy(k->ptr[id], n->attr.data, bytes,
                               cudaMemcpyHostToDevice));
            continue;
        }
        char role = bn_kernels_role(p, id);
        if (role == 'a' && pl->storage == BP_STORAGE_VIEW) {
            if (!k->ptr[pl->base])
                bn_die("node %u (%s): view of a tensor without data",
                       (unsigned)id, bg_op(n->op)->name);
            k->ptr[id] = (char *)k->ptr[pl->base] + pl->offset;
        } else if (role == 'a') { /* a copy: the same bytes */
            k->ptr[id] = k->ptr[n->inputs[0]];
        } else if (role == 'k') {
            const bc_kernel *kk = bc_source_kernel(&k->src, id);
            if (!kk || kk->extra == BC_EXTRA_MATMUL)
                bn_die("node %u: no kernel this runner can launch",
                       (unsigned)id);
            k->ptr[id] = k->owned[id] = bn_dev_alloc(bytes);
            if (kk->extra == BC_EXTRA_SCRATCH)
                k->scratch[id] = bn_dev_alloc(kk->scratch_bytes);
            if (kk->run_check && !k->check) {
                k->check = bn_dev_alloc(sizeof(bc_run_check));
                BN_CUDA(cudaMemset(k->check, 0, sizeof(bc_run_check)));
            }
            for (uint32_t l = 0; l < kk->nlaunch; l++)
                BN_CUDA(cudaLibraryGetKernel(
                    &k->fn[(size_t)id * BC_MAX_LAUNCHES + l], k->lib,
                    kk->launch[l].entry));
            k->order[k->nkernels++] = id;
        } else {
            bn_die("node %u (%s) is not a GPU kernel, copy or view: this "
                   "runner times GPU-only plans",
                   (unsigned)id, bg_op(n->op)->name);
        }
    }
}

/* Launches every kernel once, in schedule order, on stream st. */
static inline void bn_kernels_pass(void *arg, cudaStream_t st) {
    bn_kernels *k = arg;
    void *par[BC_MAX_PARAMS + 2];
    void *args[BC_MAX_PARAMS + 2];
    for (uint32_t i = 0; i < k->nkernels; i++) {
        uint32_t id = k->order[i];
        const bg_node *n = bg_node_at(bp_plan_result(k->plan)->graph, id);
        const bc_kernel *kk = bc_source_kernel(&k->src, id);
        uint32_t np = 0;
        par[np++] = k->ptr[id];
        for (uint32_t j = 0; j < n->ninputs; j++)
            par[np++] = k->ptr[n->inputs[j]];
        if (kk->extra == BC_EXTRA_SCRATCH) par[np++] = k->scratch[id];
        if (kk->run_check) par[np++] = k->check;
        if (np != kk->nparams)
            bn_die("node %u: %u parameters, the kernel takes %u", (unsigned)id,
                   (unsigned)np, (unsigned)kk->nparams);
        for (uint32_t j = 0; j < np; j++)
            args[j] = &par[j];
        for (uint32_t l = 0; l < kk->nlaunch; l++) {
            const bc_launch *L = &kk->launch[l];
            dim3 grid = {L->grid[0], L->grid[1], L->grid[2]};
            dim3 block = {L->block[0], L->block[1], L->block[2]};
            BN_CUDA(cudaLaunchKernel(
                (const void *)k->fn[(size_t)id * BC_MAX_LAUNCHES + l], grid,
                block, args, 0, st));
        }
    }
}

/* Copies output `name` of the plan to host memory (its full size). */
static inline void bn_kernels_output(const bn_kernels *k, const char *name,
                              void *host, size_t bytes) {
    const bp_plan *p = k->plan;
    for (uint32_t o = 0; o < bp_plan_result(p)->noutputs; o++) {
        if (strcmp(bp_plan_result(p)->outputs[o].name, name) != 0) continue;
        uint32_t id = bp_plan_result(p)->outputs[o].node;
        if (!k->ptr[id]) bn_die("output \"%s\" has no data", name);
        BN_CUDA(cudaMemcpy(host, k->ptr[id], bytes, cudaMemcpyDeviceToHost));
        return;
    }
    bn_die("no output \"%s\"", name);
}

static inline void bn_kernels_free(bn_kernels *k) {
    uint32_t nn = bp_plan_result(k->plan)->graph->nnodes;
    for (uint32_t i = 0; i < nn; i++) {
        if (k->owned[i]) BN_CUDA(cudaFree(k->owned[i]));
        if (k->scratch[i]) BN_CUDA(cudaFree(k->scratch[i]));
    }
    if (k->check) BN_CUDA(cudaFree(k->check));
    BN_CUDA(cudaLibraryUnload(k->lib));
    bc_source_free(&k->src);
    free(k->ptr);
    free(k->owned);
    free(k->order);
    free(k->fn);
    free(k->scratch);
}

#endif /* BRAID_HAVE_CUDA */

/* Kernels a run of p launches (nodes that do work, copies aside) and
 * assigns that copy (0 when every update is computed in place); both 0
 * without the CUDA toolkit, where the plan's internals are not shown. */
static inline void bn_plan_counts(const braid_plan *p, int *kernels,
                                  int *copies) {
    *kernels = *copies = 0;
#ifdef BRAID_HAVE_CUDA
    const bp_plan *bp = (const bp_plan *)p;
    for (uint32_t id = 0; id < bp->res.graph->nnodes; id++) {
        const bp_node_info *in = &bp->res.info[id];
        braid_op op = bp->res.graph->nodes[id].op;
        *kernels += !in->noop && op != BRAID_OP_COPY;
        *copies += op == BRAID_OP_ASSIGN && !in->noop;
    }
#else
    (void)p;
#endif
}

/* The kernels of bn_plan_counts by op, "matmul 14, fused 57, ..." (ops in
 * the op table's order) into buf; "?" without the CUDA toolkit. */
static inline void bn_plan_ops(const braid_plan *p, char *buf, size_t size) {
    snprintf(buf, size, "?");
#ifdef BRAID_HAVE_CUDA
    const bp_plan *bp = (const bp_plan *)p;
    uint32_t count[BRAID_OP_COUNT_] = {0};
    for (uint32_t id = 0; id < bp->res.graph->nnodes; id++) {
        braid_op op = bp->res.graph->nodes[id].op;
        if (!bp->res.info[id].noop && op != BRAID_OP_COPY) count[op]++;
    }
    size_t len = 0;
    buf[0] = 0;
    for (int op = 0; op < BRAID_OP_COUNT_ && len < size; op++)
        if (count[op])
            len += (size_t)snprintf(buf + len, size - len, "%s%s %u",
                                    len ? ", " : "", bg_op(op)->name,
                                    (unsigned)count[op]);
#else
    (void)p;
#endif
}

#endif /* BRAID_BENCH_BENCH_H */
