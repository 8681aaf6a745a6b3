/* tests/support/golden.c — whole-file reading, golden files, case
 * directives, and parsing / compiling with asserted success. */
#define _POSIX_C_SOURCE 200809L

#include "tests/support/golden.h"
#include "runtime/runtime.h"
#include "tests/support/support.h"

#include <criterion/criterion.h>

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- whole files --------------------------------------------------------- */

char *ts_read_stream_len(FILE *f, size_t *len) {
    /* From the start: also flushes what was written through f. A stream
     * that cannot seek (a pipe) is read from where it is. */
    if (fseek(f, 0, SEEK_SET) != 0) clearerr(f);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    cr_assert(buf, "out of memory");
    for (;;) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        cap *= 2;
        char *grown = realloc(buf, cap);
        cr_assert(grown, "out of memory");
        buf = grown;
    }
    cr_assert(!ferror(f), "read error");
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

char *ts_read_stream(FILE *f) {
    return ts_read_stream_len(f, NULL);
}

char *ts_read_file_len(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = ts_read_stream_len(f, len);
    fclose(f);
    return text;
}

char *ts_read_file(const char *path) {
    return ts_read_file_len(path, NULL);
}

char *ts_read_file_ok(const char *path) {
    char *text = ts_read_file(path);
    cr_assert(text, "cannot read %s", path);
    return text;
}

/* ---- line diff ----------------------------------------------------------- */

typedef struct line {
    const char *s;
    size_t n; /* with its '\n', when it has one */
} line;

static line *split_lines(const char *text, size_t *count) {
    size_t cap = 64, n = 0;
    line *v = malloc(cap * sizeof *v);
    cr_assert(v, "out of memory");
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (n == cap) {
            cap *= 2;
            line *grown = realloc(v, cap * sizeof *v);
            cr_assert(grown, "out of memory");
            v = grown;
        }
        v[n].s = p;
        v[n].n = len;
        n++;
        p += len;
    }
    *count = n;
    return v;
}

static bool same_line(const line *a, const line *b) {
    return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
}

typedef struct edit {
    char op; /* ' ', '-' (want only) or '+' (got only) */
    const line *l;
    size_t want, got; /* 1-based line numbers where the edit stands */
} edit;

/* The edits from want to got: common prefix and suffix, and a longest
 * common subsequence of the middle (all of it replaced when the table
 * would be too large). */
static edit *line_edits(const line *a, size_t na, const line *b, size_t nb,
                        size_t *count) {
    edit *e = malloc((na + nb + 1) * sizeof *e);
    cr_assert(e, "out of memory");
    size_t k = 0, i = 0, j = 0;
    size_t pre = 0, suf = 0;
    while (pre < na && pre < nb && same_line(&a[pre], &b[pre]))
        pre++;
    while (suf < na - pre && suf < nb - pre &&
           same_line(&a[na - 1 - suf], &b[nb - 1 - suf]))
        suf++;
    for (; i < pre; i++, j++)
        e[k++] = (edit){' ', &a[i], i + 1, j + 1};
    size_t ma = na - pre - suf, mb = nb - pre - suf;
    uint32_t *t = NULL; /* t[x][y]: LCS of the middles from x and y on */
    if (ma && mb && (ma + 1) <= 4000000 / (mb + 1))
        t = calloc((ma + 1) * (mb + 1), sizeof *t);
    if (t) {
        const line *ma0 = a + pre, *mb0 = b + pre;
        for (size_t x = ma; x-- > 0;)
            for (size_t y = mb; y-- > 0;) {
                uint32_t *c = &t[x * (mb + 1) + y];
                if (same_line(&ma0[x], &mb0[y]))
                    *c = t[(x + 1) * (mb + 1) + y + 1] + 1;
                else {
                    uint32_t down = t[(x + 1) * (mb + 1) + y];
                    uint32_t right = t[x * (mb + 1) + y + 1];
                    *c = down >= right ? down : right;
                }
            }
        size_t x = 0, y = 0;
        while (x < ma || y < mb) {
            if (x < ma && y < mb && same_line(&ma0[x], &mb0[y])) {
                e[k++] = (edit){' ', &a[i], i + 1, j + 1};
                x++, y++, i++, j++;
            } else if (y == mb || (x < ma && t[(x + 1) * (mb + 1) + y] >=
                                                 t[x * (mb + 1) + y + 1])) {
                e[k++] = (edit){'-', &a[i], i + 1, j + 1};
                x++, i++;
            } else {
                e[k++] = (edit){'+', &b[j], i + 1, j + 1};
                y++, j++;
            }
        }
        free(t);
    } else {
        for (size_t x = 0; x < ma; x++, i++)
            e[k++] = (edit){'-', &a[i], i + 1, j + 1};
        for (size_t y = 0; y < mb; y++, j++)
            e[k++] = (edit){'+', &b[j], i + 1, j + 1};
    }
    for (; i < na; i++, j++)
        e[k++] = (edit){' ', &a[i], i + 1, j + 1};
    *count = k;
    return e;
}

