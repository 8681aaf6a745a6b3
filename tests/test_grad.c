/* tests/test_grad.c — braid_grad (graph/grad*.c): every differentiable op's
 * rule against central finite differences of the reference evaluator in
 * float64 on random shapes and inputs, random graphs likewise, and the
 * compiled gradient graphs on the CPU executor against the reference.
 *
 * Tolerances: finite differences, step 1e-6 in f64, |analytic - fd| ≤
 * 1e-6·(1 + |fd|) (the cast case, f32 inside: step 1e-3, 1e-3); random
 * graphs 1e-5, skipping elements within 1e-5 of a kink (differences at h
 * and 10h disagree), at most 5% of them. Compiled vs reference:
 * |x - r| ≤ tol·(1 + max|r|) per output, f64 1e-9, f32 2e-4. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "graph/grad.h"
#include "tests/support/grad_cases.h"
#include "tests/support/random_graph.h"

/* ---- the rule table ----------------------------------------------------- */

Test(grad, every_differentiable_op_has_a_rule_and_a_case) {
    for (int op = 0; op < BRAID_OP_COUNT_; op++) {
        bool diff = bg_op_has(op, BRAID_OPF_DIFFERENTIABLE);
        const char *name = bg_op(op)->name;
        cr_expect_eq(bg_grad_rule_of(op) != NULL, diff,
                     "op %s: differentiable %d but rule %s", name, diff,
                     bg_grad_rule_of(op) ? "present" : "missing");
        cr_expect(!(diff && bg_op_has(op, BRAID_OPF_ZERO_GRAD)),
                  "op %s: both a gradient and a zero gradient", name);
        if (!diff || op == BRAID_OP_COPY) continue; /* copy: compiler-made */
        bool cased = false;
        for (int k = 0; k < ts_grad_case_kinds(); k++)
            cased = cased || ts_grad_case_op(k) == (braid_op)op;
        cr_expect(cased, "op %s has no gradient case", name);
    }
}

/* ---- finite differences per op ------------------------------------------ */

static int fd_checked; /* elements compared by fd_case so far */

static void fd_case(int kind, uint64_t seed) {
    ts_grad_case c;
    bool built = ts_grad_case_build(kind, BRAID_F64, seed, &c);
    cr_assert(built, "%s", c.what);
    ts_io *io = ts_grad_io(&c, seed);
    cr_assert_not_null(io);
    char msg[600];
    bool ok = ts_grad_check_fd(c.g, io, c.fd_step, c.fd_tol, false, &fd_checked,
                               NULL, msg, sizeof msg);
    if (!ok) ts_log_graph(c.g);
    cr_expect(ok, "%s: %s", c.what, msg);
    ts_io_free(io);
    ts_grad_case_free(&c);
}

Test(grad, finite_differences_every_op, .timeout = 600) {
    for (int k = 0; k < ts_grad_case_kinds(); k++)
        for (uint64_t seed = 1; seed <= 25; seed++)
            fd_case(k, seed);
    cr_log_info("%d gradient elements checked", fd_checked);
    cr_expect_gt(fd_checked, 50 * ts_grad_case_kinds());
}

/* ---- compiled on the CPU against the reference -------------------------- */

static void cpu_case(int kind, braid_dtype dt, uint64_t seed) {
    ts_grad_case c;
    bool built = ts_grad_case_build(kind, dt, seed, &c);
    cr_assert(built, "%s", c.what);
    ts_io *io = ts_grad_io(&c, seed);
    cr_assert_not_null(io);
    braid_status s = ts_run_both(c.g, io);
    cr_assert_eq(s, BRAID_OK, "%s: %s", c.what, braid_last_error());
    char msg[600];
    bool ok =
        ts_grad_compare(io, dt == BRAID_F64 ? 1e-9 : 2e-4, msg, sizeof msg);
    if (!ok) ts_log_graph(c.g);
    cr_expect(ok, "%s: %s", c.what, msg);
    ts_io_free(io);
    ts_grad_case_free(&c);
}

