/* tests/test_grad_api.c — braid_grad's contract: the documented
 * conventions at kinks and ties (exact values on the reference), how
 * gradients of several paths add up, wrt tensors off the path, and the
 * errors (each names what is wrong, leaves grads_out invalid and adds no
 * node). docs/training.md states the conventions. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "passes/plan.h"
#include "tests/support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* A graph with input x (f64, n elements) and a loss built by fn from it. */
typedef braid_tensor (*loss_fn)(braid_graph *g, braid_tensor x);

/* d loss / dx at xs on the reference, into out[n]. */
static void grad_at(loss_fn fn, const double *xs, int64_t n, double *out) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F64, 1, &n);
    braid_tensor loss = fn(g, x), gx;
    cr_assert_eq(braid_grad(g, loss, 1, &x, &gx), BRAID_OK, "%s",
                 braid_graph_error(g));
    braid_input_binding in = {"x", xs, (size_t)n * sizeof *xs};
    ts_run_ref(g, gx, &in, 1, out, (size_t)n * sizeof *out);
    braid_graph_free(g);
}

static void expect_values(const double *got, const double *want, int n,
                          const char *what) {
    for (int i = 0; i < n; i++)
        cr_expect(fabs(got[i] - want[i]) <= 1e-12, "%s[%d]: %g, expected %g",
                  what, i, got[i], want[i]);
}

static braid_tensor sum_all(braid_graph *g, braid_tensor t) {
    return braid_sum(g, t, 0, NULL, false);
}

static braid_tensor l_reduce_max(braid_graph *g, braid_tensor x) {
    return braid_reduce_max(g, x, 0, NULL, false);
}
static braid_tensor l_reduce_min(braid_graph *g, braid_tensor x) {
    return braid_reduce_min(g, x, 0, NULL, false);
}

Test(grad_api, reduce_max_and_min_ties_share_evenly) {
    double x[5] = {1, 3, 3, -2, 3}, g[5];
    grad_at(l_reduce_max, x, 5, g);
    expect_values(g, (double[]){0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3}, 5, "max");
    double y[4] = {-2, 5, -2, 0};
    grad_at(l_reduce_min, y, 4, g);
    expect_values(g, (double[]){0.5, 0, 0.5, 0}, 4, "min");
}

/* max(x, 1) + min(x, 1): a tie gives each operand half. */
static braid_tensor l_max_min(braid_graph *g, braid_tensor x) {
    braid_tensor one = braid_fill(g, BRAID_F64, 0, NULL, 1);
    return sum_all(g,
                   braid_add(g, braid_max(g, x, one),
                             braid_mul(g, braid_min(g, x, one),
                                       braid_fill(g, BRAID_F64, 0, NULL, 10))));
}

Test(grad_api, elementwise_max_min_ties_split) {
    double x[3] = {0, 1, 2}, g[3];
    grad_at(l_max_min, x, 3, g);
    expect_values(g, (double[]){10, 5.5, 1}, 3, "max+10·min");
}

static braid_tensor l_kinks(braid_graph *g, braid_tensor x) {
    braid_tensor t = braid_add(g, braid_relu(g, x), braid_abs(g, x));
    return sum_all(g, braid_add(g, t, braid_floor(g, x)));
}

Test(grad_api, relu_abs_at_zero_floor_zero) {
    double x[4] = {0, -1.5, 2.5, 3}, g[4];
    grad_at(l_kinks, x, 4, g);
    expect_values(g, (double[]){0, -1, 2, 2}, 4, "relu+abs+floor");
}

/* pow(x, x) at x = 0: d/db is taken as 0 there (x^x·log x → 0). */
static braid_tensor l_pow_base0(braid_graph *g, braid_tensor x) {
    braid_tensor two = braid_fill(g, BRAID_F64, 0, NULL, 2);
    return sum_all(g, braid_pow(g, braid_mul(g, x, x), braid_add(g, x, two)));
}

Test(grad_api, pow_exponent_at_zero_base) {
    double x[2] = {0, 1}, g[2];
    grad_at(l_pow_base0, x, 2, g);
    /* f = (x²)^(x+2): f'(0) = 0; f'(1) = (x+2)·(x²)^(x+1)·2x + f·log(x²) = 6 */
    expect_values(g, (double[]){0, 6}, 2, "pow");
}

/* x·x + x·x·x through two paths and a shared node: 2x + 3x². */
static braid_tensor l_paths(braid_graph *g, braid_tensor x) {
    braid_tensor sq = braid_mul(g, x, x);
    return sum_all(g, braid_add(g, sq, braid_mul(g, sq, x)));
}

Test(grad_api, paths_add_up) {
    double x[3] = {-1, 0.5, 2}, g[3];
    grad_at(l_paths, x, 3, g);
    expect_values(g, (double[]){1, 1.75, 16}, 3, "x²+x³");
}

