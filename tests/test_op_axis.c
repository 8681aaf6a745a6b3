/* tests/test_op_axis.c — the index ops (docs/ops.md "Axis ops"): argmax,
 * argmin, topk (values and indices), cumsum, reduce_prod and the
 * log-sum-exp composite.
 *
 *   - the CPU kernels against the reference evaluator on random cases
 *     (tests/support/axis_cases.c: every dtype, random shapes and axes, long
 *     axes up to 5000, inner runs >= 32, ties, i32 wrapping), tolerances of
 *     ts_tolerance per dtype (indices exact);
 *   - NaN and tie rules by literal values, the same from the reference and
 *     the CPU: argmax/argmin pick the first NaN (the last with
 *     select_last), topk ranks NaN above +inf, ties keep index order;
 *   - log-sum-exp against log(sum(exp(x))) computed here, and its edge
 *     cases (values near 1000, a row of -inf, +inf);
 *   - reduce_prod fused behind an elementwise producer, empty sets (1);
 *   - builder errors (sticky, naming the op), the text format round trip,
 *     DOT labels, plan files (CPU plans and GPU plans run on the emulated
 *     executor), 1 and 4 threads bit-identical, and (built with CUDA) every
 *     kernel variant compiled by NVRTC for sm_90. */
#define _POSIX_C_SOURCE 200809L
#include "tests/planfile_support.h"

#include <math.h>

#include "tests/support/axis_cases.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- random cases -------------------------------------------------------- */

Test(op_axis, random_cases_against_the_reference, .timeout = 600) {
    for (int op = 0; op < TS_AX_COUNT_; op++)
        for (uint64_t seed = 1; seed <= 40; seed++) {
            ts_axis_case c = ts_axis_case_make((ts_axis_op)op, seed, 5000);
            char msg[900];
            bool ok = ts_check_graph(c.g, c.y, &c.range, seed, msg, sizeof msg);
            if (!ok) ts_log_graph(c.g);
            cr_assert(ok, "%s: %s", c.what, msg);
            braid_graph_free(c.g);
        }
}

/* ---- literal values ------------------------------------------------------ */

Test(op_axis, nan_and_tie_rules) {
    for (int k = 0; k < TS_AXIS_LITERALS; k++) {
        ts_axis_literal l = ts_axis_literal_make(k);
        ts_io *io = ts_io_new(l.g, 1);
        cr_assert(io);
        memcpy((void *)io->in[0].data, l.x, (size_t)l.n * sizeof *l.x);
        cr_assert_eq(ts_run_both(l.g, io), BRAID_OK, "%s", braid_last_error());
        char msg[512];
        cr_assert(ts_axis_literal_check(&l, io, msg, sizeof msg), "case %d: %s",
                  k, msg);
        ts_io_free(io);
        braid_graph_free(l.g);
    }
}

/* ---- log-sum-exp --------------------------------------------------------- */

Test(op_axis, logsumexp_matches_the_formula) {
    const float x[] = {1000, 1001, 999, -INFINITY, -INFINITY, -INFINITY,
                       0.5f, -1,   2,   1,         INFINITY,  3};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor in = braid_input(g, "x", BRAID_F32, 2, DIMS(4, 3));
    braid_output(g, "y", braid_reduce_logsumexp(g, in, 1, (int[]){1}, false));
    double r0 = 1000 + log(1 + exp(1) + exp(-1));
    double r2 = log(exp(0.5) + exp(-1) + exp(2));
    const double y[] = {(float)r0, -INFINITY, (float)r2, INFINITY};
    const double *want[] = {y};
    /* the reference and CPU round each node to f32: compare loosely */
    ts_io *io = ts_io_new(g, 1);
    memcpy((void *)io->in[0].data, x, sizeof x);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    for (int i = 0; i < 4; i++) {
        double got = bg_load(BRAID_F32, io->out[0].data, i);
        cr_assert(isinf(want[0][i])
                      ? got == want[0][i]
                      : fabs(got - want[0][i]) < 1e-6 * fabs(want[0][i]) + 1e-5,
                  "row %d: %g, want %g", i, got, want[0][i]);
    }
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- reduce_prod --------------------------------------------------------- */

Test(op_axis, reduce_prod_fused_and_empty) {
    TS_FOR_DTYPES(dt, TS_NUMS) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 3, DIMS(5, 37, 300));
        braid_tensor h = braid_add(g, x, braid_fill(g, dt, 0, NULL, 1));
        braid_tensor y = braid_reduce_prod(g, h, 2, (int[]){0, 2}, true);
        char msg[900];
        ts_range r = dt == BRAID_I32 ? TS_I32_FULL : TS_RANGE(-0.3, 0.3);
        cr_assert(ts_check_graph(g, y, &r, 3, msg, sizeof msg), "%s: %s",
                  braid_dtype_name(dt), msg);
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I32, 2, DIMS(3, 0));
    braid_output(g, "y", braid_reduce_prod(g, x, 1, (int[]){1}, false));
    ts_io *io = ts_io_new(g, 1);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    for (int i = 0; i < 3; i++)
        cr_assert_eq(((const int32_t *)io->out[0].data)[i], 1);
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- builder ------------------------------------------------------------- */

