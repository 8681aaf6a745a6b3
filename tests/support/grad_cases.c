/* tests/support/grad_cases.c — one random small graph per differentiable
 * op (and composite), for the gradient suites. Shapes are kept small
 * (≤ 4 per dim) because finite differences run the reference twice per
 * input element. */
#include "tests/support/grad_cases.h"

#include "graph/window.h"

#include <stdio.h>
#include <string.h>

/* What a case builder gets: the graph, the dtype, the rng, the case (for
 * ranges and its description). */
typedef struct gc_env {
    braid_graph *g;
    braid_dtype dt;
    uint64_t *st;
    ts_grad_case *c;
} gc_env;

typedef braid_tensor (*gc_build_fn)(gc_env *e, braid_op op);

static braid_tensor gc_input(gc_env *e, const ts_shape *s, ts_range r) {
    char name[16];
    snprintf(name, sizeof name, "x%u", (unsigned)e->c->ninputs);
    e->c->range[e->c->ninputs++] = r;
    return ts_shape_input(e->g, name, e->dt, s);
}

static ts_shape gc_shape(gc_env *e, int min_rank, int max_rank) {
    return ts_random_shape(e->st, min_rank, max_rank, 4);
}

static int gc_int(gc_env *e, int lo, int hi) {
    return ts_rand_int(e->st, lo, hi);
}

static void gc_note(gc_env *e, const char *fmt, const char *arg) {
    size_t n = strlen(e->c->what);
    snprintf(e->c->what + n, sizeof e->c->what - n, fmt, arg);
}

/* ---- elementwise -------------------------------------------------------- */

static ts_range gc_unary_range(braid_op op) {
    switch (op) {
    case BRAID_OP_LOG:
    case BRAID_OP_SQRT:
    case BRAID_OP_RSQRT:
        return TS_RANGE(0.5, 2);
    case BRAID_OP_RECIPROCAL:
        return (ts_range){0.5, 2, true, false};
    case BRAID_OP_TAN:
        return TS_RANGE(-1.2, 1.2);
    case BRAID_OP_ASIN:
    case BRAID_OP_ACOS:
    case BRAID_OP_ATANH:
        return TS_RANGE(-0.8, 0.8);
    case BRAID_OP_ACOSH:
        return TS_RANGE(1.2, 3);
    default:
        return TS_RANGE(-2, 2);
    }
}

static braid_tensor gc_unary(gc_env *e, braid_op op) {
    ts_shape s = gc_shape(e, 0, 3);
    return braid_unary(e->g, op, gc_input(e, &s, gc_unary_range(op)));
}

static braid_tensor gc_binary(gc_env *e, braid_op op) {
    ts_shape a, b;
    int variant = gc_int(e, 0, 7);
    ts_shape_pair(e->st, variant, &a, &b);
    char v[8];
    snprintf(v, sizeof v, "%d", variant);
    gc_note(e, " pair %s", v);
    ts_range ra = TS_RANGE(-2, 2), rb = TS_RANGE(-2, 2);
    if (op == BRAID_OP_DIV || op == BRAID_OP_MOD || op == BRAID_OP_FMOD)
        rb = (ts_range){0.5, 2, true, false};
    if (op == BRAID_OP_POW) ra = TS_RANGE(0.5, 2);
    braid_tensor x = gc_input(e, &a, ra);
    return braid_binary(e->g, op, x, gc_input(e, &b, rb));
}

static braid_tensor gc_where(gc_env *e, braid_op op) {
    (void)op;
    ts_shape a, b;
    ts_shape_pair(e->st, gc_int(e, 0, 7), &a, &b);
    braid_tensor x = gc_input(e, &a, TS_RANGE(-2, 2));
    braid_tensor y = gc_input(e, &b, TS_RANGE(-2, 2));
    /* the condition: a comparison of the values, so it is data-dependent */
    braid_tensor cond = braid_gt(e->g, x, braid_fill(e->g, e->dt, 0, NULL, 0));
    return braid_where(e->g, cond, x, y);
}

/* A float → float cast and back (f32 in the middle for f64: the step and
 * tolerance of the case allow for f32 rounding). */
