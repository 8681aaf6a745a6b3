/* tests/test_parse_mutate.c — the bounded, deterministic cousin of
 * fuzz/fuzz_parse.c that runs in CI: every example graph and a few printed
 * random graphs are mutated (bit flips, byte insertions and deletions,
 * duplicated spans, truncations, huge numbers, deep and long lists) and fed
 * to the parser. Nothing may crash (ASan/UBSan builds catch memory errors);
 * a failure must carry a position; a success must round-trip. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/support.h"

/* A seed text (malloc'd, not NUL-terminated use: len counts). */
typedef struct seed_text {
    char *text;
    size_t len;
} seed_text;

typedef struct seed_set {
    seed_text s[64]; /* the seeds */
    int n;           /* how many */
} seed_set;

/* Counters reported at the end of each test. */
typedef struct stats {
    long parsed; /* inputs fed to the parser */
    long ok;     /* of which parsed successfully (and round-tripped) */
} stats;

static void add_seed(seed_set *set, const char *text, size_t len) {
    cr_assert_lt(set->n, 64);
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    set->s[set->n].text = copy;
    set->s[set->n++].len = len;
}

static void load_seeds(seed_set *set) {
    set->n = 0;
    const char *dir = BRAID_SOURCE_DIR "/examples/graphs";
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    for (struct dirent *e; (e = readdir(d)) != NULL && set->n < 48;) {
        size_t n = strlen(e->d_name);
        if (n < 7 || strcmp(e->d_name + n - 6, ".graph") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert(f);
        char buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        add_seed(set, buf, len);
    }
    closedir(d);
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    for (uint64_t k = 0; k < 10; k++) {
        braid_graph *g = ts_random_graph(1000 + k, &o);
        char *text;
        size_t len;
        cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
        add_seed(set, text, len);
        free(text);
        braid_graph_free(g);
    }
}

static void free_seeds(seed_set *set) {
    for (int i = 0; i < set->n; i++)
        free(set->s[i].text);
}

/* Parses len bytes from an exact-size copy and checks the contract. */
static void feed(const char *text, size_t len, stats *st) {
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    braid_graph *g = braid_graph_parse(copy, len, "m", NULL);
    free(copy);
    cr_assert(g);
    st->parsed++;
    if (braid_graph_status(g) != BRAID_OK) {
        cr_assert(strncmp(braid_graph_error(g), "m:", 2) == 0,
                  "error without position: %s", braid_graph_error(g));
        braid_graph_free(g);
        return;
    }
    st->ok++;
    char *t1, *t2;
    size_t n1, n2;
    cr_assert_eq(braid_graph_print(g, &t1, &n1), BRAID_OK);
    braid_graph *h = braid_graph_parse(t1, n1, "p", NULL);
    cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s\n%.2000s",
                 braid_graph_error(h), t1);
    cr_assert(bg_graph_equal(g, h), "parse(print(g)) != g:\n%.2000s", t1);
    cr_assert_eq(braid_graph_print(h, &t2, &n2), BRAID_OK);
    cr_assert(n1 == n2 && memcmp(t1, t2, n1) == 0, "print not stable");
    free(t1);
    free(t2);
    braid_graph_free(h);
    braid_graph_free(g);
}

/* ---- mutations ----------------------------------------------------------- */

/* A growable byte buffer for building mutants. */
typedef struct mbuf {
    char *p;
    size_t len, cap;
} mbuf;

static void mb_reserve(mbuf *b, size_t extra) {
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    b->p = realloc(b->p, cap);
    cr_assert(b->p);
    b->cap = cap;
}

/* Replaces bytes [at, at + del) with ins[0..n). */
static void mb_splice(mbuf *b, size_t at, size_t del, const char *ins,
                      size_t n) {
    if (at > b->len) at = b->len;
    if (del > b->len - at) del = b->len - at;
    mb_reserve(b, n);
    memmove(b->p + at + n, b->p + at + del, b->len - at - del);
    memcpy(b->p + at, ins, n);
    b->len = b->len - del + n;
}

static size_t pick(uint64_t *rng, size_t n) {
    return n ? (size_t)(ts_rand_u64(rng) % n) : 0;
}

static const char interesting[] = "\0\n\r\t \"\\[],%=:#-+.0179eE_xbn";

static const char *const huge[] = {
    "99999999999999999999999",
    "-9223372036854775809",
    "9223372036854775807",
    "18446744073709551616",
    "1e400",
    "-1e-400",
    "nan",
    "-nan",
    "inf",
    "2147483648",
    "-2147483649",
    "0",
    "-0",
    "4294967296",
    "1.7976931348623159e308",
    "65520",
    "3.4028236e38",
    "1" /* an extra digit */,
};

