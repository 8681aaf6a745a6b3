/* onnx/ops_layout.c — ONNX ops that rearrange or generate data, as
 * composites of braid's shape ops: Pad, Resize, Upsample, DepthToSpace,
 * SpaceToDepth, Trilu, EyeLike, OneHot, Einsum (two operands or one). */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <string.h>

#define ELEM_BOOL 9

static braid_tensor fill_like(ox_node *n, braid_tensor x, int r,
                              const int64_t *d, double v) {
    return braid_fill(n->g, ox_tdtype(n, x), r, d, v);
}

/* Pad (constant, reflect, edge) on braid_pad: pads come from the
 * attribute before opset 11, a static input after (with axes from 18). */
static braid_status map_pad(ox_node *n) {
    char mode[16];
    ox_attr_str(n, "mode", mode, sizeof mode, "constant");
    braid_pad_mode m = !strcmp(mode, "constant") ? BRAID_PAD_CONSTANT
                       : !strcmp(mode, "reflect") ? BRAID_PAD_REFLECT
                       : !strcmp(mode, "edge")    ? BRAID_PAD_EDGE
                                                  : (braid_pad_mode)-1;
    if ((int)m < 0)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "mode \"%s\"", mode);
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], pads[2 * BRAID_MAX_RANK], ax[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), np, na = -1;
    bool ok = n->im->opset < 11
                  ? ox_attr_ints(n, "pads", pads, 2 * BRAID_MAX_RANK, &np)
                  : ox_static_ints(n, 1, pads, 2 * BRAID_MAX_RANK, &np) &&
                        (!ox_has(n, 3) ||
                         ox_static_ints(n, 3, ax, BRAID_MAX_RANK, &na));
    if (!ok) return n->im->status;
    double value = n->im->opset < 11 ? ox_attr_float(n, "value", 0) : 0;
    braid_tensor vt = BRAID_NONE; /* a constant_value known at run time */
    if (n->im->opset >= 11 && ox_has(n, 2) && !n->in[2]->sv) {
        vt = ox_in(n, 2);
    } else if (n->im->opset >= 11 && ox_has(n, 2)) {
        int64_t k;
        const double *v = ox_static(n, 2, &k);
        if (!v) return n->im->status;
        value = k ? v[0] : 0;
    }
    if (na < 0) {
        na = np / 2;
        for (int i = 0; i < na; i++) ax[i] = i;
    }
    if (np != 2 * na || na > r)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "%d pads for %d "
                            "axes", np, na);
    int64_t lo[BRAID_MAX_RANK] = {0}, hi[BRAID_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int a;
        if (!ox_axis(n, ax[i], r, &a)) return n->im->status;
        lo[a] = pads[i], hi[a] = pads[i + na];
    }
    braid_tensor y = braid_pad(n->g, x, lo, hi, m, value);
    if (braid_tensor_valid(vt) && m == BRAID_PAD_CONSTANT) {
        /* where the padding went, the run-time value */
        braid_tensor in = braid_fill(n->g, BRAID_BOOL, r, d, 1);
        in = braid_pad(n->g, in, lo, hi, BRAID_PAD_CONSTANT, 0);
        y = braid_where(n->g, in, y, braid_reshape(n->g, vt, 0, NULL));
    }
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* ---- Resize and Upsample on braid_resize ---------------------------------- */

static bool resize_enum(ox_node *n, const char *attr, const char *dflt,
                        const char *const *names, int count, int *out) {
    char v[32];
    ox_attr_str(n, attr, v, sizeof v, dflt);
    for (int i = 0; i < count; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return true;
        }
    ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "%s \"%s\"", attr, v);
    return false;
}

/* Static scales (input ks) or sizes (input kz) spread over x's rank by
 * the axes attribute (opset 18). */
