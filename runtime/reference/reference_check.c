/* runtime/reference/reference_check.c — structural checks before the reference
 * evaluator indexes anything.
 *
 * bg_build already validates every node it creates, so these checks only
 * ever fail for a graph corrupted behind the builder's back (or by a bug in
 * a loader). They exist because the oracle must never read out of bounds:
 * each check below guards an index computed in graph/eval.c. */
#include "graph/attention.h"
#include "graph/index.h"
#include "graph/axis.h"
#include "runtime/collective_host.h"
#include "graph/window.h"
#include "runtime/reference/reference.h"

#include <string.h>

/* Records a malformed-node failure and returns BRAID_ERR_INTERNAL. */
#define BR_BAD(id, n, what)                                                    \
    bg_set_last_error(BRAID_ERR_INTERNAL,                                      \
                      "reference: node %u (%s) is malformed: %s", (id),        \
                      bg_op((n)->op)->name, (what))

/* True when an input of shape (irank, idims) broadcasts to exactly
 * (orank, odims): aligned right, each dim equal or 1. */
static bool broadcasts_to(int irank, const int64_t *idims, int orank,
                          const int64_t *odims) {
    if (irank > orank) return false;
    for (int k = 0; k < irank; k++) {
        int64_t d = idims[k], o = odims[k + orank - irank];
        if (d != o && d != 1) return false;
    }
    return true;
}

static braid_status check_elementwise(const braid_graph *g, uint32_t id,
                                      const bg_node *n) {
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = bg_node_at(g, n->inputs[k]);
        if (!broadcasts_to(x->rank, x->dims, n->rank, n->dims))
            return BR_BAD(id, n, "an operand does not broadcast to the result");
    }
    return BRAID_OK;
}

static braid_status check_matmul(const braid_graph *g, uint32_t id,
                                 const bg_node *n) {
    const bg_node *a = bg_node_at(g, n->inputs[0]);
    const bg_node *b = bg_node_at(g, n->inputs[1]);
    int r = n->rank;
    if (a->rank < 2 || b->rank < 2 ||
        r != (a->rank > b->rank ? a->rank : b->rank))
        return BR_BAD(id, n, "operand ranks");
    bool ta = (n->attr.flags & BRAID_TRANSPOSE_A) != 0;
    bool tb = (n->attr.flags & BRAID_TRANSPOSE_B) != 0;
    int64_t am = a->dims[a->rank - (ta ? 1 : 2)];
    int64_t ak = a->dims[a->rank - (ta ? 2 : 1)];
    int64_t bk = b->dims[b->rank - (tb ? 1 : 2)];
    int64_t bn = b->dims[b->rank - (tb ? 2 : 1)];
    if (am != n->dims[r - 2] || bn != n->dims[r - 1] || ak != bk)
        return BR_BAD(id, n, "matrix dims");
    if (!broadcasts_to(a->rank - 2, a->dims, r - 2, n->dims) ||
        !broadcasts_to(b->rank - 2, b->dims, r - 2, n->dims))
        return BR_BAD(id, n, "batch dims");
    return BRAID_OK;
}

static braid_status check_reduce(const braid_graph *g, uint32_t id,
                                 const bg_node *n) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    bool keep = (n->attr.flags & BG_KEEPDIMS) != 0;
    if (x->rank < 8 && (n->attr.axes >> x->rank) != 0)
        return BR_BAD(id, n, "axes beyond the input's rank");
    int j = 0;
    for (int k = 0; k < x->rank; k++) {
        bool red = (n->attr.axes & (1u << k)) != 0;
        if (red && !keep) continue;
        if (j >= n->rank || n->dims[j] != (red ? 1 : x->dims[k]))
            return BR_BAD(id, n, "result shape");
        j++;
    }
    if (j != n->rank) return BR_BAD(id, n, "result rank");
    return BRAID_OK;
}

/* Row ops (softmax, layer_norm): a float input x of rank >= 1 and its
 * shape; layer_norm's gamma and beta rows [C] of x's dtype. */
static braid_status check_row(const braid_graph *g, uint32_t id,
                              const bg_node *n) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    if (n->rank == 0 || !braid_dtype_is_float(n->dtype))
        return BR_BAD(id, n, "dtype or rank");
    if (x->rank != n->rank || x->dtype != n->dtype ||
        memcmp(x->dims, n->dims, (size_t)n->rank * sizeof *n->dims) != 0)
        return BR_BAD(id, n, "result shape or dtype");
    for (uint32_t i = 1; i < n->ninputs; i++) {
        const bg_node *p = bg_node_at(g, n->inputs[i]);
        if (p->rank != 1 || p->dims[0] != n->dims[n->rank - 1] ||
            p->dtype != n->dtype)
            return BR_BAD(id, n, "gamma or beta shape or dtype");
    }
    return BRAID_OK;
}

