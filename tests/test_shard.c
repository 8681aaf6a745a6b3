/* tests/test_shard.c — batch sharding (compile option shards /
 * shard_inputs, passes/shard.c) without a GPU: plans for cpu,cuda:0,cuda:1
 * (verify_plan passes, replicas on both GPUs, outputs gathered on the
 * cpu), the emulated executor running sharded MLPs and random batch graphs
 * against the reference evaluator on the unsharded graph, random graphs
 * of the shared generator (sharded, or refused with a clear error), and
 * the error cases. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/support.h"

#define B 12 /* batch: divides by 2, 3 and 4 */
#define F 4  /* features */

static const char *const GPUS3 = "cpu,cuda:0,cuda:1,cuda:2";

/* A constant of shape dims filled from seed in [-1, 1]. */
static braid_tensor rand_const(braid_graph *g, int rank, const int64_t *dims,
                               uint64_t seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = malloc((size_t)n * sizeof *v);
    cr_assert(v);
    ts_fill_random(BRAID_F32, v, n, seed, -1, 1);
    braid_tensor t = braid_constant(g, BRAID_F32, rank, dims, v);
    free(v);
    return t;
}

/* x [b, f] → layers × (matmul W + bias, gelu): output "y"; "w0" is the
 * first weight's tanh (independent of x). */
static braid_graph *mlp(int64_t b, int64_t f, int layers) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {b, f}, wd[2] = {f, f}, bd[1] = {f};
    braid_tensor h = braid_input(g, "x", BRAID_F32, 2, xd), w0 = BRAID_NONE;
    for (int l = 0; l < layers; l++) {
        braid_tensor w = rand_const(g, 2, wd, 100 + (uint64_t)l);
        braid_tensor bias = rand_const(g, 1, bd, 200 + (uint64_t)l);
        if (l == 0) w0 = w;
        h = braid_gelu(g, braid_add(g, braid_matmul(g, h, w, 0), bias));
    }
    braid_output(g, "y", h);
    braid_output(g, "w0", braid_tanh(g, w0));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static braid_status compile_sharded(const braid_graph *g, const char *devices,
                                    int shards, const char *inputs,
                                    braid_plan **p) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.shards = shards;
    o.shard_inputs = inputs;
    return braid_compile(g, &o, p);
}

/* Runs p emulated under a few interleavings and compares every output
 * with the reference evaluator on g (the unsharded graph). */
static void check_values(const braid_graph *g, const braid_plan *p,
                         uint64_t seed) {
    for (uint64_t k = 0; k < 3; k++) {
        ts_io *io = ts_io_new(g, seed + k);
        cr_assert(io);
        braid_exec *e = NULL;
        cr_assert_eq(br_exec_new_emulated(p, seed * 7 + k, &e), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        braid_exec_free(e);
        cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        char msg[256] = "";
        bool ok = ts_io_compare(io, msg, sizeof msg);
        if (!ok) ts_log_graph(g);
        cr_assert(ok, "seed %llu: %s", (unsigned long long)(seed + k), msg);
        ts_io_free(io);
    }
}

/* Nodes of p placed on device d (copies count at their destination). */
static uint32_t nodes_on(const braid_plan *p, bp_device d) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        n += bp_device_equal(p->res.info[id].device, d);
    return n;
}

/* Matmuls in p on device d. */
static uint32_t matmuls_on(const braid_plan *p, bp_device d) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *x = &p->res.graph->nodes[id];
        bool mm =
            x->op == BRAID_OP_MATMUL ||
            (x->op == BRAID_OP_FUSED && p->res.info[id].program != BG_NONE &&
             p->res.programs[p->res.info[id].program].kind ==
                 BP_PROGRAM_MATMUL);
        n += mm && bp_device_equal(p->res.info[id].device, d);
    }
    return n;
}

