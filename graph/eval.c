/* graph/eval.c — one node evaluated naively in float64: the core of the
 * reference evaluator (runtime/reference) and of constant folding
 * (passes/simplify_fold.c).
 *
 * Every kernel walks its output in flat C order and computes each element's
 * input positions from scratch with divisions and multiplications: slow, but
 * each line can be checked against the semantics in docs by eye. Values are
 * doubles; elementwise ops and reductions follow the one statement of their
 * meaning in graph/scalar.h (float rules in double, i32 rules wrapping),
 * shared with the CPU kernels. */
#include "graph/attention.h"
#include "graph/eval.h"
#include "graph/index.h"
#include "graph/internal.h"
#include "graph/axis.h"
#include "graph/scalar.h"
#include "graph/window.h"

#include <math.h>
#include <string.h>

double bg_round(braid_dtype t, double v) {
    /* A union keeps the scratch slot aligned for every dtype. */
    union {
        double d;
        int64_t i;
        unsigned char b[8];
    } slot;
    slot.i = 0;
    bg_store(t, &slot, 0, v);
    return bg_load(t, &slot, 0);
}

/* ---- index arithmetic ---------------------------------------------------- */

/* Multi-index of flat C-order position flat in a tensor of the given dims. */
static void unravel(int64_t flat, int rank, const int64_t *dims, int64_t *idx) {
    for (int k = rank - 1; k >= 0; k--) {
        idx[k] = flat % dims[k];
        flat /= dims[k];
    }
}

/* Flat C-order position of multi-index idx. */
static int64_t ravel(int rank, const int64_t *dims, const int64_t *idx) {
    int64_t flat = 0;
    for (int k = 0; k < rank; k++)
        flat = flat * dims[k] + idx[k];
    return flat;
}

/* Position, in an input of rank irank and dims idims, of the element that
 * output element flat (rank orank, dims odims) reads under NumPy
 * broadcasting: shapes aligned right, an input dim of 1 repeats. */
static int64_t bcast_pos(int64_t flat, int orank, const int64_t *odims,
                         int irank, const int64_t *idims) {
    int64_t oidx[BRAID_MAX_RANK], iidx[BRAID_MAX_RANK];
    unravel(flat, orank, odims, oidx);
    for (int k = 0; k < irank; k++) {
        int ok = k + (orank - irank);
        iidx[k] = idims[k] == 1 ? 0 : oidx[ok];
    }
    return ravel(irank, idims, iidx);
}

static const bg_node *input_node(const braid_graph *g, const bg_node *n,
                                 uint32_t k) {
    return bg_node_at(g, n->inputs[k]);
}

/* ---- sources ------------------------------------------------------------- */

static void eval_source(const bg_node *n, double *out, const void *data,
                        int64_t lo, int64_t hi) {
    int64_t idx[BRAID_MAX_RANK];
    for (int64_t i = lo; i < hi; i++) {
        switch (n->op) {
        case BRAID_OP_INPUT:
            out[i] = bg_load(n->dtype, data, i);
            break;
        case BRAID_OP_CONSTANT:
            out[i] = bg_load(n->dtype, n->attr.data, i);
            break;
        case BRAID_OP_FILL:
            out[i] = n->attr.value[0];
            break;
        case BRAID_OP_VARIABLE: /* data: its value bound by the caller */
            out[i] = data ? bg_load(n->dtype, data, i)
                          : bg_variable_init_at(n, i);
            break;
        case BRAID_OP_IOTA:
            unravel(i, n->rank, n->dims, idx);
            out[i] = n->rank == 0 ? 0.0 : (double)idx[n->attr.axis];
            break;
        case BRAID_OP_RANDOM_UNIFORM:
            out[i] = bg_random_uniform_at(n->attr.seed, i, n->attr.value[0],
                                          n->attr.value[1]);
            break;
        default: /* RANDOM_NORMAL: the only source left */
            out[i] = bg_random_normal_at(n->attr.seed, i, n->attr.value[0],
                                         n->attr.value[1]);
            break;
        }
    }
}

/* ---- elementwise --------------------------------------------------------- */

/* Unary ops, binary ops, comparisons, where, cast and copy: each output
 * element from the broadcast element of each input, by bg_scalar_apply. */
