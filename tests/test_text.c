/* tests/test_text.c — the .graph text format round-trips exactly:
 * parse(print(g)) == g and print(parse(print(g))) == print(g), on
 * hand-built graphs covering every op and dtype (special float values
 * included), every example graph, and random graphs. Errors and allocation
 * failures are in test_text_errors.c. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/golden.h"
#include "tests/support/support.h"

/* Prints g, parses the text from an exact-size buffer (no NUL after it, so
 * ASan catches any over-read), and checks both round-trip properties. */
static void check_roundtrip(const braid_graph *g, const char *what) {
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s: built with error: %s",
                 what, braid_graph_error(g));
    char *t1 = NULL;
    size_t n1 = 0;
    cr_assert_eq(braid_graph_print(g, &t1, &n1), BRAID_OK, "%s: print: %s",
                 what, braid_last_error());
    cr_assert_eq(strlen(t1), n1, "%s: length", what);
    char *exact = malloc(n1 ? n1 : 1);
    cr_assert(exact);
    memcpy(exact, t1, n1);
    braid_graph *g2 = braid_graph_parse(exact, n1, what, NULL);
    free(exact);
    cr_assert(g2);
    cr_assert_eq(braid_graph_status(g2), BRAID_OK, "%s: parse: %s\n%.3000s",
                 what, braid_graph_error(g2), t1);
    cr_assert(bg_graph_equal(g, g2), "%s: parse(print(g)) != g\n%.3000s", what,
              t1);
    char *t2 = NULL;
    cr_assert_eq(braid_graph_print(g2, &t2, NULL), BRAID_OK);
    cr_assert(strcmp(t1, t2) == 0,
              "%s: print(parse(print(g))) != print(g)\n%.2000s\n---\n%.2000s",
              what, t1, t2);
    free(t1);
    free(t2);
    braid_graph_free(g2);
}

static const int64_t d23[] = {2, 3};

/* Every elementwise op on inputs of its accepted dtypes. */
static void add_elementwise(braid_graph *g) {
    braid_tensor x = braid_input(g, "xf", BRAID_F32, 2, d23);
    braid_tensor y = braid_input(g, "yf", BRAID_F32, 1, (int64_t[]){3});
    braid_tensor xi = braid_input(g, "xi", BRAID_I32, 2, d23);
    for (int op = 0; op < BRAID_OP_COUNT_; op++) {
        const bg_op_info *i = bg_op((braid_op)op);
        if (i->kind != BRAID_KIND_ELEMENTWISE || i->arity != 1 ||
            op == BRAID_OP_CAST)
            continue;
        braid_tensor u = braid_unary(g, (braid_op)op, x);
        braid_output(g, i->name, u);
    }
    braid_neg(g, xi), braid_abs(g, xi), braid_square(g, xi), braid_relu(g, xi);
    for (int op = BRAID_OP_ADD; op <= BRAID_OP_GE; op++)
        braid_binary(g, (braid_op)op, x, y);
    braid_tensor yi = braid_iota(g, BRAID_I32, 2, d23, 1);
    for (int op = BRAID_OP_ADD; op <= BRAID_OP_GE; op++)
        if (op != BRAID_OP_POW) braid_binary(g, (braid_op)op, xi, yi);
    braid_tensor c = braid_lt(g, x, y);
    braid_where(g, c, x, y);
    braid_eq(g, c, braid_ne(g, xi, yi));
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++) {
        braid_tensor ct = braid_cast(g, x, (braid_dtype)t);
        braid_cast(g, ct, BRAID_F64);
    }
    const braid_dtype fl[] = {BRAID_F16, BRAID_BF16, BRAID_F64};
    for (int i = 0; i < 3; i++) {
        braid_tensor a = braid_cast(g, x, fl[i]);
        braid_add(g, braid_exp(g, a), braid_pow(g, a, a));
    }
}

