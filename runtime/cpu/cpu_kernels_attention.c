/* runtime/cpu/cpu_kernels_attention.c — the attention op (graph/attention.h):
 * out[b,i,h,:] = softmax(scale·q·kᵀ + mask)·v, a fully masked row giving 0.
 *
 * f32 and f64 (when the scores of AT_SLOTS tasks fit AT_SCRATCH_MAX bytes
 * of executor scratch): a task is AT_QG query rows of one (b, h); its
 * scores [AT_QG, T] are one cblas gemm straight from the strided q and k
 * rows (scale folded into alpha), then each row gets the mask, the causal
 * -inf, its max, exp(s - max) and 1/sum in the row (0 for a row whose
 * scores are all -inf), and the output rows are a second gemm with v
 * (a causal task's two products stop at its last row's diagonal: the keys
 * past it would get probability 0 exactly),
 * written in place into out's strided rows. Tasks go to AT_SLOTS slots
 * over the pool, slot c taking tasks c, c + AT_SLOTS, ... with its own
 * score buffer, so results do not depend on the thread count.
 *
 * f16/bf16 (and scores too large for scratch): tasks of AT_QB query rows
 * of one (b, h) over the pool. A task walks the keys in
 * tiles of AT_KT rows, staged (with the task's q rows) in stack buffers in
 * the compute type — float for f32/f16/bf16, double for f64 — and keeps
 * each query row's running max m, sum l and unnormalised output acc (an
 * online softmax, as the GPU kernel): per tile, m' = max(m, tile max),
 * l and acc are rescaled by exp(m - m'), then p = exp(s - m') adds to l
 * and p·v to acc; the output is acc / l, or 0 when l is 0 (every score
 * -inf). q is multiplied by scale when staged, so scores round differently
 * from the reference's (q·k)·scale; f16/bf16 are rounded once, at the
 * output (the reference also rounds once). The output never aliases an
 * operand (the memory pass aliases only elementwise nodes). f32 takes
 * braid's vectorisable bg_expf (≤ 1.2 ulp, graph/scalar_math.h), as the
 * exp op does, computed over a whole row before the sum so the loop
 * vectorises; f64 the C library's exp. */
#include "graph/attention.h"
#include "graph/scalar_math.h"
#include "runtime/cpu/cpu_kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define AT_QB 8     /* query rows per task (online path) */
#define AT_KT 32    /* key rows per tile (online path) */
#define AT_QG 32    /* query rows per task (gemm path) */
#define AT_SLOTS 16 /* score buffers (gemm path) */
#define AT_SCRATCH_MAX ((int64_t)64 << 20) /* their bytes at most */
#define AT_LANES 16 /* partial maxes and sums of a softmax row */

typedef struct at_ctx {
    bg_attn_geom a;
    braid_dtype t;
    const char *q, *k, *v, *mask; /* operands (mask NULL when absent) */
    char *out;
    int64_t qtiles; /* ceil(S / AT_QB) */
} at_ctx;

/* Element offset → byte pointer of dtype t. */
static const char *at_ptr(const char *base, braid_dtype t, int64_t e) {
    return base + e * (int64_t)braid_dtype_size(t);
}

/* One task in compute type CT (float or double), loads through LOAD
 * (br_load_f32 / br_load_f64), stores through STORE, exp EXP. */
