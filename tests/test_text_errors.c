/* tests/test_text_errors.c — every kind of bad .graph text gives a clear
 * "file:line:col: message" error with the right status and position, and
 * the parser survives every allocation failure without leaking. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/support.h"

typedef struct bad_case {
    const char *text;    /* the input (may hold NUL bytes) */
    size_t len;          /* its length */
    braid_status status; /* expected status */
    const char *where;   /* expected "line:col" */
    const char *msg;     /* a substring of the message */
} bad_case;

#define H "braid-graph 1\n"
#define X "%x = input f32[2,3] name=\"x\"\n"
/* text and its length (string literals only: NULs are part of them) */
#define T(s) s, sizeof(s) - 1

static const bad_case bad_cases[] = {
    /* header and lexing */
    {T(""), BRAID_ERR_PARSE, "1:1", "expected the header 'braid-graph 1'"},
    {T("\n\n  # only comments\n"), BRAID_ERR_PARSE, "4:1",
     "expected the header"},
    {T(X), BRAID_ERR_PARSE, "1:1", "expected the header"},
    {T("braid-graph 2\n"), BRAID_ERR_PARSE, "1:13",
     "unsupported format version"},
    {T("braid-graph\n"), BRAID_ERR_PARSE, "1:12",
     "expected the format version"},
    {T("braid-graph 1 x\n"), BRAID_ERR_PARSE, "1:15", "expected end of line"},
    {T(H "%x = input f32[2] name=\"x\0\"\n"), BRAID_ERR_PARSE, "2:26", "NUL"},
    {T(H "\0"), BRAID_ERR_PARSE, "2:1", "NUL byte in input"},
    {T(H "# comment \0\n"), BRAID_ERR_PARSE, "2:11", "NUL byte in comment"},
    {T(H "%x = input f32[2] name=\"x\n"), BRAID_ERR_PARSE, "2:24",
     "unterminated string"},
    {T(H "%x = input f32[2] name=\"a\\qb\"\n"), BRAID_ERR_PARSE, "2:26",
     "unknown escape"},
    {T(H "%x = input f32[2] name=\"a\\x00\"\n"), BRAID_ERR_PARSE, "2:26",
     "NUL (\\x00) in string"},
    {T(H "%x = input f32[2] name=\"a\\x4\"\n"), BRAID_ERR_PARSE, "2:26",
     "bad \\x escape"},
    {T(H "% = neg %x\n"), BRAID_ERR_PARSE, "2:1", "expected a label name"},
    {T(H X "%y = neg %x @\n"), BRAID_ERR_PARSE, "3:13",
     "unexpected character '@'"},
    {T(H X "%y = neg %x \x80\n"), BRAID_ERR_PARSE, "3:13",
     "unexpected byte 0x80"},
    {T(H "hello\n"), BRAID_ERR_PARSE, "2:1", "expected a node"},
    /* ops, labels, operands */
    {T(H X "%y = ad %x\n"), BRAID_ERR_PARSE, "3:6",
     "unknown op 'ad' (did you mean 'add'?)"},
    {T(H X "%y = frobnicate %x\n"), BRAID_ERR_PARSE, "3:6",
     "unknown op 'frobnicate'"},
    {T(H X "%y = 12 %x\n"), BRAID_ERR_PARSE, "3:6", "expected an op name"},
    {T(H X "%y neg %x\n"), BRAID_ERR_PARSE, "3:4", "expected '='"},
    {T(H X "%y = neg %z\n"), BRAID_ERR_PARSE, "3:10", "undefined label '%z'"},
    {T(H X X), BRAID_ERR_PARSE, "3:1",
     "label '%x' is already defined on line 2"},
    {T(H X "%y = add %x\n"), BRAID_ERR_PARSE, "3:6",
     "add takes 2 operands, found 1"},
    {T(H X "%y = neg %x, %x\n"), BRAID_ERR_PARSE, "3:6",
     "neg takes 1 operand, found 2"},
    {T(H X "%y = where %x, %x\n"), BRAID_ERR_PARSE, "3:6", "found 2"},
    {T(H X "%y = add %x %x\n"), BRAID_ERR_PARSE, "3:13",
     "expected ',' between operands"},
    {T(H X "%y = add %x,\n"), BRAID_ERR_PARSE, "3:13", "expected an operand"},
    {T(H X "%y = concat axis=0\n"), BRAID_ERR_PARSE, "3:13",
     "expected an operand"},
    {T(H X "%y = neg %x ]\n"), BRAID_ERR_PARSE, "3:13", "expected end of line"},
    /* attributes */
    {T(H "%x = input f32[2,3]\n"), BRAID_ERR_PARSE, "2:6",
     "input needs attribute 'name'"},
    {T(H "%f = fill f32[2]\n"), BRAID_ERR_PARSE, "2:6",
     "fill needs attribute 'value'"},
    {T(H X "%y = reshape %x\n"), BRAID_ERR_PARSE, "3:6",
     "needs attribute 'shape'"},
    {T(H X "%y = neg %x axis=1\n"), BRAID_ERR_PARSE, "3:13",
     "neg has no attribute 'axis'"},
    {T(H X "%y = sum %x axes=[0] axes=[1]\n"), BRAID_ERR_PARSE, "3:22",
     "given twice"},
    {T(H X "%y = sum %x axes=[0] keepdims=true\n"), BRAID_ERR_PARSE, "3:30",
     "flag"},
    {T(H X "%y = sum %x axes=[2]\n"), BRAID_ERR_PARSE, "3:18",
     "axis 2 out of range"},
    {T(H X "%y = sum %x axes=[1,-1]\n"), BRAID_ERR_PARSE, "3:18", "twice"},
    {T(H X "%y = sum %x axes 1\n"), BRAID_ERR_PARSE, "3:18", "expected '='"},
    {T(H X "%y = sum %x axes=[0,]\n"), BRAID_ERR_PARSE, "3:21",
     "expected an integer"},
    {T(H X "%y = sum %x axes=[0 1]\n"), BRAID_ERR_PARSE, "3:21", "',' or ']'"},
    {T(H X "%y = reshape %x shape=[1,1,1,1,1,1,1,1,6]\n"), BRAID_ERR_PARSE,
     "3:40", "more than 8 entries"},
    {T(H X "%y = permute %x perm=[0]\n"), BRAID_ERR_PARSE, "3:22",
     "perm has 1 entries"},
    {T(H X "%y = permute %x perm=[0,9]\n"), BRAID_ERR_PARSE, "3:22",
     "perm entry 9"},
    {T(H X "%y = slice %x start=[0] stop=[1,1]\n"), BRAID_ERR_PARSE, "3:21",
     "start has 1 entries"},
    {T(H X "%y = slice %x start=[0,0] stop=[1,1] step=[1,0]\n"),
     BRAID_ERR_PARSE, "3:43", "step 0 on axis 1"},
    {T(H X "%y = cast %x to=f31\n"), BRAID_ERR_PARSE, "3:17",
     "unknown dtype 'f31'"},
    {T(H "%x = input q8[2] name=\"x\"\n"), BRAID_ERR_PARSE, "2:12",
     "unknown dtype 'q8'"},
    {T(H "%x = input f32[-2] name=\"x\"\n"), BRAID_ERR_PARSE, "2:15",
     "negative"},
    {T(H "%x = input f32 name=\"x\"\n"), BRAID_ERR_PARSE, "2:16",
     "expected '['"},
    /* numbers */
    {T(H "%f = fill f32[2] value=1.2.3\n"), BRAID_ERR_PARSE, "2:24",
     "bad number '1.2.3' for value"},
    {T(H "%f = fill f32[2] value=1e999\n"), BRAID_ERR_PARSE, "2:24",
     "out of range"},
    {T(H "%f = fill f32[2] value=0x10\n"), BRAID_ERR_PARSE, "2:24",
     "bad number"},
    {T(H "%f = fill f32[2] value=infinity\n"), BRAID_ERR_PARSE, "2:24",
     "bad number"},
    {T(H
       "%r = random_normal f32[2] seed=18446744073709551616 mean=0 stddev=1\n"),
     BRAID_ERR_PARSE, "2:32", "seed '18446744073709551616' is out of range"},
    {T(H "%r = random_normal f32[2] seed=-1 mean=0 stddev=1\n"),
     BRAID_ERR_PARSE, "2:32", "seed needs an integer"},
    {T(H "%i = iota i32[2] axis=2147483648\n"), BRAID_ERR_PARSE, "2:23",
     "out of range"},
    {T(H "%x = input f32[99999999999999999999] name=\"x\"\n"), BRAID_ERR_PARSE,
     "2:16", "out of range"},
    /* constants */
    {T(H "%c = constant f32[2,2] [1, 2, 3]\n"), BRAID_ERR_PARSE, "2:24",
     "constant f32[2,2] needs 4 values, found 3"},
    {T(H "%c = constant f32[2] [1, 2, 3]\n"), BRAID_ERR_PARSE, "2:29",
     "too many values: f32[2] holds 2"},
    {T(H "%c = constant i32[2] [1, 2147483648]\n"), BRAID_ERR_PARSE, "2:26",
     "i32 '2147483648' is out of range"},
    {T(H "%c = constant i32[2] [1, -2147483649]\n"), BRAID_ERR_PARSE, "2:26",
     "out of range"},
    {T(H "%c = constant i32[1] [1.5]\n"), BRAID_ERR_PARSE, "2:23",
     "bad number"},
    {T(H "%c = constant f16[1] [70000]\n"), BRAID_ERR_PARSE, "2:23",
     "out of range"},
    {T(H "%c = constant f32[1] [1e39]\n"), BRAID_ERR_PARSE, "2:23",
     "out of range"},
    {T(H "%c = constant bool[2] [true, 2]\n"), BRAID_ERR_PARSE, "2:30",
     "expected true or false"},
    {T(H "%c = constant f32[1] [\"1\"]\n"), BRAID_ERR_PARSE, "2:23",
     "bad number"},
    {T(H "%c = constant f32[2] base64\"AAAAAAAA\"\n"), BRAID_ERR_PARSE, "2:22",
     "base64 data holds 6 bytes but f32[2] needs 8"},
    {T(H "%c = constant f32[1] base64\"AA*AAA==\"\n"), BRAID_ERR_PARSE, "2:31",
     "bad base64 character"},
    {T(H "%c = constant f32[1] base64\"AAAAA\"\n"), BRAID_ERR_PARSE, "2:22",
     "not a multiple of 4"},
    {T(H "%c = constant f32[1] base64\"AA=AAA==\"\n"), BRAID_ERR_PARSE, "2:31",
     "bad base64"},
    {T(H "%c = constant f32[1] 1.0\n"), BRAID_ERR_PARSE, "2:22",
     "expected the constant's values"},
    {T(H "%c = constant f32[1000000000000000] [1]\n"), BRAID_ERR_PARSE, "2:37",
     "larger than"},
    /* types and the builder */
    {T(H X "%y = neg %x : f32[3,2]\n"), BRAID_ERR_PARSE, "3:15",
     "neg declared f32[3,2] but computes f32[2,3]"},
    {T(H X "%y = cast %x to=i32 : f32[2,3]\n"), BRAID_ERR_PARSE, "3:23",
     "declared f32[2,3] but computes i32[2,3]"},
    {T(H X "%z = input f32[3,2] name=\"z\"\n%y = add %x, %z\n"),
     BRAID_ERR_SHAPE, "4:6",
     "add: shapes f32[2,3] and f32[3,2] do not broadcast"},
    {T(H X "%z = input i32[2,3] name=\"z\"\n%y = add %x, %z\n"),
     BRAID_ERR_DTYPE, "4:6", "different dtypes"},
    {T(H X "%y = input f32[2] name=\"x\"\n"), BRAID_ERR_INVALID_ARGUMENT, "3:6",
     "duplicate input name"},
    {T(H "%x = input f32[2] name=\"1x\"\n"), BRAID_ERR_INVALID_ARGUMENT, "2:6",
     "not valid"},
    {T(H X "%y = neg %x device=\"gpu\"\n"), BRAID_ERR_INVALID_ARGUMENT, "3:20",
     "device \"gpu\""},
    {T(H X "%y = neg %x name=\"\"\n"), BRAID_ERR_INVALID_ARGUMENT, "3:18",
     "empty"},
    {T(H X "%y = reshape %x shape=[4,-1]\n"), BRAID_ERR_SHAPE, "3:6",
     "cannot infer"},
    {T(H X "%y = copy %x\n"), BRAID_ERR_UNSUPPORTED, "3:6", "compiler"},
    {T(H "%r = random_uniform f32[2] seed=1 low=1 high=0\n"),
     BRAID_ERR_INVALID_ARGUMENT, "2:6", "low 1, high 0"},
    /* outputs */
    {T(H X "output \"y\" = %q\n"), BRAID_ERR_PARSE, "3:14", "undefined label"},
    {T(H X "output y = %x\n"), BRAID_ERR_PARSE, "3:8",
     "expected a quoted string"},
    {T(H X "output \"y\" %x\n"), BRAID_ERR_PARSE, "3:12", "expected '='"},
    {T(H X "output \"y\" = 3\n"), BRAID_ERR_PARSE, "3:14", "expected a label"},
    {T(H X "output \"y\" = %x\noutput \"y\" = %x\n"),
     BRAID_ERR_INVALID_ARGUMENT, "4:8", "duplicate output name"},
    /* CRLF line ends count as one line each */
    {T("braid-graph 1\r\n\r\n%x = input f32[2] name=\"x\"\r\n%y = ad %x\r\n"),
     BRAID_ERR_PARSE, "4:6", "unknown op"},
};

