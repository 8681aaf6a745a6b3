/* tests/test_misuse.c — every builder misuse gives its documented status and
 * a message naming the op; later calls stay invalid and keep the first
 * error. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Checks that g failed with status s and a message containing needle, and
 * that later calls neither succeed nor replace the first message. */
static void expect_fail(braid_graph *g, braid_tensor t, braid_status s,
                        const char *needle) {
    cr_assert(!braid_tensor_valid(t), "call succeeded; wanted \"%s\"", needle);
    cr_assert_eq(braid_graph_status(g), s, "status %s (%s), wanted %s",
                 braid_status_name(braid_graph_status(g)), braid_graph_error(g),
                 braid_status_name(s));
    const char *msg = braid_graph_error(g);
    cr_assert(strstr(msg, needle) != NULL, "message \"%s\" lacks \"%s\"", msg,
              needle);
    cr_assert(strstr(braid_last_error(), needle) != NULL,
              "last error \"%s\" lacks \"%s\"", braid_last_error(), needle);
    char first[BG_ERROR_MAX];
    strcpy(first, msg);
    uint32_t nodes = braid_graph_node_count(g);
    braid_tensor a = braid_input(g, "late_input", BRAID_F32, 1, DIMS(2));
    cr_assert(!braid_tensor_valid(a));
    cr_assert(!braid_tensor_valid(braid_add(g, a, a)));
    cr_assert(!braid_tensor_valid(braid_fill(g, BRAID_F32, 0, NULL, 1)));
    cr_assert(!braid_tensor_valid(braid_sum(g, a, 1, (int[]){7}, false)));
    cr_assert(!braid_tensor_valid(braid_concat(g, 1, &a, 0)));
    cr_assert(!braid_tensor_valid(braid_softmax(g, a, 0)));
    cr_assert_eq(braid_output(g, "late", (braid_tensor){0}), s);
    cr_assert_eq(braid_set_device(g, (braid_tensor){0}, "bogus"), s);
    cr_assert_eq(braid_set_name(g, (braid_tensor){0}, "n"), s);
    cr_assert_eq(braid_graph_node_count(g), nodes);
    cr_assert_eq(braid_graph_status(g), s);
    cr_assert_str_eq(braid_graph_error(g), first);
    cr_assert_str_eq(braid_last_error(), first);
}

/* Runs one misuse on a fresh graph holding an f32[2,3] input "x". */
#define MISUSE(status, needle, expr)                                           \
    do {                                                                       \
        braid_graph *g = braid_graph_new(NULL);                                \
        braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));        \
        (void)x;                                                               \
        braid_tensor r_ = (expr);                                              \
        expect_fail(g, r_, status, needle);                                    \
        braid_graph_free(g);                                                   \
    } while (0)

#define INV BRAID_ERR_INVALID_ARGUMENT

/* bg_build with one input x and the given output shape and attributes. */
static braid_tensor bg_direct(braid_graph *g, braid_op op, braid_tensor x,
                              int rank, const int64_t *dims, bg_attrs a) {
    braid_tensor t = {
        bg_build(g, op, &x.id, 1, BRAID_F32, rank, dims, &a, NULL)};
    return t;
}

/* A fresh input of another type, made inside MISUSE expressions. */
static braid_tensor in_(braid_graph *g, braid_dtype dt, int rank,
                        const int64_t *dims) {
    static int counter;
    char name[32];
    snprintf(name, sizeof name, "in%d", counter++);
    return braid_input(g, name, dt, rank, dims);
}

#define IN(dt, ...)                                                            \
    in_(g, BRAID_##dt, (int)(sizeof DIMS(__VA_ARGS__) / sizeof(int64_t)),      \
        DIMS(__VA_ARGS__))
#define IN0(dt) in_(g, BRAID_##dt, 0, NULL)

