/* tests/test_npy.c — NumPy .npy reading and writing (runtime/npy/npy.c). */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <math.h>

#include "braid/braid.h"
#include "runtime/npy/npy.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

/* ---- fixtures: files exactly as NumPy writes them --------------------------
 * Produced by np.save (version 1.0, 64-byte alignment), an older NumPy
 * (16-byte alignment) and np.lib.format.write_array(version=(2,0)/(3,0)). */

/* np.arange(6, dtype='<f4').reshape(2, 3) */
static const char np_f32_2x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'sh"
    "ape': (2, 3), }                                                   "
    "       \x0a\x00\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@"
    "\x00\x00\x80@\x00\x00\xa0@";
/* np.array([True, False, True]) */
static const char np_bool_3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'sh"
    "ape': (3,), }                                                     "
    "       \x0a\x01\x00\x01";
/* np.int32(-7) saved by an old NumPy (16-byte alignment) */
static const char np_i32_scalar_align16[] =
    "\x93NUMPY\x01\x00"
    "F\x00{'descr': '<i4', 'fortran_order': False, '"
    "shape': (), }              \x0a\xf9\xff\xff\xff";
/* np.zeros((0, 4)), format version 2.0 */
static const char np_f64_0x4_v2[] =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<f8', 'fortran_order': Fa"
    "lse, 'shape': (0, 4), }                                           "
    "             \x0a";
/* np.array([1.5, -2], dtype='<f2'), format version 3.0 */
static const char np_f16_2_v3[] =
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<f2', 'fortran_order': Fa"
    "lse, 'shape': (2,), }                                             "
    "             \x0a\x00>\x00\xc0";

