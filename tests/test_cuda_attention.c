/* tests/test_cuda_attention.c — the attention op's kernel
 * (codegen/attention.c) on a GPU against the reference evaluator: f32,
 * f16, bf16, f64; head dims 1, 17, 64, 100, 128, 256 (one lane group
 * width or the other, tiles of 64, 32 or 16 keys; at these row counts
 * head dims up to 64 in f32/f16/bf16 take the key-parallel form: a warp
 * per row, a lane per key); S ≠ T; masks of
 * several broadcast shapes and none, -inf entries and fully masked rows,
 * causal; GPT-2 small's shape (B1 S128 H12 D64, a causal 0/-inf mask
 * [1,1,128,128] as the exporters give it); a long T (1000, 4096). Every
 * plan is checked to hold one attention node on cuda:0. Skipped without a
 * CUDA device.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4, f16 1e-2, bf16 5e-2, f64
 * 1e-9, atol and rtol alike); inputs in [-1, 1], masks in [-1, 1] with
 * -inf entries. */
#include <math.h>

#include "passes/passes.h"
#include "tests/test_cuda_common.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* mask: 0 none, 1 [T] with every 7th key -inf, 2 [S,T] with row 0 all
 * -inf (a fully masked row), 3 [B,H,S,T]; a constant, so its -inf
 * entries survive (random inputs cover [-1, 1] only). */
static braid_tensor make_mask(braid_graph *g, braid_dtype dt, int kind,
                              int64_t B, int64_t S, int64_t T, int64_t H) {
    if (kind == 0) return BRAID_NONE;
    int64_t d[4] = {B, H, S, T}, numel = 1;
    int rank = kind == 1 ? 1 : kind == 2 ? 2 : 4;
    const int64_t *dims = d + 4 - rank;
    for (int i = 0; i < rank; i++)
        numel *= dims[i];
    size_t es = braid_dtype_size(dt);
    unsigned char *buf = malloc((size_t)numel * es);
    cr_assert(buf);
    uint64_t x = 88172645463325252ull;
    for (int64_t e = 0; e < numel; e++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = (double)(x % 2001) / 1000.0 - 1.0;
        if ((kind == 1 && e % 7 == 3) || (kind == 2 && e < T) ||
            (kind == 3 && e % 11 == 5))
            v = -INFINITY;
        bg_store(dt, buf, e, v);
    }
    braid_tensor m = braid_constant(g, dt, rank, dims, buf);
    free(buf);
    return m;
}

static void one_case(braid_dtype dt, int64_t B, int64_t S, int64_t T, int64_t H,
                     int64_t D, int mask, bool causal, uint64_t seed) {
    char what[160];
    snprintf(what, sizeof what,
             "attention %s B%lld S%lld T%lld H%lld D%lld mask %d%s",
             braid_dtype_name(dt), (long long)B, (long long)S, (long long)T,
             (long long)H, (long long)D, mask, causal ? " causal" : "");
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor q = braid_input(g, "q", dt, 4, DIMS(B, S, H, D));
    braid_tensor k = braid_input(g, "k", dt, 4, DIMS(B, T, H, D));
    braid_tensor v = braid_input(g, "v", dt, 4, DIMS(B, T, H, D));
    braid_tensor m = make_mask(g, dt, mask, B, S, T, H);
    braid_tensor y = braid_attention(g, q, k, v, m, 1 / sqrt((double)D),
                                     causal ? BRAID_ATTENTION_CAUSAL : 0);
    ts_range r[3] = {TS_RANGE(-1, 1), TS_RANGE(-1, 1), TS_RANGE(-1, 1)};
    TC_CHECK(g, y, r, seed, what);
    tc_assert_one_on_gpu(g, BRAID_OP_ATTENTION, what);
    braid_graph_free(g);
}

static const int64_t head_dims[] = {1, 17, 64, 100, 128, 256};

Test(cuda_attention, every_dtype_and_head_dim, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t seed = 1;
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < sizeof head_dims / sizeof *head_dims; i++) {
        int64_t D = head_dims[i];
        one_case(dt, 2, 19, 45, 3, D, (int)(i % 4), false, seed++);
        one_case(dt, 1, 33, 33, 2, D, 2, true, seed++);
    }
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

