/* passes/program.c — bp_program_check: the rules every fused program obeys
 * (docs/fusion.md, "Programs"), stated once for all its readers.
 *
 * Checked in order, each failure naming what broke:
 *   header       instructions present, 1..BP_PROGRAM_MAX_INSTR of them, a
 *                known kind, rank ≤ 8, dims ≥ 0 with at most 2^50
 *                positions, the node's input count, axes and flags as
 *                the kind defines them;
 *   instructions each op a LOAD, a CONST, an elementwise op, the REDUCE
 *                program's final reduction or the MATMUL program's
 *                instruction 2; operands earlier instructions; dtypes as
 *                the builder types the op (graph/build.c); loads of an
 *                existing input with its dtype, broadcasting to the space
 *                (the matmul's own two loads read whole matrices); side
 *                stores into a variable input of the space's shape, one
 *                per variable, read by no instruction;
 *   space        the result's dtype is the node's; the space is the node's
 *                shape (REDUCE: reducing it gives the node's shape;
 *                MATMUL: the matmul of inputs 0 and 1 gives it). */
#include "passes/program.h"
#include "graph/window.h"

#include <limits.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>

/* The check in progress. */
typedef struct pc {
    const bp_program *p;  /* the program */
    const braid_graph *g; /* the graph holding the node */
    const bg_node *n;     /* the node computing it */
    uint32_t id;          /* its id */
    char *err;            /* the message buffer */
    size_t cap;           /* its size */
} pc;

static bool fail(const pc *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool fail(const pc *c, const char *fmt, ...) {
    if (!c->err || c->cap == 0) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->cap, fmt, ap);
    va_end(ap);
    return false;
}

static const char *dt(braid_dtype t) {
    return (unsigned)t < BRAID_DTYPE_COUNT_ ? braid_dtype_name(t) : "?";
}

/* NULL: a number that is no kind (3, the old softmax program) */
static const char *const kind_names[BP_PROGRAM_KIND_COUNT] = {
    "elementwise", "reduce", "matmul", NULL, "pool", "conv"};

static const bg_node *input(const pc *c, uint32_t k) {
    return bg_node_at(c->g, c->n->inputs[k]);
}

static braid_dtype arg_dtype(const pc *c, const bp_instr *in, int k) {
    return c->p->instr[in->arg[k]].dtype;
}

/* ---- the op's typing rules (the op table's, as graph/build.c applies them) */

/* Why the operand dtypes of elementwise instruction i do not fit its op
 * and result dtype, or NULL. */
static const char *elementwise_types(const pc *c, const bp_instr *in) {
    braid_dtype t = in->dtype, a = arg_dtype(c, in, 0);
    int arity = bg_op(in->op)->arity;
    if (in->op == BRAID_OP_CAST) /* a checked one needs its run check */
        return bg_cast_checked(a, t) ? "a range-checked cast (from i64) runs "
                                       "as a node of its own, never in a "
                                       "program"
                                     : NULL;
    if (in->op == BRAID_OP_WHERE)
        return a == BRAID_BOOL && arg_dtype(c, in, 1) == t &&
                       arg_dtype(c, in, 2) == t
                   ? NULL
                   : "expected a bool condition and two values of the "
                     "result's dtype";
    if (bg_op_is_compare(in->op)) {
        if (t != BRAID_BOOL) return "a comparison's result must be bool";
        if (arg_dtype(c, in, 1) != a) return "operands of different dtypes";
        if (!bg_op_accepts(in->op, a))
            return "an order comparison of bool values";
        return NULL;
    }
    if (a != t || (arity == 2 && arg_dtype(c, in, 1) != t))
        return "operand dtypes differ from the result's";
    if (bg_op_accepts(in->op, t)) return NULL;
    return bg_op(in->op)->dtypes == BRAID_DTYPES_FLOAT ? "expected a float dtype"
           : bg_op(in->op)->dtypes == BRAID_DTYPES_INT
               ? "expected an integer dtype"
               : "expected a float or i32 dtype";
}

/* ---- instructions ------------------------------------------------------ */

/* Input x of shape (rank, dims) broadcasts to the iteration space. */
static bool broadcasts(const bp_program *p, const bg_node *x) {
    if (x->rank > p->rank) return false;
    for (int d = 0; d < x->rank; d++) {
        int64_t want = p->dims[p->rank - x->rank + d];
        if (x->dims[d] != 1 && x->dims[d] != want) return false;
    }
    return true;
}

