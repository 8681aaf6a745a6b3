/* passes/chunk.c — PLACEHOLDER: no chunking. */
#include "passes/passes.h"

braid_status bp_chunk(bp_plan *plan) {
    (void)plan;
    return BRAID_OK;
}
