/* passes/memory_views.c — which tensors own bytes, which share them.
 *
 * Inputs are read where the caller binds them, cpu constants where the
 * graph holds them. A node whose output is a contiguous byte range of its
 * input's bytes becomes a VIEW and does no work (info.noop): reshape, a
 * slice selecting a contiguous range, a permute that moves only size-1
 * axes, a broadcast_to that adds only size-1 axes. A concat along an axis
 * with only size-1 axes before it, whose inputs are computed on its device
 * and read by nothing else, is assembled in place: each input is computed
 * straight into the concat's bytes (a VIEW that still runs) and the concat
 * itself does no work. Views never cross devices, and an output is never
 * a view of a caller's input. After the decisions
 * every view's base is resolved to the tensor that owns the bytes (a
 * root), so executors can resolve views in any order.
 *
 * In place (bp_mem_in_place): an elementwise node may write its output
 * over an input of the same size whose every other access happens-before
 * it. */
#include "passes/memory.h"

#include <stdlib.h>

/* Byte offset of a slice's first element when its elements are one
 * contiguous range of the input's bytes, else -1. */
static int64_t slice_offset(const bg_node *n, const bg_node *x) {
    if (n->rank != x->rank) return -1;
    if (bg_numel(n) == 0) return 0;
    int r = n->rank, k = 0;
    for (int a = 0; a < r; a++)
        if (!bg_slice_fits(x->dims[a], n->attr.start[a], n->attr.step[a],
                           n->dims[a]))
            return -1; /* does not fit: leave it to the kernel's checks */
    while (k < r && n->dims[k] == 1) k++;
    if (k < r && n->attr.step[k] != 1) return -1;
    /* a full axis taken backwards (step -1) is no view */
    for (int a = k + 1; a < r; a++)
        if (n->dims[a] != x->dims[a] || (n->dims[a] > 1 && n->attr.step[a] != 1))
            return -1;
    int64_t off = 0, stride = (int64_t)braid_dtype_size(x->dtype);
    for (int a = r - 1; a >= 0; a--) {
        off += n->attr.start[a] * stride;
        stride *= x->dims[a];
    }
    return off;
}

/* A permute that keeps every axis longer than 1 in its order. */
static bool permute_keeps_layout(const bg_node *n, const bg_node *x) {
    int last = -1;
    for (int i = 0; i < n->rank; i++) {
        int a = n->attr.perm[i];
        if (a >= x->rank) return false;
        if (x->dims[a] == 1) continue;
        if (a < last) return false;
        last = a;
    }
    return n->rank == x->rank;
}

/* Offset of node id's output within its input's bytes when it is a pure
 * view, else -1. */
static int64_t view_offset(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    if (n->ninputs != 1 || n->inputs[0] >= p->res.graph->nnodes) return -1;
    const bg_node *x = &p->res.graph->nodes[n->inputs[0]];
    if (!bp_device_equal(p->res.info[id].device,
                         p->res.info[n->inputs[0]].device) ||
        bg_nbytes(n) > bg_nbytes(x) || n->dtype != x->dtype)
        return -1;
    switch (n->op) {
    case BRAID_OP_RESHAPE:
        return bg_nbytes(n) == bg_nbytes(x) ? 0 : -1;
    case BRAID_OP_SLICE:
        return slice_offset(n, x);
    case BRAID_OP_PERMUTE:
        return permute_keeps_layout(n, x) ? 0 : -1;
    case BRAID_OP_BROADCAST_TO:
        return bg_numel(n) == bg_numel(x) ? 0 : -1;
    default:
        return -1;
    }
}

/* Node x's bytes are a caller's input (x is one, or a view of one). */
static bool reaches_input(const bp_mem *m, uint32_t x) {
    const bp_plan *p = m->plan;
    while (p->res.info[x].place.storage == BP_STORAGE_VIEW)
        x = m->base[x];
    return p->res.info[x].place.storage == BP_STORAGE_INPUT;
}

/* Storage of one node before concats: input, constant, view or buffer.
 * An output is never a view of a caller's input: the executor copies
 * outputs out after the run, and a caller may bind an output over an input
 * buffer, so its bytes must not be the input's. */
