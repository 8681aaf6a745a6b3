/* tests/test_ops_edges.c — the edge values of the elemwise helper's ops
 * (tests/support/edge_tables.h) and the composites isnan, isinf and the
 * logical ops. Each table runs on the CPU executor and the reference
 * (ts_run_both, which must agree), then both are checked against the table
 * (floats by value and sign, so -0.0 and +0.0 differ; NaN by class).
 * Random inputs: test_ops.c; the same tables on the GPU:
 * test_cuda_dtypes.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "tests/support/edge_tables.h"
#include "tests/support/support.h"

#define N(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

/* Table e on dtype t: the CPU executor and the reference, each against the
 * table. */
static void run_table(const ts_edge_table *e, braid_dtype t) {
    int64_t n = e->n;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", t, 1, &n);
    braid_tensor y =
        e->binary ? braid_binary(g, e->op, a, braid_input(g, "b", t, 1, &n))
                  : braid_unary(g, e->op, a);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, 1);
    for (int64_t i = 0; i < n; i++) {
        bg_store(t, (void *)io->in[0].data, i, e->x[i]);
        if (e->binary) bg_store(t, (void *)io->in[1].data, i, e->z[i]);
    }
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    for (int64_t i = 0; i < n; i++) {
        double o = bg_load(t, io->out[0].data, i);
        double r = bg_load(t, io->ref[0].data, i);
        cr_expect(ts_edge_same(o, e->want[i]) && ts_edge_same(r, e->want[i]),
                  "%s %s(%.17g, %.17g): cpu %.17g, reference %.17g, want "
                  "%.17g",
                  bg_op(e->op)->name, braid_dtype_name(t), e->x[i], e->z[i], o,
                  r, e->want[i]);
    }
    ts_io_free(io);
    braid_graph_free(g);
}

Test(ops_edges, tables) {
    for (int k = 0; k < TS_EDGE_COUNT; k++)
        for (braid_dtype t = 0; t < BRAID_DTYPE_COUNT_; t++)
            if (ts_edge_tables[k].dtypes & (1u << t))
                run_table(&ts_edge_tables[k], t);
}

/* ---- composites ---------------------------------------------------------- */

/* Runs y (bool) of g with input "a" (and "b") set from x/z; checks want. */
static void bool_table(braid_graph *g, braid_tensor y, int64_t n,
                       braid_dtype t, const double *x, const double *z,
                       const bool *want, const char *what) {
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s: %s", what,
                 braid_graph_error(g));
    ts_io *io = ts_io_new(g, 1);
    for (int64_t i = 0; i < n; i++) {
        bg_store(t, (void *)io->in[0].data, i, x[i]);
        if (z) bg_store(t, (void *)io->in[1].data, i, z[i]);
    }
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", what, msg);
    const uint8_t *o = io->out[0].data;
    for (int64_t i = 0; i < n; i++)
        cr_expect_eq(o[i], want[i], "%s element %lld", what, (long long)i);
    ts_io_free(io);
}

Test(ops_edges, isnan_isinf) {
    const double x[] = {NAN, INFINITY, -INFINITY, 0.0, -1e308, 1};
    const int64_t n = N(x);
    for (braid_dtype t = BRAID_F32; t <= BRAID_F64; t++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor a = braid_input(g, "a", t, 1, &n);
        bool_table(g, braid_isnan(g, a), n, t, x, NULL,
                   (const bool[]){1, 0, 0, 0, 0, 0}, "isnan");
        braid_graph_free(g);
        const bool want[4][6] = {{0, 0, 0, 0, 0, 0},
                                 {0, 0, 1, 0, t != BRAID_F64, 0},
                                 {0, 1, 0, 0, 0, 0},
                                 {0, 1, 1, 0, t != BRAID_F64, 0}};
        for (int k = 0; k < 4; k++) {
            g = braid_graph_new(NULL);
            a = braid_input(g, "a", t, 1, &n);
            bool_table(g, braid_isinf(g, a, k & 2, k & 1), n, t, x, NULL,
                       want[k], "isinf");
            braid_graph_free(g);
        }
    }
}

Test(ops_edges, logical_ops) {
    const double a[] = {0, 0, 1, 1}, b[] = {0, 1, 0, 1};
    const int64_t n = 4;
    struct {
        braid_tensor (*fn)(braid_graph *, braid_tensor, braid_tensor);
        bool want[4];
        const char *what;
    } cases[] = {{braid_logical_and, {0, 0, 0, 1}, "and"},
                 {braid_logical_or, {0, 1, 1, 1}, "or"},
                 {braid_logical_xor, {0, 1, 1, 0}, "xor"}};
    for (int k = 0; k < 3; k++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "a", BRAID_BOOL, 1, &n);
        braid_tensor y = braid_input(g, "b", BRAID_BOOL, 1, &n);
        bool_table(g, cases[k].fn(g, x, y), n, BRAID_BOOL, a, b, cases[k].want,
                   cases[k].what);
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "a", BRAID_BOOL, 1, &n);
    bool_table(g, braid_logical_not(g, x), n, BRAID_BOOL, a, NULL,
               (const bool[]){1, 1, 0, 0}, "not");
    braid_graph_free(g);
}

/* The composites and the INT ops name themselves in dtype errors. */
Test(ops_edges, dtype_errors) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I32, 1, (int64_t[]){2});
    cr_assert(!braid_tensor_valid(braid_isnan(g, x)));
    cr_expect(strstr(braid_graph_error(g), "isnan"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, (int64_t[]){2});
    cr_assert(!braid_tensor_valid(braid_logical_and(g, x, x)));
    cr_expect(strstr(braid_graph_error(g), "logical_and"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, (int64_t[]){2});
    cr_assert(!braid_tensor_valid(braid_bitwise_and(g, x, x)));
    cr_expect(strstr(braid_graph_error(g), "integer"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
}
