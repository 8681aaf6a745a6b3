/* runtime/dispatch.h — the one dispatcher (prefix br_), and the queue
 * interface its device backends implement.
 *
 * Every executor runs a plan's schedule through br_dispatch_run: the CPU
 * executor (no device queues), the CUDA backend (runtime/cuda/cuda_run.c:
 * streams and events) and the host emulator the tests use
 * (runtime/emulate.c: lazy host queues drained in a random order that
 * honours only queue order and events). So CI, which has no GPU, runs the
 * same dispatch policy as a GPU:
 *
 *   1. issue device nodes in schedule order, as long as the next one's CPU
 *      producers (event edges from the CPU queue) have run; a backend may
 *      ask for several to go in one call (a collective group, a CUDA graph
 *      replay). Issuing is asynchronous: the host runs ahead;
 *   2. run the next CPU node: first the host waits for each device node it
 *      has an event from, then it computes the node while devices work.
 *
 * Device work never waits for a CPU node that has not run, because a device
 * node is issued only after its CPU producers; every CPU producer of a
 * device node scheduled before CPU node N precedes N in the CPU list, so by
 * the time N runs every device node before it has been issued. The schedule
 * pass queues device work before host work, so host and device overlap. */
#ifndef BRAID_RUNTIME_DISPATCH_H
#define BRAID_RUNTIME_DISPATCH_H

#include "runtime/runtime.h"

/* A plan's schedule as the dispatcher walks it, built once per executor
 * (or per br_cuda_check_plan) and read by the backends. */
typedef struct br_sched {
    const bp_plan *plan; /* the plan; not owned */
    uint32_t n;          /* nodes (plan->ninfo) */
    bool *on_dev;        /* per node: on a device queue (not the CPU's) */
    uint32_t *dev_list;  /* scheduled device-queue nodes, schedule order */
    uint32_t ndev;       /* entries in dev_list */
    uint32_t *cpu_list;  /* scheduled CPU-queue nodes, schedule order */
    uint32_t ncpu;       /* entries in cpu_list */
    uint32_t *wstart;    /* per node: first index in waits (n + 1 entries) */
    uint32_t *waits;     /* plan event indices each node waits for */
    uint32_t *rstart;    /* per node: first index in recs (n + 1 entries) */
    uint32_t *recs;      /* plan event indices each node records */
} br_sched;

/* Fills s from p. BRAID_ERR_INTERNAL naming the event for an event whose
 * nodes lie outside the plan; BRAID_ERR_OUT_OF_MEMORY. On error s may be
 * partly filled: br_sched_free it. */
braid_status br_sched_build(const bp_plan *p, br_sched *s);
void br_sched_free(br_sched *s); /* zeroes s; a zeroed s is fine */

/* True when node id sits on a device queue (compute, copy or comm stream)
 * rather than the CPU queue. */
bool br_node_on_device_queue(const bp_plan *p, uint32_t id);

/* A device backend: queues that run issued nodes asynchronously, each in
 * issue order, ordered across queues only by the plan's events. */
typedef struct br_queue_ops {
    /* Entries of dev_list from index i on that must be issued in one call
     * (at least 1). */
    uint32_t (*span)(void *q, uint32_t i);
    /* Issues device nodes ids[0..m) asynchronously, in order: each on its
     * queue after its event waits, then its event records. */
    braid_status (*issue)(void *q, const uint32_t *ids, uint32_t m);
    /* Returns once device node producer, which CPU node consumer waits for
     * through plan event ev, is complete and its results are readable by
     * the host. */
    braid_status (*host_wait)(void *q, uint32_t producer, uint32_t ev,
                              uint32_t consumer);
    /* Called before each CPU node runs (may be NULL): the emulator lets its
     * queues make progress meanwhile. */
    void (*host_turn)(void *q);
} br_queue_ops;

/* Computes CPU node id on the host (a no-op for inputs, constants, views).
 * Fails only for a run error of the data (a checked cast's value out of
 * range), with the message set. */
typedef braid_status (*br_cpu_fn)(void *ctx, uint32_t id);

/* One run of the schedule: what br_dispatch_run needs. */
typedef struct br_dispatch {
    const br_sched *sched;   /* the schedule */
    const br_queue_ops *ops; /* the device backend; NULL when sched has
                                no device nodes */
    void *queues;            /* passed to ops */
    br_cpu_fn run_cpu;       /* computes a CPU node */
    void *cpu_ctx;           /* passed to run_cpu */
    bool *cpu_done;          /* scratch, sched->n entries */
} br_dispatch;

/* Issues every device node and runs every CPU node (see the top of this
 * file), returning without waiting for the device queues: the backend's
 * finish does that. Stops at the first error, whose message names the
 * node. */
braid_status br_dispatch_run(const br_dispatch *d);

/* ---- the host emulator of device queues (runtime/emulate.c) ------------- */

typedef struct br_emu br_emu;

/* Emulated queues for sched's device nodes: run_dev (with ctx) computes a
 * device node on the host when the emulator drains it. Queue heads are
 * chosen by a generator seeded with seed. NULL when out of memory. */
br_emu *br_emu_new(const bp_plan *p, const br_sched *sched, uint64_t seed,
                   br_cpu_fn run_dev, void *ctx);
void br_emu_free(br_emu *m); /* NULL is fine */
/* The emulator's queue interface (its argument is a br_emu). */
const br_queue_ops *br_emu_ops(void);
/* Before a run: empties the queues. */
void br_emu_begin(br_emu *m);
/* After br_dispatch_run: drains every queue (the run's end, like waiting
 * for every stream). BRAID_ERR_INTERNAL when no queue can proceed. */
braid_status br_emu_finish(br_emu *m);

#endif /* BRAID_RUNTIME_DISPATCH_H */