/* The loads a MATMUL or CONV program starts with (its heavy op's operands,
 * read whole), its heavy op right after them: 2 for MATMUL, 2 or 3 for
 * CONV (bp_program_conv_at); 0 for the other kinds. */
static uint32_t head_loads(const bp_program *p) {
    return p->kind == BP_PROGRAM_MATMUL ? 2
           : p->kind == BP_PROGRAM_CONV ? bp_program_conv_at(p)
                                        : 0;
}

/* What a MATMUL or CONV program starts with, for messages. */
static const char *head_form(const bp_program *p) {
    return p->kind == BP_PROGRAM_MATMUL ? "LOAD 0, LOAD 1, MATMUL(0, 1)"
                                        : "LOAD 0, LOAD 1, [LOAD 2,] CONV";
}

/* Instruction i ≤ head_loads of a MATMUL or CONV program: LOAD i, or the
 * heavy op after the loads. */
static bool check_head(const pc *c, uint32_t i, const bp_instr *in) {
    uint32_t at = head_loads(c->p);
    braid_op op =
        c->p->kind == BP_PROGRAM_MATMUL ? BRAID_OP_MATMUL : BRAID_OP_CONV;
    bool ok = i < at ? in->op == BP_INSTR_LOAD && in->input == i : in->op == op;
    return ok || fail(c, "instruction %u: a %s program starts %s", i,
                      kind_names[c->p->kind], head_form(c->p));
}

static bool check_load(const pc *c, uint32_t i, const bp_instr *in) {
    if (in->input >= c->n->ninputs)
        return fail(c, "instruction %u: load of input %u; the node has %u", i,
                    in->input, c->n->ninputs);
    const bg_node *x = input(c, in->input);
    if (x->dtype != in->dtype)
        return fail(c,
                    "instruction %u: load dtype %s differs from input "
                    "%u's %s",
                    i, dt(in->dtype), in->input, dt(x->dtype));
    if (i < head_loads(c->p)) return true; /* an operand read whole */
    if (!broadcasts(c->p, x)) {
        char a[96], b[96];
        return fail(c,
                    "instruction %u: input %u (%s) does not broadcast to "
                    "the iteration space %s",
                    i, in->input, bg_type_str(x, a, sizeof a),
                    bg_shape_str(c->p->rank, c->p->dims, b, sizeof b));
    }
    return true;
}

static bool check_matmul(const pc *c, uint32_t i, const bp_instr *in) {
    if (c->p->kind != BP_PROGRAM_MATMUL || i != 2)
        return fail(c,
                    "instruction %u: a matmul outside instruction 2 of a "
                    "matmul program",
                    i);
    if (in->arg[0] != 0 || in->arg[1] != 1)
        return fail(c,
                    "instruction 2: matmul operands %u, %u (expected 0, "
                    "1)",
                    in->arg[0], in->arg[1]);
    if (!bg_op_accepts(in->op, in->dtype) || arg_dtype(c, in, 0) != in->dtype ||
        arg_dtype(c, in, 1) != in->dtype)
        return fail(c,
                    "instruction 2: matmul of %s and %s into %s (expected "
                    "one float dtype)",
                    dt(arg_dtype(c, in, 0)), dt(arg_dtype(c, in, 1)),
                    dt(in->dtype));
    return true;
}

static bool check_conv(const pc *c, uint32_t i, const bp_instr *in) {
    uint32_t at = c->p->kind == BP_PROGRAM_CONV ? bp_program_conv_at(c->p) : 0;
    if (c->p->kind != BP_PROGRAM_CONV || i != at || in->op != BRAID_OP_CONV)
        return fail(c,
                    "instruction %u: a %s outside the head of a conv "
                    "program",
                    i, bg_op(in->op)->name);
    for (uint32_t k = 0; k < at; k++)
        if (in->arg[k] != k)
            return fail(c,
                        "instruction %u: conv operand %u is %u (expected "
                        "%u)",
                        i, k, in->arg[k], k);
    bool ok = in->dtype == BRAID_F32 || in->dtype == BRAID_F64;
    for (uint32_t k = 0; ok && k < at; k++)
        ok = arg_dtype(c, in, (int)k) == in->dtype;
    return ok || fail(c,
                      "instruction %u: conv of %s, %s into %s (expected "
                      "one dtype, f32 or f64)",
                      i, dt(arg_dtype(c, in, 0)), dt(arg_dtype(c, in, 1)),
                      dt(in->dtype));
}

