/* graph/text_parse_values.c — the value-level pieces of the .graph parser:
 * the label map, types, integer lists, strings and constant data.
 *
 * Every list is bounded before anything is allocated for it: dims and
 * attribute lists hold at most BRAID_MAX_RANK items, constant data at most
 * the declared element count (checked value by value, so a bogus huge type
 * never turns into a huge allocation). */
#include "graph/text_parse.h"

#include <math.h>
#include <string.h>

/* ---- label map ----------------------------------------------------------- */

static uint64_t hash_label(const char *s, size_t n, uint64_t seed) {
    uint64_t h = seed ^ UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(0x100000001b3);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find_slot(const bg_label_map *m, const char *key, size_t len) {
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash_label(key, len, m->seed) & mask;
    while (m->slots[i].key != NULL &&
           !(m->slots[i].len == len && memcmp(m->slots[i].key, key, len) == 0))
        i = (i + 1) & mask;
    return i;
}

bool bg_labels_find(const bg_label_map *m, const char *key, size_t len,
                    const bg_label **out) {
    if (m->cap == 0) return false;
    const bg_label *s = &m->slots[find_slot(m, key, len)];
    if (s->key == NULL) return false;
    *out = s;
    return true;
}

/* Doubles the table (load stays ≤ 1/2, so probes stay short). */
static bool grow_labels(bg_parser *p) {
    bg_label_map *m = &p->labels;
    size_t cap = m->cap ? m->cap * 2 : 64;
    if (cap > SIZE_MAX / sizeof(bg_label)) return false;
    bg_label *slots = bg_alloc(p->g, cap * sizeof *slots);
    if (slots == NULL) return false;
    memset(slots, 0, cap * sizeof *slots);
    bg_label_map bigger = {slots, cap, m->count, m->seed};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != NULL)
            slots[find_slot(&bigger, m->slots[i].key, m->slots[i].len)] =
                m->slots[i];
    bg_free(p->g, m->slots, m->cap * sizeof *m->slots);
    *m = bigger;
    return true;
}

bool bg_labels_insert(bg_parser *p, const char *key, size_t len, uint32_t id,
                      size_t line) {
    bg_label_map *m = &p->labels;
    if ((m->count + 1) * 2 > m->cap && !grow_labels(p)) return false;
    bg_label *s = &m->slots[find_slot(m, key, len)];
    s->key = key;
    s->len = len;
    s->id = id;
    s->line = line;
    m->count++;
    return true;
}

void bg_labels_free(bg_parser *p) {
    bg_free(p->g, p->labels.slots, p->labels.cap * sizeof *p->labels.slots);
    p->labels.slots = NULL;
    p->labels.cap = p->labels.count = 0;
}

/* ---- small helpers ------------------------------------------------------- */

/* Message text for a failed number parse. */
static bool number_error(bg_parser *p, const bg_token *t, bg_num_status st,
                         const char *what) {
    char d[64];
    bg_parse_describe(t, d, sizeof d);
    if (st == BG_NUM_RANGE)
        return bg_parse_error(p, t, BRAID_ERR_PARSE, "%s %s is out of range",
                              what, d);
    if (st == BG_NUM_TOO_LONG)
        return bg_parse_error(p, t, BRAID_ERR_PARSE,
                              "%s is longer than %d characters", what,
                              BG_TEXT_NUMBER_MAX);
    return bg_parse_error(p, t, BRAID_ERR_PARSE, "bad number %s for %s", d,
                          what);
}

/* An integer token (consumed). */
static bool parse_i64(bg_parser *p, const char *what, int64_t *out) {
    bg_token t = p->tok;
    if (t.kind != BG_TOK_NUMBER) {
        char d[64];
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "expected an integer for %s, found %s", what,
                              bg_parse_describe(&t, d, sizeof d));
    }
    bg_num_status st = bg_text_parse_i64(t.text, t.len, out);
    if (st != BG_NUM_OK) return number_error(p, &t, st, what);
    return bg_parse_advance(p);
}

bool bg_parse_f64_value(bg_parser *p, const char *what, double *out) {
    bg_token t = p->tok;
    bg_num_status st = BG_NUM_SYNTAX;
    if (t.kind == BG_TOK_NUMBER || t.kind == BG_TOK_IDENT)
        st = bg_text_parse_f64(t.text, t.len, out);
    if (st != BG_NUM_OK) return number_error(p, &t, st, what);
    return bg_parse_advance(p);
}

/* ---- lists and types ----------------------------------------------------- */