static braid_tensor gc_cast(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 0, 3);
    braid_tensor x = gc_input(e, &s, TS_RANGE(-2, 2));
    braid_dtype mid = e->dt == BRAID_F32 ? BRAID_F64 : BRAID_F32;
    if (mid == BRAID_F32) {
        e->c->fd_step = 1e-3;
        e->c->fd_tol = 1e-3;
    }
    return braid_cast(e->g, braid_cast(e->g, x, mid), e->dt);
}

/* ---- matmul, reductions, softmax, layer norm ---------------------------- */

static braid_tensor gc_matmul(gc_env *e, braid_op op) {
    (void)op;
    unsigned flags = (unsigned)gc_int(e, 0, 3);
    ts_shape ba = gc_shape(e, 0, 2), bb = ba;
    if (ba.rank > 0 && gc_int(e, 0, 1)) bb.dims[0] = 1; /* batch broadcast */
    if (gc_int(e, 0, 2) == 0) bb.rank = 0;
    int64_t m = gc_int(e, 1, 4), k = gc_int(e, 1, 4), n = gc_int(e, 1, 4);
    ts_shape a = ba, b = bb;
    a.dims[a.rank++] = flags & BRAID_TRANSPOSE_A ? k : m;
    a.dims[a.rank++] = flags & BRAID_TRANSPOSE_A ? m : k;
    b.dims[b.rank++] = flags & BRAID_TRANSPOSE_B ? n : k;
    b.dims[b.rank++] = flags & BRAID_TRANSPOSE_B ? k : n;
    static const char *names[] = {"", " ta", " tb", " ta tb"};
    gc_note(e, "%s", names[flags]);
    braid_tensor x = gc_input(e, &a, TS_RANGE(-1, 1));
    return braid_matmul(e->g, x, gc_input(e, &b, TS_RANGE(-1, 1)), flags);
}

static braid_tensor gc_reduce(gc_env *e, braid_op op) {
    ts_shape s = gc_shape(e, 0, 4);
    int axes[BRAID_MAX_RANK], n = 0;
    for (int i = 0; i < s.rank; i++)
        if (gc_int(e, 0, 1)) axes[n++] = i - (gc_int(e, 0, 1) ? s.rank : 0);
    bool keep = gc_int(e, 0, 1);
    gc_note(e, "%s", keep ? " keepdims" : "");
    braid_tensor x = gc_input(e, &s, TS_RANGE(-2, 2));
    switch (op) {
    case BRAID_OP_SUM:
        return braid_sum(e->g, x, n, axes, keep);
    case BRAID_OP_MEAN:
        return braid_mean(e->g, x, n, axes, keep);
    case BRAID_OP_REDUCE_MAX:
        return braid_reduce_max(e->g, x, n, axes, keep);
    default:
        return braid_reduce_min(e->g, x, n, axes, keep);
    }
}

static braid_tensor gc_softmax(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 1, 4);
    braid_tensor x = gc_input(e, &s, TS_RANGE(-3, 3));
    return braid_softmax(e->g, x, gc_int(e, -s.rank, s.rank - 1));
}

static braid_tensor gc_layer_norm(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 1, 3), p = {1, {s.dims[s.rank - 1]}};
    s.dims[s.rank - 1] = p.dims[0] = gc_int(e, 2, 5);
    braid_tensor x = gc_input(e, &s, TS_RANGE(-2, 2));
    braid_tensor gamma = gc_input(e, &p, TS_RANGE(0.5, 1.5));
    braid_tensor beta = gc_input(e, &p, TS_RANGE(-1, 1));
    return braid_layer_norm(e->g, x, gamma, beta, 1e-5);
}

/* ---- shape ops ---------------------------------------------------------- */

static braid_tensor gc_reshape(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 0, 4);
    braid_tensor x = gc_input(e, &s, TS_RANGE(-2, 2));
    int64_t dims[2] = {s.rank > 0 ? s.dims[0] : 1, -1};
    return braid_reshape(e->g, x, 2, dims);
}

