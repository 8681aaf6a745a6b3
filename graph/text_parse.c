/* graph/text_parse.c — reads the .graph text format (docs/graph-format.md)
 * into a graph: statements, attributes, errors and the public entry points.
 *
 * Nodes are created only through bg_build, so a parsed graph is checked by
 * exactly the rules the C builders follow; the parser adds the syntax, the
 * label bookkeeping and "file:line:col: " in front of every message. One
 * pass, one token of lookahead, O(1) work per byte apart from the builder's
 * own checks. */
#include "graph/internal.h"
#include "graph/text_parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- errors and tokens --------------------------------------------------- */

/* Puts "<pre>" in front of g->error (cutting the message's tail if the
 * whole would not fit) and mirrors it to braid_last_error. */
static void prefix_error(braid_graph *g, const char *pre) {
    char *err = g->error;
    size_t pl = strlen(pre);
    if (pl > BG_ERROR_MAX / 2) pl = BG_ERROR_MAX / 2;
    size_t ol = strlen(err);
    if (pl + ol >= BG_ERROR_MAX) ol = BG_ERROR_MAX - 1 - pl;
    memmove(err + pl, err, ol);
    memcpy(err, pre, pl);
    err[pl + ol] = '\0';
    bg_set_last_error(g->status, "%s", err);
}

/* Replaces g->error by "file:line:col: " + g->error. */
static void prefix_existing(bg_parser *p, size_t line, size_t col) {
    char pre[BG_ERROR_MAX];
    snprintf(pre, sizeof pre, "%s:%zu:%zu: ", p->file, line, col);
    prefix_error(p->g, pre);
    p->prefixed = true;
}

bool bg_parse_prefix(bg_parser *p, const bg_token *t) {
    if (p->g->status != BRAID_OK && !p->prefixed)
        prefix_existing(p, t->line, t->col);
    return false;
}

bool bg_parse_error(bg_parser *p, const bg_token *t, braid_status s,
                    const char *fmt, ...) {
    if (p->g->status == BRAID_OK) {
        char msg[BG_ERROR_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        bg_fail(p->g, s, "%s:%zu:%zu: %s", p->file, t->line, t->col, msg);
        p->prefixed = true;
        return false;
    }
    return bg_parse_prefix(p, t);
}

bool bg_parse_advance(bg_parser *p) {
    p->tok = bg_lex_next(&p->lx);
    if (p->tok.kind != BG_TOK_ERROR) return true;
    bg_token at = p->tok;
    at.line = p->lx.err_line;
    at.col = p->lx.err_col;
    return bg_parse_error(p, &at, BRAID_ERR_PARSE, "%s", p->lx.error);
}

bool bg_parse_skip_newlines(bg_parser *p) {
    while (p->tok.kind == BG_TOK_NEWLINE)
        if (!bg_parse_advance(p)) return false;
    return true;
}

const char *bg_parse_describe(const bg_token *t, char *buf, size_t size) {
    switch (t->kind) {
    case BG_TOK_EOF:
        snprintf(buf, size, "end of file");
        break;
    case BG_TOK_NEWLINE:
        snprintf(buf, size, "end of line");
        break;
    case BG_TOK_STRING:
        snprintf(buf, size, "a string");
        break;
    case BG_TOK_BASE64:
        snprintf(buf, size, "base64 data");
        break;
    default: {
        int n = t->len > 32 ? 32 : (int)t->len;
        bool label = t->kind == BG_TOK_LABEL;
        snprintf(buf, size, "'%s%.*s%s'", label ? "%" : "", n, t->text,
                 t->len > 32 ? "..." : "");
    }
    }
    return buf;
}

bool bg_tok_is(const bg_token *t, bg_tok_kind k, const char *text) {
    size_t n = strlen(text);
    return t->kind == k && t->len == n && memcmp(t->text, text, n) == 0;
}

bool bg_parse_expect(bg_parser *p, bg_tok_kind k, const char *what) {
    if (p->tok.kind != k) {
        char d[64];
        return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                              "expected %s, found %s", what,
                              bg_parse_describe(&p->tok, d, sizeof d));
    }
    return bg_parse_advance(p);
}

