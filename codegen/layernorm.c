/* codegen/layernorm.c — the layer_norm op (BRAID_OP_LAYER_NORM): each row
 * of x along the last axis normalised, y = (x - mean) · rsqrt(var + eps) ·
 * gamma + beta, one kernel. Inputs: in0 = x, in1 = gamma [C], in2 = beta
 * [C]; nothing is fused into it (docs/fusion.md).
 *
 * A group of T threads owns a row of C elements (T a power of two), as in
 * codegen/softmax.c: a sub-warp group or a warp per row for rows up to
 * 32·32 elements (several rows per 256-thread block), else a block of up
 * to 1024 threads; when the rows are too few to fill the GPU, a row's group
 * is widened (up to a block) so that more warps share the work. Thread t handles elements t, t + T, t + 2T, ... of the
 * row, so a warp's accesses are contiguous:
 *   register path (at most LN_MAX_REGS elements per thread, 16 with
 *     1024-thread blocks): the row is read once into registers; the mean
 *     is their sum (shuffles, then shared memory across warps) / C, the
 *     variance the sum of (x - mean)² over the registers / C — two passes
 *     over registers, so no cancellation — and the output is written from
 *     the registers: one read, one write;
 *   long rows: the same two statistics each by a pass over x in memory,
 *     then the writing pass: three reads, one write.
 * Sums are float (double for f64), so they may differ from the CPU's
 * double sums by rounding. f16/bf16 are computed in float and, like the
 * CPU kernel and the softmax kernel, each step is rounded to the dtype: the
 * mean, x - mean, its square, the variance, var + eps, the rsqrt (1 /
 * sqrt, as the rsqrt op), (x - mean)·rsqrt, ·gamma, +beta. */
#include "codegen/internal.h"

#include <stdio.h>

/* Elements a thread keeps in registers at most (register path). */
#define LN_MAX_REGS 32
/* ... and at most this many with 1024-thread blocks. */
#define LN_MAX_REGS_1024 16
/* Elements per thread the block size aims for on long rows. */
#define LN_TARGET 16
/* Warps a launch aims for before widening a row's group (about 8 per
 * SM of a 132-SM H100/H200), and the fewest elements a widened group's
 * threads keep each. */
#define LN_WARPS_WANTED 1024
#define LN_MIN_PER_THREAD 2

typedef struct ln_plan {
    int64_t R, C;   /* rows, row length */
    int T;          /* threads per row (power of two ≤ 1024) */
    int rpb;        /* rows per block (T < 64: 256 / T, else 1) */
    int nv;         /* register path: elements per thread; 0: long rows */
    braid_dtype t;  /* the dtype */
    const char *ct; /* compute type: float or double */
    const char *e;  /* the entry name (helpers' prefix) */
} ln_plan;

static void choose(ln_plan *s) {
    if (s->C <= 32) {
        s->T = bc_pow2_at_least(s->C > 0 ? s->C : 1);
        s->nv = 1;
    } else if (s->C <= 32 * LN_MAX_REGS) {
        s->T = 32;
        s->nv = (int)bc_cdiv(s->C, 32);
    } else {
        s->T = bc_pow2_at_least(bc_cdiv(s->C, LN_TARGET));
        if (s->T < 64) s->T = 64;
        int64_t nv = bc_cdiv(s->C, s->T);
        if (nv > LN_MAX_REGS || (s->T == 1024 && nv > LN_MAX_REGS_1024)) {
            s->T = 1024;
            s->nv = 0;
        } else {
            s->nv = (int)nv;
        }
    }
    /* Few rows (GPT-2's 128 tokens of 768): a warp per row would leave
     * most of the GPU idle, each warp walking 24 elements. Widen the group
     * (block sums through shared memory) until about LN_WARPS_WANTED warps
     * run or each thread holds LN_MIN_PER_THREAD elements. */
    while (s->nv > 0 && s->T >= 32 && s->T < 1024 &&
           s->R * (s->T / 32) < LN_WARPS_WANTED &&
           bc_cdiv(s->C, 2 * s->T) >= LN_MIN_PER_THREAD) {
        s->T *= 2;
        s->nv = (int)bc_cdiv(s->C, s->T);
    }
    s->rpb = s->T < 64 ? BC_BLOCK / s->T : 1;
}

/* <e>_r (round to the dtype), <e>_gsum (a sum over the group's min(T, 32)
 * lanes) and, for T > 32, <e>_bsum (over the block through shared memory;
 * every thread gets the total). */
