/* tests/test_train_gpt2.c — the GPT-2 block of the training-step benchmark
 * (bench/gpt2_block.h, timed by bench/gpu_train_gpt2.c) is correct, not
 * only fast:
 *   - its gradient: the block with its 12 parameters as f64 inputs (tiny
 *     shapes: batch 2, 4 tokens, width 8, 2 heads), loss mean(out²),
 *     braid_grad against central finite differences of the loss on the
 *     reference evaluator, every element of every parameter, 3 seeds
 *     (step 1e-6, |analytic - fd| ≤ 1e-6·(1 + |fd|), as tests/test_grad.c);
 *   - the benchmark's own step graph (gpt2_train_step: variables, the
 *     block, braid_grad, AdamW) at the bench's --small shapes (batch 2, 16
 *     tokens, width 64, 4 heads), compiled, two runs: the loss and the 12
 *     gradients (marked as extra outputs) of both runs, and every variable
 *     (parameters, moments, step) after them, against the reference
 *     evaluator with state; on a CPU plan, on a GPU plan run by the emulated
 *     executor (no GPU needed), and on a GPU (skipped without one).
 * Tolerances for the compiled step (f32 against the f64-computing
 * reference): |x - r| ≤ 2e-4·(1 + max|r|) per output (tests/test_grad.c's);
 * variables 2e-4·(1 + max|r|) + lr·5e-3 (the last term: AdamW's first
 * steps move a parameter by ≈ lr·g/(|g| + eps), which f32 rounding changes
 * by up to lr where a gradient is rounding noise, e.g. attn.c_attn.bias's
 * k part, whose exact gradient is 0; checked below at 5e-3 of lr). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gpt2_block.h"
#include "runtime/runtime.h"
#include "tests/support/grad_cases.h"
#include "tests/test_cuda_common.h"

/* ---- the gradient, by finite differences -------------------------------- */

/* The block on f64 inputs: parameters "p0".."p11" (inputs 0..11), x
 * (input 12); outputs "loss" and "g<i>", the gradient of parameter i. */
static braid_graph *fd_graph(const gpt2_dims *d) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert_not_null(g);
    braid_tensor p[GPT2_PARAMS], gr[GPT2_PARAMS];
    for (int i = 0; i < GPT2_PARAMS; i++) {
        char name[8];
        int64_t dims[2];
        int rank = gpt2_param_shape(d, i, dims);
        snprintf(name, sizeof name, "p%d", i);
        p[i] = braid_input(g, name, BRAID_F64, rank, dims);
    }
    braid_tensor x = braid_input(g, "x", BRAID_F64, 3,
                                 (const int64_t[]){d->batch, d->seq, d->width});
    braid_tensor loss = gpt2_loss(g, gpt2_block(g, d, x, p));
    braid_output(g, "loss", loss);
    braid_grad(g, loss, GPT2_PARAMS, p, gr);
    for (int i = 0; i < GPT2_PARAMS; i++) {
        char name[8];
        snprintf(name, sizeof name, "g%d", i);
        braid_output(g, name, gr[i]);
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

Test(train_gpt2, gradient_matches_finite_differences, .timeout = 600) {
    gpt2_dims d = {2, 4, 8, 2};
    braid_graph *g = fd_graph(&d);
    int checked = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        ts_io *io = ts_io_new(g, seed);
        cr_assert_not_null(io);
        /* parameters near GPT-2's scale (gamma around 1), x as the bench */
        for (uint32_t i = 0; i < io->ninputs; i++) {
            bool gamma = i == 0 || i == 6, weight = i % 2 == 0 && i < 12;
            double lo = gamma ? 0.5 : weight ? -0.5 : i == 12 ? -1.7 : -0.2;
            double hi = gamma ? 1.5 : weight ? 0.5 : i == 12 ? 1.7 : 0.2;
            ts_fill_random(BRAID_F64, (void *)io->in[i].data,
                           (int64_t)(io->in[i].bytes / sizeof(double)),
                           seed * 131 + i, lo, hi);
        }
        char msg[600];
        bool ok = ts_grad_check_fd(g, io, 1e-6, 1e-6, false, &checked, NULL,
                                   msg, sizeof msg);
        cr_expect(ok, "seed %llu: %s", (unsigned long long)seed, msg);
        ts_io_free(io);
    }
    /* every element of the 12 parameters, 3 times */
    int64_t per = 0;
    for (int i = 0; i < GPT2_PARAMS; i++) {
        int64_t dims[2];
        int rank = gpt2_param_shape(&d, i, dims);
        per += rank == 2 ? dims[0] * dims[1] : dims[0];
    }
    cr_expect_eq(checked, 3 * per, "%d gradient elements checked", checked);
    braid_graph_free(g);
}

