/* tests/support/conv_cases.h — random convolution cases for the conv
 * ops' suites (tests/test_op_conv.c on the CPU, tests/test_cuda_conv.c on
 * a GPU): shapes and attributes drawn so that the result is never empty,
 * and the graph with inputs x, w[, b] and output y. */
#ifndef BRAID_TESTS_CONV_CASES_H
#define BRAID_TESTS_CONV_CASES_H

#include "tests/support/support.h"

#include <stddef.h>

/* One case: shapes and attributes. */
typedef struct ts_conv_case {
    bool transpose, bias;
    int s;                 /* spatial rank */
    int64_t N, G, Cg, OCg; /* batch, groups, channels per group */
    int64_t in[3], k[3];   /* input extents, kernel */
    braid_conv_params p;
} ts_conv_case;

/* The case in words, for messages. */
const char *ts_conv_case_str(const ts_conv_case *c, char *buf, size_t n);
/* A random valid case (1 to 3 spatial axes, strides 1..3, dilations 1..2,
 * pads 0..2 at each end, groups 1..3 or depthwise, bias or not; a
 * conv_transpose also output_padding). 3-D cases stay small. */
ts_conv_case ts_conv_random_case(uint64_t *st, bool transpose);
/* The case as a graph of dtype dt: inputs "x", "w"[, "b"], output "y";
 * asserts that it builds. */
braid_graph *ts_conv_case_graph(const ts_conv_case *c, braid_dtype dt);
/* The same conv (not conv_transpose) in graph/conv.c's channels-last
 * form, between permutes: the same inputs "x", "w"[, "b"] and output "y"
 * (channels first) as ts_conv_case_graph's, so both graphs take the same
 * bindings; x and w go channels last through permutes, and y comes back. */
braid_graph *ts_conv_case_graph_channels_last(const ts_conv_case *c,
                                              braid_dtype dt);

#endif
