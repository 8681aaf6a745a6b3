/* graph/build.c — bg_build, the one place nodes are created.
 *
 * Every rule of the IR is checked here, once: the public builders, the text
 * parser and the passes all come through this function, so a graph that
 * exists is valid. bg_build also normalises attributes (fields an op does
 * not use are zero), which makes structural equality a plain comparison. */
#include "graph/attention.h"
#include "graph/axis.h"
#include "graph/collective.h"
#include "graph/index.h"
#include "graph/internal.h"
#include "graph/window.h"

#include <math.h>
#include <string.h>

#define BG_TYPE_BUF 200

/* What one bg_build call is working on. */
typedef struct bg_ctx {
    braid_graph *g;      /* the graph being extended */
    braid_op op;         /* the op being built */
    const char *opname;  /* its text name, for messages */
    const uint32_t *in;  /* input ids (validated before the op checks) */
    uint32_t nin;        /* number of inputs */
    braid_dtype dtype;   /* requested dtype (sources, cast) */
    int rank;            /* requested rank (sources, reshape, ...) */
    const int64_t *dims; /* requested dims (may be NULL when rank is 0) */
    const bg_attrs *a;   /* caller's attributes (never NULL here) */
    const char *name;    /* input name */
    bg_node *out;        /* the node being filled in */
    bg_shared *shared;   /* holder of a->data to borrow from, or NULL */
} bg_ctx;

static const bg_node *bg_in(const bg_ctx *c, uint32_t i) {
    return &c->g->nodes[c->in[i]];
}

/* Type string of input i, into buf. */
static const char *bg_in_str(const bg_ctx *c, uint32_t i, char *buf) {
    return bg_type_str(bg_in(c, i), buf, BG_TYPE_BUF);
}

static bool bg_dtype_valid(braid_dtype t) {
    return (unsigned)t < (unsigned)BRAID_DTYPE_COUNT_;
}

/* ---- shapes
 * ------------------------------------------------------------------ */

/* Checks a caller-given shape. allow_infer permits one -1 (reshape). */
static braid_status bg_check_dims(const bg_ctx *c, int rank,
                                  const int64_t *dims, bool allow_infer) {
    if (rank < 0 || rank > BRAID_MAX_RANK)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: rank %d out of range; expected 0..%d", c->opname,
                       rank, BRAID_MAX_RANK);
    if (rank > 0 && dims == NULL)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: dims is NULL for rank %d", c->opname, rank);
    int inferred = 0;
    for (int i = 0; i < rank; i++) {
        if (allow_infer && dims[i] == -1 && inferred++ == 0) continue;
        if (dims[i] < 0 || dims[i] > BG_MAX_BYTES)
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "%s: dim %d is %lld; expected 0..2^50%s", c->opname,
                           i, (long long)dims[i],
                           allow_infer ? " or a single -1" : "");
    }
    return BRAID_OK;
}

/* The output must fit the size rule (bg_shape_fits). */
static braid_status bg_check_size(const bg_ctx *c) {
    const bg_node *n = c->out;
    if (bg_shape_fits(n->rank, n->dims, braid_dtype_size(n->dtype), NULL))
        return BRAID_OK;
    char t[BG_TYPE_BUF];
    return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                   "%s: result %s is larger than 2^50 bytes (zero dims "
                   "counted as 1)",
                   c->opname, bg_type_str(n, t, sizeof t));
}

static void bg_set_shape(bg_node *n, int rank, const int64_t *dims) {
    n->rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        n->dims[i] = dims[i];
}

static void bg_copy_shape(bg_node *n, const bg_node *from) {
    bg_set_shape(n, from->rank, from->dims);
}

/* ---- sources
 * ------------------------------------------------------------------- */

static braid_status bg_check_input_name(const bg_ctx *c) {
    if (!bg_check_ident(c->g, "input", c->name)) return c->g->status;
    if (bg_input_name_taken(c->g, c->name, BG_NONE))
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "input: duplicate input name \"%s\"", c->name);
    return BRAID_OK;
}