Test(misuse, null_graph) {
    cr_assert(!braid_tensor_valid(braid_input(NULL, "x", BRAID_F32, 0, NULL)));
    cr_assert(strstr(braid_last_error(), "input"));
    cr_assert(!braid_tensor_valid(braid_add(NULL, BRAID_NONE, BRAID_NONE)));
    cr_assert(strstr(braid_last_error(), "add"));
    cr_assert(!braid_tensor_valid(braid_sum(NULL, BRAID_NONE, 0, NULL, 0)));
    cr_assert(strstr(braid_last_error(), "sum"));
    cr_assert(!braid_tensor_valid(braid_softmax(NULL, BRAID_NONE, 0)));
    cr_assert(strstr(braid_last_error(), "softmax"));
    cr_assert(
        !braid_tensor_valid(braid_slice(NULL, BRAID_NONE, NULL, NULL, NULL)));
    cr_assert(!braid_tensor_valid(braid_concat(NULL, 0, NULL, 0)));
    cr_assert(!braid_tensor_valid(braid_cast(NULL, BRAID_NONE, BRAID_F32)));
    cr_assert(!braid_tensor_valid(braid_unary(NULL, BRAID_OP_EXP, BRAID_NONE)));
    cr_assert(!braid_tensor_valid(
        braid_layer_norm(NULL, BRAID_NONE, BRAID_NONE, BRAID_NONE, 1)));
    cr_assert_eq(braid_output(NULL, "y", BRAID_NONE), INV);
    cr_assert(strstr(braid_last_error(), "braid_output"));
    cr_assert_eq(braid_set_name(NULL, BRAID_NONE, "y"), INV);
    cr_assert_eq(braid_set_device(NULL, BRAID_NONE, "cpu"), INV);
    cr_assert_eq(braid_graph_status(NULL), INV);
    cr_assert_eq(braid_graph_node_count(NULL), 0);
    cr_assert_eq(braid_graph_input_count(NULL), 0);
    cr_assert_eq(braid_graph_output_count(NULL), 0);
    cr_assert_eq(braid_graph_input(NULL, 0, NULL, NULL), INV);
    cr_assert_eq(braid_graph_output(NULL, 0, NULL, NULL), INV);
    cr_assert_eq(
        bg_build(NULL, BRAID_OP_ADD, NULL, 0, BRAID_F32, 0, NULL, NULL, NULL),
        BG_NONE);
    braid_graph_free(NULL);
    cr_assert(!braid_tensor_valid(BRAID_NONE));
}

Test(misuse, bad_source_shapes) {
    MISUSE(INV, "input", braid_input(g, "y", BRAID_F32, 2, NULL));
    MISUSE(INV, "rank 9",
           braid_input(g, "y", BRAID_F32, 9, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)));
    MISUSE(INV, "fill", braid_fill(g, BRAID_F32, -1, NULL, 0));
    MISUSE(INV, "fill: dim 1 is -2",
           braid_fill(g, BRAID_F32, 2, DIMS(1, -2), 0));
    MISUSE(INV, "iota",
           braid_iota(g, BRAID_F32, 2, DIMS(1, (int64_t)1 << 51), 0));
    MISUSE(INV, "larger than 2^50",
           braid_input(g, "y", BRAID_F64, 3, DIMS(1 << 20, 1 << 20, 1 << 8)));
    MISUSE(INV, "larger than 2^50",
           braid_fill(g, BRAID_F32, 4, DIMS(1 << 20, 1 << 20, 1 << 20, 1 << 20),
                      0));
    MISUSE(INV, "constant: data is NULL",
           braid_constant(g, BRAID_F32, 1, DIMS(3), NULL));
}

Test(misuse, bad_dtype) {
    MISUSE(BRAID_ERR_DTYPE, "input: unknown dtype",
           braid_input(g, "y", (braid_dtype)17, 0, NULL));
    MISUSE(BRAID_ERR_DTYPE, "fill",
           braid_fill(g, BRAID_DTYPE_COUNT_, 0, NULL, 0));
    MISUSE(BRAID_ERR_DTYPE, "cast", braid_cast(g, x, (braid_dtype)-1));
    MISUSE(BRAID_ERR_DTYPE, "iota: dtype bool",
           braid_iota(g, BRAID_BOOL, 1, DIMS(3), 0));
    MISUSE(BRAID_ERR_DTYPE, "random_uniform",
           braid_random_uniform(g, BRAID_I32, 1, DIMS(3), 1, 0, 1));
    MISUSE(BRAID_ERR_DTYPE, "random_normal",
           braid_random_normal(g, BRAID_BOOL, 1, DIMS(3), 1, 0, 1));
}

