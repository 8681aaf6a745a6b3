/* tests/test_strided_views.c — strided views (docs/memory.md, "Strided
 * views"): the slice / reshape / permute chains of a GPT-2 attention block
 * (built with the builder, and the tiny GPT-2 fixture) compile to plans
 * with no slice or permute work around the batched matmuls, on the cpu and
 * for a GPU (run emulated on the host; the generated kernels compile with
 * NVRTC for sm_90), and match the reference evaluator on random inputs.
 * Edge cases: a permute no layout expresses stays a copy, as does one a
 * softmax reads; a view of a caller's input; batch broadcasting (matmul's
 * own and broadcast_to); transpose flags; f16 and f64; one node read as
 * both operands; a matmul written into the permute reading it (and such a
 * permute being an output). The plan verifier rejects a wrong stride, plan
 * files keep layouts, and BRAID_PASS_STRIDED turns it all off.
 *
 * Tolerances: ts_io_compare's (ts_tolerance per dtype). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "braid/onnx.h"
#include "codegen/codegen.h"
#include "passes/layout.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

#define OFF (BRAID_PASS_CHUNK)
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static bp_plan *compile(const braid_graph *g, const char *devices,
                        unsigned disable) {
    braid_compile_options o = ts_compile_options(devices, disable);
    o.num_threads = 2;
    return ts_compile_ok(g, &o);
}

/* Nodes of op `op` that do work (the copies strided views remove). */
static uint32_t working(const bp_plan *p, braid_op op) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        n += p->res.graph->nodes[id].op == op && !p->res.info[id].noop;
    return n;
}

static uint32_t copies(const bp_plan *p) {
    return working(p, BRAID_OP_SLICE) + working(p, BRAID_OP_PERMUTE);
}

/* Working slices and permutes that are operands of attention nodes. */
static uint32_t attention_operand_copies(const bp_plan *p) {
    uint32_t n = 0;
    const braid_graph *g = p->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *x = &g->nodes[id];
        if ((x->op != BRAID_OP_SLICE && x->op != BRAID_OP_PERMUTE) ||
            p->res.info[id].noop)
            continue;
        bool fed = false;
        for (uint32_t u = 0; u < g->nnodes && !fed; u++) {
            const bg_node *y = &g->nodes[u];
            if (y->op != BRAID_OP_ATTENTION) continue;
            for (uint32_t k = 0; k < y->ninputs; k++) {
                /* through a reshape view to the [B,S,H,D] operand */
                uint32_t in = y->inputs[k];
                if (g->nodes[in].op == BRAID_OP_RESHAPE)
                    in = g->nodes[in].inputs[0];
                fed |= in == id;
            }
        }
        n += fed;
    }
    return n;
}

/* The plan node made from user node origin. */
static uint32_t node_of(const bp_plan *p, uint32_t origin) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.info[id].origin == origin) return id;
    cr_assert_fail("graph node %u is not in the plan", origin);
    return BG_NONE;
}

static braid_tensor input(braid_graph *g, const char *name, braid_dtype t,
                          int rank, const int64_t *dims) {
    return braid_input(g, name, t, rank, dims);
}

/* GPT-2's attention: x [B, T, C] through one QKV projection, split into
 * q, k, v, each [B, T, H, D] → [B, H, T, D] (k → [B, H, D, T]), softmax of
 * q·kᵀ / √D, p·v back to [B, T, C], the output projection. scale_qk
 * scales q and k after the permute instead (PyTorch's TorchScript export
 * of scaled_dot_product_attention). */
