/* passes/schedule.c — liveness from the outputs and a topological order.
 *
 * Node ids are already topological (inputs have smaller ids), so the live
 * nodes in ascending id order are a valid schedule; dead nodes (not needed
 * by any output) are dropped and never run. */
#include "passes/passes.h"

braid_status bp_schedule(bp_plan *plan) {
    const braid_graph *g = plan->graph;
    for (uint32_t i = 0; i < g->nnodes; i++)
        plan->live[i] = false;
    for (uint32_t i = 0; i < g->noutputs; i++)
        plan->live[g->outputs[i].node] = true;
    /* Walking ids downwards visits every user before what it reads. */
    for (uint32_t id = g->nnodes; id-- > 0;) {
        if (!plan->live[id]) continue;
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++)
            plan->live[n->inputs[k]] = true;
    }
    plan->nschedule = 0;
    for (uint32_t id = 0; id < g->nnodes; id++)
        if (plan->live[id]) plan->schedule[plan->nschedule++] = id;
    return BRAID_OK;
}
