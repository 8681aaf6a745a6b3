/* graph/grad.c — reverse-mode autodiff: braid_grad (docs/training.md).
 * The first commit declares the API and fails cleanly; the rules follow. */
#include "graph/internal.h"

braid_status braid_grad(braid_graph *g, braid_tensor loss, size_t n,
                        const braid_tensor *wrt, braid_tensor *grads_out) {
    (void)loss;
    (void)wrt;
    if (grads_out != NULL)
        for (size_t i = 0; i < n; i++) grads_out[i] = BRAID_NONE;
    if (g == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "grad: graph is NULL");
    return bg_fail(g, BRAID_ERR_UNSUPPORTED, "grad: not built yet");
}
