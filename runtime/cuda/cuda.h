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
 *             resolves views, then calls br_cuda_run_start, which walks
 *             the schedule: GPU nodes are issued asynchronously on their
 *             streams with event waits and records; CPU nodes run through
 *             the callback as soon as the GPU work they wait for is done.
 *             It returns once everything is issued and every CPU node ran
 *             (braid_run_async returns then); br_cuda_run_finish
 *             (braid_wait) completes deferred copies and returns when
 *             every stream is idle, so outputs are ready.
 *
 * Without the CUDA toolkit (BRAID_HAVE_CUDA undefined) runtime/cuda_stub.c
 * provides these calls: br_cuda_new fails with BRAID_ERR_DEVICE "built
 * without CUDA". Every failure leaves a braid_last_error() message naming
 * the node and the CUDA call; nothing aborts. */
#ifndef BRAID_RUNTIME_CUDA_H
#define BRAID_RUNTIME_CUDA_H

#include "runtime/runtime.h"

typedef struct br_cuda br_cuda;

/* True when some scheduled node of p runs on a GPU queue (a compute, H2D,
 * D2H or D2D stream) or some node is placed on a CUDA device: the plan
 * needs the CUDA backend to run. */
bool br_plan_uses_cuda(const bp_plan *p);

/* True when node id is issued by the CUDA backend (it is on a GPU queue);
 * false for the CPU queue's nodes, which exec.c's kernels compute. */
bool br_cuda_node_on_gpu(const bp_plan *p, uint32_t id);

/* BRAID_ERR_DEVICE "braid_exec_new: the plan runs node N (op) on cuda:K:
 * <why> (compile for "cpu" to run here)", naming p's first GPU node. */
braid_status br_cuda_no_device(const bp_plan *p, const char *why);

/* Creates the CUDA side of an executor of p (p must outlive it). Errors:
 * BRAID_ERR_DEVICE when the build has no CUDA, no device is present or the
 * plan names a GPU this machine lacks ("plan needs cuda:1 but 1 CUDA device
 * present"); BRAID_ERR_OUT_OF_MEMORY naming the arena and its size;
 * BRAID_ERR_UNSUPPORTED for a GPU node no kernel covers. */
braid_status br_cuda_new(const bp_plan *p, br_cuda **out);
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
    void (*run_cpu)(void *ctx, uint32_t id); /* computes CPU node id (a
                                                no-op for inputs, constants
                                                and views) */
    void *cpu_ctx;                           /* passed to run_cpu */
} br_cuda_run_args;

/* Starts one run of the plan's schedule (see the top of this file): checks
 * the bindings, then issues every GPU node and runs every CPU node,
 * returning without the final synchronisation. *started false: a binding
 * was refused (device memory where the host would touch it), nothing ran,
 * the status says why and no br_cuda_run_finish follows. *started true:
 * the run is under way, whatever the status (a CUDA error while issuing
 * stops the issue), and br_cuda_run_finish must follow. */
braid_status br_cuda_run_start(br_cuda *c, const br_cuda_run_args *a,
                               bool *started);
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
