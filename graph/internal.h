/* graph/internal.h — helpers shared by the files of graph/ (and their
 * tests), not part of the IR contract in graph.h. */
#ifndef BRAID_GRAPH_INTERNAL_H
#define BRAID_GRAPH_INTERNAL_H

#include "graph/graph.h"

/* True when s is a valid input name: [A-Za-z_][A-Za-z0-9_.]* . */
bool bg_valid_ident(const char *s);
/* bg_valid_ident(name), else false with "<what>: name ... is not valid"
 * recorded on g (inputs and variables are bound by such names). */
bool bg_check_ident(braid_graph *g, const char *what, const char *name);
/* True when s is acceptable as a node or output name: non-empty, no control
 * characters (so it survives the quoted strings of the text format). */
bool bg_valid_label(const char *s);
/* True when an input node other than `except` is called name. */
bool bg_input_name_taken(braid_graph *g, const char *name,
                         uint32_t except);
/* True when dev is a device name (bg_device_parse); false for NULL. */
bool bg_valid_device(const char *dev);

/* Deterministic elementary functions used by the random generators (see
 * graph/rng.c for why they exist). Only IEEE + - * / and bit operations. */
double bg_det_log(double x);    /* natural log; x ≤ 0 → -inf/NaN like log */
double bg_det_cos2pi(double u); /* cos(2πu) for u in [0, 1) */

/* The node behind t for builder op `op`, or NULL after recording why not (a
 * NULL graph, a graph that already failed, quietly; a bad id). Defined in
 * graph/builders.c; the composites of graph/builders_logic.c use it. */
const bg_node *bb_peek(braid_graph *g, braid_tensor t, const char *op);
/* conv ops (graph/conv.c): bg_build's type rule for conv and
 * conv_transpose (output type and normalised attributes into out), and
 * their float64 meaning for output elements [lo, hi) (graph/eval.c). */
braid_status bg_conv_infer(braid_graph *g, braid_op op, const uint32_t *in,
                           uint32_t nin, const bg_attrs *a, bg_node *out);
void bg_eval_conv(const braid_graph *g, const bg_node *n,
                  const double *const *in, double *out, int64_t lo,
                  int64_t hi);
/* The builders' shared helpers (graph/builders.c; graph/builders_nn.c
 * uses them too). bb_peek: the node behind t, or NULL after recording why
 * not (NULL graph, a graph that already failed, an id not in g).
 * bb_ready: g is not NULL and has no error. bb_op1: one bg_build of op on
 * x. bb_axis: a public axis (negative from the end) as 0..rank-1, or -1
 * after recording the error. bb_need_float: x is a float, else an error.
 * bb_affine_ok: p (skipped when BRAID_NONE) broadcasts to x without
 * changing x's shape, else an error naming op and what. */
braid_tensor bb_tensor(uint32_t id);
const bg_node *bb_peek(braid_graph *g, braid_tensor t, const char *op);
bool bb_ready(braid_graph *g, const char *op);
braid_tensor bb_op1(braid_graph *g, braid_op op, braid_tensor x,
                    const bg_attrs *a);
int bb_axis(braid_graph *g, const bg_node *x, int axis, const char *op);
bool bb_need_float(braid_graph *g, const bg_node *x, const char *op);
bool bb_affine_ok(braid_graph *g, const bg_node *x, braid_tensor p,
                  const char *what, const char *op);

#endif /* BRAID_GRAPH_INTERNAL_H */
