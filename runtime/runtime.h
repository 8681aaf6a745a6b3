/* runtime/runtime.h — internals of braid's executors (prefix br_).
 *
 * The CPU executor (runtime/exec.c) runs a plan's schedule node by node with
 * the kernels of runtime/cpu/cpu_kernels*.c, which split their work over a
 * persistent thread pool (runtime/cpu/threadpool.c). */
#ifndef BRAID_RUNTIME_RUNTIME_H
#define BRAID_RUNTIME_RUNTIME_H

#include "codegen/codegen.h"
#include "passes/plan.h"

/* ---- thread pool --------------------------------------------------------- */

typedef struct br_pool br_pool;

/* Work on the half-open index range [begin, end). */
typedef void (*br_range_fn)(void *ctx, int64_t begin, int64_t end);

/* A pool in which nthreads threads work on each parallel-for: the caller
 * plus nthreads - 1 persistent workers (nthreads ≤ 0: one per online core).
 * NULL when out of memory; when threads cannot be started the pool works
 * with fewer. */
br_pool *br_pool_new(int nthreads);
void br_pool_free(br_pool *p); /* NULL is fine */
/* Threads that take part in a parallel-for, the caller included. */
int br_pool_threads(const br_pool *p);

/* Calls fn over [0, n) split into chunks of at least grain indices, on the
 * pool's threads and the caller, and returns when every chunk is done.
 * Small ranges (n ≤ grain), a 1-thread pool, a NULL pool and calls made from
 * inside another parallel-for run fn(ctx, 0, n) inline. Which thread runs
 * which chunk varies, so fn must write disjoint results per index. */
void br_parallel_for(br_pool *p, int64_t n, int64_t grain, br_range_fn fn,
                     void *ctx);

/* ---- CPU kernels --------------------------------------------------------- */

/* What a kernel needs to compute one node. */
typedef struct br_kernel_args {
    const braid_graph *g;  /* the plan's graph (input nodes' types) */
    uint32_t id;           /* the node computed */
    const bg_node *node;   /* its description */
    const bp_program *program; /* FUSED: its program; else NULL */
    void *out;             /* its output, bg_nbytes(node) bytes */
    const void *const *in; /* its inputs' data, node->ninputs pointers */
    const int64_t *const *in_strides; /* per input: element strides when it
                                         is a strided view (bp_layout_of),
                                         else NULL (dense); only matmuls
                                         see strided inputs. NULL: all
                                         dense */
    const int64_t *out_strides; /* the output's, when a matmul computes
                                   into a permute's bytes; else NULL */
    const void *derived;        /* what br_cpu_derive made for the node at
                                   executor creation (a conv's Winograd filter
                                   transform of constant weights, a matmul's
                                   packed B), or NULL */
    br_pool *pool;         /* threads to split the work over */
    void *scratch;         /* executor scratch, at least what
                              br_cpu_prepare asked for, 64-byte aligned */
    size_t scratch_bytes;  /* its size */
    bc_run_check *check;   /* the executor's run check record (kernels of
                              BRAID_OPF_RUN_CHECK ops record a failure
                              here with br_run_check_record); NULL: do not
                              record */
} br_kernel_args;

/* Records a failure of node in rc unless one is there already
 * (thread-safe; rc NULL: nothing). */
void br_run_check_record(bc_run_check *rc, uint32_t node, bc_check_kind kind,
                         int64_t a, int64_t b, int64_t c);
/* BRAID_OK when rc holds nothing; else clears it and returns the run's
 * error (BRAID_ERR_INVALID_ARGUMENT) with a message naming the node of p
 * and what failed ("braid_run: node 5 (gather 'emb'): index 7 at ..."). */
braid_status br_run_check_take(const bp_plan *p, bc_run_check *rc);

/* Checks at executor creation that node id has a CPU kernel for its op,
 * types and sizes, and adds the scratch bytes it needs to *scratch (max).
 * BRAID_ERR_UNSUPPORTED naming the node otherwise. */
braid_status br_cpu_prepare(const braid_graph *g, uint32_t id, size_t *scratch);
/* Data the runs of node id can reuse, derived once at executor creation
 * from its constant inputs: in[k] is input k's bytes when it is a constant
 * of the plan (the same bytes every run), else NULL; program: a FUSED
 * node's program, else NULL; pool: threads to use. Today a 3×3 Winograd
 * conv's filter transform (cpu_kernels_winograd.c) and a matmul's constant
 * B packed for braid's own GEMM (cpu_sgemm.c). NULL when the node has
 * none, or memory is short (its runs then work without). The result goes
 * to the node's runs as br_kernel_args.derived; the caller frees it. */
void *br_cpu_derive(const braid_graph *g, uint32_t id, const void *const *in,
                    const bp_program *program, br_pool *pool);
/* Computes one node. For a node br_cpu_prepare accepted (and, for a FUSED
 * node, br_fused_check) it does not fail: a run error of the data (an index
 * out of range, a checked cast's value that does not fit) is recorded in
 * a->check. Only without a record (a->check NULL) does a checked cast
 * return its error (bg_cast_range_error's message) instead. */
braid_status br_cpu_run(const br_kernel_args *a);
/* For a FUSED node id, with br_cpu_prepare: checks that program (plan->
 * programs[info.program]) is one the CPU interpreter runs safely, which is
 * any program bp_program_check accepts for the node (the interpreter adds
 * no limits of its own). BRAID_ERR_INTERNAL naming the node and the
 * instruction otherwise. */
braid_status br_fused_check(const braid_graph *g, uint32_t id,
                            const bp_program *program);

/* After br_fused_check: adds what the program needs beyond what
 * br_cpu_prepare asked for (a POOL program's batch of prologue values, a
 * CONV program's conv's scratch) to *scratch (max); a CONV program's conv
 * the CPU cannot run is an error, as the conv node's would be. */
braid_status br_fused_scratch(const braid_graph *g, uint32_t id,
                              const bp_program *program, size_t *scratch);

/* ---- executors -------------------------------------------------------------- */

/* A test executor that runs ANY plan on the host: every device's arenas are
 * host memory, copy nodes are memcpy, and the device queues are emulated
 * (runtime/emulate.c) under the dispatcher a GPU runs (runtime/dispatch.c):
 * they progress in a random order and pace drawn from seed that respects
 * only queue order and the plan's events, so a missing event or an unsafe
 * buffer reuse shows up as wrong results. braid_run, braid_run_async,
 * braid_wait and braid_exec_free work on it as usual. */
braid_status br_exec_new_emulated(const braid_plan *p, uint64_t seed,
                                  braid_exec **exec);

#endif /* BRAID_RUNTIME_RUNTIME_H */