static braid_tensor gc_permute(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 1, 4);
    int perm[BRAID_MAX_RANK];
    for (int i = 0; i < s.rank; i++)
        perm[i] = i;
    for (int i = s.rank - 1; i > 0; i--) {
        int j = gc_int(e, 0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return braid_permute(e->g, gc_input(e, &s, TS_RANGE(-2, 2)), perm);
}

static braid_tensor gc_slice(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = ts_random_shape(e->st, 1, 3, 7);
    int64_t start[BRAID_MAX_RANK], stop[BRAID_MAX_RANK], step[BRAID_MAX_RANK];
    for (int i = 0; i < s.rank; i++) {
        int64_t d = s.dims[i];
        start[i] = gc_int(e, -(int)d, (int)d);
        stop[i] = gc_int(e, -(int)d - 2, (int)d + 1);
        /* negative steps too: the gradient reverses the axis back */
        step[i] = gc_int(e, 1, 3) * (gc_int(e, 0, 1) ? -1 : 1);
    }
    braid_tensor x = gc_input(e, &s, TS_RANGE(-2, 2));
    return braid_slice(e->g, x, start, stop, step);
}

static braid_tensor gc_concat(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 1, 3);
    int n = gc_int(e, 1, 3), axis = gc_int(e, 0, s.rank - 1);
    braid_tensor xs[3];
    for (int i = 0; i < n; i++) {
        s.dims[axis] = gc_int(e, 0, 3);
        xs[i] = gc_input(e, &s, TS_RANGE(-2, 2));
    }
    return braid_concat(e->g, n, xs, axis);
}

static braid_tensor gc_broadcast_to(gc_env *e, braid_op op) {
    (void)op;
    ts_shape a, b;
    ts_shape_pair(e->st, gc_int(e, 0, 7), &a, &b);
    int r;
    int64_t d[BRAID_MAX_RANK];
    bg_broadcast_shapes(a.rank, a.dims, b.rank, b.dims, &r, d);
    return braid_broadcast_to(e->g, gc_input(e, &b, TS_RANGE(-2, 2)), r, d);
}

/* ---- collectives (local groups of k members, joined on axis 0) ---------- */

static braid_tensor gc_collective(gc_env *e, braid_op op) {
    int k = gc_int(e, 2, 3);
    ts_shape s = gc_shape(e, 1, 3);
    if (op == BRAID_OP_REDUCE_SCATTER) s.dims[0] = k * gc_int(e, 1, 2);
    braid_tensor xs[3], outs[3];
    for (int i = 0; i < k; i++)
        xs[i] = gc_input(e, &s, TS_RANGE(-2, 2));
    braid_reduce_kind red = (braid_reduce_kind)gc_int(e, 0, 3);
    if (op == BRAID_OP_ALL_REDUCE || op == BRAID_OP_REDUCE_SCATTER)
        gc_note(e, " %s", braid_reduce_name(red));
    if (op == BRAID_OP_ALL_REDUCE) braid_all_reduce(e->g, k, xs, red, outs);
    if (op == BRAID_OP_REDUCE_SCATTER)
        braid_reduce_scatter(e->g, k, xs, red, outs);
    if (op == BRAID_OP_ALL_GATHER) braid_all_gather(e->g, k, xs, outs);
    if (op == BRAID_OP_BROADCAST)
        braid_broadcast(e->g, k, xs, gc_int(e, 0, k - 1), outs);
    if (braid_graph_status(e->g) != BRAID_OK) return BRAID_NONE;
    return braid_concat(e->g, k, outs, 0);
}

/* ---- gather and scatter (indices are constants: they get no gradient) ---- */

/* A constant i32 tensor of shape s whose element p indexes an axis of
 * length bound(p): values in -bound .. bound-1 (duplicates likely). */
static braid_tensor gc_indices(gc_env *e, const ts_shape *s, int m,
                               const int64_t *bounds) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    int32_t v[4096];
    for (int64_t p = 0; p < n && p < 4096; p++) {
        int b = (int)bounds[m > 0 ? p % m : 0];
        v[p] = gc_int(e, -b, b - 1);
    }
    return braid_constant(e->g, BRAID_I32, s->rank, s->dims, v);
}

/* gather (form 0 axis, 1 elements, 2 nd) or scatter (form 3 elements, 4
 * nd, reduction none or add). */