static bool resize_shape(ox_node *n, int r, int ks, int kz, double *scales,
                         int64_t *sizes, bool *has_s, bool *has_z) {
    int64_t ax[BRAID_MAX_RANK], v[BRAID_MAX_RANK], m;
    int na, cnt;
    if (!ox_attr_ints(n, "axes", ax, BRAID_MAX_RANK, &na)) return false;
    *has_s = ks >= 0 && ox_has(n, ks) && n->in[ks]->rank == 1 &&
             n->in[ks]->dims[0] > 0;
    *has_z = kz >= 0 && ox_has(n, kz) && n->in[kz]->rank == 1 &&
             n->in[kz]->dims[0] > 0;
    for (int i = 0; i < r; i++) scales[i] = 1, sizes[i] = -1;
    int k = na < 0 ? r : na;
    if (*has_s) {
        const double *sv = ox_static(n, ks, &m);
        if (!sv) return false;
        if (m != k) goto bad;
        for (int i = 0; i < k; i++) scales[na < 0 ? i : (ax[i] + r) % r] = sv[i];
    }
    if (*has_z) {
        if (!ox_static_ints(n, kz, v, BRAID_MAX_RANK, &cnt)) return false;
        if (cnt != k) goto bad;
        for (int i = 0; i < k; i++) sizes[na < 0 ? i : (ax[i] + r) % r] = v[i];
    }
    return true;
bad:
    ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "scales or sizes do not have "
                 "one entry per axis");
    return false;
}

/* keep_aspect_ratio_policy not_larger / not_smaller: one scale for the
 * axes given sizes (the smallest / largest of size / in), the sizes
 * rounded from it (half up), as ONNX's reference does. */
static void keep_aspect(int r, const int64_t *d, bool larger, int64_t *sizes,
                        double *scales) {
    double k = larger ? 0 : 1e300;
    for (int i = 0; i < r; i++)
        if (sizes[i] >= 0) {
            double q = (double)sizes[i] / (double)d[i];
            k = larger ? (q > k ? q : k) : (q < k ? q : k);
        }
    for (int i = 0; i < r; i++)
        if (sizes[i] >= 0) {
            sizes[i] = (int64_t)floor(k * (double)d[i] + 0.5);
            scales[i] = k;
        }
}