Test(shard, mlp_plan_on_two_gpus) {
    braid_graph *g = mlp(B, F, 3);
    braid_plan *p = NULL;
    cr_assert_eq(compile_sharded(g, "cpu,cuda:0,cuda:1", 2, "x", &p), BRAID_OK,
                 "%s", braid_last_error());
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    bp_device g0 = {BP_DEVICE_CUDA, 0}, g1 = {BP_DEVICE_CUDA, 1};
    cr_assert_gt(nodes_on(p, g0), 0);
    cr_assert_gt(nodes_on(p, g1), 0);
    cr_assert_eq(matmuls_on(p, g0), 3, "one replica per GPU");
    cr_assert_eq(matmuls_on(p, g1), 3);
    /* output y is a concat on the cpu of [B/2, F] halves */
    uint32_t y = BG_NONE;
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        if (strcmp(p->res.outputs[i].name, "y") == 0)
            y = p->res.outputs[i].node;
    cr_assert_neq(y, BG_NONE);
    const bg_node *yn = &p->res.graph->nodes[y];
    cr_assert_eq(yn->op, BRAID_OP_CONCAT);
    cr_assert_eq(p->res.info[y].device.kind, BP_DEVICE_CPU);
    cr_assert_eq(yn->ninputs, 2);
    cr_assert_eq(p->res.graph->nodes[yn->inputs[0]].dims[0], B / 2);
    cr_assert_eq(yn->dims[0], B);
    /* the GPUs' D2H copies write straight into the gathered output */
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t c = yn->inputs[k];
        cr_assert_eq(p->res.graph->nodes[c].op, BRAID_OP_COPY);
        cr_assert_eq(p->res.info[c].place.storage, BP_STORAGE_VIEW);
        cr_assert_eq(p->res.info[c].place.base, y);
    }
    check_values(g, p, 1);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(shard, default_inputs_three_gpus_and_passes_off) {
    braid_graph *g = mlp(B, F, 2);
    for (unsigned off = 0; off < 2; off++) {
        braid_compile_options o;
        braid_compile_options_init(&o);
        o.devices = GPUS3;
        o.shards = 3;
        o.shard_inputs = NULL; /* x: dim 0 = 12 divides by 3 */
        if (off)
            o.disable_passes = BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE |
                               BRAID_PASS_REUSE | BRAID_PASS_CHUNK;
        braid_plan *p = NULL;
        cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
        for (int d = 0; d < 3; d++)
            cr_assert_eq(matmuls_on(p, (bp_device){BP_DEVICE_CUDA, d}), 2,
                         "cuda:%d", d);
        cr_assert_null(p->in.opts.shard_inputs,
                       "the plan keeps no user string");
        check_values(g, p, 10 + off);
        braid_plan_free(p);
    }
    braid_graph_free(g);
}