/* Decodes a string-literal fixture (without its terminating NUL). */
#define DECODE(lit, expect, out)                                               \
    br_npy_decode(lit, sizeof(lit) - 1, #lit, expect, out)

Test(npy, reads_numpy_f32) {
    br_npy_array a;
    cr_assert_eq(DECODE(np_f32_2x3, BRAID_F32, &a), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(a.dtype, BRAID_F32);
    cr_assert_eq(a.rank, 2);
    cr_assert_eq(a.dims[0], 2);
    cr_assert_eq(a.dims[1], 3);
    cr_assert_eq(a.bytes, 24);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((float *)a.data)[i], (float)i);
    br_npy_array_free(&a);
}

Test(npy, reads_numpy_bool_i32_f64_f16) {
    br_npy_array a;
    cr_assert_eq(DECODE(np_bool_3, BRAID_DTYPE_COUNT_, &a), BRAID_OK);
    cr_assert(a.dtype == BRAID_BOOL && a.rank == 1 && a.dims[0] == 3);
    cr_assert(!memcmp(a.data, "\1\0\1", 3));
    br_npy_array_free(&a);

    cr_assert_eq(DECODE(np_i32_scalar_align16, BRAID_I32, &a), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(a.dtype == BRAID_I32 && a.rank == 0 && a.bytes == 4);
    cr_assert_eq(*(int32_t *)a.data, -7);
    br_npy_array_free(&a);

    cr_assert_eq(DECODE(np_f64_0x4_v2, BRAID_F64, &a), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(a.dtype == BRAID_F64 && a.rank == 2 && a.dims[0] == 0 &&
              a.dims[1] == 4 && a.bytes == 0 && a.data != NULL);
    br_npy_array_free(&a);

    cr_assert_eq(DECODE(np_f16_2_v3, BRAID_F16, &a), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(a.dtype == BRAID_F16 && a.rank == 1 && a.dims[0] == 2);
    cr_assert_eq(bg_f16_to_f32(((uint16_t *)a.data)[0]), 1.5f);
    cr_assert_eq(bg_f16_to_f32(((uint16_t *)a.data)[1]), -2.0f);
    br_npy_array_free(&a);
}

/* ---- hand-built headers ------------------------------------------------- */

/* Builds a .npy image in buf: magic, version major.minor, the header text
 * as given (no padding added), then ndata bytes of data. Returns its size. */
static size_t build(unsigned char *buf, int major, int minor,
                    const char *header, const void *data, size_t ndata) {
    size_t hlen = strlen(header), pre = major == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = (unsigned char)minor;
    for (size_t k = 0; k < pre - 8; k++)
        buf[8 + k] = (unsigned char)(hlen >> (8 * k));
    memcpy(buf + pre, header, hlen);
    if (ndata) memcpy(buf + pre + hlen, data, ndata);
    return pre + hlen + ndata;
}

/* Decodes a v1.0 image with the given header and 24 bytes of data. */
static braid_status decode_header(const char *header, braid_dtype expect,
                                  br_npy_array *a, size_t ndata) {
    static unsigned char buf[4096];
    static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t len = build(buf, 1, 0, header, data, ndata);
    return br_npy_decode(buf, len, "hand.npy", expect, a);
}

/* True when the builder, the text parser and the .npy reader all accept
 * f32[d0,d1,d2]; fails the test when they disagree. */
static bool shape_accepted(const int64_t d[3]) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert_not_null(g);
    braid_input(g, "x", BRAID_F32, 3, d);
    bool built = braid_graph_status(g) == BRAID_OK;
    braid_graph_free(g);
    char text[300], header[300];
    snprintf(text, sizeof text,
             "braid-graph 1\n%%x = input f32[%lld,%lld,%lld] name=\"x\"\n"
             "output \"x\" = %%x\n",
             (long long)d[0], (long long)d[1], (long long)d[2]);
    g = braid_graph_parse(text, strlen(text), "t.graph", NULL);
    cr_assert_not_null(g);
    bool parsed = braid_graph_status(g) == BRAID_OK;
    braid_graph_free(g);
    snprintf(header, sizeof header,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld, "
             "%lld), }\n",
             (long long)d[0], (long long)d[1], (long long)d[2]);
    br_npy_array a;
    bool empty = d[0] == 0 || d[1] == 0 || d[2] == 0;
    braid_status s = decode_header(header, BRAID_F32, &a, empty ? 0 : 32);
    if (s == BRAID_OK) br_npy_array_free(&a);
    cr_assert(s == BRAID_OK || s == BRAID_ERR_SHAPE, "%s", braid_last_error());
    cr_assert(built == parsed && parsed == (s == BRAID_OK),
              "[%lld,%lld,%lld]: builder %d, parser %d, .npy %d",
              (long long)d[0], (long long)d[1], (long long)d[2], built, parsed,
              s == BRAID_OK);
    return built;
}

/* One size rule for every reader of shapes, whatever the order of the
 * dims: an empty shape whose other dims multiply past 2^50 bytes is
 * refused (its strides would overflow int64), as a full one is. */
Test(npy, shape_limits_agree_with_builder_and_parser) {
    const int64_t big = (int64_t)1 << 32, m = (int64_t)1 << 24;
    const struct {
        int64_t d[3];
        bool fits;
    } cases[] = {
        {{0, big, big}, false},
        {{big, 0, big}, false},
        {{big, big, 0}, false},
        {{0, m, m}, true}, /* 2^48 × 4 = 2^50 */
        {{m, 0, 2 * m}, false},
        {{2 * m, m, 0}, false},
        {{0, 0, big}, true},
        {{2, 2, 2}, true},
        {{0, (int64_t)1 << 50, 1}, false}, /* 2^50 elements × 4 bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(shape_accepted(cases[i].d), cases[i].fits,
                     "case %zu: [%lld,%lld,%lld]", i, (long long)cases[i].d[0],
                     (long long)cases[i].d[1], (long long)cases[i].d[2]);
}

Test(npy, header_syntax_variants) {
    static const char *const ok[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n",
        "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,3)}",
        "  {  'fortran_order' :False , 'descr':'<f4','shape':( 2 , 3 , ) , }"
        "   \t\r\n",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n",
        "{'descr': '=f4', 'fortran_order': False, 'shape': (6,), }\n",
        "{'descr': 'f4', 'fortran_order': False, 'shape': (1, 6, 1), }\n",
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        br_npy_array a;
        cr_assert_eq(decode_header(ok[k], BRAID_F32, &a, 24), BRAID_OK,
                     "header %zu: %s", k, braid_last_error());
        cr_assert_eq(a.dtype, BRAID_F32);
        cr_assert_eq(a.bytes, 24);
        cr_assert_eq(((float *)a.data)[5], 6.0f);
        br_npy_array_free(&a);
    }
}

/* A header that must be refused, and a word the message must contain. */
typedef struct bad_case {
    const char *header;
    const char *needle;
} bad_case;

Test(npy, malformed_headers_are_errors) {
    static const bad_case bad[] = {
        {"", "expected '{'"},
        {"[]", "expected '{'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "'}'"},
        {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
        {"{'fortran_order': False, 'shape': (6,)}", "missing key 'descr'"},
        {"{'descr': '<f4', 'shape': (6,)}", "fortran_order"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}",
         "unexpected key 'x'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
         "'shape': (6,)}",
         "duplicate key"},
        {"{'descr': <f4, 'fortran_order': False, 'shape': (6,)}", "string"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}", "','"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}",
         "True or False"},
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (6,)}", "','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}",
         "trailing comma"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,,3)}",
         "integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}",
         "negative"},
        {"{'descr': '<f4', 'fortran_order': False, "
         "'shape': (99999999999999999999,)}",
         "too large"},
        {"{'descr': '<f4', 'fortran_order': False, "
         "'shape': (1099511627776, 1099511627776)}",
         "too large"},
        {"{'descr': '<f4', 'fortran_order': False, "
         "'shape': (1,1,1,1,1,1,1,1,6)}",
         "maximum rank"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} x",
         "after '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,)},", "after"},
        {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,)}",
         "character"},
        {"{'descr': '<f4", "unterminated"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (6,)}",
         "big-endian"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (6,)}", "Fortran"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (6,)}", "object"},
        {"{'descr': '<i2', 'fortran_order': False, 'shape': (3,)}",
         "unsupported dtype '<i2'"},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (12,)}",
         "unsupported dtype"},
        {"{'descr': '|f4', 'fortran_order': False, 'shape': (6,)}",
         "unsupported dtype"},
        {"{'descr': '', 'fortran_order': False, 'shape': (6,)}",
         "unsupported dtype"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,)}",
         "structured"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (7,)}",
         "truncated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", "mismatch"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ()}", "mismatch"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        br_npy_array a;
        a.data = (void *)1; /* must be reset on failure */
        braid_status s = decode_header(bad[k].header, BRAID_F32, &a, 24);
        const char *msg = braid_last_error();
        cr_assert_neq(s, BRAID_OK, "case %zu accepted: %s", k, bad[k].header);
        cr_assert(a.data == NULL, "case %zu left data", k);
        cr_assert(strstr(msg, "hand.npy: ") == msg, "case %zu: '%s'", k, msg);
        cr_assert(strstr(msg, bad[k].needle), "case %zu: '%s' lacks '%s'", k,
                  msg, bad[k].needle);
    }
}

