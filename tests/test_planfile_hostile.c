/* tests/test_planfile_hostile.c — plan files that are truncated, corrupt or
 * crafted: every one either fails with a message naming the header, the
 * section table or a section and field, or loads as a plan that runs. Bit
 * flips are tried with the checksums left as they are (the CRCs must catch
 * them) and re-sealed (the field validation must). */
#define _POSIX_C_SOURCE 200809L

#include "planfile_support.h"

#include <time.h>

/* A small plan that still has a bit of everything: a GPU part (copies,
 * events, streams), fused programs, a matmul, a reduction, a view, two
 * equal constants. */
static braid_plan *small_gpu_plan(braid_graph **graph) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[2] = {4, 8}, wd[2] = {8, 3}, rd[1] = {12};
    float w[24];
    for (int i = 0; i < 24; i++) w[i] = 0.125f * (float)(i % 5) - 0.25f;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor c = braid_constant(g, BRAID_F32, 2, wd, w);
    braid_tensor c2 = braid_constant(g, BRAID_F32, 2, wd, w);
    braid_tensor r = braid_relu(g, x);
    braid_set_device(g, r, "cuda:0");
    braid_tensor m = braid_matmul(g, r, braid_mul(g, c, c2), 0);
    braid_tensor y = braid_sigmoid(g, braid_reshape(g, m, 1, rd));
    braid_set_name(g, y, "act");
    braid_output(g, "y", y);
    braid_output(g, "s", braid_sum(g, braid_exp(g, x), 0, NULL, true));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none";
    o.num_threads = 1;
    o.disable_passes = BRAID_PASS_SIMPLIFY; /* keep both constants */
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    *graph = g;
    return p;
}

static uint64_t get(const unsigned char *d, size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)d[at + i] << (8 * i);
    return v;
}

static void put(unsigned char *d, size_t at, int n, uint64_t v) {
    for (int i = 0; i < n; i++) d[at + i] = (unsigned char)(v >> (8 * i));
}

/* Offset and size of section type t in the file d (asserts it exists). */
static void section(const unsigned char *d, uint32_t t, size_t *off,
                    size_t *size, size_t *entry) {
    uint32_t count = (uint32_t)get(d, 20, 4);
    for (uint32_t i = 0; i < count; i++) {
        size_t e = 64 + 32 * (size_t)i;
        if (get(d, e, 4) != t) continue;
        *off = (size_t)get(d, e + 8, 8);
        *size = (size_t)get(d, e + 16, 8);
        if (entry) *entry = e;
        return;
    }
    cr_assert_fail("no section %u", t);
}

/* Loads d; on success runs the plan (emulated) on random inputs named
 * after its own user's graph. Returns whether it loaded. */
static bool outcome(const unsigned char *d, size_t n, const char *what) {
    braid_plan *q = NULL;
    braid_load_options o;
    braid_load_options_init(&o);
    o.num_threads = 1; /* what the file says may be up to 1024 */
    braid_status s = br_planfile_load(d, n, &o, "plan file", &q);
    if (s != BRAID_OK) {
        cr_assert_null(q);
        pf_assert_error_shape(s, what);
        return false;
    }
    uint64_t arena = 0;
    for (uint32_t i = 0; i < q->res.narenas; i++)
        arena += q->res.arenas[i].bytes;
    if (arena <= ((uint64_t)64 << 20)) {
        ts_io *io = ts_io_new(braid_plan_graph(q), 3);
        cr_assert(io);
        s = pf_run(q, io, true, 5);
        cr_assert_eq(s, BRAID_OK, "%s: the loaded plan does not run: %s",
                     what, braid_last_error());
        ts_io_free(io);
    }
    braid_plan_free(q);
    return true;
}

/* An error whose message contains want. */
static void expect(const unsigned char *d, size_t n, braid_status want,
                   const char *needle, const char *what) {
    braid_plan *q = NULL;
    braid_status s = br_planfile_load(d, n, NULL, "plan file", &q);
    cr_assert_eq(s, want, "%s: status %s (%s)", what, braid_status_name(s),
                 braid_last_error());
    pf_assert_error_shape(s, what);
    cr_assert(strstr(braid_last_error(), needle), "%s: \"%s\" lacks \"%s\"",
              what, braid_last_error(), needle);
}

static unsigned char *fixture(size_t *n, braid_plan **plan, braid_graph **g) {
    *plan = small_gpu_plan(g);
    return pf_save(*plan, n);
}

