/* runtime/collective_host.c — what a collective member computes, on the
 * host: for the reference evaluator (values as double) and for the CPU
 * kernel (a group placed on the cpu, in its local form, where member r
 * reads every rank's input). GPU groups run through NCCL instead
 * (runtime/cuda/nccl.c). Element i of member r (m: its own output's numel,
 * m_in: an input's numel):
 *   all_reduce      R over j of in_j[i]
 *   reduce_scatter  R over j of in_j[r·m + i]
 *   all_gather      in_{i / m_in}[i mod m_in]
 *   broadcast       in_root[i]
 * R sums in float64 (i32 in uint32, wrapping, like every i32 sum in
 * braid), max/min propagate NaN, avg is the sum over k. */
#include "runtime/collective_host.h"

#include <math.h>

/* Combines a and b under reduction red in dtype t's arithmetic. */
static double combine(braid_reduce_kind red, braid_dtype t, double a,
                      double b) {
    switch (red) {
    case BRAID_REDUCE_MAX:
        return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case BRAID_REDUCE_MIN:
        return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    default: /* sum, avg */
        if (t == BRAID_I32) {
            uint32_t s = (uint32_t)(int32_t)a + (uint32_t)(int32_t)b;
            return (double)(int32_t)s;
        }
        return a + b;
    }
}

double br_coll_element(const bg_node *n, int64_t i, br_coll_load_fn load,
                       void *ctx) {
    int64_t k = bg_coll_size(n), m = bg_numel(n);
    int r = bg_coll_rank(n);
    switch (n->op) {
    case BRAID_OP_BROADCAST:
        return load(ctx, bg_coll_root(n), i);
    case BRAID_OP_ALL_GATHER: {
        int64_t m_in = m / k;
        return load(ctx, (int)(i / m_in), i % m_in);
    }
    default: {
        int64_t at = n->op == BRAID_OP_REDUCE_SCATTER ? (int64_t)r * m + i : i;
        braid_reduce_kind red = bg_coll_reduce(n);
        double acc = load(ctx, 0, at);
        for (int j = 1; j < k; j++)
            acc = combine(red, n->dtype, acc, load(ctx, j, at));
        return red == BRAID_REDUCE_AVG ? acc / (double)k : acc;
    }
    }
}

braid_status br_coll_check_local(const braid_graph *g, uint32_t id,
                                 const char *who) {
    const bg_node *n = bg_node_at(g, id);
    int64_t k = bg_coll_size(n);
    if (!bg_coll_local(n))
        return bg_set_last_error(
            BRAID_ERR_UNSUPPORTED,
            "%s: node %u (%s, rank %d of %lld, group %llu) reads only its own "
            "rank's input: the other ranks run elsewhere (another process, "
            "or GPUs through NCCL), so it cannot be computed here",
            who, id, bg_op(n->op)->name, bg_coll_rank(n), (long long)k,
            (unsigned long long)bg_coll_group(n));
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    int64_t m_in = bg_numel(x), m = bg_numel(n);
    bool ok = k >= 1 && bg_coll_rank(n) >= 0 && bg_coll_rank(n) < k &&
              x->dtype == n->dtype;
    for (uint32_t j = 1; ok && j < n->ninputs; j++)
        ok = bg_numel(bg_node_at(g, n->inputs[j])) == m_in;
    if (ok && n->op == BRAID_OP_ALL_GATHER) ok = m == m_in * k;
    if (ok && n->op == BRAID_OP_REDUCE_SCATTER) ok = m * k == m_in;
    if (ok && (n->op == BRAID_OP_ALL_REDUCE || n->op == BRAID_OP_BROADCAST))
        ok = m == m_in;
    if (ok && n->op == BRAID_OP_BROADCAST)
        ok = bg_coll_root(n) >= 0 && bg_coll_root(n) < k;
    if (ok && n->op != BRAID_OP_BROADCAST && n->op != BRAID_OP_ALL_GATHER)
        ok = bg_coll_reduce(n) < BRAID_REDUCE_COUNT_;
    if (!ok)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "%s: node %u (%s): inconsistent collective "
                                 "attributes or input sizes",
                                 who, id, bg_op(n->op)->name);
    return BRAID_OK;
}

/* ---- the CPU kernel ------------------------------------------------------ */

typedef struct typed_ctx {
    braid_dtype t;              /* the inputs' dtype */
    const void *const *in;      /* per rank: its buffer */
} typed_ctx;

static double load_typed(void *ctx, int j, int64_t i) {
    const typed_ctx *c = ctx;
    return bg_load(c->t, c->in[j], i);
}

void br_coll_cpu_run(const braid_graph *g, uint32_t id,
                     const void *const *in, void *out) {
    const bg_node *n = bg_node_at(g, id);
    typed_ctx c = {n->dtype, in};
    int64_t m = bg_numel(n);
    for (int64_t i = 0; i < m; i++)
        bg_store(n->dtype, out, i, br_coll_element(n, i, load_typed, &c));
}
