/* codegen/softmax.c — the softmax op (BRAID_OP_SOFTMAX): softmax over the
 * last axis of its input x, one kernel. The node comes as a one-load
 * program (bc_node_init), so x is read through the same expression
 * function and vector loads as every kernel; the generator would inline a
 * longer prologue the same way, but the fuse pass fuses nothing into a
 * softmax (docs/fusion.md).
 *
 * A group of T threads owns a row of C elements (T a power of two): a
 * sub-warp group or a warp per row for rows up to 32·32 elements (several
 * rows per 256-thread block), else a block of up to 1024 threads. Thread t
 * of the group handles the 16-byte chunks t, t + T, t + 2T, ... of the row
 * (VEC elements each: 4 f32, 8 f16/bf16, 2 f64), so a warp's accesses are
 * contiguous:
 *   register path (rows whose share is at most 32 elements per thread,
 *     16 with 1024-thread blocks): the row is read once into registers, its max
 * taken (shuffles, then shared memory across warps), e = exp(x - max) computed
 * in place and summed the same way, e / sum written: one read, one write;
 *   online path (longer rows): one pass keeps a running (max, sum of
 *     exp(x - max)) per thread, rescaling the sum when the max grows, the
 *     pairs are combined across the block, and a second pass recomputes
 *     exp(x - max) / sum: two reads, one write.
 * 16-byte loads and stores are used when C is a multiple of VEC and the
 * output and every full-size input are 16-byte aligned (checked at run
 * time, as the elementwise kernels do); otherwise the same mapping runs
 * element by element. f16/bf16 are computed in float and, like the CPU
 * kernel, x - max, exp(·) and the sum are rounded to the dtype;
 * exp is the accurate expf / exp every kernel uses (no fast math); max
 * propagates NaN; an all -inf row gives NaN as the reference does. */
#include "codegen/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements a thread keeps in registers at most (register path). */
#define SM_MAX_REGS 32
/* ... and at most this many with 1024-thread blocks (64 registers). */
#define SM_MAX_REGS_1024 16
/* Elements per thread the block size aims for on long rows. */
#define SM_TARGET 16

typedef struct sm_plan {
    int64_t R, C;     /* rows, row length */
    int vec;          /* elements per 16-byte access of the dtype */
    int64_t nvec;     /* chunks per row: ceil(C / vec) */
    int T;            /* threads per row (power of two ≤ 1024) */
    int rpb;          /* rows per block (T < 64: 256 / T, else 1) */
    int nv;           /* register path: chunks per thread; 0: online */
    bool vec_ok;      /* C % vec == 0: rows start 16-byte aligned */
    braid_dtype t;    /* the dtype (output and x) */
    const char *ct;   /* compute type: float or double */
    const char *one;  /* 1 and 0 in ct */
    const char *zero; /* ... */
    const char *ninf; /* -inf in ct */
    const char *expf; /* expf or exp */
} sm_plan;

static void choose(sm_plan *s) {
    s->nvec = bc_cdiv(s->C, s->vec);
    s->nv = 1;
    if (s->nvec <= 32) {
        s->T = bc_pow2_at_least(s->nvec > 0 ? s->nvec : 1);
    } else if (s->C <= 32 * SM_MAX_REGS) {
        s->T = 32;
        s->nv = (int)bc_cdiv(s->nvec, 32);
    } else {
        s->T = bc_pow2_at_least(bc_cdiv(s->C, SM_TARGET));
        if (s->T < 64) s->T = 64;
        int64_t nv = bc_cdiv(s->nvec, s->T);
        int64_t regs = nv * s->vec;
        if (regs > SM_MAX_REGS || (s->T == 1024 && regs > SM_MAX_REGS_1024)) {
            s->T = 1024;
            s->nv = 0;
        } else {
            s->nv = (int)nv;
        }
    }
    s->rpb = s->T < 64 ? BC_BLOCK / s->T : 1;
}

/* ---- helpers ----------------------------------------------------------------
 */

