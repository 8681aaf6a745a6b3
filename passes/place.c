/* passes/place.c — PLACEHOLDER until the placement pass lands: every node on
 * the cpu. */
#include "passes/passes.h"

braid_status bp_place(bp_plan *plan) {
    for (uint32_t i = 0; i < plan->ninfo; i++)
        plan->info[i].device = (bp_device){BP_DEVICE_CPU, 0};
    return BRAID_OK;
}