/* A statement ends at a newline or the end of the input. */
static bool expect_end(bg_parser *p) {
    if (p->tok.kind == BG_TOK_EOF) return true;
    return bg_parse_expect(p, BG_TOK_NEWLINE, "end of line");
}

/* ---- statements ---------------------------------------------------------- */

/* "unknown op 'x'", with the nearest op name when one is close. */
static bool unknown_op(bg_parser *p, const bg_token *t) {
    char d[64];
    bg_parse_describe(t, d, sizeof d);
    const char *best = NULL;
    /* suggest only within one edit of a short name, two of a longer one */
    int best_d = t->len <= 4 ? 2 : 3;
    for (int op = 0; t->len <= 32 && op < BRAID_OP_COUNT_; op++) {
        const char *name = bg_op((braid_op)op)->name;
        int dist = bg_edit_distance(t->text, t->len, name, strlen(name));
        if (dist < best_d) {
            best = name;
            best_d = dist;
        }
    }
    if (best)
        return bg_parse_error(p, t, BRAID_ERR_PARSE,
                              "unknown op %s (did you mean '%s'?)", d, best);
    return bg_parse_error(p, t, BRAID_ERR_PARSE, "unknown op %s", d);
}

/* label (',' label)* into p->operands. */
static bool parse_operands(bg_parser *p, uint32_t *n) {
    *n = 0;
    for (;;) {
        bg_token t = p->tok;
        char d[64];
        const bg_label *l = NULL;
        if (t.kind != BG_TOK_LABEL)
            return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                                  "expected an operand label such as %%x, "
                                  "found %s",
                                  bg_parse_describe(&t, d, sizeof d));
        if (!bg_labels_find(&p->labels, t.text, t.len, &l))
            return bg_parse_error(p, &t, BRAID_ERR_PARSE, "undefined label %s",
                                  bg_parse_describe(&t, d, sizeof d));
        if (*n == p->operands_cap) {
            size_t cap = p->operands_cap ? 2 * p->operands_cap : 8;
            if (cap > (size_t)1 << 31)
                return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                                      "more than 2^31 operands");
            uint32_t *o =
                bg_realloc(p->g, p->operands, p->operands_cap * sizeof *o,
                           cap * sizeof *o);
            if (o == NULL) return bg_parse_prefix(p, &t);
            p->operands = o;
            p->operands_cap = cap;
        }
        p->operands[(*n)++] = l->id;
        if (!bg_parse_advance(p)) return false;
        if (p->tok.kind == BG_TOK_LABEL)
            return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                                  "expected ',' between operands");
        if (p->tok.kind != BG_TOK_COMMA) return true;
        if (!bg_parse_advance(p)) return false;
    }
}

/* The computed type of node id against a ` : type` annotation. */
static bool check_annotation(bg_parser *p, uint32_t id, const bg_token *at,
                             braid_dtype dtype, int rank, const int64_t *dims) {
    const bg_node *n = bg_node_at(p->g, id);
    bool same = n->dtype == dtype && n->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = n->dims[i] == dims[i];
    if (same) return true;
    char want[200], got[200];
    bg_node decl = {.dtype = dtype, .rank = (uint8_t)rank};
    memcpy(decl.dims, dims, sizeof decl.dims);
    return bg_parse_error(p, at, BRAID_ERR_PARSE,
                          "%s declared %s but computes %s", bg_op(n->op)->name,
                          bg_type_str(&decl, want, sizeof want),
                          bg_type_str(n, got, sizeof got));
}

/* What a node statement says besides its label. */
typedef struct pnode {
    bg_token optok;                   /* the op name */
    braid_op op;                      /* the op */
    braid_dtype dtype;                /* source type (sources) */
    int rank;                         /* source rank */
    int64_t dims[BRAID_MAX_RANK];     /* source dims */
    uint32_t nops;                    /* operands in p->operands */
    bg_pattrs a;                      /* attributes */
    bool annotated;                   /* a ` : type` was given */
    bg_token ann_at;                  /* where */
    braid_dtype ann_dtype;            /* its dtype */
    int ann_rank;                     /* its rank */
    int64_t ann_dims[BRAID_MAX_RANK]; /* its dims */
    bool data;                        /* element data followed the type
                                         (constant; a variable's initial
                                         value) */
} pnode;

