/* tests/test_cuda_graph.c — CUDA-graph capture and replay: an executor
 * replaying its GPU work gives the same bits as one dispatching node by
 * node, run after run, with buffers that move between runs, with CPU nodes
 * before and after the GPU part, and with output subsets; plans that
 * cannot be captured (a GPU → CPU → GPU round trip, large host transfers)
 * run the ordinary way and say why in the executor log. Also
 * braid_run_async / braid_wait on GPU plans (dispatched and replayed):
 * the same bits as braid_run, braid_run_async returning before the GPU
 * results reach the host, a second run before the wait refused, the wait
 * on another thread, pinned outputs, and braid_exec_free with a run
 * outstanding. Skipped without a CUDA device. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "tests/test_cuda_common.h"

/* x → 24 unfusable-when-fusion-is-off ops on cuda:0 (→ y), plus, when
 * cpu_parts, a CPU op before the GPU part and a CPU op after it. */
static braid_graph *chain_graph(int64_t n, bool cpu_parts) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(n));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 1, TC_DIMS(n));
    braid_tensor t = x;
    if (cpu_parts) {
        t = braid_abs(g, braid_add(g, x, w));
        braid_set_device(g, t, "cpu");
    }
    braid_tensor start = t;
    for (int i = 0; i < 24; i++) {
        switch (i % 4) {
        case 0:
            t = braid_sin(g, t);
            break;
        case 1:
            t = braid_add(g, t, w);
            break;
        case 2:
            t = braid_mul(g, t, t);
            break;
        default:
            t = braid_tanh(g, t);
            break;
        }
        braid_set_device(g, t, "cuda:0");
    }
    cr_assert_eq(braid_output(g, "y", t), BRAID_OK);
    if (cpu_parts) {
        braid_tensor z = braid_sum(g, braid_mul(g, t, start), 0, NULL, false);
        braid_set_device(g, z, "cpu");
        cr_assert_eq(braid_output(g, "z", z), BRAID_OK);
        braid_tensor side = braid_exp(g, braid_neg(g, w)); /* independent */
        braid_set_device(g, side, "cpu");
        cr_assert_eq(braid_output(g, "side", side), BRAID_OK);
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static braid_exec *exec_for(const braid_graph *g, braid_plan **p, bool graphs) {
    braid_compile_options o = tc_options();
    o.disable_passes = BRAID_PASS_FUSE; /* many small nodes */
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    br_cuda_set_graphs(br_exec_cuda(e), graphs);
    return e;
}

/* Runs both executors `runs` times on fresh inputs (new buffers each run)
 * and compares their outputs bit for bit and with the reference. Returns
 * how many runs of `with` replayed a graph. */
static int compare_runs(const braid_graph *g, braid_exec *with,
                        braid_exec *without, int runs, bool subset) {
    int replayed = 0;
    for (int r = 0; r < runs; r++) {
        ts_io *a = ts_io_new(g, (uint64_t)r + 40),
              *b = ts_io_new(g, (uint64_t)r + 40);
        size_t nout = subset && r % 2 ? 1 : a->noutputs;
        braid_status s = braid_run(with, a->in, a->ninputs, a->out, nout);
        cr_assert_eq(s, BRAID_OK, "run %d with graphs: %s", r,
                     braid_last_error());
        replayed += br_cuda_last_run_used_graph(br_exec_cuda(with));
        s = braid_run(without, b->in, b->ninputs, b->out, nout);
        cr_assert_eq(s, BRAID_OK, "run %d without: %s", r, braid_last_error());
        cr_assert(!br_cuda_last_run_used_graph(br_exec_cuda(without)));
        for (size_t k = 0; k < nout; k++)
            cr_assert(memcmp(a->out[k].data, b->out[k].data, a->out[k].bytes) ==
                          0,
                      "run %d output %s: graph replay differs from dispatch", r,
                      a->out[k].name);
        cr_assert_eq(
            braid_reference_run(g, a->in, a->ninputs, a->ref, a->noutputs),
            BRAID_OK, "%s", braid_last_error());
        if (nout == a->noutputs) {
            char msg[512];
            cr_assert(ts_io_compare(a, msg, sizeof msg), "run %d: %s", r, msg);
        }
        ts_io_free(a);
        ts_io_free(b);
    }
    return replayed;
}

static void replay_case(int64_t n, bool cpu_parts, bool subset) {
    braid_graph *g = chain_graph(n, cpu_parts);
    braid_plan *p1 = NULL, *p2 = NULL;
    braid_exec *with = exec_for(g, &p1, true),
               *without = exec_for(g, &p2, false);
    int replayed = compare_runs(g, with, without, 5, subset);
    const char *log = br_cuda_log(br_exec_cuda(with));
    cr_log_info("log:\n%s", log);
    cr_assert_eq(replayed, 4,
                 "runs 2..5 should replay a graph (%d did); "
                 "log:\n%s",
                 replayed, log);
    cr_assert(strstr(log, "graph: captured"), "log:\n%s", log);
    braid_exec_free(with);
    braid_exec_free(without);
    braid_plan_free(p1);
    braid_plan_free(p2);
    braid_graph_free(g);
}

Test(cuda_graph, gpu_chain_replays_bit_identically) {
    TC_REQUIRE_GPU();
    replay_case(1000, false, false);
    replay_case(1, false, false);
}

Test(cuda_graph, cpu_nodes_before_and_after) {
    TC_REQUIRE_GPU();
    replay_case(4099, true, false);
}

Test(cuda_graph, output_subsets) {
    TC_REQUIRE_GPU();
    replay_case(777, true, true);
}

/* Runs g twice and expects no graph, with reason in the log. */
static void not_captured(braid_graph *g, const char *reason) {
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p, true);
    for (int r = 0; r < 3; r++) {
        ts_io *io = ts_io_new(g, 5);
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert(!br_cuda_last_run_used_graph(br_exec_cuda(e)));
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
        ts_io_free(io);
    }
    const char *log = br_cuda_log(br_exec_cuda(e));
    cr_assert(strstr(log, reason), "expected \"%s\" in the log:\n%s", reason,
              log);
    braid_exec_free(e);
    braid_plan_free(p);
}

