/* passes/verify_plan_layout.c — strided views (docs/memory.md, "Strided
 * views"): the layout table names exactly the nodes whose places point at
 * it; a skipped view op's strides and offset follow from its input's by
 * the op's meaning (passes/layout.h, the rules' one owner); its elements
 * lie inside its root's bytes; every node computing from it is a matmul
 * that reads it as an operand BLAS takes; and a matmul writing through a
 * layout writes exactly the bytes of the permute reading it, which does
 * no work. */
#include "passes/layout.h"
#include "passes/verify_plan.h"

static const char *name_of(const bp_plan *p, uint32_t id) {
    return bg_op(p->res.graph->nodes[id].op)->name;
}

/* Strides along the axes longer than 1 agree. */
static bool same_strides(const bg_node *n, const int64_t *a, const int64_t *b) {
    for (int d = 0; d < n->rank; d++)
        if (n->dims[d] > 1 && a[d] != b[d]) return false;
    return true;
}

/* Node id (a view op its input's bytes show) at the offset and strides
 * its op gives: true when it is, false when not (with *why set). */
static bool derives(const vp_state *st, uint32_t id, const char **why) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    uint32_t x = n->inputs[0];
    const bg_node *xn = &p->res.graph->nodes[x];
    uint64_t es = braid_dtype_size(n->dtype);
    int64_t xs[BRAID_MAX_RANK], s[BRAID_MAX_RANK], want[BRAID_MAX_RANK];
    *why = "its input's bytes are not those of its root";
    if (st->root[id] != st->root[x] || st->roff[x] % es != 0) return false;
    bp_layout_strides(p, x, xs);
    int64_t off = (int64_t)(st->roff[x] / es);
    *why = "its op gives no strided layout of its input";
    if (!bp_layout_through(n, xn, xs, &off, want)) return false;
    bp_layout_strides(p, id, s);
    *why = "its offset or strides are not what its op gives";
    return (uint64_t)off * es == st->roff[id] && same_strides(n, s, want);
}

/* Matmul w computes into the bytes of noop permute q laid out as q's
 * elements (that q is its only reader: vp_check_layouts). */
static bool writes_permute(const vp_state *st, uint32_t w, uint32_t q) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[w], *qn = &p->res.graph->nodes[q];
    const bp_tensor_place *pl = &p->res.info[w].place;
    const int64_t *ws = bp_layout_of(p, w);
    if (n->op != BRAID_OP_MATMUL || p->res.info[w].noop || !ws ||
        pl->base != q || pl->offset != 0 || qn->op != BRAID_OP_PERMUTE ||
        !p->res.info[q].noop || qn->ninputs != 1 || qn->inputs[0] != w ||
        p->res.info[q].place.storage != BP_STORAGE_ARENA ||
        qn->rank != n->rank || qn->dtype != n->dtype ||
        !bp_layout_gemm_ok(n->rank, n->dims, ws, true))
        return false;
    int64_t qs[BRAID_MAX_RANK], want[BRAID_MAX_RANK];
    bp_layout_dense(qn->rank, qn->dims, qs);
    for (int j = 0; j < qn->rank; j++) {
        if (qn->attr.perm[j] >= n->rank) return false;
        want[qn->attr.perm[j]] = qs[j];
    }
    return same_strides(n, ws, want);
}

bool vp_writes_permute(const vp_state *st, uint32_t id) {
    return writes_permute(st, id, st->plan->res.info[id].place.base);
}