static void eval_elementwise(const braid_graph *g, const bg_node *n,
                             const double *const *in, double *out, int64_t lo,
                             int64_t hi) {
    const bg_node *a = input_node(g, n, 0);
    const bg_node *b = n->ninputs > 1 ? input_node(g, n, 1) : NULL;
    const bg_node *c = n->ninputs > 2 ? input_node(g, n, 2) : NULL;
    /* the dtype the op computes in: its last operand's (where: a value) */
    braid_dtype t = input_node(g, n, n->ninputs - 1)->dtype;
    for (int64_t i = lo; i < hi; i++) {
        double x[3] = {0.0, 0.0, 0.0};
        x[0] = in[0][bcast_pos(i, n->rank, n->dims, a->rank, a->dims)];
        if (b) x[1] = in[1][bcast_pos(i, n->rank, n->dims, b->rank, b->dims)];
        if (c) x[2] = in[2][bcast_pos(i, n->rank, n->dims, c->rank, c->dims)];
        out[i] = bg_scalar_apply(n->op, t, x);
    }
}

/* ---- matmul -------------------------------------------------------------- */

/* out[..., m, n] = Σ_k A[..., m, k] · B[..., k, n], where A and B are the
 * inputs with their last two axes swapped when the node's transpose flags
 * say so; batch axes broadcast like elementwise ops. Sums run in float64,
 * k ascending from 0.0. Output elements [lo, hi) only, row by row: the k
 * loop outside the j loop reads B along its rows (the naive j-outside
 * order strides through B and is many times slower), and each element
 * still sums its products in the same order, so the values are those of
 * the textbook triple loop. */
static void eval_matmul(const braid_graph *g, const bg_node *n,
                        const double *const *in, double *out, int64_t lo,
                        int64_t hi) {
    const bg_node *a = input_node(g, n, 0), *b = input_node(g, n, 1);
    bool ta = (n->attr.flags & BRAID_TRANSPOSE_A) != 0;
    bool tb = (n->attr.flags & BRAID_TRANSPOSE_B) != 0;
    int r = n->rank;
    int64_t M = n->dims[r - 2], N = n->dims[r - 1];
    int64_t K = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    if (N == 0) return;
    for (int64_t row = lo / N; row * N < hi; row++) {
        int64_t bi = row / M, m = row % M;
        int64_t j0 = (lo > row * N ? lo : row * N) - row * N;
        int64_t j1 = (hi < (row + 1) * N ? hi : (row + 1) * N) - row * N;
        int64_t abase =
            bcast_pos(bi, r - 2, n->dims, a->rank - 2, a->dims) * M * K;
        int64_t bbase =
            bcast_pos(bi, r - 2, n->dims, b->rank - 2, b->dims) * K * N;
        double *o = out + row * N;
        for (int64_t j = j0; j < j1; j++)
            o[j] = 0.0;
        for (int64_t k = 0; k < K; k++) {
            double x = in[0][abase + (ta ? k * M + m : m * K + k)];
            for (int64_t j = j0; j < j1; j++)
                o[j] += x * in[1][bbase + (tb ? j * K + k : k * N + j)];
        }
    }
}

/* ---- reductions ---------------------------------------------------------- */

/* Output position of input multi-index idx: reduced axes dropped, or pinned
 * to 0 with keepdims. */
static int64_t reduce_pos(const bg_node *n, const bg_node *x,
                          const int64_t *idx) {
    bool keep = (n->attr.flags & BG_KEEPDIMS) != 0;
    int64_t oidx[BRAID_MAX_RANK];
    int j = 0;
    for (int k = 0; k < x->rank; k++) {
        if (n->attr.axes & (1u << k)) {
            if (keep) oidx[j++] = 0;
        } else {
            oidx[j++] = idx[k];
        }
    }
    return ravel(n->rank, n->dims, oidx);
}

static void eval_reduce(const braid_graph *g, const bg_node *n,
                        const double *const *in, double *out) {
    const bg_node *x = input_node(g, n, 0);
    int64_t onumel = bg_numel(n), inumel = bg_numel(x);
    for (int64_t o = 0; o < onumel; o++)
        out[o] = bg_reduce_identity(n->op);
    int64_t idx[BRAID_MAX_RANK];
    for (int64_t i = 0; i < inumel; i++) {
        unravel(i, x->rank, x->dims, idx);
        int64_t o = reduce_pos(n, x, idx);
        out[o] = bg_reduce_combine(n->op, x->dtype, out[o], in[0][i]);
    }
    int64_t count = 1;
    for (int k = 0; k < x->rank; k++)
        if (n->attr.axes & (1u << k)) count *= x->dims[k];
    for (int64_t o = 0; o < onumel; o++)
        out[o] = bg_reduce_finish(n->op, x->dtype, out[o], count);
}

/* ---- shape ops ----------------------------------------------------------- */

