/* fuzz/fuzz_parse.c — libFuzzer target for the .graph parser.
 *
 * Any input must parse or fail cleanly (ASan/UBSan catch the rest). A
 * failure must carry a "file:line:col: " message; a success must round-trip:
 * parse(print(g)) == g and print(parse(print(g))) == print(g). Run with a
 * corpus of examples/graphs and the dictionary fuzz/parse.dict:
 *   ./fuzz_parse -dict=fuzz/parse.dict -max_total_time=60 corpus/ */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_parse: %s\n%s\n", what, detail ? detail : "");
    abort();
}

/* Prints g; aborts when printing a valid graph fails. */
static char *print_or_die(const braid_graph *g, size_t *len) {
    char *text = NULL;
    if (braid_graph_print(g, &text, len) != BRAID_OK)
        fail("print failed", braid_last_error());
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    braid_graph *g = braid_graph_parse((const char *)data, size, "f", NULL);
    if (g == NULL) return 0; /* out of memory */
    if (braid_graph_status(g) != BRAID_OK) {
        const char *err = braid_graph_error(g);
        if (strncmp(err, "f:", 2) != 0) fail("error without a position", err);
        braid_graph_free(g);
        return 0;
    }
    size_t n1;
    char *t1 = print_or_die(g, &n1);
    braid_graph *h = braid_graph_parse(t1, n1, "printed", NULL);
    if (h == NULL || braid_graph_status(h) != BRAID_OK)
        fail("printed text does not parse", h ? braid_graph_error(h) : "");
    if (!bg_graph_equal(g, h)) fail("parse(print(g)) != g", t1);
    size_t n2;
    char *t2 = print_or_die(h, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0)
        fail("print(parse(print(g))) != print(g)", t1);
    free(t1);
    free(t2);
    braid_graph_free(h);
    braid_graph_free(g);
    return 0;
}