/* A graph with x f32[4, 6] whose next builder call is checked to fail. */
static void expect_error(int which, const char *needle) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(4, 6));
    braid_tensor e = braid_input(g, "e", BRAID_F32, 2, DIMS(4, 0));
    braid_tensor b = braid_input(g, "b", BRAID_BOOL, 1, DIMS(3));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(3));
    braid_tensor idx = braid_input(g, "dummy", BRAID_F32, 0, NULL), y;
    switch (which) {
    case 0:
        y = braid_argmax(g, x, 2, false, false);
        break;
    case 1:
        y = braid_argmin(g, e, 1, false, false);
        break;
    case 2:
        y = braid_topk(g, x, 7, 1, true, &idx);
        break;
    case 3:
        y = braid_topk(g, x, -1, 1, true, &idx);
        break;
    case 4:
        y = braid_cumsum(g, b, 0, false, false);
        break;
    case 5:
        y = braid_reduce_logsumexp(g, i, 0, NULL, false);
        break;
    default:
        y = braid_reduce_prod(g, x, 1, (int[]){-3}, false);
        break;
    }
    cr_assert(!braid_tensor_valid(y), "case %d built", which);
    cr_assert(which != 2 || !braid_tensor_valid(idx));
    cr_assert_neq(braid_graph_status(g), BRAID_OK);
    cr_assert(strstr(braid_graph_error(g), needle), "case %d: \"%s\"", which,
              braid_graph_error(g));
    /* sticky: the next call fails quietly, keeping the first message */
    char first[512];
    snprintf(first, sizeof first, "%s", braid_graph_error(g));
    cr_assert(!braid_tensor_valid(braid_cumsum(g, x, 0, false, false)));
    cr_assert_str_eq(braid_graph_error(g), first);
    braid_graph_free(g);
}

Test(op_axis, builder_errors) {
    expect_error(0, "argmax: axis 2 out of range");
    expect_error(1, "argmin: axis 1 of operand");
    expect_error(2, "topk_values: k = 7 exceeds");
    expect_error(3, "topk: k = -1 is negative");
    expect_error(4, "cumsum: operand bool");
    expect_error(5, "reduce_logsumexp: operand i32");
    expect_error(6, "reduce_prod: axis -3 out of range");
    cr_assert(!braid_tensor_valid(braid_argmax(NULL, BRAID_NONE, 0, 0, 0)));
}

Test(op_axis, builder_shapes) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F16, 3, DIMS(2, 5, 7));
    braid_tensor idx;
    struct {
        braid_tensor t;
        braid_dtype dt;
        int rank;
        int64_t dims[3];
    } c[] = {
        {braid_argmax(g, x, -2, false, false), BRAID_I32, 2, {2, 7}},
        {braid_argmin(g, x, 1, true, true), BRAID_I32, 3, {2, 1, 7}},
        {braid_topk(g, x, 3, 1, false, &idx), BRAID_F16, 3, {2, 3, 7}},
        {idx, BRAID_I32, 3, {2, 3, 7}},
        {braid_cumsum(g, x, 2, true, false), BRAID_F16, 3, {2, 5, 7}},
        {braid_reduce_logsumexp(g, x, 2, (int[]){0, 2}, false),
         BRAID_F16,
         1,
         {5}},
    };
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        braid_dtype dt;
        int rank;
        int64_t dims[BRAID_MAX_RANK];
        cr_assert_eq(braid_tensor_info(g, c[k].t, &dt, &rank, dims), BRAID_OK);
        cr_assert_eq(dt, c[k].dt, "case %zu", k);
        cr_assert_eq(rank, c[k].rank, "case %zu", k);
        for (int d = 0; d < rank; d++)
            cr_assert_eq(dims[d], c[k].dims[d], "case %zu dim %d", k, d);
    }
    braid_graph_free(g);
}