static braid_tensor gc_index(gc_env *e, braid_op op) {
    ts_shape xs = gc_shape(e, 1, 3), is = xs, us;
    int r = xs.rank, form = op == BRAID_OP_GATHER ? gc_int(e, 0, 2)
                                                  : gc_int(e, 3, 4);
    int axis = gc_int(e, 0, r - 1), b = form == 2 ? gc_int(e, 0, r - 1) : 0;
    braid_tensor x = gc_input(e, &xs, TS_RANGE(-2, 2)), i;
    static const char *const forms[] = {"axis", "elements", "nd", "elements",
                                        "nd"};
    gc_note(e, " %s", forms[form]);
    if (form == 0) {
        is = gc_shape(e, 0, 2);
        i = gc_indices(e, &is, 0, &xs.dims[axis]);
        return braid_gather(e->g, x, i, axis - r);
    }
    if (form == 1 || form == 3) {
        for (int k = 0; k < r; k++)
            is.dims[k] = k == axis ? gc_int(e, 1, 4)
                                   : gc_int(e, 1, (int)xs.dims[k]);
        i = gc_indices(e, &is, 0, &xs.dims[axis]);
        if (form == 1) return braid_gather_elements(e->g, x, i, axis);
        braid_scatter_reduction red = (braid_scatter_reduction)gc_int(e, 0, 1);
        gc_note(e, " %s", red ? "add" : "none");
        return braid_scatter_elements(e->g, x, i, gc_input(e, &is,
                                                           TS_RANGE(-2, 2)),
                                      axis, red);
    }
    int m = gc_int(e, 1, r - b), q = gc_int(e, 0, 1);
    is.rank = b + q + 1;
    for (int k = b; k < b + q; k++)
        is.dims[k] = gc_int(e, 1, 3);
    is.dims[b + q] = m;
    i = gc_indices(e, &is, m, &xs.dims[b]);
    if (form == 2) return braid_gather_nd(e->g, x, i, b);
    us.rank = q + r - m;
    for (int k = 0; k < q; k++)
        us.dims[k] = is.dims[k];
    for (int k = m; k < r; k++)
        us.dims[q + k - m] = xs.dims[k];
    braid_scatter_reduction red = (braid_scatter_reduction)gc_int(e, 0, 1);
    gc_note(e, " %s", red ? "add" : "none");
    return braid_scatter_nd(e->g, x, i, gc_input(e, &us, TS_RANGE(-2, 2)), red);
}

/* ---- index ops: cumsum, topk values, reduce_prod ------------------------ */

static braid_tensor gc_axis(gc_env *e, braid_op op) {
    ts_shape s = gc_shape(e, 1, 4);
    int axis = gc_int(e, -s.rank, s.rank - 1);
    int ax = axis < 0 ? axis + s.rank : axis;
    bool f1 = gc_int(e, 0, 1), f2 = gc_int(e, 0, 1);
    braid_tensor x = gc_input(e, &s, TS_RANGE(-2, 2));
    if (op == BRAID_OP_CUMSUM) {
        gc_note(e, "%s", f1 ? " exclusive" : "");
        gc_note(e, "%s", f2 ? " reverse" : "");
        return braid_cumsum(e->g, x, axis, f1, f2);
    }
    gc_note(e, "%s", f1 ? " smallest" : "");
    return braid_topk(e->g, x, gc_int(e, 0, (int)s.dims[ax]), axis, !f1, NULL);
}

/* Products of values in ±[0.5, 2], or (a third of the cases) of the
 * integers -1, 0, 1: sets with no, one and several exact zeros, where the
 * product is linear in each element, so central differences are exact. */
static braid_tensor gc_prod(gc_env *e, braid_op op) {
    (void)op;
    ts_shape s = gc_shape(e, 1, 3);
    int axes[BRAID_MAX_RANK], n = 0;
    for (int i = 0; i < s.rank; i++)
        if (gc_int(e, 0, 1)) axes[n++] = i;
    bool keep = gc_int(e, 0, 1), zeros = gc_int(e, 0, 2) == 0;
    gc_note(e, "%s", keep ? " keepdims" : "");
    gc_note(e, "%s", zeros ? " zeros" : "");
    ts_range r = zeros ? (ts_range){-1, 1, false, true}
                       : (ts_range){0.5, 2, true, false};
    return braid_reduce_prod(e->g, gc_input(e, &s, r), n, axes, keep);
}

/* ---- pooling: x [N, C, 1-3 spatial axes], random windows ----------------- */