Test(cuda_graph, round_trip_is_not_captured) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(100));
    braid_tensor a = braid_sin(g, x);
    braid_set_device(g, a, "cuda:0");
    braid_tensor b = braid_exp(g, a);
    braid_set_device(g, b, "cpu");
    braid_tensor c = braid_cos(g, b);
    braid_set_device(g, c, "cuda:0");
    cr_assert_eq(braid_output(g, "y", c), BRAID_OK);
    not_captured(g, "round trip");
    braid_graph_free(g);
}

Test(cuda_graph, large_transfers_are_not_captured) {
    TC_REQUIRE_GPU();
    braid_graph *g = chain_graph((int64_t)5 << 20, false); /* 20 MiB each */
    not_captured(g, "host bytes per run");
    braid_graph_free(g);
}

/* ---- braid_run_async ----------------------------------------------------- */

/* Runs `async` through braid_run_async + braid_wait and `sync` through
 * braid_run, `runs` times on fresh inputs, and compares bit for bit and
 * with the reference. With `untouched`, every output must still hold its
 * sentinel when braid_run_async returns: in an all-GPU plan the copy of a
 * result into pageable memory is finished by braid_wait, so that shows
 * braid_run_async returned without waiting for the GPU. Returns how many
 * runs of `async` replayed a CUDA graph. */
static int async_runs(const braid_graph *g, braid_exec *async, braid_exec *sync,
                      int runs, bool untouched) {
    int replayed = 0;
    for (int r = 0; r < runs; r++) {
        ts_io *a = ts_io_new(g, (uint64_t)r + 60),
              *b = ts_io_new(g, (uint64_t)r + 60);
        for (uint32_t k = 0; k < a->noutputs; k++)
            memset(a->out[k].data, 0xA5, a->out[k].bytes);
        braid_status s =
            braid_run_async(async, a->in, a->ninputs, a->out, a->noutputs);
        cr_assert_eq(s, BRAID_OK, "run %d: braid_run_async: %s", r,
                     braid_last_error());
        for (uint32_t k = 0; untouched && k < a->noutputs; k++)
            for (size_t i = 0; i < a->out[k].bytes; i++)
                cr_assert_eq(((const unsigned char *)a->out[k].data)[i], 0xA5,
                             "run %d: output %s byte %zu written before "
                             "braid_wait",
                             r, a->out[k].name, i);
        cr_assert_eq(braid_wait(async), BRAID_OK, "run %d: braid_wait: %s", r,
                     braid_last_error());
        replayed += br_cuda_last_run_used_graph(br_exec_cuda(async));
        s = braid_run(sync, b->in, b->ninputs, b->out, b->noutputs);
        cr_assert_eq(s, BRAID_OK, "run %d: braid_run: %s", r,
                     braid_last_error());
        for (uint32_t k = 0; k < a->noutputs; k++)
            cr_assert(memcmp(a->out[k].data, b->out[k].data, a->out[k].bytes) ==
                          0,
                      "run %d output %s: async differs from braid_run", r,
                      a->out[k].name);
        cr_assert_eq(
            braid_reference_run(g, a->in, a->ninputs, a->ref, a->noutputs),
            BRAID_OK, "%s", braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(a, msg, sizeof msg), "run %d: %s", r, msg);
        ts_io_free(a);
        ts_io_free(b);
    }
    return replayed;
}