static braid_status check_permute(const braid_graph *g, uint32_t id,
                                  const bg_node *n) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    bool seen[BRAID_MAX_RANK] = {false};
    if (x->rank != n->rank) return BR_BAD(id, n, "rank");
    for (int k = 0; k < n->rank; k++) {
        unsigned p = n->attr.perm[k];
        if (p >= (unsigned)n->rank || seen[p] || n->dims[k] != x->dims[p])
            return BR_BAD(id, n, "perm");
        seen[p] = true;
    }
    return BRAID_OK;
}

static braid_status check_slice(const braid_graph *g, uint32_t id,
                                const bg_node *n) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    if (x->rank != n->rank) return BR_BAD(id, n, "rank");
    for (int k = 0; k < n->rank; k++) {
        if (n->dims[k] > 0 && !bg_slice_fits(x->dims[k], n->attr.start[k],
                                             n->attr.step[k], n->dims[k]))
            return BR_BAD(id, n, "start/step outside the input");
    }
    return BRAID_OK;
}

/* A window node (pooling) whose output shape its attributes and input
 * give (a plan file's node need not have come from bg_build). */
static braid_status check_window(const braid_graph *g, uint32_t id,
                                 const bg_node *n) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    bg_node want = {0};
    braid_graph *scratch = braid_graph_new(NULL);
    if (scratch == NULL) return BRAID_ERR_OUT_OF_MEMORY;
    braid_status s =
        bg_infer_window(scratch, n->op, x, &n->attr, n->rank, n->dims, &want);
    braid_graph_free(scratch);
    if (s != BRAID_OK || want.dtype != n->dtype || want.rank != n->rank ||
        memcmp(want.dims, n->dims, sizeof want.dims) != 0)
        return BR_BAD(id, n, "window attributes");
    return BRAID_OK;
}

static braid_status check_concat(const braid_graph *g, uint32_t id,
                                 const bg_node *n) {
    int axis = n->attr.axis;
    if (axis < 0 || axis >= n->rank) return BR_BAD(id, n, "axis");
    int64_t total = 0;
    for (uint32_t i = 0; i < n->ninputs; i++) {
        const bg_node *x = bg_node_at(g, n->inputs[i]);
        if (x->rank != n->rank) return BR_BAD(id, n, "piece rank");
        for (int k = 0; k < n->rank; k++)
            if (k != axis && x->dims[k] != n->dims[k])
                return BR_BAD(id, n, "piece dims");
        total += x->dims[axis];
    }
    if (total != n->dims[axis]) return BR_BAD(id, n, "joined size");
    return BRAID_OK;
}

/* gather / scatter: what graph/index.c's geometry needs to stay inside the
 * operands (the shape rule itself is bg_build's). */
static braid_status check_index(const braid_graph *g, uint32_t id,
                                const bg_node *n) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    const bg_node *idx = bg_node_at(g, n->inputs[1]);
    bg_index_mode mode = bg_index_mode_of(&n->attr);
    int ax = n->attr.axis;
    if ((idx->dtype != BRAID_I32 && idx->dtype != BRAID_I64) || x->rank == 0 || n->dtype != x->dtype ||
        mode >= BG_INDEX_MODE_COUNT_ || ax < 0)
        return BR_BAD(id, n, "operand dtypes or form");
    if (mode != BG_INDEX_ND && ax >= x->rank) return BR_BAD(id, n, "axis");
    if (mode == BG_INDEX_ELEMENTS) {
        if (idx->rank != x->rank) return BR_BAD(id, n, "indices rank");
        for (int k = 0; k < x->rank; k++)
            if (k != ax && idx->dims[k] > x->dims[k])
                return BR_BAD(id, n, "indices dims");
    }
    if (mode == BG_INDEX_ND &&
        (idx->rank < 1 || ax >= idx->rank || ax >= x->rank ||
         idx->dims[idx->rank - 1] < 1 ||
         idx->dims[idx->rank - 1] > x->rank - ax))
        return BR_BAD(id, n, "indices shape");
    bg_index_geom geo;
    bg_index_geom_of(g, n, &geo);
    int64_t work = mode == BG_INDEX_ELEMENTS
                       ? bg_numel(idx)
                       : geo.outer * geo.nidx * geo.inner;
    if (geo.nwork != work) return BR_BAD(id, n, "result or updates size");
    if (n->op == BRAID_OP_SCATTER &&
        (bg_numel(n) != geo.ndata ||
         bg_node_at(g, n->inputs[2])->dtype != n->dtype))
        return BR_BAD(id, n, "scatter result or updates");
    return BRAID_OK;
}

