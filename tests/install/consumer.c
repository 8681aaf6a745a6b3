/* Builds y = x + 1 with an installed braid and checks the result. */
#include <braid/braid.h>
#include <stdio.h>

int main(void) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t dims[1] = {4};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, dims);
    braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1.0);
    braid_output(g, "y", braid_add(g, x, one));
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    braid_input_binding bi = {"x", in, sizeof in};
    braid_output_binding bo = {"y", out, sizeof out};
    if (braid_compile(g, NULL, &p) != BRAID_OK ||
        braid_exec_new(p, &e) != BRAID_OK ||
        braid_run(e, &bi, 1, &bo, 1) != BRAID_OK) {
        fprintf(stderr, "consumer: %s\n", braid_last_error());
        return 1;
    }
    for (int i = 0; i < 4; i++)
        if (out[i] != in[i] + 1) return 1;
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    printf("consumer ok: braid %s\n", braid_version());
    return 0;
}
