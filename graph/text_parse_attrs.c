/* graph/text_parse_attrs.c — attributes of a node statement: which ops take
 * which keys, their values, and their translation into bg_build's
 * arguments (Python slice rules, reduction axis lists, permutations). */
#include "graph/index.h"
#include "graph/text_parse.h"
#include "graph/window.h"

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
    A_REDUCE, /* a reduction name: sum, max, min, avg */
    A_MODE,   /* gather / scatter form: axis, elements, nd */
    A_SRED,   /* scatter reduction: none, add, mul, max, min */
    A_F64S,   /* a list of floats (into flist: one such key) */
    A_WORD    /* one of a fixed set of names (resize's enums, into ival) */
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
    [BG_ATTR_FORM] = {"form", A_MODE},
    [BG_ATTR_BATCH_DIMS] = {"batch_dims", A_INT},
    [BG_ATTR_REDUCTION] = {"reduction", A_SRED},
    [BG_ATTR_STRIDES] = {"strides", A_LIST}, /* conv ops */
    [BG_ATTR_DILATIONS] = {"dilations", A_LIST},
    [BG_ATTR_PADS] = {"pads", A_LIST},
    [BG_ATTR_GROUPS] = {"groups", A_INT},
    [BG_ATTR_OUTPUT_PADDING] = {"output_padding", A_LIST},
    [BG_ATTR_KERNEL_SHAPE] = {"kernel_shape", A_LIST},
    [BG_ATTR_CEIL_MODE] = {"ceil_mode", A_FLAG},
    [BG_ATTR_COUNT_INCLUDE_PAD] = {"count_include_pad", A_FLAG},
    [BG_ATTR_SCALES] = {"scales", A_F64S},
    [BG_ATTR_MODE] = {"mode", A_WORD},
    [BG_ATTR_COORD_MODE] = {"coordinate_transformation_mode", A_WORD},
    [BG_ATTR_NEAREST_MODE] = {"nearest_mode", A_WORD},
    [BG_ATTR_SELECT_LAST] = {"select_last", A_FLAG},
    [BG_ATTR_K] = {"k", A_U64},
    [BG_ATTR_SMALLEST] = {"smallest", A_FLAG},
    [BG_ATTR_EXCLUSIVE] = {"exclusive", A_FLAG},
    [BG_ATTR_REVERSE] = {"reverse", A_FLAG},
    [BG_ATTR_EPS] = {"eps", A_F64},
    [BG_ATTR_SCALE] = {"scale", A_F64},
    [BG_ATTR_CAUSAL] = {"causal", A_FLAG},
    [BG_ATTR_CHANNELS_LAST] = {"channels_last", A_FLAG},
};

#define B(key) BG_ATTR_BIT(BG_ATTR_##key)

/* Attributes an op accepts (*allowed) and needs (*required). */
static void op_attrs(braid_op op, uint64_t *allowed, uint64_t *required) {
    uint64_t req = 0, opt = B(NAME) | B(DEVICE);
    switch (bg_op(op)->kind == BRAID_KIND_REDUCE ? BRAID_OP_SUM : op) {
    case BRAID_OP_INPUT:
        req = B(NAME);
        break;
    case BRAID_OP_VARIABLE: /* the initializer's attributes (or data) */
        req = B(NAME);
        opt |= B(VALUE) | B(SEED) | B(LOW) | B(HIGH) | B(MEAN) | B(STDDEV);
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
    case BRAID_OP_GATHER:
        req = B(FORM);
        opt |= B(AXIS) | B(BATCH_DIMS);
        break;
    case BRAID_OP_SCATTER:
        req = B(FORM);
        opt |= B(AXIS) | B(REDUCTION);
        break;
    case BRAID_OP_CONV: /* conv ops: every attribute has a default */
        opt |=
            B(STRIDES) | B(DILATIONS) | B(PADS) | B(GROUPS) | B(CHANNELS_LAST);
        break;
    case BRAID_OP_CONV_TRANSPOSE:
        opt |= B(STRIDES) | B(DILATIONS) | B(PADS) | B(GROUPS) |
               B(OUTPUT_PADDING);
        break;
    case BRAID_OP_AVG_POOL:
        opt |= B(COUNT_INCLUDE_PAD);
        /* fall through */
    case BRAID_OP_MAX_POOL:
        req = B(KERNEL_SHAPE);
        opt |= B(STRIDES) | B(DILATIONS) | B(PADS) | B(CEIL_MODE) |
               B(CHANNELS_LAST);
        break;
    case BRAID_OP_RESIZE:
        req = B(SHAPE) | B(MODE);
        opt |= B(SCALES) | B(COORD_MODE) | B(NEAREST_MODE);
        break;
    case BRAID_OP_ARGMAX: /* axis ops */
    case BRAID_OP_ARGMIN:
        req = B(AXIS);
        opt |= B(KEEPDIMS) | B(SELECT_LAST);
        break;
    case BRAID_OP_TOPK_VALUES:
    case BRAID_OP_TOPK_INDICES:
        req = B(AXIS) | B(K);
        opt |= B(SMALLEST);
        break;
    case BRAID_OP_LAYER_NORM:
        req = B(EPS);
        break;
    case BRAID_OP_ATTENTION:
        req = B(SCALE);
        opt |= B(CAUSAL);
        break;
    case BRAID_OP_CUMSUM:
        req = B(AXIS);
        opt |= B(EXCLUSIVE) | B(REVERSE);
        break;
    default:
        break;
    }
    *allowed = req | opt;
    *required = req;
}

