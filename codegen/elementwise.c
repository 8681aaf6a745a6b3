/* codegen/elementwise.c — elementwise programs and matmul epilogues.
 *
 * One thread computes VEC consecutive output elements (16 bytes of output:
 * 4 f32/i32, 8 f16/bf16, 2 f64; 8 bools). When the thread's VEC elements
 * are all in range and the output and every full-shape operand are 16-byte
 * aligned, those operands are read and the output written with 16-byte
 * accesses; otherwise (the tail, or a misaligned pointer) the same thread
 * does the elements one by one. Operands smaller than the output are
 * broadcast: their offset is computed from the flat index with the shape
 * baked in as constants (contiguous dims collapsed), so divisions are by
 * constants. A matmul epilogue is the same kernel with one more full-shape
 * operand: the matmul result that cuBLAS wrote. A STORE (passes/program.h)
 * is written to its variable input like the output, after the thread has
 * read every operand of its elements. */
#include "codegen/internal.h"

#include <stdio.h>
#include <string.h>

/* Output elements per thread. */
static int vec_for(braid_dtype t) {
    size_t s = braid_dtype_size(t);
    int v = (int)(16 / s);
    return v > 8 ? 8 : v;
}

/* Which operands are read at the output's own index (VALUE, vectorised)
 * and which by broadcast index arithmetic (POINTER). */
static void classify_operands(const bc_node *c, uint32_t mm_instr,
                              bc_operand *mode) {
    bc_operands_used(c, c->prog->ninstr - 1, mm_instr, mode);
    for (uint32_t k = 0; k < c->n->ninputs; k++)
        if (mode[k] == BC_OPERAND_POINTER &&
            bg_numel(bc_input(c, k)) == c->numel && c->numel > 1 &&
            !bp_layout_of(c->plan, c->n->inputs[k]) && /* strided: by index */
            !bc_gather_data(c, k))
            mode[k] = BC_OPERAND_VALUE;
}

/* Declarations of the STOREs' values for the expression function to fill
 * (`len`: "[VEC]" or ""), one per STORE instruction. */
static void declare_stores(bc_buf *b, const bp_program *pr, const char *ind,
                           const char *len) {
    for (uint32_t i = 0; i < pr->ninstr; i++)
        if (pr->instr[i].op == BP_INSTR_STORE)
            bc_buf_printf(b, "%s%s c%u%s;\n", ind, bc_ctype(pr->instr[i].dtype),
                          (unsigned)i, len);
}

/* The STOREs' arguments after bc_emit_expr_args': "&c<i><sub>". */
static void store_args(bc_buf *b, const bp_program *pr, const char *sub) {
    for (uint32_t i = 0; i < pr->ninstr; i++)
        if (pr->instr[i].op == BP_INSTR_STORE)
            bc_buf_printf(b, ", &c%u%s", (unsigned)i, sub);
}

/* A STORE target as a writable pointer (inputs are passed const). */
static void store_ptr(bc_buf *b, const bc_node *c, const bp_instr *in) {
    bc_buf_printf(b, "((%s *)in%u)", bc_stype(bc_input(c, in->input)->dtype),
                  (unsigned)in->input);
}

