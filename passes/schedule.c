/* passes/schedule.c — PLACEHOLDER: id order (topological after compaction). */
#include "passes/passes.h"

#include <stdlib.h>

braid_status bp_schedule(bp_plan *plan) {
    uint32_t n = plan->graph->nnodes;
    free(plan->schedule);
    plan->schedule = bp_calloc(n ? n : 1, sizeof *plan->schedule, "schedule");
    if (!plan->schedule) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t id = 0; id < n; id++) {
        plan->schedule[id] = id;
        plan->info[id].order = id;
    }
    plan->nschedule = n;
    return BRAID_OK;
}
