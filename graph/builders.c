/* graph/builders.c — the public builder API. Each function turns its
 * arguments into a bg_build call; the checks live in bg_build, except those
 * about arguments bg_build never sees (negative axes, Python slice bounds,
 * which op braid_unary/braid_binary may take). */
#include "graph/index.h"
#include "graph/internal.h"

#include <math.h>
#include <string.h>

braid_tensor bb_tensor(uint32_t id) {
    braid_tensor t = {id};
    return t;
}

/* The node behind t, or NULL after recording why not: a NULL graph, a graph
 * that already failed (quietly), an id that is not a node of g. */
const bg_node *bb_peek(braid_graph *g, braid_tensor t, const char *op) {
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: graph is NULL", op);
        return NULL;
    }
    if (g->status != BRAID_OK) return NULL;
    if (t.id >= g->nnodes) {
        if (t.id == BRAID_INVALID_ID)
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: operand is an invalid tensor (BRAID_NONE)", op);
        else
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: operand has id %u; the graph has %u nodes", op,
                    (unsigned)t.id, (unsigned)g->nnodes);
        return NULL;
    }
    return bg_node_at(g, t.id);
}

/* A graph that can take a new node: not NULL, no error yet. */
bool bb_ready(braid_graph *g, const char *op) {
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: graph is NULL", op);
        return false;
    }
    return g->status == BRAID_OK;
}

braid_tensor bb_op1(braid_graph *g, braid_op op, braid_tensor x,
                           const bg_attrs *a) {
    if (!bb_ready(g, bg_op(op)->name)) return BRAID_NONE;
    return bb_tensor(bg_build(g, op, &x.id, 1, BRAID_F32, 0, NULL, a, NULL));
}

static braid_tensor bb_op2(braid_graph *g, braid_op op, braid_tensor a,
                           braid_tensor b, const bg_attrs *attr) {
    if (!bb_ready(g, bg_op(op)->name)) return BRAID_NONE;
    uint32_t in[2] = {a.id, b.id};
    return bb_tensor(bg_build(g, op, in, 2, BRAID_F32, 0, NULL, attr, NULL));
}

/* ---- sources
 * ----------------------------------------------------------------- */

static braid_tensor bb_source(braid_graph *g, braid_op op, braid_dtype dtype,
                              int rank, const int64_t *dims, const bg_attrs *a,
                              const char *name) {
    if (!bb_ready(g, bg_op(op)->name)) return BRAID_NONE;
    return bb_tensor(bg_build(g, op, NULL, 0, dtype, rank, dims, a, name));
}

braid_tensor braid_input(braid_graph *g, const char *name, braid_dtype dtype,
                         int rank, const int64_t *dims) {
    return bb_source(g, BRAID_OP_INPUT, dtype, rank, dims, NULL, name);
}

braid_tensor braid_constant(braid_graph *g, braid_dtype dtype, int rank,
                            const int64_t *dims, const void *data) {
    bg_attrs a = {0};
    a.data = (void *)data; /* only read: bg_build copies it */
    return bb_source(g, BRAID_OP_CONSTANT, dtype, rank, dims, &a, NULL);
}

braid_tensor bg_constant_shared(braid_graph *g, braid_dtype dtype, int rank,
                                const int64_t *dims, const void *data) {
    int64_t numel = 0;
    bg_shared *h = NULL;
    void *copy = NULL;
    if (!g || !bg_default_allocator(g) || !data || rank < 0 ||
        rank > BRAID_MAX_RANK || (rank > 0 && !dims) ||
        (unsigned)dtype >= (unsigned)BRAID_DTYPE_COUNT_ ||
        !bg_shape_fits(rank, dims, braid_dtype_size(dtype), &numel) ||
        numel <= 0 ||
        !(h = bg_shared_copy(data, (size_t)numel * braid_dtype_size(dtype),
                             &copy)))
        return braid_constant(g, dtype, rank, dims, data); /* its checks */
    bg_attrs a = {0};
    a.data = copy; /* borrowed from h: one reference taken */
    braid_tensor t = BRAID_NONE;
    if (bb_ready(g, "constant"))
        t = bb_tensor(bg_build_shared(g, BRAID_OP_CONSTANT, NULL, 0, dtype,
                                      rank, dims, &a, NULL, h));
    bg_shared_unref(h); /* the node holds its own */
    return t;
}