/* "a, b, c" of the attributes in mask, for messages. */
static void list_attrs(uint64_t mask, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < BG_ATTR_COUNT && used < size; k++)
        if (mask & BG_ATTR_BIT(k))
            used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                     used ? ", " : "", attr_table[k].name);
}

/* mode=, coordinate_transformation_mode=, nearest_mode=: the value's
 * index among graph/resize.c's names, into ival. */
static bool parse_word(bg_parser *p, bg_attr_key k, bg_pattrs *a) {
    int kind = k == BG_ATTR_MODE ? 0 : k == BG_ATTR_COORD_MODE ? 1 : 2;
    const char *w;
    for (unsigned v = 0; (w = bg_resize_name(kind, v)) != NULL; v++)
        if (bg_tok_is(&p->tok, BG_TOK_IDENT, w)) {
            a->ival[k] = v;
            return bg_parse_advance(p);
        }
    char d[64], names[160];
    size_t used = 0;
    names[0] = '\0';
    for (unsigned v = 0; (w = bg_resize_name(kind, v)) != NULL; v++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                 v ? ", " : "", w);
    return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                          "unknown %s %s (expected %s)", attr_table[k].name,
                          bg_parse_describe(&p->tok, d, sizeof d), names);
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
    case A_MODE:
    case A_SRED: {
        bool mode = attr_table[k].kind == A_MODE;
        int v = t.kind != BG_TOK_IDENT ? -1
                : mode ? bg_index_mode_lookup(t.text, t.len)
                       : bg_scatter_red_lookup(t.text, t.len);
        a->ival[k] = v;
        if (v >= 0) return bg_parse_advance(p);
        char d[64];
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              mode ? "unknown form %s (expected axis, "
                                     "elements or nd)"
                                   : "unknown reduction %s (expected none, "
                                     "add, mul, max or min)",
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
    case A_F64S:
        return bg_parse_f64_list(p, name, &a->nlist[k], a->flist);
    case A_WORD:
        return parse_word(p, k, a);
    case A_FLAG:
        break;
    }
    return true;
}

/* key[=value] pairs until something that is not an identifier. */
bool bg_parse_attrs(bg_parser *p, braid_op op, bg_pattrs *a) {
    uint64_t allowed, required;
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
    uint64_t allowed, required;
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

/* Python slice rules (bg_slice_bounds: negative start/stop count from the
 * end, then clamp; step ≠ 0) → the IR's start, step and element count per
 * axis. */
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
        int64_t step = (a->seen & B(STEP)) ? a->list[BG_ATTR_STEP][i] : 1;
        if (!bg_slice_bounds(x->dims[i], a->list[BG_ATTR_START][i],
                             a->list[BG_ATTR_STOP][i], step, &out->start[i],
                             &counts[i]))
            return bg_parse_error(p, &a->at[BG_ATTR_STEP], BRAID_ERR_PARSE,
                                  "step %lld on axis %d; expected nonzero",
                                  (long long)step, i);
        out->step[i] = step;
    }
    return true;
}

/* conv ops: list lengths against the spatial rank s (strides, dilations,
 * output_padding: s entries; pads: 2s), then the packing of graph/conv.c
 * (graph.h, "conv ops"); the values themselves are bg_build's to check. */
