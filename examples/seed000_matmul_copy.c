/* examples/seed000_matmul_copy.c — "copying arrays to the GPU is slow".
 *
 * The question (docs/examples.md, seed 000): a 10000×10000 matmul whose
 * random inputs are made on the host and copied to the GPU took 22 s, the
 * "copy" almost all of it. The answer has two parts, both shown here:
 *
 *   1. Most of those seconds were one-time setup (CUDA context, device
 *      memory, kernel loading), paid by the first call only. braid pays it
 *      when the executor is created and on its first run; later runs are
 *      the steady state.
 *   2. The copy itself is real but avoidable: random inputs made by a
 *      random op on the device never cross PCIe.
 *
 * Variant A makes a and b with braid_random_uniform inside the graph (braid
 * places the generators where their consumer runs). Variant B makes the
 * same numbers on the host (a CPU plan of the same generators: braid's
 * random numbers depend only on (seed, index), so both variants multiply
 * the same matrices) and binds them as inputs, so every run copies them.
 * Both output sum(c²) as a checksum, so the timing is the product and not
 * a 400 MB trip home.
 *
 * Usage: seed000_matmul_copy [--quick | N]   (N: matrix size) */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

#define GPU_N 10000  /* the seed's size */
#define CPU_N 1000   /* without a GPU: a few seconds on 2 cores */
#define QUICK_N 256  /* --quick (the tests) */
#define RUNS 5       /* timed steady-state runs */
#define SEED_A 1
#define SEED_B 2

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what) {
    fprintf(stderr, "seed000: %s: %s\n", what, braid_last_error());
    return 1;
}

/* What one variant measured. */
typedef struct timings {
    double compile_ms;   /* braid_compile */
    double exec_new_ms;  /* braid_exec_new: memory, streams, kernels */
    double first_run_ms; /* the first braid_run */
    double steady_ms;    /* median of RUNS later runs */
    float sumsq;         /* the checksum sum(c²) */
} timings;

/* c = a @ b; output "sumsq" = sum(c²). With make_inputs, a and b are random
 * ops in the graph; otherwise they are inputs "a" and "b". */
static braid_graph *build_product(int64_t n, bool make_inputs) {
    const int64_t dims[2] = {n, n};
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor a, b;
    if (make_inputs) {
        a = braid_random_uniform(g, BRAID_F32, 2, dims, SEED_A, -1.0, 1.0);
        b = braid_random_uniform(g, BRAID_F32, 2, dims, SEED_B, -1.0, 1.0);
    } else {
        a = braid_input(g, "a", BRAID_F32, 2, dims);
        b = braid_input(g, "b", BRAID_F32, 2, dims);
    }
    braid_tensor c = braid_matmul(g, a, b, 0);
    braid_output(g, "sumsq", braid_sum(g, braid_square(g, c), 0, NULL, false));
    return g;
}

/* The same random matrices as variant A's, made on the host by a plan
 * compiled for the cpu: what "create the arrays on the CPU" means. */
static int make_on_host(int64_t n, float *a, float *b, size_t bytes) {
    const int64_t dims[2] = {n, n};
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return fail("graph");
    braid_output(g, "a",
                 braid_random_uniform(g, BRAID_F32, 2, dims, SEED_A, -1, 1));
    braid_output(g, "b",
                 braid_random_uniform(g, BRAID_F32, 2, dims, SEED_B, -1, 1));
    braid_compile_options opts;
    braid_compile_options_init(&opts);
    opts.devices = "cpu";
    braid_plan *plan = NULL;
    braid_exec *exec = NULL;
    int rc = 0;
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "seed000: %s\n", braid_graph_error(g));
        rc = 1;
    } else if (braid_compile(g, &opts, &plan) != BRAID_OK) {
        rc = fail("compile (host generator)");
    } else if (braid_exec_new(plan, &exec) != BRAID_OK) {
        rc = fail("executor (host generator)");
    } else {
        braid_output_binding out[2] = {{"a", a, bytes}, {"b", b, bytes}};
        double t0 = now_ms();
        if (braid_run(exec, NULL, 0, out, 2) != BRAID_OK)
            rc = fail("run (host generator)");
        else
            printf("  made a and b on the host: %.0f ms (%.0f MB)\n",
                   now_ms() - t0, 2.0 * (double)bytes / 1e6);
    }
    braid_exec_free(exec);
    braid_plan_free(plan);
    braid_graph_free(g);
    return rc;
}

