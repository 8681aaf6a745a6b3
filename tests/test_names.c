/* Input and output names: uniqueness through the hash indexes, across
 * renames and clones, and linear cost for many names. */
#include <criterion/criterion.h>

#include "graph/graph.h"

#include <stdio.h>

static braid_tensor input(braid_graph *g, const char *name) {
    int64_t d[1] = {2};
    return braid_input(g, name, BRAID_F32, 1, d);
}

Test(names, duplicate_input_found_among_many) {
    braid_graph *g = braid_graph_new(NULL);
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "in%d", i);
        cr_assert(braid_tensor_valid(input(g, name)));
    }
    cr_assert_not(braid_tensor_valid(input(g, "in517")));
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_graph_error(g), "duplicate input name \"in517\""));
    braid_graph_free(g);
}

Test(names, rename_frees_the_old_name_and_takes_the_new) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = input(g, "a");
    cr_assert(braid_tensor_valid(input(g, "b")));
    cr_assert_eq(braid_set_name(g, a, "c"), BRAID_OK);
    cr_assert(braid_tensor_valid(input(g, "a")), "the old name is free");
    cr_assert_not(braid_tensor_valid(input(g, "c")), "the new name is taken");
    braid_graph_free(g);
}

Test(names, clone_keeps_uniqueness) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = input(g, "x");
    cr_assert_eq(braid_output(g, "y", x), BRAID_OK);
    braid_graph *c = bg_graph_clone(g);
    cr_assert(c);
    cr_assert_not(braid_tensor_valid(input(c, "x")));
    braid_graph_free(c);
    c = bg_graph_clone(g);
    cr_assert_neq(braid_output(c, "y", x), BRAID_OK);
    cr_assert(strstr(braid_graph_error(c), "duplicate output name \"y\""));
    braid_graph_free(c);
    braid_graph_free(g);
}

/* 200000 inputs and outputs: a scan per name would take minutes; the
 * indexes keep it well under the timeout even under sanitizers. */
Test(names, many_names_stay_linear, .timeout = 30) {
    braid_graph *g = braid_graph_new(NULL);
    char name[32];
    for (int i = 0; i < 200000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        braid_tensor t = input(g, name);
        cr_assert_eq(braid_output(g, name, t), BRAID_OK);
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    cr_assert_eq(braid_graph_input_count(g), 200000);
    cr_assert_eq(braid_graph_output_count(g), 200000);
    braid_graph_free(g);
}
