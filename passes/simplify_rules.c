/* passes/simplify_rules.c — what simplify knows of constant values, and the
 * algebraic identities (rule 2 of passes/simplify.c).
 *
 * Every identity here is exact: the replacement holds the same bits as the
 * node it replaces for every input value, on every executor (x*1 is x even
 * for NaN and -0.0; x+0.0 is not x when x is -0.0, hence the -0.0 facts). */
#include "passes/simplify.h"

#include <math.h>
#include <string.h>

static const bg_node *node(const bp_simp *s, uint32_t id) {
    return &s->plan->res.graph->nodes[id];
}

bool bp_simp_is_value_source(braid_op op) {
    return op == BRAID_OP_CONSTANT || op == BRAID_OP_FILL ||
           op == BRAID_OP_IOTA || op == BRAID_OP_RANDOM_UNIFORM ||
           op == BRAID_OP_RANDOM_NORMAL;
}

/* The value of element `elem` (one element of dtype t) as a double, when
 * storing that double gives back the same bits (false for a bool byte
 * other than 0/1, or a NaN whose payload a store would change). */
static bool element_value(braid_dtype t, const void *elem, double *v) {
    union {
        double d;
        unsigned char b[8];
    } slot;
    slot.d = 0.0;
    *v = bg_load(t, elem, 0);
    bg_store(t, slot.b, 0, *v);
    return memcmp(slot.b, elem, braid_dtype_size(t)) == 0;
}

static bool is_negzero(double v) {
    return v == 0.0 && signbit(v);
}

/* A constant: splat when its elements are all the bits of the first;
 * -0.0-free when no element is -0.0. One pass over the bytes. */
static void constant_facts(const bg_node *n, bool *splat, double *v,
                           bool *negzero_free) {
    size_t es = braid_dtype_size(n->dtype);
    int64_t numel = bg_numel(n);
    const unsigned char *d = n->attr.data;
    bool same = numel > 0 && element_value(n->dtype, d, v);
    bool fl = braid_dtype_is_float(n->dtype);
    *negzero_free = true;
    for (int64_t i = 0; i < numel; i++) {
        const unsigned char *e = d + (size_t)i * es;
        if (same && i > 0) same = memcmp(e, d, es) == 0;
        if (fl && *negzero_free)
            *negzero_free = !is_negzero(bg_load(n->dtype, e, 0));
        if (!same && !*negzero_free) break;
    }
    *splat = same;
}

/* Computes the splat and -0.0 facts of a canonical node once. */
static void compute_facts(bp_simp *s, uint32_t id) {
    if (s->facts[id] & BP_SIMP_SPLAT_KNOWN) return;
    const bg_node *n = node(s, id);
    bool splat = false, nnz = !braid_dtype_is_float(n->dtype);
    double v = 0.0;
    switch (n->op) {
    case BRAID_OP_FILL: {
        union {
            double d;
            unsigned char b[8];
        } slot;
        slot.d = 0.0;
        bg_store(n->dtype, slot.b, 0, n->attr.value[0]);
        splat = element_value(n->dtype, slot.b, &v);
        nnz = nnz || !is_negzero(bg_load(n->dtype, slot.b, 0));
        break;
    }
    case BRAID_OP_CONSTANT: {
        bool free0;
        constant_facts(n, &splat, &v, &free0);
        nnz = nnz || free0;
        break;
    }
    case BRAID_OP_IOTA: /* whole numbers counted from +0 */
        splat = n->dims[n->attr.axis] == 1;
        nnz = true;
        break;
    case BRAID_OP_ABS:
    case BRAID_OP_SQUARE:
    case BRAID_OP_EXP: /* |x|, x·x and e^x are never -0.0 */
        nnz = true;
        break;
    case BRAID_OP_CAST: /* i32/bool → float gives +0.0 for zero */
        nnz = nnz || !braid_dtype_is_float(node(s, n->inputs[0])->dtype);
        break;
    default:
        break;
    }
    s->facts[id] |= BP_SIMP_SPLAT_KNOWN | (splat ? BP_SIMP_SPLAT : 0) |
                    (nnz ? BP_SIMP_NO_NEGZERO : 0);
    s->splat[id] = v;
}

