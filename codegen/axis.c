/* codegen/axis.c — CUDA kernels of the axis ops (argmax, argmin, topk_*,
 * cumsum; graph/axis.h), one launch each, no scratch. The input is read as
 * lines (outer, inner) of len elements with stride inner; every value is
 * compared or summed in double (exact for every dtype braid has), so the
 * order rules are graph/axis.h's, spelled once below in CUDA C.
 *
 *   argmax/argmin: a warp per line (lanes stride over it, then a shuffle
 *     tree), or a thread per line when inner >= 32 so that neighbouring
 *     threads read neighbouring lines. The winner relation is a strict
 *     total order, so the tree picks the reference's index.
 *   topk: for k <= 64 on lines of 512 or more, a warp per line in k
 *     rounds, round r taking the first element (bg_topk_before) of those
 *     after round r - 1's: k·len reads whatever the data. Otherwise a
 *     thread per input element computes its rank — how many elements of
 *     its line come before it — stopping at k, and the elements ranked
 *     below k write themselves to position rank: about k·len·log(len)
 *     compares a line for random data, len² at worst (sorted input with
 *     large k), not a sort for k near len on very long lines.
 *   cumsum: a thread per line (sequential sum) when inner >= 32, else a
 *     block per line scanning chunks of 256 in shared memory with a carry,
 *     so any length is correct; sums are double (i32: unsigned, wrapping)
 *     and rounded once when stored. */
#include "codegen/internal.h"
#include "graph/axis.h"

#include <stdio.h>

#define AX_WIDE 32 /* inner at or above which a thread takes a whole line */
/* topk by k rounds of a warp when k <= AX_ROUNDS_K and len >= AX_ROUNDS_LEN */
#define AX_ROUNDS_K 64
#define AX_ROUNDS_LEN 512

typedef struct ax_gen {
    const bp_plan *p;     /* the plan */
    uint32_t id;          /* the node's id */
    const bg_node *n, *x; /* the node and its input */
    bg_axis_lines l;      /* geometry */
    int64_t lines;        /* outer × inner */
    char load[96];        /* element j of the line, in0[base + j·inner],
                             as a float / double / int expression */
} ax_gen;

/* o and i of line (o·inner + i) and base, the offset of its element 0. */
static void emit_line_base(bc_buf *b, const ax_gen *g) {
    bc_buf_printf(b,
                  "    const long long o = line / %lldLL, i = line %% %lldLL;\n"
                  "    (void)o;\n"
                  "    const long long base = o * %lldLL + i;\n",
                  (long long)g->l.inner, (long long)g->l.inner,
                  (long long)(g->l.len * g->l.inner));
}

/* The warp's lanes agree on the winner of their (best, bi) candidates by
 * the order <entry>_b (bi < 0: no candidate); a strict total order, so
 * every lane ends with the same one whatever the tree's shape. */
static void emit_warp_pick(bc_buf *b, const char *in) {
    bc_buf_printf(b,
                  "%sfor (int s = 16; s > 0; s >>= 1) {\n"
                  "%s    const double ov = __shfl_xor_sync(0xffffffffu, best, "
                  "s);\n"
                  "%s    const long long oi = __shfl_xor_sync(0xffffffffu, bi, "
                  "s);\n"
                  "%s    if (oi >= 0 && (bi < 0 || %s_b(ov, oi, best, bi)))\n"
                  "%s        best = ov, bi = oi;\n"
                  "%s}\n",
                  in, in, in, in, BC_ENTRY, in, in);
}

/* ---- argmax / argmin ----------------------------------------------------- */

static void emit_beats(bc_buf *b, const ax_gen *g) {
    bool min = g->n->op == BRAID_OP_ARGMIN;
    bool last = (g->n->attr.flags & BG_SELECT_LAST) != 0;
    bc_buf_printf(b,
                  "// graph/axis.h bg_arg_beats: NaN wins, ties by index\n"
                  "static __device__ __forceinline__ bool %s_b(double a, "
                  "long long ia, double b, long long ib) {\n"
                  "    if (a == b || (a != a && b != b)) return ia %c ib;\n"
                  "    if (a != a) return true;\n"
                  "    if (b != b) return false;\n"
                  "    return a %c b;\n"
                  "}\n",
                  BC_ENTRY, last ? '>' : '<', min ? '<' : '>');
}

