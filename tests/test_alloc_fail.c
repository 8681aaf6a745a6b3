/* tests/test_alloc_fail.c — fault injection: every allocation of a
 * nontrivial build fails in turn; nothing crashes, the failure is reported
 * as out of memory, and nothing leaks. The allocator also checks that the
 * old_size braid reports matches the block's real size. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"

typedef struct counting_alloc {
    long calls;   /* allocation requests (new_size > 0) so far */
    long fail_at; /* the request number that fails (0: never) */
    long failed;  /* how many requests were refused */
    size_t live;  /* bytes currently allocated */
    long blocks;  /* blocks currently allocated */
} counting_alloc;

#define HDR 16 /* header holding the block size, keeps 16-byte alignment */

static void *test_alloc(void *user, void *ptr, size_t old_size,
                        size_t new_size) {
    counting_alloc *a = user;
    unsigned char *base = ptr ? (unsigned char *)ptr - HDR : NULL;
    if (base) {
        size_t real;
        memcpy(&real, base, sizeof real);
        cr_assert_eq(real, old_size, "old_size %zu, block has %zu", old_size,
                     real);
    } else {
        cr_assert_eq(old_size, 0);
    }
    if (new_size == 0) {
        if (base) {
            a->live -= old_size;
            a->blocks--;
        }
        free(base);
        return NULL;
    }
    a->calls++;
    if (a->calls == a->fail_at) {
        a->failed++;
        return NULL;
    }
    unsigned char *p = realloc(base, new_size + HDR);
    if (p == NULL) return NULL;
    memcpy(p, &new_size, sizeof new_size);
    a->live += new_size - old_size;
    a->blocks += base == NULL;
    return p + HDR;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Builds a graph using every allocating path: nodes growing past several
 * capacities, inputs arrays, constant data (small and large), input and
 * node names, device hints, outputs growing, composites, a concat with more
 * than 16 inputs (temporary id array) and a clone. Returns the clone (NULL
 * when the clone failed). */
static braid_graph *build_all(braid_graph *g) {
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(8, 16));
    braid_tensor gamma = braid_input(g, "gamma", BRAID_F32, 1, DIMS(16));
    static float big[4096];
    for (int i = 0; i < 4096; i++)
        big[i] = (float)i;
    braid_tensor c = braid_constant(g, BRAID_F32, 2, DIMS(8, 16), big);
    braid_tensor w = braid_constant(g, BRAID_F32, 2, DIMS(16, 256), big);
    braid_tensor y =
        braid_layer_norm(g, braid_add(g, x, c), gamma, BRAID_NONE, 1e-5);
    y = braid_softmax(g, braid_matmul(g, y, w, 0), -1);
    braid_set_name(g, y, "probs");
    braid_set_device(g, y, "cuda:0");
    braid_set_name(g, y, "probs_renamed");
    braid_set_device(g, y, "cpu");
    braid_tensor parts[20];
    for (int i = 0; i < 20; i++)
        parts[i] = braid_slice(g, y, DIMS(0, i), DIMS(8, 256), DIMS(1, 20));
    braid_tensor cat = braid_concat(g, 20, parts, 1);
    braid_tensor r = braid_random_normal(g, BRAID_F16, 1, DIMS(4), 1, 0, 1);
    for (int i = 0; i < 40; i++)
        r = braid_exp(g, braid_neg(g, r));
    braid_output(g, "cat", cat);
    for (int i = 0; i < 9; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        braid_output(g, name, r);
    }
    return bg_graph_clone(g);
}

