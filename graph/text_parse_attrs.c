/* graph/text_parse_attrs.c — attributes of a node statement: which ops take
 * which keys, their values, and their translation into bg_build's
 * arguments (Python slice rules, reduction axis lists, permutations). */
#include "graph/text_parse.h"

#include <string.h>

/* What follows an attribute's '='. */
typedef enum attr_kind {
    A_STRING, /* a quoted string */
    A_F64,    /* a float */
    A_INT,    /* an int32 */
    A_U64,    /* a uint64 */
    A_DTYPE,  /* a dtype name */
    A_FLAG,   /* nothing: a bare flag */
    A_LIST,   /* an integer list */
    A_REDUCE  /* a reduction name: sum, max, min, avg */
} attr_kind;

static const struct {
    const char *name; /* spelling in the text */
    attr_kind kind;   /* what follows the '=' */
} attr_table[BG_ATTR_COUNT] = {
    [BG_ATTR_NAME] = {"name", A_STRING},
    [BG_ATTR_DEVICE] = {"device", A_STRING},
    [BG_ATTR_VALUE] = {"value", A_F64},
    [BG_ATTR_AXIS] = {"axis", A_INT},
    [BG_ATTR_SEED] = {"seed", A_U64},
    [BG_ATTR_LOW] = {"low", A_F64},
    [BG_ATTR_HIGH] = {"high", A_F64},
    [BG_ATTR_MEAN] = {"mean", A_F64},
    [BG_ATTR_STDDEV] = {"stddev", A_F64},
    [BG_ATTR_TO] = {"to", A_DTYPE},
    [BG_ATTR_TRANSPOSE_A] = {"transpose_a", A_FLAG},
    [BG_ATTR_TRANSPOSE_B] = {"transpose_b", A_FLAG},
    [BG_ATTR_AXES] = {"axes", A_LIST},
    [BG_ATTR_KEEPDIMS] = {"keepdims", A_FLAG},
    [BG_ATTR_SHAPE] = {"shape", A_LIST},
    [BG_ATTR_PERM] = {"perm", A_LIST},
    [BG_ATTR_START] = {"start", A_LIST},
    [BG_ATTR_STOP] = {"stop", A_LIST},
    [BG_ATTR_STEP] = {"step", A_LIST},
    [BG_ATTR_GROUP] = {"group", A_U64},
    [BG_ATTR_RANK] = {"rank", A_INT},
    [BG_ATTR_RANKS] = {"ranks", A_INT},
    [BG_ATTR_ROOT] = {"root", A_INT},
    [BG_ATTR_REDUCE] = {"reduce", A_REDUCE},
};

#define B(key) BG_ATTR_BIT(BG_ATTR_##key)

/* Attributes an op accepts (*allowed) and needs (*required). */
static void op_attrs(braid_op op, uint32_t *allowed, uint32_t *required) {
    uint32_t req = 0, opt = B(NAME) | B(DEVICE);
    switch (bg_op(op)->kind == BRAID_KIND_REDUCE ? BRAID_OP_SUM : op) {
    case BRAID_OP_INPUT:
        req = B(NAME);
        break;
    case BRAID_OP_FILL:
        req = B(VALUE);
        break;
    case BRAID_OP_IOTA:
        req = B(AXIS);
        break;
    case BRAID_OP_RANDOM_UNIFORM:
        req = B(SEED) | B(LOW) | B(HIGH);
        break;
    case BRAID_OP_RANDOM_NORMAL:
        req = B(SEED) | B(MEAN) | B(STDDEV);
        break;
    case BRAID_OP_CAST:
        req = B(TO);
        break;
    case BRAID_OP_MATMUL:
        opt |= B(TRANSPOSE_A) | B(TRANSPOSE_B);
        break;
    case BRAID_OP_SUM: /* every reduction */
        req = B(AXES);
        opt |= B(KEEPDIMS);
        break;
    case BRAID_OP_RESHAPE:
    case BRAID_OP_BROADCAST_TO:
        req = B(SHAPE);
        break;
    case BRAID_OP_PERMUTE:
        req = B(PERM);
        break;
    case BRAID_OP_SLICE:
        req = B(START) | B(STOP);
        opt |= B(STEP);
        break;
    case BRAID_OP_CONCAT:
        req = B(AXIS);
        break;
    case BRAID_OP_ALL_REDUCE:
    case BRAID_OP_REDUCE_SCATTER:
        req = B(GROUP) | B(RANK) | B(REDUCE);
        opt |= B(RANKS);
        break;
    case BRAID_OP_ALL_GATHER:
        req = B(GROUP) | B(RANK);
        opt |= B(RANKS);
        break;
    case BRAID_OP_BROADCAST:
        req = B(GROUP) | B(RANK) | B(ROOT);
        opt |= B(RANKS);
        break;
    default:
        break;
    }
    *allowed = req | opt;
    *required = req;
}

