/* graph/index.h — gather and scatter (issue #13; prefix bg_): their
 * attributes, shape rules and the one statement of which data element an
 * index names, shared by the builder, the float64 evaluator, the CPU
 * kernels and (as the same arithmetic in CUDA C) codegen.
 *
 * Attributes live in bg_attrs fields other ops use, so plan files and
 * structural equality need nothing new (collectives do the same):
 *   flags  BG_INDEX_MODE bits 0-3 (bg_index_mode), the scatter reduction
 *          in bits 4-7 (bg_scatter_red)
 *   axis   AXIS / ELEMENTS: the axis (0 ≤ axis < rank after bg_build);
 *          ND: batch_dims (gather) or 0 (scatter)
 * docs/ops.md states the semantics. */
#ifndef BRAID_GRAPH_INDEX_H
#define BRAID_GRAPH_INDEX_H

#include "graph/graph.h"

/* Which ONNX form a gather / scatter node has. */
typedef enum bg_index_mode {
    BG_INDEX_AXIS = 0, /* Gather: whole slices along an axis (gather only) */
    BG_INDEX_ELEMENTS, /* GatherElements / ScatterElements */
    BG_INDEX_ND,       /* GatherND (batch_dims) / ScatterND */
    BG_INDEX_MODE_COUNT_
} bg_index_mode;

/* How scatter combines an update with the element it lands on. */
typedef enum bg_scatter_red {
    BG_SCATTER_NONE = 0, /* replace */
    BG_SCATTER_ADD,
    BG_SCATTER_MUL,
    BG_SCATTER_MAX,
    BG_SCATTER_MIN,
    BG_SCATTER_RED_COUNT_
} bg_scatter_red;

static inline bg_index_mode bg_index_mode_of(const bg_attrs *a) {
    return (bg_index_mode)(a->flags & 0xFu);
}
static inline bg_scatter_red bg_scatter_red_of(const bg_attrs *a) {
    return (bg_scatter_red)((a->flags >> 4) & 0xFu);
}
static inline uint32_t bg_index_flags(bg_index_mode m, bg_scatter_red r) {
    return (uint32_t)m | ((uint32_t)r << 4);
}

/* Text names ("axis", "elements", "nd"; "none", "add", "mul", "max",
 * "min") and their lookup (-1 when unknown; len bytes of s). */
const char *bg_index_mode_name(bg_index_mode m);
const char *bg_scatter_red_name(bg_scatter_red r);
int bg_index_mode_lookup(const char *s, size_t len);
int bg_scatter_red_lookup(const char *s, size_t len);
/* The elementwise op a reduction applies (BRAID_OP_ADD, ...), or
 * BRAID_OP_COUNT_ for none. */
braid_op bg_scatter_red_op(bg_scatter_red r);

/* bg_build's checks and shape rule for gather/scatter: in[0..nin) are the
 * operands (already validated ids), a the caller's attributes; fills out's
 * dtype, shape and normalised attributes, or records the error on g. */
braid_status bg_infer_index(braid_graph *g, braid_op op, const uint32_t *in,
                            uint32_t nin, const bg_attrs *a, bg_node *out);

/* Where each index lands, for one gather or scatter node. Work item p is
 * an output element (gather) or an update element (scatter), in C order.
 *   AXIS:     p = (o, q, i) over outer × nidx × inner; data element
 *             (o · bound[0] + idx[q]) · inner + i.
 *   ELEMENTS: p has the indices' shape (idims); its data element is p's
 *             coordinates with the axis coordinate replaced by idx[p],
 *             through the data's strides (dstride).
 *   ND:       p = (b, q, i) over outer (batch) × nidx (tuples) × inner
 *             (slice); tuple (b, q) holds m indices at indices elements
 *             (b · nidx + q) · m + k; data element b · batch_stride +
 *             Σ_k idx_k · dstride[k] + i, idx_k < bound[k]. */
