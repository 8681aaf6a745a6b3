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

/* "its gather (node 3 'emb' of the graph): " for GATHER instruction i of
 * fused node id's program into buf; its length. */
static int fused_gather(const bp_plan *p, uint32_t id, uint32_t i, char *buf,
                        size_t size) {
    uint32_t pi = id < p->res.ninfo ? p->res.info[id].program : BG_NONE;
    const bp_program *pr = pi < p->res.nprograms ? &p->res.programs[pi] : NULL;
    uint32_t src = pr && i < pr->ninstr ? pr->instr[i].source : BG_NONE;
    const braid_graph *ug = p->prov.source;
    const char *name = ug && src < ug->nnodes ? ug->nodes[src].name : NULL;
    int n = src == BG_NONE
                ? snprintf(buf, size, "its gather: ")
                : snprintf(buf, size, "its gather (node %u%s%s%s of the "
                                      "graph): ",
                           (unsigned)src, name ? " '" : "", name ? name : "",
                           name ? "'" : "");
    return n < 0 ? 0 : n >= (int)size ? (int)size - 1 : n;
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
    char why[320];
    if ((r.kind & 0xFFFFu) == BC_CHECK_INDEX) {
        bg_index_bad bad = {r.a, r.b, r.c};
        size_t at = 0;
        if (r.kind >> 16) /* a gather inside a fused node (BC_CHECK_INDEX_AT) */
            at = (size_t)fused_gather(p, r.node, (r.kind >> 16) - 1, why,
                                      sizeof why);
        bg_index_bad_text(&bad, why + at, sizeof why - at);
    } else {
        snprintf(why, sizeof why, "run check %u failed", (unsigned)r.kind);
    }
    return bg_set_last_error(
        BRAID_ERR_INVALID_ARGUMENT, "braid_run: node %u (%s%s%s%s): %s",
        (unsigned)r.node, n ? bg_op(n->op)->name : "?",
        n && n->name ? " '" : "", n && n->name ? n->name : "",
        n && n->name ? "'" : "", why);
}
