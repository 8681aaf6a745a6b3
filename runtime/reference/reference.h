/* runtime/reference/reference.h — internals of the reference evaluator (prefix
 * br_ref_).
 *
 * The reference evaluator (braid_reference_run) is the oracle of braid's
 * tests: it interprets the unoptimized graph node by node, holding every
 * tensor as an array of double. Each node is computed by graph/eval.c (the
 * ops' meaning of graph/scalar.h in float64, i32 wrapping) and rounded to
 * its dtype exactly as bg_store followed by bg_load would. It favours being
 * obviously correct over being fast. */
#ifndef BRAID_RUNTIME_REFERENCE_H
#define BRAID_RUNTIME_REFERENCE_H

#include "graph/graph.h"

struct br_pool; /* runtime/runtime.h */

/* Checks the invariants that br_ref_eval relies on to index safely (arity,
 * input ids, ranks, broadcast shapes, permutations, slice bounds, ...).
 * A graph built by bg_build always passes; a malformed one gets
 * BRAID_ERR_INTERNAL (or BRAID_ERR_UNSUPPORTED for compiler-only ops) and a
 * message naming the node, so the reference never reads out of bounds. */
braid_status br_ref_check(const braid_graph *g, uint32_t id);

/* Computes output elements [lo, hi) of node id of g into out (numel
 * doubles) from in[k], the values of its k-th input (each holding that
 * node's numel doubles). data is the caller's buffer for an input node,
 * NULL otherwise. The node must have passed br_ref_check. Results are
 * rounded to the node's dtype. Each element's value does not depend on
 * the range it was computed in, so disjoint ranges may run on different
 * threads (reference_par.c), except for nodes br_ref_splits refuses:
 * those take lo = 0, hi = numel. */
void br_ref_eval_range(const braid_graph *g, uint32_t id,
                       const double *const *in, double *out, const void *data,
                       int64_t lo, int64_t hi);
/* Whether node n may be computed in pieces (all but reductions). */
bool br_ref_splits(const bg_node *n);

/* Computes all of node id (br_ref_eval_range over [0, numel)), split over
 * pool's threads where the node allows it and the work is large enough.
 * pool NULL: the caller alone. */
void br_ref_eval(const braid_graph *g, uint32_t id, const double *const *in,
                 double *out, const void *data, struct br_pool *pool);
/* The work of node id in element operations (numel; × K for a matmul; the
 * input's numel for a reduction): the unit of progress reports. */
double br_ref_work(const braid_graph *g, uint32_t id);

#endif /* BRAID_RUNTIME_REFERENCE_H */
