/* graph/graph_edit.c — outputs, names and placement hints; name validation;
 * deep copy and structural equality of graphs. */
#include "graph/internal.h"

#include <string.h>

/* ---- name rules
 * -------------------------------------------------------------- */

bool bg_valid_ident(const char *s) {
    if (s == NULL || s[0] == '\0') return false;
    for (size_t i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        bool alpha =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool tail = (c >= '0' && c <= '9') || c == '.';
        if (!alpha && !(i > 0 && tail)) return false;
    }
    return true;
}

bool bg_check_ident(braid_graph *g, const char *what, const char *name) {
    if (bg_valid_ident(name)) return true;
    bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
            "%s: name %s%s%s is not valid; expected [A-Za-z_][A-Za-z0-9_.]*",
            what, name ? "\"" : "", name ? name : "(null)", name ? "\"" : "");
    return false;
}

bool bg_valid_label(const char *s) {
    if (s == NULL || s[0] == '\0') return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return false;
    return true;
}

bool bg_input_name_taken(braid_graph *g, const char *name, uint32_t except) {
    uint32_t id = bg_find_input(g, name);
    return id != BG_NONE && id != except;
}

bool bg_valid_device(const char *dev) {
    return dev != NULL && bg_device_parse(dev, strlen(dev), NULL);
}

/* ---- outputs, names, hints --------------------------------------------------
 */

/* Shared prologue of the editing calls: a NULL graph, a graph that already
 * failed (its first error is repeated to braid_last_error) or a tensor that
 * is not in the graph. */
static braid_status bg_edit_check(braid_graph *g, braid_tensor t,
                                  const char *fn) {
    if (g == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: graph is NULL", fn);
    if (g->status != BRAID_OK)
        return bg_set_last_error(g->status, "%s", g->error);
    if (t.id >= g->nnodes)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: invalid tensor (id %u, graph has %u nodes)", fn,
                       (unsigned)t.id, (unsigned)g->nnodes);
    return BRAID_OK;
}

braid_status braid_output(braid_graph *g, const char *name, braid_tensor t) {
    braid_status s = bg_edit_check(g, t, "braid_output");
    if (s != BRAID_OK) return s;
    if (!bg_valid_label(name))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "braid_output: output name %s%s%s is empty, NULL or "
                       "has control characters",
                       name ? "\"" : "", name ? name : "(null)",
                       name ? "\"" : "");
    if (bg_find_output(g, name) != BG_NONE)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "braid_output: duplicate output name \"%s\"", name);
    if (g->noutputs == g->ocap) {
        uint32_t cap = g->ocap ? 2 * g->ocap : 4;
        bg_output *o = bg_realloc(g, g->outputs, (size_t)g->ocap * sizeof *o,
                                  (size_t)cap * sizeof *o);
        if (o == NULL) return g->status;
        g->outputs = o;
        g->ocap = cap;
    }
    char *copy = bg_strdup(g, name);
    if (copy == NULL) return g->status;
    g->outputs[g->noutputs].name = copy;
    g->outputs[g->noutputs].node = t.id;
    bg_names_added_output(g, g->noutputs++);
    return BRAID_OK;
}

/* An input's name is its binding name, so it keeps the input rules. */
braid_status braid_set_name(braid_graph *g, braid_tensor t, const char *name) {
    braid_status s = bg_edit_check(g, t, "braid_set_name");
    if (s != BRAID_OK) return s;
    bg_node *n = &g->nodes[t.id];
    const char *op = bg_op(n->op)->name;
    if (n->op == BRAID_OP_VARIABLE &&
        (!name || strcmp(name, n->name ? n->name : "") != 0))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "braid_set_name: node %u is variable \"%s\"; a "
                       "variable's name is fixed when it is created",
                       (unsigned)t.id, n->name ? n->name : "?");
    if (n->op == BRAID_OP_INPUT) {
        if (!bg_valid_ident(name))
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "braid_set_name: input name \"%s\" of node %u "
                           "(input) must match [A-Za-z_][A-Za-z0-9_.]*",
                           name ? name : "(null)", (unsigned)t.id);
        if (bg_input_name_taken(g, name, t.id))
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "braid_set_name: duplicate input name \"%s\"", name);
    } else if (name != NULL && !bg_valid_label(name)) {
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "braid_set_name: name of node %u (%s) is empty or "
                       "has control characters",
                       (unsigned)t.id, op);
    }
    char *copy = NULL;
    if (name != NULL && (copy = bg_strdup(g, name)) == NULL) return g->status;
    bg_free_str(g, n->name);
    n->name = copy;
    if (n->op == BRAID_OP_INPUT) bg_names_invalidate(g);
    return BRAID_OK;
}

