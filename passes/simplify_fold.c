/* passes/simplify_fold.c — constant folding (rule 3 of passes/simplify.c).
 *
 * A folded node must hold exactly the bits the executors would have
 * computed, or results would depend on whether simplify ran. Folding
 * evaluates with graph/eval.c (the reference evaluator's core: the ops'
 * meaning of graph/scalar.h in float64, each node rounded to its dtype);
 * for the ops the table flags BRAID_OPF_EXACT, and every op on i32, that
 * equals what any IEEE executor computes in the dtype (or in f32 for
 * f16/bf16), because the op is exact (data movement, sign, floor,
 * comparisons, casts, i32 arithmetic) or correctly rounded (+ - × ÷ √, where
 * rounding first to f64 or f32 and then to the dtype is innocuous: p ≥ 2q+2
 * bits). Transcendentals, pow, float sums and means, matmul and float
 * max/min/relu (whose executors may differ in the sign of a zero or a NaN's
 * payload) are left to the executors. */
#include "graph/eval.h"
#include "graph/scalar.h"
#include "passes/simplify.h"

#include <stdlib.h>
#include <string.h>

bool bp_simp_exact_op(const braid_graph *g, const bg_node *n) {
    /* the dtype the op computes in: its (last) value operand's */
    braid_dtype t =
        n->ninputs ? g->nodes[n->inputs[n->ninputs - 1]].dtype : n->dtype;
    braid_op_kind k = bg_op(n->op)->kind;
    if (bg_op_has(n->op, BRAID_OPF_EXACT)) return true;
    /* wrapping i32 arithmetic and sums are exact and associative */
    return t == BRAID_I32 &&
           (k == BRAID_KIND_ELEMENTWISE || k == BRAID_KIND_REDUCE);
}

/* ---- evaluation ---------------------------------------------------------- */

/* Node id evaluated by graph/eval.c (the reference evaluator's core) from
 * its operands, value sources evaluated first; out receives
 * bg_nbytes(node) bytes. */
static braid_status evaluate(const braid_graph *g, uint32_t id, void *out) {
    const bg_node *n = &g->nodes[id];
    double *in[3] = {NULL, NULL, NULL}, **ins = in;
    double *vals =
        malloc((size_t)(bg_numel(n) ? bg_numel(n) : 1) * sizeof *vals);
    bool ok = vals != NULL;
    if (n->ninputs > 3) ins = calloc(n->ninputs, sizeof *ins);
    ok = ok && ins != NULL;
    for (uint32_t k = 0; ok && k < n->ninputs; k++) {
        int64_t m = bg_numel(&g->nodes[n->inputs[k]]);
        ins[k] = malloc((size_t)(m ? m : 1) * sizeof(double));
        ok =
            ins[k] != NULL && bg_eval_node(g, n->inputs[k], NULL, ins[k], NULL);
    }
    ok = ok && bg_eval_node(g, id, (const double *const *)ins, vals, NULL);
    for (int64_t i = 0; ok && i < bg_numel(n); i++)
        bg_store(n->dtype, out, i, vals[i]);
    for (uint32_t k = 0; ins && k < n->ninputs; k++)
        free(ins[k]);
    if (ins != in) free(ins);
    free(vals);
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "simplify: out of memory folding node %u (%s)",
                             (unsigned)id, bg_op(n->op)->name);
}

/* Elementwise node id of splat operands, on one element: its value. */
static double evaluate_splat(bp_simp *s, uint32_t id) {
    const braid_graph *g = s->plan->res.graph;
    const bg_node *n = &g->nodes[id];
    double x[3] = {0.0, 0.0, 0.0};
    for (uint32_t k = 0; k < n->ninputs && k < 3; k++) {
        bp_simp_splat(s, n->inputs[k], &x[k]);
        x[k] = bg_round(g->nodes[n->inputs[k]].dtype, x[k]);
    }
    braid_dtype t = g->nodes[n->inputs[n->ninputs - 1]].dtype;
    return bg_round(n->dtype, bg_scalar_apply(n->op, t, x));
}

/* ---- replacement nodes --------------------------------------------------- */

static uint32_t emit_fill(bp_simp *s, uint32_t id, double v) {
    const bg_node *n = &s->plan->res.graph->nodes[id];
    int64_t dims[BRAID_MAX_RANK];
    memcpy(dims, n->dims, sizeof dims);
    bg_attrs a;
    memset(&a, 0, sizeof a);
    a.value[0] = v;
    return bp_simp_emit(s, id, BRAID_OP_FILL, NULL, 0, n->dtype, n->rank, dims,
                        &a, NULL);
}

/* The value of a buffer of numel elements of dtype t when they are all the
 * same bits and a fill of that value reproduces them; empty buffers are
 * splats of 0. */
