/* bench/plan_first_result.c — from braid_plan_load of a plan file to its
 * first result, step by step (issue 14: GPT-2 small's plan, load to first
 * result on the GPU at most 0.3 s).
 *
 * usage: plan_first_result FILE.plan [--warm-context] [--runs N]
 *
 * In one fresh process: braid_plan_load (read, checksums, graph, plan,
 * device check), braid_exec_new (on a GPU: arenas, streams, kernels from
 * the stored CUBINs, constants uploaded, cuDNN/cuBLASLt choices), the
 * first braid_run and then N more (median), every input filled with
 * values valid for any op (floats in [-1, 1), integers in [0, 100): ids
 * inside any embedding table), every output read back to host memory.
 * --warm-context creates the CUDA context first (cudaFree(0) on device 0,
 * timed apart), as a process that already uses the GPU has it; without
 * it the context's creation falls into whichever step first touches the
 * GPU. Host clock (CLOCK_MONOTONIC) around each call.
 *
 * Prints the steps (and on a GPU the executor log's line of its creation
 * steps) and, last, "RESULT plan_first_result context_ms=…
 * load_ms=… exec_ms=… first_run_ms=… total_ms=… run_ms=…" (total: load +
 * executor + first run). Exit status 1 on any error. */
#define _POSIX_C_SOURCE 200809L
#include "bench/bench.h"
#include "runtime/exec_impl.h"

#include <string.h>

static void fill(void *p, braid_dtype t, int64_t n, size_t bytes,
                 uint64_t seed) {
    memset(p, 0, bytes); /* dtypes not drawn below: zeros */
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
        switch (t) {
        case BRAID_F32: ((float *)p)[i] = (float)(2 * u - 1); break;
        case BRAID_F64: ((double *)p)[i] = 2 * u - 1; break;
        case BRAID_I32: ((int32_t *)p)[i] = (int32_t)(u * 100); break;
        case BRAID_I64: ((int64_t *)p)[i] = (int64_t)(u * 100); break;
        default: return;
        }
    }
}

int main(int argc, char **argv) {
    const char *path = NULL;
    bool warm = false;
    int runs = 10;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--warm-context") == 0)
            warm = true;
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            bn_die("usage: plan_first_result FILE.plan [--warm-context] "
                   "[--runs N]");
    }
    if (!path || runs < 1)
        bn_die("usage: plan_first_result FILE.plan [--warm-context] "
               "[--runs N]");
    double ctx_ms = 0;
    if (warm) {
#ifdef BRAID_HAVE_CUDA
        double t = bn_now();
        if (cudaFree(0) != cudaSuccess)
            bn_die("--warm-context: no CUDA context: %s",
                   cudaGetErrorString(cudaGetLastError()));
        ctx_ms = (bn_now() - t) * 1e3;
        printf("context: %.3f ms (cudaFree(0) on device 0)\n", ctx_ms);
#else
        bn_die("--warm-context: built without CUDA");
#endif
    }
    double t0 = bn_now();
    braid_plan *p = NULL;
    if (braid_plan_load(path, NULL, &p) != BRAID_OK)
        bn_die("braid_plan_load: %s", braid_last_error());
    double t1 = bn_now();
    braid_exec *e = NULL;
    if (braid_exec_new(p, &e) != BRAID_OK)
        bn_die("braid_exec_new: %s", braid_last_error());
    double t2 = bn_now();

    const braid_graph *g = braid_plan_graph(p);
    uint32_t nin = braid_graph_input_count(g), nout = braid_graph_output_count(g);
    braid_input_binding *in = calloc(nin ? nin : 1, sizeof *in);
    braid_output_binding *out = calloc(nout ? nout : 1, sizeof *out);
    if (!in || !out) bn_die("out of memory");
    size_t bytes_out = 0;
    for (uint32_t i = 0; i < nin; i++) {
        braid_tensor t;
        braid_dtype dt;
        braid_graph_input(g, i, &in[i].name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        int64_t n = braid_tensor_numel(g, t);
        in[i].bytes = (size_t)n * braid_dtype_size(dt);
        void *d = bn_malloc(in[i].bytes ? in[i].bytes : 1);
        fill(d, dt, n, in[i].bytes, 1 + i);
        in[i].data = d;
    }
    for (uint32_t i = 0; i < nout; i++) {
        braid_tensor t;
        braid_dtype dt;
        braid_graph_output(g, i, &out[i].name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        out[i].bytes = (size_t)braid_tensor_numel(g, t) * braid_dtype_size(dt);
        out[i].data = bn_malloc(out[i].bytes ? out[i].bytes : 1);
        bytes_out += out[i].bytes;
    }
    double t3 = bn_now();
    if (braid_run(e, in, nin, out, nout) != BRAID_OK)
        bn_die("braid_run: %s", braid_last_error());
    double t4 = bn_now();
    double *rt = bn_malloc((size_t)runs * sizeof *rt);
    for (int r = 0; r < runs; r++) {
        double a = bn_now();
        if (braid_run(e, in, nin, out, nout) != BRAID_OK)
            bn_die("braid_run: %s", braid_last_error());
        rt[r] = (bn_now() - a) * 1e3;
    }
    double load = (t1 - t0) * 1e3, ex = (t2 - t1) * 1e3, first = (t4 - t3) * 1e3;
    printf("plan: %s (%u inputs, %u outputs, %zu output bytes)\n", path, nin,
           nout, bytes_out);
    printf("braid_plan_load: %.3f ms\nbraid_exec_new: %.3f ms\n"
           "first braid_run: %.3f ms\nmedian of %d more runs: %.3f ms\n",
           load, ex, first, runs, bn_median(rt, runs));
#ifdef BRAID_HAVE_CUDA
    { /* the executor's own account of its creation, step by step */
        const br_cuda *c = br_exec_cuda(e);
        if (c && br_cuda_created(c)[0])
            printf("executor log: %s\n", br_cuda_created(c));
        if (c && getenv("BRAID_FIRST_RESULT_LOG")) /* the whole log */
            printf("---- executor log\n%s----\n", br_cuda_log(c));
        const char *l = c ? strstr(br_cuda_log(c), "constants:") : NULL;
        if (l) printf("executor log: %.*s\n", (int)strcspn(l, "\n"), l);
    }
#endif
    printf("RESULT plan_first_result context_ms=%.3f load_ms=%.3f exec_ms=%.3f "
           "first_run_ms=%.3f total_ms=%.3f run_ms=%.3f\n",
           ctx_ms, load, ex, first, load + ex + first, bn_median(rt, runs));
    for (uint32_t i = 0; i < nin; i++) free((void *)in[i].data);
    for (uint32_t i = 0; i < nout; i++) free(out[i].data);
    free(in);
    free(out);
    free(rt);
    braid_exec_free(e);
    braid_plan_free(p);
    return 0;
}
