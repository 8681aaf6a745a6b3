/* passes/simplify_fold.c — constant folding (rule 3 of passes/simplify.c).
 *
 * A folded node must hold exactly the bits the executors would have
 * computed, or results would depend on whether simplify ran. The reference
 * evaluator computes in float64 and rounds each node to its dtype; for the
 * ops below that equals what any IEEE executor computes in the dtype (or in
 * f32 for f16/bf16), because the op is exact (data movement, sign, floor,
 * comparisons, casts, i32 arithmetic) or correctly rounded (+ - × ÷ √, where
 * rounding first to f64 or f32 and then to the dtype is innocuous: p ≥ 2q+2
 * bits). Transcendentals, pow, float sums and means, matmul and float
 * max/min/relu (whose executors may differ from the reference in the sign
 * of a zero or a NaN's payload) are left to the executors. */
#include "passes/simplify.h"

#include <stdlib.h>
#include <string.h>

bool bp_simp_exact_op(const braid_graph *g, const bg_node *n) {
    /* the dtype the op computes in: its (last) value operand's */
    braid_dtype t =
        n->ninputs ? g->nodes[n->inputs[n->ninputs - 1]].dtype : n->dtype;
    switch (n->op) {
    case BRAID_OP_NEG:
    case BRAID_OP_ABS:
    case BRAID_OP_SQRT:
    case BRAID_OP_FLOOR:
    case BRAID_OP_CEIL:
    case BRAID_OP_RECIPROCAL:
    case BRAID_OP_SQUARE:
    case BRAID_OP_ADD:
    case BRAID_OP_SUB:
    case BRAID_OP_MUL:
    case BRAID_OP_DIV:
    case BRAID_OP_EQ:
    case BRAID_OP_NE:
    case BRAID_OP_LT:
    case BRAID_OP_LE:
    case BRAID_OP_GT:
    case BRAID_OP_GE:
    case BRAID_OP_WHERE:
    case BRAID_OP_CAST:
    case BRAID_OP_RESHAPE:
    case BRAID_OP_PERMUTE:
    case BRAID_OP_SLICE:
    case BRAID_OP_CONCAT:
    case BRAID_OP_BROADCAST_TO:
        return true;
    case BRAID_OP_RELU:
    case BRAID_OP_MAX:
    case BRAID_OP_MIN:
    case BRAID_OP_SUM:
    case BRAID_OP_REDUCE_MAX:
    case BRAID_OP_REDUCE_MIN:
        return t == BRAID_I32; /* wrapping i32 sums are associative */
    default:
        return false;
    }
}

/* ---- evaluation ---------------------------------------------------------- */

/* Adds operand k of n to the scratch graph t: a rank-0 fill of its splat
 * value (scalar), or a copy of the source node. */
static uint32_t scratch_operand(bp_simp *s, braid_graph *t, const bg_node *n,
                                uint32_t k, bool scalar) {
    const bg_node *x = &s->plan->res.graph->nodes[n->inputs[k]];
    if (!scalar)
        return bg_build(t, x->op, NULL, 0, x->dtype, x->rank, x->dims, &x->attr,
                        NULL);
    bg_attrs a;
    memset(&a, 0, sizeof a);
    bp_simp_splat(s, n->inputs[k], &a.value[0]);
    return bg_build(t, BRAID_OP_FILL, NULL, 0, x->dtype, 0, NULL, &a, NULL);
}

/* Builds node id over copies of its operands in a scratch graph (with the
 * plan graph's allocator) and runs the reference evaluator on it. scalar:
 * every operand is a splat and the node is elementwise; it is evaluated at
 * rank 0 and out receives one element, else bg_nbytes(node) bytes. */
static braid_status evaluate(bp_simp *s, uint32_t id, bool scalar, void *out) {
    const braid_graph *g = s->plan->res.graph;
    const bg_node *n = &g->nodes[id];
    braid_graph_options o = {g->alloc, g->alloc_user};
    braid_graph *t = braid_graph_new(&o);
    uint32_t *ids = malloc((n->ninputs ? n->ninputs : 1) * sizeof *ids);
    braid_status st = BRAID_ERR_OUT_OF_MEMORY;
    if (t && ids) {
        for (uint32_t k = 0; k < n->ninputs; k++)
            ids[k] = scratch_operand(s, t, n, k, scalar);
        uint32_t r = bg_build(t, n->op, ids, n->ninputs, n->dtype,
                              scalar ? 0 : n->rank, n->dims, &n->attr, NULL);
        st = braid_graph_status(t);
        if (st != BRAID_OK) bg_set_last_error(st, "%s", braid_graph_error(t));
        if (st == BRAID_OK) st = braid_output(t, "v", (braid_tensor){r});
        braid_output_binding b = {
            "v", out, scalar ? braid_dtype_size(n->dtype) : bg_nbytes(n)};
        if (st == BRAID_OK) st = braid_reference_run(t, NULL, 0, &b, 1);
    } else {
        bg_set_last_error(st, "out of memory");
    }
    if (st != BRAID_OK)
        bg_set_last_error(st, "simplify: folding node %u (%s): %s",
                          (unsigned)id, bg_op(n->op)->name, braid_last_error());
    braid_graph_free(t);
    free(ids);
    return st;
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
    braid_status st = evaluate(s, id, true, elem);
    if (st != BRAID_OK) return failed(s, st);
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
    braid_status st = evaluate(s, id, false, buf);
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

uint32_t bp_simp_fold(bp_simp *s, uint32_t id) {
    const braid_graph *g = s->plan->res.graph;
    const bg_node *n = &g->nodes[id];
    if (n->ninputs == 0 || !bp_simp_exact_op(g, n)) return id;
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
