/* codegen/expr.c — a program's instructions as a CUDA device function.
 *
 * Each instruction becomes one `const T v<i> = ...;` in the compute type of
 * its dtype (float for f32/f16/bf16, double, int, bool), with the op
 * semantics of docs/ops.md spelled exactly as the CPU kernels compute them:
 * i32 arithmetic through unsigned (wrapping), i32 x/0 = 0 and
 * INT32_MIN/-1 = INT32_MIN, NaN-propagating max/min, rsqrt as 1/sqrt, gelu
 * with erf, casts saturating with NaN → 0. f16/bf16 results are rounded to
 * their dtype after every instruction, as the reference rounds every node.
 * The module is compiled with --fmad=false, so a*b+c rounds twice as on
 * the CPU. */
#include "codegen/internal.h"
#include "graph/scalar.h"

#include <stdlib.h>
#include <string.h>

/* ---- op spellings
 * ------------------------------------------------------------- */

/* Templates ($0 $1 $2 are the operands) from the rows of graph/scalar.h,
 * beside each op's C rule: float (f32, f16, bf16 computed in float),
 * double, int (i32; bool for comparisons). NULL when the op has none. */
const char *bc_op_template(braid_op op, braid_dtype s) {
#define FLOAT_(id, rule, cf, cd)                                               \
    case BRAID_OP_##id:                                                        \
        return s == BRAID_F64 ? cd : cf;
#define INT_(id, rule, ci)                                                     \
    case BRAID_OP_##id:                                                        \
        if (s == BRAID_I32) return ci;                                         \
        break;
#define CMP_(id, cmp)                                                          \
    case BRAID_OP_##id:                                                        \
        return "($0 " #cmp " $1)";
    switch (op) {
        BG_COMPARE_OPS(CMP_)
    case BRAID_OP_WHERE:
        return "($0 ? $1 : $2)";
    default:
        break;
    }
    switch (op) {
        BG_UNARY_I32_OPS(INT_)
        BG_BINARY_I32_OPS(INT_)
    default:
        break;
    }
    switch (op) {
        BG_UNARY_OPS(FLOAT_)
        BG_BINARY_OPS(FLOAT_)
    default:
        return NULL;
    }
#undef FLOAT_
#undef INT_
#undef CMP_
}

/* Writes template t with $k replaced by v<arg[k]>. */
static void emit_template(bc_buf *b, const char *t, const uint32_t *arg) {
    for (const char *s = t; *s; s++) {
        if (s[0] == '$' && s[1] >= '0' && s[1] <= '2') {
            bc_buf_printf(b, "v%u", (unsigned)arg[s[1] - '0']);
            s++;
        } else {
            char c[2] = {*s, 0};
            bc_buf_puts(b, c);
        }
    }
}

/* cast: source dtype s to d, by bg_store's rules (f64 → f16 via f32). */
static void emit_cast(bc_buf *b, braid_dtype s, braid_dtype d, uint32_t a,
                      bool root) {
    if (s == d) {
        bc_buf_printf(b, "v%u", (unsigned)a);
        return;
    }
    /* i64 to a float goes through double, as bg_load reads it */
    const char *via = s == BRAID_I64 ? "(double)" : "";
    switch (d) {
    case BRAID_BOOL:
        bc_buf_printf(b, "(v%u != 0)", (unsigned)a);
        return;
    case BRAID_I64: /* a widening: exact from bool and i32 */
        if (s == BRAID_BOOL || s == BRAID_I32)
            bc_buf_printf(b, "(long long)v%u", (unsigned)a);
        else
            bc_buf_printf(b, "bc_d2l((double)v%u)", (unsigned)a);
        return;
    case BRAID_F64:
        bc_buf_printf(b, "(double)v%u", (unsigned)a);
        return;
    case BRAID_F16:
        bc_buf_printf(b, root ? "(float)%sv%u" : "bc_rh((float)%sv%u)", via,
                      (unsigned)a);
        return;
    case BRAID_BF16:
        bc_buf_printf(b, root ? "(float)%sv%u" : "bc_rb((float)%sv%u)", via,
                      (unsigned)a);
        return;
    case BRAID_I32:
        if (s == BRAID_BOOL)
            bc_buf_printf(b, "(int)v%u", (unsigned)a);
        else
            bc_buf_printf(b, "bc_d2i((double)v%u)", (unsigned)a);
        return;
    default: /* f32 */
        bc_buf_printf(b, "(float)%sv%u", via, (unsigned)a);
        return;
    }
}

/* The right-hand side of instruction i (an op). An f16/bf16 result is
 * rounded to its dtype unless it is the root (the store rounds it). */