bool bg_parse_int_list(bg_parser *p, const char *what, int *n, int64_t *v) {
    *n = 0;
    if (!bg_parse_expect(p, BG_TOK_LBRACK, "'['") || !bg_parse_skip_newlines(p))
        return false;
    while (p->tok.kind != BG_TOK_RBRACK) {
        if (*n > 0 && (!bg_parse_expect(p, BG_TOK_COMMA, "',' or ']'") ||
                       !bg_parse_skip_newlines(p)))
            return false;
        if (*n == BRAID_MAX_RANK)
            return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                                  "%s has more than %d entries", what,
                                  BRAID_MAX_RANK);
        if (!parse_i64(p, what, &v[*n]) || !bg_parse_skip_newlines(p))
            return false;
        (*n)++;
    }
    return bg_parse_advance(p);
}

bool bg_parse_type(bg_parser *p, braid_dtype *dtype, int *rank, int64_t *dims) {
    bg_token t = p->tok;
    char d[64];
    if (t.kind != BG_TOK_IDENT)
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "expected a type such as f32[2,3], found %s",
                              bg_parse_describe(&t, d, sizeof d));
    *dtype = bg_dtype_lookup(t.text, t.len);
    if (*dtype == BRAID_DTYPE_COUNT_)
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "unknown dtype %s (expected f32, f16, bf16, "
                              "f64, i32, i64 or bool)",
                              bg_parse_describe(&t, d, sizeof d));
    if (!bg_parse_advance(p)) return false;
    bg_token list = p->tok;
    if (!bg_parse_int_list(p, "a shape", rank, dims)) return false;
    for (int i = 0; i < *rank; i++)
        if (dims[i] < 0)
            return bg_parse_error(p, &list, BRAID_ERR_PARSE,
                                  "dimension %d of the type is negative "
                                  "(%lld)",
                                  i, (long long)dims[i]);
    for (int i = *rank; i < BRAID_MAX_RANK; i++)
        dims[i] = 0;
    return true;
}

/* ---- strings ------------------------------------------------------------- */

bool bg_parse_string(bg_parser *p, int slot, const char **out) {
    bg_token t = p->tok;
    if (t.kind != BG_TOK_STRING) {
        char d[64];
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "expected a quoted string, found %s",
                              bg_parse_describe(&t, d, sizeof d));
    }
    bg_free(p->g, p->strs[slot], p->str_sizes[slot]);
    p->strs[slot] = NULL;
    p->str_sizes[slot] = 0;
    char *s = bg_alloc(p->g, t.len + 1);
    if (s == NULL) return bg_parse_prefix(p, &t);
    p->strs[slot] = s;
    p->str_sizes[slot] = t.len + 1;
    size_t n = bg_text_unescape(t.text, t.len, s);
    (void)n;
    *out = s;
    return bg_parse_advance(p);
}

/* ---- constant data ------------------------------------------------------- */

/* Ensures p->data holds at least need bytes (need ≤ the declared size). */
static bool reserve_data(bg_parser *p, size_t need, size_t limit,
                         const bg_token *t) {
    if (need <= p->data_cap) return true;
    size_t cap = p->data_cap ? p->data_cap : 64;
    while (cap < need)
        cap = cap > limit / 2 ? limit : cap * 2;
    unsigned char *d = bg_realloc(p->g, p->data, p->data_cap, cap);
    if (d == NULL) return bg_parse_prefix(p, t);
    p->data = d;
    p->data_cap = cap;
    return true;
}

