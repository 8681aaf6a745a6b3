/* codegen/index.c — gather and scatter (graph/index.h) as CUDA C.
 *
 * Every geometry constant of graph/index.c's bg_index_geom is baked into
 * the text, so divisions are by literals. An index is read, normalised
 * (negative + dim) and compared with its axis as an unsigned value; a bad
 * one writes zeros (gather) or skips the update (scatter) and records the
 * failure in the run check record (the kernel's last parameter, `chk`,
 * codegen/codegen.h), so no access ever leaves an operand.
 *
 * gather along an axis: whole rows (inner elements) are moved in 16-, 8-
 * or 4-byte units when the row's bytes allow and both pointers are
 * 16-byte aligned (checked at run time, else element by element); each
 * thread loads its four units before storing them. The other gather forms
 * go element by element.
 * scatter: launch 1 copies the data to the output; launch 2 applies the
 * updates in graph/index.c's order within each group that may collide —
 * one thread per column (ELEMENTS: all coordinates but the axis's) or per
 * slice element (ND) walking its updates in C order — so duplicates give
 * the reference's result on every run (the last update wins under none)
 * without atomics. Combining uses graph/scalar.h's CUDA spellings in the
 * compute type, rounded to the dtype at each store. */
#include "codegen/internal.h"
#include "graph/index.h"

#include <stdio.h>
#include <string.h>

#define PER_THREAD 4

/* ---- shared pieces ------------------------------------------------------- */

/* The 1-D launch l: n work items, per threads each, over BC_BLOCK threads. */
static void set_launch(bc_kernel *k, uint32_t l, const char *suffix, int64_t n,
                       int64_t per) {
    int64_t blocks = bc_cdiv(n, (int64_t)BC_BLOCK * per);
    snprintf(k->launch[l].entry, BC_NAME_MAX, "%s%s", BC_ENTRY, suffix);
    k->launch[l].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[l].grid[1] = k->launch[l].grid[2] = 1;
    k->launch[l].block[0] = BC_BLOCK;
    k->launch[l].block[1] = k->launch[l].block[2] = 1;
}

static void head(bc_buf *b, const bp_plan *p, uint32_t id, const char *suffix) {
    char entry[BC_NAME_MAX + 8];
    snprintf(entry, sizeof entry, "%s%s", BC_ENTRY, suffix);
    bc_emit_signature(b, p, id, entry, BC_BLOCK, "bc_check *chk");
}

/* The loop over this thread's `per` work items below n: the body follows
 * with `i` (long long) the item. */
static void loop_head(bc_buf *b, int64_t n, int per) {
    bc_buf_printf(b,
                  "    const long long first = (long long)blockIdx.x * %d + "
                  "threadIdx.x;\n"
                  "#pragma unroll\n"
                  "    for (int j = 0; j < %d; j++) {\n"
                  "        const long long i = first + (long long)j * %d;\n"
                  "        if (i >= %lldLL) break;\n",
                  BC_BLOCK * per, per, BC_BLOCK, (long long)n);
}

/* Declares `off` (long long): the data element of work item `i` (bg_index_
 * target in CUDA C), or -1 after recording the bad index. */
