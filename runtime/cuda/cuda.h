/* runtime/cuda/cuda.h — the CUDA backend as seen by the executor (prefix br_).
 *
 * runtime/exec.c owns braid_exec and the CPU side; when a plan runs nodes on
 * a GPU it makes one br_cuda next to its CPU tables and hands it the run:
 *
 *   creation  br_cuda_new checks the plan's GPUs exist, allocates every
 *             GPU and pinned arena once (and the CPU arena as pinned memory
 *             when copies touch it), creates a stream per GPU queue, a
 *             CUDA event per cross-queue event, a cuBLAS handle per compute
 *             stream, uploads constants that are copied to a GPU, loads
 *             the plan's kernels (codegen/: one NVRTC compile per plan,
 *             cached) and prepares cuBLASLt for the fused matmuls whose
 *             bias [+ relu] epilogue it computes. exec.c asks
 *             br_cuda_arena / br_cuda_home for the pointers it keeps per
 *             arena and per node.
 *   run       exec.c binds the caller's buffers into its per-node pointer
 *             table (host pointers for CPU nodes, device pointers for GPU
 *             nodes, caller buffers for inputs and in-place outputs),
 *             resolves views, then calls br_cuda_run_start (bindings, CUDA
 *             graph or not) and runs the one dispatcher
 *             (runtime/dispatch.h) over br_cuda_ops(): GPU nodes are
 *             issued asynchronously on their streams with event waits and
 *             records; CPU nodes run on the host as soon as the GPU work
 *             they wait for is done. The dispatcher returns once
 *             everything is issued and every CPU node ran
 *             (braid_run_async returns then); br_cuda_run_finish
 *             (braid_wait) completes deferred copies and returns when
 *             every stream is idle, so outputs are ready.
 *
 * Without the CUDA toolkit (BRAID_HAVE_CUDA undefined)
 * runtime/cuda/cuda_common.c provides these calls: br_cuda_new fails with
 * BRAID_ERR_DEVICE "built without CUDA". Every failure leaves a
 * braid_last_error() message naming the node and the CUDA call; nothing aborts.
 */
#ifndef BRAID_RUNTIME_CUDA_H
#define BRAID_RUNTIME_CUDA_H

#include "runtime/dispatch.h"
#include "runtime/runtime.h"

typedef struct br_cuda br_cuda;

/* True when some scheduled node of p runs on a GPU queue (a compute, H2D,
 * D2H or D2D stream) or some node is placed on a CUDA device: the plan
 * needs the CUDA backend to run. */
bool br_plan_uses_cuda(const bp_plan *p);

/* BRAID_ERR_DEVICE "braid_exec_new: the plan runs node N (op) on cuda:K:
 * <why> (compile for "cpu" to run here)", naming p's first GPU node. */
braid_status br_cuda_no_device(const bp_plan *p, const char *why);

/* Creates the CUDA side of an executor of p, whose schedule tables sched
 * it reads (p and sched must outlive it); pool (the executor's threads, may
 * be NULL) copies constants into pinned staging at creation. Errors:
 * BRAID_ERR_DEVICE when the build has no CUDA, no device is present or the
 * plan names a GPU this machine lacks ("plan needs cuda:1 but 1 CUDA device
 * present"); BRAID_ERR_OUT_OF_MEMORY naming the arena and its size;
 * BRAID_ERR_UNSUPPORTED for a GPU node no kernel covers. */
braid_status br_cuda_new(const bp_plan *p, const br_sched *sched, br_pool *pool,
                         br_cuda **out);
void br_cuda_free(br_cuda *c); /* NULL is fine; waits for the GPUs first */

/* The buffer of arena a when the CUDA backend allocated it (a GPU arena:
 * device memory; a pinned arena or the pinned CPU arena: host memory), or
 * NULL when exec.c allocates it itself. */
void *br_cuda_arena(const br_cuda *c, uint32_t a);

/* Data of node id outside a run when the backend keeps it elsewhere than
 * its arena place (a copy of a constant to a GPU, uploaded once at
 * creation), or NULL. */
void *br_cuda_home(const br_cuda *c, uint32_t id);

/* What a run needs from the executor. Everything pointed to must stay
 * valid until br_cuda_run_finish returns, except in and out, which only
 * br_cuda_run_start reads. */
typedef struct br_cuda_run_args {
    void *const *ptr;                /* per node: its data this run (views
                                        resolved); device pointers for GPU
                                        nodes */
    const braid_input_binding *in;   /* the caller's inputs */
    size_t nin;                      /* entries in in */
    const braid_output_binding *out; /* the caller's outputs */
    size_t nout;                     /* entries in out */
    br_pool *pool;                   /* host threads for staging memcpys */
    struct br_prof *prof;            /* the executor's profiler when it
                                        profiles this run, else NULL */
} br_cuda_run_args;

/* Starts one run: checks the bindings, resets the run state and decides
 * whether this run replays the CUDA graph. *started false: a binding was
 * refused (device memory where the host would touch it), the status says
 * why and no br_cuda_run_finish follows. *started true: exec.c then runs
 * the dispatcher (runtime/dispatch.h) over br_cuda_ops() with c as its
 * queues, and br_cuda_run_finish must follow whatever happens. */
