/* runtime/collective_host.h — collectives computed on the host (prefix
 * br_coll_): the reference evaluator's and the CPU kernel's semantics of
 * a local-form member (graph/collective.h). */
#ifndef BRAID_RUNTIME_COLLECTIVE_HOST_H
#define BRAID_RUNTIME_COLLECTIVE_HOST_H

#include "graph/collective.h"

/* Element idx of rank j's input, as a double. */
typedef double (*br_coll_load_fn)(void *ctx, int j, int64_t idx);

/* Element i of member n's result (before rounding to n's dtype). */
double br_coll_element(const bg_node *n, int64_t i, br_coll_load_fn load,
                       void *ctx);

/* BRAID_OK when node id is a local-form member whose inputs and attributes
 * agree; BRAID_ERR_UNSUPPORTED (naming the node, prefixed by who) for a
 * rank-form member, which only NCCL can run. */
braid_status br_coll_check_local(const braid_graph *g, uint32_t id,
                                 const char *who);

/* Computes local-form member id into out from in (one buffer per rank, the
 * node's dtype), rounding to the dtype. */
void br_coll_cpu_run(const braid_graph *g, uint32_t id,
                     const void *const *in, void *out);

#endif /* BRAID_RUNTIME_COLLECTIVE_HOST_H */