/* Compiles g for devices, creates an executor, runs it once and then RUNS
 * times, filling *t. inputs may be NULL (variant A). */
static int measure(const braid_graph *g, const char *devices,
                   const braid_input_binding *inputs, size_t ninputs,
                   timings *t) {
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "seed000: %s\n", braid_graph_error(g));
        return 1;
    }
    braid_compile_options opts;
    braid_compile_options_init(&opts);
    opts.devices = devices;
    braid_plan *plan = NULL;
    braid_exec *exec = NULL;
    braid_output_binding out = {"sumsq", &t->sumsq, sizeof t->sumsq};
    double times[RUNS];
    int rc = 0;

    double t0 = now_ms();
    if (braid_compile(g, &opts, &plan) != BRAID_OK) {
        rc = fail("compile");
        goto done;
    }
    t->compile_ms = now_ms() - t0;
    braid_plan_summary sum;
    if (braid_plan_summary_get(plan, &sum) != BRAID_OK) {
        rc = fail("plan summary");
        goto done;
    }
    printf("  plan: %u copies between devices, moving %.1f MB per run\n",
           sum.copies, (double)sum.copy_bytes / 1e6);
    braid_plan_print(plan, stdout);
    t0 = now_ms();
    if (braid_exec_new(plan, &exec) != BRAID_OK) {
        rc = fail("executor");
        goto done;
    }
    t->exec_new_ms = now_ms() - t0;
    /* braid_run returns when the outputs are written: the host clock
       around it is the true time of the run. */
    t0 = now_ms();
    if (braid_run(exec, inputs, ninputs, &out, 1) != BRAID_OK) {
        rc = fail("run");
        goto done;
    }
    t->first_run_ms = now_ms() - t0;
    for (int r = 0; r < RUNS; r++) {
        t0 = now_ms();
        if (braid_run(exec, inputs, ninputs, &out, 1) != BRAID_OK) {
            rc = fail("run");
            goto done;
        }
        times[r] = now_ms() - t0;
    }
    qsort(times, RUNS, sizeof times[0], cmp_double);
    t->steady_ms = times[RUNS / 2];
done:
    braid_exec_free(exec);
    braid_plan_free(plan);
    return rc;
}

static void print_timings(const timings *t, int64_t n, bool gpu,
                          bool first_executor) {
    double flops = 2.0 * (double)n * n * n / (t->steady_ms * 1e-3);
    printf("  compile %.1f ms\n", t->compile_ms);
    if (gpu)
        printf("  first call %.0f ms: executor creation %.0f ms (%sdevice "
               "memory, streams, kernel load) + first run %.0f ms (cuBLAS "
               "loads its kernels on first use)\n",
               t->exec_new_ms + t->first_run_ms, t->exec_new_ms,
               first_executor ? "CUDA context, " : "", t->first_run_ms);
    else
        printf("  first call %.0f ms: executor creation %.0f ms (memory, "
               "threads) + first run %.0f ms\n",
               t->exec_new_ms + t->first_run_ms, t->exec_new_ms,
               t->first_run_ms);
    printf("  steady state %.1f ms (median of %d runs, %.1f %s)\n",
           t->steady_ms, RUNS, flops >= 1e12 ? flops * 1e-12 : flops * 1e-9,
           flops >= 1e12 ? "TFLOP/s" : "GFLOP/s");
}