/* op [type [data] | operands] attrs [: type] end-of-line */
static bool parse_node_body(bg_parser *p, pnode *s) {
    const bg_op_info *info = bg_op(s->op);
    if (info->kind == BRAID_KIND_SOURCE) {
        if (!bg_parse_type(p, &s->dtype, &s->rank, s->dims)) return false;
        bool data = s->op == BRAID_OP_CONSTANT ||
                    (s->op == BRAID_OP_VARIABLE &&
                     (p->tok.kind == BG_TOK_LBRACK ||
                      p->tok.kind == BG_TOK_BASE64));
        if (data && !bg_parse_constant_data(p, s->dtype, s->rank, s->dims))
            return false;
        s->data = data;
    } else {
        if (!parse_operands(p, &s->nops)) return false;
        if (info->arity >= 0 && s->nops != (uint32_t)info->arity)
            return bg_parse_error(p, &s->optok, BRAID_ERR_PARSE,
                                  "%s takes %d operand%s, found %u", info->name,
                                  info->arity, info->arity == 1 ? "" : "s",
                                  (unsigned)s->nops);
    }
    if (!bg_parse_attrs(p, s->op, &s->a) ||
        !bg_parse_check_required(p, s->op, &s->optok, &s->a))
        return false;
    if (p->tok.kind == BG_TOK_COLON) {
        if (!bg_parse_advance(p)) return false;
        s->annotated = true;
        s->ann_at = p->tok;
        if (!bg_parse_type(p, &s->ann_dtype, &s->ann_rank, s->ann_dims))
            return false;
    }
    return expect_end(p);
}

/* Whether a label says something a number would not: not all digits (the
 * printer's canonical %0..%N are not names). */
static bool meaningful_label(const bg_token *label) {
    for (size_t i = 0; i < label->len; i++)
        if (label->text[i] < '0' || label->text[i] > '9') return true;
    return false;
}

/* Sets the name (non-input nodes) and device hint of node id. Without a
 * name attribute a non-input node is named after its label (%wq: "wq"), so
 * dumps, profiles, traces and DOT show the names the file used. */
static bool set_name_device(bg_parser *p, const pnode *s, uint32_t id,
                            const bg_token *label) {
    braid_tensor t = {id};
    const bg_pattrs *a = &s->a;
    if (s->op == BRAID_OP_VARIABLE) /* named when built, like an input */
        return !(a->seen & BG_ATTR_BIT(BG_ATTR_DEVICE)) ||
               braid_set_device(p->g, t, a->str[BG_ATTR_DEVICE]) == BRAID_OK ||
               bg_parse_prefix(p, &a->at[BG_ATTR_DEVICE]);
    if (s->op != BRAID_OP_INPUT && (a->seen & BG_ATTR_BIT(BG_ATTR_NAME)) &&
        braid_set_name(p->g, t, a->str[BG_ATTR_NAME]) != BRAID_OK)
        return bg_parse_prefix(p, &a->at[BG_ATTR_NAME]);
    if (s->op != BRAID_OP_INPUT && !(a->seen & BG_ATTR_BIT(BG_ATTR_NAME)) &&
        meaningful_label(label)) {
        char name[256];
        size_t len = label->len < sizeof name ? label->len : sizeof name - 1;
        memcpy(name, label->text, len);
        name[len] = '\0';
        if (braid_set_name(p->g, t, name) != BRAID_OK)
            return bg_parse_prefix(p, label);
    }
    if ((a->seen & BG_ATTR_BIT(BG_ATTR_DEVICE)) &&
        braid_set_device(p->g, t, a->str[BG_ATTR_DEVICE]) != BRAID_OK)
        return bg_parse_prefix(p, &a->at[BG_ATTR_DEVICE]);
    return true;
}

