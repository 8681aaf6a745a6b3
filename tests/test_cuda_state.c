/* tests/test_cuda_state.c — variables, assign and AdamW on a GPU
 * (docs/training.md). Skipped without a CUDA device; CI also runs it
 * against tests/cuda_mock (mock_test_cuda_state).
 *
 *   - a two-layer MLP training step (hand-written gradients) with AdamW,
 *     every node on cuda:0: five steps, every variable after each step
 *     against the CPU executor running the same plan's graph on the same
 *     inputs within 1e-4 relative (the GPU's matmul sums in another order);
 *     no assign copies (each update kernel writes its variable in place),
 *     and the variables live on cuda:0;
 *   - a copying assign (its value one op, not fused) and a variable read
 *     after its assign in build order still reading the old value;
 *   - host read/write and a checkpoint saved from the GPU executor loaded
 *     into a CPU one (and back): the same bytes. */
#define _POSIX_C_SOURCE 200809L
#include "passes/plan.h"
#include "tests/test_cuda_common.h"

#include <math.h>
#include <unistd.h>

#define B 16
#define IN 24
#define HID 32
#define OUT 8

static braid_graph *mlp_step(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor p[4] = {
        braid_variable(g, "w1", BRAID_F32, 2, TC_DIMS(IN, HID),
                       braid_init_normal(1, 0, 0.3)),
        braid_variable(g, "b1", BRAID_F32, 1, TC_DIMS(HID), braid_init_fill(0)),
        braid_variable(g, "w2", BRAID_F32, 2, TC_DIMS(HID, OUT),
                       braid_init_normal(2, 0, 0.3)),
        braid_variable(g, "b2", BRAID_F32, 1, TC_DIMS(OUT),
                       braid_init_fill(0))};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(B, IN));
    braid_tensor t = braid_input(g, "t", BRAID_F32, 2, TC_DIMS(B, OUT));
    braid_tensor pre = braid_add(g, braid_matmul(g, x, p[0], 0), p[1]);
    braid_tensor h = braid_relu(g, pre);
    braid_tensor y = braid_add(g, braid_matmul(g, h, p[2], 0), p[3]);
    braid_tensor dy = braid_sub(g, y, t); /* d/dy of ½‖y − t‖² */
    braid_tensor dh = braid_matmul(g, dy, p[2], BRAID_TRANSPOSE_B);
    braid_tensor zero = braid_fill(g, BRAID_F32, 0, NULL, 0);
    braid_tensor dpre = braid_where(g, braid_gt(g, pre, zero), dh, zero);
    int rows[1] = {0};
    braid_tensor grads[4] = {braid_matmul(g, x, dpre, BRAID_TRANSPOSE_A),
                             braid_sum(g, dpre, 1, rows, false),
                             braid_matmul(g, h, dy, BRAID_TRANSPOSE_A),
                             braid_sum(g, dy, 1, rows, false)};
    braid_adamw_options o;
    braid_adamw_options_init(&o);
    o.lr = 0.01;
    cr_assert_eq(braid_adamw(g, 4, p, grads, &o), BRAID_OK, "%s",
                 braid_graph_error(g));
    braid_output(g, "y", y);
    return g;
}

static const char *const VARS[] = {"w1",   "b1",   "w2",   "b2",  "w1.m",
                                   "w1.v", "w2.m", "w2.v", "step"};
#define NVARS (sizeof VARS / sizeof *VARS)

static void compare_vars(braid_exec *a, braid_exec *b, int step) {
    float va[IN * HID], vb[IN * HID];
    for (size_t i = 0; i < NVARS; i++) {
        braid_dtype dt;
        int rank;
        int64_t dims[8], n = 1;
        uint32_t k = 0;
        const char *name = NULL;
        while (k < braid_exec_variable_count(a) &&
               (braid_exec_variable_info(a, k, &name, &dt, &rank, dims),
                strcmp(name, VARS[i]) != 0))
            k++;
        for (int d = 0; d < rank; d++)
            n *= dims[d];
        cr_assert_eq(braid_exec_variable_read(a, VARS[i], va, n * 4), BRAID_OK,
                     "%s", braid_last_error());
        cr_assert_eq(braid_exec_variable_read(b, VARS[i], vb, n * 4), BRAID_OK,
                     "%s", braid_last_error());
        for (int64_t e = 0; e < n; e++)
            cr_assert(fabsf(va[e] - vb[e]) <= 1e-4f * (1 + fabsf(vb[e])),
                      "step %d %s[%lld]: GPU %.8g, CPU %.8g", step, VARS[i],
                      (long long)e, va[e], vb[e]);
    }
}