static braid_status bg_check_random(const bg_ctx *c) {
    double x = c->a->value[0], y = c->a->value[1];
    if (c->op == BRAID_OP_RANDOM_UNIFORM) {
        if (!isfinite(x) || !isfinite(y) || x > y || !isfinite(y - x))
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "random_uniform: low %g, high %g; expected "
                           "finite low <= high",
                           x, y);
    } else if (!isfinite(x) || !isfinite(y) || y < 0) {
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "random_normal: mean %g, stddev %g; expected finite "
                       "mean and stddev >= 0",
                       x, y);
    }
    return BRAID_OK;
}

static braid_status bg_infer_source(bg_ctx *c) {
    bg_node *n = c->out;
    const bg_attrs *a = c->a;
    if (!bg_dtype_valid(c->dtype))
        return bg_fail(c->g, BRAID_ERR_DTYPE, "%s: unknown dtype %d", c->opname,
                       (int)c->dtype);
    braid_status s = bg_check_dims(c, c->rank, c->dims, false);
    if (s != BRAID_OK) return s;
    n->dtype = c->dtype;
    bg_set_shape(n, c->rank, c->dims);
    switch (c->op) {
    case BRAID_OP_INPUT:
        return bg_check_input_name(c);
    case BRAID_OP_CONSTANT:
        if (a->data == NULL && bg_numel(n) > 0)
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "constant: data is NULL for %lld elements",
                           (long long)bg_numel(n));
        return BRAID_OK; /* data is copied when the node is appended */
    case BRAID_OP_FILL:
        n->attr.value[0] = a->value[0];
        return BRAID_OK;
    case BRAID_OP_VARIABLE:
        return bg_check_variable(c->g, a, c->name, n);
    case BRAID_OP_IOTA:
        if (!bg_op_accepts(c->op, c->dtype))
            return bg_fail(c->g, BRAID_ERR_DTYPE, "iota: dtype %s; expected %s",
                           braid_dtype_name(c->dtype),
                           bg_op_dtypes_text(c->op));
        if (a->axis < 0 || a->axis >= c->rank)
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "iota: axis %d out of range for rank %d",
                           (int)a->axis, c->rank);
        n->attr.axis = a->axis;
        return BRAID_OK;
    default: /* random_uniform, random_normal */
        if (!bg_op_accepts(c->op, c->dtype))
            return bg_fail(c->g, BRAID_ERR_DTYPE, "%s: dtype %s; expected %s",
                           c->opname, braid_dtype_name(c->dtype),
                           bg_op_dtypes_text(c->op));
        n->attr.seed = a->seed;
        n->attr.value[0] = a->value[0];
        n->attr.value[1] = a->value[1];
        return bg_check_random(c);
    }
}

/* ---- elementwise
 * ---------------------------------------------------------------- */

/* Broadcasts the shapes of all inputs into the output. */
static braid_status bg_broadcast_inputs(bg_ctx *c) {
    bg_node *n = c->out;
    bg_copy_shape(n, bg_in(c, 0));
    for (uint32_t i = 1; i < c->nin; i++) {
        const bg_node *x = bg_in(c, i);
        int r;
        if (!bg_broadcast_shapes(n->rank, n->dims, x->rank, x->dims, &r,
                                 n->dims)) {
            char ta[BG_TYPE_BUF], tb[BG_TYPE_BUF];
            n->dtype = bg_in(c, 0)->dtype;
            return bg_fail(c->g, BRAID_ERR_SHAPE,
                           "%s: shapes %s and %s do not broadcast", c->opname,
                           bg_type_str(n, ta, sizeof ta),
                           bg_type_str(x, tb, sizeof tb));
        }
        n->rank = (uint8_t)r;
    }
    return BRAID_OK;
}

