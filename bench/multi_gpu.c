/* bench/multi_gpu.c — two GPUs: braid against the direct CUDA / NCCL calls
 * (docs/multi-gpu.md, "What is measured").
 *
 *   peer_copy:  1 GiB f32 made on cuda:0 (random_uniform) and summed on
 *               cuda:1, so the plan's cuda:0 → cuda:1 copy node moves it;
 *               the same plan with the sum on cuda:0 (no copy) is timed
 *               too and the copy's time is the difference (fusion off in
 *               both, so both materialise the tensor). Against one
 *               cudaMemcpyPeerAsync of 1 GiB timed with CUDA events.
 *   all_reduce: 256 MiB f32 per GPU made on each GPU, all-reduced (sum)
 *               by a braid plan, each result summed to a scalar; the same
 *               plan without the all_reduce is subtracted. Against
 *               ncclAllReduce on the same dlopen'd NCCL (ncclCommInitAll,
 *               one group per call). Bus bandwidth = 2·(n−1)/n · bytes / t.
 *   sharded_mlp: fp32 MLP, batch 8192, 4 × (4096² matmul + bias + GELU),
 *               weights as constants, input and output in pinned host
 *               memory: one plan on cuda:0, one sharded over cuda:0 and
 *               cuda:1 (shards = 2); throughput ratio (target ≥ 1.8).
 *
 * Times: host clock around braid_run (synchronous), median of the timed
 * runs after warm-up runs. Prints "RESULT <name> key=value ..." lines;
 * without two GPUs (or without CUDA in the build) it prints one RESULT
 * line saying it skipped and exits 0. Exit status 1 on an error.
 * usage: multi_gpu [--quick]   (--quick: smaller sizes, for a smoke test) */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"

#ifdef BRAID_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "runtime/cuda/nccl.h"

static bool quick;

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

static int fail_braid(const char *what) {
    printf("RESULT error where=%s message=\"%s\"\n", what, braid_last_error());
    return 1;
}

static int fail_cuda(const char *what, cudaError_t e) {
    printf("RESULT error where=%s message=\"%s\"\n", what,
           cudaGetErrorString(e));
    return 1;
}

#define CK(call)                                                            \
    do {                                                                    \
        cudaError_t e_ = (call);                                            \
        if (e_ != cudaSuccess) return fail_cuda(#call, e_);                 \
    } while (0)

/* ---- timing braid plans --------------------------------------------------- */

/* Compiles g for devices (fusion off when nofuse, sharded when shards >
 * 1) and times braid_run: median seconds of runs after warm runs. out
 * receives the last run's outputs (bound by name). */
static int time_plan(const braid_graph *g, const char *devices, bool nofuse,
                     int shards, const braid_input_binding *in, size_t nin,
                     const braid_output_binding *out, size_t nout, int warm,
                     int runs, double *secs) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.shards = shards;
    o.shard_inputs = shards > 1 ? "x" : NULL;
    if (nofuse) o.disable_passes = BRAID_PASS_FUSE;
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    if (braid_compile(g, &o, &p) != BRAID_OK) return fail_braid("compile");
    if (braid_exec_new(p, &e) != BRAID_OK) {
        braid_plan_free(p);
        return fail_braid("exec_new");
    }
    double t[64];
    int rc = 0;
    for (int i = 0; i < warm + runs && rc == 0; i++) {
        double t0 = now_s();
        if (braid_run(e, in, nin, out, nout) != BRAID_OK)
            rc = fail_braid("run");
        if (i >= warm) t[i - warm] = now_s() - t0;
    }
    braid_exec_free(e);
    braid_plan_free(p);
    if (rc == 0) *secs = median(t, runs);
    return rc;
}

/* ---- peer copy ---------------------------------------------------------------- */

/* random_uniform [n] on cuda:0, summed on dev_sum: a scalar output "s". */
static braid_graph *copy_graph(int64_t n, const char *dev_sum) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor r =
        braid_random_uniform(g, BRAID_F32, 1, &n, 1, -1, 1);
    braid_set_device(g, r, "cuda:0");
    braid_tensor s = braid_sum(g, r, 0, NULL, false);
    braid_set_device(g, s, dev_sum);
    braid_output(g, "s", s);
    return g;
}