braid_tensor braid_fill(braid_graph *g, braid_dtype dtype, int rank,
                        const int64_t *dims, double value) {
    bg_attrs a = {0};
    a.value[0] = value;
    return bb_source(g, BRAID_OP_FILL, dtype, rank, dims, &a, NULL);
}

braid_tensor braid_iota(braid_graph *g, braid_dtype dtype, int rank,
                        const int64_t *dims, int axis) {
    bg_attrs a = {0};
    a.axis = axis;
    return bb_source(g, BRAID_OP_IOTA, dtype, rank, dims, &a, NULL);
}

braid_tensor braid_random_uniform(braid_graph *g, braid_dtype dtype, int rank,
                                  const int64_t *dims, uint64_t seed,
                                  double low, double high) {
    bg_attrs a = {0};
    a.seed = seed;
    a.value[0] = low;
    a.value[1] = high;
    return bb_source(g, BRAID_OP_RANDOM_UNIFORM, dtype, rank, dims, &a, NULL);
}

braid_tensor braid_random_normal(braid_graph *g, braid_dtype dtype, int rank,
                                 const int64_t *dims, uint64_t seed,
                                 double mean, double stddev) {
    bg_attrs a = {0};
    a.seed = seed;
    a.value[0] = mean;
    a.value[1] = stddev;
    return bb_source(g, BRAID_OP_RANDOM_NORMAL, dtype, rank, dims, &a, NULL);
}

/* ---- elementwise
 * ------------------------------------------------------------- */

braid_tensor braid_unary(braid_graph *g, braid_op op, braid_tensor x) {
    if (!bb_ready(g, "braid_unary")) return BRAID_NONE;
    const bg_op_info *info = bg_op(op);
    if (info == NULL || info->arity != 1 ||
        info->kind != BRAID_KIND_ELEMENTWISE || op == BRAID_OP_CAST) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "braid_unary: op '%s' is not a unary elementwise op",
                info ? info->name : "?");
        return BRAID_NONE;
    }
    return bb_op1(g, op, x, NULL);
}

braid_tensor braid_binary(braid_graph *g, braid_op op, braid_tensor a,
                          braid_tensor b) {
    if (!bb_ready(g, "braid_binary")) return BRAID_NONE;
    const bg_op_info *info = bg_op(op);
    if (info == NULL || info->arity != 2 ||
        info->kind != BRAID_KIND_ELEMENTWISE) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "braid_binary: op '%s' is not a binary elementwise op",
                info ? info->name : "?");
        return BRAID_NONE;
    }
    return bb_op2(g, op, a, b, NULL);
}

#define BB_UNARY(fn, OP)                                                       \
    braid_tensor braid_##fn(braid_graph *g, braid_tensor x) {                  \
        return bb_op1(g, BRAID_OP_##OP, x, NULL);                              \
    }
#define BB_BINARY(fn, OP)                                                      \
    braid_tensor braid_##fn(braid_graph *g, braid_tensor a, braid_tensor b) {  \
        return bb_op2(g, BRAID_OP_##OP, a, b, NULL);                           \
    }

BB_UNARY(neg, NEG)
BB_UNARY(abs, ABS)
BB_UNARY(exp, EXP)
BB_UNARY(log, LOG)
BB_UNARY(sqrt, SQRT)
BB_UNARY(rsqrt, RSQRT)
BB_UNARY(sin, SIN)
BB_UNARY(cos, COS)
BB_UNARY(tan, TAN)
BB_UNARY(tanh, TANH)
BB_UNARY(sigmoid, SIGMOID)
BB_UNARY(relu, RELU)
BB_UNARY(gelu, GELU)
BB_UNARY(silu, SILU)
BB_UNARY(erf, ERF)
BB_UNARY(floor, FLOOR)
BB_UNARY(ceil, CEIL)
BB_UNARY(reciprocal, RECIPROCAL)
BB_UNARY(square, SQUARE)

BB_BINARY(add, ADD)
BB_BINARY(sub, SUB)
BB_BINARY(mul, MUL)
BB_BINARY(div, DIV)
BB_BINARY(pow, POW)
BB_BINARY(max, MAX)
BB_BINARY(min, MIN)
BB_BINARY(eq, EQ)
BB_BINARY(ne, NE)
BB_BINARY(lt, LT)
BB_BINARY(le, LE)
BB_BINARY(gt, GT)
BB_BINARY(ge, GE)

