/* tests/test_profile.c — the profiler and the compile report on the CPU
 * (the GPU variants are in tests/test_cuda_profile.c): profile off gives
 * BRAID_ERR_INVALID_ARGUMENT; counts equal the runs; the printed table's
 * per-op totals add up to its per-node totals; spans lie within the wall
 * time and busy / overlap agree with them; a big parallel node shows on a
 * worker track; reset and off work; outputs do not change; the trace is
 * strict JSON naming every node that ran (odd names included); the
 * compile report's passes sum to at most its total; `braid run --profile
 * --trace` through the tool.
 *
 * Tolerances: sums of printed milliseconds (4 decimals) within 1e-3 ms
 * per row; spans within the wall time plus 1 µs. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "runtime/runtime.h"
#include "tests/support/cli.h"
#include "tests/support/golden.h"
#include "tests/support/json.h"
#include "tests/support/support.h"
#include "tests/tmpfiles.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* y = relu(x·w + b) named "hidden \"1\"\\ é €", z = sum(y), unfused so
 * that matmul, add, relu and sum each run; an odd name tests escaping. */
static braid_graph *small_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(64, 96));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, DIMS(96, 32));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(32));
    braid_tensor m = braid_matmul(g, x, w, 0);
    cr_assert_eq(braid_set_name(g, m, "hidden \"1\"\\ \xc3\xa9 \xe2\x82\xac"),
                 BRAID_OK);
    braid_tensor y = braid_relu(g, braid_add(g, m, b));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "z", braid_sum(g, y, 0, NULL, false)),
                 BRAID_OK);
    return g;
}