/* ---- formats ------------------------------------------------------------- */

static braid_graph *all_ops_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(3, 40, 5));
    braid_tensor idx;
    braid_output(g, "a", braid_argmax(g, x, 1, true, true));
    braid_output(g, "b", braid_argmin(g, x, -1, false, false));
    braid_output(g, "v", braid_topk(g, x, 4, 1, false, &idx));
    braid_output(g, "i", idx);
    braid_output(g, "c", braid_cumsum(g, x, 1, true, true));
    braid_output(g, "d", braid_cumsum(g, x, 0, false, false));
    braid_output(g, "p", braid_reduce_prod(g, x, 1, (int[]){2}, true));
    braid_output(g, "l", braid_reduce_logsumexp(g, x, 0, NULL, false));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

Test(op_axis, text_round_trip) {
    braid_graph *g = all_ops_graph();
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    cr_assert_eq(braid_graph_print(g, &t1, &n1), BRAID_OK);
    cr_assert(strstr(t1, "argmax %0 axis=1 keepdims select_last"), "%s", t1);
    cr_assert(strstr(t1, "topk_indices %0 axis=1 k=4 smallest"), "%s", t1);
    cr_assert(strstr(t1, "cumsum %0 axis=1 exclusive reverse"), "%s", t1);
    braid_graph *h = braid_graph_parse(t1, n1, "t.graph", NULL);
    cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s", braid_graph_error(h));
    cr_assert_eq(braid_graph_print(h, &t2, &n2), BRAID_OK);
    cr_assert_str_eq(t1, t2);
    free(t1);
    free(t2);
    braid_graph_free(h);
    braid_graph_free(g);
    /* attributes are checked like the builder's arguments */
    const char *bad[] = {"braid-graph 1\n%x = input f32[3] name=\"x\"\n"
                         "%y = topk_values %x axis=0 k=4 : f32[4]\n",
                         "braid-graph 1\n%x = input f32[3] name=\"x\"\n"
                         "%y = argmax %x axis=0 exclusive : i32[]\n",
                         "braid-graph 1\n%x = input f32[3] name=\"x\"\n"
                         "%y = topk_indices %x axis=0 : i32[1]\n"};
    const char *why[] = {"k = 4 exceeds", "has no attribute",
                         "needs "
                         "attribute 'k'"};
    for (int k = 0; k < 3; k++) {
        braid_graph *b = braid_graph_parse(bad[k], strlen(bad[k]), "b", NULL);
        cr_assert_neq(braid_graph_status(b), BRAID_OK, "case %d", k);
        cr_assert(strstr(braid_graph_error(b), why[k]), "case %d: %s", k,
                  braid_graph_error(b));
        braid_graph_free(b);
    }
}

Test(op_axis, dot_labels) {
    braid_graph *g = all_ops_graph();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    braid_status s = braid_graph_to_dot(g, f);
    fclose(f);
    if (s == BRAID_ERR_UNSUPPORTED) { /* built without Graphviz */
        free(buf);
        braid_graph_free(g);
        cr_skip_test("%s", braid_last_error());
    }
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    cr_assert(strstr(buf, "axis=1 k=4 smallest"), "%s", buf);
    cr_assert(strstr(buf, "axis=1 keepdims select_last"), "%s", buf);
    free(buf);
    braid_graph_free(g);
}

/* ---- plans --------------------------------------------------------------- */

