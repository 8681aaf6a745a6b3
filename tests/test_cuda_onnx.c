/* tests/test_cuda_onnx.c — imported ONNX models on the GPU: every node
 * hinted to cuda:0, compared with ONNX's reference evaluator (the models
 * of tests/onnx/make_models.py) and with PyTorch's stored outputs (the tiny
 * fixtures, once the ops they need exist), the tiny CNNs also through the
 * channels_last pass. Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include "tests/onnx_support.h"
#include "tests/test_cuda_common.h"

#ifdef BRAID_NO_ONNX
Test(cuda_onnx, built_without_onnx) { cr_skip_test("built without ONNX"); }
#else

/* The model compiled for cuda:0 (allow_tf32 as tf32) against the stored
 * outputs; returns the plan's channels-last convolutions. */
static int on_gpu_with(const char *dir, const char *name, const char *shapes,
                       double rtol, double atol, bool tf32) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = shapes;
    braid_graph *g = NULL;
    braid_status s = braid_onnx_import(path, &o, &g);
    if (s == BRAID_ERR_UNSUPPORTED) {
        cr_log_warn("%s: %s", name, braid_last_error());
        return 0;
    }
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    tc_hint_all(g, "cuda:0");
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu,cuda:0";
    co.allow_tf32 = tf32;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "%s", braid_last_error());
    int last = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        last +=
            n->op == BRAID_OP_CONV && (n->attr.flags & BG_CONV_CHANNELS_LAST);
    }
    os_check_plan(g, p, dir, name, rtol, atol);
    braid_plan_free(p);
    braid_graph_free(g);
    return last;
}

static void on_gpu(const char *dir, const char *name, const char *shapes,
                   double rtol, double atol) {
    on_gpu_with(dir, name, shapes, rtol, atol, false);
}

Test(cuda_onnx, generated_models_match_onnx_reference) {
    TC_REQUIRE_GPU();
    char *dir = tf_mkdtemp();
    os_make_models(dir, 3);
    on_gpu(dir, "mlp", NULL, 1e-4, 1e-5);
    on_gpu(dir, "ext", NULL, 1e-6, 1e-6);
    on_gpu(dir, "names", NULL, 0, 0);
    tf_rmtree(dir);
    free(dir);
}

Test(cuda_onnx, tiny_models_match_pytorch) {
    TC_REQUIRE_GPU();
    const char *names[] = {"tiny_gpt2_b1_s16_dynamo", "tiny_gpt2_b1_s16_ts",
                           "tiny_resnet_b2_dynamo", "tiny_resnet_b2_ts"};
    char *dir = tf_mkdtemp();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        os_stage_fixture(dir, names[i]);
        on_gpu(dir, names[i], NULL, 1e-3, 1e-4);
    }
    tf_rmtree(dir);
    free(dir);
}

/* The tiny CNNs through the channels_last pass (passes/channels_last.c):
 * with TF32 (PyTorch's outputs within TF32's looser bound, atol 1e-2 as
 * tools/gpu-models.sh), and forced without TF32 (BRAID_CONV_LAYOUT=nhwc:
 * cuDNN's FMA math, so f32's own tolerance). Each plan has channels-last
 * convolutions. */
Test(cuda_onnx, tiny_cnns_channels_last) {
    TC_REQUIRE_GPU();
    const char *names[] = {"tiny_resnet_b2_dynamo", "tiny_resnet_b2_ts"};
    char *dir = tf_mkdtemp();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        os_stage_fixture(dir, names[i]);
        unsetenv("BRAID_CONV_LAYOUT");
        cr_assert_gt(on_gpu_with(dir, names[i], NULL, 1e-3, 1e-2, true), 0,
                     "%s: TF32 plan channels last", names[i]);
        setenv("BRAID_CONV_LAYOUT", "nhwc", 1);
        cr_assert_gt(on_gpu_with(dir, names[i], NULL, 1e-3, 1e-4, false), 0,
                     "%s: nhwc forced", names[i]);
        unsetenv("BRAID_CONV_LAYOUT");
    }
    tf_rmtree(dir);
    free(dir);
}

#endif /* BRAID_NO_ONNX */