/* The vector path: aligned loads of VALUE operands into registers. */
static void emit_vector_path(bc_buf *b, const bc_node *c,
                             const bc_operand *mode, int vec, uint32_t mm,
                             const char **vals, char (*names)[24]) {
    const bp_program *pr = c->prog;
    bc_buf_printf(b, "    if (base + %d <= n && bc_al16(out)", vec);
    for (uint32_t k = 0; k < c->n->ninputs; k++)
        if (mode[k] == BC_OPERAND_VALUE)
            bc_buf_printf(b, " && bc_al16(in%u)", (unsigned)k);
    if (mm != BG_NONE) bc_buf_puts(b, " && bc_al16(mm)");
    for (uint32_t i = 0; i < pr->ninstr; i++)
        if (pr->instr[i].op == BP_INSTR_STORE)
            bc_buf_printf(b, " && bc_al16(in%u)", (unsigned)pr->instr[i].input);
    bc_buf_puts(b, ") {\n");
    for (uint32_t k = 0; k < c->n->ninputs; k++) {
        if (mode[k] != BC_OPERAND_VALUE) continue;
        bc_buf_printf(
            b, "        %s a%u[%d];\n        bc_vload(a%u, in%u + base);\n",
            bc_stype(bc_input(c, k)->dtype), (unsigned)k, vec, (unsigned)k,
            (unsigned)k);
        char e[24];
        snprintf(e, sizeof e, "a%u[j]", (unsigned)k);
        bc_from_storage_str(bc_input(c, k)->dtype, e, names[k],
                            sizeof names[k]);
        vals[k] = names[k];
    }
    braid_dtype mmt = mm != BG_NONE ? pr->instr[mm].dtype : BRAID_F32;
    if (mm != BG_NONE)
        bc_buf_printf(b,
                      "        %s am[%d];\n        bc_vload(am, mm + base);\n",
                      bc_stype(mmt), vec);
    char len[16];
    snprintf(len, sizeof len, "[%d]", vec);
    declare_stores(b, pr, "        ", len);
    bc_buf_printf(b,
                  "        %s r[%d];\n#pragma unroll\n"
                  "        for (int j = 0; j < %d; j++) {\n"
                  "            const %s v = %s_e(",
                  bc_stype(c->n->dtype), vec, vec,
                  bc_ctype(pr->instr[pr->ninstr - 1].dtype), c->entry);
    char mmv[32] = "";
    if (mm != BG_NONE) {
        bc_from_storage_str(mmt, "am[j]", mmv,
                            sizeof mmv);
    }
    bc_emit_expr_args(b, c, "base + j", mode, vals, mm, mmv);
    store_args(b, pr, "[j]");
    bc_buf_puts(b, ");\n            r[j] = ");
    bc_emit_to_storage(b, c->n->dtype, "v");
    bc_buf_puts(b, ";\n        }\n");
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        const bp_instr *in = &pr->instr[i];
        if (in->op != BP_INSTR_STORE) continue;
        char e[24];
        snprintf(e, sizeof e, "c%u[j]", (unsigned)i);
        bc_buf_printf(b,
                      "        {\n            %s w[%d];\n#pragma unroll\n"
                      "            for (int j = 0; j < %d; j++) w[j] = ",
                      bc_stype(in->dtype), vec, vec);
        bc_emit_to_storage(b, in->dtype, e);
        bc_buf_puts(b, ";\n            bc_vstore(");
        store_ptr(b, c, in);
        bc_buf_puts(b, " + base, w);\n        }\n");
    }
    bc_buf_puts(b, "        bc_vstore(out + base, r);\n"
                   "        return;\n    }\n");
}

/* The scalar path: the same elements one at a time. */
static void emit_scalar_path(bc_buf *b, const bc_node *c,
                             const bc_operand *mode, int vec, uint32_t mm,
                             const char **vals, char (*names)[24]) {
    const bp_program *pr = c->prog;
    for (uint32_t k = 0; k < c->n->ninputs; k++) {
        if (mode[k] != BC_OPERAND_VALUE) continue;
        char e[24];
        snprintf(e, sizeof e, "in%u[i]", (unsigned)k);
        bc_from_storage_str(bc_input(c, k)->dtype, e, names[k],
                            sizeof names[k]);
        vals[k] = names[k];
    }
    char mmv[32] = "";
    if (mm != BG_NONE) {
        bc_from_storage_str(pr->instr[mm].dtype, "mm[i]", mmv,
                            sizeof mmv);
    }
    bc_buf_printf(b, "    for (%s i = base; i < n && i < base + %d; i++) {\n",
                  c->idx, vec);
    declare_stores(b, pr, "        ", "");
    bc_buf_printf(b, "        const %s v = %s_e(",
                  bc_ctype(pr->instr[pr->ninstr - 1].dtype), c->entry);
    bc_emit_expr_args(b, c, "i", mode, vals, mm, mmv);
    store_args(b, pr, "");
    bc_buf_puts(b, ");\n        out[i] = ");
    bc_emit_to_storage(b, c->n->dtype, "v");
    bc_buf_puts(b, ";\n");
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        const bp_instr *in = &pr->instr[i];
        if (in->op != BP_INSTR_STORE) continue;
        char e[24];
        snprintf(e, sizeof e, "c%u", (unsigned)i);
        bc_buf_puts(b, "        ");
        store_ptr(b, c, in);
        bc_buf_puts(b, "[i] = ");
        bc_emit_to_storage(b, in->dtype, e);
        bc_buf_puts(b, ";\n");
    }
    bc_buf_puts(b, "    }\n}\n\n");
}

