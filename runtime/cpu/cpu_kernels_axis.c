/* runtime/cpu/cpu_kernels_axis.c — the axis ops (argmax, argmin, topk_*,
 * cumsum; graph/axis.h) on the thread pool.
 *
 * argmax/argmin and cumsum walk a unit of work — one line when the axis is
 * innermost, else a block of up to BR_BLOCK neighbouring lines read row by
 * row, so loads stay contiguous — staged through doubles (exact for every
 * dtype) and decided by graph/axis.h's rules, so ties and NaN come out as
 * in the reference. cumsum sums in double in index order (i32 wrapping),
 * as the reference does, and rounds once. topk orders each line by
 * bg_topk_before, the reference's order: a bounded insertion for k up to
 * TOPK_INSERT_MAX, else bg_topk_sort; lines are split into at most
 * TOPK_GROUPS groups, each with its own scratch. */
#include "graph/axis.h"
#include "graph/scalar.h"
#include "runtime/cpu/cpu_kernels.h"

#include <string.h>

#define TOPK_GROUPS 16

typedef struct ax_ctx {
    const bg_node *n; /* the node */
    braid_dtype t;    /* the input's dtype */
    size_t esz;       /* its size */
    const char *in;   /* the input */
    char *out;        /* the output */
    bg_axis_lines l;  /* geometry */
    int64_t nblk;     /* column blocks per outer index */
    char *scratch;    /* topk: TOPK_GROUPS × (len doubles + len int64) */
    int64_t groups;   /* topk: groups of lines */
} ax_ctx;

/* ---- argmax / argmin ----------------------------------------------------- */

/* The contiguous line (o, 0) (inner == 1), in chunks. */
static int64_t arg_line(const ax_ctx *c, int64_t o, bool min, bool last) {
    double v[BR_BLOCK], best = 0.0;
    int64_t bi = -1;
    const char *p = c->in + (size_t)(o * c->l.len) * c->esz;
    for (int64_t j = 0; j < c->l.len; j += BR_BLOCK) {
        int64_t m = c->l.len - j < BR_BLOCK ? c->l.len - j : BR_BLOCK;
        br_load_f64(c->t, p + (size_t)j * c->esz, 1, m, v);
        for (int64_t k = 0; k < m; k++)
            if (bi < 0 || bg_arg_beats(min, last, v[k], j + k, best, bi))
                best = v[k], bi = j + k;
    }
    return bi;
}

/* Lines (o, i0 .. i0 + m), read a row of m at a time. */
static void arg_cols(const ax_ctx *c, int64_t o, int64_t i0, int64_t m,
                     bool min, bool last) {
    double v[BR_BLOCK], best[BR_BLOCK];
    int64_t bi[BR_BLOCK];
    int32_t *out = (int32_t *)c->out + o * c->l.inner + i0;
    for (int64_t j = 0; j < c->l.len; j++) {
        size_t off = (size_t)((o * c->l.len + j) * c->l.inner + i0);
        br_load_f64(c->t, c->in + off * c->esz, 1, m, v);
        for (int64_t k = 0; k < m; k++)
            if (j == 0 || bg_arg_beats(min, last, v[k], j, best[k], bi[k]))
                best[k] = v[k], bi[k] = j;
    }
    for (int64_t k = 0; k < m; k++)
        out[k] = (int32_t)bi[k];
}

static void arg_units(void *ctx, int64_t b, int64_t e) {
    const ax_ctx *c = ctx;
    bool min = c->n->op == BRAID_OP_ARGMIN;
    bool last = (c->n->attr.flags & BG_SELECT_LAST) != 0;
    for (int64_t u = b; u < e; u++) {
        if (c->l.inner == 1) {
            ((int32_t *)c->out)[u] = (int32_t)arg_line(c, u, min, last);
            continue;
        }
        int64_t o = u / c->nblk, i0 = (u % c->nblk) * BR_BLOCK;
        int64_t m = c->l.inner - i0 < BR_BLOCK ? c->l.inner - i0 : BR_BLOCK;
        arg_cols(c, o, i0, m, min, last);
    }
}

