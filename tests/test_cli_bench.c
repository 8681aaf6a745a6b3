/* tests/test_cli_bench.c — `braid run` as a benchmark (issue 16 item 9):
 * --warmup/--iterations/--duration, the latency statistics, --json (stdout
 * holds the JSON alone), --no-transfers on a CPU plan, --cuda-graphs,
 * --tf32/--shards/--device flags, and the usage errors. On this machine
 * the plans run on the cpu: the split is all compute. The statistics
 * function is checked against values worked by hand. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <float.h>
#include <math.h>

#include "support/cli.h"
#include "support/json.h"
#include "support/support.h"
#include "tmpfiles.h"
#include "tools/cli.h"

#define EX(name) BRAID_SOURCE_DIR "/examples/graphs/" name

#define CLI(...)                                                               \
    ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,                                \
               (const char *const[]){__VA_ARGS__, NULL})

TestSuite(cli_bench, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

static double num(const ts_json *o, const char *key) {
    const ts_json *v = ts_json_get(o, key);
    cr_assert(v && v->kind == TS_JSON_NUMBER, "no number %s", key);
    return v->number;
}

Test(cli_bench, json_statistics_are_consistent) {
    ts_cli_result r =
        CLI("run", EX("elementwise_chain.graph"), "--devices", "cpu",
            "--warmup", "2", "--iterations", "25", "--json", "--check");
    TS_EXPECT_STATUS(r, 0);
    char err[128];
    ts_json *j = ts_json_parse(r.out, strlen(r.out), err, sizeof err);
    cr_assert_not_null(j, "stdout is not one JSON object: %s\n%s", err, r.out);
    /* the usual lines went to stderr */
    cr_assert(strstr(r.err, "graph: ") && strstr(r.err, "check "), "%s", r.err);
    cr_assert_eq(num(j, "runs"), 25);
    cr_assert_eq(num(j, "warmup"), 2);
    cr_assert_eq(ts_json_get(j, "transfers")->boolean, true);
    const ts_json *l = ts_json_get(j, "latency_ms");
    double mn = num(l, "min"), med = num(l, "median"), mean = num(l, "mean"),
           p90 = num(l, "p90"), p99 = num(l, "p99"), mx = num(l, "max");
    cr_assert(mn > 0 && mn <= med && med <= p90 && p90 <= p99 && p99 <= mx,
              "%g %g %g %g %g", mn, med, p90, p99, mx);
    cr_assert(mn <= mean && mean <= mx);
    double wall = num(j, "wall_s"), thr = num(j, "throughput_per_s");
    cr_assert_float_eq(thr, 25 / wall, 1e-6 * thr);
    /* timed runs fit in the wall time around them */
    cr_assert_leq(25 * mean * 1e-3, wall * 1.0001);
    const ts_json *s = ts_json_get(j, "split_ms");
    cr_assert_eq(num(s, "profiled_runs"), 20);
    cr_assert_eq(num(s, "h2d"), 0);
    cr_assert_eq(num(s, "d2h"), 0);
    cr_assert_gt(num(s, "compute"), 0);
    ts_json_free(j);
    ts_cli_result_free(&r);
}

Test(cli_bench, text_and_duration) {
    ts_cli_result r = CLI("run", EX("elementwise_chain.graph"), "--devices",
                          "cpu", "--duration", "0.2", "--no-transfers",
                          "--cuda-graphs", "off", "--tf32");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "after 3 warm-up runs\n"), "%s", r.out);
    cr_assert(strstr(r.out, "latency: min "), "%s", r.out);
    cr_assert(strstr(r.out, "throughput: "), "%s", r.out);
    cr_assert(strstr(r.out, "split (mean busy time per run over 20 profiled "
                            "runs): h2d 0.000 ms, compute "),
              "%s", r.out);
    cr_assert(strstr(r.err, "--no-transfers: the plan runs nothing on a GPU"),
              "%s", r.err);
    /* "benchmark: N runs in S s": S ≥ 0.2 */
    unsigned long runs = 0;
    double secs = 0;
    /* "1 run in" or "N runs in": read the count, then what follows " in " */
    const char *b = strstr(r.out, "benchmark: ");
    const char *in = b ? strstr(b, " in ") : NULL;
    cr_assert(b && in && sscanf(b, "benchmark: %lu", &runs) == 1 &&
                  sscanf(in, " in %lf s", &secs) == 1,
              "%s", r.out);
    cr_assert(runs >= 1 && secs >= 0.2, "%lu runs in %g s", runs, secs);
    cr_assert(strstr(r.out, "output out f32"), "outputs still printed: %s",
              r.out);
    ts_cli_result_free(&r);
}

Test(cli_bench, usage_errors) {
    const char *const cases[][4] = {
        {"--iterations", "2", "--duration", "1"},
        {"--iterations", "2", "--repeat", "3"},
        {"--iterations", "2", "--profile", NULL},
        {"--iterations", "0", NULL, NULL},
        {"--duration", "-1", NULL, NULL},
        {"--cuda-graphs", "maybe", NULL, NULL},
        {"--warmup", "x", NULL, NULL},
        {"--shards", "0", NULL, NULL},
        {"--json=1", NULL, NULL, NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *args[8] = {"run", EX("mlp.graph")};
        size_t n = 2;
        for (int a = 0; a < 4 && cases[k][a]; a++)
            args[n++] = cases[k][a];
        args[n] = NULL;
        ts_cli_result r = ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL, args);
        TS_EXPECT_STATUS(r, 2);
        ts_cli_result_free(&r);
    }
}

/* cli_mean and cli_bench_stats against values worked by hand, and with
 * values whose plain sum overflows. */
Test(cli_bench, statistics) {
    double t[10] = {5, 1, 4, 2, 3, 10, 9, 8, 7, 6};
    cli_bench_result r;
    cli_bench_stats(t, 10, &r);
    cr_assert_eq(r.runs, 10);
    cr_assert_eq(r.min, 1);
    cr_assert_eq(r.max, 10);
    cr_assert_eq(r.median, 5.5);
    cr_assert_eq(r.mean, 5.5);
    cr_assert_eq(r.p90, 9); /* nearest rank: ceil(0.9·10) = 9th */
    cr_assert_eq(r.p99, 10);
    double odd[3] = {3, 1, 2};
    cli_bench_stats(odd, 3, &r);
    cr_assert_eq(r.median, 2);
    double big[4] = {DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX};
    cr_assert_eq(cli_mean(big, 4), DBL_MAX);
    /* 1e6 copies of 0.1: a plain sum drifts, the compensated one not */
    size_t n = 1000000;
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = 0.1;
    cr_assert_float_eq(cli_mean(v, n), 0.1, 1e-16);
    free(v);
    cr_assert_eq(cli_mean(NULL, 0), 0);
}