/* elemwise helper (issue 13) */
BB_UNARY(asin, ASIN)
BB_UNARY(acos, ACOS)
BB_UNARY(atan, ATAN)
BB_UNARY(sinh, SINH)
BB_UNARY(cosh, COSH)
BB_UNARY(asinh, ASINH)
BB_UNARY(acosh, ACOSH)
BB_UNARY(atanh, ATANH)
BB_UNARY(sign, SIGN)
BB_UNARY(round, ROUND)
BB_UNARY(bitwise_not, BITWISE_NOT)
BB_BINARY(mod, MOD)
BB_BINARY(fmod, FMOD)
BB_BINARY(bitwise_and, BITWISE_AND)
BB_BINARY(bitwise_or, BITWISE_OR)
BB_BINARY(bitwise_xor, BITWISE_XOR)
BB_BINARY(shift_left, SHIFT_LEFT)
BB_BINARY(shift_right, SHIFT_RIGHT)

braid_tensor braid_where(braid_graph *g, braid_tensor cond, braid_tensor a,
                         braid_tensor b) {
    if (!bb_ready(g, "where")) return BRAID_NONE;
    uint32_t in[3] = {cond.id, a.id, b.id};
    return bb_tensor(
        bg_build(g, BRAID_OP_WHERE, in, 3, BRAID_F32, 0, NULL, NULL, NULL));
}

braid_tensor braid_cast(braid_graph *g, braid_tensor x, braid_dtype dtype) {
    if (!bb_ready(g, "cast")) return BRAID_NONE;
    return bb_tensor(
        bg_build(g, BRAID_OP_CAST, &x.id, 1, dtype, 0, NULL, NULL, NULL));
}

/* ---- matmul and reductions
 * ----------------------------------------------------- */

braid_tensor braid_matmul(braid_graph *g, braid_tensor a, braid_tensor b,
                          unsigned flags) {
    bg_attrs attr = {0};
    attr.flags = flags;
    return bb_op2(g, BRAID_OP_MATMUL, a, b, &attr);
}

/* Turns a public axis (negative counts from the end) into 0..rank-1, or
 * records an error and returns -1. */
int bb_axis(braid_graph *g, const bg_node *x, int axis, const char *op) {
    if (axis >= -(int)x->rank && axis < (int)x->rank)
        return axis < 0 ? axis + x->rank : axis;
    char t[BG_ERROR_MAX / 2];
    bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
            "%s: axis %d out of range for operand %s", op, axis,
            bg_type_str(x, t, sizeof t));
    return -1;
}

/* naxes == 0 reduces every axis; otherwise each axis once. */
static braid_tensor bb_reduce(braid_graph *g, braid_op op, braid_tensor x,
                              int naxes, const int *axes, bool keepdims) {
    const char *name = bg_op(op)->name;
    const bg_node *n = bb_peek(g, x, name);
    if (n == NULL) return BRAID_NONE;
    bg_attrs a = {0};
    a.flags = keepdims ? BG_KEEPDIMS : 0;
    if (naxes == 0) a.axes = (uint8_t)((1u << n->rank) - 1);
    if (naxes < 0 || naxes > n->rank || (naxes > 0 && axes == NULL)) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "%s: %d axes%s for an operand of rank %d", name, naxes,
                naxes > 0 && axes == NULL ? " (NULL array)" : "", (int)n->rank);
        return BRAID_NONE;
    }
    for (int i = 0; i < naxes; i++) {
        int ax = bb_axis(g, n, axes[i], name);
        if (ax < 0) return BRAID_NONE;
        if (a.axes & (1u << ax)) {
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: duplicate axis %d (given as %d)", name, ax, axes[i]);
            return BRAID_NONE;
        }
        a.axes |= (uint8_t)(1u << ax);
    }
    return bb_op1(g, op, x, &a);
}

braid_tensor braid_sum(braid_graph *g, braid_tensor x, int naxes,
                       const int *axes, bool keepdims) {
    return bb_reduce(g, BRAID_OP_SUM, x, naxes, axes, keepdims);
}

braid_tensor braid_mean(braid_graph *g, braid_tensor x, int naxes,
                        const int *axes, bool keepdims) {
    return bb_reduce(g, BRAID_OP_MEAN, x, naxes, axes, keepdims);
}

braid_tensor braid_reduce_max(braid_graph *g, braid_tensor x, int naxes,
                              const int *axes, bool keepdims) {
    return bb_reduce(g, BRAID_OP_REDUCE_MAX, x, naxes, axes, keepdims);
}

