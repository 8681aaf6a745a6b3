/* tests/test_onnx.c — the ONNX importer on models tests/onnx/make_models.py
 * writes (random shapes and weights from a fresh seed per run), compared
 * with ONNX's own reference evaluator (onnx.reference): values, folding,
 * names, int64 at the boundary, external data, and every hostile model
 * refused with a message naming what is wrong. */
#define _POSIX_C_SOURCE 200809L
#include "tests/onnx_support.h"
#include "tests/support/support.h"

#include <time.h>

#ifdef BRAID_NO_ONNX
OS_STUB_TEST(onnx)
#else

static char *dir;

static void make_models(void) {
    dir = tf_mkdtemp();
    cr_assert(dir);
    unsigned seed = (unsigned)time(NULL);
    os_make_models(dir, seed);
    cr_log_info("models from seed %u in %s", seed, dir);
}

static void remove_models(void) {
    if (dir) tf_rmtree(dir);
    free(dir);
    dir = NULL;
}

TestSuite(onnx, .init = make_models, .fini = remove_models);

static char *model(const char *name) {
    char file[256];
    snprintf(file, sizeof file, "%s.onnx", name);
    return tf_path(dir, file);
}

static braid_graph *import_ok(const char *name, const char *shapes) {
    char *path = model(name);
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = shapes;
    braid_graph *g = NULL;
    cr_assert_eq(braid_onnx_import(path, &o, &g), BRAID_OK, "%s",
                 braid_last_error());
    free(path);
    return g;
}

/* Importing name fails with status s and a message containing each of the
 * NULL-terminated strings. */
static void import_fails(const char *name, braid_status s, ...) {
    char *path = model(name);
    braid_graph *g = (braid_graph *)1;
    braid_status got = braid_onnx_import(path, NULL, &g);
    const char *msg = braid_last_error();
    cr_assert_eq(got, s, "%s: status %s, message: %s", name,
                 braid_status_name(got), msg);
    cr_assert_null(g);
    cr_assert(strstr(msg, path), "%s: message names no file: %s", name, msg);
    va_list ap;
    va_start(ap, s);
    for (const char *want; (want = va_arg(ap, const char *));)
        cr_assert(strstr(msg, want), "%s: \"%s\" not in: %s", name, want, msg);
    va_end(ap);
    free(path);
}

Test(onnx, mlp_matches_onnx_reference) {
    braid_graph *g = import_ok("mlp", NULL);
    os_check_graph(g, dir, "mlp", 1e-5, 1e-6);
    /* braid node names are the model's tensor names */
    char *text = NULL;
    cr_assert_eq(braid_graph_print(g, &text, NULL), BRAID_OK);
    cr_assert(strstr(text, "\"r\"") && strstr(text, "\"probs\""), "%s", text);
    free(text);
    braid_graph_free(g);
}

/* MatMul(Transpose(a), Transpose(w)) with only the last two axes swapped
 * reads a and w in place through the matmul's transpose flags; the
 * Transposes become dead permutes, which compiling drops. */
Test(onnx, matmul_of_transposes_uses_the_flags) {
    braid_graph *g = import_ok("matmul_transposed", NULL);
    os_check_graph(g, dir, "matmul_transposed", 1e-5, 1e-6);
    int matmuls = 0;
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++) {
        const bg_node *nd = bg_node_at(g, id);
        if (nd->op != BRAID_OP_MATMUL) continue;
        matmuls++;
        cr_expect_eq(nd->attr.flags & (BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B),
                     BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B,
                     "matmul flags %u", (unsigned)nd->attr.flags);
        for (uint32_t k = 0; k < nd->ninputs; k++)
            cr_expect_neq(bg_node_at(g, nd->inputs[k])->op, BRAID_OP_PERMUTE,
                          "operand %u is a permute", k);
    }
    cr_assert_eq(matmuls, 1);
    braid_graph_free(g);
}

/* Model name imports and matches ONNX's reference outputs (atol and rtol
 * tol). */
static void matches_reference(const char *name, double tol) {
    braid_graph *g = import_ok(name, NULL);
    os_check_graph(g, dir, name, tol, tol);
    braid_graph_free(g);
}

/* ConvTranspose with an output_shape one past the natural size: the
 * extra row and column (zeros, then the bias) at the end, and with
 * SAME_UPPER at the start, as ONNX's reference places them. */
Test(onnx, conv_transpose_output_shape_past_the_natural_size) {
    matches_reference("convt_grow", 1e-5);
    matches_reference("convt_grow_upper", 1e-5);
}