bool bp_simp_splat(bp_simp *s, uint32_t id, double *v) {
    compute_facts(s, id);
    *v = s->splat[id];
    return (s->facts[id] & BP_SIMP_SPLAT) != 0;
}

bool bp_simp_no_negzero(bp_simp *s, uint32_t id) {
    compute_facts(s, id);
    return (s->facts[id] & BP_SIMP_NO_NEGZERO) != 0;
}

/* ---- identities ---------------------------------------------------------- */

static bool shape_is(const bg_node *a, int rank, const int64_t *dims) {
    return a->rank == rank && memcmp(a->dims, dims, rank * sizeof *dims) == 0;
}

static bool is_one(bp_simp *s, uint32_t id) {
    double v;
    return bp_simp_splat(s, id, &v) && v == 1.0;
}

/* z is a zero that x + z leaves x: -0.0 always, +0.0 when x holds no -0.0
 * (-0.0 + +0.0 is +0.0), any zero for i32. */
static bool is_add_zero(bp_simp *s, uint32_t z, uint32_t x) {
    double v;
    return bp_simp_splat(s, z, &v) && v == 0.0 &&
           (signbit(v) || bp_simp_no_negzero(s, x));
}

/* z is a zero that x - z leaves x: +0.0 always, -0.0 when x holds no -0.0
 * (x - -0.0 is x + +0.0), any zero for i32. */
static bool is_sub_zero(bp_simp *s, uint32_t z, uint32_t x) {
    double v;
    return bp_simp_splat(s, z, &v) && v == 0.0 &&
           (!signbit(v) || bp_simp_no_negzero(s, x));
}

/* x op c → x for a binary node n = op(a, b); BG_NONE when no rule holds.
 * x must already have the result's shape: broadcasting against c is not
 * the identity. */
static uint32_t binary_identity(bp_simp *s, const bg_node *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1];
    bool a_ok = bg_same_shape(node(s, a), n),
         b_ok = bg_same_shape(node(s, b), n);
    switch (n->op) {
    case BRAID_OP_MUL:
        if (a_ok && is_one(s, b)) return a;
        if (b_ok && is_one(s, a)) return b;
        break;
    case BRAID_OP_DIV:
        if (a_ok && is_one(s, b)) return a;
        break;
    case BRAID_OP_ADD:
        if (a_ok && is_add_zero(s, b, a)) return a;
        if (b_ok && is_add_zero(s, a, b)) return b;
        break;
    case BRAID_OP_SUB:
        if (a_ok && is_sub_zero(s, b, a)) return a;
        break;
    default:
        break;
    }
    return BG_NONE;
}

/* where(c, x, x) → x; where(true, x, y) → x; where(false, y, x) → x. */
static uint32_t where_identity(bp_simp *s, const bg_node *n) {
    uint32_t c = n->inputs[0], a = n->inputs[1], b = n->inputs[2];
    double v;
    if (a == b && bg_same_shape(node(s, a), n)) return a;
    if (!bp_simp_splat(s, c, &v)) return BG_NONE;
    uint32_t pick = v != 0.0 ? a : b;
    return bg_same_shape(node(s, pick), n) ? pick : BG_NONE;
}

static bool perm_is_identity(const uint8_t *perm, int rank) {
    for (int i = 0; i < rank; i++)
        if (perm[i] != i) return false;
    return true;
}

/* A slice that takes every element in order. Along an axis of at most one
 * element the step does not matter. */
static bool slice_is_full(const bg_node *n, const bg_node *x) {
    for (int i = 0; i < n->rank; i++)
        if (n->attr.start[i] != 0 || n->dims[i] != x->dims[i] ||
            (n->attr.step[i] != 1 && x->dims[i] > 1))
            return false;
    return true;
}

