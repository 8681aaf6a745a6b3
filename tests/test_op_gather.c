/* tests/test_op_gather.c — gather and scatter (docs/ops.md) on the CPU:
 *
 *   - literal values: ONNX's own examples of Gather, GatherElements,
 *     GatherND (batch_dims 1), ScatterElements (add, duplicates) and
 *     ScatterND (mul), negative indices included;
 *   - random cases (tests/index_cases.h: every form, reduction and dtype,
 *     random shapes, axes and indices, negative ones included) against
 *     the reference evaluator, on 1 and 4 threads, alone and followed by
 *     elementwise work; and as GPU plans on the emulated executor;
 *   - an index out of range fails the run on the CPU (and the reference)
 *     with BRAID_ERR_INVALID_ARGUMENT naming the node and the index, and
 *     the next run with good indices succeeds;
 *   - the builder's errors; the text format and plan files round-trip.
 * Tolerances: ts_tolerance of the dtype; gather and scatter none are
 * exact, and scatter's reductions round after every step like the
 * reference, so differences would be bugs. */
#define _POSIX_C_SOURCE 200809L
#include "tests/index_cases.h"
#include "tests/planfile_support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- literal values ------------------------------------------------------ */

/* y of a graph with f32 input x (data) and i32 input i, after the
 * reference and the CPU agree; both are asserted to succeed. */
static void run_literal(braid_graph *g, braid_tensor y, const float *x,
                        size_t xbytes, const int32_t *idx, size_t ibytes,
                        const float *u, size_t ubytes, float *out,
                        size_t obytes) {
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    braid_input_binding in[3] = {
        {"x", x, xbytes}, {"i", idx, ibytes}, {"u", u, ubytes}};
    size_t nin = u ? 3 : 2;
    float *ref = calloc(1, obytes);
    braid_output_binding ro = {"y", ref, obytes}, co = {"y", out, obytes};
    cr_assert_eq(braid_reference_run(g, in, nin, &ro, 1), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan *p = pf_compile(g, "cpu");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK);
    cr_assert_eq(braid_run(e, in, nin, &co, 1), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(memcmp(out, ref, obytes) == 0, "CPU differs from the reference");
    braid_exec_free(e);
    braid_plan_free(p);
    free(ref);
}

static void assert_floats(const float *got, const float *want, int n) {
    for (int k = 0; k < n; k++)
        cr_assert_eq(got[k], want[k], "element %d: %g, expected %g", k,
                     (double)got[k], (double)want[k]);
}

Test(op_gather, onnx_gather_axis) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 3));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(1, 2));
    braid_tensor y = braid_gather(g, x, i, -1); /* axis 1 */
    const float xv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const int32_t iv[] = {0, -1};
    float out[6];
    run_literal(g, y, xv, sizeof xv, iv, sizeof iv, NULL, 0, out, sizeof out);
    assert_floats(out, (const float[]){1, 3, 4, 6, 7, 9}, 6);
    braid_graph_free(g);
}

Test(op_gather, onnx_gather_elements) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 3));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 3));
    braid_tensor y = braid_gather_elements(g, x, i, 0);
    const float xv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const int32_t iv[] = {1, 2, 0, 2, 0, -3};
    float out[6];
    run_literal(g, y, xv, sizeof xv, iv, sizeof iv, NULL, 0, out, sizeof out);
    assert_floats(out, (const float[]){4, 8, 3, 7, 2, 3}, 6);
    braid_graph_free(g);
}

Test(op_gather, onnx_gather_nd_batch_dims) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(2, 2, 2));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 1));
    braid_tensor y = braid_gather_nd(g, x, i, 1); /* ONNX example 5 */
    const float xv[] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int32_t iv[] = {1, -2};
    float out[4];
    run_literal(g, y, xv, sizeof xv, iv, sizeof iv, NULL, 0, out, sizeof out);
    assert_floats(out, (const float[]){2, 3, 4, 5}, 4);
    braid_graph_free(g);
}

Test(op_gather, onnx_scatter_elements_add_duplicates) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(1, 5));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(1, 2));
    braid_tensor u = braid_input(g, "u", BRAID_F32, 2, DIMS(1, 2));
    braid_tensor y = braid_scatter_elements(g, x, i, u, 1, BRAID_SCATTER_ADD);
    const float xv[] = {1, 2, 3, 4, 5}, uv[] = {1.1f, 2.1f};
    const int32_t iv[] = {1, -4};
    float out[5];
    run_literal(g, y, xv, sizeof xv, iv, sizeof iv, uv, sizeof uv, out,
                sizeof out);
    float want = (2.0f + 1.1f) + 2.1f;
    assert_floats(out, (const float[]){1, want, 3, 4, 5}, 5);
    braid_graph_free(g);
}

