/* codegen/pool.c — max_pool and avg_pool (kind WINDOW): one thread per
 * output element, the geometry (graph/window.h, every pool seen as 3-D)
 * baked into the kernel as constants so the tap loops unroll.
 *
 * Thread i splits its flat index into (plane, o0, o1, o2) by constant
 * divisions and walks the taps of its window: tap j of axis a reads input
 * o·stride - pad_lo + j·dilation, skipped outside [0, in) (padding reads
 * nothing). Max runs in the compute type (exact; NaN propagates; -inf, or
 * INT_MIN for i32, over a window without taps); an average sums in double
 * and divides once — the reference's arithmetic, so results match it to
 * the last bit but for the final rounding to f16/bf16 (through f32, as
 * bg_store does). Neighbouring threads read neighbouring inputs (stride
 * apart), which the L1/L2 caches serve: pooling is bound by memory, one
 * read of x (plus the window overlap from cache) and one write. */
#include "codegen/internal.h"
#include "graph/window.h"

#include <stdio.h>

/* The tap loop of axis a, opened; pos<a> is the input coordinate. */
static void emit_axis_loop(bc_buf *b, const bg_window *w, int a) {
    bc_buf_printf(b,
                  "    #pragma unroll\n"
                  "    for (long long j%d = 0; j%d < %lldLL; j%d++) {\n"
                  "    const long long p%d = o%d * %lldLL - %lldLL + j%d * "
                  "%lldLL;\n",
                  a, a, (long long)w->kernel[a], a, a, a,
                  (long long)w->stride[a], (long long)w->pad_lo[a], a,
                  (long long)w->dilation[a]);
}

/* Where the taps land: inside the input (every mode), inside the padded
 * input (the count_include_pad divisor). */
static void emit_tap_tests(bc_buf *b, const bg_window *w) {
    bc_buf_puts(b, "    const bool in_x = ");
    for (int a = 0; a < 3; a++)
        bc_buf_printf(b, "%sp%d >= 0 && p%d < %lldLL", a ? " && " : "", a, a,
                      (long long)w->in[a]);
    bc_buf_puts(b, ";\n    const bool in_pad = ");
    for (int a = 0; a < 3; a++)
        bc_buf_printf(b, "%sp%d >= %lldLL && p%d < %lldLL", a ? " && " : "",
                      a, (long long)-w->pad_lo[a], a,
                      (long long)(w->in[a] + w->pad_hi[a]));
    bc_buf_puts(b, ";\n    (void)in_pad;\n");
}

/* The value of input element `at`: the input read (c NULL), or a POOL
 * program's prologue evaluated there (its function KNAME_e). */
static void emit_tap_value(bc_buf *b, const bc_node *c, braid_dtype t) {
    if (!c) {
        bc_emit_from_storage(b, t, "in0[at]");
        return;
    }
    bc_operand mode[BC_MAX_PARAMS];
    uint32_t root = c->prog->instr[c->prog->ninstr - 1].arg[0];
    bc_operands_used(c, root, BG_NONE, mode);
    bc_buf_printf(b, "%s_e(", c->entry);
    bc_emit_expr_args(b, c, "at", mode, NULL, BG_NONE, NULL);
    bc_buf_puts(b, ")");
}

/* The loop body: one tap into acc (and the counts). Channels last, plane
 * is the image and cc the channel (bc_emit_window_head). */
static void emit_tap(bc_buf *b, const bg_window *w, braid_dtype t, bool max,
                     const bc_node *c) {
    emit_tap_tests(b, w);
    bool cl = w->inner > 1;
    bc_buf_printf(b,
                  "    if (in_x) {\n"
                  "        const long long at = %s((plane * %lldLL + p0) * "
                  "%lldLL + p1) * %lldLL + p2",
                  cl ? "(" : "", (long long)w->in[0], (long long)w->in[1],
                  (long long)w->in[2]);
    if (cl) bc_buf_printf(b, ") * %lldLL + cc", (long long)w->inner);
    bc_buf_printf(b, ";\n        const %s v = ", max ? bc_ctype(t) : "double");
    emit_tap_value(b, c, t);
    bc_buf_puts(b, ";\n");
    if (max)
        bc_buf_puts(b, "        if (v > acc || v != v) acc = v;\n");
    else
        bc_buf_puts(b, "        acc += v;\n        taps++;\n");
    bc_buf_puts(b, "    }\n");
    if (!max) bc_buf_puts(b, "    if (in_pad) padded++;\n");
}

