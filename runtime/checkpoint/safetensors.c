/* runtime/checkpoint/safetensors.c — safetensors write, read, match. */
#include "runtime/checkpoint/safetensors.h"
#include "graph/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const st_names[BRAID_DTYPE_COUNT_] = {
    [BRAID_F32] = "F32", [BRAID_F16] = "F16", [BRAID_BF16] = "BF16",
    [BRAID_F64] = "F64", [BRAID_I32] = "I32", [BRAID_BOOL] = "BOOL",
    [BRAID_I64] = "I64"};

static braid_status oom(void) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "checkpoint: out of memory");
}

/* ---- writing ---------------------------------------------------------------
 */

/* Appends printf output to a growing string; false when out of memory. */
typedef struct st_buf {
    char *s;
    size_t len, cap;
} st_buf;

static bool put(st_buf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *x = realloc(b->s, cap);
        if (!x) return false;
        b->s = x, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
    return true;
}

static bool put_entry(st_buf *b, const br_st_tensor *t, uint64_t at) {
    char x[64];
    bool ok = put(b, "\"") && put(b, t->name) && put(b, "\":{\"dtype\":\"") &&
              put(b, st_names[t->dtype]) && put(b, "\",\"shape\":[");
    for (int i = 0; i < t->rank && ok; i++) {
        snprintf(x, sizeof x, "%s%lld", i ? "," : "", (long long)t->dims[i]);
        ok = put(b, x);
    }
    snprintf(x, sizeof x, "],\"data_offsets\":[%llu,%llu]}",
             (unsigned long long)at, (unsigned long long)(at + t->bytes));
    return ok && put(b, x);
}

/* The JSON header, padded with spaces to a multiple of 8. Names are
 * identifiers ([A-Za-z_][A-Za-z0-9_.]*), so they need no escaping. */
static bool header(const br_st_file *f, st_buf *b) {
    bool ok = put(b, "{\"__metadata__\":{\"format\":\"braid\"}");
    uint64_t at = 0;
    for (uint32_t i = 0; i < f->n && ok; i++) {
        ok = put(b, ",") && put_entry(b, &f->t[i], at);
        at += f->t[i].bytes;
    }
    ok = ok && put(b, "}");
    while (ok && b->len % 8)
        ok = put(b, " ");
    return ok;
}

braid_status br_st_write(const char *path, const br_st_file *f) {
    st_buf b = {0};
    if (!header(f, &b)) {
        free(b.s);
        return oom();
    }
    bg_outfile o;
    braid_status s = bg_outfile_open(&o, path, "braid_exec_save", 0);
    if (s != BRAID_OK) {
        free(b.s);
        return s;
    }
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)b.len >> (8 * i));
    bool ok = bg_outfile_write(&o, len, 8) && bg_outfile_write(&o, b.s, b.len);
    for (uint32_t i = 0; i < f->n && ok; i++)
        ok = bg_outfile_write(&o, f->t[i].data, f->t[i].bytes);
    free(b.s);
    if (!ok) {
        bg_outfile_abort(&o);
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_exec_save: cannot write %s", path);
    }
    return bg_outfile_commit(&o, "braid_exec_save");
}

/* ---- reading: a small JSON reader for the header ----------------------------
 */

typedef struct st_json {
    const char *p, *end; /* the header text left */
    const char *start;   /* the header's first byte */
    char *names;         /* decoded strings go here (header size bounds it) */
    size_t nlen;         /* bytes used in names */
    const char *path;    /* for messages */
} st_json;

static braid_status bad(const st_json *j, const char *what) {
    return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                             "braid_exec_load: %s: bad safetensors header "
                             "(%s at byte %lld of the JSON)",
                             j->path, what, (long long)(j->p - j->start));
}

