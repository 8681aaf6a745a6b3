/* tests/test_builder.c — shape and dtype inference of every builder, names,
 * device hints, inputs/outputs, clone and structural equality. */
#include <criterion/criterion.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"

/* Asserts t is valid with the given dtype and shape. */
static void expect_type(const braid_graph *g, braid_tensor t, braid_dtype dt,
                        int rank, const int64_t *dims) {
    cr_assert(braid_tensor_valid(t), "invalid tensor: %s",
              braid_graph_error(g));
    braid_dtype got_dt;
    int got_rank;
    int64_t got[BRAID_MAX_RANK];
    cr_assert_eq(braid_tensor_info(g, t, &got_dt, &got_rank, got), BRAID_OK);
    cr_assert_eq(got_dt, dt, "dtype %s, expected %s", braid_dtype_name(got_dt),
                 braid_dtype_name(dt));
    cr_assert_eq(got_rank, rank, "rank %d, expected %d", got_rank, rank);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(got[i], dims[i], "dim %d is %lld, expected %lld", i,
                     (long long)got[i], (long long)dims[i]);
    for (int i = rank; i < BRAID_MAX_RANK; i++)
        cr_assert_eq(got[i], 0);
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define EXPECT(g, t, dt, rank, ...)                                            \
    expect_type(g, t, dt, rank, DIMS(__VA_ARGS__))

static braid_graph *g;

static void setup(void) {
    g = braid_graph_new(NULL);
}
static void teardown(void) {
    braid_graph_free(g);
    g = NULL;
}

TestSuite(builder, .init = setup, .fini = teardown);

Test(builder, sources) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    EXPECT(g, x, BRAID_F32, 2, 2, 3);
    float data[6] = {1, 2, 3, 4, 5, 6};
    braid_tensor c = braid_constant(g, BRAID_F32, 2, DIMS(3, 2), data);
    EXPECT(g, c, BRAID_F32, 2, 3, 2);
    data[0] = 99; /* the graph holds a copy */
    cr_assert_eq(((float *)bg_node_at(g, c.id)->attr.data)[0], 1.0f);
    braid_tensor f = braid_fill(g, BRAID_I32, 0, NULL, 7);
    EXPECT(g, f, BRAID_I32, 0, 0);
    cr_assert_eq(braid_tensor_numel(g, f), 1);
    cr_assert_eq(bg_node_at(g, f.id)->attr.value[0], 7.0);
    braid_tensor i = braid_iota(g, BRAID_F64, 3, DIMS(2, 0, 4), 2);
    EXPECT(g, i, BRAID_F64, 3, 2, 0, 4);
    cr_assert_eq(braid_tensor_numel(g, i), 0);
    cr_assert_eq(bg_node_at(g, i.id)->attr.axis, 2);
    braid_tensor u = braid_random_uniform(g, BRAID_BF16, 1, DIMS(5), 42, -1, 1);
    EXPECT(g, u, BRAID_BF16, 1, 5);
    cr_assert_eq(bg_node_at(g, u.id)->attr.seed, 42u);
    braid_tensor n = braid_random_normal(g, BRAID_F16, 1, DIMS(5), 1, 0, 0);
    EXPECT(g, n, BRAID_F16, 1, 5);
    braid_tensor e = braid_constant(g, BRAID_BOOL, 1, DIMS(0), NULL);
    EXPECT(g, e, BRAID_BOOL, 1, 0);
    cr_assert_eq(braid_graph_node_count(g), 7);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    cr_assert_str_empty(braid_graph_error(g));
}

Test(builder, unary_ops_keep_type) {
    braid_tensor x = braid_input(g, "x", BRAID_F16, 3, DIMS(4, 1, 2));
    for (int op = BRAID_OP_NEG; op <= BRAID_OP_SQUARE; op++)
        EXPECT(g, braid_unary(g, (braid_op)op, x), BRAID_F16, 3, 4, 1, 2);
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(3));
    EXPECT(g, braid_neg(g, i), BRAID_I32, 1, 3);
    EXPECT(g, braid_abs(g, i), BRAID_I32, 1, 3);
    EXPECT(g, braid_square(g, i), BRAID_I32, 1, 3);
    EXPECT(g, braid_relu(g, i), BRAID_I32, 1, 3);
    EXPECT(g, braid_gelu(g, x), BRAID_F16, 3, 4, 1, 2);
    EXPECT(g, braid_erf(g, x), BRAID_F16, 3, 4, 1, 2);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
}