braid_status vp_check_strided_noop(const vp_state *st, uint32_t id,
                                   bool *handled) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    const bp_tensor_place *pl = &p->res.info[id].place;
    *handled = false;
    if (n->op == BRAID_OP_PERMUTE && pl->storage == BP_STORAGE_ARENA &&
        n->ninputs == 1) {
        *handled = true;
        if (writes_permute(st, n->inputs[0], id)) return BRAID_OK;
        return vp_fail("place: node %u (permute) is skipped but node %u "
                       "does not compute its elements into its bytes",
                       id, n->inputs[0]);
    }
    if (pl->storage != BP_STORAGE_VIEW || n->ninputs != 1 ||
        (!bp_layout_of(p, id) && !bp_layout_of(p, n->inputs[0])))
        return BRAID_OK;
    *handled = true;
    const char *why;
    if (derives(st, id, &why)) return BRAID_OK;
    return vp_fail("place: node %u (%s) is a strided view of node %u but %s",
                   id, name_of(p, id), st->root[id], why);
}

/* The table and the places name each other. */
static braid_status check_table(const vp_state *st) {
    const bp_plan *p = st->plan;
    for (uint32_t k = 0; k < p->res.nlayouts; k++) {
        uint32_t id = p->res.layouts[k].node;
        if (id >= st->n || p->res.info[id].place.storage != BP_STORAGE_VIEW ||
            p->res.info[id].place.layout != k + 1)
            return vp_fail("layout: entry %u names node %u, whose place "
                           "does not name it",
                           k, id);
    }
    for (uint32_t id = 0; id < st->n; id++) {
        const bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->layout == 0) continue;
        if (pl->storage != BP_STORAGE_VIEW || pl->layout > p->res.nlayouts)
            return vp_fail("layout: node %u names layout %u (%u in the plan, "
                           "views only)",
                           id, pl->layout, p->res.nlayouts);
    }
    return BRAID_OK;
}

/* A strided node's elements lie inside its root's bytes. */
static braid_status check_extent(const vp_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    const int64_t *s = bp_layout_of(p, id);
    uint64_t es = braid_dtype_size(n->dtype);
    uint64_t rb = p->res.info[st->root[id]].place.bytes;
    /* elements from the view's first to the root's end, without overflow */
    uint64_t room = st->roff[id] <= rb ? (rb - st->roff[id]) / es : 0;
    uint64_t last = 0;
    bool over = st->roff[id] > rb || (bg_numel(n) > 0 && room == 0);
    for (int d = 0; d < n->rank; d++) {
        if (s[d] < 0)
            return vp_fail("layout: node %u has stride %lld on axis %d", id,
                           (long long)s[d], d);
        if (n->dims[d] <= 1 || s[d] == 0 || over) continue;
        uint64_t k = (uint64_t)(n->dims[d] - 1), sd = (uint64_t)s[d];
        if (k > (room - 1 - last) / sd)
            over = true; /* last + k·sd would reach past room - 1 */
        else
            last += k * sd;
    }
    if (bg_numel(n) > 0 && over)
        return vp_fail("layout: node %u's elements (byte %llu, last element "
                       "%llu) run past its root node %u (%llu bytes)",
                       id, (unsigned long long)st->roff[id],
                       (unsigned long long)last, st->root[id],
                       (unsigned long long)rb);
    return BRAID_OK;
}

braid_status vp_check_layouts(const vp_state *st) {
    const bp_plan *p = st->plan;
    braid_status s = check_table(st);
    for (uint32_t id = 0; s == BRAID_OK && id < st->n; id++)
        if (bp_layout_of(p, id)) s = check_extent(st, id);
    for (uint32_t u = 0; s == BRAID_OK && u < st->n; u++) {
        const bg_node *n = &p->res.graph->nodes[u];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t x = n->inputs[k];
            const int64_t *xs = bp_layout_of(p, x);
            if (xs && !p->res.info[x].noop && p->res.info[x].place.base != u)
                return vp_fail("layout: node %u reads node %u, which computes "
                               "into another node's bytes",
                               u, x);
            if (!xs || !p->res.info[x].noop || p->res.info[u].noop ||
                bp_layout_read_ok(p, u, x, xs))
                continue; /* a skipped reader checks its own input */
            return vp_fail("layout: node %u (%s) reads node %u, a strided "
                           "view, but is no matmul taking it as an operand",
                           u, name_of(p, u), x);
        }
    }
    return s;
}