static braid_status bg_infer_unary(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    bg_node *n = c->out;
    bg_copy_shape(n, x);
    if (c->op == BRAID_OP_CAST) {
        if (!bg_dtype_valid(c->dtype))
            return bg_fail(c->g, BRAID_ERR_DTYPE,
                           "cast: unknown target dtype %d", (int)c->dtype);
        n->dtype = c->dtype;
        return BRAID_OK;
    }
    n->dtype = x->dtype;
    if (bg_op_accepts(c->op, x->dtype)) return BRAID_OK;
    char t[BG_TYPE_BUF];
    return bg_fail(c->g, BRAID_ERR_DTYPE, "%s: operand %s; expected %s",
                   c->opname, bg_in_str(c, 0, t), bg_op_dtypes_text(c->op));
}

static braid_status bg_infer_binary(bg_ctx *c) {
    const bg_node *a = bg_in(c, 0), *b = bg_in(c, 1);
    char ta[BG_TYPE_BUF], tb[BG_TYPE_BUF];
    if (a->dtype != b->dtype)
        return bg_fail(c->g, BRAID_ERR_DTYPE,
                       "%s: operands %s and %s have different dtypes; "
                       "expected equal dtypes (use cast)",
                       c->opname, bg_in_str(c, 0, ta), bg_in_str(c, 1, tb));
    if (!bg_op_accepts(c->op, a->dtype))
        return bg_fail(c->g, BRAID_ERR_DTYPE,
                       "%s: operands %s and %s; expected %s each", c->opname,
                       bg_in_str(c, 0, ta), bg_in_str(c, 1, tb),
                       bg_op_dtypes_text(c->op));
    braid_status s = bg_broadcast_inputs(c);
    c->out->dtype = bg_op_is_compare(c->op) ? BRAID_BOOL : a->dtype;
    return s;
}

static braid_status bg_infer_where(bg_ctx *c) {
    char t0[BG_TYPE_BUF], t1[BG_TYPE_BUF], t2[BG_TYPE_BUF];
    if (bg_in(c, 0)->dtype != BRAID_BOOL ||
        bg_in(c, 1)->dtype != bg_in(c, 2)->dtype)
        return bg_fail(c->g, BRAID_ERR_DTYPE,
                       "where: operands %s, %s, %s; expected a bool "
                       "condition and two values of equal dtype",
                       bg_in_str(c, 0, t0), bg_in_str(c, 1, t1),
                       bg_in_str(c, 2, t2));
    braid_status s = bg_broadcast_inputs(c);
    c->out->dtype = bg_in(c, 1)->dtype;
    return s;
}

static braid_status bg_infer_elementwise(bg_ctx *c) {
    if (c->op == BRAID_OP_WHERE) return bg_infer_where(c);
    if (c->nin == 1) return bg_infer_unary(c);
    return bg_infer_binary(c);
}

/* ---- matmul
 * ---------------------------------------------------------------------- */