/* device NULL removes the hint. */
braid_status braid_set_device(braid_graph *g, braid_tensor t,
                              const char *device) {
    braid_status s = bg_edit_check(g, t, "braid_set_device");
    if (s != BRAID_OK) return s;
    bg_node *n = &g->nodes[t.id];
    if (device != NULL && !bg_valid_device(device))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "braid_set_device: device \"%s\" for node %u (%s) is "
                       "not \"cpu\" or \"cuda:N\" with 0 <= N < 64",
                       device, (unsigned)t.id, bg_op(n->op)->name);
    char *copy = NULL;
    if (device != NULL && (copy = bg_strdup(g, device)) == NULL)
        return g->status;
    bg_free_str(g, n->device);
    n->device = copy;
    return BRAID_OK;
}

/* ---- clone
 * --------------------------------------------------------------------- */

/* Copies what src owns into dst (whose pointers start NULL). Shared
 * constant bytes are shared again (one more reference), not copied; with
 * into_shared, owned ones are copied into a new holder. */
static bool bg_node_copy(braid_graph *c, bg_node *dst, const bg_node *src,
                         bool into_shared) {
    size_t in_bytes = (size_t)src->ninputs * sizeof *src->inputs;
    if (in_bytes) {
        if ((dst->inputs = bg_alloc_piece(c, in_bytes)) == NULL) return false;
        memcpy(dst->inputs, src->inputs, in_bytes);
    }
    size_t data_bytes = src->attr.data ? bg_nbytes(src) : 0;
    if (data_bytes && src->shared) {
        dst->attr.data = src->attr.data;
        dst->shared = src->shared;
        bg_shared_ref(src->shared);
    } else if (data_bytes && into_shared) {
        if ((dst->shared = bg_shared_copy(src->attr.data, data_bytes,
                                          &dst->attr.data)) == NULL)
            return false;
    } else if (data_bytes) {
        if ((dst->attr.data = bg_alloc(c, data_bytes)) == NULL) return false;
        memcpy(dst->attr.data, src->attr.data, data_bytes);
    }
    if (src->name && (dst->name = bg_strdup(c, src->name)) == NULL)
        return false;
    if (src->device && (dst->device = bg_strdup(c, src->device)) == NULL)
        return false;
    return true;
}

static bool bg_clone_outputs(braid_graph *c, const braid_graph *g) {
    if (g->noutputs == 0) return true;
    c->outputs = bg_alloc(c, (size_t)g->noutputs * sizeof *c->outputs);
    if (c->outputs == NULL) return false;
    c->ocap = g->noutputs;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        c->outputs[i].node = g->outputs[i].node;
        c->outputs[i].name = bg_strdup(c, g->outputs[i].name);
        if (c->outputs[i].name == NULL) return false;
        c->noutputs++;
    }
    return true;
}

/* The bytes of g's input lists and names as bg_alloc_piece hands them out. */
static size_t bg_piece_bytes(const braid_graph *g) {
    size_t bytes = 0;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const bg_node *n = &g->nodes[i];
        bytes += bg_piece_size((size_t)n->ninputs * sizeof *n->inputs);
        if (n->name) bytes += bg_piece_size(strlen(n->name) + 1);
        if (n->device) bytes += bg_piece_size(strlen(n->device) + 1);
    }
    for (uint32_t i = 0; i < g->noutputs; i++)
        bytes += bg_piece_size(strlen(g->outputs[i].name) + 1);
    return bytes;
}