static bool conv_attrs(bg_parser *p, const bg_pattrs *a, const bg_node *x,
                       bg_attrs *out) {
    static const bg_attr_key keys[] = {BG_ATTR_STRIDES, BG_ATTR_DILATIONS,
                                       BG_ATTR_PADS, BG_ATTR_OUTPUT_PADDING};
    int s = x->rank - 2;
    if (a->seen & B(CHANNELS_LAST)) out->flags |= BG_CONV_CHANNELS_LAST;
    if (s < 1 || s > BG_CONV_MAX_SPATIAL) return true; /* bg_build says */
    for (int k = 0; k < 4; k++) {
        int want = keys[k] == BG_ATTR_PADS ? 2 * s : s;
        if ((a->seen & BG_ATTR_BIT(keys[k])) && a->nlist[keys[k]] != want)
            return bg_parse_error(p, &a->at[keys[k]], BRAID_ERR_PARSE,
                                  "%s has %d entries; expected %d for %d "
                                  "spatial axes",
                                  attr_table[keys[k]].name,
                                  a->nlist[keys[k]], want, s);
    }
    bool seen_s = a->seen & B(STRIDES), seen_d = a->seen & B(DILATIONS);
    bool seen_p = a->seen & B(PADS), seen_o = a->seen & B(OUTPUT_PADDING);
    out->axis = a->seen & B(GROUPS) ? (int32_t)a->ival[BG_ATTR_GROUPS] : 1;
    for (int i = 0; i < s; i++) {
        out->step[i] = seen_s ? a->list[BG_ATTR_STRIDES][i] : 1;
        out->step[3 + i] = seen_d ? a->list[BG_ATTR_DILATIONS][i] : 1;
        out->start[i] = seen_p ? a->list[BG_ATTR_PADS][i] : 0;
        int64_t pe = seen_p ? a->list[BG_ATTR_PADS][s + i] : 0;
        int64_t op = seen_o ? a->list[BG_ATTR_OUTPUT_PADDING][i] : 0;
        int64_t hi = out->step[i] > out->step[3 + i] ? out->step[i]
                                                     : out->step[3 + i];
        if (op < 0 || op >= hi)
            return bg_parse_error(p, &a->at[BG_ATTR_OUTPUT_PADDING],
                                  BRAID_ERR_PARSE,
                                  "output_padding %lld on spatial axis %d; "
                                  "expected 0 <= p < max(stride, dilation)",
                                  (long long)op, i);
        out->start[3 + i] = pe > INT64_MIN + op ? pe - op : pe;
    }
    return true;
}

/* Pooling: kernel_shape (required), strides and dilations (default 1) with
 * one entry per spatial axis, pads (default 0) with ONNX's layout: every
 * axis's low pad, then every high pad; ceil_mode and count_include_pad
 * flags. The range checks are bg_build's. */
static bool window_attrs(bg_parser *p, const bg_pattrs *a, const bg_node *x,
                         bg_attrs *out) {
    const int keys[4] = {BG_ATTR_KERNEL_SHAPE, BG_ATTR_STRIDES,
                         BG_ATTR_DILATIONS, BG_ATTR_PADS};
    int k = x->rank - 2;
    if (k < 1 || k > 3) return true; /* bg_build names the bad rank */
    for (int q = 0; q < 4; q++) {
        int want = q == 3 ? 2 * k : k;
        if ((a->seen & BG_ATTR_BIT(keys[q])) && a->nlist[keys[q]] != want)
            return bg_parse_error(p, &a->at[keys[q]], BRAID_ERR_PARSE,
                                  "%s has %d entries; expected %d for %d "
                                  "spatial axes",
                                  attr_table[keys[q]].name, a->nlist[keys[q]],
                                  want, k);
    }
    for (int i = 0; i < k && i < 3; i++) {
        bg_window_set_param(out, 0, i, a->list[BG_ATTR_KERNEL_SHAPE][i]);
        bg_window_set_param(out, 1, i, (a->seen & B(STRIDES))
                                           ? a->list[BG_ATTR_STRIDES][i]
                                           : 1);
        bg_window_set_param(out, 2, i, (a->seen & B(DILATIONS))
                                           ? a->list[BG_ATTR_DILATIONS][i]
                                           : 1);
        bg_window_set_param(out, 3, i, a->list[BG_ATTR_PADS][i]);
        bg_window_set_param(out, 4, i, a->list[BG_ATTR_PADS][k + i]);
    }
    out->flags = ((a->seen & B(CEIL_MODE)) ? BG_POOL_CEIL : 0) |
                 ((a->seen & B(COUNT_INCLUDE_PAD)) ? BG_POOL_COUNT_PAD : 0) |
                 ((a->seen & B(CHANNELS_LAST)) ? BG_POOL_CHANNELS_LAST : 0);
    return true;
}

/* resize: shape= is the output shape (bg_build's dims, already taken),
 * scales= one per axis (default out / in), the enums by name. */
