/* tests/test_pass_channels_last.c — the channels_last pass
 * (passes/channels_last.c): which GPU convolutions go channels last, the
 * region around them, the permutes where it meets other work, and the
 * same values.
 *
 * The graph is ResNet's pattern at a small size, every node hinted to
 * cuda:0: conv → relu → max_pool → conv → relu → add (the pooled tensor)
 * → relu → mean over H, W with keepdims, with the last relu also an
 * output. Weights and biases are constants; a third conv reads its
 * weights from an input (no region for it). The plan's working graph is
 * run by the reference evaluator against the user's graph (fuse off, so
 * it holds only ops the reference knows), and the whole plan (fuse on) on
 * the emulated executor. No GPU is needed. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "graph/window.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static braid_tensor random_constant(braid_graph *g, int rank,
                                    const int64_t *dims, uint64_t seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    float *v = malloc((size_t)n * sizeof *v);
    cr_assert(v);
    ts_fill_random(BRAID_F32, v, n, seed, -0.3, 0.3);
    braid_tensor t = braid_constant(g, BRAID_F32, rank, dims, v);
    free(v);
    return t;
}

static braid_tensor conv3x3(braid_graph *g, braid_tensor x, int64_t c,
                            int64_t oc, uint64_t seed) {
    braid_conv_params p = {.pads = {1, 1, 1, 1}};
    braid_tensor w = random_constant(g, 4, DIMS(oc, c, 3, 3), seed);
    braid_tensor b = random_constant(g, 1, DIMS(oc), seed + 1);
    return braid_conv(g, x, w, b, &p);
}

/* The block (see the top); weights_input adds the conv whose weights are
 * an input ("w3", output "side"). */
static braid_graph *block(bool weights_input) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 3, 12, 12));
    braid_tensor r1 = braid_relu(g, conv3x3(g, x, 3, 8, 1));
    braid_pool_params pp = {.kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_lo = {1, 1},
                            .pads_hi = {1, 1}};
    braid_tensor p = braid_max_pool(g, r1, &pp);
    braid_tensor r2 = braid_relu(g, conv3x3(g, p, 8, 8, 3));
    braid_tensor r3 = braid_relu(g, braid_add(g, r2, p));
    int hw[2] = {2, 3};
    braid_output(g, "pooled", braid_mean(g, r3, 2, hw, true));
    braid_output(g, "features", r3);
    if (weights_input) {
        braid_tensor w3 = braid_input(g, "w3", BRAID_F32, 4, DIMS(4, 8, 1, 1));
        braid_output(g, "side", braid_conv(g, p, w3, BRAID_NONE, NULL));
    }
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (g->nodes[id].op != BRAID_OP_INPUT)
            braid_set_device(g, (braid_tensor){id}, "cuda:0");
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static braid_plan *compile(const braid_graph *g, bool tf32, unsigned disable) {
    braid_compile_options o = ts_compile_options("cpu,cuda:0", disable);
    o.allow_tf32 = tf32;
    return ts_compile_ok(g, &o);
}

static uint32_t count(const braid_plan *p, braid_op op) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        n += p->res.graph->nodes[id].op == op;
    return n;
}

/* Conv nodes of p, and how many of them are channels last. */
static void convs(const braid_plan *p, uint32_t *all, uint32_t *last) {
    *all = *last = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        /* a cpu conv with its epilogue (a CONV program) is channels first */
        if (n->op == BRAID_OP_FUSED &&
            p->res.programs[p->res.info[id].program].kind == BP_PROGRAM_CONV)
            (*all)++;
        if (n->op != BRAID_OP_CONV) continue;
        (*all)++;
        *last += (n->attr.flags & BG_CONV_CHANNELS_LAST) != 0;
    }
}

/* The working graph (fuse off) computes what the user's graph computes:
 * the reference evaluator on both, the same inputs. */