static void eval_permute(const braid_graph *g, const bg_node *n,
                         const double *const *in, double *out, int64_t lo,
                         int64_t hi) {
    const bg_node *x = input_node(g, n, 0);
    int64_t oidx[BRAID_MAX_RANK], iidx[BRAID_MAX_RANK];
    for (int64_t i = lo; i < hi; i++) {
        unravel(i, n->rank, n->dims, oidx);
        for (int k = 0; k < n->rank; k++)
            iidx[n->attr.perm[k]] = oidx[k];
        out[i] = in[0][ravel(x->rank, x->dims, iidx)];
    }
}

static void eval_slice(const braid_graph *g, const bg_node *n,
                       const double *const *in, double *out, int64_t lo,
                         int64_t hi) {
    const bg_node *x = input_node(g, n, 0);
    int64_t idx[BRAID_MAX_RANK];
    for (int64_t i = lo; i < hi; i++) {
        unravel(i, n->rank, n->dims, idx);
        for (int k = 0; k < n->rank; k++)
            idx[k] = n->attr.start[k] + idx[k] * n->attr.step[k];
        out[i] = in[0][ravel(x->rank, x->dims, idx)];
    }
}

static void eval_concat(const braid_graph *g, const bg_node *n,
                        const double *const *in, double *out, int64_t lo,
                         int64_t hi) {
    int axis = n->attr.axis;
    int64_t idx[BRAID_MAX_RANK];
    for (int64_t i = lo; i < hi; i++) {
        unravel(i, n->rank, n->dims, idx);
        uint32_t k = 0; /* the piece holding idx[axis], and its offset */
        while (idx[axis] >= input_node(g, n, k)->dims[axis]) {
            idx[axis] -= input_node(g, n, k)->dims[axis];
            k++;
        }
        const bg_node *x = input_node(g, n, k);
        out[i] = in[k][ravel(x->rank, x->dims, idx)];
    }
}

static void eval_broadcast(const braid_graph *g, const bg_node *n,
                           const double *const *in, double *out, int64_t lo,
                         int64_t hi) {
    const bg_node *x = input_node(g, n, 0);
    for (int64_t i = lo; i < hi; i++)
        out[i] = in[0][bcast_pos(i, n->rank, n->dims, x->rank, x->dims)];
}

/* ---- row ops ------------------------------------------------------------- */

/* softmax over the last axis, per row: exp(x - max) / sum, the max
 * subtracted first (so exp never overflows); NaN propagates through the
 * max, and a row of only -inf gives NaN (-inf - -inf). */
/* The rows that start in elements [lo, hi), rounded to the node's dtype: a
 * threaded reference splits a node's elements into ranges that need not
 * fall on row boundaries, and each row must be computed, rounded and
 * written, whole, by exactly one range. */
static void eval_softmax(const bg_node *n, const double *x, double *out,
                         int64_t lo, int64_t hi) {
    int64_t C = n->dims[n->rank - 1];
    if (C <= 0) return;
    for (int64_t r = (lo + C - 1) / C; r * C < hi; r++) {
        const double *xr = x + r * C;
        double *o = out + r * C, mx = -INFINITY, sum = 0;
        for (int64_t k = 0; k < C; k++)
            if (xr[k] > mx || xr[k] != xr[k]) mx = xr[k];
        for (int64_t k = 0; k < C; k++)
            sum += o[k] = exp(xr[k] - mx);
        for (int64_t k = 0; k < C; k++)
            o[k] = bg_round(n->dtype, o[k] / sum);
    }
}

/* layer_norm over the last axis, per row (the rows that start in [lo, hi),
 * as eval_softmax): mean, then the variance as the mean of (x - mean)²
 * (two passes: no cancellation), y = (x - mean) · (1 / sqrt(var + eps)) ·
 * gamma + beta, rounded once to the dtype. */
static void eval_layer_norm(const bg_node *n, const double *const *in,
                            double *out, int64_t lo, int64_t hi) {
    int64_t C = n->dims[n->rank - 1];
    if (C <= 0) return;
    const double *gam = in[1], *bet = in[2];
    for (int64_t r = (lo + C - 1) / C; r * C < hi; r++) {
        const double *xr = in[0] + r * C;
        double *o = out + r * C, sum = 0, sq = 0;
        for (int64_t k = 0; k < C; k++)
            sum += xr[k];
        double mu = sum / (double)C;
        for (int64_t k = 0; k < C; k++)
            sq += (xr[k] - mu) * (xr[k] - mu);
        double rs = 1.0 / sqrt(sq / (double)C + n->attr.value[0]);
        for (int64_t k = 0; k < C; k++)
            o[k] = bg_round(n->dtype, (xr[k] - mu) * rs * gam[k] + bet[k]);
    }
}