static int direct_peer(size_t bytes, double *secs) {
    void *a = NULL, *b = NULL;
    int can01 = 0, can10 = 0;
    CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(b, 0, bytes));
    if (can10) {
        cudaError_t e = cudaDeviceEnablePeerAccess(0, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
            return fail_cuda("cudaDeviceEnablePeerAccess(1 -> 0)", e);
        (void)cudaGetLastError();
    }
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&a, bytes));
    CK(cudaMemset(a, 1, bytes));
    if (can01) {
        cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
            return fail_cuda("cudaDeviceEnablePeerAccess(0 -> 1)", e);
        (void)cudaGetLastError();
    }
    cudaStream_t st;
    cudaEvent_t e0, e1;
    CK(cudaStreamCreate(&st));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double t[10];
    for (int i = 0; i < 2 + 10; i++) {
        CK(cudaEventRecord(e0, st));
        CK(cudaMemcpyPeerAsync(b, 1, a, 0, bytes, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 2) t[i - 2] = ms * 1e-3;
    }
    *secs = median(t, 10);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(st));
    CK(cudaFree(a));
    CK(cudaSetDevice(1));
    CK(cudaFree(b));
    CK(cudaSetDevice(0));
    printf("# peer access cuda:0->cuda:1 %s, cuda:1->cuda:0 %s\n",
           can01 ? "yes" : "no", can10 ? "yes" : "no");
    return 0;
}

static int bench_peer_copy(void) {
    int64_t n = quick ? (int64_t)1 << 24 : (int64_t)1 << 28; /* 1 GiB f32 */
    size_t bytes = (size_t)n * sizeof(float);
    braid_graph *gc = copy_graph(n, "cuda:1"), *gn = copy_graph(n, "cuda:0");
    if (braid_graph_status(gc) || braid_graph_status(gn)) {
        printf("RESULT error where=copy_graph message=\"%s\"\n",
               braid_graph_error(gc));
        return 1;
    }
    float s = 0;
    braid_output_binding out = {"s", &s, sizeof s};
    double with = 0, without = 0, direct = 0;
    int rc = time_plan(gc, "cpu,cuda:0,cuda:1", true, 0, NULL, 0, &out, 1, 2,
                       10, &with);
    if (rc == 0)
        rc = time_plan(gn, "cpu,cuda:0,cuda:1", true, 0, NULL, 0, &out, 1, 2,
                       10, &without);
    braid_graph_free(gc);
    braid_graph_free(gn);
    if (rc == 0) rc = direct_peer(bytes, &direct);
    if (rc) return rc;
    double copy = with - without;
    printf("RESULT peer_copy bytes=%zu braid_gbps=%.1f direct_gbps=%.1f "
           "braid_plan_ms=%.3f braid_nocopy_ms=%.3f direct_ms=%.3f "
           "braid_plan_gbps=%.1f\n",
           bytes, copy > 0 ? bytes / copy * 1e-9 : 0.0, bytes / direct * 1e-9,
           with * 1e3, without * 1e3, direct * 1e3, bytes / with * 1e-9);
    return 0;
}

/* ---- all_reduce ------------------------------------------------------------------ */

/* x_r = random_uniform [n] on cuda:r; with all_reduce (sum) when coll;
 * outputs "s0", "s1": the sums of each GPU's result. */
static braid_graph *reduce_graph(int64_t n, bool coll) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x[2], y[2];
    for (int r = 0; r < 2; r++) {
        x[r] = braid_random_uniform(g, BRAID_F32, 1, &n, 10 + (uint64_t)r, -1,
                                    1);
        braid_set_device(g, x[r], r ? "cuda:1" : "cuda:0");
        y[r] = x[r];
    }
    if (coll) braid_all_reduce(g, 2, x, BRAID_REDUCE_SUM, y);
    for (int r = 0; r < 2; r++) {
        braid_tensor s = braid_sum(g, y[r], 0, NULL, false);
        braid_set_device(g, s, r ? "cuda:1" : "cuda:0");
        braid_output(g, r ? "s1" : "s0", s);
    }
    return g;
}

static int nccl_ck(const br_nccl_api *a, const char *call, br_nccl_result r) {
    if (r == 0) return 0;
    printf("RESULT error where=%s message=\"%s\"\n", call,
           a->GetErrorString ? a->GetErrorString(r) : "?");
    return 1;
}