static braid_tensor attention(braid_graph *g, braid_dtype t, int64_t B,
                              int64_t T, int64_t H, int64_t D, bool scale_qk) {
    int64_t C = H * D;
    braid_tensor x = input(g, "x", t, 3, DIMS(B, T, C));
    braid_tensor w = input(g, "w_qkv", t, 2, DIMS(C, 3 * C));
    braid_tensor b = input(g, "b_qkv", t, 1, DIMS(3 * C));
    braid_tensor qkv = braid_add(g, braid_matmul(g, x, w, 0), b);
    braid_tensor part[3];
    static const int to_bhtd[] = {0, 2, 1, 3}, to_bhdt[] = {0, 2, 3, 1};
    for (int i = 0; i < 3; i++) {
        braid_tensor s = braid_slice(g, qkv, DIMS(0, 0, i * C),
                                     DIMS(B, T, (i + 1) * C), NULL);
        s = braid_reshape(g, s, 4, DIMS(B, T, H, D));
        part[i] = braid_permute(g, s, i == 1 ? to_bhdt : to_bhtd);
    }
    braid_tensor scale = braid_fill(g, t, 0, NULL, 1.0 / sqrt((double)D));
    braid_tensor s;
    if (scale_qk) {
        braid_tensor r = braid_fill(g, t, 0, NULL, 1.0 / sqrt(sqrt((double)D)));
        s = braid_matmul(g, braid_mul(g, part[0], r), braid_mul(g, part[1], r),
                         0);
    } else {
        s = braid_mul(g, braid_matmul(g, part[0], part[1], 0), scale);
    }
    braid_tensor p = braid_softmax(g, s, -1);
    braid_tensor o = braid_matmul(g, p, part[2], 0);
    o = braid_reshape(g, braid_permute(g, o, to_bhtd), 3, DIMS(B, T, C));
    braid_tensor wo = input(g, "w_o", t, 2, DIMS(C, C));
    braid_tensor y = braid_matmul(g, o, wo, 0);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    return y;
}

/* Generates p's CUDA module and compiles it for sm_90 with NVRTC. */
static void nvrtc_builds(const bp_plan *p, const char *what) {
    bc_source src;
    braid_status s = bc_plan_source(p, &src);
    cr_assert_eq(s, BRAID_OK, "%s: %s", what, braid_last_error());
    bc_binary bin;
    char err[16384];
    s = bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err);
    cr_assert_eq(s, BRAID_OK, "%s: %s", what, err);
    bc_binary_free(&bin);
    bc_source_free(&src);
}

