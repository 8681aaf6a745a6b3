/* tests/test_onnx_models.c — the tiny GPT-2 and CNN of tests/models/tiny
 * (both PyTorch exporters, made by ../shared/models/export_models.py):
 * import, compile for the cpu, run on the stored input and compare with
 * PyTorch's stored output; again after a plan-file save and load.
 *
 * A model whose ops braid lacks yet must fail at import naming the op
 * (the `missing` column); when the op lands, its row's `missing` becomes
 * NULL and the model must match. The imported graph holds `attention`
 * attention nodes: the exporters' attention subgraph, one op per block
 * (onnx/fuse_attention.c). */
#define _POSIX_C_SOURCE 200809L
#include "tests/onnx_support.h"

#ifdef BRAID_NO_ONNX
OS_STUB_TEST(onnx_models)
#else

typedef struct model_case {
    const char *name;    /* tests/models/tiny/<name>.onnx */
    const char *missing; /* "(Op," the import still refuses, or NULL */
    uint32_t attention;  /* attention nodes of the imported graph */
} model_case;

static const model_case cases[] = {
    {"tiny_gpt2_b1_s16_dynamo", NULL, 2},
    {"tiny_gpt2_b1_s16_ts", NULL, 2},
    {"tiny_resnet_b2_dynamo", NULL, 0},
    {"tiny_resnet_b2_ts", NULL, 0},
};

static void check_model(const model_case *c) {
    char *dir = tf_mkdtemp();
    os_stage_fixture(dir, c->name);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, c->name);
    braid_graph *g = NULL;
    braid_status s = braid_onnx_import(path, NULL, &g);
    if (c->missing) {
        cr_assert_eq(s, BRAID_ERR_UNSUPPORTED, "%s: %s", c->name,
                     braid_last_error());
        cr_assert(strstr(braid_last_error(), c->missing), "%s: %s", c->name,
                  braid_last_error());
        tf_rmtree(dir);
        free(dir);
        return;
    }
    cr_assert_eq(s, BRAID_OK, "%s: %s", c->name, braid_last_error());
    uint32_t att = 0;
    for (uint32_t id = 0; id < g->nnodes; id++)
        att += g->nodes[id].op == BRAID_OP_ATTENTION;
    cr_assert_eq(att, c->attention, "%s: %u attention nodes", c->name,
                 (unsigned)att);
    os_check_graph(g, dir, c->name, 1e-3, 1e-4);
    /* the same plan through a plan file */
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL, *q = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    void *bytes = NULL;
    size_t n = 0;
    cr_assert_eq(braid_plan_save_memory(p, &bytes, &n), BRAID_OK);
    cr_assert_eq(braid_plan_load_memory(bytes, n, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    os_check_plan(g, q, dir, c->name, 1e-3, 1e-4);
    free(bytes);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
    tf_rmtree(dir);
    free(dir);
}

Test(onnx_models, gpt2_dynamo) { check_model(&cases[0]); }
Test(onnx_models, gpt2_torchscript) { check_model(&cases[1]); }
Test(onnx_models, resnet_dynamo) { check_model(&cases[2]); }
Test(onnx_models, resnet_torchscript) { check_model(&cases[3]); }

#endif /* BRAID_NO_ONNX */
