/* tools/cli_bench.c — `braid run` as a benchmark (--warmup, --iterations,
 * --duration, --no-transfers, --json, --cuda-graphs): warm-up runs, timed
 * runs, latency statistics (min, median, mean, p90, p99, max), throughput,
 * and the split of a run into host-to-device copies, compute and
 * device-to-host copies from a few profiled runs. Works on the CPU too
 * (no copies: the split is all compute); the statistics are cli_stats.c.
 * docs/cli.md, "Benchmarking". */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Profiled runs for the split: enough to average noise, few enough to
 * stay cheap next to the timed runs. */
#define SPLIT_RUNS 20

static bool parse_count(const char *s, long lo, long hi, long *out) {
    if (!s || !*s || *s == '-' || *s == '+') return false;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

int cli_bench_option(cli_bench_options *b, const char *name,
                     const char *value) {
    long v = 0;
    if (!strcmp(name, "--warmup")) {
        if (!parse_count(value, 0, 1000000, &v))
            return cli_usage_error("--warmup expects 0..1000000 runs, got "
                                   "'%s'",
                                   value);
        b->warmup = (int)v;
    } else if (!strcmp(name, "--iterations")) {
        if (!parse_count(value, 1, 100000000, &v))
            return cli_usage_error("--iterations expects 1..100000000, got "
                                   "'%s'",
                                   value);
        b->iterations = v;
    } else if (!strcmp(name, "--duration")) {
        char *end = NULL;
        errno = 0;
        double s = strtod(value, &end);
        if (errno || end == value || *end || !(s > 0) || s > 86400)
            return cli_usage_error("--duration expects seconds in (0, "
                                   "86400], got '%s'",
                                   value);
        b->duration = s;
    } else if (!strcmp(name, "--cuda-graphs")) {
        if (strcmp(value, "on") && strcmp(value, "off"))
            return cli_usage_error("--cuda-graphs expects on or off, got "
                                   "'%s'",
                                   value);
        b->cuda_graphs = !strcmp(value, "on");
    }
    return CLI_EXIT_OK;
}

int cli_bench_check(cli_bench_options *b, bool repeat_given, bool profiling) {
    b->on = b->warmup >= 0 || b->iterations || b->duration > 0 ||
            b->no_transfers || b->json;
    if (!b->on) return CLI_EXIT_OK;
    if (b->iterations && b->duration > 0)
        return cli_usage_error("--iterations and --duration: give one");
    if (repeat_given)
        return cli_usage_error("--repeat and the benchmark options "
                               "(--warmup, --iterations, --duration, "
                               "--no-transfers, --json): give one or the "
                               "other");
    if (profiling)
        return cli_usage_error("--profile/--trace and the benchmark "
                               "options: the benchmark already prints the "
                               "time split; profile separately");
    if (b->warmup < 0) b->warmup = 3;
    if (!b->iterations && !(b->duration > 0)) b->iterations = 10;
    return CLI_EXIT_OK;
}

void cli_bench_apply_env(const cli_bench_options *b) {
    /* read by the CUDA executor when it is created (docs/cuda.md) */
    if (b->cuda_graphs >= 0)
        setenv("BRAID_CUDA_GRAPHS", b->cuda_graphs ? "1" : "0", 1);
}

/* ---- the runs ------------------------------------------------------------ */

/* Times runs into *times (grown as needed): b->iterations of them, or as
 * many as fit in b->duration seconds (at least one). */
static bool timed_runs(braid_exec *e, const cli_bench_bindings *bb,
                       const cli_bench_options *b, double **times, size_t *n,
                       double *wall) {
    size_t cap = b->iterations ? (size_t)b->iterations : 1024;
    *times = malloc(cap * sizeof **times);
    *n = 0;
    if (!*times) return cli_err("out of memory for the run times");
    double start = cli_now();
    for (;;) {
        if (b->iterations && *n >= (size_t)b->iterations) break;
        if (!b->iterations && *n > 0 && cli_now() - start >= b->duration) break;
        if (*n == cap) {
            double *more = realloc(*times, 2 * cap * sizeof **times);
            if (!more) return cli_err("out of memory for the run times");
            *times = more;
            cap *= 2;
        }
        double t0 = cli_now();
        if (braid_run(e, bb->in, bb->nin, bb->out, bb->nout) != BRAID_OK)
            return cli_err("run failed: %s", braid_last_error());
        (*times)[(*n)++] = cli_now() - t0;
    }
    *wall = cli_now() - start;
    return true;
}

/* The mean per run of host-to-device copies, device-to-host copies and
 * everything else (compute, device-to-device copies), summed over the
 * tracks, from SPLIT_RUNS profiled runs. */
static bool split_runs(braid_exec *e, const cli_bench_bindings *bb,
                       cli_bench_result *r) {
    if (braid_exec_set_profiling(e, true) != BRAID_OK)
        return cli_err("cannot profile: %s", braid_last_error());
    bool ok = true;
    for (int k = 0; ok && k < SPLIT_RUNS; k++)
        if (braid_run(e, bb->in, bb->nin, bb->out, bb->nout) != BRAID_OK)
            ok = cli_err("profiled run failed: %s", braid_last_error());
    braid_profile *pr = NULL;
    if (ok && braid_exec_profile(e, &pr) != BRAID_OK)
        ok = cli_err("profile: %s", braid_last_error());
    for (uint32_t i = 0; ok && i < pr->nnodes; i++) {
        const braid_profile_node *nd = &pr->nodes[i];
        double ms = nd->total_ms / (double)(pr->runs ? pr->runs : 1);
        if (!strcmp(nd->op, "copy h2d"))
            r->h2d_ms += ms;
        else if (!strcmp(nd->op, "copy d2h"))
            r->d2h_ms += ms;
        else
            r->compute_ms += ms;
    }
    r->split_runs = ok ? SPLIT_RUNS : 0;
    braid_profile_free(pr);
    braid_exec_set_profiling(e, false);
    return ok;
}

bool cli_bench_run(braid_exec *e, const cli_bench_bindings *bb,
                   const cli_bench_options *b, cli_bench_result *r) {
    memset(r, 0, sizeof *r);
    for (int k = 0; k < b->warmup; k++)
        if (braid_run(e, bb->in, bb->nin, bb->out, bb->nout) != BRAID_OK)
            return cli_err("warm-up run failed: %s", braid_last_error());
    double *times = NULL;
    size_t n = 0;
    bool ok = timed_runs(e, bb, b, &times, &n, &r->wall_s);
    if (ok) {
        cli_bench_stats(times, n, r);
        r->throughput = r->wall_s > 0 ? (double)n / r->wall_s : 0;
    }
    free(times);
    return ok && split_runs(e, bb, r);
}

/* ---- printing ------------------------------------------------------------ */

void cli_bench_print(FILE *out, const cli_bench_options *b,
                     const cli_bench_result *r) {
    fprintf(out, "benchmark: %zu run%s in %.3f s after %d warm-up run%s%s\n",
            r->runs, r->runs == 1 ? "" : "s", r->wall_s, b->warmup,
            b->warmup == 1 ? "" : "s",
            r->device >= 0 ? " (inputs and outputs in GPU memory)" : "");
    fprintf(out,
            "latency: min %.3f ms, median %.3f ms, mean %.3f ms, p90 %.3f ms, "
            "p99 %.3f ms, max %.3f ms\n",
            r->min * 1e3, r->median * 1e3, r->mean * 1e3, r->p90 * 1e3,
            r->p99 * 1e3, r->max * 1e3);
    fprintf(out, "throughput: %.1f runs/s\n", r->throughput);
    fprintf(out,
            "split (mean busy time per run over %zu profiled runs): h2d "
            "%.3f ms, compute %.3f ms, d2h %.3f ms\n",
            r->split_runs, r->h2d_ms, r->compute_ms, r->d2h_ms);
}

void cli_bench_print_json(FILE *out, const char *file,
                          const cli_bench_options *b,
                          const cli_bench_result *r) {
    fprintf(out, "{\n  \"file\": ");
    cli_json_string(out, file);
    fprintf(out,
            ",\n  \"warmup\": %d,\n  \"runs\": %zu,\n  \"wall_s\": %.9g,\n"
            "  \"transfers\": %s,\n  \"cuda_graphs\": %s,\n",
            b->warmup, r->runs, r->wall_s, r->device >= 0 ? "false" : "true",
            b->cuda_graphs < 0 ? "null"
            : b->cuda_graphs   ? "true"
                               : "false");
    fprintf(out,
            "  \"latency_ms\": {\"min\": %.9g, \"median\": %.9g, \"mean\": "
            "%.9g, \"p90\": %.9g, \"p99\": %.9g, \"max\": %.9g},\n",
            r->min * 1e3, r->median * 1e3, r->mean * 1e3, r->p90 * 1e3,
            r->p99 * 1e3, r->max * 1e3);
    fprintf(out, "  \"throughput_per_s\": %.9g,\n", r->throughput);
    fprintf(out,
            "  \"split_ms\": {\"profiled_runs\": %zu, \"h2d\": %.9g, "
            "\"compute\": %.9g, \"d2h\": %.9g}\n}\n",
            r->split_runs, r->h2d_ms, r->compute_ms, r->d2h_ms);
}

/* ---- --no-transfers: inputs and outputs in device memory ----------------- */

/* The index N of the first cuda:N the plan runs nodes on, or -1. */
static int first_gpu(const braid_plan *plan) {
    braid_plan_summary s;
    if (braid_plan_summary_get(plan, &s) != BRAID_OK) return -1;
    for (uint32_t i = 0; i < s.devices; i++) {
        braid_plan_device_info d;
        int n = -1;
        if (braid_plan_device_get(plan, i, &d) == BRAID_OK && d.nodes > 0 &&
            sscanf(d.name, "cuda:%d", &n) == 1)
            return n;
    }
    return -1;
}

/* Moves one binding's bytes to a fresh device buffer (copying them when
 * upload); *host keeps the caller's pointer. */
static bool to_device(int dev, const void **data, size_t bytes, void **host,
                      bool upload) {
    void *d = braid_device_alloc(dev, bytes);
    if (!d) return cli_err("--no-transfers: %s", braid_last_error());
    if (upload && braid_memcpy(d, *data, bytes) != BRAID_OK) {
        braid_device_free(d);
        return cli_err("--no-transfers: %s", braid_last_error());
    }
    *host = (void *)*data;
    *data = d;
    return true;
}

bool cli_bench_to_device(const braid_plan *plan, cli_bench_bindings *bb) {
    bb->device = first_gpu(plan);
    if (bb->device < 0) {
        fprintf(stderr, "braid: --no-transfers: the plan runs nothing on a "
                        "GPU, so there is nothing to transfer: inputs and "
                        "outputs stay in host memory\n");
        return true;
    }
    bb->host_in = calloc(bb->nin ? bb->nin : 1, sizeof *bb->host_in);
    bb->host_out = calloc(bb->nout ? bb->nout : 1, sizeof *bb->host_out);
    if (!bb->host_in || !bb->host_out) return cli_err("out of memory");
    for (uint32_t i = 0; i < bb->nin; i++)
        if (!to_device(bb->device, &bb->in[i].data, bb->in[i].bytes,
                       &bb->host_in[i], true))
            return false;
    for (uint32_t i = 0; i < bb->nout; i++) {
        const void *p = bb->out[i].data;
        if (!to_device(bb->device, &p, bb->out[i].bytes, &bb->host_out[i],
                       false))
            return false;
        bb->out[i].data = (void *)p;
    }
    return true;
}

bool cli_bench_from_device(cli_bench_bindings *bb, bool copy_back) {
    bool ok = true;
    for (uint32_t i = 0; bb->host_out && i < bb->nout; i++) {
        if (!bb->host_out[i]) continue;
        if (ok && copy_back &&
            braid_memcpy(bb->host_out[i], bb->out[i].data, bb->out[i].bytes) !=
                BRAID_OK)
            ok = cli_err("--no-transfers: %s", braid_last_error());
        braid_device_free(bb->out[i].data);
        bb->out[i].data = bb->host_out[i];
    }
    for (uint32_t i = 0; bb->host_in && i < bb->nin; i++) {
        if (!bb->host_in[i]) continue;
        braid_device_free((void *)bb->in[i].data);
        bb->in[i].data = bb->host_in[i];
    }
    free(bb->host_in);
    free(bb->host_out);
    bb->host_in = bb->host_out = NULL;
    return ok;
}