/* "a, b, c" of the attributes in mask, for messages. */
static void list_attrs(uint32_t mask, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < BG_ATTR_COUNT && used < size; k++)
        if (mask & BG_ATTR_BIT(k))
            used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                     used ? ", " : "", attr_table[k].name);
}

static bool parse_attr_value(bg_parser *p, bg_attr_key k, bg_pattrs *a) {
    const char *name = attr_table[k].name;
    bg_token t = p->tok;
    a->at[k] = t;
    switch (attr_table[k].kind) {
    case A_STRING:
        return bg_parse_string(p, k == BG_ATTR_NAME ? 0 : 1, &a->str[k]);
    case A_F64:
        return bg_parse_f64_value(p, name, &a->num[k]);
    case A_LIST:
        return bg_parse_int_list(p, name, &a->nlist[k], a->list[k]);
    case A_DTYPE: {
        char d[64];
        a->to = t.kind == BG_TOK_IDENT ? bg_dtype_lookup(t.text, t.len)
                                       : BRAID_DTYPE_COUNT_;
        if (a->to == BRAID_DTYPE_COUNT_)
            return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                                  "unknown dtype %s (expected f32, f16, "
                                  "bf16, f64, i32, i64 or bool)",
                                  bg_parse_describe(&t, d, sizeof d));
        return bg_parse_advance(p);
    }
    case A_REDUCE: {
        for (int r = 0; r < BRAID_REDUCE_COUNT_; r++)
            if (bg_tok_is(&t, BG_TOK_IDENT,
                          braid_reduce_name((braid_reduce_kind)r))) {
                a->ival[k] = r;
                return bg_parse_advance(p);
            }
        char d[64];
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "unknown reduction %s (expected sum, max, min "
                              "or avg)",
                              bg_parse_describe(&t, d, sizeof d));
    }
    case A_U64:
    case A_INT: {
        bool u = attr_table[k].kind == A_U64;
        int64_t v = 0;
        bg_num_status st = t.kind != BG_TOK_NUMBER ? BG_NUM_SYNTAX
                           : u ? bg_text_parse_u64(t.text, t.len, &a->seed)
                               : bg_text_parse_i64(t.text, t.len, &v);
        if (st == BG_NUM_OK && !u && (v < INT32_MIN || v > INT32_MAX))
            st = BG_NUM_RANGE;
        if (!u) a->ival[k] = v;
        if (!u && k == BG_ATTR_AXIS) a->axis = v;
        if (st != BG_NUM_OK) {
            char d[64];
            bg_parse_describe(&t, d, sizeof d);
            return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                                  st == BG_NUM_RANGE
                                      ? "%s %s is out of range"
                                      : "%s needs an integer, found %s",
                                  name, d);
        }
        return bg_parse_advance(p);
    }
    case A_FLAG:
        break;
    }
    return true;
}