static bool buffer_splat(braid_dtype t, const void *buf, int64_t numel,
                         double *v) {
    size_t es = braid_dtype_size(t);
    const unsigned char *b = buf;
    *v = 0.0;
    if (numel == 0) return true;
    for (int64_t i = 1; i < numel; i++)
        if (memcmp(b + (size_t)i * es, b, es) != 0) return false;
    union {
        double d;
        unsigned char b[8];
    } slot;
    slot.d = 0.0;
    *v = bg_load(t, b, 0);
    bg_store(t, slot.b, 0, *v);
    return memcmp(slot.b, b, es) == 0;
}

static uint32_t failed(bp_simp *s, braid_status st) {
    if (s->status == BRAID_OK) s->status = st;
    return BG_NONE;
}

/* Every operand a splat: shape ops and broadcasts pass the value through
 * (concat only when all operands agree), elementwise ops are evaluated on
 * one element. Returns id when the node is not folded this way. */
static uint32_t fold_splat(bp_simp *s, uint32_t id) {
    const bg_node *n = &s->plan->res.graph->nodes[id];
    braid_op_kind kind = bg_op(n->op)->kind;
    double v, w;
    if (kind == BRAID_KIND_SHAPE || kind == BRAID_KIND_BROADCAST) {
        bp_simp_splat(s, n->inputs[0], &v);
        for (uint32_t k = 1; k < n->ninputs; k++)
            if (!bp_simp_splat(s, n->inputs[k], &w) ||
                memcmp(&v, &w, sizeof v) != 0)
                return id;
        return emit_fill(s, id, v);
    }
    if (kind != BRAID_KIND_ELEMENTWISE) return id;
    unsigned char elem[8];
    bg_store(n->dtype, elem, 0, evaluate_splat(s, id));
    return buffer_splat(n->dtype, elem, 1, &v) ? emit_fill(s, id, v) : id;
}

/* Evaluates the whole node: a fill when the result is a splat, else a
 * constant. */
static uint32_t fold_full(bp_simp *s, uint32_t id) {
    const bg_node *n = &s->plan->res.graph->nodes[id];
    size_t bytes = bg_nbytes(n);
    int64_t numel = bg_numel(n);
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "simplify: out of memory folding node %u",
                          (unsigned)id);
        return failed(s, BRAID_ERR_OUT_OF_MEMORY);
    }
    braid_status st = evaluate(s->plan->res.graph, id, buf);
    uint32_t r;
    double v;
    if (st != BRAID_OK) {
        r = failed(s, st);
    } else if (buffer_splat(n->dtype, buf, numel, &v)) {
        r = emit_fill(s, id, v);
    } else {
        int64_t dims[BRAID_MAX_RANK];
        memcpy(dims, n->dims, sizeof dims);
        r = bp_simp_emit(s, id, BRAID_OP_CONSTANT, NULL, 0, n->dtype, n->rank,
                         dims, NULL, buf);
    }
    free(buf);
    return r;
}

/* A generator whose bytes fit opts.fold_generators: made once, here. */
static bool fold_generator(const bp_plan *p, const bg_node *n) {
    bool gen = n->op == BRAID_OP_RANDOM_UNIFORM ||
               n->op == BRAID_OP_RANDOM_NORMAL || n->op == BRAID_OP_IOTA;
    return gen && p->in.opts.fold_generators > 0 &&
           bg_nbytes(n) <= p->in.opts.fold_generators;
}

/* Folding computes in double: a node with an i64 result or operand (values
 * beyond ±2^53) is left to the executors, and so is a checked cast, whose
 * out-of-range values must fail the run. */
static bool f64_exact_node(const braid_graph *g, const bg_node *n) {
    if (!bg_dtype_f64_exact(n->dtype)) return false;
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (!bg_dtype_f64_exact(g->nodes[n->inputs[k]].dtype)) return false;
    return true;
}

uint32_t bp_simp_fold(bp_simp *s, uint32_t id) {
    const braid_graph *g = s->plan->res.graph;
    const bg_node *n = &g->nodes[id];
    if (fold_generator(s->plan, n)) {
        s->plan->report.folded_bytes += bg_nbytes(n);
        return fold_full(s, id);
    }
    if (n->ninputs == 0 || !bp_simp_exact_op(g, n) || !f64_exact_node(g, n))
        return id;
    bool all_splat = true;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = &g->nodes[n->inputs[k]];
        double v;
        if (!bp_simp_is_value_source(x->op)) return id;
        all_splat = all_splat && bp_simp_splat(s, n->inputs[k], &v);
    }
    if (all_splat) {
        uint32_t r = fold_splat(s, id);
        if (r != id) return r;
    }
    if (bg_numel(n) > BP_SIMP_FOLD_MAX) return id;
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (bg_numel(&g->nodes[n->inputs[k]]) > BP_SIMP_FOLD_INPUT_MAX)
            return id;
    return fold_full(s, id);
}
