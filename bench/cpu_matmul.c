/* bench/cpu_matmul.c — a matmul node on the CPU against OpenBLAS called
 * directly: C = A·B, f32, N×N, the same OpenBLAS braid links, the same
 * threads. braid's figure is braid_run of a one-matmul plan (inputs bound
 * in place, output written into the caller's buffer), so what it adds over
 * cblas_sgemm is the executor's own cost per run.
 *
 * usage: cpu_matmul [--n N] [--runs R]
 * Prints a human summary and, last, one key=value line that
 * bench/run_cpu.sh reads. Exit status 1 on any error or mismatch. */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Uniform values in [-1, 1) from seed (splitmix64). */
static void fill(float *x, size_t n, uint64_t s) {
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
}

static int fail(const char *what, braid_status s) {
    fprintf(stderr, "ERROR cpu_matmul: %s: %s: %s\n", what,
            braid_status_name(s), braid_last_error());
    return 1;
}

int main(int argc, char **argv) {
    int64_t n = 2048;
    int runs = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0) n = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
    }
    if (n < 16 || n > 16384 || runs < 3 || runs > 1000) {
        fprintf(stderr, "usage: cpu_matmul [--n 16..16384] [--runs 3..1000]\n");
        return 2;
    }
    size_t nn = (size_t)(n * n);
    float *a = malloc(nn * 4), *b = malloc(nn * 4), *c_braid = malloc(nn * 4),
          *c_blas = malloc(nn * 4);
    double *t_braid = malloc(sizeof(double) * (size_t)runs),
           *t_blas = malloc(sizeof(double) * (size_t)runs);
    if (!a || !b || !c_braid || !c_blas || !t_braid || !t_blas) {
        fprintf(stderr, "ERROR cpu_matmul: out of memory\n");
        return 1;
    }
    fill(a, nn, 1);
    fill(b, nn, 2);

    braid_graph *g = braid_graph_new(NULL);
    int64_t dims[2] = {n, n};
    braid_tensor x = braid_input(g, "a", BRAID_F32, 2, dims);
    braid_tensor y = braid_input(g, "b", BRAID_F32, 2, dims);
    braid_output(g, "c", braid_matmul(g, x, y, 0));
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    braid_status s = braid_compile(g, &o, &p);
    if (s != BRAID_OK) return fail("braid_compile", s);
    if ((s = braid_exec_new(p, &e)) != BRAID_OK)
        return fail("braid_exec_new", s);
    braid_input_binding in[2] = {{"a", a, nn * 4}, {"b", b, nn * 4}};
    braid_output_binding out = {"c", c_braid, nn * 4};

    /* one warm-up each, then alternate so drift hits both alike */
    if ((s = braid_run(e, in, 2, &out, 1)) != BRAID_OK)
        return fail("braid_run", s);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n,
                (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c_blas, (int)n);
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        if ((s = braid_run(e, in, 2, &out, 1)) != BRAID_OK)
            return fail("braid_run", s);
        double t1 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n,
                    (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c_blas, (int)n);
        double t2 = now_s();
        t_braid[r] = (t1 - t0) * 1e3;
        t_blas[r] = (t2 - t1) * 1e3;
    }
    /* Both call the same sgemm: the results must agree to rounding. */
    double worst = 0;
    for (size_t i = 0; i < nn; i++) {
        double d = fabs((double)c_braid[i] - (double)c_blas[i]);
        double tol = 1e-4 * (1 + fabs((double)c_blas[i]));
        if (!(d <= tol)) {
            fprintf(stderr,
                    "ERROR cpu_matmul: element %zu: braid %g, OpenBLAS %g\n",
                    i, (double)c_braid[i], (double)c_blas[i]);
            return 1;
        }
        if (d > worst) worst = d;
    }
    double mb = median(t_braid, runs), mo = median(t_blas, runs);
    double gflop = 2.0 * (double)n * (double)n * (double)n / 1e9;
    printf("matmul f32 %lldx%lld, cpu, %d runs (median): braid %.2f ms "
           "(%.1f GFLOP/s), cblas_sgemm %.2f ms (%.1f GFLOP/s); largest "
           "difference %.3g\n",
           (long long)n, (long long)n, runs, mb, gflop / (mb / 1e3), mo,
           gflop / (mo / 1e3), worst);
    printf("n=%lld braid_ms=%.3f openblas_ms=%.3f speed_ratio=%.3f\n",
           (long long)n, mb, mo, mo / mb);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(a), free(b), free(c_braid), free(c_blas), free(t_braid), free(t_blas);
    return 0;
}