Test(misuse, bad_random_parameters) {
    MISUSE(INV, "random_uniform",
           braid_random_uniform(g, BRAID_F32, 0, NULL, 1, 2, 1));
    MISUSE(INV, "random_uniform",
           braid_random_uniform(g, BRAID_F32, 0, NULL, 1, NAN, 1));
    MISUSE(INV, "random_uniform",
           braid_random_uniform(g, BRAID_F32, 0, NULL, 1, -INFINITY, 1));
    MISUSE(INV, "random_uniform",
           braid_random_uniform(g, BRAID_F64, 0, NULL, 1, -1e308, 1e308));
    MISUSE(INV, "random_normal",
           braid_random_normal(g, BRAID_F32, 0, NULL, 1, 0, -1));
    MISUSE(INV, "random_normal",
           braid_random_normal(g, BRAID_F32, 0, NULL, 1, NAN, 1));
    MISUSE(INV, "random_normal",
           braid_random_normal(g, BRAID_F32, 0, NULL, 1, 0, INFINITY));
}

Test(misuse, shape_mismatch_message) {
    MISUSE(BRAID_ERR_SHAPE, "add: shapes f32[2,3] and f32[4] do not broadcast",
           braid_add(g, x, IN(F32, 4)));
    MISUSE(BRAID_ERR_SHAPE,
           "mul: shapes f32[2,3] and f32[3,3] do not broadcast",
           braid_mul(g, x, IN(F32, 3, 3)));
    MISUSE(BRAID_ERR_SHAPE, "where", braid_where(g, IN(BOOL, 5), x, x));
    MISUSE(BRAID_ERR_SHAPE, "eq", braid_eq(g, x, IN(F32, 2, 0)));
}

Test(misuse, dtype_mismatch_and_bool_arithmetic) {
    MISUSE(BRAID_ERR_DTYPE,
           "add: operands f32[2,3] and f16[3] have different dtypes",
           braid_add(g, x, IN(F16, 3)));
    MISUSE(BRAID_ERR_DTYPE, "add: operands bool[2] and bool[2]",
           braid_add(g, IN(BOOL, 2), IN(BOOL, 2)));
    MISUSE(BRAID_ERR_DTYPE, "neg", braid_neg(g, IN(BOOL, 2)));
    MISUSE(BRAID_ERR_DTYPE, "exp: operand i32[2]", braid_exp(g, IN(I32, 2)));
    MISUSE(BRAID_ERR_DTYPE, "sigmoid", braid_sigmoid(g, IN(BOOL, 2)));
    MISUSE(BRAID_ERR_DTYPE, "pow", braid_pow(g, IN(I32, 2), IN(I32, 2)));
    MISUSE(BRAID_ERR_DTYPE, "lt", braid_lt(g, IN(BOOL, 2), IN(BOOL, 2)));
    MISUSE(BRAID_ERR_DTYPE, "max", braid_max(g, IN(BOOL, 2), IN(BOOL, 2)));
    MISUSE(BRAID_ERR_DTYPE, "where", braid_where(g, x, x, x));
    MISUSE(BRAID_ERR_DTYPE, "where",
           braid_where(g, IN(BOOL, 3), x, IN(F64, 3)));
    MISUSE(BRAID_ERR_DTYPE, "mean", braid_mean(g, IN(I32, 2), 0, NULL, false));
    MISUSE(BRAID_ERR_DTYPE, "sum", braid_sum(g, IN(BOOL, 2), 0, NULL, false));
    MISUSE(BRAID_ERR_DTYPE, "reduce_max",
           braid_reduce_max(g, IN(BOOL, 2), 0, NULL, 0));
}

Test(misuse, matmul_mismatch) {
    MISUSE(BRAID_ERR_SHAPE, "matmul", braid_matmul(g, x, x, 0));
    MISUSE(BRAID_ERR_SHAPE, "inner dims 2 and 4 differ",
           braid_matmul(g, x, IN(F32, 4, 3), BRAID_TRANSPOSE_A));
    MISUSE(BRAID_ERR_SHAPE, "expected rank >= 2",
           braid_matmul(g, x, IN(F32, 3), 0));
    MISUSE(BRAID_ERR_SHAPE, "batch dims",
           braid_matmul(g, IN(F32, 2, 3, 4), IN(F32, 3, 4, 5), 0));
    MISUSE(BRAID_ERR_DTYPE, "matmul", braid_matmul(g, x, IN(F16, 3, 2), 0));
    MISUSE(BRAID_ERR_DTYPE, "matmul",
           braid_matmul(g, IN(I32, 2, 2), IN(I32, 2, 2), 0));
    MISUSE(INV, "matmul: unknown flags", braid_matmul(g, x, x, 4));
}

