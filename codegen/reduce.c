/* codegen/reduce.c — reductions (sum, mean, reduce_max, reduce_min,
 * reduce_prod) with their elementwise prologue inlined at the load.
 *
 * The iteration space (the reduction's input shape) is split, as the CPU
 * kernel does, into alternating groups of kept and reduced axes; an output
 * element o and a reduced index r then address iteration index
 * kbase(o) + rbase(r), both sums of constant-divisor terms. Strategies:
 *   thread: one thread per output element loops over r, when the innermost
 *     group is kept and at least 32 long (neighbouring threads read
 *     neighbouring elements) or when R < 32. With many reduced elements
 *     the block is 32 outputs × 8 slices of r, the slices combined through
 *     shared memory in a fixed order; with few outputs the r range is also
 *     split over blocks (grid.y).
 *   warp: otherwise, for R ≤ 2048: a warp per output, lanes stride r, a
 *     shuffle tree combines them.
 *   block: longer rows: a block per output, warps then a shared-memory
 *     tree; with few outputs the row is split over blocks (grid.x).
 * A split writes per-slice partials to scratch ([slice][output]) and a
 * second launch (<entry>_final) combines them in slice order: no atomics,
 * results independent of timing. Sums accumulate f32/f16/bf16 in float
 * (per-thread runs, then a tree: pairwise-ish), f64 in double, i32 in
 * unsigned (wrapping); max/min propagate NaN. */
#include "codegen/internal.h"

#include <stdio.h>
#include <string.h>

/* Device-wide parallelism the split heuristics aim for (blocks). */
#define RED_TARGET_BLOCKS 528
#define RED_MAX_SPLIT 1024

typedef enum red_strategy { RED_THREAD, RED_WARP, RED_BLOCK } red_strategy;

typedef struct red_plan {
    int64_t O, R; /* outputs, reduced elements per output */
    int nk, nr;   /* kept / reduced groups, outer to inner */
    int64_t kd[BRAID_MAX_RANK], ks[BRAID_MAX_RANK]; /* kept dims, strides */
    int64_t rd[BRAID_MAX_RANK], rs[BRAID_MAX_RANK]; /* reduced dims, strides */
    bool inner_reduced;      /* the innermost group is reduced */
    red_strategy how;        /* see above */
    int bx, by;              /* thread: block shape (outputs × slices) */
    int threads;             /* block: threads per output */
    int64_t split;           /* slices of r over blocks (1: none) */
    int64_t chunk;           /* r per slice */
    braid_op op;             /* the reduction */
    braid_dtype in_t, out_t; /* operand and output dtypes */
    const char *acc;         /* accumulator C type */
} red_plan;