static void emit_op(bc_buf *b, const bp_program *pr, uint32_t i, bool root) {
    const bp_instr *in = &pr->instr[i];
    braid_dtype s = pr->instr[in->arg[0]].dtype; /* operand dtype */
    if (in->op == BRAID_OP_WHERE) s = pr->instr[in->arg[1]].dtype;
    if (in->op == BRAID_OP_CAST) {
        emit_cast(b, s, in->dtype, in->arg[0], root);
        return;
    }
    const char *tmpl = bc_op_template(in->op, s);
    if (!tmpl) { /* bp_program_check refuses it; keep the text compiling */
        bc_buf_puts(b, "0");
        return;
    }
    bool round = !root && !bg_op_is_compare(in->op) &&
                 in->op != BRAID_OP_WHERE &&
                 (in->dtype == BRAID_F16 || in->dtype == BRAID_BF16);
    if (round) bc_buf_puts(b, in->dtype == BRAID_F16 ? "bc_rh(" : "bc_rb(");
    emit_template(b, tmpl, in->arg);
    if (round) bc_buf_puts(b, ")");
}

/* ---- liveness
 * ------------------------------------------------------------------- */

/* needed[i] for every instruction root or a STORE before it depends on
 * (the STOREs too); the matmul instruction is a leaf (its operands are
 * cuBLAS's business). Caller frees. */
static bool *needed_instrs(const bp_program *pr, uint32_t root,
                           uint32_t mm_instr) {
    bool *need = calloc(pr->ninstr ? pr->ninstr : 1, sizeof *need);
    if (!need) return NULL;
    need[root] = true;
    for (uint32_t i = 0; i < root; i++)
        need[i] = pr->instr[i].op == BP_INSTR_STORE;
    for (uint32_t i = root + 1; i-- > 0;) {
        if (!need[i] || i == mm_instr) continue;
        const bp_instr *in = &pr->instr[i];
        int arity = bp_instr_arity(in);
        for (int a = 0; a < arity && a < 3; a++)
            need[in->arg[a]] = true;
    }
    return need;
}

void bc_operands_used(const bc_node *c, uint32_t root, uint32_t mm_instr,
                      bc_operand *mode) {
    const bp_program *pr = c->prog;
    for (uint32_t k = 0; k < c->n->ninputs; k++)
        mode[k] = BC_OPERAND_UNUSED;
    bool *need = needed_instrs(pr, root, mm_instr);
    for (uint32_t i = 0; i <= root; i++) {
        const bp_instr *in = &pr->instr[i];
        if ((!need || need[i]) &&
            (in->op == BP_INSTR_LOAD || in->op == BP_INSTR_GATHER) &&
            in->input < c->n->ninputs)
            mode[in->input] = BC_OPERAND_POINTER;
    }
    free(need);
}

/* ---- the function
 * --------------------------------------------------------------- */

/* Writes the offset expression of load instruction `in` at index i. */
static void emit_load(bc_buf *b, const bc_node *c, const bp_instr *in) {
    const bp_program *pr = c->prog;
    const bg_node *x = bc_input(c, in->input);
    const int64_t *xs = bp_layout_of(c->plan, c->n->inputs[in->input]);
    int64_t xn = bg_numel(x);
    char ptr[64];
    bc_buf tmp = {0};
    if (xs && x->rank == pr->rank) { /* a strided view at the space's shape */
        int64_t st[BRAID_MAX_RANK];
        bc_term t[BRAID_MAX_RANK];
        for (int d = 0; d < pr->rank; d++) st[d] = pr->dims[d] > 1 ? xs[d] : 0;
        int nt = bc_terms(pr->rank, pr->dims, st, t);
        bc_emit_terms(&tmp, t, nt, "i", c->idx);
    } else if (xn == c->numel) {
        bc_buf_puts(&tmp, "i");
    } else if (xn <= 1) {
        bc_buf_puts(&tmp, "0");
    } else {
        int64_t st[BRAID_MAX_RANK];
        bc_term t[BRAID_MAX_RANK];
        bc_broadcast_strides(pr->rank, pr->dims, x->rank, x->dims, st);
        int nt = bc_terms(pr->rank, pr->dims, st, t);
        bc_emit_terms(&tmp, t, nt, "i", c->idx);
    }
    snprintf(ptr, sizeof ptr, "in%u[", (unsigned)in->input);
    bc_buf e = {0};
    bc_buf_puts(&e, ptr);
    bc_buf_puts(&e, tmp.p ? tmp.p : "0");
    bc_buf_puts(&e, "]");
    if (tmp.oom || e.oom)
        b->oom = true;
    else
        bc_emit_from_storage(b, x->dtype, e.p);
    bc_buf_free(&tmp);
    bc_buf_free(&e);
}

bool bc_gather_data(const bc_node *c, uint32_t k) {
    for (uint32_t i = 0; i < c->prog->ninstr; i++)
        if (c->prog->instr[i].op == BP_INSTR_GATHER &&
            c->prog->instr[i].input == k)
            return true;
    return false;
}

/* GATHER instruction i (passes/program.h) at flat index i of the space:
 * the index read, normalised and compared with the axis as an unsigned
 * value; a bad one gives 0 and claims the run check record for this node
 * (BC_CHECK_INDEX_AT: the message names the gather), so no access leaves
 * the data. */