/* <e>_r (round to the dtype), <e>_x (exp), group shuffles <e>_gmax,
 * <e>_gsum, <e>_gpair over min(T, 32) lanes, and the block-wide versions
 * <e>_bmax, <e>_bsum, <e>_bpair through shared memory when T > 32. */
static void emit_helpers(bc_buf *b, const char *e, const sm_plan *s) {
    const char *ct = s->ct;
    int g = s->T < 32 ? s->T : 32, nw = s->T / 32;
    const char *rnd = s->t == BRAID_F16    ? "bc_rh(x)"
                      : s->t == BRAID_BF16 ? "bc_rb(x)"
                                           : "x";
    bc_buf_printf(b,
                  "static __device__ __forceinline__ %s %s_r(%s x) {\n"
                  "    return %s;\n}\n"
                  "static __device__ __forceinline__ %s %s_x(%s x) {\n"
                  "    return %s(x);\n}\n",
                  ct, e, ct, rnd, ct, e, ct, s->expf);
    /* (m, s) absorbs (m2, s2): sums rescaled to the larger max; equal
     * maxes (also -inf, -inf: both sums are 0) need no exp */
    bc_buf_printf(b,
                  "static __device__ __forceinline__ void %s_pc(%s &m, %s &s, "
                  "%s m2, %s s2) {\n"
                  "    const %s mn = bc_max%c(m, m2);\n"
                  "    s = s * (m == mn ? %s : %s_x(m - mn)) +\n"
                  "        s2 * (m2 == mn ? %s : %s_x(m2 - mn));\n"
                  "    m = mn;\n}\n",
                  e, ct, ct, ct, ct, ct, s->t == BRAID_F64 ? 'd' : 'f', s->one,
                  e, s->one, e);
    bc_buf_printf(
        b,
        "static __device__ __forceinline__ %s %s_gmax(%s x) {\n"
        "#pragma unroll\n"
        "    for (int o = %d; o > 0; o >>= 1)\n"
        "        x = bc_max%c(x, __shfl_xor_sync(0xffffffffu, x, o));\n"
        "    return x;\n}\n"
        "static __device__ __forceinline__ %s %s_gsum(%s x) {\n"
        "#pragma unroll\n"
        "    for (int o = %d; o > 0; o >>= 1)\n"
        "        x = x + __shfl_xor_sync(0xffffffffu, x, o);\n"
        "    return x;\n}\n"
        "static __device__ __forceinline__ void %s_gpair(%s &m, %s "
        "&s) {\n"
        "#pragma unroll\n"
        "    for (int o = %d; o > 0; o >>= 1)\n"
        "        %s_pc(m, s, __shfl_xor_sync(0xffffffffu, m, o),\n"
        "              __shfl_xor_sync(0xffffffffu, s, o));\n}\n",
        ct, e, ct, g / 2, s->t == BRAID_F64 ? 'd' : 'f', ct, e, ct, g / 2, e,
        ct, ct, g / 2, e);
    if (s->T <= 32) {
        bc_buf_puts(b, "\n");
        return;
    }
    bc_buf_printf(b,
                  "static __device__ __forceinline__ %s %s_bmax(%s x, %s *sh) "
                  "{\n"
                  "    x = %s_gmax(x);\n"
                  "    const unsigned lane = threadIdx.x & 31u;\n"
                  "    if (lane == 0) sh[threadIdx.x >> 5] = x;\n"
                  "    __syncthreads();\n"
                  "    return %s_gmax(lane < %d ? sh[lane] : %s);\n}\n"
                  "static __device__ __forceinline__ %s %s_bsum(%s x, %s *sh) "
                  "{\n"
                  "    x = %s_gsum(x);\n"
                  "    const unsigned lane = threadIdx.x & 31u;\n"
                  "    if (lane == 0) sh[threadIdx.x >> 5] = x;\n"
                  "    __syncthreads();\n"
                  "    return %s_gsum(lane < %d ? sh[lane] : %s);\n}\n",
                  ct, e, ct, ct, e, e, nw, s->ninf, ct, e, ct, ct, e, e, nw,
                  s->zero);
    bc_buf_printf(b,
                  "static __device__ __forceinline__ void %s_bpair(%s &m, %s "
                  "&s, %s *shm, %s *shs) {\n"
                  "    %s_gpair(m, s);\n"
                  "    const unsigned lane = threadIdx.x & 31u;\n"
                  "    if (lane == 0) {\n"
                  "        shm[threadIdx.x >> 5] = m;\n"
                  "        shs[threadIdx.x >> 5] = s;\n"
                  "    }\n"
                  "    __syncthreads();\n"
                  "    m = lane < %d ? shm[lane] : %s;\n"
                  "    s = lane < %d ? shs[lane] : %s;\n"
                  "    %s_gpair(m, s);\n}\n\n",
                  e, ct, ct, ct, ct, e, nw, s->ninf, nw, s->zero, e);
}