Test(misuse, bad_reduction_axes) {
    MISUSE(INV, "sum: axis 2 out of range for operand f32[2,3]",
           braid_sum(g, x, 1, (int[]){2}, false));
    MISUSE(INV, "mean: axis -3", braid_mean(g, x, 1, (int[]){-3}, false));
    MISUSE(INV, "reduce_min: duplicate axis 0",
           braid_reduce_min(g, x, 2, (int[]){0, -2}, false));
    MISUSE(INV, "sum", braid_sum(g, x, 3, (int[]){0, 1, 0}, false));
    MISUSE(INV, "sum", braid_sum(g, x, -1, (int[]){0}, false));
    MISUSE(INV, "NULL array", braid_sum(g, x, 1, NULL, false));
}

Test(misuse, bad_axes_elsewhere) {
    MISUSE(INV, "iota: axis 2", braid_iota(g, BRAID_F32, 2, DIMS(2, 2), 2));
    MISUSE(INV, "iota", braid_iota(g, BRAID_F32, 0, NULL, 0));
    MISUSE(INV, "iota", braid_iota(g, BRAID_I32, 1, DIMS(2), -1));
    MISUSE(INV, "softmax: axis 2", braid_softmax(g, x, 2));
    MISUSE(INV, "softmax", braid_softmax(g, IN0(F32), 0));
    MISUSE(BRAID_ERR_DTYPE, "softmax", braid_softmax(g, IN(I32, 2), 0));
    MISUSE(INV, "concat: axis 2", braid_concat(g, 1, &x, 2));
    MISUSE(INV, "concat: axis -3", braid_concat(g, 1, &x, -3));
}

Test(misuse, bad_layer_norm) {
    MISUSE(INV, "layer_norm",
           braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, -1));
    MISUSE(INV, "layer_norm",
           braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, NAN));
    MISUSE(INV, "layer_norm",
           braid_layer_norm(g, IN0(F32), BRAID_NONE, BRAID_NONE, 0));
    MISUSE(BRAID_ERR_DTYPE, "layer_norm",
           braid_layer_norm(g, IN(I32, 4), BRAID_NONE, BRAID_NONE, 0));
    MISUSE(BRAID_ERR_SHAPE, "layer_norm: gamma f32[2]",
           braid_layer_norm(g, x, IN(F32, 2), BRAID_NONE, 0));
    MISUSE(BRAID_ERR_SHAPE, "layer_norm: beta f32[4,3]",
           braid_layer_norm(g, x, BRAID_NONE, IN(F32, 4, 3), 0));
    MISUSE(BRAID_ERR_DTYPE, "mul",
           braid_layer_norm(g, x, IN(F64, 3), BRAID_NONE, 0));
}

Test(misuse, bad_permute_and_transpose) {
    MISUSE(INV, "permute", braid_permute(g, x, (const int[]){0, 0}));
    MISUSE(INV, "permute: perm[1] = 5",
           braid_permute(g, x, (const int[]){0, 5}));
    MISUSE(INV, "permute", braid_permute(g, x, (const int[]){-1, 0}));
    MISUSE(INV, "permute: perm is NULL", braid_permute(g, x, NULL));
    MISUSE(BRAID_ERR_SHAPE, "transpose: operand f32[7]",
           braid_transpose(g, IN(F32, 7)));
    MISUSE(BRAID_ERR_SHAPE, "transpose", braid_transpose(g, IN0(F32)));
}