Test(shard, gpu_order_follows_the_device_list) {
    braid_graph *g = mlp(B, F, 1);
    braid_plan *p = NULL;
    cr_assert_eq(compile_sharded(g, "cuda:2, cpu, cuda:1,cuda:0", 2, "x", &p),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(matmuls_on(p, (bp_device){BP_DEVICE_CUDA, 2}), 1);
    cr_assert_eq(matmuls_on(p, (bp_device){BP_DEVICE_CUDA, 1}), 1);
    cr_assert_eq(matmuls_on(p, (bp_device){BP_DEVICE_CUDA, 0}), 0);
    check_values(g, p, 20);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Outputs that are a split input itself, a value independent of the split
 * inputs (replica 0's), and one output named twice. */
Test(shard, output_kinds) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {B, F}, pd[1] = {F};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor q = braid_input(g, "q", BRAID_F32, 1, pd);
    braid_tensor t = braid_exp(g, q);
    braid_output(g, "x_again", x);
    braid_output(g, "t", t);
    braid_tensor y = braid_mul(g, braid_sin(g, x), t);
    braid_output(g, "y", y);
    braid_output(g, "y2", y);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p = NULL;
    cr_assert_eq(compile_sharded(g, "cpu,cuda:0,cuda:1", 2, " x ", &p),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    check_values(g, p, 30);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- random batch graphs ----------------------------------------------------- */

typedef struct rb_ctx {
    braid_graph *g;
    uint64_t rng;
    uint64_t seed;
} rb_ctx;

static braid_tensor rb_const(rb_ctx *c, int rank, const int64_t *dims) {
    return rand_const(c->g, rank, dims, c->seed++);
}

static braid_tensor rb_reshape(rb_ctx *c, braid_tensor a, int rank,
                               int64_t d1, int64_t d2) {
    int64_t d[3] = {B, d1, d2};
    if (rank == 1) d[0] = B * F;
    return braid_reshape(c->g, a, rank, d);
}

/* One batch-preserving step from a and b ([B, F] each) to a [B, F]. */
static braid_tensor rb_step(rb_ctx *c, braid_tensor a, braid_tensor b) {
    braid_graph *g = c->g;
    int64_t f[1] = {F}, ff[2] = {F, F}, bf[2] = {B, F};
    int64_t h2[2] = {F / 2, F / 2}, bh[3] = {B, F / 2, F / 2};
    static const braid_op unary[] = {BRAID_OP_TANH, BRAID_OP_GELU,
                                     BRAID_OP_SIGMOID, BRAID_OP_NEG,
                                     BRAID_OP_SIN, BRAID_OP_RELU};
    int axis1[1] = {1};
    switch (ts_rand_int(&c->rng, 0, 15)) {
    case 0:
        return braid_unary(g, unary[ts_rand_int(&c->rng, 0, 5)], a);
    case 1:
        return braid_add(g, a, b);
    case 2: /* a plain row vector, broadcast */
        return braid_mul(g, a, rb_const(c, 1, f));
    case 3: /* a plain [B, F]: sliced to each replica's rows */
        return braid_sub(g, a, rb_const(c, 2, bf));
    case 4:
        return braid_matmul(g, a, rb_const(c, 2, ff), 0);
    case 5:
        return braid_matmul(g, a, rb_const(c, 2, ff), BRAID_TRANSPOSE_B);
    case 6:
        return braid_softmax(g, a, 1);
    case 7:
        return braid_layer_norm(g, a, rb_const(c, 1, f), rb_const(c, 1, f),
                                1e-5);
    case 8: /* flatten and back */
        return rb_reshape(c, braid_tanh(g, rb_reshape(c, a, 1, 0, 0)), 2, F,
                          0);
    case 9: { /* rank 3, permute the trailing axes, back */
        int perm[3] = {0, 2, 1};
        braid_tensor t = braid_permute(g, rb_reshape(c, a, 3, 2, F / 2), perm);
        return rb_reshape(c, braid_square(g, t), 2, F, 0);
    }
    case 10: { /* concat along axis 1, take every other column */
        braid_tensor xs[2] = {a, b};
        int64_t start[2] = {0, 1}, stop[2] = {B, 2 * F}, step[2] = {1, 2};
        return braid_slice(g, braid_concat(g, 2, xs, 1), start, stop, step);
    }
    case 11:
        return braid_add(g, a,
                         braid_broadcast_to(g, braid_sum(g, b, 1, axis1, true),
                                            2, bf));
    case 12:
        return braid_where(g, braid_gt(g, a, b), a, b);
    case 13: { /* batched matmul: with a shared [F/2, F/2], then with a
                  per-row [B, F/2, F/2] (sliced to the rows) */
        braid_tensor t = rb_reshape(c, a, 3, 2, F / 2);
        t = braid_matmul(g, t, rb_const(c, 2, h2), 0);
        t = braid_matmul(g, t, rb_const(c, 3, bh), BRAID_TRANSPOSE_B);
        return rb_reshape(c, t, 2, F, 0);
    }
    case 14:
        return braid_add(g, a, braid_mean(g, b, 1, axis1, true));
    default: /* a generated [B, F]: replicated, sliced to the rows */
        return braid_add(g, a, braid_random_uniform(g, BRAID_F32, 2, bf,
                                                    c->seed++, -1, 1));
    }
}

static braid_graph *random_batch_graph(uint64_t seed) {
    rb_ctx c = {braid_graph_new(NULL), seed * 0x9E3779B97F4A7C15ull + 1,
                seed * 1000};
    int64_t bf[2] = {B, F}, f[1] = {F};
    braid_tensor pool[16];
    int n = 0;
    pool[n++] = braid_input(c.g, "x", BRAID_F32, 2, bf);
    pool[n++] = braid_input(c.g, "x2", BRAID_F32, 2, bf);
    braid_tensor q = braid_input(c.g, "q", BRAID_F32, 1, f); /* unsplit */
    pool[n++] = braid_mul(c.g, pool[0], q);
    int steps = ts_rand_int(&c.rng, 4, 9);
    for (int s = 0; s < steps; s++) {
        braid_tensor a = pool[ts_rand_int(&c.rng, 0, n - 1)];
        braid_tensor b = pool[ts_rand_int(&c.rng, 0, n - 1)];
        braid_tensor t = rb_step(&c, a, b);
        if (n < 16) pool[n++] = t;
        else pool[ts_rand_int(&c.rng, 3, 15)] = t;
    }
    braid_output(c.g, "y", pool[n - 1]);
    braid_output(c.g, "z", pool[ts_rand_int(&c.rng, 2, n - 1)]);
    braid_output(c.g, "qq", braid_square(c.g, q));
    cr_assert_eq(braid_graph_status(c.g), BRAID_OK, "seed %llu: %s",
                 (unsigned long long)seed, braid_graph_error(c.g));
    return c.g;
}

Test(shard, random_batch_graphs) {
    for (uint64_t seed = 1; seed <= 40; seed++) {
        braid_graph *g = random_batch_graph(seed);
        int k = 2 + (int)(seed % 2);
        braid_plan *p = NULL;
        braid_status s = compile_sharded(g, GPUS3, k, "x,x2", &p);
        if (s != BRAID_OK) ts_log_graph(g);
        cr_assert_eq(s, BRAID_OK, "seed %llu: %s", (unsigned long long)seed,
                     braid_last_error());
        cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
        check_values(g, p, seed * 100);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* The shared random generator's graphs (any op, any shape): each is either
 * sharded with the reference's results, or refused with a message naming
 * why. */
Test(shard, shared_random_graphs) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    int sharded = 0, refused = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        braid_graph *g = ts_random_graph(seed, &o);
        cr_assert(g);
        braid_plan *p = NULL;
        braid_status s = compile_sharded(g, "cpu,cuda:0,cuda:1", 2, NULL, &p);
        if (s == BRAID_OK) {
            cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s",
                         braid_last_error());
            check_values(g, p, seed * 13);
            sharded++;
        } else {
            cr_assert(s == BRAID_ERR_INVALID_ARGUMENT ||
                          s == BRAID_ERR_UNSUPPORTED,
                      "seed %llu: %s: %s", (unsigned long long)seed,
                      braid_status_name(s), braid_last_error());
            cr_assert(strstr(braid_last_error(), "shard"), "%s",
                      braid_last_error());
            refused++;
        }
        braid_plan_free(p);
        braid_graph_free(g);
    }
    cr_log_info("shared random graphs: %d sharded, %d refused", sharded,
                refused);
    cr_assert_gt(sharded, 0);
}

/* ---- errors ----------------------------------------------------------------------- */

static void expect_error(const braid_graph *g, const char *devices,
                         int shards, const char *inputs, braid_status want,
                         const char *needle) {
    braid_plan *p = (braid_plan *)1;
    braid_status s = compile_sharded(g, devices, shards, inputs, &p);
    cr_assert_eq(s, want, "shards %d inputs %s: got %s: %s", shards,
                 inputs ? inputs : "NULL", braid_status_name(s),
                 braid_last_error());
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), needle), "\"%s\" lacks \"%s\"",
              braid_last_error(), needle);
}

