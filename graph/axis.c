/* graph/axis.c — the axis ops' type rules (bg_infer_axis, called by
 * bg_build) and their float64 meaning (bg_eval_axis, called by graph/eval.c
 * for the reference evaluator and constant folding). The order rules are
 * graph/axis.h's. */
#include "graph/axis.h"
#include "graph/scalar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void bg_axis_lines_of(const bg_node *n, const bg_node *x, bg_axis_lines *l) {
    int ax = n->attr.axis;
    l->outer = 1;
    l->inner = 1;
    for (int i = 0; i < ax; i++)
        l->outer *= x->dims[i];
    for (int i = ax + 1; i < x->rank; i++)
        l->inner *= x->dims[i];
    l->len = x->dims[ax];
    l->olen = n->op == BRAID_OP_CUMSUM ? l->len
              : n->op == BRAID_OP_TOPK_VALUES || n->op == BRAID_OP_TOPK_INDICES
                  ? (int64_t)n->attr.seed
                  : 1;
}

/* ---- type rules ---------------------------------------------------------- */

static bool is_arg(braid_op op) {
    return op == BRAID_OP_ARGMAX || op == BRAID_OP_ARGMIN;
}

static bool is_topk(braid_op op) {
    return op == BRAID_OP_TOPK_VALUES || op == BRAID_OP_TOPK_INDICES;
}

/* The flags op accepts. */
static uint32_t allowed_flags(braid_op op) {
    if (is_arg(op)) return BG_KEEPDIMS | BG_SELECT_LAST;
    if (is_topk(op)) return BG_SMALLEST;
    return BG_EXCLUSIVE | BG_REVERSE; /* cumsum */
}

/* Checks what depends on the axis: its range, the count it holds (indices
 * are i32), k. */
static braid_status check_axis(braid_graph *g, braid_op op, const bg_node *x,
                               const bg_attrs *a, int *ax) {
    const char *name = bg_op(op)->name;
    char t[200]; /* x's type, formatted only for a message */
    if (x->rank == 0 || a->axis < -(int)x->rank || a->axis >= (int)x->rank)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: axis %d out of range for operand %s", name,
                       (int)a->axis, bg_type_str(x, t, sizeof t));
    *ax = a->axis < 0 ? a->axis + x->rank : a->axis;
    int64_t len = x->dims[*ax];
    if (op != BRAID_OP_CUMSUM && len > INT32_MAX)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: axis %d of operand %s has %lld elements; i32 "
                       "indices reach 2^31 - 1",
                       name, *ax, bg_type_str(x, t, sizeof t), (long long)len);
    if (is_arg(op) && len == 0)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: axis %d of operand %s is empty", name, *ax,
                       bg_type_str(x, t, sizeof t));
    if (is_topk(op) && a->seed > (uint64_t)len)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: k = %llu exceeds the %lld elements of axis %d "
                       "of operand %s",
                       name, (unsigned long long)a->seed, (long long)len, *ax,
                       bg_type_str(x, t, sizeof t));
    return BRAID_OK;
}

/* out's type and attributes for op on x with axis ax (0..rank-1). */
static void axis_result(braid_op op, const bg_node *x, int ax,
                        const bg_attrs *a, bg_node *out) {
    out->attr.axis = ax;
    out->attr.flags = a->flags;
    out->attr.seed = is_topk(op) ? a->seed : 0;
    out->rank = x->rank;
    memcpy(out->dims, x->dims, sizeof out->dims);
    out->dtype = x->dtype;
    if (is_topk(op)) out->dims[ax] = (int64_t)a->seed;
    if (is_arg(op) || op == BRAID_OP_TOPK_INDICES) out->dtype = BRAID_I32;
    if (is_arg(op) && !(a->flags & BG_KEEPDIMS)) {
        for (int i = ax; i + 1 < x->rank; i++)
            out->dims[i] = x->dims[i + 1];
        out->dims[--out->rank] = 0;
    } else if (is_arg(op)) {
        out->dims[ax] = 1;
    }
}

braid_status bg_infer_axis(braid_graph *g, braid_op op, const bg_node *x,
                           const bg_attrs *a, bg_node *out) {
    char t[200];
    const char *name = bg_op(op)->name;
    if (!bg_op_accepts(op, x->dtype))
        return bg_fail(g, BRAID_ERR_DTYPE, "%s: operand %s; expected %s", name,
                       bg_type_str(x, t, sizeof t), bg_op_dtypes_text(op));
    if (a->flags & ~allowed_flags(op))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: unknown flags 0x%x for this op", name,
                       (unsigned)a->flags);
    int ax = 0;
    braid_status s = check_axis(g, op, x, a, &ax);
    if (s != BRAID_OK) return s;
    axis_result(op, x, ax, a, out);
    return BRAID_OK;
}