static void emit_arg(bc_buf *b, const ax_gen *g, bool warp) {
    emit_beats(b, g);
    bc_emit_signature(b, g->p, g->id, BC_ENTRY, BC_BLOCK, NULL);
    bc_buf_printf(b,
                  "    const long long line = ((long long)blockIdx.x * %d + "
                  "threadIdx.x) %s;\n"
                  "    const int lane = %s;\n"
                  "    if (line >= %lldLL) return; /* warp-uniform */\n",
                  BC_BLOCK, warp ? ">> 5" : "", warp ? "threadIdx.x & 31" : "0",
                  (long long)g->lines);
    emit_line_base(b, g);
    bc_buf_printf(b,
                  "    double best = 0.0;\n"
                  "    long long bi = -1;\n"
                  "    for (long long j = lane; j < %lldLL; j += %d) {\n"
                  "        const double v = (double)%s;\n"
                  "        if (bi < 0 || %s_b(v, j, best, bi)) best = v, bi = "
                  "j;\n"
                  "    }\n",
                  (long long)g->l.len, warp ? 32 : 1, g->load, BC_ENTRY);
    if (warp) emit_warp_pick(b, "    ");
    bc_buf_puts(b, "    if (lane == 0) out[line] = (int)bi;\n}\n\n");
}

/* ---- topk ---------------------------------------------------------------- */

/* The order helpers: _a "ranks above" (NaN above +inf), _b "comes before"
 * (graph/axis.h bg_topk_before). */
static void emit_topk_order(bc_buf *b, const ax_gen *g) {
    bool smallest = (g->n->attr.flags & BG_SMALLEST) != 0;
    bc_buf_printf(b,
                  "// graph/axis.h bg_topk_before: NaN above +inf, ties by "
                  "index\n"
                  "static __device__ __forceinline__ bool %s_a(double a, "
                  "double b) {\n"
                  "    return a > b || (a != a && b == b);\n"
                  "}\n"
                  "static __device__ __forceinline__ bool %s_b(double a, "
                  "long long ia, double b, long long ib) {\n"
                  "    if (a == b || (a != a && b != b)) return ia < ib;\n"
                  "    return %s_a(%s);\n"
                  "}\n",
                  BC_ENTRY, BC_ENTRY, BC_ENTRY, smallest ? "b, a" : "a, b");
}

/* What output position r of the line gets from element (index expression
 * ix): the value's bits or the index. */
static void value_or_index(const ax_gen *g, const char *ix, char *buf,
                           size_t size) {
    if (g->n->op == BRAID_OP_TOPK_VALUES)
        snprintf(buf, size, "in0[base + (%s) * %lldLL]", ix,
                 (long long)g->l.inner);
    else
        snprintf(buf, size, "(int)(%s)", ix);
}

/* A thread per element: its rank, counted up to k. */
static void emit_topk_rank(bc_buf *b, const ax_gen *g) {
    bc_emit_signature(b, g->p, g->id, BC_ENTRY, BC_BLOCK, NULL);
    long long len = (long long)g->l.len, k = (long long)g->l.olen;
    long long inner = (long long)g->l.inner;
    bc_buf_printf(b,
                  "    const long long t = (long long)blockIdx.x * %d + "
                  "threadIdx.x;\n"
                  "    if (t >= %lldLL) return;\n"
                  "    const long long line = t / %lldLL, me = t %% %lldLL;\n",
                  BC_BLOCK, (long long)g->lines * len, len, len);
    emit_line_base(b, g);
    char put[96];
    value_or_index(g, "me", put, sizeof put);
    bc_buf_printf(b,
                  "    long long j = me;\n"
                  "    const double v = (double)%s;\n"
                  "    long long r = 0; /* elements before this one */\n"
                  "    for (j = 0; j < %lldLL && r < %lldLL; j++)\n"
                  "        r += %s_b((double)%s, j, v, me);\n"
                  "    if (r >= %lldLL) return;\n"
                  "    out[o * %lldLL + r * %lldLL + i] = %s;\n}\n\n",
                  g->load, len, k, BC_ENTRY, g->load, k, k * inner, inner, put);
}

/* A warp per line, k rounds: round r takes the first element (in topk's
 * order) of those after the one round r - 1 took — the lanes' candidates
 * combined by shuffles, a strict total order, so one winner. */
