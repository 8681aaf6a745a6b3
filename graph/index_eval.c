/* graph/index_eval.c — gather and scatter in float64 (graph/index.h): the
 * reference evaluator's meaning of the two ops, walking bg_index_target
 * element by element. */
#include "graph/eval.h"
#include "graph/index.h"
#include "graph/scalar.h"

#include <stdlib.h>

/* The indices operand as int64 (its values are integers already; i64
 * beyond 2^53 is what the reference's doubles hold), geo switched to read
 * them so; NULL when out of memory. */
static int64_t *indices_i64(bg_index_geom *geo, const bg_node *idx,
                            const double *v) {
    int64_t n = bg_numel(idx);
    int64_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; p && i < n; i++)
        p[i] = v[i] >= 0x1p63 ? INT64_MAX : (int64_t)v[i];
    geo->idx64 = true;
    return p;
}

void bg_eval_gather(const braid_graph *g, const bg_node *n,
                    const double *const *in, double *out, int64_t lo,
                    int64_t hi) {
    bg_index_geom geo;
    bg_index_geom_of(g, n, &geo);
    int64_t *idx = indices_i64(&geo, &g->nodes[n->inputs[1]], in[1]);
    for (int64_t p = lo; p < hi; p++) {
        bg_index_bad bad;
        int64_t t = idx ? bg_index_target(&geo, p, idx, &bad) : -1;
        out[p] = t < 0 ? 0.0 : in[0][t];
    }
    free(idx);
}

void bg_eval_scatter(const braid_graph *g, const bg_node *n,
                     const double *const *in, double *out) {
    bg_index_geom geo;
    bg_index_geom_of(g, n, &geo);
    for (int64_t i = 0; i < geo.ndata; i++)
        out[i] = in[0][i];
    int64_t *idx = indices_i64(&geo, &g->nodes[n->inputs[1]], in[1]);
    braid_op op = bg_scatter_red_op(geo.red);
    for (int64_t p = 0; idx && p < geo.nwork; p++) {
        bg_index_bad bad;
        int64_t t = bg_index_target(&geo, p, idx, &bad);
        if (t < 0) continue;
        double x[2] = {out[t], in[2][p]};
        double v =
            op == BRAID_OP_COUNT_ ? x[1] : bg_scalar_apply(op, n->dtype, x);
        out[t] = bg_round(n->dtype, v);
    }
    free(idx);
}

bool bg_eval_index_bad(const braid_graph *g, const bg_node *n,
                       const double *idx, bg_index_bad *bad) {
    bg_index_geom geo;
    bg_index_geom_of(g, n, &geo);
    const bg_node *in = &g->nodes[n->inputs[1]];
    int64_t *v = indices_i64(&geo, in, idx);
    bool found = v && bg_index_first_bad(&geo, v, bg_numel(in), bad);
    free(v);
    return found;
}
