/* tests/test_reference_errors.c — braid_reference_run's bindings (every
 * error it reports, with its status and message), its evaluation order
 * (outputs written last, shared nodes, long chains) and its refusal of
 * tensors too large to evaluate. The op semantics are in test_reference.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "tests/support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define IN(name, arr) ((braid_input_binding){(name), (arr), sizeof(arr)})

static void expect_f32(const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "[%zu]: got %.9g, want %.9g", i,
                     (double)got[i], (double)want[i]);
}

/* ---- evaluation order and memory ----------------------------------------- */

Test(reference_run, output_may_alias_an_input) {
    braid_graph *g = braid_graph_new(NULL);
    float buf[3] = {1, 2, 3};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(3));
    /* y is computed before z reads x again: outputs are written last */
    braid_tensor y = braid_add(g, x, x);
    braid_tensor z = braid_mul(g, braid_sum(g, y, 0, NULL, true), x);
    cr_assert_eq(braid_output(g, "z", z), BRAID_OK);
    braid_input_binding b = IN("x", buf);
    braid_output_binding o = {"z", buf, sizeof buf};
    cr_assert_eq(braid_reference_run(g, &b, 1, &o, 1), BRAID_OK, "%s",
                 braid_last_error());
    expect_f32(buf, (float[]){12, 24, 36}, 3);
    braid_graph_free(g);
}

Test(reference_run, outputs_subset_and_shared_node) {
    braid_graph *g = braid_graph_new(NULL);
    float x[2] = {1, -2}, a[2], b[2];
    braid_tensor in = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    braid_tensor n = braid_neg(g, in);
    cr_assert_eq(braid_output(g, "a", n), BRAID_OK);
    cr_assert_eq(braid_output(g, "b", n), BRAID_OK);
    cr_assert_eq(braid_output(g, "unused", braid_exp(g, in)), BRAID_OK);
    cr_assert_eq(braid_output(g, "x_again", in), BRAID_OK);
    braid_input_binding bi = IN("x", x);
    braid_output_binding o[2] = {{"b", b, sizeof b}, {"a", a, sizeof a}};
    cr_assert_eq(braid_reference_run(g, &bi, 1, o, 2), BRAID_OK, "%s",
                 braid_last_error());
    expect_f32(a, (float[]){-1, 2}, 2);
    expect_f32(b, (float[]){-1, 2}, 2);
    /* an input as an output, and no outputs at all */
    braid_output_binding oi = {"x_again", a, sizeof a};
    cr_assert_eq(braid_reference_run(g, &bi, 1, &oi, 1), BRAID_OK);
    expect_f32(a, x, 2);
    cr_assert_eq(braid_reference_run(g, &bi, 1, NULL, 0), BRAID_OK);
    braid_graph_free(g);
}

Test(reference_run, long_chain_with_reuse) {
    /* 200 dependent nodes reading earlier ones: use counts must keep every
     * operand alive exactly as long as needed (ASan checks the rest). */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F64, 1, DIMS(4));
    braid_tensor prev = x, prev2 = x;
    for (int i = 0; i < 200; i++) {
        braid_tensor next = braid_sub(g, braid_add(g, prev, prev2), prev2);
        prev2 = prev;
        prev = next;
    }
    double v[4] = {1, 2, 3, 4}, out[4];
    braid_input_binding b = IN("x", v);
    ts_run_ref(g, prev, &b, 1, out, sizeof out);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(out[i], v[i]);
    braid_graph_free(g);
}

/* ---- binding errors ------------------------------------------------------ */

/* y = x + 1 over x f32[2,3]. */
static braid_graph *small_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 0, NULL);
    braid_tensor y = braid_add(g, x, braid_fill(g, BRAID_F32, 0, NULL, 1.0));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "w2", braid_mul(g, w, w)), BRAID_OK);
    return g;
}

static float BX[6], BW[1], BY[6];

/* The status of a run of small_graph() with the given bindings; checks
 * braid_last_error() contains each of the listed fragments. */
static void expect_error(const braid_input_binding *in, size_t nin,
                         const braid_output_binding *out, size_t nout,
                         braid_status want, const char *fragment) {
    braid_graph *g = small_graph();
    braid_status s = braid_reference_run(g, in, nin, out, nout);
    cr_expect_eq(s, want, "status %s, want %s (%s)", braid_status_name(s),
                 braid_status_name(want), braid_last_error());
    if (fragment)
        cr_expect(strstr(braid_last_error(), fragment) != NULL,
                  "message '%s' lacks '%s'", braid_last_error(), fragment);
    braid_graph_free(g);
}

Test(reference_errors, valid_bindings_run) {
    braid_input_binding in[2] = {IN("w", BW), IN("x", BX)};
    braid_output_binding out = {"y", BY, sizeof BY};
    expect_error(in, 2, &out, 1, BRAID_OK, NULL);
}

Test(reference_errors, unknown_input_name) {
    braid_input_binding in[3] = {IN("x", BX), IN("w", BW), IN("bogus", BX)};
    braid_output_binding out = {"y", BY, sizeof BY};
    expect_error(in, 3, &out, 1, BRAID_ERR_NOT_FOUND, "'bogus'");
}

