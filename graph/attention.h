/* graph/attention.h — the attention op (kind BRAID_KIND_ATTENTION): the one
 * statement of its shapes, operand layout and meaning, shared by the
 * builder, the float64 evaluator, the CPU kernel and codegen.
 *
 * Operands: q [B,S,H,D], k [B,T,H,D], v [B,T,H,D] (sequence-major, as
 * projections produce them; the kernels also read them as strided views
 * whose d axis is contiguous: slices of one fused QKV projection), optionally a
 * mask of q's dtype broadcastable (NumPy rules, rank ≤ 4) to [B,H,S,T].
 * attr.value[0] = scale (finite), attr.flags = BRAID_ATTENTION_* bits. Output
 * [B,S,H,D]: s_j   = scale · Σ_d q[b,i,h,d]·k[b,j,h,d] + mask[b,h,i,j]
 *           (-inf for j > i under BRAID_ATTENTION_CAUSAL)
 *   out   = Σ_j softmax(s)_j · v[b,j,h,:]
 * and a row whose every s_j is -inf (fully masked, or T = 0) gives 0, as
 * PyTorch's exported where(isnan(softmax), 0, softmax) does. */
#ifndef BRAID_GRAPH_ATTENTION_H
#define BRAID_GRAPH_ATTENTION_H

#include "graph/graph.h"

/* Largest head dimension D (the GPU kernel keeps rows of D in shared
 * memory and registers). */
#define BG_ATTN_MAX_D 256

typedef struct bg_attn_geom {
    int64_t B, S, T, H, D; /* batch, query rows, key rows, heads, head dim */
    bool has_mask;         /* a 4th operand */
    int64_t mst[4];        /* the mask's element strides over [B,H,S,T]
                              (0 along broadcast axes) */
    double scale;          /* attr.value[0] */
    bool causal;           /* BRAID_ATTENTION_CAUSAL */
    int64_t st[3][3];      /* per operand q, k, v: element strides of its
                              batch, row and head axes (d's is 1): dense
                              from bg_attn_geom_of, a strided view's from
                              bg_attn_set_strides */
} bg_attn_geom;

/* The geometry of attention node n of g; false when n is not a well-formed
 * attention node (shapes, dtypes, attributes): the one checker, used by
 * the reference's node check, the CPU kernel and codegen. */
bool bg_attn_geom_of(const braid_graph *g, const bg_node *n, bg_attn_geom *a);

/* bg_build's type rule: checks the operands in[0..nin) and attributes a,
 * fills out's type and normalised attributes; an error naming the operand
 * otherwise. */
braid_status bg_infer_attention(braid_graph *g, const uint32_t *in,
                                uint32_t nin, const bg_attrs *a, bg_node *out);

/* The float64 meaning (graph/eval.c): the rows of D output elements that
 * start in [lo, hi), each rounded to the dtype once. */
void bg_eval_attention(const braid_graph *g, const bg_node *n,
                       const double *const *in, double *out, int64_t lo,
                       int64_t hi);

/* Operand x (0 q, 1 k, 2 v) read as a strided view at element strides
 * s[4] (passes/layout.h; s[3] is 1 or the head dim is 1): its row
 * offsets follow s instead of the dense layout. False (a unchanged) for
 * a layout the kernels cannot walk: d not contiguous, a negative stride. */
bool bg_attn_set_strides(bg_attn_geom *a, int x, const int64_t *s);
/* The layouts the kernels take: what bg_attn_set_strides accepts. */
bool bg_attn_strides_ok(int64_t d, const int64_t *s);

/* Flat element offset of row (b, i, h) of operand x (0 q, 1 k, 2 v), of
 * output row (b, i, h) (dense), and of the mask element (b, h, i, j). */
static inline int64_t bg_attn_in_at(const bg_attn_geom *a, int x, int64_t b,
                                    int64_t i, int64_t h) {
    return b * a->st[x][0] + i * a->st[x][1] + h * a->st[x][2];
}
static inline int64_t bg_attn_out_at(const bg_attn_geom *a, int64_t b,
                                     int64_t i, int64_t h) {
    return ((b * a->S + i) * a->H + h) * a->D;
}
static inline int64_t bg_attn_mask_at(const bg_attn_geom *a, int64_t b,
                                      int64_t h, int64_t i, int64_t j) {
    return b * a->mst[0] + h * a->mst[1] + i * a->mst[2] + j * a->mst[3];
}

/* Multiply-adds of the two products (placement's and the profiler's cost). */
double bg_attn_macs(const bg_attn_geom *a);

#endif /* BRAID_GRAPH_ATTENTION_H */
