/* passes/place.c — gives each scheduled node a device.
 *
 * No backend but the CPU executes yet, so every node runs on the cpu even
 * when the plan lists CUDA devices or a node carries a "cuda:N" hint; the
 * device list stays in the plan for the placement pass that will honour
 * hints and a cost model. */
#include "passes/passes.h"

braid_status bp_place(bp_plan *plan) {
    for (uint32_t i = 0; i < plan->nnodes; i++)
        plan->node_device[i] = (bp_device){BP_DEVICE_CPU, 0};
    return BRAID_OK;
}