/* The plan of g for the cpu (2 threads, fusion off when unfused). */
static braid_exec *exec_for(const braid_graph *g, bool unfused,
                            braid_plan **p) {
    braid_compile_options o = ts_compile_options("cpu", 0);
    o.num_threads = 2;
    if (unfused) o.disable_passes = BRAID_PASS_FUSE;
    *p = ts_compile_ok(g, &o);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

static void run_n(braid_exec *e, ts_io *io, int n) {
    for (int i = 0; i < n; i++)
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
}

static braid_profile *profile_of(braid_exec *e) {
    braid_profile *pr = NULL;
    cr_assert_eq(braid_exec_profile(e, &pr), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_not_null(pr);
    return pr;
}

Test(profile, off_is_invalid_argument) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, true, &p);
    ts_io *io = ts_io_new(g, 1);
    run_n(e, io, 1);
    braid_profile *pr = (braid_profile *)1;
    cr_assert_eq(braid_exec_profile(e, &pr), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(pr);
    cr_assert(strstr(braid_last_error(), "never turned on"), "%s",
              braid_last_error());
    cr_assert_eq(braid_exec_profile(NULL, &pr), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_exec_profile(e, NULL), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_exec_set_profiling(NULL, true),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_exec_profile_reset(NULL), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_exec_profile_reset(e), BRAID_OK); /* nothing to do */
    cr_assert_eq(braid_profile_print(NULL, stdout), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_profile_write_trace(NULL, "x.json"),
                 BRAID_ERR_INVALID_ARGUMENT);
    braid_profile_free(NULL);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the table ---------------------------------------------------------- */

/* One parsed row: name / op column text and its numbers. */
typedef struct row {
    char key[32];
    unsigned long long count;
    double total;
} row;

/* Rows of the section after the line starting with header, up to a blank
 * line; key is the first 24 columns (trimmed), numbers from column skip. */
static int parse_rows(const char *text, const char *header, int skip,
                      row *rows, int max) {
    const char *s = strstr(text, header);
    cr_assert_not_null(s, "no \"%s\" in:\n%s", header, text);
    s = strchr(s, '\n') + 1; /* the header line */
    s = strchr(s, '\n') + 1; /* the column titles */
    int n = 0;
    while (*s && *s != '\n' && n < max) {
        const char *end = strchr(s, '\n');
        cr_assert_not_null(end);
        if (strncmp(s, "total ", 6) != 0) {
            row *r = &rows[n++];
            memcpy(r->key, s, 24);
            r->key[24] = '\0';
            for (int k = 23; k >= 0 && r->key[k] == ' '; k--) r->key[k] = '\0';
            cr_assert_eq(sscanf(s + skip, "%llu %lf", &r->count, &r->total), 2,
                         "cannot parse: %.*s", (int)(end - s), s);
        }
        s = end + 1;
    }
    return n;
}

Test(profile, table_adds_up_and_counts_equal_runs) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, true, &p);
    ts_io *io = ts_io_new(g, 2);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK, "%s",
                 braid_last_error());
    run_n(e, io, 5);
    braid_profile *pr = profile_of(e);
    cr_assert_eq(pr->runs, 5);
    cr_assert_geq(pr->nnodes, 4, "matmul, add, relu, sum: got %u",
                  pr->nnodes);
    bool matmul = false;
    for (uint32_t i = 0; i < pr->nnodes; i++) {
        const braid_profile_node *n = &pr->nodes[i];
        cr_assert_eq(n->count, 5, "node %s ran %llu times", n->name,
                     (unsigned long long)n->count);
        cr_assert(n->min_ms >= 0 && n->min_ms <= n->max_ms);
        cr_assert(n->total_ms >= n->min_ms * 5 - 1e-9 &&
                  n->total_ms <= n->max_ms * 5 + 1e-9);
        cr_assert_str_eq(n->device, "cpu");
        cr_assert(i == 0 || pr->nodes[i - 1].total_ms >= n->total_ms,
                  "sorted by total time");
        if (!strcmp(n->op, "matmul")) {
            matmul = true;
            cr_assert_float_eq(n->flops, 2.0 * 64 * 96 * 32, 1e-6);
            cr_assert_eq(n->bytes, (64 * 96 + 96 * 32 + 64 * 32) * 4);
        }
    }
    cr_assert(matmul);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(braid_profile_print(pr, f), BRAID_OK);
    fclose(f);
    cr_log_info("%s", text);
    row nodes[64], ops[64];
    int nn = parse_rows(text, "per node", 40, nodes, 64);
    int no = parse_rows(text, "per op kind", 25, ops, 64);
    cr_assert_eq((uint32_t)nn, pr->nnodes);
    double all_nodes = 0, all_ops = 0;
    for (int k = 0; k < no; k++) {
        double sum = 0;
        unsigned long long count = 0;
        int members = 0;
        for (uint32_t i = 0; i < pr->nnodes; i++) {
            if (strcmp(pr->nodes[i].op, ops[k].key) != 0) continue;
            sum += nodes[i].total;
            count += nodes[i].count;
            members++;
        }
        cr_assert_gt(members, 0, "op row %s has no node", ops[k].key);
        cr_assert_eq(count, ops[k].count, "op %s count", ops[k].key);
        cr_assert(fabs(sum - ops[k].total) <= 1e-3 * (members + 1),
                  "op %s: nodes sum to %.4f ms, row says %.4f", ops[k].key,
                  sum, ops[k].total);
        all_ops += ops[k].total;
    }
    for (int i = 0; i < nn; i++) all_nodes += nodes[i].total;
    cr_assert(fabs(all_nodes - all_ops) <= 1e-3 * (nn + 1));
    free(text);
    braid_profile_free(pr);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the timeline ------------------------------------------------------- */

/* Checks spans against the wall time, and busy / overlap against spans. */
static void check_timeline(const braid_profile *pr) {
    cr_assert_gt(pr->wall_ms, 0);
    double per_track_max = 0;
    for (uint32_t i = 0; i < pr->nspans; i++) {
        const braid_profile_span *s = &pr->spans[i];
        cr_assert_lt(s->track, pr->ntracks);
        cr_assert(s->start_ms >= 0 && s->start_ms <= s->end_ms &&
                      s->end_ms <= pr->wall_ms + 1e-3,
                  "span of node %u on %s: %.6f..%.6f ms, wall %.6f ms",
                  s->node, pr->tracks[s->track].name, s->start_ms, s->end_ms,
                  pr->wall_ms);
        per_track_max += s->end_ms - s->start_ms;
    }
    cr_assert(pr->busy_ms <= per_track_max + 1e-9);
    cr_assert(pr->busy_ms <= pr->wall_ms * pr->ntracks + 1e-6);
    cr_assert_float_eq(pr->overlap, pr->busy_ms / pr->wall_ms, 1e-9);
}