static void same_values(const braid_graph *g, const braid_plan *p,
                        uint64_t seed) {
    ts_io *a = ts_io_new(g, seed), *b = ts_io_new(g, seed);
    cr_assert(a && b);
    cr_assert_eq(braid_reference_run(g, a->in, a->ninputs, a->ref, a->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_reference_run(p->res.graph, b->in, b->ninputs, b->ref,
                                     b->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    for (uint32_t i = 0; i < a->noutputs; i++)
        cr_assert_eq(memcmp(a->ref[i].data, b->ref[i].data, a->ref[i].bytes), 0,
                     "output %u: the same bits", (unsigned)i);
    ts_io_free(a), ts_io_free(b);
}

Test(channels_last, region_and_permutes) {
    braid_graph *g = block(true);
    braid_plan *p = compile(g, true, BRAID_PASS_FUSE);
    uint32_t all, last;
    convs(p, &all, &last);
    cr_assert_eq(all, 3);
    cr_assert_eq(last, 2, "the conv with input weights stays channels first");
    const braid_graph *w = p->res.graph;
    for (uint32_t id = 0; id < w->nnodes; id++) {
        const bg_node *n = &w->nodes[id];
        if (n->op == BRAID_OP_CONV && (n->attr.flags & BG_CONV_CHANNELS_LAST)) {
            /* weights [OC, 3, 3, C]: a copy of a new constant */
            const bg_node *wc = &w->nodes[n->inputs[1]];
            cr_assert_eq(wc->op, BRAID_OP_COPY);
            const bg_node *k = &w->nodes[wc->inputs[0]];
            cr_assert_eq(k->op, BRAID_OP_CONSTANT);
            cr_assert(k->dims[1] == 3 && k->dims[2] == 3 &&
                          k->dims[3] == w->nodes[n->inputs[0]].dims[3],
                      "KRSC weights, C as x's last axis");
            cr_assert_eq(n->dims[3], k->dims[0], "y [N, H, W, OC]");
        }
        if (n->op == BRAID_OP_MEAN)
            cr_assert(n->dims[1] == 1 && n->dims[2] == 1 && n->dims[3] == 8,
                      "the pool joined the region: [N, 1, 1, C]");
        if (n->op == BRAID_OP_MAX_POOL) {
            cr_assert(n->attr.flags & BG_POOL_CHANNELS_LAST);
            cr_assert_eq(n->dims[3], 8, "max_pool joined: [N, H, W, C]");
        }
    }
    /* x in, the features out (the pooled tensor is read channels last by
     * the conv with input weights too); the pooled mean goes back as a
     * reshape */
    cr_assert_eq(count(p, BRAID_OP_PERMUTE), 3);
    /* the first weights constant is no longer read: dropped */
    uint32_t consts = 0;
    for (uint32_t id = 0; id < w->nnodes; id++)
        consts +=
            w->nodes[id].op == BRAID_OP_CONSTANT && w->nodes[id].rank == 4;
    cr_assert_eq(consts, 2, "one KRSC constant per converted conv");
    same_values(g, p, 5);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* With fuse on, the whole plan on the emulated executor (device nodes run
 * by the CPU kernels, channels-last conv included) against the reference:
 * the bias split of fusion rule 15 in the channels-last form. */
Test(channels_last, plan_runs_emulated) {
    braid_graph *g = block(false);
    braid_plan *p = compile(g, true, 0);
    uint32_t all, last;
    convs(p, &all, &last);
    cr_assert_eq(last, 2);
    cr_assert_eq(count(p, BRAID_OP_FUSED) >= 2, true);
    ts_check_plan(g, p, 3, 11);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Without TF32 an f32 conv stays channels first; BRAID_CONV_LAYOUT=nhwc
 * converts it anyway, =nchw never, another value is an error; the
 * disable bit turns the pass off. */
Test(channels_last, when_it_applies) {
    braid_graph *g = block(false);
    uint32_t all, last;
    unsetenv("BRAID_CONV_LAYOUT");
    braid_plan *p = compile(g, false, 0);
    convs(p, &all, &last);
    cr_assert_eq(last, 0, "f32 without TF32");
    cr_assert_eq(count(p, BRAID_OP_PERMUTE), 0);
    braid_plan_free(p);
    p = compile(g, true, BRAID_PASS_CHANNELS_LAST);
    convs(p, &all, &last);
    cr_assert_eq(last, 0, "the pass disabled");
    braid_plan_free(p);
    setenv("BRAID_CONV_LAYOUT", "nhwc", 1);
    p = compile(g, false, 0);
    convs(p, &all, &last);
    cr_assert_eq(last, 2, "nhwc asked for");
    braid_plan_free(p);
    setenv("BRAID_CONV_LAYOUT", "nchw", 1);
    p = compile(g, true, 0);
    convs(p, &all, &last);
    cr_assert_eq(last, 0, "nchw asked for");
    braid_plan_free(p);
    setenv("BRAID_CONV_LAYOUT", "nhcw", 1);
    braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
    o.allow_tf32 = true;
    p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), "BRAID_CONV_LAYOUT=\"nhcw\""), "%s",
              braid_last_error());
    unsetenv("BRAID_CONV_LAYOUT");
    braid_graph_free(g);
}

/* A conv on the cpu keeps its layout, TF32 or not. */
Test(channels_last, cpu_convs_stay) {
    braid_graph *g = block(false);
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (g->nodes[id].op != BRAID_OP_INPUT)
            braid_set_device(g, (braid_tensor){id}, "cpu");
    braid_plan *p = compile(g, true, 0);
    uint32_t all, last;
    convs(p, &all, &last);
    cr_assert_eq(all, 2);
    cr_assert_eq(last, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}
