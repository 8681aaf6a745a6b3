/* tests/support/axis_cases.h — random single-op cases of the index ops
 * (argmax, argmin, topk values and indices, cumsum, reduce_prod,
 * log-sum-exp), shared by the CPU suite (tests/test_op_axis.c) and the GPU
 * suite (tests/test_cuda_axis.c) so both run the same cases against the
 * reference evaluator. */
#ifndef BRAID_TESTS_AXIS_CASES_H
#define BRAID_TESTS_AXIS_CASES_H

#include "tests/support/op_cases.h"

/* Which op a case builds. */
typedef enum ts_axis_op {
    TS_AX_ARGMAX,
    TS_AX_ARGMIN,
    TS_AX_TOPK_VALUES,
    TS_AX_TOPK_INDICES,
    TS_AX_CUMSUM,
    TS_AX_PROD,
    TS_AX_LOGSUMEXP,
    TS_AX_COUNT_
} ts_axis_op;

/* One case: a graph with input "x", the tensor to compare (y), the range
 * x is filled from and a description for messages. */
typedef struct ts_axis_case {
    braid_graph *g; /* owned: free with braid_graph_free */
    braid_tensor y; /* the op's result */
    ts_range range; /* x's values */
    char what[200]; /* "argmax f16[3,700,2] axis=1 keepdims ties" */
} ts_axis_case;

/* Case number seed of op: a random dtype the op accepts, a random shape of
 * rank 1..4 (a quarter with one long axis of 200..max_len elements, a
 * quarter with an inner run of 32..80 lines), a random axis (given
 * negative half the time) and flags; half of the ranges are small integers
 * so that ties happen. Asserts that building succeeded. */
ts_axis_case ts_axis_case_make(ts_axis_op op, uint64_t seed, int64_t max_len);

/* A case with literal values: the NaN rules (which 0) or ties (which 1).
 * The graph has input "x" (f32, n values) and several outputs. */
typedef struct ts_axis_literal {
    braid_graph *g;            /* owned: free with braid_graph_free */
    const float *x;            /* x's values (static) */
    int64_t n;                 /* their count */
    const double *const *want; /* per output, its values (static) */
} ts_axis_literal;

#define TS_AXIS_LITERALS 2
ts_axis_literal ts_axis_literal_make(int which);

/* io->out (an executor's) and io->ref (the reference's) both equal
 * l->want, NaN where want is NaN; else false with a message. */
bool ts_axis_literal_check(const ts_axis_literal *l, const ts_io *io, char *msg,
                           size_t size);

#endif /* BRAID_TESTS_AXIS_CASES_H */