/* One element of a value list into out (dtype size bytes). */
static bool parse_element(bg_parser *p, braid_dtype dtype, unsigned char *out) {
    bg_token t = p->tok;
    const char *name = braid_dtype_name(dtype);
    char d[64];
    bg_num_status st = BG_NUM_SYNTAX;
    if (dtype == BRAID_BOOL) {
        bool yes = t.len == 4 && memcmp(t.text, "true", 4) == 0;
        bool no = t.len == 5 && memcmp(t.text, "false", 5) == 0;
        if (t.len == 1 && (t.text[0] == '0' || t.text[0] == '1'))
            yes = t.text[0] == '1', no = !yes;
        if (t.kind == BG_TOK_STRING || (!yes && !no))
            return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                                  "expected true or false for a bool value, "
                                  "found %s",
                                  bg_parse_describe(&t, d, sizeof d));
        *out = yes;
        return bg_parse_advance(p);
    }
    if (t.kind != BG_TOK_NUMBER && t.kind != BG_TOK_IDENT)
        return number_error(p, &t, BG_NUM_SYNTAX, name);
    if (bg_dtype_is_int(dtype)) {
        int64_t v = 0;
        st = bg_text_parse_i64(t.text, t.len, &v);
        if (st == BG_NUM_OK && !bg_int_fits(dtype, v)) st = BG_NUM_RANGE;
        if (st != BG_NUM_OK) v = 0;
        bg_store_int(dtype, out, 0, v);
    } else if (dtype == BRAID_F64) {
        double v = 0;
        st = bg_text_parse_f64(t.text, t.len, &v);
        memcpy(out, &v, 8);
    } else {
        float f = 0;
        st = bg_text_parse_f32(t.text, t.len, &f);
        if (dtype == BRAID_F32) {
            memcpy(out, &f, 4);
        } else {
            uint16_t h =
                dtype == BRAID_F16 ? bg_f32_to_f16(f) : bg_f32_to_bf16(f);
            /* a finite value that rounds to inf does not fit the dtype */
            uint16_t inf = dtype == BRAID_F16 ? 0x7c00 : 0x7f80;
            if (st == BG_NUM_OK && isfinite(f) && (h & 0x7fff) == inf)
                st = BG_NUM_RANGE;
            memcpy(out, &h, 2);
        }
    }
    if (st != BG_NUM_OK) return number_error(p, &t, st, name);
    return bg_parse_advance(p);
}

/* "[v, v, ...]" with exactly numel values. */
static bool parse_value_list(bg_parser *p, braid_dtype dtype, int64_t numel,
                             size_t es, const char *type) {
    bg_token open = p->tok;
    if (!bg_parse_advance(p) || !bg_parse_skip_newlines(p)) return false;
    int64_t count = 0;
    size_t limit = (size_t)numel * es;
    while (p->tok.kind != BG_TOK_RBRACK) {
        if (count > 0 && (!bg_parse_expect(p, BG_TOK_COMMA, "',' or ']'") ||
                          !bg_parse_skip_newlines(p)))
            return false;
        if (count == numel)
            return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                                  "too many values: %s holds %lld", type,
                                  (long long)numel);
        bg_token at = p->tok;
        if (!reserve_data(p, (size_t)(count + 1) * es, limit, &at) ||
            !parse_element(p, dtype, p->data + (size_t)count * es) ||
            !bg_parse_skip_newlines(p))
            return false;
        count++;
    }
    if (count != numel)
        return bg_parse_error(p, &open, BRAID_ERR_PARSE,
                              "constant %s needs %lld values, found %lld", type,
                              (long long)numel, (long long)count);
    return bg_parse_advance(p);
}

/* base64"..." holding exactly numel × es bytes. */
static bool parse_base64(bg_parser *p, size_t bytes, const char *type) {
    bg_token t = p->tok;
    size_t have = bg_base64_decoded_len(t.text, t.len);
    if (have == SIZE_MAX)
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "bad base64: length %zu is not a multiple of 4",
                              t.len);
    if (have != bytes)
        return bg_parse_error(p, &t, BRAID_ERR_PARSE,
                              "base64 data holds %zu bytes but %s needs %zu",
                              have, type, bytes);
    if (!reserve_data(p, bytes, bytes, &t)) return false;
    size_t bad = 0;
    if (!bg_base64_decode(t.text, t.len, p->data, &bad)) {
        bg_token at = t;
        at.col += 7 + bad; /* past base64" */
        return bg_parse_error(p, &at, BRAID_ERR_PARSE,
                              "bad base64 character at offset %zu", bad);
    }
    return bg_parse_advance(p);
}

bool bg_parse_constant_data(bg_parser *p, braid_dtype dtype, int rank,
                            const int64_t *dims) {
    size_t es = braid_dtype_size(dtype);
    int64_t numel = 0;
    char type[96];
    bg_node tmp = {.dtype = dtype, .rank = (uint8_t)rank};
    memcpy(tmp.dims, dims, sizeof tmp.dims);
    bg_type_str(&tmp, type, sizeof type);
    if (!bg_shape_fits(rank, dims, es, &numel))
        return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                              "constant %s is larger than %lld bytes", type,
                              (long long)BG_MAX_BYTES);
    if (p->tok.kind == BG_TOK_LBRACK)
        return parse_value_list(p, dtype, numel, es, type);
    if (p->tok.kind == BG_TOK_BASE64)
        return parse_base64(p, (size_t)numel * es, type);
    char d[64];
    return bg_parse_error(p, &p->tok, BRAID_ERR_PARSE,
                          "expected the constant's values ([...] or "
                          "base64\"...\"), found %s",
                          bg_parse_describe(&p->tok, d, sizeof d));
}
