/* tests/test_op_table.c — the op table (include/braid/ops.h) and the scalar
 * rules (graph/scalar.h) agree with each other and with every consumer:
 * each elementwise op the table lists has a rule for each dtype class its
 * dtypes column admits and none for the others; the CPU kernels compute
 * each rule exactly as the double evaluation does (so a row missing from a
 * backend fails here, not silently as "leave o untouched"); the builder's
 * dtype checks and result types follow the columns; reductions follow the
 * documented NaN and empty rules. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/scalar.h"
#include "runtime/cpu/cpu_ew.h"

static bool is_plain_elementwise(braid_op op) {
    return bg_op(op)->kind == BRAID_KIND_ELEMENTWISE && op != BRAID_OP_CAST &&
           op != BRAID_OP_WHERE;
}

static bool same_bits(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

Test(op_table, every_elementwise_op_has_its_rules) {
    /* two points, so that ops defined on part of the line (acosh on
     * [1, inf), asin on [-1, 1]) meet their domain at one of them */
    const double x[3] = {0.5, 0.25, 0.0}, x2[3] = {1.5, 0.25, 0.0};
    const double xi[3] = {7.0, -3.0, 0.0};
    for (int k = 0; k < BRAID_OP_COUNT_; k++) {
        braid_op op = (braid_op)k;
        if (!is_plain_elementwise(op)) continue;
        const char *name = bg_op(op)->name;
        bool floats = bg_op_accepts(op, BRAID_F64);
        bool frule = !isnan(bg_scalar_apply(op, BRAID_F64, x)) ||
                     !isnan(bg_scalar_apply(op, BRAID_F64, x2));
        cr_expect_eq(frule, floats, "%s: float rule %s the dtypes column",
                     name, floats ? "missing from" : "beyond");
        bool ints = bg_op_accepts(op, BRAID_I32);
        cr_expect_eq(!isnan(bg_scalar_apply(op, BRAID_I32, xi)), ints,
                     "%s: i32 rule %s the dtypes column", name,
                     ints ? "missing from" : "beyond");
        cr_expect_eq(bg_op_accepts(op, BRAID_I32),
                     bg_op(op)->dtypes != BRAID_DTYPES_FLOAT, "%s", name);
        cr_expect_eq(floats, bg_op(op)->dtypes != BRAID_DTYPES_INT, "%s",
                     name);
    }
}

/* The unfused CPU loops against the double evaluation, op by op: f64 bit
 * for bit (the same rule in the same type), f32 within 4 ulp. */
Test(op_table, cpu_kernels_follow_the_rules) {
    const double xs[] = {-1.1, -0.3, 0.0, 0.7, 1.3};
    for (int k = 0; k < BRAID_OP_COUNT_; k++) {
        braid_op op = (braid_op)k;
        if (!is_plain_elementwise(op) || !bg_op_accepts(op, BRAID_F64))
            continue;
        int arity = bg_op(op)->arity;
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
            double in[3] = {xs[i], 0.75, 0.0}, o = NAN;
            float inf[2] = {(float)in[0], (float)in[1]}, of = NAN;
            uint8_t ob = 2;
            double want = bg_scalar_apply(op, BRAID_F64, in);
            if (bg_op_is_compare(op)) {
                br_ew_compare_f64(op, 1, &ob, &in[0], 1, &in[1], 1);
                cr_expect_eq(ob, (uint8_t)want, "%s(%g)", bg_op(op)->name,
                             xs[i]);
                continue;
            }
            if (arity == 1) {
                br_ew_unary_f64(op, 1, &o, in);
                br_ew_unary_f32(op, 1, &of, inf);
            } else {
                br_ew_binary_f64(op, 1, &o, &in[0], 1, &in[1], 1);
                br_ew_binary_f32(op, 1, &of, &inf[0], 1, &inf[1], 1);
            }
            double wantf =
                bg_scalar_apply(op, BRAID_F64, (double[]){inf[0], inf[1], 0.0});
            cr_expect(same_bits(o, want), "%s(%g): f64 %.17g, rule %.17g",
                      bg_op(op)->name, xs[i], o, want);
            bool close =
                (double)of == wantf ||
                fabs(of - wantf) <= 4 * FLT_EPSILON * fmax(1, fabs(wantf));
            cr_expect(isnan(wantf) ? isnan(of) : close,
                      "%s(%g): f32 %.9g, rule %.9g", bg_op(op)->name, xs[i],
                      (double)of, wantf);
        }
    }
}