static void attention_case(const char *devices, bool scale_qk, int nseeds) {
    braid_graph *g = braid_graph_new(NULL);
    attention(g, BRAID_F32, 2, 8, 3, 4, scale_qk);
    bp_plan *p = compile(g, devices, OFF);
    cr_assert_eq(copies(p), 0, "%s: %u slice / permute copies left", devices,
                 copies(p));
    cr_assert_geq(p->res.nlayouts, 7, "q, k, v chains and the output");
    bp_plan *off = compile(g, devices, OFF | BRAID_PASS_STRIDED);
    cr_assert_eq(off->res.nlayouts, 0);
    cr_assert_geq(copies(off), 4, "without strided views: the copies");
    ts_check_plan(g, p, nseeds, 11);
    ts_check_plan(g, p, nseeds, 12);
    if (strcmp(devices, "cpu")) nvrtc_builds(p, devices);
    braid_plan_free(off);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(strided, attention_cpu) { attention_case("cpu", false, 0); }
Test(strided, attention_cpu_scaled_qk) { attention_case("cpu", true, 0); }
Test(strided, attention_gpu_plan) { attention_case("cuda:0", false, 3); }
Test(strided, attention_gpu_plan_scaled_qk) {
    attention_case("cuda:0", true, 3);
}

/* Also with fusion off: plain matmul and mul nodes read the views. */
Test(strided, attention_unfused) {
    braid_graph *g = braid_graph_new(NULL);
    attention(g, BRAID_F32, 1, 5, 2, 3, true);
    bp_plan *p = compile(g, "cpu", OFF | BRAID_PASS_FUSE);
    cr_assert_eq(copies(p), 0);
    ts_check_plan(g, p, 0, 3);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The layouts the q, k, v chains get: qkv is [B, T, 3C] (row stride 3C),
 * q [B, H, T, D] at strides (T·3C, D, 3C, 1), k [B, H, D, T] at
 * (T·3C, D, 1, 3C) starting at element C, v at 2C. */
Test(strided, attention_layouts) {
    braid_graph *g = braid_graph_new(NULL);
    attention(g, BRAID_F32, 2, 8, 3, 4, false);
    bp_plan *p = compile(g, "cpu", OFF | BRAID_PASS_FUSE);
    int64_t C = 12, T = 8, D = 4;
    int seen = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        const int64_t *s = bp_layout_of(p, id);
        if (n->op != BRAID_OP_PERMUTE || !s || !p->res.info[id].noop) continue;
        const bp_tensor_place *pl = &p->res.info[id].place;
        uint64_t at = pl->offset / sizeof(float);
        cr_assert_eq(s[0], T * 3 * C);
        cr_assert_eq(s[1], D);
        if (at == (uint64_t)C) { /* k */
            cr_assert(s[2] == 1 && s[3] == 3 * C, "k: %lld %lld",
                      (long long)s[2], (long long)s[3]);
        } else {
            cr_assert(at == 0 || at == (uint64_t)(2 * C));
            cr_assert(s[2] == 3 * C && s[3] == 1);
        }
        seen++;
    }
    cr_assert_eq(seen, 3, "q, k and v permutes");
    /* p·v writes [B, T, H, D] straight: the permute back is skipped */
    uint32_t back = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        if (n->op != BRAID_OP_MATMUL || !bp_layout_of(p, id)) continue;
        const int64_t *s = bp_layout_of(p, id);
        cr_assert(!p->res.info[id].noop, "the matmul still computes");
        cr_assert_eq(s[1], D);
        cr_assert_eq(s[2], C);
        cr_assert_eq(s[3], 1);
        uint32_t q = p->res.info[id].place.base;
        cr_assert_eq(p->res.graph->nodes[q].op, BRAID_OP_PERMUTE);
        cr_assert(p->res.info[q].noop);
        back++;
    }
    cr_assert_eq(back, 1);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(strided, tiny_gpt2_fixture) {
#ifdef BRAID_NO_ONNX
    cr_skip_test("built without ONNX support");
#else
    braid_graph *g = NULL;
    braid_status s = braid_onnx_import(
        BRAID_SOURCE_DIR "/tests/models/tiny/tiny_gpt2_b1_s16_ts.onnx", NULL,
        &g);
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    static const char *const devs[] = {"cpu", "cuda:0"};
    for (int d = 0; d < 2; d++) {
        braid_compile_options o = ts_compile_options(devs[d], 0);
        o.num_threads = 2;
        bp_plan *p = ts_compile_ok(g, &o);
        o.disable_passes = BRAID_PASS_STRIDED;
        bp_plan *off = ts_compile_ok(g, &o);
        /* The import makes each layer's attention one `attention` node
         * (onnx/fuse_attention.c), which reads q, k and v through row
         * strides: the 2 × 3 slices of the QKV projection feeding it are
         * strided views like every other slice and permute (without the
         * pass they are copies). */
        uint32_t fed = attention_operand_copies(p);
        cr_assert_eq(fed, 0, "%s: %u copies feed attention nodes", devs[d],
                     fed);
        cr_assert_eq(copies(p), 0, "%s: %u copies", devs[d], copies(p));
        cr_assert_geq(attention_operand_copies(off), 6,
                      "%s: %u copies feed attention without the pass", devs[d],
                      attention_operand_copies(off));
        ts_check_plan(g, p, d ? 2 : 0, 5);
        braid_plan_free(off);
        braid_plan_free(p);
    }
    braid_graph_free(g);
#endif
}

/* ---- edge cases ------------------------------------------------------------ */

/* A permute merged by a reshape no strides express is a copy; the reshape
 * after it a contiguous view. So is a permute a softmax reads. */
Test(strided, inexpressible_permutes_stay_copies) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_exp(g, input(g, "x", BRAID_F32, 3, DIMS(4, 6, 8)));
    static const int swap[] = {0, 2, 1};
    braid_tensor t = braid_permute(g, x, swap);                     /* node 2 */
    braid_tensor r = braid_reshape(g, t, 2, DIMS(4, 48));           /* 3 */
    braid_tensor w = input(g, "w", BRAID_F32, 2, DIMS(48, 5));
    braid_output(g, "y", braid_matmul(g, r, w, 0));
    braid_tensor u = braid_permute(g, x, swap);                     /* 6 */
    braid_output(g, "z", braid_softmax(g, u, -1));
    bp_plan *p = compile(g, "cpu", OFF | BRAID_PASS_SIMPLIFY);
    cr_assert_eq(working(p, BRAID_OP_PERMUTE), 2);
    cr_assert_eq(p->res.info[node_of(p, 3)].place.storage, BP_STORAGE_VIEW);
    cr_assert_null(bp_layout_of(p, node_of(p, 3)));
    ts_check_plan(g, p, 0, 1);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A permute of a caller's input is read in place; with matmul's own batch
 * broadcasting (b [D, E] for every batch) and transpose flags. */
Test(strided, view_of_input_with_broadcast_and_flags) {
    static const int perm[] = {0, 2, 1, 3};
    for (unsigned flags = 0; flags < 4; flags++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = input(g, "x", BRAID_F32, 4, DIMS(2, 7, 3, 5));
        braid_tensor a = braid_permute(g, x, perm); /* [2, 3, 7, 5] */
        bool ta = flags & BRAID_TRANSPOSE_A, tb = flags & BRAID_TRANSPOSE_B;
        if (ta) a = braid_permute(g, a, (const int[]){0, 1, 3, 2});
        braid_tensor b = input(g, "b", BRAID_F32, 2, tb ? DIMS(4, 5) : DIMS(5, 4));
        braid_output(g, "y", braid_matmul(g, a, b, flags));
        bp_plan *p = compile(g, "cpu", OFF);
        cr_assert_eq(copies(p), 0, "flags %u", flags);
        uint32_t v = node_of(p, ta ? 2 : 1);
        cr_assert_eq(p->res.info[v].place.storage, BP_STORAGE_VIEW);
        cr_assert_eq(p->res.info[v].place.base, node_of(p, 0), "of the input");
        ts_check_plan(g, p, 0, flags);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* broadcast_to over batch dims is a view with zero batch strides; a slice
 * of a column range as a matmul's b. */
Test(strided, broadcast_to_and_column_slice) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_tanh(g, input(g, "a", BRAID_F32, 3, DIMS(4, 6, 5)));
    braid_tensor w = braid_exp(g, input(g, "w", BRAID_F32, 2, DIMS(5, 9)));
    braid_tensor wb = braid_broadcast_to(g, w, 3, DIMS(4, 5, 9));
    braid_tensor ws = braid_slice(g, wb, DIMS(0, 0, 2), DIMS(4, 5, 8), NULL);
    braid_output(g, "y", braid_matmul(g, a, ws, 0));
    bp_plan *p = compile(g, "cpu", OFF);
    cr_assert_eq(working(p, BRAID_OP_BROADCAST_TO) + copies(p), 0);
    ts_check_plan(g, p, 0, 2);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* f16 (widened to f32 per batch) and f64 operands; one view as both
 * operands (a·aᵀ). */
Test(strided, dtypes_and_shared_operand) {
    static const braid_dtype types[] = {BRAID_F16, BRAID_BF16, BRAID_F64};
    static const int perm[] = {1, 0, 2};
    for (int i = 0; i < 3; i++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = input(g, "x", types[i], 3, DIMS(6, 3, 4));
        braid_tensor a = braid_permute(g, x, perm); /* [3, 6, 4] */
        braid_output(g, "y", braid_matmul(g, a, a, BRAID_TRANSPOSE_B));
        bp_plan *p = compile(g, "cpu", OFF);
        cr_assert_eq(copies(p), 0, "%s", braid_dtype_name(types[i]));
        ts_check_plan(g, p, 0, 7);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* A matmul read only by a permute that is an output writes the output's
 * bytes; a matmul read by a permute and something else keeps its own. */
Test(strided, matmul_into_permute) {
    static const int perm[] = {1, 0, 2};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = input(g, "a", BRAID_F32, 3, DIMS(3, 5, 4));
    braid_tensor b = input(g, "b", BRAID_F32, 3, DIMS(3, 4, 6));
    braid_tensor m = braid_matmul(g, a, b, 0);        /* node 2 */
    braid_output(g, "p", braid_permute(g, m, perm));  /* 3 */
    braid_tensor m2 = braid_matmul(g, a, braid_exp(g, b), 0);
    braid_output(g, "q", braid_permute(g, m2, perm));
    braid_output(g, "m2", m2);
    bp_plan *p = compile(g, "cpu", OFF);
    uint32_t mm = node_of(p, 2), pm = node_of(p, 3);
    cr_assert_eq(p->res.info[mm].place.storage, BP_STORAGE_VIEW);
    cr_assert_eq(p->res.info[mm].place.base, pm);
    cr_assert(p->res.info[pm].noop && !p->res.info[mm].noop);
    cr_assert_eq(working(p, BRAID_OP_PERMUTE), 1, "m2 is an output too");
    ts_check_plan(g, p, 0, 4);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the verifier, plan files -------------------------------------------- */

Test(strided, verifier_rejects_a_wrong_stride) {
    braid_graph *g = braid_graph_new(NULL);
    attention(g, BRAID_F32, 1, 4, 2, 3, false);
    bp_plan *p = compile(g, "cpu", OFF);
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    for (uint32_t k = 0; k < p->res.nlayouts; k++) {
        bp_layout *l = &p->res.layouts[k];
        int r = p->res.graph->nodes[l->node].rank;
        l->stride[r - 2] += 1;
        cr_assert_neq(bp_verify_plan(p), BRAID_OK, "layout %u", k);
        cr_assert(strstr(braid_last_error(), "layout") ||
                      strstr(braid_last_error(), "strided"),
                  "%s", braid_last_error());
        l->stride[r - 2] -= 1;
        int64_t keep = l->stride[r - 1];
        l->stride[r - 1] = INT64_MAX / 3; /* a crafted file's: no overflow */
        cr_assert_neq(bp_verify_plan(p), BRAID_OK, "layout %u", k);
        l->stride[r - 1] = -1;
        cr_assert_neq(bp_verify_plan(p), BRAID_OK, "layout %u", k);
        l->stride[r - 1] = keep;
    }
    /* a slice's place without its layout: the bytes are not contiguous */
    uint32_t id = p->res.layouts[0].node;
    uint32_t keep = p->res.info[id].place.layout;
    p->res.info[id].place.layout = 0;
    cr_assert_neq(bp_verify_plan(p), BRAID_OK);
    p->res.info[id].place.layout = keep;
    cr_assert_eq(bp_verify_plan(p), BRAID_OK);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(strided, plan_file_keeps_layouts) {
    braid_graph *g = braid_graph_new(NULL);
    attention(g, BRAID_F32, 2, 6, 2, 4, true);
    bp_plan *p = compile(g, "cpu", OFF);
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(braid_plan_save_memory(p, &data, &size), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load_memory(data, size, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(q->res.nlayouts, p->res.nlayouts);
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const int64_t *a = bp_layout_of(p, id), *b = bp_layout_of(q, id);
        cr_assert_eq(a == NULL, b == NULL, "node %u", id);
        for (int d = 0; a && d < p->res.graph->nodes[id].rank; d++)
            cr_assert_eq(a[d], b[d]);
    }
    ts_check_plan(g, q, 0, 9);
    braid_plan_free(q);
    free(data);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* DOT and the plan listing show strided views with their strides. */
Test(strided, dot_shows_layouts) {
    braid_graph *g = braid_graph_new(NULL);
    attention(g, BRAID_F32, 1, 4, 2, 3, false);
    bp_plan *p = compile(g, "cpu", OFF);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(braid_plan_to_dot(p, f), BRAID_OK);
    fclose(f);
    /* q of qkv [1, 4, 18]: strides (0, 3, 18, 1), 0 along the length-1 B */
    cr_assert(strstr(text, "strided view of %"), "%s", text);
    cr_assert(strstr(text, "[0,3,18,1]"), "q's strides missing");
    free(text);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Unary, binary and where kernels walking a strided view: a permute, and
 * a broadcast_to whose every stride is 0 (found by test_cpu_fused's
 * random graphs: the unary kernel assumed a contiguous input). */
Test(strided, elementwise_readers) {
    static const int perm[] = {2, 0, 1};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = input(g, "x", BRAID_F16, 3, DIMS(3, 4, 5));
    braid_tensor t = braid_permute(g, x, perm); /* [5, 3, 4] */
    braid_tensor b = braid_broadcast_to(
        g, input(g, "b", BRAID_F16, 1, DIMS(1)), 3, DIMS(5, 3, 4));
    braid_output(g, "u", braid_relu(g, b));
    braid_output(g, "e", braid_exp(g, t));
    braid_output(g, "s", braid_sub(g, t, b));
    braid_output(g, "w", braid_where(g, braid_gt(g, t, b), t, b));
    bp_plan *p = compile(g, "cpu", OFF | BRAID_PASS_FUSE); /* unfused readers */
    cr_assert_eq(copies(p) + working(p, BRAID_OP_BROADCAST_TO), 0);
    ts_check_plan(g, p, 0, 8);
    braid_plan_free(p);
    braid_graph_free(g);
}