/* MaxPool's Indices output against ONNX's reference: pads, strides and
 * ceil_mode; dilations. Then storage_order 1 beside 0 on the same random
 * x [2, 3, 7, 8]: each column-major index is its row-major twin's plane
 * offset plus w·H + h. */
Test(onnx, max_pool_indices) {
    matches_reference("maxpool_idx", 1e-6);
    matches_reference("maxpool_idx_dil", 1e-6);
    braid_graph *g = import_ok("maxpool_idx_orders", NULL);
    ts_io *io = ts_io_new(g, 5);
    cr_assert_not_null(io);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    cr_assert_eq(io->noutputs, 2);
    const int64_t *ir = io->out[0].data, *ic = io->out[1].data;
    const int64_t H = 7, W = 8, plane = H * W;
    for (int64_t k = 0; k < io->out_numel[0]; k++) {
        int64_t p = ir[k] / plane, h = ir[k] % plane / W, w = ir[k] % W;
        cr_assert_eq(ic[k], p * plane + w * H + h,
                     "index %lld: row-major %lld, column-major %lld",
                     (long long)k, (long long)ir[k], (long long)ic[k]);
    }
    ts_io_free(io);
    braid_graph_free(g);
}

Test(onnx, shape_arithmetic_is_folded) {
    char path[1024], shapes[64];
    snprintf(path, sizeof path, "%s/fold.batch", dir);
    char *batch = ts_read_file_ok(path);
    snprintf(shapes, sizeof shapes, "x=%sx3x4", batch);
    free(batch);
    braid_graph *g = import_ok("fold", shapes);
    /* Shape, Gather, Mul, Concat, Range, Cast, Squeeze all ran at import:
     * what is left is the input, the reshape, the ramp constant, the add */
    cr_assert_eq(braid_graph_node_count(g), 4, "%u nodes",
                 braid_graph_node_count(g));
    os_check_graph(g, dir, "fold", 1e-6, 1e-6);
    braid_graph_free(g);
}

/* Bool ReduceMax / ReduceMin (any / all), an empty axis included: false
 * and true there, as ONNX's reference gives. */
Test(onnx, bool_reductions_of_empty_sets) {
    braid_graph *g = import_ok("any_all", NULL);
    os_check_graph(g, dir, "any_all", 0, 0);
    braid_graph_free(g);
}

/* int64 in and out as i64; inside, i32 through a cast that checks the
 * range when the plan runs. */
