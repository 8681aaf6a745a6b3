/* braid/ops.h — the op table, listed once.
 *
 * Every op braid knows is one row of BRAID_OP_LIST, and every per-op fact
 * lives in its row: the public enum (BRAID_OP_<ID>), the text-format name,
 * the arity, the kind, the operand dtypes, the flags (comparison,
 * activation, differentiable, exact) and the cost weight. Code asks the
 * table (graph/ops.c) instead of testing enum ranges or keeping a private
 * switch of these facts. The scalar meaning of the elementwise ops lives
 * beside it in graph/scalar.h. Included by braid.h; not meant to be
 * included on its own. */
#ifndef BRAID_OPS_H
#define BRAID_OPS_H

/* Op kinds: what passes (fusion, placement) need to know of an op. */
typedef enum braid_op_kind {
    BRAID_KIND_SOURCE,      /* no inputs: input, constant, generators */
    BRAID_KIND_ELEMENTWISE, /* one output element from one element of each
                               (broadcast) input */
    BRAID_KIND_BROADCAST,   /* broadcast_to */
    BRAID_KIND_REDUCE,      /* reductions over a set of axes */
    BRAID_KIND_MATMUL,      /* (batched) matrix product */
    BRAID_KIND_ROW,         /* each row along the last axis from the same
                               row of the input x; output shape = x's
                               shape (softmax; layer_norm, whose gamma and
                               beta operands are rows of x's length) */
    BRAID_KIND_SHAPE,       /* reshape, permute, slice, concat */
    BRAID_KIND_COPY,        /* inserted by the compiler between devices */
    BRAID_KIND_FUSED,       /* inserted by the compiler: a fused group */
    BRAID_KIND_COLLECTIVE,  /* one member of a collective group (all_reduce,
                               all_gather, broadcast, reduce_scatter):
                               docs/multi-gpu.md */
    /* state across runs (issue #15): assign, which writes a variable's
       persistent bytes; docs/training.md */
    BRAID_KIND_STATE,
    /* gather, scatter (issue #13): data moved by the values of an i32
       indices operand (graph/index.h) */
    BRAID_KIND_INDEX,
    /* conv ops: */
    BRAID_KIND_CONV,        /* convolution over 1-3 spatial axes (conv,
                               conv_transpose): x, w[, bias] */
    BRAID_KIND_WINDOW,      /* each output element from a window of the
                               spatial axes of x [N, C, spatial...]
                               (pooling; graph/window.h) */
    /* axis ops (argmax, argmin, topk, cumsum): each line along attr.axis
     * of the one input gives the same line of the output (argmax, argmin:
     * one element; topk: k; cumsum: all of it) */
    BRAID_KIND_AXIS,
    /* attention (issue 14): softmax(q·kᵀ·scale + mask)·v per batch and head,
     * q [B,S,H,D], k and v [B,T,H,D], an optional additive mask
     * (graph/attention.h) */
    BRAID_KIND_ATTENTION,
    BRAID_KIND_COUNT_
} braid_op_kind;

/* Operand dtypes an op accepts (for a source: the output dtypes). */
typedef enum braid_op_dtypes {
    BRAID_DTYPES_ANY,    /* every dtype, bool included */
    BRAID_DTYPES_NUMBER, /* the float dtypes and i32 */
    BRAID_DTYPES_FLOAT,  /* f32, f16, bf16, f64 */
    BRAID_DTYPES_INT,    /* the integer dtypes computed in i32: i32 (bitwise
                            ops and shifts; elemwise helper) */
    BRAID_DTYPES_COUNT_
} braid_op_dtypes;