static bool check_reduction(const pc *c, uint32_t i, const bp_instr *in) {
    if (c->p->kind != BP_PROGRAM_REDUCE || i + 1 != c->p->ninstr)
        return fail(c,
                    "instruction %u: %s is not a reduce program's last "
                    "instruction",
                    i, bg_op(in->op)->name);
    braid_dtype a = arg_dtype(c, in, 0);
    if (a != in->dtype || !bg_op_accepts(in->op, a))
        return fail(c,
                    "instruction %u: %s of %s into %s (expected one "
                    "%s dtype)",
                    i, bg_op(in->op)->name, dt(a), dt(in->dtype),
                    bg_op(in->op)->dtypes == BRAID_DTYPES_FLOAT
                        ? "float"
                        : "float or i32");
    return true;
}

/* GATHER: the data is an input of the instruction's dtype (not i64: the
 * CPU tiles hold none), gathered along `axis` by arg[0], an earlier i32
 * value, into the space: the data's dims before the axis lead the space,
 * its dims after the axis end it, and the indices' dims fill the middle.
 * Only in ELEMENTWISE programs (the CPU and GPU walk their positions in
 * the space's C order). */
static bool check_gather(const pc *c, uint32_t i, const bp_instr *in) {
    const bp_program *p = c->p;
    if (p->kind != BP_PROGRAM_ELEMENTWISE)
        return fail(c, "instruction %u: a gather outside an elementwise "
                       "program", i);
    if (in->input >= c->n->ninputs)
        return fail(c, "instruction %u: gather of input %u; the node has %u",
                    i, in->input, c->n->ninputs);
    if (in->arg[0] >= i || p->instr[in->arg[0]].dtype != BRAID_I32 ||
        p->instr[in->arg[0]].op == BP_INSTR_STORE)
        return fail(c, "instruction %u: the indices (operand 0, %u) are not "
                       "an earlier i32 instruction", i, in->arg[0]);
    const bg_node *x = input(c, in->input);
    if (x->dtype != in->dtype || in->dtype == BRAID_I64)
        return fail(c, "instruction %u: gather dtype %s of input %u's %s "
                       "(expected the same, not i64)",
                    i, dt(in->dtype), in->input, dt(x->dtype));
    int t = in->axis < x->rank ? (int)x->rank - (int)in->axis - 1 : 0;
    if (in->axis >= x->rank || p->rank < (int)in->axis + t)
        return fail(c, "instruction %u: gather axis %u of input %u (rank "
                       "%d) in a space of rank %d", i, in->axis, in->input,
                    (int)x->rank, (int)p->rank);
    bool ok = true;
    for (uint32_t d = 0; d < in->axis; d++)
        ok &= x->dims[d] == p->dims[d];
    for (int d = 0; d < t; d++)
        ok &= x->dims[in->axis + 1 + d] == p->dims[p->rank - t + d];
    if (!ok) {
        char a[96], b[96];
        return fail(c, "instruction %u: gathering input %u (%s) along axis "
                       "%u cannot give the iteration space %s", i, in->input,
                    bg_type_str(x, a, sizeof a), in->axis,
                    bg_shape_str(p->rank, p->dims, b, sizeof b));
    }
    return true;
}

/* max_pool / avg_pool: a POOL program's last instruction, operand and
 * result of one dtype the op accepts. */
static bool check_pool_instr(const pc *c, uint32_t i, const bp_instr *in) {
    if (c->p->kind != BP_PROGRAM_POOL || i + 1 != c->p->ninstr ||
        (in->op != BRAID_OP_MAX_POOL && in->op != BRAID_OP_AVG_POOL))
        return fail(c, "instruction %u: %s is not a pool program's last "
                       "instruction", i, bg_op(in->op)->name);
    braid_dtype a = arg_dtype(c, in, 0);
    if (a != in->dtype || !bg_op_accepts(in->op, a))
        return fail(c, "instruction %u: %s of %s into %s", i,
                    bg_op(in->op)->name, dt(a), dt(in->dtype));
    if (in->op == BRAID_OP_MAX_POOL && (c->p->flags & BG_POOL_COUNT_PAD))
        return fail(c, "flags 0x%x: count_include_pad on a max_pool",
                    c->p->flags);
    return true;
}