static void async_case(int64_t n, bool cpu_parts, bool graphs) {
    braid_graph *g = chain_graph(n, cpu_parts);
    braid_plan *p1 = NULL, *p2 = NULL;
    braid_exec *async = exec_for(g, &p1, graphs),
               *sync = exec_for(g, &p2, graphs);
    int replayed = async_runs(g, async, sync, 5, !cpu_parts);
    cr_assert_eq(replayed, graphs ? 4 : 0,
                 "runs 2..5 should %sreplay a graph (%d did); log:\n%s",
                 graphs ? "" : "not ", replayed,
                 br_cuda_log(br_exec_cuda(async)));
    braid_exec_free(async);
    braid_exec_free(sync);
    braid_plan_free(p1);
    braid_plan_free(p2);
    braid_graph_free(g);
}

Test(cuda_graph, async_matches_run) {
    TC_REQUIRE_GPU();
    async_case(1000, false, true);  /* dispatched once, then replayed */
    async_case(1000, false, false); /* dispatched every time */
    async_case(4099, true, true);   /* CPU nodes before and after */
}

Test(cuda_graph, async_second_run_before_wait_is_refused) {
    TC_REQUIRE_GPU();
    braid_graph *g = chain_graph(500, false);
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p, true);
    for (int r = 0; r < 3; r++) { /* dispatched, captured, replayed */
        ts_io *a = ts_io_new(g, 70), *b = ts_io_new(g, 71);
        cr_assert_eq(braid_run_async(e, a->in, a->ninputs, a->out, 1), BRAID_OK,
                     "%s", braid_last_error());
        cr_assert_eq(braid_run_async(e, b->in, b->ninputs, b->out, 1),
                     BRAID_ERR_INVALID_ARGUMENT);
        cr_assert_eq(braid_run(e, b->in, b->ninputs, b->out, 1),
                     BRAID_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(braid_last_error(), "braid_wait"), "%s",
                  braid_last_error());
        cr_assert_eq(braid_wait(e), BRAID_OK, "run %d: %s", r,
                     braid_last_error());
        cr_assert_eq(braid_wait(e), BRAID_OK, "nothing outstanding");
        cr_assert_eq(
            braid_reference_run(g, a->in, a->ninputs, a->ref, a->noutputs),
            BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(a, msg, sizeof msg), "run %d: %s", r, msg);
        ts_io_free(a);
        ts_io_free(b);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* braid_wait on another thread, with its status. */
typedef struct waiter {
    braid_exec *e;       /* executor waited for */
    braid_status status; /* braid_wait's answer */
} waiter;

static void *wait_thread(void *arg) {
    waiter *w = arg;
    w->status = braid_wait(w->e);
    return NULL;
}

Test(cuda_graph, async_wait_on_another_thread_and_pinned_outputs) {
    TC_REQUIRE_GPU();
    braid_graph *g = chain_graph(2048, false);
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p, true);
    size_t bytes = 2048 * sizeof(float);
    float *pinned = br_cuda_pinned_alloc(bytes);
    cr_assert_not_null(pinned);
    for (int r = 0; r < 4; r++) {
        ts_io *io = ts_io_new(g, (uint64_t)r + 80);
        braid_output_binding ob = {"y", pinned, bytes};
        cr_assert_eq(braid_run_async(e, io->in, io->ninputs, &ob, 1), BRAID_OK,
                     "%s", braid_last_error());
        waiter w = {e, BRAID_ERR_INTERNAL};
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
        pthread_join(t, NULL);
        cr_assert_eq(w.status, BRAID_OK, "run %d: braid_wait on a thread: %s",
                     r, braid_status_name(w.status));
        memcpy(io->out[0].data, pinned, bytes);
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "run %d: %s", r, msg);
        ts_io_free(io);
    }
    br_cuda_pinned_free(pinned);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_graph, async_free_with_a_run_outstanding) {
    TC_REQUIRE_GPU();
    braid_graph *g = chain_graph(3000, false);
    for (int before = 0; before < 3; before++) { /* runs before the last */
        braid_plan *p = NULL;
        braid_exec *e = exec_for(g, &p, true);
        ts_io *io = ts_io_new(g, 90);
        for (int r = 0; r < before; r++)
            cr_assert_eq(
                braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                BRAID_OK, "%s", braid_last_error());
        memset(io->out[0].data, 0xA5, io->out[0].bytes);
        cr_assert_eq(
            braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs),
            BRAID_OK, "%s", braid_last_error());
        braid_exec_free(e); /* waits for the run first */
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "after %d runs: %s",
                  before, msg);
        ts_io_free(io);
        braid_plan_free(p);
    }
    braid_graph_free(g);
}