/* Op flags (bits of the flags column). */
enum {
    /* The result is bool (0/1), whatever the operands' dtype. */
    BRAID_OPF_COMPARE = 1u << 0,
    /* A matmul may absorb it as an epilogue after its bias (docs/fusion.md). */
    BRAID_OPF_ACTIVATION = 1u << 1,
    /* Has a gradient with respect to its float operands: braid_grad has a
     * rule for it (graph/grad_rules*.c; docs/training.md). An op with a
     * float result on a path from a wrt tensor to the loss that has
     * neither this flag nor BRAID_OPF_ZERO_GRAD is an error of braid_grad
     * naming the node. Comparisons give bool, through which no gradient
     * flows. */
    BRAID_OPF_DIFFERENTIABLE = 1u << 2,
    /* Exact or correctly rounded in every dtype it accepts (data movement,
     * sign, floor, comparisons, + - * / sqrt), so evaluating it in float64
     * and rounding gives every IEEE executor's bits; ops on i32 are exact
     * whatever this says. Constant folding relies on it. */
    BRAID_OPF_EXACT = 1u << 3,
    /* Piecewise constant (floor, ceil): braid_grad passes a zero gradient
     * through it by convention (docs/training.md) instead of failing. */
    BRAID_OPF_ZERO_GRAD = 1u << 5,
    /* Its kernels may find a value that makes the run fail (an index out
     * of range, a value a range-checked cast cannot hold): they record it
     * in the executor's run check instead of touching memory outside their
     * operands or wrapping (docs/architecture.md, "Run checks"). For cast
     * only the narrowing casts from i64 check (bg_cast_checked);
     * bg_node_run_check says which nodes do. */
    BRAID_OPF_RUN_CHECK = 1u << 6,
};

/* X(ID, "name", arity, kind, dtypes, flags, flops)
 *   arity  inputs, -1 variadic
 *   kind   BRAID_KIND_<kind>: what fusion and placement need to know
 *   dtypes BRAID_DTYPES_<dtypes>: the operand dtypes the builder accepts
 *          (where: of its two values; the condition is bool)
 *   flags  BRAID_OPF_* bits
 *   flops  arithmetic per output element in placement's cost model (basic
 *          arithmetic 1, division and roots 4, transcendentals 8, pow 16,
 *          a uniform draw 16, a normal draw 48; matmul: per multiply-add;
 *          reductions: per input element; softmax: max, sub, exp, sum,
 *          div; layer_norm: sum, sub, square, sum, sub, mul, mul, add;
 *          attention: per multiply-add of its two products, like matmul;
 *          windows (pooling): per tap of a window; axis ops: per
 *          input element, topk a sort's compares; 0: memory traffic
 *          only) */