Test(builder, named_wrappers_make_their_op) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(3));
    static const struct {
        braid_tensor (*fn)(braid_graph *, braid_tensor);
        braid_op op;
    } un[] = {{braid_neg, BRAID_OP_NEG},
              {braid_abs, BRAID_OP_ABS},
              {braid_exp, BRAID_OP_EXP},
              {braid_log, BRAID_OP_LOG},
              {braid_sqrt, BRAID_OP_SQRT},
              {braid_rsqrt, BRAID_OP_RSQRT},
              {braid_sin, BRAID_OP_SIN},
              {braid_cos, BRAID_OP_COS},
              {braid_tan, BRAID_OP_TAN},
              {braid_tanh, BRAID_OP_TANH},
              {braid_sigmoid, BRAID_OP_SIGMOID},
              {braid_relu, BRAID_OP_RELU},
              {braid_gelu, BRAID_OP_GELU},
              {braid_silu, BRAID_OP_SILU},
              {braid_erf, BRAID_OP_ERF},
              {braid_floor, BRAID_OP_FLOOR},
              {braid_ceil, BRAID_OP_CEIL},
              {braid_reciprocal, BRAID_OP_RECIPROCAL},
              {braid_square, BRAID_OP_SQUARE}};
    for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
        braid_tensor t = un[k].fn(g, x);
        cr_assert_eq(bg_node_at(g, t.id)->op, un[k].op, "%s",
                     bg_op(un[k].op)->name);
    }
    braid_tensor (*bin[])(braid_graph *, braid_tensor, braid_tensor) = {
        braid_add, braid_sub, braid_mul, braid_div, braid_pow,
        braid_max, braid_min, braid_eq,  braid_ne,  braid_lt,
        braid_le,  braid_gt,  braid_ge};
    for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
        braid_tensor t = bin[k](g, x, x);
        cr_assert_eq(bg_node_at(g, t.id)->op, (braid_op)(BRAID_OP_ADD + k));
        cr_assert_eq(bg_node_at(g, t.id)->ninputs, 2);
    }
}

Test(builder, binary_broadcasting) {
    braid_tensor a = braid_input(g, "a", BRAID_F32, 3, DIMS(2, 1, 4));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, DIMS(3, 1));
    braid_tensor s = braid_input(g, "s", BRAID_F32, 0, NULL);
    braid_tensor z = braid_input(g, "z", BRAID_F32, 1, DIMS(0));
    EXPECT(g, braid_add(g, a, b), BRAID_F32, 3, 2, 3, 4);
    EXPECT(g, braid_mul(g, b, a), BRAID_F32, 3, 2, 3, 4);
    EXPECT(g, braid_sub(g, s, a), BRAID_F32, 3, 2, 1, 4);
    EXPECT(g, braid_div(g, s, s), BRAID_F32, 0, 0);
    EXPECT(g, braid_max(g, b, z), BRAID_F32, 2, 3, 0);
    EXPECT(g, braid_pow(g, b, s), BRAID_F32, 2, 3, 1);
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(4));
    EXPECT(g, braid_min(g, i, i), BRAID_I32, 1, 4);
    EXPECT(g, braid_div(g, i, i), BRAID_I32, 1, 4);
}

Test(builder, comparisons_and_where) {
    braid_tensor a = braid_input(g, "a", BRAID_F64, 2, DIMS(3, 1));
    braid_tensor b = braid_input(g, "b", BRAID_F64, 1, DIMS(5));
    braid_tensor c = braid_lt(g, a, b);
    EXPECT(g, c, BRAID_BOOL, 2, 3, 5);
    for (int op = BRAID_OP_EQ; op <= BRAID_OP_GE; op++)
        EXPECT(g, braid_binary(g, (braid_op)op, a, b), BRAID_BOOL, 2, 3, 5);
    EXPECT(g, braid_eq(g, c, c), BRAID_BOOL, 2, 3, 5);
    EXPECT(g, braid_ne(g, c, c), BRAID_BOOL, 2, 3, 5);
    braid_tensor w = braid_where(g, c, a, b);
    EXPECT(g, w, BRAID_F64, 2, 3, 5);
    braid_tensor cs = braid_input(g, "cs", BRAID_BOOL, 3, DIMS(2, 1, 1));
    EXPECT(g, braid_where(g, cs, a, b), BRAID_F64, 3, 2, 3, 5);
}

Test(builder, cast_any_to_any) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 2));
    for (int from = 0; from < BRAID_DTYPE_COUNT_; from++) {
        braid_tensor y = braid_cast(g, x, (braid_dtype)from);
        for (int to = 0; to < BRAID_DTYPE_COUNT_; to++)
            EXPECT(g, braid_cast(g, y, (braid_dtype)to), (braid_dtype)to, 2, 2,
                   2);
    }
}

