/* examples/seed004_placement.c — where tensors live, and moving them.
 *
 * The seed (docs/examples.md, seed 004): MXNet's ctx=mx.gpu(1) puts an
 * array on the second GPU; its operators want every input on one device,
 * and moving data is the user's job (copyto, as_in_context).
 *
 * In braid a placement hint (braid_set_device, or device="cuda:1" in a
 * .graph file) says where a node runs, and the compiler inserts the copies
 * wherever a consumer runs on another device than its producer. Part 1
 * mixes cuda:0 and cpu hints and prints the copies braid added; part 2
 * hints a matmul "cuda:1": with two GPUs it runs there, with fewer braid
 * says clearly that the device is missing, and the hint is taken off.
 * Every result is checked against braid's reference evaluator.
 *
 * Usage: seed004_placement [--quick | N]   (N: matrix size) */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"

#define NORMAL_N 512 /* small: placement, not speed, is the point */
#define QUICK_N 96   /* --quick (the tests) */

static int fail(const char *what) {
    fprintf(stderr, "seed004: %s: %s\n", what, braid_last_error());
    return 1;
}

static int64_t parse_size(int argc, char **argv) {
    if (argc < 2) return NORMAL_N;
    if (strcmp(argv[1], "--quick") == 0) return QUICK_N;
    char *end;
    long long v = strtoll(argv[1], &end, 10);
    return *end == '\0' && v > 0 ? (int64_t)v : -1;
}

/* The nodes of the example graph that get hints. */
typedef struct nodes {
    braid_tensor h; /* x·w1 */
    braid_tensor k; /* h·w2 */
    braid_tensor y; /* relu(k), the output */
} nodes;

/* The example graph: x (an input, host memory) → h = x·w1 → k = h·w2 →
 * y = relu(k), output "y"; w1 and w2 random (made where they are used). */
static braid_graph *build(int64_t n, nodes *t) {
    const int64_t dims[2] = {n, n};
    double s = 1.0 / sqrt((double)n);
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, dims);
    braid_tensor w1 = braid_random_normal(g, BRAID_F32, 2, dims, 1, 0, s);
    braid_tensor w2 = braid_random_normal(g, BRAID_F32, 2, dims, 2, 0, s);
    t->h = braid_matmul(g, x, w1, 0);
    t->k = braid_matmul(g, t->h, w2, 0);
    t->y = braid_relu(g, t->k);
    braid_set_name(g, t->h, "h");
    braid_set_name(g, t->k, "k");
    braid_set_name(g, t->y, "y");
    braid_output(g, "y", t->y);
    return g;
}

/* Prints what the plan moves between devices and runs where. */
static int print_plan(const braid_plan *plan) {
    braid_plan_summary s;
    if (braid_plan_summary_get(plan, &s) != BRAID_OK) return fail("summary");
    printf("  copies inserted by braid: %u, moving %.2f MB per run\n",
           s.copies, (double)s.copy_bytes / 1e6);
    for (uint32_t i = 0; i < s.devices; i++) {
        braid_plan_device_info d;
        if (braid_plan_device_get(plan, i, &d) != BRAID_OK)
            return fail("device info");
        printf("  %-7s runs %u node%s\n", d.name, d.nodes,
               d.nodes == 1 ? "" : "s");
    }
    braid_plan_print(plan, stdout);
    return 0;
}

/* Runs plan on x and compares y with the reference evaluator's result. */
static int run_and_check(const braid_graph *g, const braid_plan *plan,
                         const float *x, size_t bytes) {
    size_t n = bytes / sizeof(float);
    float *y = malloc(bytes), *ref = malloc(bytes);
    braid_exec *exec = NULL;
    braid_input_binding in = {"x", x, bytes};
    braid_output_binding out = {"y", y, bytes}, rout = {"y", ref, bytes};
    int rc = 0;
    if (!y || !ref)
        rc = fail("malloc");
    else if (braid_exec_new(plan, &exec) != BRAID_OK)
        rc = fail("executor");
    else if (braid_run(exec, &in, 1, &out, 1) != BRAID_OK)
        rc = fail("run");
    else if (braid_reference_run(g, &in, 1, &rout, 1) != BRAID_OK)
        rc = fail("reference run");
    if (!rc) {
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double err = fabs((double)y[i] - ref[i]) /
                         (1e-3 + fabs((double)ref[i]));
            if (!(err <= worst)) worst = err; /* NaN sticks */
        }
        bool ok = worst <= 1e-3;
        printf("  ran it: y matches the reference evaluator (max rel err "
               "%.2g): %s\n",
               worst, ok ? "PASS" : "FAIL");
        if (!ok) rc = 1;
    }
    braid_exec_free(exec);
    free(y);
    free(ref);
    return rc;
}

/* Compiles g for devices (NULL: those present); NULL when it fails, with
 * the reason in braid_last_error(). Without a GPU no GPU kernels are built
 * ahead of time (archs "none"): those plans are only printed here. */
static braid_plan *compile(const braid_graph *g, const char *devices) {
    braid_compile_options opts;
    braid_compile_options_init(&opts);
    opts.devices = devices;
    if (braid_cuda_device_count() == 0) opts.archs = "none";
    braid_plan *plan = NULL;
    if (braid_compile(g, &opts, &plan) != BRAID_OK) return NULL;
    return plan;
}

