/* graph/window.c — the geometry of windowed ops (max_pool, avg_pool): the
 * one owner of their attribute layout, output sizes and taps, shared by
 * the builder, the reference, the CPU kernel and CUDA codegen. */
#include "graph/window.h"

#include <math.h>
#include <string.h>

/* Largest kernel, stride, dilation or pad: far past any real model, and
 * small enough that the output-size arithmetic cannot overflow with dims
 * ≤ 2^50. */
#define WIN_PARAM_MAX ((int64_t)1 << 30)

static const char *const param_name[5] = {"kernel", "stride", "dilation",
                                          "pad_lo", "pad_hi"};

int64_t bg_window_param(const bg_attrs *a, int p, int i) {
    int s = 3 * p + i;
    return s < BRAID_MAX_RANK ? a->start[s] : a->step[s - BRAID_MAX_RANK];
}

void bg_window_set_param(bg_attrs *a, int p, int i, int64_t v) {
    int s = 3 * p + i;
    if (s < BRAID_MAX_RANK)
        a->start[s] = v;
    else
        a->step[s - BRAID_MAX_RANK] = v;
}

int64_t bg_window_out_dim(int64_t in, int64_t k, int64_t stride, int64_t dil,
                          int64_t lo, int64_t hi, bool ceil) {
    int64_t span = in + lo + hi - dil * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t out = (ceil ? span + stride - 1 : span) / stride + 1;
    if (ceil && (out - 1) * stride >= in + lo) out--;
    return out;
}

void bg_window_get(const bg_node *n, const bg_node *x, bg_window *w) {
    int k = x->rank - 2, lead = 3 - k;
    bool cl =
        n->op != BRAID_OP_RESIZE && (n->attr.flags & BG_POOL_CHANNELS_LAST);
    int sp0 = cl ? 1 : 2; /* the first spatial axis */
    memset(w, 0, sizeof *w);
    w->inner = cl ? x->dims[x->rank - 1] : 1;
    w->planes = x->dims[0] * (cl ? w->inner : x->dims[1]);
    if (w->inner < 1) w->inner = 1; /* no planes: nothing is read */
    w->flags = n->attr.flags;
    for (int a = 0; a < 3; a++) {
        int i = a - lead; /* the user's spatial axis, < 0 for padding */
        w->in[a] = i < 0 ? 1 : x->dims[sp0 + i];
        w->out[a] = i < 0 ? 1 : n->dims[sp0 + i];
        w->kernel[a] = i < 0 ? 1 : bg_window_param(&n->attr, 0, i);
        w->stride[a] = i < 0 ? 1 : bg_window_param(&n->attr, 1, i);
        w->dilation[a] = i < 0 ? 1 : bg_window_param(&n->attr, 2, i);
        w->pad_lo[a] = i < 0 ? 0 : bg_window_param(&n->attr, 3, i);
        w->pad_hi[a] = i < 0 ? 0 : bg_window_param(&n->attr, 4, i);
    }
}

double bg_window_volume(const bg_node *n) {
    double v = 1;
    if (n->op == BRAID_OP_RESIZE) {
        if (BG_RESIZE_MODE(n->attr.flags) == BRAID_RESIZE_LINEAR)
            for (int i = 0; i < n->rank && i < 3; i++)
                v *= 2;
        return v;
    }
    for (int i = 0; i + 2 < n->rank && i < 3; i++)
        v *= (double)bg_window_param(&n->attr, 0, i);
    return v;
}

bool bg_window_batched(const bg_node *n, const bg_node *x) {
    if (n->op != BRAID_OP_RESIZE) return true;
    int slot = 0 - (n->rank - 3);
    return n->rank > 3 || (n->dims[0] == x->dims[0] &&
                           bg_resize_scale(&n->attr, slot) == 1);
}

/* First j ≥ 0 with base + j·d ≥ lo (base may be negative). */
static int64_t first_tap(int64_t base, int64_t d, int64_t lo) {
    return base >= lo ? 0 : (lo - base + d - 1) / d;
}

void bg_window_taps(const bg_window *w, int a, int64_t o, int64_t *j0,
                    int64_t *j1, int64_t *padded) {
    int64_t base = o * w->stride[a] - w->pad_lo[a], d = w->dilation[a];
    int64_t k = w->kernel[a];
    /* taps below `hi` are those j < first_tap(base, d, hi) */
    int64_t a0 = first_tap(base, d, 0), a1 = first_tap(base, d, w->in[a]);
    int64_t p0 = first_tap(base, d, -w->pad_lo[a]);
    int64_t p1 = first_tap(base, d, w->in[a] + w->pad_hi[a]);
    *j0 = a0 < k ? a0 : k;
    *j1 = a1 < k ? a1 : k;
    if (*j1 < *j0) *j1 = *j0;
    int64_t q0 = p0 < k ? p0 : k, q1 = p1 < k ? p1 : k;
    *padded = q1 > q0 ? q1 - q0 : 0;
}

