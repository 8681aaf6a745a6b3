/* runtime/cpu/cpu_fused_ops.c — one program instruction over a tile: the op
 * (through the unfused kernels' typed loops, runtime/cpu/cpu_ew.h), casts,
 * f16/bf16 rounding, and the loads and stores between buffers of any dtype
 * and tiles of a compute type. */
#include "runtime/cpu/cpu_ew.h"
#include "runtime/cpu/cpu_fused.h"
#include "graph/index.h"

#include <string.h>

braid_dtype br_fz_storage(br_fz_ct ct) {
    static const braid_dtype t[] = {BRAID_F32, BRAID_F64, BRAID_I32,
                                    BRAID_BOOL};
    return t[ct];
}

size_t br_fz_size(br_fz_ct ct) {
    static const size_t s[] = {4, 8, 4, 1};
    return s[ct];
}

br_fz_ct br_fz_ct_of(braid_dtype t) {
    switch (t) {
    case BRAID_F64:
        return BR_FZ_F64;
    case BRAID_I32:
        return BR_FZ_I32;
    case BRAID_BOOL:
        return BR_FZ_BOOL;
    default:
        return BR_FZ_F32;
    }
}

/* ---- f16/bf16 rounding and casts ----------------------------------------- */

/* x[0..n) rounded to dtype t (f16 or bf16) and widened back: what storing
 * the value as t and reading it again gives. */
static void round_to(braid_dtype t, float *x, int64_t n) {
    uint16_t tmp[BR_BLOCK];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_store_f32(t, tmp, m, x + i);
        br_load_f32(t, tmp, 1, m, x + i);
    }
}

/* Through double, which holds every compute type's values exactly, then
 * stored by bg_store's rules (f16/bf16 rounded through f32 and widened back
 * into the f32 tile): what the unfused cast kernel computes. */
static void cast(br_fz_ct from, br_fz_ref a, braid_dtype to, int64_t n,
                 void *out) {
    braid_dtype src = br_fz_storage(from);
    size_t isz = br_fz_size(from), osz = br_fz_size(br_fz_ct_of(to));
    double tmp[BR_BLOCK];
    uint16_t half[BR_BLOCK];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_load_f64(src, (const char *)a.p + i * a.step * isz, a.step, m, tmp);
        char *o = (char *)out + i * osz;
        if (to == BRAID_F16 || to == BRAID_BF16) {
            br_store_f64(to, half, m, tmp);
            br_load_f32(to, half, 1, m, (float *)o);
        } else {
            br_store_f64(to, o, m, tmp);
        }
    }
}

/* ---- the op ---------------------------------------------------------------
 */

void br_fz_exec(const br_fz *z, uint32_t i, int64_t n, void *out,
                const br_fz_ref *refs) {
    const bp_instr *in = &z->prog->instr[i];
    br_fz_ct ct = z->v[i].ct, act = z->v[in->arg[0]].ct;
    br_fz_ref a = refs[in->arg[0]];
    if (in->op == BRAID_OP_CAST) {
        cast(act, a, in->dtype, n, out);
        return;
    }
    if (in->op == BRAID_OP_WHERE) {
        br_fz_ref b = refs[in->arg[1]], c = refs[in->arg[2]];
        br_ew_where(br_fz_size(ct), n, out, a.p, a.step, b.p, b.step, c.p,
                    c.step);
        return;
    }
    /* a tile holds f32, f64, i32 or bool; bool takes comparisons only */
    br_fz_ref b = bg_op(in->op)->arity > 1 ? refs[in->arg[1]] : a;
    if (bg_op_is_compare(in->op))
        br_ew_compare(br_fz_storage(act), in->op, n, out, a.p, a.step, b.p,
                      b.step);
    else if (bg_op(in->op)->arity == 1) /* contiguous, or n = 1 uniform */
        br_ew_unary(br_fz_storage(ct), in->op, n, out, a.p);
    else
        br_ew_binary(br_fz_storage(ct), in->op, n, out, a.p, a.step, b.p,
                     b.step);
    if (z->v[i].round) round_to(in->dtype, out, n);
}

/* ---- loads and stores ---------------------------------------------------- */

/* n elements of size esz from src stepping `step` elements, to dst. */
static void copy_strided(size_t esz, const char *src, int64_t step, int64_t n,
                         char *dst) {
    if (step == 1) {
        memcpy(dst, src, (size_t)n * esz);
        return;
    }
    switch (esz) {
    case 1:
        for (int64_t i = 0; i < n; i++)
            dst[i] = src[i * step];
        return;
    case 4: {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (int64_t i = 0; i < n; i++)
            d[i] = s[i * step];
        return;
    }
    default: {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (int64_t i = 0; i < n; i++)
            d[i] = s[i * step];
        return;
    }
    }
}

