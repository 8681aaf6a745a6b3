/* graph/grad.h — reverse-mode autodiff, internal to graph/ (prefix bg_).
 *
 * braid_grad (graph/grad.c) walks the nodes between the wrt tensors and the
 * loss in reverse id order and asks each node's rule (graph/grad_rules*.c,
 * one table keyed by op) for its inputs' gradient contributions. Rules
 * build ordinary nodes with the public builders, so every gradient is
 * validated by bg_build like user code. docs/training.md states the rules
 * and conventions. */
#ifndef BRAID_GRAPH_GRAD_H
#define BRAID_GRAPH_GRAD_H

#include "graph/graph.h"

/* A node being differentiated, copied out of the graph: rules add nodes, so
 * the node array may move under them. */
typedef struct bg_grad_node {
    uint32_t id;                  /* the node */
    braid_op op;                  /* its op */
    braid_dtype dtype;            /* its dtype */
    int rank;                     /* its rank */
    int64_t dims[BRAID_MAX_RANK]; /* its dims */
    uint32_t ninputs;             /* entries of inputs */
    const uint32_t *inputs;       /* the node's own array (separately owned,
                                     so it stays put while nodes are added) */
    bg_attrs attr;                /* its attributes (data not used) */
} bg_grad_node;

/* The state of one braid_grad call. */
typedef struct bg_grad_ctx bg_grad_ctx;

/* The graph being extended. */
braid_graph *bg_grad_graph(bg_grad_ctx *c);
/* Whether input k of n lies on a path from a wrt tensor to the loss (and
 * so wants a gradient): rules skip the others. */
bool bg_grad_wants(bg_grad_ctx *c, const bg_grad_node *n, uint32_t k);
/* Adds contribution t to the gradient of input k of n (summed with earlier
 * ones). t must have that input's shape and dtype. */
void bg_grad_acc(bg_grad_ctx *c, const bg_grad_node *n, uint32_t k,
                 braid_tensor t);

/* Contribution t to the gradient of input 0 of slice n, which kept
 * [start, start + t's size) of axis `axis` and every other axis whole
 * with step 1: held back until all of the input's consumers are done, so
 * that slices tiling one axis (a tensor split into parts) give one concat
 * of their gradients instead of a padded copy each, added up. */
typedef struct bg_grad_piece bg_grad_piece;
void bg_grad_acc_slice(bg_grad_ctx *c, const bg_grad_node *n, int axis,
                       int64_t start, braid_tensor t);

/* A rule: given node n and the gradient gy of the loss with respect to n's
 * output (n's shape and dtype), adds the contributions of n's inputs with
 * bg_grad_acc. Errors are recorded on the graph by the builders. */
typedef void (*bg_grad_rule)(bg_grad_ctx *c, const bg_grad_node *n,
                             braid_tensor gy);

/* The rule of op, or NULL when op has none. Every op flagged
 * BRAID_OPF_DIFFERENTIABLE has one (tests/test_grad.c checks). */
bg_grad_rule bg_grad_rule_of(braid_op op);
/* The rule of max_pool, avg_pool and resize (graph/grad_window.c). */
void bg_grad_window(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
/* The rule of the attention op (graph/grad_attention.c). */
void bg_grad_attention(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
/* The rule of conv and conv_transpose (graph/grad_conv.c). */
void bg_grad_conv(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
/* The rule of the collective ops (graph/grad_collective.c). */
void bg_grad_collective(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);

/* The rules of gather and scatter (graph/grad_index.c). */
void bg_grad_gather(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
void bg_grad_scatter(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
/* The rules of the index ops (graph/grad_rules_axis.c). */
void bg_grad_cumsum(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
void bg_grad_topk(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy);
void bg_grad_reduce_prod(bg_grad_ctx *c, const bg_grad_node *n,
                         braid_tensor gy);

/* ---- helpers the rules share (graph/grad_util.c) ------------------------ */

/* Shape and dtype of node id, read afresh (after nodes were added). */
void bg_grad_type(bg_grad_ctx *c, uint32_t id, braid_dtype *dt, int *rank,
                  int64_t *dims);
/* A scalar (rank 0) fill of dtype dt: broadcasts against anything. */
braid_tensor bg_grad_scalar(bg_grad_ctx *c, braid_dtype dt, double v);
/* Zeros of the given type. */
braid_tensor bg_grad_zeros(bg_grad_ctx *c, braid_dtype dt, int rank,
                           const int64_t *dims);
/* t summed over the axes it was broadcast along so that it gets the shape
 * (rank, dims): leading axes t has beyond rank, and axes where dims is 1 and
 * t's is not. The rule of every broadcasting op. */
braid_tensor bg_grad_unbroadcast(bg_grad_ctx *c, braid_tensor t, int rank,
                                 const int64_t *dims);
/* The same, to node id's shape. */
braid_tensor bg_grad_unbroadcast_to(bg_grad_ctx *c, braid_tensor t,
                                    uint32_t id);
/* t (of shape dims with axis `axis` of size `count`) put back into a zero
 * tensor whose axis `axis` has size full, element i landing at
 * start + i·step: the adjoint of slicing one axis. */
braid_tensor bg_grad_unslice_axis(bg_grad_ctx *c, braid_tensor t, int axis,
                                  int64_t full, int64_t start, int64_t step);
/* t restricted to [lo, hi) along axis (other axes whole). */
braid_tensor bg_grad_slice_axis(bg_grad_ctx *c, braid_tensor t, int axis,
                                int64_t lo, int64_t hi);
/* gy of a reduction's output reshaped to keepdims form and broadcast back
 * to the reduced operand's shape (rank, dims). */
braid_tensor bg_grad_expand_reduced(bg_grad_ctx *c, braid_tensor gy,
                                    uint8_t axes, int rank,
                                    const int64_t *dims);
/* t reshaped to the keepdims form of a reduction over axes of an operand
 * of shape (rank, dims) (no-op when already so). */
braid_tensor bg_grad_keepdims(bg_grad_ctx *c, braid_tensor t, uint8_t axes,
                              int rank, const int64_t *dims);

#endif /* BRAID_GRAPH_GRAD_H */