/* Parses text from an exact-size copy (no NUL after it: ASan catches any
 * read past len). */
static braid_graph *parse_exact(const char *text, size_t len,
                                const char *file) {
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    braid_graph *g = braid_graph_parse(copy, len, file, NULL);
    free(copy);
    return g;
}

Test(text_errors, every_error_kind_has_position_and_status) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        braid_graph *g = parse_exact(c->text, c->len, NULL);
        cr_assert(g);
        const char *err = braid_graph_error(g);
        char want[64];
        snprintf(want, sizeof want, "<input>:%s: ", c->where);
        cr_expect_eq(braid_graph_status(g), c->status,
                     "case %zu: status %s, want %s (%s)", i,
                     braid_status_name(braid_graph_status(g)),
                     braid_status_name(c->status), err);
        cr_expect(strncmp(err, want, strlen(want)) == 0,
                  "case %zu: error \"%s\" should start with \"%s\"", i, err,
                  want);
        cr_expect(strstr(err, c->msg) != NULL,
                  "case %zu: error \"%s\" should contain \"%s\"", i, err,
                  c->msg);
        cr_expect_str_eq(braid_last_error(), err, "case %zu", i);
        braid_graph_free(g);
    }
}

Test(text_errors, filename_and_arguments) {
    const char *t = H "%y = ad %x\n";
    braid_graph *g = braid_graph_parse(t, strlen(t), "model.graph", NULL);
    cr_assert_str_eq(braid_graph_error(g),
                     "model.graph:2:6: unknown op 'ad' (did you mean "
                     "'add'?)");
    braid_graph_free(g);
    g = braid_graph_parse(NULL, 5, NULL, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_INVALID_ARGUMENT);
    braid_graph_free(g);
    g = braid_graph_parse(NULL, 0, NULL, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_PARSE);
    cr_assert_str_eq(braid_graph_error(g),
                     "<input>:1:1: expected the header 'braid-graph 1', "
                     "found end of file");
    braid_graph_free(g);
    g = braid_graph_load(NULL, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_INVALID_ARGUMENT);
    braid_graph_free(g);
    /* the text stops where len says, even inside a token */
    t = H "%x = input f32[2] name=\"x\"\noutput \"y\" = %x\n";
    g = braid_graph_parse(t, strlen(t) - 4, NULL, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_PARSE);
    cr_assert(strstr(braid_graph_error(g), "3:13: expected a label"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
}

/* A long label, a long line and many labels stay fast (hash map, linear
 * lexing) and long tokens are reported truncated. */
Test(text_errors, long_inputs) {
    size_t n = 200000;
    char *t = malloc(n + 100);
    strcpy(t, H "%");
    size_t at = strlen(t);
    memset(t + at, 'a', n);
    strcpy(t + at + n, " = nope\n");
    braid_graph *g = parse_exact(t, strlen(t), NULL);
    cr_assert_str_eq(braid_graph_error(g), "<input>:2:200005: unknown op "
                                           "'nope'");
    braid_graph_free(g);
    free(t);
}

/* ---- allocation failures ------------------------------------------------- */

/* Each block carries a header with its size, so a wrong old_size passed to
 * the hook is caught, and live bytes are counted. */
typedef struct counting {
    long calls;     /* allocations and growths so far */
    long fail_at;   /* the call number that fails (0: none) */
    long long live; /* bytes currently allocated */
    long bad_sizes; /* frees/reallocs whose old_size was wrong */
} counting;

static void *counting_alloc(void *user, void *ptr, size_t old_size,
                            size_t new_size) {
    counting *c = user;
    size_t *hdr = ptr ? (size_t *)ptr - 2 : NULL;
    if (hdr && hdr[0] != old_size) c->bad_sizes++;
    if (new_size == 0) {
        if (hdr) {
            c->live -= (long long)hdr[0];
            free(hdr);
        }
        return NULL;
    }
    if (++c->calls == c->fail_at) return NULL;
    size_t *p = realloc(hdr, new_size + 2 * sizeof(size_t));
    if (p == NULL) return NULL;
    c->live += (long long)new_size - (long long)(hdr ? p[0] : 0);
    p[0] = new_size;
    return p + 2;
}

/* Parses text with allocation number n failing, for n = 1, 2, ... until a
 * parse succeeds; every failure is a clean OOM error and frees all. */
static void fail_every_allocation(const char *text, const char *path) {
    counting c = {0};
    braid_graph_options o = {counting_alloc, &c};
    long n;
    for (n = 1;; n++) {
        c.calls = 0;
        c.fail_at = n;
        braid_graph *g = path ? braid_graph_load(path, &o)
                              : braid_graph_parse(text, strlen(text), NULL, &o);
        if (g == NULL) {
            cr_assert_eq(n, 1, "NULL graph only when the graph fails");
        } else {
            braid_status s = braid_graph_status(g);
            bool done = s == BRAID_OK;
            if (!done) {
                cr_assert_eq(s, BRAID_ERR_OUT_OF_MEMORY, "n=%ld: %s", n,
                             braid_graph_error(g));
                cr_assert(strncmp(braid_graph_error(g), path ? path : "<input>",
                                  5) == 0,
                          "n=%ld: unprefixed: %s", n, braid_graph_error(g));
            }
            braid_graph_free(g);
            cr_assert_eq(c.live, 0, "n=%ld: %lld bytes leaked", n, c.live);
            cr_assert_eq(c.bad_sizes, 0, "n=%ld: wrong old_size", n);
            if (done) break;
        }
        cr_assert_eq(c.live, 0);
    }
    cr_assert_gt(n, 20, "only %ld allocations?", n);
    cr_log_info("allocation failure loop: %ld allocations", n);
}

Test(text_errors, allocation_failures) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    braid_graph *g = ts_random_graph(7, &o);
    /* a constant list and base64 data, names, hints, many labels */
    braid_tensor big = braid_iota(g, BRAID_F32, 1, (int64_t[]){100}, 0);
    braid_set_name(g, big, "big");
    float small[3] = {1, 2, 3};
    braid_tensor c = braid_constant(g, BRAID_F32, 1, (int64_t[]){3}, small);
    braid_set_device(g, c, "cpu");
    braid_output(g, "c", braid_concat(g, 2, (braid_tensor[]){c, c}, 0));
    char *text;
    cr_assert_eq(braid_graph_print(g, &text, NULL), BRAID_OK, "%s",
                 braid_last_error());
    fail_every_allocation(text, NULL);
    char path[] = "/tmp/braid-alloc-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(braid_graph_write_file(g, path), BRAID_OK);
    fail_every_allocation(NULL, path);
    unlink(path);
    free(text);
    braid_graph_free(g);
}
