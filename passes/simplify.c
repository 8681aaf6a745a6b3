/* passes/simplify.c — PLACEHOLDER: dead-node removal only. */
#include "passes/passes.h"

braid_status bp_simplify(bp_plan *plan) { return bp_plan_compact(plan); }
