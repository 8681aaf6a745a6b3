/* examples/seed001_cpu_gpu_overlap.c — the CPU and the GPU working at once.
 *
 * The seed (docs/examples.md, seed 001): ten matmuls on the CPU and ten on
 * the GPU, run one after the other and then together; together should take
 * about as long as the slower of the two, not their sum.
 *
 * In braid both chains go in one graph; device hints put one chain on the
 * cpu and the other on cuda:0 (without hints the cost model would send
 * every big matmul to the GPU). braid_run issues the GPU chain to its
 * stream, computes the CPU chain on the host while the GPU works, and
 * returns when both results are ready. For comparison, the same chains as
 * two separate plans (CPU only, GPU only) run one after the other.
 *
 * Each chain is y ← y·w ten times, w scaled so that y keeps its size, and
 * outputs sum(y²).
 *
 * Usage: seed001_cpu_gpu_overlap [--quick | N]   (N: CPU matrix size) */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

#define MATMULS 10     /* per chain, as in the seed */
#define GPU_CPU_N 2000 /* the seed's sizes: 2000² on the CPU ... */
#define GPU_GPU_N 6000 /* ... and 6000² on the GPU */
#define CPU_N 400      /* without a GPU: a few seconds on 2 cores */
#define QUICK_N 128    /* --quick (the tests) */
#define RUNS 5         /* timed runs, after one warm-up run */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return t[n / 2];
}

static int fail(const char *what) {
    fprintf(stderr, "seed001: %s: %s\n", what, braid_last_error());
    return 1;
}

/* t, with its placement hint set (the graph records any error). */
static braid_tensor on(braid_graph *g, const char *device, braid_tensor t) {
    braid_set_device(g, t, device);
    return t;
}

/* Adds a chain of MATMULS n×n matmuls hinted to device, with output
 * "<name>" = sum(y²). x ~ U(-1, 1) and w ~ U(-s, s) with s = √(3/n), so
 * that every product keeps the variance of its input. */
static void add_chain(braid_graph *g, int64_t n, uint64_t seed,
                      const char *device, const char *name) {
    const int64_t dims[2] = {n, n};
    double s = sqrt(3.0 / (double)n);
    braid_tensor y = on(g, device, braid_random_uniform(g, BRAID_F32, 2, dims,
                                                        seed, -1.0, 1.0));
    braid_tensor w = on(g, device, braid_random_uniform(g, BRAID_F32, 2, dims,
                                                        seed + 1, -s, s));
    for (int i = 0; i < MATMULS; i++)
        y = on(g, device, braid_matmul(g, y, w, 0));
    braid_tensor sq = on(g, device, braid_square(g, y));
    braid_output(g, name, on(g, device, braid_sum(g, sq, 0, NULL, false)));
}

/* One graph holding the chains asked for (cpu_n or gpu_n 0: none). */
static braid_graph *build(int64_t cpu_n, int64_t gpu_n) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    if (cpu_n) add_chain(g, cpu_n, 1, "cpu", "cpu_sumsq");
    if (gpu_n) add_chain(g, gpu_n, 11, "cuda:0", "gpu_sumsq");
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "seed001: %s\n", braid_graph_error(g));
        braid_graph_free(g);
        return NULL;
    }
    return g;
}

/* A compiled plan with its executor and output buffers. */
typedef struct runner {
    braid_plan *plan;
    braid_exec *exec;
    braid_output_binding out[2]; /* the chains' checksums */
    size_t nout;
    float sumsq[2];
} runner;

/* Compiles the chains asked for, creates the executor and runs it once.
 * On failure r holds what was made (runner_free frees it). */
static int runner_new(runner *r, int64_t cpu_n, int64_t gpu_n,
                      const char *devices) {
    braid_graph *g = build(cpu_n, gpu_n);
    if (!g) return 1;
    braid_compile_options opts;
    braid_compile_options_init(&opts);
    opts.devices = devices;
    int rc = 0;
    if (braid_compile(g, &opts, &r->plan) != BRAID_OK)
        rc = fail("compile");
    else if (braid_exec_new(r->plan, &r->exec) != BRAID_OK)
        rc = fail("executor");
    braid_graph_free(g); /* the plan does not refer to the graph */
    if (cpu_n) r->out[r->nout++] = (braid_output_binding){
                   "cpu_sumsq", &r->sumsq[0], sizeof(float)};
    if (gpu_n) r->out[r->nout++] = (braid_output_binding){
                   "gpu_sumsq", &r->sumsq[1], sizeof(float)};
    /* the warm-up run: first-call costs stay out of the timings */
    if (!rc && braid_run(r->exec, NULL, 0, r->out, r->nout) != BRAID_OK)
        rc = fail("run");
    return rc;
}

static void runner_free(runner *r) {
    braid_exec_free(r->exec);
    braid_plan_free(r->plan);
}

/* Runs each runner in turn, once, and returns the total in ms (< 0 when a
 * run failed). braid_run returns when its outputs are ready, so the host
 * clock measures the work. */
static double run_in_turn(runner *const *rs, int n) {
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        if (braid_run(rs[i]->exec, NULL, 0, rs[i]->out, rs[i]->nout) !=
            BRAID_OK) {
            fail("run");
            return -1.0;
        }
    return now_ms() - t0;
}

/* Median over RUNS of run_in_turn; < 0 on failure. */
static double time_median(runner *const *rs, int n) {
    double t[RUNS];
    for (int r = 0; r < RUNS; r++)
        if ((t[r] = run_in_turn(rs, n)) < 0) return -1.0;
    return median(t, RUNS);
}

