/* tests/support/json.c — the strict JSON parser of json.h: recursive
 * descent over the text, one value per call. */
#include "tests/support/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 256

/* The parser's position and first error. */
typedef struct json_in {
    const unsigned char *s; /* the text */
    size_t len;             /* its bytes */
    size_t pos;             /* next byte */
    char *err;              /* message buffer */
    size_t errsize;         /* its size */
    bool failed;            /* an error was recorded */
} json_in;

static bool fail(json_in *in, const char *why) {
    if (!in->failed && in->err && in->errsize)
        snprintf(in->err, in->errsize, "offset %zu: %s", in->pos, why);
    in->failed = true;
    return false;
}

static void skip_ws(json_in *in) {
    while (in->pos < in->len &&
           (in->s[in->pos] == ' ' || in->s[in->pos] == '\t' ||
            in->s[in->pos] == '\n' || in->s[in->pos] == '\r'))
        in->pos++;
}

static bool literal(json_in *in, const char *word) {
    size_t n = strlen(word);
    if (in->len - in->pos < n || memcmp(in->s + in->pos, word, n) != 0)
        return fail(in, "unexpected character");
    in->pos += n;
    return true;
}

/* ---- numbers ----------------------------------------------------------- */

static bool digits(json_in *in) {
    size_t start = in->pos;
    while (in->pos < in->len && in->s[in->pos] >= '0' && in->s[in->pos] <= '9')
        in->pos++;
    return in->pos > start || fail(in, "expected a digit");
}

static bool number(json_in *in, ts_json *v) {
    size_t start = in->pos;
    if (in->s[in->pos] == '-') in->pos++;
    if (in->pos < in->len && in->s[in->pos] == '0') {
        in->pos++;
        if (in->pos < in->len && in->s[in->pos] >= '0' && in->s[in->pos] <= '9')
            return fail(in, "leading zero in a number");
    } else if (!digits(in)) {
        return false;
    }
    if (in->pos < in->len && in->s[in->pos] == '.') {
        in->pos++;
        if (!digits(in)) return false;
    }
    if (in->pos < in->len && (in->s[in->pos] == 'e' || in->s[in->pos] == 'E')) {
        in->pos++;
        if (in->pos < in->len && (in->s[in->pos] == '+' || in->s[in->pos] == '-'))
            in->pos++;
        if (!digits(in)) return false;
    }
    char buf[64];
    size_t n = in->pos - start;
    if (n >= sizeof buf) n = sizeof buf - 1; /* value only roughly needed */
    memcpy(buf, in->s + start, n);
    buf[n] = '\0';
    v->kind = TS_JSON_NUMBER;
    v->number = strtod(buf, NULL);
    return true;
}

/* ---- strings ----------------------------------------------------------- */

/* Growable output of a decoded string. */
typedef struct json_buf {
    char *p;     /* bytes */
    size_t n;    /* used */
    size_t cap;  /* allocated */
} json_buf;

static bool put(json_in *in, json_buf *b, const void *bytes, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 32) + n;
        char *q = realloc(b->p, cap);
        if (!q) return fail(in, "out of memory");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, bytes, n);
    b->n += n;
    b->p[b->n] = '\0';
    return true;
}

static bool put_code(json_in *in, json_buf *b, uint32_t cp) {
    unsigned char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xF0 | cp >> 18);
        u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return put(in, b, u, n);
}