/* Replaces the run of digits around a random position by a huge number. */
static void mutate_number(mbuf *b, uint64_t *rng) {
    size_t i = pick(rng, b->len);
    size_t tries = 0;
    while (i < b->len && !(b->p[i] >= '0' && b->p[i] <= '9') && tries++ < 4096)
        i = (i + 1) % b->len;
    size_t j = i;
    while (j < b->len && b->p[j] >= '0' && b->p[j] <= '9')
        j++;
    const char *h = huge[pick(rng, sizeof huge / sizeof huge[0])];
    mb_splice(b, i, j - i, h, strlen(h));
}

/* Inserts a deep or long construct: many '[', a long list, a long label. */
static void mutate_big(mbuf *b, uint64_t *rng) {
    size_t n = 1 + pick(rng, 3000);
    mbuf ins = {0};
    int kind = (int)pick(rng, 4);
    for (size_t k = 0; k < n; k++) {
        const char *piece = kind == 0   ? "["
                            : kind == 1 ? "1, "
                            : kind == 2 ? "a"
                                        : "\n";
        mb_splice(&ins, ins.len, 0, piece, strlen(piece));
    }
    mb_splice(b, pick(rng, b->len + 1), 0, ins.p, ins.len);
    free(ins.p);
}

/* Duplicates a line (duplicate labels, outputs) or swaps two lines (use
 * before definition). */
static void mutate_lines(mbuf *b, uint64_t *rng) {
    size_t a = pick(rng, b->len);
    while (a > 0 && b->p[a - 1] != '\n')
        a--;
    size_t e = a;
    while (e < b->len && b->p[e] != '\n')
        e++;
    if (e < b->len) e++;
    char *line = malloc(e - a + 1);
    memcpy(line, b->p + a, e - a);
    size_t n = e - a;
    if (pick(rng, 2))
        mb_splice(b, a, n, "", 0); /* moved: removed here, put elsewhere */
    size_t to = pick(rng, b->len + 1);
    while (to > 0 && b->p[to - 1] != '\n')
        to--;
    mb_splice(b, to, 0, line, n);
    free(line);
}

static void mutate_once(mbuf *b, uint64_t *rng) {
    size_t at = pick(rng, b->len + 1);
    char c;
    switch (pick(rng, 8)) {
    case 0: /* bit flip */
        if (b->len) b->p[pick(rng, b->len)] ^= (char)(1u << pick(rng, 8));
        break;
    case 1: /* insert an interesting byte */
        c = interesting[pick(rng, sizeof interesting - 1)];
        mb_splice(b, at, 0, &c, 1);
        break;
    case 2: /* delete a few bytes */
        mb_splice(b, at, 1 + pick(rng, 4), "", 0);
        break;
    case 3: { /* duplicate a span (a token or a few) elsewhere */
        size_t from = pick(rng, b->len), n = 1 + pick(rng, 40);
        if (n > b->len - from) n = b->len - from;
        char tmp[64];
        memcpy(tmp, b->p + from, n);
        mb_splice(b, at, 0, tmp, n);
        break;
    }
    case 4:
        mutate_number(b, rng);
        break;
    case 5:
        mutate_big(b, rng);
        break;
    case 6:
        mutate_lines(b, rng);
        break;
    default: /* truncate */
        b->len = pick(rng, b->len + 1);
        break;
    }
}

/* count mutants of seeds [first, last) with 1..3 stacked mutations each. */
static void run_mutations(int first_seed_mod, int count, uint64_t rng_seed) {
    seed_set set;
    load_seeds(&set);
    stats st = {0};
    uint64_t rng = rng_seed;
    mbuf b = {0};
    for (int k = 0; k < count; k++) {
        const seed_text *s = &set.s[(k * 2 + first_seed_mod) % set.n];
        b.len = 0;
        mb_splice(&b, 0, 0, s->text, s->len);
        int times = 1 + (int)pick(&rng, 3);
        for (int t = 0; t < times; t++)
            mutate_once(&b, &rng);
        feed(b.p, b.len, &st);
    }
    free(b.p);
    free_seeds(&set);
    cr_assert_eq(st.parsed, count);
    cr_assert_gt(st.ok, count / 50, "too few mutants parse (%ld)", st.ok);
    cr_log_info("%ld mutants, %ld parsed and round-tripped", st.parsed, st.ok);
}

Test(parse_mutate, mutations_even_seeds, .timeout = 120) {
    run_mutations(0, 11000, 1);
}

Test(parse_mutate, mutations_odd_seeds, .timeout = 120) {
    run_mutations(1, 11000, 2);
}

/* Every prefix of the shorter seeds, and of the longer ones every 7th. */
Test(parse_mutate, truncations, .timeout = 120) {
    seed_set set;
    load_seeds(&set);
    stats st = {0};
    for (int i = 0; i < set.n; i++) {
        size_t step = set.s[i].len <= 2048 ? 1 : 7;
        for (size_t n = 0; n <= set.s[i].len; n += step)
            feed(set.s[i].text, n, &st);
    }
    free_seeds(&set);
    cr_assert_gt(st.ok, 0);
    cr_log_info("%ld truncations, %ld parsed", st.parsed, st.ok);
}