#define NCK(call)                                                           \
    do {                                                                    \
        if (nccl_ck(a, #call, (call))) return 1;                            \
    } while (0)

static int direct_allreduce(size_t count, double *secs) {
    const br_nccl_api *a = br_nccl_load("multi_gpu");
    if (!a) return fail_braid("nccl");
    int devs[2] = {0, 1};
    br_nccl_comm comm[2] = {NULL, NULL};
    NCK(a->CommInitAll(comm, 2, devs));
    void *buf[2][2];
    cudaStream_t st[2];
    for (int r = 0; r < 2; r++) {
        CK(cudaSetDevice(r));
        CK(cudaMalloc(&buf[r][0], count * sizeof(float)));
        CK(cudaMalloc(&buf[r][1], count * sizeof(float)));
        CK(cudaMemset(buf[r][0], 0, count * sizeof(float)));
        CK(cudaStreamCreate(&st[r]));
        CK(cudaDeviceSynchronize());
    }
    double t[20];
    for (int i = 0; i < 3 + 20; i++) {
        double t0 = now_s();
        NCK(a->GroupStart());
        for (int r = 0; r < 2; r++)
            NCK(a->AllReduce(buf[r][0], buf[r][1], count, BR_NCCL_FLOAT32,
                             BR_NCCL_SUM, comm[r], (br_nccl_stream)st[r]));
        NCK(a->GroupEnd());
        for (int r = 0; r < 2; r++) CK(cudaStreamSynchronize(st[r]));
        if (i >= 3) t[i - 3] = now_s() - t0;
    }
    *secs = median(t, 20);
    for (int r = 0; r < 2; r++) {
        CK(cudaSetDevice(r));
        CK(cudaStreamDestroy(st[r]));
        CK(cudaFree(buf[r][0]));
        CK(cudaFree(buf[r][1]));
        NCK(a->CommDestroy(comm[r]));
    }
    CK(cudaSetDevice(0));
    printf("# NCCL %d from %s\n", a->version, a->path);
    return 0;
}

static int bench_all_reduce(void) {
    if (!br_nccl_load("multi_gpu")) {
        printf("RESULT all_reduce skipped=\"%s\"\n", braid_last_error());
        return 0;
    }
    int64_t n = quick ? (int64_t)1 << 20 : (int64_t)1 << 26; /* 256 MiB */
    size_t bytes = (size_t)n * sizeof(float);
    braid_graph *gc = reduce_graph(n, true), *gn = reduce_graph(n, false);
    if (braid_graph_status(gc) || braid_graph_status(gn)) {
        printf("RESULT error where=reduce_graph message=\"%s\"\n",
               braid_graph_error(gc));
        return 1;
    }
    float s[2];
    braid_output_binding out[2] = {{"s0", &s[0], sizeof(float)},
                                   {"s1", &s[1], sizeof(float)}};
    double with = 0, without = 0, direct = 0;
    int rc = time_plan(gc, "cpu,cuda:0,cuda:1", true, 0, NULL, 0, out, 2, 3,
                       20, &with);
    /* both GPUs hold the same sum: NCCL really reduced */
    if (rc == 0 && fabsf(s[0] - s[1]) > 1e-3f * (1 + fabsf(s[0]))) {
        printf("RESULT error where=all_reduce message=\"sums differ: %g "
               "vs %g\"\n",
               s[0], s[1]);
        rc = 1;
    }
    if (rc == 0)
        rc = time_plan(gn, "cpu,cuda:0,cuda:1", true, 0, NULL, 0, out, 2, 3,
                       20, &without);
    braid_graph_free(gc);
    braid_graph_free(gn);
    if (rc == 0) rc = direct_allreduce((size_t)n, &direct);
    if (rc) return rc;
    double coll = with - without, f = 2.0 * (2 - 1) / 2; /* 2(n-1)/n */
    printf("RESULT all_reduce bytes=%zu braid_busbw_gbps=%.1f "
           "nccl_busbw_gbps=%.1f braid_plan_ms=%.3f braid_nocoll_ms=%.3f "
           "nccl_ms=%.3f\n",
           bytes, coll > 0 ? f * bytes / coll * 1e-9 : 0.0,
           f * bytes / direct * 1e-9, with * 1e3, without * 1e3,
           direct * 1e3);
    return 0;
}

/* ---- sharded MLP -------------------------------------------------------------------- */

static void fill_uniform(float *x, int64_t n, uint64_t s, float scale) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        x[i] = scale * (float)((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
}

static braid_graph *mlp_graph(int64_t batch, int64_t f, int layers) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {batch, f}, wd[2] = {f, f};
    braid_tensor h = braid_input(g, "x", BRAID_F32, 2, xd);
    float *w = malloc((size_t)(f * f) * sizeof *w);
    float *b = malloc((size_t)f * sizeof *b);
    if (!w || !b) {
        free(w);
        free(b);
        braid_graph_free(g);
        return NULL;
    }
    for (int l = 0; l < layers; l++) {
        fill_uniform(w, f * f, 100 + (uint64_t)l, 1.0f / sqrtf((float)f));
        fill_uniform(b, f, 200 + (uint64_t)l, 0.1f);
        braid_tensor wt = braid_constant(g, BRAID_F32, 2, wd, w);
        braid_tensor bt = braid_constant(g, BRAID_F32, 1, &f, b);
        h = braid_gelu(g, braid_add(g, braid_matmul(g, h, wt, 0), bt));
    }
    free(w);
    free(b);
    braid_output(g, "y", h);
    return g;
}

static int bench_sharded_mlp(void) {
    int64_t batch = quick ? 1024 : 8192, f = quick ? 1024 : 4096;
    int layers = 4;
    size_t xbytes = (size_t)(batch * f) * sizeof(float);
    braid_graph *g = mlp_graph(batch, f, layers);
    if (!g || braid_graph_status(g)) {
        printf("RESULT error where=mlp_graph message=\"%s\"\n",
               g ? braid_graph_error(g) : "out of memory");
        braid_graph_free(g);
        return 1;
    }
    float *x = NULL, *y1 = NULL, *y2 = NULL;
    CK(cudaHostAlloc((void **)&x, xbytes, cudaHostAllocPortable));
    CK(cudaHostAlloc((void **)&y1, xbytes, cudaHostAllocPortable));
    CK(cudaHostAlloc((void **)&y2, xbytes, cudaHostAllocPortable));
    fill_uniform(x, batch * f, 7, 1.0f);
    braid_input_binding in = {"x", x, xbytes};
    braid_output_binding o1 = {"y", y1, xbytes}, o2 = {"y", y2, xbytes};
    double t1 = 0, t2 = 0;
    int rc = time_plan(g, "cpu,cuda:0", false, 0, &in, 1, &o1, 1, 2, 7, &t1);
    if (rc == 0)
        rc = time_plan(g, "cpu,cuda:0,cuda:1", false, 2, &in, 1, &o2, 1, 2, 7,
                       &t2);
    double maxrel = 0;
    for (int64_t i = 0; rc == 0 && i < batch * f; i++) {
        double d = fabs((double)y1[i] - y2[i]) / (1e-3 + fabs((double)y1[i]));
        if (!(d <= maxrel)) maxrel = d; /* NaN propagates */
    }
    braid_graph_free(g);
    cudaFreeHost(x);
    cudaFreeHost(y1);
    cudaFreeHost(y2);
    if (rc) return rc;
    double flops = 2.0 * (double)batch * (double)f * (double)f * layers;
    double ratio = t1 / t2;
    printf("RESULT sharded_mlp batch=%lld features=%lld layers=%d "
           "gpu1_ms=%.2f gpu2_ms=%.2f gpu1_samples_per_s=%.0f "
           "gpu2_samples_per_s=%.0f gpu1_tflops=%.1f gpu2_tflops=%.1f "
           "speedup=%.2f target=1.8 met=%s max_rel_diff=%.2g\n",
           (long long)batch, (long long)f, layers, t1 * 1e3, t2 * 1e3,
           batch / t1, batch / t2, flops / t1 * 1e-12, flops / t2 * 1e-12,
           ratio, ratio >= 1.8 ? "yes" : "no", maxrel);
    if (!(maxrel < 1e-2)) {
        printf("RESULT error where=sharded_mlp message=\"1-GPU and 2-GPU "
               "outputs differ (max relative difference %g)\"\n",
               maxrel);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else {
            fprintf(stderr, "usage: multi_gpu [--quick]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int n = braid_cuda_device_count();
    if (n < 2) {
        printf("RESULT multi_gpu skipped=\"needs 2 CUDA devices, found %d "
               "(%s)\"\n",
               n, braid_cuda_status());
        return 0;
    }
    printf("# braid %s, %d CUDA devices%s\n", braid_version(), n,
           quick ? ", quick sizes" : "");
    int rc = bench_peer_copy();
    rc |= bench_all_reduce();
    rc |= bench_sharded_mlp();
    return rc ? 1 : 0;
}

#else /* built without CUDA */

int main(void) {
    printf("RESULT multi_gpu skipped=\"built without CUDA\"\n");
    return 0;
}

#endif