static braid_status bg_infer_matmul(bg_ctx *c) {
    const bg_node *a = bg_in(c, 0), *b = bg_in(c, 1);
    uint32_t flags = c->a->flags;
    char ta[BG_TYPE_BUF], tb[BG_TYPE_BUF];
    if (flags & ~(BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B))
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "matmul: unknown flags 0x%x; expected "
                       "BRAID_TRANSPOSE_A|B",
                       (unsigned)flags);
    if (a->dtype != b->dtype || !bg_op_accepts(c->op, a->dtype))
        return bg_fail(c->g, BRAID_ERR_DTYPE,
                       "matmul: operands %s and %s; "
                       "expected equal float dtypes",
                       bg_in_str(c, 0, ta), bg_in_str(c, 1, tb));
    if (a->rank < 2 || b->rank < 2)
        return bg_fail(c->g, BRAID_ERR_SHAPE,
                       "matmul: operands %s and %s; "
                       "expected rank >= 2 for both",
                       bg_in_str(c, 0, ta), bg_in_str(c, 1, tb));
    bool tra = flags & BRAID_TRANSPOSE_A, trb = flags & BRAID_TRANSPOSE_B;
    int64_t m = a->dims[a->rank - (tra ? 1 : 2)];
    int64_t ka = a->dims[a->rank - (tra ? 2 : 1)];
    int64_t kb = b->dims[b->rank - (trb ? 1 : 2)];
    int64_t nn = b->dims[b->rank - (trb ? 2 : 1)];
    if (ka != kb)
        return bg_fail(c->g, BRAID_ERR_SHAPE,
                       "matmul: operands %s and %s%s%s: inner dims %lld and "
                       "%lld differ",
                       bg_in_str(c, 0, ta), bg_in_str(c, 1, tb),
                       tra ? " (transpose_a)" : "", trb ? " (transpose_b)" : "",
                       (long long)ka, (long long)kb);
    bg_node *n = c->out;
    int r;
    if (!bg_broadcast_shapes(a->rank - 2, a->dims, b->rank - 2, b->dims, &r,
                             n->dims))
        return bg_fail(c->g, BRAID_ERR_SHAPE,
                       "matmul: batch dims of %s and "
                       "%s do not broadcast",
                       bg_in_str(c, 0, ta), bg_in_str(c, 1, tb));
    n->dims[r] = m;
    n->dims[r + 1] = nn;
    n->rank = (uint8_t)(r + 2);
    n->dtype = a->dtype;
    n->attr.flags = flags;
    return BRAID_OK;
}

/* ---- row ops (softmax, layer_norm)
 * -------------------------------------------------------------------- */

/* layer_norm's gamma (input 1) and beta (input 2): rank 1, x's row length
 * and dtype; eps (attr.value[0]) finite and >= 0. */
static braid_status bg_infer_layer_norm(bg_ctx *c, const bg_node *x) {
    char t[BG_TYPE_BUF], tx[BG_TYPE_BUF];
    for (uint32_t i = 1; i < 3; i++) {
        const bg_node *p = bg_in(c, i);
        if (p->rank != 1 || p->dims[0] != x->dims[x->rank - 1] ||
            p->dtype != x->dtype)
            return bg_fail(
                c->g, p->dtype != x->dtype ? BRAID_ERR_DTYPE : BRAID_ERR_SHAPE,
                "%s: %s %s; expected %s[%lld] for operand %s", c->opname,
                i == 1 ? "gamma" : "beta", bg_in_str(c, i, t),
                braid_dtype_name(x->dtype), (long long)x->dims[x->rank - 1],
                bg_in_str(c, 0, tx));
    }
    double eps = c->a->value[0];
    if (!isfinite(eps) || eps < 0)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: eps %g; expected a finite eps >= 0", c->opname,
                       eps);
    c->out->attr.value[0] = eps;
    return BRAID_OK;
}

/* A float operand x of rank >= 1; the output has its shape and dtype. */
static braid_status bg_infer_row(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    char t[BG_TYPE_BUF];
    if (!braid_dtype_is_float(x->dtype) || x->rank == 0)
        return bg_fail(c->g, BRAID_ERR_DTYPE,
                       "%s: operand %s; expected a float dtype and rank >= 1",
                       c->opname, bg_in_str(c, 0, t));
    if (c->op == BRAID_OP_LAYER_NORM) {
        braid_status s = bg_infer_layer_norm(c, x);
        if (s != BRAID_OK) return s;
    }
    bg_node *n = c->out;
    n->rank = x->rank;
    memcpy(n->dims, x->dims, sizeof n->dims);
    n->dtype = x->dtype;
    return BRAID_OK;
}

/* ---- reductions
 * -------------------------------------------------------------------- */