static void emit_target(bc_buf *b, const bg_index_geom *g, uint32_t node) {
    const char *fail = "bc_check_fail(chk, 1u, %uu, (long long)v, %s, %lldLL)";
    bc_buf_puts(b, "        long long off = 0;\n");
    if (g->mode == BG_INDEX_AXIS || g->mode == BG_INDEX_ELEMENTS) {
        bool axis = g->mode == BG_INDEX_AXIS;
        int64_t A = g->bound[0];
        if (axis)
            bc_buf_printf(b,
                          "        const long long q = (i / %lldLL) %% %lldLL, "
                          "o = i / %lldLL;\n",
                          (long long)g->inner, (long long)g->nidx,
                          (long long)(g->inner * g->nidx));
        bc_buf_printf(b,
                      "        {\n"
                      "            const long long v = in1[%s];\n"
                      "            long long w = v < 0 ? (long long)v + %lldLL "
                      ": (long long)v;\n"
                      "            if ((unsigned long long)w >= %lluULL) {\n"
                      "                ",
                      axis ? "q" : "i", (long long)A, (unsigned long long)A);
        bc_buf_printf(b, fail, (unsigned)node, axis ? "q" : "i", (long long)A);
        bc_buf_puts(b, ";\n                off = -1;\n            } else {\n");
        if (axis) {
            bc_buf_printf(b,
                          "                off = (o * %lldLL + w) * %lldLL + "
                          "i %% %lldLL;\n",
                          (long long)A, (long long)g->inner,
                          (long long)g->inner);
        } else {
            bc_buf_puts(b, "                long long rest = i, c;\n");
            for (int k = g->rank - 1; k >= 0; k--)
                bc_buf_printf(b,
                              "                c = rest %% %lldLL; rest /= "
                              "%lldLL; off += %s * %lldLL;\n",
                              (long long)g->idims[k], (long long)g->idims[k],
                              k == g->axis ? "w" : "c",
                              (long long)g->dstride[k]);
        }
        bc_buf_puts(b, "            }\n        }\n");
        return;
    }
    bc_buf_printf(b,
                  "        const long long t = i / %lldLL;\n"
                  "        off = (t / %lldLL) * %lldLL + i %% %lldLL;\n",
                  (long long)g->inner, (long long)g->nidx,
                  (long long)g->batch_stride, (long long)g->inner);
    for (int64_t k = 0; k < g->m; k++) {
        bc_buf_printf(b,
                      "        if (off >= 0) {\n"
                      "            const long long pos = t * %lldLL + %lld;\n"
                      "            const long long v = in1[pos];\n"
                      "            long long w = v < 0 ? (long long)v + %lldLL "
                      ": (long long)v;\n"
                      "            if ((unsigned long long)w >= %lluULL) {\n"
                      "                ",
                      (long long)g->m, (long long)k, (long long)g->bound[k],
                      (unsigned long long)g->bound[k]);
        bc_buf_printf(b, fail, (unsigned)node, "pos", (long long)g->bound[k]);
        bc_buf_printf(b,
                      ";\n                off = -1;\n"
                      "            } else {\n"
                      "                off += w * %lldLL;\n"
                      "            }\n        }\n",
                      (long long)g->dstride[k]);
    }
}

/* ---- gather -------------------------------------------------------------- */

/* Bytes of the widest unit (16, 8, 4) dividing a row, or 0. */
static int unit_bytes(int64_t row_bytes) {
    return row_bytes % 16 == 0  ? 16
           : row_bytes % 8 == 0 ? 8
           : row_bytes % 4 == 0 ? 4
                                : 0;
}

static const char *unit_type(int u) {
    return u == 16 ? "uint4" : u == 8 ? "uint2" : "unsigned";
}

/* AXIS in units of u bytes: each thread loads PER_THREAD units, then
 * stores them. Index arithmetic is 32-bit when every unit offset (the
 * data's and the output's) fits, else 64-bit. */