/* ---- loading x
 * ---------------------------------------------------------------- */

/* Operands: full-size inputs are read at the element's own index (VALUE:
 * vector loads on the fast path), smaller ones broadcast by index
 * arithmetic inside the expression function (POINTER). */
static void classify_operands(const bc_node *c, bc_operand *mode) {
    bc_operands_used(c, c->prog->ninstr - 1, BG_NONE, mode);
    for (uint32_t k = 0; k < c->n->ninputs; k++)
        if (mode[k] == BC_OPERAND_POINTER &&
            bg_numel(bc_input(c, k)) == c->numel && c->numel > 1)
            mode[k] = BC_OPERAND_VALUE;
}

/* Per input: the expression of its VALUE operand's value. */
typedef char sm_name[48];

/* "<dst> = <e>_e(<ix>, ...)": VALUE operand k is a<k>[j] (vector: loaded
 * by emit_vloads) or in<k>[base + c] (element by element). */
static void emit_value(bc_buf *b, const bc_node *c, const bc_operand *mode,
                       const char *dst, const char *ix, bool vector,
                       sm_name *names) {
    const char *vals[BC_MAX_PARAMS];
    memset(vals, 0, sizeof vals);
    for (uint32_t k = 0; k < c->n->ninputs; k++) {
        if (mode[k] != BC_OPERAND_VALUE) continue;
        char e[40];
        if (vector)
            snprintf(e, sizeof e, "a%u[j]", (unsigned)k);
        else
            snprintf(e, sizeof e, "in%u[base + c]", (unsigned)k);
        bc_from_storage_str(bc_input(c, k)->dtype, e, names[k],
                            sizeof names[k]);
        vals[k] = names[k];
    }
    bc_buf_printf(b, "%s = %s_e(", dst, c->entry);
    bc_emit_expr_args(b, c, ix, mode, vals, BG_NONE, NULL);
    bc_buf_puts(b, ");\n");
}

/* Vector loads of chunk q of the row into a<k>[VEC]. */
static void emit_vloads(bc_buf *b, const bc_node *c, const bc_operand *mode,
                        const sm_plan *s, const char *indent) {
    for (uint32_t k = 0; k < c->n->ninputs; k++)
        if (mode[k] == BC_OPERAND_VALUE)
            bc_buf_printf(b,
                          "%s%s a%u[%d];\n"
                          "%sbc_vload(a%u, in%u + base + q * %d);\n",
                          indent, bc_stype(bc_input(c, k)->dtype), (unsigned)k,
                          s->vec, indent, (unsigned)k, (unsigned)k, s->vec);
}

/* The condition for 16-byte accesses: rows aligned, pointers aligned. */
static void emit_vec_flag(bc_buf *b, const bc_node *c, const bc_operand *mode,
                          const sm_plan *s) {
    if (!s->vec_ok) {
        bc_buf_puts(b, "    const bool vec = false;\n");
        return;
    }
    bc_buf_puts(b, "    const bool vec = bc_al16(out)");
    for (uint32_t k = 0; k < c->n->ninputs; k++)
        if (mode[k] == BC_OPERAND_VALUE)
            bc_buf_printf(b, " && bc_al16(in%u)", (unsigned)k);
    bc_buf_puts(b, ";\n");
}