Test(grad, cpu_executor_matches_reference, .timeout = 600) {
    for (int k = 0; k < ts_grad_case_kinds(); k++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            cpu_case(k, BRAID_F64, seed);
            cpu_case(k, BRAID_F32, seed + 100);
        }
}

/* ---- random graphs ------------------------------------------------------ */

/* y: every float output of g flattened and joined, or BRAID_NONE. */
static braid_tensor joined_outputs(braid_graph *g) {
    braid_tensor parts[64];
    int n = 0;
    for (uint32_t o = 0; o < braid_graph_output_count(g) && n < 64; o++) {
        const char *name;
        braid_tensor t;
        braid_dtype dt;
        braid_graph_output(g, o, &name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        if (!braid_dtype_is_float(dt)) continue;
        parts[n++] = braid_reshape(g, t, 1, (const int64_t[]){-1});
    }
    return n == 0 ? BRAID_NONE : braid_concat(g, n, parts, 0);
}

/* The random graph of seed in f64 with its loss and gradients, or NULL when
 * it has no float output. */
static braid_graph *random_case(uint64_t seed, const ts_graph_options *o) {
    braid_graph *r = ts_random_graph(seed, o);
    braid_graph *g = ts_graph_to_f64(r);
    if (g != NULL && braid_graph_status(g) != BRAID_OK) ts_log_graph(r);
    braid_graph_free(r);
    cr_assert_not_null(g, "seed %llu: to f64", (unsigned long long)seed);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "seed %llu: to f64: %s",
                 (unsigned long long)seed, braid_graph_error(g));
    braid_tensor y = joined_outputs(g), loss;
    if (!braid_tensor_valid(y)) {
        braid_graph_free(g);
        return NULL;
    }
    braid_status s = ts_grad_attach(g, y, seed, &loss);
    if (s != BRAID_OK) ts_log_graph(g);
    cr_assert_eq(s, BRAID_OK, "seed %llu: %s", (unsigned long long)seed,
                 braid_graph_error(g));
    return g;
}

Test(grad, random_graphs_finite_differences, .timeout = 900) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.max_rank = 3;
    o.max_dim = 4;
    int checked = 0, skipped = 0, graphs = 0;
    for (uint64_t seed = 1; seed <= 500; seed++) {
        braid_graph *g = random_case(seed, &o);
        if (g == NULL) continue;
        ts_io *io = ts_io_new(g, seed);
        cr_assert_not_null(io);
        char msg[600];
        bool ok = ts_grad_check_fd(g, io, 1e-6, 1e-5, true, &checked, &skipped,
                                   msg, sizeof msg);
        double loss = NAN;
        for (uint32_t k = 0; k < io->noutputs; k++)
            if (strcmp(io->ref[k].name, "loss") == 0)
                loss = bg_load(io->out_dtype[k], io->ref[k].data, 0);
        if (!ok && isfinite(loss)) ts_log_graph(g);
        cr_expect(ok || !isfinite(loss), "seed %llu: %s",
                  (unsigned long long)seed, msg);
        graphs += isfinite(loss);
        ts_io_free(io);
        braid_graph_free(g);
    }
    cr_log_info("random graphs: %d with a finite loss, %d elements checked, "
                "%d skipped near a kink",
                graphs, checked, skipped);
    cr_expect_gt(graphs, 350);
    cr_expect_leq(skipped, checked / 20 + 5, "%d skipped of %d", skipped,
                  checked);
}

Test(grad, random_graphs_cpu_executor, .timeout = 900) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    for (uint64_t seed = 1000; seed < 1300; seed++) {
        braid_graph *g = random_case(seed, &o);
        if (g == NULL) continue;
        ts_io *io = ts_io_new(g, seed);
        cr_assert_not_null(io);
        braid_status s = ts_run_both(g, io);
        cr_assert_eq(s, BRAID_OK, "seed %llu: %s", (unsigned long long)seed,
                     braid_last_error());
        char msg[600];
        bool ok = ts_grad_compare(io, 1e-9, msg, sizeof msg);
        if (!ok) ts_log_graph(g);
        cr_expect(ok, "seed %llu: %s", (unsigned long long)seed, msg);
        ts_io_free(io);
        braid_graph_free(g);
    }
}