static braid_status resize(ox_node *n, int ks, int kz, const char *coord_dflt,
                           const char *nearest_dflt) {
    static const char *const modes[] = {"nearest", "linear"};
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel",
                                         "align_corners", "asymmetric"};
    static const char *const nears[] = {"round_prefer_floor",
                                        "round_prefer_ceil", "floor", "ceil"};
    int mode, coord, near;
    if (!resize_enum(n, "mode", "nearest", modes, 2, &mode) ||
        !resize_enum(n, "coordinate_transformation_mode", coord_dflt, coords, 4,
                     &coord) ||
        !resize_enum(n, "nearest_mode", nearest_dflt, nears, 4, &near))
        return n->im->status;
    static const char *const pols[] = {"stretch", "not_larger", "not_smaller"};
    int pol;
    if (!resize_enum(n, "keep_aspect_ratio_policy", "stretch", pols, 3, &pol))
        return n->im->status;
    if (ox_attr_int(n, "antialias", 0))
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "antialias");
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], sizes[BRAID_MAX_RANK];
    double scales[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    bool hs, hz;
    if (!resize_shape(n, r, ks, kz, scales, sizes, &hs, &hz))
        return n->im->status;
    if (hz && pol) keep_aspect(r, d, pol == 2, sizes, scales), hs = true;
    for (int i = 0; hz && i < r; i++)
        if (sizes[i] < 0) sizes[i] = d[i];
    braid_tensor y = braid_resize(n->g, x, hz ? sizes : NULL,
                                  hs ? scales : NULL, (braid_resize_mode)mode,
                                  (braid_resize_coord)coord,
                                  (braid_resize_nearest)near);
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* Resize 10 has (X, scales) and asymmetric coordinates; 11+ (X, roi,
 * scales, sizes). */
static braid_status map_resize10(ox_node *n) {
    return resize(n, 1, -1, "asymmetric", "round_prefer_floor");
}
static braid_status map_resize(ox_node *n) {
    return resize(n, 2, 3, "half_pixel", "round_prefer_floor");
}

/* Upsample: scales as an attribute (7-8) or input 1 (9); asymmetric
 * coordinates, nearest rounds down. */
static braid_status map_upsample(ox_node *n) {
    if (n->im->opset >= 9) return resize(n, 1, -1, "asymmetric", "floor");
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), cnt;
    const Onnx__AttributeProto *a = ox_attr(n, "scales");
    if (!a || (int)a->n_floats != r)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "scales needs one "
                            "entry per axis");
    double sc[BRAID_MAX_RANK];
    for (int i = 0; i < r; i++) sc[i] = a->floats[i];
    (void)cnt;
    char mode[16];
    ox_attr_str(n, "mode", mode, sizeof mode, "nearest");
    braid_resize_mode m = !strcmp(mode, "nearest") ? BRAID_RESIZE_NEAREST
                                                   : BRAID_RESIZE_LINEAR;
    ox_out(n, 0, braid_resize(n->g, x, NULL, sc, m, BRAID_COORD_ASYMMETRIC,
                              BRAID_NEAREST_FLOOR), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* DepthToSpace / SpaceToDepth: reshape, permute, reshape. */
static braid_status depth_space(ox_node *n, bool to_space) {
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], bs = ox_attr_int(n, "blocksize", 0);
    if (ox_rank(n, x, d) != 4 || bs <= 0)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "needs a rank-4 input and a "
                            "positive blocksize");
    int64_t N = d[0], C = d[1], H = d[2], W = d[3];
    char mode[8];
    ox_attr_str(n, "mode", mode, sizeof mode, "DCR");
    braid_graph *g = n->g;
    if (to_space) {
        if (C % (bs * bs))
            return ox_node_fail(n, BRAID_ERR_SHAPE, "channels %lld do not "
                                "divide by blocksize^2", (long long)C);
        bool crd = !strcmp(mode, "CRD");
        int64_t s6[6] = {N, bs, bs, C / (bs * bs), H, W};
        if (crd) s6[1] = C / (bs * bs), s6[2] = bs, s6[3] = bs;
        const int pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
        x = braid_reshape(g, x, 6, s6);
        x = braid_permute(g, x, crd ? pc : pd);
        x = braid_reshape(g, x, 4, (int64_t[]){N, C / (bs * bs), H * bs, W * bs});
    } else {
        if (H % bs || W % bs)
            return ox_node_fail(n, BRAID_ERR_SHAPE, "spatial dims do not "
                                "divide by blocksize");
        bool crd = !strcmp(mode, "CRD"); /* SpaceToDepth's mode (opset 24) */
        x = braid_reshape(g, x, 6, (int64_t[]){N, C, H / bs, bs, W / bs, bs});
        x = braid_permute(g, x, crd ? (int[]){0, 1, 3, 5, 2, 4}
                                    : (int[]){0, 3, 5, 1, 2, 4});
        x = braid_reshape(g, x, 4, (int64_t[]){N, C * bs * bs, H / bs, W / bs});
    }
    ox_out(n, 0, x, ox_in_elem(n, 0));
    return BRAID_OK;
}
static braid_status map_d2s(ox_node *n) { return depth_space(n, true); }
static braid_status map_s2d(ox_node *n) { return depth_space(n, false); }

/* A bool mask over the last two axes [M, N]: col - row compared with k. */
static braid_tensor band(ox_node *n, int64_t m, int64_t c, int64_t k,
                         bool upper) {
    braid_graph *g = n->g;
    int64_t d[2] = {m, c};
    braid_tensor row = braid_iota(g, BRAID_I32, 2, d, 0);
    braid_tensor col = braid_iota(g, BRAID_I32, 2, d, 1);
    braid_tensor diff = braid_sub(g, col, row);
    braid_tensor kk = ox_scalar(n, BRAID_I32, (double)k);
    return upper ? braid_ge(g, diff, kk) : braid_le(g, diff, kk);
}