Test(builder, matmul_shapes) {
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, DIMS(3, 4));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, DIMS(4, 5));
    EXPECT(g, braid_matmul(g, a, b, 0), BRAID_F32, 2, 3, 5);
    braid_tensor at = braid_input(g, "at", BRAID_F32, 2, DIMS(4, 3));
    braid_tensor bt = braid_input(g, "bt", BRAID_F32, 2, DIMS(5, 4));
    EXPECT(g, braid_matmul(g, at, b, BRAID_TRANSPOSE_A), BRAID_F32, 2, 3, 5);
    EXPECT(g, braid_matmul(g, a, bt, BRAID_TRANSPOSE_B), BRAID_F32, 2, 3, 5);
    braid_tensor m =
        braid_matmul(g, at, bt, BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B);
    EXPECT(g, m, BRAID_F32, 2, 3, 5);
    cr_assert_eq(bg_node_at(g, m.id)->attr.flags, 3u);
    /* batch broadcasting: [2,1,3,4] x [5,4,6] -> [2,5,3,6] */
    braid_tensor ba = braid_input(g, "ba", BRAID_F32, 4, DIMS(2, 1, 3, 4));
    braid_tensor bb = braid_input(g, "bb", BRAID_F32, 3, DIMS(5, 4, 6));
    EXPECT(g, braid_matmul(g, ba, bb, 0), BRAID_F32, 4, 2, 5, 3, 6);
    EXPECT(g, braid_matmul(g, a, bb, 0), BRAID_F32, 3, 5, 3, 6);
    braid_tensor h = braid_input(g, "h", BRAID_F16, 2, DIMS(0, 4));
    braid_tensor h2 = braid_input(g, "h2", BRAID_F16, 2, DIMS(4, 0));
    EXPECT(g, braid_matmul(g, h, h2, 0), BRAID_F16, 2, 0, 0);
}

Test(builder, reductions) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(2, 3, 4));
    EXPECT(g, braid_sum(g, x, 0, NULL, false), BRAID_F32, 0, 0);
    EXPECT(g, braid_sum(g, x, 0, NULL, true), BRAID_F32, 3, 1, 1, 1);
    int ax1[] = {1};
    EXPECT(g, braid_mean(g, x, 1, ax1, false), BRAID_F32, 2, 2, 4);
    braid_tensor k = braid_mean(g, x, 1, ax1, true);
    EXPECT(g, k, BRAID_F32, 3, 2, 1, 4);
    cr_assert_eq(bg_node_at(g, k.id)->attr.axes, 2);
    cr_assert_eq(bg_node_at(g, k.id)->attr.flags, BG_KEEPDIMS);
    int neg[] = {-1, 0};
    braid_tensor r = braid_reduce_max(g, x, 2, neg, false);
    EXPECT(g, r, BRAID_F32, 1, 3);
    cr_assert_eq(bg_node_at(g, r.id)->attr.axes, 5);
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(0, 3));
    EXPECT(g, braid_reduce_min(g, i, 1, ax1, true), BRAID_I32, 2, 0, 1);
    EXPECT(g, braid_sum(g, i, 0, NULL, false), BRAID_I32, 0, 0);
    braid_tensor s = braid_input(g, "s", BRAID_F64, 0, NULL);
    EXPECT(g, braid_sum(g, s, 0, NULL, false), BRAID_F64, 0, 0);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
}

Test(builder, reshape) {
    braid_tensor x = braid_input(g, "x", BRAID_BF16, 3, DIMS(2, 3, 4));
    EXPECT(g, braid_reshape(g, x, 2, DIMS(6, 4)), BRAID_BF16, 2, 6, 4);
    EXPECT(g, braid_reshape(g, x, 2, DIMS(-1, 8)), BRAID_BF16, 2, 3, 8);
    EXPECT(g, braid_reshape(g, x, 1, DIMS(-1)), BRAID_BF16, 1, 24);
    EXPECT(g, braid_reshape(g, x, 4, DIMS(1, 24, 1, 1)), BRAID_BF16, 4, 1, 24,
           1, 1);
    braid_tensor s = braid_input(g, "s", BRAID_F32, 0, NULL);
    EXPECT(g, braid_reshape(g, s, 2, DIMS(1, -1)), BRAID_F32, 2, 1, 1);
    braid_tensor one = braid_reshape(g, s, 1, DIMS(1));
    EXPECT(g, braid_reshape(g, one, 0, NULL), BRAID_F32, 0, 0);
    braid_tensor z = braid_input(g, "z", BRAID_F32, 2, DIMS(0, 5));
    EXPECT(g, braid_reshape(g, z, 3, DIMS(5, 0, 7)), BRAID_F32, 3, 5, 0, 7);
}

