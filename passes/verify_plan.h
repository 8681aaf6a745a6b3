/* passes/verify_plan.h — internals of the plan checker (passes/verify_plan*.c).
 *
 * The checker re-derives everything from the plan's raw tables (schedule,
 * queues, events, places) and shares no code with the passes it checks,
 * except the definitions of what a program (bp_program_check) and a
 * strided layout (passes/layout.h) are. */
#ifndef BRAID_PASSES_VERIFY_PLAN_H
#define BRAID_PASSES_VERIFY_PLAN_H

#include "passes/passes.h"

typedef struct vp_state {
    const bp_plan *plan; /* the plan checked */
    uint32_t n;          /* nodes */
    int64_t *pos;        /* per node: schedule position, -1 when absent */
    uint32_t *root;      /* per node: the tensor owning its bytes (itself
                            unless a view) */
    uint64_t *roff;      /* per node: its offset within root's bytes */
    bool *output;        /* per node: a graph output */
    uint32_t nq;         /* queues that hold nodes (dense numbering) */
    uint32_t *dq;        /* per node: dense queue */
    uint32_t *qpos;      /* per node: position within its queue */
    uint32_t *qprev;     /* per node: previous node on its queue, BG_NONE */
    int32_t *clock;      /* n × nq: last position per queue known complete
                            when the node starts (-1: none) */
} vp_state;

/* Sets the error "verify_plan: <fmt...>" and returns BRAID_ERR_INTERNAL. */
braid_status vp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Node a completes before node b starts on every executor. */
bool vp_before(const vp_state *st, uint32_t a, uint32_t b);

/* Vector clocks from queue order and events (after the schedule, queue
 * and event checks passed). */
braid_status vp_clocks(vp_state *st);

/* No two arena tensors whose lifetimes may overlap share bytes (after the
 * place checks passed). */
braid_status vp_check_overlaps(vp_state *st);
/* Variables (docs/training.md): each in its own arena bytes, written only
 * by its assign (a view of it), after every other node reading those
 * bytes has completed (happens-before, so on every executor). */
braid_status vp_check_assigns(const vp_state *st);
/* The assign whose variable node id writes as a view of it (id is the
 * assign itself, or the assign's value computed into the variable's
 * bytes), else BG_NONE. */
uint32_t vp_assign_of_written(const vp_state *st, uint32_t id);

/* Strided views (verify_plan_layout.c): the layout table, extents, and
 * that every node computing from a strided view is a matmul taking it. */
braid_status vp_check_layouts(const vp_state *st);
/* Skipped node id as a strided view (or a permute a matmul computes
 * into): *handled false when id is neither (the contiguous checks apply);
 * else BRAID_OK or the failure. */
braid_status vp_check_strided_noop(const vp_state *st, uint32_t id,
                                   bool *handled);
/* Node id, a VIEW that computes, is a matmul writing the bytes of the
 * permute reading it. */
bool vp_writes_permute(const vp_state *st, uint32_t id);

/* The op writes element i of its output from element i of same-shaped
 * inputs only, so its output may be exactly one such input's bytes (never
 * a range-checked cast's: its GPU kernel reads the input after writing). */
bool vp_aliasing_ok(const bp_plan *p, uint32_t id);

#endif /* BRAID_PASSES_VERIFY_PLAN_H */