#define AT_TASK(NAME, CT, LOAD, STORE, EXP)                                    \
    static void NAME(const at_ctx *c, int64_t task) {                          \
        const bg_attn_geom *a = &c->a;                                         \
        int64_t D = a->D, qt = task % c->qtiles, h = task / c->qtiles % a->H;  \
        int64_t b = task / c->qtiles / a->H, i0 = qt * AT_QB;                  \
        int64_t nq = a->S - i0 < AT_QB ? a->S - i0 : AT_QB;                    \
        CT q[AT_QB][BG_ATTN_MAX_D], acc[AT_QB][BG_ATTN_MAX_D];                 \
        CT kt[AT_KT][BG_ATTN_MAX_D], vt[AT_KT][BG_ATTN_MAX_D];                 \
        CT m[AT_QB], l[AT_QB], s[AT_KT], mk[AT_KT];                            \
        for (int64_t r = 0; r < nq; r++) {                                     \
            LOAD(c->t, at_ptr(c->q, c->t, bg_attn_in_at(a, 0, b, i0 + r, h)),  \
                 1, D, q[r]);                                                  \
            for (int64_t d = 0; d < D; d++) {                                  \
                q[r][d] *= (CT)a->scale;                                       \
                acc[r][d] = 0;                                                 \
            }                                                                  \
            m[r] = -(CT)INFINITY;                                              \
            l[r] = 0;                                                          \
        }                                                                      \
        for (int64_t j0 = 0; j0 < a->T; j0 += AT_KT) {                         \
            int64_t nk = a->T - j0 < AT_KT ? a->T - j0 : AT_KT;                \
            if (a->causal && j0 > i0 + nq - 1) break;                          \
            for (int64_t j = 0; j < nk; j++) {                                 \
                LOAD(c->t,                                                     \
                     at_ptr(c->k, c->t, bg_attn_in_at(a, 1, b, j0 + j, h)), 1, \
                     D, kt[j]);                                                \
                LOAD(c->t,                                                     \
                     at_ptr(c->v, c->t, bg_attn_in_at(a, 2, b, j0 + j, h)), 1, \
                     D, vt[j]);                                                \
            }                                                                  \
            for (int64_t r = 0; r < nq; r++) {                                 \
                int64_t i = i0 + r;                                            \
                if (c->mask)                                                   \
                    LOAD(c->t,                                                 \
                         at_ptr(c->mask, c->t,                                 \
                                bg_attn_mask_at(a, b, h, i, j0)),              \
                         a->mst[3], nk, mk);                                   \
                CT mt = -(CT)INFINITY;                                         \
                for (int64_t j = 0; j < nk; j++) {                             \
                    CT dot[8] = {0};                                           \
                    int64_t d = 0;                                             \
                    for (; d + 8 <= D; d += 8)                                 \
                        for (int u = 0; u < 8; u++)                            \
                            dot[u] += q[r][d + u] * kt[j][d + u];              \
                    CT sj = 0;                                                 \
                    for (; d < D; d++)                                         \
                        sj += q[r][d] * kt[j][d];                              \
                    for (int u = 0; u < 8; u++)                                \
                        sj += dot[u];                                          \
                    if (c->mask) sj += mk[j];                                  \
                    if (a->causal && j0 + j > i) sj = -(CT)INFINITY;           \
                    s[j] = sj;                                                 \
                    if (!(sj <= mt)) mt = sj;                                  \
                }                                                              \
                if (mt == -(CT)INFINITY) continue; /* nothing new */           \
                CT mn = m[r] > mt ? m[r] : mt;                                 \
                CT alpha = m[r] == -(CT)INFINITY ? 0 : EXP(m[r] - mn);         \
                CT *o = acc[r];                                                \
                if (alpha != 1)                                                \
                    for (int64_t d = 0; d < D; d++)                            \
                        o[d] *= alpha;                                         \
                CT lr = l[r] * alpha;                                          \
                for (int64_t j = 0; j < nk; j++) {                             \
                    CT p = EXP(s[j] - mn);                                     \
                    lr += p;                                                   \
                    for (int64_t d = 0; d < D; d++)                            \
                        o[d] += p * vt[j][d];                                  \
                }                                                              \
                l[r] = lr;                                                     \
                m[r] = mn;                                                     \
            }                                                                  \
        }                                                                      \
        for (int64_t r = 0; r < nq; r++) {                                     \
            CT inv = l[r] > 0 ? (CT)1 / l[r] : 0;                              \
            for (int64_t d = 0; d < D; d++)                                    \
                acc[r][d] = l[r] > 0 ? acc[r][d] * inv : 0;                    \
            STORE(c->t,                                                        \
                  c->out + bg_attn_out_at(a, b, i0 + r, h) *                   \
                               (int64_t)braid_dtype_size(c->t),                \
                  D, acc[r]);                                                  \
        }                                                                      \
    }

AT_TASK(task_f32, float, br_load_f32, br_store_f32, bg_expf)
AT_TASK(task_f64, double, br_load_f64, br_store_f64, exp)

/* ---- the gemm path (f32, f64) ------------------------------------------- */

typedef struct at_gemm {
    const at_ctx *c;
    char *scratch; /* AT_SLOTS buffers of AT_QG × T values */
    int64_t ntasks, slots;
} at_gemm;

/* Softmax of one score row of T keys (a causal task's first keys only:
 * the rest are -inf) in place, with the mask and the causal -inf; all
 * -inf gives a row of 0. Built per ISA (BR_CLONES): GPT-2's 2.4 M
 * exponentials per run were most of its attention time on SSE. */