/* matmul, reductions, composites and shape ops. */
static void add_structural(braid_graph *g) {
    braid_tensor a = braid_input(g, "a", BRAID_F32, 3, (int64_t[]){2, 4, 5});
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, (int64_t[]){5, 4});
    braid_matmul(g, a, b, 0);
    braid_matmul(g, a, a, BRAID_TRANSPOSE_B);
    braid_matmul(g, b, b, BRAID_TRANSPOSE_A);
    braid_matmul(g, a, b, BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B);
    int ax[] = {0, 2}, neg[] = {-1};
    braid_sum(g, a, 2, ax, false);
    braid_mean(g, a, 1, neg, true);
    braid_reduce_max(g, a, 0, NULL, false);
    braid_reduce_min(g, a, 0, NULL, true);
    braid_sum(g, braid_iota(g, BRAID_I32, 2, d23, 0), 1, neg, false);
    braid_tensor sm = braid_softmax(g, a, 1);
    braid_tensor ln = braid_layer_norm(
        g, a, braid_random_normal(g, BRAID_F32, 1, (int64_t[]){5}, 3, 1, 0.1),
        braid_fill(g, BRAID_F32, 1, (int64_t[]){5}, 0.25), 1e-5);
    braid_tensor r = braid_reshape(g, a, 2, (int64_t[]){-1, 10});
    braid_permute(g, a, (int[]){2, 0, 1});
    braid_transpose(g, r);
    braid_slice(g, a, (int64_t[]){0, -3, 1}, (int64_t[]){2, 100, -1},
                (int64_t[]){1, 2, 3});
    braid_slice(g, a, (int64_t[]){1, 4, 0}, (int64_t[]){1, 4, 5}, NULL);
    braid_slice(g, a, (int64_t[]){-100, 0, 4}, (int64_t[]){100, 4, 5},
                (int64_t[]){INT64_MAX, 1, 1});
    braid_concat(g, 3, (braid_tensor[]){a, sm, ln}, 2);
    braid_concat(g, 1, (braid_tensor[]){a}, 0);
    braid_broadcast_to(g, b, 4, (int64_t[]){3, 1, 5, 4});
    braid_output(g, "softmax", sm);
    braid_output(g, "layer norm", ln);
    braid_output(g, "again", sm);
}

/* Every op the builders can make, on a mix of dtypes. */
static braid_graph *all_ops_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    add_elementwise(g);
    add_structural(g);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

Test(text, every_op) {
    braid_graph *g = all_ops_graph();
    check_roundtrip(g, "all ops");
    braid_graph_free(g);
}

Test(text, sources_scalars_and_empty_tensors) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t zero[] = {3, 0, 2};
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++) {
        braid_dtype dt = (braid_dtype)t;
        braid_fill(g, dt, 0, NULL, t == BRAID_BOOL ? 1 : -2.5);
        braid_fill(g, dt, 3, zero, 0);
        if (bg_op_accepts(BRAID_OP_IOTA, dt))
            braid_iota(g, dt, 3, (int64_t[]){2, 3, 4}, 2);
        braid_constant(g, dt, 3, zero, NULL);
        if (braid_dtype_is_float(dt)) {
            braid_random_uniform(g, dt, 2, d23, UINT64_MAX, -1e300, 1e300);
            braid_random_normal(g, dt, 0, NULL, 0, -0.0, 0.0);
        }
    }
    braid_fill(g, BRAID_F64, 1, (int64_t[]){1}, NAN);
    braid_fill(g, BRAID_F64, 1, (int64_t[]){1}, -NAN);
    braid_fill(g, BRAID_F64, 1, (int64_t[]){1}, -INFINITY);
    braid_fill(g, BRAID_F64, 1, (int64_t[]){1}, DBL_TRUE_MIN);
    braid_fill(g, BRAID_F64, 1, (int64_t[]){1}, -DBL_MAX);
    braid_fill(g, BRAID_F64, 1, (int64_t[]){1}, 0.1);
    braid_input(g, "s", BRAID_BOOL, 0, NULL);
    braid_input(g, "big", BRAID_F32, 2, (int64_t[]){1 << 20, 1 << 20});
    check_roundtrip(g, "sources");
    braid_graph_free(g);
}

/* A constant of dtype t holding n elements of raw bytes. */
static void add_constant(braid_graph *g, braid_dtype t, int64_t n,
                         const void *bytes) {
    braid_tensor c = braid_constant(g, t, 1, &n, bytes);
    cr_assert(braid_tensor_valid(c), "%s", braid_graph_error(g));
}

