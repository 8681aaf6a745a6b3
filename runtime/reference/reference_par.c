/* runtime/reference/reference_par.c — the reference evaluator's loops on
 * the thread pool. Every output element is computed by the same naive code
 * whatever the split (br_ref_eval_range), so the values do not depend on
 * the number of threads; only the wall time does. */
#include "graph/attention.h"
#include "graph/window.h"
#include "runtime/reference/reference.h"
#include "runtime/runtime.h"

/* Element operations below which a node runs on the caller alone: thread
 * hand-off costs more than it saves. */
#define PAR_MIN_WORK 65536.0

typedef struct par_ctx {
    const braid_graph *g;
    uint32_t id;
    const double *const *in;
    double *out;
    const void *data;
} par_ctx;

static void par_range(void *ctx, int64_t lo, int64_t hi) {
    const par_ctx *c = ctx;
    br_ref_eval_range(c->g, c->id, c->in, c->out, c->data, lo, hi);
}

double br_ref_work(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    double numel = (double)bg_numel(n);
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_MATMUL: {
        const bg_node *a = bg_node_at(g, n->inputs[0]);
        int axis =
            (n->attr.flags & BRAID_TRANSPOSE_A) ? a->rank - 2 : a->rank - 1;
        return numel * (double)(a->dims[axis] > 0 ? a->dims[axis] : 1);
    }
    case BRAID_KIND_REDUCE:
    case BRAID_KIND_AXIS: /* per input element (topk: a sort's log more) */
        return (double)bg_numel(bg_node_at(g, n->inputs[0]));
    case BRAID_KIND_WINDOW:
        return numel * bg_window_volume(n);
    case BRAID_KIND_ATTENTION: { /* per output element: 2·T·D of a row */
        bg_attn_geom a;
        return bg_attn_geom_of(g, n, &a) ? bg_attn_macs(&a) : numel;
    }
    default:
        return numel;
    }
}

void br_ref_eval(const braid_graph *g, uint32_t id, const double *const *in,
                 double *out, const void *data, struct br_pool *pool) {
    const bg_node *n = bg_node_at(g, id);
    int64_t numel = bg_numel(n);
    double work = br_ref_work(g, id);
    if (!pool || !br_ref_splits(n) || work < PAR_MIN_WORK || numel < 2) {
        br_ref_eval_range(g, id, in, out, data, 0, numel);
        return;
    }
    /* chunks of about PAR_MIN_WORK operations each */
    double per = work / (double)numel;
    int64_t grain = (int64_t)(PAR_MIN_WORK / per);
    par_ctx c = {g, id, in, out, data};
    br_parallel_for(pool, numel, grain > 0 ? grain : 1, par_range, &c);
}