static void release(unsigned char *d, braid_plan *p, braid_graph *g) {
    free(d);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(planfile_hostile, every_truncation_fails) {
    size_t n;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    cr_log_info("the small plan file has %zu bytes", n);
    for (size_t len = 0; len < n; len++) {
        unsigned char *c = malloc(len ? len : 1);
        memcpy(c, d, len);
        braid_plan *q = NULL;
        braid_status s = br_planfile_load(c, len, NULL, "plan file", &q);
        cr_assert_neq(s, BRAID_OK, "truncated to %zu bytes, it loaded", len);
        pf_assert_error_shape(s, "truncation");
        free(c);
    }
    release(d, p, g);
}

/* Bytes some checksum covers: the header's first 60, the table, the
 * sections. Everything else is padding. */
static bool covered(const unsigned char *d, size_t at) {
    uint32_t count = (uint32_t)get(d, 20, 4);
    if (at < 64 + 32 * (size_t)count) return true;
    for (uint32_t i = 0; i < count; i++) {
        size_t e = 64 + 32 * (size_t)i, off = (size_t)get(d, e + 8, 8);
        if (at >= off && at - off < (size_t)get(d, e + 16, 8)) return true;
    }
    return false;
}

/* Every single bit flipped, checksums as they were: a flip in a byte a
 * CRC covers fails with a checksum message (magic and byte order first);
 * a flip in padding loads. */
Test(planfile_hostile, every_bit_flip_is_caught_by_the_checksums) {
    size_t n;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    unsigned char *c = malloc(n);
    size_t padding = 0;
    for (size_t bit = 0; bit < 8 * n; bit++) {
        memcpy(c, d, n);
        c[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        braid_plan *q = NULL;
        braid_status s = br_planfile_load(c, n, NULL, "plan file", &q);
        if (!covered(d, bit / 8)) {
            cr_assert_eq(s, BRAID_OK, "padding bit %zu: %s", bit,
                         braid_last_error());
            braid_plan_free(q);
            padding++;
            continue;
        }
        cr_assert_neq(s, BRAID_OK, "bit %zu flipped, the file loaded", bit);
        pf_assert_error_shape(s, "bit flip");
        const char *m = braid_last_error();
        cr_assert(strstr(m, "crc") || strstr(m, "checksum") ||
                      strstr(m, "magic") || strstr(m, "byte_order") ||
                      strstr(m, "version") || strstr(m, "header_size") ||
                      strstr(m, "section_count") || strstr(m, "file_size"),
                  "bit %zu: %s", bit, m);
    }
    cr_log_info("%zu bit flips, %zu in padding", 8 * n, padding);
    free(c);
    release(d, p, g);
}

/* Bit flips re-sealed (the field validation must catch them, or the plan
 * must run): every `stride`-th bit of d (stride odd: every bit position
 * of a byte is hit). */
static void resealed_flips(const unsigned char *d, size_t n, size_t stride) {
    unsigned char *c = malloc(n);
    size_t tried = 0, loaded = 0;
    for (size_t bit = 0; bit < 8 * n; bit += stride, tried++) {
        memcpy(c, d, n);
        c[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        br_planfile_reseal(c, n);
        loaded += outcome(c, n, "bit flip, re-sealed");
    }
    cr_log_info("%zu re-sealed bit flips of %zu bytes: %zu loaded and ran",
                tried, n, loaded);
    free(c);
}

/* The smallest useful plan: every bit. */
Test(planfile_hostile, every_bit_flip_resealed_of_a_tiny_plan,
     .timeout = 300) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[1] = {3};
    braid_output(g, "y", braid_neg(g, braid_input(g, "x", BRAID_F32, 1, xd)));
    braid_plan *p = pf_compile(g, "cpu");
    size_t n;
    unsigned char *d = pf_save(p, &n);
    resealed_flips(d, n, 1);
    release(d, p, g);
}

/* The GPU plan: every 7th bit. */
Test(planfile_hostile, bit_flips_resealed_of_a_gpu_plan, .timeout = 300) {
    size_t n;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    resealed_flips(d, n, 7);
    release(d, p, g);
}

Test(planfile_hostile, inflated_counts_offsets_and_sizes) {
    size_t n, off, size, entry;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    unsigned char *c = malloc(n);
    static const struct {
        uint32_t section; /* section type, 0: the header */
        size_t at;        /* offset within it */
        int width;        /* bytes */
        uint64_t value;   /* written there */
        const char *needle;
    } cases[] = {
        {BR_PF_GRAPH, 0, 4, UINT32_MAX, "section GRAPH, nnodes"},
        {BR_PF_GRAPH, 4, 4, UINT32_MAX, "section GRAPH, noutputs"},
        {BR_PF_PLAN_GRAPH, 0, 4, 0x7FFFFFFF, "section PLAN_GRAPH, nnodes"},
        {BR_PF_PLAN, 0, 4, UINT32_MAX, "section PLAN, ndevices"},
        {BR_PF_PLAN, 0, 4, 65, "section PLAN, ndevices"},
        {BR_PF_MEMORY, 0, 4, UINT32_MAX, "section MEMORY, narenas"},
        {BR_PF_CONSTANTS, 0, 4, UINT32_MAX, "section CONSTANTS, nblobs"},
        {BR_PF_CONSTANTS, 8, 8, UINT64_MAX, "section CONSTANTS, blobs[0]"},
        {BR_PF_CONSTANTS, 16, 8, UINT64_MAX, "section CONSTANTS, blobs[0]"},
        {BR_PF_KERNELS, 0, 8, UINT64_MAX - 1, "section KERNELS, source"},
        {BR_PF_META, 0, 4, UINT32_MAX - 1, "section META, braid_version"},
        {0, 20, 4, UINT32_MAX, "header: section_count"},
        {0, 16, 4, UINT32_MAX, "header: header_size"},
        {0, 24, 8, UINT64_MAX, "header: file_size"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        memcpy(c, d, n);
        size_t base = 0;
        if (cases[k].section) section(c, cases[k].section, &base, &size, NULL);
        put(c, base + cases[k].at, cases[k].width, cases[k].value);
        br_planfile_reseal(c, n);
        expect(c, n, BRAID_ERR_PARSE, cases[k].needle, cases[k].needle);
    }
    /* the table: offsets and sizes past the end, just over it, unaligned */
    for (uint32_t t = BR_PF_META; t <= BR_PF_KERNELS; t++) {
        const uint64_t bad[][2] = {{UINT64_MAX, 0}, {0, UINT64_MAX},
                                   {0, 1}, {1, 0}};
        for (int k = 0; k < 4; k++) {
            memcpy(c, d, n);
            section(c, t, &off, &size, &entry);
            uint64_t no = bad[k][0] == UINT64_MAX ? UINT64_MAX : off + bad[k][0];
            uint64_t ns = bad[k][1] == UINT64_MAX ? UINT64_MAX
                          : bad[k][1] == 1        ? n - off + 1
                                                  : size;
            put(c, entry + 8, 8, no);
            put(c, entry + 16, 8, ns);
            expect(c, n, BRAID_ERR_PARSE, "header: header_crc",
                   "table, not re-sealed");
            br_planfile_reseal(c, n);
            expect(c, n, BRAID_ERR_PARSE, "section table[", "table");
        }
    }
    free(c);
    release(d, p, g);
}

Test(planfile_hostile, sections_shuffled_duplicated_missing) {
    size_t n;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    unsigned char *c = malloc(n);
    memcpy(c, d, n);
    for (int i = 0; i < 3; i++) { /* reverse the 7 entries */
        unsigned char tmp[32];
        memcpy(tmp, c + 64 + 32 * i, 32);
        memcpy(c + 64 + 32 * i, c + 64 + 32 * (6 - i), 32);
        memcpy(c + 64 + 32 * (6 - i), tmp, 32);
    }
    br_planfile_reseal(c, n);
    cr_assert(outcome(c, n, "shuffled table"), "%s", braid_last_error());
    memcpy(c, d, n);
    memcpy(c + 64 + 32, c + 64, 32);
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_PARSE, "listed twice", "duplicated section");
    memcpy(c, d, n);
    put(c, 20, 4, 6); /* drop the last entry (KERNELS) */
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_PARSE, "section KERNELS is missing", "missing");
    /* overlapping sections: META over GRAPH */
    memcpy(c, d, n);
    size_t goff, gsize;
    section(c, BR_PF_GRAPH, &goff, &gsize, NULL);
    put(c, 64 + 8, 8, goff);
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_PARSE, "section table[", "overlap");
    free(c);
    release(d, p, g);
}