static braid_tensor gc_pool(gc_env *e, braid_op op) {
    braid_pool_params p;
    memset(&p, 0, sizeof p);
    ts_shape x = {2, {gc_int(e, 1, 2), gc_int(e, 1, 2)}};
    int k = gc_int(e, 1, 3);
    for (int i = 0; i < k; i++) {
        int64_t in = gc_int(e, 2, k == 3 ? 4 : 6);
        x.dims[x.rank++] = in;
        p.kernel[i] = gc_int(e, 1, 3);
        p.strides[i] = gc_int(e, 1, 2);
        p.dilations[i] = gc_int(e, 1, 2);
        p.pads_lo[i] = gc_int(e, 0, (int)p.kernel[i] - 1);
        p.pads_hi[i] = gc_int(e, 0, (int)p.kernel[i] - 1);
        while (in + p.pads_lo[i] + p.pads_hi[i] <
               p.dilations[i] * (p.kernel[i] - 1) + 1)
            p.kernel[i]--; /* keep at least one window */
    }
    p.ceil_mode = gc_int(e, 0, 1);
    p.count_include_pad = gc_int(e, 0, 1);
    gc_note(e, "%s", p.ceil_mode ? " ceil" : "");
    gc_note(e, "%s", p.count_include_pad ? " count_pad" : "");
    braid_tensor xt = gc_input(e, &x, TS_RANGE(-2, 2));
    return op == BRAID_OP_MAX_POOL ? braid_max_pool(e->g, xt, &p)
                                   : braid_avg_pool(e->g, xt, &p);
}

/* ---- conv ops: x [N, C, 1-2 spatial axes], groups 1-2, random geometry --- */

static braid_tensor gc_conv(gc_env *e, braid_op op) {
    bool tr = op == BRAID_OP_CONV_TRANSPOSE;
    int64_t G = gc_int(e, 1, 2), cg = gc_int(e, 1, 2), og = gc_int(e, 1, 2);
    int ns = gc_int(e, 1, 2);
    braid_conv_params p;
    memset(&p, 0, sizeof p);
    ts_shape x = {2, {gc_int(e, 1, 2), G * cg}};
    ts_shape w = {2, {tr ? G * cg : G * og, tr ? og : cg}};
    for (int i = 0; i < ns; i++) {
        int64_t k = gc_int(e, 1, 3);
        p.strides[i] = gc_int(e, 1, 2);
        p.dilations[i] = gc_int(e, 1, 2);
        p.pads[i] = gc_int(e, 0, (int)k - 1);
        p.pads[ns + i] = gc_int(e, 0, (int)k - 1);
        int64_t span = (k - 1) * p.dilations[i] + 1;
        int64_t in = gc_int(e, 2, 5);
        if (!tr && in + p.pads[i] + p.pads[ns + i] < span)
            in = span; /* at least one output */
        if (tr) {
            int64_t most = p.strides[i] > p.dilations[i] ? p.strides[i]
                                                          : p.dilations[i];
            p.output_padding[i] = gc_int(e, 0, (int)most - 1);
            int64_t out = p.strides[i] * (in - 1) + span - p.pads[i] -
                          p.pads[ns + i] + p.output_padding[i];
            if (out < 1) p.pads[i] = p.pads[ns + i] = 0;
        }
        x.dims[x.rank++] = in;
        w.dims[w.rank++] = k;
    }
    p.groups = G;
    gc_note(e, "%s", G > 1 ? " groups 2" : "");
    braid_tensor xt = gc_input(e, &x, TS_RANGE(-1, 1));
    braid_tensor wt = gc_input(e, &w, TS_RANGE(-1, 1)), bt = BRAID_NONE;
    if (gc_int(e, 0, 1)) {
        ts_shape b = {1, {G * og}};
        bt = gc_input(e, &b, TS_RANGE(-1, 1));
    }
    return tr ? braid_conv_transpose(e->g, xt, wt, bt, &p)
              : braid_conv(e->g, xt, wt, bt, &p);
}

/* ---- resize: rank 1-4, the last 1-3 axes resized (up, down or kept) ---- */