void bc_emit_window_head(bc_buf *b, const bp_plan *p, uint32_t id,
                         int64_t numel, const int64_t *out, int64_t inner) {
    bc_emit_signature(b, p, id, BC_ENTRY, BC_BLOCK, NULL);
    bc_buf_printf(b,
                  "    const unsigned long long i = (unsigned long "
                  "long)blockIdx.x * %d + threadIdx.x;\n"
                  "    if (i >= %lldULL) return;\n",
                  BC_BLOCK, (long long)numel);
    if (inner > 1) /* channels last: the channel innermost */
        bc_buf_printf(b,
                      "    const long long cc = (long long)(i %% %lldULL);\n"
                      "    const unsigned long long ri = i / %lldULL;\n",
                      (long long)inner, (long long)inner);
    else
        bc_buf_puts(b, "    const unsigned long long ri = i;\n");
    bc_buf_printf(b,
                  "    const long long o2 = (long long)(ri %% %lldULL);\n"
                  "    const long long o1 = (long long)((ri / %lldULL) %% "
                  "%lldULL);\n"
                  "    const long long o0 = (long long)((ri / %lldULL) %% "
                  "%lldULL);\n"
                  "    const long long plane = (long long)(ri / %lldULL);\n",
                  (long long)out[2], (long long)out[2], (long long)out[1],
                  (long long)(out[2] * out[1]), (long long)out[0],
                  (long long)(out[2] * out[1] * out[0]));
}

braid_status bc_window_launch(const bp_plan *p, uint32_t id, int64_t numel,
                              bc_kernel *k) {
    int64_t blocks = bc_cdiv(numel, BC_BLOCK);
    if (blocks > (int64_t)BC_GRID_X_MAX)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%lld elements are too many for one launch",
                       (long long)numel);
    k->nlaunch = numel > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", BC_ENTRY);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = BC_BLOCK;
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
    return BRAID_OK;
}

static void emit_body(bc_buf *b, const bg_window *w, braid_dtype t, bool max,
                      bool count_pad, const bc_node *c) {
    if (max) {
        bc_buf_printf(b, "    %s acc = ", bc_ctype(t));
        bc_buf_puts(b, t == BRAID_I32 ? "(int)0x80000000"
                       : t == BRAID_F64
                           ? "__longlong_as_double(0xfff0000000000000LL)"
                           : "__int_as_float(0xff800000)");
        bc_buf_puts(b, ";\n");
    } else {
        bc_buf_puts(b, "    double acc = 0;\n    long long taps = 0, padded "
                       "= 0;\n");
    }
    for (int a = 0; a < 3; a++)
        emit_axis_loop(b, w, a);
    emit_tap(b, w, t, max, c);
    bc_buf_puts(b, "    }\n    }\n    }\n");
    if (!max)
        bc_buf_printf(b, "    const double r = acc / (double)%s;\n",
                      count_pad ? "padded" : "taps");
    bc_buf_puts(b, "    out[i] = ");
    if (max) {
        bc_emit_to_storage(b, t, "acc");
    } else {
        bc_emit_to_storage(b, t, t == BRAID_F64 ? "r" : "(float)r");
    }
    bc_buf_puts(b, ";\n}\n\n");
}

braid_status bc_gen_pool(const bp_plan *p, uint32_t id, bc_buf *b,
                         bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    const bg_node *x = bg_node_at(p->res.graph, n->inputs[0]);
    int64_t numel = bg_numel(n);
    if (x->rank < 3 || x->rank > 5 || x->dtype != n->dtype ||
        !bg_op_accepts(n->op, n->dtype))
        return bc_fail(p, id, BRAID_ERR_INTERNAL,
                       "a pool of a %s value of rank %d",
                       braid_dtype_name(x->dtype), (int)x->rank);
    braid_status s = bc_window_launch(p, id, numel, k);
    if (s != BRAID_OK) return s;
    bg_window w;
    bg_window_get(n, x, &w);
    k->kind = BC_KERNEL_POOL;
    bc_emit_window_head(b, p, id, numel, w.out, w.inner);
    emit_body(b, &w, n->dtype, n->op == BRAID_OP_MAX_POOL,
              (w.flags & BG_POOL_COUNT_PAD) != 0, NULL);
    return BRAID_OK;
}

/* A POOL program: the same kernel, each tap's value the prologue's
 * expression at that input element (recomputed per tap: an activation
 * costs less than writing and re-reading its result). The prologue's
 * loads broadcast against the pool's input shape (the program's space). */
braid_status bc_gen_pool_program(const bc_node *c, bc_buf *b, bc_kernel *k) {
    const bp_program *pr = c->prog;
    const bp_instr *pool = &pr->instr[pr->ninstr - 1];
    int64_t numel = bg_numel(c->n);
    braid_status s = bc_window_launch(c->plan, c->id, numel, k);
    if (s != BRAID_OK) return s;
    bg_window w;
    bp_program_window(pr, c->n->dims, &w);
    bc_operand mode[BC_MAX_PARAMS];
    bc_operands_used(c, pool->arg[0], BG_NONE, mode);
    char fn[BC_NAME_MAX + 4];
    snprintf(fn, sizeof fn, "%s_e", c->entry);
    bc_emit_expr_fn(b, c, fn, pool->arg[0], mode, BG_NONE, false);
    k->kind = BC_KERNEL_POOL;
    bc_emit_window_head(b, c->plan, c->id, numel, w.out, w.inner);
    emit_body(b, &w, c->n->dtype, pool->op == BRAID_OP_MAX_POOL,
              (w.flags & BG_POOL_COUNT_PAD) != 0, c);
    return BRAID_OK;
}