#define AT_ROW(NAME, CT, EXP)                                                  \
    BR_CLONES static void NAME(const at_ctx *c, CT *s, int64_t T, int64_t b,   \
                               int64_t h, int64_t i) {                         \
        const bg_attn_geom *a = &c->a;                                         \
        if (c->mask) {                                                         \
            const CT *m =                                                      \
                (const CT *)c->mask + bg_attn_mask_at(a, b, h, i, 0);          \
            for (int64_t j = 0; j < T; j++)                                    \
                s[j] += m[j * a->mst[3]];                                      \
        }                                                                      \
        if (a->causal)                                                         \
            for (int64_t j = i + 1; j < T; j++)                                \
                s[j] = -(CT)INFINITY;                                          \
        /* the max and the sum in AT_LANES partial results (key j in           \
         * lane j % AT_LANES), then combined lane by lane: a chain per         \
         * lane, which the clones vectorise (one running sum was a chain       \
         * of dependent adds: GPT-2's attention 11 % faster without) */        \
        CT part[AT_LANES];                                                     \
        int64_t jt = T / AT_LANES * AT_LANES; /* the lanes' tail from jt */    \
        for (int l = 0; l < AT_LANES; l++)                                     \
            part[l] = -(CT)INFINITY;                                           \
        for (int64_t j0 = 0; j0 < jt; j0 += AT_LANES)                          \
            for (int l = 0; l < AT_LANES; l++)                                 \
                part[l] = s[j0 + l] > part[l] ? s[j0 + l] : part[l];           \
        for (int64_t j = jt; j < T; j++)                                       \
            part[j - jt] = s[j] > part[j - jt] ? s[j] : part[j - jt];          \
        CT mx = -(CT)INFINITY;                                                 \
        for (int l = 0; l < AT_LANES; l++)                                     \
            mx = part[l] > mx ? part[l] : mx;                                  \
        if (mx == -(CT)INFINITY) {                                             \
            memset(s, 0, sizeof *s *(size_t)T);                                \
            return;                                                            \
        }                                                                      \
        for (int64_t j = 0; j < T; j++)                                        \
            s[j] = EXP(s[j] - mx);                                             \
        for (int l = 0; l < AT_LANES; l++)                                     \
            part[l] = 0;                                                       \
        for (int64_t j0 = 0; j0 < jt; j0 += AT_LANES)                          \
            for (int l = 0; l < AT_LANES; l++)                                 \
                part[l] += s[j0 + l];                                          \
        for (int64_t j = jt; j < T; j++)                                       \
            part[j - jt] += s[j];                                              \
        CT sum = 0;                                                            \
        for (int l = 0; l < AT_LANES; l++)                                     \
            sum += part[l];                                                    \
        CT inv = (CT)1 / sum;                                                  \
        for (int64_t j = 0; j < T; j++)                                        \
            s[j] *= inv;                                                       \
    }
AT_ROW(row_f32, float, bg_expf)
AT_ROW(row_f64, double, exp)

static void gemm_task(const at_ctx *c, void *buf, int64_t task) {
    const bg_attn_geom *a = &c->a;
    int64_t qt = (a->S + AT_QG - 1) / AT_QG;
    int64_t h = task / qt % a->H, b = task / qt / a->H, i0 = task % qt * AT_QG;
    int M = (int)(a->S - i0 < AT_QG ? a->S - i0 : AT_QG);
    int T = (int)a->T, D = (int)a->D, ld = (int)(a->H * a->D);
    /* causal: keys past the task's last row get probability 0 exactly
       (exp(-inf)); the products leave them out */
    if (a->causal && i0 + M < T) T = (int)(i0 + M);
    int lq = (int)a->st[0][1], lk = (int)a->st[1][1], lv = (int)a->st[2][1];
    int64_t qo = bg_attn_in_at(a, 0, b, i0, h),
            ko = bg_attn_in_at(a, 1, b, 0, h);
    int64_t vo = bg_attn_in_at(a, 2, b, 0, h), oo = bg_attn_out_at(a, b, i0, h);
    if (c->t == BRAID_F64) {
        double *s = buf;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, T, D, a->scale,
                    (const double *)c->q + qo, lq, (const double *)c->k + ko,
                    lk, 0.0, s, T);
        for (int r = 0; r < M; r++)
            row_f64(c, s + (int64_t)r * T, T, b, h, i0 + r);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, T, 1.0, s,
                    T, (const double *)c->v + vo, lv, 0.0,
                    (double *)c->out + oo, ld);
    } else {
        float *s = buf;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, T, D,
                    (float)a->scale, (const float *)c->q + qo, lq,
                    (const float *)c->k + ko, lk, 0.0f, s, T);
        for (int r = 0; r < M; r++)
            row_f32(c, s + (int64_t)r * T, T, b, h, i0 + r);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, T, 1.0f, s,
                    T, (const float *)c->v + vo, lv, 0.0f, (float *)c->out + oo,
                    ld);
    }
}