Test(onnx, int64_is_i64_at_the_boundary) {
    braid_graph *g = import_ok("ids", NULL);
    braid_tensor t;
    const char *name;
    braid_dtype dt;
    braid_graph_input(g, 0, &name, &t);
    braid_tensor_info(g, t, &dt, NULL, NULL);
    cr_assert_eq(dt, BRAID_I64);
    braid_graph_output(g, 0, &name, &t);
    braid_tensor_info(g, t, &dt, NULL, NULL);
    cr_assert_eq(dt, BRAID_I64);
    os_check_graph(g, dir, "ids", 0, 0);
    /* an id that does not fit i32 fails the run, naming the cast */
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK);
    int64_t ids[10] = {1, 2, 3, (int64_t)1 << 40, 5, 6, 7, 8, 9, 10};
    int64_t out[10];
    braid_input_binding in = {"ids", ids, sizeof ids};
    braid_output_binding ob = {"next", out, sizeof out};
    cr_assert_neq(braid_run(e, &in, 1, &ob, 1), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "does not fit"), "%s",
              braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(onnx, test_data_integers) {
    /* an int64 TensorProto holding 2^40: exact, as i64 */
    static const unsigned char pb[] = {0x08, 0x01, 0x10, 0x07, 0x3a, 0x06,
                                       0x80, 0x80, 0x80, 0x80, 0x80, 0x20};
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    void *data = NULL;
    cr_assert_eq(braid_onnx_tensor_decode(pb, sizeof pb, "big.pb", &dt, &rank,
                                          dims, &data, NULL),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(dt, BRAID_I64);
    cr_assert_eq(((int64_t *)data)[0], (int64_t)1 << 40);
    free(data);
    /* a uint64 one: narrowed to i32, so 2^40 is an error, never a wrap */
    static const unsigned char pb64[] = {0x08, 0x01, 0x10, 0x0d, 0x5a, 0x06,
                                         0x80, 0x80, 0x80, 0x80, 0x80, 0x20};
    data = (void *)1;
    cr_assert_eq(braid_onnx_tensor_decode(pb64, sizeof pb64, "big.pb", &dt,
                                          &rank, dims, &data, NULL),
                 BRAID_ERR_UNSUPPORTED);
    cr_assert_null(data);
    cr_assert(strstr(braid_last_error(), "does not fit braid's i32"), "%s",
              braid_last_error());
}

Test(onnx, external_data_inside_the_folder) {
    braid_graph *g = import_ok("ext", NULL);
    os_check_graph(g, dir, "ext", 0, 0);
    braid_graph_free(g);
}

Test(onnx, external_data_leaving_the_folder_is_refused) {
    import_fails("ext_dotdot", BRAID_ERR_INVALID_ARGUMENT, "../../etc/passwd",
                 "leaves the model's folder", NULL);
    import_fails("ext_abs", BRAID_ERR_INVALID_ARGUMENT, "/etc/passwd",
                 "leaves the model's folder", NULL);
    import_fails("ext_inner_dotdot", BRAID_ERR_INVALID_ARGUMENT,
                 "leaves the model's folder", NULL);
    import_fails("ext_symlink", BRAID_ERR_INVALID_ARGUMENT,
                 "resolves outside the model's folder", NULL);
    import_fails("ext_short", BRAID_ERR_INVALID_ARGUMENT, "is shorter", NULL);
}

Test(onnx, hostile_graphs_are_refused_with_a_message) {
    import_fails("dangling", BRAID_ERR_INVALID_ARGUMENT, "\"nowhere\"",
                 "dangling or cyclic", NULL);
    import_fails("cyclic", BRAID_ERR_INVALID_ARGUMENT, "(Add, opset 17)",
                 "dangling or cyclic", NULL);
    import_fails("duplicate", BRAID_ERR_INVALID_ARGUMENT,
                 "\"y\" is defined twice", NULL);
    import_fails("missing_init", BRAID_ERR_INVALID_ARGUMENT, "\"w\"", NULL);
    import_fails("unsupported", BRAID_ERR_UNSUPPORTED,
                 "node \"nz\" (NonZero, opset 17): unsupported: ", NULL);
    import_fails("no_output_node", BRAID_ERR_INVALID_ARGUMENT,
                 "graph output \"y\"", NULL);
    import_fails("unbound", BRAID_ERR_INVALID_ARGUMENT, "input \"x\" dim 0 (n)",
                 NULL);
    import_fails("huge_dims", BRAID_ERR_SHAPE, "w: dims", NULL);
    import_fails("negative_dims", BRAID_ERR_SHAPE, "w: dims", NULL);
    import_fails("short_data", BRAID_ERR_INVALID_ARGUMENT, "1 values for 3",
                 NULL);
    import_fails("reshape_dynamic", BRAID_ERR_UNSUPPORTED,
                 "must be known at import time", NULL);
    import_fails("deep", BRAID_ERR_PARSE, "nest more than", NULL);
}

Test(onnx, frozen_inputs_make_shapes_static) {
    char *path = model("reshape_dynamic");
    int64_t shape = 3, one = 1;
    braid_onnx_constant c = {"s", BRAID_I32, 1, &one, (int32_t[]){3}};
    (void)shape;
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.constants = &c;
    o.nconstants = 1;
    braid_graph *g = NULL;
    cr_assert_eq(braid_onnx_import(path, &o, &g), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_graph_input_count(g), 1);
    braid_graph_free(g);
    free(path);
}

Test(onnx, shape_bindings_must_agree_with_the_model) {
    char *path = model("mlp");
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = "x=99x99";
    braid_graph *g = NULL;
    cr_assert_eq(braid_onnx_import(path, &o, &g), BRAID_ERR_SHAPE);
    cr_assert(strstr(braid_last_error(), "the binding gives 99"), "%s",
                 braid_last_error());
    o.shapes = "x=1xq";
    cr_assert_eq(braid_onnx_import(path, &o, &g), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "malformed"), "%s", braid_last_error());
    free(path);
}

/* Every prefix of a real model, and bytes changed in place: refused with a
 * message or imported, never a crash or a leak (run under ASan). */