static bool check_operands(const pc *c, uint32_t i, const bp_instr *in) {
    int arity = bp_instr_arity(in);
    if (arity < 1 || arity > 3)
        return fail(c, "instruction %u: %s cannot be in a program", i,
                    bg_op(in->op)->name);
    for (int k = 0; k < arity; k++) {
        if (in->arg[k] >= i)
            return fail(c,
                        "instruction %u: operand %d (%u) is not an "
                        "earlier instruction",
                        i, k, in->arg[k]);
        if (c->p->instr[in->arg[k]].op == BP_INSTR_STORE)
            return fail(c,
                        "instruction %u: operand %d (%u) is a store, which "
                        "has no value",
                        i, k, in->arg[k]);
    }
    return true;
}

/* The space is n's shape. */
static bool same_shape(const bp_program *p, const bg_node *n) {
    if (p->rank != n->rank) return false;
    for (int i = 0; i < p->rank; i++)
        if (p->dims[i] != n->dims[i]) return false;
    return true;
}

/* STORE: an elementwise program's computed value (not a load or a
 * constant: the CPU may read those in place, and a store must not change
 * what a later read sees) written into a variable input of exactly the
 * space's shape and the value's dtype; one store per variable, never the
 * data of a gather (read at other positions than the one stored), never
 * the last instruction. */
static bool check_store(const pc *c, uint32_t i, const bp_instr *in) {
    const bp_program *p = c->p;
    if (p->kind != BP_PROGRAM_ELEMENTWISE || i + 1 >= p->ninstr)
        return fail(c,
                    "instruction %u: a store outside an elementwise "
                    "program or as its result",
                    i);
    if (in->arg[0] >= i)
        return fail(c,
                    "instruction %u: the stored value (operand 0, %u) is "
                    "not an earlier instruction",
                    i, in->arg[0]);
    braid_op vop = p->instr[in->arg[0]].op;
    if (vop == BP_INSTR_LOAD || vop == BP_INSTR_CONST || vop == BP_INSTR_STORE)
        return fail(c,
                    "instruction %u: the stored value (instruction %u) is "
                    "a load, a constant or a store, not a computed value",
                    i, in->arg[0]);
    if (in->input >= c->n->ninputs)
        return fail(c, "instruction %u: store into input %u; the node has %u",
                    i, in->input, c->n->ninputs);
    const bg_node *x = input(c, in->input);
    char a[96], b[96];
    if (x->op != BRAID_OP_VARIABLE || x->dtype != in->dtype ||
        arg_dtype(c, in, 0) != in->dtype || !same_shape(p, x))
        return fail(c,
                    "instruction %u: store of a %s value into input %u "
                    "(%s, %s): expected a variable of the iteration "
                    "space %s and that dtype",
                    i, dt(arg_dtype(c, in, 0)), in->input, bg_op(x->op)->name,
                    bg_type_str(x, a, sizeof a),
                    bg_shape_str(p->rank, p->dims, b, sizeof b));
    for (uint32_t j = 0; j < p->ninstr; j++) {
        const bp_instr *o = &p->instr[j];
        if (j == i || o->input >= c->n->ninputs ||
            c->n->inputs[o->input] != c->n->inputs[in->input])
            continue;
        if (o->op == BP_INSTR_STORE || o->op == BP_INSTR_GATHER)
            return fail(c,
                        "instruction %u: input %u is stored into, and "
                        "instruction %u %s it too",
                        i, in->input, j,
                        o->op == BP_INSTR_STORE ? "stores into"
                                                : "gathers from");
    }
    return true;
}

