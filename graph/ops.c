/* graph/ops.c — the op table, dtype table and status names.
 *
 * Everything here is generated from the lists in braid/ops.h and braid.h so
 * that adding an op or a dtype is a one-line change there. */
#include "graph/graph.h"

#include <string.h>

typedef struct bg_dtype_info bg_dtype_info;
static const bg_dtype_info *bg_dtype(braid_dtype t);

static const bg_op_info bg_op_table[] = {
#define BG_OP_ROW_(id, name, arity, kind, dtypes, flags, flops)                \
    {name, arity, BRAID_KIND_##kind, BRAID_DTYPES_##dtypes, flags, flops},
    BRAID_OP_LIST(BG_OP_ROW_)
#undef BG_OP_ROW_
};

_Static_assert(sizeof bg_op_table / sizeof bg_op_table[0] == BRAID_OP_COUNT_,
               "op table and braid_op enum disagree");

/* Returns NULL for an op outside the table, so callers that take an op from
 * user input can check it with one call. */
const bg_op_info *bg_op(braid_op op) {
    if ((unsigned)op >= (unsigned)BRAID_OP_COUNT_) return NULL;
    return &bg_op_table[op];
}

bool bg_op_has(braid_op op, unsigned flag) {
    const bg_op_info *i = bg_op(op);
    return i != NULL && (i->flags & flag) != 0;
}

bool bg_node_run_check(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    if (!bg_op_has(n->op, BRAID_OPF_RUN_CHECK)) return false;
    if (n->op != BRAID_OP_CAST) return true;
    return n->ninputs == 1 &&
           bg_cast_checked(bg_node_at(g, n->inputs[0])->dtype, n->dtype);
}

bool bg_op_accepts(braid_op op, braid_dtype t) {
    const bg_op_info *i = bg_op(op);
    if (i == NULL || !bg_dtype(t)) return false;
    switch (i->dtypes) {
    case BRAID_DTYPES_FLOAT:
        return braid_dtype_is_float(t);
    case BRAID_DTYPES_NUMBER:
        return braid_dtype_is_float(t) || t == BRAID_I32;
    case BRAID_DTYPES_INT:
        return t == BRAID_I32;
    default:
        return true;
    }
}

const char *bg_op_dtypes_text(braid_op op) {
    const bg_op_info *i = bg_op(op);
    if (i == NULL) return "?";
    return i->dtypes == BRAID_DTYPES_FLOAT    ? "a float dtype"
           : i->dtypes == BRAID_DTYPES_NUMBER ? "a float dtype or i32"
           : i->dtypes == BRAID_DTYPES_INT    ? "an integer dtype (i32)"
                                              : "any dtype";
}

/* The lookup is linear: the table is small and the text parser calls this
 * once per line, far below the cost of reading the line. */
braid_op bg_op_lookup(const char *name, size_t len) {
    if (name == NULL) return BRAID_OP_COUNT_;
    for (int i = 0; i < BRAID_OP_COUNT_; i++) {
        const char *n = bg_op_table[i].name;
        if (len > 0 && n[0] != name[0]) continue; /* most names, cheaply */
        if (strlen(n) == len && memcmp(n, name, len) == 0) return (braid_op)i;
    }
    return BRAID_OP_COUNT_;
}

struct bg_dtype_info {
    const char *name; /* text-format name */
    size_t size;      /* bytes per element */
    bool is_float;    /* f32, f16, bf16, f64 */
    bool is_int;      /* i32, i64 (elemwise helper) */
    bool f64_exact;   /* every value is exactly a double (not i64) */
};

static const bg_dtype_info bg_dtype_table[] = {
    [BRAID_F32] = {"f32", 4, true, false, true},
    [BRAID_F16] = {"f16", 2, true, false, true},
    [BRAID_BF16] = {"bf16", 2, true, false, true},
    [BRAID_F64] = {"f64", 8, true, false, true},
    [BRAID_I32] = {"i32", 4, false, true, true},
    [BRAID_BOOL] = {"bool", 1, false, false, true},
    /* integer storage dtypes (elemwise helper) */
    [BRAID_I64] = {"i64", 8, false, true, false},
};

_Static_assert(sizeof bg_dtype_table / sizeof bg_dtype_table[0] ==
                   BRAID_DTYPE_COUNT_,
               "dtype table and braid_dtype enum disagree");

static const bg_dtype_info *bg_dtype(braid_dtype t) {
    if ((unsigned)t >= (unsigned)BRAID_DTYPE_COUNT_) return NULL;
    return &bg_dtype_table[t];
}

braid_dtype bg_dtype_lookup(const char *name, size_t len) {
    if (name == NULL) return BRAID_DTYPE_COUNT_;
    for (int i = 0; i < BRAID_DTYPE_COUNT_; i++) {
        const char *n = bg_dtype_table[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return (braid_dtype)i;
    }
    return BRAID_DTYPE_COUNT_;
}

size_t braid_dtype_size(braid_dtype t) {
    const bg_dtype_info *d = bg_dtype(t);
    return d ? d->size : 0;
}

const char *braid_dtype_name(braid_dtype t) {
    const bg_dtype_info *d = bg_dtype(t);
    return d ? d->name : "?";
}

bool braid_dtype_is_float(braid_dtype t) {
    const bg_dtype_info *d = bg_dtype(t);
    return d ? d->is_float : false;
}

bool bg_dtype_is_int(braid_dtype t) {
    const bg_dtype_info *d = bg_dtype(t);
    return d ? d->is_int : false;
}

bool bg_dtype_f64_exact(braid_dtype t) {
    const bg_dtype_info *d = bg_dtype(t);
    return d ? d->f64_exact : false;
}

const char *braid_status_name(braid_status s) {
    switch (s) {
    case BRAID_OK:
        return "ok";
    case BRAID_ERR_INVALID_ARGUMENT:
        return "invalid argument";
    case BRAID_ERR_SHAPE:
        return "shape error";
    case BRAID_ERR_DTYPE:
        return "dtype error";
    case BRAID_ERR_OUT_OF_MEMORY:
        return "out of memory";
    case BRAID_ERR_PARSE:
        return "parse error";
    case BRAID_ERR_IO:
        return "i/o error";
    case BRAID_ERR_NOT_FOUND:
        return "not found";
    case BRAID_ERR_UNSUPPORTED:
        return "unsupported";
    case BRAID_ERR_DEVICE:
        return "device error";
    case BRAID_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}
