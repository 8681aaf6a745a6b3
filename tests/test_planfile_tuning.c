/* tests/test_planfile_tuning.c — the plan's tuning records (passes/plan.h,
 * bp_conv_choice: what an executor chose for a conv node on one GPU model
 * and cuDNN version) in plan files: the optional TUNING section
 * (docs/plan-format.md) written when a plan has records and only then,
 * read back equal, the same bytes again on a second save, and every broken
 * rule refused with a message naming the section and field. Runs without
 * a GPU: records are noted here as an executor notes them
 * (runtime/cuda/cuda_conv.c; tests/test_cuda_conv.c checks that an
 * executor writes and then uses them on a GPU). */
#define _POSIX_C_SOURCE 200809L

#include "planfile_support.h"

/* Two convolutions on cuda:0 (ids in *conv) and a relu between them. */
static braid_plan *conv_plan(braid_graph **graph, uint32_t conv[2]) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[4] = {2, 3, 9, 9}, wd[4] = {4, 3, 3, 3},
                  w2d[4] = {5, 4, 1, 1};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, xd);
    braid_tensor w = braid_input(g, "w", BRAID_F32, 4, wd);
    braid_tensor w2 = braid_input(g, "w2", BRAID_F32, 4, w2d);
    braid_conv_params p = {.pads = {1, 1, 1, 1}};
    braid_tensor y = braid_conv(g, x, w, BRAID_NONE, &p);
    braid_tensor r = braid_relu(g, y);
    braid_conv_params p2 = {.strides = {2, 2}};
    braid_tensor z = braid_conv(g, r, w2, BRAID_NONE, &p2);
    braid_output(g, "z", z);
    braid_set_device(g, y, "cuda:0");
    braid_set_device(g, r, "cuda:0");
    braid_set_device(g, z, "cuda:0");
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none";
    braid_plan *pl = NULL;
    cr_assert_eq(braid_compile(g, &o, &pl), BRAID_OK, "%s", braid_last_error());
    uint32_t n = 0;
    for (uint32_t id = 0; id < pl->res.graph->nnodes; id++)
        if (pl->res.graph->nodes[id].op == BRAID_OP_CONV) {
            cr_assert_lt(n, 2);
            cr_assert_eq(pl->res.info[id].device.kind, BP_DEVICE_CUDA);
            conv[n++] = id;
        }
    cr_assert_eq(n, 2, "the plan keeps both convolutions");
    *graph = g;
    return pl;
}

static bp_conv_choice choice(uint32_t node, const char *device, int32_t algo,
                             uint64_t ws) {
    bp_conv_choice c = {.node = node, .cc = 90, .cudnn = 91400,
                        .algo = algo, .math = 3, .workspace = ws};
    snprintf(c.device, sizeof c.device, "%s", device);
    return c;
}

static uint32_t section_count(const unsigned char *d) {
    return (uint32_t)d[20] | (uint32_t)d[21] << 8 | (uint32_t)d[22] << 16 |
           (uint32_t)d[23] << 24;
}

/* The TUNING entry's flags, or -1 when the file has none. */
static int64_t tuning_flags(const unsigned char *d) {
    for (uint32_t i = 0; i < section_count(d); i++) {
        const unsigned char *e = d + 64 + 32 * (size_t)i;
        if (e[0] == BR_PF_TUNING && !e[1] && !e[2] && !e[3])
            return e[4] | e[5] << 8 | e[6] << 16 | (int64_t)e[7] << 24;
    }
    return -1;
}