/* d with an eighth section of type `type` and flags appended. */
static unsigned char *with_extra(const unsigned char *d, size_t n,
                                 uint32_t type, uint32_t flags, size_t *out) {
    size_t at = (n + 63) / 64 * 64, m = at + 64;
    unsigned char *c = calloc(1, m);
    memcpy(c, d, n);
    cr_assert_leq(64 + 32 * 8, get(d, 64 + 8, 8), "no room for an entry");
    size_t e = 64 + 32 * 7;
    put(c, e, 4, type);
    put(c, e + 4, 4, flags);
    put(c, e + 8, 8, at);
    put(c, e + 16, 8, 64);
    memset(c + at, 0xAB, 64);
    put(c, 20, 4, 8);
    put(c, 24, 8, m);
    br_planfile_reseal(c, m);
    *out = m;
    return c;
}

Test(planfile_hostile, unknown_sections_and_versions) {
    size_t n, m;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    unsigned char *c = with_extra(d, n, 99, 0, &m);
    cr_assert(outcome(c, m, "unknown optional section"), "%s",
              braid_last_error());
    free(c);
    c = with_extra(d, n, 99, BR_PF_REQUIRED, &m);
    expect(c, m, BRAID_ERR_UNSUPPORTED, "unknown required section type 99",
           "unknown required section");
    free(c);
    c = malloc(n);
    memcpy(c, d, n);
    put(c, 10, 2, BR_PF_MINOR + 1);
    br_planfile_reseal(c, n);
    cr_assert(outcome(c, n, "newer minor"), "%s", braid_last_error());
    memcpy(c, d, n);
    put(c, 8, 2, BR_PF_MAJOR + 1);
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_UNSUPPORTED, "newer braid", "newer major");
    memcpy(c, d, n);
    put(c, 8, 2, 0);
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_PARSE, "header: version", "major 0");
    memcpy(c, d, n);
    c[0] = 'X';
    expect(c, n, BRAID_ERR_PARSE, "header: magic", "magic");
    memcpy(c, d, n);
    put(c, 12, 4, 0x04030201u);
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_UNSUPPORTED, "big-endian", "byte order");
    memcpy(c, d, n);
    put(c, 12, 4, 0x01020305u);
    br_planfile_reseal(c, n);
    expect(c, n, BRAID_ERR_PARSE, "header: byte_order", "byte order");
    free(c);
    /* trailing bytes in a section (KERNELS, the last one): an error with
     * the same minor, skipped with a newer one */
    c = calloc(1, n + 8);
    memcpy(c, d, n);
    size_t koff, ksize, kentry;
    section(c, BR_PF_KERNELS, &koff, &ksize, &kentry);
    cr_assert_eq(koff + ksize, n, "KERNELS is not the last section");
    put(c, kentry + 16, 8, ksize + 8);
    put(c, 24, 8, n + 8);
    br_planfile_reseal(c, n + 8);
    expect(c, n + 8, BRAID_ERR_PARSE, "section KERNELS, 8 unexpected bytes",
           "trailing bytes");
    put(c, 10, 2, BR_PF_MINOR + 1);
    br_planfile_reseal(c, n + 8);
    cr_assert(outcome(c, n + 8, "trailing bytes, newer minor"), "%s",
              braid_last_error());
    free(c);
    release(d, p, g);
}