Test(onnx, truncation_and_corruption_never_crash) {
    char *path = model("mlp");
    size_t len = 0;
    unsigned char *buf = (unsigned char *)ts_read_file_len(path, &len);
    cr_assert(buf);
    int refused = 0;
    for (size_t n = 0; n < len; n++) {
        braid_graph *g = NULL;
        if (braid_onnx_import_memory(buf, n, NULL, &g) != BRAID_OK) {
            cr_assert(*braid_last_error(), "prefix %zu: no message", n);
            refused++;
        }
        braid_graph_free(g);
    }
    cr_assert_gt(refused, (int)len / 2, "%d of %zu prefixes refused", refused,
                 len);
    for (size_t i = 0; i < len; i += 1 + len / 512) {
        for (int v = 0; v < 4; v++) {
            unsigned char save = buf[i];
            buf[i] = (unsigned char)(v == 0   ? 0xff
                                     : v == 1 ? save ^ 0x07 /* wire type */
                                     : v == 2 ? 0x00
                                              : save + 1);
            braid_graph *g = NULL;
            if (braid_onnx_import_memory(buf, len, NULL, &g) != BRAID_OK)
                cr_assert(*braid_last_error());
            braid_graph_free(g);
            buf[i] = save;
        }
    }
    free(buf);
    free(path);
}