static int64_t parse_size(int argc, char **argv, int64_t normal) {
    if (argc < 2) return normal;
    if (strcmp(argv[1], "--quick") == 0) return QUICK_N;
    char *end;
    long long v = strtoll(argv[1], &end, 10);
    return *end == '\0' && v > 0 ? (int64_t)v : -1;
}

/* With a GPU: CPU alone, GPU alone, one after the other, together. */
static int with_gpu(int64_t cpu_n, int64_t gpu_n) {
    runner cpu = {0}, gpu = {0}, both = {0};
    int rc = runner_new(&cpu, cpu_n, 0, "cpu,cuda:0");
    if (!rc) rc = runner_new(&gpu, 0, gpu_n, "cpu,cuda:0");
    if (!rc) rc = runner_new(&both, cpu_n, gpu_n, "cpu,cuda:0");
    runner *cpu_alone[1] = {&cpu}, *gpu_alone[1] = {&gpu};
    runner *in_turn[2] = {&cpu, &gpu}, *together[1] = {&both};
    double t_cpu = -1, t_gpu = -1, t_turn = -1, t_both = -1;
    if (!rc && ((t_cpu = time_median(cpu_alone, 1)) < 0 ||
                (t_gpu = time_median(gpu_alone, 1)) < 0 ||
                (t_turn = time_median(in_turn, 2)) < 0 ||
                (t_both = time_median(together, 1)) < 0))
        rc = 1;
    if (!rc) {
        double slower = t_cpu > t_gpu ? t_cpu : t_gpu;
        printf("CPU alone (%d x %lld^3 matmul, one plan):  %8.1f ms\n",
               MATMULS, (long long)cpu_n, t_cpu);
        printf("GPU alone (%d x %lld^3 matmul, one plan):  %8.1f ms\n",
               MATMULS, (long long)gpu_n, t_gpu);
        printf("one after the other (the two plans):       %8.1f ms (the "
               "sum)\n", t_turn);
        printf("together (one plan, hints cpu and cuda:0): %8.1f ms = %.2f x "
               "the slower alone (target <= 1.10)\n",
               t_both, t_both / slower);
        printf("\nwhat this shows: in one plan braid issues the GPU chain to "
               "its stream and computes the CPU chain on the host meanwhile, "
               "so the two overlap: together costs about max(CPU, GPU), one "
               "after the other their sum.\n");
        bool same =
            both.sumsq[0] == cpu.sumsq[0] && both.sumsq[1] == gpu.sumsq[1];
        printf("results: cpu_sumsq %.6g, gpu_sumsq %.6g: %s\n",
               both.sumsq[0], both.sumsq[1],
               same ? "the same as the separate plans"
                    : "DIFFER from the separate plans");
        if (!same) rc = 1;
    }
    runner_free(&cpu);
    runner_free(&gpu);
    runner_free(&both);
    return rc;
}

/* Without a GPU: the CPU chain alone, then both chains compiled for the cpu
 * only (hints are ignored when only the cpu is listed), which costs their
 * sum: there is only one device to run them on. */
static int without_gpu(int64_t n) {
    runner cpu = {0}, both = {0};
    int rc = runner_new(&cpu, n, 0, "cpu");
    if (!rc) rc = runner_new(&both, n, n, "cpu");
    runner *cpu_alone[1] = {&cpu}, *together[1] = {&both};
    double t_cpu = -1, t_both = -1;
    if (!rc && ((t_cpu = time_median(cpu_alone, 1)) < 0 ||
                (t_both = time_median(together, 1)) < 0))
        rc = 1;
    if (!rc) {
        printf("CPU chain alone (%d x %lld^3 matmul): %8.1f ms\n", MATMULS,
               (long long)n, t_cpu);
        printf("both chains, compiled for \"cpu\":     %8.1f ms (%.2f x: "
               "the cuda:0 hints are ignored when only the cpu is listed, so "
               "both chains share the CPU)\n",
               t_both, t_both / t_cpu);
        printf("\nwhat this shows: the graph written for a CPU and a GPU "
               "still runs on a machine without a GPU; the overlap itself "
               "needs the GPU (see docs/examples.md).\n");
        bool same = both.sumsq[0] == cpu.sumsq[0];
        printf("results: cpu_sumsq %.6g: %s\n", both.sumsq[0],
               same ? "the same as the CPU-only plan" : "DIFFERS");
        if (!same) rc = 1;
    }
    runner_free(&cpu);
    runner_free(&both);
    return rc;
}

int main(int argc, char **argv) {
    int ngpu = braid_cuda_device_count();
    int64_t n = parse_size(argc, argv, ngpu > 0 ? GPU_CPU_N : CPU_N);
    if (n < 0) {
        fprintf(stderr, "usage: %s [--quick | N]\n", argv[0]);
        return 2;
    }
    printf("seed 001: ten matmuls on the CPU and ten on the GPU in one plan, "
           "run together vs one after the other\n");
    if (ngpu == 0) {
        printf("no GPU: braid_cuda_status() says \"%s\"; running the CPU part "
               "only, sizes scaled down (n = %lld)\n\n",
               braid_cuda_status(), (long long)n);
        return without_gpu(n);
    }
    /* the GPU's matrices are 3x the CPU's on a side, as in the seed */
    int64_t gpu_n = argc > 1 ? 3 * n : GPU_GPU_N;
    printf("devices: %d CUDA device%s; the CPU chain is hinted \"cpu\", the "
           "GPU chain \"cuda:0\"\n\n",
           ngpu, ngpu == 1 ? "" : "s");
    return with_gpu(n, gpu_n);
}
