/* passes/copies.c — PLACEHOLDER: no copies (everything is on the cpu). */
#include "passes/passes.h"

braid_status bp_copies(bp_plan *plan) {
    (void)plan;
    return BRAID_OK;
}