/* ---- the benchmark's step, compiled ------------------------------------- */

enum { ON_CPU, ON_GPU_EMULATED, ON_GPU };

#define NOUT (1 + GPT2_PARAMS) /* loss and the gradients */

typedef struct bufs {
    braid_output_binding out[NOUT];
    float *data[NOUT];
    int64_t numel[NOUT];
} bufs;

static void bufs_init(bufs *b, braid_graph *g, const braid_tensor *grads,
                      braid_tensor loss) {
    static char names[NOUT][8];
    for (int o = 0; o < NOUT; o++) {
        braid_tensor t = o == 0 ? loss : grads[o - 1];
        snprintf(names[o], sizeof names[o], o == 0 ? "loss" : "g%d", o - 1);
        b->numel[o] = braid_tensor_numel(g, t);
        b->data[o] = calloc((size_t)b->numel[o], sizeof(float));
        cr_assert_not_null(b->data[o]);
        b->out[o] = (braid_output_binding){names[o], b->data[o],
                                           (size_t)b->numel[o] * sizeof(float)};
    }
}

static void bufs_free(bufs *b) {
    for (int o = 0; o < NOUT; o++)
        free(b->data[o]);
}

/* |x - r| ≤ tol·(1 + max|r|) + atol over n floats; false with a message. */
static bool near(const char *what, int run, const float *x, const float *r,
                 int64_t n, double tol, double atol, double *worst) {
    double scale = 0;
    for (int64_t e = 0; e < n; e++)
        scale = fmax(scale, fabs(r[e]));
    for (int64_t e = 0; e < n; e++) {
        double err = fabs((double)x[e] - r[e]), lim = tol * (1 + scale) + atol;
        *worst = fmax(*worst, err / (tol * (1 + scale) + atol));
        if (err <= lim) continue;
        cr_log_error("run %d, %s element %lld: %.9g, reference %.9g (limit "
                     "%g)",
                     run, what, (long long)e, x[e], r[e], lim);
        return false;
    }
    return true;
}

