/* tests/test_cuda_onnx.c — imported ONNX models on the GPU: every node
 * hinted to cuda:0, compared with ONNX's reference evaluator (the models
 * of tests/onnx/make_models.py) and with PyTorch's stored outputs (the tiny
 * fixtures, once the ops they need exist). Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include "tests/onnx_support.h"
#include "tests/test_cuda_common.h"

#ifdef BRAID_NO_ONNX
Test(cuda_onnx, built_without_onnx) { cr_skip_test("built without ONNX"); }
#else

static void on_gpu(const char *dir, const char *name, const char *shapes,
                   double rtol, double atol) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = shapes;
    braid_graph *g = NULL;
    braid_status s = braid_onnx_import(path, &o, &g);
    if (s == BRAID_ERR_UNSUPPORTED) {
        cr_log_warn("%s: %s", name, braid_last_error());
        return;
    }
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    tc_hint_all(g, "cuda:0");
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu,cuda:0";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "%s", braid_last_error());
    os_check_plan(g, p, dir, name, rtol, atol);
    braid_plan_free(p);
    braid_graph_free(g);
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

#endif /* BRAID_NO_ONNX */