static void emit_gather(bc_buf *b, const bc_node *c, uint32_t i) {
    const bp_instr *in = &c->prog->instr[i];
    const bg_node *x = bc_input(c, in->input);
    int trail = x->rank - (int)in->axis - 1;
    long long bound = (long long)x->dims[in->axis], inner = 1, nidx = 1;
    for (int d = (int)in->axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    for (int d = (int)in->axis; d < c->prog->rank - trail; d++)
        nidx *= c->prog->dims[d];
    bc_buf_printf(b,
                  "    %s v%u;\n"
                  "    {\n"
                  "        const long long x = (long long)v%u, p = (long "
                  "long)i;\n"
                  "        const long long w = x < 0 ? x + %lldLL : x;\n"
                  "        if ((unsigned long long)w >= %lluULL) {\n"
                  "            bc_check_fail(chk, %uu, %uu, x, (p / %lldLL) %% "
                  "%lldLL, %lldLL);\n"
                  "            v%u = 0;\n"
                  "        } else {\n"
                  "            v%u = ",
                  bc_ctype(in->dtype), (unsigned)i, (unsigned)in->arg[0], bound,
                  (unsigned long long)bound, (unsigned)BC_CHECK_INDEX_AT(i),
                  (unsigned)c->id, inner, nidx, bound, (unsigned)i,
                  (unsigned)i);
    char e[192];
    snprintf(e, sizeof e,
             "in%u[((p / %lldLL) * %lldLL + w) * %lldLL + p %% %lldLL]",
             (unsigned)in->input, nidx * inner, bound, inner, inner);
    bc_emit_from_storage(b, x->dtype, e);
    bc_buf_puts(b, ";\n        }\n    }\n");
}

void bc_emit_expr_fn(bc_buf *b, const bc_node *c, const char *fn, uint32_t root,
                     const bc_operand *mode, uint32_t mm_instr,
                     bool root_stored) {
    const bp_program *pr = c->prog;
    bool *need = needed_instrs(pr, root, mm_instr);
    if (!need) {
        b->oom = true;
        return;
    }
    bc_buf_printf(b, "static __device__ __forceinline__ %s %s(%s i",
                  bc_ctype(pr->instr[root].dtype), fn, c->idx);
    for (uint32_t k = 0; k < c->n->ninputs; k++) {
        const bg_node *x = bc_input(c, k);
        if (mode[k] == BC_OPERAND_VALUE)
            bc_buf_printf(b, ", %s f%u", bc_ctype(x->dtype), (unsigned)k);
        else if (mode[k] == BC_OPERAND_POINTER)
            bc_buf_printf(b, ", const %s *in%u", bc_stype(x->dtype),
                          (unsigned)k);
    }
    if (mm_instr != BG_NONE)
        bc_buf_printf(b, ", %s fmm", bc_ctype(pr->instr[mm_instr].dtype));
    if (bp_program_has_gather(pr)) bc_buf_puts(b, ", bc_check *chk");
    for (uint32_t i = 0; i < root; i++) /* last: bc_store_args' order */
        if (pr->instr[i].op == BP_INSTR_STORE)
            bc_buf_printf(b, ", %s *s%u", bc_ctype(pr->instr[i].dtype),
                          (unsigned)i);
    bc_buf_puts(b, ") {\n");
    for (uint32_t i = 0; i <= root; i++) {
        if (!need[i]) continue;
        const bp_instr *in = &pr->instr[i];
        if (in->op == BP_INSTR_GATHER) {
            emit_gather(b, c, i);
            continue;
        }
        if (in->op == BP_INSTR_STORE) { /* the caller writes it out */
            bc_buf_printf(b, "    *s%u = v%u;\n", (unsigned)i,
                          (unsigned)in->arg[0]);
            continue;
        }
        bc_buf_printf(b, "    const %s v%u = ", bc_ctype(in->dtype),
                      (unsigned)i);
        if (i == mm_instr)
            bc_buf_puts(b, "fmm");
        else if (in->op == BP_INSTR_CONST)
            bc_emit_literal(b, in->dtype, in->value);
        else if (in->op == BP_INSTR_LOAD && mode[in->input] == BC_OPERAND_VALUE)
            bc_buf_printf(b, "f%u", (unsigned)in->input);
        else if (in->op == BP_INSTR_LOAD)
            emit_load(b, c, in);
        else
            emit_op(b, pr, i, i == root && root_stored);
        bc_buf_puts(b, ";\n");
    }
    free(need);
    bc_buf_printf(b, "    (void)i;\n    return v%u;\n}\n\n", (unsigned)root);
}

void bc_emit_expr_args(bc_buf *b, const bc_node *c, const char *ix,
                       const bc_operand *mode, const char *const *values,
                       uint32_t mm_instr, const char *mm) {
    bc_buf_puts(b, ix);
    for (uint32_t k = 0; k < c->n->ninputs; k++) {
        if (mode[k] == BC_OPERAND_VALUE)
            bc_buf_printf(b, ", %s", values[k]);
        else if (mode[k] == BC_OPERAND_POINTER)
            bc_buf_printf(b, ", in%u", (unsigned)k);
    }
    if (mm_instr != BG_NONE) bc_buf_printf(b, ", %s", mm);
    if (bp_program_has_gather(c->prog)) bc_buf_puts(b, ", chk");
}