static void emit_rows_vector(bc_buf *b, const bg_index_geom *g, uint32_t node,
                             int u, int64_t es) {
    int64_t U = g->inner * es / u, n = g->outer * g->nidx * U;
    int64_t A = g->bound[0], nsrc = g->outer * A * U;
    const char *T = unit_type(u);
    const char *I = n + BC_BLOCK * PER_THREAD < ((int64_t)1 << 31) &&
                            nsrc < ((int64_t)1 << 31)
                        ? "unsigned"
                        : "unsigned long long";
    bc_buf_printf(b,
                  "    typedef %s IX;\n"
                  "    const %s *src = (const %s *)in0;\n"
                  "    %s *dst = (%s *)out;\n"
                  "    %s val[%d];\n"
                  "    const IX first = (IX)blockIdx.x * %d + threadIdx.x;\n"
                  "#pragma unroll\n"
                  "    for (int j = 0; j < %d; j++) {\n"
                  "        const IX i = first + (IX)j * %d;\n"
                  "        if (i >= (IX)%lldLL) break;\n"
                  "        const IX r = i / (IX)%lldLL, q = r %% (IX)%lldLL;\n"
                  "        const long long v = in1[q];\n"
                  "        const long long w = v < 0 ? (long long)v + %lldLL "
                  ": (long long)v;\n"
                  "        if ((unsigned long long)w >= %lluULL) {\n"
                  "            bc_check_fail(chk, 1u, %uu, (long long)v, "
                  "(long long)q, %lldLL);\n"
                  "            val[j] = %s{};\n"
                  "        } else {\n"
                  "            val[j] = src[((r / (IX)%lldLL) * (IX)%lldLL + "
                  "(IX)w) * (IX)%lldLL + i %% (IX)%lldLL];\n"
                  "        }\n"
                  "    }\n"
                  "#pragma unroll\n"
                  "    for (int j = 0; j < %d; j++) {\n"
                  "        const IX i = first + (IX)j * %d;\n"
                  "        if (i < (IX)%lldLL) dst[i] = val[j];\n"
                  "    }\n",
                  I, T, T, T, T, T, PER_THREAD, BC_BLOCK * PER_THREAD,
                  PER_THREAD, BC_BLOCK, (long long)n, (long long)U,
                  (long long)g->nidx, (long long)A, (unsigned long long)A,
                  (unsigned)node, (long long)A, T, (long long)g->nidx,
                  (long long)A, (long long)U, (long long)U, PER_THREAD,
                  BC_BLOCK, (long long)n);
}

/* Element by element, any form: a grid-stride loop (the launch may be
 * sized for the vector path). */
static void emit_elements(bc_buf *b, const bg_index_geom *g, uint32_t node,
                          const char *stype, int64_t n) {
    bc_buf_printf(b,
                  "    for (long long i = (long long)blockIdx.x * %d + "
                  "threadIdx.x; i < %lldLL;\n"
                  "         i += (long long)gridDim.x * %d) {\n",
                  BC_BLOCK, (long long)n, BC_BLOCK);
    emit_target(b, g, node);
    bc_buf_printf(b,
                  "        if (off < 0) memset(&out[i], 0, sizeof(%s));\n"
                  "        else out[i] = in0[off];\n"
                  "    }\n",
                  stype);
}

static braid_status gen_gather(const bp_plan *p, uint32_t id, bc_buf *b,
                               bc_kernel *k, const bg_index_geom *g) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    int64_t es = (int64_t)braid_dtype_size(n->dtype);
    int u = g->mode == BG_INDEX_AXIS ? unit_bytes(g->inner * es) : 0;
    head(b, p, id, "");
    if (u > 0) {
        bc_buf_puts(b, "    if (bc_al16(in0) && bc_al16(out)) {\n");
        emit_rows_vector(b, g, id, u, es);
        bc_buf_puts(b, "        return;\n    }\n");
    }
    emit_elements(b, g, id, bc_stype(n->dtype), g->nwork);
    bc_buf_puts(b, "}\n");
    k->nlaunch = g->nwork > 0 ? 1 : 0;
    set_launch(k, 0, "", u > 0 ? g->nwork * es / u : g->nwork, PER_THREAD);
    return BRAID_OK;
}

/* ---- scatter ------------------------------------------------------------- */

