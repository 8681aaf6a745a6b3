/* runtime/npy/npy.c — NumPy .npy reading and writing (see npy.h).
 *
 * File layout: "\x93NUMPY", major, minor, header length (uint16 LE in 1.0,
 * uint32 LE in 2.0 and 3.0), then the header: a Python dict literal
 * {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded with spaces and
 * ending in '\n', then the raw data. The header is parsed by a small
 * recursive-descent reader of exactly that dict, never evaluated. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/npy/npy.h"

#include "graph/graph.h"
#include "graph/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Bytes before the header text: magic, version, length field. */
#define NPY_PREAMBLE_V1 10u
#define NPY_PREAMBLE_V2 12u
/* NumPy aligns the start of the data to this many bytes. */
#define NPY_ALIGN 64u
/* Longest descr string worth reading ("<f4" is 3). */
#define NPY_DESCR_MAX 32

/* Formats a message, prefixes the file name and records it for
 * braid_last_error(). Returns s. */
static braid_status npy_fail(const char *file, braid_status s, const char *fmt,
                             ...) __attribute__((format(printf, 3, 4)));

static braid_status npy_fail(const char *file, braid_status s, const char *fmt,
                             ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bg_set_last_error(s, "%s: %s", file ? file : "<npy>", msg);
}

/* The raw data are copied as they lie in memory, which is the file's
 * little-endian order only on a little-endian host. */
static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

const char *br_npy_descr(braid_dtype dtype) {
    switch (dtype) {
    case BRAID_F32:
        return "<f4";
    case BRAID_F16:
        return "<f2";
    case BRAID_BF16:
        return "|V2";
    case BRAID_F64:
        return "<f8";
    case BRAID_I32:
        return "<i4";
    case BRAID_BOOL:
        return "|b1";
    case BRAID_I64:
        return "<i8";
    default:
        return NULL;
    }
}