/* ---- the builder's checks ------------------------------------------------ */

static braid_status window_params_ok(braid_graph *g, const char *op,
                                     const bg_attrs *a, int k) {
    for (int i = 0; i < k; i++)
        for (int p = 0; p < 5; p++) {
            int64_t v = bg_window_param(a, p, i), min = p < 3 ? 1 : 0;
            if (v < min || v > WIN_PARAM_MAX)
                return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                               "%s: %s %lld on spatial axis %d; expected %lld "
                               "to %lld",
                               op, param_name[p], (long long)v, i,
                               (long long)min, (long long)WIN_PARAM_MAX);
        }
    for (int s = 3 * 5; s < 2 * BRAID_MAX_RANK; s++) /* unused slots */
        if ((s < BRAID_MAX_RANK ? a->start[s] : a->step[s - BRAID_MAX_RANK]))
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "%s: unused attribute slot %d is set", op, s);
    return BRAID_OK;
}

braid_status bg_infer_window(braid_graph *g, braid_op op, const bg_node *x,
                             const bg_attrs *a, int rank, const int64_t *dims,
                             bg_node *out) {
    if (op == BRAID_OP_RESIZE) return bg_infer_resize(g, x, a, rank, dims, out);
    const char *name = bg_op(op)->name;
    char t[BG_ERROR_MAX / 2];
    bg_type_str(x, t, sizeof t);
    int k = x->rank - 2;
    if (k < 1 || k > 3)
        return bg_fail(g, BRAID_ERR_SHAPE,
                       "%s: operand %s; expected [N, C] and 1 to 3 spatial "
                       "axes",
                       name, t);
    if (!bg_op_accepts(op, x->dtype))
        return bg_fail(g, BRAID_ERR_DTYPE, "%s: operand %s; expected %s", name,
                       t, bg_op_dtypes_text(op));
    if (a->flags &
            ~(BG_POOL_CEIL | BG_POOL_COUNT_PAD | BG_POOL_CHANNELS_LAST) ||
        (op == BRAID_OP_MAX_POOL && (a->flags & BG_POOL_COUNT_PAD)))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: flags 0x%x; expected ceil_mode%s and "
                       "channels_last only",
                       name, (unsigned)a->flags,
                       op == BRAID_OP_AVG_POOL ? ", count_include_pad" : "");
    braid_status s = window_params_ok(g, name, a, k);
    if (s != BRAID_OK) return s;
    bool cl = a->flags & BG_POOL_CHANNELS_LAST;
    int sp0 = cl ? 1 : 2; /* the first spatial axis */
    out->rank = x->rank;
    out->dtype = x->dtype;
    out->dims[0] = x->dims[0];
    out->dims[cl ? x->rank - 1 : 1] = x->dims[cl ? x->rank - 1 : 1];
    for (int i = 0; i < k; i++) {
        int64_t v[5];
        for (int p = 0; p < 5; p++)
            v[p] = bg_window_param(a, p, i);
        int64_t o = bg_window_out_dim(x->dims[sp0 + i], v[0], v[1], v[2], v[3],
                                      v[4], a->flags & BG_POOL_CEIL);
        if (o <= 0)
            return bg_fail(g, BRAID_ERR_SHAPE,
                           "%s: spatial axis %d of %s: a window of %lld taps "
                           "at dilation %lld does not fit %lld elements "
                           "padded by %lld and %lld",
                           name, i, t, (long long)v[0], (long long)v[2],
                           (long long)x->dims[sp0 + i], (long long)v[3],
                           (long long)v[4]);
        out->dims[sp0 + i] = o;
    }
    memcpy(out->attr.start, a->start, sizeof a->start);
    memcpy(out->attr.step, a->step, sizeof a->step);
    out->attr.flags = a->flags;
    return BRAID_OK;
}

/* ---- float64 meaning (graph/eval.c's dispatch calls it) ------------------ */

/* One output element of plane pl at spatial position o[3] in float64:
 * max propagates NaN and is -inf over a window with no taps (rounded to
 * the dtype: i32 saturates); average is the sum over the taps divided by
 * their count, or by the padded count with BG_POOL_COUNT_PAD (0 / 0 is
 * NaN). */