Test(profile, spans_lie_within_the_wall_time) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, false, &p);
    ts_io *io = ts_io_new(g, 3);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK);
    run_n(e, io, 3);
    braid_profile *pr = profile_of(e);
    check_timeline(pr);
    cr_assert_str_eq(pr->tracks[0].name, "cpu");
    for (uint32_t i = 0; i < pr->nnodes; i++) { /* one own span each */
        int own = 0;
        for (uint32_t k = 0; k < pr->nspans; k++)
            own += pr->spans[k].node == pr->nodes[i].node &&
                   pr->spans[k].track == pr->nodes[i].track;
        cr_assert_eq(own, 1, "node %s: %d spans on its track",
                     pr->nodes[i].name, own);
    }
    /* one CPU queue, tasks in order: no overlap on the cpu track */
    cr_assert_leq(pr->overlap, 2.0 + 1e-9); /* cpu + 1 worker at most */
    braid_profile_free(pr);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(profile, big_parallel_node_shows_on_a_worker_track) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(1024, 1024));
    braid_tensor y = braid_exp(g, braid_tanh(g, x));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, false, &p);
    ts_io *io = ts_io_new(g, 4);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK);
    bool found = false;
    for (int attempt = 0; attempt < 20 && !found; attempt++) {
        run_n(e, io, 1); /* a busy machine may leave the worker idle once */
        braid_profile *pr = profile_of(e);
        check_timeline(pr);
        for (uint32_t k = 0; k < pr->nspans; k++)
            if (!strcmp(pr->tracks[pr->spans[k].track].name, "cpu worker 1"))
                found = true;
        braid_profile_free(pr);
    }
    cr_assert(found, "no span on \"cpu worker 1\"");
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(profile, reset_off_and_outputs_unchanged) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, false, &p);
    ts_io *plain = ts_io_new(g, 5), *prof = ts_io_new(g, 5);
    run_n(e, plain, 1);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK);
    run_n(e, prof, 2);
    for (uint32_t k = 0; k < plain->noutputs; k++)
        cr_assert(memcmp(plain->out[k].data, prof->out[k].data,
                         plain->out[k].bytes) == 0,
                  "output %s differs with profiling on", plain->out[k].name);
    cr_assert_eq(braid_exec_profile_reset(e), BRAID_OK);
    braid_profile *pr = profile_of(e);
    cr_assert_eq(pr->runs, 0);
    cr_assert_eq(pr->nnodes, 0);
    cr_assert_eq(pr->nspans, 0);
    braid_profile_free(pr);
    run_n(e, prof, 1);
    pr = profile_of(e);
    cr_assert_eq(pr->runs, 1);
    for (uint32_t i = 0; i < pr->nnodes; i++) cr_assert_eq(pr->nodes[i].count, 1);
    braid_profile_free(pr);
    cr_assert_eq(braid_exec_set_profiling(e, false), BRAID_OK);
    run_n(e, prof, 2);
    pr = profile_of(e); /* still readable, unchanged */
    cr_assert_eq(pr->runs, 1);
    braid_profile_free(pr);
    /* an async run: refused while outstanding, counted once waited for */
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK);
    cr_assert_eq(braid_run_async(e, prof->in, prof->ninputs, prof->out,
                                 prof->noutputs),
                 BRAID_OK);
    cr_assert_eq(braid_exec_set_profiling(e, false), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_exec_profile(e, &pr), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_wait(e), BRAID_OK);
    pr = profile_of(e);
    cr_assert_eq(pr->runs, 2);
    braid_profile_free(pr);
    ts_io_free(plain);
    ts_io_free(prof);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(profile, emulated_device_plan_is_timed_per_queue) {
    braid_graph *g = small_graph();
    braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
    o.num_threads = 2;
    o.archs = "none";
    braid_plan *p = ts_compile_ok(g, &o);
    braid_exec *e = NULL;
    cr_assert_eq(br_exec_new_emulated(p, 7, &e), BRAID_OK, "%s",
                 braid_last_error());
    ts_io *io = ts_io_new(g, 6);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK);
    run_n(e, io, 2);
    braid_profile *pr = profile_of(e);
    check_timeline(pr);
    cr_assert_eq(pr->runs, 2);
    for (uint32_t i = 0; i < pr->nnodes; i++)
        cr_assert_eq(pr->nodes[i].count, 2);
    braid_profile_free(pr);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the trace file ------------------------------------------------------- */

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 4096 > cap) {
            cap = cap * 2 + 4096;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        size_t n = fread(buf + *len, 1, cap - *len, f);
        *len += n;
        if (n == 0) break;
    }
    fclose(f);
    return buf;
}