/* out[off] combined with update p (compute types, stored rounded). */
static void emit_combine(bc_buf *b, const bg_node *n, bg_scatter_red red) {
    braid_dtype t = n->dtype;
    if (red == BG_SCATTER_NONE) {
        bc_buf_puts(b, "            out[off] = in2[p];\n");
        return;
    }
    const char *tmpl = bc_op_template(bg_scatter_red_op(red), t);
    bc_buf_printf(b, "            const %s o_ = ", bc_ctype(t));
    bc_emit_from_storage(b, t, "out[off]");
    bc_buf_printf(b, ";\n            const %s u_ = ", bc_ctype(t));
    bc_emit_from_storage(b, t, "in2[p]");
    bc_buf_printf(b, ";\n            const %s r_ = ", bc_ctype(t));
    for (const char *s = tmpl; s && *s; s++) {
        if (s[0] == '$' && (s[1] == '0' || s[1] == '1')) {
            bc_buf_puts(b, s[1] == '0' ? "o_" : "u_");
            s++;
        } else {
            char c[2] = {*s, 0};
            bc_buf_puts(b, c);
        }
    }
    bc_buf_puts(b, ";\n            out[off] = ");
    bc_emit_to_storage(b, t, "r_");
    bc_buf_puts(b, ";\n");
}

static braid_status gen_scatter(const bp_plan *p, uint32_t id, bc_buf *b,
                                bc_kernel *k, const bg_index_geom *g) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (g->red != BG_SCATTER_NONE &&
        !bc_op_template(bg_scatter_red_op(g->red), n->dtype))
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "no CUDA spelling of reduction %s for %s",
                       bg_scatter_red_name(g->red), braid_dtype_name(n->dtype));
    head(b, p, id, "");
    bc_buf_puts(b, "    if ((const void *)out == (const void *)in0) return;\n");
    loop_head(b, g->ndata, PER_THREAD);
    bc_buf_puts(b, "        out[i] = in0[i];\n    }\n}\n");
    set_launch(k, 0, "", g->ndata, PER_THREAD);
    /* the groups whose updates may collide, and the walk inside one */
    int64_t groups, len, stride, inner = 1;
    char base[160];
    if (g->mode == BG_INDEX_ELEMENTS) {
        len = g->idims[g->axis];
        for (int d = g->axis + 1; d < g->rank; d++)
            inner *= g->idims[d];
        groups = len ? g->nwork / len : 0;
        stride = inner;
        snprintf(base, sizeof base, "(grp / %lldLL) * %lldLL + grp %% %lldLL",
                 (long long)inner, (long long)(len * inner), (long long)inner);
    } else {
        snprintf(base, sizeof base, "grp");
        groups = g->inner;
        len = g->outer * g->nidx;
        stride = g->inner;
    }
    head(b, p, id, "_apply");
    bc_buf_printf(b,
                  "    const long long grp = (long long)blockIdx.x * %d + "
                  "threadIdx.x;\n"
                  "    if (grp >= %lldLL) return;\n"
                  "    const long long base = %s;\n"
                  "    for (long long s = 0; s < %lldLL; s++) {\n"
                  "        const long long p = base + s * %lldLL, i = p;\n",
                  BC_BLOCK, (long long)groups, base, (long long)len,
                  (long long)stride);
    emit_target(b, g, id);
    bc_buf_puts(b, "        if (off >= 0) {\n");
    emit_combine(b, n, g->red);
    bc_buf_puts(b, "        }\n    }\n}\n");
    set_launch(k, 1, "_apply", groups, 1);
    k->nlaunch = g->nwork > 0 ? 2 : g->ndata > 0 ? 1 : 0;
    return BRAID_OK;
}

braid_status bc_gen_index(const bp_plan *p, uint32_t id, bc_buf *b,
                          bc_kernel *k) {
    bg_index_geom g;
    bg_index_geom_of(p->res.graph, bg_node_at(p->res.graph, id), &g);
    k->kind = BC_KERNEL_INDEX;
    k->run_check = true;
    if (bg_node_at(p->res.graph, id)->op == BRAID_OP_GATHER)
        return gen_gather(p, id, b, k, &g);
    return gen_scatter(p, id, b, k, &g);
}