static braid_status gen(const bc_node *c, bc_buf *b, bc_kernel *k,
                        uint32_t mm) {
    const bp_program *pr = c->prog;
    int vec = vec_for(c->n->dtype);
    int64_t threads = bc_cdiv(c->numel, vec);
    int64_t blocks = bc_cdiv(threads, BC_BLOCK);
    if (blocks > (int64_t)BC_GRID_X_MAX)
        return bc_fail(c->plan, c->id, BRAID_ERR_UNSUPPORTED,
                       "%lld elements are too many for one launch",
                       (long long)c->numel);
    bc_operand mode[BC_MAX_PARAMS];
    classify_operands(c, mm, mode);
    const char *vals[BC_MAX_PARAMS];
    char names[BC_MAX_PARAMS][24];
    memset(vals, 0, sizeof vals);
    char fn[BC_NAME_MAX + 4];
    snprintf(fn, sizeof fn, "%s_e", c->entry);
    bc_emit_expr_fn(b, c, fn, pr->ninstr - 1, mode, mm, true);
    char extra[64] = "";
    if (mm != BG_NONE)
        snprintf(extra, sizeof extra, "const %s *mm",
                 bc_stype(pr->instr[mm].dtype));
    /* a gather's bad index claims the run check record (the last
     * parameter); MATMUL programs hold no gather */
    if (bp_program_has_gather(pr)) {
        snprintf(extra, sizeof extra, "bc_check *chk");
        k->run_check = true;
    }
    bc_emit_signature(b, c->plan, c->id, c->entry, BC_BLOCK,
                      extra[0] ? extra : NULL);
    bc_buf_printf(b,
                  "    const %s n = %lld;\n"
                  "    const %s base = ((%s)blockIdx.x * %d + threadIdx.x) "
                  "* %d;\n"
                  "    if (base >= n) return;\n",
                  c->idx, (long long)c->numel, c->idx, c->idx, BC_BLOCK, vec);
    emit_vector_path(b, c, mode, vec, mm, vals, names);
    emit_scalar_path(b, c, mode, vec, mm, vals, names);
    k->nlaunch = c->numel > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", c->entry);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = BC_BLOCK;
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
    return BRAID_OK;
}

braid_status bc_gen_elementwise(const bc_node *c, bc_buf *b, bc_kernel *k) {
    k->kind = BC_KERNEL_ELEMENTWISE;
    if (bg_numel(c->n) != c->numel)
        return bc_fail(c->plan, c->id, BRAID_ERR_INTERNAL,
                       "elementwise program over %lld elements for an "
                       "output of %lld",
                       (long long)c->numel, (long long)bg_numel(c->n));
    return gen(c, b, k, BG_NONE);
}

braid_status bc_gen_epilogue(const bc_node *c, bc_buf *b, bc_kernel *k) {
    const bp_program *pr = c->prog;
    uint32_t mm = 2; /* bp_program_check: LOAD 0, LOAD 1, MATMUL(0, 1), over
                        the node's shape */
    k->kind = BC_KERNEL_EPILOGUE;
    k->extra = BC_EXTRA_MATMUL;
    k->mm_instr = mm;
    k->mm_dtype = pr->instr[mm].dtype;
    k->mm_bytes = (uint64_t)c->numel * braid_dtype_size(k->mm_dtype);
    k->mm_in_place = k->mm_dtype == c->n->dtype;
    return gen(c, b, k, mm);
}