static void step_case(const gpt2_dims *d, int where, uint64_t seed) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert_not_null(g);
    int64_t xd[3] = {d->batch, d->seq, d->width}, n = xd[0] * xd[1] * xd[2];
    float *x = malloc((size_t)n * sizeof(float));
    cr_assert_not_null(x);
    ts_fill_random(BRAID_F32, x, n, seed, -1.7, 1.7);
    braid_tensor grads[GPT2_PARAMS];
    braid_tensor loss = gpt2_train_step(
        g, d, braid_constant(g, BRAID_F32, 3, xd, x), seed, NULL, grads);
    free(x);
    for (int i = 0; i < GPT2_PARAMS; i++) {
        char name[8];
        snprintf(name, sizeof name, "g%d", i);
        braid_output(g, name, grads[i]);
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    if (where != ON_CPU) tc_hint_all(g, "cuda:0");
    braid_compile_options o =
        where == ON_CPU ? (braid_compile_options){0} : tc_options();
    if (where == ON_CPU) {
        braid_compile_options_init(&o);
        o.devices = "cpu";
        o.num_threads = 2;
    }
    if (where == ON_GPU_EMULATED) o.archs = "none";
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    braid_status s = braid_compile(g, &o, &p);
    if (s == BRAID_OK)
        s = where == ON_GPU_EMULATED ? br_exec_new_emulated(p, seed, &e)
                                     : braid_exec_new(p, &e);
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());

    /* every variable of the executor: parameters, m, v, step */
    uint32_t nv = braid_exec_variable_count(e);
    cr_assert_eq(nv, 3 * GPT2_PARAMS + 1, "%u variables", (unsigned)nv);
    braid_input_binding *vin = calloc(nv, sizeof *vin);
    braid_output_binding *vout = calloc(nv, sizeof *vout);
    float **vref = calloc(nv, sizeof *vref), **vexe = calloc(nv, sizeof *vexe);
    int64_t *vn = calloc(nv, sizeof *vn);
    cr_assert(vin && vout && vref && vexe && vn);
    for (uint32_t v = 0; v < nv; v++) {
        const char *name;
        braid_dtype dt;
        int rank;
        int64_t dims[BRAID_MAX_RANK];
        braid_exec_variable_info(e, v, &name, &dt, &rank, dims);
        cr_assert_eq(dt, BRAID_F32);
        vn[v] = 1;
        for (int a = 0; a < rank; a++)
            vn[v] *= dims[a];
        vref[v] = calloc((size_t)vn[v], sizeof(float));
        vexe[v] = calloc((size_t)vn[v], sizeof(float));
        cr_assert(vref[v] && vexe[v]);
        size_t bytes = (size_t)vn[v] * sizeof(float);
        vin[v] = (braid_input_binding){name, vref[v], bytes};
        vout[v] = (braid_output_binding){name, vref[v], bytes};
    }

    bufs mine, ref;
    bufs_init(&mine, g, grads, loss);
    bufs_init(&ref, g, grads, loss);
    double worst = 0, worst_var = 0;
    const char *on[] = {"cpu", "gpu plan, emulated", "gpu"};
    for (int run = 1; run <= 2; run++) {
        s = braid_run(e, NULL, 0, mine.out, NOUT);
        cr_assert_eq(s, BRAID_OK, "%s run %d: %s", on[where], run,
                     braid_last_error());
        /* the reference starts from the initializers, then carries its
         * variables (read into vref after run 1) into run 2 */
        s = braid_reference_run_state(g, NULL, 0, ref.out, NOUT,
                                      run == 1 ? NULL : vin, run == 1 ? 0 : nv,
                                      vout, nv);
        cr_assert_eq(s, BRAID_OK, "reference run %d: %s", run,
                     braid_last_error());
        for (int o = 0; o < NOUT; o++)
            cr_expect(near(mine.out[o].name, run, mine.data[o], ref.data[o],
                           mine.numel[o], 2e-4, 0, &worst),
                      "%s: output %s differs from the reference (run %d)",
                      on[where], mine.out[o].name, run);
    }
    for (uint32_t v = 0; v < nv; v++) {
        cr_assert_eq(
            braid_exec_variable_read(e, vin[v].name, vexe[v], vin[v].bytes),
            BRAID_OK, "%s", braid_last_error());
        cr_expect(
            near(vin[v].name, 2, vexe[v], vref[v], vn[v], 2e-4, 0, &worst_var),
            "%s: variable %s differs from the reference after 2 steps",
            on[where], vin[v].name);
    }
    cr_log_info("%s: worst error / limit %.3g (outputs), %.3g (variables)",
                on[where], worst, worst_var);
    cr_expect(isfinite(mine.data[0][0]), "%s: loss %g", on[where],
              mine.data[0][0]);
    for (uint32_t v = 0; v < nv; v++)
        free(vref[v]), free(vexe[v]);
    free(vin), free(vout), free(vref), free(vexe), free(vn);
    bufs_free(&mine);
    bufs_free(&ref);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

static const gpt2_dims small = {2, 16, 64, 4}; /* the bench's --small */

Test(train_gpt2, step_on_cpu_matches_reference, .timeout = 600) {
    step_case(&small, ON_CPU, 1);
}

Test(train_gpt2, step_gpu_plan_emulated_matches_reference, .timeout = 600) {
    step_case(&small, ON_GPU_EMULATED, 2);
}

Test(train_gpt2, step_on_gpu_matches_reference, .timeout = 600) {
    TC_REQUIRE_GPU();
    step_case(&small, ON_GPU, 3);
}