static void run_plan(const braid_graph *g, const braid_plan *p, bool emulate,
                     ts_io *io, const char *what) {
    cr_assert_eq(pf_run(p, io, emulate, 5), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    char msg[900];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", what, msg);
}

Test(op_axis, plan_files_cpu_and_gpu) {
    braid_graph *g = all_ops_graph();
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu)
            for (uint32_t id = 1; id < braid_graph_node_count(g); id++)
                braid_set_device(g, (braid_tensor){id}, "cuda:0");
        braid_plan *p = pf_compile(g, gpu ? "cpu,cuda:0" : "cpu");
        size_t size = 0;
        unsigned char *data = pf_save(p, &size);
        braid_plan *q = pf_load(data, size);
        ts_io *a = ts_io_new(g, 7), *b = ts_io_new(g, 7);
        run_plan(g, p, gpu, a, gpu ? "gpu plan" : "cpu plan");
        run_plan(g, q, gpu, b, gpu ? "loaded gpu plan" : "loaded cpu plan");
        cr_assert(pf_same_outputs(a, b));
        ts_io_free(a);
        ts_io_free(b);
        free(data);
        braid_plan_free(q);
        braid_plan_free(p);
    }
    braid_graph_free(g);
}

Test(op_axis, threads_give_the_same_bits) {
    for (int op = 0; op < TS_AX_COUNT_; op++)
        for (uint64_t seed = 100; seed < 106; seed++) {
            ts_axis_case c = ts_axis_case_make((ts_axis_op)op, seed, 40000);
            braid_output(c.g, "y", c.y);
            ts_io *io[2];
            for (int k = 0; k < 2; k++) {
                braid_compile_options o;
                braid_compile_options_init(&o);
                o.num_threads = k ? 4 : 1;
                braid_plan *p = NULL;
                cr_assert_eq(braid_compile(c.g, &o, &p), BRAID_OK);
                io[k] = ts_io_new(c.g, seed); /* the same inputs */
                cr_assert_eq(pf_run(p, io[k], false, 0), BRAID_OK, "%s",
                             braid_last_error());
                braid_plan_free(p);
            }
            cr_assert(pf_same_outputs(io[0], io[1]), "%s", c.what);
            ts_io_free(io[0]);
            ts_io_free(io[1]);
            braid_graph_free(c.g);
        }
}

#ifdef BRAID_HAVE_CUDA
/* g with every node but its inputs hinted to cuda:0, compiled with its
 * kernels built by NVRTC for sm_90. */
static void compile_gpu(braid_graph *g, const char *what) {
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (g->nodes[id].op != BRAID_OP_INPUT)
            braid_set_device(g, (braid_tensor){id}, "cuda:0");
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "sm_90";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    braid_plan_free(p);
}
#endif

/* Empty results and empty lines: nothing computed, nothing divided by a
 * zero dim (on the CPU, the reference, and in the generated kernels). */
Test(op_axis, empty_shapes) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(0, 5));
    braid_tensor z = braid_input(g, "z", BRAID_F32, 2, DIMS(3, 0));
    braid_tensor idx;
    braid_output(g, "a", braid_argmax(g, x, 1, false, false));
    braid_output(g, "v", braid_topk(g, z, 0, 1, true, &idx));
    braid_output(g, "i", idx);
    braid_output(g, "c", braid_cumsum(g, z, 1, true, false));
    braid_output(g, "d", braid_cumsum(g, z, 0, false, true));
    braid_output(g, "p", braid_reduce_prod(g, z, 1, (int[]){1}, false));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, 1);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
#ifdef BRAID_HAVE_CUDA
    compile_gpu(g, "empty shapes");
#endif
    braid_graph_free(g);
}

#ifdef BRAID_HAVE_CUDA
/* Every kernel variant (warp and thread argmax, block and thread cumsum,
 * topk, each dtype) compiles with NVRTC for sm_90. */
Test(op_axis, kernels_compile_with_nvrtc, .timeout = 600) {
    for (int op = 0; op < TS_AX_COUNT_; op++)
        for (uint64_t seed = 1; seed <= 12; seed++) {
            ts_axis_case c = ts_axis_case_make((ts_axis_op)op, seed, 5000);
            braid_output(c.g, "y", c.y);
            compile_gpu(c.g, c.what);
            braid_graph_free(c.g);
        }
}
#endif
