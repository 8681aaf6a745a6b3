/* tools/cli_stats.c — the run-time statistics of `braid run` (benchmark
 * mode): a mean that neither overflows nor drifts, and nearest-rank
 * percentiles. No dependency on the rest of the tool, so tests link it
 * alone (test_cli_bench). */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cli_sum_add(cli_sum *s, double v) {
    double t = s->sum + v;
    s->c += fabs(s->sum) >= fabs(v) ? (s->sum - t) + v : (v - t) + s->sum;
    s->sum = t;
}

double cli_sum_value(const cli_sum *s) {
    return s->sum + s->c;
}

double cli_mean(const double *x, size_t n) {
    /* compensated sum of x/n: no overflow for finite inputs (each term is
     * scaled first) and no drift over millions of runs */
    if (n == 0) return 0;
    cli_sum acc = {0.0, 0.0};
    for (size_t i = 0; i < n; i++)
        cli_sum_add(&acc, x[i] / (double)n);
    return cli_sum_value(&acc);
}

/* Nearest-rank percentile q (0 < q ≤ 1) of the sorted x[0..n). */
static double percentile(const double *sorted, size_t n, double q) {
    size_t rank = (size_t)ceil(q * (double)n);
    return sorted[rank ? rank - 1 : 0];
}

void cli_bench_stats(const double *times, size_t n, cli_bench_result *r) {
    double *s = malloc((n ? n : 1) * sizeof *s);
    r->runs = n;
    r->mean = cli_mean(times, n);
    if (!s || n == 0) {
        r->min = r->median = r->p90 = r->p99 = r->max = r->mean;
        free(s);
        return;
    }
    memcpy(s, times, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    r->min = s[0];
    r->max = s[n - 1];
    r->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    r->p90 = percentile(s, n, 0.90);
    r->p99 = percentile(s, n, 0.99);
    free(s);
}
