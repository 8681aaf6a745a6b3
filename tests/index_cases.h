/* tests/index_cases.h — random gather / scatter graphs for the differential
 * tests (tests/test_op_gather.c on the CPU, tests/test_cuda_gather.c on a
 * GPU): every form (gather along an axis, elements, nd with batch_dims;
 * scatter elements and nd with each reduction), random dtypes, shapes,
 * axes (negative included) and indices over the whole valid range
 * -dim .. dim-1 (duplicates included), optionally followed by elementwise
 * work (what GPU fusion may absorb). Inputs: "x" (data), "i" (indices),
 * "u" (updates); output "y". */
#ifndef BRAID_TESTS_INDEX_CASES_H
#define BRAID_TESTS_INDEX_CASES_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "graph/index.h"
#include "tests/support/op_cases.h"

/* One random case. */
typedef struct ix_case {
    braid_graph *g; /* owned by the caller */
    braid_tensor y; /* the output (marked "y" by the checker) */
    uint32_t node;  /* the gather / scatter node */
    char what[200]; /* description for messages */
} ix_case;

static inline ts_shape ix_shape(uint64_t *st, int rank, int maxd) {
    ts_shape s = {rank, {0}};
    for (int i = 0; i < rank; i++)
        s.dims[i] = ts_rand_int(st, 1, maxd);
    return s;
}

/* The data's dtype: any for gather and scatter none, a number otherwise. */
static inline braid_dtype ix_dtype(uint64_t *st, bool number) {
    static const braid_dtype all[] = {BRAID_F32, BRAID_F32,  BRAID_F64,
                                      BRAID_F16, BRAID_BF16, BRAID_I32,
                                      BRAID_BOOL};
    int n = number ? 6 : 7;
    return all[ts_rand_int(st, 0, n - 1)];
}

/* A random gather or scatter graph (seed decides everything); `consumer`
 * adds y = op · 2 + 1 after it (numbers only). */
static inline ix_case ix_random(uint64_t seed, bool consumer) {
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    ix_case c = {0};
    c.g = braid_graph_new(NULL);
    int form = ts_rand_int(&st, 0, 4); /* gather axis/elements/nd, scatter
                                          elements/nd */
    bool scatter = form >= 3;
    int red = scatter ? ts_rand_int(&st, 0, 4) : 0;
    braid_dtype dt = ix_dtype(&st, red != 0 || consumer);
    int r = ts_rand_int(&st, 1, 4);
    ts_shape xs = ix_shape(&st, r, ts_rand_int(&st, 0, 3) == 0 ? 40 : 6);
    ts_shape is = {0, {0}}, us = {0, {0}};
    int axis = ts_rand_int(&st, -r, r - 1), ax = axis < 0 ? axis + r : axis;
    int b = 0;
    if (form == 0) { /* indices of rank 0..2 */
        is = ix_shape(&st, ts_rand_int(&st, 0, r < 4 ? 2 : 1), 5);
    } else if (form == 1 || form == 3) {
        is = xs;
        for (int i = 0; i < r; i++)
            is.dims[i] = i == ax ? ts_rand_int(&st, 1, 6)
                                 : ts_rand_int(&st, 1, (int)xs.dims[i]);
        us = is;
    } else { /* nd */
        b = form == 2 ? ts_rand_int(&st, 0, r - 1) : 0;
        int m = ts_rand_int(&st, 1, r - b), q = ts_rand_int(&st, 0, 2);
        is.rank = b + q + 1;
        for (int i = 0; i < b; i++)
            is.dims[i] = xs.dims[i];
        for (int i = b; i < b + q; i++)
            is.dims[i] = ts_rand_int(&st, 1, 5);
        is.dims[b + q] = m;
        us.rank = q + r - m; /* scatter: b = 0 */
        for (int i = 0; i < q; i++)
            us.dims[i] = is.dims[i];
        for (int i = m; i < r; i++)
            us.dims[q + i - m] = xs.dims[i];
    }
    braid_tensor x = ts_shape_input(c.g, "x", dt, &xs);
    braid_dtype idt = ts_rand_int(&st, 0, 3) == 0 ? BRAID_I64 : BRAID_I32;
    braid_tensor i = ts_shape_input(c.g, "i", idt, &is);
    braid_tensor u = scatter ? ts_shape_input(c.g, "u", dt, &us) : BRAID_NONE;
    braid_scatter_reduction sr = (braid_scatter_reduction)red;
    static const char *const forms[] = {"gather axis", "gather elements",
                                        "gather nd", "scatter elements",
                                        "scatter nd"};
    char xt[64], it[64];
    snprintf(c.what, sizeof c.what,
             "seed %llu: %s %s x%s i%s %s axis %d b %d %s",
             (unsigned long long)seed, forms[form], braid_dtype_name(dt),
             ts_shape_str(&xs, xt, sizeof xt), ts_shape_str(&is, it, sizeof it),
             braid_dtype_name(idt), axis, b,
             scatter ? bg_scatter_red_name((bg_scatter_red)red) : "");
    switch (form) {
    case 0:
        c.y = braid_gather(c.g, x, i, axis);
        break;
    case 1:
        c.y = braid_gather_elements(c.g, x, i, axis);
        break;
    case 2:
        c.y = braid_gather_nd(c.g, x, i, b);
        break;
    case 3:
        c.y = braid_scatter_elements(c.g, x, i, u, axis, sr);
        break;
    default:
        c.y = braid_scatter_nd(c.g, x, i, u, sr);
        break;
    }
    c.node = c.y.id;
    if (consumer && braid_tensor_valid(c.y))
        c.y =
            braid_add(c.g, braid_mul(c.g, c.y, braid_fill(c.g, dt, 0, NULL, 2)),
                      braid_fill(c.g, dt, 0, NULL, 1));
    return c;
}