/* ---- the kernels
 * ---------------------------------------------------------------- */

static void emit_head(bc_buf *b, const bc_node *c, const sm_plan *s) {
    unsigned threads = (unsigned)(s->T * s->rpb);
    bc_emit_signature(b, c->plan, c->id, c->entry, threads, NULL);
    const char *ix = c->idx;
    bc_buf_printf(b, "    const %s R = %lld, C = %lld;\n    (void)C;\n", ix,
                  (long long)s->R, (long long)s->C);
    if (s->T < 64)
        bc_buf_printf(b,
                      "    const %s t = threadIdx.x & %du;\n"
                      "    const %s row = (%s)blockIdx.x * %d + threadIdx.x / "
                      "%d;\n",
                      ix, s->T - 1, ix, ix, s->rpb, s->T);
    else
        bc_buf_printf(b,
                      "    const %s t = threadIdx.x;\n"
                      "    const %s row = blockIdx.x;\n"
                      "    __shared__ %s shm[32], shs[32];\n",
                      ix, ix, s->ct);
    bc_buf_printf(b,
                  "    const bool live = row < R;\n"
                  "    const %s base = live ? row * C : 0;\n",
                  ix);
}

/* The register path: read once, max, exp and sum, write. */
static void emit_registers(bc_buf *b, const bc_node *c, const bc_operand *mode,
                           const sm_plan *s, sm_name *names) {
    const char *ix = c->idx, *e = c->entry;
    int n = s->nv * s->vec;
    bool block = s->T >= 64;
    char quot[32], rmax[BC_NAME_MAX + 16], rsum[BC_NAME_MAX + 16];
    snprintf(quot, sizeof quot, "v[k * %d + j] / s", s->vec);
    snprintf(rmax, sizeof rmax, block ? "%s_bmax(m, shm)" : "%s_gmax(m)", e);
    snprintf(rsum, sizeof rsum, block ? "%s_bsum(s, shs)" : "%s_gsum(s)", e);
    emit_head(b, c, s);
    emit_vec_flag(b, c, mode, s);
    bc_buf_printf(b,
                  "    %s v[%d];\n"
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++) {\n"
                  "        const %s q = t + (%s)k * %d;\n"
                  "        if (vec && live && q < %lld) {\n",
                  s->ct, n, s->nv, ix, ix, s->T, (long long)s->nvec);
    emit_vloads(b, c, mode, s, "            ");
    bc_buf_printf(b,
                  "#pragma unroll\n"
                  "            for (int j = 0; j < %d; j++)\n"
                  "                ",
                  s->vec);
    char dst[32];
    snprintf(dst, sizeof dst, "v[k * %d + j]", s->vec);
    char vix[48];
    snprintf(vix, sizeof vix, "base + q * %d + j", s->vec);
    emit_value(b, c, mode, dst, vix, true, names);
    bc_buf_printf(b,
                  "        } else {\n"
                  "#pragma unroll\n"
                  "            for (int j = 0; j < %d; j++) {\n"
                  "                const %s c = q * %d + j;\n"
                  "                v[k * %d + j] = %s;\n"
                  "                if (live && c < C) ",
                  s->vec, ix, s->vec, s->vec, s->ninf);
    emit_value(b, c, mode, dst, "base + c", false, names);
    bc_buf_printf(b,
                  "            }\n"
                  "        }\n"
                  "    }\n"
                  "    %s m = %s;\n"
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++)\n"
                  "        m = bc_max%c(m, v[k]);\n"
                  "    m = %s;\n"
                  "    %s s = %s;\n"
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++)\n"
                  "#pragma unroll\n"
                  "        for (int j = 0; j < %d; j++) {\n"
                  "            const %s ev = %s_r(%s_x(%s_r(v[k * %d + j] - "
                  "m)));\n"
                  "            v[k * %d + j] = ev;\n"
                  "            if ((t + (%s)k * %d) * %d + j < C) s += ev;\n"
                  "        }\n"
                  "    s = %s_r(%s);\n"
                  "    if (!live) return;\n",
                  s->ct, s->ninf, n, s->t == BRAID_F64 ? 'd' : 'f', rmax, s->ct,
                  s->zero, s->nv, s->vec, s->ct, e, e, e, s->vec, s->vec, ix,
                  s->T, s->vec, e, rsum);
    bc_buf_printf(b,
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++) {\n"
                  "        const %s q = t + (%s)k * %d;\n"
                  "        if (vec && q < %lld) {\n"
                  "            %s r[%d];\n"
                  "#pragma unroll\n"
                  "            for (int j = 0; j < %d; j++)\n"
                  "                r[j] = ",
                  s->nv, ix, ix, s->T, (long long)s->nvec, bc_stype(s->t),
                  s->vec, s->vec);
    bc_emit_to_storage(b, s->t, quot);
    bc_buf_printf(b,
                  ";\n"
                  "            bc_vstore(out + base + q * %d, r);\n"
                  "        } else {\n"
                  "#pragma unroll\n"
                  "            for (int j = 0; j < %d; j++) {\n"
                  "                const %s c = q * %d + j;\n"
                  "                if (c < C) out[base + c] = ",
                  s->vec, s->vec, ix, s->vec);
    bc_emit_to_storage(b, s->t, quot);
    bc_buf_puts(b, ";\n            }\n        }\n    }\n}\n\n");
}

