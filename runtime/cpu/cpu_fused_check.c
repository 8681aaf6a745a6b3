/* runtime/cpu/cpu_fused_check.c — br_fused_check: is a fused node's program one
 * the CPU interpreter runs safely? The fuse pass only makes such programs;
 * the check guards executors against anything else (a plan built by other
 * means, later a plan file), so that br_fused_run never reads out of
 * bounds. */
#include "runtime/cpu/cpu_fused.h"

#include <limits.h>
#include <stdio.h>

/* A failure: its reason into why (why is set only once). */
typedef struct check {
    const braid_graph *g; /* the graph */
    const bg_node *n;     /* the fused node */
    const bp_program *p;  /* its program */
    char why[160];        /* the first problem, "" while none */
} check;

static bool fail(check *c, uint32_t i, const char *what) {
    if (!c->why[0])
        snprintf(c->why, sizeof c->why, "instruction %u: %s", (unsigned)i,
                 what);
    return false;
}

static braid_dtype arg_dtype(const check *c, const bp_instr *in, int k) {
    return c->p->instr[in->arg[k]].dtype;
}

static bool float_only(braid_op op) {
    switch (op) {
    case BRAID_OP_NEG:
    case BRAID_OP_ABS:
    case BRAID_OP_SQUARE:
    case BRAID_OP_RELU:
        return false;
    default:
        return true;
    }
}

/* Operand dtypes of an elementwise instruction, as the builder requires
 * them of the op it came from. */
static bool check_elementwise(check *c, uint32_t i, const bp_instr *in) {
    braid_dtype t = in->dtype, a = arg_dtype(c, in, 0);
    int arity = bg_op(in->op)->arity;
    if (in->op == BRAID_OP_CAST) return true;
    if (in->op == BRAID_OP_WHERE)
        return (a == BRAID_BOOL && arg_dtype(c, in, 1) == t &&
                arg_dtype(c, in, 2) == t) ||
               fail(c, i, "where with mismatched dtypes");
    if (in->op >= BRAID_OP_EQ && in->op <= BRAID_OP_GE)
        return (t == BRAID_BOOL && arg_dtype(c, in, 1) == a &&
                (a != BRAID_BOOL || in->op <= BRAID_OP_NE)) ||
               fail(c, i, "comparison with mismatched dtypes");
    if (a != t || (arity == 2 && arg_dtype(c, in, 1) != t))
        return fail(c, i, "operand dtypes differ from the result's");
    if (t == BRAID_BOOL) return fail(c, i, "arithmetic on bool");
    bool float_op = arity == 1 ? float_only(in->op) : in->op == BRAID_OP_POW;
    if (float_op && !braid_dtype_is_float(t))
        return fail(c, i, "a float-only op on a non-float dtype");
    return true;
}

/* The reduction (the last instruction of a REDUCE program). */
static bool check_reduction(check *c, uint32_t i, const bp_instr *in) {
    if (arg_dtype(c, in, 0) != in->dtype || in->dtype == BRAID_BOOL ||
        (in->op == BRAID_OP_MEAN && !braid_dtype_is_float(in->dtype)))
        return fail(c, i, "a reduction of an unsupported dtype");
    return true;
}

static bool check_load(check *c, uint32_t i, const bp_instr *in) {
    if (in->input >= c->n->ninputs)
        return fail(c, i, "load of a missing input");
    if (bg_node_at(c->g, c->n->inputs[in->input])->dtype != in->dtype)
        return fail(c, i, "load dtype differs from its input's");
    if (c->p->kind == BP_PROGRAM_MATMUL && i < 2) return true;
    /* an elementwise load broadcasts against the iteration space */
    const bg_node *x = bg_node_at(c->g, c->n->inputs[in->input]);
    if (x->rank > c->p->rank) return fail(c, i, "load of a too large input");
    for (int d = 0; d < x->rank; d++) {
        int64_t want = c->p->dims[c->p->rank - x->rank + d];
        if (x->dims[d] != 1 && x->dims[d] != want)
            return fail(c, i, "load of an input that does not broadcast");
    }
    return true;
}

static bool check_instr(check *c, uint32_t i) {
    const bp_program *p = c->p;
    const bp_instr *in = &p->instr[i];
    bool last = i + 1 == p->ninstr;
    bool mm_head = p->kind == BP_PROGRAM_MATMUL && i < 3;
    if ((unsigned)in->dtype >= BRAID_DTYPE_COUNT_)
        return fail(c, i, "bad dtype");
    if (mm_head && (i < 2 ? in->op != BP_INSTR_LOAD || in->input != i
                          : in->op != BRAID_OP_MATMUL))
        return fail(c, i,
                    "a matmul program must start LOAD 0, LOAD 1, "
                    "MATMUL");
    if (in->op == BP_INSTR_LOAD) return check_load(c, i, in);
    if (in->op == BP_INSTR_CONST) return true;
    if ((unsigned)in->op >= BRAID_OP_COUNT_) return fail(c, i, "unknown op");
    int arity = bg_op(in->op)->arity;
    for (int k = 0; k < arity; k++)
        if (in->arg[k] >= i)
            return fail(c, i, "an operand not computed before");
    braid_op_kind kind = bg_op(in->op)->kind;
    if (in->op == BRAID_OP_MATMUL)
        return (mm_head && in->arg[0] == 0 && in->arg[1] == 1 &&
                braid_dtype_is_float(in->dtype) &&
                arg_dtype(c, in, 0) == in->dtype &&
                arg_dtype(c, in, 1) == in->dtype) ||
               fail(c, i, "a misplaced or mistyped matmul");
    if (kind == BRAID_KIND_REDUCE)
        return (last && p->kind == BP_PROGRAM_REDUCE &&
                check_reduction(c, i, in)) ||
               fail(c, i, "a misplaced reduction");
    if (kind != BRAID_KIND_ELEMENTWISE)
        return fail(c, i, "an op programs cannot hold");
    return check_elementwise(c, i, in);
}