/* ---- cumsum -------------------------------------------------------------- */

/* Lines (o, i0 .. i0 + m) with m ≤ BR_BLOCK: rows visited in the sum's
 * order, acc per line in double. */
static void cumsum_cols(const ax_ctx *c, int64_t o, int64_t i0, int64_t m) {
    bool excl = (c->n->attr.flags & BG_EXCLUSIVE) != 0;
    bool rev = (c->n->attr.flags & BG_REVERSE) != 0;
    bool wrap = c->t == BRAID_I32;
    double acc[BR_BLOCK], v[BR_BLOCK], w[BR_BLOCK];
    for (int64_t k = 0; k < m; k++)
        acc[k] = 0.0;
    for (int64_t s = 0; s < c->l.len; s++) {
        int64_t j = rev ? c->l.len - 1 - s : s;
        size_t off = (size_t)((o * c->l.len + j) * c->l.inner + i0);
        br_load_f64(c->t, c->in + off * c->esz, 1, m, v);
        for (int64_t k = 0; k < m; k++) {
            if (excl) w[k] = acc[k];
            acc[k] += v[k];
            if (wrap) acc[k] = bg_wrap_i32(acc[k]);
            if (!excl) w[k] = acc[k];
        }
        br_store_f64(c->t, c->out + off * c->esz, m, w);
    }
}

/* The contiguous line o (inner == 1), in chunks (reverse: from the end). */
static void cumsum_line(const ax_ctx *c, int64_t o) {
    bool excl = (c->n->attr.flags & BG_EXCLUSIVE) != 0;
    bool rev = (c->n->attr.flags & BG_REVERSE) != 0;
    bool wrap = c->t == BRAID_I32;
    double v[BR_BLOCK], acc = 0.0;
    size_t base = (size_t)(o * c->l.len);
    for (int64_t s = 0; s < c->l.len; s += BR_BLOCK) {
        int64_t m = c->l.len - s < BR_BLOCK ? c->l.len - s : BR_BLOCK;
        int64_t j0 = rev ? c->l.len - s - m : s; /* the chunk's first index */
        br_load_f64(c->t, c->in + (base + (size_t)j0) * c->esz, 1, m, v);
        for (int64_t q = 0; q < m; q++) {
            int64_t k = rev ? m - 1 - q : q;
            double x = v[k];
            if (excl) v[k] = acc;
            acc += x;
            if (wrap) acc = bg_wrap_i32(acc);
            if (!excl) v[k] = acc;
        }
        br_store_f64(c->t, c->out + (base + (size_t)j0) * c->esz, m, v);
    }
}

static void cumsum_units(void *ctx, int64_t b, int64_t e) {
    const ax_ctx *c = ctx;
    for (int64_t u = b; u < e; u++) {
        if (c->l.inner == 1) {
            cumsum_line(c, u);
            continue;
        }
        int64_t o = u / c->nblk, i0 = (u % c->nblk) * BR_BLOCK;
        cumsum_cols(c, o, i0,
                    c->l.inner - i0 < BR_BLOCK ? c->l.inner - i0 : BR_BLOCK);
    }
}

/* ---- topk ---------------------------------------------------------------- */

static size_t topk_group_bytes(int64_t len) {
    return (size_t)len * (sizeof(double) + sizeof(int64_t));
}

/* k at most this: a bounded insertion instead of a sort of the line */
#define TOPK_INSERT_MAX 64

/* ord[0..k) = the first k positions of line x in topk's order: each
 * element is inserted into the sorted list of the best k so far, or
 * dropped at the first compare when it comes after the k-th. Positions
 * arrive in increasing order, so equal values keep index order, as the
 * sort does; O(len) compares for most elements. */