/* A file cut inside its preamble (after a good magic) is truncated, not
 * foreign; a descr whose quote never closes is unterminated, not long. */
Test(npy, truncations_and_unterminated_strings_named_right) {
    for (size_t n = 6; n < 10; n++) {
        br_npy_array a;
        braid_status s = br_npy_decode(np_f32_2x3, n, "cut.npy", BRAID_F32, &a);
        cr_assert_eq(s, BRAID_ERR_PARSE);
        cr_assert(strstr(braid_last_error(), "truncated") &&
                      !strstr(braid_last_error(), "magic"),
                  "%zu bytes: %s", n, braid_last_error());
    }
    br_npy_array a;
    char header[128];
    snprintf(header, sizeof header, "{'descr': '<f4%70s\n", "");
    braid_status s = decode_header(header, BRAID_F32, &a, 0);
    cr_assert_eq(s, BRAID_ERR_PARSE);
    cr_assert(strstr(braid_last_error(), "unterminated string"), "%s",
              braid_last_error());
}

Test(npy, bad_preambles) {
    unsigned char buf[256];
    br_npy_array a;
    const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}";
    float one = 1.0f;
    size_t len = build(buf, 1, 0, h, &one, 4);

    cr_assert_eq(br_npy_decode(buf, len, "v.npy", BRAID_F32, &a), BRAID_OK);
    br_npy_array_free(&a);
    buf[0] = 0x92;
    cr_assert_neq(br_npy_decode(buf, len, "v.npy", BRAID_F32, &a), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "magic"));
    buf[0] = 0x93;
    static const unsigned char versions[][2] = {{0, 0}, {4, 0}, {1, 1}, {2, 5}};
    for (size_t k = 0; k < 4; k++) {
        buf[6] = versions[k][0];
        buf[7] = versions[k][1];
        cr_assert_neq(br_npy_decode(buf, len, "v.npy", BRAID_F32, &a),
                      BRAID_OK);
        cr_assert(strstr(braid_last_error(), "version"), "%s",
                  braid_last_error());
    }
    /* A v2 header announcing 4 GiB, and one longer than the file. */
    len = build(buf, 2, 0, h, &one, 4);
    memset(buf + 8, 0xff, 4);
    cr_assert_neq(br_npy_decode(buf, len, "v.npy", BRAID_F32, &a), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "limit"), "%s", braid_last_error());
    buf[8] = 0x00;
    buf[9] = 0x10;
    buf[10] = buf[11] = 0;
    cr_assert_neq(br_npy_decode(buf, len, "v.npy", BRAID_F32, &a), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "truncated"), "%s",
              braid_last_error());
    cr_assert_neq(br_npy_decode(NULL, 0, "v.npy", BRAID_F32, &a), BRAID_OK);
}

