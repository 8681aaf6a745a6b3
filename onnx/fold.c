/* onnx/fold.c — one ONNX node: find its mapping, build it, and when every
 * input is static, build it in a scratch graph instead and evaluate that
 * with graph/eval.c, the reference evaluator's semantics, so import-time
 * folding computes exactly what braid computes (one source of truth). */
#include "onnx/onnx_internal.h"
#include "graph/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

braid_status ox_run_node(ox_import *im, const Onnx__NodeProto *np);

static void node_free(ox_node *n) {
    for (int k = 0; k < OX_MAX_IO; k++) {
        free(n->out_sv[k]);
        n->out_sv[k] = NULL;
    }
}

/* Evaluates scratch graph s node by node; the outputs' values become the
 * node's static results. Returns false (nothing recorded) when a result is
 * too large to keep at import time. */
static bool fold_eval(ox_node *n, braid_graph *s) {
    uint32_t cnt = braid_graph_node_count(s);
    double **vals = calloc(cnt + 1, sizeof *vals);
    bool ok = vals != NULL;
    for (uint32_t id = 0; ok && id < cnt; id++) {
        const bg_node *nd = bg_node_at(s, id);
        int64_t m = bg_numel(nd);
        const double **ins = calloc(nd->ninputs + 1, sizeof *ins);
        ok = m <= OX_FOLD_MAX && ins &&
             (vals[id] = malloc((size_t)m * sizeof(double) + 1)) != NULL;
        for (uint32_t j = 0; ok && j < nd->ninputs; j++)
            ins[j] = vals[nd->inputs[j]];
        ok = ok && bg_eval_node(s, id, (const double *const *)ins, vals[id],
                                NULL);
        free(ins);
    }
    for (int k = 0; ok && k < n->nout; k++) {
        braid_tensor t = n->out[k];
        if (!braid_tensor_valid(t) || n->out_sv[k]) continue;
        const bg_node *nd = bg_node_at(s, t.id);
        ok = ox_out_static(n, k, n->out_elem[k], nd->rank, nd->dims,
                           vals[t.id]) == BRAID_OK;
    }
    for (uint32_t id = 0; vals && id < cnt; id++) free(vals[id]);
    free(vals);
    return ok;
}

/* Runs the mapping into graph g; checks the graph's sticky error. */
static braid_status map_into(ox_node *n, const ox_op *op, braid_graph *g) {
    n->g = g;
    for (int k = 0; k < OX_MAX_IO; k++) n->out[k] = BRAID_NONE;
    braid_status s = op->map(n);
    if (s == BRAID_OK && n->im->status != BRAID_OK) s = n->im->status;
    if (s == BRAID_OK && braid_graph_status(g) != BRAID_OK)
        s = ox_node_fail(n, braid_graph_status(g), "%s", braid_graph_error(g));
    return s;
}

static braid_status fold(ox_node *n, const ox_op *op, bool *done) {
    *done = false;
    braid_graph *s = braid_graph_new(NULL);
    if (!s) return ox_node_fail(n, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    braid_status st = map_into(n, op, s);
    if (st == BRAID_OK) *done = fold_eval(n, s);
    braid_graph_free(s);
    if (!*done) node_free(n);
    return st;
}

static braid_status collect_inputs(ox_node *n) {
    const Onnx__NodeProto *np = n->np;
    if (np->n_input > OX_MAX_IO || np->n_output > OX_MAX_IO)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "more than %d inputs or "
                            "outputs", OX_MAX_IO);
    n->nin = (int)np->n_input;
    n->nout = (int)np->n_output;
    n->folding = true;
    for (int k = 0; k < n->nin; k++) {
        const char *name = np->input[k];
        if (!name || !*name) continue; /* an absent optional input */
        ox_value *v = ox_find(n->im, name);
        if (!v)
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "input \"%s\" is "
                                "not produced by an earlier node, an "
                                "initializer or a graph input (dangling or "
                                "cyclic graph)", name);
        if (v->elem < 0)
            return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "input \"%s\" is an "
                                "optional output braid does not compute", name);
        n->in[k] = v;
        if (!v->sv) n->folding = false;
    }
    return BRAID_OK;
}

/* Records the node's outputs as values named after ONNX's tensors. */
static braid_status add_results(ox_node *n, uint32_t first) {
    ox_import *im = n->im;
    for (int k = 0; k < n->nout; k++) {
        const char *name = n->np->output[k];
        if (!name || !*name) continue;
        ox_value *v = ox_add(im, name);
        if (!v) return im->status;
        v->elem = n->out_elem[k];
        if (n->out_sv[k]) {
            v->sv = n->out_sv[k];
            n->out_sv[k] = NULL;
            v->rank = n->out_rank[k];
            memcpy(v->dims, n->out_dims[k], sizeof v->dims);
        } else if (braid_tensor_valid(n->out[k])) {
            v->t = n->out[k];
            braid_tensor_info(im->g, v->t, NULL, &v->rank, v->dims);
            if (v->t.id >= first) braid_set_name(im->g, v->t, name);
        } else {
            v->elem = -1; /* an optional output braid does not compute */
        }
    }
    return BRAID_OK;
}

braid_status ox_run_node(ox_import *im, const Onnx__NodeProto *np) {
    ox_node n = {.im = im, .np = np, .g = im->g};
    if (np->domain && *np->domain && strcmp(np->domain, "ai.onnx"))
        return ox_node_fail(&n, BRAID_ERR_UNSUPPORTED, "domain \"%s\" is not "
                            "supported (only ONNX's default domain)",
                            np->domain);
    const ox_op *op = ox_op_find(np->op_type ? np->op_type : "", im->opset);
    if (!op)
        return ox_node_fail(&n, BRAID_ERR_UNSUPPORTED, "braid has no mapping "
                            "for this op");
    braid_status s = collect_inputs(&n);
    bool done = false;
    if (s == BRAID_OK && n.folding && !(op->flags & OX_NOFOLD))
        s = fold(&n, op, &done);
    if (s == BRAID_OK && !done) {
        n.folding = false;
        uint32_t first = braid_graph_node_count(im->g);
        s = map_into(&n, op, im->g);
        if (s == BRAID_OK) s = add_results(&n, first);
    } else if (s == BRAID_OK) {
        s = add_results(&n, UINT32_MAX);
    }
    node_free(&n);
    return s;
}

/* ---- the op table's lookup ---------------------------------------------------- */

const ox_op *ox_op_find(const char *type, int opset) {
    const ox_op *tables[] = {ox_ops_elem, ox_ops_shape, ox_ops_nn,
                             ox_ops_layout, ox_ops_einsum, ox_ops_attention,
                             ox_ops_loss, ox_ops_index, ox_ops_conv};
    const ox_op *best = NULL;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const ox_op *o = tables[t]; o->type; o++)
            if (!strcmp(o->type, type) && o->since <= opset &&
                (!best || o->since > best->since))
                best = o;
    return best;
}