void br_npy_array_free(br_npy_array *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- header parsing ------------------------------------------------------ */

/* Cursor over the header text. */
typedef struct npy_parser {
    const char *s;    /* header text (not NUL-terminated) */
    size_t n;         /* its length */
    size_t i;         /* current position */
    const char *file; /* for messages */
} npy_parser;

/* What the header says. */
typedef struct npy_header {
    char descr[NPY_DESCR_MAX + 1]; /* descr string, NUL-terminated */
    bool fortran;                  /* fortran_order */
    int rank;                      /* entries in dims */
    int64_t dims[BRAID_MAX_RANK];  /* shape */
    unsigned seen;                 /* bit per key found (duplicates) */
} npy_header;

enum { KEY_DESCR = 1u, KEY_FORTRAN = 2u, KEY_SHAPE = 4u };

static braid_status hp_fail(const npy_parser *p, const char *what) {
    return npy_fail(p->file, BRAID_ERR_PARSE,
                    "malformed .npy header: %s at offset %zu of the header",
                    what, p->i);
}

static void hp_skip_ws(npy_parser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
                           p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

/* Skips white space, then consumes c if it is next. */
static bool hp_accept(npy_parser *p, char c) {
    hp_skip_ws(p);
    if (p->i < p->n && p->s[p->i] == c) {
        p->i++;
        return true;
    }
    return false;
}

static bool hp_accept_word(npy_parser *p, const char *w) {
    size_t len = strlen(w);
    hp_skip_ws(p);
    if (p->n - p->i >= len && memcmp(p->s + p->i, w, len) == 0) {
        p->i += len;
        return true;
    }
    return false;
}

/* A Python string literal in single or double quotes, without escapes
 * (nothing braid accepts needs one) into out, when shorter than cap. */
static braid_status hp_string(npy_parser *p, char *out, size_t cap) {
    hp_skip_ws(p);
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"'))
        return hp_fail(p, "expected a quoted string");
    char q = p->s[p->i++];
    size_t len = 0;
    while (p->i < p->n && p->s[p->i] != q) {
        char c = p->s[p->i];
        /* the header's closing newline: the string never ended */
        if (c == '\n') return hp_fail(p, "unterminated string");
        if (c == '\\' || (unsigned char)c < 0x20)
            return hp_fail(p, "unsupported character in a string");
        if (len + 1 < cap) out[len] = c;
        len++;
        p->i++;
    }
    if (p->i >= p->n) return hp_fail(p, "unterminated string");
    if (len >= cap) return hp_fail(p, "string too long");
    p->i++;
    out[len] = '\0';
    return BRAID_OK;
}

/* A non-negative Python integer (an 'L' suffix, written by Python 2, is
 * accepted). Rejects values that do not fit in int64. */
static braid_status hp_int(npy_parser *p, int64_t *v) {
    hp_skip_ws(p);
    if (p->i < p->n && p->s[p->i] == '-')
        return hp_fail(p, "negative dimension in shape");
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
        return hp_fail(p, "expected an integer in shape");
    int64_t x = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        int d = p->s[p->i] - '0';
        if (x > (INT64_MAX - d) / 10) return hp_fail(p, "dimension too large");
        x = x * 10 + d;
        p->i++;
    }
    if (p->i < p->n && p->s[p->i] == 'L') p->i++;
    *v = x;
    return BRAID_OK;
}

/* A Python tuple of integers: "()", "(3,)", "(2, 3)", "(2, 3,)". A single
 * element needs its comma, as in Python ("(3)" is an int, not a tuple). */
static braid_status hp_shape(npy_parser *p, npy_header *h) {
    if (!hp_accept(p, '(')) return hp_fail(p, "shape must be a tuple");
    h->rank = 0;
    bool comma = false;
    while (!hp_accept(p, ')')) {
        if (h->rank > 0 && !comma)
            return hp_fail(p, "expected ',' or ')' in shape");
        if (h->rank == BRAID_MAX_RANK)
            return npy_fail(p->file, BRAID_ERR_UNSUPPORTED,
                            "shape has more than %d dimensions (braid's "
                            "maximum rank)",
                            BRAID_MAX_RANK);
        braid_status s = hp_int(p, &h->dims[h->rank]);
        if (s != BRAID_OK) return s;
        h->rank++;
        comma = hp_accept(p, ',');
    }
    if (h->rank == 1 && !comma)
        return hp_fail(p, "a one-element shape tuple needs a trailing comma");
    return BRAID_OK;
}

/* One "key: value" entry of the dict. */
static braid_status hp_entry(npy_parser *p, npy_header *h) {
    char key[32];
    braid_status s = hp_string(p, key, sizeof key);
    if (s != BRAID_OK) return s;
    if (!hp_accept(p, ':')) return hp_fail(p, "expected ':' after a key");
    unsigned bit = strcmp(key, "descr") == 0           ? KEY_DESCR
                   : strcmp(key, "fortran_order") == 0 ? KEY_FORTRAN
                   : strcmp(key, "shape") == 0         ? KEY_SHAPE
                                                       : 0;
    if (bit == 0)
        return npy_fail(p->file, BRAID_ERR_PARSE,
                        "malformed .npy header: unexpected key '%s'", key);
    if (h->seen & bit)
        return npy_fail(p->file, BRAID_ERR_PARSE,
                        "malformed .npy header: duplicate key '%s'", key);
    h->seen |= bit;
    if (bit == KEY_SHAPE) return hp_shape(p, h);
    if (bit == KEY_FORTRAN) {
        if (hp_accept_word(p, "True"))
            h->fortran = true;
        else if (hp_accept_word(p, "False"))
            h->fortran = false;
        else
            return hp_fail(p, "fortran_order must be True or False");
        return BRAID_OK;
    }
    hp_skip_ws(p);
    if (p->i < p->n && p->s[p->i] == '[')
        return npy_fail(p->file, BRAID_ERR_UNSUPPORTED,
                        "structured (record) arrays are not supported");
    return hp_string(p, h->descr, sizeof h->descr);
}

/* The whole dict; entries in any order, a trailing comma allowed, only
 * white space after the closing brace. */
static braid_status hp_dict(npy_parser *p, npy_header *h) {
    if (!hp_accept(p, '{')) return hp_fail(p, "expected '{'");
    bool comma = true;
    while (!hp_accept(p, '}')) {
        if (!comma) return hp_fail(p, "expected ',' or '}'");
        braid_status s = hp_entry(p, h);
        if (s != BRAID_OK) return s;
        comma = hp_accept(p, ',');
    }
    hp_skip_ws(p);
    if (p->i != p->n) return hp_fail(p, "unexpected text after '}'");
    if (h->seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
        return npy_fail(p->file, BRAID_ERR_PARSE,
                        "malformed .npy header: missing key '%s'",
                        !(h->seen & KEY_DESCR)     ? "descr"
                        : !(h->seen & KEY_FORTRAN) ? "fortran_order"
                                                   : "shape");
    return BRAID_OK;
}

/* Maps a descr to a braid dtype; expect decides whether void 2-byte data is
 * bf16. */
static braid_status npy_dtype(const char *file, const char *descr,
                              braid_dtype expect, braid_dtype *out) {
    char order = descr[0];
    const char *code = descr;
    if (order == '<' || order == '>' || order == '=' || order == '|')
        code++;
    else
        order = '=';
    if (code[0] == 'O')
        return npy_fail(file, BRAID_ERR_UNSUPPORTED,
                        "object arrays ('%s') are not supported", descr);
    if (order == '>')
        return npy_fail(file, BRAID_ERR_UNSUPPORTED,
                        "big-endian data ('%s') is not supported; save it "
                        "little-endian (e.g. a.astype('<%s'))",
                        descr, code);
    bool one_byte_order = order == '|' || order == '<' || order == '=';
    if (strcmp(code, "V2") == 0 && one_byte_order) {
        if (expect != BRAID_BF16)
            return npy_fail(file, BRAID_ERR_DTYPE,
                            "'%s' holds raw 2-byte values, which braid reads "
                            "only as bf16 (expected here: %s)",
                            descr,
                            expect == BRAID_DTYPE_COUNT_
                                ? "any dtype"
                                : braid_dtype_name(expect));
        *out = BRAID_BF16;
        return BRAID_OK;
    }
    if (strcmp(code, "b1") == 0 && one_byte_order) {
        *out = BRAID_BOOL;
        return BRAID_OK;
    }
    static const struct {
        const char *code;
        braid_dtype dtype;
    } table[] = {{"f4", BRAID_F32},
                 {"f2", BRAID_F16},
                 {"f8", BRAID_F64},
                 {"i4", BRAID_I32},
                 {"i8", BRAID_I64}};
    for (size_t k = 0; order != '|' && k < sizeof table / sizeof table[0];
         k++) {
        if (strcmp(code, table[k].code) == 0) {
            *out = table[k].dtype;
            return BRAID_OK;
        }
    }
    return npy_fail(file, BRAID_ERR_UNSUPPORTED,
                    "unsupported dtype '%s' (braid reads <f4, <f2, <f8, <i4, "
                    "<i8, |b1, and |V2 as bf16)",
                    descr);
}

/* numel × size of the array, under the graph's size rule (bg_shape_fits),
 * so every array a graph may hold can be read and no other. */
static braid_status npy_nbytes(const char *file, const npy_header *h,
                               braid_dtype dtype, size_t *bytes) {
    size_t size = braid_dtype_size(dtype);
    for (int k = 0; k < h->rank; k++)
        if (h->dims[k] > BG_MAX_BYTES)
            return npy_fail(file, BRAID_ERR_SHAPE,
                            "dimension %d is too large (%lld)", k,
                            (long long)h->dims[k]);
    int64_t numel;
    if (!bg_shape_fits(h->rank, h->dims, size, &numel))
        return npy_fail(file, BRAID_ERR_SHAPE,
                        "shape is too large (over %lld bytes, zero "
                        "dimensions counted as 1)",
                        (long long)BG_MAX_BYTES);
    *bytes = (size_t)numel * size;
    return BRAID_OK;
}

/* Parses the preamble and header at the start of buf (avail bytes of it).
 * On success fills h, the dtype, the data offset and the data size. When
 * avail is too short for the header, fails with "truncated". */
static braid_status npy_parse_head(const unsigned char *buf, size_t avail,
                                   const char *file, braid_dtype expect,
                                   br_npy_array *out, size_t *offset) {
    /* The magic decides what the file is; only then does length matter. */
    if (avail < 6 || memcmp(buf, npy_magic, 6) != 0)
        return npy_fail(file, BRAID_ERR_PARSE,
                        avail < 6 ? "not a .npy file (too short)"
                                  : "not a .npy file (bad magic)");
    if (avail < 8)
        return npy_fail(file, BRAID_ERR_PARSE, "truncated .npy preamble");
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return npy_fail(file, BRAID_ERR_UNSUPPORTED,
                        "unsupported .npy format version %u.%u (braid reads "
                        "1.0, 2.0 and 3.0)",
                        major, minor);
    size_t pre = major == 1 ? NPY_PREAMBLE_V1 : NPY_PREAMBLE_V2;
    if (avail < pre)
        return npy_fail(file, BRAID_ERR_PARSE, "truncated .npy preamble");
    uint32_t hlen = (uint32_t)buf[8] | (uint32_t)buf[9] << 8;
    if (major > 1) hlen |= (uint32_t)buf[10] << 16 | (uint32_t)buf[11] << 24;
    if (hlen > BR_NPY_MAX_HEADER)
        return npy_fail(file, BRAID_ERR_PARSE,
                        "header length %u exceeds the limit of %u bytes", hlen,
                        BR_NPY_MAX_HEADER);
    if (avail - pre < hlen)
        return npy_fail(file, BRAID_ERR_PARSE,
                        "truncated header (%u bytes announced, %zu present)",
                        hlen, avail - pre);
    npy_parser p = {(const char *)buf + pre, hlen, 0, file};
    npy_header h;
    memset(&h, 0, sizeof h);
    braid_status s = hp_dict(&p, &h);
    if (s == BRAID_OK && h.fortran)
        s = npy_fail(file, BRAID_ERR_UNSUPPORTED,
                     "Fortran-order arrays are not supported; save a "
                     "C-contiguous array (np.ascontiguousarray)");
    if (s == BRAID_OK) s = npy_dtype(file, h.descr, expect, &out->dtype);
    if (s == BRAID_OK) s = npy_nbytes(file, &h, out->dtype, &out->bytes);
    if (s != BRAID_OK) return s;
    out->rank = h.rank;
    memcpy(out->dims, h.dims, sizeof out->dims);
    *offset = pre + hlen;
    return BRAID_OK;
}

/* bool data must be 0/1 in braid; NumPy may store any nonzero byte. */
static void npy_normalize_bool(br_npy_array *a) {
    if (a->dtype != BRAID_BOOL) return;
    unsigned char *b = a->data;
    for (size_t k = 0; k < a->bytes; k++)
        b[k] = b[k] != 0;
}

static braid_status npy_alloc_data(const char *file, br_npy_array *out) {
    out->data = malloc(out->bytes ? out->bytes : 1);
    if (!out->data)
        return npy_fail(file, BRAID_ERR_OUT_OF_MEMORY,
                        "cannot allocate %zu bytes for the data", out->bytes);
    return BRAID_OK;
}

braid_status br_npy_decode(const void *buf, size_t len, const char *name,
                           braid_dtype expect, br_npy_array *out) {
    if (!out || (!buf && len))
        return npy_fail(name, BRAID_ERR_INVALID_ARGUMENT, "NULL argument");
    memset(out, 0, sizeof *out);
    if (!host_is_little_endian())
        return npy_fail(name, BRAID_ERR_UNSUPPORTED,
                        ".npy support needs a little-endian host");
    size_t off = 0;
    braid_status s = npy_parse_head(buf, len, name, expect, out, &off);
    if (s == BRAID_OK && len - off != out->bytes)
        s = npy_fail(name, BRAID_ERR_IO,
                     "data size mismatch: the shape needs %zu bytes, the "
                     "file has %zu%s",
                     out->bytes, len - off,
                     len - off < out->bytes ? " (truncated file)" : "");
    if (s == BRAID_OK) s = npy_alloc_data(name, out);
    if (s != BRAID_OK) {
        br_npy_array_free(out);
        return s;
    }
    if (out->bytes)
        memcpy(out->data, (const unsigned char *)buf + off, out->bytes);
    npy_normalize_bool(out);
    return BRAID_OK;
}

/* ---- reading a file ------------------------------------------------------ */

/* Reads the preamble and header of f into a malloc'd buffer (*head, *len),
 * leaving f at the first data byte. A short read is not an error here:
 * npy_parse_head reports what is missing. */
static braid_status npy_read_head(FILE *f, const char *path,
                                  unsigned char **head, size_t *len) {
    unsigned char pre[NPY_PREAMBLE_V2];
    size_t got = fread(pre, 1, NPY_PREAMBLE_V1, f);
    size_t hlen = 0;
    if (got == NPY_PREAMBLE_V1 && memcmp(pre, npy_magic, 6) == 0) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
        if (pre[6] >= 2) {
            got += fread(pre + got, 1, NPY_PREAMBLE_V2 - got, f);
            hlen = got < NPY_PREAMBLE_V2
                       ? 0
                       : hlen | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        }
        if (hlen > BR_NPY_MAX_HEADER) hlen = 0; /* npy_parse_head reports it */
    }
    *head = malloc(sizeof pre + hlen);
    if (!*head) return npy_fail(path, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(*head, pre, got);
    size_t more = hlen ? fread(*head + got, 1, hlen, f) : 0;
    if (ferror(f)) {
        free(*head);
        *head = NULL;
        return npy_fail(path, BRAID_ERR_IO, "read error: %s", strerror(errno));
    }
    *len = got + more;
    return BRAID_OK;
}

/* Reads exactly a->bytes of data and checks nothing follows. avail is the
 * number of data bytes the file holds, or -1 when unknown (not a regular
 * file). */
static braid_status npy_read_data(FILE *f, const char *path, br_npy_array *a,
                                  int64_t avail) {
    if (avail >= 0 && (uint64_t)avail != a->bytes)
        return npy_fail(path, BRAID_ERR_IO,
                        "data size mismatch: the shape needs %zu bytes, the "
                        "file has %lld%s",
                        a->bytes, (long long)avail,
                        (uint64_t)avail < a->bytes ? " (truncated file)" : "");
    braid_status s = npy_alloc_data(path, a);
    if (s != BRAID_OK) return s;
    size_t got = a->bytes ? fread(a->data, 1, a->bytes, f) : 0;
    if (got != a->bytes && ferror(f))
        return npy_fail(path, BRAID_ERR_IO, "read error: %s", strerror(errno));
    if (got != a->bytes)
        return npy_fail(path, BRAID_ERR_IO,
                        "truncated file: the shape needs %zu data bytes, "
                        "%zu present",
                        a->bytes, got);
    if (fgetc(f) != EOF)
        return npy_fail(path, BRAID_ERR_IO,
                        "data size mismatch: extra bytes after the %zu "
                        "data bytes",
                        a->bytes);
    npy_normalize_bool(a);
    return BRAID_OK;
}

braid_status br_npy_read(const char *path, braid_dtype expect,
                         br_npy_array *out) {
    if (!path || !out)
        return npy_fail(path, BRAID_ERR_INVALID_ARGUMENT, "NULL argument");
    memset(out, 0, sizeof *out);
    if (!host_is_little_endian())
        return npy_fail(path, BRAID_ERR_UNSUPPORTED,
                        ".npy support needs a little-endian host");
    FILE *f = fopen(path, "rb");
    if (!f)
        return npy_fail(path, BRAID_ERR_IO, "cannot open: %s", strerror(errno));
    unsigned char *head = NULL;
    size_t hlen = 0, off = 0;
    braid_status s = npy_read_head(f, path, &head, &hlen);
    if (s == BRAID_OK) s = npy_parse_head(head, hlen, path, expect, out, &off);
    free(head);
    if (s == BRAID_OK) {
        struct stat st;
        int64_t avail = -1;
        if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
            avail = (int64_t)st.st_size - (int64_t)off;
        s = npy_read_data(f, path, out, avail);
    }
    fclose(f);
    if (s != BRAID_OK) br_npy_array_free(out);
    return s;
}

/* ---- writing ------------------------------------------------------------- */

/* Writes the preamble and header for the array into buf (cap bytes) and
 * returns its length (a multiple of NPY_ALIGN), or 0 when cap is short. */
static size_t npy_format_head(braid_dtype dtype, int rank, const int64_t *dims,
                              char *buf, size_t cap) {
    char dict[256];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     br_npy_descr(dtype));
    for (int k = 0; k < rank; k++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld",
                      k ? ", " : "", (long long)dims[k]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }",
                  rank == 1 ? "," : "");
    size_t text = (size_t)n + 1; /* the dict plus the final '\n' */
    /* Version 1.0 holds a 16-bit header length; a longer one needs 2.0. */
    size_t pre = NPY_PREAMBLE_V1;
    if ((pre + text + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN - pre > 65535)
        pre = NPY_PREAMBLE_V2;
    size_t total = (pre + text + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    if (total > cap) return 0;
    size_t hlen = total - pre;
    memcpy(buf, npy_magic, 6);
    buf[6] = pre == NPY_PREAMBLE_V1 ? 1 : 2;
    buf[7] = 0;
    for (size_t k = 0; k < pre - 8; k++)
        buf[8 + k] = (char)(hlen >> (8 * k) & 0xff);
    memcpy(buf + pre, dict, (size_t)n);
    memset(buf + pre + n, ' ', total - pre - (size_t)n - 1);
    buf[total - 1] = '\n';
    return total;
}

static braid_status npy_check_array(const char *path, braid_dtype dtype,
                                    int rank, const int64_t *dims,
                                    const void *data, size_t *bytes) {
    if (!br_npy_descr(dtype))
        return npy_fail(path, BRAID_ERR_INVALID_ARGUMENT, "bad dtype %d",
                        (int)dtype);
    if (rank < 0 || rank > BRAID_MAX_RANK || (rank > 0 && !dims))
        return npy_fail(path, BRAID_ERR_INVALID_ARGUMENT, "bad rank %d", rank);
    npy_header h;
    memset(&h, 0, sizeof h);
    h.rank = rank;
    for (int k = 0; k < rank; k++) {
        if (dims[k] < 0)
            return npy_fail(path, BRAID_ERR_SHAPE, "negative dimension");
        h.dims[k] = dims[k];
    }
    braid_status s = npy_nbytes(path, &h, dtype, bytes);
    if (s == BRAID_OK && *bytes && !data)
        s = npy_fail(path, BRAID_ERR_INVALID_ARGUMENT, "NULL data");
    return s;
}

braid_status br_npy_write(const char *path, braid_dtype dtype, int rank,
                          const int64_t *dims, const void *data) {
    size_t bytes = 0;
    if (!path) return npy_fail(path, BRAID_ERR_INVALID_ARGUMENT, "NULL path");
    braid_status s = npy_check_array(path, dtype, rank, dims, data, &bytes);
    if (s != BRAID_OK) return s;
    if (!host_is_little_endian())
        return npy_fail(path, BRAID_ERR_UNSUPPORTED,
                        ".npy support needs a little-endian host");
    char head[512];
    size_t hlen = npy_format_head(dtype, rank, dims, head, sizeof head);
    if (hlen == 0)
        return npy_fail(path, BRAID_ERR_INVALID_ARGUMENT, "header too long");
    bg_outfile o;
    if ((s = bg_outfile_open(&o, path, "braid", 0)) != BRAID_OK) return s;
    bg_outfile_write(&o, head, hlen);
    bg_outfile_write(&o, data, bytes);
    return bg_outfile_commit(&o, "braid");
}