Test(misuse, bad_slice) {
    MISUSE(INV, "slice: step 0",
           braid_slice(g, x, DIMS(0, 0), DIMS(2, 3), DIMS(1, 0)));
    MISUSE(INV, "slice",
           braid_slice(g, x, DIMS(0, 0), DIMS(2, 3), DIMS(INT64_MIN, 1)));
    MISUSE(INV, "slice: start or stop is NULL",
           braid_slice(g, x, NULL, DIMS(2, 3), NULL));
    MISUSE(INV, "slice", braid_slice(g, x, DIMS(0, 0), NULL, NULL));
    MISUSE(
        BRAID_ERR_SHAPE, "slice",
        bg_direct(g, BRAID_OP_SLICE, x, 1, DIMS(2), (bg_attrs){.step = {1}}));
    /* bg_build level: counts and starts must stay inside the axis */
    MISUSE(INV, "slice: axis 1 of f32[2,3]: start 1, step 2, count 2",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(2, 2),
                     (bg_attrs){.start = {0, 1}, .step = {1, 2}}));
    MISUSE(INV, "slice: axis 0",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(0, 3),
                     (bg_attrs){.start = {3}, .step = {1, 1}}));
    MISUSE(INV, "slice: axis 0",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(1, 3),
                     (bg_attrs){.start = {2}, .step = {1, 1}}));
    MISUSE(INV, "slice",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(1, 3),
                     (bg_attrs){.start = {-1}, .step = {1, 1}}));
    MISUSE(INV, "slice: axis 1",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(1, 2),
                     (bg_attrs){.step = {1, INT64_MAX}}));
    /* a negative step must not walk below element 0 */
    MISUSE(INV, "slice: axis 1 of f32[2,3]: start 1, step -1, count 3",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(1, 3),
                     (bg_attrs){.start = {0, 1}, .step = {1, -1}}));
    MISUSE(INV, "slice: axis 1",
           bg_direct(g, BRAID_OP_SLICE, x, 2, DIMS(1, 2),
                     (bg_attrs){.start = {0, 2}, .step = {1, INT64_MIN}}));
}

Test(misuse, bad_reshape) {
    MISUSE(BRAID_ERR_SHAPE, "reshape: f32[2,3] has 6 elements",
           braid_reshape(g, x, 2, DIMS(4, 2)));
    MISUSE(INV, "reshape", braid_reshape(g, x, 2, DIMS(-1, -1)));
    MISUSE(INV, "reshape: dim 0 is -2", braid_reshape(g, x, 2, DIMS(-2, -3)));
    MISUSE(BRAID_ERR_SHAPE, "cannot infer",
           braid_reshape(g, x, 2, DIMS(-1, 4)));
    MISUSE(BRAID_ERR_SHAPE, "cannot infer",
           braid_reshape(g, IN(F32, 0, 3), 2, DIMS(0, -1)));
    MISUSE(INV, "reshape: dims is NULL", braid_reshape(g, x, 1, NULL));
    MISUSE(INV, "reshape: rank 9",
           braid_reshape(g, x, 9, DIMS(6, 1, 1, 1, 1, 1, 1, 1, 1)));
    MISUSE(BRAID_ERR_SHAPE, "reshape",
           braid_reshape(g, x, 4, DIMS(1 << 30, 1 << 30, 1 << 30, 1 << 30)));
}

Test(misuse, bad_broadcast_to_and_concat) {
    MISUSE(BRAID_ERR_SHAPE,
           "broadcast_to: f32[2,3] does not broadcast to [4,3]",
           braid_broadcast_to(g, x, 2, DIMS(4, 3)));
    MISUSE(BRAID_ERR_SHAPE, "broadcast_to",
           braid_broadcast_to(g, x, 1, DIMS(3)));
    MISUSE(INV, "broadcast_to", braid_broadcast_to(g, x, 2, NULL));
    MISUSE(INV, "concat: 0 inputs", braid_concat(g, 0, &x, 0));
    MISUSE(INV, "concat", braid_concat(g, 2, NULL, 0));
    MISUSE(BRAID_ERR_SHAPE, "concat: operand 1 f32[3,3]",
           braid_concat(g, 2, ((braid_tensor[]){x, IN(F32, 3, 3)}), 1));
    MISUSE(BRAID_ERR_DTYPE, "concat: operand 1 f16[2,3]",
           braid_concat(g, 2, ((braid_tensor[]){x, IN(F16, 2, 3)}), 0));
    MISUSE(BRAID_ERR_SHAPE, "concat",
           braid_concat(g, 2, ((braid_tensor[]){x, IN(F32, 6)}), 0));
    MISUSE(INV, "concat: axis 0",
           braid_concat(g, 1, ((braid_tensor[]){IN0(F32)}), 0));
}

