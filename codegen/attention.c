/* codegen/attention.c — the attention op (BRAID_KIND_ATTENTION,
 * graph/attention.h) as one kernel, flash-attention style: the S×T scores
 * never reach memory. Inputs: in0 = q [B,S,H,D], in1 = k, in2 = v
 * [B,T,H,D], in3 = the additive mask (broadcast strides over [B,H,S,T]
 * baked in as constants), when present.
 *
 * Grid (ceil(S / QT), H, B): a block owns QT query rows of one (b, h);
 * a group of G lanes (a power of two inside a warp: 8, 16 past D = 128,
 * a whole warp when the rows are too few to fill the GPU) owns one query row,
 * lane g holding elements g, g + G, ... of q (scaled by scale) and of
 * the unnormalised output acc in registers (E = ceil(D / G) each). The
 * block walks the keys in tiles of KT rows: k and v tiles are staged in
 * shared memory in the compute type (width E·G, zero-padded past D), then
 * each group takes the tile in chunks of AT_CH keys: a score is the
 * lanes' partial dot products summed by xor-shuffles (every lane gets it),
 * plus the mask, -inf past T or (causal) past the diagonal; the chunk's
 * max m' rescales the running sum l and acc by exp(m - m'), then p =
 * exp(s - m') adds to l and p·v to acc (the online softmax). The output
 * is acc / l, or 0 when l is 0 (a fully masked row). Causal blocks stop
 * at the tile holding their last row's diagonal.
 *
 * Few rows of at most 64 elements (GPT-2 small's prefill: 12 heads × 128
 * rows of 64) take the key-parallel form instead: a warp owns one query
 * row, held whole in every lane's registers, and each lane scores its own
 * key of a 32-key chunk (a dot product over the staged k row, read as
 * float4 from rows padded to avoid bank conflicts); one max and the
 * rescale per chunk rather than per key, the probabilities broadcast by
 * shuffles into p·v, each lane owning output elements lane, lane + 32 and
 * its part of the running sum l, summed once at the end. The
 * row-per-group form spends five shuffles per key on every score. The
 * key-parallel form is bound by latency, not arithmetic (a block holds
 * 4 rows): f32 tiles whose strides allow it are staged as float4 when
 * k's and v's addresses are 16-byte aligned (a uniform branch at run
 * time), the staging loops unrolled so that loads overlap, and the dot
 * product and p·v keep four and two independent sums instead of one
 * dependent chain (GPT-2 small's attention on the H200: 21.0 → 16.8 µs
 * from the float4 staging alone, profiled).
 *
 * Compute type: float for f32/f16/bf16, double for f64; f16/bf16 round
 * once, at the store. Shared memory is static (≤ AT_SMEM bytes), as
 * codegen.h requires. */
#include "codegen/internal.h"
#include "graph/attention.h"
#include "passes/layout.h"

#include <stdio.h>

#define AT_SMEM 40960 /* bytes of the two staged tiles at most */
#define AT_CH 8       /* keys per online-softmax step */
#define AT_BLOCKS 264 /* blocks a launch aims for (two per SM of an H100) */
/* Lanes (at 8 per row) below which a row gets a whole warp: 4 warps of
 * 8-lane groups per SM of a 132-SM GPU or fewer. */
#define AT_FEW_LANES (132 * 4 * 32 * 8)

typedef struct at_plan {
    bg_attn_geom a;
    braid_dtype t;
    const char *ct;   /* compute type */
    int G, E, QT, KT; /* lanes per row, elements per lane, rows and keys
                         per block */
    int64_t qblocks;  /* ceil(S / QT) */
    bool kp;          /* the key-parallel form (G = 32: a warp per row) */
    int DP;           /* kp: padded width of a staged k row (float4) */
} at_plan;