Test(builder, permute_and_transpose) {
    braid_tensor x = braid_input(g, "x", BRAID_I32, 3, DIMS(2, 3, 4));
    braid_tensor p = braid_permute(g, x, (const int[]){2, 0, 1});
    EXPECT(g, p, BRAID_I32, 3, 4, 2, 3);
    const bg_node *n = bg_node_at(g, p.id);
    cr_assert(n->attr.perm[0] == 2 && n->attr.perm[1] == 0 &&
              n->attr.perm[2] == 1);
    for (int i = 3; i < BRAID_MAX_RANK; i++)
        cr_assert_eq(n->attr.perm[i], 0);
    EXPECT(g, braid_transpose(g, x), BRAID_I32, 3, 2, 4, 3);
    braid_tensor s = braid_input(g, "s", BRAID_I32, 0, NULL);
    EXPECT(g, braid_permute(g, s, NULL), BRAID_I32, 0, 0);
}

Test(builder, slice_python_rules) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(10, 7));
    braid_tensor a = braid_slice(g, x, DIMS(0, 1), DIMS(10, 7), DIMS(1, 2));
    EXPECT(g, a, BRAID_F32, 2, 10, 3);
    const bg_node *n = bg_node_at(g, a.id);
    cr_assert(n->attr.start[1] == 1 && n->attr.step[1] == 2);
    /* negative bounds count from the end; out-of-range ones clamp */
    braid_tensor b = braid_slice(g, x, DIMS(-3, -100), DIMS(100, -1), NULL);
    EXPECT(g, b, BRAID_F32, 2, 3, 6);
    cr_assert_eq(bg_node_at(g, b.id)->attr.start[0], 7);
    cr_assert_eq(bg_node_at(g, b.id)->attr.start[1], 0);
    /* empty slices */
    braid_tensor c = braid_slice(g, x, DIMS(5, 3), DIMS(2, 3), NULL);
    EXPECT(g, c, BRAID_F32, 2, 0, 0);
    braid_tensor d = braid_slice(g, x, DIMS(0, 0), DIMS(10, 7), DIMS(3, 7));
    EXPECT(g, d, BRAID_F32, 2, 4, 1);
    braid_tensor e = braid_slice(g, x, DIMS(9, 6), DIMS(10, 7), DIMS(100, 100));
    EXPECT(g, e, BRAID_F32, 2, 1, 1);
    /* negative steps: x[::-1, 5:1:-2]; a stop below -dim means through 0 */
    braid_tensor f = braid_slice(g, x, DIMS(-1, 5), DIMS(-11, 1), DIMS(-1, -2));
    EXPECT(g, f, BRAID_F32, 2, 10, 2);
    n = bg_node_at(g, f.id);
    cr_assert(n->attr.start[0] == 9 && n->attr.step[0] == -1);
    cr_assert(n->attr.start[1] == 5 && n->attr.step[1] == -2);
    /* start past the end clamps to dim - 1; stop -1 means dim - 1: empty */
    braid_tensor h = braid_slice(g, x, DIMS(100, 3), DIMS(-100, -1),
                                 DIMS(-3, -1));
    EXPECT(g, h, BRAID_F32, 2, 4, 0);
    cr_assert_eq(bg_node_at(g, h.id)->attr.start[0], 9);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
}

Test(builder, concat) {
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, DIMS(2, 5));
    braid_tensor z = braid_input(g, "z", BRAID_F32, 2, DIMS(2, 0));
    braid_tensor xs[] = {a, b, z, a};
    braid_tensor c = braid_concat(g, 4, xs, 1);
    EXPECT(g, c, BRAID_F32, 2, 2, 11);
    cr_assert_eq(bg_node_at(g, c.id)->ninputs, 4);
    EXPECT(g, braid_concat(g, 2, xs, -1), BRAID_F32, 2, 2, 8);
    EXPECT(g, braid_concat(g, 1, xs, 0), BRAID_F32, 2, 2, 3);
    braid_tensor many[40];
    for (int i = 0; i < 40; i++)
        many[i] = a;
    EXPECT(g, braid_concat(g, 40, many, 0), BRAID_F32, 2, 80, 3);
}

Test(builder, broadcast_to) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 1));
    EXPECT(g, braid_broadcast_to(g, x, 3, DIMS(2, 3, 4)), BRAID_F32, 3, 2, 3,
           4);
    EXPECT(g, braid_broadcast_to(g, x, 2, DIMS(3, 0)), BRAID_F32, 2, 3, 0);
    braid_tensor s = braid_input(g, "s", BRAID_F32, 0, NULL);
    EXPECT(g, braid_broadcast_to(g, s, 1, DIMS(9)), BRAID_F32, 1, 9);
    EXPECT(g, braid_broadcast_to(g, x, 2, DIMS(3, 1)), BRAID_F32, 2, 3, 1);
}

/* One softmax node over the last axis; another axis is swapped last by a
 * permute and back. */
