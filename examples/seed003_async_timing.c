/* examples/seed003_async_timing.c — timing asynchronous GPU work.
 *
 * The seed (docs/examples.md, seed 003): a benchmark timed a loop of
 * matmul kernel launches with the host clock and found the matmuls cheap
 * and the copy of the result back to the host slow, growing with the loop
 * count. Kernel launches are asynchronous: the clock around the loop only
 * measured queueing the work, and the copy, which waits for the kernels,
 * absorbed their time.
 *
 * The same mistake with braid: braid_run_async returns once the GPU work is
 * issued, and braid_wait then waits for all of it. Two right ways: the host
 * clock around braid_run (it returns when the outputs are ready), and
 * braid's profiler, which times every node with CUDA events on its stream
 * (the monotonic clock for CPU nodes).
 *
 * The graph: y ← y·w, MATMULS times, from an input x (host memory); output
 * y. w is scaled so y keeps its size.
 *
 * Usage: seed003_async_timing [--quick | N]   (N: matrix size) */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

#define GPU_N 2048   /* with a GPU */
#define GPU_MATMULS 50
#define CPU_N 256    /* without a GPU: well under a second on 2 cores */
#define CPU_MATMULS 10
#define QUICK_N 96   /* --quick (the tests) */
#define RUNS 5       /* profiled runs */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int fail(const char *what) {
    fprintf(stderr, "seed003: %s: %s\n", what, braid_last_error());
    return 1;
}

static braid_graph *build(int64_t n, int matmuls) {
    const int64_t dims[2] = {n, n};
    double s = sqrt(3.0 / (double)n); /* var(w) = 1/n keeps var(y) */
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor y = braid_input(g, "x", BRAID_F32, 2, dims);
    braid_tensor w = braid_random_uniform(g, BRAID_F32, 2, dims, 7, -s, s);
    for (int i = 0; i < matmuls; i++) y = braid_matmul(g, y, w, 0);
    braid_output(g, "y", y);
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "seed003: %s\n", braid_graph_error(g));
        braid_graph_free(g);
        return NULL;
    }
    return g;
}

/* Per run, the profiler's time of the nodes whose op starts with prefix
 * ("matmul", "copy"), summed. */
static double op_ms(const braid_profile *p, const char *prefix) {
    double ms = 0;
    for (uint32_t i = 0; i < p->nnodes; i++) {
        const braid_profile_node *nd = &p->nodes[i];
        if (strncmp(nd->op, prefix, strlen(prefix)) == 0 && nd->count > 0)
            ms += nd->total_ms / (double)nd->count;
    }
    return ms;
}

