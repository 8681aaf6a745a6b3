/* graph/scalar.c — the rules of graph/scalar.h applied to doubles, for the
 * reference evaluator and constant folding (graph/eval.c). Every switch is
 * generated from the lists in graph/scalar.h, so a new op needs no line
 * here. */
#include "graph/scalar.h"
#include "graph/graph.h"

static double unary_float(braid_op op, double x) {
#define BG_CASE_(id, rule, cf, cd)                                             \
    case BRAID_OP_##id:                                                        \
        return rule(double, x);
    switch (op) {
        BG_UNARY_OPS(BG_CASE_)
    default:
        return NAN;
    }
#undef BG_CASE_
}

static double unary_i32(braid_op op, int32_t x) {
#define BG_CASE_(id, rule, ci)                                                 \
    case BRAID_OP_##id:                                                        \
        return rule(x);
    switch (op) {
        BG_UNARY_I32_OPS(BG_CASE_)
    default:
        return NAN;
    }
#undef BG_CASE_
}

static double binary_float(braid_op op, double x, double y) {
#define BG_CASE_(id, rule, cf, cd)                                             \
    case BRAID_OP_##id:                                                        \
        return rule(double, x, y);
    switch (op) {
        BG_BINARY_OPS(BG_CASE_)
    default:
        return NAN;
    }
#undef BG_CASE_
}

static double binary_i32(braid_op op, int32_t x, int32_t y) {
#define BG_CASE_(id, rule, ci)                                                 \
    case BRAID_OP_##id:                                                        \
        return rule(x, y);
    switch (op) {
        BG_BINARY_I32_OPS(BG_CASE_)
    default:
        return NAN;
    }
#undef BG_CASE_
}

/* Exact on doubles for every dtype (each holds its values exactly). */
static double compare(braid_op op, double x, double y) {
#define BG_CASE_(id, cmp)                                                      \
    case BRAID_OP_##id:                                                        \
        return (x cmp y);
    switch (op) {
        BG_COMPARE_OPS(BG_CASE_)
    default:
        return NAN;
    }
#undef BG_CASE_
}

double bg_scalar_apply(braid_op op, braid_dtype t, const double *x) {
    if (op == BRAID_OP_WHERE) return x[0] != 0.0 ? x[1] : x[2];
    if (op == BRAID_OP_CAST || op == BRAID_OP_COPY) return x[0];
    if (bg_op_is_compare(op)) return compare(op, x[0], x[1]);
    if (!bg_op_accepts(op, t)) return NAN;
    bool fl = braid_dtype_is_float(t);
    if (bg_op(op)->arity == 1)
        return fl ? unary_float(op, x[0]) : unary_i32(op, (int32_t)x[0]);
    return fl ? binary_float(op, x[0], x[1])
              : binary_i32(op, (int32_t)x[0], (int32_t)x[1]);
}