braid_status br_cuda_run_start(br_cuda *c, const br_cuda_run_args *a,
                               bool *started);
/* The CUDA backend as the dispatcher's queues (the argument is a br_cuda):
 * streams, events, a collective group or a CUDA graph replay issued as one
 * unit. NULL in a build without CUDA. */
const br_queue_ops *br_cuda_ops(void);
/* Completes the run br_cuda_run_start began, possibly on another thread:
 * with st (the start's status) BRAID_OK, finishes deferred copies and the
 * CUDA graph's host copies; in any case synchronises every stream (after
 * an error: drains them). Returns st when it is an error, else the first
 * error met here, naming the node and the failing call. */
braid_status br_cuda_run_finish(br_cuda *c, braid_status st);

/* ---- inspection (tests, tools) ------------------------------------------- */

/* Everything br_cuda_new decides without a GPU, for CI: classifies every
 * node, lists events, decides arenas and CUDA-graph eligibility, generates
 * the plan's kernels and checks each GPU node against its kernel, and when
 * sm > 0 compiles them with NVRTC for sm_<sm>. report (may be NULL)
 * receives a summary and the would-be executor log. BRAID_ERR_UNSUPPORTED
 * "built without CUDA" in a build without the toolkit. */
braid_status br_cuda_check_plan(const bp_plan *p, int sm, char *report,
                                size_t size);

/* The executor's CUDA backend, or NULL when it has none (runtime/exec.c). */
br_cuda *br_exec_cuda(const braid_exec *e);

/* The backend's log: one line per notable decision (CUDA graph captured or
 * why not, staging buffers, peer access), NUL-terminated; "" for NULL. */
const char *br_cuda_log(const br_cuda *c);
/* The log's line of the executor's creation, "created in T ms: devices
 * t1 tables t2 ...", kept also when the log is full; "" for NULL. */
const char *br_cuda_created(const br_cuda *c);

/* Turns CUDA-graph capture and replay on (the default) or off. Off drops a
 * graph captured before. $BRAID_CUDA_GRAPHS=0 makes off the default. */
void br_cuda_set_graphs(br_cuda *c, bool on);

/* True when the last run replayed a CUDA graph. */
bool br_cuda_last_run_used_graph(const br_cuda *c);

/* ---- memory helpers (tests, benchmarks) ---------------------------------- */

/* Page-locked host memory / device memory on GPU dev, or NULL (no CUDA,
 * out of memory). Free with the matching call (NULL is fine). */
void *br_cuda_pinned_alloc(size_t bytes);
void br_cuda_pinned_free(void *p);
void *br_cuda_device_alloc(int dev, size_t bytes);
void br_cuda_device_free(void *p);
/* A synchronous copy between any host and device memory (cudaMemcpy with
 * cudaMemcpyDefault); BRAID_ERR_DEVICE without CUDA or on failure. */
braid_status br_cuda_memcpy(void *dst, const void *src, size_t bytes);

/* ---- the process's pool of CUDA resources (runtime/cuda/cuda_pool.c) ---- */

/* What the pool holds: plan-independent resources an executor takes at
 * creation and gives back when freed. */
typedef enum br_res_kind {
    BR_RES_STREAM, /* a non-blocking stream */
    BR_RES_EVENT,  /* an event without timing */
    BR_RES_BLAS,   /* a cuBLAS handle with its workspace */
    BR_RES_LT,     /* a cuBLASLt handle with its workspace */
    BR_RES_PINNED, /* a pinned host staging buffer */
    BR_RES_MODULE, /* a loaded kernel module, shared (counted here, not
                      handed over: see cuda_pool.c) */
    BR_RES_KINDS
} br_res_kind;

/* Counters since the process started, per kind (tests, benchmarks). */
typedef struct br_res_stats {
    uint64_t created[BR_RES_KINDS];  /* made because the pool had none */
    uint64_t reused[BR_RES_KINDS];   /* handed out from the pool */
    uint64_t returned[BR_RES_KINDS]; /* given back by a freed executor */
    size_t pooled;                   /* idle resources held now (modules
                                        no executor uses included) */
} br_res_stats;

/* The counters; all zero in a build without CUDA. */
void br_cuda_res_stats(br_res_stats *out);

/* ---- caller buffers in device memory (runtime/exec.c) -------------------- */

/* The GPU whose memory ptr points into when it is device (or managed)
 * memory, else -1: host memory of any kind, NULL, or a build without CUDA.
 * One cudaPointerGetAttributes call. */
int br_cuda_pointer_device(const void *ptr);

/* True when output node id may be computed straight into a caller's
 * device buffer: it is a copy from a GPU (D2H, written with one
 * cudaMemcpyAsync) and no CPU node reads its bytes, directly or through
 * views (that node would read device memory on the host). False for NULL
 * and without CUDA. */
bool br_cuda_device_output_in_place(const br_cuda *c, uint32_t id);

#endif /* BRAID_RUNTIME_CUDA_H */