/* clang-format off */
#define BRAID_OP_LIST(X) \
    X(INPUT, "input", 0, SOURCE, ANY, 0, 0) \
    X(CONSTANT, "constant", 0, SOURCE, ANY, 0, 0) \
    X(FILL, "fill", 0, SOURCE, ANY, 0, 0) \
    X(IOTA, "iota", 0, SOURCE, NUMBER, 0, 0) \
    X(RANDOM_UNIFORM, "random_uniform", 0, SOURCE, FLOAT, 0, 16) \
    X(RANDOM_NORMAL, "random_normal", 0, SOURCE, FLOAT, 0, 48) \
    X(NEG, "neg", 1, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(ABS, "abs", 1, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(EXP, "exp", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(LOG, "log", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(SQRT, "sqrt", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 4) \
    X(RSQRT, "rsqrt", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 4) \
    X(SIN, "sin", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(COS, "cos", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(TAN, "tan", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(TANH, "tanh", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_ACTIVATION, 8) \
    X(SIGMOID, "sigmoid", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_ACTIVATION, 8) \
    X(RELU, "relu", 1, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_ACTIVATION, 1) \
    X(GELU, "gelu", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_ACTIVATION, 8) \
    X(SILU, "silu", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_ACTIVATION, 8) \
    X(ERF, "erf", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(FLOOR, "floor", 1, ELEMENTWISE, FLOAT, BRAID_OPF_EXACT|BRAID_OPF_ZERO_GRAD, 1) \
    X(CEIL, "ceil", 1, ELEMENTWISE, FLOAT, BRAID_OPF_EXACT|BRAID_OPF_ZERO_GRAD, 1) \
    X(RECIPROCAL, "reciprocal", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 4) \
    X(SQUARE, "square", 1, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(ADD, "add", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(SUB, "sub", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(MUL, "mul", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(DIV, "div", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 4) \
    X(POW, "pow", 2, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 16) \
    X(MAX, "max", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(MIN, "min", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(EQ, "eq", 2, ELEMENTWISE, ANY, BRAID_OPF_COMPARE|BRAID_OPF_EXACT, 1) \
    X(NE, "ne", 2, ELEMENTWISE, ANY, BRAID_OPF_COMPARE|BRAID_OPF_EXACT, 1) \
    X(LT, "lt", 2, ELEMENTWISE, NUMBER, BRAID_OPF_COMPARE|BRAID_OPF_EXACT, 1) \
    X(LE, "le", 2, ELEMENTWISE, NUMBER, BRAID_OPF_COMPARE|BRAID_OPF_EXACT, 1) \
    X(GT, "gt", 2, ELEMENTWISE, NUMBER, BRAID_OPF_COMPARE|BRAID_OPF_EXACT, 1) \
    X(GE, "ge", 2, ELEMENTWISE, NUMBER, BRAID_OPF_COMPARE|BRAID_OPF_EXACT, 1) \
    X(WHERE, "where", 3, ELEMENTWISE, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(CAST, "cast", 1, ELEMENTWISE, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT|BRAID_OPF_RUN_CHECK, 1) \
    X(MATMUL, "matmul", 2, MATMUL, FLOAT, BRAID_OPF_DIFFERENTIABLE, 2) \
    X(SUM, "sum", 1, REDUCE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(MEAN, "mean", 1, REDUCE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(REDUCE_MAX, "reduce_max", 1, REDUCE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(REDUCE_MIN, "reduce_min", 1, REDUCE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(SOFTMAX, "softmax", 1, ROW, FLOAT, BRAID_OPF_DIFFERENTIABLE, 15) \
    X(RESHAPE, "reshape", 1, SHAPE, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 0) \
    X(PERMUTE, "permute", 1, SHAPE, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 0) \
    X(SLICE, "slice", 1, SHAPE, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 0) \
    X(CONCAT, "concat", -1, SHAPE, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 0) \
    X(BROADCAST_TO, "broadcast_to", 1, BROADCAST, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 0) \
    X(COPY, "copy", 1, COPY, ANY, BRAID_OPF_DIFFERENTIABLE, 0) \
    X(FUSED, "fused", -1, FUSED, ANY, 0, 0) \
    X(ALL_REDUCE, "all_reduce", -1, COLLECTIVE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(ALL_GATHER, "all_gather", -1, COLLECTIVE, ANY, BRAID_OPF_DIFFERENTIABLE, 0) \
    X(BROADCAST, "broadcast", -1, COLLECTIVE, ANY, BRAID_OPF_DIFFERENTIABLE, 0) \
    X(REDUCE_SCATTER, "reduce_scatter", -1, COLLECTIVE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    /* elemwise helper (issue 13): more unary ops, mod/fmod, bitwise ops */ \
    X(ASIN, "asin", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(ACOS, "acos", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(ATAN, "atan", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(SINH, "sinh", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(COSH, "cosh", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(ASINH, "asinh", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(ACOSH, "acosh", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(ATANH, "atanh", 1, ELEMENTWISE, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(SIGN, "sign", 1, ELEMENTWISE, NUMBER, BRAID_OPF_EXACT|BRAID_OPF_ZERO_GRAD, 1) \
    X(ROUND, "round", 1, ELEMENTWISE, FLOAT, BRAID_OPF_EXACT|BRAID_OPF_ZERO_GRAD, 1) \
    X(MOD, "mod", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 4) \
    X(FMOD, "fmod", 2, ELEMENTWISE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 4) \
    X(BITWISE_AND, "bitwise_and", 2, ELEMENTWISE, INT, BRAID_OPF_EXACT, 1) \
    X(BITWISE_OR, "bitwise_or", 2, ELEMENTWISE, INT, BRAID_OPF_EXACT, 1) \
    X(BITWISE_XOR, "bitwise_xor", 2, ELEMENTWISE, INT, BRAID_OPF_EXACT, 1) \
    X(BITWISE_NOT, "bitwise_not", 1, ELEMENTWISE, INT, BRAID_OPF_EXACT, 1) \
    X(SHIFT_LEFT, "shift_left", 2, ELEMENTWISE, INT, BRAID_OPF_EXACT, 1) \
    X(SHIFT_RIGHT, "shift_right", 2, ELEMENTWISE, INT, BRAID_OPF_EXACT, 1) \
    /* state across runs (issue #15, docs/training.md) */ \
    X(VARIABLE, "variable", 0, SOURCE, ANY, 0, 0) \
    X(ASSIGN, "assign", -1, STATE, ANY, 0, 0) \
    /* gather, scatter (issue #13): docs/ops.md */ \
    X(GATHER, "gather", 2, INDEX, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_RUN_CHECK, 0) \
    X(SCATTER, "scatter", 3, INDEX, ANY, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_RUN_CHECK, 1) \
    /* conv ops (flops: per multiply-add of the convolution; gradients: \
     * graph/grad_conv.c) */ \
    X(CONV, "conv", -1, CONV, FLOAT, BRAID_OPF_DIFFERENTIABLE, 2) \
    X(CONV_TRANSPOSE, "conv_transpose", -1, CONV, FLOAT, BRAID_OPF_DIFFERENTIABLE, 2) \
    /* pooling and resize (issue 13); their gradients: graph/grad_window.c */ \
    X(MAX_POOL, "max_pool", 1, WINDOW, NUMBER, BRAID_OPF_DIFFERENTIABLE|BRAID_OPF_EXACT, 1) \
    X(AVG_POOL, "avg_pool", 1, WINDOW, FLOAT, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(RESIZE, "resize", 1, WINDOW, FLOAT, BRAID_OPF_DIFFERENTIABLE, 2) \
    /* index ops: argmax/argmin, topk, cumsum, reduce_prod (docs/ops.md) */ \
    X(ARGMAX, "argmax", 1, AXIS, NUMBER, 0, 1) \
    X(ARGMIN, "argmin", 1, AXIS, NUMBER, 0, 1) \
    X(TOPK_VALUES, "topk_values", 1, AXIS, NUMBER, BRAID_OPF_DIFFERENTIABLE, 8) \
    X(TOPK_INDICES, "topk_indices", 1, AXIS, NUMBER, 0, 8) \
    X(CUMSUM, "cumsum", 1, AXIS, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    X(REDUCE_PROD, "reduce_prod", 1, REDUCE, NUMBER, BRAID_OPF_DIFFERENTIABLE, 1) \
    /* layer normalisation over the last axis (issue 14): x, gamma, beta; \
     * eps in attr.value[0] (docs/ops.md) */ \
    X(LAYER_NORM, "layer_norm", 3, ROW, FLOAT, BRAID_OPF_DIFFERENTIABLE, 8) \
    /* fused attention (issue 14): q, k, v[, mask]; scale in attr.value[0], \
     * BRAID_ATTENTION_* in attr.flags (docs/ops.md); gradient: \
     * graph/grad_attention.c */ \
    X(ATTENTION, "attention", -1, ATTENTION, FLOAT, BRAID_OPF_DIFFERENTIABLE, 2)
/* clang-format on */

typedef enum braid_op {
#define BRAID_OP_ENUM_(id, name, arity, kind, dtypes, flags, flops)            \
    BRAID_OP_##id,
    BRAID_OP_LIST(BRAID_OP_ENUM_)
#undef BRAID_OP_ENUM_
        BRAID_OP_COUNT_
} braid_op;

#endif /* BRAID_OPS_H */