Test(onnx, lengths_past_the_end_and_bad_wire_types) {
    static const unsigned char past[] = {0x08, 0x08, 0x3a, 0xff, 0xff, 0x03};
    static const unsigned char group[] = {0x08, 0x08, 0x3b, 0x00};
    static const unsigned char field0[] = {0x08, 0x08, 0x02, 0x00};
    static const unsigned char varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const struct {
        const unsigned char *p;
        size_t n;
        const char *want;
    } cases[] = {{past, sizeof past, "past the end"},
                 {group, sizeof group, "wire type"},
                 {field0, sizeof field0, "field number 0"},
                 {varint, sizeof varint, "varint"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        braid_graph *g = NULL;
        braid_onnx_options o;
        braid_onnx_options_init(&o);
        o.filename = "bad.onnx";
        cr_assert_eq(braid_onnx_import_memory(cases[i].p, cases[i].n, &o, &g),
                     BRAID_ERR_PARSE);
        const char *msg = braid_last_error();
        cr_assert(strstr(msg, "bad.onnx: ") && strstr(msg, cases[i].want),
                  "case %zu: %s", i, msg);
    }
}

/* LayerNormalization over the last axis with only Y named imports as one
 * layer_norm op; over two axes, or with Mean / InvStdDev named, as the
 * composite (no layer_norm node). Every form matches onnx.reference. */
Test(onnx, layer_normalization_as_one_op) {
    static const struct {
        const char *name;
        uint32_t ops;
    } cases[] = {
        {"ln_op", 1}, {"ln_op_nobias", 1}, {"ln_axes", 0}, {"ln_stats", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        braid_graph *g = import_ok(cases[i].name, NULL);
        uint32_t n = 0;
        for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
            n += g->nodes[id].op == BRAID_OP_LAYER_NORM;
        cr_assert_eq(n, cases[i].ops, "%s: %u layer_norm nodes", cases[i].name,
                     (unsigned)n);
        os_check_graph(g, dir, cases[i].name, 1e-4, 1e-5);
        braid_graph_free(g);
    }
}

/* PyTorch's exported attention subgraph becomes one attention op when
 * nothing else uses its intermediates (tests/onnx/make_models.py, sdpa_*),
 * and so does ONNX's Attention without softcap (attn_*): the fused graph
 * still matches onnx.reference, fully masked row included. A static mask
 * that is exactly the causal triangle (-inf or float32's lowest past the
 * diagonal) becomes the causal flag and is no input; one key more masked
 * and it stays a mask. */
Test(onnx, sdpa_subgraph_as_one_op) {
    static const struct {
        const char *name;
        uint32_t ops;
        bool causal; /* the flag, and no mask input */
    } cases[] = {{"sdpa_ts", 1, false},
                 {"sdpa_nomask", 1, false},
                 {"sdpa_probs", 0, false},
                 {"sdpa_noguard", 0, false},
                 {"sdpa_causal", 1, true},
                 {"sdpa_causal_min", 1, true},
                 {"sdpa_causal_almost", 1, false},
                 {"attn_op", 1, false}, /* its inputs: checked elsewhere */
                 {"attn_softcap", 0, false}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        braid_graph *g = import_ok(cases[i].name, NULL);
        uint32_t n = 0, sm = 0;
        for (uint32_t id = 0; id < braid_graph_node_count(g); id++) {
            const bg_node *nd = &g->nodes[id];
            n += nd->op == BRAID_OP_ATTENTION;
            sm += nd->op == BRAID_OP_SOFTMAX;
            if (nd->op != BRAID_OP_ATTENTION ||
                !strncmp(cases[i].name, "attn_", 5))
                continue;
            bool causal = nd->attr.flags & BRAID_ATTENTION_CAUSAL;
            cr_assert_eq(causal, cases[i].causal, "%s: causal flag %d",
                         cases[i].name, causal);
            bool masked = strcmp(cases[i].name, "sdpa_nomask") != 0;
            cr_assert_eq(nd->ninputs, masked && !causal ? 4u : 3u,
                         "%s: %u inputs", cases[i].name, (unsigned)nd->ninputs);
        }
        cr_assert_eq(n, cases[i].ops, "%s: %u attention nodes",
                     cases[i].name, (unsigned)n);
        /* fused: q, k, v reach it as reshapes of the inputs, no permute */
        bool onnx_op = !strncmp(cases[i].name, "attn_", 5);
        for (uint32_t id = 0; n && !onnx_op && id < braid_graph_node_count(g);
             id++)
            if (g->nodes[id].op == BRAID_OP_ATTENTION)
                for (uint32_t k = 0; k < 3; k++)
                    cr_assert_eq(
                        g->nodes[g->nodes[id].inputs[k]].op, BRAID_OP_RESHAPE,
                        "%s: operand %u", cases[i].name, (unsigned)k);
        cr_assert(n || sm || onnx_op, "%s: unfused keeps its softmax",
                  cases[i].name);
        os_check_graph(g, dir, cases[i].name, 1e-4, 1e-5);
        braid_graph_free(g);
    }
}

Test(onnx, input_names_are_braid_identifiers) {
    char buf[32];
    cr_assert_eq(braid_onnx_input_name("input.1", buf, sizeof buf), 7);
    cr_assert_str_eq(buf, "input.1");
    braid_onnx_input_name("onnx::Add_3", buf, sizeof buf);
    cr_assert_str_eq(buf, "onnx__Add_3");
    braid_onnx_input_name("0x", buf, sizeof buf);
    cr_assert_str_eq(buf, "_0x");
    cr_assert_eq(braid_onnx_input_name("abcdef", buf, 4), 6);
    cr_assert_str_eq(buf, "abc");
}

/* An imported model's weights are copied once, into shared holders, and
 * braid_compile shares them instead of copying them again (issue 14); the
 * plan outlives the imported graph. With a caller's allocator hook the
 * graph's constants stay the hook's (not shared). */
static void *counting_alloc(void *user, void *ptr, size_t old_size,
                            size_t new_size) {
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    ++*(size_t *)user;
    return realloc(ptr, new_size);
}

Test(onnx_weights, imported_weights_are_shared_by_the_compiled_plan) {
    const char *path =
        BRAID_SOURCE_DIR "/tests/models/tiny/tiny_gpt2_b1_s16_ts.onnx";
    braid_graph *g = NULL;
    cr_assert_eq(braid_onnx_import(path, NULL, &g), BRAID_OK, "%s",
                 braid_last_error());
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "%s",
                 braid_last_error());
    const braid_graph *s = braid_plan_graph(p);
    cr_assert_eq(s->nnodes, g->nnodes);
    uint64_t all = 0, in_holders = 0;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const bg_node *n = &g->nodes[i];
        if (n->op != BRAID_OP_CONSTANT || !n->attr.data) continue;
        all += bg_nbytes(n);
        if (!n->shared) continue; /* converted (int64) or folded ones */
        in_holders += bg_nbytes(n);
        cr_assert(s->nodes[i].attr.data == n->attr.data,
                  "node %u: braid_compile copied a shared weight", i);
    }
    cr_assert(in_holders >= all * 9 / 10,
              "%llu of %llu constant bytes shared: the weights are copied",
              (unsigned long long)in_holders, (unsigned long long)all);
    braid_graph_free(g); /* the plan keeps the weights alive */
    size_t size;
    void *bytes = NULL;
    cr_assert_eq(braid_plan_save_memory(p, &bytes, &size), BRAID_OK);
    free(bytes);
    braid_plan_free(p);

    size_t calls = 0;
    braid_graph_options go = {counting_alloc, &calls};
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.graph = &go;
    cr_assert_eq(braid_onnx_import(path, &o, &g), BRAID_OK, "%s",
                 braid_last_error());
    for (uint32_t i = 0; i < g->nnodes; i++)
        cr_assert_null(g->nodes[i].shared, "node %u bypasses the hook", i);
    cr_assert_gt(calls, 0);
    braid_graph_free(g);
}

#endif /* BRAID_NO_ONNX */
