/* bench/graphs.h — the benchmark graphs, built through the public API and
 * shared by the programs that time them and by bench/arena.c, which
 * checks the memory planner on every one of them. Each builder returns a
 * graph (check braid_graph_status) whose compute nodes are hinted to
 * "cuda:0" when gpu is true. Constants hold data the caller passes (NULL:
 * zeros, for compiling only). */
#ifndef BRAID_BENCH_GRAPHS_H
#define BRAID_BENCH_GRAPHS_H

#include "bench/bench.h"

#define BG_PIPE_N ((int64_t)1 << 28) /* 1 GiB of f32 */
#define BG_MLP_BATCH 8192
#define BG_MLP_WIDTH 4096
#define BG_MLP_LAYERS 4

/* Marks compute nodes from `first` on for the GPU when gpu is set. */
static inline braid_graph *bg_bench_done(braid_graph *g, uint32_t first,
                                         bool gpu) {
    if (g && braid_graph_status(g) == BRAID_OK && gpu)
        bn_hint_from(g, first, "cuda:0");
    return g;
}

/* A constant of dims, from data (NULL: zeros). */
static inline braid_tensor bg_bench_const(braid_graph *g, int rank,
                                          const int64_t *dims,
                                          const float *data) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    float *zeros = data ? NULL : calloc((size_t)n, sizeof(float));
    if (!data && !zeros) bn_die("out of memory");
    braid_tensor t = braid_constant(g, BRAID_F32, rank, dims,
                                    data ? (const void *)data : zeros);
    free(zeros);
    return t;
}

/* tanh(x*y + z) * sigmoid(x) + y*0.5 - exp(-z) on n f32: inputs x, y, z,
 * output "out". */
static inline braid_graph *bg_bench_chain(int64_t n, bool gpu) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &n);
    braid_tensor y = braid_input(g, "y", BRAID_F32, 1, &n);
    braid_tensor z = braid_input(g, "z", BRAID_F32, 1, &n);
    uint32_t first = braid_graph_node_count(g);
    braid_tensor half = braid_fill(g, BRAID_F32, 0, NULL, 0.5);
    braid_tensor t = braid_tanh(g, braid_add(g, braid_mul(g, x, y), z));
    braid_tensor acc = braid_add(g, braid_mul(g, t, braid_sigmoid(g, x)),
                                 braid_mul(g, y, half));
    braid_output(g, "out", braid_sub(g, acc, braid_exp(g, braid_neg(g, z))));
    return bg_bench_done(g, first, gpu);
}

/* softmax over the rows of input x [rows, cols]: output "out". */
static inline braid_graph *bg_bench_softmax(int64_t rows, int64_t cols) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    int64_t d[2] = {rows, cols};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, d);
    uint32_t first = braid_graph_node_count(g);
    braid_output(g, "out", braid_softmax(g, x, 1));
    return bg_bench_done(g, first, true);
}

/* An embedding lookup: rows of input table [vocab, dim] (f32) picked by
 * input ids [n] (i32): output "out" [n, dim]. */
static inline braid_graph *bg_bench_embedding(int64_t vocab, int64_t dim,
                                              int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    int64_t d[2] = {vocab, dim};
    braid_tensor w = braid_input(g, "table", BRAID_F32, 2, d);
    braid_tensor ids = braid_input(g, "ids", BRAID_I32, 1, &n);
    uint32_t first = braid_graph_node_count(g);
    braid_output(g, "out", braid_gather(g, w, ids, 0));
    return bg_bench_done(g, first, true);
}

/* Input x (n f32) → sqrt(sin(x)² + cos(x)²) + x on the GPU → output "y". */
static inline braid_graph *bg_bench_pipeline(int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &n);
    uint32_t first = braid_graph_node_count(g);
    braid_tensor s = braid_square(g, braid_sin(g, x));
    braid_tensor c = braid_square(g, braid_cos(g, x));
    braid_output(g, "y", braid_add(g, braid_sqrt(g, braid_add(g, s, c)), x));
    return bg_bench_done(g, first, true);
}

