/* graph/collective.h — collective nodes (all_reduce, all_gather, broadcast,
 * reduce_scatter), internal to the library (prefix bg_).
 *
 * A collective group has k members (ranks), one node each, sharing a group
 * id. Attributes reuse bg_attrs fields (so every printer, hash, clone and
 * plan file carries them without knowing collectives):
 *   attr.seed      group id (unique per graph; groups are issued in
 *                  increasing group id order)
 *   attr.axis      the member's rank r, 0 ≤ r < k
 *   attr.start[0]  k, the number of ranks
 *   attr.start[1]  broadcast: the root rank; else 0
 *   attr.flags     all_reduce, reduce_scatter: a braid_reduce_kind; else 0
 * Two forms:
 *   local  ninputs == k: member r reads every member's input, inputs[j]
 *          being rank j's; what the user builds with braid_all_reduce & co.
 *          Its meaning needs nothing outside the node (the reference
 *          evaluator and the CPU kernel compute it alone).
 *   rank   ninputs == 1 (k > 1): member r reads only its own input; the
 *          other ranks are other nodes of the group in the same plan
 *          (placement lowers a group on k distinct GPUs to this form, run
 *          by NCCL) or other processes (braid_rank_collective). */
#ifndef BRAID_GRAPH_COLLECTIVE_H
#define BRAID_GRAPH_COLLECTIVE_H

#include "graph/graph.h"

/* Most members a local group may have (one per device of a plan). */
#define BG_COLL_MAX_LOCAL 64
/* Most ranks a rank-form node may name. */
#define BG_COLL_MAX_RANKS (1 << 20)

static inline bool bg_is_collective(const bg_node *n) {
    return bg_op(n->op) && bg_op(n->op)->kind == BRAID_KIND_COLLECTIVE;
}
static inline uint64_t bg_coll_group(const bg_node *n) { return n->attr.seed; }
static inline int bg_coll_rank(const bg_node *n) { return (int)n->attr.axis; }
static inline int64_t bg_coll_size(const bg_node *n) {
    return n->attr.start[0];
}
static inline int bg_coll_root(const bg_node *n) {
    return (int)n->attr.start[1];
}
static inline braid_reduce_kind bg_coll_reduce(const bg_node *n) {
    return (braid_reduce_kind)n->attr.flags;
}
/* Local form: the node reads every rank's input. */
static inline bool bg_coll_local(const bg_node *n) {
    return (int64_t)n->ninputs == bg_coll_size(n);
}
/* The node's own input (its rank's). */
static inline uint32_t bg_coll_own(const bg_node *n) {
    return bg_coll_local(n) ? n->inputs[bg_coll_rank(n)] : n->inputs[0];
}

/* bg_build's checks and type inference for a collective op: fills out's
 * type and normalised attributes, or records the error on g. */
braid_status bg_infer_collective(braid_graph *g, braid_op op,
                                 const uint32_t *in, uint32_t nin,
                                 const bg_attrs *a, bg_node *out);

/* A group id no collective of g uses yet (1 + the largest in use). */
uint64_t bg_coll_next_group(const braid_graph *g);

#endif /* BRAID_GRAPH_COLLECTIVE_H */
