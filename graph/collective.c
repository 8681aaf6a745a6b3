/* graph/collective.c — the collective ops: type inference for bg_build and
 * the public group builders (braid_all_reduce & co., braid_rank_collective).
 * graph/collective.h describes the attributes and the two forms. */
#include "graph/collective.h"

#include <string.h>

const char *braid_reduce_name(braid_reduce_kind k) {
    static const char *const names[] = {"sum", "max", "min", "avg"};
    return (unsigned)k < BRAID_REDUCE_COUNT_ ? names[k] : "?";
}

uint64_t bg_coll_next_group(const braid_graph *g) {
    uint64_t next = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        if (bg_is_collective(n) && bg_coll_group(n) >= next)
            next = bg_coll_group(n) + 1;
    }
    return next;
}

/* ---- inference ----------------------------------------------------------- */

static bool same_type(const bg_node *a, const bg_node *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static braid_status check_attrs(braid_graph *g, const char *name,
                                braid_op op, uint32_t nin, const bg_attrs *a) {
    int64_t k = a->start[0];
    if (k < 1 || k > BG_COLL_MAX_RANKS)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: %lld ranks (expected 1 to %d)", name,
                       (long long)k, BG_COLL_MAX_RANKS);
    if ((int64_t)nin != k && nin != 1)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: %u inputs for %lld ranks (expected one per rank, "
                       "or one: the rank's own)",
                       name, nin, (long long)k);
    if (nin > 1 && k > BG_COLL_MAX_LOCAL)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: %lld members in one graph (at most %d)", name,
                       (long long)k, BG_COLL_MAX_LOCAL);
    if (a->axis < 0 || a->axis >= k)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: rank %d out of range for %lld ranks", name,
                       (int)a->axis, (long long)k);
    if (op == BRAID_OP_BROADCAST && (a->start[1] < 0 || a->start[1] >= k))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: root %lld out of range for %lld ranks", name,
                       (long long)a->start[1], (long long)k);
    bool reduces = op == BRAID_OP_ALL_REDUCE || op == BRAID_OP_REDUCE_SCATTER;
    if (reduces && a->flags >= BRAID_REDUCE_COUNT_)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: unknown reduction %u (sum, max, min, avg)", name,
                       (unsigned)a->flags);
    return BRAID_OK;
}

static braid_status check_dtype(braid_graph *g, const char *name, braid_op op,
                                const bg_attrs *a, const bg_node *x) {
    bool reduces = op == BRAID_OP_ALL_REDUCE || op == BRAID_OP_REDUCE_SCATTER;
    if (!reduces) return BRAID_OK;
    if (!bg_op_accepts(op, x->dtype))
        return bg_fail(g, BRAID_ERR_DTYPE,
                       "%s: cannot reduce %s (cast to i32 first)", name,
                       braid_dtype_name(x->dtype));
    if (a->flags == BRAID_REDUCE_AVG && !braid_dtype_is_float(x->dtype))
        return bg_fail(g, BRAID_ERR_DTYPE,
                       "%s: avg needs a float dtype, got %s", name,
                       braid_dtype_name(x->dtype));
    return BRAID_OK;
}

braid_status bg_infer_collective(braid_graph *g, braid_op op,
                                 const uint32_t *in, uint32_t nin,
                                 const bg_attrs *a, bg_node *out) {
    const char *name = bg_op(op)->name;
    braid_status s = check_attrs(g, name, op, nin, a);
    if (s != BRAID_OK) return s;
    const bg_node *x = &g->nodes[in[0]];
    char ta[128], tb[128];
    for (uint32_t j = 1; j < nin; j++)
        if (!same_type(x, &g->nodes[in[j]]))
            return bg_fail(g, BRAID_ERR_SHAPE,
                           "%s: rank 0 gives %s but rank %u gives %s (every "
                           "rank's input must have one type)",
                           name, bg_type_str(x, ta, sizeof ta), j,
                           bg_type_str(&g->nodes[in[j]], tb, sizeof tb));
    if ((s = check_dtype(g, name, op, a, x)) != BRAID_OK) return s;
    int64_t k = a->start[0];
    out->dtype = x->dtype;
    out->rank = x->rank;
    memcpy(out->dims, x->dims, sizeof out->dims);
    if (op == BRAID_OP_ALL_GATHER || op == BRAID_OP_REDUCE_SCATTER) {
        if (x->rank == 0)
            return bg_fail(g, BRAID_ERR_SHAPE,
                           "%s: needs rank >= 1 (it works along dim 0), got "
                           "%s",
                           name, bg_type_str(x, ta, sizeof ta));
        if (op == BRAID_OP_ALL_GATHER) {
            if (x->dims[0] > BG_MAX_BYTES / k)
                return bg_fail(g, BRAID_ERR_SHAPE, "%s: result too large",
                               name);
            out->dims[0] = x->dims[0] * k;
        } else if (x->dims[0] % k != 0) {
            return bg_fail(g, BRAID_ERR_SHAPE,
                           "%s: dim 0 of %s does not divide by %lld ranks",
                           name, bg_type_str(x, ta, sizeof ta), (long long)k);
        } else {
            out->dims[0] = x->dims[0] / k;
        }
    }
    /* normalised attributes: only what the op uses */
    memset(&out->attr, 0, sizeof out->attr);
    out->attr.seed = a->seed;
    out->attr.axis = a->axis;
    out->attr.start[0] = k;
    if (op == BRAID_OP_BROADCAST) out->attr.start[1] = a->start[1];
    if (op == BRAID_OP_ALL_REDUCE || op == BRAID_OP_REDUCE_SCATTER)
        out->attr.flags = a->flags;
    return BRAID_OK;
}