Test(builder, softmax_op) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(4, 6));
    uint32_t before = braid_graph_node_count(g);
    braid_tensor y = braid_softmax(g, x, -1);
    EXPECT(g, y, BRAID_F32, 2, 4, 6);
    cr_assert_eq(bg_node_at(g, y.id)->op, BRAID_OP_SOFTMAX);
    cr_assert_eq(bg_node_at(g, y.id)->inputs[0], x.id);
    cr_assert_eq(braid_graph_node_count(g) - before, 1);
    braid_tensor h = braid_input(g, "h", BRAID_F16, 3, DIMS(2, 3, 4));
    before = braid_graph_node_count(g);
    braid_tensor z = braid_softmax(g, h, 0);
    EXPECT(g, z, BRAID_F16, 3, 2, 3, 4);
    cr_assert_eq(braid_graph_node_count(g) - before, 3);
    const bg_node *p = bg_node_at(g, z.id);
    cr_assert_eq(p->op, BRAID_OP_PERMUTE);
    const bg_node *s = bg_node_at(g, p->inputs[0]);
    cr_assert_eq(s->op, BRAID_OP_SOFTMAX);
    cr_assert_eq(s->dims[0], 4, "axis 0 (of 2) swapped last");
    cr_assert_eq(s->dims[2], 2);
}

/* One layer_norm node over the last axis (issue 14): gamma and beta as its
 * operands, fills of 1 and 0 for absent ones, eps its attribute; a scalar
 * gamma broadcasts after the node. */
Test(builder, layer_norm_op) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(2, 3, 8));
    braid_tensor gamma = braid_input(g, "gamma", BRAID_F32, 1, DIMS(8));
    braid_tensor beta = braid_input(g, "beta", BRAID_F32, 1, DIMS(8));
    braid_tensor y = braid_layer_norm(g, x, gamma, beta, 1e-5);
    EXPECT(g, y, BRAID_F32, 3, 2, 3, 8);
    const bg_node *n = bg_node_at(g, y.id);
    cr_assert_eq(n->op, BRAID_OP_LAYER_NORM);
    cr_assert_eq(n->attr.value[0], 1e-5);
    cr_assert_eq(n->inputs[0], x.id);
    cr_assert_eq(n->inputs[1], gamma.id);
    cr_assert_eq(n->inputs[2], beta.id);
    braid_tensor y2 = braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, 0);
    EXPECT(g, y2, BRAID_F32, 3, 2, 3, 8);
    const bg_node *n2 = bg_node_at(g, y2.id);
    cr_assert_eq(n2->op, BRAID_OP_LAYER_NORM);
    cr_assert_eq(bg_node_at(g, n2->inputs[1])->op, BRAID_OP_FILL);
    cr_assert_eq(bg_node_at(g, n2->inputs[1])->attr.value[0], 1.0);
    cr_assert_eq(bg_node_at(g, n2->inputs[2])->attr.value[0], 0.0);
    braid_tensor s = braid_input(g, "s", BRAID_F32, 0, NULL);
    braid_tensor y3 = braid_layer_norm(g, x, s, BRAID_NONE, 0.1);
    cr_assert_eq(bg_node_at(g, y3.id)->op, BRAID_OP_MUL);
    cr_assert_eq(bg_node_at(g, y3.id)->inputs[1], s.id);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
}

Test(builder, names_and_devices) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    braid_tensor y = braid_exp(g, x);
    cr_assert_eq(braid_set_name(g, y, "h1 (first layer)"), BRAID_OK);
    cr_assert_str_eq(bg_node_at(g, y.id)->name, "h1 (first layer)");
    cr_assert_eq(braid_set_name(g, y, "again"), BRAID_OK);
    cr_assert_str_eq(bg_node_at(g, y.id)->name, "again");
    cr_assert_eq(braid_set_name(g, y, NULL), BRAID_OK);
    cr_assert_null(bg_node_at(g, y.id)->name);
    cr_assert_eq(braid_set_name(g, x, "renamed_x.0"), BRAID_OK);
    cr_assert_eq(braid_set_name(g, x, "renamed_x.0"), BRAID_OK);
    const char *dev[] = {"cpu", "cuda:0", "cuda:7", "cuda:10", "cuda:63"};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) {
        cr_assert_eq(braid_set_device(g, y, dev[i]), BRAID_OK, "%s", dev[i]);
        cr_assert_str_eq(bg_node_at(g, y.id)->device, dev[i]);
    }
    cr_assert_eq(braid_set_device(g, y, NULL), BRAID_OK);
    cr_assert_null(bg_node_at(g, y.id)->device);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
}