/* Random mutations for a bounded time: flips, truncations, inflated
 * fields, shuffled entries; most re-sealed. */
Test(planfile_hostile, random_mutations, .timeout = 300) {
    size_t n;
    braid_plan *p;
    braid_graph *g;
    unsigned char *d = fixture(&n, &p, &g);
    unsigned char *c = malloc(n);
    uint64_t rng = 2026;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t tries = 0, loaded = 0;
    static const uint64_t inflate[] = {UINT32_MAX, 0x7FFFFFFF, 0x80000000,
                                       65, 257, 0, 1};
    for (;; tries++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        double s = (double)(t.tv_sec - t0.tv_sec) +
                   1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
        if (s > 2.0 && tries >= 200) break;
        memcpy(c, d, n);
        size_t len = n;
        int kinds = 1 + ts_rand_int(&rng, 0, 2);
        for (int k = 0; k < kinds; k++) {
            size_t at = (size_t)ts_rand_int(&rng, 0, (int)len - 1);
            switch (ts_rand_int(&rng, 0, 4)) {
            case 0: /* a few bit flips */
                for (int b = ts_rand_int(&rng, 1, 8); b > 0; b--)
                    c[ts_rand_int(&rng, 0, (int)len - 1)] ^=
                        (unsigned char)(1u << ts_rand_int(&rng, 0, 7));
                break;
            case 1: /* an inflated u32 */
                if (at + 4 <= len)
                    put(c, at & ~(size_t)3, 4,
                        inflate[ts_rand_int(&rng, 0, 6)]);
                break;
            case 2: /* an inflated u64 */
                if (at + 8 <= len)
                    put(c, at, 8, ts_rand_u64(&rng) >> ts_rand_int(&rng, 0, 63));
                break;
            case 3: { /* two table entries swapped */
                int i = ts_rand_int(&rng, 0, 6), j = ts_rand_int(&rng, 0, 6);
                unsigned char tmp[32];
                memcpy(tmp, c + 64 + 32 * i, 32);
                memcpy(c + 64 + 32 * i, c + 64 + 32 * j, 32);
                memcpy(c + 64 + 32 * j, tmp, 32);
                break;
            }
            default: /* truncation */
                len = (size_t)ts_rand_int(&rng, 0, (int)len);
                break;
            }
        }
        if (ts_rand_int(&rng, 0, 9) > 0) br_planfile_reseal(c, len);
        loaded += outcome(c, len, "random mutation");
    }
    cr_log_info("%zu random mutations, %zu loaded and ran", tries, loaded);
    free(c);
    release(d, p, g);
}