Test(cuda_state, adamw_mlp_steps_match_cpu) {
    TC_REQUIRE_GPU();
    braid_graph *g = mlp_step();
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *gp, *cp;
    cr_assert_eq(braid_compile(g, &o, &gp), BRAID_OK, "%s", braid_last_error());
    o.devices = "cpu";
    cr_assert_eq(braid_compile(g, &o, &cp), BRAID_OK, "%s", braid_last_error());
    const bp_plan *bp = (const bp_plan *)gp;
    for (uint32_t id = 0; id < bp->res.graph->nnodes; id++) {
        braid_op op = bp->res.graph->nodes[id].op;
        cr_assert(op != BRAID_OP_ASSIGN || bp->res.info[id].noop,
                  "assign node %u copies", id);
        cr_assert(op != BRAID_OP_VARIABLE ||
                      bp->res.info[id].device.kind == BP_DEVICE_CUDA,
                  "variable node %u is not on the GPU", id);
    }
    braid_exec *ge, *ce;
    cr_assert_eq(braid_exec_new(gp, &ge), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(cp, &ce), BRAID_OK, "%s", braid_last_error());
    static float x[B * IN], t[B * OUT], y1[B * OUT], y2[B * OUT];
    for (int step = 1; step <= 5; step++) {
        ts_fill_random(BRAID_F32, x, B * IN, 100 + step, -1, 1);
        ts_fill_random(BRAID_F32, t, B * OUT, 200 + step, -1, 1);
        braid_input_binding in[2] = {{"x", x, sizeof x}, {"t", t, sizeof t}};
        braid_output_binding o1 = {"y", y1, sizeof y1},
                             o2 = {"y", y2, sizeof y2};
        cr_assert_eq(braid_run(ge, in, 2, &o1, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_run(ce, in, 2, &o2, 1), BRAID_OK, "%s",
                     braid_last_error());
        for (int k = 0; k < B * OUT; k++)
            cr_assert(fabsf(y1[k] - y2[k]) <= 1e-4f * (1 + fabsf(y2[k])),
                      "step %d y[%d]", step, k);
        compare_vars(ge, ce, step);
    }
    /* checkpoint: GPU → file → CPU executor, identical bytes */
    char path[64];
    snprintf(path, sizeof path, "/tmp/braid_cuda_ckpt_%d.safetensors",
             (int)getpid());
    cr_assert_eq(braid_exec_save(ge, path), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_load(ce, path), BRAID_OK, "%s", braid_last_error());
    static float a[IN * HID], b[IN * HID];
    cr_assert_eq(braid_exec_variable_read(ge, "w1.v", a, sizeof a), BRAID_OK);
    cr_assert_eq(braid_exec_variable_read(ce, "w1.v", b, sizeof b), BRAID_OK);
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
    /* and a host write lands on the GPU */
    for (int k = 0; k < IN * HID; k++)
        a[k] = (float)k;
    cr_assert_eq(braid_exec_variable_write(ge, "w1", a, sizeof a), BRAID_OK);
    cr_assert_eq(braid_exec_variable_read(ge, "w1", b, sizeof b), BRAID_OK);
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
    unlink(path);
    braid_exec_free(ge), braid_exec_free(ce);
    braid_plan_free(gp), braid_plan_free(cp);
    braid_graph_free(g);
}

Test(cuda_state, copying_assign_and_old_value_reads) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor v = braid_variable(g, "v", BRAID_F32, 1, TC_DIMS(1000),
                                    braid_init_uniform(3, -1, 1));
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(1000));
    braid_assign(g, v, braid_add(g, v, x)); /* one op: a copying assign */
    int all[1] = {0};
    braid_output(g, "s", braid_sum(g, braid_mul(g, v, v), 1, all, false));
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_exec *e;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    static float xv[1000], old[1000], now[1000];
    cr_assert_eq(braid_exec_variable_read(e, "v", old, sizeof old), BRAID_OK);
    ts_fill_random(BRAID_F32, xv, 1000, 7, -1, 1);
    for (int r = 0; r < 3; r++) {
        float s;
        braid_input_binding in = {"x", xv, sizeof xv};
        braid_output_binding out = {"s", &s, sizeof s};
        cr_assert_eq(braid_run(e, &in, 1, &out, 1), BRAID_OK, "%s",
                     braid_last_error());
        double want = 0;
        for (int k = 0; k < 1000; k++)
            want += (double)old[k] * old[k];
        cr_assert(fabs(s - want) <= 1e-4 * want, "run %d: %g vs %g", r, s,
                  want);
        cr_assert_eq(braid_exec_variable_read(e, "v", now, sizeof now),
                     BRAID_OK);
        for (int k = 0; k < 1000; k++)
            cr_assert_eq(now[k], old[k] + xv[k], "run %d v[%d]", r, k);
        memcpy(old, now, sizeof old);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}