static braid_status bg_infer_reduce(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    const bg_attrs *a = c->a;
    char t[BG_TYPE_BUF];
    if (a->flags & ~BG_KEEPDIMS)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: unknown flags 0x%x; expected keepdims only",
                       c->opname, (unsigned)a->flags);
    if (x->rank < 8 && (a->axes >> x->rank) != 0)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: axes mask 0x%x names axes beyond operand %s",
                       c->opname, (unsigned)a->axes, bg_in_str(c, 0, t));
    if (!bg_op_accepts(c->op, x->dtype))
        return bg_fail(c->g, BRAID_ERR_DTYPE, "%s: operand %s; expected %s",
                       c->opname, bg_in_str(c, 0, t), bg_op_dtypes_text(c->op));
    bg_node *n = c->out;
    bool keep = a->flags & BG_KEEPDIMS;
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!(a->axes & (1u << i)))
            n->dims[r++] = x->dims[i];
        else if (keep)
            n->dims[r++] = 1;
    }
    n->rank = (uint8_t)r;
    n->dtype = x->dtype;
    n->attr.axes = a->axes;
    n->attr.flags = a->flags;
    return BRAID_OK;
}

/* ---- shape ops
 * ------------------------------------------------------------------------ */

/* The product of dims, or -1 when it would exceed BG_MAX_BYTES. */
static int64_t bg_capped_product(int rank, const int64_t *dims) {
    int64_t p = 1;
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0) return 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] > BG_MAX_BYTES / p) return -1;
        p *= dims[i];
    }
    return p;
}

static braid_status bg_infer_reshape(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    braid_status s = bg_check_dims(c, c->rank, c->dims, true);
    if (s != BRAID_OK) return s;
    int64_t d[BRAID_MAX_RANK], known[BRAID_MAX_RANK];
    int infer = -1, nk = 0;
    for (int i = 0; i < c->rank; i++) {
        d[i] = c->dims[i];
        if (d[i] == -1)
            infer = i;
        else
            known[nk++] = d[i];
    }
    int64_t have = bg_numel(x), prod = bg_capped_product(nk, known);
    char t[BG_TYPE_BUF], ts[BG_TYPE_BUF];
    if (infer >= 0) {
        if (prod <= 0 || have % prod != 0)
            return bg_fail(c->g, BRAID_ERR_SHAPE,
                           "reshape: cannot infer the -1 in %s from %s",
                           bg_shape_str(c->rank, c->dims, ts, sizeof ts),
                           bg_in_str(c, 0, t));
        d[infer] = have / prod;
    } else if (prod != have) {
        return bg_fail(c->g, BRAID_ERR_SHAPE,
                       "reshape: %s has %lld elements, target %s has a "
                       "different count",
                       bg_in_str(c, 0, t), (long long)have,
                       bg_shape_str(c->rank, c->dims, ts, sizeof ts));
    }
    bg_set_shape(c->out, c->rank, d);
    c->out->dtype = x->dtype;
    return BRAID_OK;
}

static braid_status bg_infer_permute(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    bg_node *n = c->out;
    unsigned seen = 0;
    for (int i = 0; i < x->rank; i++) {
        unsigned p = c->a->perm[i];
        if (p >= x->rank || (seen & (1u << p))) {
            char t[BG_TYPE_BUF];
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "permute: perm[%d] = %u for operand %s; expected a "
                           "permutation of 0..%d",
                           i, p, bg_in_str(c, 0, t), x->rank - 1);
        }
        seen |= 1u << p;
        n->attr.perm[i] = (uint8_t)p;
        n->dims[i] = x->dims[p];
    }
    n->rank = x->rank;
    n->dtype = x->dtype;
    return BRAID_OK;
}