Test(planfile_tuning, records_round_trip) {
    braid_graph *g;
    uint32_t conv[2];
    braid_plan *p = conv_plan(&g, conv);
    size_t n0;
    unsigned char *d0 = pf_save(p, &n0);
    cr_assert_eq(section_count(d0), 7, "no records: no TUNING section");
    cr_assert_eq(tuning_flags(d0), -1);
    /* noted out of order, one replaced by a later note of its key */
    bp_conv_choice c[4] = {choice(conv[1], "NVIDIA H200", -1, 0),
                           choice(conv[0], "NVIDIA H200", 1, 4096),
                           choice(conv[0], "NVIDIA H100 80GB HBM3", 0, 0),
                           choice(conv[0], "NVIDIA H200", 6, 1 << 20)};
    for (int i = 0; i < 4; i++) cr_assert(bp_tuning_note(p, &c[i]));
    cr_assert_eq(p->tune.nconv, 3, "a note of the same key replaces");
    size_t n1;
    unsigned char *d1 = pf_save(p, &n1);
    cr_assert_eq(section_count(d1), 8);
    cr_assert_eq(tuning_flags(d1), 0, "TUNING is written optional");
    braid_plan *q = NULL;
    cr_assert_eq(br_planfile_load(d1, n1, NULL, "plan file", &q), BRAID_OK,
                 "%s", braid_last_error());
    bp_conv_choice *a, *b;
    uint32_t na, nb;
    cr_assert(bp_tuning_snapshot(p, &a, &na));
    cr_assert(bp_tuning_snapshot(q, &b, &nb));
    cr_assert_eq(na, 3);
    cr_assert_eq(nb, 3);
    cr_assert_eq(memcmp(a, b, 3 * sizeof *a), 0, "records read back equal");
    cr_assert(a[0].node == conv[0] && a[2].node == conv[1], "sorted by node");
    bp_conv_choice got;
    cr_assert(bp_tuning_find(q, conv[0], "NVIDIA H200", 90, 91400, &got));
    cr_assert_eq(got.algo, 6);
    cr_assert_eq(got.workspace, 1u << 20);
    cr_assert(!bp_tuning_find(q, conv[0], "NVIDIA H200", 90, 91401, &got),
              "another cuDNN version is another key");
    cr_assert(!bp_tuning_find(q, conv[0], "NVIDIA A100", 80, 91400, &got));
    size_t n2;
    unsigned char *d2 = pf_save(q, &n2);
    cr_assert_eq(n2, n1);
    cr_assert_eq(memcmp(d1, d2, n1), 0, "the same plan, the same bytes");
    free(a), free(b);
    free(d0), free(d1), free(d2);
    braid_plan_free(q);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A plan whose records break one rule each: the load fails naming
 * TUNING and the field. */
static void refused(const bp_conv_choice *bad, int nbad, const char *needle) {
    braid_graph *g;
    uint32_t conv[2];
    braid_plan *p = conv_plan(&g, conv);
    for (int i = 0; i < nbad; i++) {
        /* placed directly: bp_tuning_note would merge equal keys */
        cr_assert(bp_grow((void **)&p->tune.conv, p->tune.nconv,
                          &p->tune.cap, sizeof *p->tune.conv, "test"));
        p->tune.conv[p->tune.nconv++] = bad[i];
    }
    size_t n;
    unsigned char *d = pf_save(p, &n);
    braid_plan *q = NULL;
    braid_status s = br_planfile_load(d, n, NULL, "plan file", &q);
    cr_assert_eq(s, BRAID_ERR_PARSE, "%s: %s", needle, braid_last_error());
    cr_assert_null(q);
    pf_assert_error_shape(s, needle);
    cr_assert(strstr(braid_last_error(), "TUNING"), "%s",
              braid_last_error());
    cr_assert(strstr(braid_last_error(), needle), "\"%s\" lacks \"%s\"",
              braid_last_error(), needle);
    free(d);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(planfile_tuning, broken_records_refused) {
    braid_graph *g;
    uint32_t conv[2];
    braid_plan *p = conv_plan(&g, conv);
    uint32_t relu = BG_NONE, nn = p->res.graph->nnodes;
    for (uint32_t id = 0; id < nn; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_RELU) relu = id;
    cr_assert_neq(relu, BG_NONE);
    braid_plan_free(p);
    braid_graph_free(g);

    bp_conv_choice c = choice(relu, "NVIDIA H200", 1, 0);
    refused(&c, 1, "not a conv node");
    c = choice(nn + 5, "NVIDIA H200", 1, 0);
    refused(&c, 1, "not a conv node");
    c = choice(conv[0], "", 1, 0);
    refused(&c, 1, "device");
    c = choice(conv[0], "NVIDIA\tH200", 1, 0);
    refused(&c, 1, "device");
    c = choice(conv[0], "NVIDIA H200", 64, 0);
    refused(&c, 1, "algo");
    c = choice(conv[0], "NVIDIA H200", -2, 0);
    refused(&c, 1, "algo");
    c = choice(conv[0], "NVIDIA H200", 1, (uint64_t)1 << 41);
    refused(&c, 1, "workspace");
    c = choice(conv[0], "NVIDIA H200", 1, 0);
    c.math = 4;
    refused(&c, 1, "math");
    c.math = 3;
    c.cc = 5;
    refused(&c, 1, "cc");
    c.cc = 90;
    c.cudnn = -1;
    refused(&c, 1, "cudnn");
    bp_conv_choice twice[2] = {choice(conv[1], "NVIDIA H200", 1, 0),
                               choice(conv[1], "NVIDIA H200", 2, 0)};
    refused(twice, 2, "repeated");
}
