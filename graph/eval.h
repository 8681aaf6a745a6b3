/* graph/eval.h — naive float64 evaluation of one node (prefix bg_).
 *
 * The core of the reference evaluator (runtime/reference) and of constant
 * folding (passes/simplify_fold.c): every tensor an array of double, each
 * op by the meaning graph/scalar.h gives it, computed in float64 (i32 by
 * its wrapping rules) and rounded to the node's dtype. It favours being
 * obviously correct over being fast. */
#ifndef BRAID_GRAPH_EVAL_H
#define BRAID_GRAPH_EVAL_H

#include "graph/graph.h"

/* v rounded to dtype t: the value a t buffer holds after bg_store(t, v),
 * read back with bg_load. */
double bg_round(braid_dtype t, double v);

/* Rounds n's numel values in v to n's dtype. */
void bg_eval_round(const bg_node *n, double *v);

/* Computes node id of g into out (numel doubles, rounded to its dtype) from
 * in[k], the values of its k-th input (each holding that node's numel
 * doubles). data is the caller's buffer for an input node, NULL otherwise.
 * The node must be well formed (built by bg_build, or checked by
 * br_ref_check). Returns false, computing nothing, for the ops this cannot
 * evaluate alone: collectives and fused nodes. */
bool bg_eval_node(const braid_graph *g, uint32_t id, const double *const *in,
                  double *out, const void *data);
/* The same for output elements [lo, hi) only. Each element's value does
 * not depend on the range it was computed in, so disjoint ranges may run
 * on different threads (runtime/reference/reference_par.c), except for
 * nodes bg_eval_splits refuses: those take lo = 0, hi = numel. */
bool bg_eval_node_range(const braid_graph *g, uint32_t id,
                        const double *const *in, double *out, const void *data,
                        int64_t lo, int64_t hi);
/* Whether node n may be evaluated in pieces (all but reductions). */
bool bg_eval_splits(const bg_node *n);

/* For a checked cast (bg_cast_checked) node id of g whose operand holds the
 * values x: BRAID_OK when every value fits the result's dtype, else
 * bg_cast_range_error for the first that does not. BRAID_OK for any other
 * node. Evaluators call it before bg_eval_node, which saturates. */
braid_status bg_eval_cast_check(const braid_graph *g, uint32_t id,
                                const double *x);

#endif /* BRAID_GRAPH_EVAL_H */