/* %label = op ... */
static bool parse_node(bg_parser *p) {
    bg_token label = p->tok;
    const bg_label *prev = NULL;
    char d[64];
    if (bg_labels_find(&p->labels, label.text, label.len, &prev))
        return bg_parse_error(p, &label, BRAID_ERR_PARSE,
                              "label %s is already defined on line %zu",
                              bg_parse_describe(&label, d, sizeof d),
                              prev->line);
    if (!bg_parse_advance(p) || !bg_parse_expect(p, BG_TOK_EQUALS, "'='"))
        return false;
    pnode s;
    memset(&s, 0, sizeof s);
    s.optok = p->tok;
    s.op = p->tok.kind == BG_TOK_IDENT ? bg_op_lookup(s.optok.text, s.optok.len)
                                       : BRAID_OP_COUNT_;
    if (p->tok.kind != BG_TOK_IDENT)
        return bg_parse_error(p, &s.optok, BRAID_ERR_PARSE,
                              "expected an op name, found %s",
                              bg_parse_describe(&s.optok, d, sizeof d));
    if (s.op == BRAID_OP_COUNT_) return unknown_op(p, &s.optok);
    if (!bg_parse_advance(p) || !parse_node_body(p, &s)) return false;
    bg_attrs attr;
    memset(&attr, 0, sizeof attr);
    const bg_node *x = s.nops ? bg_node_at(p->g, p->operands[0]) : NULL;
    if (!bg_parse_translate(p, s.op, &s.a, x, &attr, &s.dtype, &s.rank, s.dims))
        return false;
    if (bg_op(s.op)->kind == BRAID_KIND_COLLECTIVE &&
        !(s.a.seen & BG_ATTR_BIT(BG_ATTR_RANKS)))
        attr.start[0] = s.nops; /* a local group: one operand per rank */
    attr.data = s.data ? p->data : NULL;
    if (s.op == BRAID_OP_VARIABLE &&
        !bg_parse_variable_init(p, &s.a, &s.optok, s.data, &attr))
        return false;
    uint32_t id = bg_build(p->g, s.op, p->operands, s.nops, s.dtype, s.rank,
                           s.dims, &attr, s.a.str[BG_ATTR_NAME]);
    if (id == BG_NONE) {
        if (p->g->status == BRAID_OK) /* bg_build fails loudly; be safe */
            return bg_parse_error(p, &s.optok, BRAID_ERR_INTERNAL,
                                  "%s: the builder failed without a message",
                                  bg_op(s.op)->name);
        return bg_parse_prefix(p, &s.optok);
    }
    if (s.annotated && !check_annotation(p, id, &s.ann_at, s.ann_dtype,
                                         s.ann_rank, s.ann_dims))
        return false;
    if (!set_name_device(p, &s, id, &label)) return false;
    if (!bg_labels_insert(p, label.text, label.len, id, label.line))
        return bg_parse_prefix(p, &label);
    return true;
}

/* output "name" = %label */
static bool parse_output(bg_parser *p) {
    if (!bg_parse_advance(p)) return false;
    bg_token nt = p->tok;
    const char *name = NULL;
    if (!bg_parse_string(p, 0, &name) ||
        !bg_parse_expect(p, BG_TOK_EQUALS, "'='"))
        return false;
    bg_token lt = p->tok;
    const bg_label *l = NULL;
    char d[64];
    if (lt.kind != BG_TOK_LABEL)
        return bg_parse_error(p, &lt, BRAID_ERR_PARSE,
                              "expected a label such as %%y, found %s",
                              bg_parse_describe(&lt, d, sizeof d));
    if (!bg_labels_find(&p->labels, lt.text, lt.len, &l))
        return bg_parse_error(p, &lt, BRAID_ERR_PARSE, "undefined label %s",
                              bg_parse_describe(&lt, d, sizeof d));
    if (!bg_parse_advance(p) || !expect_end(p)) return false;
    if (braid_output(p->g, name, (braid_tensor){l->id}) != BRAID_OK)
        return bg_parse_prefix(p, &nt);
    return true;
}

