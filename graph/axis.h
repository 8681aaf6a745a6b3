/* graph/axis.h — the axis ops (kind BRAID_KIND_AXIS): argmax, argmin,
 * topk_values, topk_indices, cumsum. Each works on the lines of its one
 * input along attr.axis and writes the same line of its output; this header
 * states their geometry and their order rules once, for the builder, the
 * float64 evaluator (graph/axis.c), the CPU kernels and the CUDA codegen
 * (which spells the same rules in CUDA C, codegen/axis.c).
 *
 * Order rules (docs/ops.md, "Axis ops"):
 * - argmax / argmin: NaN beats every number in both directions (NaN
 *   propagates, like reduce_max / reduce_min); among equal values (-0 ==
 *   +0, NaN == NaN) the lowest index wins, the highest with
 *   BG_SELECT_LAST.
 * - topk: NaN ranks above +inf (so largest puts NaNs first and smallest
 *   last, as PyTorch does); equal values keep index order (lower first).
 *   The result is always sorted. */
#ifndef BRAID_GRAPH_AXIS_H
#define BRAID_GRAPH_AXIS_H

#include "graph/graph.h"

/* An axis op's input as lines: outer × len × inner elements in C order,
 * line (o, i) starting at o·len·inner + i with stride inner; its output as
 * outer × olen × inner (olen: 1 for argmax/argmin, k for topk, len for
 * cumsum). */
typedef struct bg_axis_lines {
    int64_t outer; /* product of the dims before the axis */
    int64_t len;   /* the input's dim along the axis */
    int64_t inner; /* product of the dims after the axis */
    int64_t olen;  /* the output's elements per line */
} bg_axis_lines;

/* The lines of axis op n reading x (n's input 0). */
void bg_axis_lines_of(const bg_node *n, const bg_node *x, bg_axis_lines *l);

/* a ranks above b where NaN ranks above +inf. */
static inline bool bg_axis_above(double a, double b) {
    return a > b || (a != a && b == b);
}

/* a and b are equal, NaN equal to NaN (and -0 to +0). */
static inline bool bg_axis_same(double a, double b) {
    return a == b || (a != a && b != b);
}

/* Whether element (a, ia) comes before (b, ib) in topk's order: largest
 * first (smallest first with BG_SMALLEST), NaN above +inf, ties by index. */
static inline bool bg_topk_before(bool smallest, double a, int64_t ia, double b,
                                  int64_t ib) {
    if (bg_axis_same(a, b)) return ia < ib;
    return smallest ? bg_axis_above(b, a) : bg_axis_above(a, b);
}

/* Whether (a, ia) wins over (b, ib) in argmax (argmin when min): NaN wins
 * both ways, a tie goes to the lower index (the higher when last). The
 * relation is a strict total order, so any combination order (a sequential
 * scan, a warp tree) picks the same winner. */
static inline bool bg_arg_beats(bool min, bool last, double a, int64_t ia,
                                double b, int64_t ib) {
    if (bg_axis_same(a, b)) return last ? ia > ib : ia < ib;
    if (a != a) return true;
    if (b != b) return false;
    return min ? a < b : a > b;
}

/* ord[0..len) = the positions of line x (stride step) in topk's order
 * (bg_topk_before): a sort, the one the reference and the CPU kernel use. */
void bg_topk_sort(bool smallest, const double *x, int64_t step, int64_t len,
                  int64_t *ord);

/* bg_build's checks and type inference for an axis op on x: fills out's
 * type and normalised attributes (axis in 0..rank-1), or records the error
 * on g. */
braid_status bg_infer_axis(braid_graph *g, braid_op op, const bg_node *x,
                           const bg_attrs *a, bg_node *out);

/* Whether axis node n reading x has the type and attributes bg_build
 * would give it (the reference's and the plan loader's check). */
bool bg_axis_well_formed(const bg_node *n, const bg_node *x);

/* Evaluates axis node n (its input x holding x's numel doubles) into out,
 * every line in float64, unrounded (cumsum sums in double in index
 * order). */
void bg_eval_axis(const bg_node *n, const bg_node *x, const double *in,
                  double *out);

#endif /* BRAID_GRAPH_AXIS_H */
