/* graph/resize.c — the resize op (ONNX Resize): its attributes, checks,
 * coordinate transformations and taps, and its float64 meaning. The one
 * owner of what a resize computes: the reference evaluates it here, the
 * CPU kernel walks bg_resize_taps, and CUDA codegen bakes tables made by
 * bg_resize_taps into its kernel, so no executor restates a formula. */
#include "graph/window.h"

#include <math.h>
#include <string.h>

double bg_resize_scale(const bg_attrs *a, int i) {
    double s;
    memcpy(&s, &a->start[i], sizeof s);
    return s;
}

void bg_resize_set_scale(bg_attrs *a, int i, double s) {
    memcpy(&a->start[i], &s, sizeof s);
}

void bg_resize_get(const bg_node *n, const bg_node *x, bg_resize *r) {
    memset(r, 0, sizeof *r);
    r->planes = 1;
    for (int ax = 0; ax < x->rank - 3; ax++)
        r->planes *= x->dims[ax];
    r->flags = n->attr.flags;
    for (int a = 0; a < 3; a++) {
        int ax = x->rank - 3 + a;
        r->in[a] = ax < 0 ? 1 : x->dims[ax];
        r->out[a] = ax < 0 ? 1 : n->dims[ax];
        r->scale[a] = bg_resize_scale(&n->attr, a);
    }
}

const char *bg_resize_name(int kind, unsigned v) {
    static const char *const names[3][5] = {
        {"nearest", "linear", NULL},
        {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
         NULL},
        {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL}};
    const unsigned count[3] = {2, 4, 4};
    if (kind < 0 || kind > 2 || v >= count[kind]) return NULL;
    return names[kind][v];
}

/* The input coordinate of output position o along axis a. */
static double resize_coord(const bg_resize *r, int a, int64_t o) {
    double s = r->scale[a], x = (double)o;
    switch (BG_RESIZE_COORD(r->flags)) {
    case BRAID_COORD_PYTORCH_HALF_PIXEL:
        return r->out[a] > 1 ? (x + 0.5) / s - 0.5 : 0;
    case BRAID_COORD_ALIGN_CORNERS:
        return r->out[a] == 1 ? 0
                              : x * (double)(r->in[a] - 1) /
                                    (double)(r->out[a] - 1);
    case BRAID_COORD_ASYMMETRIC:
        return x / s;
    default: /* half_pixel */
        return (x + 0.5) / s - 0.5;
    }
}

/* ONNX's nearest_mode on x (ties are x = floor(x) + 0.5). */
static double resize_round(unsigned mode, double x) {
    double f = floor(x);
    switch (mode) {
    case BRAID_NEAREST_FLOOR:
        return f;
    case BRAID_NEAREST_CEIL:
        return ceil(x);
    case BRAID_NEAREST_ROUND_PREFER_CEIL:
        return x == f + 0.5 ? f + 1 : round(x);
    default: /* round_prefer_floor */
        return x == f + 0.5 ? f : round(x);
    }
}

static double clampd(double v, double lo, double hi) {
    return v < lo ? lo : v > hi ? hi : v; /* NaN: lo (never made here) */
}

int bg_resize_taps(const bg_resize *r, int a, int64_t o, int64_t idx[2],
                   double w[2]) {
    double last = (double)(r->in[a] - 1);
    double x = resize_coord(r, a, o);
    if (BG_RESIZE_MODE(r->flags) == BRAID_RESIZE_NEAREST) {
        idx[0] = idx[1] = (int64_t)clampd(
            resize_round(BG_RESIZE_NEAREST(r->flags), x), 0, last);
        w[0] = 1;
        w[1] = 0;
        return 1;
    }
    x = clampd(x, 0, last);
    idx[0] = (int64_t)floor(x);
    idx[1] = idx[0] + 1 <= r->in[a] - 1 ? idx[0] + 1 : r->in[a] - 1;
    w[1] = x - (double)idx[0];
    w[0] = 1 - w[1];
    /* one neighbour (the last element, an axis of one): half each, as
     * onnxruntime does, so an infinite value stays infinite (exact: 0.5·v
     * twice sums to v) */
    if (idx[1] == idx[0]) w[0] = w[1] = 0.5;
    return 2;
}

