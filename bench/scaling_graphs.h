/* bench/scaling_graphs.h — the graph shapes bench/compile_scaling.c times
 * (issue 17), built through the public API at any node count:
 *
 *   wide     n/5 independent chains of 5 nodes (input, 3 unary ops, an
 *            add of the first and last): many small fused groups, many
 *            inputs and outputs
 *   chain    one long chain: x, then tanh(matmul(t, w)) repeated (the
 *            tanh runs in place: every tensor takes turns in two slots)
 *   outputs  one input x with (n-1)/2 outputs x * c_i (a fill and a mul
 *            each): every output live to the end of the run
 *   random   a random DAG of elementwise ops, matmuls and reductions on
 *            [16,16] tensors, operands mostly among the last 32 nodes
 *            (locality), one in ten anywhere before (long lifetimes)
 *
 * Each builder returns a graph of about `n` nodes (check its status). */
#ifndef BRAID_BENCH_SCALING_GRAPHS_H
#define BRAID_BENCH_SCALING_GRAPHS_H

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "braid/braid.h"

typedef enum sg_shape {
    SG_WIDE = 0,
    SG_CHAIN,
    SG_OUTPUTS,
    SG_RANDOM,
    SG_NSHAPES
} sg_shape;

static const char *const sg_names[SG_NSHAPES] = {"wide", "chain", "outputs",
                                                 "random"};

/* A tiny xorshift generator: the same graph for the same (shape, n). */
static inline uint32_t sg_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 11);
}

static inline braid_graph *sg_wide(uint32_t n) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d = 64;
    char name[32];
    for (uint32_t i = 0; g && i < n / 5; i++) {
        snprintf(name, sizeof name, "x%u", i);
        braid_tensor x = braid_input(g, name, BRAID_F32, 1, &d);
        braid_tensor t = braid_tanh(g, braid_exp(g, braid_neg(g, x)));
        snprintf(name, sizeof name, "y%u", i);
        braid_output(g, name, braid_add(g, t, x));
    }
    return g;
}

static inline braid_graph *sg_chain(uint32_t n) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {8, 8};
    if (!g) return NULL;
    braid_tensor t = braid_input(g, "x", BRAID_F32, 2, d);
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, d);
    for (uint32_t i = 2; i + 1 < n; i += 2)
        t = braid_tanh(g, braid_matmul(g, t, w, 0));
    braid_output(g, "y", t);
    return g;
}

static inline braid_graph *sg_outputs(uint32_t n) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d = 64;
    char name[32];
    if (!g) return NULL;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &d);
    for (uint32_t i = 0; i < (n - 1) / 2 || i == 0; i++) {
        braid_tensor c = braid_fill(g, BRAID_F32, 0, NULL, 1.0 + i);
        snprintf(name, sizeof name, "y%u", i);
        braid_output(g, name, braid_mul(g, x, c));
    }
    return g;
}

/* One random node whose operands are picked from full[0..nfull) (ids of
 * [16,16] tensors): mostly the last 32, one in ten anywhere. */
static inline braid_tensor sg_random_node(braid_graph *g, uint64_t *s,
                                          const uint32_t *full,
                                          uint32_t nfull) {
    uint32_t lo = nfull > 32 ? nfull - 32 : 0;
    uint32_t a = sg_rand(s) % 10 == 0 ? sg_rand(s) % nfull
                                      : lo + sg_rand(s) % (nfull - lo);
    uint32_t b = lo + sg_rand(s) % (nfull - lo);
    braid_tensor x = {full[a]}, y = {full[b]};
    int axis = 1;
    switch (sg_rand(s) % 10) {
    case 0:
        return braid_matmul(g, x, y, 0);
    case 1:
        return braid_add(g, x, braid_sum(g, y, 1, &axis, true));
    case 2:
        return braid_tanh(g, x);
    case 3:
        return braid_exp(g, braid_neg(g, x));
    case 4:
        return braid_sub(g, x, y);
    case 5:
        return braid_max(g, x, y);
    default:
        return sg_rand(s) % 2 ? braid_add(g, x, y) : braid_mul(g, x, y);
    }
}

static inline braid_graph *sg_random(uint32_t n) {
    braid_graph *g = braid_graph_new(NULL);
    uint32_t *full = malloc((size_t)(n + 4) * sizeof *full), nfull = 0;
    int64_t d[2] = {16, 16};
    char name[32];
    uint64_t s = 0x9e3779b97f4a7c15u ^ n;
    for (int i = 0; g && full && i < 4; i++) {
        snprintf(name, sizeof name, "x%d", i);
        full[nfull++] = braid_input(g, name, BRAID_F32, 2, d).id;
    }
    uint32_t outs = 0;
    while (g && full && braid_graph_status(g) == BRAID_OK &&
           braid_graph_node_count(g) < n) {
        braid_tensor t = sg_random_node(g, &s, full, nfull);
        full[nfull++] = t.id;
        if (sg_rand(&s) % 64 == 0 || braid_graph_node_count(g) >= n) {
            snprintf(name, sizeof name, "y%u", outs++);
            braid_output(g, name, t);
        }
    }
    if (!full) braid_graph_free(g);
    free(full);
    return full ? g : NULL;
}

static inline braid_graph *sg_build(sg_shape shape, uint32_t n) {
    switch (shape) {
    case SG_WIDE:
        return sg_wide(n);
    case SG_CHAIN:
        return sg_chain(n);
    case SG_OUTPUTS:
        return sg_outputs(n);
    default:
        return sg_random(n);
    }
}

/* The shape called name, or SG_NSHAPES. */
static inline sg_shape sg_find(const char *name, size_t len) {
    for (int i = 0; i < SG_NSHAPES; i++)
        if (strlen(sg_names[i]) == len && !strncmp(sg_names[i], name, len))
            return (sg_shape)i;
    return SG_NSHAPES;
}

#endif /* BRAID_BENCH_SCALING_GRAPHS_H */
