/* graph/grad_window.c — gradients of max_pool and avg_pool
 * (graph/window.h), one window tap at a time, and of resize.
 *
 * Tap j of every window reads x at o·stride − pad_lo + j·dilation along
 * each spatial axis: a strided slice of x padded so every window fits.
 * The gradient puts each tap's share of gy back at those places (the
 * un-slice of graph/grad_util.c, then the padding cropped) and sums over
 * the taps (the taps themselves: graph/window.h). avg_pool's share is gy
 * divided by the window's divisor (a constant: the geometry is static);
 * max_pool's is shared evenly among the taps equal to the maximum, as for
 * reduce_max. Taps in the padding read nothing and get nothing. Nodes: a few
 * per tap and spatial axis (9 taps for a 3×3 window).
 *
 * resize is linear in x and separable: along each of the last three axes
 * an output position is a weighted sum of at most two input positions
 * (bg_resize_taps), the same weights for every line. So y = x ×₀ W₀ ×₁ W₁
 * ×₂ W₂ with W_a the [out_a, in_a] matrix of those weights, and the
 * gradient is gy contracted with each W_a along its axis (W_aᵀ applied):
 * one matmul per axis whose map is not the identity, W_a a constant
 * built from bg_resize_taps, so forward and gradient share one formula. */
#include "graph/grad.h"
#include "graph/window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One pool node's taps (graph/window.h) and what the rules add to them. */
typedef struct gw {
    bg_pool_taps t;
    int64_t odims[BRAID_MAX_RANK]; /* the pool's output shape */
    braid_dtype dt;
} gw;

static void gw_init(bg_grad_ctx *c, const bg_grad_node *n, gw *s) {
    int rank;
    bg_pool_taps_init(bg_grad_graph(c), n->id, &s->t);
    bg_grad_type(c, n->id, &s->dt, &rank, s->odims); /* dtype as x's */
}

/* v (y's shape) put back where tap j read, in x's shape. */
static braid_tensor gw_place(bg_grad_ctx *c, const gw *s, braid_tensor v,
                             const int64_t *j) {
    for (int a = 0; a < 3; a++) {
        int ax = bg_pool_taps_axis(&s->t, a);
        if (ax < 0) continue;
        const bg_window *w = &s->t.w;
        int64_t full = w->in[a] + w->pad_lo[a] + s->t.hi[a];
        v = bg_grad_unslice_axis(c, v, ax, full, j[a] * w->dilation[a],
                                 w->stride[a]);
        v = bg_grad_slice_axis(c, v, ax, w->pad_lo[a],
                               w->pad_lo[a] + w->in[a]);
    }
    return v;
}

/* 1 / avg_pool's divisor per output position, [1, 1, out...]. */
static braid_tensor gw_inv_divisor(bg_grad_ctx *c, const gw *s) {
    const bg_window *w = &s->t.w;
    int64_t n = w->out[0] * w->out[1] * w->out[2];
    double *inv = malloc((size_t)(n > 0 ? n : 1) * sizeof *inv);
    if (inv == NULL) {
        bg_fail(bg_grad_graph(c), BRAID_ERR_OUT_OF_MEMORY,
                "grad: avg_pool divisors");
        return BRAID_NONE;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t o[3] = {e / (w->out[1] * w->out[2]),
                        e / w->out[2] % w->out[1], e % w->out[2]};
        double div = 1;
        for (int a = 0; a < 3; a++) {
            int64_t j0, j1, padded;
            bg_window_taps(w, a, o[a], &j0, &j1, &padded);
            div *= (double)(w->flags & BG_POOL_COUNT_PAD ? padded : j1 - j0);
        }
        inv[e] = div > 0 ? 1 / div : 0;
    }
    int64_t dims[BRAID_MAX_RANK] = {1, 1};
    for (int i = 2; i < s->t.rank; i++)
        dims[i] = s->odims[i];
    braid_graph *g = bg_grad_graph(c);
    braid_tensor t = braid_constant(g, BRAID_F64, s->t.rank, dims, inv);
    free(inv);
    return s->dt == BRAID_F64 ? t : braid_cast(g, t, s->dt);
}

static void gw_avg(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    gw s;
    gw_init(c, n, &s);
    braid_tensor v = braid_mul(g, gy, gw_inv_divisor(c, &s)), dx = BRAID_NONE;
    int64_t j[3];
    BG_POOL_FOR_TAPS(&s.t, j) {
        braid_tensor t = gw_place(c, &s, v, j);
        dx = braid_tensor_valid(dx) ? braid_add(g, dx, t) : t;
    }
    bg_grad_acc(c, n, 0, dx);
}

