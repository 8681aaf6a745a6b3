/* examples/mlp_build.h — builds the example MLP through the C API.
 *
 * Shared by examples/mlp.c and tests/test_examples.c. The nodes are created
 * in exactly the order of examples/graphs/mlp.graph, so the test can check
 * that the two describe the same graph (bg_graph_equal). Change both
 * together. */
#ifndef BRAID_EXAMPLES_MLP_BUILD_H
#define BRAID_EXAMPLES_MLP_BUILD_H

#include <math.h>
#include <stdio.h>

#include "braid/braid.h"

#define MLP_BATCH 256        /* rows of the input x */
#define MLP_WIDTH 512        /* features in and out of every layer */
#define MLP_LAYERS 4         /* matmul + bias + gelu blocks */
#define MLP_BIAS_STDDEV 0.05 /* biases are small next to the activations */

/* Layer l's weight uses seed MLP_WEIGHT_SEED + l, its bias
 * MLP_BIAS_SEED + l. */
#define MLP_WEIGHT_SEED 1
#define MLP_BIAS_SEED 101

/* Names t "<prefix><layer>" ("w0", "mm0"), as mlp.graph's labels name its
 * nodes: profiles and dumps show these names. */
static inline void mlp_name(braid_graph *g, braid_tensor t, const char *prefix,
                            int layer) {
    char name[16];
    snprintf(name, sizeof name, "%s%d", prefix, layer);
    braid_set_name(g, t, name);
}

/* Adds the MLP to g: input "x" f32[MLP_BATCH, MLP_WIDTH]; per layer
 * h = gelu(h @ W_l + b_l) with W_l ~ N(0, 1/sqrt(MLP_WIDTH)) of shape
 * [MLP_WIDTH, MLP_WIDTH] and b_l ~ N(0, MLP_BIAS_STDDEV) of shape
 * [MLP_WIDTH]; output "y". Returns y (invalid when g records an error). */
static inline braid_tensor mlp_build(braid_graph *g) {
    const int64_t xdims[2] = {MLP_BATCH, MLP_WIDTH};
    const int64_t wdims[2] = {MLP_WIDTH, MLP_WIDTH};
    const int64_t bdims[1] = {MLP_WIDTH};
    const double wstd = 1.0 / sqrt((double)MLP_WIDTH);
    braid_tensor h = braid_input(g, "x", BRAID_F32, 2, xdims);
    for (int l = 0; l < MLP_LAYERS; l++) {
        braid_tensor w = braid_random_normal(g, BRAID_F32, 2, wdims,
                                             MLP_WEIGHT_SEED + l, 0.0, wstd);
        mlp_name(g, w, "w", l);
        braid_tensor mm = braid_matmul(g, h, w, 0);
        mlp_name(g, mm, "mm", l);
        braid_tensor b = braid_random_normal(
            g, BRAID_F32, 1, bdims, MLP_BIAS_SEED + l, 0.0, MLP_BIAS_STDDEV);
        mlp_name(g, b, "b", l);
        braid_tensor a = braid_add(g, mm, b);
        mlp_name(g, a, "a", l);
        h = braid_gelu(g, a);
        mlp_name(g, h, "h", l);
    }
    braid_output(g, "y", h);
    return h;
}

#endif /* BRAID_EXAMPLES_MLP_BUILD_H */
