/* graph/optim.c — optimizers as builder helpers (docs/training.md).
 *
 * Each optimizer adds, per parameter, an elementwise update of the
 * parameter and its moments and one assign per variable; scalars (the
 * learning rate, the bias corrections) are rank-0 nodes broadcast into the
 * update, so the fusion pass makes the update one kernel per parameter
 * tensor. Nothing here runs: these are ordinary graph nodes. */
#include "graph/internal.h"

#include <stdio.h>
#include <string.h>

/* A scalar of p's dtype. */
static braid_tensor scalar(braid_graph *g, braid_tensor like, double v) {
    braid_dtype t = like.id < g->nnodes ? g->nodes[like.id].dtype : BRAID_F32;
    return braid_fill(g, t, 0, NULL, v);
}

/* A copy of the parameter's variable node (building more nodes moves the
 * node array; the name stays put), or false after recording why not. */
static bool param(braid_graph *g, braid_tensor p, braid_tensor gr,
                  const char *who, bg_node *out) {
    if (g->status != BRAID_OK) return false;
    if (p.id >= g->nnodes || g->nodes[p.id].op != BRAID_OP_VARIABLE) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "%s: parameter (node %u) is not a variable", who,
                (unsigned)p.id);
        return false;
    }
    if (gr.id >= g->nnodes) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "%s: the gradient of \"%s\" is an invalid tensor", who,
                g->nodes[p.id].name);
        return false;
    }
    *out = g->nodes[p.id];
    return true;
}

/* A zero-initialised variable named "<p's name><suffix>" like p. */
static braid_tensor moment(braid_graph *g, const bg_node *p,
                           const char *suffix) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", p->name, suffix);
    return braid_variable(g, name, p->dtype, p->rank, p->dims,
                          braid_init_fill(0));
}

static braid_status args(braid_graph *g, uint32_t n, const braid_tensor *p,
                         const braid_tensor *gr, const void *opts,
                         const char *who) {
    if (!g)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: graph is NULL", who);
    if (g->status != BRAID_OK) return g->status;
    if ((n && (!p || !gr)) || !opts)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: params, grads or options are NULL", who);
    return BRAID_OK;
}

braid_status braid_sgd(braid_graph *g, uint32_t n, const braid_tensor *params,
                       const braid_tensor *grads, const braid_sgd_options *o) {
    braid_status s = args(g, n, params, grads, o, "sgd");
    for (uint32_t i = 0; i < n && s == BRAID_OK; i++) {
        braid_tensor p = params[i], d = grads[i];
        bg_node pc;
        if (!param(g, p, d, "sgd", &pc)) break;
        const bg_node *pn = &pc;
        if (o->weight_decay != 0)
            d = braid_add(g, d, braid_mul(g, scalar(g, p, o->weight_decay), p));
        if (o->momentum != 0) {
            braid_tensor buf = moment(g, pn, ".momentum");
            braid_tensor nb =
                braid_add(g, braid_mul(g, scalar(g, p, o->momentum), buf), d);
            braid_assign(g, buf, nb);
            d = o->nesterov
                    ? braid_add(g, d,
                                braid_mul(g, scalar(g, p, o->momentum), nb))
                    : nb;
        }
        braid_assign(g, p,
                     braid_sub(g, p, braid_mul(g, scalar(g, p, o->lr), d)));
    }
    return s == BRAID_OK ? g->status : s;
}

void braid_adamw_options_init(braid_adamw_options *o) {
    if (o)
        *o = (braid_adamw_options){.lr = 1e-3,
                                   .beta1 = 0.9,
                                   .beta2 = 0.999,
                                   .eps = 1e-8,
                                   .weight_decay = 0.01};
}

/* The step counter t ← t + 1 (f32, from 0) and the bias corrections
 * 1/(1 − β1^t), 1/(1 − β2^t) of the new t, as f32 scalars. */
static void corrections(braid_graph *g, const braid_adamw_options *o,
                        braid_tensor *c1, braid_tensor *c2) {
    char name[256];
    snprintf(name, sizeof name, "%sstep", o->prefix ? o->prefix : "");
    braid_tensor t =
        braid_variable(g, name, BRAID_F32, 0, NULL, braid_init_fill(0));
    braid_tensor t1 = braid_add(g, t, braid_fill(g, BRAID_F32, 0, NULL, 1));
    braid_assign(g, t, t1);
    braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1);
    *c1 = braid_reciprocal(
        g, braid_sub(
               g, one,
               braid_pow(g, braid_fill(g, BRAID_F32, 0, NULL, o->beta1), t1)));
    *c2 = braid_reciprocal(
        g, braid_sub(
               g, one,
               braid_pow(g, braid_fill(g, BRAID_F32, 0, NULL, o->beta2), t1)));
}

/* m, v and p updates of one parameter (c1, c2 cast to its dtype). */
static void adamw_one(braid_graph *g, const braid_adamw_options *o,
                      braid_tensor p, const bg_node *pn, braid_tensor d,
                      braid_tensor c1, braid_tensor c2) {
    braid_tensor m = moment(g, pn, ".m"), v = moment(g, pn, ".v");
    braid_tensor m1 = braid_add(g, braid_mul(g, scalar(g, p, o->beta1), m),
                                braid_mul(g, scalar(g, p, 1 - o->beta1), d));
    braid_tensor v1 =
        braid_add(g, braid_mul(g, scalar(g, p, o->beta2), v),
                  braid_mul(g, scalar(g, p, 1 - o->beta2), braid_square(g, d)));
    if (pn->dtype != BRAID_F32) {
        c1 = braid_cast(g, c1, pn->dtype);
        c2 = braid_cast(g, c2, pn->dtype);
    }
    braid_tensor den =
        braid_add(g, braid_sqrt(g, braid_mul(g, v1, c2)), scalar(g, p, o->eps));
    braid_tensor upd = braid_div(g, braid_mul(g, m1, c1), den);
    if (o->weight_decay != 0)
        upd = braid_add(g, upd, braid_mul(g, scalar(g, p, o->weight_decay), p));
    braid_assign(g, m, m1);
    braid_assign(g, v, v1);
    braid_assign(g, p, braid_sub(g, p, braid_mul(g, scalar(g, p, o->lr), upd)));
}

braid_status braid_adamw(braid_graph *g, uint32_t n, const braid_tensor *params,
                         const braid_tensor *grads,
                         const braid_adamw_options *o) {
    braid_status s = args(g, n, params, grads, o, "adamw");
    if (s != BRAID_OK) return s;
    braid_tensor c1, c2;
    corrections(g, o, &c1, &c2);
    for (uint32_t i = 0; i < n; i++) {
        bg_node pc;
        if (!param(g, params[i], grads[i], "adamw", &pc)) break;
        adamw_one(g, o, params[i], &pc, grads[i], c1, c2);
    }
    return g->status;
}