static void emit_helpers(bc_buf *b, const ln_plan *s) {
    const char *ct = s->ct, *e = s->e;
    int g = s->T < 32 ? s->T : 32;
    const char *rnd = s->t == BRAID_F16    ? "bc_rh(x)"
                      : s->t == BRAID_BF16 ? "bc_rb(x)"
                                           : "x";
    bc_buf_printf(b,
                  "static __device__ __forceinline__ %s %s_r(%s x) {\n"
                  "    return %s;\n}\n"
                  "static __device__ __forceinline__ %s %s_gsum(%s x) {\n"
                  "#pragma unroll\n"
                  "    for (int o = %d; o > 0; o >>= 1)\n"
                  "        x = x + __shfl_xor_sync(0xffffffffu, x, o);\n"
                  "    return x;\n}\n",
                  ct, e, ct, rnd, ct, e, ct, g / 2);
    if (s->T > 32)
        bc_buf_printf(b,
                      "static __device__ __forceinline__ %s %s_bsum(%s x, "
                      "%s *sh) {\n"
                      "    x = %s_gsum(x);\n"
                      "    const unsigned lane = threadIdx.x & 31u;\n"
                      "    __syncthreads();\n"
                      "    if (lane == 0) sh[threadIdx.x >> 5] = x;\n"
                      "    __syncthreads();\n"
                      "    return %s_gsum(lane < %d ? sh[lane] : (%s)0);\n}\n",
                      ct, e, ct, ct, e, e, s->T / 32, ct);
    bc_buf_puts(b, "\n");
}

/* The group-wide sum of the ct variable v, into v. */
static void emit_sum(bc_buf *b, const ln_plan *s, const char *v) {
    if (s->T > 32)
        bc_buf_printf(b, "    %s = %s_bsum(%s, sh);\n", v, s->e, v);
    else
        bc_buf_printf(b, "    %s = %s_gsum(%s);\n", v, s->e, v);
}

/* Element c of tensor in<k> in the compute type, into buf. */
static const char *load(const ln_plan *s, int k, const char *at, char *buf,
                        size_t size) {
    char e[64];
    snprintf(e, sizeof e, "in%d[%s]", k, at);
    bc_from_storage_str(s->t, e, buf, size);
    return buf;
}

/* After mu and var: rs, then "out[base + c] = ..." of value d (x - mu,
 * rounded) for the element c. */
static void emit_store(bc_buf *b, const ln_plan *s, const char *indent,
                       const char *d) {
    char g[96], be[96], y[512];
    load(s, 1, "c", g, sizeof g);
    load(s, 2, "c", be, sizeof be);
    snprintf(y, sizeof y, "%s_r(%s_r(%s * rs) * %s) + %s", s->e, s->e, d, g,
             be);
    bc_buf_printf(b, "%sout[base + c] = ", indent);
    bc_emit_to_storage(b, s->t, y);
    bc_buf_puts(b, ";\n");
}

static void emit_head(bc_buf *b, const bp_plan *p, uint32_t id,
                      const ln_plan *s, double eps) {
    unsigned threads = (unsigned)(s->T * s->rpb);
    bc_emit_signature(b, p, id, BC_ENTRY, threads, NULL);
    bc_buf_printf(b, "    const long long R = %lldLL, C = %lldLL;\n",
                  (long long)s->R, (long long)s->C);
    if (s->T < 64)
        bc_buf_printf(b,
                      "    const long long t = threadIdx.x & %du;\n"
                      "    const long long row = (long long)blockIdx.x * %d + "
                      "threadIdx.x / %d;\n",
                      s->T - 1, s->rpb, s->T);
    else
        bc_buf_printf(b,
                      "    const long long t = threadIdx.x;\n"
                      "    const long long row = blockIdx.x;\n"
                      "    __shared__ %s sh[32];\n",
                      s->ct);
    /* eps as the dtype's literal, then in the compute type */
    bc_buf_printf(b,
                  "    const bool live = row < R;\n"
                  "    const long long base = live ? row * C : 0;\n"
                  "    const %s eps = %s_r((%s)",
                  s->ct, s->e, s->ct);
    bc_emit_literal(b, s->t == BRAID_F64 ? BRAID_F64 : BRAID_F32, eps);
    bc_buf_puts(b, ");\n");
}