static void classify(bp_mem *m, uint32_t id) {
    const bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    bp_node_info *in = &p->res.info[id];
    in->noop = false;
    in->place = (bp_tensor_place){.storage = BP_STORAGE_ARENA,
                                  .bytes = bg_nbytes(n)};
    m->base[id] = BG_NONE;
    if (n->op == BRAID_OP_INPUT) {
        in->place.storage = BP_STORAGE_INPUT;
        in->noop = true;
    } else if (n->op == BRAID_OP_CONSTANT) {
        /* GPU constants stay ARENA: uploaded once at executor creation */
        if (in->device.kind == BP_DEVICE_CPU)
            in->place.storage = BP_STORAGE_CONSTANT;
        in->noop = true;
    } else if (n->op == BRAID_OP_VARIABLE) {
        /* executor-owned bytes, initialised at creation, never reused */
        in->noop = true;
    } else if (n->op == BRAID_OP_ASSIGN) {
        /* writes its variable's bytes (ordered by passes/state.c); nothing
         * to do when its value's program stored them already */
        in->place.storage = BP_STORAGE_VIEW;
        m->base[id] = n->inputs[0];
        m->voff[id] = 0;
        in->noop = bp_assign_stored(p, id);
    } else {
        int64_t off = view_offset(p, id);
        if (off < 0 || (m->output[id] && reaches_input(m, n->inputs[0])))
            return;
        in->place.storage = BP_STORAGE_VIEW;
        in->noop = true;
        m->base[id] = n->inputs[0];
        m->voff[id] = (uint64_t)off;
    }
}

/* Input x of concat c can be computed straight into c's bytes. */
static bool concat_input_ok(const bp_mem *m, uint32_t c, uint32_t k) {
    const bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[c];
    uint32_t x = n->inputs[k];
    const bg_node *xn = &p->res.graph->nodes[x];
    const bp_node_info *xi = &p->res.info[x];
    for (uint32_t j = 0; j < n->ninputs; j++)
        if (j != k && n->inputs[j] == x) return false;
    bool noop_concat = xn->op == BRAID_OP_CONCAT && xi->noop;
    return m->hb.pos[x] != UINT32_MAX &&
           bp_device_equal(xi->device, p->res.info[c].device) &&
           xi->place.storage == BP_STORAGE_ARENA &&
           (!xi->noop || noop_concat) && !m->output[x] &&
           m->ustart[x + 1] - m->ustart[x] == 1 && xn->dtype == n->dtype &&
           xn->rank == n->rank;
}

/* Makes concat c a noop whose inputs write into its bytes, when legal. */
static void concat_in_place(bp_mem *m, uint32_t c) {
    bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[c];
    int axis = n->attr.axis < 0 ? n->attr.axis + n->rank : n->attr.axis;
    if (p->res.info[c].place.storage != BP_STORAGE_ARENA || axis < 0 ||
        axis >= n->rank || n->ninputs == 0 || bg_numel(n) == 0)
        return;
    for (int a = 0; a < axis; a++)
        if (n->dims[a] != 1) return;
    uint64_t total = 0;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        if (!concat_input_ok(m, c, k)) return;
        total += bg_nbytes(&p->res.graph->nodes[n->inputs[k]]);
    }
    if (total != bg_nbytes(n)) return;
    uint64_t off = 0;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t x = n->inputs[k];
        p->res.info[x].place.storage = BP_STORAGE_VIEW;
        m->base[x] = c;
        m->voff[x] = off;
        off += p->res.info[x].place.bytes;
    }
    p->res.info[c].noop = true;
}

/* Rewrites every view's base to the tensor owning the bytes. Bases form
 * chains without cycles (a pure view's base precedes it in id order; a
 * concat input's base is a later concat), so each walk ends. */
static void resolve_roots(bp_mem *m) {
    const bp_plan *p = m->plan;
    for (uint32_t id = 0; id < m->hb.n; id++) {
        if (p->res.info[id].place.storage != BP_STORAGE_VIEW) continue;
        uint32_t r = m->base[id];
        uint64_t off = m->voff[id];
        while (p->res.info[r].place.storage == BP_STORAGE_VIEW) {
            off += m->voff[r];
            r = m->base[r];
        }
        m->base[id] = r;
        m->voff[id] = off;
    }
}

braid_status bp_mem_views(bp_mem *m) {
    bp_plan *p = m->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        if (p->res.schedule[i] < m->hb.n) classify(m, p->res.schedule[i]);
    braid_status s = bp_mem_strided(m);
    if (s != BRAID_OK) return s;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id < m->hb.n && p->res.graph->nodes[id].op == BRAID_OP_CONCAT)
            concat_in_place(m, id);
    }
    s = bp_mem_assigns(m);
    resolve_roots(m);
    return s;
}

/* ---- in place ------------------------------------------------------------ */

uint32_t bp_mem_find(bp_mem *m, uint32_t id) {
    while (m->parent[id] != id) {
        m->parent[id] = m->parent[m->parent[id]];
        id = m->parent[id];
    }
    return id;
}

/* Node y's kernel stays correct when its output is exactly an input's
 * bytes: it reads element i of every same-shaped input before writing
 * element i, and no other element later. Casts to the same dtype are
 * memcpy (overlap is undefined there). */