/* key[=value] pairs until something that is not an identifier. */
bool bg_parse_attrs(bg_parser *p, braid_op op, bg_pattrs *a) {
    uint32_t allowed, required;
    op_attrs(op, &allowed, &required);
    const char *opname = bg_op(op)->name;
    char d[64], names[200];
    while (p->tok.kind == BG_TOK_IDENT) {
        bg_token key = p->tok;
        int k = 0;
        while (k < BG_ATTR_COUNT &&
               !bg_tok_is(&key, BG_TOK_IDENT, attr_table[k].name))
            k++;
        if (k == BG_ATTR_COUNT || !(allowed & BG_ATTR_BIT(k))) {
            list_attrs(allowed, names, sizeof names);
            return bg_parse_error(p, &key, BRAID_ERR_PARSE,
                                  "%s has no attribute %s (it takes: %s)",
                                  opname, bg_parse_describe(&key, d, sizeof d),
                                  names);
        }
        if (a->seen & BG_ATTR_BIT(k))
            return bg_parse_error(p, &key, BRAID_ERR_PARSE,
                                  "attribute '%s' given twice",
                                  attr_table[k].name);
        a->seen |= BG_ATTR_BIT(k);
        a->at[k] = key;
        if (!bg_parse_advance(p)) return false;
        if (attr_table[k].kind == A_FLAG) {
            if (p->tok.kind == BG_TOK_EQUALS)
                return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                                      "'%s' is a flag and takes no value",
                                      attr_table[k].name);
            continue;
        }
        if (!bg_parse_expect(p, BG_TOK_EQUALS, "'='") ||
            !parse_attr_value(p, (bg_attr_key)k, a))
            return false;
    }
    return true;
}

/* Reports the first required attribute that is missing. */
bool bg_parse_check_required(bg_parser *p, braid_op op, const bg_token *optok,
                             const bg_pattrs *a) {
    uint32_t allowed, required;
    op_attrs(op, &allowed, &required);
    for (int k = 0; k < BG_ATTR_COUNT; k++)
        if ((required & BG_ATTR_BIT(k)) && !(a->seen & BG_ATTR_BIT(k)))
            return bg_parse_error(p, optok, BRAID_ERR_PARSE,
                                  "%s needs attribute '%s'", bg_op(op)->name,
                                  attr_table[k].name);
    return true;
}

/* ---- op-specific attribute translation ----------------------------------- */

/* axes=[...] (negative counts from the end) as a bitmask over rank axes. */
static bool reduce_axes(bg_parser *p, const bg_pattrs *a, int rank,
                        uint8_t *mask) {
    *mask = 0;
    for (int i = 0; i < a->nlist[BG_ATTR_AXES]; i++) {
        int64_t ax = a->list[BG_ATTR_AXES][i];
        if (ax < -rank || ax >= rank)
            return bg_parse_error(p, &a->at[BG_ATTR_AXES], BRAID_ERR_PARSE,
                                  "axis %lld out of range for an operand of "
                                  "rank %d",
                                  (long long)ax, rank);
        int bit = (int)(ax < 0 ? ax + rank : ax);
        if (*mask & (1u << bit))
            return bg_parse_error(p, &a->at[BG_ATTR_AXES], BRAID_ERR_PARSE,
                                  "axis %d listed twice", bit);
        *mask |= (uint8_t)(1u << bit);
    }
    return true;
}

/* Python slice rules (negative start/stop count from the end, then clamp;
 * step ≥ 1) → the IR's start, step and element count per axis. */