/* want (-) against got (+), changed lines with 3 lines of context, each
 * hunk headed "@@ -<want line> +<got line> @@". */
static char *line_diff(const char *want, const char *got) {
    enum { CONTEXT = 3 };
    size_t na, nb, ne;
    line *a = split_lines(want, &na), *b = split_lines(got, &nb);
    edit *e = line_edits(a, na, b, nb, &ne);
    bool *show = calloc(ne + 1, sizeof *show);
    cr_assert(show, "out of memory");
    for (size_t k = 0; k < ne; k++) {
        if (e[k].op == ' ') continue;
        size_t lo = k > CONTEXT ? k - CONTEXT : 0;
        for (size_t m = lo; m < ne && m <= k + CONTEXT; m++)
            show[m] = true;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f, "out of memory");
    for (size_t k = 0; k < ne; k++) {
        if (!show[k]) continue;
        if (k == 0 || !show[k - 1])
            fprintf(f, "@@ -%zu +%zu @@\n", e[k].want, e[k].got);
        fprintf(f, "%c%.*s", e[k].op, (int)e[k].l->n, e[k].l->s);
        if (e[k].l->n == 0 || e[k].l->s[e[k].l->n - 1] != '\n')
            fputs("\n\\ No newline at end of file\n", f);
    }
    fclose(f);
    free(show);
    free(e);
    free(a);
    free(b);
    return text;
}

/* ---- golden files -------------------------------------------------------- */

char *ts_golden_path(const char *dir, const char *name, const char *ext) {
    size_t nd = strlen(dir);
    const char *sep = nd && dir[nd - 1] == '/' ? "" : "/";
    size_t size = nd + strlen(sep) + strlen(name) + strlen(ext) + 1;
    char *path = malloc(size);
    cr_assert(path, "out of memory");
    snprintf(path, size, "%s%s%s%s", dir, sep, name, ext);
    return path;
}

bool ts_update_golden(void) {
    const char *update = getenv("BRAID_UPDATE_GOLDEN");
    return update && strcmp(update, "1") == 0;
}

void ts_check_golden(const char *dir, const char *name, const char *got) {
    cr_assert(got, "%s: no text to compare", name);
    char *path = ts_golden_path(dir, name, ".expected");
    if (ts_update_golden()) {
        FILE *f = fopen(path, "wb");
        cr_assert(f, "cannot write %s", path);
        bool ok = fputs(got, f) >= 0;
        ok = fclose(f) == 0 && ok;
        cr_assert(ok, "cannot write %s", path);
        cr_log_info("updated %s", path);
        free(path);
        return;
    }
    char *want = ts_read_file(path);
    cr_assert(want, "missing %s (run with BRAID_UPDATE_GOLDEN=1)", path);
    if (strcmp(got, want) != 0) {
        char *diff = line_diff(want, got);
        cr_assert_fail("%s differs from %s (- expected, + got; "
                       "BRAID_UPDATE_GOLDEN=1 rewrites it):\n%s",
                       name, path, diff);
    }
    free(want);
    free(path);
}

bool ts_directive(const char *text, const char *key, char *buf, size_t size) {
    size_t klen = strlen(key);
    for (const char *l = text; l && *l;) {
        if (strncmp(l, key, klen) == 0) {
            const char *s = l + klen;
            while (*s == ' ' || *s == '\t')
                s++;
            size_t n = strcspn(s, "\n");
            while (n > 0 && isspace((unsigned char)s[n - 1]))
                n--;
            cr_assert_lt(n, size, "\"%s\" line too long: %.*s", key, (int)n, s);
            memcpy(buf, s, n);
            buf[n] = '\0';
            return true;
        }
        l = strchr(l, '\n');
        if (l) l++;
    }
    return false;
}