/* Parses the trace at path strictly; asserts every node of pr (or, when
 * pr is NULL, at least one complete event) is named by an "X" event. */
static void check_trace(const char *path, const braid_profile *pr) {
    size_t len = 0;
    char *text = read_all(path, &len);
    char err[128];
    ts_json *doc = ts_json_parse(text, len, err, sizeof err);
    cr_assert_not_null(doc, "%s is not valid JSON: %s", path, err);
    const ts_json *ev = ts_json_get(doc, "traceEvents");
    cr_assert(ev && ev->kind == TS_JSON_ARRAY, "no traceEvents array");
    size_t complete = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const ts_json *ph = ts_json_get(&ev->items[i], "ph");
        cr_assert(ph && ph->kind == TS_JSON_STRING);
        if (strcmp(ph->string, "X") != 0) continue;
        complete++;
        const ts_json *ts = ts_json_get(&ev->items[i], "ts");
        const ts_json *dur = ts_json_get(&ev->items[i], "dur");
        const ts_json *tid = ts_json_get(&ev->items[i], "tid");
        cr_assert(ts && ts->kind == TS_JSON_NUMBER && ts->number >= 0);
        cr_assert(dur && dur->kind == TS_JSON_NUMBER && dur->number >= 0);
        cr_assert(tid && tid->kind == TS_JSON_NUMBER);
    }
    cr_assert_gt(complete, 0);
    for (uint32_t k = 0; pr && k < pr->nnodes; k++) {
        bool named = false;
        for (size_t i = 0; i < ev->n && !named; i++) {
            const ts_json *name = ts_json_get(&ev->items[i], "name");
            const ts_json *ph = ts_json_get(&ev->items[i], "ph");
            named = !strcmp(ph->string, "X") && name &&
                    name->kind == TS_JSON_STRING &&
                    !strcmp(name->string, pr->nodes[k].name);
        }
        cr_assert(named, "no event named \"%s\" in %s", pr->nodes[k].name,
                  path);
    }
    ts_json_free(doc);
    free(text);
}

Test(profile, trace_is_strict_json_naming_every_node) {
    char *dir = tf_mkdtemp();
    cr_assert_not_null(dir);
    char *path = tf_path(dir, "trace.json");
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, true, &p);
    ts_io *io = ts_io_new(g, 7);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK);
    run_n(e, io, 2);
    braid_profile *pr = profile_of(e);
    bool odd = false;
    for (uint32_t i = 0; i < pr->nnodes; i++)
        odd |= !strcmp(pr->nodes[i].name, "hidden \"1\"\\ \xc3\xa9 \xe2\x82\xac");
    cr_assert(odd, "the matmul keeps its odd name");
    cr_assert_eq(braid_profile_write_trace(pr, path), BRAID_OK, "%s",
                 braid_last_error());
    check_trace(path, pr);
    cr_assert_eq(tf_count_entries(dir), 1, "no temporary file left");
    char *bad = tf_path(dir, "no/such/dir/t.json");
    cr_assert_eq(braid_profile_write_trace(pr, bad), BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), "no/such/dir"), "%s",
              braid_last_error());
    free(bad);
    braid_profile_free(pr);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(path);
    tf_rmtree(dir);
    free(dir);
}

Test(profile, json_checker_is_strict) {
    static const char *const good[] = {
        "{}", "[]", " [1, -0.5e+3, \"a\\u00e9\\ud83d\\ude00\", true, null] ",
        "{\"a\":{\"b\":[false]}}", "0", "\"\xc3\xa9\""};
    static const char *const bad[] = {
        "[1,]", "{\"a\":1,}", "01", "1.", ".5", "NaN", "[1] x", "'a'",
        "\"\\x\"", "\"\x01\"", "\"\\ud800\"", "\"\xc3\"", "{a:1}", "",
        "[\"\xed\xa0\x80\"]", "\"\xc0\xaf\""};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char err[128];
        ts_json *v = ts_json_parse(good[i], strlen(good[i]), err, sizeof err);
        cr_assert_not_null(v, "rejected %s: %s", good[i], err);
        ts_json_free(v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ts_json *v = ts_json_parse(bad[i], strlen(bad[i]), NULL, 0);
        cr_assert_null(v, "accepted %s", bad[i]);
    }
}

/* ---- the compile report --------------------------------------------------- */

