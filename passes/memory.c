/* passes/memory.c — PLACEHOLDER: inputs and cpu constants in place, every
 * other tensor its own 64-byte aligned bytes in its device's arena (no
 * reuse yet, so the arena equals the sum of the tensors). */
#include "passes/passes.h"

#include <stdlib.h>

#define ALIGN 64u

static uint32_t arena_of(bp_plan *p, bp_device dev) {
    for (uint32_t a = 0; a < p->narenas; a++)
        if (p->arenas[a].kind == BP_ARENA_DEVICE &&
            bp_device_equal(p->arenas[a].device, dev))
            return a;
    p->arenas[p->narenas] = (bp_arena){BP_ARENA_DEVICE, dev, 0, 0};
    return p->narenas++;
}

braid_status bp_memory(bp_plan *plan) {
    const braid_graph *g = plan->graph;
    free(plan->arenas);
    plan->narenas = 0;
    plan->arenas = bp_calloc(plan->ndevices, sizeof *plan->arenas, "arenas");
    if (!plan->arenas) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < plan->nschedule; i++) {
        uint32_t id = plan->schedule[i];
        const bg_node *n = &g->nodes[id];
        bp_tensor_place *pl = &plan->info[id].place;
        bp_device dev = plan->info[id].device;
        *pl = (bp_tensor_place){0};
        pl->bytes = bg_nbytes(n);
        if (n->op == BRAID_OP_INPUT) {
            pl->storage = BP_STORAGE_INPUT;
        } else if (n->op == BRAID_OP_CONSTANT && dev.kind == BP_DEVICE_CPU) {
            pl->storage = BP_STORAGE_CONSTANT;
        } else {
            uint32_t a = arena_of(plan, dev);
            bp_arena *ar = &plan->arenas[a];
            pl->storage = BP_STORAGE_ARENA;
            pl->arena = a;
            pl->offset = ar->bytes;
            ar->bytes += (pl->bytes + ALIGN - 1) / ALIGN * ALIGN;
            ar->lower_bound = ar->bytes;
        }
    }
    return BRAID_OK;
}