void bg_eval_resize(const bg_node *n, const bg_node *x, const double *in,
                    double *out, int64_t lo, int64_t hi) {
    bg_resize r;
    bg_resize_get(n, x, &r);
    for (int64_t e = lo; e < hi; e++) {
        int64_t o[3], rest = e, idx[3][2];
        double w[3][2];
        int nt[3];
        for (int a = 2; a >= 0; a--) {
            o[a] = rest % r.out[a];
            rest /= r.out[a];
        }
        for (int a = 0; a < 3; a++)
            nt[a] = bg_resize_taps(&r, a, o[a], idx[a], w[a]);
        double acc = 0;
        for (int i = 0; i < nt[0]; i++)
            for (int j = 0; j < nt[1]; j++)
                for (int k = 0; k < nt[2]; k++) {
                    int64_t at = ((rest * r.in[0] + idx[0][i]) * r.in[1] +
                                  idx[1][j]) * r.in[2] + idx[2][k];
                    acc += w[0][i] * w[1][j] * w[2][k] * in[at];
                }
        out[e] = acc;
    }
}

/* ---- the builder's checks ------------------------------------------------ */

static braid_status resize_flags_ok(braid_graph *g, unsigned f) {
    if (f == BG_RESIZE_FLAGS(BG_RESIZE_MODE(f), BG_RESIZE_COORD(f),
                             BG_RESIZE_NEAREST(f)) &&
        BG_RESIZE_MODE(f) <= BRAID_RESIZE_LINEAR &&
        BG_RESIZE_COORD(f) <= BRAID_COORD_ASYMMETRIC)
        return BRAID_OK;
    return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                   "resize: mode %u, coordinate transformation %u, nearest "
                   "mode %u; expected nearest or linear, one of half_pixel, "
                   "pytorch_half_pixel, align_corners, asymmetric",
                   BG_RESIZE_MODE(f), BG_RESIZE_COORD(f),
                   BG_RESIZE_NEAREST(f));
}

braid_status bg_infer_resize(braid_graph *g, const bg_node *x,
                             const bg_attrs *a, int rank, const int64_t *dims,
                             bg_node *out) {
    char t[BG_ERROR_MAX / 2];
    bg_type_str(x, t, sizeof t);
    if (!bg_op_accepts(BRAID_OP_RESIZE, x->dtype) || x->rank == 0)
        return bg_fail(g, BRAID_ERR_DTYPE,
                       "resize: operand %s; expected a float dtype and rank "
                       ">= 1",
                       t);
    if (rank != x->rank || (rank > 0 && dims == NULL))
        return bg_fail(g, BRAID_ERR_SHAPE,
                       "resize: %d output sizes for operand %s; expected one "
                       "per axis",
                       rank, t);
    braid_status s = resize_flags_ok(g, a->flags);
    if (s != BRAID_OK) return s;
    for (int ax = 0; ax < rank; ax++) {
        int slot = ax - (rank - 3); /* < 0: a leading axis */
        double sc = slot >= 0 ? bg_resize_scale(a, slot) : 1;
        bool ok = dims[ax] >= 0 && (x->dims[ax] > 0 || dims[ax] == 0) &&
                  isfinite(sc) && sc > 0 &&
                  (slot >= 0 || dims[ax] == x->dims[ax]);
        if (!ok)
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "resize: axis %d of %s: size %lld, scale %g; "
                           "expected a finite scale > 0, a nonempty input "
                           "for a nonempty output, and only the last 3 axes "
                           "resized",
                           ax, t, (long long)dims[ax], sc);
    }
    for (int slot = 0; slot < 3; slot++) /* padding axes: scale 1 */
        if (slot < 3 - rank && bg_resize_scale(a, slot) != 1)
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "resize: scale slot %d unused by rank %d is not 1",
                           slot, rank);
    for (int i = 0; i < BRAID_MAX_RANK; i++)
        if ((i >= 3 && a->start[i]) || a->step[i])
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "resize: unused attribute slots are set");
    out->rank = x->rank;
    out->dtype = x->dtype;
    memcpy(out->dims, dims, (size_t)rank * sizeof *dims);
    memcpy(out->attr.start, a->start, 3 * sizeof a->start[0]);
    out->attr.flags = a->flags;
    return BRAID_OK;
}
