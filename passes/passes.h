/* passes/passes.h — the compiler's passes (prefix bp_).
 *
 * Every pass has one signature, braid_status bp_<name>(bp_plan *plan): it
 * reads and rewrites the plan (passes/plan.h) and nothing else, and on
 * failure leaves a message naming itself and the node for braid_last_error().
 * The pipeline is the list in passes/pipeline.c; each pass lives in
 * passes/<name>.c. */
#ifndef BRAID_PASSES_PASSES_H
#define BRAID_PASSES_PASSES_H

#include "passes/plan.h"

typedef braid_status (*bp_pass_fn)(bp_plan *plan);

/* Shapes and dtypes re-inferred for every node and compared with the stored
 * ones; ids topological; attributes and outputs in range. Requires
 * plan->graph. */
braid_status bp_verify(bp_plan *plan);
/* Marks the nodes the outputs need (plan->live) and lists them in a
 * topological order (plan->schedule); dead nodes are dropped. */
braid_status bp_schedule(bp_plan *plan);
/* Gives every scheduled node a device (plan->node_device). For now: cpu.
 * Requires the schedule. */
braid_status bp_place(bp_plan *plan);
/* Gives every scheduled tensor a place (plan->place) and lists the arenas.
 * For now: one buffer per computed tensor; inputs and constants in place.
 * Requires the schedule and devices. */
braid_status bp_memory(bp_plan *plan);
/* The independent checker: every scheduled node's inputs are scheduled
 * earlier, every scheduled tensor has a place on a listed device, no two
 * tensors live at once share bytes, every output is scheduled. Callable
 * after any pass that has produced a schedule. */
braid_status bp_verify_plan(bp_plan *plan);

/* ---- plan helpers (passes/plan.c) ---------------------------------------- */

/* Parses a devices string ("cpu", "cpu,cuda:0", spaces around names
 * allowed) into out (BP_MAX_DEVICES entries). NULL text means detect: cpu
 * plus every CUDA device braid_cuda_device_count() reports. Unknown names,
 * empty entries and repeats are BRAID_ERR_INVALID_ARGUMENT. */
braid_status bp_parse_devices(const char *text, bp_device *out, uint32_t *n);

/* Allocates the per-node arrays of a plan whose graph is set (zeroed). */
braid_status bp_plan_alloc_nodes(bp_plan *plan);

/* Zeroed memory for plan data; NULL (with a message for braid_last_error)
 * when out of memory or when n × size overflows. */
void *bp_calloc(size_t n, size_t size, const char *what);

#endif /* BRAID_PASSES_PASSES_H */