Test(alloc_fail, every_allocation_fails_in_turn) {
    long n;
    for (n = 1;; n++) {
        counting_alloc a = {0};
        a.fail_at = n;
        braid_graph_options o = {test_alloc, &a};
        braid_graph *g = braid_graph_new(&o);
        if (g == NULL) {
            cr_assert_eq(a.failed, 1);
            cr_assert_eq(a.live, 0);
            continue;
        }
        braid_graph *c = build_all(g);
        bool complete = a.failed == 0;
        if (complete) {
            cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s",
                         braid_graph_error(g));
            cr_assert_not_null(c);
            cr_assert(bg_graph_equal(g, c));
        } else if (braid_graph_status(g) != BRAID_OK) {
            cr_assert_eq(braid_graph_status(g), BRAID_ERR_OUT_OF_MEMORY,
                         "N=%ld: %s", n, braid_graph_error(g));
            cr_assert(strstr(braid_graph_error(g), "out of memory"));
            /* a clone of a failed graph carries the failure (or is NULL) */
            cr_assert(c == NULL ||
                      braid_graph_status(c) == BRAID_ERR_OUT_OF_MEMORY);
        } else {
            cr_assert_null(c, "N=%ld: the failure went unnoticed", n);
        }
        braid_graph_free(c);
        braid_graph_free(g);
        cr_assert_eq(a.live, 0, "N=%ld: %zu bytes leaked", n, a.live);
        cr_assert_eq(a.blocks, 0, "N=%ld: %ld blocks leaked", n, a.blocks);
        if (complete) break;
    }
    cr_log_info("alloc_fail: %ld allocations in a full build", n - 1);
    cr_assert_gt(n, 20);
}

Test(alloc_fail, failure_is_sticky_and_quiet) {
    counting_alloc a = {0};
    braid_graph_options o = {test_alloc, &a};
    braid_graph *g = braid_graph_new(&o);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    a.fail_at = a.calls + 1;
    float d[4] = {1, 2, 3, 4};
    braid_tensor c = braid_constant(g, BRAID_F32, 1, DIMS(4), d);
    cr_assert(!braid_tensor_valid(c));
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_OUT_OF_MEMORY);
    char first[BG_ERROR_MAX];
    strcpy(first, braid_graph_error(g));
    cr_assert(!braid_tensor_valid(braid_exp(g, x)));
    cr_assert_eq(braid_output(g, "x", x), BRAID_ERR_OUT_OF_MEMORY);
    cr_assert_str_eq(braid_graph_error(g), first);
    cr_assert_eq(braid_graph_node_count(g), 1);
    braid_graph_free(g);
    cr_assert_eq(a.live, 0);
}

Test(alloc_fail, graph_new_failure) {
    counting_alloc a = {0};
    a.fail_at = 1;
    braid_graph_options o = {test_alloc, &a};
    cr_assert_null(braid_graph_new(&o));
    cr_assert(strstr(braid_last_error(), "out of memory"));
    /* the user pointer is passed through and the default is used for NULL */
    braid_graph_options none = {NULL, &a};
    braid_graph *g = braid_graph_new(&none);
    cr_assert_not_null(g);
    braid_input(g, "x", BRAID_F32, 0, NULL);
    cr_assert_eq(a.calls, 1);
    braid_graph_free(g);
}

Test(alloc_fail, every_allocation_of_name_and_device_edits) {
    for (long n = 1; n < 40; n++) {
        counting_alloc a = {0};
        braid_graph_options o = {test_alloc, &a};
        braid_graph *g = braid_graph_new(&o);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
        braid_tensor y = braid_exp(g, x);
        a.fail_at = a.calls + n;
        braid_status s1 = braid_set_name(g, y, "a name");
        braid_status s2 = braid_set_device(g, y, "cuda:3");
        braid_status s3 = braid_output(g, "y", y);
        braid_status s4 = braid_set_name(g, x, "x2");
        bool any = s1 || s2 || s3 || s4;
        cr_assert_eq(any, a.failed > 0);
        if (any) cr_assert_eq(braid_graph_status(g), BRAID_ERR_OUT_OF_MEMORY);
        braid_graph_free(g);
        cr_assert_eq(a.live, 0);
        if (!any) break;
    }
}