/* x[lo, hi) of a 1-D x. */
static braid_tensor part(braid_graph *g, braid_tensor x, int64_t lo,
                         int64_t hi) {
    return braid_slice(g, x, &lo, &hi, NULL);
}

/* x split into [0,3), [3,5) and [7,9) (5..6 unused): sum a² + 3·sum b +
 * sum c³. */
static braid_tensor l_split(braid_graph *g, braid_tensor x) {
    braid_tensor a = part(g, x, 0, 3), b = part(g, x, 3, 5),
                 c = part(g, x, 7, 9);
    braid_tensor l = braid_add(
        g, sum_all(g, braid_square(g, a)),
        sum_all(g, braid_mul(g, b, braid_fill(g, BRAID_F64, 0, NULL, 3))));
    return braid_add(g, l, sum_all(g, braid_mul(g, braid_square(g, c), c)));
}

/* [0,5) and [3,9) overlap: sum a² + sum b³. */
static braid_tensor l_overlap(braid_graph *g, braid_tensor x) {
    braid_tensor a = part(g, x, 0, 5), b = part(g, x, 3, 9);
    return braid_add(g, sum_all(g, braid_square(g, a)),
                     sum_all(g, braid_mul(g, braid_square(g, b), b)));
}

/* Concat nodes among the gradient's nodes of fn's loss. */
static int grad_concats(loss_fn fn) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F64, 1, DIMS(9));
    braid_tensor loss = fn(g, x), gx;
    uint32_t before = braid_graph_node_count(g);
    cr_assert_eq(braid_grad(g, loss, 1, &x, &gx), BRAID_OK, "%s",
                 braid_graph_error(g));
    int n = 0;
    for (uint32_t id = before; id < braid_graph_node_count(g); id++)
        n += g->nodes[id].op == BRAID_OP_CONCAT;
    braid_graph_free(g);
    return n;
}

/* The parts of a split give one concat of their gradients (zeros where no
 * part reads); overlapping slices are padded back each and added. */
Test(grad_api, split_parts_join_in_one_concat) {
    double x[9] = {1, -2, 0.5, 4, -1, 7, 8, -0.5, 2}, g[9];
    grad_at(l_split, x, 9, g);
    expect_values(g, (double[]){2, -4, 1, 3, 3, 0, 0, 0.75, 12}, 9, "split");
    cr_expect_eq(grad_concats(l_split), 1);
    grad_at(l_overlap, x, 9, g);
    expect_values(g, (double[]){2, -4, 1, 8 + 48, -2 + 3, 147, 192, 0.75, 12},
                  9, "overlap");
    cr_expect_eq(grad_concats(l_overlap), 2);
}

Test(grad_api, wrt_off_the_path_is_zero_and_loss_itself_is_one) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor u = braid_input(g, "u", BRAID_F32, 1, DIMS(4));
    braid_tensor loss = braid_mean(g, braid_exp(g, x), 0, NULL, false);
    uint32_t before = braid_graph_node_count(g);
    braid_tensor wrt[3] = {x, u, loss}, gr[3];
    cr_assert_eq(braid_grad(g, loss, 3, wrt, gr), BRAID_OK);
    for (int i = 0; i < 3; i++)
        cr_expect_geq(gr[i].id, before, "gradient %d is a new node", i);
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    braid_tensor_info(g, gr[1], &dt, &rank, dims);
    cr_expect(dt == BRAID_F32 && rank == 1 && dims[0] == 4);
    float xs[6] = {0, 1, 2, 3, 4, 5}, us[4] = {1, 2, 3, 4}, gu[4], one;
    braid_input_binding in[2] = {{"x", xs, sizeof xs}, {"u", us, sizeof us}};
    braid_output(g, "gu", gr[1]);
    ts_run_ref(g, gr[2], in, 2, &one, sizeof one);
    cr_expect_eq(one, 1.0f);
    braid_output_binding out = {"gu", gu, sizeof gu};
    cr_assert_eq(braid_reference_run(g, in, 2, &out, 1), BRAID_OK);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(gu[i], 0.0f);
    braid_graph_free(g);
}

/* ---- errors ------------------------------------------------------------- */

/* braid_grad fails with want, its message contains part, grads_out are
 * invalid and no node was added. */
static void expect_error(braid_graph *g, braid_tensor loss, size_t n,
                         const braid_tensor *wrt, braid_status want,
                         const char *part) {
    uint32_t before = braid_graph_node_count(g);
    braid_tensor out[4] = {{0}, {0}, {0}, {0}};
    braid_status s = braid_grad(g, loss, n, wrt, out);
    cr_expect_eq(s, want, "status %s, expected %s: %s", braid_status_name(s),
                 braid_status_name(want), braid_graph_error(g));
    cr_expect(strstr(braid_graph_error(g), part) != NULL,
              "message \"%s\" lacks \"%s\"", braid_graph_error(g), part);
    for (size_t i = 0; i < n; i++)
        cr_expect(!braid_tensor_valid(out[i]));
    cr_expect_eq(braid_graph_node_count(g), before);
}