Test(shard, option_errors) {
    braid_graph *g = mlp(B, F, 1);
    expect_error(g, "cpu,cuda:0,cuda:1", 3, "x", BRAID_ERR_INVALID_ARGUMENT,
                 "list 2 GPUs");
    expect_error(g, "cpu", 2, "x", BRAID_ERR_INVALID_ARGUMENT, "list 0 GPUs");
    expect_error(g, "cpu,cuda:0,cuda:1", -1, "x", BRAID_ERR_INVALID_ARGUMENT,
                 "shards is -1");
    expect_error(g, "cpu,cuda:0,cuda:1", 2, "x,nope", BRAID_ERR_NOT_FOUND,
                 "\"nope\"");
    expect_error(g, "cpu,cuda:0,cuda:1", 2, "x,,x", BRAID_ERR_INVALID_ARGUMENT,
                 "empty entry");
    expect_error(g, "cpu,cuda:0,cuda:1", 2, "", BRAID_ERR_INVALID_ARGUMENT,
                 "empty entry");
    braid_graph_free(g);
    g = mlp(7, F, 1); /* 7 rows do not divide by 2 */
    expect_error(g, "cpu,cuda:0,cuda:1", 2, "x", BRAID_ERR_INVALID_ARGUMENT,
                 "input \"x\" cannot be split 2 ways");
    expect_error(g, "cpu,cuda:0,cuda:1", 2, NULL, BRAID_ERR_INVALID_ARGUMENT,
                 "no input is split");
    braid_graph_free(g);
    /* shards 0 and 1 leave the graph alone, whatever shard_inputs says */
    g = mlp(7, F, 1);
    for (int k = 0; k < 2; k++) {
        braid_plan *p = NULL;
        cr_assert_eq(compile_sharded(g, "cpu", k, "nope", &p), BRAID_OK, "%s",
                     braid_last_error());
        braid_plan_free(p);
    }
    braid_graph_free(g);
}