static void blank(st_json *j) {
    while (j->p < j->end &&
           (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static bool eat(st_json *j, char c) {
    blank(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

/* A string into j->names (escapes other than \" \\ \/ refused: names and
 * braid's dtypes never need them); *out points at it. */
static bool string(st_json *j, const char **out) {
    if (!eat(j, '"')) return false;
    char *o = j->names + j->nlen;
    *out = o;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\') {
            if (j->p >= j->end || !strchr("\"\\/", *j->p)) return false;
            c = *j->p++;
        }
        if (c == '\0') return false;
        *o++ = c;
    }
    if (j->p >= j->end) return false;
    j->p++;
    *o++ = '\0';
    j->nlen = (size_t)(o - j->names);
    return true;
}

static bool integer(st_json *j, uint64_t *v) {
    blank(j);
    const char *s = j->p;
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (*v > (UINT64_MAX - 9) / 10) return false;
        *v = *v * 10 + (uint64_t)(*j->p++ - '0');
    }
    return j->p > s;
}

/* [a, b, ...] of at most max integers. */
static bool int_list(st_json *j, uint64_t *v, int max, int *n) {
    *n = 0;
    if (!eat(j, '[')) return false;
    if (eat(j, ']')) return true;
    do {
        if (*n >= max || !integer(j, &v[*n])) return false;
        (*n)++;
    } while (eat(j, ','));
    return eat(j, ']');
}

/* Skips the "__metadata__" object: string keys to string values. */
static bool metadata(st_json *j) {
    const char *k, *v;
    if (!eat(j, '{')) return false;
    if (eat(j, '}')) return true;
    do {
        if (!string(j, &k) || !eat(j, ':') || !string(j, &v)) return false;
    } while (eat(j, ','));
    return eat(j, '}');
}

static braid_dtype dtype_of(const char *s) {
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++)
        if (st_names[t] && strcmp(st_names[t], s) == 0) return (braid_dtype)t;
    return BRAID_DTYPE_COUNT_;
}

/* One tensor's object into t (offsets into off[2]). */
static braid_status entry(st_json *j, br_st_tensor *t, uint64_t *off) {
    const char *k, *v;
    uint64_t dims[BRAID_MAX_RANK + 1];
    int have = 0, n;
    if (!eat(j, '{')) return bad(j, "expected {");
    do {
        if (!string(j, &k) || !eat(j, ':')) return bad(j, "expected a key");
        if (strcmp(k, "dtype") == 0) {
            if (!string(j, &v)) return bad(j, "dtype");
            if ((t->dtype = dtype_of(v)) == BRAID_DTYPE_COUNT_)
                return bg_set_last_error(BRAID_ERR_DTYPE,
                                         "braid_exec_load: %s: tensor \"%s\" "
                                         "has dtype %s, which braid does not "
                                         "have",
                                         j->path, t->name, v);
            have |= 1;
        } else if (strcmp(k, "shape") == 0) {
            if (!int_list(j, dims, BRAID_MAX_RANK + 1, &n) ||
                n > BRAID_MAX_RANK)
                return bad(j, "shape (rank at most 8)");
            t->rank = n;
            for (int i = 0; i < n; i++)
                t->dims[i] = (int64_t)dims[i];
            for (int i = 0; i < n; i++)
                if (dims[i] > ((uint64_t)1 << 50)) return bad(j, "shape");
            have |= 2;
        } else if (strcmp(k, "data_offsets") == 0) {
            if (!int_list(j, off, 2, &n) || n != 2 || off[1] < off[0])
                return bad(j, "data_offsets");
            have |= 4;
        } else {
            return bad(j, "unknown key");
        }
    } while (eat(j, ','));
    if (!eat(j, '}') || have != 7) return bad(j, "incomplete tensor entry");
    return BRAID_OK;
}

/* The header object: entries into f->t, offsets into off (2 per entry). */
static braid_status parse(st_json *j, br_st_file *f, uint64_t *off,
                          uint32_t max) {
    const char *k;
    if (!eat(j, '{')) return bad(j, "expected {");
    if (eat(j, '}')) return BRAID_OK;
    do {
        if (!string(j, &k) || !eat(j, ':')) return bad(j, "expected a name");
        if (strcmp(k, "__metadata__") == 0) {
            if (!metadata(j)) return bad(j, "__metadata__");
            continue;
        }
        if (f->n >= max) return bad(j, "too many entries");
        br_st_tensor *t = &f->t[f->n];
        t->name = k;
        braid_status s = entry(j, t, off + 2 * (size_t)f->n);
        if (s != BRAID_OK) return s;
        f->n++;
    } while (eat(j, ','));
    if (!eat(j, '}')) return bad(j, "expected }");
    blank(j);
    return j->p == j->end ? BRAID_OK : bad(j, "text after the object");
}

/* Each entry's bytes: inside the data, numel × size, pairwise disjoint
 * (sorted by offset, each ends before the next begins), names unique. */
static braid_status check_entries(const char *path, br_st_file *f,
                                  const uint64_t *off, const char *data,
                                  uint64_t dlen) {
    for (uint32_t i = 0; i < f->n; i++) {
        br_st_tensor *t = &f->t[i];
        int64_t numel;
        size_t es = braid_dtype_size(t->dtype);
        if (!bg_shape_fits(t->rank, t->dims, es, &numel) ||
            off[2 * i + 1] > dlen ||
            off[2 * i + 1] - off[2 * i] != (uint64_t)numel * es)
            return bg_set_last_error(
                BRAID_ERR_INVALID_ARGUMENT,
                "braid_exec_load: %s: tensor \"%s\": "
                "byte range [%llu, %llu) does not hold "
                "its shape within the %llu data bytes",
                path, t->name, (unsigned long long)off[2 * i],
                (unsigned long long)off[2 * i + 1], (unsigned long long)dlen);
        t->data = data + off[2 * i];
        t->bytes = (size_t)(off[2 * i + 1] - off[2 * i]);
        for (uint32_t k = 0; k < i; k++) {
            if (strcmp(f->t[k].name, t->name) == 0)
                return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                         "braid_exec_load: %s: tensor \"%s\" "
                                         "appears twice",
                                         path, t->name);
            if (off[2 * k] < off[2 * i + 1] && off[2 * i] < off[2 * k + 1])
                return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                         "braid_exec_load: %s: tensors \"%s\" "
                                         "and \"%s\" overlap",
                                         path, f->t[k].name, t->name);
        }
    }
    return BRAID_OK;
}