braid_tensor braid_reduce_min(braid_graph *g, braid_tensor x, int naxes,
                              const int *axes, bool keepdims) {
    return bb_reduce(g, BRAID_OP_REDUCE_MIN, x, naxes, axes, keepdims);
}

braid_tensor braid_reduce_prod(braid_graph *g, braid_tensor x, int naxes,
                               const int *axes, bool keepdims) {
    return bb_reduce(g, BRAID_OP_REDUCE_PROD, x, naxes, axes, keepdims);
}

/* ---- composites
 * -------------------------------------------------------------------- */

bool bb_need_float(braid_graph *g, const bg_node *x, const char *op) {
    if (braid_dtype_is_float(x->dtype)) return true;
    char t[BG_ERROR_MAX / 2];
    bg_fail(g, BRAID_ERR_DTYPE, "%s: operand %s; expected a float dtype", op,
            bg_type_str(x, t, sizeof t));
    return false;
}

/* One softmax node over the last axis (the op's only form: the kernels
 * read rows in place); another axis is moved last by a permute and back. */
braid_tensor braid_softmax(braid_graph *g, braid_tensor x, int axis) {
    const bg_node *n = bb_peek(g, x, "softmax");
    if (n == NULL || !bb_need_float(g, n, "softmax")) return BRAID_NONE;
    int ax = bb_axis(g, n, axis, "softmax");
    if (ax < 0) return BRAID_NONE;
    int last = n->rank - 1;
    if (ax == last) return bb_op1(g, BRAID_OP_SOFTMAX, x, &(bg_attrs){0});
    int perm[BRAID_MAX_RANK]; /* swaps ax and last: its own inverse */
    for (int i = 0; i < n->rank; i++)
        perm[i] = i == ax ? last : i == last ? ax : i;
    braid_tensor t = braid_permute(g, x, perm);
    t = bb_op1(g, BRAID_OP_SOFTMAX, t, &(bg_attrs){0});
    return braid_permute(g, t, perm);
}

bool bb_affine_ok(braid_graph *g, const bg_node *x, braid_tensor p,
                  const char *what, const char *op) {
    if (!braid_tensor_valid(p)) return true;
    const bg_node *n = bb_peek(g, p, op);
    if (n == NULL) return false;
    int r;
    int64_t d[BRAID_MAX_RANK];
    bool ok = bg_broadcast_shapes(x->rank, x->dims, n->rank, n->dims, &r, d) &&
              r == x->rank && memcmp(d, x->dims, (size_t)r * sizeof *d) == 0;
    if (!ok) {
        char tx[BG_ERROR_MAX / 4], tp[BG_ERROR_MAX / 4];
        bg_fail(g, BRAID_ERR_SHAPE,
                "%s: %s %s does not broadcast to operand %s", op, what,
                bg_type_str(n, tp, sizeof tp), bg_type_str(x, tx, sizeof tx));
    }
    return ok;
}

/* p as layer_norm's row operand ([C], x's dtype) when it holds exactly a
 * row: x's dtype, last dim C and every other dim 1 (reshaped to [C]);
 * BRAID_NONE when it does not (it broadcasts otherwise: applied after). */
static braid_tensor bb_ln_row(braid_graph *g, const bg_node *x,
                              braid_tensor p) {
    const bg_node *n = bg_node_at(g, p.id);
    int64_t C = x->dims[x->rank - 1];
    if (n->dtype != x->dtype || n->rank == 0 || n->dims[n->rank - 1] != C)
        return BRAID_NONE;
    for (int i = 0; i + 1 < n->rank; i++)
        if (n->dims[i] != 1) return BRAID_NONE;
    return n->rank == 1 ? p : braid_reshape(g, p, 1, &C);
}

/* One layer_norm node over the last axis, x's normalised rows × gamma +
 * beta; a gamma or beta absent is a fill of 1 or 0 (exact: y·1 + 0 = y).
 * A gamma or beta that broadcasts to x without being one row (a scalar,
 * a [N, C] table) is applied after the node by mul / add, as before. */
