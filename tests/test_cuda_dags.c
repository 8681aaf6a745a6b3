/* tests/test_cuda_dags.c — the dispatcher on whole plans: 512 random DAGs
 * (ts_random_graph, mixed dtypes, every node hinted to "cpu" or "cuda:0"
 * at random, so copies cross both ways and CPU nodes sit between GPU
 * nodes) run three times each (warm-up, CUDA-graph capture where the plan
 * allows, replay) and compared with the reference after every run;
 * several compute streams; chunked against unchunked pipelines; CPU and
 * GPU branches in one plan; independent reductions side by side on
 * streams. Skipped without a CUDA device.
 *
 * Tolerances: ts_tolerance per dtype, as for the CPU executor. */
#include "tests/test_cuda_common.h"

/* Compiles g with o and runs it `runs` times, comparing with the reference
 * after each run; asserts with the seed in the message. */
static void run_and_compare(braid_graph *g, const braid_compile_options *o,
                            uint64_t seed, int runs) {
    ts_io *io = ts_io_new(g, seed);
    cr_assert_not_null(io);
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    braid_status s = braid_compile(g, o, &p);
    if (s == BRAID_OK) s = braid_exec_new(p, &e);
    if (s != BRAID_OK) tc_log_graph(g);
    cr_assert_eq(s, BRAID_OK, "seed %llu: %s: %s", (unsigned long long)seed,
                 braid_status_name(s), braid_last_error());
    s = braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs);
    cr_assert_eq(s, BRAID_OK, "seed %llu: reference: %s",
                 (unsigned long long)seed, braid_last_error());
    for (int r = 0; r < runs; r++) {
        for (uint32_t k = 0; k < io->noutputs; k++) /* stale data shows */
            memset(io->out[k].data, 0xA5, io->out[k].bytes);
        s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
        char msg[512] = "";
        bool ok = s == BRAID_OK && ts_io_compare(io, msg, sizeof msg);
        if (!ok) {
            tc_log_graph(g);
            cr_log_info("executor log:\n%s", br_cuda_log(br_exec_cuda(e)));
        }
        cr_assert_eq(s, BRAID_OK, "seed %llu run %d: %s: %s",
                     (unsigned long long)seed, r, braid_status_name(s),
                     braid_last_error());
        cr_assert(ok, "seed %llu run %d (graph %d): %s",
                  (unsigned long long)seed, r,
                  (int)br_cuda_last_run_used_graph(br_exec_cuda(e)), msg);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
}

/* count random graphs from base, hinted with probability p_gpu. */
static void random_dags(uint64_t base, int count, int max_nodes, bool mixed,
                        double p_gpu, int streams) {
    TC_REQUIRE_GPU();
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.max_nodes = max_nodes;
    go.mixed_dtypes = mixed;
    braid_compile_options o = tc_options();
    o.max_streams = streams;
    for (uint64_t i = 0; i < (uint64_t)count; i++) {
        uint64_t seed = base + i;
        braid_graph *g = ts_random_graph(seed, &go);
        cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s",
                     braid_graph_error(g));
        tc_hint_random(g, seed, p_gpu);
        run_and_compare(g, &o, seed, 3);
        braid_graph_free(g);
    }
}

Test(cuda_dags, mixed_a) {
    random_dags(100000, 64, 12, true, 0.6, 4);
}
Test(cuda_dags, mixed_b) {
    random_dags(110000, 64, 12, true, 0.6, 4);
}
Test(cuda_dags, mixed_c) {
    random_dags(120000, 64, 16, true, 0.5, 2);
}
Test(cuda_dags, mixed_d) {
    random_dags(130000, 64, 16, true, 0.7, 4);
}
Test(cuda_dags, f32_deep_a) {
    random_dags(140000, 64, 30, false, 0.8, 4);
}
Test(cuda_dags, f32_deep_b) {
    random_dags(150000, 64, 30, false, 0.8, 3);
}
Test(cuda_dags, all_gpu) {
    random_dags(160000, 64, 16, true, 1.0, 4);
}
Test(cuda_dags, one_stream) {
    random_dags(170000, 64, 16, true, 0.5, 1);
}

/* ---- streams, chunks, CPU beside GPU ------------------------------------- */

/* A 2^22-element copy → elementwise → copy chain: the chunk pass splits it
 * when asked; both plans must give the reference's values (and the same
 * bits: every element is computed the same way). */
Test(cuda_dags, chunked_equals_unchunked) {
    TC_REQUIRE_GPU();
    int64_t n = 1 << 22;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(n / 256, 256));
    braid_tensor y =
        braid_add(g,
                  braid_sqrt(g, braid_add(g, braid_square(g, braid_sin(g, x)),
                                          braid_square(g, braid_cos(g, x)))),
                  x);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    ts_io *a = ts_io_new(g, 3), *b = ts_io_new(g, 3);
    braid_compile_options o = tc_options();
    o.chunks = 1;
    cr_assert_eq(tc_run(g, &o, a, 2, NULL), BRAID_OK, "%s", braid_last_error());
    for (int chunks = 2; chunks <= 8; chunks *= 2) {
        o.chunks = chunks;
        o.max_streams = 4;
        cr_assert_eq(tc_run(g, &o, b, 2, NULL), BRAID_OK, "%s",
                     braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(b, msg, sizeof msg), "chunks %d: %s", chunks,
                  msg);
        cr_assert(memcmp(a->out[0].data, b->out[0].data, a->out[0].bytes) == 0,
                  "chunks %d differs from the unchunked plan", chunks);
    }
    ts_io_free(a);
    ts_io_free(b);
    braid_graph_free(g);
}