Test(misuse, unknown_device_strings) {
    const char *bad[] = {
        "gpu",     "CPU",     "cuda",     "cuda:", "cuda:-1", "cuda:64",
        "cuda:01", "cuda:1x", "cuda:100", " cpu",  "cpu0",    ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
        braid_tensor y = braid_exp(g, x);
        cr_assert_eq(braid_set_device(g, y, bad[i]), INV, "%s", bad[i]);
        cr_assert(strstr(braid_graph_error(g), "braid_set_device"));
        cr_assert(strstr(braid_graph_error(g), "exp"));
        expect_fail(g, BRAID_NONE, INV, "braid_set_device");
        braid_graph_free(g);
    }
}

Test(misuse, bad_input_names) {
    MISUSE(INV, "input: duplicate input name \"x\"",
           braid_input(g, "x", BRAID_F32, 0, NULL));
    MISUSE(INV, "input: name \"1x\"", braid_input(g, "1x", BRAID_F32, 0, NULL));
    MISUSE(INV, "input", braid_input(g, "", BRAID_F32, 0, NULL));
    MISUSE(INV, "input: name (null)", braid_input(g, NULL, BRAID_F32, 0, NULL));
    MISUSE(INV, "input", braid_input(g, "a-b", BRAID_F32, 0, NULL));
    MISUSE(INV, "input", braid_input(g, ".a", BRAID_F32, 0, NULL));
    MISUSE(INV, "input", braid_input(g, "a b", BRAID_F32, 0, NULL));
}

Test(misuse, bad_names_and_outputs) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    cr_assert_eq(braid_output(g, "y", x), BRAID_OK);
    cr_assert_eq(braid_output(g, "y", x), INV);
    expect_fail(g, BRAID_NONE, INV,
                "braid_output: duplicate output name \"y\"");
    braid_graph_free(g);

    const char *bad_out[] = {NULL, "", "a\nb", "tab\there"};
    for (size_t i = 0; i < sizeof bad_out / sizeof bad_out[0]; i++) {
        g = braid_graph_new(NULL);
        x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
        cr_assert_eq(braid_output(g, bad_out[i], x), INV);
        expect_fail(g, BRAID_NONE, INV, "braid_output");
        braid_graph_free(g);
    }
    g = braid_graph_new(NULL);
    braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    cr_assert_eq(braid_output(g, "y", (braid_tensor){5}), INV);
    expect_fail(g, BRAID_NONE, INV, "braid_output: invalid tensor (id 5");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    cr_assert_eq(braid_output(g, "y", BRAID_NONE), INV);
    expect_fail(g, BRAID_NONE, INV, "braid_output");
    braid_graph_free(g);

    /* renaming an input keeps the input rules */
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    braid_input(g, "z", BRAID_F32, 1, DIMS(2));
    cr_assert_eq(braid_set_name(g, x, "z"), INV);
    expect_fail(g, BRAID_NONE, INV, "braid_set_name: duplicate input name");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    cr_assert_eq(braid_set_name(g, x, "not valid"), INV);
    expect_fail(g, BRAID_NONE, INV, "braid_set_name: input name");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    cr_assert_eq(braid_set_name(g, braid_exp(g, x), "line\nbreak"), INV);
    expect_fail(g, BRAID_NONE, INV, "braid_set_name: name of node 1 (exp)");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    cr_assert_eq(braid_set_name(g, (braid_tensor){0}, "q"), INV);
    expect_fail(g, BRAID_NONE, INV, "braid_set_name: invalid tensor");
    braid_graph_free(g);
}

Test(misuse, invalid_tensor_ids) {
    MISUSE(INV, "add: input 1 has id 57", braid_add(g, x, (braid_tensor){57}));
    MISUSE(INV, "exp: input 0 is an invalid tensor", braid_exp(g, BRAID_NONE));
    MISUSE(INV, "sum: operand has id 9",
           braid_sum(g, (braid_tensor){9}, 0, NULL, 0));
    MISUSE(INV, "slice: operand is an invalid tensor",
           braid_slice(g, BRAID_NONE, NULL, NULL, NULL));
    MISUSE(INV, "concat", braid_concat(g, 2, ((braid_tensor[]){x, {3}}), 0));
    MISUSE(INV, "where: input 2", braid_where(g, x, x, (braid_tensor){3}));
    MISUSE(INV, "layer_norm: operand has id 8",
           braid_layer_norm(g, x, (braid_tensor){8}, BRAID_NONE, 0));
    /* a tensor id from another graph that is too large here */
    braid_graph *other = braid_graph_new(NULL);
    for (int i = 0; i < 5; i++)
        braid_fill(other, BRAID_F32, 0, NULL, i);
    braid_tensor foreign = {4};
    MISUSE(INV, "neg", braid_neg(g, foreign));
    braid_graph_free(other);
}