static braid_tensor gc_resize(gc_env *e, braid_op op) {
    (void)op;
    ts_shape x = gc_shape(e, 1, 4);
    int64_t sizes[BRAID_MAX_RANK];
    for (int i = 0; i < x.rank; i++) /* the leading axes keep their size */
        sizes[i] = i < x.rank - 3 ? x.dims[i] : gc_int(e, 1, 7);
    braid_resize_mode mode = (braid_resize_mode)gc_int(e, 0, 1);
    braid_resize_coord coord = (braid_resize_coord)gc_int(e, 0, 3);
    braid_resize_nearest near = (braid_resize_nearest)gc_int(e, 0, 3);
    gc_note(e, " %s", bg_resize_name(0, mode));
    gc_note(e, " %s", bg_resize_name(1, coord));
    if (mode == BRAID_RESIZE_NEAREST)
        gc_note(e, " %s", bg_resize_name(2, near));
    braid_tensor xt = gc_input(e, &x, TS_RANGE(-2, 2));
    return braid_resize(e->g, xt, sizes, NULL, mode, coord, near);
}

/* ---- attention: q [B,S,H,D], k and v [B,T,H,D], causal or not, an additive
 * mask broadcast from a random shape or none, a random finite scale ------ */

static braid_tensor gc_attention(gc_env *e, braid_op op) {
    (void)op;
    int64_t B = gc_int(e, 1, 2), S = gc_int(e, 1, 3), T = gc_int(e, 1, 3),
            H = gc_int(e, 1, 2), D = gc_int(e, 1, 3);
    ts_shape qs = {4, {B, S, H, D}}, ks = {4, {B, T, H, D}};
    braid_tensor q = gc_input(e, &qs, TS_RANGE(-1, 1)),
                 k = gc_input(e, &ks, TS_RANGE(-1, 1)),
                 v = gc_input(e, &ks, TS_RANGE(-1, 1)), mask = BRAID_NONE;
    if (gc_int(e, 0, 1)) { /* trailing axes of [B,H,S,T], some of them 1 */
        const int64_t full[4] = {B, H, S, T};
        ts_shape ms = {gc_int(e, 1, 4), {0}};
        for (int i = 0; i < ms.rank; i++)
            ms.dims[i] = gc_int(e, 0, 2) ? full[4 - ms.rank + i] : 1;
        mask = gc_input(e, &ms, TS_RANGE(-2, 2));
        gc_note(e, "%s", " mask");
    }
    unsigned flags = gc_int(e, 0, 1) ? BRAID_ATTENTION_CAUSAL : 0;
    gc_note(e, "%s", flags ? " causal" : "");
    double scale = 0.25 * gc_int(e, 1, 6);
    return braid_attention(e->g, q, k, v, mask, scale, flags);
}

/* ---- the table ---------------------------------------------------------- */

typedef struct gc_kind {
    braid_op op;    /* the op under test; COUNT_: a composite */
    gc_build_fn fn; /* its builder */
    const char *name;
} gc_kind;