/* The register path. */
static void emit_registers(bc_buf *b, const ln_plan *s) {
    const char *ct = s->ct, *e = s->e;
    char x[96];
    load(s, 0, "base + c", x, sizeof x);
    bc_buf_printf(b,
                  "    %s v[%d];\n"
                  "    %s m = (%s)0;\n"
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++) {\n"
                  "        const long long c = t + (long long)k * %d;\n"
                  "        v[k] = live && c < C ? %s : (%s)0;\n"
                  "        m += v[k];\n"
                  "    }\n",
                  ct, s->nv, ct, ct, s->nv, s->T, x, ct);
    emit_sum(b, s, "m");
    bc_buf_printf(b,
                  "    m = %s_r(m / (%s)C);\n"
                  "    %s q = (%s)0;\n"
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++) {\n"
                  "        const long long c = t + (long long)k * %d;\n"
                  "        v[k] = %s_r(v[k] - m);\n"
                  "        if (c < C) q += %s_r(v[k] * v[k]);\n"
                  "    }\n",
                  e, ct, ct, ct, s->nv, s->T, e, e);
    emit_sum(b, s, "q");
    bc_buf_printf(b,
                  "    const %s rs = %s_r((%s)1 / sqrt(%s_r(%s_r(q / (%s)C) + "
                  "eps)));\n"
                  "    if (!live) return;\n"
                  "#pragma unroll\n"
                  "    for (int k = 0; k < %d; k++) {\n"
                  "        const long long c = t + (long long)k * %d;\n"
                  "        if (c < C) {\n",
                  ct, e, ct, e, e, ct, s->nv, s->T);
    emit_store(b, s, "            ", "v[k]");
    bc_buf_puts(b, "        }\n    }\n}\n\n");
}

/* Long rows: mean, variance, write — each a pass over x in memory. */
static void emit_long(bc_buf *b, const ln_plan *s) {
    const char *ct = s->ct, *e = s->e;
    char x[96];
    load(s, 0, "base + c", x, sizeof x);
    bc_buf_printf(b,
                  "    %s m = (%s)0;\n"
                  "    if (live)\n"
                  "        for (long long c = t; c < C; c += %d)\n"
                  "            m += %s;\n",
                  ct, ct, s->T, x);
    emit_sum(b, s, "m");
    bc_buf_printf(b,
                  "    m = %s_r(m / (%s)C);\n"
                  "    %s q = (%s)0;\n"
                  "    if (live)\n"
                  "        for (long long c = t; c < C; c += %d) {\n"
                  "            const %s d = %s_r(%s - m);\n"
                  "            q += %s_r(d * d);\n"
                  "        }\n",
                  e, ct, ct, ct, s->T, ct, e, x, e);
    emit_sum(b, s, "q");
    bc_buf_printf(b,
                  "    const %s rs = %s_r((%s)1 / sqrt(%s_r(%s_r(q / (%s)C) + "
                  "eps)));\n"
                  "    if (!live) return;\n"
                  "    for (long long c = t; c < C; c += %d) {\n"
                  "        const %s d = %s_r(%s - m);\n",
                  ct, e, ct, e, e, ct, s->T, ct, e, x);
    emit_store(b, s, "        ", "d");
    bc_buf_puts(b, "    }\n}\n\n");
}

braid_status bc_gen_layer_norm(const bp_plan *p, uint32_t id, bc_buf *b,
                               bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    k->kind = BC_KERNEL_LAYER_NORM;
    if (n->op != BRAID_OP_LAYER_NORM || n->ninputs != 3 || n->rank == 0 ||
        !braid_dtype_is_float(n->dtype))
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "malformed layer_norm");
    ln_plan s = {0};
    s.t = n->dtype;
    s.C = n->dims[n->rank - 1];
    s.R = s.C > 0 ? bg_numel(n) / s.C : 0;
    s.ct = s.t == BRAID_F64 ? "double" : "float";
    s.e = BC_ENTRY;
    choose(&s);
    int64_t blocks = bc_cdiv(s.R, s.rpb);
    if (blocks > (int64_t)BC_GRID_X_MAX)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%lld rows are too many for one launch", (long long)s.R);
    emit_helpers(b, &s);
    emit_head(b, p, id, &s, n->attr.value[0]);
    if (s.nv > 0)
        emit_registers(b, &s);
    else
        emit_long(b, &s);
    k->nlaunch = bg_numel(n) > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", BC_ENTRY);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = (uint32_t)(s.T * s.rpb);
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
    return BRAID_OK;
}