static braid_graph *clone(const braid_graph *g, bool into_shared,
                          uint32_t room) {
    if (g == NULL) return NULL;
    braid_graph_options o = {g->alloc, g->alloc_user};
    braid_graph *c = braid_graph_new(&o);
    if (c == NULL) return NULL;
    bool ok = bg_bulk_reserve(c, bg_piece_bytes(g));
    uint32_t cap = g->nnodes;
    if (room && cap) cap = room < BG_NONE - 1 - cap ? cap + room : BG_NONE - 1;
    if (ok && cap) {
        c->nodes = bg_alloc(c, (size_t)cap * sizeof *c->nodes);
        ok = c->nodes != NULL;
        c->cap = ok ? cap : 0;
    }
    for (uint32_t i = 0; ok && i < g->nnodes; i++) {
        bg_node *dst = &c->nodes[i];
        *dst = g->nodes[i];
        dst->inputs = NULL;
        dst->attr.data = NULL;
        dst->name = NULL;
        dst->device = NULL;
        dst->shared = NULL;
        c->nnodes++;
        ok = bg_node_copy(c, dst, &g->nodes[i], into_shared);
    }
    ok = ok && bg_clone_outputs(c, g);
    bg_bulk_close(c);
    if (!ok) {
        braid_graph_free(c);
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "bg_graph_clone: out of memory");
        return NULL;
    }
    c->status = g->status;
    memcpy(c->error, g->error, sizeof c->error);
    return c;
}

braid_graph *bg_graph_clone(const braid_graph *g) {
    return clone(g, false, 0);
}

braid_graph *bg_graph_clone_shared(const braid_graph *g) {
    return clone(g, true, 0);
}

/* A large node array that fills up is copied into one twice its size:
 * fresh memory the copy faults in (at 1.5M nodes, 470 MB copied into a
 * 940 MB block, a fifth of the compile). Room reserved here is never
 * touched unless used, so never backed by memory. */
braid_graph *bg_graph_clone_room(const braid_graph *g, uint32_t room) {
    return clone(g, false, room);
}

/* ---- equality
 * ------------------------------------------------------------------ */

static bool bg_str_eq(const char *a, const char *b) {
    if (a == NULL || b == NULL) return a == b;
    return strcmp(a, b) == 0;
}

/* bg_build zeroes every attribute its op does not use, so comparing all
 * fields is exact. Doubles compare by bits (NaN fill values are equal to
 * themselves, -0 differs from 0). */
static bool bg_attrs_eq(const bg_node *a, const bg_node *b) {
    const bg_attrs *x = &a->attr, *y = &b->attr;
    if (memcmp(x->value, y->value, sizeof x->value) != 0 ||
        x->seed != y->seed || x->axis != y->axis || x->flags != y->flags ||
        x->init != y->init ||
        x->axes != y->axes || memcmp(x->perm, y->perm, sizeof x->perm) ||
        memcmp(x->start, y->start, sizeof x->start) ||
        memcmp(x->step, y->step, sizeof x->step))
        return false;
    if ((x->data == NULL) != (y->data == NULL)) return false;
    return x->data == NULL || memcmp(x->data, y->data, bg_nbytes(a)) == 0;
}

static bool bg_node_eq(const bg_node *a, const bg_node *b) {
    if (a->op != b->op || a->dtype != b->dtype || a->rank != b->rank ||
        memcmp(a->dims, b->dims, sizeof a->dims) != 0 ||
        a->ninputs != b->ninputs)
        return false;
    if (a->ninputs &&
        memcmp(a->inputs, b->inputs, a->ninputs * sizeof *a->inputs) != 0)
        return false;
    return bg_attrs_eq(a, b) && bg_str_eq(a->name, b->name) &&
           bg_str_eq(a->device, b->device);
}

bool bg_graph_equal(const braid_graph *a, const braid_graph *b) {
    if (a == NULL || b == NULL) return a == b;
    if (a->status != b->status || a->nnodes != b->nnodes ||
        a->noutputs != b->noutputs)
        return false;
    for (uint32_t i = 0; i < a->nnodes; i++)
        if (!bg_node_eq(&a->nodes[i], &b->nodes[i])) return false;
    for (uint32_t i = 0; i < a->noutputs; i++)
        if (a->outputs[i].node != b->outputs[i].node ||
            !bg_str_eq(a->outputs[i].name, b->outputs[i].name))
            return false;
    return true;
}
