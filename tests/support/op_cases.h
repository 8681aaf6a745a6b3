/* tests/support/op_cases.h — helpers for single-op differential tests
 * (tests/test_ops*.c): shapes with the broadcasting edge cases, input value
 * ranges, and a run-and-compare step against the reference evaluator. */
#ifndef BRAID_TESTS_OP_CASES_H
#define BRAID_TESTS_OP_CASES_H

#include "tests/support/support.h"

/* dtype sets as bit masks (bit = 1u << dtype) */
#define TS_DT(d) (1u << (d))
#define TS_FLOATS                                                              \
    (TS_DT(BRAID_F32) | TS_DT(BRAID_F16) | TS_DT(BRAID_BF16) | TS_DT(BRAID_F64))
#define TS_NUMS (TS_FLOATS | TS_DT(BRAID_I32))
/* every dtype: i64 takes data movement, eq/ne, where and cast */
#define TS_ALL (TS_NUMS | TS_DT(BRAID_BOOL) | TS_DT(BRAID_I64))

/* for (each dtype dt in mask): the loop body follows the macro */
#define TS_FOR_DTYPES(dt, mask)                                                \
    for (braid_dtype dt = 0; dt < BRAID_DTYPE_COUNT_; dt++)                    \
        if ((mask)&TS_DT(dt))

/* A tensor shape. */
typedef struct ts_shape {
    int rank;                     /* number of dims */
    int64_t dims[BRAID_MAX_RANK]; /* the dims */
} ts_shape;

ts_shape ts_random_shape(uint64_t *st, int min_rank, int max_rank, int max_dim);
ts_shape ts_scalar_shape(void);
/* Two shapes that broadcast together; variant % 8 picks the case: equal,
 * tensor with scalar, scalar with tensor, size-1 dims on both sides, rank
 * mismatch, two scalars, some dims 1, empty ([0,d] with [d]). */
void ts_shape_pair(uint64_t *st, int variant, ts_shape *a, ts_shape *b);
const char *ts_shape_str(const ts_shape *s, char *buf, size_t n);
braid_tensor ts_shape_input(braid_graph *g, const char *name, braid_dtype dt,
                            const ts_shape *s);

/* How to fill one input. */
typedef struct ts_range {
    double lo, hi; /* uniform in [lo, hi] (floats), integers for i32 */
    bool flip;     /* negate every other element (|x| stays in [lo, hi]) */
    bool ints;     /* round floats to integers (so equality happens) */
} ts_range;

#define TS_RANGE(lo, hi) ((ts_range){(lo), (hi), false, false})
#define TS_I32_FULL TS_RANGE(-2147483648.0, 2147483647.0)
#define TS_SMALL_INTS ((ts_range){-2, 2, false, true})

/* Refills input i of io (dtype dt) from r. */
void ts_fill_input(ts_io *io, uint32_t i, braid_dtype dt, ts_range r,
                   uint64_t seed);

/* Marks y as output "y", builds io with inputs from ranges (one per graph
 * input; NULL: ts_io_new's defaults), runs executor and reference and
 * compares. False with a message in msg on any failure. */
bool ts_check_graph(braid_graph *g, braid_tensor y, const ts_range *ranges,
                    uint64_t seed, char *msg, size_t msgsize);

/* max_pool (max) or avg_pool of x [N, C, spatial...] by pp in graph/
 * window.h's channels-last form, between permutes: x goes channels last,
 * the pool runs there, the result comes back channels first (the plain
 * pool's value). Asserts that it builds. */
braid_tensor ts_pool_channels_last(braid_graph *g, braid_tensor x,
                                   const braid_pool_params *pp, bool max);

#endif /* BRAID_TESTS_OP_CASES_H */
