/* tests/test_onnx_models.c — the tiny GPT-2 and CNN of tests/models/tiny
 * (both PyTorch exporters, made by ../shared/models/export_models.py):
 * import, compile for the cpu, run on the stored input and compare with
 * PyTorch's stored output; again after a plan-file save and load.
 *
 * A model whose ops braid lacks yet must fail at import naming the op
 * (the `missing` column); when the op lands, its row's `missing` becomes
 * NULL and the model must match. The imported graph holds `attention`
 * attention nodes: the exporters' attention subgraph, one op per block
 * (onnx/fuse_attention.c). Its cpu plan has `residual` matmuls whose
 * epilogue adds both the bias and the residual stream (fuse rule 9: the
 * importer takes HF Conv1D's Reshape -> Gemm -> Reshape on the unflattened
 * tensor, onnx/ops_nn.c) and no add left on its own. */
#define _POSIX_C_SOURCE 200809L
#include "tests/onnx_support.h"

#include "passes/plan.h"

#ifdef BRAID_NO_ONNX
OS_STUB_TEST(onnx_models)
#else

typedef struct model_case {
    const char *name;    /* tests/models/tiny/<name>.onnx */
    const char *missing; /* "(Op," the import still refuses, or NULL */
    uint32_t attention;  /* attention nodes of the imported graph */
    uint32_t residual;   /* matmuls with a bias + residual epilogue */
} model_case;

static const model_case cases[] = {
    {"tiny_gpt2_b1_s16_dynamo", NULL, 2, 4},
    {"tiny_gpt2_b1_s16_ts", NULL, 2, 4},
    {"tiny_resnet_b2_dynamo", NULL, 0, 0},
    {"tiny_resnet_b2_ts", NULL, 0, 0},
};

/* Matmul programs of plan p adding two operands after the product, and
 * add nodes left unfused (*adds). */
static uint32_t residual_matmuls(const braid_plan *p, uint32_t *adds) {
    const braid_graph *pg = p->res.graph;
    uint32_t n = 0;
    *adds = 0;
    for (uint32_t id = 0; id < pg->nnodes; id++) {
        *adds += pg->nodes[id].op == BRAID_OP_ADD;
        uint32_t pi = p->res.info[id].program;
        if (pg->nodes[id].op != BRAID_OP_FUSED || pi >= p->res.nprograms)
            continue;
        const bp_program *prog = &p->res.programs[pi];
        uint32_t k = 0;
        for (uint32_t i = 0; i < prog->ninstr; i++)
            k += prog->instr[i].op == BRAID_OP_ADD;
        n += prog->kind == BP_PROGRAM_MATMUL && k == 2;
    }
    return n;
}

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
    uint32_t adds, res = residual_matmuls(p, &adds);
    cr_expect_eq(res, c->residual, "%s: %u matmuls add bias and residual",
                 c->name, (unsigned)res);
    cr_expect_eq(adds, 0, "%s: %u adds left unfused", c->name, (unsigned)adds);
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