static void topk_insert(bool smallest, const double *x, int64_t len, int64_t k,
                        int64_t *ord) {
    int64_t m = 0;
    for (int64_t i = 0; i < len && k > 0; i++) {
        if (m == k &&
            !bg_topk_before(smallest, x[i], i, x[ord[m - 1]], ord[m - 1]))
            continue;
        int64_t j = m < k ? m++ : m - 1;
        while (j > 0 &&
               bg_topk_before(smallest, x[i], i, x[ord[j - 1]], ord[j - 1])) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
}

/* Line q (o·inner + i) sorted with group scratch s, its first k stored. */
static void topk_line(const ax_ctx *c, int64_t q, char *s) {
    double *x = (double *)s;
    int64_t *ord = (int64_t *)(s + (size_t)c->l.len * sizeof(double));
    int64_t o = q / c->l.inner, i = q % c->l.inner, inner = c->l.inner;
    size_t in0 = (size_t)(o * c->l.len * inner + i);
    size_t out0 = (size_t)(o * c->l.olen * inner + i);
    br_load_f64(c->t, c->in + in0 * c->esz, inner, c->l.len, x);
    bool smallest = (c->n->attr.flags & BG_SMALLEST) != 0;
    if (c->l.olen <= TOPK_INSERT_MAX)
        topk_insert(smallest, x, c->l.len, c->l.olen, ord);
    else
        bg_topk_sort(smallest, x, 1, c->l.len, ord);
    bool values = c->n->op == BRAID_OP_TOPK_VALUES;
    for (int64_t j = 0; j < c->l.olen; j++) {
        size_t at = out0 + (size_t)(j * inner);
        if (values)
            br_store_f64(c->t, c->out + at * c->esz, 1, &x[ord[j]]);
        else
            ((int32_t *)c->out)[at] = (int32_t)ord[j];
    }
}

static void topk_groups(void *ctx, int64_t b, int64_t e) {
    const ax_ctx *c = ctx;
    int64_t lines = c->l.outer * c->l.inner;
    for (int64_t g = b; g < e; g++) {
        char *s = c->scratch + (size_t)g * topk_group_bytes(c->l.len);
        for (int64_t q = g * lines / c->groups; q < (g + 1) * lines / c->groups;
             q++)
            topk_line(c, q, s);
    }
}

/* ---- entry points -------------------------------------------------------- */

static int64_t topk_group_count(const bg_axis_lines *l) {
    int64_t lines = l->outer * l->inner;
    return lines < TOPK_GROUPS ? lines : TOPK_GROUPS;
}

braid_status br_axis_prepare(const braid_graph *g, uint32_t id,
                             size_t *scratch) {
    const bg_node *n = bg_node_at(g, id);
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    if (n->op == BRAID_OP_TOPK_VALUES || n->op == BRAID_OP_TOPK_INDICES) {
        bg_axis_lines l;
        bg_axis_lines_of(n, x, &l);
        size_t bytes = (size_t)topk_group_count(&l) * topk_group_bytes(l.len);
        if (l.olen > 0 && bytes > *scratch) *scratch = bytes;
    }
    return BRAID_OK;
}

void br_axis_run(const br_kernel_args *a) {
    const bg_node *n = a->node, *x = bg_node_at(a->g, n->inputs[0]);
    ax_ctx c = {.n = n,
                .t = x->dtype,
                .in = a->in[0],
                .out = a->out,
                .scratch = a->scratch};
    c.esz = braid_dtype_size(c.t);
    bg_axis_lines_of(n, x, &c.l);
    if (bg_numel(n) == 0) return;
    c.nblk = (c.l.inner + BR_BLOCK - 1) / BR_BLOCK;
    int64_t units = c.l.inner == 1 ? c.l.outer : c.l.outer * c.nblk;
    int64_t per = c.l.len * (c.l.inner < BR_BLOCK ? c.l.inner : BR_BLOCK);
    int64_t grain = per >= BR_GRAIN ? 1 : BR_GRAIN / (per > 0 ? per : 1);
    if (n->op == BRAID_OP_CUMSUM) {
        br_parallel_for(a->pool, units, grain, cumsum_units, &c);
    } else if (n->op == BRAID_OP_ARGMAX || n->op == BRAID_OP_ARGMIN) {
        br_parallel_for(a->pool, units, grain, arg_units, &c);
    } else {
        c.groups = topk_group_count(&c.l);
        br_parallel_for(a->pool, c.groups, 1, topk_groups, &c);
    }
}