/* Fills the indices input (binding in) of case c with values in
 * -bound .. bound-1 of the axis each indexes; `bad` >= 0 makes element
 * bad (mod the count) out of range instead (bound, or -bound-1 for odd
 * seeds). Returns the bad value written (0 when none). */
static inline int32_t ix_fill_indices(const ix_case *c, braid_input_binding *in,
                                      uint64_t seed, int64_t bad) {
    const bg_node *n = &c->g->nodes[c->node];
    bg_index_geom geo;
    bg_index_geom_of(c->g, n, &geo);
    int64_t count = bg_numel(&c->g->nodes[n->inputs[1]]);
    bool wide = c->g->nodes[n->inputs[1]].dtype == BRAID_I64;
    uint64_t st = seed ^ 0xA5A5A5A5ull;
    int32_t badv = 0;
    for (int64_t p = 0; p < count; p++) {
        int64_t bound =
            geo.mode == BG_INDEX_ND ? geo.bound[p % geo.m] : geo.bound[0];
        int32_t v = (int32_t)ts_rand_int(&st, (int)-bound, (int)bound - 1);
        if (bad >= 0 && p == bad % count)
            v = badv = (int32_t)(seed % 2 ? -bound - 1 : bound);
        if (wide)
            ((int64_t *)in->data)[p] = v;
        else
            ((int32_t *)in->data)[p] = v;
    }
    return badv;
}

/* The binding of input name in io. */
static inline braid_input_binding *ix_binding(ts_io *io, const char *name) {
    for (uint32_t k = 0; k < io->ninputs; k++)
        if (strcmp(io->in[k].name, name) == 0) return &io->in[k];
    return NULL;
}

/* y = gather(x f32[4, 3], i i32[2], axis 0): the recovery tests' graph. */
static inline braid_graph *ix_small_gather(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, (int64_t[]){4, 3});
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, (int64_t[]){2});
    cr_assert_eq(braid_output(g, "y", braid_gather(g, x, i, 0)), BRAID_OK);
    return g;
}

/* Runs plan p of ix_small_gather with indices bad (the error must name
 * `want`), then twice with good ones on the same executor: the failure's
 * record must be cleared and the rows right. */
static inline void ix_check_recovery(const braid_plan *p, const int32_t *bad,
                                     const char *want) {
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    float xv[12], out[6];
    const int32_t good[2] = {3, -4};
    const float rows[6] = {9, 10, 11, 0, 1, 2};
    for (int k = 0; k < 12; k++)
        xv[k] = (float)k;
    braid_input_binding in[2] = {{"x", xv, sizeof xv}, {"i", bad, 8}};
    braid_output_binding ob = {"y", out, sizeof out};
    cr_assert_eq(braid_run(e, in, 2, &ob, 1), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), want), "%s (expected \"%s\")",
              braid_last_error(), want);
    in[1].data = good;
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(braid_run(e, in, 2, &ob, 1), BRAID_OK, "%s",
                     braid_last_error());
        for (int k = 0; k < 6; k++)
            cr_assert_eq(out[k], rows[k], "element %d", k);
    }
    braid_exec_free(e);
}

#endif /* BRAID_TESTS_INDEX_CASES_H */