/* ---- dispatch ------------------------------------------------------------ */

bool bg_eval_node_range(const braid_graph *g, uint32_t id,
                        const double *const *in, double *out, const void *data,
                        int64_t lo, int64_t hi) {
    const bg_node *n = bg_node_at(g, id);
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_SOURCE:
        eval_source(n, out, data, lo, hi);
        break;
    case BRAID_KIND_ELEMENTWISE:
    case BRAID_KIND_COPY:
        eval_elementwise(g, n, in, out, lo, hi);
        break;
    case BRAID_KIND_BROADCAST:
        eval_broadcast(g, n, in, out, lo, hi);
        break;
    case BRAID_KIND_REDUCE: /* whole: bg_eval_splits says so */
        eval_reduce(g, n, in, out);
        break;
    case BRAID_KIND_MATMUL:
        eval_matmul(g, n, in, out, lo, hi);
        break;
    case BRAID_KIND_ROW:
        if (n->op == BRAID_OP_LAYER_NORM)
            eval_layer_norm(n, in, out, lo, hi);
        else
            eval_softmax(n, in[0], out, lo, hi);
        break;
    case BRAID_KIND_WINDOW:
        bg_eval_window(n, input_node(g, n, 0), in[0], out, lo, hi);
        break;
    case BRAID_KIND_AXIS: /* whole: bg_eval_splits says so */
        bg_eval_axis(n, input_node(g, n, 0), in[0], out);
        break;
    case BRAID_KIND_SHAPE:
        if (n->op == BRAID_OP_RESHAPE)
            memcpy(out + lo, in[0] + lo, (size_t)(hi - lo) * sizeof(double));
        else if (n->op == BRAID_OP_PERMUTE)
            eval_permute(g, n, in, out, lo, hi);
        else if (n->op == BRAID_OP_SLICE)
            eval_slice(g, n, in, out, lo, hi);
        else
            eval_concat(g, n, in, out, lo, hi);
        break;
    case BRAID_KIND_STATE: /* assign: the value it writes */
        memcpy(out + lo, in[1] + lo, (size_t)(hi - lo) * sizeof(double));
        break;
    case BRAID_KIND_INDEX: /* whole for scatter: bg_eval_splits says so */
        if (n->op == BRAID_OP_GATHER)
            bg_eval_gather(g, n, in, out, lo, hi);
        else
            bg_eval_scatter(g, n, in, out);
        break;
    case BRAID_KIND_CONV: /* conv ops */
        bg_eval_conv(g, n, in, out, lo, hi);
        break;
    case BRAID_KIND_ATTENTION: /* rows of D, rounded by it */
        bg_eval_attention(g, n, in, out, lo, hi);
        return true;
    default:
        return false; /* collectives, fused nodes: the caller's business */
    }
    /* rows reach past hi and start after lo: the row ops round their own */
    if (bg_op(n->op)->kind == BRAID_KIND_ROW) return true;
    for (int64_t i = lo; i < hi; i++)
        out[i] = bg_round(n->dtype, out[i]);
    return true;
}

bool bg_eval_node(const braid_graph *g, uint32_t id, const double *const *in,
                  double *out, const void *data) {
    return bg_eval_node_range(g, id, in, out, data, 0,
                              bg_numel(bg_node_at(g, id)));
}

bool bg_eval_splits(const bg_node *n) {
    /* a reduction scatters its input over its outputs, and so does
     * scatter; an axis op works on whole lines: one piece */
    braid_op_kind k = bg_op(n->op)->kind;
    return k != BRAID_KIND_REDUCE && k != BRAID_KIND_AXIS &&
           n->op != BRAID_OP_SCATTER;
}

void bg_eval_round(const bg_node *n, double *v) {
    for (int64_t i = 0, m = bg_numel(n); i < m; i++)
        v[i] = bg_round(n->dtype, v[i]);
}

braid_status bg_eval_cast_check(const braid_graph *g, uint32_t id,
                                const double *x) {
    const bg_node *n = bg_node_at(g, id);
    if (n->op != BRAID_OP_CAST ||
        !bg_cast_checked(bg_node_at(g, n->inputs[0])->dtype, n->dtype))
        return BRAID_OK;
    for (int64_t i = 0, m = bg_numel(n); i < m; i++) {
        int64_t v;
        bg_store(BRAID_I64, &v, 0, x[i]); /* exact: x holds i64 values */
        if (!bg_int_fits(n->dtype, v))
            return bg_cast_range_error(g, id, i, v);
    }
    return BRAID_OK;
}