static void choose(at_plan *s) {
    s->G = s->a.D > 128 ? 16 : 8;
    /* Few rows (GPT-2 small's prefill: 12 heads x 128 rows = 1536): with 8
     * lanes a row that is 384 warps for 132 SMs, each warp walking every
     * key of its 4 rows — 75 us per attention on the H200. A whole warp
     * per row gives 4x the warps in flight (5 shuffles per score instead
     * of 3). */
    if (s->a.D <= 128 && s->a.B * s->a.H * s->a.S * 8 < AT_FEW_LANES)
        s->G = 32;
    s->kp = s->G == 32 && s->a.D <= 64 && s->t != BRAID_F64;
    s->DP = (int)(bc_cdiv(s->a.D > 0 ? s->a.D : 1, 4) * 4) + 4;
    s->E = (int)bc_cdiv(s->a.D > 0 ? s->a.D : 1, s->G);
    size_t csz = s->t == BRAID_F64 ? 8 : 4;
    int64_t kt = AT_SMEM / (2 * (int64_t)csz * s->E * s->G);
    s->KT = 64;
    while (!s->kp && s->KT > AT_CH && s->KT > kt)
        s->KT /= 2; /* kp: 64 keys of at most 68 + 64 floats fit */
    s->QT = 32;
    while (s->QT > 4 && s->a.B * s->a.H * bc_cdiv(s->a.S, s->QT) < AT_BLOCKS)
        s->QT /= 2;
    s->qblocks = bc_cdiv(s->a.S, s->QT);
}

/* What both forms start with: the sizes, then `decls` (the form's shared
 * tiles and `tid`), the block's (h, b), this thread's query row i
 * (row_in_block: its index within the block's QT rows), whether it
 * exists, the offsets of its q and output rows, scale and -inf in the
 * compute type. */
static void emit_row_setup(bc_buf *b, const at_plan *s, const char *decls,
                           const char *row_in_block) {
    const bg_attn_geom *a = &s->a;
    const char *ct = s->ct;
    bc_buf_printf(b,
                  "    const long long S = %lldLL, T = %lldLL, H = %lldLL, "
                  "D = %lldLL;\n"
                  "%s"
                  "    const long long h = blockIdx.y, b = blockIdx.z;\n"
                  "    const long long i = (long long)blockIdx.x * %d + %s;\n"
                  "    const bool live = i < S;\n"
                  "    const long long qo = b * %lldLL + (live ? i : 0) * "
                  "%lldLL + h * %lldLL;\n"
                  "    const long long oo = ((b * S + (live ? i : 0)) * H + h) "
                  "* D;\n"
                  "    const %s scale = (%s)",
                  (long long)a->S, (long long)a->T, (long long)a->H,
                  (long long)a->D, decls, s->QT, row_in_block,
                  (long long)a->st[0][0], (long long)a->st[0][1],
                  (long long)a->st[0][2], ct, ct);
    bc_emit_literal(b, s->t == BRAID_F64 ? BRAID_F64 : BRAID_F32, a->scale);
    bc_buf_printf(b, ";\n    const %s ninf = %s;\n", ct,
                  s->t == BRAID_F64
                      ? "__longlong_as_double(0xfff0000000000000ULL)"
                      : "__int_as_float(0xff800000)");
}

/* The last key block blockIdx.x's rows need: its last row's diagonal when
 * causal, else T. */
static void emit_jend(bc_buf *b, const at_plan *s) {
    if (s->a.causal)
        bc_buf_printf(b,
                      "    long long jend = (long long)blockIdx.x * %d + %d;\n"
                      "    if (jend > T) jend = T;\n",
                      s->QT, s->QT);
    else
        bc_buf_puts(b, "    const long long jend = T;\n");
}

static void emit_head(bc_buf *b, const bp_plan *p, uint32_t id,
                      const at_plan *s) {
    const char *ct = s->ct;
    int W = s->E * s->G;
    char ld[96], row[32], decls[160];
    bc_emit_signature(b, p, id, BC_ENTRY, (unsigned)(s->QT * s->G), NULL);
    snprintf(decls, sizeof decls,
             "    __shared__ %s ks[%d][%d], vs[%d][%d];\n"
             "    const int tid = threadIdx.x, g = tid & %d;\n",
             ct, s->KT, W, s->KT, W, s->G - 1);
    snprintf(row, sizeof row, "tid / %d", s->G);
    emit_row_setup(b, s, decls, row);
    bc_from_storage_str(s->t, "in0[qo + d]", ld, sizeof ld);
    bc_buf_printf(b,
                  "    %s q[%d], acc[%d], m = ninf, l = (%s)0;\n"
                  "#pragma unroll\n"
                  "    for (int e = 0; e < %d; e++) {\n"
                  "        const long long d = g + %d * e;\n"
                  "        q[e] = live && d < D ? (%s)%s * scale : (%s)0;\n"
                  "        acc[e] = (%s)0;\n"
                  "    }\n",
                  ct, s->E, s->E, ct, s->E, s->G, ct, ld, ct, ct);
    emit_jend(b, s);
}