Test(reference_errors, unknown_output_name) {
    braid_input_binding in[2] = {IN("x", BX), IN("w", BW)};
    braid_output_binding out = {"nope", BY, sizeof BY};
    expect_error(in, 2, &out, 1, BRAID_ERR_NOT_FOUND, "'nope'");
}

Test(reference_errors, missing_input) {
    braid_input_binding in[1] = {IN("x", BX)};
    braid_output_binding out = {"y", BY, sizeof BY};
    /* w is bound by nobody, even though y does not need it */
    expect_error(in, 1, &out, 1, BRAID_ERR_INVALID_ARGUMENT, "'w'");
}

Test(reference_errors, wrong_input_byte_count) {
    braid_input_binding in[2] = {{"x", BX, 20}, IN("w", BW)};
    braid_output_binding out = {"y", BY, sizeof BY};
    expect_error(in, 2, &out, 1, BRAID_ERR_SHAPE,
                 "input 'x': expected 24 bytes (f32[2,3]), got 20");
}

Test(reference_errors, wrong_output_byte_count) {
    braid_input_binding in[2] = {IN("x", BX), IN("w", BW)};
    braid_output_binding out = {"y", BY, 28};
    expect_error(in, 2, &out, 1, BRAID_ERR_SHAPE,
                 "output 'y': expected 24 bytes (f32[2,3]), got 28");
}

Test(reference_errors, null_data_with_bytes) {
    braid_input_binding in[2] = {{"x", NULL, 24}, IN("w", BW)};
    braid_output_binding out = {"y", BY, sizeof BY};
    expect_error(in, 2, &out, 1, BRAID_ERR_INVALID_ARGUMENT, "'x'");
    braid_input_binding ok[2] = {IN("x", BX), IN("w", BW)};
    braid_output_binding nout = {"y", NULL, 24};
    expect_error(ok, 2, &nout, 1, BRAID_ERR_INVALID_ARGUMENT, "'y'");
}

Test(reference_errors, duplicate_and_nameless_bindings) {
    braid_input_binding twice[3] = {IN("x", BX), IN("w", BW), IN("x", BX)};
    braid_output_binding out = {"y", BY, sizeof BY};
    expect_error(twice, 3, &out, 1, BRAID_ERR_INVALID_ARGUMENT, "'x'");
    braid_input_binding nameless[2] = {IN("x", BX), {NULL, BW, 4}};
    expect_error(nameless, 2, &out, 1, BRAID_ERR_INVALID_ARGUMENT, NULL);
    braid_input_binding in[2] = {IN("x", BX), IN("w", BW)};
    braid_output_binding onameless = {NULL, BY, sizeof BY};
    expect_error(in, 2, &onameless, 1, BRAID_ERR_INVALID_ARGUMENT, NULL);
    float y2[6];
    braid_output_binding otwice[2] = {{"y", BY, sizeof BY},
                                      {"y", y2, sizeof y2}};
    expect_error(in, 2, otwice, 2, BRAID_ERR_INVALID_ARGUMENT, "'y'");
}

Test(reference_errors, null_arrays_and_graph) {
    braid_output_binding out = {"y", BY, sizeof BY};
    expect_error(NULL, 2, &out, 1, BRAID_ERR_INVALID_ARGUMENT, NULL);
    braid_input_binding in[2] = {IN("x", BX), IN("w", BW)};
    expect_error(in, 2, NULL, 1, BRAID_ERR_INVALID_ARGUMENT, NULL);
    cr_expect_eq(braid_reference_run(NULL, in, 2, &out, 1),
                 BRAID_ERR_INVALID_ARGUMENT);
}

Test(reference_errors, graph_with_an_error) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, 1, DIMS(2));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(3));
    braid_add(g, a, b); /* shapes do not broadcast */
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_SHAPE);
    float x[3];
    braid_input_binding in[2] = {{"a", x, 8}, {"b", x, 12}};
    cr_expect_eq(braid_reference_run(g, in, 2, NULL, 0), BRAID_ERR_SHAPE);
    cr_expect_str_eq(braid_last_error(), braid_graph_error(g));
    braid_graph_free(g);
}

Test(reference_errors, too_large_is_out_of_memory) {
    /* 2^40 f32 elements: 8 TiB as doubles. Refused cleanly, no crash. */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor f = braid_fill(g, BRAID_F32, 2, DIMS(1 << 20, 1 << 20), 1.0);
    float out;
    cr_assert_eq(braid_output(g, "s", braid_sum(g, f, 0, NULL, false)),
                 BRAID_OK, "%s", braid_graph_error(g));
    braid_output_binding o = {"s", &out, sizeof out};
    cr_expect_eq(braid_reference_run(g, NULL, 0, &o, 1),
                 BRAID_ERR_OUT_OF_MEMORY);
    cr_expect(strstr(braid_last_error(), "fill") != NULL, "%s",
              braid_last_error());
    braid_graph_free(g);
}

Test(reference_errors, empty_tensors_bind_null) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(0, 3));
    cr_assert_eq(braid_output(g, "y", braid_exp(g, x)), BRAID_OK);
    braid_input_binding in = {"x", NULL, 0};
    braid_output_binding o = {"y", NULL, 0};
    cr_expect_eq(braid_reference_run(g, &in, 1, &o, 1), BRAID_OK, "%s",
                 braid_last_error());
    braid_graph_free(g);
}
