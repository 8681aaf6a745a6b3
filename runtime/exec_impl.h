/* runtime/exec_impl.h — the executor's state, shared by the files that
 * implement braid_exec (exec.c: creation and runs; exec_profile.c: the
 * profiler calls). Internal to runtime/. */
#ifndef BRAID_RUNTIME_EXEC_IMPL_H
#define BRAID_RUNTIME_EXEC_IMPL_H

#include "runtime/cuda/cuda.h"
#include "runtime/dispatch.h"
#include "runtime/profile/profile.h"
#include "runtime/runtime.h"

#include <stdatomic.h>

/* An output binding of the run in flight, kept from braid_run_async to
 * braid_wait (the caller's binding array need not live that long). */
typedef struct br_out_rec {
    void *data;    /* the caller's buffer */
    size_t bytes;  /* its size */
    uint32_t node; /* the plan output's node */
    bool in_place; /* computed straight into data this run */
} br_out_rec;

/* The run braid_run_async started, until braid_wait finishes it. */
typedef struct br_async {
    bool pending;             /* a run is outstanding */
    braid_status status;      /* its status so far */
    char error[BG_ERROR_MAX]; /* its braid_last_error() message when status
                                 is not BRAID_OK (braid_wait may run on
                                 another thread) */
    br_kernel_args kargs;     /* its kernel arguments */
    br_cuda_run_args cargs;   /* its arguments for the CUDA backend */
} br_async;

struct braid_exec {
    const braid_plan *plan; /* the plan run; not owned, must outlive us */
    br_pool *pool;          /* CPU worker threads */
    void **arena;           /* per plan arena: its buffer; owned */
    void **home;            /* per node: its data outside a run (arena
                               buffer, constant data, NULL for inputs) */
    void **ptr;             /* per node: its data during a run */
    const void **args;      /* a node's input pointers, max_inputs */
    const int64_t **sargs;  /* their strides (bp_layout_of), max_inputs */
    uint32_t max_inputs;    /* entries in args */
    void **derived;         /* per node: what br_cpu_derive made from its
                               constant inputs, or NULL; NULL until one
                               is made; owned */
    void *scratch;          /* kernel scratch; owned */
    size_t scratch_bytes;   /* its size */
    void **staging;         /* per plan input: an aligned copy used when the
                               caller's data is misaligned; lazily; owned */
    int64_t *in_binding;    /* per plan input: binding index this run */
    int64_t *out_binding;   /* per plan output: binding index this run */
    br_out_rec *outs;       /* per output binding of the run in flight
                               (outs_cap entries); owned */
    size_t outs_cap;        /* entries allocated in outs */
    size_t nouts;           /* entries used this run */
    atomic_flag busy;       /* set while a call (braid_run, braid_run_async,
                               braid_wait) is inside the executor: one
                               call at a time */
    br_async run;           /* the outstanding run, if any */
    bool emulate;           /* run device nodes on the host, interleaving
                               queues at random (br_exec_new_emulated) */
    br_sched sched;         /* the schedule the dispatcher walks (also
                               read by the CUDA backend); owned */
    bool *cpu_done;         /* per node: the dispatcher's scratch; owned */
    br_emu *emu;            /* emulation: the host queues; owned */
    br_cuda *cuda;          /* the CUDA backend (runtime/cuda*.c) when the
                               plan runs GPU nodes: it owns the GPU and
                               pinned arenas and dispatches runs; NULL
                               otherwise; owned */
    bool profiling;         /* time every node (braid_exec_set_profiling) */
    br_prof *prof;          /* the figures, since profiling was first
                               turned on; NULL before; owned */
    bc_run_check check;     /* the CPU kernels' run check record (gather,
                               scatter: docs/architecture.md) */
};

/* Takes the executor for one call; false (with a message) when another
 * thread is inside it. The caller releases it with
 * atomic_flag_clear(&e->busy). */
bool br_exec_enter(braid_exec *e, const char *where);
/* Uploads GPU variables' first values (host ones are written in place by
 * exec.c); runtime/exec_state.c. */
braid_status br_exec_init_variables(braid_exec *e);

#endif /* BRAID_RUNTIME_EXEC_IMPL_H */