Test(text, constants_with_special_values) {
    braid_graph *g = braid_graph_new(NULL);
    float f[] = {0.0f,         -0.0f,   1.0f,        0.1f,
                 -3.25e-7f,    FLT_MAX, -FLT_MAX,    FLT_MIN,
                 FLT_TRUE_MIN, 1e-40f,  INFINITY,    -INFINITY,
                 NAN,          -NAN,    16777217.0f, 3.14159274f};
    add_constant(g, BRAID_F32, 16, f);
    double d[] = {0.0,
                  -0.0,
                  0.1,
                  1.0 / 3,
                  DBL_MAX,
                  -DBL_MIN,
                  DBL_TRUE_MIN,
                  1e-310,
                  INFINITY,
                  -INFINITY,
                  NAN,
                  -NAN,
                  9007199254740993.0,
                  -1e22};
    add_constant(g, BRAID_F64, 14, d);
    uint16_t h[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff,
                    0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x3c00, 0x3555};
    add_constant(g, BRAID_F16, 14, h);
    uint16_t bf[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x7f7f, 0xff7f,
                     0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x3f80, 0x3dcd};
    add_constant(g, BRAID_BF16, 12, bf);
    int32_t i[] = {0, -1, 1, INT32_MAX, INT32_MIN, 123456789};
    add_constant(g, BRAID_I32, 6, i);
    uint8_t b[] = {0, 1, 1, 0};
    add_constant(g, BRAID_BOOL, 4, b);
    /* NaN payloads and non-0/1 bools cannot be spelled as decimals: the
     * printer falls back to base64 for those constants */
    uint32_t payload[] = {0x7f800001u, 0xffbfffffu, 0x7fc00000u};
    add_constant(g, BRAID_F32, 3, payload);
    uint16_t h_payload[] = {0x7c01, 0xfd00};
    add_constant(g, BRAID_F16, 2, h_payload);
    uint8_t b_odd[] = {0, 2, 255};
    add_constant(g, BRAID_BOOL, 3, b_odd);
    braid_constant(g, BRAID_F64, 0, NULL, &d[2]); /* scalar */
    /* more than 64 elements: base64, for every dtype */
    unsigned char big[1000 * 8];
    uint64_t rng = 99;
    for (size_t k = 0; k < sizeof big; k++)
        big[k] = (unsigned char)ts_rand_u64(&rng);
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++) {
        size_t n = 1000 - (size_t)t; /* every base64 padding length */
        if (t == BRAID_BOOL)
            for (size_t k = 0; k < n; k++)
                big[k] &= 1;
        add_constant(g, (braid_dtype)t, (int64_t)n, big);
    }
    check_roundtrip(g, "special constants");
    char *text;
    braid_graph_print(g, &text, NULL);
    cr_assert(strstr(text, "-nan") && strstr(text, "-inf") &&
                  strstr(text, "0.1,") && strstr(text, "true"),
              "%s", text);
    cr_assert(strstr(text, "%6 = constant f32[3] base64\""), "%s", text);
    free(text);
    braid_graph_free(g);
}

/* Every f16 and bf16 bit pattern, in list-sized (64) and one big (base64)
 * constant: each decimal spelling reads back to the same bits. */
Test(text, every_half_bit_pattern) {
    uint16_t *all = malloc(65536 * sizeof *all);
    for (uint32_t u = 0; u < 65536; u++)
        all[u] = (uint16_t)u;
    for (int t = 0; t < 2; t++) {
        braid_dtype dt = t ? BRAID_BF16 : BRAID_F16;
        braid_graph *g = braid_graph_new(NULL);
        for (uint32_t u = 0; u < 65536; u += 64)
            add_constant(g, dt, 64, all + u);
        add_constant(g, dt, 65536, all);
        check_roundtrip(g, braid_dtype_name(dt));
        braid_graph_free(g);
    }
    free(all);
}

/* Random f32 and f64 bit patterns (all classes: subnormals, NaNs, ...). */
Test(text, random_float_bit_patterns) {
    uint64_t s = 12345;
    braid_graph *g = braid_graph_new(NULL);
    for (int k = 0; k < 200; k++) {
        uint32_t f[64];
        uint64_t d[64];
        for (int i = 0; i < 64; i++) {
            d[i] = ts_rand_u64(&s);
            /* bias toward short exponents and canonical NaNs now and then */
            f[i] = (uint32_t)(d[i] >> 32) >> (i % 3 == 0 ? 9 : 0);
            if (i == 7) f[i] = 0x7fc00000u;
        }
        add_constant(g, BRAID_F32, 64, f);
        add_constant(g, BRAID_F64, 64, d);
    }
    check_roundtrip(g, "random floats");
    braid_graph_free(g);
}

Test(text, names_and_device_hints) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x.in_1", BRAID_F32, 1, (int64_t[]){4});
    braid_tensor y = braid_exp(g, x);
    cr_assert_eq(braid_set_name(g, y, "quote\" back\\slash # not a comment"),
                 BRAID_OK);
    cr_assert_eq(braid_set_device(g, y, "cuda:0"), BRAID_OK);
    cr_assert_eq(braid_set_device(g, x, "cpu"), BRAID_OK);
    braid_tensor z = braid_sqrt(g, y);
    cr_assert_eq(braid_set_name(g, z, "ünïcødé ✓"), BRAID_OK);
    cr_assert_eq(braid_set_device(g, z, "cuda:63"), BRAID_OK);
    braid_output(g, "out \"1\"", z);
    braid_output(g, "x", x);
    check_roundtrip(g, "names");
    braid_graph_free(g);
}

/* Hand-written variations parse to the same graph as the canonical text
 * (labels that are not numbers name their nodes: %r is name="r"). */