/* The two answers to the seed, with this run's figures. */
static void print_gpu_lessons(const timings *ta, const timings *tb,
                              size_t bytes) {
    printf("- the first call (%.0f ms in A) is one-time setup, not the copy; "
           "steady state is %.1f ms. Create the executor once and reuse it.\n",
           ta->exec_new_ms + ta->first_run_ms, ta->steady_ms);
    double extra = tb->steady_ms - ta->steady_ms;
    if (extra > 0)
        printf("- copying: B's steady state is %.1f ms more than A's: the "
               "%.0f MB host-to-device copy of a and b on every run (%.1f "
               "GB/s). Make data where it is used: a random op runs on the "
               "GPU and nothing crosses PCIe.\n",
               extra, 2.0 * (double)bytes / 1e6,
               2.0 * (double)bytes / (extra * 1e-3) * 1e-9);
    else
        printf("- copying: B was not slower than A at this size (%.1f vs "
               "%.1f ms): the copy of %.0f MB is lost in the noise.\n",
               tb->steady_ms, ta->steady_ms, 2.0 * (double)bytes / 1e6);
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
    if (n < 0) {
        fprintf(stderr, "usage: %s [--quick | N]\n", argv[0]);
        return 2;
    }
    const char *devices = gpu ? "cpu,cuda:0" : "cpu";
    printf("seed 000: a %lldx%lld matmul; inputs made on the device by a "
           "random op vs made on the host and copied\n",
           (long long)n, (long long)n);
    if (gpu)
        printf("devices: %d CUDA device%s; compiling for %s\n", ngpu,
               ngpu == 1 ? "" : "s", devices);
    else
        printf("no GPU: braid_cuda_status() says \"%s\"; running the CPU "
               "part only, sizes scaled down (n = %lld)\n",
               braid_cuda_status(), (long long)n);

    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    braid_graph *ga = build_product(n, true), *gb = build_product(n, false);
    timings ta = {0}, tb = {0};
    int rc = 0;
    if (!a || !b || !ga || !gb) {
        fprintf(stderr, "seed000: out of memory\n");
        rc = 1;
    }

    if (!rc) {
        printf("\nA: a and b made by braid_random_uniform in the graph "
               "(on %s)\n", gpu ? "the GPU, where the matmul runs" : "the cpu");
        rc = measure(ga, devices, NULL, 0, &ta);
        if (!rc) print_timings(&ta, n, gpu, true);
    }
    if (!rc) {
        printf("\nB: a and b made on the host, bound as inputs%s\n",
               gpu ? " (malloc memory) and copied to the GPU on every run"
                   : " (no copy: the cpu reads them where they are)");
        rc = make_on_host(n, a, b, bytes);
    }
    if (!rc) {
        braid_input_binding in[2] = {{"a", a, bytes}, {"b", b, bytes}};
        rc = measure(gb, devices, in, 2, &tb);
        if (!rc) print_timings(&tb, n, gpu, false);
    }

    if (!rc) {
        double diff = fabs((double)ta.sumsq - (double)tb.sumsq);
        bool agree = diff <= 1e-4 * fabs((double)ta.sumsq);
        printf("\nchecksums sum(c^2): A %.6g, B %.6g: %s\n", ta.sumsq,
               tb.sumsq, agree ? "agree (same random numbers on any device)"
                               : "DIFFER");
        if (!agree) rc = 1;
    }
    if (!rc) {
        printf("\nwhat this shows:\n");
        if (gpu)
            print_gpu_lessons(&ta, &tb, bytes);
        else
            printf("- on the cpu there is little one-time setup (first call "
                   "%.0f ms, steady state %.1f ms) and no copy: A and B "
                   "differ only by A generating its random numbers on every "
                   "run (%.1f ms vs %.1f ms). On a GPU the first call also "
                   "creates the CUDA context and loads kernels, and B copies "
                   "a and b over PCIe on every run.\n",
                   ta.exec_new_ms + ta.first_run_ms, ta.steady_ms,
                   ta.steady_ms, tb.steady_ms);
    }
    braid_graph_free(ga);
    braid_graph_free(gb);
    free(a);
    free(b);
    return rc;
}
