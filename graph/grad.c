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
    if (c.on != NULL && c.adj != NULL) {
        memset(c.on, 0, c.nold);
        s = gd_run(&c, loss, n, wrt, grads_out);
    } else {
        s = g->status;
    }
    bg_free(g, c.adj, c.adj ? (size_t)c.nold * sizeof *c.adj : 0);
    bg_free(g, c.on, c.on ? c.nold : 0);
    return s;
}