/* Staging of the k and v tile starting at key j0. */
static void emit_stage(bc_buf *b, const at_plan *s) {
    int W = s->E * s->G, NT = s->QT * s->G;
    const bg_attn_geom *a = &s->a;
    char lk[96], lv[96];
    bc_from_storage_str(s->t, "in1[ko]", lk, sizeof lk);
    bc_from_storage_str(s->t, "in2[vo]", lv, sizeof lv);
    bc_buf_printf(
        b,
        "        __syncthreads();\n"
        "        for (int x = tid; x < %d; x += %d) {\n"
        "            const int jj = x / %d, d = x %% %d;\n"
        "            const long long j = j0 + jj;\n"
        "            %s kv = (%s)0, vv = (%s)0;\n"
        "            if (j < T && d < D) {\n"
        "                const long long ko = b * %lldLL + j * %lldLL "
        "+ h * %lldLL + d;\n"
        "                const long long vo = b * %lldLL + j * %lldLL "
        "+ h * %lldLL + d;\n"
        "                kv = %s;\n"
        "                vv = %s;\n"
        "            }\n"
        "            ks[jj][d] = kv;\n"
        "            vs[jj][d] = vv;\n"
        "        }\n"
        "        __syncthreads();\n",
        s->KT * W, NT, W, W, s->ct, s->ct, s->ct, (long long)a->st[1][0],
        (long long)a->st[1][1], (long long)a->st[1][2], (long long)a->st[2][0],
        (long long)a->st[2][1], (long long)a->st[2][2], lk, lv);
}

/* After a score p of key j (-inf already when j >= T): the additive mask
 * read through its broadcast strides, -inf above the diagonal when causal;
 * each line starts with indent. */
static void emit_mask(bc_buf *b, const at_plan *s, const char *indent) {
    const bg_attn_geom *a = &s->a;
    if (a->has_mask) {
        char at[160], ld[224];
        snprintf(at, sizeof at,
                 "in3[b * %lldLL + h * %lldLL + (live ? i : 0) * %lldLL + j * "
                 "%lldLL]",
                 (long long)a->mst[0], (long long)a->mst[1],
                 (long long)a->mst[2], (long long)a->mst[3]);
        bc_from_storage_str(s->t, at, ld, sizeof ld);
        bc_buf_printf(b, "%selse p += (%s)%s;\n", indent, s->ct, ld);
    }
    if (a->causal) bc_buf_printf(b, "%sif (j > i) p = ninf;\n", indent);
}

/* The score of key jj of the tile into p (every lane of the group). */
static void emit_score(bc_buf *b, const at_plan *s) {
    bc_buf_printf(b,
                  "                %s p = (%s)0;\n"
                  "#pragma unroll\n"
                  "                for (int e = 0; e < %d; e++)\n"
                  "                    p += q[e] * ks[jj][g + %d * e];\n"
                  "#pragma unroll\n"
                  "                for (int o = %d; o > 0; o >>= 1)\n"
                  "                    p += __shfl_xor_sync(0xffffffffu, p, "
                  "o);\n"
                  "                const long long j = j0 + jj;\n"
                  "                if (j >= T) p = ninf;\n",
                  s->ct, s->ct, s->E, s->G, s->G / 2);
    emit_mask(b, s, "                ");
}