/* The wrong way, then braid_run, then the profiler. */
static int measure(braid_exec *exec, const float *x, float *y, size_t bytes,
                   bool gpu) {
    braid_input_binding in = {"x", x, bytes};
    braid_output_binding out = {"y", y, bytes};
    /* warm-up: first-call costs stay out of the figures */
    if (braid_run(exec, &in, 1, &out, 1) != BRAID_OK) return fail("run");

    printf("the wrong way: the host clock around the two halves of a run\n");
    double t0 = now_ms();
    if (braid_run_async(exec, &in, 1, &out, 1) != BRAID_OK)
        return fail("run_async");
    double t1 = now_ms();
    if (braid_wait(exec) != BRAID_OK) return fail("wait");
    double t2 = now_ms();
    printf("  braid_run_async (\"the matmuls\"):  %8.2f ms\n", t1 - t0);
    printf("  braid_wait (\"the copy back\"):     %8.2f ms\n", t2 - t1);
    if (gpu)
        printf("  braid_run_async returns once the work is issued to the "
               "GPU's streams; the GPU computes afterwards, and braid_wait "
               "absorbs all of it: the seed's \"copy back\" that grew with "
               "the loop count.\n");
    else
        printf("  without a GPU braid_run_async runs a CPU plan to the end "
               "before returning, so here the split happens to be right; on "
               "a GPU it is not.\n");

    printf("\nright way 1: the host clock around braid_run (it returns when "
           "the outputs are ready)\n");
    t0 = now_ms();
    if (braid_run(exec, &in, 1, &out, 1) != BRAID_OK) return fail("run");
    printf("  braid_run: %.2f ms\n", now_ms() - t0);

    printf("\nright way 2: braid's profiler (%s), %d runs\n",
           gpu ? "CUDA events around each node on its stream"
               : "the monotonic clock around each node",
           RUNS);
    if (braid_exec_set_profiling(exec, true) != BRAID_OK)
        return fail("set_profiling");
    for (int r = 0; r < RUNS; r++)
        if (braid_run(exec, &in, 1, &out, 1) != BRAID_OK) return fail("run");
    braid_profile *p = NULL;
    if (braid_exec_profile(exec, &p) != BRAID_OK) return fail("profile");
    if (braid_profile_print(p, stdout) != BRAID_OK) {
        braid_profile_free(p);
        return fail("profile_print");
    }
    printf("  per run: matmuls %.2f ms, copies %.2f ms; the last run's wall "
           "time %.2f ms\n",
           op_ms(p, "matmul"), op_ms(p, "copy"), p->wall_ms);
    braid_profile_free(p);
    return braid_exec_set_profiling(exec, false) == BRAID_OK
               ? 0
               : fail("set_profiling");
}

static int64_t parse_size(int argc, char **argv, int64_t normal) {
    if (argc < 2) return normal;
    if (strcmp(argv[1], "--quick") == 0) return QUICK_N;
    char *end;
    long long v = strtoll(argv[1], &end, 10);
    return *end == '\0' && v > 0 ? (int64_t)v : -1;
}

int main(int argc, char **argv) {
    int ngpu = braid_cuda_device_count();
    bool gpu = ngpu > 0;
    int64_t n = parse_size(argc, argv, gpu ? GPU_N : CPU_N);
    int matmuls = gpu ? GPU_MATMULS : CPU_MATMULS;
    if (n < 0) {
        fprintf(stderr, "usage: %s [--quick | N]\n", argv[0]);
        return 2;
    }
    printf("seed 003: timing asynchronous GPU work the wrong way (host clock "
           "around braid_run_async) vs braid_run and braid's profiler\n");
    if (gpu)
        printf("devices: %d CUDA device%s; %d matmuls of %lldx%lld on "
               "cuda:0\n\n",
               ngpu, ngpu == 1 ? "" : "s", matmuls, (long long)n,
               (long long)n);
    else
        printf("no GPU: braid_cuda_status() says \"%s\"; running the CPU part "
               "only, sizes scaled down (%d matmuls of %lldx%lld)\n\n",
               braid_cuda_status(), matmuls, (long long)n, (long long)n);

    braid_graph *g = build(n, matmuls);
    if (!g) return 1;
    braid_compile_options opts;
    braid_compile_options_init(&opts);
    opts.devices = gpu ? "cpu,cuda:0" : "cpu";
    braid_plan *plan = NULL;
    braid_exec *exec = NULL;
    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    int rc = 0;
    if (!x || !y)
        rc = fail("malloc");
    else if (braid_compile(g, &opts, &plan) != BRAID_OK)
        rc = fail("compile");
    else if (braid_exec_new(plan, &exec) != BRAID_OK)
        rc = fail("executor");
    if (!rc) {
        for (size_t i = 0; i < bytes / sizeof(float); i++)
            x[i] = (float)(i % 997) * 2e-3f - 1.0f;
        rc = measure(exec, x, y, bytes, gpu);
    }
    if (!rc)
        printf("\nwhat this shows: time asynchronous work where it ends — "
               "braid_run, or braid_wait measured from the start of "
               "braid_run_async — or let the profiler time it on the "
               "device.\n");
    braid_exec_free(exec);
    braid_plan_free(plan);
    braid_graph_free(g);
    free(x);
    free(y);
    return rc;
}