/* The online path: running (max, sum) pairs, combined, then the write. */
static void emit_online(bc_buf *b, const bc_node *c, const bc_operand *mode,
                        const sm_plan *s, sm_name *names) {
    const char *ix = c->idx, *e = c->entry, *ct = s->ct;
    char vix[48], dst[3 * BC_NAME_MAX + 32];
    snprintf(vix, sizeof vix, "base + q * %d + j", s->vec);
    emit_head(b, c, s);
    emit_vec_flag(b, c, mode, s);
    bc_buf_printf(b,
                  "    %s m = %s, s = %s;\n"
                  "    if (vec) {\n"
                  "        for (%s q = t; q < %lld; q += %d) {\n",
                  ct, s->ninf, s->zero, ix, (long long)s->nvec, s->T);
    emit_vloads(b, c, mode, s, "            ");
    bc_buf_printf(b,
                  "            %s x[%d];\n"
                  "#pragma unroll\n"
                  "            for (int j = 0; j < %d; j++)\n"
                  "                ",
                  ct, s->vec, s->vec);
    emit_value(b, c, mode, "x[j]", vix, true, names);
    bc_buf_printf(
        b,
        "            %s mc = m;\n"
        "#pragma unroll\n"
        "            for (int j = 0; j < %d; j++)\n"
        "                mc = bc_max%c(mc, x[j]);\n"
        "            if (mc != %s) {\n"
        "                %s acc = s * (m == mc ? %s : %s_x(m - mc));\n"
        "#pragma unroll\n"
        "                for (int j = 0; j < %d; j++)\n"
        "                    acc += %s_x(x[j] - mc);\n"
        "                s = acc;\n"
        "            }\n"
        "            m = mc;\n"
        "        }\n"
        "    } else {\n"
        "        for (%s c = t; c < C; c += %d) {\n"
        "            %s x;\n"
        "            ",
        ct, s->vec, s->t == BRAID_F64 ? 'd' : 'f', s->ninf, ct, s->one, e,
        s->vec, e, ix, s->T, ct);
    emit_value(b, c, mode, "x", "base + c", false, names);
    bc_buf_printf(b,
                  "            const %s mc = bc_max%c(m, x);\n"
                  "            if (mc != %s)\n"
                  "                s = s * (m == mc ? %s : %s_x(m - mc)) + "
                  "%s_x(x - mc);\n"
                  "            m = mc;\n"
                  "        }\n"
                  "    }\n"
                  "    %s_bpair(m, s, shm, shs);\n"
                  "    s = %s_r(s);\n"
                  "    if (vec) {\n"
                  "        for (%s q = t; q < %lld; q += %d) {\n",
                  ct, s->t == BRAID_F64 ? 'd' : 'f', s->ninf, s->one, e, e, e,
                  e, ix, (long long)s->nvec, s->T);
    emit_vloads(b, c, mode, s, "            ");
    bc_buf_printf(b,
                  "            %s r[%d];\n"
                  "#pragma unroll\n"
                  "            for (int j = 0; j < %d; j++) {\n"
                  "                %s x;\n"
                  "                ",
                  bc_stype(s->t), s->vec, s->vec, ct);
    emit_value(b, c, mode, "x", vix, true, names);
    snprintf(dst, sizeof dst, "%s_r(%s_x(%s_r(x - m))) / s", e, e, e);
    bc_buf_puts(b, "                r[j] = ");
    bc_emit_to_storage(b, s->t, dst);
    bc_buf_printf(b,
                  ";\n"
                  "            }\n"
                  "            bc_vstore(out + base + q * %d, r);\n"
                  "        }\n"
                  "    } else {\n"
                  "        for (%s c = t; c < C; c += %d) {\n"
                  "            %s x;\n"
                  "            ",
                  s->vec, ix, s->T, ct);
    emit_value(b, c, mode, "x", "base + c", false, names);
    bc_buf_puts(b, "            out[base + c] = ");
    bc_emit_to_storage(b, s->t, dst);
    bc_buf_puts(b, ";\n        }\n    }\n}\n\n");
}