Test(builder, inputs_and_outputs_listing) {
    braid_tensor a = braid_input(g, "a", BRAID_F32, 1, DIMS(2));
    braid_tensor c = braid_fill(g, BRAID_F32, 1, DIMS(2), 1);
    braid_tensor b = braid_input(g, "b_2.x", BRAID_F32, 1, DIMS(2));
    braid_tensor s = braid_add(g, a, b);
    cr_assert_eq(braid_graph_input_count(g), 2);
    const char *name;
    braid_tensor t;
    cr_assert_eq(braid_graph_input(g, 0, &name, &t), BRAID_OK);
    cr_assert_str_eq(name, "a");
    cr_assert_eq(t.id, a.id);
    cr_assert_eq(braid_graph_input(g, 1, &name, &t), BRAID_OK);
    cr_assert_str_eq(name, "b_2.x");
    cr_assert_eq(t.id, b.id);
    cr_assert_eq(braid_graph_input(g, 2, &name, &t),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_graph_output_count(g), 0);
    cr_assert_eq(braid_output(g, "sum", s), BRAID_OK);
    cr_assert_eq(braid_output(g, "c", c), BRAID_OK);
    cr_assert_eq(braid_output(g, "sum again", s), BRAID_OK);
    for (int i = 0; i < 10; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "o%d", i);
        cr_assert_eq(braid_output(g, nm, a), BRAID_OK);
    }
    cr_assert_eq(braid_graph_output_count(g), 13);
    cr_assert_eq(braid_graph_output(g, 1, &name, &t), BRAID_OK);
    cr_assert_str_eq(name, "c");
    cr_assert_eq(t.id, c.id);
    cr_assert_eq(braid_graph_output(g, 12, &name, &t), BRAID_OK);
    cr_assert_str_eq(name, "o9");
    cr_assert_eq(braid_graph_output(g, 13, NULL, NULL),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
}

Test(builder, tensor_info_partial_and_numel) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(2, 3, 4));
    int rank;
    cr_assert_eq(braid_tensor_info(g, x, NULL, &rank, NULL), BRAID_OK);
    cr_assert_eq(rank, 3);
    cr_assert_eq(braid_tensor_numel(g, x), 24);
    cr_assert_eq(braid_tensor_numel(g, BRAID_NONE), -1);
    cr_assert_eq(braid_tensor_numel(NULL, x), -1);
    cr_assert_eq(braid_tensor_info(g, BRAID_NONE, NULL, NULL, NULL),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(bg_nbytes(bg_node_at(g, x.id)), 96);
    char buf[64];
    cr_assert_str_eq(bg_type_str(bg_node_at(g, x.id), buf, sizeof buf),
                     "f32[2,3,4]");
    cr_assert_str_eq(bg_shape_str(0, NULL, buf, sizeof buf), "[]");
    cr_assert_str_eq(bg_type_str(bg_node_at(g, x.id), buf, 6), "f32[2");
}

Test(builder, max_rank_and_large_shapes) {
    int64_t d8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 8, d8);
    expect_type(g, x, BRAID_F32, 8, d8);
    braid_tensor s = braid_sum(g, x, 0, NULL, true);
    EXPECT(g, s, BRAID_F32, 8, 1, 1, 1, 1, 1, 1, 1, 1);
    cr_assert_eq(bg_node_at(g, s.id)->attr.axes, 0xff);
    /* 2^48 f32 elements = 2^50 bytes: the largest allowed */
    braid_tensor big = braid_input(g, "big", BRAID_F32, 2,
                                   DIMS((int64_t)1 << 24, (int64_t)1 << 24));
    cr_assert(braid_tensor_valid(big), "%s", braid_graph_error(g));
}

Test(builder, op_table) {
    cr_assert_str_eq(bg_op(BRAID_OP_ADD)->name, "add");
    cr_assert_eq(bg_op(BRAID_OP_ADD)->arity, 2);
    cr_assert_eq(bg_op(BRAID_OP_CONCAT)->arity, -1);
    cr_assert_eq(bg_op(BRAID_OP_SUM)->kind, BRAID_KIND_REDUCE);
    cr_assert_null(bg_op(BRAID_OP_COUNT_));
    for (int i = 0; i < BRAID_OP_COUNT_; i++) {
        const char *n = bg_op((braid_op)i)->name;
        cr_assert_eq(bg_op_lookup(n, strlen(n)), (braid_op)i);
    }
    cr_assert_eq(bg_op_lookup("addx", 3), BRAID_OP_ADD);
    cr_assert_eq(bg_op_lookup("ad", 2), BRAID_OP_COUNT_);
    cr_assert_eq(bg_op_lookup(NULL, 0), BRAID_OP_COUNT_);
    for (int i = 0; i < BRAID_DTYPE_COUNT_; i++) {
        const char *n = braid_dtype_name((braid_dtype)i);
        cr_assert_eq(bg_dtype_lookup(n, strlen(n)), (braid_dtype)i);
    }
    cr_assert_eq(bg_dtype_lookup("f8", 2), BRAID_DTYPE_COUNT_);
    cr_assert_eq(braid_dtype_size(BRAID_BF16), 2);
    cr_assert_eq(braid_dtype_size(BRAID_BOOL), 1);
    cr_assert_eq(braid_dtype_size(BRAID_F64), 8);
    cr_assert_eq(braid_dtype_size(BRAID_DTYPE_COUNT_), 0);
    cr_assert_str_eq(braid_dtype_name((braid_dtype)99), "?");
    cr_assert(braid_dtype_is_float(BRAID_BF16));
    cr_assert(!braid_dtype_is_float(BRAID_I32));
    cr_assert_str_eq(braid_status_name(BRAID_OK), "ok");
    cr_assert_str_eq(braid_status_name(BRAID_ERR_INVALID_ARGUMENT),
                     "invalid argument");
    cr_assert_str_eq(braid_status_name((braid_status)1000), "unknown status");
}