static braid_status map_trilu(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], k = 0;
    int r = ox_rank(n, x, d), cnt;
    if (r < 2) return ox_node_fail(n, BRAID_ERR_SHAPE, "rank %d", r);
    if (ox_has(n, 1)) {
        if (!ox_static_ints(n, 1, &k, 1, &cnt)) return n->im->status;
    }
    if (k > INT32_MAX / 2 || k < -(INT32_MAX / 2))
        k = k > 0 ? INT32_MAX / 2 : -(INT32_MAX / 2);
    braid_tensor mask = band(n, d[r - 2], d[r - 1], k,
                             ox_attr_int(n, "upper", 1) != 0);
    braid_tensor zero = fill_like(n, x, 0, NULL, 0);
    ox_out(n, 0, braid_where(n->g, mask, x, zero), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_eye_like(ox_node *n) {
    int64_t d[BRAID_MAX_RANK];
    if (!ox_has(n, 0) || n->in[0]->rank != 2)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "needs a rank-2 input");
    memcpy(d, n->in[0]->dims, sizeof d);
    int elem = (int)ox_attr_int(n, "dtype", ox_in_elem(n, 0));
    braid_dtype t = ox_dtype(elem);
    if (t == BRAID_DTYPE_COUNT_)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "dtype %s",
                            ox_elem_name(elem));
    braid_tensor lo = band(n, d[0], d[1], ox_attr_int(n, "k", 0), true);
    braid_tensor hi = band(n, d[0], d[1], ox_attr_int(n, "k", 0), false);
    braid_tensor on = braid_where(n->g, lo, hi, ox_scalar(n, BRAID_BOOL, 0));
    ox_out(n, 0, braid_cast(n->g, on, t), elem);
    return BRAID_OK;
}

/* OneHot: (indices[..., None] mod depth) == iota(depth), placed at axis,
 * as off/on values. */
static braid_status map_one_hot(ox_node *n) {
    braid_graph *g = n->g;
    int64_t depth, m;
    int cnt;
    if (!ox_static_ints(n, 1, &depth, 1, &cnt)) return n->im->status;
    const double *vals = ox_static(n, 2, &m);
    if (!vals || m != 2 || depth <= 0)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "depth and values "
                            "must be static, depth > 0, two values");
    braid_tensor idx = braid_cast(g, ox_in(n, 0), BRAID_F64);
    int64_t d[BRAID_MAX_RANK], od[BRAID_MAX_RANK];
    int r = ox_rank(n, idx, d), axis;
    if (r + 1 > BRAID_MAX_RANK) return ox_node_fail(n, BRAID_ERR_UNSUPPORTED,
                                                    "rank %d", r + 1);
    if (!ox_axis(n, ox_attr_int(n, "axis", -1), r + 1, &axis))
        return n->im->status;
    /* negative indices count from the end */
    braid_tensor neg = braid_lt(g, idx, ox_scalar(n, BRAID_F64, 0));
    idx = braid_where(g, neg, braid_add(g, idx, ox_scalar(n, BRAID_F64,
                                                         (double)depth)), idx);
    for (int i = 0, k = 0; i <= r; i++) od[i] = i == axis ? 1 : d[k++];
    idx = braid_reshape(g, idx, r + 1, od);
    for (int i = 0; i <= r; i++) od[i] = i == axis ? depth : 1;
    braid_tensor io = braid_iota(g, BRAID_F64, r + 1, od, axis);
    braid_tensor hit = braid_eq(g, idx, io);
    braid_tensor v = ox_in(n, 2);
    int64_t one = 1;
    braid_tensor off = braid_slice(g, v, (int64_t[]){0}, &one, NULL);
    braid_tensor on = braid_slice(g, v, &one, (int64_t[]){2}, NULL);
    off = braid_reshape(g, off, 0, NULL);
    on = braid_reshape(g, on, 0, NULL);
    ox_out(n, 0, braid_where(g, hit, on, off), ox_in_elem(n, 2));
    return BRAID_OK;
}

/* CenterCropPad: each listed axis cropped (centred slice) or padded
 * (centred zeros) to its static target length. */