static void gw_max(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    gw s;
    gw_init(c, n, &s);
    int64_t taps = s.t.w.kernel[0] * s.t.w.kernel[1] * s.t.w.kernel[2], t = 0;
    braid_tensor *hit = bg_alloc(g, (size_t)taps * sizeof *hit);
    if (hit == NULL) return;
    braid_tensor xp =
        bg_pool_taps_pad(g, &s.t, (braid_tensor){n->inputs[0]}, -INFINITY);
    braid_tensor y = {n->id}, cnt = BRAID_NONE, dx = BRAID_NONE;
    int64_t j[3];
    BG_POOL_FOR_TAPS(&s.t, j) {
        hit[t] =
            braid_cast(g, braid_eq(g, bg_pool_tap(g, &s.t, xp, j), y), s.dt);
        cnt = t++ ? braid_add(g, cnt, hit[t - 1]) : hit[0];
    }
    braid_tensor share = braid_div(g, gy, cnt);
    t = 0;
    BG_POOL_FOR_TAPS(&s.t, j) {
        braid_tensor p = gw_place(c, &s, braid_mul(g, share, hit[t++]), j);
        dx = braid_tensor_valid(dx) ? braid_add(g, dx, p) : p;
    }
    bg_free(g, hit, (size_t)taps * sizeof *hit);
    bg_grad_acc(c, n, 0, dx);
}

/* W_a of resize r ([out_a, in_a], dtype dt) as a constant; *identity set
 * (and no node made) when it is the identity map. */
static braid_tensor gw_resize_matrix(braid_graph *g, const bg_resize *r, int a,
                                     braid_dtype dt, bool *identity) {
    int64_t no = r->out[a], ni = r->in[a];
    double *w = calloc((size_t)(no * ni > 0 ? no * ni : 1), sizeof *w);
    if (w == NULL) {
        bg_fail(g, BRAID_ERR_OUT_OF_MEMORY, "grad: resize weights [%lld, %lld]",
                (long long)no, (long long)ni);
        return BRAID_NONE;
    }
    for (int64_t o = 0; o < no; o++) {
        int64_t idx[2];
        double wt[2];
        int nt = bg_resize_taps(r, a, o, idx, wt);
        for (int t = 0; t < nt; t++)
            w[o * ni + idx[t]] += wt[t];
    }
    *identity = no == ni;
    for (int64_t e = 0; *identity && e < no * ni; e++)
        *identity = w[e] == (e / ni == e % ni ? 1.0 : 0.0);
    braid_tensor t = BRAID_NONE;
    if (!*identity) {
        t = braid_constant(g, BRAID_F64, 2, (const int64_t[]){no, ni}, w);
        if (dt != BRAID_F64) t = braid_cast(g, t, dt);
    }
    free(w);
    return t;
}

static void gw_resize(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    bg_resize r;
    bg_resize_get(bg_node_at(g, n->id), bg_node_at(g, n->inputs[0]), &r);
    braid_dtype dt = n->dtype; /* resize keeps x's dtype and rank */
    int rank = n->rank;
    int64_t cur[BRAID_MAX_RANK];
    memcpy(cur, n->dims, sizeof cur[0] * (size_t)rank);
    braid_tensor t = gy;
    for (int a = 2; a >= 0; a--) {
        int ax = rank - 3 + a;
        if (ax < 0) continue;
        bool identity = false;
        braid_tensor w = gw_resize_matrix(g, &r, a, dt, &identity);
        if (identity) continue;
        int64_t lead = 1, rest = 1;
        for (int i = 0; i < ax; i++)
            lead *= cur[i];
        for (int i = ax + 1; i < rank; i++)
            rest *= cur[i];
        if (rest == 1) { /* the axis is innermost: [lead, out] · W */
            t = braid_reshape(g, t, 2, (const int64_t[]){lead, cur[ax]});
            t = braid_matmul(g, t, w, 0);
        } else { /* Wᵀ [in, out] · [lead, out, rest], W broadcast */
            t = braid_reshape(g, t, 3, (const int64_t[]){lead, cur[ax], rest});
            t = braid_matmul(g, w, t, BRAID_TRANSPOSE_A);
        }
        cur[ax] = r.in[a];
        t = braid_reshape(g, t, rank, cur);
    }
    bg_grad_acc(c, n, 0, t);
}

void bg_grad_window(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    if (n->op != BRAID_OP_RESIZE &&
        (bg_node_at(g, n->id)->attr.flags & BG_POOL_CHANNELS_LAST)) {
        bg_fail(g, BRAID_ERR_UNSUPPORTED,
                "grad: node %u (%s channels_last): no gradient rule; "
                "differentiate the channels-first pool",
                (unsigned)n->id, bg_op(n->op)->name);
        return;
    }
    if (n->op == BRAID_OP_MAX_POOL)
        gw_max(c, n, gy);
    else if (n->op == BRAID_OP_RESIZE)
        gw_resize(c, n, gy);
    else
        gw_avg(c, n, gy);
}