bool bg_axis_well_formed(const bg_node *n, const bg_node *x) {
    const bg_attrs *a = &n->attr;
    if (!bg_op_accepts(n->op, x->dtype) || (a->flags & ~allowed_flags(n->op)) ||
        a->axis < 0 || a->axis >= x->rank)
        return false;
    int64_t len = x->dims[a->axis];
    if ((n->op != BRAID_OP_CUMSUM && len > INT32_MAX) ||
        (is_arg(n->op) && len == 0) ||
        (is_topk(n->op) && a->seed > (uint64_t)len) ||
        (!is_topk(n->op) && a->seed != 0))
        return false;
    bg_node want;
    memset(&want, 0, sizeof want);
    axis_result(n->op, x, a->axis, a, &want);
    return want.rank == n->rank && want.dtype == n->dtype &&
           memcmp(want.dims, n->dims, sizeof want.dims) == 0;
}

/* ---- float64 meaning ----------------------------------------------------- */

static void eval_arg(const bg_node *n, const double *x, int64_t len,
                     int64_t step, double *out) {
    bool min = n->op == BRAID_OP_ARGMIN;
    bool last = (n->attr.flags & BG_SELECT_LAST) != 0;
    int64_t best = 0;
    for (int64_t i = 1; i < len; i++)
        if (bg_arg_beats(min, last, x[i * step], i, x[best * step], best))
            best = i;
    *out = (double)best;
}

/* out[j·step] = Σ x[i·step] over i before j (exclusive) or up to j, or
 * after j with BG_REVERSE; i32 sums wrap. */
static void eval_cumsum(const bg_node *n, const double *x, int64_t len,
                        int64_t step, double *out) {
    bool excl = (n->attr.flags & BG_EXCLUSIVE) != 0;
    bool rev = (n->attr.flags & BG_REVERSE) != 0;
    bool wrap = n->dtype == BRAID_I32;
    double acc = 0.0;
    for (int64_t k = 0; k < len; k++) {
        int64_t j = rev ? len - 1 - k : k;
        if (excl) out[j * step] = acc;
        acc += x[j * step];
        if (wrap) acc = bg_wrap_i32(acc);
        if (!excl) out[j * step] = acc;
    }
}

typedef struct topk_sort {
    const double *x; /* the line */
    int64_t step;    /* its stride */
    bool smallest;   /* BG_SMALLEST */
} topk_sort;

static _Thread_local topk_sort topk_ctx; /* qsort has no context argument */

static int topk_cmp(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    const topk_sort *c = &topk_ctx;
    double va = c->x[a * c->step], vb = c->x[b * c->step];
    if (bg_topk_before(c->smallest, va, a, vb, b)) return -1;
    return bg_topk_before(c->smallest, vb, b, va, a) ? 1 : 0;
}

void bg_topk_sort(bool smallest, const double *x, int64_t step, int64_t len,
                  int64_t *ord) {
    for (int64_t i = 0; i < len; i++)
        ord[i] = i;
    topk_ctx = (topk_sort){x, step, smallest};
    qsort(ord, (size_t)len, sizeof *ord, topk_cmp);
}

/* The first olen of the line sorted by bg_topk_before: values or indices.
 * ord has len entries. */
static void eval_topk(const bg_node *n, const double *x, int64_t len,
                      int64_t step, int64_t olen, int64_t *ord, double *out) {
    bg_topk_sort((n->attr.flags & BG_SMALLEST) != 0, x, step, len, ord);
    bool values = n->op == BRAID_OP_TOPK_VALUES;
    for (int64_t j = 0; j < olen; j++)
        out[j * step] = values ? x[ord[j] * step] : (double)ord[j];
}

void bg_eval_axis(const bg_node *n, const bg_node *x, const double *in,
                  double *out) {
    bg_axis_lines l;
    bg_axis_lines_of(n, x, &l);
    int64_t *ord = NULL;
    if (n->op == BRAID_OP_TOPK_VALUES || n->op == BRAID_OP_TOPK_INDICES) {
        ord = malloc((size_t)(l.len > 0 ? l.len : 1) * sizeof *ord);
        if (ord == NULL) { /* the reference's own scratch: NaN, not a crash */
            for (int64_t i = 0, m = bg_numel(n); i < m; i++)
                out[i] = NAN;
            return;
        }
    }
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t i = 0; i < l.inner; i++) {
            const double *xl = in + o * l.len * l.inner + i;
            double *ol = out + o * l.olen * l.inner + i;
            if (ord)
                eval_topk(n, xl, l.len, l.inner, l.olen, ord, ol);
            else if (n->op == BRAID_OP_CUMSUM)
                eval_cumsum(n, xl, l.len, l.inner, ol);
            else
                eval_arg(n, xl, l.len, l.inner, ol);
        }
    free(ord);
}