/* Each broadcast shape of the mask, and none, at one size. */
Test(cuda_attention, mask_shapes) {
    TC_REQUIRE_GPU();
    for (int mask = 0; mask < 4; mask++)
        for (int causal = 0; causal < 2; causal++)
            one_case(BRAID_F32, 2, 70, 130, 4, 64, mask, causal,
                     (uint64_t)(10 + 2 * mask + causal));
}

/* GPT-2 small: B1 S128 H12 D64 with the exporters' causal mask constant
 * (0 on and below the diagonal, -inf above), and with the causal flag. */
Test(cuda_attention, gpt2_shape) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    int64_t S = 128;
    braid_tensor q = braid_input(g, "q", BRAID_F32, 4, DIMS(1, S, 12, 64));
    braid_tensor k = braid_input(g, "k", BRAID_F32, 4, DIMS(1, S, 12, 64));
    braid_tensor v = braid_input(g, "v", BRAID_F32, 4, DIMS(1, S, 12, 64));
    float *mk = malloc(sizeof *mk * (size_t)(S * S));
    cr_assert(mk);
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++)
            mk[i * S + j] = j <= i ? 0.0f : -INFINITY;
    braid_tensor m = braid_constant(g, BRAID_F32, 4, DIMS(1, 1, S, S), mk);
    free(mk);
    braid_tensor y = braid_attention(g, q, k, v, m, 0.125, 0);
    ts_range r[3] = {TS_RANGE(-2, 2), TS_RANGE(-2, 2), TS_RANGE(-1, 1)};
    TC_CHECK(g, y, r, 77, "gpt2 mask");
    braid_graph_free(g);
    one_case(BRAID_F32, 1, 128, 128, 12, 64, 0, true, 78);
    one_case(BRAID_F16, 1, 128, 128, 12, 64, 0, true, 79);
}

/* Long key sequences: many tiles per block. */
Test(cuda_attention, long_t, .timeout = 300) {
    TC_REQUIRE_GPU();
    one_case(BRAID_F32, 1, 16, 1000, 4, 64, 1, false, 90);
    one_case(BRAID_F32, 1, 1000, 1000, 2, 64, 0, true, 91);
    one_case(BRAID_F16, 1, 8, 4096, 2, 128, 0, false, 92);
}

/* k and v as strided views of one wider tensor (as GPT-2's split of the
 * fused q·k·v projection gives them): strides that are multiples of 4
 * with the views starting at a multiple of 4 elements (the f32 tiles are
 * staged as float4) and at an odd element (16-byte misaligned: staged one
 * element at a time; the kernel checks at run time), causal and not. */
Test(cuda_attention, strided_views_aligned_and_not) {
    TC_REQUIRE_GPU();
    static const int64_t starts[2][2] = {{0, 68}, {1, 69}};
    for (int a = 0; a < 2; a++)
        for (int causal = 0; causal < 2; causal++) {
            char what[96];
            snprintf(what, sizeof what, "strided k/v from %lld, %lld%s",
                     (long long)starts[a][0], (long long)starts[a][1],
                     causal ? " causal" : "");
            braid_graph *g = braid_graph_new(NULL);
            braid_tensor q =
                braid_input(g, "q", BRAID_F32, 4, DIMS(1, 40, 3, 64));
            braid_tensor x =
                braid_input(g, "x", BRAID_F32, 4, DIMS(1, 40, 3, 136));
            braid_tensor kv[2];
            for (int i = 0; i < 2; i++)
                kv[i] = braid_slice(g, x, DIMS(0, 0, 0, starts[a][i]),
                                    DIMS(1, 40, 3, starts[a][i] + 64),
                                    DIMS(1, 1, 1, 1));
            braid_tensor y =
                braid_attention(g, q, kv[0], kv[1], BRAID_NONE, 0.125,
                                causal ? BRAID_ATTENTION_CAUSAL : 0);
            ts_range r[2] = {TS_RANGE(-2, 2), TS_RANGE(-1, 1)};
            TC_CHECK(g, y, r, (uint64_t)(100 + 2 * a + causal), what);
            tc_assert_one_on_gpu(g, BRAID_OP_ATTENTION, what);
            braid_graph_free(g);
        }
}
