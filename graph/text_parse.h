/* graph/text_parse.h — the parser's state, shared by graph/text_parse*.c
 * (private to them). */
#ifndef BRAID_GRAPH_TEXT_PARSE_H
#define BRAID_GRAPH_TEXT_PARSE_H

#include "graph/text.h"

/* One defined label: where its name lies in the source and its node. */
typedef struct bg_label {
    const char *key; /* label characters in the source (no '%'); NULL: empty */
    size_t len;      /* their count */
    uint32_t id;     /* the node it names */
    size_t line;     /* line of its definition, for "defined twice" errors */
} bg_label;

/* Open-addressing hash map label → node, so lookups stay O(1) however many
 * labels a file defines. */
typedef struct bg_label_map {
    bg_label *slots; /* cap entries (power of two) */
    size_t cap;      /* slot count; 0 before the first insert */
    size_t count;    /* occupied slots */
    uint64_t seed;   /* per-parse hash seed (makes crafted collisions hard) */
} bg_label_map;

/* Everything a parse needs. All scratch memory comes from g's allocator and
 * is released by bg_parser_release whatever happened. */
typedef struct bg_parser {
    braid_graph *g;      /* the graph being filled */
    const char *file;    /* name used in messages */
    bg_lexer lx;         /* token source */
    bg_token tok;        /* the current (not yet consumed) token */
    bool prefixed;       /* g->error already starts with file:line:col */
    bg_label_map labels; /* defined labels */
    uint32_t *operands;  /* scratch: operand ids of the current node */
    size_t operands_cap; /* its capacity (elements) */
    unsigned char *data; /* scratch: constant bytes of the current node */
    size_t data_cap;     /* its capacity (bytes) */
    char *strs[2];       /* scratch: decoded name / device strings */
    size_t str_sizes[2]; /* their allocation sizes */
} bg_parser;

/* Records an error at token t: "file:line:col: message" with status s
 * (BRAID_ERR_PARSE for syntax). When g already holds an error that is not
 * yet prefixed (a builder or allocation failure) it is prefixed with t's
 * position instead. Always returns false so callers can `return
 * bg_parse_error(...)`. */