Test(op_table, i32_kernels_follow_the_rules) {
    const int32_t xs[] = {INT32_MIN, -7, 0, 5, INT32_MAX};
    const int32_t ys[] = {-1, 0, 3, 31, 32, -5}; /* shift counts too */
    for (int k = 0; k < BRAID_OP_COUNT_; k++) {
        braid_op op = (braid_op)k;
        if (!is_plain_elementwise(op) || bg_op_is_compare(op) ||
            !bg_op_accepts(op, BRAID_I32))
            continue;
        for (size_t i = 0; i < sizeof xs / sizeof xs[0] * 6; i++) {
            int32_t in[2] = {xs[i / 6], ys[i % 6]}, o = 12345;
            if (bg_op(op)->arity == 1)
                br_ew_unary_i32(op, 1, &o, in);
            else
                br_ew_binary_i32(op, 1, &o, &in[0], 1, &in[1], 1);
            double want =
                bg_scalar_apply(op, BRAID_I32, (double[]){in[0], in[1], 0});
            cr_expect_eq((double)o, want, "%s(%d, %d): %d, rule %.0f",
                         bg_op(op)->name, in[0], in[1], o, want);
        }
    }
}

/* The builder reads the same columns: result dtype of comparisons, operand
 * dtypes of everything. */
Test(op_table, builder_follows_the_columns) {
    for (int k = 0; k < BRAID_OP_COUNT_; k++) {
        braid_op op = (braid_op)k;
        if (!is_plain_elementwise(op)) continue;
        for (int t = 0; t < BRAID_DTYPE_COUNT_; t++) {
            braid_graph *g = braid_graph_new(NULL);
            braid_tensor x = braid_input(g, "x", (braid_dtype)t, 0, NULL);
            braid_tensor y = bg_op(op)->arity == 1 ? braid_unary(g, op, x)
                                                   : braid_binary(g, op, x, x);
            bool ok = braid_graph_status(g) == BRAID_OK;
            cr_expect_eq(ok, bg_op_accepts(op, (braid_dtype)t), "%s on %s",
                         bg_op(op)->name, braid_dtype_name((braid_dtype)t));
            if (ok)
                cr_expect_eq(bg_node_at(g, y.id)->dtype, bg_op_is_compare(op)
                                                             ? BRAID_BOOL
                                                             : (braid_dtype)t);
            braid_graph_free(g);
        }
    }
}

Test(op_table, tan_row) {
    const bg_op_info *i = bg_op(BRAID_OP_TAN);
    cr_assert_str_eq(i->name, "tan");
    cr_expect_eq(bg_op_lookup("tan", 3), BRAID_OP_TAN);
    cr_expect_eq(i->dtypes, BRAID_DTYPES_FLOAT);
    cr_expect(bg_op_has(BRAID_OP_TAN, BRAID_OPF_DIFFERENTIABLE));
    cr_expect(!bg_op_has(BRAID_OP_TAN, BRAID_OPF_EXACT));
    cr_expect_eq(
        bg_scalar_apply(BRAID_OP_TAN, BRAID_F64, (double[]){0.5, 0, 0}),
        tan(0.5));
}

Test(op_table, reduction_rules) {
    braid_op mx = BRAID_OP_REDUCE_MAX, mn = BRAID_OP_REDUCE_MIN;
    cr_expect(isnan(bg_reduce_combine(mx, BRAID_F32, 1.0, NAN)));
    cr_expect(isnan(bg_reduce_combine(mn, BRAID_F32, NAN, 1.0)));
    cr_expect_eq(bg_reduce_combine(mx, BRAID_F32, -INFINITY, 2.0), 2.0);
    cr_expect_eq(bg_reduce_combine(mn, BRAID_I32, 3.0, -4.0), -4.0);
    /* i32 sums wrap, also from a uint32 residue */
    cr_expect_eq(bg_reduce_combine(BRAID_OP_SUM, BRAID_I32, 2147483647.0, 1.0),
                 -2147483648.0);
    cr_expect_eq(bg_reduce_finish(BRAID_OP_SUM, BRAID_I32, 4294967295.0, 3),
                 -1.0);
    /* zero elements: docs/ops.md */
    cr_expect(isnan(bg_reduce_finish(BRAID_OP_MEAN, BRAID_F32, 0.0, 0)));
    cr_expect_eq(bg_reduce_finish(BRAID_OP_SUM, BRAID_F32, 0.0, 0), 0.0);
    cr_expect_eq(bg_reduce_finish(mx, BRAID_F32, 0.0, 0), -INFINITY);
    cr_expect_eq(bg_reduce_finish(mn, BRAID_I32, 0.0, 0), (double)INT32_MAX);
    cr_expect_eq(bg_reduce_finish(BRAID_OP_MEAN, BRAID_F64, 6.0, 4), 1.5);
}