/* permute(permute(x, p), q) = permute(x, p∘q): out axis i is axis q[i] of
 * the middle, which is axis p[q[i]] of x. */
static uint32_t compose_permutes(bp_simp *s, uint32_t id) {
    const bg_node *n = node(s, id), *mid = node(s, n->inputs[0]);
    uint32_t x = mid->inputs[0];
    bg_attrs a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < n->rank; i++)
        a.perm[i] = mid->attr.perm[n->attr.perm[i]];
    if (perm_is_identity(a.perm, n->rank)) return x;
    int64_t dims[BRAID_MAX_RANK];
    memcpy(dims, n->dims, sizeof dims);
    return bp_simp_emit(s, id, BRAID_OP_PERMUTE, &x, 1, n->dtype, n->rank, dims,
                        &a, NULL);
}

/* op(op(x)) for reshape and broadcast_to: the outer shape, from x. */
static uint32_t collapse_shape_op(bp_simp *s, uint32_t id) {
    const bg_node *n = node(s, id);
    uint32_t x = node(s, n->inputs[0])->inputs[0];
    if (shape_is(node(s, x), n->rank, n->dims)) return x;
    int64_t dims[BRAID_MAX_RANK];
    memcpy(dims, n->dims, sizeof dims);
    return bp_simp_emit(s, id, n->op, &x, 1, n->dtype, n->rank, dims, NULL,
                        NULL);
}

/* A bool→bool cast turns stray nonzero bytes (a caller's input, a constant
 * written in base64, a view of those) into 1; it is dropped only after ops
 * that store 0/1 themselves. */
static bool makes_clean_bools(const bg_node *in) {
    return bg_op_is_compare(in->op) || in->op == BRAID_OP_CAST ||
           in->op == BRAID_OP_FILL;
}

/* Unary and shape-op rules; BG_NONE when none holds (the caller tells
 * emit failures apart by s->status). */
static uint32_t unary_identity(bp_simp *s, uint32_t id) {
    const bg_node *n = node(s, id);
    uint32_t x = n->inputs[0];
    const bg_node *in = node(s, x);
    switch (n->op) {
    case BRAID_OP_NEG:
        return in->op == BRAID_OP_NEG ? in->inputs[0] : BG_NONE;
    case BRAID_OP_CAST:
        if (in->dtype != n->dtype) return BG_NONE;
        return n->dtype != BRAID_BOOL || makes_clean_bools(in) ? x : BG_NONE;
    case BRAID_OP_RESHAPE:
    case BRAID_OP_BROADCAST_TO:
        if (bg_same_shape(in, n)) return x;
        return in->op == n->op ? collapse_shape_op(s, id) : BG_NONE;
    case BRAID_OP_PERMUTE:
        if (perm_is_identity(n->attr.perm, n->rank)) return x;
        return in->op == BRAID_OP_PERMUTE ? compose_permutes(s, id) : BG_NONE;
    case BRAID_OP_SLICE:
        return slice_is_full(n, in) ? x : BG_NONE;
    case BRAID_OP_CONCAT:
        return n->ninputs == 1 ? x : BG_NONE;
    default:
        return BG_NONE;
    }
}

uint32_t bp_simp_identity(bp_simp *s, uint32_t id) {
    const bg_node *n = node(s, id);
    uint32_t r = BG_NONE;
    if (n->op == BRAID_OP_WHERE)
        r = where_identity(s, n);
    else if (bg_op(n->op)->kind == BRAID_KIND_ELEMENTWISE && n->ninputs == 2)
        r = binary_identity(s, n);
    else if (n->ninputs >= 1 && bg_op(n->op)->kind != BRAID_KIND_COPY &&
             bg_op(n->op)->kind != BRAID_KIND_FUSED)
        r = unary_identity(s, id);
    if (r == BG_NONE) return s->status == BRAID_OK ? id : BG_NONE;
    return r;
}