/* dims holds the element count per axis; attr start/step the selection. */
static braid_status bg_infer_slice(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    bg_node *n = c->out;
    char t[BG_TYPE_BUF];
    braid_status s = bg_check_dims(c, c->rank, c->dims, false);
    if (s != BRAID_OK) return s;
    if (c->rank != x->rank)
        return bg_fail(c->g, BRAID_ERR_SHAPE,
                       "slice: %d counts for operand "
                       "%s; expected one per axis",
                       c->rank, bg_in_str(c, 0, t));
    for (int i = 0; i < x->rank; i++) {
        int64_t dim = x->dims[i], st = c->a->start[i], step = c->a->step[i];
        int64_t count = c->dims[i];
        if (!bg_slice_fits(dim, st, step, count))
            return bg_fail(
                c->g, BRAID_ERR_INVALID_ARGUMENT,
                "slice: axis %d of %s: start %lld, step %lld, "
                "count %lld; expected a nonzero step and the elements "
                "within the axis",
                i, bg_in_str(c, 0, t), (long long)st, (long long)step,
                (long long)count);
        n->attr.start[i] = st;
        n->attr.step[i] = step;
        n->dims[i] = count;
    }
    n->rank = x->rank;
    n->dtype = x->dtype;
    return BRAID_OK;
}

static braid_status bg_infer_concat(bg_ctx *c) {
    const bg_node *x0 = bg_in(c, 0);
    int axis = c->a->axis;
    char t0[BG_TYPE_BUF], ti[BG_TYPE_BUF];
    if (axis < 0 || axis >= x0->rank)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "concat: axis %d out of range for %s", axis,
                       bg_in_str(c, 0, t0));
    int64_t total = 0;
    for (uint32_t i = 0; i < c->nin; i++) {
        const bg_node *x = bg_in(c, i);
        bool same = x->rank == x0->rank;
        for (int d = 0; same && d < x0->rank; d++)
            same = d == axis || x->dims[d] == x0->dims[d];
        if (!same || x->dtype != x0->dtype)
            return bg_fail(c->g, same ? BRAID_ERR_DTYPE : BRAID_ERR_SHAPE,
                           "concat: operand %u %s does not match operand 0 "
                           "%s; expected equal dtypes and dims except axis "
                           "%d",
                           (unsigned)i, bg_in_str(c, i, ti),
                           bg_in_str(c, 0, t0), axis);
        total += x->dims[axis]; /* each ≤ 2^50: checked before overflow */
        if (total > BG_MAX_BYTES)
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "concat: axis %d grows beyond 2^50", axis);
    }
    bg_copy_shape(c->out, x0);
    c->out->dims[axis] = total;
    c->out->dtype = x0->dtype;
    c->out->attr.axis = axis;
    return BRAID_OK;
}

static braid_status bg_infer_broadcast_to(bg_ctx *c) {
    const bg_node *x = bg_in(c, 0);
    braid_status s = bg_check_dims(c, c->rank, c->dims, false);
    if (s != BRAID_OK) return s;
    bool ok = c->rank >= x->rank;
    for (int i = 0; ok && i < x->rank; i++) {
        int64_t d = x->dims[i], to = c->dims[c->rank - x->rank + i];
        ok = d == to || d == 1;
    }
    if (!ok) {
        char t[BG_TYPE_BUF], ts[BG_TYPE_BUF];
        return bg_fail(
            c->g, BRAID_ERR_SHAPE, "broadcast_to: %s does not broadcast to %s",
            bg_in_str(c, 0, t), bg_shape_str(c->rank, c->dims, ts, sizeof ts));
    }
    bg_set_shape(c->out, c->rank, c->dims);
    c->out->dtype = x->dtype;
    return BRAID_OK;
}

static braid_status bg_infer_shape_op(bg_ctx *c) {
    switch (c->op) {
    case BRAID_OP_RESHAPE:
        return bg_infer_reshape(c);
    case BRAID_OP_PERMUTE:
        return bg_infer_permute(c);
    case BRAID_OP_SLICE:
        return bg_infer_slice(c);
    default:
        return bg_infer_concat(c);
    }
}

/* ---- append
 * ------------------------------------------------------------------------------
 */

static bool bg_resize_nodes(braid_graph *g, uint32_t cap) {
    bg_node *nodes = bg_realloc(g, g->nodes, (size_t)g->cap * sizeof *nodes,
                                (size_t)cap * sizeof *nodes);
    if (nodes == NULL) return false;
    g->nodes = nodes;
    g->cap = cap;
    return true;
}

