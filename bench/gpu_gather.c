/* bench/gpu_gather.c — issue #13's embedding lookup: 8192 random ids (i32)
 * into a 50257 × 768 f32 table (GPT-2's token embedding), on the GPU, as a
 * fraction of the bandwidth of a device-to-device cudaMemcpy of the same
 * output size (25.2 MB) measured in the same run. Target: >= 0.85.
 *
 * What is measured: as in gpu_softmax.c, the GPU part of braid's plan
 * alone (table and ids already on the device): braid's generated gather
 * kernel (codegen/index.c, the 16-byte row path), launched with braid's
 * geometry and the run check record, CUDA events around each launch,
 * median of 20 after 3. Both move the same bytes: the output written once
 * and as many bytes read (the rows the ids pick; the ids themselves, 32
 * KiB, are left out). Checked: every output row equals its table row
 * bit for bit, and the run check record stays clear.
 *
 * Prints "RESULT embedding braid_ms=… d2d_ms=… braid_gbps=… d2d_gbps=…
 * fraction=… check=ok". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#define VOCAB 50257
#define DIM 768
#define IDS 8192

int main(void) {
    bn_prog = "gpu_gather";
    braid_graph *g = bg_bench_embedding(VOCAB, DIM, IDS);
    bn_graph_ok(g, "building the embedding lookup");
#ifndef BRAID_HAVE_CUDA
    printf("SKIP embedding: built without CUDA\n");
    braid_graph_free(g);
    return 0;
#else
    braid_compile_options o = bn_options("cpu,cuda:0");
    o.disable_passes = BRAID_PASS_CHUNK;
    braid_plan *p = bn_compile(g, &o);
    bn_kernels_check(p, "embedding");
    bn_require_gpu("embedding");
    size_t tn = (size_t)VOCAB * DIM, on = (size_t)IDS * DIM;
    size_t out_bytes = on * sizeof(float);
    float *table = bn_malloc(tn * sizeof(float)), *out = bn_malloc(out_bytes);
    int32_t *ids = bn_malloc(IDS * sizeof(int32_t));
    bn_fill(table, tn, 11, -1, 1);
    uint64_t st = 12345;
    for (int i = 0; i < IDS; i++) { /* uniform over the vocabulary */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((st >> 33) % VOCAB);
    }
    ids[1] = -1; /* a negative id: the last row */
    double d2d_ms = bn_d2d_ms(out_bytes);
    const char *names[2] = {"table", "ids"};
    const void *data[2] = {table, ids};
    bn_kernels k;
    bn_kernels_init(&k, p, 2, names, data);
    double ms = bn_event_ms(bn_kernels_pass, &k, 0, 3, 20);
    bn_kernels_output(&k, "out", out, out_bytes);
    bc_run_check rec;
    BN_CUDA(cudaMemcpy(&rec, k.check, sizeof rec, cudaMemcpyDeviceToHost));
    int bad = rec.kind != BC_CHECK_NONE;
    for (int i = 0; i < IDS; i++) {
        int64_t row = ids[i] < 0 ? ids[i] + VOCAB : ids[i];
        bad += memcmp(out + (size_t)i * DIM, table + (size_t)row * DIM,
                      DIM * sizeof(float)) != 0;
    }
    double traffic = 2.0 * (double)out_bytes;
    double gbps = traffic / (ms * 1e-3) * 1e-9;
    double d2d_gbps = traffic / (d2d_ms * 1e-3) * 1e-9;
    printf("embedding %dx%d by %d ids: %u kernel(s), %.4f ms = %.0f GB/s; "
           "d2d copy of %.1f MB %.4f ms = %.0f GB/s; %.1f%% of the copy%s\n",
           VOCAB, DIM, IDS, (unsigned)k.nkernels, ms, gbps,
           (double)out_bytes / 1e6, d2d_ms, d2d_gbps, 100.0 * d2d_ms / ms,
           bad ? " — MISMATCH" : "");
    printf("RESULT embedding braid_ms=%.4f d2d_ms=%.4f braid_gbps=%.1f "
           "d2d_gbps=%.1f fraction=%.3f target=0.85 check=%s\n",
           ms, d2d_ms, gbps, d2d_gbps, d2d_ms / ms, bad ? "FAIL" : "ok");
    bn_kernels_free(&k);
    braid_plan_free(p);
    braid_graph_free(g);
    free(table);
    free(out);
    free(ids);
    return bad ? 1 : 0;
#endif
}