static bool resize_attrs(bg_parser *p, const bg_pattrs *a, const bg_node *x,
                         bg_attrs *out) {
    bool given = (a->seen & B(SCALES)) != 0;
    if (given && a->nlist[BG_ATTR_SCALES] != x->rank)
        return bg_parse_error(p, &a->at[BG_ATTR_SCALES], BRAID_ERR_PARSE,
                              "scales has %d entries; the operand has rank %d",
                              a->nlist[BG_ATTR_SCALES], (int)x->rank);
    if (a->nlist[BG_ATTR_SHAPE] != x->rank) return true; /* bg_build says */
    for (int s = 0; s < 3; s++)
        bg_resize_set_scale(out, s, 1);
    for (int ax = x->rank - 3 < 0 ? 0 : x->rank - 3; ax < x->rank; ax++) {
        double in = (double)x->dims[ax];
        double sc = given ? a->flist[ax]
                    : in > 0 ? (double)a->list[BG_ATTR_SHAPE][ax] / in
                             : 1;
        bg_resize_set_scale(out, ax - (x->rank - 3), sc);
    }
    out->flags = BG_RESIZE_FLAGS(a->ival[BG_ATTR_MODE],
                                 a->ival[BG_ATTR_COORD_MODE],
                                 a->ival[BG_ATTR_NEAREST_MODE]);
    return true;
}

/* Fills bg_build's dtype/shape/attr arguments from the parsed attributes.
 * x is the first operand (NULL for sources). */
bool bg_parse_translate(bg_parser *p, braid_op op, const bg_pattrs *a,
                        const bg_node *x, bg_attrs *out, braid_dtype *dtype,
                        int *rank, int64_t *dims) {
    out->value[0] = a->num[op == BRAID_OP_FILL            ? BG_ATTR_VALUE
                           : op == BRAID_OP_RANDOM_NORMAL ? BG_ATTR_MEAN
                           : op == BRAID_OP_LAYER_NORM    ? BG_ATTR_EPS
                           : op == BRAID_OP_ATTENTION     ? BG_ATTR_SCALE
                                                          : BG_ATTR_LOW];
    out->value[1] =
        a->num[op == BRAID_OP_RANDOM_NORMAL ? BG_ATTR_STDDEV : BG_ATTR_HIGH];
    out->seed = a->seed;
    out->axis = (int32_t)a->axis;
    if (a->seen & B(TRANSPOSE_A)) out->flags |= BRAID_TRANSPOSE_A;
    if (a->seen & B(TRANSPOSE_B)) out->flags |= BRAID_TRANSPOSE_B;
    if (a->seen & B(KEEPDIMS)) out->flags |= BG_KEEPDIMS;
    if (a->seen & B(SELECT_LAST)) out->flags |= BG_SELECT_LAST;
    if (a->seen & B(SMALLEST)) out->flags |= BG_SMALLEST;
    if (a->seen & B(EXCLUSIVE)) out->flags |= BG_EXCLUSIVE;
    if (a->seen & B(REVERSE)) out->flags |= BG_REVERSE;
    if (a->seen & B(CAUSAL)) out->flags |= BRAID_ATTENTION_CAUSAL;
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
    if (op == BRAID_OP_RESIZE) return resize_attrs(p, a, x, out);
    if (bg_op(op)->kind == BRAID_KIND_WINDOW) return window_attrs(p, a, x, out);
    if (bg_op(op)->kind == BRAID_KIND_CONV) return conv_attrs(p, a, x, out);
    if (op == BRAID_OP_GATHER || op == BRAID_OP_SCATTER) {
        bg_index_mode m = (bg_index_mode)a->ival[BG_ATTR_FORM];
        out->flags = bg_index_flags(
            m, (bg_scatter_red)a->ival[BG_ATTR_REDUCTION]);
        if (m == BG_INDEX_ND)
            out->axis = (int32_t)a->ival[BG_ATTR_BATCH_DIMS];
    }
    return true;
}

bool bg_parse_variable_init(bg_parser *p, const bg_pattrs *a,
                            const bg_token *optok, bool data, bg_attrs *out) {
    uint32_t seen = a->seen & (B(VALUE) | B(SEED) | B(LOW) | B(HIGH) |
                               B(MEAN) | B(STDDEV));
    uint32_t uniform = B(SEED) | B(LOW) | B(HIGH),
             normal = B(SEED) | B(MEAN) | B(STDDEV);
    if (data && seen == 0)
        out->init = BRAID_OP_CONSTANT;
    else if (!data && seen == B(VALUE))
        out->init = BRAID_OP_FILL;
    else if (!data && seen == uniform)
        out->init = BRAID_OP_RANDOM_UNIFORM;
    else if (!data && seen == normal)
        out->init = BRAID_OP_RANDOM_NORMAL;
    else
        return bg_parse_error(p, optok, BRAID_ERR_PARSE,
                              "variable needs exactly one initializer: "
                              "element data after its type, value=, "
                              "seed= low= high=, or seed= mean= stddev=");
    bool u = out->init == BRAID_OP_RANDOM_UNIFORM;
    out->value[0] = a->num[out->init == BRAID_OP_FILL ? BG_ATTR_VALUE
                           : u                       ? BG_ATTR_LOW
                                                     : BG_ATTR_MEAN];
    out->value[1] = a->num[u ? BG_ATTR_HIGH : BG_ATTR_STDDEV];
    return true;
}