/* Part 1: h on cuda:0, y on the cpu; x must go up, k must come down. */
static int part1(int64_t n, const float *x, size_t bytes, int ngpu) {
    nodes t;
    braid_graph *g = build(n, &t);
    if (!g) return fail("graph");
    braid_set_device(g, t.h, "cuda:0");
    braid_set_device(g, t.y, "cpu");
    int rc = 0;
    printf("part 1: h = x*w1 hinted \"cuda:0\", y = relu(k) hinted \"cpu\", "
           "k unhinted (braid's cost model)\n");
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "seed004: %s\n", braid_graph_error(g));
        braid_graph_free(g);
        return 1;
    }
    braid_plan *plan = NULL;
    if (ngpu == 0) {
        /* plans are data: the GPU plan compiles here too */
        printf("  the plan for cpu,cuda:0 (compiled here, it needs a GPU to "
               "run):\n");
        if ((plan = compile(g, "cpu,cuda:0")) == NULL) rc = fail("compile");
        if (!rc) rc = print_plan(plan);
        braid_plan_free(plan);
        plan = NULL;
        if (!rc)
            printf("  compiled for \"cpu\" to run here (with only the cpu "
                   "listed, GPU hints are ignored):\n");
    }
    if (!rc && (plan = compile(g, ngpu > 0 ? NULL : "cpu")) == NULL)
        rc = fail("compile");
    if (!rc) rc = print_plan(plan);
    if (!rc) rc = run_and_check(g, plan, x, bytes);
    braid_plan_free(plan);
    braid_graph_free(g);
    return rc;
}

/* Part 2: k hinted cuda:1. */
static int part2(int64_t n, const float *x, size_t bytes, int ngpu) {
    nodes t;
    braid_graph *g = build(n, &t);
    if (!g) return fail("graph");
    if (ngpu > 0) braid_set_device(g, t.h, "cuda:0");
    braid_set_device(g, t.k, "cuda:1");
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "seed004: %s\n", braid_graph_error(g));
        braid_graph_free(g);
        return 1;
    }
    printf("\npart 2: k = h*w2 hinted \"cuda:1\"%s\n",
           ngpu > 0 ? " (h on cuda:0)" : "");
    int rc = 0;
    braid_plan *plan = NULL;
    if (ngpu >= 2) {
        if ((plan = compile(g, NULL)) == NULL) rc = fail("compile");
        if (!rc) rc = print_plan(plan);
        if (!rc) rc = run_and_check(g, plan, x, bytes);
        if (!rc)
            printf("  k ran on cuda:1; braid copied h from cuda:0 and k back "
                   "to the host\n");
        braid_plan_free(plan);
        braid_graph_free(g);
        return rc;
    }
    /* Fewer than two GPUs. A hint naming a device the plan's list lacks is
       an error at compile time. */
    plan = compile(g, "cpu,cuda:0");
    if (plan) {
        fprintf(stderr, "seed004: compiled a plan naming an absent cuda:1\n");
        braid_plan_free(plan);
        braid_graph_free(g);
        return 1;
    }
    printf("  compile for cpu,cuda:0 (%s): braid_compile says: %s\n",
           ngpu == 1 ? "the devices present" : "as on a one-GPU machine",
           braid_last_error());
    /* Asking for cuda:1 explicitly compiles (plans are data, they may be
       saved and run elsewhere); the executor, which needs the device, is
       what says it is missing. */
    braid_plan *wanted = compile(g, "cpu,cuda:0,cuda:1");
    braid_exec *exec = NULL;
    if (!rc && !wanted) rc = fail("compile for cpu,cuda:0,cuda:1");
    braid_status st = rc ? BRAID_OK : braid_exec_new(wanted, &exec);
    if (!rc && st == BRAID_OK) {
        fprintf(stderr, "seed004: an executor for an absent cuda:1\n");
        rc = 1;
    } else if (!rc) {
        printf("  compile for cpu,cuda:0,cuda:1: ok; braid_exec_new returns "
               "\"%s\": %s\n",
               braid_status_name(st), braid_last_error());
    }
    braid_exec_free(exec);
    braid_plan_free(wanted);
    /* Taking the hint off (NULL) lets the cost model place k. */
    if (!rc) {
        braid_set_device(g, t.k, NULL);
        printf("  without the hint, compiled for the devices present:\n");
        if ((plan = compile(g, ngpu > 0 ? NULL : "cpu")) == NULL)
            rc = fail("compile");
        if (!rc) rc = print_plan(plan);
        if (!rc) rc = run_and_check(g, plan, x, bytes);
        braid_plan_free(plan);
    }
    braid_graph_free(g);
    return rc;
}

int main(int argc, char **argv) {
    int ngpu = braid_cuda_device_count();
    int64_t n = parse_size(argc, argv);
    if (n < 0) {
        fprintf(stderr, "usage: %s [--quick | N]\n", argv[0]);
        return 2;
    }
    printf("seed 004: placement hints, automatic copies, a tensor on cuda:1 "
           "when two GPUs are present, a clear error when it is absent\n");
    if (ngpu == 0)
        printf("no GPU: braid_cuda_status() says \"%s\"; running the CPU part "
               "only, sizes scaled down (n = %lld)\n\n",
               braid_cuda_status(), (long long)n);
    else
        printf("devices: %d CUDA device%s (n = %lld)\n\n", ngpu,
               ngpu == 1 ? "" : "s", (long long)n);

    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    float *x = malloc(bytes);
    if (!x) return fail("malloc");
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        x[i] = (float)((i * 7919) % 1001) * 2e-3f - 1.0f;
    int rc = part1(n, x, bytes, ngpu);
    if (!rc) rc = part2(n, x, bytes, ngpu);
    free(x);
    return rc;
}