typedef struct bg_index_geom {
    bg_index_mode mode;              /* the form */
    bg_scatter_red red;              /* scatter: the reduction */
    int axis;                        /* AXIS / ELEMENTS: the axis */
    int rank;                        /* ELEMENTS: rank of indices and data */
    int64_t idims[BRAID_MAX_RANK];   /* ELEMENTS: the indices' dims */
    int64_t dstride[BRAID_MAX_RANK]; /* ELEMENTS: data strides per axis;
                                        ND: stride of tuple entry k */
    int64_t bound[BRAID_MAX_RANK];   /* ND: dims tuple entries index;
                                        AXIS / ELEMENTS: bound[0] = the
                                        axis length */
    int64_t outer, nidx, inner;      /* AXIS / ND: the work's three factors */
    int64_t m;                       /* ND: indices per tuple */
    int64_t batch_stride;            /* ND: data elements per batch entry */
    int64_t nwork;                   /* work items: output (gather) or updates
                                        (scatter) elements */
    int64_t ndata;                   /* data elements */
    bool idx64;                      /* the indices are i64 (else i32) */
} bg_index_geom;

/* The geometry of gather/scatter node n of g (built by bg_build). */
void bg_index_geom_of(const braid_graph *g, const bg_node *n,
                      bg_index_geom *geo);

/* Index element k of the indices idx (i32, or i64 when geo->idx64). */
static inline int64_t bg_index_at(const bg_index_geom *geo, const void *idx,
                                  int64_t k) {
    return geo->idx64 ? ((const int64_t *)idx)[k]
                      : (int64_t)((const int32_t *)idx)[k];
}

/* An index v for an axis of length bound: v, or v + bound when negative;
 * -1 when out of range (valid: -bound ≤ v < bound). */
static inline int64_t bg_index_norm(int64_t v, int64_t bound) {
    int64_t w = v < 0 ? v + bound : v;
    return w >= 0 && w < bound ? w : -1;
}

/* A bad index met by a kernel: its value, the flat position in the
 * indices operand, the length of the axis it indexes. */
typedef struct bg_index_bad {
    int64_t value, pos, bound;
} bg_index_bad;

/* "index 7 at position 3 of the indices is out of range for an axis of
 * length 5" into buf (size bytes): the words every backend's run error
 * uses. Returns buf. */
const char *bg_index_bad_text(const bg_index_bad *bad, char *buf, size_t size);

/* The data element work item p reads (gather) or writes (scatter), from
 * the indices idx (i32, dense); -1 with *bad filled when an index is out of
 * range. */
int64_t bg_index_target(const bg_index_geom *geo, int64_t p, const void *idx,
                        bg_index_bad *bad);

/* The first bad index of the node in C order of the indices, or false
 * when every index is in range. idx as above. */
bool bg_index_first_bad(const bg_index_geom *geo, const void *idx,
                        int64_t nidx_elems, bg_index_bad *bad);

/* ---- float64 meaning (graph/index_eval.c, called by graph/eval.c) ------- */

/* Gather node id, output elements [lo, hi), from in[0] (data) and in[1]
 * (indices as doubles); an element whose index is out of range is 0 (the
 * reference evaluator reports the index before it evaluates). */
void bg_eval_gather(const braid_graph *g, const bg_node *n,
                    const double *const *in, double *out, int64_t lo,
                    int64_t hi);
/* Scatter node, all of it: a copy of in[0], then each update in C order
 * combined with the element it lands on, rounded to the dtype after each
 * step (so duplicates under none: the last one wins). Updates whose index
 * is out of range are skipped. */
void bg_eval_scatter(const braid_graph *g, const bg_node *n,
                     const double *const *in, double *out);
/* The node's first out-of-range index (false when none), from its indices
 * as doubles: what the reference evaluator reports. */
bool bg_eval_index_bad(const braid_graph *g, const bg_node *n,
                       const double *idx, bg_index_bad *bad);

#endif /* BRAID_GRAPH_INDEX_H */