bool bg_parse_error(bg_parser *p, const bg_token *t, braid_status s,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Prefixes an error recorded elsewhere (builder, allocator) with t. */
bool bg_parse_prefix(bg_parser *p, const bg_token *t);

/* Moves to the next token; false (error recorded) on a lexer error. */
bool bg_parse_advance(bg_parser *p);
/* Skips newline tokens (inside brackets lines may break freely). */
bool bg_parse_skip_newlines(bg_parser *p);
/* Consumes a token of kind k or reports "expected <what>, found ...". */
bool bg_parse_expect(bg_parser *p, bg_tok_kind k, const char *what);
/* True when t is of kind k and spelled text. */
bool bg_tok_is(const bg_token *t, bg_tok_kind k, const char *text);
/* "'text'" of a token for messages (truncated), into buf. */
const char *bg_parse_describe(const bg_token *t, char *buf, size_t size);

/* Label map (graph/text_parse_values.c). */
bool bg_labels_find(const bg_label_map *m, const char *key, size_t len,
                    const bg_label **out);
bool bg_labels_insert(bg_parser *p, const char *key, size_t len, uint32_t id,
                      size_t line);
void bg_labels_free(bg_parser *p);

/* Values (graph/text_parse_values.c); each consumes its tokens. */
/* A type "dtype[d0,d1,...]". */
bool bg_parse_type(bg_parser *p, braid_dtype *dtype, int *rank, int64_t *dims);
/* "[i, j, ...]" of at most BRAID_MAX_RANK integers. */
bool bg_parse_int_list(bg_parser *p, const char *what, int *n, int64_t *v);
/* The same for a list of floats (bg_parse_f64_value's syntax). */
bool bg_parse_f64_list(bg_parser *p, const char *what, int *n, double *v);
/* A constant's data after its type: a value list or base64"...", decoded
 * into p->data (bytes = numel × dtype size). */
bool bg_parse_constant_data(bg_parser *p, braid_dtype dtype, int rank,
                            const int64_t *dims);
/* A string token decoded into p->strs[slot]. */
bool bg_parse_string(bg_parser *p, int slot, const char **out);
/* A number token (or nan/inf identifier) as a double. */
bool bg_parse_f64_value(bg_parser *p, const char *what, double *out);

/* ---- attributes (graph/text_parse_attrs.c) ------------------------------- */

/* The attribute keys of the format (spellings in text_parse_attrs.c). */
typedef enum bg_attr_key {
    BG_ATTR_NAME,
    BG_ATTR_DEVICE,
    BG_ATTR_VALUE,
    BG_ATTR_AXIS,
    BG_ATTR_SEED,
    BG_ATTR_LOW,
    BG_ATTR_HIGH,
    BG_ATTR_MEAN,
    BG_ATTR_STDDEV,
    BG_ATTR_TO,
    BG_ATTR_TRANSPOSE_A,
    BG_ATTR_TRANSPOSE_B,
    BG_ATTR_AXES,
    BG_ATTR_KEEPDIMS,
    BG_ATTR_SHAPE,
    BG_ATTR_PERM,
    BG_ATTR_START,
    BG_ATTR_STOP,
    BG_ATTR_STEP,
    BG_ATTR_GROUP, /* collectives (graph/collective.h) */
    BG_ATTR_RANK,
    BG_ATTR_RANKS,
    BG_ATTR_ROOT,
    BG_ATTR_REDUCE,
    BG_ATTR_FORM, /* gather, scatter (graph/index.h) */
    BG_ATTR_BATCH_DIMS,
    BG_ATTR_REDUCTION,
    BG_ATTR_STRIDES, /* conv ops (graph/conv.c) */
    BG_ATTR_DILATIONS,
    BG_ATTR_PADS,
    BG_ATTR_GROUPS,
    BG_ATTR_OUTPUT_PADDING,
    BG_ATTR_KERNEL_SHAPE, /* pooling (graph/window.h), ONNX's names; strides,
                             dilations and pads shared with conv */
    BG_ATTR_CEIL_MODE,
    BG_ATTR_COUNT_INCLUDE_PAD,
    BG_ATTR_SCALES, /* resize (graph/resize.c) */
    BG_ATTR_MODE,
    BG_ATTR_COORD_MODE,
    BG_ATTR_NEAREST_MODE,
    BG_ATTR_SELECT_LAST, /* axis ops (graph/axis.h) */
    BG_ATTR_K,
    BG_ATTR_SMALLEST,
    BG_ATTR_EXCLUSIVE,
    BG_ATTR_REVERSE,
    BG_ATTR_EPS,           /* layer_norm */
    BG_ATTR_SCALE,         /* attention */
    BG_ATTR_CAUSAL,        /* attention */
    BG_ATTR_CHANNELS_LAST, /* conv (graph.h, BG_CONV_CHANNELS_LAST) */
    BG_ATTR_COUNT
} bg_attr_key;

/* More than 32 keys: the masks are 64-bit. */
#define BG_ATTR_BIT(k) ((uint64_t)1 << (k))

/* Attribute values of one statement. */
typedef struct bg_pattrs {
    uint64_t seen;              /* BG_ATTR_BIT per key given */
    bg_token at[BG_ATTR_COUNT]; /* the value token (the key for flags) */
    double num[BG_ATTR_COUNT];  /* float values (value, low, ...) */
    int64_t axis;               /* axis */
    uint64_t seed;              /* seed */
    braid_dtype to;             /* to */
    int nlist[BG_ATTR_COUNT];   /* list lengths (axes, shape, ...) */
    int64_t list[BG_ATTR_COUNT][BRAID_MAX_RANK]; /* list values */
    const char *str[BG_ATTR_COUNT]; /* decoded strings (name, device) */
    double flist[BRAID_MAX_RANK];   /* scales= (the one float list) */
    int64_t ival[BG_ATTR_COUNT];    /* integer values by key (rank, ranks,
                                       root; reduce as a braid_reduce_kind;
                                       mode as a bg_index_mode, reduction
                                       as a bg_scatter_red, batch_dims) */
} bg_pattrs;

/* key[=value] pairs until something that is not an identifier; unknown,
 * misplaced or repeated keys are errors. */
bool bg_parse_attrs(bg_parser *p, braid_op op, bg_pattrs *a);
/* Reports the first required attribute of op that a lacks (at optok). */
bool bg_parse_check_required(bg_parser *p, braid_op op, const bg_token *optok,
                             const bg_pattrs *a);
/* Fills bg_build's dtype/shape/attr arguments from the parsed attributes.
 * x is the first operand (NULL for sources). */
/* A variable's initializer from its attributes: element data after the
 * type (constant), value= (fill), seed= low= high= (uniform) or seed=
 * mean= stddev= (normal), exactly one of them; into out->init/value. */
bool bg_parse_variable_init(bg_parser *p, const bg_pattrs *a,
                            const bg_token *optok, bool data, bg_attrs *out);
bool bg_parse_translate(bg_parser *p, braid_op op, const bg_pattrs *a,
                        const bg_node *x, bg_attrs *out, braid_dtype *dtype,
                        int *rank, int64_t *dims);

#endif /* BRAID_GRAPH_TEXT_PARSE_H */