/* ---- entry
 * -------------------------------------------------------------------- */

static void init_plan(sm_plan *s, const bc_node *c) {
    const bp_program *pr = c->prog;
    memset(s, 0, sizeof *s);
    s->t = c->n->dtype;
    s->C = pr->dims[pr->rank - 1];
    s->R = 1;
    for (int d = 0; d + 1 < pr->rank; d++)
        s->R *= pr->dims[d];
    s->vec = (int)(16 / braid_dtype_size(s->t));
    s->vec_ok = s->C % s->vec == 0;
    bool f64 = s->t == BRAID_F64;
    s->ct = f64 ? "double" : "float";
    s->one = f64 ? "1.0" : "1.0f";
    s->zero = f64 ? "0.0" : "0.0f";
    s->ninf = f64 ? "__longlong_as_double(0xfff0000000000000LL)"
                  : "__int_as_float(0xff800000)";
    s->expf = f64 ? "exp" : "expf";
    choose(s);
}

braid_status bc_gen_softmax(const bc_node *c, bc_buf *b, bc_kernel *k) {
    const bp_program *pr = c->prog;
    k->kind = BC_KERNEL_SOFTMAX; /* the builder and bp_verify: a float x of
                                    the node's shape, rank ≥ 1 */
    sm_plan s;
    init_plan(&s, c);
    int64_t blocks = bc_cdiv(s.R, s.rpb);
    if (blocks > (int64_t)BC_GRID_X_MAX)
        return bc_fail(c->plan, c->id, BRAID_ERR_UNSUPPORTED,
                       "%lld rows are too many for one launch", (long long)s.R);
    bc_operand mode[BC_MAX_PARAMS];
    classify_operands(c, mode);
    char fn[BC_NAME_MAX + 4];
    snprintf(fn, sizeof fn, "%s_e", c->entry);
    bc_emit_expr_fn(b, c, fn, pr->ninstr - 1, mode, BG_NONE, false);
    emit_helpers(b, c->entry, &s);
    sm_name *names = calloc(BC_MAX_PARAMS, sizeof *names);
    if (!names)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "codegen: out of memory");
    if (s.nv > 0)
        emit_registers(b, c, mode, &s, names);
    else
        emit_online(b, c, mode, &s, names);
    free(names);
    k->nlaunch = c->numel > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", c->entry);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = (uint32_t)(s.T * s.rpb);
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
    return BRAID_OK;
}
