/* braid/ops.h — the op table, listed once.
 *
 * Every op braid knows is one row of BRAID_OP_LIST. The row drives the public
 * enum (BRAID_OP_<ID>), the text-format name, the arity (-1: variadic) and the
 * kind that passes use instead of switching over op names. Included by
 * braid.h; not meant to be included on its own. */
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
                               row of the one input; output shape = input
                               shape (softmax) */
    BRAID_KIND_SHAPE,       /* reshape, permute, slice, concat */
    BRAID_KIND_COPY,        /* inserted by the compiler between devices */
    BRAID_KIND_FUSED,       /* inserted by the compiler: a fused group */
    BRAID_KIND_COLLECTIVE,  /* one member of a collective group (all_reduce,
                               all_gather, broadcast, reduce_scatter):
                               docs/multi-gpu.md */
    BRAID_KIND_COUNT_
} braid_op_kind;

/* X(ID, "name", arity, kind) */
#define BRAID_OP_LIST(X)                                 \
    X(INPUT, "input", 0, BRAID_KIND_SOURCE)              \
    X(CONSTANT, "constant", 0, BRAID_KIND_SOURCE)        \
    X(FILL, "fill", 0, BRAID_KIND_SOURCE)                \
    X(IOTA, "iota", 0, BRAID_KIND_SOURCE)                \
    X(RANDOM_UNIFORM, "random_uniform", 0, BRAID_KIND_SOURCE) \
    X(RANDOM_NORMAL, "random_normal", 0, BRAID_KIND_SOURCE)   \
    X(NEG, "neg", 1, BRAID_KIND_ELEMENTWISE)             \
    X(ABS, "abs", 1, BRAID_KIND_ELEMENTWISE)             \
    X(EXP, "exp", 1, BRAID_KIND_ELEMENTWISE)             \
    X(LOG, "log", 1, BRAID_KIND_ELEMENTWISE)             \
    X(SQRT, "sqrt", 1, BRAID_KIND_ELEMENTWISE)           \
    X(RSQRT, "rsqrt", 1, BRAID_KIND_ELEMENTWISE)         \
    X(SIN, "sin", 1, BRAID_KIND_ELEMENTWISE)             \
    X(COS, "cos", 1, BRAID_KIND_ELEMENTWISE)             \
    X(TANH, "tanh", 1, BRAID_KIND_ELEMENTWISE)           \
    X(SIGMOID, "sigmoid", 1, BRAID_KIND_ELEMENTWISE)     \
    X(RELU, "relu", 1, BRAID_KIND_ELEMENTWISE)           \
    X(GELU, "gelu", 1, BRAID_KIND_ELEMENTWISE)           \
    X(SILU, "silu", 1, BRAID_KIND_ELEMENTWISE)           \
    X(ERF, "erf", 1, BRAID_KIND_ELEMENTWISE)             \
    X(FLOOR, "floor", 1, BRAID_KIND_ELEMENTWISE)         \
    X(CEIL, "ceil", 1, BRAID_KIND_ELEMENTWISE)           \
    X(RECIPROCAL, "reciprocal", 1, BRAID_KIND_ELEMENTWISE) \
    X(SQUARE, "square", 1, BRAID_KIND_ELEMENTWISE)       \
    X(ADD, "add", 2, BRAID_KIND_ELEMENTWISE)             \
    X(SUB, "sub", 2, BRAID_KIND_ELEMENTWISE)             \
    X(MUL, "mul", 2, BRAID_KIND_ELEMENTWISE)             \
    X(DIV, "div", 2, BRAID_KIND_ELEMENTWISE)             \
    X(POW, "pow", 2, BRAID_KIND_ELEMENTWISE)             \
    X(MAX, "max", 2, BRAID_KIND_ELEMENTWISE)             \
    X(MIN, "min", 2, BRAID_KIND_ELEMENTWISE)             \
    X(EQ, "eq", 2, BRAID_KIND_ELEMENTWISE)               \
    X(NE, "ne", 2, BRAID_KIND_ELEMENTWISE)               \
    X(LT, "lt", 2, BRAID_KIND_ELEMENTWISE)               \
    X(LE, "le", 2, BRAID_KIND_ELEMENTWISE)               \
    X(GT, "gt", 2, BRAID_KIND_ELEMENTWISE)               \
    X(GE, "ge", 2, BRAID_KIND_ELEMENTWISE)               \
    X(WHERE, "where", 3, BRAID_KIND_ELEMENTWISE)         \
    X(CAST, "cast", 1, BRAID_KIND_ELEMENTWISE)           \
    X(MATMUL, "matmul", 2, BRAID_KIND_MATMUL)            \
    X(SUM, "sum", 1, BRAID_KIND_REDUCE)                  \
    X(MEAN, "mean", 1, BRAID_KIND_REDUCE)                \
    X(REDUCE_MAX, "reduce_max", 1, BRAID_KIND_REDUCE)    \
    X(REDUCE_MIN, "reduce_min", 1, BRAID_KIND_REDUCE)    \
    X(SOFTMAX, "softmax", 1, BRAID_KIND_ROW)             \
    X(RESHAPE, "reshape", 1, BRAID_KIND_SHAPE)           \
    X(PERMUTE, "permute", 1, BRAID_KIND_SHAPE)           \
    X(SLICE, "slice", 1, BRAID_KIND_SHAPE)               \
    X(CONCAT, "concat", -1, BRAID_KIND_SHAPE)            \
    X(BROADCAST_TO, "broadcast_to", 1, BRAID_KIND_BROADCAST) \
    X(COPY, "copy", 1, BRAID_KIND_COPY)                  \
    X(FUSED, "fused", -1, BRAID_KIND_FUSED)              \
    X(ALL_REDUCE, "all_reduce", -1, BRAID_KIND_COLLECTIVE) \
    X(ALL_GATHER, "all_gather", -1, BRAID_KIND_COLLECTIVE) \
    X(BROADCAST, "broadcast", -1, BRAID_KIND_COLLECTIVE)   \
    X(REDUCE_SCATTER, "reduce_scatter", -1, BRAID_KIND_COLLECTIVE)

typedef enum braid_op {
#define BRAID_OP_ENUM_(id, name, arity, kind) BRAID_OP_##id,
    BRAID_OP_LIST(BRAID_OP_ENUM_)
#undef BRAID_OP_ENUM_
    BRAID_OP_COUNT_
} braid_op;

#endif /* BRAID_OPS_H */
