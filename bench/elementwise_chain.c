/* bench/elementwise_chain.c — the CPU fused elementwise chain of
 * ANCHORS.md (examples/graphs/elementwise_chain.graph):
 *
 *   out = tanh(x * y + z) * sigmoid(x) + y * 0.5 - exp(-z)
 *
 * on 2^24 f32 elements (3 inputs, 1 output), built through the public API,
 * compiled for the cpu twice — with fusion (one fused node reading x, y, z
 * once) and with BRAID_PASS_FUSE disabled (ten kernels, one pass over
 * memory each) — and timed: median of RUNS runs after WARMUP runs, each
 * plan with its own executor. Both results are checked against the
 * expression evaluated in double.
 *
 * usage: elementwise_chain [--n N] [--runs R] [--threads T]
 * Prints a human summary and, last, one line of key=value figures that
 * bench/run_cpu.sh reads. Exit status 1 on any error or mismatch. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

#define WARMUP 3
#define ATOL 1e-4 /* f32: |got - ref| ≤ ATOL + RTOL·|ref| */
#define RTOL 1e-4

typedef struct opts {
    int64_t n;   /* elements per tensor */
    int runs;    /* timed runs per plan (≥ 10) */
    int threads; /* CPU threads (0: one per core) */
} opts;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Uniform values in [-1, 1) from seed (splitmix64). */
static void fill_input(float *x, int64_t n, uint64_t s) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
}

/* The chain, op by op, as in the .graph file. */
static braid_graph *build(int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &n);
    braid_tensor y = braid_input(g, "y", BRAID_F32, 1, &n);
    braid_tensor z = braid_input(g, "z", BRAID_F32, 1, &n);
    braid_tensor half = braid_fill(g, BRAID_F32, 0, NULL, 0.5);
    braid_tensor t = braid_tanh(g, braid_add(g, braid_mul(g, x, y), z));
    braid_tensor acc = braid_add(g, braid_mul(g, t, braid_sigmoid(g, x)),
                                 braid_mul(g, y, half));
    braid_tensor out = braid_sub(g, acc, braid_exp(g, braid_neg(g, z)));
    braid_output(g, "out", out);
    return g;
}

/* Compiles g for the cpu (fusion on or off), runs it WARMUP + o->runs
 * times into out and returns the median run time in seconds (< 0 on
 * error, message printed). */
static double time_plan(const braid_graph *g, const opts *o, bool fuse,
                        const float *const in[3], float *out) {
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu";
    co.num_threads = o->threads;
    co.disable_passes = fuse ? 0 : BRAID_PASS_FUSE;
    braid_plan *plan = NULL;
    braid_exec *e = NULL;
    double *t = calloc((size_t)o->runs, sizeof *t), median = -1.0;
    size_t bytes = (size_t)o->n * sizeof(float);
    braid_input_binding ib[3] = {
        {"x", in[0], bytes}, {"y", in[1], bytes}, {"z", in[2], bytes}};
    braid_output_binding ob = {"out", out, bytes};
    if (!t || braid_compile(g, &co, &plan) != BRAID_OK ||
        braid_exec_new(plan, &e) != BRAID_OK) {
        fprintf(stderr, "elementwise_chain: %s\n",
                t ? braid_last_error() : "out of memory");
        goto done;
    }
    for (int r = 0; r < WARMUP + o->runs; r++) {
        double t0 = now_s();
        if (braid_run(e, ib, 3, &ob, 1) != BRAID_OK) {
            fprintf(stderr, "elementwise_chain: %s\n", braid_last_error());
            goto done;
        }
        if (r >= WARMUP) t[r - WARMUP] = now_s() - t0;
    }
    qsort(t, (size_t)o->runs, sizeof *t, cmp_double);
    median = t[o->runs / 2];
done:
    braid_exec_free(e);
    braid_plan_free(plan);
    free(t);
    return median;
}

/* Largest error of out against the chain in double; whether every element
 * is within tolerance. */
static bool check(const float *const in[3], const float *out, int64_t n,
                  const char *what) {
    double worst = 0.0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = in[0][i], y = in[1][i], z = in[2][i];
        double ref = tanh(x * y + z) / (1.0 + exp(-x)) + y * 0.5 - exp(-z);
        double err = fabs(out[i] - ref);
        if (!(err <= ATOL + RTOL * fabs(ref))) bad++;
        worst = err > worst ? err : worst;
    }
    printf("  %-8s max abs error %.3g vs the chain in double%s\n", what, worst,
           bad ? " — MISMATCH" : "");
    return bad == 0;
}

static bool parse_args(int argc, char **argv, opts *o) {
    o->n = (int64_t)1 << 24;
    o->runs = 15;
    o->threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--n") == 0 && v)
            o->n = atoll(v);
        else if (strcmp(argv[i], "--runs") == 0 && v)
            o->runs = atoi(v);
        else if (strcmp(argv[i], "--threads") == 0 && v)
            o->threads = atoi(v);
        else
            return false;
        i++;
    }
    return o->n > 0 && o->runs >= 10 && o->threads >= 0;
}

int main(int argc, char **argv) {
    opts o;
    if (!parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: elementwise_chain [--n N] [--runs R ≥ 10] "
                        "[--threads T]\n");
        return 2;
    }
    size_t bytes = (size_t)o.n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    float *fused = malloc(bytes), *unfused = malloc(bytes);
    braid_graph *g = build(o.n);
    if (!x || !y || !z || !fused || !unfused || !g ||
        braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "elementwise_chain: cannot set up: %s\n",
                g ? braid_graph_error(g) : "out of memory");
        return 1;
    }
    fill_input(x, o.n, 1);
    fill_input(y, o.n, 2);
    fill_input(z, o.n, 3);
    const float *const in[3] = {x, y, z};
    double tf = time_plan(g, &o, true, in, fused);
    double tu = time_plan(g, &o, false, in, unfused);
    if (tf < 0 || tu < 0) return 1;
    double gb = 16.0 * (double)o.n / 1e9; /* compulsory traffic */
    printf("elementwise chain, %lld f32 elements, median of %d runs:\n",
           (long long)o.n, o.runs);
    printf("  fused    %8.2f ms  %6.1f GB/s\n", tf * 1e3, gb / tf);
    printf("  unfused  %8.2f ms  %6.1f GB/s  (fusion: %.2fx faster)\n",
           tu * 1e3, gb / tu, tu / tf);
    bool ok =
        check(in, fused, o.n, "fused") & check(in, unfused, o.n, "unfused");
    printf("braid_fused_ms=%.3f braid_unfused_ms=%.3f n=%lld runs=%d\n",
           tf * 1e3, tu * 1e3, (long long)o.n, o.runs);
    braid_graph_free(g);
    free(x);
    free(y);
    free(z);
    free(fused);
    free(unfused);
    return ok ? 0 : 1;
}