#define GC_U(OP)                                                               \
    { BRAID_OP_##OP, gc_unary, NULL }
#define GC_B(OP)                                                               \
    { BRAID_OP_##OP, gc_binary, NULL }

static const gc_kind gc_kinds[] = {
    GC_U(NEG),
    GC_U(ABS),
    GC_U(EXP),
    GC_U(LOG),
    GC_U(SQRT),
    GC_U(RSQRT),
    GC_U(SIN),
    GC_U(COS),
    GC_U(TAN),
    GC_U(TANH),
    GC_U(SIGMOID),
    GC_U(RELU),
    GC_U(GELU),
    GC_U(SILU),
    GC_U(ERF),
    GC_U(RECIPROCAL),
    GC_U(SQUARE),
    GC_U(FLOOR),
    GC_U(CEIL),
    GC_B(ADD),
    GC_B(SUB),
    GC_B(MUL),
    GC_B(DIV),
    GC_B(POW),
    GC_B(MAX),
    GC_B(MIN),
    GC_U(ASIN),
    GC_U(ACOS),
    GC_U(ATAN),
    GC_U(SINH),
    GC_U(COSH),
    GC_U(ASINH),
    GC_U(ACOSH),
    GC_U(ATANH),
    GC_U(SIGN),
    GC_U(ROUND),
    GC_B(MOD),
    GC_B(FMOD),
    {BRAID_OP_WHERE, gc_where, NULL},
    {BRAID_OP_CAST, gc_cast, NULL},
    {BRAID_OP_MATMUL, gc_matmul, NULL},
    {BRAID_OP_SUM, gc_reduce, NULL},
    {BRAID_OP_MEAN, gc_reduce, NULL},
    {BRAID_OP_REDUCE_MAX, gc_reduce, NULL},
    {BRAID_OP_REDUCE_MIN, gc_reduce, NULL},
    {BRAID_OP_SOFTMAX, gc_softmax, NULL},
    {BRAID_OP_LAYER_NORM, gc_layer_norm, NULL},
    {BRAID_OP_RESHAPE, gc_reshape, NULL},
    {BRAID_OP_PERMUTE, gc_permute, NULL},
    {BRAID_OP_SLICE, gc_slice, NULL},
    {BRAID_OP_CONCAT, gc_concat, NULL},
    {BRAID_OP_BROADCAST_TO, gc_broadcast_to, NULL},
    {BRAID_OP_ALL_REDUCE, gc_collective, NULL},
    {BRAID_OP_ALL_GATHER, gc_collective, NULL},
    {BRAID_OP_BROADCAST, gc_collective, NULL},
    {BRAID_OP_REDUCE_SCATTER, gc_collective, NULL},
    {BRAID_OP_GATHER, gc_index, NULL},
    {BRAID_OP_SCATTER, gc_index, NULL},
    {BRAID_OP_TOPK_VALUES, gc_axis, NULL}, /* index ops */
    {BRAID_OP_CUMSUM, gc_axis, NULL},
    {BRAID_OP_REDUCE_PROD, gc_prod, NULL},
    {BRAID_OP_MAX_POOL, gc_pool, NULL},
    {BRAID_OP_AVG_POOL, gc_pool, NULL},
    {BRAID_OP_CONV, gc_conv, NULL},
    {BRAID_OP_CONV_TRANSPOSE, gc_conv, NULL},
    {BRAID_OP_RESIZE, gc_resize, NULL},
    {BRAID_OP_ATTENTION, gc_attention, NULL},
};

int ts_grad_case_kinds(void) {
    return (int)(sizeof gc_kinds / sizeof gc_kinds[0]);
}

braid_op ts_grad_case_op(int kind) {
    return gc_kinds[kind].op;
}

bool ts_grad_case_build(int kind, braid_dtype dt, uint64_t seed,
                        ts_grad_case *c) {
    memset(c, 0, sizeof *c);
    c->fd_step = dt == BRAID_F64 ? 1e-6 : 1e-2;
    c->fd_tol = dt == BRAID_F64 ? 1e-6 : 1e-2;
    const gc_kind *k = &gc_kinds[kind];
    snprintf(c->what, sizeof c->what, "%s %s seed %llu",
             k->name ? k->name : bg_op(k->op)->name, braid_dtype_name(dt),
             (unsigned long long)seed);
    c->g = braid_graph_new(NULL);
    if (c->g == NULL) return false;
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + (uint64_t)kind;
    gc_env e = {c->g, dt, &st, c};
    c->y = k->fn(&e, k->op);
    braid_status s = braid_tensor_valid(c->y)
                         ? ts_grad_attach(c->g, c->y, seed, &c->loss)
                         : braid_graph_status(c->g);
    if (s != BRAID_OK) {
        size_t n = strlen(c->what);
        snprintf(c->what + n, sizeof c->what - n, ": %s",
                 braid_graph_error(c->g));
        return false;
    }
    return true;
}

void ts_grad_case_free(ts_grad_case *c) {
    braid_graph_free(c->g);
    c->g = NULL;
}

ts_io *ts_grad_io(const ts_grad_case *c, uint64_t seed) {
    ts_io *io = ts_io_new(c->g, seed);
    for (uint32_t i = 0; io && i < io->ninputs; i++) {
        braid_tensor t;
        const char *name;
        braid_dtype dt;
        braid_graph_input(c->g, i, &name, &t);
        braid_tensor_info(c->g, t, &dt, NULL, NULL);
        ts_fill_input(io, i, dt, c->range[i], seed);
    }
    return io;
}