/* ---- builders ------------------------------------------------------------ */

/* Builds the k members of a local group into outs. */
static braid_status build_group(braid_graph *g, braid_op op, int k,
                                const braid_tensor *xs, braid_reduce_kind red,
                                int root, braid_tensor *outs) {
    const char *name = bg_op(op)->name;
    if (!g)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: graph is NULL",
                                 name);
    if (outs)
        for (int r = 0; r < k; r++) outs[r] = BRAID_NONE;
    if (g->status != BRAID_OK) return g->status;
    if (k < 1 || k > BG_COLL_MAX_LOCAL || !xs || !outs)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: needs 1 to %d members and non-NULL xs and outs "
                       "(got %d)",
                       name, BG_COLL_MAX_LOCAL, k);
    uint32_t ids[BG_COLL_MAX_LOCAL];
    for (int r = 0; r < k; r++) ids[r] = xs[r].id;
    bg_attrs a;
    memset(&a, 0, sizeof a);
    a.seed = bg_coll_next_group(g);
    a.start[0] = k;
    a.start[1] = root;
    a.flags = (uint32_t)red;
    for (int r = 0; r < k; r++) {
        a.axis = r;
        uint32_t id = bg_build(g, op, ids, (uint32_t)k, BRAID_F32, 0, NULL, &a,
                               NULL);
        if (id == BG_NONE) break;
        /* the member runs where its own input was asked to be */
        const char *hint = ids[r] < g->nnodes ? g->nodes[ids[r]].device : NULL;
        if (hint && !(g->nodes[id].device = bg_strdup(g, hint))) break;
        outs[r].id = id;
    }
    if (g->status != BRAID_OK)
        for (int r = 0; r < k; r++) outs[r] = BRAID_NONE;
    return g->status;
}

braid_status braid_all_reduce(braid_graph *g, int k, const braid_tensor *xs,
                              braid_reduce_kind op, braid_tensor *outs) {
    return build_group(g, BRAID_OP_ALL_REDUCE, k, xs, op, 0, outs);
}

braid_status braid_all_gather(braid_graph *g, int k, const braid_tensor *xs,
                              braid_tensor *outs) {
    return build_group(g, BRAID_OP_ALL_GATHER, k, xs, BRAID_REDUCE_SUM, 0,
                       outs);
}

braid_status braid_broadcast(braid_graph *g, int k, const braid_tensor *xs,
                             int root, braid_tensor *outs) {
    return build_group(g, BRAID_OP_BROADCAST, k, xs, BRAID_REDUCE_SUM, root,
                       outs);
}

braid_status braid_reduce_scatter(braid_graph *g, int k,
                                  const braid_tensor *xs, braid_reduce_kind op,
                                  braid_tensor *outs) {
    return build_group(g, BRAID_OP_REDUCE_SCATTER, k, xs, op, 0, outs);
}

braid_tensor braid_rank_collective(braid_graph *g, braid_op op, braid_tensor x,
                                   braid_reduce_kind reduce, int root,
                                   int rank, int nranks) {
    if (!g) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                          "braid_rank_collective: graph is NULL");
        return BRAID_NONE;
    }
    if (g->status != BRAID_OK) return BRAID_NONE;
    if ((unsigned)op >= BRAID_OP_COUNT_ ||
        bg_op(op)->kind != BRAID_KIND_COLLECTIVE) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "braid_rank_collective: op %d is not a collective", (int)op);
        return BRAID_NONE;
    }
    if (nranks < 2) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "%s: a rank collective needs at least 2 ranks, got %d (use "
                "braid_%s for a group inside one graph)",
                bg_op(op)->name, nranks, bg_op(op)->name);
        return BRAID_NONE;
    }
    bg_attrs a;
    memset(&a, 0, sizeof a);
    a.seed = bg_coll_next_group(g);
    a.axis = rank;
    a.start[0] = nranks;
    a.start[1] = root;
    a.flags = (uint32_t)reduce;
    uint32_t id = bg_build(g, op, &x.id, 1, BRAID_F32, 0, NULL, &a, NULL);
    if (id != BG_NONE && x.id < g->nnodes && g->nodes[x.id].device &&
        !(g->nodes[id].device = bg_strdup(g, g->nodes[x.id].device)))
        return BRAID_NONE;
    return (braid_tensor){id};
}
