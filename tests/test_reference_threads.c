/* tests/test_reference_threads.c — the reference evaluator on several
 * threads (issue 16 item 4): the same values bit for bit as on one thread
 * (random graphs large enough to be split), matmuls against the textbook
 * triple loop written here, agreement with the CPU executor, progress
 * reports, and `braid run --check` saying how long the check took. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include "braid/braid.h"
#include "support/cli.h"
#include "support/support.h"

static braid_status ref_with(const braid_graph *g, const ts_io *io,
                             const braid_output_binding *out, int threads) {
    braid_reference_options o;
    braid_reference_options_init(&o);
    o.num_threads = threads;
    return braid_reference_run_with(g, io->in, io->ninputs, out, io->noutputs,
                                    &o);
}

/* Random graphs with tensors of up to 48³ elements: the large nodes are
 * split over 4 threads, and every output equals the 1-thread one exactly;
 * the executor agrees within the usual tolerances. */
Test(reference_threads, same_bits_as_one_thread) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.max_nodes = 10;
    o.max_rank = 3;
    o.max_dim = 48;
    o.mixed_dtypes = true;
    for (uint64_t seed = 1600; seed < 1612; seed++) {
        braid_graph *g = ts_random_graph(seed, &o);
        cr_assert_eq(braid_graph_status(g), BRAID_OK);
        ts_io *io = ts_io_new(g, seed);
        cr_assert_eq(ts_run_both(g, io), BRAID_OK, "seed %llu: %s",
                     (unsigned long long)seed, braid_last_error());
        char msg[512] = "";
        cr_assert(ts_io_compare(io, msg, sizeof msg), "seed %llu: %s",
                  (unsigned long long)seed, msg);
        /* io->ref now holds the default (threaded) reference; io->out is
         * free again for the 1-thread one */
        cr_assert_eq(ref_with(g, io, io->out, 1), BRAID_OK);
        for (uint32_t i = 0; i < io->noutputs; i++)
            cr_assert(
                memcmp(io->out[i].data, io->ref[i].data, io->out[i].bytes) == 0,
                "seed %llu output %s differs across thread counts",
                (unsigned long long)seed, io->out[i].name);
        cr_assert_eq(ref_with(g, io, io->out, 4), BRAID_OK);
        for (uint32_t i = 0; i < io->noutputs; i++)
            cr_assert(
                memcmp(io->out[i].data, io->ref[i].data, io->out[i].bytes) == 0,
                "seed %llu output %s: 4 threads differ",
                (unsigned long long)seed, io->out[i].name);
        ts_io_free(io);
        braid_graph_free(g);
    }
}

/* Batched f64 matmuls with every transpose combination, against the
 * textbook loop (j outside k, one accumulator): equal bit for bit, since
 * each element sums its products in the same order. */
Test(reference_threads, matmul_matches_triple_loop) {
    enum { B = 3, M = 37, K = 129, N = 61 };
    for (int flags = 0; flags < 4; flags++) {
        bool ta = flags & 1, tb = flags & 2;
        braid_graph *g = braid_graph_new(NULL);
        int64_t ad[3] = {B, ta ? K : M, ta ? M : K};
        int64_t bd[3] = {B, tb ? N : K, tb ? K : N};
        braid_tensor a = braid_input(g, "a", BRAID_F64, 3, ad);
        braid_tensor b = braid_input(g, "b", BRAID_F64, 3, bd);
        unsigned f =
            (ta ? BRAID_TRANSPOSE_A : 0) | (tb ? BRAID_TRANSPOSE_B : 0);
        braid_output(g, "c", braid_matmul(g, a, b, f));
        cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s",
                     braid_graph_error(g));
        static double av[B * M * K], bv[B * K * N], want[B * M * N],
            got[B * M * N];
        ts_fill_random(BRAID_F64, av, B * M * K, 7 + flags, -1, 1);
        ts_fill_random(BRAID_F64, bv, B * K * N, 8 + flags, -1, 1);
        for (int bi = 0; bi < B; bi++)
            for (int m = 0; m < M; m++)
                for (int j = 0; j < N; j++) {
                    double acc = 0.0;
                    for (int k = 0; k < K; k++)
                        acc += av[bi * M * K + (ta ? k * M + m : m * K + k)] *
                               bv[bi * K * N + (tb ? j * K + k : k * N + j)];
                    want[(bi * M + m) * N + j] = acc;
                }
        braid_input_binding in[2] = {{"a", av, sizeof av},
                                     {"b", bv, sizeof bv}};
        braid_output_binding out = {"c", got, sizeof got};
        braid_reference_options o;
        braid_reference_options_init(&o);
        o.num_threads = 3;
        cr_assert_eq(braid_reference_run_with(g, in, 2, &out, 1, &o), BRAID_OK,
                     "%s", braid_last_error());
        for (int i = 0; i < B * M * N; i++)
            cr_assert_eq(got[i], want[i], "flags %d element %d: %.17g vs %.17g",
                         flags, i, got[i], want[i]);
        braid_graph_free(g);
    }
}

typedef struct progress_log {
    int calls;
    double last;
    bool monotone;
} progress_log;

static void on_progress(void *ctx, double done) {
    progress_log *p = ctx;
    p->monotone = p->monotone && done >= p->last && done <= 1.0;
    p->last = done;
    p->calls++;
}

Test(reference_threads, progress_reports) {
    braid_graph *g =
        braid_graph_load(BRAID_SOURCE_DIR "/examples/graphs/mlp.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    ts_io *io = ts_io_new(g, 3);
    progress_log log = {0, 0.0, true};
    braid_reference_options o;
    braid_reference_options_init(&o);
    o.progress = on_progress;
    o.progress_ctx = &log;
    cr_assert_eq(braid_reference_run_with(g, io->in, io->ninputs, io->ref,
                                          io->noutputs, &o),
                 BRAID_OK);
    cr_assert_eq(log.calls, (int)braid_graph_node_count(g)); /* all needed */
    cr_assert(log.monotone);
    cr_assert_eq(log.last, 1.0);
    ts_io_free(io);
    braid_graph_free(g);
}

TestSuite(reference_cli, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

Test(reference_cli, check_says_how_long) {
    ts_cli_result r =
        ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,
                   (const char *const[]){
                       "run", BRAID_SOURCE_DIR "/examples/graphs/mlp.graph",
                       "--devices", "cpu", "--check", NULL});
    TS_EXPECT_STATUS(r, 0);
    double s = -1;
    const char *line = strstr(r.out, "check: reference evaluator ");
    cr_assert(line && sscanf(line, "check: reference evaluator %lf s", &s) == 1,
              "%s", r.out);
    cr_assert(s >= 0 && s < 600, "%g", s);
    cr_assert(strstr(r.out, "check y: "), "%s", r.out);
    cr_assert_null(strstr(r.err, "%"), "no progress off a terminal: %s", r.err);
    ts_cli_result_free(&r);
}