static bool check_instr(const pc *c, uint32_t i) {
    const bp_instr *in = &c->p->instr[i];
    if ((unsigned)in->dtype >= BRAID_DTYPE_COUNT_)
        return fail(c, "instruction %u: dtype %d unknown", i, (int)in->dtype);
    if (head_loads(c->p) && i <= head_loads(c->p) && !check_head(c, i, in))
        return false;
    if (in->op == BP_INSTR_LOAD) return check_load(c, i, in);
    if (in->op == BP_INSTR_CONST) return true;
    if (in->op == BP_INSTR_GATHER) return check_gather(c, i, in);
    if (in->op == BP_INSTR_STORE) return check_store(c, i, in);
    if ((unsigned)in->op >= BRAID_OP_COUNT_)
        return fail(c, "instruction %u: op %u unknown", i, (unsigned)in->op);
    if (!check_operands(c, i, in)) return false;
    braid_op_kind kind = bg_op(in->op)->kind;
    if (in->op == BRAID_OP_MATMUL) return check_matmul(c, i, in);
    if (kind == BRAID_KIND_CONV) return check_conv(c, i, in);
    if (kind == BRAID_KIND_REDUCE) return check_reduction(c, i, in);
    if (kind == BRAID_KIND_WINDOW) return check_pool_instr(c, i, in);
    if (kind != BRAID_KIND_ELEMENTWISE)
        return fail(c, "instruction %u: %s cannot be in a program", i,
                    bg_op(in->op)->name);
    const char *why = elementwise_types(c, in);
    return !why || fail(c, "instruction %u: %s into %s: %s", i,
                        bg_op(in->op)->name, dt(in->dtype), why);
}

/* ---- header and space ------------------------------------------------- */

/* What axes the kind allows when they differ from p's, else NULL: reduced
 * axes below the rank (REDUCE), none. */
static const char *axes_expected(const bp_program *p) {
    unsigned all = p->rank >= 8 ? 0xFFu : (1u << p->rank) - 1;
    switch (p->kind) {
    case BP_PROGRAM_REDUCE:
        return (p->axes & ~all) ? "axes below its rank" : NULL;
    default:
        return p->axes ? "none" : NULL;
    }
}

/* Flags the kind allows: keepdims (REDUCE), the transposes (MATMUL). */
static uint32_t flags_allowed(bp_program_kind k) {
    return k == BP_PROGRAM_REDUCE   ? BG_KEEPDIMS
           : k == BP_PROGRAM_MATMUL ? BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B
           : k == BP_PROGRAM_POOL
               ? BG_POOL_CEIL | BG_POOL_COUNT_PAD | BG_POOL_CHANNELS_LAST
               : 0;
}

static bool check_attrs(const pc *c) {
    const bp_program *p = c->p;
    const char *k = kind_names[p->kind], *want = axes_expected(p);
    if (p->flags & ~flags_allowed(p->kind))
        return fail(c, "flags 0x%x; %s programs allow 0x%x", p->flags, k,
                    flags_allowed(p->kind));
    if (want)
        return fail(c, "axes 0x%x; %s programs of rank %u expect %s",
                    (unsigned)p->axes, k, (unsigned)p->rank, want);
    bool windowed = p->kind == BP_PROGRAM_POOL || p->kind == BP_PROGRAM_CONV;
    int spatial = windowed ? p->rank - 2 : 0;
    if (windowed && (spatial < 1 || spatial > 3))
        return fail(c, "a %s program of rank %u (3..5)", k, (unsigned)p->rank);
    for (int q = 0; q < 5; q++)
        for (int i = 0; i < 3; i++) {
            int64_t v = p->window[q][i], lo = q < 3 ? 1 : 0;
            if (i >= spatial ? v != 0 : v < lo || v > (1LL << 30))
                return fail(c,
                            "window[%d][%d] = %lld; expected %s", q, i,
                            (long long)v,
                            i >= spatial ? "0"
                            : q < 3      ? "1 to 2^30"
                                         : "0 to 2^30");
        }
    return true;
}

static bool check_header(const pc *c) {
    const bp_program *p = c->p;
    if (!p->instr || p->ninstr < 1 || p->ninstr > BP_PROGRAM_MAX_INSTR)
        return fail(c, "ninstr %u (1..%d)", p->instr ? p->ninstr : 0,
                    BP_PROGRAM_MAX_INSTR);
    if ((unsigned)p->kind >= BP_PROGRAM_KIND_COUNT || !kind_names[p->kind])
        return fail(c, "kind %u unknown", (unsigned)p->kind);
    if (p->rank > BRAID_MAX_RANK)
        return fail(c, "rank %u (0..%d)", (unsigned)p->rank, BRAID_MAX_RANK);
    int64_t numel = 1;
    for (int d = 0; d < p->rank; d++) {
        if (p->dims[d] < 0)
            return fail(c, "dims[%d] = %lld is negative", d,
                        (long long)p->dims[d]);
        if (p->dims[d] > 0 && numel > BG_MAX_BYTES / p->dims[d])
            return fail(c, "an iteration space of more than 2^50 positions");
        numel *= p->dims[d];
    }
    if (head_loads(p) && p->ninstr <= head_loads(p))
        return fail(c, "a %s program starts %s; it has %u instructions",
                    kind_names[p->kind], head_form(p), p->ninstr);
    if (c->n->ninputs > BP_PROGRAM_MAX_INSTR)
        return fail(c, "the node has %u inputs (at most %d)", c->n->ninputs,
                    BP_PROGRAM_MAX_INSTR);
    return check_attrs(c);
}