Test(builder, version_string) {
    const char *v = braid_version();
    cr_assert(strncmp(v, "0.1.0 (", 7) == 0, "%s", v);
    cr_assert(strstr(v, "cpu only") || strstr(v, "cuda "), "%s", v);
}

/* A graph exercising every attribute kind. */
static void build_rich(braid_graph *h) {
    braid_tensor x = braid_input(h, "x", BRAID_F32, 2, DIMS(4, 6));
    float cd[6] = {1, -2, 3, -4, 5, -6};
    braid_tensor c = braid_constant(h, BRAID_F32, 1, DIMS(6), cd);
    braid_tensor y = braid_softmax(h, braid_add(h, x, c), 1);
    braid_tensor w = braid_random_normal(h, BRAID_F32, 2, DIMS(6, 3), 9, 0, 1);
    braid_tensor m = braid_matmul(h, y, w, 0);
    braid_tensor s = braid_slice(h, m, DIMS(1, 0), DIMS(4, 3), DIMS(2, 1));
    braid_tensor p = braid_transpose(h, s);
    braid_tensor i = braid_iota(h, BRAID_I32, 2, DIMS(3, 2), 0);
    braid_tensor cc = braid_concat(h, 2, (braid_tensor[]){p, p}, -1);
    braid_set_name(h, cc, "joined");
    braid_set_device(h, cc, "cuda:1");
    braid_output(h, "out", cc);
    braid_output(h, "iota", i);
}

Test(builder, clone_and_equal) {
    build_rich(g);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_graph *c = bg_graph_clone(g);
    cr_assert_not_null(c);
    cr_assert(bg_graph_equal(g, c));
    cr_assert(bg_graph_equal(c, g));
    cr_assert_eq(braid_graph_node_count(c), braid_graph_node_count(g));
    /* the clone owns its own copies */
    cr_assert_neq(bg_node_at(c, 1)->attr.data, bg_node_at(g, 1)->attr.data);
    braid_graph *h = braid_graph_new(NULL);
    build_rich(h);
    cr_assert(bg_graph_equal(g, h));
    /* each kind of difference is seen */
    braid_set_device(h, BRAID_NONE, "cpu"); /* poisons h: status differs */
    cr_assert(!bg_graph_equal(g, h));
    braid_set_name(c, (braid_tensor){0}, "y");
    cr_assert(!bg_graph_equal(g, c));
    braid_graph_free(c);
    c = bg_graph_clone(g);
    ((float *)c->nodes[1].attr.data)[5] = 0;
    cr_assert(!bg_graph_equal(g, c));
    braid_graph_free(c);
    c = bg_graph_clone(g);
    braid_output(c, "extra", (braid_tensor){0});
    cr_assert(!bg_graph_equal(g, c));
    cr_assert(bg_graph_equal(NULL, NULL));
    cr_assert(!bg_graph_equal(g, NULL));
    braid_graph_free(c);
    braid_graph_free(h);
}

/* Whether p lies inside c's bulk block. */
static bool in_block(const braid_graph *c, const void *p) {
    const char *b = c->bulk, *q = p;
    return b && q >= b && q < b + c->bulk_size;
}

/* A clone takes its input lists and names from one block (graph/graph.c);
 * replacing, growing and freeing those pieces keeps working, and the block
 * goes with the graph (the sanitizer build sees a bad free or a leak). */