Test(misuse, wrong_op_for_unary_binary) {
    MISUSE(INV, "braid_unary: op 'add' is not a unary elementwise op",
           braid_unary(g, BRAID_OP_ADD, x));
    MISUSE(INV, "braid_unary: op 'cast'", braid_unary(g, BRAID_OP_CAST, x));
    MISUSE(INV, "braid_unary: op 'sum'", braid_unary(g, BRAID_OP_SUM, x));
    MISUSE(INV, "braid_unary: op 'copy'", braid_unary(g, BRAID_OP_COPY, x));
    MISUSE(INV, "braid_unary: op '?'", braid_unary(g, (braid_op)999, x));
    MISUSE(INV, "braid_binary: op 'neg'", braid_binary(g, BRAID_OP_NEG, x, x));
    MISUSE(INV, "braid_binary: op 'matmul'",
           braid_binary(g, BRAID_OP_MATMUL, x, x));
    MISUSE(INV, "braid_binary: op 'where'",
           braid_binary(g, BRAID_OP_WHERE, x, x));
    MISUSE(INV, "braid_binary: op '?'", braid_binary(g, (braid_op)-3, x, x));
}

Test(misuse, copy_and_fused_are_not_buildable) {
    MISUSE(BRAID_ERR_UNSUPPORTED, "op 'copy' is created by the compiler",
           bg_direct(g, BRAID_OP_COPY, x, 0, NULL, (bg_attrs){0}));
    MISUSE(BRAID_ERR_UNSUPPORTED, "op 'fused' is created by the compiler",
           bg_direct(g, BRAID_OP_FUSED, x, 0, NULL, (bg_attrs){0}));
}

Test(misuse, bg_build_call_checks) {
    MISUSE(INV, "bg_build: unknown op 4000",
           bg_direct(g, (braid_op)4000, x, 0, NULL, (bg_attrs){0}));
    MISUSE(INV, "add: got 1 inputs; expected 2",
           bg_direct(g, BRAID_OP_ADD, x, 0, NULL, (bg_attrs){0}));
    MISUSE(INV, "fill: got 1 inputs; expected 0",
           bg_direct(g, BRAID_OP_FILL, x, 0, NULL, (bg_attrs){0}));
    MISUSE(INV, "concat: got 0 inputs; expected at least 1",
           (braid_tensor){bg_build(g, BRAID_OP_CONCAT, NULL, 0, BRAID_F32, 0,
                                   NULL, NULL, NULL)});
    MISUSE(INV, "neg: got 1 inputs (NULL array)",
           (braid_tensor){bg_build(g, BRAID_OP_NEG, NULL, 1, BRAID_F32, 0, NULL,
                                   NULL, NULL)});
    MISUSE(INV, "sum: axes mask 0x4 names axes beyond operand f32[2,3]",
           bg_direct(g, BRAID_OP_SUM, x, 0, NULL, (bg_attrs){.axes = 4}));
    MISUSE(INV, "sum: unknown flags",
           bg_direct(g, BRAID_OP_SUM, x, 0, NULL, (bg_attrs){.flags = 2}));
    MISUSE(
        INV, "permute: perm[1] = 7",
        bg_direct(g, BRAID_OP_PERMUTE, x, 0, NULL, (bg_attrs){.perm = {0, 7}}));
}