Test(op_gather, scatter_none_duplicates_last_wins) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(3, 1));
    braid_tensor u = braid_input(g, "u", BRAID_F32, 1, DIMS(3));
    braid_tensor y = braid_scatter_nd(g, x, i, u, BRAID_SCATTER_NONE);
    const float xv[] = {1, 2, 3, 4}, uv[] = {10, 20, 30};
    const int32_t iv[] = {2, 0, -2};
    float out[4];
    run_literal(g, y, xv, sizeof xv, iv, sizeof iv, uv, sizeof uv, out,
                sizeof out);
    assert_floats(out, (const float[]){20, 2, 30, 4}, 4);
    braid_graph_free(g);
}

Test(op_gather, onnx_scatter_nd_mul) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 2));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 1));
    braid_tensor u = braid_input(g, "u", BRAID_F32, 2, DIMS(2, 2));
    braid_tensor y = braid_scatter_nd(g, x, i, u, BRAID_SCATTER_MUL);
    const float xv[] = {1, 2, 3, 4, 5, 6}, uv[] = {2, 3, 10, 10};
    const int32_t iv[] = {2, 2};
    float out[6];
    run_literal(g, y, xv, sizeof xv, iv, sizeof iv, uv, sizeof uv, out,
                sizeof out);
    assert_floats(out, (const float[]){1, 2, 3, 4, 100, 180}, 6);
    braid_graph_free(g);
}

/* ---- random cases -------------------------------------------------------- */

/* Runs case c (indices filled by ix_fill_indices with bad) on devices
 * (emulated when a GPU is named) and the reference. Returns the
 * executor's status; on success the outputs are compared. */
static braid_status run_case(ix_case *c, const char *devices, int threads,
                             uint64_t seed, int64_t bad, bool *same) {
    cr_assert(braid_tensor_valid(c->y), "%s: %s", c->what,
              braid_graph_error(c->g));
    if (braid_graph_output_count(c->g) == 0)
        cr_assert_eq(braid_output(c->g, "y", c->y), BRAID_OK);
    if (strcmp(devices, "cpu") != 0)
        for (uint32_t id = 0; id < braid_graph_node_count(c->g); id++)
            if (c->g->nodes[id].op != BRAID_OP_INPUT)
                braid_set_device(c->g, (braid_tensor){id}, "cuda:0");
    ts_io *io = ts_io_new(c->g, seed);
    cr_assert(io);
    ix_fill_indices(c, ix_binding(io, "i"), seed, bad);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    o.num_threads = threads;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(c->g, &o, &p), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    braid_status s = pf_run(p, io, strcmp(devices, "cpu") != 0, seed);
    char msg[600] = "";
    if (s == BRAID_OK) {
        cr_assert_eq(braid_reference_run(c->g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK, "%s: %s", c->what, braid_last_error());
        *same = ts_io_compare(io, msg, sizeof msg);
        if (!*same) {
            ts_log_graph(c->g);
            cr_log_error("%s: %s", c->what, msg);
        }
    }
    braid_plan_free(p);
    ts_io_free(io);
    return s;
}

static void random_cases(const char *devices, int threads, bool consumer,
                         int n) {
    for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
        ix_case c = ix_random(seed, consumer);
        bool same = false;
        braid_status s = run_case(&c, devices, threads, seed, -1, &same);
        cr_assert_eq(s, BRAID_OK, "%s on %s: %s", c.what, devices,
                     braid_last_error());
        cr_assert(same, "%s on %s, %d threads: differs from the reference",
                  c.what, devices, threads);
        braid_graph_free(c.g);
    }
}

Test(op_gather, random_cpu_one_thread) {
    random_cases("cpu", 1, false, 300);
}

Test(op_gather, random_cpu_threads_and_consumers) {
    random_cases("cpu", 4, false, 150);
    random_cases("cpu", 4, true, 150);
}

Test(op_gather, random_gpu_plans_emulated) {
    random_cases("cpu,cuda:0", 2, false, 120);
    random_cases("cpu,cuda:0", 2, true, 120);
}