/* The dims a reduction of the iteration space gives. */
static bool reduced_shape_is(const bp_program *p, const bg_node *n) {
    int r = 0;
    for (int i = 0; i < p->rank; i++) {
        bool red = (p->axes >> i) & 1;
        if (red && !(p->flags & BG_KEEPDIMS)) continue;
        if (r >= n->rank || n->dims[r] != (red ? 1 : p->dims[i])) return false;
        r++;
    }
    return r == n->rank && (p->axes >> p->rank) == 0;
}

/* A matmul of inputs 0 and 1 into the iteration space (= the node). */
static bool matmul_fits(const check *c) {
    const bp_program *p = c->p;
    if (c->n->ninputs < 2 || p->rank < 2) return false;
    const bg_node *a = bg_node_at(c->g, c->n->inputs[0]);
    const bg_node *b = bg_node_at(c->g, c->n->inputs[1]);
    if (a->rank < 2 || b->rank < 2 || a->rank > p->rank || b->rank > p->rank)
        return false;
    bool ta = p->flags & BRAID_TRANSPOSE_A, tb = p->flags & BRAID_TRANSPOSE_B;
    int64_t M = a->dims[a->rank - (ta ? 1 : 2)],
            K = a->dims[a->rank - (ta ? 2 : 1)];
    int64_t Kb = b->dims[b->rank - (tb ? 1 : 2)],
            N = b->dims[b->rank - (tb ? 2 : 1)];
    if (K != Kb || M != p->dims[p->rank - 2] || N != p->dims[p->rank - 1] ||
        M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return false;
    for (int i = 0; i < p->rank - 2; i++) { /* batch dims broadcast */
        int ja = i - (p->rank - a->rank), jb = i - (p->rank - b->rank);
        int64_t da = ja >= 0 ? a->dims[ja] : 1, db = jb >= 0 ? b->dims[jb] : 1;
        if ((da != 1 && da != p->dims[i]) || (db != 1 && db != p->dims[i]))
            return false;
    }
    return true;
}

/* The program's space against the node it computes. */
static bool check_space(check *c) {
    const bp_program *p = c->p;
    const bg_node *n = c->n;
    bool same = p->rank == n->rank;
    for (int i = 0; same && i < p->rank; i++)
        same = p->dims[i] == n->dims[i];
    if (p->kind == BP_PROGRAM_REDUCE ? !reduced_shape_is(p, n) : !same)
        return fail(c, p->ninstr - 1,
                    "iteration space does not match the "
                    "node's shape");
    if (p->instr[p->ninstr - 1].dtype != n->dtype)
        return fail(c, p->ninstr - 1, "result dtype differs from the node's");
    if (p->kind == BP_PROGRAM_MATMUL &&
        (!matmul_fits(c) || p->instr[2].dtype != n->dtype))
        return fail(c, 2, "matmul operands do not fit the node");
    if (p->kind == BP_PROGRAM_SOFTMAX &&
        (p->rank < 1 || !braid_dtype_is_float(n->dtype) ||
         p->axes != (1u << (p->rank - 1)) || p->flags != 0))
        return fail(c, p->ninstr - 1,
                    "softmax program not over the last axis of a float "
                    "value");
    const bp_instr *last = &p->instr[p->ninstr - 1];
    if (p->kind == BP_PROGRAM_REDUCE &&
        ((unsigned)last->op >= BRAID_OP_COUNT_ ||
         bg_op(last->op)->kind != BRAID_KIND_REDUCE))
        return fail(c, p->ninstr - 1, "reduce program without a reduction");
    return true;
}

braid_status br_fused_check(const braid_graph *g, uint32_t id,
                            const bp_program *program) {
    check c = {.g = g, .n = bg_node_at(g, id), .p = program, .why = ""};
    const bp_program *p = program;
    bool ok = p && p->instr && p->ninstr >= 1 && p->ninstr <= BR_FZ_MAX_INSTR &&
              p->rank <= BRAID_MAX_RANK &&
              (unsigned)p->kind < BP_PROGRAM_KIND_COUNT &&
              (p->kind != BP_PROGRAM_MATMUL || p->ninstr >= 3) &&
              c.n->ninputs <= BR_FZ_MAX_INSTR;
    for (int i = 0; ok && i < p->rank; i++)
        ok = p->dims[i] >= 0;
    if (!ok)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: fused node %u: missing or "
                                 "malformed program",
                                 (unsigned)id);
    for (uint32_t i = 0; ok && i < p->ninstr; i++)
        ok = check_instr(&c, i);
    if (ok) ok = check_space(&c);
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_INTERNAL,
                             "braid_exec_new: fused node %u: its program "
                             "cannot run on the cpu: %s",
                             (unsigned)id, c.why);
}
