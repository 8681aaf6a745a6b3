/* graph/grad.c — reverse-mode autodiff: braid_grad (docs/training.md).
 *
 * Ids are a topological order, so one forward sweep marks what depends on
 * a wrt tensor, one backward sweep what the loss depends on, and one more
 * backward sweep from the loss gives each node on a path between them its
 * gradient (the adjoint) and hands it to the node's rule, which adds the
 * contributions of the node's inputs. Everything is appended to the same
 * graph; nodes that existed before are left as they were. */
#include "graph/grad.h"

#include <string.h>

struct bg_grad_ctx {
    braid_graph *g; /* the graph being extended */
    uint32_t nold;  /* nodes before braid_grad (the ones differentiated) */
    uint8_t *on;    /* per old node: on a path from a wrt to the loss */
    uint32_t *adj;  /* per old node: its gradient so far, or BG_NONE */
    /* Contributions of slices along one axis, held back until every
     * consumer of the sliced node has had its turn (bg_grad_acc_slice) */
    uint32_t *piece_head;  /* per old node: its first piece, or BG_NONE */
    bg_grad_piece *pieces; /* npieces entries, capacity piece_cap */
    uint32_t npieces, piece_cap;
};

/* One held-back contribution: t, the gradient of a slice that kept
 * [start, start + t's size) of axis `axis` of node `of` (all else whole). */
struct bg_grad_piece {
    uint32_t of;   /* the sliced node */
    uint32_t next; /* the node's next piece, or BG_NONE */
    int axis;      /* the one narrowed axis */
    int64_t start; /* where t begins along it */
    int64_t count; /* t's size along it */
    uint32_t t;    /* the contribution */
};

braid_graph *bg_grad_graph(bg_grad_ctx *c) {
    return c->g;
}

bool bg_grad_wants(bg_grad_ctx *c, const bg_grad_node *n, uint32_t k) {
    return k < n->ninputs && c->on[n->inputs[k]];
}

void bg_grad_acc(bg_grad_ctx *c, const bg_grad_node *n, uint32_t k,
                 braid_tensor t) {
    if (!bg_grad_wants(c, n, k) || !braid_tensor_valid(t)) return;
    uint32_t in = n->inputs[k];
    if (c->adj[in] == BG_NONE)
        c->adj[in] = t.id;
    else
        c->adj[in] = braid_add(c->g, (braid_tensor){c->adj[in]}, t).id;
}

void bg_grad_acc_slice(bg_grad_ctx *c, const bg_grad_node *n, int axis,
                       int64_t start, braid_tensor t) {
    if (!bg_grad_wants(c, n, 0) || !braid_tensor_valid(t)) return;
    if (c->npieces == c->piece_cap) {
        uint32_t cap = c->piece_cap ? 2 * c->piece_cap : 16;
        bg_grad_piece *p = bg_realloc(c->g, c->pieces, c->piece_cap * sizeof *p,
                                      (size_t)cap * sizeof *p);
        if (p == NULL) return;
        c->pieces = p;
        c->piece_cap = cap;
    }
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, t.id, NULL, &rank, dims);
    uint32_t in = n->inputs[0], k = c->npieces++;
    c->pieces[k] = (bg_grad_piece){.of = in,
                                   .next = c->piece_head[in],
                                   .axis = axis,
                                   .start = start,
                                   .count = dims[axis],
                                   .t = t.id};
    c->piece_head[in] = k;
}

/* Whether node id's held-back pieces all lie along one axis without
 * overlapping; *n gets how many there are, order[] their indexes sorted
 * by start (at most max; more is "no"). */
static bool gd_pieces_tile(const bg_grad_ctx *c, uint32_t id, uint32_t *order,
                           uint32_t max, uint32_t *n) {
    *n = 0;
    int axis = c->pieces[c->piece_head[id]].axis;
    for (uint32_t k = c->piece_head[id]; k != BG_NONE; k = c->pieces[k].next) {
        if (*n == max || c->pieces[k].axis != axis) return false;
        uint32_t i = (*n)++; /* insertion by start */
        for (; i > 0 && c->pieces[order[i - 1]].start > c->pieces[k].start; i--)
            order[i] = order[i - 1];
        order[i] = k;
    }
    for (uint32_t i = 1; i < *n; i++) {
        const bg_grad_piece *a = &c->pieces[order[i - 1]];
        if (a->start + a->count > c->pieces[order[i]].start) return false;
    }
    return true;
}

/* Adds node id's held-back slice pieces to its gradient: pieces that tile
 * one axis without overlapping become one concat (zeros in the gaps), as
 * a tensor split into parts has one gradient copy rather than a padded
 * copy per part added up; others are each padded back and added. */