/* A large gather (rows split over the pool) and a large scatter. */
Test(op_gather, large_cases_threads) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(5000, 64));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(3000));
    ix_case c = {g, braid_gather(g, x, i, 0), 0, "gather 5000x64 by 3000"};
    c.node = c.y.id;
    bool same = false;
    cr_assert_eq(run_case(&c, "cpu", 4, 7, -1, &same), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(same);
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(300, 200));
    i = braid_input(g, "i", BRAID_I32, 2, DIMS(300, 200));
    braid_tensor u = braid_input(g, "u", BRAID_F32, 2, DIMS(300, 200));
    c = (ix_case){g, braid_scatter_elements(g, x, i, u, 0, BRAID_SCATTER_ADD),
                  0, "scatter add 300x200"};
    c.node = c.y.id;
    cr_assert_eq(run_case(&c, "cpu", 4, 8, -1, &same), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(same);
    braid_graph_free(g);
}

/* ---- run errors ---------------------------------------------------------- */

static void bad_index_case(const char *devices, uint64_t seed) {
    ix_case c = ix_random(seed, false);
    bool same = false;
    braid_status s = run_case(&c, devices, 2, seed, (int64_t)seed * 7, &same);
    cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s on %s: %s", c.what, devices,
                 braid_status_name(s));
    const char *m = braid_last_error();
    cr_assert(strstr(m, "braid_run: node ") && strstr(m, "out of range"),
              "%s: %s", c.what, m);
    cr_assert(strstr(m, c.g->nodes[c.node].op == BRAID_OP_GATHER ? "(gather"
                                                                 : "(scatter"),
              "%s: %s", c.what, m);
    /* the reference refuses the same indices */
    ts_io *io = ts_io_new(c.g, seed);
    int32_t v =
        ix_fill_indices(&c, ix_binding(io, "i"), seed, (int64_t)seed * 7);
    char want[64];
    snprintf(want, sizeof want, "index %d at position", (int)v);
    cr_assert(strstr(m, want), "%s: %s (expected \"%s\")", c.what, m, want);
    cr_assert_eq(
        braid_reference_run(c.g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), want), "%s", braid_last_error());
    ts_io_free(io);
    braid_graph_free(c.g);
}

Test(op_gather, out_of_range_is_a_run_error) {
    for (uint64_t seed = 1; seed <= 40; seed++) {
        bad_index_case("cpu", seed);
        bad_index_case("cpu,cuda:0", seed);
    }
}

/* After a failed run the record is cleared: good indices run again. */
Test(op_gather, executor_recovers_after_a_run_error) {
    braid_graph *g = ix_small_gather();
    braid_plan *p = pf_compile(g, "cpu");
    ix_check_recovery(p, (const int32_t[]){1, 4}, "index 4 at position 1");
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the builder --------------------------------------------------------- */

static void expect_error(braid_graph *g, braid_status want, const char *part) {
    cr_assert_eq(braid_graph_status(g), want, "%s",
                 braid_graph_error(g) ? braid_graph_error(g) : "");
    cr_assert(strstr(braid_graph_error(g), part), "%s (expected \"%s\")",
              braid_graph_error(g), part);
    braid_graph_free(g);
}

Test(op_gather, builder_errors) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    braid_tensor f = braid_input(g, "f", BRAID_F32, 1, DIMS(2));
    braid_gather(g, x, f, 0);
    expect_error(g, BRAID_ERR_DTYPE, "expected i32 or i64 indices");

    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(2));
    braid_gather(g, x, i, 2);
    expect_error(g, BRAID_ERR_INVALID_ARGUMENT, "axis 2 out of range");

    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 5));
    braid_gather_elements(g, x, i, 0);
    expect_error(g, BRAID_ERR_SHAPE, "exceeds the data's");

    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 3));
    braid_gather_nd(g, x, i, 0);
    expect_error(g, BRAID_ERR_SHAPE, "tuple length");

    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_BOOL, 1, DIMS(4));
    i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 1));
    braid_tensor u = braid_input(g, "u", BRAID_BOOL, 1, DIMS(2));
    braid_scatter_nd(g, x, i, u, BRAID_SCATTER_ADD);
    expect_error(g, BRAID_ERR_DTYPE, "reduction add");

    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 1));
    u = braid_input(g, "u", BRAID_F32, 1, DIMS(3));
    braid_scatter_nd(g, x, i, u, BRAID_SCATTER_NONE);
    expect_error(g, BRAID_ERR_SHAPE, "expected updates of shape");

    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    i = braid_input(g, "i", BRAID_I32, 1, DIMS(2));
    u = braid_input(g, "u", BRAID_F32, 1, DIMS(2));
    braid_scatter_elements(g, x, i, u, 0, (braid_scatter_reduction)9);
    expect_error(g, BRAID_ERR_INVALID_ARGUMENT, "name no form");
}