static braid_status map_center_crop_pad(ox_node *n) {
    int64_t shape[BRAID_MAX_RANK], ax[BRAID_MAX_RANK], d[BRAID_MAX_RANK];
    int ns, na;
    if (!ox_static_ints(n, 1, shape, BRAID_MAX_RANK, &ns) ||
        !ox_attr_ints(n, "axes", ax, BRAID_MAX_RANK, &na))
        return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, d);
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++) ax[i] = i;
    }
    if (ns != na)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "%d lengths for %d "
                            "axes", ns, na);
    for (int i = 0; i < na; i++) {
        int a;
        if (!ox_axis(n, ax[i], r, &a)) return n->im->status;
        ox_rank(n, x, d);
        int64_t want = shape[i], have = d[a];
        if (want < 0)
            return ox_node_fail(n, BRAID_ERR_SHAPE, "length %lld",
                                (long long)want);
        if (want < have) {
            int64_t b[BRAID_MAX_RANK] = {0}, e[BRAID_MAX_RANK];
            memcpy(e, d, sizeof e);
            b[a] = (have - want) / 2;
            e[a] = b[a] + want;
            x = braid_slice(n->g, x, b, e, NULL);
        } else if (want > have) {
            int64_t lo = (want - have) / 2, hi = want - have - lo;
            int64_t pd[BRAID_MAX_RANK];
            memcpy(pd, d, sizeof pd);
            braid_tensor parts[3];
            int k = 0;
            if (lo) pd[a] = lo, parts[k++] = fill_like(n, x, r, pd, 0);
            parts[k++] = x;
            if (hi) pd[a] = hi, parts[k++] = fill_like(n, x, r, pd, 0);
            x = braid_concat(n->g, k, parts, a);
        }
    }
    ox_out(n, 0, x, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* Compress with a static condition: the kept slices, concatenated. */
static braid_status map_compress(ox_node *n) {
    int64_t m;
    const double *c = ox_static(n, 1, &m);
    if (!c) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), axis = 0;
    const Onnx__AttributeProto *a = ox_attr(n, "axis");
    if (!a) { /* over the flattened input */
        int64_t all = ox_numel(r, d);
        x = braid_reshape(n->g, x, 1, &all);
        ox_rank(n, x, d);
        r = 1;
    } else if (!ox_axis(n, a->i, r, &axis)) {
        return n->im->status;
    }
    braid_tensor parts[256];
    int k = 0;
    for (int64_t i = 0; i < m && i < d[axis]; i++) {
        if (c[i] == 0) continue;
        if (k == 256)
            return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "more than 256 kept "
                                "slices");
        int64_t b[BRAID_MAX_RANK] = {0}, e[BRAID_MAX_RANK];
        memcpy(e, d, sizeof e);
        b[axis] = i;
        e[axis] = i + 1;
        parts[k++] = braid_slice(n->g, x, b, e, NULL);
    }
    if (!k) {
        int64_t b[BRAID_MAX_RANK] = {0}, e[BRAID_MAX_RANK];
        memcpy(e, d, sizeof e);
        e[axis] = 0;
        ox_out(n, 0, braid_slice(n->g, x, b, e, NULL), ox_in_elem(n, 0));
        return BRAID_OK;
    }
    ox_out(n, 0, k == 1 ? parts[0] : braid_concat(n->g, k, parts, axis),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

const ox_op ox_ops_layout[] = {
    {"CenterCropPad", 18, map_center_crop_pad, 0},
    {"Compress", 9, map_compress, 0},
    {"DepthToSpace", 1, map_d2s, 0},
    {"EyeLike", 9, map_eye_like, 0},
    {"OneHot", 9, map_one_hot, 0},
    {"Pad", 1, map_pad, 0},
    {"Resize", 10, map_resize10, 0},
    {"Resize", 11, map_resize, 0},
    {"Upsample", 7, map_upsample, 0},
    {"SpaceToDepth", 1, map_s2d, 0},
    {"Trilu", 14, map_trilu, 0},
    {NULL, 0, NULL, 0},
};