static void gd_settle_pieces(bg_grad_ctx *c, uint32_t id) {
    enum { MAX = 64 };
    uint32_t order[MAX], n;
    if (c->piece_head[id] == BG_NONE) return;
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, id, &dt, &rank, dims);
    bg_grad_node self = {.ninputs = 1, .inputs = &id};
    if (!gd_pieces_tile(c, id, order, MAX, &n)) {
        for (uint32_t k = c->piece_head[id]; k != BG_NONE;
             k = c->pieces[k].next) {
            const bg_grad_piece *p = &c->pieces[k];
            bg_grad_acc(c, &self, 0,
                        bg_grad_unslice_axis(c, (braid_tensor){p->t}, p->axis,
                                             dims[p->axis], p->start, 1));
        }
        c->piece_head[id] = BG_NONE;
        return;
    }
    int axis = c->pieces[c->piece_head[id]].axis;
    braid_tensor parts[2 * MAX + 1];
    int np = 0;
    int64_t at = 0, full = dims[axis];
    for (uint32_t i = 0; i <= n; i++) {
        int64_t next = i < n ? c->pieces[order[i]].start : full;
        if (next > at) { /* zeros up to the next piece */
            dims[axis] = next - at;
            parts[np++] = bg_grad_zeros(c, dt, rank, dims);
        }
        if (i < n) {
            parts[np++] = (braid_tensor){c->pieces[order[i]].t};
            at = next + c->pieces[order[i]].count;
        }
    }
    c->piece_head[id] = BG_NONE;
    bg_grad_acc(c, &self, 0,
                np == 1 ? parts[0] : braid_concat(c->g, np, parts, axis));
}

/* Gradients flow only through float tensors: an i32 or bool value (a
 * comparison, an index, a cast to i32) is piecewise constant. */
static bool gd_float(const braid_graph *g, uint32_t id) {
    return braid_dtype_is_float(bg_node_at(g, id)->dtype);
}

/* Marks on[] the float nodes that depend on a wrt tensor and that the loss
 * depends on. */
static void gd_mark(bg_grad_ctx *c, uint32_t loss, size_t n,
                    const braid_tensor *wrt) {
    const braid_graph *g = c->g;
    uint8_t *on = c->on; /* bit 0: from a wrt; bit 1: to the loss */
    for (size_t i = 0; i < n; i++)
        on[wrt[i].id] |= 1;
    for (uint32_t id = 0; id <= loss; id++) {
        const bg_node *nd = bg_node_at(g, id);
        for (uint32_t k = 0; k < nd->ninputs && !(on[id] & 1); k++)
            on[id] |= on[nd->inputs[k]] & 1;
        if (!gd_float(g, id)) on[id] = 0;
    }
    on[loss] |= 2;
    for (uint32_t id = loss + 1; id-- > 0;) {
        if (on[id] != 3) continue;
        const bg_node *nd = bg_node_at(g, id);
        for (uint32_t k = 0; k < nd->ninputs; k++)
            on[nd->inputs[k]] |= 2;
    }
    for (uint32_t id = 0; id < c->nold; id++)
        on[id] = on[id] == 3;
}

static void gd_snapshot(const braid_graph *g, uint32_t id, bg_grad_node *s) {
    const bg_node *n = bg_node_at(g, id);
    s->id = id;
    s->op = n->op;
    s->dtype = n->dtype;
    s->rank = n->rank;
    memcpy(s->dims, n->dims, sizeof s->dims);
    s->ninputs = n->ninputs;
    s->inputs = n->inputs;
    s->attr = n->attr;
    s->attr.data = NULL;
}

/* "node 12 'h1' (tanh f32[4,8])" into buf. */
static const char *gd_node_str(const braid_graph *g, uint32_t id, char *buf,
                               size_t size) {
    const bg_node *n = bg_node_at(g, id);
    char t[96];
    snprintf(buf, size, "node %u%s%s%s (%s %s)", (unsigned)id,
             n->name ? " '" : "", n->name ? n->name : "", n->name ? "'" : "",
             bg_op(n->op)->name, bg_type_str(n, t, sizeof t));
    return buf;
}

/* Whether some input of node id is on a path (so a gradient must pass). */
static bool gd_feeds_back(const bg_grad_ctx *c, uint32_t id) {
    const bg_node *n = bg_node_at(c->g, id);
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (c->on[n->inputs[k]]) return true;
    return false;
}

/* The rule for node id, or NULL with the error recorded (no rule) or
 * quietly (a zero gradient by convention). */
static bg_grad_rule gd_rule(bg_grad_ctx *c, uint32_t id) {
    braid_op op = bg_node_at(c->g, id)->op;
    bg_grad_rule r = bg_grad_rule_of(op);
    if (r != NULL || bg_op_has(op, BRAID_OPF_ZERO_GRAD)) return r;
    char s[160];
    bg_fail(c->g, BRAID_ERR_UNSUPPORTED,
            "grad: %s is on the path to the loss and op '%s' has no "
            "gradient",
            gd_node_str(c->g, id, s, sizeof s), bg_op(op)->name);
    return NULL;
}

/* Checks every node on a path before anything is added, so an error
 * leaves no half-built gradient behind. */
static bool gd_check_rules(bg_grad_ctx *c, uint32_t loss) {
    for (uint32_t id = 0; id <= loss; id++)
        if (c->on[id] && gd_feeds_back(c, id) &&
            bg_grad_rule_of(bg_node_at(c->g, id)->op) == NULL) {
            gd_rule(c, id);
            if (c->g->status != BRAID_OK) return false;
        }
    return true;
}