static bool slice_attrs(bg_parser *p, const bg_pattrs *a, const bg_node *x,
                        bg_attrs *out, int64_t *counts) {
    const int keys[3] = {BG_ATTR_START, BG_ATTR_STOP, BG_ATTR_STEP};
    for (int k = 0; k < 3; k++)
        if ((a->seen & BG_ATTR_BIT(keys[k])) && a->nlist[keys[k]] != x->rank)
            return bg_parse_error(p, &a->at[keys[k]], BRAID_ERR_PARSE,
                                  "%s has %d entries; the operand has rank "
                                  "%d",
                                  attr_table[keys[k]].name, a->nlist[keys[k]],
                                  (int)x->rank);
    for (int i = 0; i < x->rank; i++) {
        int64_t dim = x->dims[i];
        int64_t step = (a->seen & B(STEP)) ? a->list[BG_ATTR_STEP][i] : 1;
        if (step < 1)
            return bg_parse_error(p, &a->at[BG_ATTR_STEP], BRAID_ERR_PARSE,
                                  "step %lld on axis %d; expected >= 1",
                                  (long long)step, i);
        int64_t st = a->list[BG_ATTR_START][i], sp = a->list[BG_ATTR_STOP][i];
        st = st < 0 ? (st < -dim ? 0 : st + dim) : (st > dim ? dim : st);
        sp = sp < 0 ? (sp < -dim ? 0 : sp + dim) : (sp > dim ? dim : sp);
        out->start[i] = st;
        out->step[i] = step;
        counts[i] = sp > st ? (sp - st - 1) / step + 1 : 0;
    }
    return true;
}

/* Fills bg_build's dtype/shape/attr arguments from the parsed attributes.
 * x is the first operand (NULL for sources). */
bool bg_parse_translate(bg_parser *p, braid_op op, const bg_pattrs *a,
                        const bg_node *x, bg_attrs *out, braid_dtype *dtype,
                        int *rank, int64_t *dims) {
    out->value[0] = a->num[op == BRAID_OP_FILL            ? BG_ATTR_VALUE
                           : op == BRAID_OP_RANDOM_NORMAL ? BG_ATTR_MEAN
                                                          : BG_ATTR_LOW];
    out->value[1] =
        a->num[op == BRAID_OP_RANDOM_NORMAL ? BG_ATTR_STDDEV : BG_ATTR_HIGH];
    out->seed = a->seed;
    out->axis = (int32_t)a->axis;
    if (a->seen & B(TRANSPOSE_A)) out->flags |= BRAID_TRANSPOSE_A;
    if (a->seen & B(TRANSPOSE_B)) out->flags |= BRAID_TRANSPOSE_B;
    if (a->seen & B(KEEPDIMS)) out->flags |= BG_KEEPDIMS;
    if (op == BRAID_OP_CAST) *dtype = a->to;
    if (a->seen & B(SHAPE)) {
        *rank = a->nlist[BG_ATTR_SHAPE];
        memcpy(dims, a->list[BG_ATTR_SHAPE], sizeof a->list[BG_ATTR_SHAPE]);
    }
    if (a->seen & B(AXES)) return reduce_axes(p, a, x->rank, &out->axes);
    if (a->seen & B(PERM)) {
        if (a->nlist[BG_ATTR_PERM] != x->rank)
            return bg_parse_error(p, &a->at[BG_ATTR_PERM], BRAID_ERR_PARSE,
                                  "perm has %d entries; the operand has rank "
                                  "%d",
                                  a->nlist[BG_ATTR_PERM], (int)x->rank);
        for (int i = 0; i < x->rank; i++) {
            int64_t v = a->list[BG_ATTR_PERM][i];
            if (v < 0 || v >= x->rank)
                return bg_parse_error(p, &a->at[BG_ATTR_PERM], BRAID_ERR_PARSE,
                                      "perm entry %lld out of range for rank "
                                      "%d",
                                      (long long)v, (int)x->rank);
            out->perm[i] = (uint8_t)v;
        }
    }
    if (bg_op(op)->kind == BRAID_KIND_COLLECTIVE) {
        /* ranks defaults to the operand count (a local group) */
        out->axis = (int32_t)a->ival[BG_ATTR_RANK];
        out->start[0] = a->ival[BG_ATTR_RANKS]; /* absent: the parser
                                                    puts the operand count */
        out->start[1] = a->ival[BG_ATTR_ROOT];
        out->flags = (uint32_t)a->ival[BG_ATTR_REDUCE];
        return true;
    }
    if (op == BRAID_OP_SLICE) {
        *rank = x->rank;
        return slice_attrs(p, a, x, out, dims);
    }
    return true;
}
