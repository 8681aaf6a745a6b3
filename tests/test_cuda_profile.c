/* tests/test_cuda_profile.c — the profiler on a GPU (skipped without one):
 * a chunked copy → compute → copy pipeline (256 MiB of f32 through
 * "cpu,cuda:0" in 8 chunks) profiled: spans of an h2d track overlap spans
 * of a compute track in time and the overlap figure is above 1.2; every
 * GPU node's time is positive and below the wall time; profiling on and
 * off give identical outputs; no CUDA graph is replayed while profiling;
 * (spans within [0, wall] imply each GPU node's time is below the wall);
 * the trace names the tracks. A small GPU plan checks the per-node table
 * (counts, devices, copy ops) and the worker shares of staging memcpys.
 *
 * Under the CUDA mock (tests/cuda_mock, MOCK_SEED set) streams run one
 * operation at a time, so there is no overlap to see, and under
 * compute-sanitizer (BRAID_TEST_SANITIZER) timings mean nothing: there the
 * data are small and the overlap checks are logged, not asserted.
 *
 * Tolerances: outputs bit-identical between profiled and unprofiled runs
 * of the same plan; values against tanh(x)·2 + 1 in f32 within 1e-5
 * absolute (spot checks). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <unistd.h>

#include "tests/test_cuda_common.h"

#define ROWS 8192
#define COLS 8192 /* 256 MiB of f32 */

/* Under the mock or a sanitizer: small data, no overlap figures. */
static bool small_run(void) {
    return getenv("MOCK_SEED") != NULL || tc_under_sanitizer();
}

/* y = tanh(x)·2 + 1 on cuda:0, x and y on the host. */
static braid_graph *pipeline_graph(int64_t rows, int64_t cols) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(rows, cols));
    braid_tensor two = braid_fill(g, BRAID_F32, 0, NULL, 2.0);
    braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1.0);
    braid_tensor y = braid_add(g, braid_mul(g, braid_tanh(g, x), two), one);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s",
                 braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    return g;
}

static bool track_is(const braid_profile *pr, uint32_t t, const char *what) {
    return t < pr->ntracks && strstr(pr->tracks[t].name, what) != NULL;
}

/* Some span on an h2d track and some span on a compute track overlap by
 * more than a microsecond. */
static bool copy_overlaps_compute(const braid_profile *pr) {
    for (uint32_t i = 0; i < pr->nspans; i++) {
        const braid_profile_span *a = &pr->spans[i];
        if (!track_is(pr, a->track, " h2d")) continue;
        for (uint32_t k = 0; k < pr->nspans; k++) {
            const braid_profile_span *b = &pr->spans[k];
            if (!track_is(pr, b->track, " compute")) continue;
            double lo = a->start_ms > b->start_ms ? a->start_ms : b->start_ms;
            double hi = a->end_ms < b->end_ms ? a->end_ms : b->end_ms;
            if (hi - lo > 1e-3) return true;
        }
    }
    return false;
}

static void check_gpu_spans(const braid_profile *pr) {
    cr_assert_gt(pr->wall_ms, 0);
    uint32_t gpu = 0;
    for (uint32_t i = 0; i < pr->nspans; i++) {
        const braid_profile_span *s = &pr->spans[i];
        cr_assert_lt(s->track, pr->ntracks);
        cr_assert(s->start_ms >= 0 && s->end_ms <= pr->wall_ms + 1e-3,
                  "span of node %u on %s: %.4f..%.4f ms, wall %.4f ms",
                  s->node, pr->tracks[s->track].name, s->start_ms, s->end_ms,
                  pr->wall_ms);
    }
    for (uint32_t i = 0; i < pr->nnodes; i++) {
        const braid_profile_node *n = &pr->nodes[i];
        if (strncmp(n->device, "cuda:", 5) != 0) continue;
        gpu++;
        cr_assert(n->min_ms > 0, "GPU node %s (%s) took %.6f ms", n->name,
                  n->op, n->min_ms);
    }
    cr_assert_gt(gpu, 0, "no GPU node was timed");
}

