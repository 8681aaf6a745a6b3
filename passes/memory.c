/* passes/memory.c — where every scheduled tensor's bytes live.
 *
 * For now each computed tensor gets a buffer of its own (arena i, offset 0);
 * inputs are read from the caller's memory and constants from the plan's
 * graph, in place. Offsets into shared arenas come with liveness-based
 * reuse later; bp_verify_plan already checks overlaps by lifetime. */
#include "passes/passes.h"

#include <stdlib.h>

braid_status bp_memory(bp_plan *plan) {
    const braid_graph *g = plan->graph;
    uint32_t nbuf = 0;
    for (uint32_t i = 0; i < plan->nschedule; i++) {
        braid_op op = g->nodes[plan->schedule[i]].op;
        nbuf += op != BRAID_OP_INPUT && op != BRAID_OP_CONSTANT;
    }
    free(plan->arenas);
    plan->narenas = 0;
    plan->arenas = bp_calloc(nbuf, sizeof *plan->arenas, "arenas");
    if (!plan->arenas) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < plan->nnodes; i++)
        plan->place[i] = (bp_tensor_place){0};
    for (uint32_t i = 0; i < plan->nschedule; i++) {
        uint32_t id = plan->schedule[i];
        const bg_node *n = &g->nodes[id];
        bp_tensor_place *pl = &plan->place[id];
        pl->device = plan->node_device[id];
        pl->bytes = bg_nbytes(n);
        if (n->op == BRAID_OP_INPUT) {
            pl->storage = BP_STORAGE_INPUT;
        } else if (n->op == BRAID_OP_CONSTANT) {
            pl->storage = BP_STORAGE_CONSTANT;
        } else {
            pl->storage = BP_STORAGE_BUFFER;
            pl->arena = plan->narenas;
            pl->offset = 0;
            plan->arenas[plan->narenas++] =
                (bp_arena){pl->device, pl->bytes, id};
        }
    }
    return BRAID_OK;
}
