/* codegen/aot.c — ahead-of-time kernels (placeholder: being written). */
#include "codegen/codegen.h"

braid_status bc_aot_build(bp_plan *p) {
    (void)p;
    return BRAID_OK;
}