static void emit_body(bc_buf *b, const at_plan *s) {
    const char *ct = s->ct;
    bc_buf_printf(b, "    for (long long j0 = 0; j0 < jend; j0 += %d) {\n",
                  s->KT);
    emit_stage(b, s);
    bc_buf_printf(b,
                  "        for (int c0 = 0; c0 < %d && j0 + c0 < jend; c0 += "
                  "%d) {\n"
                  "            %s sc[%d], mt = ninf;\n"
                  "#pragma unroll\n"
                  "            for (int u = 0; u < %d; u++) {\n"
                  "                const int jj = c0 + u;\n",
                  s->KT, AT_CH, ct, AT_CH, AT_CH);
    emit_score(b, s);
    bc_buf_printf(b,
                  "                sc[u] = p;\n"
                  "                mt = p > mt ? p : mt;\n"
                  "            }\n"
                  "            if (mt == ninf) continue;\n"
                  "            const %s mn = m > mt ? m : mt;\n"
                  "            const %s al = m == ninf ? (%s)0 : "
                  "exp(m - mn);\n"
                  "            l *= al;\n"
                  "#pragma unroll\n"
                  "            for (int e = 0; e < %d; e++)\n"
                  "                acc[e] *= al;\n"
                  "#pragma unroll\n"
                  "            for (int u = 0; u < %d; u++) {\n"
                  "                const %s pu = exp(sc[u] - mn);\n"
                  "                l += pu;\n"
                  "#pragma unroll\n"
                  "                for (int e = 0; e < %d; e++)\n"
                  "                    acc[e] += pu * vs[c0 + u][g + %d * e];\n"
                  "            }\n"
                  "            m = mn;\n"
                  "        }\n"
                  "    }\n",
                  ct, ct, ct, s->E, AT_CH, ct, s->E, s->G);
    bc_buf_printf(b,
                  "    if (!live) return;\n"
                  "    const %s inv = l > (%s)0 ? (%s)1 / l : (%s)0;\n"
                  "#pragma unroll\n"
                  "    for (int e = 0; e < %d; e++) {\n"
                  "        const long long d = g + %d * e;\n"
                  "        if (d < D) out[oo + d] = ",
                  ct, ct, ct, ct, s->E, s->G);
    bc_emit_to_storage(b, s->t, "acc[e] * inv");
    bc_buf_puts(b, ";\n    }\n}\n\n");
}

/* ---- the key-parallel form ------------------------------------------------
 */

/* f32 k and v whose rows start on 16-byte boundaries as far as the
 * strides tell (D and every stride a multiple of 4 elements): the tiles
 * may be staged as float4, when the operands' addresses are aligned too
 * (checked in the kernel: a uniform branch). */
static bool kp_vec4(const at_plan *s) {
    const bg_attn_geom *a = &s->a;
    if (s->t != BRAID_F32 || a->D % 4) return false;
    for (int x = 1; x < 3; x++)
        for (int i = 0; i < 3; i++)
            if (a->st[x][i] % 4) return false;
    return true;
}

/* Parameters, the query row in registers (q[DQ], DQ = DP - 4, zero past
 * D) and the staged tiles: ks padded to DP (float4 reads, no bank
 * conflicts), vs 32·E wide. */
static void emit_kp_head(bc_buf *b, const bp_plan *p, uint32_t id,
                         const at_plan *s) {
    int DQ = s->DP - 4, W = s->E * 32;
    char ld[96], decls[160];
    bc_emit_signature(b, p, id, BC_ENTRY, (unsigned)(s->QT * 32), NULL);
    snprintf(decls, sizeof decls,
             "    __shared__ __align__(16) float ks[%d][%d];\n"
             "    __shared__ __align__(16) float vs[%d][%d];\n"
             "    const int tid = threadIdx.x, lane = tid & 31;\n",
             s->KT, s->DP, s->KT, W);
    emit_row_setup(b, s, decls, "(tid >> 5)");
    bc_from_storage_str(s->t, "in0[qo + d]", ld, sizeof ld);
    bc_buf_printf(b,
                  "    float q[%d], acc[%d], m = ninf, l = 0.0f;\n"
                  "#pragma unroll\n"
                  "    for (int d = 0; d < %d; d++)\n"
                  "        q[d] = d < D ? (float)%s * scale : 0.0f;\n"
                  "#pragma unroll\n"
                  "    for (int e = 0; e < %d; e++)\n"
                  "        acc[e] = 0.0f;\n",
                  DQ, s->E, DQ, ld, s->E);
    if (kp_vec4(s))
        bc_buf_puts(b, "    const bool vec4 = (((unsigned long long)in1 | "
                       "(unsigned long long)in2) & 15ULL) == 0;\n");
    emit_jend(b, s);
}