braid_tensor braid_layer_norm(braid_graph *g, braid_tensor x,
                              braid_tensor gamma, braid_tensor beta,
                              double eps) {
    const bg_node *n = bb_peek(g, x, "layer_norm");
    if (n == NULL || !bb_need_float(g, n, "layer_norm")) return BRAID_NONE;
    if (n->rank == 0 || !isfinite(eps) || eps < 0) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "layer_norm: rank %d, eps %g; expected rank >= 1 and a "
                "finite eps >= 0",
                (int)n->rank, eps);
        return BRAID_NONE;
    }
    braid_dtype dt = n->dtype;
    int64_t C = n->dims[n->rank - 1];
    if (!bb_affine_ok(g, n, gamma, "gamma", "layer_norm") ||
        !bb_affine_ok(g, n, beta, "beta", "layer_norm"))
        return BRAID_NONE;
    bool has_g = braid_tensor_valid(gamma), has_b = braid_tensor_valid(beta);
    braid_tensor gr = has_g ? bb_ln_row(g, n, gamma) : BRAID_NONE;
    /* beta goes in only after a gamma that went in (or none) */
    bool g_in = !has_g || braid_tensor_valid(gr);
    braid_tensor br = has_b && g_in ? bb_ln_row(g, n, beta) : BRAID_NONE;
    bool b_in = !has_b || braid_tensor_valid(br);
    if (!has_g || !g_in) gr = braid_fill(g, dt, 1, &C, 1);
    if (!has_b || !b_in) br = braid_fill(g, dt, 1, &C, 0);
    if (!bb_ready(g, "layer_norm")) return BRAID_NONE;
    bg_attrs a = {0};
    a.value[0] = eps;
    uint32_t in[3] = {x.id, gr.id, br.id};
    braid_tensor y = bb_tensor(
        bg_build(g, BRAID_OP_LAYER_NORM, in, 3, BRAID_F32, 0, NULL, &a, NULL));
    if (has_g && !g_in) y = braid_mul(g, y, gamma);
    if (has_b && !b_in) y = braid_add(g, y, beta);
    return y;
}

/* ---- shape ops
 * ---------------------------------------------------------------------- */

braid_tensor braid_reshape(braid_graph *g, braid_tensor x, int rank,
                           const int64_t *dims) {
    if (!bb_ready(g, "reshape")) return BRAID_NONE;
    return bb_tensor(bg_build(g, BRAID_OP_RESHAPE, &x.id, 1, BRAID_F32, rank,
                              dims, NULL, NULL));
}

braid_tensor braid_permute(braid_graph *g, braid_tensor x, const int *perm) {
    const bg_node *n = bb_peek(g, x, "permute");
    if (n == NULL) return BRAID_NONE;
    if (n->rank > 0 && perm == NULL) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "permute: perm is NULL for rank %d", (int)n->rank);
        return BRAID_NONE;
    }
    bg_attrs a = {0};
    for (int i = 0; i < n->rank; i++) {
        if (perm[i] < 0 || perm[i] >= n->rank) {
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "permute: perm[%d] = %d out of range for rank %d", i,
                    perm[i], (int)n->rank);
            return BRAID_NONE;
        }
        a.perm[i] = (uint8_t)perm[i];
    }
    return bb_op1(g, BRAID_OP_PERMUTE, x, &a);
}

braid_tensor braid_transpose(braid_graph *g, braid_tensor x) {
    const bg_node *n = bb_peek(g, x, "transpose");
    if (n == NULL) return BRAID_NONE;
    if (n->rank < 2) {
        char t[BG_ERROR_MAX / 2];
        bg_fail(g, BRAID_ERR_SHAPE,
                "transpose: operand %s; expected rank "
                ">= 2",
                bg_type_str(n, t, sizeof t));
        return BRAID_NONE;
    }
    int perm[BRAID_MAX_RANK];
    for (int i = 0; i < n->rank; i++)
        perm[i] = i;
    perm[n->rank - 2] = n->rank - 1;
    perm[n->rank - 1] = n->rank - 2;
    return braid_permute(g, x, perm);
}

braid_tensor braid_slice(braid_graph *g, braid_tensor x, const int64_t *start,
                         const int64_t *stop, const int64_t *step) {
    const bg_node *n = bb_peek(g, x, "slice");
    if (n == NULL) return BRAID_NONE;
    if (n->rank > 0 && (start == NULL || stop == NULL)) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "slice: start or stop is NULL for rank %d", (int)n->rank);
        return BRAID_NONE;
    }
    bg_attrs a = {0};
    int64_t count[BRAID_MAX_RANK];
    for (int i = 0; i < n->rank; i++) {
        int64_t st = step ? step[i] : 1;
        if (!bg_slice_bounds(n->dims[i], start[i], stop[i], st, &a.start[i],
                             &count[i])) {
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "slice: step %lld on axis %d; expected a nonzero step",
                    (long long)st, i);
            return BRAID_NONE;
        }
        a.step[i] = st;
    }
    if (!bb_ready(g, "slice")) return BRAID_NONE;
    return bb_tensor(bg_build(g, BRAID_OP_SLICE, &x.id, 1, BRAID_F32, n->rank,
                              count, &a, NULL));
}

