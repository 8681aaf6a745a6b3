/* passes/memory_strided.c — strided views: slices, permutes and reshapes
 * a matmul reads through leading dimensions and batch strides instead of
 * copies, and a permute a matmul writes its result straight into.
 *
 * Input side: a view op (reshape, slice, permute, broadcast_to) that
 * memory_views.c left computing (its elements are not one contiguous
 * range) becomes a VIEW of the tensor owning the bytes with a strided
 * layout (passes/layout.h) when its chain of view ops is expressible as
 * strides and everything reading it is a matmul that takes that layout
 * as an operand, or another such view. Deciding is a fixpoint: layouts
 * flow forward from the roots, acceptance flows backwards from the
 * readers; a rejected view computes (it owns bytes again), which changes
 * the layouts after it, so the two sweeps repeat until nothing more is
 * rejected (rejections only grow, so at most once per candidate; in
 * practice twice).
 *
 * Output side: a matmul whose only reader is a permute writes its result
 * laid out as the permute's (a VIEW of the permute with the permute's
 * strides, like an input of a concat assembled in place); the permute
 * then does no work. */
#include "passes/layout.h"
#include "passes/memory.h"

#include <stdlib.h>

typedef struct sv_state {
    bp_mem *m;
    uint32_t *slot;  /* per node: candidate index, or BG_NONE */
    uint32_t *node;  /* per candidate: its node */
    uint32_t *root;  /* per candidate: node whose bytes it shows */
    int64_t *off;    /* per candidate: element offset in root */
    bp_layout *lay;  /* per candidate: strides in root */
    bool *dead;      /* per candidate: rejected, computes */
    uint32_t nc;     /* candidates */
} sv_state;

static bool is_view_op(braid_op op) {
    return op == BRAID_OP_RESHAPE || op == BRAID_OP_SLICE ||
           op == BRAID_OP_PERMUTE || op == BRAID_OP_BROADCAST_TO;
}

/* Node x's bytes are executor-owned, not a variable's (whose bytes an
 * assign rewrites during the run). */
static bool plain_bytes(const bp_mem *m, uint32_t x) {
    const bp_plan *p = m->plan;
    while (p->res.info[x].place.storage == BP_STORAGE_VIEW) x = m->base[x];
    return !bg_op_persistent(p->res.graph->nodes[x].op);
}

/* A view op on its input's device that memory_views.c left computing, or
 * made a contiguous view of its input (a link of a chain: a reshape
 * between a slice and a permute). A rejected contiguous view stays one. */
static bool candidate(const bp_mem *m, uint32_t id) {
    const bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    const bp_node_info *in = &p->res.info[id];
    bool computes = !in->noop && in->place.storage == BP_STORAGE_ARENA;
    bool view = in->noop && in->place.storage == BP_STORAGE_VIEW &&
                n->ninputs == 1 && m->base[id] == n->inputs[0];
    if (!is_view_op(n->op) || n->ninputs != 1 || !(computes || view) ||
        m->output[id] || bg_numel(n) == 0)
        return false;
    uint32_t x = n->inputs[0];
    return bp_device_equal(in->device, p->res.info[x].device) &&
           p->res.graph->nodes[x].dtype == n->dtype && plain_bytes(m, x);
}

/* Layouts from the roots, in schedule order (inputs first). */
static void forward(sv_state *sv) {
    const bp_plan *p = sv->m->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        uint32_t c = id < sv->m->hb.n ? sv->slot[id] : BG_NONE;
        if (c == BG_NONE || sv->dead[c]) continue;
        const bg_node *n = &p->res.graph->nodes[id];
        uint32_t x = n->inputs[0], cx = sv->slot[x];
        const bg_node *xn = &p->res.graph->nodes[x];
        int64_t xs[BRAID_MAX_RANK];
        if (cx != BG_NONE && !sv->dead[cx]) {
            sv->root[c] = sv->root[cx];
            sv->off[c] = sv->off[cx];
            for (int a = 0; a < xn->rank; a++) xs[a] = sv->lay[cx].stride[a];
        } else {
            sv->root[c] = x;
            sv->off[c] = 0;
            bp_layout_dense(xn->rank, xn->dims, xs);
        }
        if (!bp_layout_through(n, xn, xs, &sv->off[c], sv->lay[c].stride))
            sv->dead[c] = true;
    }
}

/* Candidate c stays a view: dense, or read only by live candidates and
 * matmuls taking its layout. */
static bool accepted(const sv_state *sv, uint32_t c) {
    const bp_mem *m = sv->m;
    uint32_t id = sv->node[c];
    const bg_node *n = &m->plan->res.graph->nodes[id];
    if (bp_layout_is_dense(n->rank, n->dims, sv->lay[c].stride)) return true;
    for (uint32_t k = m->ustart[id]; k < m->ustart[id + 1]; k++) {
        uint32_t u = m->users[k], cu = sv->slot[u];
        if (cu != BG_NONE && !sv->dead[cu]) continue;
        if (!bp_layout_read_ok(m->plan, u, id, sv->lay[c].stride))
            return false;
    }
    return true;
}

/* Acceptance from the readers, in reverse schedule order; true when a
 * candidate was rejected. */
static bool backward(sv_state *sv) {
    const bp_plan *p = sv->m->plan;
    bool changed = false;
    for (uint32_t i = p->res.nschedule; i > 0; i--) {
        uint32_t id = p->res.schedule[i - 1];
        uint32_t c = id < sv->m->hb.n ? sv->slot[id] : BG_NONE;
        if (c == BG_NONE || sv->dead[c] || accepted(sv, c)) continue;
        sv->dead[c] = true;
        changed = true;
    }
    return changed;
}