/* Input x (n f32) moved to the GPU, its max (a scalar) back: output "m". */
static inline braid_graph *bg_bench_h2d(int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &n);
    uint32_t first = braid_graph_node_count(g);
    braid_output(g, "m", braid_reduce_max(g, x, 0, NULL, false));
    return bg_bench_done(g, first, true);
}

/* k chained matmuls r = r @ b starting from r = a, on constants a, b
 * [n, n] (data may be NULL), then the sum of r: output "s" (a scalar, so
 * no result crosses PCIe). Nodes go to `device`. */
static inline braid_tensor bg_bench_mm_chain(braid_graph *g, int64_t n,
                                             int k, const float *a,
                                             const float *b,
                                             const char *device) {
    uint32_t first = braid_graph_node_count(g);
    int64_t d[2] = {n, n};
    braid_tensor ta = bg_bench_const(g, 2, d, a);
    braid_tensor tb = bg_bench_const(g, 2, d, b);
    braid_tensor r = ta;
    for (int i = 0; i < k; i++)
        r = braid_matmul(g, r, tb, 0);
    braid_tensor s = braid_sum(g, r, 0, NULL, false);
    if (braid_graph_status(g) == BRAID_OK) bn_hint_from(g, first, device);
    return s;
}

/* MLP: h = x; 4 × h = gelu(h @ W_l + b_l); output "s" = sum(h). x
 * [8192, 4096], W_l [4096, 4096], b_l [4096] are constants (uploaded to
 * the GPU once per executor, like torch tensors already on the device)
 * when consts is set (data NULL: zeros), else x is input "x" and W_l, b_l
 * random_normal generators (the graph compile_time.c compiles). */
static inline braid_graph *bg_bench_mlp(bool consts, const float *x,
                                        const float *const *w,
                                        const float *const *b) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    int64_t xd[2] = {BG_MLP_BATCH, BG_MLP_WIDTH};
    int64_t wd[2] = {BG_MLP_WIDTH, BG_MLP_WIDTH}, bd[1] = {BG_MLP_WIDTH};
    braid_tensor h = consts ? BRAID_NONE : braid_input(g, "x", BRAID_F32, 2, xd);
    uint32_t first = braid_graph_node_count(g);
    if (consts) h = bg_bench_const(g, 2, xd, x);
    for (int l = 0; l < BG_MLP_LAYERS; l++) {
        braid_tensor tw, tb;
        if (consts) {
            tw = bg_bench_const(g, 2, wd, w ? w[l] : NULL);
            tb = bg_bench_const(g, 1, bd, b ? b[l] : NULL);
        } else {
            tw = braid_random_normal(g, BRAID_F32, 2, wd, 1 + l, 0, 0.02);
            tb = braid_random_normal(g, BRAID_F32, 1, bd, 101 + l, 0, 0.02);
        }
        h = braid_gelu(g, braid_add(g, braid_matmul(g, h, tw, 0), tb));
    }
    braid_output(g, "s", braid_sum(g, h, 0, NULL, false));
    return bg_bench_done(g, first, true);
}

/* 100 small unfusable-by-request nodes on 1024 f32 (compile with
 * BRAID_PASS_FUSE disabled): t = t + x or sin(t), alternately, x a
 * constant on the GPU; output "y". */
static inline braid_graph *bg_bench_tiny(const float *x) {
    braid_graph *g = braid_graph_new(NULL);
    if (!g) return NULL;
    int64_t n = 1024;
    braid_tensor tx = bg_bench_const(g, 1, &n, x);
    braid_tensor t = tx;
    for (int i = 0; i < 100; i++)
        t = i % 2 ? braid_sin(g, t) : braid_add(g, t, tx);
    braid_output(g, "y", t);
    return bg_bench_done(g, 0, true);
}

#endif /* BRAID_BENCH_GRAPHS_H */