braid_tensor braid_concat(braid_graph *g, int n, const braid_tensor *xs,
                          int axis) {
    if (!bb_ready(g, "concat")) return BRAID_NONE;
    if (n < 1 || xs == NULL) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "concat: %d inputs%s; expected at least 1", n,
                xs ? "" : " (NULL array)");
        return BRAID_NONE;
    }
    const bg_node *x0 = bb_peek(g, xs[0], "concat");
    if (x0 == NULL) return BRAID_NONE;
    bg_attrs a = {0};
    a.axis = axis < 0 ? axis + x0->rank : axis; /* bg_build range-checks */
    if (axis < 0 && a.axis < 0) a.axis = axis;
    uint32_t local[16];
    size_t bytes = (size_t)n * sizeof(uint32_t);
    uint32_t *ids = n <= 16 ? local : bg_alloc(g, bytes);
    if (ids == NULL) return BRAID_NONE;
    for (int i = 0; i < n; i++)
        ids[i] = xs[i].id;
    uint32_t id = bg_build(g, BRAID_OP_CONCAT, ids, (uint32_t)n, BRAID_F32, 0,
                           NULL, &a, NULL);
    if (ids != local) bg_free(g, ids, bytes);
    return bb_tensor(id);
}

braid_tensor braid_broadcast_to(braid_graph *g, braid_tensor x, int rank,
                                const int64_t *dims) {
    if (!bb_ready(g, "broadcast_to")) return BRAID_NONE;
    return bb_tensor(bg_build(g, BRAID_OP_BROADCAST_TO, &x.id, 1, BRAID_F32,
                              rank, dims, NULL, NULL));
}

/* ---- gather and scatter (issue #13) ---------------------------------------
 * bg_build checks everything (graph/index.c); these only pack the form into
 * the attributes. */

static braid_tensor bb_index(braid_graph *g, braid_op op, uint32_t nin,
                             const braid_tensor *ts, bg_index_mode mode,
                             int axis, braid_scatter_reduction r) {
    if (!bb_ready(g, bg_op(op)->name)) return BRAID_NONE;
    uint32_t in[3];
    for (uint32_t i = 0; i < nin; i++)
        in[i] = ts[i].id;
    bg_attrs a = {0};
    a.axis = axis;
    a.flags = bg_index_flags(mode, (bg_scatter_red)r);
    return bb_tensor(bg_build(g, op, in, nin, BRAID_F32, 0, NULL, &a, NULL));
}

braid_tensor braid_gather(braid_graph *g, braid_tensor x, braid_tensor indices,
                          int axis) {
    braid_tensor ts[2] = {x, indices};
    return bb_index(g, BRAID_OP_GATHER, 2, ts, BG_INDEX_AXIS, axis, 0);
}

braid_tensor braid_gather_elements(braid_graph *g, braid_tensor x,
                                   braid_tensor indices, int axis) {
    braid_tensor ts[2] = {x, indices};
    return bb_index(g, BRAID_OP_GATHER, 2, ts, BG_INDEX_ELEMENTS, axis, 0);
}

braid_tensor braid_gather_nd(braid_graph *g, braid_tensor x,
                             braid_tensor indices, int batch_dims) {
    braid_tensor ts[2] = {x, indices};
    return bb_index(g, BRAID_OP_GATHER, 2, ts, BG_INDEX_ND, batch_dims, 0);
}

braid_tensor braid_scatter_elements(braid_graph *g, braid_tensor x,
                                    braid_tensor indices, braid_tensor updates,
                                    int axis, braid_scatter_reduction r) {
    braid_tensor ts[3] = {x, indices, updates};
    return bb_index(g, BRAID_OP_SCATTER, 3, ts, BG_INDEX_ELEMENTS, axis, r);
}

braid_tensor braid_scatter_nd(braid_graph *g, braid_tensor x,
                              braid_tensor indices, braid_tensor updates,
                              braid_scatter_reduction r) {
    braid_tensor ts[3] = {x, indices, updates};
    return bb_index(g, BRAID_OP_SCATTER, 3, ts, BG_INDEX_ND, 0, r);
}
