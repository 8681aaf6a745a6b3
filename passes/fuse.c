/* passes/fuse.c — PLACEHOLDER: no fusion. */
#include "passes/passes.h"

braid_status bp_fuse(bp_plan *plan) {
    (void)plan;
    return BRAID_OK;
}
