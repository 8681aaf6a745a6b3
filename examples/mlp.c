/* examples/mlp.c — build a 4-layer MLP, compile it for the best device
 * present (its random weights folded into constants: made once, not on
 * every run), run it, time it and check it against the reference
 * evaluator.
 *
 * This is what `make demo` runs. It uses only the public API (the graph
 * itself comes from mlp_build.h, shared with the tests). Exit status 0 when
 * the result matches the reference within tolerance, 1 otherwise. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

#include "mlp_build.h"

#define RUNS 20   /* timed steady-state runs */
#define ATOL 1e-4 /* f32 tolerance: |got - ref| ≤ ATOL + RTOL·|ref| */
#define RTOL 1e-4
#define INPUT_SEED 42

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Uniform values in [-1, 1) from a fixed seed (splitmix64). */
static void fill_input(float *x, size_t n) {
    uint64_t s = INPUT_SEED;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
}

static int fail(const char *what) {
    fprintf(stderr, "mlp: %s: %s\n", what, braid_last_error());
    return 1;
}

/* Prints the error of y against ref and returns whether it is in tolerance. */
static bool report_error(const float *y, const float *ref, size_t n) {
    double max_abs = 0.0, max_rel = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], err = fabs((double)y[i] - r);
        if (!(err <= ATOL + RTOL * fabs(r))) /* also catches NaN */
            bad++;
        max_abs = err > max_abs ? err : max_abs;
        if (fabs(r) > ATOL && err / fabs(r) > max_rel) max_rel = err / fabs(r);
    }
    printf("vs reference: max abs err %.3g, max rel err %.3g "
           "(tolerance %.0e + %.0e*|ref|): %s\n",
           max_abs, max_rel, ATOL, RTOL, bad ? "FAIL" : "PASS");
    if (bad) printf("  %zu of %zu elements over tolerance\n", bad, n);
    return bad == 0;
}

/* Compiles g for the best device present and prints what ran where. */
static int compile(const braid_graph *g, braid_plan **plan) {
    int ngpu = braid_cuda_device_count();
    braid_compile_options opts;
    braid_compile_options_init(&opts);
    if (ngpu > 0) {
        printf("devices: %d CUDA device%s (%s)\n", ngpu, ngpu == 1 ? "" : "s",
               braid_cuda_status());
        opts.devices = "cpu,cuda:0";
    } else {
        printf("devices: %s — running on the CPU\n",
               braid_cuda_status());
        opts.devices = "cpu";
    }
    /* The weights never change: make them once, at compile time, instead
     * of on every run (4 MiB of constants in the plan). Without this the
     * CPU spends most of each run in the random generator. */
    opts.fold_generators = (size_t)MLP_WIDTH * MLP_WIDTH * sizeof(float);
    double t0 = now_s();
    if (braid_compile(g, &opts, plan) != BRAID_OK) return fail("compile");
    printf("compile: %.3f ms\n\nplan (what runs where):\n",
           (now_s() - t0) * 1e3);
    braid_plan_print(*plan, stdout);
    putchar('\n');
    return 0;
}

/* Runs the plan once (first-run time), then RUNS times (median). */
static int time_runs(braid_exec *e, const float *x, size_t xbytes, float *y,
                     size_t ybytes) {
    braid_input_binding in = {"x", x, xbytes};
    braid_output_binding out = {"y", y, ybytes};
    double times[RUNS];
    double t0 = now_s();
    if (braid_run(e, &in, 1, &out, 1) != BRAID_OK) return fail("run");
    double first = now_s() - t0;
    for (int r = 0; r < RUNS; r++) {
        t0 = now_s();
        if (braid_run(e, &in, 1, &out, 1) != BRAID_OK) return fail("run");
        times[r] = now_s() - t0;
    }
    qsort(times, RUNS, sizeof times[0], cmp_double);
    double median = (times[RUNS / 2 - 1] + times[RUNS / 2]) / 2;
    double flops = 2.0 * MLP_BATCH * MLP_WIDTH * MLP_WIDTH * MLP_LAYERS;
    printf("first run: %.3f ms\n", first * 1e3);
    printf("steady state: median %.3f ms of %d runs (%.1f GFLOP/s)\n",
           median * 1e3, RUNS, flops / median * 1e-9);
    return 0;
}

int main(void) {
    printf("braid %s\n", braid_version());
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return fail("graph");
    mlp_build(g);
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "mlp: building the graph: %s\n", braid_graph_error(g));
        braid_graph_free(g);
        return 1;
    }
    printf("graph: %d x (matmul %dx%d @ %dx%d + bias, gelu), %u nodes\n",
           MLP_LAYERS, MLP_BATCH, MLP_WIDTH, MLP_WIDTH, MLP_WIDTH,
           braid_graph_node_count(g));

    size_t n = (size_t)MLP_BATCH * MLP_WIDTH, bytes = n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *ref = malloc(bytes);
    braid_plan *plan = NULL;
    braid_exec *exec = NULL;
    int rc = x && y && ref ? 0 : 1;
    if (rc) fprintf(stderr, "mlp: out of memory\n");
    if (!rc) {
        fill_input(x, n);
        rc = compile(g, &plan);
    }
    if (!rc && braid_exec_new(plan, &exec) != BRAID_OK) rc = fail("executor");
    if (!rc) rc = time_runs(exec, x, bytes, y, bytes);
    if (!rc) {
        braid_input_binding in = {"x", x, bytes};
        braid_output_binding out = {"y", ref, bytes};
        if (braid_reference_run(g, &in, 1, &out, 1) != BRAID_OK)
            rc = fail("reference run");
    }
    if (!rc && !report_error(y, ref, n)) rc = 1;
    braid_exec_free(exec);
    braid_plan_free(plan);
    braid_graph_free(g);
    free(x);
    free(y);
    free(ref);
    return rc;
}