/* Every prefix of a valid file is an error, never a crash or a success. */
Test(npy, every_truncation_is_an_error) {
    for (size_t len = 0; len < sizeof np_f32_2x3 - 1; len++) {
        br_npy_array a;
        cr_assert_neq(br_npy_decode(np_f32_2x3, len, "t.npy", BRAID_F32, &a),
                      BRAID_OK, "prefix %zu accepted", len);
        cr_assert(strstr(braid_last_error(), "t.npy"));
    }
}

/* Random byte flips in the preamble and header: success or a clean error
 * (the sanitizers catch anything else). */
Test(npy, mutated_headers_do_not_crash) {
    unsigned char buf[sizeof np_f32_2x3];
    uint64_t rng = 12345;
    int accepted = 0;
    for (int trial = 0; trial < 4000; trial++) {
        memcpy(buf, np_f32_2x3, sizeof buf);
        int flips = ts_rand_int(&rng, 1, 4);
        for (int f = 0; f < flips; f++)
            buf[ts_rand_int(&rng, 0, 127)] = (unsigned char)ts_rand_u64(&rng);
        br_npy_array a;
        if (br_npy_decode(buf, sizeof buf - 1, "m.npy", BRAID_F32, &a) ==
            BRAID_OK) {
            accepted++;
            cr_assert_eq(a.bytes, 24);
            br_npy_array_free(&a);
        } else {
            cr_assert(a.data == NULL);
        }
    }
    cr_log_info("mutations accepted: %d of 4000", accepted);
}

Test(npy, bool_bytes_are_normalized) {
    unsigned char buf[256];
    const char *h = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}";
    size_t len = build(buf, 1, 0, h, "\x02\x00\xff", 3);
    br_npy_array a;
    cr_assert_eq(br_npy_decode(buf, len, "b.npy", BRAID_BOOL, &a), BRAID_OK);
    cr_assert(!memcmp(a.data, "\1\0\1", 3));
    br_npy_array_free(&a);
}

/* ---- files --------------------------------------------------------------- */

static const braid_dtype all_dtypes[] = {BRAID_F32, BRAID_F16, BRAID_BF16,
                                         BRAID_F64, BRAID_I32, BRAID_BOOL};