/* One tile's staging loop: KT rows of `width` floats from operand `in`
 * (strides st) into `tile`, zeros past T and D; `vec` elements per step
 * (1 or 4: float4 loads and stores, D a multiple of 4). Unrolled so that
 * several loads are in flight per thread: the loop is bound by their
 * latency, not by bandwidth. */
static void emit_kp_tile(bc_buf *b, const at_plan *s, const char *in,
                         const int64_t *st, const char *tile, int width,
                         int vec) {
    int NT = s->QT * 32, per = width / vec;
    char ld[96], at[32];
    snprintf(at, sizeof at, "%s[o]", in);
    bc_from_storage_str(s->t, at, ld, sizeof ld);
    bc_buf_printf(b,
                  "#pragma unroll 4\n"
                  "        for (int x = tid; x < %d; x += %d) {\n"
                  "            const int jj = x / %d, d = (x %% %d) * %d;\n"
                  "            const long long j = j0 + jj;\n",
                  s->KT * per, NT, per, per, vec);
    bc_buf_printf(b,
                  "            const long long o = b * %lldLL + j * %lldLL + "
                  "h * %lldLL + d;\n",
                  (long long)st[0], (long long)st[1], (long long)st[2]);
    if (vec == 4)
        bc_buf_printf(b,
                      "            float4 t = make_float4(0.0f, 0.0f, 0.0f, "
                      "0.0f);\n"
                      "            if (j < T && d < D) t = *(const float4 "
                      "*)&%s[o];\n"
                      "            *(float4 *)&%s[jj][d] = t;\n"
                      "        }\n",
                      in, tile);
    else
        bc_buf_printf(b,
                      "            float t = 0.0f;\n"
                      "            if (j < T && d < D) t = %s;\n"
                      "            %s[jj][d] = t;\n"
                      "        }\n",
                      ld, tile);
}

/* Staging of the k and v tile starting at key j0 (zeros past T and D):
 * float4 when kp_vec4 and both operands are 16-byte aligned, else one
 * element at a time. */
static void emit_kp_stage(bc_buf *b, const at_plan *s) {
    const bg_attn_geom *a = &s->a;
    int W = s->E * 32;
    bc_buf_puts(b, "        __syncthreads();\n");
    if (kp_vec4(s)) {
        bc_buf_puts(b, "        if (vec4) {\n");
        emit_kp_tile(b, s, "in1", a->st[1], "ks", s->DP, 4);
        emit_kp_tile(b, s, "in2", a->st[2], "vs", W, 4);
        bc_buf_puts(b, "        } else {\n");
    }
    emit_kp_tile(b, s, "in1", a->st[1], "ks", s->DP, 1);
    emit_kp_tile(b, s, "in2", a->st[2], "vs", W, 1);
    if (kp_vec4(s)) bc_buf_puts(b, "        }\n");
    bc_buf_puts(b, "        __syncthreads();\n");
}