/* Appends node id's strides to the plan's layouts; its place names them. */
static braid_status add_layout(bp_plan *p, uint32_t id, const int64_t *s) {
    bp_result *r = &p->res;
    if (!bp_grow((void **)&r->layouts, r->nlayouts, &r->layouts_cap,
                 sizeof *r->layouts, "a strided layout"))
        return BRAID_ERR_OUT_OF_MEMORY;
    bp_layout *l = &r->layouts[r->nlayouts++];
    *l = (bp_layout){.node = id};
    for (int a = 0; a < r->graph->nodes[id].rank; a++)
        l->stride[a] = s[a];
    r->info[id].place.layout = r->nlayouts;
    return BRAID_OK;
}

static braid_status commit(sv_state *sv) {
    bp_mem *m = sv->m;
    bp_plan *p = m->plan;
    for (uint32_t c = 0; c < sv->nc; c++) {
        if (sv->dead[c]) continue;
        uint32_t id = sv->node[c];
        const bg_node *n = &p->res.graph->nodes[id];
        bp_node_info *in = &p->res.info[id];
        in->place.storage = BP_STORAGE_VIEW;
        in->noop = true;
        m->base[id] = sv->root[c];
        m->voff[id] = (uint64_t)sv->off[c] * braid_dtype_size(n->dtype);
        if (!bp_layout_is_dense(n->rank, n->dims, sv->lay[c].stride)) {
            braid_status s = add_layout(p, id, sv->lay[c].stride);
            if (s != BRAID_OK) return s;
        }
    }
    return BRAID_OK;
}

static braid_status input_side(bp_mem *m, uint32_t nc) {
    uint32_t n = m->hb.n;
    sv_state sv = {.m = m, .nc = nc};
    sv.slot = bp_calloc(n, sizeof *sv.slot, "strided views");
    sv.node = bp_calloc(nc, sizeof *sv.node, "strided views");
    sv.root = bp_calloc(nc, sizeof *sv.root, "strided views");
    sv.off = bp_calloc(nc, sizeof *sv.off, "strided views");
    sv.lay = bp_calloc(nc, sizeof *sv.lay, "strided views");
    sv.dead = bp_calloc(nc, sizeof *sv.dead, "strided views");
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (sv.slot && sv.node && sv.root && sv.off && sv.lay && sv.dead) {
        uint32_t k = 0;
        for (uint32_t id = 0; id < n; id++) {
            sv.slot[id] = BG_NONE;
            if (candidate(m, id)) {
                sv.node[k] = id;
                sv.slot[id] = k++;
            }
        }
        do forward(&sv);
        while (backward(&sv));
        s = commit(&sv);
    }
    free(sv.slot);
    free(sv.node);
    free(sv.root);
    free(sv.off);
    free(sv.lay);
    free(sv.dead);
    return s;
}

/* Matmul node id writes its result as permute node q lays it out. */
static braid_status output_side(bp_mem *m, uint32_t id) {
    bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    bp_node_info *in = &p->res.info[id];
    if (n->op != BRAID_OP_MATMUL || in->noop ||
        in->place.storage != BP_STORAGE_ARENA || m->output[id] ||
        bg_numel(n) == 0 || m->ustart[id + 1] - m->ustart[id] != 1)
        return BRAID_OK;
    uint32_t q = m->users[m->ustart[id]];
    const bg_node *qn = &p->res.graph->nodes[q];
    bp_node_info *qi = &p->res.info[q];
    if (qn->op != BRAID_OP_PERMUTE || qn->ninputs != 1 ||
        qn->inputs[0] != id || qi->noop ||
        qi->place.storage != BP_STORAGE_ARENA || qn->dtype != n->dtype ||
        qn->rank != n->rank || !bp_device_equal(qi->device, in->device))
        return BRAID_OK;
    int64_t qs[BRAID_MAX_RANK], s[BRAID_MAX_RANK];
    bp_layout_dense(qn->rank, qn->dims, qs);
    for (int j = 0; j < qn->rank; j++) {
        if (qn->attr.perm[j] >= n->rank) return BRAID_OK;
        s[qn->attr.perm[j]] = qs[j];
    }
    for (int a = 0; a < n->rank; a++)
        if (n->dims[a] == 1) s[a] = 0;
    if (!bp_layout_gemm_ok(n->rank, n->dims, s, true) ||
        bp_layout_is_dense(n->rank, n->dims, s))
        return BRAID_OK;
    in->place.storage = BP_STORAGE_VIEW; /* computes into q's bytes */
    m->base[id] = q;
    m->voff[id] = 0;
    qi->noop = true;
    return add_layout(p, id, s);
}

braid_status bp_mem_strided(bp_mem *m) {
    bp_plan *p = m->plan;
    free(p->res.layouts);
    p->res.layouts = NULL;
    p->res.nlayouts = 0;
    p->res.layouts_cap = 0;
    if (p->in.settings.disabled & BRAID_PASS_STRIDED) return BRAID_OK;
    uint32_t nc = 0;
    for (uint32_t id = 0; id < m->hb.n; id++) nc += candidate(m, id);
    braid_status s = nc > 0 ? input_side(m, nc) : BRAID_OK;
    for (uint32_t i = 0; s == BRAID_OK && i < p->res.nschedule; i++)
        if (p->res.schedule[i] < m->hb.n)
            s = output_side(m, p->res.schedule[i]);
    return s;
}