/* Writes an array, checks the header's layout, reads it back and compares. */
static void round_trip(const char *dir, braid_dtype t, int rank,
                       const int64_t *dims, uint64_t seed) {
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= dims[k];
    size_t bytes = (size_t)n * braid_dtype_size(t);
    void *data = malloc(bytes + 1);
    if (n > 0) ts_fill_random(t, data, n, seed, -3.0, 3.0);
    char *path = tf_path(dir, "rt.npy");
    cr_assert_eq(br_npy_write(path, t, rank, dims, data), BRAID_OK, "%s",
                 braid_last_error());

    size_t flen = 0;
    unsigned char *raw = (unsigned char *)ts_read_file_len(path, &flen);
    cr_assert(raw);
    size_t hlen = (size_t)raw[8] | (size_t)raw[9] << 8;
    cr_assert(!memcmp(raw, "\x93NUMPY\x01\x00", 8));
    cr_assert_eq((10 + hlen) % 64, 0, "data not 64-byte aligned");
    cr_assert_eq(raw[10 + hlen - 1], '\n');
    cr_assert_eq(flen, 10 + hlen + bytes);
    char descr[32];
    snprintf(descr, sizeof descr, "'descr': '%s'", br_npy_descr(t));
    cr_assert(strstr((char *)raw + 10, descr));
    free(raw);

    br_npy_array a;
    cr_assert_eq(br_npy_read(path, t, &a), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(a.dtype, t);
    cr_assert_eq(a.rank, rank);
    for (int k = 0; k < rank; k++)
        cr_assert_eq(a.dims[k], dims[k]);
    cr_assert_eq(a.bytes, bytes);
    cr_assert(bytes == 0 || !memcmp(a.data, data, bytes));
    br_npy_array_free(&a);
    free(path);
    free(data);
}

Test(npy, round_trip_every_dtype_and_shape) {
    char *dir = tf_mkdtemp();
    cr_assert(dir);
    static const int64_t shapes[][BRAID_MAX_RANK] = {
        {0}, {7}, {0}, {3, 0, 2}, {2, 3, 4}, {1, 2, 1, 2, 1, 2, 1, 2}, {33, 5}};
    static const int ranks[] = {0, 1, 1, 3, 3, 8, 2};
    for (size_t t = 0; t < 6; t++)
        for (size_t s = 0; s < sizeof ranks / sizeof ranks[0]; s++)
            round_trip(dir, all_dtypes[t], ranks[s], shapes[s], 100 + s);
    cr_assert_eq(tf_count_entries(dir), 1, "temporary files left behind");
    tf_rmtree(dir);
    free(dir);
}

Test(npy, bf16_is_void2_read_only_as_bf16) {
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "bf.npy");
    uint16_t v[3] = {bg_f32_to_bf16(1.0f), bg_f32_to_bf16(-2.5f), 0};
    int64_t dims[1] = {3};
    cr_assert_eq(br_npy_write(path, BRAID_BF16, 1, dims, v), BRAID_OK);
    br_npy_array a;
    cr_assert_eq(br_npy_read(path, BRAID_F32, &a), BRAID_ERR_DTYPE);
    cr_assert(strstr(braid_last_error(), "bf16"), "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), path));
    cr_assert_neq(br_npy_read(path, BRAID_DTYPE_COUNT_, &a), BRAID_OK);
    cr_assert_eq(br_npy_read(path, BRAID_BF16, &a), BRAID_OK);
    cr_assert(!memcmp(a.data, v, sizeof v));
    br_npy_array_free(&a);
    /* '<V2', which other tools write for bfloat16, reads the same way. */
    br_npy_array b;
    cr_assert_eq(decode_header("{'descr': '<V2', 'fortran_order': False, "
                               "'shape': (3,)}",
                               BRAID_BF16, &b, 6),
                 BRAID_OK);
    cr_assert_eq(b.dtype, BRAID_BF16);
    br_npy_array_free(&b);
    tf_rmtree(dir);
    free(path);
    free(dir);
}

Test(npy, truncated_and_padded_files) {
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "cut.npy");
    size_t full = sizeof np_f32_2x3 - 1;
    br_npy_array a;
    for (size_t cut = 0; cut < full; cut += 7) {
        cr_assert(tf_write(path, np_f32_2x3, cut));
        cr_assert_neq(br_npy_read(path, BRAID_F32, &a), BRAID_OK);
        cr_assert(strstr(braid_last_error(), path), "%s", braid_last_error());
    }
    cr_assert(tf_write(path, np_f32_2x3, full - 1));
    cr_assert_eq(br_npy_read(path, BRAID_F32, &a), BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), "truncated"), "%s",
              braid_last_error());
    char longer[sizeof np_f32_2x3 + 4];
    memcpy(longer, np_f32_2x3, full);
    memset(longer + full, 0, 4);
    cr_assert(tf_write(path, longer, full + 4));
    cr_assert_eq(br_npy_read(path, BRAID_F32, &a), BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), "mismatch"), "%s", braid_last_error());
    cr_assert(tf_write(path, np_f32_2x3, full));
    cr_assert_eq(br_npy_read(path, BRAID_F32, &a), BRAID_OK);
    br_npy_array_free(&a);
    tf_rmtree(dir);
    free(path);
    free(dir);
}

Test(npy, io_errors_name_the_file) {
    br_npy_array a;
    cr_assert_eq(br_npy_read("/nonexistent/x.npy", BRAID_F32, &a),
                 BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), "/nonexistent/x.npy"));
    float v = 1.0f;
    int64_t dims[1] = {1};
    cr_assert_eq(br_npy_write("/nonexistent/y.npy", BRAID_F32, 1, dims, &v),
                 BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), "/nonexistent/y.npy"));
    cr_assert_neq(br_npy_write("z.npy", BRAID_DTYPE_COUNT_, 1, dims, &v),
                  BRAID_OK);
    cr_assert_neq(br_npy_write("z.npy", BRAID_F32, 9, dims, &v), BRAID_OK);
    int64_t neg[1] = {-1};
    cr_assert_neq(br_npy_write("z.npy", BRAID_F32, 1, neg, &v), BRAID_OK);
    cr_assert_neq(br_npy_write("z.npy", BRAID_F32, 1, dims, NULL), BRAID_OK);
    cr_assert_eq(access("z.npy", F_OK), -1, "a file was written");
}