static bool hex4(json_in *in, uint32_t *out) {
    if (in->len - in->pos < 4) return fail(in, "truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = in->s[in->pos++];
        uint32_t d = c >= '0' && c <= '9'   ? c - '0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : 99;
        if (d == 99) return fail(in, "bad hex digit in \\u escape");
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

static bool escape(json_in *in, json_buf *b) {
    if (in->pos >= in->len) return fail(in, "truncated escape");
    unsigned c = in->s[in->pos++];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k = c ? strchr(from, (int)c) : NULL;
    if (k) return put(in, b, &to[k - from], 1);
    if (c != 'u') return fail(in, "unknown escape");
    uint32_t cp = 0, lo = 0;
    if (!hex4(in, &cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(in, "lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (in->len - in->pos < 2 || in->s[in->pos] != '\\' ||
            in->s[in->pos + 1] != 'u')
            return fail(in, "high surrogate without a low one");
        in->pos += 2;
        if (!hex4(in, &lo)) return false;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(in, "high surrogate without a low one");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return put_code(in, b, cp);
}

/* Bytes of the valid UTF-8 sequence at the position, or 0. */
static size_t utf8_seq(const json_in *in) {
    const unsigned char *s = in->s + in->pos;
    size_t left = in->len - in->pos;
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
             : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || n > left) return 0;
    uint32_t cp = n == 1 ? c : c & (0x7Fu >> n);
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3Fu);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static bool string(json_in *in, char **out) {
    json_buf b = {NULL, 0, 0};
    in->pos++; /* the opening quote */
    if (!put(in, &b, "", 0)) return false;
    for (;;) {
        if (in->pos >= in->len) {
            free(b.p);
            return fail(in, "unterminated string");
        }
        unsigned c = in->s[in->pos];
        bool ok = true;
        if (c == '"') {
            in->pos++;
            *out = b.p;
            return true;
        } else if (c == '\\') {
            in->pos++;
            ok = escape(in, &b);
        } else if (c < 0x20) {
            ok = fail(in, "raw control character in a string");
        } else {
            size_t n = utf8_seq(in);
            ok = n ? put(in, &b, in->s + in->pos, n)
                   : fail(in, "invalid UTF-8 in a string");
            in->pos += n;
        }
        if (!ok) {
            free(b.p);
            return false;
        }
    }
}

/* ---- values ------------------------------------------------------------ */

static bool value(json_in *in, ts_json *v, int depth);

/* Appends an empty item (and key slot) to v. */
static ts_json *add_item(json_in *in, ts_json *v, size_t *cap) {
    if (v->n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        ts_json *items = realloc(v->items, c * sizeof *items);
        if (items) v->items = items;
        if (v->kind == TS_JSON_OBJECT && items) {
            char **keys = realloc(v->keys, c * sizeof *keys);
            if (!keys) items = NULL;
            else v->keys = keys;
        }
        if (!items) {
            fail(in, "out of memory");
            return NULL;
        }
        *cap = c;
    }
    ts_json *it = &v->items[v->n];
    memset(it, 0, sizeof *it);
    if (v->kind == TS_JSON_OBJECT) v->keys[v->n] = NULL;
    v->n++;
    return it;
}

static bool members(json_in *in, ts_json *v, int depth, char close) {
    size_t cap = 0;
    in->pos++; /* the opening bracket */
    skip_ws(in);
    if (in->pos < in->len && in->s[in->pos] == close) {
        in->pos++;
        return true;
    }
    for (;;) {
        ts_json *it = add_item(in, v, &cap);
        if (!it) return false;
        if (v->kind == TS_JSON_OBJECT) {
            skip_ws(in);
            if (in->pos >= in->len || in->s[in->pos] != '"')
                return fail(in, "expected a string key");
            if (!string(in, &v->keys[v->n - 1])) return false;
            skip_ws(in);
            if (in->pos >= in->len || in->s[in->pos] != ':')
                return fail(in, "expected ':'");
            in->pos++;
        }
        if (!value(in, it, depth + 1)) return false;
        skip_ws(in);
        if (in->pos >= in->len) return fail(in, "unterminated array or object");
        if (in->s[in->pos] == close) {
            in->pos++;
            return true;
        }
        if (in->s[in->pos] != ',') return fail(in, "expected ',' or a close");
        in->pos++;
    }
}

static bool value(json_in *in, ts_json *v, int depth) {
    if (depth > JSON_MAX_DEPTH) return fail(in, "nested too deeply");
    skip_ws(in);
    if (in->pos >= in->len) return fail(in, "expected a value");
    unsigned c = in->s[in->pos];
    switch (c) {
    case '{':
        v->kind = TS_JSON_OBJECT;
        return members(in, v, depth, '}');
    case '[':
        v->kind = TS_JSON_ARRAY;
        return members(in, v, depth, ']');
    case '"':
        v->kind = TS_JSON_STRING;
        return string(in, &v->string);
    case 't':
        v->kind = TS_JSON_BOOL;
        v->boolean = true;
        return literal(in, "true");
    case 'f':
        v->kind = TS_JSON_BOOL;
        return literal(in, "false");
    case 'n':
        v->kind = TS_JSON_NULL;
        return literal(in, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return number(in, v);
        return fail(in, "unexpected character");
    }
}

static void clear(ts_json *v) {
    for (size_t i = 0; i < v->n; i++) {
        clear(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

ts_json *ts_json_parse(const char *text, size_t len, char *err,
                       size_t errsize) {
    json_in in = {(const unsigned char *)text, len, 0, err, errsize, false};
    if (err && errsize) err[0] = '\0';
    ts_json *v = calloc(1, sizeof *v);
    if (!v) {
        fail(&in, "out of memory");
        return NULL;
    }
    bool ok = text && value(&in, v, 0);
    if (!text) fail(&in, "no text");
    if (ok) {
        skip_ws(&in);
        if (in.pos != in.len) ok = fail(&in, "text after the value");
    }
    if (!ok) {
        ts_json_free(v);
        return NULL;
    }
    return v;
}

void ts_json_free(ts_json *v) {
    if (!v) return;
    clear(v);
    free(v);
}

const ts_json *ts_json_get(const ts_json *v, const char *key) {
    if (!v || v->kind != TS_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (v->keys[i] && strcmp(v->keys[i], key) == 0) return &v->items[i];
    return NULL;
}