static bool bg_grow_nodes(braid_graph *g) {
    if (g->nnodes < g->cap) return true;
    if (g->nnodes >= BG_NONE - 1) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT, "graph has too many nodes");
        return false;
    }
    return bg_resize_nodes(
        g,
        g->cap ? (g->cap > UINT32_MAX / 2 ? UINT32_MAX - 1 : 2 * g->cap) : 16);
}

bool bg_reserve_nodes(braid_graph *g, uint32_t nnodes) {
    if (nnodes <= g->cap) return true;
    if (nnodes >= BG_NONE - 1) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT, "graph has too many nodes");
        return false;
    }
    return bg_resize_nodes(g, nnodes);
}

/* Copies what the node owns (inputs, constant data, input name) through
 * the allocator and appends it; on failure nothing is left allocated. */
static uint32_t bg_append(bg_ctx *c) {
    braid_graph *g = c->g;
    bg_node *n = c->out;
    if (!bg_grow_nodes(g)) return BG_NONE;
    bool ok = true;
    size_t in_bytes = (size_t)c->nin * sizeof *n->inputs;
    if (in_bytes && (ok = (n->inputs = bg_alloc(g, in_bytes)) != NULL))
        memcpy(n->inputs, c->in, in_bytes);
    n->ninputs = n->inputs ? c->nin : 0;
    size_t nbytes = bg_nbytes(n);
    bool owns_data = n->op == BRAID_OP_CONSTANT ||
                     (n->op == BRAID_OP_VARIABLE &&
                      n->attr.init == BRAID_OP_CONSTANT);
    bool borrow = owns_data && nbytes && c->shared;
    if (borrow)
        n->attr.data = (void *)c->a->data; /* shared: never written */
    else if (ok && owns_data && nbytes &&
             (ok = (n->attr.data = bg_alloc(g, nbytes)) != NULL))
        memcpy(n->attr.data, c->a->data, nbytes);
    if (ok && (n->op == BRAID_OP_INPUT || n->op == BRAID_OP_VARIABLE))
        ok = (n->name = bg_strdup(g, c->name)) != NULL;
    if (!ok) {
        bg_free(g, n->inputs, (size_t)n->ninputs * sizeof *n->inputs);
        if (!borrow) bg_free(g, n->attr.data, n->attr.data ? nbytes : 0);
        return BG_NONE;
    }
    if (borrow) {
        n->shared = c->shared;
        bg_shared_ref(c->shared);
    }
    g->nodes[g->nnodes] = *n;
    uint32_t id = g->nnodes++;
    if (n->op == BRAID_OP_INPUT) bg_names_added_input(g, id);
    return id;
}

/* ---- entry
 * ----------------------------------------------------------------------------------
 */

/* Op-independent checks: the op itself, the arity, the input ids. Returns
 * false with the error recorded. */
static bool bg_check_call(bg_ctx *c, const bg_op_info *info) {
    braid_graph *g = c->g;
    if (info == NULL) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT, "bg_build: unknown op %d",
                (int)c->op);
        return false;
    }
    if (info->kind == BRAID_KIND_COPY || info->kind == BRAID_KIND_FUSED) {
        bg_fail(g, BRAID_ERR_UNSUPPORTED,
                "%s: op '%s' is created by the compiler", info->name,
                info->name);
        return false;
    }
    bool arity_ok =
        info->arity >= 0 ? c->nin == (uint32_t)info->arity : c->nin >= 1;
    if (!arity_ok || (c->nin > 0 && c->in == NULL)) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "%s: got %u inputs%s; expected %s%d", info->name,
                (unsigned)c->nin, c->in || !c->nin ? "" : " (NULL array)",
                info->arity >= 0 ? "" : "at least ",
                info->arity >= 0 ? info->arity : 1);
        return false;
    }
    for (uint32_t i = 0; i < c->nin; i++) {
        if (c->in[i] < g->nnodes && g->nodes[c->in[i]].op == BRAID_OP_ASSIGN) {
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: input %u is an assign, which has no value to read",
                    info->name, (unsigned)i);
            return false;
        }
        if (c->in[i] < g->nnodes) continue;
        /* An invalid tensor on a graph that has no error did not come from
         * this graph's builders: report it rather than fail silently. */
        if (c->in[i] == BG_NONE)
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: input %u is an invalid tensor (BRAID_NONE)",
                    info->name, (unsigned)i);
        else
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: input %u has id %u; the graph has %u nodes",
                    info->name, (unsigned)i, (unsigned)c->in[i],
                    (unsigned)g->nnodes);
        return false;
    }
    return true;
}