/* Four independent branches (matmul, elementwise, reduction) joined at the
 * end, with 1 and 4 compute streams. */
Test(cuda_dags, independent_branches_on_streams) {
    TC_REQUIRE_GPU();
    for (int streams = 1; streams <= 4; streams += 3) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor acc = BRAID_NONE;
        for (int k = 0; k < 4; k++) {
            char name[8];
            snprintf(name, sizeof name, "x%d", k);
            braid_tensor x =
                braid_input(g, name, BRAID_F32, 2, TC_DIMS(96, 96));
            braid_tensor t =
                braid_matmul(g, x, x, k & 1 ? BRAID_TRANSPOSE_B : 0);
            t = braid_tanh(g, braid_add(g, t, x));
            t = braid_sum(g, t, 1, (int[]){1}, false);
            acc = k == 0 ? t : braid_add(g, acc, t);
        }
        braid_compile_options o = tc_options();
        o.max_streams = streams;
        char what[32];
        snprintf(what, sizeof what, "%d streams", streams);
        ts_range r[4] = {TS_RANGE(-0.3, 0.3), TS_RANGE(-0.3, 0.3),
                         TS_RANGE(-0.3, 0.3), TS_RANGE(-0.3, 0.3)};
        cr_assert_eq(braid_output(g, "y", acc), BRAID_OK);
        tc_hint_all(g, "cuda:0");
        ts_io *io = ts_io_new(g, 9);
        for (uint32_t i = 0; i < io->ninputs; i++)
            ts_fill_input(io, i, BRAID_F32, r[i], 9);
        cr_assert_eq(tc_run(g, &o, io, 3, NULL), BRAID_OK, "%s: %s", what,
                     braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", what, msg);
        ts_io_free(io);
        braid_graph_free(g);
    }
}

/* Four independent reduction branches (long rows, columns, everything,
 * a mean of a prologue), one output each, on 4 compute streams and on 1:
 * the generated kernels' shared memory and warp shuffles with streams
 * running side by side. No cuBLAS: tools/gpu-check.sh runs this test
 * under compute-sanitizer racecheck, whose findings must be braid's. */
Test(cuda_dags, reductions_on_streams) {
    TC_REQUIRE_GPU();
    for (int streams = 4; streams >= 1; streams -= 3) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y[4];
        for (int k = 0; k < 4; k++) {
            char name[8];
            snprintf(name, sizeof name, "x%d", k);
            braid_tensor x =
                braid_input(g, name, BRAID_F32, 2, TC_DIMS(128, 700));
            braid_tensor t = braid_tanh(g, braid_mul(g, x, x));
            y[k] = k == 0   ? braid_sum(g, t, 1, (int[]){1}, false)
                   : k == 1 ? braid_reduce_max(g, t, 1, (int[]){0}, false)
                   : k == 2
                       ? braid_sum(g, t, 0, NULL, false)
                       : braid_mean(g, braid_exp(g, x), 1, (int[]){1}, true);
            snprintf(name, sizeof name, "y%d", k);
            cr_assert_eq(braid_output(g, name, y[k]), BRAID_OK);
        }
        tc_hint_all(g, "cuda:0");
        braid_compile_options o = tc_options();
        o.max_streams = streams;
        ts_io *io = ts_io_new(g, 11);
        for (uint32_t i = 0; i < io->ninputs; i++)
            ts_fill_input(io, i, BRAID_F32, TS_RANGE(-1, 1), 11 + i);
        cr_assert_eq(tc_run(g, &o, io, 3, NULL), BRAID_OK, "%d streams: %s",
                     streams, braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%d streams: %s", streams,
                  msg);
        ts_io_free(io);
        braid_graph_free(g);
    }
}

/* A CPU matmul chain and a GPU matmul chain in one plan (seed 001), then
 * a CPU node reading the GPU result, a GPU node reading the CPU result. */
Test(cuda_dags, cpu_and_gpu_branches) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, TC_DIMS(200, 200));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, TC_DIMS(300, 300));
    braid_tensor ca = a, gb = b;
    for (int i = 0; i < 4; i++) {
        ca = braid_tanh(g, braid_matmul(g, ca, a, 0));
        braid_set_device(g, ca, "cpu");
        gb = braid_tanh(g, braid_matmul(g, gb, b, 0));
        braid_set_device(g, gb, "cuda:0");
    }
    braid_tensor s1 = braid_sum(g, gb, 0, NULL, false); /* GPU */
    braid_set_device(g, s1, "cuda:0");
    braid_tensor s2 = braid_add(g, braid_sum(g, ca, 0, NULL, false), s1);
    braid_set_device(g, s2, "cpu"); /* CPU reads a GPU result */
    braid_tensor y = braid_mul(g, gb, s2);
    braid_set_device(g, y, "cuda:0"); /* GPU reads a CPU result */
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "s2", s2), BRAID_OK);
    braid_compile_options o = tc_options();
    o.num_threads = 0;
    ts_io *io = ts_io_new(g, 4);
    ts_fill_input(io, 0, BRAID_F32, TS_RANGE(-0.05, 0.05), 4);
    ts_fill_input(io, 1, BRAID_F32, TS_RANGE(-0.05, 0.05), 5);
    cr_assert_eq(tc_run(g, &o, io, 3, NULL), BRAID_OK, "%s",
                 braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}