/* The whole file in memory. */
static braid_status slurp(const char *path, unsigned char **buf, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_exec_load: cannot open "
                                 "%s: %s",
                                 path, strerror(errno));
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
    if (size < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_exec_load: cannot read "
                                 "%s",
                                 path);
    }
    *len = (size_t)size;
    *buf = malloc(*len ? *len : 1);
    bool ok = *buf && fread(*buf, 1, *len, fp) == *len;
    fclose(fp);
    if (!ok) {
        free(*buf);
        *buf = NULL;
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_exec_load: cannot read "
                                 "%s",
                                 path);
    }
    return BRAID_OK;
}

braid_status br_st_read(const char *path, br_st_file *f) {
    memset(f, 0, sizeof *f);
    unsigned char *b = NULL;
    size_t len = 0;
    braid_status s = slurp(path, &b, &len);
    if (s != BRAID_OK) return s;
    f->buf = b;
    uint64_t hl = 0;
    for (int i = 0; i < 8 && len >= 8; i++)
        hl |= (uint64_t)b[i] << (8 * i);
    if (len < 8 || hl > BR_ST_MAX_HEADER || hl > len - 8)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_load: %s is not a safetensors "
                                 "file (header length %llu, file %zu bytes)",
                                 path, (unsigned long long)hl, len);
    uint32_t max = (uint32_t)(hl / 8 + 1); /* an entry takes > 8 bytes */
    uint64_t *off = malloc((size_t)max * 2 * sizeof *off);
    f->t = calloc(max, sizeof *f->t);
    f->names = malloc((size_t)hl + 1);
    if (!off || !f->t || !f->names) {
        free(off);
        return oom();
    }
    st_json j = {(const char *)b + 8,
                 (const char *)b + 8 + hl,
                 (const char *)b + 8,
                 f->names,
                 0,
                 path};
    s = parse(&j, f, off, max);
    if (s == BRAID_OK)
        s = check_entries(path, f, off, (const char *)b + 8 + hl, len - 8 - hl);
    free(off);
    return s;
}

const br_st_tensor *br_st_find(const br_st_file *f, const char *name) {
    for (uint32_t i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

static void shape_str(const br_st_tensor *t, char *buf, size_t size) {
    char dims[96];
    bg_shape_str(t->rank, t->dims, dims, sizeof dims);
    snprintf(buf, size, "%s%s", braid_dtype_name(t->dtype), dims);
}

braid_status br_st_match(const char *path, const br_st_file *want,
                         const br_st_file *got) {
    char a[128], b[128];
    for (uint32_t i = 0; i < want->n; i++) {
        const br_st_tensor *w = &want->t[i], *g = br_st_find(got, w->name);
        if (!g)
            return bg_set_last_error(BRAID_ERR_NOT_FOUND,
                                     "braid_exec_load: %s has no tensor for "
                                     "variable \"%s\"",
                                     path, w->name);
        shape_str(w, a, sizeof a);
        shape_str(g, b, sizeof b);
        if (strcmp(a, b) != 0)
            return bg_set_last_error(BRAID_ERR_SHAPE,
                                     "braid_exec_load: %s: variable \"%s\" "
                                     "is %s but the file holds %s",
                                     path, w->name, a, b);
    }
    for (uint32_t i = 0; i < got->n; i++)
        if (!br_st_find(want, got->t[i].name))
            return bg_set_last_error(BRAID_ERR_NOT_FOUND,
                                     "braid_exec_load: %s holds tensor \"%s\", "
                                     "which is no variable of the plan",
                                     path, got->t[i].name);
    return BRAID_OK;
}

void br_st_free(br_st_file *f) {
    if (!f) return;
    for (uint32_t i = 0; f->owns_data && i < f->n; i++)
        free((void *)f->t[i].data);
    free(f->t);
    free(f->buf);
    free(f->names);
    memset(f, 0, sizeof *f);
}