static void emit_kp_body(bc_buf *b, const at_plan *s) {
    int DQ = s->DP - 4;
    bc_buf_printf(b, "    for (long long j0 = 0; j0 < jend; j0 += %d) {\n",
                  s->KT);
    emit_kp_stage(b, s);
    bc_buf_printf(b,
                  "        for (int c0 = 0; c0 < %d && j0 + c0 < jend; c0 += "
                  "32) {\n"
                  "            const int jj = c0 + lane;\n"
                  "            const long long j = j0 + jj;\n"
                  "            float p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 "
                  "= 0.0f;\n"
                  "#pragma unroll\n"
                  "            for (int d = 0; d < %d; d += 4) {\n"
                  "                const float4 kk = *(const float4 "
                  "*)&ks[jj][d];\n"
                  "                p0 += q[d] * kk.x;\n"
                  "                p1 += q[d + 1] * kk.y;\n"
                  "                p2 += q[d + 2] * kk.z;\n"
                  "                p3 += q[d + 3] * kk.w;\n"
                  "            }\n"
                  "            float p = (p0 + p1) + (p2 + p3);\n"
                  "            if (j >= T) p = ninf;\n",
                  s->KT, DQ);
    emit_mask(b, s, "            ");
    bc_buf_printf(
        b,
        "            float mt = p;\n"
        "#pragma unroll\n"
        "            for (int o = 16; o > 0; o >>= 1) {\n"
        "                const float x = __shfl_xor_sync(0xffffffffu, "
        "mt, o);\n"
        "                mt = x > mt ? x : mt;\n"
        "            }\n"
        "            if (mt == ninf) continue;\n"
        "            const float mn = m > mt ? m : mt;\n"
        "            const float al = m == ninf ? 0.0f : exp(m - "
        "mn);\n"
        "            const float pe = p == ninf ? 0.0f : exp(p - "
        "mn);\n"
        "            l = l * al + pe;\n"
        "#pragma unroll\n"
        "            for (int e = 0; e < %d; e++)\n"
        "                acc[e] *= al;\n"
        "            float acc2[%d];\n"
        "#pragma unroll\n"
        "            for (int e = 0; e < %d; e++)\n"
        "                acc2[e] = 0.0f;\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < 32; u += 2) {\n"
        "                const float pu = __shfl_sync(0xffffffffu, "
        "pe, u);\n"
        "                const float pw = __shfl_sync(0xffffffffu, "
        "pe, u + 1);\n"
        "#pragma unroll\n"
        "                for (int e = 0; e < %d; e++) {\n"
        "                    acc[e] += pu * vs[c0 + u][lane + 32 * e];\n"
        "                    acc2[e] += pw * vs[c0 + u + 1][lane + 32 * "
        "e];\n"
        "                }\n"
        "            }\n"
        "#pragma unroll\n"
        "            for (int e = 0; e < %d; e++)\n"
        "                acc[e] += acc2[e];\n"
        "            m = mn;\n"
        "        }\n"
        "    }\n"
        "#pragma unroll\n"
        "    for (int o = 16; o > 0; o >>= 1)\n"
        "        l += __shfl_xor_sync(0xffffffffu, l, o);\n"
        "    if (!live) return;\n"
        "    const float inv = l > 0.0f ? 1.0f / l : 0.0f;\n"
        "#pragma unroll\n"
        "    for (int e = 0; e < %d; e++) {\n"
        "        const long long d = lane + 32 * e;\n"
        "        if (d < D) out[oo + d] = ",
        s->E, s->E, s->E, s->E, s->E, s->E);
    bc_emit_to_storage(b, s->t, "acc[e] * inv");
    bc_buf_puts(b, ";\n    }\n}\n\n");
}

braid_status bc_gen_attention(const bp_plan *p, uint32_t id, bc_buf *b,
                              bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    k->kind = BC_KERNEL_ATTENTION;
    at_plan s = {0};
    if (!bg_attn_geom_of(p->res.graph, n, &s.a))
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "malformed attention");
    for (int x = 0; x < 3; x++) { /* strided views of q, k, v */
        const int64_t *st = bp_layout_of(p, n->inputs[x]);
        if (st && !bg_attn_set_strides(&s.a, x, st))
            return bc_fail(p, id, BRAID_ERR_INTERNAL,
                           "operand %d's strided layout has no contiguous "
                           "head dim",
                           x);
    }
    s.t = n->dtype;
    s.ct = s.t == BRAID_F64 ? "double" : "float";
    choose(&s);
    if (s.qblocks > (int64_t)BC_GRID_X_MAX || s.a.H > 65535 || s.a.B > 65535)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%lld query blocks, %lld heads, %lld batches are too "
                       "many for one launch (at most 2^31-1, 65535, 65535)",
                       (long long)s.qblocks, (long long)s.a.H,
                       (long long)s.a.B);
    if (s.kp) {
        emit_kp_head(b, p, id, &s);
        emit_kp_body(b, &s);
    } else {
        emit_head(b, p, id, &s);
        emit_body(b, &s);
    }
    k->nlaunch = bg_numel(n) > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", BC_ENTRY);
    k->launch[0].grid[0] = (uint32_t)(s.qblocks > 0 ? s.qblocks : 1);
    k->launch[0].grid[1] = (uint32_t)(s.a.H > 0 ? s.a.H : 1);
    k->launch[0].grid[2] = (uint32_t)(s.a.B > 0 ? s.a.B : 1);
    k->launch[0].block[0] = (uint32_t)(s.QT * s.G);
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
    return BRAID_OK;
}
