/* passes/collectives.h — collective groups in the compiler (prefix
 * bp_coll_); passes/collectives.c explains the rules. */
#ifndef BRAID_PASSES_COLLECTIVES_H
#define BRAID_PASSES_COLLECTIVES_H

#include "passes/passes.h"

/* Liveness: pushes onto stack (room for g->nnodes more entries) every
 * collective not yet live that must be: the other members of a group with
 * a live member, and every rank-form member. Returns how many. */
uint32_t bp_coll_revive(const braid_graph *g, const bool *live,
                        uint32_t *stack);

/* Placement of groups, after every node has info.device: lowers groups on
 * k distinct GPUs to the rank form, moves the others to the cpu, refuses
 * hints that cannot be honoured and rank-form members off the GPUs. */
braid_status bp_coll_place(bp_plan *plan);

/* Reorders plan->schedule (and info.order) so that each group's members
 * are consecutive, in rank order, and groups come in increasing group id.
 * Nothing to do without collectives. */
braid_status bp_coll_schedule(bp_plan *plan);

#endif /* BRAID_PASSES_COLLECTIVES_H */