static double window_value(const bg_window *w, bool max, const double *x,
                           int64_t pl, const int64_t *o) {
    int64_t j0[3], j1[3], pad[3];
    for (int a = 0; a < 3; a++)
        bg_window_taps(w, a, o[a], &j0[a], &j1[a], &pad[a]);
    double acc = max ? -INFINITY : 0;
    int64_t ivol = w->in[0] * w->in[1] * w->in[2];
    for (int64_t i = j0[0]; i < j1[0]; i++)
        for (int64_t j = j0[1]; j < j1[1]; j++)
            for (int64_t k = j0[2]; k < j1[2]; k++) {
                int64_t p[3] = {i, j, k}, s = 0;
                for (int a = 0; a < 3; a++)
                    s = s * w->in[a] + o[a] * w->stride[a] - w->pad_lo[a] +
                        p[a] * w->dilation[a];
                double v = x[bg_window_at(w, pl, ivol, s)];
                if (!max)
                    acc += v;
                else if (v > acc || v != v)
                    acc = v;
                if (max && acc != acc) return acc;
            }
    if (max) return acc;
    int64_t n = (j1[0] - j0[0]) * (j1[1] - j0[1]) * (j1[2] - j0[2]);
    if (w->flags & BG_POOL_COUNT_PAD) n = pad[0] * pad[1] * pad[2];
    return acc / (double)n;
}

void bg_eval_window(const bg_node *n, const bg_node *x, const double *in,
                    double *out, int64_t lo, int64_t hi) {
    if (n->op == BRAID_OP_RESIZE) {
        bg_eval_resize(n, x, in, out, lo, hi);
        return;
    }
    bg_window w;
    bg_window_get(n, x, &w);
    int64_t ovol = w.out[0] * w.out[1] * w.out[2];
    for (int64_t e = lo; e < hi; e++) {
        int64_t o[3], pl, r;
        bg_window_split(&w, e, ovol, &pl, &r);
        for (int a = 2; a >= 0; a--) {
            o[a] = r % w.out[a];
            r /= w.out[a];
        }
        out[e] = window_value(&w, n->op == BRAID_OP_MAX_POOL, in, pl, o);
    }
}

/* ---- a pool's taps as graph nodes ---------------------------------------- */

void bg_pool_taps_init(const braid_graph *g, uint32_t pool, bg_pool_taps *t) {
    const bg_node *n = bg_node_at(g, pool), *x = bg_node_at(g, n->inputs[0]);
    bg_window_get(n, x, &t->w);
    t->rank = x->rank;
    memcpy(t->dims, x->dims, sizeof t->dims);
    for (int a = 0; a < 3; a++) {
        const bg_window *w = &t->w;
        int64_t need = (w->out[a] - 1) * w->stride[a] +
                       (w->kernel[a] - 1) * w->dilation[a] + 1 - w->in[a] -
                       w->pad_lo[a];
        t->hi[a] = need > 0 ? need : 0;
    }
}

int bg_pool_taps_axis(const bg_pool_taps *t, int a) {
    int i = a - (3 - (t->rank - 2));
    return i >= 0 ? 2 + i : -1;
}

braid_tensor bg_pool_taps_pad(braid_graph *g, const bg_pool_taps *t,
                              braid_tensor x, double value) {
    int64_t lo[BRAID_MAX_RANK] = {0}, hi[BRAID_MAX_RANK] = {0};
    for (int a = 0; a < 3; a++) {
        int ax = bg_pool_taps_axis(t, a);
        if (ax < 0) continue;
        lo[ax] = t->w.pad_lo[a];
        hi[ax] = t->hi[a];
    }
    return braid_pad(g, x, lo, hi, BRAID_PAD_CONSTANT, value);
}

braid_tensor bg_pool_tap(braid_graph *g, const bg_pool_taps *t, braid_tensor xp,
                         const int64_t *j) {
    int64_t st[BRAID_MAX_RANK] = {0}, sp[BRAID_MAX_RANK], stp[BRAID_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        sp[i] = t->dims[i];
        stp[i] = 1;
    }
    for (int a = 0; a < 3; a++) {
        int ax = bg_pool_taps_axis(t, a);
        if (ax < 0) continue;
        st[ax] = j[a] * t->w.dilation[a];
        stp[ax] = t->w.stride[a];
        sp[ax] = st[ax] + (t->w.out[a] - 1) * t->w.stride[a] + 1;
    }
    return braid_slice(g, xp, st, sp, stp);
}