Test(grad_api, loss_must_be_a_float_scalar) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(3));
    expect_error(g, braid_exp(g, x), 1, &x, BRAID_ERR_SHAPE,
                 "must be a float tensor of one element");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_I32, 1, DIMS(3));
    expect_error(g, braid_sum(g, x, 0, NULL, false), 1, &x, BRAID_ERR_SHAPE,
                 "(sum i32[])");
    braid_graph_free(g);
}

Test(grad_api, wrt_must_be_float_and_of_the_graph) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(3));
    braid_tensor k = braid_input(g, "k", BRAID_I32, 1, DIMS(3));
    braid_tensor loss = braid_sum(g, x, 0, NULL, false);
    braid_tensor w[2] = {x, k};
    expect_error(g, loss, 2, w, BRAID_ERR_DTYPE, "wrt[1]");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, DIMS(3));
    loss = braid_sum(g, x, 0, NULL, false);
    braid_tensor bad = {999};
    expect_error(g, loss, 1, &bad, BRAID_ERR_INVALID_ARGUMENT, "wrt[0]");
    braid_graph_free(g);
    cr_expect_eq(braid_grad(NULL, loss, 0, NULL, NULL),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(braid_last_error(), "graph is NULL"));
}

Test(grad_api, a_failed_graph_stays_failed) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(3));
    braid_tensor loss = braid_sum(g, x, 0, NULL, false);
    braid_add(g, x, braid_input(g, "y", BRAID_F32, 1, DIMS(4))); /* fails */
    braid_tensor gx = {0};
    cr_expect_eq(braid_grad(g, loss, 1, &x, &gx), BRAID_ERR_SHAPE);
    cr_expect(!braid_tensor_valid(gx));
    braid_graph_free(g);
}

Test(grad_api, rank_collective_on_the_path_is_named) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    braid_tensor r = braid_rank_collective(g, BRAID_OP_ALL_REDUCE, x,
                                           BRAID_REDUCE_SUM, 0, 0, 2);
    braid_set_name(g, r, "ar");
    braid_tensor loss = braid_sum(g, r, 0, NULL, false);
    cr_assert(braid_tensor_valid(loss), "%s", braid_graph_error(g));
    braid_tensor out = {0};
    cr_expect_eq(braid_grad(g, loss, 1, &x, &out), BRAID_ERR_UNSUPPORTED);
    cr_expect(strstr(braid_graph_error(g), "all_reduce"), "%s",
              braid_graph_error(g));
    cr_expect(!braid_tensor_valid(out));
    braid_graph_free(g);
}

/* x [n] seen as [1, 1, n] for the 1-D pools below. */
static braid_tensor as_ncl(braid_graph *g, braid_tensor x) {
    return braid_reshape(g, x, 3, DIMS(1, 1, braid_tensor_numel(g, x)));
}

/* windows of 2, stride 1: max of {1,3}, {3,3} (a tie), {3,2}. */
static braid_tensor l_max_pool(braid_graph *g, braid_tensor x) {
    braid_pool_params p = {.kernel = {2}};
    return sum_all(g, braid_max_pool(g, as_ncl(g, x), &p));
}

/* windows of 2 over x padded by one on each side: the end windows hold
 * one element of x, so it counts once or (count_include_pad) half. */
static bool include_pad;
static braid_tensor l_avg_pool(braid_graph *g, braid_tensor x) {
    braid_pool_params p = {.kernel = {2}, .pads_lo = {1}, .pads_hi = {1}};
    p.count_include_pad = include_pad;
    return sum_all(g, braid_avg_pool(g, as_ncl(g, x), &p));
}

Test(grad_api, pools_share_ties_and_divide_by_the_window) {
    double x[4] = {1, 3, 3, 2}, g[4];
    grad_at(l_max_pool, x, 4, g);
    expect_values(g, (double[]){0, 1.5, 1.5, 0}, 4, "max_pool");
    include_pad = false;
    grad_at(l_avg_pool, x, 3, g);
    expect_values(g, (double[]){1.5, 1, 1.5}, 3, "avg_pool");
    include_pad = true;
    grad_at(l_avg_pool, x, 3, g);
    expect_values(g, (double[]){1, 1, 1}, 3, "avg_pool count_include_pad");
}

/* attention whose second query row is fully masked (its output is 0 by
 * the op's convention, a constant): that row's gradient is exactly 0, not
 * NaN; the first row's is Σ_j p_j·k_j·(v_j − out) (scale 1, D = 1). */