/* ---- text and plan files ------------------------------------------------- */

Test(op_gather, text_round_trip) {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        ix_case c = ix_random(seed, seed % 3 == 0);
        cr_assert(braid_tensor_valid(c.y), "%s", braid_graph_error(c.g));
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        char *text = NULL;
        size_t len = 0;
        cr_assert_eq(braid_graph_print(c.g, &text, &len), BRAID_OK);
        braid_graph *back = braid_graph_parse(text, len, "t.graph", NULL);
        cr_assert_eq(braid_graph_status(back), BRAID_OK, "%s\n%s",
                     braid_graph_error(back), text);
        cr_assert(bg_graph_equal(c.g, back), "%s: not equal after\n%s", c.what,
                  text);
        free(text);
        braid_graph_free(back);
        braid_graph_free(c.g);
    }
}

Test(op_gather, text_forms_and_errors) {
    const char *ok = "braid-graph 1\n"
                     "%0 = input f32[4, 3] name=\"x\"\n"
                     "%1 = input i32[2, 1] name=\"i\"\n"
                     "%2 = input f32[2, 3] name=\"u\"\n"
                     "%3 = gather %0, %1 form=axis axis=-2\n"
                     "%4 = gather %0, %1 form=nd batch_dims=0\n"
                     "%5 = scatter %0, %1, %2 form=nd reduction=max\n"
                     "output \"y\" = %5\n";
    braid_graph *g = braid_graph_parse(ok, strlen(ok), "ok.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    cr_assert_eq(g->nodes[3].attr.axis, 0); /* normalised */
    cr_assert_eq(g->nodes[4].rank, 2);
    braid_graph_free(g);
    const char *bad = "braid-graph 1\n"
                      "%0 = input f32[4] name=\"x\"\n"
                      "%1 = input i32[2] name=\"i\"\n"
                      "%2 = gather %0, %1 form=sideways\n";
    g = braid_graph_parse(bad, strlen(bad), "bad.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_PARSE);
    cr_assert(strstr(braid_graph_error(g), "unknown form"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
}

Test(op_gather, plan_file_round_trip) {
    for (uint64_t seed = 1; seed <= 30; seed++) {
        ix_case c = ix_random(seed, seed % 2 == 0);
        cr_assert(braid_tensor_valid(c.y), "%s", braid_graph_error(c.g));
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        const char *devices = seed % 3 ? "cpu" : "cpu,cuda:0";
        braid_plan *p = pf_compile(c.g, devices);
        size_t size = 0;
        unsigned char *file = pf_save(p, &size);
        braid_plan *q = pf_load(file, size);
        ts_io *a = ts_io_new(c.g, seed), *b = ts_io_new(c.g, seed);
        ix_fill_indices(&c, ix_binding(a, "i"), seed, -1);
        ix_fill_indices(&c, ix_binding(b, "i"), seed, -1);
        bool emu = strcmp(devices, "cpu") != 0;
        cr_assert_eq(pf_run(p, a, emu, seed), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(pf_run(q, b, emu, seed), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert(pf_same_outputs(a, b), "%s: loaded plan differs", c.what);
        ts_io_free(a);
        ts_io_free(b);
        free(file);
        braid_plan_free(q);
        braid_plan_free(p);
        braid_graph_free(c.g);
    }
}

/* ---- generated kernels --------------------------------------------------- */

#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"

/* Every random case's GPU plan generates kernels that take the run check
 * record, and the module of them all compiles with NVRTC for sm_90. */
Test(op_gather, kernels_compile_for_sm90, .timeout = 300) {
    setenv("BRAID_CACHE_DIR", "", 1);
    int cases = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        ix_case c = ix_random(seed, seed % 4 == 0);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        for (uint32_t id = 0; id < braid_graph_node_count(c.g); id++)
            if (c.g->nodes[id].op != BRAID_OP_INPUT)
                braid_set_device(c.g, (braid_tensor){id}, "cuda:0");
        braid_plan *p = pf_compile(c.g, "cpu,cuda:0");
        bc_source src;
        cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s: %s", c.what,
                     braid_last_error());
        for (uint32_t k = 0; k < src.nkernels; k++) {
            const bc_kernel *bk = &src.kernels[k];
            braid_op op = p->res.graph->nodes[bk->node].op;
            /* a gather feeding elementwise work is inside their fused
             * kernel (docs/fusion.md, rule 12): one launch, the record */
            if (op == BRAID_OP_FUSED &&
                bp_program_has_gather(
                    &p->res.programs[p->res.info[bk->node].program]))
                op = BRAID_OP_GATHER;
            if (op != BRAID_OP_GATHER && op != BRAID_OP_SCATTER) continue;
            cases++;
            cr_assert(bk->run_check, "%s", c.what);
            cr_assert_eq(bk->nparams,
                         2 + p->res.graph->nodes[bk->node].ninputs);
            cr_assert_eq(bk->nlaunch, op == BRAID_OP_GATHER ? 1 : 2);
        }
        const char *dump = getenv("BRAID_CODEGEN_DUMP"); /* for reading */
        char path[1024];
        snprintf(path, sizeof path, "%s/gather_%llu.cu", dump ? dump : "",
                 (unsigned long long)seed);
        FILE *f = dump && *dump ? fopen(path, "w") : NULL;
        if (f) {
            fprintf(f, "// %s\n%s", c.what, src.text);
            fclose(f);
        }
        bc_binary bin;
        char err[16384];
        braid_status s =
            bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err);
        cr_assert_eq(s, BRAID_OK, "%s: %s", c.what, err);
        bc_binary_free(&bin);
        bc_source_free(&src);
        braid_plan_free(p);
        braid_graph_free(c.g);
    }
    cr_assert_geq(cases, 60);
}
#endif

/* DOT shows the form, the axis and the reduction. */
Test(op_gather, dot_labels) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(4, 3));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 1));
    braid_tensor u = braid_input(g, "u", BRAID_F32, 2, DIMS(2, 3));
    braid_output(g, "y", braid_scatter_nd(g, x, i, u, BRAID_SCATTER_MAX));
    braid_output(g, "z", braid_gather(g, x, i, 1));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(braid_graph_to_dot(g, f), BRAID_OK, "%s", braid_last_error());
    fclose(f);
    cr_assert(strstr(buf, "nd batch_dims=0 max"), "%s", buf);
    cr_assert(strstr(buf, "axis axis=1"), "%s", buf);
    free(buf);
    braid_plan *p = pf_compile(g, "cpu");
    f = open_memstream(&buf, &len);
    cr_assert_eq(braid_plan_to_dot(p, f), BRAID_OK, "%s", braid_last_error());
    fclose(f);
    cr_assert(strstr(buf, "scatter"), "%s", buf);
    free(buf);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Gradients are checked by tests/test_grad.c (finite differences per op);
 * here: the reductions without one fail naming the reduction. */
