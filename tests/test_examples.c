/* tests/test_examples.c — the example graphs and the MLP example program. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <math.h>

#include "../examples/mlp_build.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

#define GRAPHS BRAID_SOURCE_DIR "/examples/graphs"

/* examples/graphs/mlp.graph and mlp_build() must describe the same graph,
 * node for node. */
Test(examples, mlp_graph_equals_the_c_built_graph) {
    braid_graph *parsed = ts_load_ok(GRAPHS "/mlp.graph");
    braid_graph *built = braid_graph_new(NULL);
    braid_tensor y = mlp_build(built);
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(built));
    cr_assert_eq(braid_graph_node_count(parsed), braid_graph_node_count(built));
    cr_assert(bg_graph_equal(parsed, built),
              "examples/graphs/mlp.graph and examples/mlp_build.h differ");
    braid_graph_free(parsed);
    braid_graph_free(built);
}

/* Every example graph compiles for the CPU and matches the reference. */
Test(examples, every_graph_matches_the_reference, .timeout = 600) {
    DIR *d = opendir(GRAPHS);
    cr_assert(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".graph") != 0) continue;
        char *path = tf_path(GRAPHS, e->d_name);
        braid_graph *g = ts_load_ok(path);
        ts_io *io = ts_io_new(g, 2024);
        cr_assert(io);
        cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s: %s", e->d_name,
                     braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", e->d_name, msg);
        ts_io_free(io);
        braid_graph_free(g);
        free(path);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 2);
}

/* The block as braid_layer_norm + braid_softmax build it. */
static braid_graph *softmax_layernorm_via_composites(void) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[2] = {16, 64}, vd[1] = {64}, sd[1] = {1};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor gamma = braid_random_normal(g, BRAID_F32, 1, vd, 11, 1, 0.1);
    braid_tensor beta = braid_random_normal(g, BRAID_F32, 1, vd, 12, 0, 0.1);
    braid_tensor n = braid_layer_norm(g, x, gamma, beta, 1e-5);
    braid_tensor scores = braid_matmul(g, n, n, BRAID_TRANSPOSE_B);
    braid_tensor s =
        braid_mul(g, scores, braid_fill(g, BRAID_F32, 1, sd, 0.125));
    braid_tensor p = braid_softmax(g, s, -1);
    braid_tensor y = braid_matmul(g, p, n, 0);
    braid_output(g, "normed", n);
    braid_output(g, "probs", p);
    braid_output(g, "y", y);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* softmax_layernorm.graph spells out what the composites build: both give
 * the same reference values. */
Test(examples, softmax_layernorm_matches_the_composites) {
    braid_graph *a = ts_load_ok(GRAPHS "/softmax_layernorm.graph");
    braid_graph *b = softmax_layernorm_via_composites();
    ts_io *ia = ts_io_new(a, 5), *ib = ts_io_new(b, 5);
    cr_assert(ia && ib && ia->noutputs == 3 && ib->noutputs == 3);
    cr_assert_eq(ia->in[0].bytes, ib->in[0].bytes);
    memcpy((void *)ib->in[0].data, ia->in[0].data, ia->in[0].bytes);
    cr_assert_eq(braid_reference_run(a, ia->in, 1, ia->ref, 3), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_reference_run(b, ib->in, 1, ib->ref, 3), BRAID_OK, "%s",
                 braid_last_error());
    for (uint32_t o = 0; o < 3; o++) {
        cr_assert_str_eq(ia->ref[o].name, ib->ref[o].name);
        const float *x = ia->ref[o].data, *y = ib->ref[o].data;
        for (int64_t i = 0; i < ia->out_numel[o]; i++)
            cr_assert(fabsf(x[i] - y[i]) <= 1e-5f + 1e-5f * fabsf(y[i]),
                      "%s[%lld]: %g vs %g", ia->ref[o].name, (long long)i, x[i],
                      y[i]);
    }
    ts_io_free(ia);
    ts_io_free(ib);
    braid_graph_free(a);
    braid_graph_free(b);
}

/* The demo program (`make demo`) runs, prints its report and passes. */
Test(examples, mlp_program_passes, .timeout = 600) {
    char prog[1024];
    snprintf(prog, sizeof prog, "%s/mlp", BRAID_EXAMPLES_DIR);
    cr_assert_eq(access(prog, X_OK), 0, "%s not built", prog);
    char *dir = tf_mkdtemp();
    char *log = tf_path(dir, "mlp.txt");
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "'%s' > '%s' 2>&1", prog, log);
    int status = system(cmd);
    char *out = ts_read_file(log);
    cr_assert(out);
    cr_log_info("%s", out);
    cr_assert_eq(status, 0, "mlp failed:\n%s", out);
    static const char *const needles[] = {
        "braid ",      "devices: ", "plan (what runs where):",
        "first run: ", "median ",   "max abs err",
        "PASS"};
    for (size_t k = 0; k < sizeof needles / sizeof needles[0]; k++)
        cr_assert(strstr(out, needles[k]), "'%s' missing:\n%s", needles[k],
                  out);
    free(out);
    free(log);
    tf_rmtree(dir);
    free(dir);
}