braid_graph *ts_golden_graph(const char *dir, const char *name, char **text) {
    char *path = ts_golden_path(dir, name, ".graph");
    char *t = ts_read_file_ok(path);
    braid_graph *g = ts_parse_ok(t, path);
    free(path);
    if (text)
        *text = t;
    else
        free(t);
    return g;
}

/* ---- graphs and plans with asserted success ------------------------------ */

braid_graph *ts_parse_ok(const char *text, const char *what) {
    cr_assert(text, "%s: no text", what ? what : "<input>");
    braid_graph *g = braid_graph_parse(text, strlen(text), what, NULL);
    cr_assert(g, "%s: out of memory", what ? what : "<input>");
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

braid_graph *ts_load_ok(const char *path) {
    braid_graph *g = braid_graph_load(path, NULL);
    cr_assert(g, "out of memory loading %s", path);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "loading %s: %s", path,
                 braid_graph_error(g));
    return g;
}

braid_compile_options ts_compile_options(const char *devices,
                                         unsigned disable_passes) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.disable_passes = disable_passes;
    o.archs = "none"; /* no ahead-of-time NVRTC build: these tests never run
                         the kernels (GPU tests compile them at executor
                         creation, as before) */
    return o;
}

braid_plan *ts_compile_ok(const braid_graph *g,
                          const braid_compile_options *o) {
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, o, &p);
    cr_assert_eq(s, BRAID_OK, "compile for %s: %s: %s",
                 o && o->devices ? o->devices : "the default devices",
                 braid_status_name(s), braid_last_error());
    cr_assert(p);
    return p;
}

void ts_check_plan(const braid_graph *g, const braid_plan *p, int nseeds,
                   uint64_t seed) {
    ts_io *io = ts_io_new(g, seed);
    cr_assert_not_null(io);
    braid_status s =
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs);
    cr_assert_eq(s, BRAID_OK, "reference: %s", braid_last_error());
    for (int k = 0; k < (nseeds ? nseeds : 1); k++) {
        braid_exec *e = NULL;
        s = nseeds ? br_exec_new_emulated(p, (uint64_t)k + 1, &e)
                   : braid_exec_new(p, &e);
        cr_assert_eq(s, BRAID_OK, "exec: %s", braid_last_error());
        for (uint32_t i = 0; i < io->noutputs; i++)
            memset(io->out[i].data, 0xa5, io->out[i].bytes);
        s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
        braid_exec_free(e);
        cr_assert_eq(s, BRAID_OK, "run: %s", braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg),
                  "inputs %llu, seed %d: %s", (unsigned long long)seed, k, msg);
    }
    ts_io_free(io);
}

void ts_case_options(const char *text, braid_compile_options *o, char *devices,
                     size_t size) {
    if (!ts_directive(text, "# devices:", devices, size))
        snprintf(devices, size, "%s", "cpu,cuda:0");
    o->devices = devices;
    char line[256], *save = NULL;
    if (!ts_directive(text, "# options:", line, sizeof line)) return;
    for (char *t = strtok_r(line, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        if (!strncmp(t, "streams=", 8)) o->max_streams = atoi(t + 8);
        if (!strncmp(t, "chunks=", 7)) o->chunks = atoi(t + 7);
        if (!strcmp(t, "fuse")) o->disable_passes &= ~BRAID_PASS_FUSE;
        if (!strcmp(t, "simplify")) o->disable_passes &= ~BRAID_PASS_SIMPLIFY;
    }
}

char *ts_dump_after(const braid_graph *g, braid_compile_options o,
                    const char *pass, ts_dump_tail tail) {
    o.dump_after = pass;
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    cr_assert(saved >= 0 && tmp);
    dup2(fileno(tmp), 2);
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    if (tail) tail(tmp, p);
    braid_plan_free(p);
    char *text = ts_read_stream(tmp);
    fclose(tmp);
    return text;
}

void ts_check_dump_case(const char *dir, const char *name,
                        const braid_compile_options *base, const char *pass,
                        ts_dump_tail tail) {
    char *text = NULL, devices[128];
    braid_graph *g = ts_golden_graph(dir, name, &text);
    braid_compile_options o = *base;
    ts_case_options(text, &o, devices, sizeof devices);
    char *got = ts_dump_after(g, o, pass, tail);
    braid_graph_free(g);
    free(text);
    ts_check_golden(dir, name, got);
    free(got);
}
