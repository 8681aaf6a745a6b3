/* runtime/run_check.c — the run check record (codegen/codegen.h): how a
 * kernel claims it and how an executor turns it into the run's error,
 * for the CPU record and the GPUs' records alike. */
#include "graph/index.h"
#include "runtime/runtime.h"

#include <stdio.h>

void br_run_check_record(bc_run_check *rc, uint32_t node, bc_check_kind kind,
                         int64_t a, int64_t b, int64_t c) {
    if (!rc) return;
    uint32_t none = BC_CHECK_NONE;
    /* the first failure claims the record; the executor reads it only
     * after every kernel of the run has finished */
    if (!__atomic_compare_exchange_n(&rc->kind, &none, (uint32_t)kind, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    rc->node = node;
    rc->a = a;
    rc->b = b;
    rc->c = c;
}

braid_status br_run_check_take(const bp_plan *p, bc_run_check *rc) {
    if (!rc || rc->kind == BC_CHECK_NONE) return BRAID_OK;
    bc_run_check r = *rc;
    *rc = (bc_run_check){0};
    const braid_graph *g = p->res.graph;
    const bg_node *n = r.node < g->nnodes ? bg_node_at(g, r.node) : NULL;
    /* a checked cast: the words of its CPU kernel and the reference,
     * which name the node their own way (bg_cast_range_error) */
    if (r.kind == BC_CHECK_CAST && n && bg_node_run_check(g, r.node) &&
        n->op == BRAID_OP_CAST && r.c == (int64_t)n->dtype && r.b >= 0 &&
        r.b < bg_numel(n))
        return bg_cast_range_error(g, r.node, r.b, r.a);
    char why[256];
    if (r.kind == BC_CHECK_INDEX) {
        bg_index_bad bad = {r.a, r.b, r.c};
        bg_index_bad_text(&bad, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "run check %u failed", (unsigned)r.kind);
    }
    return bg_set_last_error(
        BRAID_ERR_INVALID_ARGUMENT, "braid_run: node %u (%s%s%s%s): %s",
        (unsigned)r.node, n ? bg_op(n->op)->name : "?",
        n && n->name ? " '" : "", n && n->name ? n->name : "",
        n && n->name ? "'" : "", why);
}
