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

#include <stdlib.h>
#include <string.h>

/* a completes before b starts, on every executor (queue order or events). */
static bool before(const bp_mem_hb *hb, uint32_t a, uint32_t b) {
    if (hb->pos[a] == UINT32_MAX || hb->pos[b] == UINT32_MAX || a == b)
        return false;
    if (hb->queue[a] == hb->queue[b]) return hb->qpos[a] < hb->qpos[b];
    return (int32_t)hb->qpos[a] <= hb->clock[(size_t)b * hb->nq + hb->queue[a]];
}

/* The node owning x's bytes so far (views followed). */
static uint32_t owner(const bp_mem *m, uint32_t x) {
    const bp_plan *p = m->plan;
    while (p->res.info[x].place.storage == BP_STORAGE_VIEW &&
           m->base[x] != BG_NONE)
        x = m->base[x];
    return x;
}

/* x reads v's bytes only as v itself, shaped like x. */
static bool reads_in_place(const bp_mem *m, uint32_t v, uint32_t x) {
    const bp_plan *p = m->plan;
    const bg_node *xn = &p->res.graph->nodes[x], *vn = &p->res.graph->nodes[v];
    for (uint32_t k = 0; k < xn->ninputs; k++) {
        uint32_t in = xn->inputs[k];
        if (owner(m, in) == v &&
            (in != v || vn->rank != xn->rank ||
             memcmp(vn->dims, xn->dims, sizeof vn->dims) != 0))
            return false;
    }
    return true;
}

/* Readers of each variable's bytes, one sweep: rstart[v] .. rstart[v + 1]
 * in reader (a node may appear once per input reading them). */
typedef struct st_readers {
    uint32_t *rstart; /* n + 1 */
    uint32_t *reader;
} st_readers;

static bool list_readers(const bp_mem *m, st_readers *r) {
    const bp_plan *p = m->plan;
    uint32_t n = m->hb.n;
    size_t e = 0;
    r->rstart = calloc((size_t)n + 1, sizeof *r->rstart);
    if (!r->rstart) return false;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t u = 0; u < n; u++) {
            if (p->res.info[u].noop) continue;
            const bg_node *un = &p->res.graph->nodes[u];
            for (uint32_t k = 0; k < un->ninputs; k++) {
                uint32_t v = owner(m, un->inputs[k]);
                if (p->res.graph->nodes[v].op != BRAID_OP_VARIABLE) continue;
                if (pass == 0)
                    r->rstart[v + 1]++, e++;
                else
                    r->reader[r->rstart[v]++] = u;
            }
        }
        if (pass == 0) {
            for (uint32_t v = 0; v < n; v++)
                r->rstart[v + 1] += r->rstart[v];
            if (!(r->reader = malloc((e ? e : 1) * sizeof *r->reader)))
                return false;
        } else { /* the fill moved each start to the next one's */
            for (uint32_t v = n; v > 0; v--)
                r->rstart[v] = r->rstart[v - 1];
            r->rstart[0] = 0;
        }
    }
    return true;
}

/* Every computing reader of v's bytes other than x and a happens-before
 * x. */
static bool readers_done(const bp_mem *m, const st_readers *r, uint32_t v,
                         uint32_t x, uint32_t a) {
    for (uint32_t i = r->rstart[v]; i < r->rstart[v + 1]; i++) {
        uint32_t u = r->reader[i];
        if (u != x && u != a && !before(&m->hb, u, x)) return false;
    }
    return true;
}

static void assign_in_place(bp_mem *m, const st_readers *r, uint32_t a) {
    bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[a];
    uint32_t v = n->inputs[0], x = n->inputs[1];
    bp_node_info *xi = &p->res.info[x];
    if (p->res.info[a].noop || /* stored by x's program (memory_views.c) */
        xi->place.storage != BP_STORAGE_ARENA || xi->noop || m->output[x] ||
        bg_nbytes(&p->res.graph->nodes[x]) != bg_nbytes(n) ||
        !bp_device_equal(xi->device, p->res.info[v].device) ||
        !bp_mem_kernel_allows_alias(p, x) || !reads_in_place(m, v, x) ||
        !readers_done(m, r, v, x, a))
        return;
    xi->place.storage = BP_STORAGE_VIEW; /* computes into v's bytes */
    m->base[x] = v;
    m->voff[x] = 0;
    p->res.info[a].noop = true; /* nothing left to copy */
}

braid_status bp_mem_assigns(bp_mem *m) {
    const bp_plan *p = m->plan;
    if (!bg_has_assign(p->res.graph)) return BRAID_OK;
    st_readers r = {0};
    /* the readers are listed before any value becomes a view of its
     * variable: they are the readers of the old values */
    if (!list_readers(m, &r)) {
        free(r.rstart);
        free(r.reader);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "memory: out of memory");
    }
    for (uint32_t id = 0; id < m->hb.n; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_ASSIGN &&
            p->res.info[id].place.storage == BP_STORAGE_VIEW)
            assign_in_place(m, &r, id);
    free(r.rstart);
    free(r.reader);
    return BRAID_OK;
}