Test(builder, clone_takes_lists_and_names_from_one_block) {
    build_rich(g);
    braid_graph *c = bg_graph_clone(g);
    cr_assert_not_null(c);
    cr_assert_not_null(c->bulk);
    cr_assert_eq(c->bulk_used, c->bulk_size, "closed after the clone");
    uint32_t lists = 0, names = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const bg_node *n = &c->nodes[i];
        if (n->ninputs) {
            cr_assert(in_block(c, n->inputs), "node %u's inputs", i);
            cr_assert_eq((uintptr_t)n->inputs % sizeof *n->inputs, 0);
            lists++;
        }
        if (n->name) {
            cr_assert(in_block(c, n->name));
            names++;
        }
        if (n->device) cr_assert(in_block(c, n->device));
    }
    for (uint32_t i = 0; i < c->noutputs; i++) {
        cr_assert(in_block(c, c->outputs[i].name));
        names++;
    }
    cr_assert(lists >= 6 && names >= 4, "%u lists, %u names", lists, names);
    cr_assert(bg_graph_equal(g, c));
    /* a new name replaces a piece; a grown input list moves out */
    uint32_t j = braid_graph_node_count(c) - 1; /* the concat: 2 inputs */
    cr_assert_eq(braid_set_name(c, (braid_tensor){j}, "renamed"), BRAID_OK);
    cr_assert(!in_block(c, c->nodes[j].name));
    cr_assert_str_eq(c->nodes[j].name, "renamed");
    bg_node *n = &c->nodes[j];
    uint32_t a = n->inputs[0], b = n->inputs[1];
    uint32_t *in = bg_realloc(c, n->inputs, 2 * sizeof *in, 3 * sizeof *in);
    cr_assert_not_null(in);
    cr_assert(!in_block(c, in));
    cr_assert(in[0] == a && in[1] == b, "moved with its ids");
    in[2] = a;
    n->inputs = in;
    n->ninputs = 3;
    /* pieces are never freed alone; new ones come from the heap */
    char *s = bg_strdup(c, "after");
    cr_assert(!in_block(c, s));
    bg_free_str(c, s);
    braid_graph_free(c);
}

/* A clone with room takes nodes without moving its node array. */
Test(builder, clone_room_takes_nodes_in_place) {
    build_rich(g);
    uint32_t n = braid_graph_node_count(g);
    braid_graph *c = bg_graph_clone_room(g, 5);
    cr_assert_not_null(c);
    cr_assert_eq(c->cap, n + 5);
    cr_assert(bg_graph_equal(g, c));
    const bg_node *before = c->nodes;
    braid_tensor x = {0};
    for (int i = 0; i < 5; i++)
        x = braid_neg(c, x);
    cr_assert_eq(braid_graph_status(c), BRAID_OK, "%s", braid_graph_error(c));
    cr_assert_eq(c->nodes, before, "the node array did not move");
    cr_assert_eq(braid_graph_node_count(c), n + 5);
    braid_graph_free(c);
    braid_graph *e = braid_graph_new(NULL);
    c = bg_graph_clone_room(e, 7); /* nothing to copy: no array yet */
    cr_assert_not_null(c);
    cr_assert(bg_graph_equal(e, c));
    braid_graph_free(e);
    braid_graph_free(c);
}

Test(builder, clone_keeps_error_state) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(2));
    braid_tensor y = braid_input(g, "y", BRAID_F32, 1, DIMS(3));
    braid_add(g, x, y);
    braid_graph *c = bg_graph_clone(g);
    cr_assert_eq(braid_graph_status(c), BRAID_ERR_SHAPE);
    cr_assert_str_eq(braid_graph_error(c), braid_graph_error(g));
    cr_assert(bg_graph_equal(g, c));
    braid_graph_free(c);
    braid_graph *e = braid_graph_new(NULL);
    braid_graph *ec = bg_graph_clone(e);
    cr_assert(bg_graph_equal(e, ec));
    braid_graph_free(e);
    braid_graph_free(ec);
    cr_assert_null(bg_graph_clone(NULL));
}

Test(builder, broadcast_shapes_helper) {
    int r;
    int64_t out[BRAID_MAX_RANK];
    cr_assert(bg_broadcast_shapes(0, NULL, 0, NULL, &r, out));
    cr_assert_eq(r, 0);
    cr_assert(bg_broadcast_shapes(2, DIMS(1, 5), 3, DIMS(7, 1, 1), &r, out));
    cr_assert(r == 3 && out[0] == 7 && out[1] == 1 && out[2] == 5);
    cr_assert(bg_broadcast_shapes(1, DIMS(1), 1, DIMS(0), &r, out));
    cr_assert(r == 1 && out[0] == 0);
    cr_assert(!bg_broadcast_shapes(1, DIMS(2), 1, DIMS(0), &r, out));
    cr_assert(!bg_broadcast_shapes(2, DIMS(2, 3), 1, DIMS(2), &r, out));
    int64_t a[2] = {4, 1};
    cr_assert(bg_broadcast_shapes(2, a, 1, DIMS(3), &r, a)); /* out aliases a */
    cr_assert(a[0] == 4 && a[1] == 3);
}