static void gd_backward(bg_grad_ctx *c, uint32_t loss) {
    braid_graph *g = c->g;
    const bg_node *l = bg_node_at(g, loss);
    c->adj[loss] = braid_fill(g, l->dtype, l->rank, l->dims, 1.0).id;
    for (uint32_t id = loss + 1; id-- > 0 && g->status == BRAID_OK;) {
        gd_settle_pieces(c, id); /* every consumer of id has had its turn */
        if (!c->on[id] || c->adj[id] == BG_NONE || !gd_feeds_back(c, id))
            continue;
        bg_grad_rule r = gd_rule(c, id);
        if (r == NULL) continue;
        bg_grad_node s;
        gd_snapshot(g, id, &s);
        r(c, &s, (braid_tensor){c->adj[id]});
    }
}

/* Argument checks; the messages name the offending argument. */
static braid_status gd_check_args(braid_graph *g, braid_tensor loss, size_t n,
                                  const braid_tensor *wrt, braid_tensor *out) {
    if (g->status != BRAID_OK) return g->status;
    if ((n > 0 && (wrt == NULL || out == NULL)))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "grad: wrt or grads_out is NULL for %zu tensors", n);
    char s[160];
    if (loss.id >= g->nnodes)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "grad: the loss is not a tensor of this graph");
    const bg_node *l = bg_node_at(g, loss.id);
    if (!braid_dtype_is_float(l->dtype) || bg_numel(l) != 1)
        return bg_fail(g, BRAID_ERR_SHAPE,
                       "grad: the loss, %s, must be a float tensor of one "
                       "element",
                       gd_node_str(g, loss.id, s, sizeof s));
    for (size_t i = 0; i < n; i++) {
        if (wrt[i].id >= g->nnodes)
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "grad: wrt[%zu] is not a tensor of this graph", i);
        if (!gd_float(g, wrt[i].id))
            return bg_fail(g, BRAID_ERR_DTYPE,
                           "grad: wrt[%zu], %s, must have a float dtype", i,
                           gd_node_str(g, wrt[i].id, s, sizeof s));
    }
    return BRAID_OK;
}

/* grads_out[i]: the adjoint of wrt[i], or zeros when the loss does not
 * depend on it. */
static void gd_results(bg_grad_ctx *c, size_t n, const braid_tensor *wrt,
                       braid_tensor *out) {
    for (size_t i = 0; i < n && c->g->status == BRAID_OK; i++) {
        const bg_node *w = bg_node_at(c->g, wrt[i].id);
        uint32_t a = c->adj[wrt[i].id];
        out[i] = a != BG_NONE
                     ? (braid_tensor){a}
                     : braid_fill(c->g, w->dtype, w->rank, w->dims, 0.0);
    }
}

static braid_status gd_run(bg_grad_ctx *c, braid_tensor loss, size_t n,
                           const braid_tensor *wrt, braid_tensor *out) {
    braid_graph *g = c->g;
    for (uint32_t i = 0; i < c->nold; i++)
        c->adj[i] = BG_NONE;
    gd_mark(c, loss.id, n, wrt);
    if (gd_check_rules(c, loss.id)) {
        if (c->on[loss.id]) gd_backward(c, loss.id);
        gd_results(c, n, wrt, out);
    }
    if (g->status != BRAID_OK)
        for (size_t i = 0; i < n; i++)
            out[i] = BRAID_NONE;
    return g->status;
}

braid_status braid_grad(braid_graph *g, braid_tensor loss, size_t n,
                        const braid_tensor *wrt, braid_tensor *grads_out) {
    if (grads_out != NULL)
        for (size_t i = 0; i < n; i++)
            grads_out[i] = BRAID_NONE;
    if (g == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "grad: graph is NULL");
    braid_status s = gd_check_args(g, loss, n, wrt, grads_out);
    if (s != BRAID_OK) return s;
    bg_grad_ctx c = {.g = g, .nold = g->nnodes};
    c.on = bg_alloc(g, c.nold);
    c.adj = bg_alloc(g, (size_t)c.nold * sizeof *c.adj);
    c.piece_head = bg_alloc(g, (size_t)c.nold * sizeof *c.piece_head);
    if (c.on != NULL && c.adj != NULL && c.piece_head != NULL) {
        memset(c.on, 0, c.nold);
        for (uint32_t i = 0; i < c.nold; i++)
            c.piece_head[i] = BG_NONE;
        s = gd_run(&c, loss, n, wrt, grads_out);
    } else {
        s = g->status;
    }
    bg_free(g, c.pieces, (size_t)c.piece_cap * sizeof *c.pieces);
    bg_free(g, c.piece_head,
            c.piece_head ? (size_t)c.nold * sizeof *c.piece_head : 0);
    bg_free(g, c.adj, c.adj ? (size_t)c.nold * sizeof *c.adj : 0);
    bg_free(g, c.on, c.on ? c.nold : 0);
    return s;
}
