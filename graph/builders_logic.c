/* graph/builders_logic.c — composites for ONNX's predicates and logical ops
 * (elemwise helper): isnan, isinf, logical and/or/xor/not. Each is a few
 * exact nodes (comparisons, where, a scalar fill) that fuse and run on every
 * backend, so none needs an op of its own (docs/ops.md, "More elementwise
 * ops"). Operand dtypes are checked here, naming the composite. */
#include "graph/internal.h"

#include <math.h>

/* x's node when its dtype is a float (float_only) or bool (otherwise); else
 * NULL after recording the error. */
static const bg_node *need(braid_graph *g, braid_tensor x, const char *op,
                           bool float_only) {
    const bg_node *n = bb_peek(g, x, op);
    if (n == NULL) return NULL;
    bool ok = float_only ? braid_dtype_is_float(n->dtype)
                         : n->dtype == BRAID_BOOL;
    if (ok) return n;
    char t[BG_ERROR_MAX / 2];
    bg_fail(g, BRAID_ERR_DTYPE, "%s: operand %s; expected %s", op,
            bg_type_str(n, t, sizeof t), float_only ? "a float dtype" : "bool");
    return NULL;
}

braid_tensor braid_isnan(braid_graph *g, braid_tensor x) {
    if (!need(g, x, "isnan", true)) return BRAID_NONE;
    return braid_ne(g, x, x); /* only NaN differs from itself */
}

braid_tensor braid_isinf(braid_graph *g, braid_tensor x, bool detect_positive,
                         bool detect_negative) {
    const bg_node *n = need(g, x, "isinf", true);
    if (!n) return BRAID_NONE;
    if (!detect_positive && !detect_negative) { /* false, x's shape */
        braid_tensor f = braid_fill(g, BRAID_BOOL, 0, NULL, 0.0);
        return braid_logical_and(g, braid_eq(g, x, x), f);
    }
    braid_dtype dt = n->dtype;
    double inf = detect_positive ? INFINITY : -INFINITY;
    braid_tensor v = detect_positive && detect_negative ? braid_abs(g, x) : x;
    return braid_eq(g, v, braid_fill(g, dt, 0, NULL, inf));
}

braid_tensor braid_logical_and(braid_graph *g, braid_tensor a, braid_tensor b) {
    if (!need(g, a, "logical_and", false) || !need(g, b, "logical_and", false))
        return BRAID_NONE;
    return braid_where(g, a, b, a);
}

braid_tensor braid_logical_or(braid_graph *g, braid_tensor a, braid_tensor b) {
    if (!need(g, a, "logical_or", false) || !need(g, b, "logical_or", false))
        return BRAID_NONE;
    return braid_where(g, a, a, b);
}

braid_tensor braid_logical_xor(braid_graph *g, braid_tensor a, braid_tensor b) {
    if (!need(g, a, "logical_xor", false) || !need(g, b, "logical_xor", false))
        return BRAID_NONE;
    return braid_ne(g, a, b); /* bools compare as 0/1 */
}

braid_tensor braid_logical_not(braid_graph *g, braid_tensor x) {
    if (!need(g, x, "logical_not", false)) return BRAID_NONE;
    return braid_eq(g, x, braid_fill(g, BRAID_BOOL, 0, NULL, 0.0));
}