/* Reducing the space's axes (keeping them as 1 with BG_KEEPDIMS) gives
 * the node's shape. */
static bool reduced_shape_is(const bp_program *p, const bg_node *n) {
    int r = 0;
    for (int i = 0; i < p->rank; i++) {
        bool red = (p->axes >> i) & 1;
        if (red && !(p->flags & BG_KEEPDIMS)) continue;
        if (r >= n->rank || n->dims[r] != (red ? 1 : p->dims[i])) return false;
        r++;
    }
    return r == n->rank;
}

/* A matmul of inputs 0 and 1 (transposed as flags say, batch dims
 * broadcasting) gives the space, with M, N, K within int (cuBLAS's and the
 * CPU kernels' index type). */
static bool matmul_fits(const pc *c) {
    const bp_program *p = c->p;
    if (c->n->ninputs < 2 || p->rank < 2) return false;
    const bg_node *a = input(c, 0), *b = input(c, 1);
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

/* The pool of the space (its input) by the program's window gives n's
 * shape: N and C kept, each spatial dim bg_window_out_dim (≥ 1); the
 * channel axis last with BG_POOL_CHANNELS_LAST. */
static bool pooled_shape_is(const bp_program *p, const bg_node *n) {
    bool cl = p->flags & BG_POOL_CHANNELS_LAST;
    int ca = cl ? p->rank - 1 : 1, sp0 = cl ? 1 : 2;
    if (n->rank != p->rank || n->dims[0] != p->dims[0] ||
        n->dims[ca] != p->dims[ca])
        return false;
    for (int i = 0; i + 2 < p->rank; i++) {
        const int64_t *w = &p->window[0][0];
        int64_t o =
            bg_window_out_dim(p->dims[sp0 + i], w[i], w[3 + i], w[6 + i],
                              w[9 + i], w[12 + i], p->flags & BG_POOL_CEIL);
        if (o < 1 || o != n->dims[sp0 + i]) return false;
    }
    return true;
}

static bool check_space(const pc *c) {
    const bp_program *p = c->p;
    const bg_node *n = c->n;
    const bp_instr *last = &p->instr[p->ninstr - 1];
    if (last->dtype != n->dtype)
        return fail(c,
                    "instruction %u: the result's dtype %s differs from "
                    "the node's %s",
                    p->ninstr - 1, dt(last->dtype), dt(n->dtype));
    if (p->kind == BP_PROGRAM_REDUCE &&
        ((unsigned)last->op >= BRAID_OP_COUNT_ ||
         bg_op(last->op)->kind != BRAID_KIND_REDUCE))
        return fail(c,
                    "instruction %u: a reduce program must end with a "
                    "reduction",
                    p->ninstr - 1);
    if (p->kind == BP_PROGRAM_POOL &&
        last->op != BRAID_OP_MAX_POOL && last->op != BRAID_OP_AVG_POOL)
        return fail(c,
                    "instruction %u: a pool program must end with a "
                    "pool",
                    p->ninstr - 1);
    if (p->kind == BP_PROGRAM_REDUCE ? !reduced_shape_is(p, n)
        : p->kind == BP_PROGRAM_POOL ? !pooled_shape_is(p, n)
                                     : !same_shape(p, n)) {
        char a[96], b[96];
        return fail(c,
                    "the iteration space %s (axes 0x%x) does not give "
                    "the node's shape %s",
                    bg_shape_str(p->rank, p->dims, a, sizeof a),
                    (unsigned)p->axes, bg_type_str(n, b, sizeof b));
    }
    if (p->kind == BP_PROGRAM_MATMUL && !matmul_fits(c))
        return fail(c, "instruction 2: the matmul of inputs 0 and 1 does not "
                       "give the space's matrices");
    bg_node conv;
    if (p->kind == BP_PROGRAM_CONV &&
        !bp_program_conv_node(p, c->g, c->id, &conv))
        return fail(c,
                    "instruction %u: the conv of inputs 0, 1%s by the "
                    "window does not give the space",
                    bp_program_conv_at(p),
                    bp_program_conv_at(p) == 3 ? ", 2" : "");
    return true;
}

bool bp_program_check(const bp_program *p, const braid_graph *g, uint32_t node,
                      char *err, size_t n) {
    pc c = {.p = p, .g = g, .err = err, .cap = n};
    if (err && n) err[0] = '\0';
    if (!p) return fail(&c, "no program");
    if (!g || node >= g->nnodes)
        return fail(&c, "node %u is not in the graph", node);
    c.n = bg_node_at(g, node);
    c.id = node;
    if (!check_header(&c)) return false;
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (!check_instr(&c, i)) return false;
    return check_space(&c);
}

const char *bp_program_kind_name(bp_program_kind k) {
    return (unsigned)k < BP_PROGRAM_KIND_COUNT && kind_names[k] ? kind_names[k]
                                                                : "invalid";
}

void bp_program_window(const bp_program *p, const int64_t *out_dims,
                       bg_window *w) {
    bg_node x, n;
    memset(&x, 0, sizeof x);
    memset(&n, 0, sizeof n);
    x.rank = n.rank = p->rank;
    memcpy(x.dims, p->dims, sizeof x.dims);
    memcpy(n.dims, out_dims, (size_t)p->rank * sizeof *n.dims);
    n.attr.flags = p->flags;
    for (int q = 0; q < 5; q++)
        for (int i = 0; i + 2 < p->rank && i < 3; i++)
            bg_window_set_param(&n.attr, q, i, p->window[q][i]);
    bg_window_get(&n, &x, w);
}

uint32_t bp_program_conv_at(const bp_program *p) {
    return p->ninstr > 2 && p->instr[2].op == BP_INSTR_LOAD ? 3 : 2;
}

bool bp_program_conv_node(const bp_program *p, const braid_graph *g,
                          uint32_t node, bg_node *conv) {
    if (!p || p->kind != BP_PROGRAM_CONV || !g || node >= g->nnodes ||
        p->rank < 3 || p->rank > 5)
        return false;
    const bg_node *n = bg_node_at(g, node);
    uint32_t nin = bp_program_conv_at(p);
    if (n->ninputs < nin) return false;
    bg_conv_geom want = {.nspatial = p->rank - 2};
    for (int i = 0; i < want.nspatial; i++) {
        want.stride[i] = p->window[1][i];
        want.dil[i] = p->window[2][i];
        want.pb[i] = p->window[3][i];
        want.pe[i] = p->window[4][i];
    }
    *conv = *n;
    conv->op = BRAID_OP_CONV;
    conv->ninputs = nin;
    conv->rank = p->rank;
    memcpy(conv->dims, p->dims, sizeof conv->dims);
    bg_conv_attrs(&want, &conv->attr);
    bg_conv_geom geo;
    if (!bg_conv_geom_of(g, conv, &geo) || geo.G != 1) return false;
    for (int i = 0; i < want.nspatial; i++)
        if (geo.k[i] != p->window[0][i]) return false;
    return true;
}

bool bp_program_has_gather(const bp_program *p) {
    for (uint32_t i = 0; p && i < p->ninstr; i++)
        if (p->instr[i].op == BP_INSTR_GATHER) return true;
    return false;
}

bool bp_program_has_store(const bp_program *p) {
    for (uint32_t i = 0; p && i < p->ninstr; i++)
        if (p->instr[i].op == BP_INSTR_STORE) return true;
    return false;
}

bool bp_program_stores_into(const bp_program *p, const braid_graph *g,
                            uint32_t node, uint32_t var) {
    if (!p || !g || node >= g->nnodes) return false;
    const bg_node *n = bg_node_at(g, node);
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (p->instr[i].op == BP_INSTR_STORE &&
            p->instr[i].input < n->ninputs &&
            n->inputs[p->instr[i].input] == var)
            return true;
    return false;
}

int bp_instr_arity(const bp_instr *in) {
    if (in->op == BP_INSTR_LOAD || in->op == BP_INSTR_CONST) return 0;
    if (in->op == BRAID_OP_CONV) /* x, w and a bias when there is one */
        return in->arg[2] != BG_NONE ? 3 : 2;
    if (in->op == BP_INSTR_GATHER || in->op == BP_INSTR_STORE) return 1;
    return (unsigned)in->op < BRAID_OP_COUNT_ ? bg_op(in->op)->arity : 0;
}