static void analyze(const bp_program *pr, red_plan *r) {
    int64_t st[BRAID_MAX_RANK], s = 1;
    for (int i = pr->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= pr->dims[i];
    }
    r->nk = r->nr = 0;
    r->O = r->R = 1;
    int last = -1;
    for (int i = 0; i < pr->rank; i++) {
        int red = (pr->axes >> i) & 1;
        (red ? &r->R : &r->O)[0] *= pr->dims[i];
        if (pr->dims[i] == 1) continue;
        int64_t *d = red ? r->rd : r->kd, *x = red ? r->rs : r->ks;
        int *cnt = red ? &r->nr : &r->nk;
        if (last == red) {
            d[*cnt - 1] *= pr->dims[i];
            x[*cnt - 1] = st[i];
        } else {
            d[*cnt] = pr->dims[i];
            x[*cnt] = st[i];
            (*cnt)++;
        }
        last = red;
    }
    r->inner_reduced = last == 1;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

static void choose(red_plan *r) {
    r->split = 1;
    r->bx = BC_BLOCK;
    r->by = 1;
    r->threads = BC_BLOCK;
    /* A thread per output only pays when a warp's outputs are neighbours
     * in memory (a kept inner run of ≥ 32) or rows are too short to share;
     * otherwise threads share an output and stride its reduced elements. */
    int64_t kept_run = r->inner_reduced || r->nk == 0 ? 1 : r->kd[r->nk - 1];
    if (r->R == 0 || r->R < 32 || kept_run >= 32) {
        r->how = RED_THREAD;
        if (r->R >= 64 && !r->inner_reduced) {
            r->by = 8;
            r->bx = BC_BLOCK / 8;
        }
        int64_t blocks = bc_cdiv(r->O, r->bx);
        if (!r->inner_reduced && r->R >= 4096 && blocks < RED_TARGET_BLOCKS / 2)
            r->split = clamp64(bc_cdiv(RED_TARGET_BLOCKS, blocks), 1,
                               clamp64(r->R / (16 * r->by), 1, RED_MAX_SPLIT));
    } else if (r->R <= 2048) {
        r->how = RED_WARP;
    } else {
        r->how = RED_BLOCK;
        r->threads = r->R > 8192 ? 512 : 256;
        if (r->O < RED_TARGET_BLOCKS / 2 && r->R >= 16384)
            r->split =
                clamp64(bc_cdiv(RED_TARGET_BLOCKS, r->O), 1,
                        clamp64(r->R / (16 * r->threads), 1, RED_MAX_SPLIT));
    }
    r->chunk = bc_cdiv(r->R, r->split);
}

/* Terms of a group decode: flat index over the groups' dims → offset. */
static int group_terms(int n, const int64_t *d, const int64_t *s, bc_term *t) {
    int64_t div = 1;
    int nt = 0;
    for (int g = n - 1; g >= 0; g--) {
        t[nt++] = (bc_term){div, d[g], s[g]};
        div *= d[g];
    }
    if (nt > 0) t[nt - 1].mod = 0;
    return nt;
}

/* ---- helper functions
 * ----------------------------------------------------------- */

static bool is_sum(braid_op op) {
    return op == BRAID_OP_SUM || op == BRAID_OP_MEAN;
}

/* sums and products of i32 wrap: they accumulate in unsigned */
static bool wraps(braid_op op) {
    return is_sum(op) || op == BRAID_OP_REDUCE_PROD;
}

static const char *acc_type(braid_op op, braid_dtype t) {
    if (t == BRAID_F64) return "double";
    if (t == BRAID_I32) return wraps(op) ? "unsigned" : "int";
    return "float";
}

static void emit_identity(bc_buf *b, const red_plan *r) {
    if (is_sum(r->op) || r->op == BRAID_OP_REDUCE_PROD) {
        bc_buf_printf(b, "(%s)%d", r->acc, is_sum(r->op) ? 0 : 1);
        return;
    }
    bool max = r->op == BRAID_OP_REDUCE_MAX;
    if (r->in_t == BRAID_I32)
        bc_buf_puts(b, max ? "(int)0x80000000u" : "2147483647");
    else if (r->in_t == BRAID_F64)
        bc_buf_puts(b, max ? "__longlong_as_double(0xfff0000000000000LL)"
                           : "__longlong_as_double(0x7ff0000000000000LL)");
    else
        bc_buf_puts(b, max ? "__int_as_float(0xff800000)"
                           : "__int_as_float(0x7f800000)");
}

/* combine, identity, finish (accumulator → stored output) and a warp
 * shuffle tree, named <entry>_c, _i, _f, _w. */
static void emit_helpers(bc_buf *b, const char *e, const red_plan *r) {
    const char *a = r->acc;
    bc_buf_printf(b,
                  "static __device__ __forceinline__ %s %s_c(%s x, %s y) "
                  "{\n    return ",
                  a, e, a, a);
    if (is_sum(r->op))
        bc_buf_puts(b, "x + y");
    else if (r->op == BRAID_OP_REDUCE_PROD)
        bc_buf_puts(b, "x * y");
    else
        bc_buf_printf(b, "bc_%s%c(x, y)",
                      r->op == BRAID_OP_REDUCE_MAX ? "max" : "min",
                      r->in_t == BRAID_F64   ? 'd'
                      : r->in_t == BRAID_I32 ? 'i'
                                             : 'f');
    bc_buf_printf(b,
                  ";\n}\nstatic __device__ __forceinline__ %s %s_i() {\n"
                  "    return ",
                  a, e);
    emit_identity(b, r);
    bc_buf_printf(b,
                  ";\n}\nstatic __device__ __forceinline__ %s %s_f(%s x) "
                  "{\n",
                  bc_stype(r->out_t), e, a);
    if (r->op == BRAID_OP_MEAN && r->R == 0)
        bc_buf_printf(b, "    (void)x;\n    const %s v = %s;\n", a,
                      r->out_t == BRAID_F64
                          ? "__longlong_as_double(0x7ff8000000000000LL)"
                          : "__int_as_float(0x7fc00000)");
    else if (r->op == BRAID_OP_MEAN)
        bc_buf_printf(b, "    const %s v = x / (%s)%lld;\n", a, a,
                      (long long)r->R);
    else if (r->in_t == BRAID_I32 && wraps(r->op))
        bc_buf_puts(b, "    const int v = (int)x;\n");
    else
        bc_buf_printf(b, "    const %s v = x;\n", a);
    bc_buf_puts(b, "    return ");
    bc_emit_to_storage(b, r->out_t, "v");
    bc_buf_printf(b,
                  ";\n}\nstatic __device__ __forceinline__ %s %s_w(%s x) "
                  "{\n#pragma unroll\n"
                  "    for (int o = 16; o > 0; o >>= 1)\n"
                  "        x = %s_c(x, __shfl_xor_sync(0xffffffffu, x, "
                  "o));\n    return x;\n}\n\n",
                  a, e, a, e);
}

/* "acc = <e>_c(acc, (ACC)<e>_e(kb + rbase(r), in...));" */
static void emit_accumulate(bc_buf *b, const bc_node *c, const red_plan *r,
                            const bc_operand *mode, const char *indent) {
    bc_term t[BRAID_MAX_RANK];
    int nt = group_terms(r->nr, r->rd, r->rs, t);
    bc_buf ix = {0};
    bc_buf_puts(&ix, "kb + ");
    bc_emit_terms(&ix, t, nt, "r", c->idx);
    bc_buf_printf(b, "%sacc = %s_c(acc, (%s)%s_e(", indent, c->entry, r->acc,
                  c->entry);
    if (ix.oom) b->oom = true;
    bc_emit_expr_args(b, c, ix.p ? ix.p : "0", mode, NULL, BG_NONE, NULL);
    bc_buf_free(&ix);
    bc_buf_puts(b, "));\n");
}

static void emit_kbase(bc_buf *b, const bc_node *c, const red_plan *r,
                       const char *indent) {
    bc_term t[BRAID_MAX_RANK];
    int nt = group_terms(r->nk, r->kd, r->ks, t);
    bc_buf_printf(b, "%sconst %s kb = ", indent, c->idx);
    bc_emit_terms(b, t, nt, "o", c->idx);
    bc_buf_puts(b, ";\n");
}

/* The r range of this block: the whole row, or slice s. */
static void emit_range(bc_buf *b, const bc_node *c, const red_plan *r,
                       const char *slice) {
    if (r->split > 1)
        bc_buf_printf(b,
                      "    const %s r0 = (%s)%s * %lld;\n"
                      "    const %s r1 = r0 + %lld < R ? r0 + %lld : R;\n",
                      c->idx, c->idx, slice, (long long)r->chunk, c->idx,
                      (long long)r->chunk, (long long)r->chunk);
    else
        bc_buf_printf(b, "    const %s r0 = 0, r1 = R;\n", c->idx);
}

/* Stores acc for output o: to out, or (split) to the partials. */
static void emit_result(bc_buf *b, const bc_node *c, const red_plan *r,
                        const char *slice, const char *indent) {
    if (r->split > 1)
        bc_buf_printf(b, "%spart[(%s)%s * O + o] = acc;\n", indent, c->idx,
                      slice);
    else
        bc_buf_printf(b, "%sout[o] = %s_f(acc);\n", indent, c->entry);
}

/* ---- kernels
 * -------------------------------------------------------------------- */

static void emit_head(bc_buf *b, const bc_node *c, const red_plan *r,
                      const char *entry, unsigned threads) {
    char extra[64];
    snprintf(extra, sizeof extra, "%s *part", r->acc);
    bc_emit_signature(b, c->plan, c->id, entry, threads,
                      r->split > 1 ? extra : NULL);
    bc_buf_printf(b, "    const %s O = %lld, R = %lld;\n    (void)R;\n", c->idx,
                  (long long)r->O, (long long)r->R);
}

static void emit_thread(bc_buf *b, const bc_node *c, const red_plan *r,
                        const bc_operand *mode) {
    emit_head(b, c, r, c->entry, BC_BLOCK);
    bc_buf_printf(b, "    const %s o = (%s)blockIdx.x * %d + threadIdx.x;\n",
                  c->idx, c->idx, r->bx);
    emit_range(b, c, r, "blockIdx.y");
    bc_buf_printf(b, "    %s acc = %s_i();\n    if (o < O) {\n", r->acc,
                  c->entry);
    emit_kbase(b, c, r, "        ");
    bc_buf_printf(b, "        for (%s r = r0 + threadIdx.y; r < r1; r += %d)\n",
                  c->idx, r->by);
    emit_accumulate(b, c, r, mode, "            ");
    bc_buf_puts(b, "    }\n");
    if (r->by > 1)
        bc_buf_printf(b,
                      "    __shared__ %s sh[%d][%d];\n"
                      "    sh[threadIdx.y][threadIdx.x] = acc;\n"
                      "    __syncthreads();\n"
                      "    if (threadIdx.y != 0) return;\n"
                      "    for (int y = 1; y < %d; y++)\n"
                      "        acc = %s_c(acc, sh[y][threadIdx.x]);\n",
                      r->acc, r->by, r->bx, r->by, c->entry);
    bc_buf_puts(b, "    if (o >= O) return;\n");
    emit_result(b, c, r, "blockIdx.y", "    ");
    bc_buf_puts(b, "}\n\n");
}

static void emit_warp(bc_buf *b, const bc_node *c, const red_plan *r,
                      const bc_operand *mode) {
    emit_head(b, c, r, c->entry, BC_BLOCK);
    bc_buf_printf(b,
                  "    const %s o = (%s)blockIdx.x * %d + (threadIdx.x >> "
                  "5);\n"
                  "    const unsigned lane = threadIdx.x & 31u;\n"
                  "    if (o >= O) return;\n",
                  c->idx, c->idx, BC_BLOCK / 32);
    emit_kbase(b, c, r, "    ");
    bc_buf_printf(b,
                  "    %s acc = %s_i();\n"
                  "    for (%s r = lane; r < R; r += 32)\n",
                  r->acc, c->entry, c->idx);
    emit_accumulate(b, c, r, mode, "        ");
    bc_buf_printf(b, "    acc = %s_w(acc);\n    if (lane != 0) return;\n",
                  c->entry);
    emit_result(b, c, r, "0", "    ");
    bc_buf_puts(b, "}\n\n");
}

static void emit_block(bc_buf *b, const bc_node *c, const red_plan *r,
                       const bc_operand *mode) {
    emit_head(b, c, r, c->entry, (unsigned)r->threads);
    bc_buf_printf(b, "    const %s o = %s;\n", c->idx,
                  r->split > 1 ? "blockIdx.y" : "blockIdx.x");
    emit_range(b, c, r, "blockIdx.x");
    emit_kbase(b, c, r, "    ");
    bc_buf_printf(b,
                  "    %s acc = %s_i();\n"
                  "    for (%s r = r0 + threadIdx.x; r < r1; r += %d)\n",
                  r->acc, c->entry, c->idx, r->threads);
    emit_accumulate(b, c, r, mode, "        ");
    bc_buf_printf(b,
                  "    acc = %s_w(acc);\n"
                  "    __shared__ %s sh[32];\n"
                  "    const unsigned lane = threadIdx.x & 31u, "
                  "w = threadIdx.x >> 5;\n"
                  "    if (lane == 0) sh[w] = acc;\n"
                  "    __syncthreads();\n"
                  "    if (w != 0) return;\n"
                  "    acc = lane < %d ? sh[lane] : %s_i();\n"
                  "    acc = %s_w(acc);\n"
                  "    if (lane != 0) return;\n",
                  c->entry, r->acc, r->threads / 32, c->entry, c->entry);
    emit_result(b, c, r, "blockIdx.x", "    ");
    bc_buf_puts(b, "}\n\n");
}

/* Second launch of a split: each output combines its slices in order. */
static void emit_final(bc_buf *b, const bc_node *c, const red_plan *r,
                       const char *entry) {
    emit_head(b, c, r, entry, BC_BLOCK);
    bc_buf_printf(b,
                  "    const %s o = (%s)blockIdx.x * %d + threadIdx.x;\n"
                  "    if (o >= O) return;\n"
                  "    %s acc = %s_i();\n"
                  "    for (%s s = 0; s < %lld; s++)\n"
                  "        acc = %s_c(acc, part[s * O + o]);\n"
                  "    out[o] = %s_f(acc);\n}\n\n",
                  c->idx, c->idx, BC_BLOCK, r->acc, c->entry, c->idx,
                  (long long)r->split, c->entry, c->entry);
}

static void set_launch(bc_launch *l, const char *entry, int64_t gx, int64_t gy,
                       int bx, int by) {
    snprintf(l->entry, BC_NAME_MAX, "%s", entry);
    l->grid[0] = (uint32_t)(gx > 0 ? gx : 1);
    l->grid[1] = (uint32_t)(gy > 0 ? gy : 1);
    l->grid[2] = 1;
    l->block[0] = (uint32_t)bx;
    l->block[1] = (uint32_t)by;
    l->block[2] = 1;
}

static void fill_launches(const bc_node *c, const red_plan *r, bc_kernel *k) {
    k->nlaunch = r->O > 0 ? 1 : 0;
    if (r->how == RED_THREAD)
        set_launch(&k->launch[0], c->entry, bc_cdiv(r->O, r->bx), r->split,
                   r->bx, r->by);
    else if (r->how == RED_WARP)
        set_launch(&k->launch[0], c->entry, bc_cdiv(r->O, BC_BLOCK / 32), 1,
                   BC_BLOCK, 1);
    else if (r->split > 1)
        set_launch(&k->launch[0], c->entry, r->split, r->O, r->threads, 1);
    else
        set_launch(&k->launch[0], c->entry, r->O, 1, r->threads, 1);
    if (r->split > 1 && r->O > 0) {
        char fin[BC_NAME_MAX];
        snprintf(fin, sizeof fin, "%.24s_final", c->entry);
        set_launch(&k->launch[1], fin, bc_cdiv(r->O, BC_BLOCK), 1, BC_BLOCK, 1);
        k->nlaunch = 2;
        k->extra = BC_EXTRA_SCRATCH;
        size_t asz = strcmp(r->acc, "double") == 0 ? 8 : 4;
        k->scratch_bytes =
            (uint64_t)bc_cdiv(r->split * r->O * (int64_t)asz, 256) * 256;
    }
}

braid_status bc_gen_reduce(const bc_node *c, bc_buf *b, bc_kernel *k) {
    const bp_program *pr = c->prog;
    const bp_instr *last = &pr->instr[pr->ninstr - 1];
    red_plan r;
    memset(&r, 0, sizeof r);
    analyze(pr, &r);
    r.op = last->op;
    r.out_t = last->dtype;
    r.in_t = pr->instr[last->arg[0]].dtype;
    r.acc = acc_type(r.op, r.in_t);
    if (r.O != bg_numel(c->n))
        return bc_fail(c->plan, c->id, BRAID_ERR_INTERNAL,
                       "reduction program keeps %lld elements but the node "
                       "has %lld",
                       (long long)r.O, (long long)bg_numel(c->n));
    if (r.O > (int64_t)BC_GRID_X_MAX)
        return bc_fail(c->plan, c->id, BRAID_ERR_UNSUPPORTED,
                       "%lld outputs are too many for one launch",
                       (long long)r.O);
    choose(&r);
    k->kind = BC_KERNEL_REDUCE;
    bc_operand mode[BC_MAX_PARAMS];
    bc_operands_used(c, last->arg[0], BG_NONE, mode);
    char fn[BC_NAME_MAX + 4];
    snprintf(fn, sizeof fn, "%s_e", c->entry);
    bc_emit_expr_fn(b, c, fn, last->arg[0], mode, BG_NONE, false);
    emit_helpers(b, c->entry, &r);
    if (r.how == RED_THREAD)
        emit_thread(b, c, &r, mode);
    else if (r.how == RED_WARP)
        emit_warp(b, c, &r, mode);
    else
        emit_block(b, c, &r, mode);
    fill_launches(c, &r, k);
    if (r.split > 1) {
        char fin[BC_NAME_MAX];
        snprintf(fin, sizeof fin, "%.24s_final", c->entry);
        emit_final(b, c, &r, fin);
    }
    return BRAID_OK;
}