Test(text, hand_written_variations) {
    const char *canon = "braid-graph 1\n"
                        "%0 = input f32[2,3] name=\"x\"\n"
                        "%1 = sum %0 axes=[1] keepdims name=\"r\" : f32[2,1]\n"
                        "%2 = slice %0 start=[0,1] stop=[2,3] step=[1,1]"
                        " name=\"s\" : f32[2,2]\n"
                        "%3 = constant f32[2,2] [1, 2, 3, 4] name=\"c\"\n"
                        "%4 = add %2, %3 : f32[2,2]\n"
                        "output \"y\" = %4\n";
    const char *hand = "# leading comment\r\n\r\n"
                       "  braid-graph   1   # header comment\r\n"
                       "%input.x = input f32[ 2 , 3 ] name = \"x\"\r\n"
                       "\t%r=sum %input.x keepdims axes=[-1]\r\n"
                       "%s = slice %input.x stop=[9,3] name=\"s\" "
                       "start=[-7,-2]\r\n"
                       "%c = constant f32[2,2] [\r\n  1.0, 2e0,\n"
                       "  # a comment inside a list\n  +3, .4e1\n] : f32[2,2]\n"
                       "%9 = add %s,%c\n"
                       "output\"y\"=%9";
    braid_graph *a = ts_parse_ok(canon, "canon");
    braid_graph *b = ts_parse_ok(hand, "hand");
    cr_assert(bg_graph_equal(a, b));
    braid_graph_free(a);
    braid_graph_free(b);
}

/* Every .graph file in examples/graphs (other people add files there). */
Test(text, example_graphs) {
    const char *dir = BRAID_SOURCE_DIR "/examples/graphs";
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 7 || strcmp(e->d_name + n - 6, ".graph") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        braid_graph *g = ts_load_ok(path);
        cr_assert_gt(braid_graph_output_count(g), 0, "%s has no output", path);
        check_roundtrip(g, e->d_name);
        braid_graph_free(g);
        count++;
    }
    closedir(d);
    cr_assert_geq(count, 2, "expected example graphs in %s", dir);
    cr_log_info("%d example graphs round-trip", count);
}

Test(text, random_graphs) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    for (uint64_t seed = 0; seed < 300; seed++) {
        braid_graph *g = ts_random_graph(seed, &o);
        cr_assert(g);
        char what[32];
        snprintf(what, sizeof what, "random graph %llu",
                 (unsigned long long)seed);
        check_roundtrip(g, what);
        braid_graph_free(g);
    }
}

Test(text, write_file_is_atomic_and_loads_back) {
    char dir[] = "/tmp/braid-text-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/g.graph", dir);
    braid_graph *g = all_ops_graph();
    cr_assert_eq(braid_graph_write_file(g, path), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_graph_write_file(g, path), BRAID_OK); /* replaces */
    braid_graph *h = ts_load_ok(path);
    cr_assert(bg_graph_equal(g, h));
    /* only the file itself is left: no temporary */
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        entries += e->d_name[0] != '.';
    closedir(d);
    cr_assert_eq(entries, 1);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/missing/g.graph", dir);
    cr_assert_eq(braid_graph_write_file(g, bad), BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), "missing/g.graph"));
    braid_graph *m = braid_graph_load(bad, NULL);
    cr_assert_eq(braid_graph_status(m), BRAID_ERR_IO);
    cr_assert(strstr(braid_graph_error(m), "cannot open"));
    braid_graph_free(m);
    m = braid_graph_load(dir, NULL); /* a directory */
    cr_assert_neq(braid_graph_status(m), BRAID_OK);
    braid_graph_free(m);
    unlink(path);
    rmdir(dir);
    braid_graph_free(g);
    braid_graph_free(h);
}

Test(text, print_refuses_bad_arguments) {
    char *text = (char *)1;
    cr_assert_eq(braid_graph_print(NULL, &text, NULL),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(text);
    braid_graph *g = braid_graph_new(NULL);
    cr_assert_eq(braid_graph_print(g, NULL, NULL), BRAID_ERR_INVALID_ARGUMENT);
    braid_exp(g, braid_input(g, "i", BRAID_I32, 0, NULL)); /* dtype error */
    cr_assert_eq(braid_graph_print(g, &text, NULL), BRAID_ERR_DTYPE);
    cr_assert_eq(braid_graph_write_file(g, "/tmp/never.graph"),
                 BRAID_ERR_DTYPE);
    braid_graph_free(g);
    /* the empty graph prints as just the header */
    g = braid_graph_new(NULL);
    size_t len;
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    cr_assert_str_eq(text, "braid-graph 1\n");
    cr_assert_eq(len, 14);
    free(text);
    braid_graph_free(g);
}