static void emit_topk_rounds(bc_buf *b, const ax_gen *g) {
    bc_emit_signature(b, g->p, g->id, BC_ENTRY, BC_BLOCK, NULL);
    long long len = (long long)g->l.len, k = (long long)g->l.olen;
    long long inner = (long long)g->l.inner;
    bc_buf_printf(b,
                  "    const long long line = ((long long)blockIdx.x * %d + "
                  "threadIdx.x) >> 5;\n"
                  "    const int lane = threadIdx.x & 31;\n"
                  "    if (line >= %lldLL) return; /* warp-uniform */\n",
                  BC_BLOCK, (long long)g->lines);
    emit_line_base(b, g);
    char put[96];
    value_or_index(g, "bi", put, sizeof put);
    bc_buf_printf(
        b,
        "    double pv = 0.0;\n"
        "    long long pi = -1; /* the element the last round took */\n"
        "    for (long long r = 0; r < %lldLL; r++) {\n"
        "        double best = 0.0;\n"
        "        long long bi = -1;\n"
        "        for (long long j = lane; j < %lldLL; j += 32) {\n"
        "            const double v = (double)%s;\n"
        "            if (pi >= 0 && !%s_b(pv, pi, v, j)) continue;\n"
        "            if (bi < 0 || %s_b(v, j, best, bi)) best = v, bi = j;\n"
        "        }\n",
        k, len, g->load, BC_ENTRY, BC_ENTRY);
    emit_warp_pick(b, "        ");
    bc_buf_printf(b,
                  "        if (lane == 0) out[o * %lldLL + r * %lldLL + i] = "
                  "%s;\n"
                  "        pv = best;\n"
                  "        pi = bi;\n"
                  "    }\n}\n\n",
                  k * inner, inner, put);
}

/* Rounds for small k on long lines (k·len reads, no len² worst case, e.g.
 * sorted input), ranks otherwise. */
static bool topk_rounds(const ax_gen *g) {
    return g->l.olen <= AX_ROUNDS_K && g->l.len >= AX_ROUNDS_LEN;
}

static void emit_topk(bc_buf *b, const ax_gen *g) {
    emit_topk_order(b, g);
    if (topk_rounds(g))
        emit_topk_rounds(b, g);
    else
        emit_topk_rank(b, g);
}

/* ---- cumsum -------------------------------------------------------------- */

/* "out[base + j * INNER] = <storage of v>;" */
static void emit_cumsum_store(bc_buf *b, const ax_gen *g, const char *v,
                              const char *indent) {
    char e[96];
    braid_dtype t = g->n->dtype;
    if (t == BRAID_I32)
        snprintf(e, sizeof e, "(int)(%s)", v);
    else if (t == BRAID_F64)
        snprintf(e, sizeof e, "(%s)", v);
    else
        snprintf(e, sizeof e, "(float)(%s)", v);
    bc_buf_printf(b, "%sout[base + j * %lldLL] = ", indent,
                  (long long)g->l.inner);
    bc_emit_to_storage(b, t, e);
    bc_buf_puts(b, ";\n");
}