static void gemm_slots(void *ctx, int64_t lo, int64_t hi) {
    const at_gemm *x = ctx;
    int64_t rows = x->c->a.S < AT_QG ? x->c->a.S : AT_QG; /* gemm_scratch */
    int64_t per = rows * x->c->a.T * (int64_t)braid_dtype_size(x->c->t);
    for (int64_t slot = lo; slot < hi; slot++)
        for (int64_t t = slot; t < x->ntasks; t += x->slots)
            gemm_task(x->c, x->scratch + slot * per, t);
}

static void tasks(void *ctx, int64_t lo, int64_t hi) {
    const at_ctx *c = ctx;
    for (int64_t t = lo; t < hi; t++)
        if (c->t == BRAID_F64)
            task_f64(c, t);
        else
            task_f32(c, t);
}

/* Bytes of the gemm path's score buffers, or 0 for the online path. */
static int64_t gemm_scratch(const bg_attn_geom *a, braid_dtype t) {
    if (t != BRAID_F32 && t != BRAID_F64) return 0;
    int64_t rows = a->S < AT_QG ? a->S : AT_QG, T = a->T > 0 ? a->T : 1;
    if (T > AT_SCRATCH_MAX / AT_SLOTS / 8 / (rows > 0 ? rows : 1)) return 0;
    return AT_SLOTS * rows * T * (int64_t)braid_dtype_size(t);
}

braid_status br_attention_prepare(const braid_graph *g, uint32_t id,
                                  size_t *scratch) {
    bg_attn_geom a;
    const bg_node *n = bg_node_at(g, id);
    if (bg_attn_geom_of(g, n, &a)) {
        size_t need = (size_t)gemm_scratch(&a, n->dtype);
        if (need > *scratch) *scratch = need;
        return BRAID_OK;
    }
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: malformed %s node", id,
                             bg_op(n->op)->name);
}

void br_attention_run(const br_kernel_args *a) {
    at_ctx c = {.t = a->node->dtype,
                .q = a->in[0],
                .k = a->in[1],
                .v = a->in[2],
                .out = a->out};
    if (!bg_attn_geom_of(a->g, a->node, &c.a) || bg_numel(a->node) == 0) return;
    c.mask = c.a.has_mask ? a->in[3] : NULL;
    if (c.a.T == 0) { /* every row fully masked */
        memset(a->out, 0, bg_nbytes(a->node));
        return;
    }
    bool rows_ok = true; /* BLAS takes each operand's row stride as its
                            leading dimension: at least D, an int */
    for (int x = 0; x < 3; x++) {
        if (a->in_strides && a->in_strides[x])
            (void)bg_attn_set_strides(&c.a, x, a->in_strides[x]); /* the
                          plan's layouts are ones it takes (passes/layout.c) */
        rows_ok = rows_ok && c.a.st[x][1] >= c.a.D && c.a.st[x][1] <= INT32_MAX;
    }
    int64_t need = gemm_scratch(&c.a, c.t);
    if (rows_ok && need > 0 && (size_t)need <= a->scratch_bytes) {
        at_gemm x = {.c = &c, .scratch = a->scratch};
        x.ntasks = c.a.B * c.a.H * ((c.a.S + AT_QG - 1) / AT_QG);
        x.slots = x.ntasks < AT_SLOTS ? x.ntasks : AT_SLOTS;
        br_parallel_for(a->pool, x.slots, 1, gemm_slots, &x);
        return;
    }
    c.qtiles = (c.a.S + AT_QB - 1) / AT_QB;
    int64_t ntasks = c.a.B * c.a.H * c.qtiles;
    /* a task's work is about AT_QB·T·D multiply-adds twice */
    double work = 2.0 * AT_QB * (double)(c.a.T + 1) * (double)c.a.D;
    int64_t grain =
        work >= BR_GRAIN * 4.0 ? 1 : (int64_t)(BR_GRAIN * 4.0 / work);
    br_parallel_for(a->pool, ntasks, grain, tasks, &c);
}
