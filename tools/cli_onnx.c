/* tools/cli_onnx.c — ONNX files in the tool: telling them by content,
 * importing them with the --shape bindings, reading input tensors from
 * .npy or ONNX TensorProto .pb files, and `braid import`. */
#define _POSIX_C_SOURCE 200809L

#include "braid/onnx.h"
#include "runtime/npy/npy.h"
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The --shape bindings so far, ';'-separated (braid_onnx_options.shapes). */
static char *shapes;

bool cli_onnx_add_shape(const char *binding) {
    const char *eq = strchr(binding, '=');
    if (!eq || eq == binding || !eq[1]) return false;
    size_t old = shapes ? strlen(shapes) : 0, add = strlen(binding);
    char *s = realloc(shapes, old + add + 2);
    if (!s) return false;
    if (old) s[old++] = ';';
    memcpy(s + old, binding, add + 1);
    shapes = s;
    return true;
}

/* The --const bindings so far (names and data owned, never freed: they
 * live as long as the process). */
static braid_onnx_constant *consts;
static size_t nconsts;

bool cli_onnx_add_const(const char *binding) {
    const char *eq = strchr(binding, '=');
    if (!eq || eq == binding || !eq[1]) return false;
    br_npy_array a;
    if (!cli_read_tensor(eq + 1, BRAID_DTYPE_COUNT_, &a)) return false;
    braid_onnx_constant *c = realloc(consts, (nconsts + 1) * sizeof *c);
    int64_t *dims = malloc(sizeof a.dims);
    char *name = strndup(binding, (size_t)(eq - binding));
    if (!c || !dims || !name) {
        free(dims);
        free(name);
        br_npy_array_free(&a);
        if (c) consts = c;
        return cli_err("out of memory");
    }
    memcpy(dims, a.dims, sizeof a.dims);
    consts = c;
    consts[nconsts++] = (braid_onnx_constant){name, a.dtype, a.rank, dims,
                                              a.data};
    return true;
}

/* The first bytes of path (false when unreadable). */
static bool head_of(const char *path, unsigned char *buf, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    *n = fread(buf, 1, *n, f);
    fclose(f);
    return true;
}

bool cli_is_onnx_file(const char *path) {
    unsigned char head[16];
    size_t n = sizeof head;
    size_t len = strlen(path);
    if (len > 5 && !strcasecmp(path + len - 5, ".onnx")) return true;
    return head_of(path, head, &n) && memcmp(head, "BRAIDPLN", n < 8 ? n : 8) &&
           braid_onnx_is_model(head, n);
}

braid_graph *cli_onnx_load(const char *path) {
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = shapes;
    o.constants = consts;
    o.nconstants = nconsts;
    braid_graph *g = NULL;
    if (braid_onnx_import(path, &o, &g) != BRAID_OK) {
        fprintf(stderr, "braid: %s\n", braid_last_error());
        return NULL;
    }
    return g;
}

bool cli_read_tensor(const char *path, braid_dtype expect, br_npy_array *a) {
    unsigned char head[8];
    size_t n = sizeof head;
    memset(a, 0, sizeof *a);
    if (!head_of(path, head, &n) || (n >= 6 && !memcmp(head, "\x93NUMPY", 6))) {
        if (br_npy_read(path, expect, a) != BRAID_OK)
            return cli_err("%s", braid_last_error());
        return true;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return cli_err("%s: cannot open", path);
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += k;
        if (len == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return cli_err("%s: out of memory", path);
    braid_status s = braid_onnx_tensor_decode(buf, len, path, &a->dtype,
                                              &a->rank, a->dims, &a->data, NULL);
    free(buf);
    if (s != BRAID_OK)
        return cli_err("%s (neither a .npy file nor an ONNX TensorProto)",
                       braid_last_error());
    int64_t numel = 1;
    for (int i = 0; i < a->rank; i++) numel *= a->dims[i];
    a->bytes = (size_t)numel * braid_dtype_size(a->dtype);
    return true;
}

static int import_usage(int rc) {
    if (rc < 0) {
        printf("usage: braid import MODEL.onnx [-o FILE.graph] "
               "[--shape NAME=DxD...]...\n"
               "  writes the imported graph in braid's text format "
               "(docs/onnx.md);\n"
               "  default output: MODEL.graph\n");
        return CLI_EXIT_OK;
    }
    return rc;
}

int cli_import(int argc, char **argv) {
    const char *file = NULL, *out = NULL;
    cli_compile_flags flags = {0};
    const cli_extra_option extra[] = {{"-o", NULL, &out},
                                      {"--output", NULL, &out}};
    int rc = cli_parse_command("import", argc, argv, extra,
                               sizeof extra / sizeof extra[0], &file, &flags);
    if (rc != CLI_EXIT_OK) return import_usage(rc);
    char *owned = NULL;
    if (!out) {
        size_t len = strlen(file);
        const char *dot = strrchr(file, '.');
        size_t stem = dot && !strchr(dot, '/') ? (size_t)(dot - file) : len;
        if (!(owned = malloc(stem + 7))) return cli_fail("out of memory");
        snprintf(owned, stem + 7, "%.*s.graph", (int)stem, file);
        out = owned;
    }
    if (cli_same_file(out, file)) {
        free(owned);
        return cli_fail("import: refusing to overwrite the model %s", file);
    }
    braid_graph *g = cli_onnx_load(file);
    bool ok = g != NULL;
    if (ok && braid_graph_write_file(g, out) != BRAID_OK)
        ok = cli_err("import: %s", braid_last_error());
    if (ok)
        printf("imported %s: %u nodes, %u inputs, %u outputs -> %s\n", file,
               braid_graph_node_count(g), braid_graph_input_count(g),
               braid_graph_output_count(g), out);
    braid_graph_free(g);
    free(owned);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
