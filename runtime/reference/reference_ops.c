/* runtime/reference/reference_ops.c — the reference evaluator's op kernels:
 * graph/eval.c for every op it knows (the same float64 core constant
 * folding uses), and the collectives, whose members need the host's
 * collective arithmetic (runtime/collective_host.c). */
#include "graph/eval.h"
#include "runtime/collective_host.h"
#include "runtime/reference/reference.h"

/* Element idx of rank j's values (a collective's local-form inputs). */
static double ref_coll_load(void *ctx, int j, int64_t idx) {
    const double *const *in = *(const double *const *const *)ctx;
    return in[j][idx];
}

void br_ref_eval_range(const braid_graph *g, uint32_t id,
                       const double *const *in, double *out, const void *data,
                       int64_t lo, int64_t hi) {
    const bg_node *n = bg_node_at(g, id);
    if (bg_eval_node_range(g, id, in, out, data, lo, hi)) return;
    if (bg_op(n->op)->kind != BRAID_KIND_COLLECTIVE)
        return; /* fused nodes are refused by br_ref_check */
    struct {
        const double *const *in;
    } ctx = {in};
    for (int64_t i = lo; i < hi; i++)
        out[i] = bg_round(n->dtype, br_coll_element(n, i, ref_coll_load, &ctx));
}

bool br_ref_splits(const bg_node *n) {
    return bg_eval_splits(n);
}