Test(misuse, errors_reach_last_error) {
    bg_clear_last_error();
    cr_assert_str_empty(braid_last_error());
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    braid_exp(g, braid_cast(g, x, BRAID_I32));
    cr_assert(strstr(braid_last_error(), "exp: operand i32[2]"));
    cr_assert_eq(bg_set_last_error(BRAID_ERR_IO, "io %d", 5), BRAID_ERR_IO);
    cr_assert_str_eq(braid_last_error(), "io 5");
    /* bg_fail keeps the first message on the graph */
    cr_assert_eq(bg_fail(g, BRAID_ERR_INTERNAL, "second"), BRAID_ERR_INTERNAL);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_DTYPE);
    cr_assert_str_eq(braid_last_error(), "second");
    /* a message may quote the current one */
    bg_set_last_error(BRAID_ERR_IO, "wrapped: %s", braid_last_error());
    cr_assert_str_eq(braid_last_error(), "wrapped: second");
    braid_graph *h = braid_graph_new(NULL);
    bg_fail(h, BRAID_ERR_PARSE, "f:1:2: %s", braid_last_error());
    cr_assert_str_eq(braid_graph_error(h), "f:1:2: wrapped: second");
    cr_assert_eq(braid_graph_status(h), BRAID_ERR_PARSE);
    braid_graph_free(h);
    braid_graph_free(g);
}

static uint64_t next_rand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

/* A random value biased toward the edges that break naive checks. */
static int64_t edgy(uint64_t *s) {
    static const int64_t edges[] = {
        0, 1, 2, 3, -1, -2, 7, INT64_MAX, INT64_MIN, (int64_t)1 << 50, 4};
    uint64_t r = next_rand(s);
    return r % 3 ? (int64_t)(r % 5) : edges[r % 11];
}

/* bg_build fed random arguments never crashes (the sanitizer build makes
 * this meaningful), and whatever it accepts is a well-formed node. */
Test(misuse, random_bg_build_calls_never_crash) {
    uint64_t s = 99;
    int made = 0;
    for (int round = 0; round < 3000; round++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
        braid_fill(g, BRAID_I32, 1, DIMS(3), 1);
        for (int k = 0; k < 60 && braid_graph_status(g) == BRAID_OK; k++) {
            braid_op op = (braid_op)(next_rand(&s) % (BRAID_OP_COUNT_ + 2));
            if (op == BRAID_OP_CONSTANT) /* data size is the caller's job */
                op = BRAID_OP_FILL;
            uint32_t in[4];
            uint32_t nin = (uint32_t)(next_rand(&s) % 4);
            for (uint32_t i = 0; i < nin; i++)
                in[i] =
                    (uint32_t)(next_rand(&s) % (braid_graph_node_count(g) + 1));
            int64_t dims[10];
            for (int i = 0; i < 10; i++)
                dims[i] = edgy(&s);
            bg_attrs a;
            unsigned char *raw = (unsigned char *)&a;
            for (size_t i = 0; i < sizeof a; i++)
                raw[i] = (unsigned char)next_rand(&s);
            for (int i = 0; i < BRAID_MAX_RANK; i++) {
                a.start[i] = edgy(&s);
                a.step[i] = edgy(&s);
                a.perm[i] = (uint8_t)(next_rand(&s) % 4);
            }
            a.axis = (int32_t)edgy(&s);
            a.axes = (uint8_t)next_rand(&s);
            a.flags = (uint32_t)(next_rand(&s) % 4);
            a.data = NULL;
            a.value[0] = (double)edgy(&s);
            a.value[1] = a.value[0] + (double)(next_rand(&s) % 3);
            int rank = (int)(next_rand(&s) % 11) - 1;
            braid_dtype dt = (braid_dtype)(next_rand(&s) % 7);
            char name[8];
            snprintf(name, sizeof name, "n%d", (int)(next_rand(&s) % 50));
            uint32_t id = bg_build(g, op, in, nin, dt, rank,
                                   next_rand(&s) % 8 ? dims : NULL, &a, name);
            if (id == BG_NONE) {
                cr_assert_neq(braid_graph_status(g), BRAID_OK);
                cr_assert_str_neq(braid_graph_error(g), "");
                continue;
            }
            made++;
            const bg_node *n = bg_node_at(g, id);
            cr_assert(n->rank <= BRAID_MAX_RANK);
            cr_assert(bg_nbytes(n) <= (size_t)BG_MAX_BYTES);
            for (uint32_t i = 0; i < n->ninputs; i++)
                cr_assert_lt(n->inputs[i], id);
            cr_assert_null(n->attr.data);
        }
        braid_graph *c = bg_graph_clone(g);
        cr_assert(bg_graph_equal(g, c));
        braid_graph_free(c);
        braid_graph_free(g);
    }
    cr_log_info("random bg_build: %d nodes made", made);
    cr_assert_gt(made, 50);
}