/* Outputs that depend on a split input without a batch dim 0. */
Test(shard, lost_batch_dim) {
    int64_t xd[2] = {B, F}, wd[2] = {B, F};
    struct {
        const char *what, *needle;
    } cases[] = {
        {"sum", "reduces over the split dim 0"},
        {"gram", "contracts over"},
        {"permute", "moves the split dim 0"},
        {"slice", "slices along the split dim 0"},
        {"concat", "concatenates along the split dim 0"},
        {"reshape", "does not divide by the shard count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd), y;
        int perm[2] = {1, 0};
        int64_t start[2] = {1, 0}, stop[2] = {B, F}, r[2] = {3, B * F / 3};
        braid_tensor xs[2] = {x, x};
        switch (i) {
        case 0: y = braid_sum(g, braid_exp(g, x), 0, NULL, false); break;
        case 1:
            y = braid_matmul(g, x, rand_const(g, 2, wd, 5), BRAID_TRANSPOSE_A);
            break;
        case 2: y = braid_permute(g, x, perm); break;
        case 3: y = braid_slice(g, x, start, stop, NULL); break;
        case 4: y = braid_concat(g, 2, xs, 0); break;
        default: y = braid_reshape(g, x, 2, r); break;
        }
        braid_set_name(g, y, "loss");
        braid_output(g, "out", braid_tanh(g, y));
        cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s",
                     braid_graph_error(g));
        expect_error(g, "cpu,cuda:0,cuda:1", 2, "x", BRAID_ERR_INVALID_ARGUMENT,
                     cases[i].needle);
        cr_assert(strstr(braid_last_error(), "output \"out\""), "%s",
                  braid_last_error());
        cr_assert(strstr(braid_last_error(), "\"loss\""), "%s",
                  braid_last_error());
        cr_log_info("%s: %s", cases[i].what, braid_last_error());
        braid_graph_free(g);
    }
}

/* A lost value that no output needs is fine (only outputs are gathered). */
Test(shard, lost_value_unused_by_outputs) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {B, F};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor s = braid_sum(g, x, 0, NULL, false);
    (void)s;
    braid_output(g, "y", braid_cos(g, x));
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0,cuda:1";
    o.shards = 2;
    o.disable_passes = BRAID_PASS_SIMPLIFY; /* the sum stays in the graph */
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    check_values(g, p, 50);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(shard, collectives_refused) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {B, F};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor xs[2] = {braid_exp(g, x), braid_sin(g, x)}, ys[2];
    cr_assert_eq(braid_all_reduce(g, 2, xs, BRAID_REDUCE_SUM, ys), BRAID_OK);
    braid_output(g, "y", ys[0]);
    braid_output(g, "y1", ys[1]);
    expect_error(g, "cpu,cuda:0,cuda:1", 2, "x", BRAID_ERR_UNSUPPORTED,
                 "cannot be sharded");
    braid_graph_free(g);
}