static braid_status check_source(uint32_t id, const bg_node *n) {
    if (n->op == BRAID_OP_INPUT && !n->name)
        return BR_BAD(id, n, "input without a name");
    if (n->op == BRAID_OP_CONSTANT && !n->attr.data && bg_numel(n) > 0)
        return BR_BAD(id, n, "constant without data");
    if (n->op == BRAID_OP_VARIABLE &&
        (!n->name || (n->attr.init == BRAID_OP_CONSTANT && !n->attr.data &&
                      bg_numel(n) > 0)))
        return BR_BAD(id, n, "variable without a name or data");
    if (n->op == BRAID_OP_IOTA && n->rank > 0 &&
        (n->attr.axis < 0 || n->attr.axis >= n->rank))
        return BR_BAD(id, n, "axis");
    return BRAID_OK;
}

/* Arity, ids, dtype and dims: what every kernel assumes. */
static braid_status check_common(uint32_t id, const bg_node *n) {
    if ((unsigned)n->op >= BRAID_OP_COUNT_)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "reference: node %u has unknown op %d", id,
                                 (int)n->op);
    int arity = bg_op(n->op)->arity;
    if (arity >= 0 ? n->ninputs != (uint32_t)arity : n->ninputs < 1)
        return BR_BAD(id, n, "input count");
    if (n->ninputs > 0 && !n->inputs) return BR_BAD(id, n, "inputs missing");
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] >= id)
            return BR_BAD(id, n, "input id not below the node's");
    if ((unsigned)n->dtype >= BRAID_DTYPE_COUNT_ || n->rank > BRAID_MAX_RANK)
        return BR_BAD(id, n, "dtype or rank");
    for (int k = 0; k < n->rank; k++)
        if (n->dims[k] < 0) return BR_BAD(id, n, "negative dim");
    return BRAID_OK;
}

braid_status br_ref_check(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    braid_status s = check_common(id, n);
    if (s != BRAID_OK) return s;
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_SOURCE:
        return check_source(id, n);
    case BRAID_KIND_ELEMENTWISE:
    case BRAID_KIND_COPY:
    case BRAID_KIND_BROADCAST:
        return check_elementwise(g, id, n);
    case BRAID_KIND_MATMUL:
        return check_matmul(g, id, n);
    case BRAID_KIND_REDUCE:
        return check_reduce(g, id, n);
    case BRAID_KIND_ROW:
        return check_row(g, id, n);
    case BRAID_KIND_SHAPE:
        if (n->op == BRAID_OP_RESHAPE)
            return bg_numel(n) == bg_numel(bg_node_at(g, n->inputs[0]))
                       ? BRAID_OK
                       : BR_BAD(id, n, "element count");
        if (n->op == BRAID_OP_PERMUTE) return check_permute(g, id, n);
        if (n->op == BRAID_OP_SLICE) return check_slice(g, id, n);
        return check_concat(g, id, n);
    case BRAID_KIND_COLLECTIVE:
        return br_coll_check_local(g, id, "reference");
    case BRAID_KIND_STATE:
        return n->ninputs >= 2 &&
                       g->nodes[n->inputs[0]].op == BRAID_OP_VARIABLE &&
                       bg_nbytes(n) == bg_nbytes(bg_node_at(g, n->inputs[1]))
                   ? BRAID_OK
                   : BR_BAD(id, n, "assign operands");
    case BRAID_KIND_INDEX:
        return check_index(g, id, n);
    case BRAID_KIND_CONV: { /* conv ops */
        bg_conv_geom c;
        const bg_node *x = bg_node_at(g, n->inputs[0]);
        bool same = x->dtype == n->dtype &&
                    bg_node_at(g, n->inputs[1])->dtype == n->dtype &&
                    (n->ninputs < 3 ||
                     bg_node_at(g, n->inputs[2])->dtype == n->dtype);
        return same && braid_dtype_is_float(n->dtype) &&
                       bg_conv_geom_of(g, n, &c)
                   ? BRAID_OK
                   : BR_BAD(id, n, "convolution shapes or attributes");
    }
    case BRAID_KIND_WINDOW:
        return check_window(g, id, n);
    case BRAID_KIND_ATTENTION: {
        bg_attn_geom a;
        return bg_attn_geom_of(g, n, &a)
                   ? BRAID_OK
                   : BR_BAD(id, n, "attention shapes, dtypes or attributes");
    }
    case BRAID_KIND_AXIS:
        return bg_axis_well_formed(n, bg_node_at(g, n->inputs[0]))
                   ? BRAID_OK
                   : BR_BAD(id, n, "axis, flags, k or result type");
    default:
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "reference: node %u (%s) is a compiler-made "
                                 "node the reference does not evaluate",
                                 id, bg_op(n->op)->name);
    }
}