/* braid-graph 1 */
static bool parse_header(bg_parser *p) {
    if (!bg_parse_skip_newlines(p)) return false;
    bg_token t = p->tok;
    char d[64];
    if (!bg_tok_is(&t, BG_TOK_IDENT, "braid-graph"))
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "expected the header 'braid-graph 1', found %s",
                              bg_parse_describe(&t, d, sizeof d));
    if (!bg_parse_advance(p)) return false;
    bg_token v = p->tok;
    uint64_t version = 0;
    if (v.kind != BG_TOK_NUMBER ||
        bg_text_parse_u64(v.text, v.len, &version) != BG_NUM_OK)
        return bg_parse_error(p, &v, BRAID_ERR_PARSE,
                              "expected the format version after "
                              "'braid-graph', found %s",
                              bg_parse_describe(&v, d, sizeof d));
    if (version != 1)
        return bg_parse_error(p, &v, BRAID_ERR_PARSE,
                              "unsupported format version %s (this braid "
                              "reads version 1)",
                              bg_parse_describe(&v, d, sizeof d));
    return bg_parse_advance(p) && expect_end(p);
}

static void parse_all(bg_parser *p) {
    if (!bg_parse_advance(p) || !parse_header(p)) return;
    for (;;) {
        if (!bg_parse_skip_newlines(p) || p->tok.kind == BG_TOK_EOF) return;
        bool ok;
        if (p->tok.kind == BG_TOK_LABEL) {
            ok = parse_node(p);
        } else if (bg_tok_is(&p->tok, BG_TOK_IDENT, "output")) {
            ok = parse_output(p);
        } else {
            char d[64];
            ok = bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                                "expected a node ('%%label = op ...') or "
                                "'output', found %s",
                                bg_parse_describe(&p->tok, d, sizeof d));
        }
        if (!ok) return;
    }
}

/* ---- entry points -------------------------------------------------------- */

/* Parses text into the empty graph g and frees the parser's scratch. */
static void parse_into(braid_graph *g, const char *text, size_t len,
                       const char *filename) {
    bg_parser p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.file = filename ? filename : "<input>";
    bg_lex_init(&p.lx, text, len);
    /* an address-derived seed: label collisions cannot be precomputed */
    p.labels.seed =
        (uint64_t)(uintptr_t)&p * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)len;
    parse_all(&p);
    bg_labels_free(&p);
    bg_free(g, p.operands, p.operands_cap * sizeof *p.operands);
    bg_free(g, p.data, p.data_cap);
    for (int i = 0; i < 2; i++)
        bg_free(g, p.strs[i], p.str_sizes[i]);
}

braid_graph *braid_graph_parse(const char *text, size_t len,
                               const char *filename,
                               const braid_graph_options *opts) {
    braid_graph *g = braid_graph_new(opts);
    if (g == NULL) return NULL;
    if (text == NULL && len > 0) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "braid_graph_parse: text is NULL");
        return g;
    }
    parse_into(g, text ? text : "", len, filename);
    return g;
}

/* Reads all of f into a buffer from g's allocator (*cap bytes). */
static char *read_all(braid_graph *g, FILE *f, const char *path, size_t *len,
                      size_t *cap) {
    char *buf = NULL;
    *len = *cap = 0;
    for (;;) {
        if (*len == *cap) {
            size_t ncap = *cap ? 2 * *cap : 65536;
            char *nb = NULL;
            if (ncap > *cap)
                nb = bg_realloc(g, buf, *cap, ncap);
            else
                bg_fail(g, BRAID_ERR_OUT_OF_MEMORY, "file too large");
            if (nb == NULL) {
                char pre[BG_ERROR_MAX];
                bg_free(g, buf, *cap);
                snprintf(pre, sizeof pre, "%s: reading the file: ", path);
                prefix_error(g, pre);
                return NULL;
            }
            buf = nb;
            *cap = ncap;
        }
        size_t got = fread(buf + *len, 1, *cap - *len, f);
        *len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int err = errno;
        bg_free(g, buf, *cap);
        bg_fail(g, BRAID_ERR_IO, "%s: read error: %s", path, strerror(err));
        return NULL;
    }
    return buf;
}

braid_graph *braid_graph_load(const char *path,
                              const braid_graph_options *opts) {
    braid_graph *g = braid_graph_new(opts);
    if (g == NULL) return NULL;
    if (path == NULL) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "braid_graph_load: path is NULL");
        return g;
    }
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        bg_fail(g, BRAID_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return g;
    }
    size_t len, cap;
    char *buf = read_all(g, f, path, &len, &cap);
    fclose(f);
    if (buf != NULL) {
        parse_into(g, buf, len, path);
        bg_free(g, buf, cap);
    }
    return g;
}