Test(npy, write_replaces_an_existing_file) {
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "w.npy");
    cr_assert(tf_write_str(path, "old contents"));
    double v[2] = {0.25, -8};
    int64_t dims[1] = {2};
    cr_assert_eq(br_npy_write(path, BRAID_F64, 1, dims, v), BRAID_OK);
    br_npy_array a;
    cr_assert_eq(br_npy_read(path, BRAID_F64, &a), BRAID_OK);
    cr_assert_eq(((double *)a.data)[1], -8.0);
    br_npy_array_free(&a);
    cr_assert_eq(tf_count_entries(dir), 1);
    tf_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- real NumPy, when this machine has it -------------------------------- */

static bool have_numpy(void) {
    return system("python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

/* NumPy writes files of every dtype and version; braid reads them; braid
 * writes files and NumPy checks them. */
Test(npy, interoperates_with_real_numpy) {
    if (!have_numpy()) {
        cr_log_info("numpy not importable: covered by the byte fixtures");
        return;
    }
    char *dir = tf_mkdtemp();
    char *script = tf_path(dir, "gen.py");
    cr_assert(tf_write_str(
        script,
        "import sys, numpy as np\n"
        "from numpy.lib import format as F\n"
        "d = sys.argv[1]\n"
        "a = np.arange(-3, 3).reshape(2, 3)\n"
        "for t in ['<f4', '<f2', '<f8', '<i4', '|b1']:\n"
        "    np.save(d + '/np_' + t[1:] + '.npy', a.astype(t))\n"
        "for v in [(2, 0), (3, 0)]:\n"
        "    with open(d + '/v%d.npy' % v[0], 'wb') as f:\n"
        "        F.write_array(f, a.astype('<f4'), version=v)\n"
        "np.save(d + '/big.npy', a.astype('>f4'))\n"
        "np.save(d + '/fortran.npy', np.asfortranarray(a.astype('<f4')))\n"
        "np.save(d + '/scalar.npy', np.float64(2.5))\n"));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s %s", script, dir);
    cr_assert_eq(system(cmd), 0);
    static const char *const names[] = {"np_f4", "np_f2", "np_f8", "np_i4",
                                        "np_b1", "v2",    "v3"};
    static const braid_dtype types[] = {BRAID_F32, BRAID_F16,  BRAID_F64,
                                        BRAID_I32, BRAID_BOOL, BRAID_F32,
                                        BRAID_F32};
    for (size_t k = 0; k < 7; k++) {
        char file[64];
        snprintf(file, sizeof file, "%s.npy", names[k]);
        char *p = tf_path(dir, file);
        br_npy_array a;
        cr_assert_eq(br_npy_read(p, types[k], &a), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert(a.dtype == types[k] && a.rank == 2 && a.dims[1] == 3);
        for (int i = 0; i < 6; i++) {
            double want = types[k] == BRAID_BOOL ? (i != 3) : i - 3;
            cr_assert_eq(bg_load(a.dtype, a.data, i), want, "%s[%d]", file, i);
        }
        br_npy_array_free(&a);
        free(p);
    }
    br_npy_array a;
    char *p = tf_path(dir, "big.npy");
    cr_assert_eq(br_npy_read(p, BRAID_F32, &a), BRAID_ERR_UNSUPPORTED);
    free(p);
    p = tf_path(dir, "fortran.npy");
    cr_assert_eq(br_npy_read(p, BRAID_F32, &a), BRAID_ERR_UNSUPPORTED);
    free(p);
    p = tf_path(dir, "scalar.npy");
    cr_assert_eq(br_npy_read(p, BRAID_F64, &a), BRAID_OK);
    cr_assert(a.rank == 0 && *(double *)a.data == 2.5);
    br_npy_array_free(&a);
    free(p);

    /* The other direction: NumPy loads what braid writes. */
    float v[6] = {0.5f, -1, 2, 3, 4, 1e30f};
    int64_t dims[2] = {3, 2};
    p = tf_path(dir, "braid.npy");
    cr_assert_eq(br_npy_write(p, BRAID_F32, 2, dims, v), BRAID_OK);
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import numpy as np; a = np.load('%s'); "
             "assert a.dtype == np.float32 and a.shape == (3, 2); "
             "assert a[0, 0] == 0.5 and a[2, 1] == np.float32(1e30)\"",
             p);
    cr_assert_eq(system(cmd), 0, "numpy could not load braid's file");
    free(p);
    tf_rmtree(dir);
    free(script);
    free(dir);
}
