/* passes/memory_state.c — an assign's value computed in its variable's
 * bytes (docs/training.md).
 *
 * A variable's bytes are its own for the executor's life (the group is
 * whole_run; nothing else is placed there). By default its assign copies
 * the value in. When the value x is an elementwise kernel (a fused
 * elementwise program, or one elementwise op other than a same-dtype
 * cast) on the variable's device, the copy is not needed: x writes its
 * output straight over the variable (a VIEW that still runs, like a
 * concat's inputs assembled in place) and the assign does no work. That is
 * legal when
 *   - every other node reading the variable's bytes (directly or through
 *     views) happens-before x on every executor (passes/state.c makes that
 *     so by giving x the ordering edges), and
 *   - x reads those bytes only as the variable itself, with x's own shape:
 *     an elementwise kernel reads element i of each same-shaped input
 *     before writing element i and no other element later, so reading and
 *     writing the same bytes is safe (the in-place rule of memory_views.c);
 *   - x has its own bytes (not a view, not an output) of the same size.
 * The plan verifier checks the result (verify_plan_overlap.c). */
#include "passes/memory.h"

#include <string.h>

/* a completes before b starts, on every executor (queue order or events). */
static bool before(const bp_mem_hb *hb, uint32_t a, uint32_t b) {
    if (hb->pos[a] == UINT32_MAX || hb->pos[b] == UINT32_MAX || a == b)
        return false;
    if (hb->queue[a] == hb->queue[b]) return hb->qpos[a] < hb->qpos[b];
    return (int32_t)hb->qpos[a] <=
           hb->clock[(size_t)b * hb->nq + hb->queue[a]];
}

/* The node owning x's bytes so far (views followed). */
static uint32_t owner(const bp_mem *m, uint32_t x) {
    const bp_plan *p = m->plan;
    while (p->res.info[x].place.storage == BP_STORAGE_VIEW &&
           m->base[x] != BG_NONE)
        x = m->base[x];
    return x;
}

/* Kernel x may write over an input it reads at its own index. */
static bool elementwise_kernel(const bp_plan *p, uint32_t x) {
    const bg_node *n = &p->res.graph->nodes[x];
    if (n->op == BRAID_OP_CAST)
        return p->res.graph->nodes[n->inputs[0]].dtype != n->dtype;
    if (bg_op(n->op)->kind == BRAID_KIND_ELEMENTWISE) return true;
    uint32_t pi = p->res.info[x].program;
    return n->op == BRAID_OP_FUSED && pi < p->res.nprograms &&
           p->res.programs[pi].kind == BP_PROGRAM_ELEMENTWISE;
}

/* Every computing reader of v's bytes other than x and a happens-before
 * x; x reads them only as v itself, shaped like x. */
static bool readers_done(const bp_mem *m, uint32_t v, uint32_t x,
                         uint32_t a) {
    const bp_plan *p = m->plan;
    const bg_node *xn = &p->res.graph->nodes[x], *vn = &p->res.graph->nodes[v];
    for (uint32_t k = 0; k < xn->ninputs; k++) {
        uint32_t in = xn->inputs[k];
        if (owner(m, in) == v &&
            (in != v || vn->rank != xn->rank ||
             memcmp(vn->dims, xn->dims, sizeof vn->dims) != 0))
            return false;
    }
    for (uint32_t r = 0; r < m->hb.n; r++) {
        if (r == x || r == a || p->res.info[r].noop) continue;
        const bg_node *rn = &p->res.graph->nodes[r];
        for (uint32_t k = 0; k < rn->ninputs; k++)
            if (owner(m, rn->inputs[k]) == v && !before(&m->hb, r, x))
                return false;
    }
    return true;
}

static void assign_in_place(bp_mem *m, uint32_t a) {
    bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[a];
    uint32_t v = n->inputs[0], x = n->inputs[1];
    bp_node_info *xi = &p->res.info[x];
    if (xi->place.storage != BP_STORAGE_ARENA || xi->noop || m->output[x] ||
        bg_nbytes(&p->res.graph->nodes[x]) != bg_nbytes(n) ||
        !bp_device_equal(xi->device, p->res.info[v].device) ||
        !elementwise_kernel(p, x) || !readers_done(m, v, x, a))
        return;
    xi->place.storage = BP_STORAGE_VIEW; /* computes into v's bytes */
    m->base[x] = v;
    m->voff[x] = 0;
    p->res.info[a].noop = true;          /* nothing left to copy */
}

void bp_mem_assigns(bp_mem *m) {
    const bp_plan *p = m->plan;
    for (uint32_t id = 0; id < m->hb.n; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_ASSIGN &&
            p->res.info[id].place.storage == BP_STORAGE_VIEW)
            assign_in_place(m, id);
}