Test(op_gather, scatter_mul_has_no_gradient) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    int32_t iv[2] = {1, 3};
    braid_tensor i = braid_constant(g, BRAID_I32, 2, DIMS(2, 1), iv);
    braid_tensor u = braid_input(g, "u", BRAID_F32, 1, DIMS(2));
    braid_tensor y = braid_scatter_nd(g, x, i, u, BRAID_SCATTER_MUL);
    braid_tensor loss = braid_sum(g, y, 0, NULL, false);
    braid_tensor grads[1];
    cr_assert_neq(braid_grad(g, loss, 1, &x, grads), BRAID_OK);
    cr_assert(strstr(braid_graph_error(g), "reduction mul) has no gradient"),
              "%s", braid_graph_error(g));
    braid_graph_free(g);
}

/* i64 indices (ONNX's int64 kept whole): values, negatives, and one beyond
 * the i32 range failing the run with its full value. */
Test(op_gather, i64_indices) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 2));
    braid_tensor i = braid_input(g, "i", BRAID_I64, 1, DIMS(2));
    cr_assert_eq(braid_output(g, "y", braid_gather(g, x, i, 0)), BRAID_OK);
    braid_plan *p = pf_compile(g, "cpu");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK);
    const float xv[6] = {1, 2, 3, 4, 5, 6};
    int64_t iv[2] = {-1, 0};
    float out[4];
    braid_input_binding in[2] = {{"x", xv, sizeof xv}, {"i", iv, sizeof iv}};
    braid_output_binding o = {"y", out, sizeof out};
    cr_assert_eq(braid_run(e, in, 2, &o, 1), BRAID_OK, "%s",
                 braid_last_error());
    assert_floats(out, (const float[]){5, 6, 1, 2}, 4);
    iv[1] = (int64_t)1 << 40;
    cr_assert_eq(braid_run(e, in, 2, &o, 1), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "index 1099511627776 at position 1"),
              "%s", braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}