bool bp_mem_kernel_allows_alias(const bp_plan *p, uint32_t y) {
    const bg_node *n = &p->res.graph->nodes[y];
    if (n->op == BRAID_OP_CAST)
        return p->res.graph->nodes[n->inputs[0]].dtype != n->dtype;
    if (bg_op(n->op)->kind == BRAID_KIND_ELEMENTWISE) return true;
    if (n->op != BRAID_OP_FUSED || p->res.info[y].program >= p->res.nprograms)
        return false;
    /* a gather reads its data at other positions than the one it writes */
    const bp_program *pr = &p->res.programs[p->res.info[y].program];
    return pr->kind == BP_PROGRAM_ELEMENTWISE && !bp_program_has_gather(pr);
}

/* The root whose bytes node id uses, or BG_NONE (caller or graph memory). */
static uint32_t root_of(const bp_mem *m, uint32_t id) {
    const bp_tensor_place *pl = &m->plan->res.info[id].place;
    uint32_t r = pl->storage == BP_STORAGE_VIEW ? m->base[id] : id;
    return m->plan->res.info[r].place.storage == BP_STORAGE_ARENA ? r : BG_NONE;
}

/* Every access of group g other than y happens-before y. */
static bool others_done(const bp_mem *m, uint32_t g, uint32_t y) {
    const bp_mem_hb *hb = &m->hb;
    const int32_t *acc = m->lastacc + (size_t)g * hb->nq;
    const int32_t *clk = hb->clock + (size_t)y * hb->nq;
    for (uint32_t j = 0; j < hb->nq; j++) {
        int32_t limit = j == hb->queue[y] ? (int32_t)hb->qpos[y] : clk[j];
        if (acc[j] > limit) return false;
    }
    return true;
}

/* Input k of y can be overwritten by y. */
static bool can_overwrite(bp_mem *m, uint32_t y, uint32_t k) {
    const bp_plan *p = m->plan;
    const bg_node *n = &p->res.graph->nodes[y];
    uint32_t x = n->inputs[k];
    const bg_node *xn = &p->res.graph->nodes[x];
    if (p->res.info[x].place.storage != BP_STORAGE_ARENA ||
        bg_op_persistent(xn->op) || bg_nbytes(xn) != bg_nbytes(n) ||
        bg_numel(xn) != bg_numel(n) || bg_numel(n) == 0 ||
        !bp_device_equal(p->res.info[x].device, p->res.info[y].device))
        return false;
    uint32_t gx = bp_mem_find(m, x);
    if (gx == bp_mem_find(m, y) || m->to_end[gx]) return false;
    for (uint32_t j = 0; j < n->ninputs; j++) { /* no other view of x */
        uint32_t r = root_of(m, n->inputs[j]);
        if (n->inputs[j] != x && r != BG_NONE && bp_mem_find(m, r) == gx)
            return false;
    }
    return others_done(m, gx, y);
}

/* Access summaries per root before any merge: m->lastacc indexed by node
 * (the caller sized it n × nq) and m->to_end. */
static void root_summaries(bp_mem *m) {
    const bp_plan *p = m->plan;
    const bp_mem_hb *hb = &m->hb;
    for (size_t i = 0; i < (size_t)hb->n * hb->nq; i++) m->lastacc[i] = -1;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i], r = root_of(m, id);
        if (id >= hb->n || r == BG_NONE) continue;
        int32_t *acc = m->lastacc + (size_t)r * hb->nq;
        if (m->output[id]) m->to_end[r] = true;
        if (!p->res.info[id].noop && (int32_t)hb->qpos[id] > acc[hb->queue[id]])
            acc[hb->queue[id]] = (int32_t)hb->qpos[id];
        for (uint32_t k = m->ustart[id]; k < m->ustart[id + 1]; k++) {
            uint32_t u = m->users[k];
            if (!p->res.info[u].noop &&
                (int32_t)hb->qpos[u] > acc[hb->queue[u]])
                acc[hb->queue[u]] = (int32_t)hb->qpos[u];
        }
    }
}

void bp_mem_in_place(bp_mem *m) {
    bp_plan *p = m->plan;
    root_summaries(m);
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t y = p->res.schedule[i];
        const bg_node *n = &p->res.graph->nodes[y];
        if (p->res.info[y].place.storage != BP_STORAGE_ARENA ||
            p->res.info[y].noop || !bp_mem_kernel_allows_alias(p, y))
            continue;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            if (!can_overwrite(m, y, k)) continue;
            uint32_t gx = bp_mem_find(m, n->inputs[k]);
            uint32_t gy = bp_mem_find(m, y);
            int32_t *ax = m->lastacc + (size_t)gx * m->hb.nq;
            const int32_t *ay = m->lastacc + (size_t)gy * m->hb.nq;
            for (uint32_t j = 0; j < m->hb.nq; j++)
                if (ay[j] > ax[j]) ax[j] = ay[j];
            m->to_end[gx] = m->to_end[gx] || m->to_end[gy];
            m->parent[gy] = gx;
            break;
        }
    }
}