static void emit_cumsum(bc_buf *b, const ax_gen *g, bool wide) {
    bool excl = (g->n->attr.flags & BG_EXCLUSIVE) != 0;
    bool rev = (g->n->attr.flags & BG_REVERSE) != 0;
    const char *acc = g->n->dtype == BRAID_I32 ? "unsigned" : "double";
    long long len = (long long)g->l.len;
    char jx[64];
    snprintf(jx, sizeof jx, rev ? "%lldLL - 1 - s" : "s", len);
    bc_emit_signature(b, g->p, g->id, BC_ENTRY, BC_BLOCK, NULL);
    char pick[64]; /* this thread's sum within the chunk */
    snprintf(pick, sizeof pick, excl ? "(t > 0 ? sh[t - 1] : (%s)0)" : "sh[t]",
             acc);
    if (wide) {
        bc_buf_printf(b,
                      "    const long long line = (long long)blockIdx.x * %d "
                      "+ threadIdx.x;\n"
                      "    if (line >= %lldLL) return;\n",
                      BC_BLOCK, (long long)g->lines);
        emit_line_base(b, g);
        bc_buf_printf(b,
                      "    %s c = 0;\n"
                      "    for (long long s = 0; s < %lldLL; s++) {\n"
                      "        const long long j = %s;\n"
                      "        const %s x = (%s)%s;\n"
                      "        const %s w = c + x;\n",
                      acc, len, jx, acc, acc, g->load, acc);
        emit_cumsum_store(b, g, excl ? "c" : "w", "        ");
        bc_buf_puts(b, "        c = w;\n    }\n}\n\n");
        return;
    }
    bc_buf_printf(b,
                  "    __shared__ %s sh[%d];\n"
                  "    const long long line = blockIdx.x;\n"
                  "    const int t = threadIdx.x;\n",
                  acc, BC_BLOCK);
    emit_line_base(b, g);
    bc_buf_printf(b,
                  "    %s c = 0;\n"
                  "    for (long long c0 = 0; c0 < %lldLL; c0 += %d) {\n"
                  "        const long long s = c0 + t;\n"
                  "        const long long j = %s;\n"
                  "        sh[t] = s < %lldLL ? (%s)%s : (%s)0;\n"
                  "        __syncthreads();\n"
                  "        for (int d = 1; d < %d; d <<= 1) {\n"
                  "            const %s y = t >= d ? sh[t - d] : (%s)0;\n"
                  "            __syncthreads();\n"
                  "            sh[t] += y;\n"
                  "            __syncthreads();\n"
                  "        }\n"
                  "        const %s w = c + %s;\n"
                  "        if (s < %lldLL) {\n",
                  acc, len, BC_BLOCK, jx, len, acc, g->load, acc, BC_BLOCK, acc,
                  acc, acc, pick, len);
    emit_cumsum_store(b, g, "w", "            ");
    bc_buf_printf(b,
                  "        }\n"
                  "        c += sh[%d];\n"
                  "        __syncthreads();\n"
                  "    }\n}\n\n",
                  BC_BLOCK - 1);
}

/* ---- entry --------------------------------------------------------------- */

static void set_launch(bc_kernel *k, int64_t blocks) {
    k->nlaunch = 1;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", BC_ENTRY);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = BC_BLOCK;
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
}

braid_status bc_gen_axis(const bp_plan *p, uint32_t id, bc_buf *b,
                         bc_kernel *k) {
    ax_gen g;
    g.p = p;
    g.id = id;
    g.n = bg_node_at(p->res.graph, id);
    g.x = bg_node_at(p->res.graph, g.n->inputs[0]);
    if (!bg_axis_well_formed(g.n, g.x))
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "malformed axis op");
    bg_axis_lines_of(g.n, g.x, &g.l);
    g.lines = g.l.outer * g.l.inner;
    char at[64];
    snprintf(at, sizeof at, "in0[base + j * %lldLL]", (long long)g.l.inner);
    bc_from_storage_str(g.x->dtype, at, g.load, sizeof g.load);
    k->kind = BC_KERNEL_AXIS;
    if (bg_numel(g.n) == 0) { /* nothing to launch; no division by 0 dims */
        bc_emit_signature(b, p, id, BC_ENTRY, BC_BLOCK, NULL);
        bc_buf_puts(b, "}\n\n");
        set_launch(k, 1);
        k->nlaunch = 0;
        return BRAID_OK;
    }
    bool wide = g.l.inner >= AX_WIDE;
    int64_t blocks;
    if (g.n->op == BRAID_OP_ARGMAX || g.n->op == BRAID_OP_ARGMIN) {
        emit_arg(b, &g, !wide);
        blocks =
            wide ? bc_cdiv(g.lines, BC_BLOCK) : bc_cdiv(g.lines, BC_BLOCK / 32);
    } else if (g.n->op == BRAID_OP_CUMSUM) {
        emit_cumsum(b, &g, wide);
        blocks = wide ? bc_cdiv(g.lines, BC_BLOCK) : g.lines;
    } else {
        emit_topk(b, &g);
        blocks = topk_rounds(&g) ? bc_cdiv(g.lines, BC_BLOCK / 32)
                                 : bc_cdiv(g.lines * g.l.len, BC_BLOCK);
    }
    if (blocks > (int64_t)BC_GRID_X_MAX)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%lld blocks are too many for one launch",
                       (long long)blocks);
    set_launch(k, blocks);
    return BRAID_OK;
}