Test(profile, compile_report_passes_sum_to_at_most_total) {
    braid_graph *g = small_graph();
    braid_plan *p = ts_compile_ok(g, NULL);
    braid_compile_report r;
    cr_assert_eq(braid_plan_compile_report(p, &r), BRAID_OK);
    cr_assert_geq(r.npasses, 8, "got %u passes", r.npasses);
    cr_assert_leq(r.npasses, BRAID_REPORT_MAX_PASSES);
    double sum = 0;
    for (uint32_t i = 0; i < r.npasses; i++) {
        cr_assert_not_null(r.pass_name[i]);
        cr_assert_geq(r.pass_ms[i], 0);
        sum += r.pass_ms[i];
    }
    cr_assert_str_eq(r.pass_name[0], "verify");
    cr_assert(sum <= r.total_ms + 1e-9, "passes %.6f ms > total %.6f ms", sum,
              r.total_ms);
    cr_assert(!r.loaded);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(braid_compile_report_print(&r, f), BRAID_OK);
    fclose(f);
    cr_assert(strstr(text, "pass verify"), "%s", text);
    cr_assert(strstr(text, "kernels:"), "%s", text);
    free(text);
    cr_assert_eq(braid_plan_compile_report(NULL, &r),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_compile_report(p, NULL),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_compile_report_print(NULL, stdout),
                 BRAID_ERR_INVALID_ARGUMENT);
    braid_compile_options o = ts_compile_options("cpu", 0);
    o.disable_passes = BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE | BRAID_PASS_CHUNK;
    braid_plan *q = ts_compile_ok(g, &o);
    braid_compile_report r2;
    cr_assert_eq(braid_plan_compile_report(q, &r2), BRAID_OK);
    cr_assert_eq(r2.npasses, r.npasses - 3,
                 "simplify, fuse and chunk skipped: %u vs %u", r2.npasses,
                 r.npasses);
    braid_plan_free(q);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the tool --------------------------------------------------------------- */

static const char *const GRAPH =
    "braid-graph 1\n"
    "%x = input f32[256,256] name=\"x\"\n"
    "%w = input f32[256,256] name=\"w\"\n"
    "%m = matmul %x, %w name=\"mm\"\n"
    "%t = tanh %m name=\"act\"\n"
    "%s = sum %t axes=[1] name=\"rows\"\n"
    "output \"s\" = %s\n";

Test(profile, cli_profile_and_trace) {
    char *dir = tf_mkdtemp();
    cr_assert_not_null(dir);
    char *graph = tf_path(dir, "g.graph");
    char *trace = tf_path(dir, "t.json");
    cr_assert(tf_write_str(graph, GRAPH));
    const char *args[] = {"run", graph, "--profile", "--runs",
                          "3", "--trace", trace, "--threads", "2", NULL};
    ts_cli_result r = ts_run_cli(BRAID_CLI_PATH, dir, NULL, args);
    TS_EXPECT_STATUS(r, 0);
    cr_log_info("%s", r.out);
    cr_assert(strstr(r.out, "per node (sorted by total time)"), "%s", r.out);
    cr_assert(strstr(r.out, "per op kind"), "%s", r.out);
    cr_assert(strstr(r.out, "compile report:"), "%s", r.out);
    cr_assert(strstr(r.out, "profile: 3 runs"), "%s", r.out);
    cr_assert(strstr(r.out, "overlap: "), "%s", r.out);
    cr_assert(strstr(r.out, "mm "), "the matmul's row: %s", r.out);
    check_trace(trace, NULL);
    size_t len = 0;
    char *text = read_all(trace, &len);
    cr_assert(strstr(text, "\"name\":\"mm\""), "%s", text);
    free(text);
    ts_cli_result_free(&r);
    const char *only_trace[] = {"run", graph, "--trace",
                                trace, NULL};
    r = ts_run_cli(BRAID_CLI_PATH, dir, NULL, only_trace);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "overlap: "), "%s", r.out);
    cr_assert_null(strstr(r.out, "per node"), "%s", r.out);
    ts_cli_result_free(&r);
    const char *runs_alone[] = {"run", graph, "--runs", "2",
                                NULL};
    r = ts_run_cli(BRAID_CLI_PATH, dir, NULL, runs_alone);
    TS_EXPECT_STATUS(r, 2);
    ts_cli_result_free(&r);
    free(graph);
    free(trace);
    tf_rmtree(dir);
    free(dir);
}
