/* tests/test_limits.c — one limit per compile option (BRAID_MAX_THREADS,
 * BRAID_MAX_STREAMS, BRAID_MAX_CHUNKS), checked where the option enters:
 * whatever braid_compile accepts saves and loads again, what it refuses
 * never reaches a thread pool, and a plan file whose option is out of
 * range is refused with a message naming that field alone. */
#define _POSIX_C_SOURCE 200809L

#include "planfile_support.h"

/* braid_compile with num_threads n: its status (the plan in *p). */
static braid_status compile_threads(const braid_graph *g, int n,
                                    braid_plan **p) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    o.num_threads = n;
    *p = NULL;
    return braid_compile(g, &o, p);
}

Test(limits, threads_compile_save_load_agree) {
    braid_graph *g = ts_tiny_graph();
    const int counts[] = {1,    16, BRAID_MAX_THREADS, BRAID_MAX_THREADS + 1,
                          5000, -1};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        int n = counts[i];
        braid_plan *p;
        braid_status s = compile_threads(g, n, &p);
        bool valid = n >= 0 && n <= BRAID_MAX_THREADS;
        cr_assert_eq(s == BRAID_OK, valid, "num_threads %d: %s", n,
                     braid_last_error());
        if (!valid) {
            cr_assert(strstr(braid_last_error(), "num_threads"), "%s",
                      braid_last_error());
            continue;
        }
        /* whatever compiles must save and load again */
        size_t size;
        unsigned char *data = pf_save(p, &size);
        braid_load_options lo;
        braid_load_options_init(&lo);
        braid_plan *back = NULL;
        s = braid_plan_load_memory(data, size, &lo, &back);
        cr_assert_eq(s, BRAID_OK, "num_threads %d: %s", n, braid_last_error());
        braid_plan_free(back);
        free(data);
        braid_plan_free(p);
    }
    braid_graph_free(g);
}

Test(limits, load_options_threads_bounded) {
    braid_graph *g = ts_tiny_graph();
    braid_plan *p;
    cr_assert_eq(compile_threads(g, 2, &p), BRAID_OK);
    size_t size;
    unsigned char *data = pf_save(p, &size);
    braid_load_options lo;
    braid_load_options_init(&lo);
    lo.num_threads = 5000;
    braid_plan *back = NULL;
    braid_status s = braid_plan_load_memory(data, size, &lo, &back);
    cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), "num_threads"));
    cr_assert_null(back);
    free(data);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Replaces the one little-endian int32 `from` in data by `to`. */
static void patch_i32(unsigned char *data, size_t size, int32_t from,
                      int32_t to) {
    unsigned char a[4], b[4];
    for (int k = 0; k < 4; k++) {
        a[k] = (unsigned char)((uint32_t)from >> (8 * k));
        b[k] = (unsigned char)((uint32_t)to >> (8 * k));
    }
    size_t at = SIZE_MAX;
    for (size_t i = 0; i + 4 <= size; i++)
        if (!memcmp(data + i, a, 4)) {
            cr_assert_eq(at, SIZE_MAX, "%d appears twice in the file", from);
            at = i;
        }
    cr_assert_neq(at, SIZE_MAX, "%d is not in the file", from);
    memcpy(data + at, b, 4);
}

Test(limits, out_of_range_field_named_alone) {
    braid_graph *g = ts_tiny_graph();
    braid_plan *p;
    /* an unusual count, so its bytes appear once in the file */
    cr_assert_eq(compile_threads(g, 0x2a5b3, &p), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(compile_threads(g, 987, &p), BRAID_OK);
    size_t size;
    unsigned char *data = pf_save(p, &size);
    patch_i32(data, size, 987, 4321);
    br_planfile_reseal(data, size);
    braid_plan *back = NULL;
    braid_status s = braid_plan_load_memory(data, size, NULL, &back);
    pf_assert_error_shape(s, "num_threads 4321");
    const char *m = braid_last_error();
    cr_assert(strstr(m, "num_threads") && strstr(m, "4321"), "%s", m);
    cr_assert(!strstr(m, "max_streams") && !strstr(m, "chunks") &&
                  !strstr(m, "nvrtc_version"),
              "the message names fields that are fine: %s", m);
    free(data);
    braid_plan_free(p);
    braid_graph_free(g);
}