/* One run of an input into a tile: dtype t to compute type ct. */
static void load_run(braid_dtype t, br_fz_ct ct, const char *src, int64_t step,
                     int64_t n, char *dst) {
    if (t == br_fz_storage(ct))
        copy_strided(br_fz_size(ct), src, step, n, dst);
    else /* f16 / bf16 into f32: exact */
        br_load_f32(t, src, step, n, (float *)dst);
}

void br_fz_gather(const br_fz *z, const br_fz_input *in, br_fz_ct ct, int64_t s,
                  int64_t m, void *dst) {
    const int r = z->rank;
    size_t isz = braid_dtype_size(in->t), osz = br_fz_size(ct);
    int64_t idx[BRAID_MAX_RANK], off = 0, rem = s;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = rem % z->dims[d];
        rem /= z->dims[d];
        off += idx[d] * in->st[d];
    }
    char *o = dst;
    for (int64_t done = 0;;) {
        int64_t n = z->dims[r - 1] - idx[r - 1];
        if (n > m - done) n = m - done;
        load_run(in->t, ct, in->base + off * (int64_t)isz, in->st[r - 1], n, o);
        done += n;
        if (done >= m) return;
        o += n * (int64_t)osz;
        /* the run ended at the end of the innermost dim: carry */
        off += in->st[r - 1] * n;
        idx[r - 1] += n;
        for (int d = r - 1; d > 0 && idx[d] == z->dims[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            off += in->st[d - 1] - in->st[d] * z->dims[d];
        }
    }
}

br_fz_cell br_fz_load_one(braid_dtype t, const void *p, br_fz_ct ct) {
    br_fz_cell c;
    memset(&c, 0, sizeof c);
    load_run(t, ct, p, 1, 1, (char *)&c);
    return c;
}

void br_fz_store(braid_dtype t, br_fz_ct ct, br_fz_ref r, int64_t n,
                 void *dst) {
    if (r.p == dst && r.step == 1 && t == br_fz_storage(ct)) return;
    size_t osz = braid_dtype_size(t);
    if (r.step == 0) { /* a uniform value: store one, then replicate */
        char one[8];
        br_fz_store(t, ct, (br_fz_ref){r.p, 1}, 1, one);
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)dst + i * (int64_t)osz, one, osz);
        return;
    }
    if (t == br_fz_storage(ct))
        memmove(dst, r.p, (size_t)n * osz);
    else /* f32 tile into f16 / bf16, already rounded: exact */
        br_store_f32(t, dst, n, r.p);
}

/* ---- GATHER ---------------------------------------------------------------- */

/* Positions [s, s + m) of GATHER instruction i, walked in runs of the
 * data's trailing elements (one row): a run whose index is the same at
 * every position (the pass's programs: the indices broadcast along the
 * row) is one load_run of the row; otherwise element by element. */
void br_fz_gather_rows(const br_fz *z, uint32_t i, int64_t s, int64_t m,
                       void *out, const br_fz_ref *refs) {
    const bp_instr *in = &z->prog->instr[i];
    const br_fz_gat *g = &z->gat[i];
    const br_fz_input *x = &z->in[in->input];
    br_fz_ct ct = (br_fz_ct)z->v[i].ct;
    br_fz_ref ix = refs[in->arg[0]];
    const int32_t *iv = ix.p;
    size_t isz = braid_dtype_size(x->t), osz = br_fz_size(ct);
    char *o = out;
    for (int64_t k = 0; k < m;) {
        int64_t pos = s + k, r = pos % g->inner;
        int64_t run = g->inner - r < m - k ? g->inner - r : m - k;
        int32_t v = iv[k * ix.step];
        int64_t same = g->rows ? run : 1;
        while (same < run && iv[(k + same) * ix.step] == v)
            same++;
        int64_t w = bg_index_norm(v, g->bound);
        if (w < 0) {
            br_run_check_record(z->check, z->id, (bc_check_kind)BC_CHECK_INDEX_AT(i), v,
                                (pos / g->inner) % g->nidx, g->bound);
            memset(o + k * (int64_t)osz, 0, (size_t)same * osz);
        } else {
            int64_t row = (pos / (g->nidx * g->inner)) * g->bound + w;
            load_run(x->t, ct, x->base + (row * g->inner + r) * (int64_t)isz,
                     1, same, o + k * (int64_t)osz);
        }
        k += same;
    }
}