Test(cuda_profile, chunked_pipeline_overlaps_copy_and_compute,
     .timeout = 300) {
    TC_REQUIRE_GPU();
    int64_t rows = small_run() ? 512 : ROWS, cols = small_run() ? 512 : COLS;
    braid_graph *g = pipeline_graph(rows, cols);
    braid_compile_options o = tc_options();
    o.chunks = 8;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_plan_summary sum;
    cr_assert_eq(braid_plan_summary_get(p, &sum), BRAID_OK);
    cr_assert_gt(sum.chunk_nodes, 0, "the pipeline was not chunked");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    ts_io *plain = ts_io_new(g, 11), *prof = ts_io_new(g, 11);
    cr_assert(plain && prof);
    for (int r = 0; r < 3; r++) /* warm-up; a graph may be captured */
        cr_assert_eq(braid_run(e, plain->in, 1, plain->out, 1), BRAID_OK, "%s",
                     braid_last_error());
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK, "%s",
                 braid_last_error());
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(braid_run(e, prof->in, 1, prof->out, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert(!br_cuda_last_run_used_graph(br_exec_cuda(e)),
                  "a CUDA graph was replayed while profiling");
    }
    cr_assert(memcmp(plain->out[0].data, prof->out[0].data,
                     plain->out[0].bytes) == 0,
              "profiling changed the output");
    const float *x = plain->in[0].data, *y = prof->out[0].data;
    int64_t n = rows * cols;
    for (int64_t i = 0; i < n; i += n / 97 + 1)
        cr_assert(fabsf(y[i] - (tanhf(x[i]) * 2 + 1)) <= 1e-5f,
                  "y[%lld] = %.9g for x = %.9g", (long long)i, y[i], x[i]);
    braid_profile *pr = NULL;
    cr_assert_eq(braid_exec_profile(e, &pr), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(pr->runs, 3);
    check_gpu_spans(pr);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    braid_profile_print(pr, f);
    fclose(f);
    cr_log_info("%s", text);
    free(text);
    bool overlaps = copy_overlaps_compute(pr);
    cr_log_info("perf: profiled chunked pipeline: wall %.3f ms, busy %.3f ms, "
                "overlap %.2f, h2d overlaps compute: %s",
                pr->wall_ms, pr->busy_ms, pr->overlap,
                overlaps ? "yes" : "no");
    if (!small_run()) {
        cr_assert(overlaps, "no h2d span overlaps a compute span");
        cr_assert_gt(pr->overlap, 1.2, "overlap %.2f", pr->overlap);
    }
    braid_profile_free(pr);
    cr_assert_eq(braid_exec_set_profiling(e, false), BRAID_OK);
    cr_assert_eq(braid_run(e, plain->in, 1, plain->out, 1), BRAID_OK);
    cr_assert(memcmp(plain->out[0].data, prof->out[0].data,
                     plain->out[0].bytes) == 0,
              "output after profiling differs");
    ts_io_free(plain);
    ts_io_free(prof);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_profile, small_plan_table_and_trace) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, TC_DIMS(128, 64));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, TC_DIMS(64, 32));
    braid_tensor m = braid_matmul(g, a, b, 0);
    braid_set_name(g, m, "mm");
    braid_set_device(g, m, "cuda:0");
    braid_tensor s = braid_sum(g, braid_exp(g, m), 0, NULL, false);
    braid_set_device(g, s, "cpu");
    cr_assert_eq(braid_output(g, "s", s), BRAID_OK);
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    ts_io *io = ts_io_new(g, 12);
    cr_assert_eq(braid_exec_set_profiling(e, true), BRAID_OK, "%s",
                 braid_last_error());
    for (int r = 0; r < 4; r++)
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
    braid_profile *pr = NULL;
    cr_assert_eq(braid_exec_profile(e, &pr), BRAID_OK);
    cr_assert_eq(pr->runs, 4);
    bool h2d = false, d2h = false, mm = false;
    for (uint32_t i = 0; i < pr->nnodes; i++) {
        const braid_profile_node *n = &pr->nodes[i];
        cr_assert_eq(n->count, 4, "%s ran %llu times", n->name,
                     (unsigned long long)n->count);
        h2d |= !strcmp(n->op, "copy h2d");
        d2h |= !strcmp(n->op, "copy d2h");
        if (!strcmp(n->name, "mm")) {
            mm = true;
            cr_assert_str_eq(n->device, "cuda:0");
            cr_assert(track_is(pr, n->track, "compute"), "%s",
                      pr->tracks[n->track].name);
        }
    }
    cr_assert(h2d && d2h && mm, "h2d %d d2h %d mm %d", h2d, d2h, mm);
    check_gpu_spans(pr);
    char path[] = "/tmp/braid-cuda-trace-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(braid_profile_write_trace(pr, path), BRAID_OK, "%s",
                 braid_last_error());
    FILE *f = fopen(path, "r");
    char buf[1 << 16];
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[len] = '\0';
    if (f) fclose(f);
    unlink(path);
    cr_assert(strstr(buf, "\"cuda:0 h2d\""), "%s", buf);
    cr_assert(strstr(buf, "\"cuda:0 compute 0\""), "%s", buf);
    cr_assert(strstr(buf, "\"name\":\"mm\""), "%s", buf);
    braid_profile_free(pr);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}