static braid_status bg_infer(bg_ctx *c, braid_op_kind kind) {
    switch (kind) {
    case BRAID_KIND_SOURCE:
        return bg_infer_source(c);
    case BRAID_KIND_ELEMENTWISE:
        return bg_infer_elementwise(c);
    case BRAID_KIND_BROADCAST:
        return bg_infer_broadcast_to(c);
    case BRAID_KIND_REDUCE:
        return bg_infer_reduce(c);
    case BRAID_KIND_ROW:
        return bg_infer_row(c);
    case BRAID_KIND_MATMUL:
        return bg_infer_matmul(c);
    case BRAID_KIND_SHAPE:
        return bg_infer_shape_op(c);
    case BRAID_KIND_COLLECTIVE:
        return bg_infer_collective(c->g, c->op, c->in, c->nin, c->a, c->out);
    case BRAID_KIND_STATE:
        return bg_check_assign(c->g, c->in, c->nin, c->out);
    case BRAID_KIND_INDEX: /* gather, scatter */
        return bg_infer_index(c->g, c->op, c->in, c->nin, c->a, c->out);
    case BRAID_KIND_CONV: /* conv ops */
        return bg_conv_infer(c->g, c->op, c->in, c->nin, c->a, c->out);
    case BRAID_KIND_WINDOW:
        return bg_infer_window(c->g, c->op, bg_in(c, 0), c->a, c->rank,
                               c->dims, c->out);
    case BRAID_KIND_AXIS: /* argmax, argmin, topk_*, cumsum */
        return bg_infer_axis(c->g, c->op, bg_in(c, 0), c->a, c->out);
    case BRAID_KIND_ATTENTION:
        return bg_infer_attention(c->g, c->in, c->nin, c->a, c->out);
    default:
        return BRAID_ERR_INTERNAL;
    }
}

uint32_t bg_build(braid_graph *g, braid_op op, const uint32_t *inputs,
                  uint32_t ninputs, braid_dtype dtype, int rank,
                  const int64_t *dims, const bg_attrs *attr, const char *name) {
    return bg_build_shared(g, op, inputs, ninputs, dtype, rank, dims, attr,
                           name, NULL);
}

uint32_t bg_build_shared(braid_graph *g, braid_op op, const uint32_t *inputs,
                         uint32_t ninputs, braid_dtype dtype, int rank,
                         const int64_t *dims, const bg_attrs *attr,
                         const char *name, bg_shared *shared) {
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                          "bg_build: graph is NULL");
        return BG_NONE;
    }
    if (g->status != BRAID_OK) return BG_NONE;
    static const bg_attrs zero_attrs;
    bg_node node;
    memset(&node, 0, sizeof node);
    node.op = op;
    bg_ctx c = {g,      op,      "?",
                inputs, ninputs, dtype,
                rank,   dims,    attr ? attr : &zero_attrs,
                name,   &node,   shared};
    const bg_op_info *info = bg_op(op);
    if (!bg_check_call(&c, info)) return BG_NONE;
    c.opname = info->name;
    if (bg_infer(&c, info->kind) != BRAID_OK || bg_check_size(&c) != BRAID_OK)
        return BG_NONE;
    return bg_append(&c);
}