static braid_tensor l_attention_masked_row(braid_graph *g, braid_tensor x) {
    const double kv[4] = {1, 2, 3, 5}, m[4] = {0, 0, -INFINITY, -INFINITY};
    braid_tensor q = braid_reshape(g, x, 4, DIMS(1, 2, 1, 1));
    braid_tensor k = braid_constant(g, BRAID_F64, 4, DIMS(1, 2, 1, 1), kv);
    braid_tensor v = braid_constant(g, BRAID_F64, 4, DIMS(1, 2, 1, 1), kv + 2);
    braid_tensor mask = braid_constant(g, BRAID_F64, 4, DIMS(1, 1, 2, 2), m);
    return sum_all(g, braid_attention(g, q, k, v, mask, 1.0, 0));
}

Test(grad_api, attention_fully_masked_row_gets_zero) {
    double x[2] = {0.5, -0.75}, g[2];
    grad_at(l_attention_masked_row, x, 2, g);
    double e0 = exp(0.5 * 1), e1 = exp(0.5 * 2);
    double p0 = e0 / (e0 + e1), p1 = e1 / (e0 + e1), out = 3 * p0 + 5 * p1;
    double want = p0 * 1 * (3 - out) + p1 * 2 * (5 - out);
    expect_values(g, (double[]){want, 0}, 2, "attention dq");
}

/* Comparisons and i32 casts end a path quietly: the gradient through them
 * is zero, not an error. */
Test(grad_api, comparisons_and_integer_casts_pass_nothing) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F64, 1, DIMS(3));
    braid_tensor c = braid_cast(
        g, braid_gt(g, x, braid_fill(g, BRAID_F64, 0, NULL, 0)), BRAID_F64);
    braid_tensor i = braid_cast(g, braid_cast(g, x, BRAID_I32), BRAID_F64);
    braid_tensor loss =
        braid_sum(g, braid_add(g, c, braid_add(g, i, x)), 0, NULL, false);
    braid_tensor gx;
    cr_assert_eq(braid_grad(g, loss, 1, &x, &gx), BRAID_OK, "%s",
                 braid_graph_error(g));
    double xs[3] = {-1.5, 0.25, 3}, out[3];
    braid_input_binding in = {"x", xs, sizeof xs};
    ts_run_ref(g, gx, &in, 1, out, sizeof out);
    expect_values(out, (double[]){1, 1, 1}, 3, "cmp+cast+x");
    braid_graph_free(g);
}

/* ---- gradients are ordinary nodes --------------------------------------- */

/* Mean squared error of a two-layer tanh MLP; params w1, b1, w2. */
static braid_tensor mlp(braid_graph *g, braid_tensor *params) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(32, 16));
    braid_tensor t = braid_input(g, "t", BRAID_F32, 2, DIMS(32, 4));
    params[0] = braid_input(g, "w1", BRAID_F32, 2, DIMS(16, 24));
    params[1] = braid_input(g, "b1", BRAID_F32, 1, DIMS(24));
    params[2] = braid_input(g, "w2", BRAID_F32, 2, DIMS(24, 4));
    braid_tensor h = braid_tanh(
        g, braid_add(g, braid_matmul(g, x, params[0], 0), params[1]));
    braid_tensor d = braid_sub(g, braid_matmul(g, h, params[2], 0), t);
    return braid_mean(g, braid_square(g, d), 0, NULL, false);
}

/* The compiled backward pass: matmuls take transpose flags (no permute
 * node is left), the elementwise work is fused, and it runs like the
 * reference. */
Test(grad_api, gradients_compile_fused_without_transposes) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor params[3], grads[3];
    braid_tensor loss = mlp(g, params);
    cr_assert_eq(braid_grad(g, loss, 3, params, grads), BRAID_OK, "%s",
                 braid_graph_error(g));
    braid_output(g, "loss", loss);
    braid_output(g, "gw1", grads[0]);
    braid_output(g, "gb1", grads[1]);
    braid_output(g, "gw2", grads[2]);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    const braid_graph *pg = p->res.graph;
    int matmuls = 0, permutes = 0, fused = 0;
    for (uint32_t id = 0; id < pg->nnodes; id++) {
        braid_op op = pg->nodes[id].op;
        matmuls += op == BRAID_OP_MATMUL;
        permutes += op == BRAID_OP_PERMUTE;
        fused += op == BRAID_OP_FUSED;
    }
    /* the first forward matmul absorbs bias and tanh (a fused node); the
     * second and the backward dW2, dh, dW1 stay matmuls */
    cr_expect_eq(matmuls, 4, "matmul nodes: %d", matmuls);
    cr_expect_eq(permutes, 0);
    cr_expect_gt(fused, 0);
    braid_plan_free(p);
    ts_io *io = ts_io_new(g, 3);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    char msg[512];
    cr_expect(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}
