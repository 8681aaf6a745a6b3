/* tests/test_cuda_stress.c — two host threads, each with its own executor
 * of one shared plan, running at the same time on one GPU: the plan is
 * read-only to executors and each executor owns its arenas, streams,
 * events, cuBLAS handle and kernels, so the runs must not disturb each
 * other. Every run of every thread gets fresh inputs and is compared with
 * the reference evaluator. The plan uses cuBLAS, generated elementwise and
 * reduction kernels and four compute streams. tools/gpu-check.sh also runs
 * this suite under compute-sanitizer (memcheck, racecheck, synccheck), with
 * BRAID_TEST_SANITIZER set: fewer runs there. Skipped without a GPU, and
 * under tests/cuda_mock (single-threaded); one thread of it passes there. */
#define _POSIX_C_SOURCE 200809L
#include "tests/test_cuda_common.h"

#include <pthread.h>

#define THREADS 2

/* Four independent branches (matmul + elementwise + row sums) joined at
 * the end: work on several streams at once within each executor. */
static braid_graph *branches_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert_not_null(g);
    braid_tensor acc = BRAID_NONE;
    for (int k = 0; k < 4; k++) {
        char name[8];
        snprintf(name, sizeof name, "x%d", k);
        braid_tensor x = braid_input(g, name, BRAID_F32, 2, TC_DIMS(128, 128));
        braid_tensor t = braid_matmul(g, x, x, k & 1 ? BRAID_TRANSPOSE_B : 0);
        t = braid_tanh(g, braid_add(g, t, x));
        t = braid_sum(g, t, 1, (int[]){1}, false);
        acc = k == 0 ? t : braid_add(g, acc, t);
    }
    cr_assert_eq(braid_output(g, "y", acc), BRAID_OK, "%s",
                 braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    return g;
}

typedef struct worker {
    const braid_graph *g;     /* the graph (for the reference; read-only) */
    const braid_plan *p;      /* the shared plan */
    int index;                /* 0 or 1: seeds the inputs */
    int runs;                 /* how many runs */
    pthread_barrier_t *start; /* all threads start running together */
    char msg[600];            /* the first failure, empty when none */
} worker;

/* One run with fresh inputs (seed) on e, checked against the reference;
 * false with w->msg filled on failure. */
static bool run_once(worker *w, braid_exec *e, uint64_t seed) {
    ts_io *io = ts_io_new(w->g, seed);
    if (!io) {
        snprintf(w->msg, sizeof w->msg, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < io->ninputs; i++)
        ts_fill_input(io, i, BRAID_F32, TS_RANGE(-0.3, 0.3), seed + i);
    braid_status s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    if (s == BRAID_OK)
        s = braid_reference_run(w->g, io->in, io->ninputs, io->ref,
                                io->noutputs);
    char cmp[400] = "";
    bool ok = s == BRAID_OK && ts_io_compare(io, cmp, sizeof cmp);
    if (!ok)
        snprintf(w->msg, sizeof w->msg, "thread %d, seed %llu: %s", w->index,
                 (unsigned long long)seed,
                 s != BRAID_OK ? braid_last_error() : cmp);
    ts_io_free(io);
    return ok;
}

static void *work(void *arg) {
    worker *w = arg;
    braid_exec *e = NULL;
    /* executors are created at the same time too */
    pthread_barrier_wait(w->start);
    braid_status s = braid_exec_new(w->p, &e);
    if (s != BRAID_OK)
        snprintf(w->msg, sizeof w->msg, "thread %d: braid_exec_new: %s",
                 w->index, braid_last_error());
    pthread_barrier_wait(w->start);
    for (int r = 0; s == BRAID_OK && r < w->runs; r++)
        if (!run_once(w, e, 1000u * (uint64_t)(w->index + 1) + (uint64_t)r))
            break;
    braid_exec_free(e);
    return NULL;
}

Test(cuda_stress, two_threads_two_executors_one_gpu, .timeout = 300) {
    TC_REQUIRE_GPU();
    /* tests/cuda_mock keeps one global launch hook: one host thread only */
    if (getenv("MOCK_SEED"))
        cr_skip_test("the CUDA mock emulates one host thread at a time");
    braid_graph *g = branches_graph();
    braid_compile_options o = tc_options();
    o.max_streams = 4;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    pthread_barrier_t start;
    cr_assert_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.g = g, .p = p, .index = i, .start = &start};
        w[i].runs = tc_under_sanitizer() ? 4 : 40;
        cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].msg[0], '\0', "%s", w[i].msg);
    braid_plan_free(p);
    braid_graph_free(g);
}
