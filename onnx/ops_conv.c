/* onnx/ops_conv.c — ONNX's convolutions and pooling on braid's conv and
 * pool ops (issue #13): Conv, ConvTranspose, MaxPool, AveragePool,
 * LpPool over 1 to 3 spatial axes. auto_pad and ConvTranspose's
 * output_shape resolve to explicit pads at import (static shapes). */
#include "onnx/onnx_internal.h"

#include "graph/window.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Per spatial axis: kernel, strides, dilations, pads (starts, ends). */
typedef struct cv_geom {
    int s;
    int64_t k[3], st[3], dl[3], lo[3], hi[3];
} cv_geom;

static bool bad_geometry(ox_node *n, const cv_geom *gm) {
    for (int i = 0; i < gm->s; i++)
        if (gm->k[i] < 1 || gm->st[i] < 1 || gm->dl[i] < 1 || gm->lo[i] < 0 ||
            gm->hi[i] < 0) {
            ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "bad kernel, stride, "
                         "dilation or pad on spatial axis %d", i);
            return true;
        }
    return false;
}

/* Attributes into gm for input dims d (rank r) and kernel kern; auto_pad
 * SAME_* gives the pads of a convolution whose output is ceil(in /
 * stride) (*same: 1 upper, -1 lower, 0 neither; ConvTranspose
 * replaces those pads by its own rule). */
static bool geometry(ox_node *n, const int64_t *d, int r, const int64_t *kern,
                     cv_geom *gm, int *same) {
    int cnt;
    int64_t v[6];
    gm->s = r - 2;
    if (gm->s < 1 || gm->s > 3) {
        ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "%d spatial axes (1 to 3)",
                     gm->s);
        return false;
    }
    for (int i = 0; i < gm->s; i++)
        gm->k[i] = kern[i], gm->st[i] = gm->dl[i] = 1, gm->lo[i] = gm->hi[i] = 0;
    if (!ox_attr_ints(n, "strides", v, 3, &cnt)) return false;
    for (int i = 0; i < cnt && i < gm->s; i++) gm->st[i] = v[i];
    if (!ox_attr_ints(n, "dilations", v, 3, &cnt)) return false;
    for (int i = 0; i < cnt && i < gm->s; i++) gm->dl[i] = v[i];
    if (!ox_attr_ints(n, "pads", v, 6, &cnt)) return false;
    for (int i = 0; cnt == 2 * gm->s && i < gm->s; i++)
        gm->lo[i] = v[i], gm->hi[i] = v[i + gm->s];
    char ap[16];
    ox_attr_str(n, "auto_pad", ap, sizeof ap, "NOTSET");
    *same = !strcmp(ap, "SAME_UPPER") ? 1 : !strcmp(ap, "SAME_LOWER") ? -1 : 0;
    if (!strcmp(ap, "VALID"))
        for (int i = 0; i < gm->s; i++) gm->lo[i] = gm->hi[i] = 0;
    for (int i = 0; *same && i < gm->s; i++) {
        int64_t in = d[i + 2], out = (in + gm->st[i] - 1) / gm->st[i];
        int64_t need = (out - 1) * gm->st[i] + (gm->k[i] - 1) * gm->dl[i] + 1 - in;
        if (need < 0) need = 0;
        gm->lo[i] = *same > 0 ? need / 2 : need - need / 2;
        gm->hi[i] = need - gm->lo[i];
    }
    return !bad_geometry(n, gm);
}

static void conv_params(const cv_geom *gm, int64_t groups,
                        braid_conv_params *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < gm->s; i++) {
        p->strides[i] = gm->st[i];
        p->dilations[i] = gm->dl[i];
        p->pads[i] = gm->lo[i];
        p->pads[i + gm->s] = gm->hi[i];
    }
    p->groups = groups;
}

static braid_status map_conv(ox_node *n) {
    braid_tensor x = ox_in(n, 0), w = ox_in(n, 1);
    int64_t d[BRAID_MAX_RANK], wd[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), same;
    ox_rank(n, w, wd);
    cv_geom gm;
    if (!geometry(n, d, r, wd + 2, &gm, &same)) return n->im->status;
    braid_conv_params p;
    conv_params(&gm, ox_attr_int(n, "group", 1), &p);
    braid_tensor b = ox_has(n, 2) ? ox_in(n, 2) : BRAID_NONE;
    ox_out(n, 0, braid_conv(n->g, x, w, b, &p), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* a / 2 rounded toward -inf (Python's //, which ONNX's reference uses). */
static int64_t half_floor(int64_t a) {
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

/* ConvTranspose's pads from output_shape (or, with auto_pad SAME_*, an
 * output of in · stride): total = stride·(in-1) + output_padding +
 * span - out, split with the odd element at the end for SAME_UPPER (and
 * at the start otherwise), as ONNX's reference does. An output_shape past
 * the natural size makes a pad negative: that many more output positions,
 * which no input reaches (map_conv_transpose pads them with zeros). */
static bool transpose_pads(ox_node *n, const int64_t *d, int same,
                           const int64_t *opad, cv_geom *gm) {
    int64_t os[BRAID_MAX_RANK];
    int cnt;
    if (!ox_attr_ints(n, "output_shape", os, BRAID_MAX_RANK, &cnt)) return false;
    if (cnt < 0 && !same) return true;
    if (cnt >= 0 && cnt != gm->s && cnt != gm->s + 2) {
        ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "output_shape has %d "
                     "entries", cnt);
        return false;
    }
    for (int i = 0; i < gm->s; i++) {
        int64_t out = cnt >= 0 ? os[cnt - gm->s + i] : d[i + 2] * gm->st[i];
        int64_t total = gm->st[i] * (d[i + 2] - 1) + opad[i] +
                        (gm->k[i] - 1) * gm->dl[i] + 1 - out;
        gm->lo[i] = same > 0 ? half_floor(total) : total - half_floor(total);
        gm->hi[i] = total - gm->lo[i];
    }
    return true;
}

static braid_status map_conv_transpose(ox_node *n) {
    braid_tensor x = ox_in(n, 0), w = ox_in(n, 1);
    int64_t d[BRAID_MAX_RANK], wd[BRAID_MAX_RANK], v[3], opad[3] = {0};
    int r = ox_rank(n, x, d), cnt, same;
    ox_rank(n, w, wd);
    cv_geom gm;
    if (!geometry(n, d, r, wd + 2, &gm, &same)) return n->im->status;
    if (!ox_attr_ints(n, "output_padding", v, 3, &cnt)) return n->im->status;
    for (int i = 0; i < cnt && i < gm.s; i++) opad[i] = v[i];
    if (!transpose_pads(n, d, same, opad, &gm)) return n->im->status;
    /* negative pads: the natural output, grown by zeros, then the bias */
    int64_t grow_lo[BRAID_MAX_RANK] = {0}, grow_hi[BRAID_MAX_RANK] = {0};
    bool grow = false;
    for (int i = 0; i < gm.s; i++) {
        grow_lo[i + 2] = gm.lo[i] < 0 ? -gm.lo[i] : 0;
        grow_hi[i + 2] = gm.hi[i] < 0 ? -gm.hi[i] : 0;
        grow = grow || gm.lo[i] < 0 || gm.hi[i] < 0;
        gm.lo[i] += grow_lo[i + 2];
        gm.hi[i] += grow_hi[i + 2];
    }
    braid_conv_params p;
    conv_params(&gm, ox_attr_int(n, "group", 1), &p);
    memcpy(p.output_padding, opad, sizeof opad);
    braid_tensor b = ox_has(n, 2) ? ox_in(n, 2) : BRAID_NONE;
    braid_tensor y =
        braid_conv_transpose(n->g, x, w, grow ? BRAID_NONE : b, &p);
    if (grow) {
        y = braid_pad(n->g, y, grow_lo, grow_hi, BRAID_PAD_CONSTANT, 0);
        if (b.id != BRAID_INVALID_ID) { /* [C] over [N, C, spatial...] */
            int64_t bd[BRAID_MAX_RANK];
            int yr = ox_rank(n, y, bd);
            for (int i = 0; i < yr; i++)
                bd[i] = i == 1 ? bd[i] : 1;
            y = braid_add(n->g, y, braid_reshape(n->g, b, yr, bd));
        }
    }
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}

typedef enum { P_MAX, P_AVG, P_LP } pool_kind;

/* LpPool: (sum over the window of |x|^p)^(1/p), as an average pool of
 * |x|^p counting the padding (zeros) times the window size. */
static braid_tensor lp_pool(ox_node *n, braid_tensor x, braid_pool_params *p,
                            int s) {
    braid_graph *g = n->g;
    braid_dtype t = ox_tdtype(n, x);
    double e = (double)ox_attr_int(n, "p", 2), win = 1;
    for (int i = 0; i < s; i++) win *= (double)p->kernel[i];
    p->count_include_pad = true;
    braid_tensor a = braid_pow(g, braid_abs(g, x), ox_scalar(n, t, e));
    braid_tensor sum = braid_mul(g, braid_avg_pool(g, a, p), ox_scalar(n, t, win));
    return braid_pow(g, sum, ox_scalar(n, t, 1 / e));
}

/* MaxPool's Indices output for max_pool node y of x, a composite over the
 * window's taps (graph/window.h: x padded with -inf, and a tensor of flat
 * indices padded alike; each tap a strided slice of both): the first tap,
 * row-major, holding the window's maximum gives the index of the element
 * it read. Indices run row-major over all of x, or with storage_order 1
 * as the plane's offset (n·C + c)·H·W plus the element's column-major
 * place in its plane (w·H + h in 2-D), as onnxruntime and ONNX's node
 * tests number them. */
static braid_tensor max_pool_indices(ox_node *n, braid_tensor x,
                                     braid_tensor y) {
    braid_graph *g = n->g;
    int64_t d[BRAID_MAX_RANK], numel = 1;
    int r = ox_rank(n, x, d);
    for (int i = 0; i < r; i++)
        numel *= d[i];
    int64_t order = ox_attr_int(n, "storage_order", 0);
    if (order != 0 && order != 1) {
        ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "storage_order %lld",
                     (long long)order);
        return BRAID_NONE;
    }
    if (numel > INT32_MAX) {
        ox_node_fail(n, BRAID_ERR_UNSUPPORTED,
                     "the Indices output of %lld elements (at most 2^31)",
                     (long long)numel);
        return BRAID_NONE;
    }
    if (!braid_tensor_valid(y)) return BRAID_NONE; /* max_pool's error */
    /* flat indices in x's shape: a ramp over the storage order's shape
     * ([N, C, spatial axes reversed] for column-major), permuted back */
    int64_t sd[BRAID_MAX_RANK];
    int perm[BRAID_MAX_RANK];
    for (int i = 0; i < r; i++) {
        perm[i] = order && i >= 2 ? r + 1 - i : i; /* an involution */
        sd[i] = d[perm[i]];
    }
    braid_tensor idx =
        braid_reshape(g, braid_iota(g, BRAID_I32, 1, &numel, 0), r, sd);
    if (order) idx = braid_permute(g, idx, perm);
    bg_pool_taps t;
    bg_pool_taps_init(g, y.id, &t);
    braid_tensor xp = bg_pool_taps_pad(g, &t, x, -INFINITY);
    braid_tensor ip = bg_pool_taps_pad(g, &t, idx, 0);
    braid_tensor best = BRAID_NONE, at = BRAID_NONE;
    int64_t j[3];
    BG_POOL_FOR_TAPS(&t, j) {
        braid_tensor v = bg_pool_tap(g, &t, xp, j);
        braid_tensor w = bg_pool_tap(g, &t, ip, j);
        if (!braid_tensor_valid(best)) {
            best = v;
            at = w;
            continue;
        }
        braid_tensor take = braid_gt(g, v, best); /* the first maximum wins */
        best = braid_where(g, take, v, best);
        at = braid_where(g, take, w, at);
    }
    return at;
}

static braid_status pool(ox_node *n, pool_kind kind) {
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], k[3];
    int r = ox_rank(n, x, d), cnt, same;
    if (!ox_attr_ints(n, "kernel_shape", k, 3, &cnt)) return n->im->status;
    if (cnt != r - 2)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT,
                            "kernel_shape has %d entries for %d spatial axes",
                            cnt, r - 2);
    cv_geom gm;
    if (!geometry(n, d, r, k, &gm, &same)) return n->im->status;
    braid_pool_params p = {0};
    for (int i = 0; i < gm.s; i++) {
        p.kernel[i] = gm.k[i];
        p.strides[i] = gm.st[i];
        p.dilations[i] = gm.dl[i];
        p.pads_lo[i] = gm.lo[i];
        p.pads_hi[i] = gm.hi[i];
    }
    p.ceil_mode = ox_attr_int(n, "ceil_mode", 0);
    p.count_include_pad = ox_attr_int(n, "count_include_pad", 0);
    braid_tensor y = kind == P_MAX   ? braid_max_pool(n->g, x, &p)
                     : kind == P_AVG ? braid_avg_pool(n->g, x, &p)
                                     : lp_pool(n, x, &p, gm.s);
    ox_out(n, 0, y, ox_in_elem(n, 0));
    if (kind == P_MAX && n->nout > 1) {
        braid_tensor idx = max_pool_indices(n, x, y);
        if (n->im->status != BRAID_OK) return n->im->status;
        ox_out(n, 1, idx, OX_ELEM_INT64);
    }
    return BRAID_OK;
}
static braid_status map_max_pool(ox_node *n) { return pool(n, P_MAX); }
static braid_status map_avg_pool(ox_node *n) { return pool(n, P_AVG); }
static braid_status map_lp_pool(ox_node *n) { return pool(n, P_LP); }

const ox_op ox_ops_conv[] = {
    {"AveragePool", 1, map_avg_pool, 0},
    {"Conv", 1, map_conv, 0},
    {"ConvTranspose", 1, map_conv_transpose, 0},
    {"LpPool", 1, map_lp_pool, 0},
    {"MaxPool", 1, map_max_pool, 0},
    {NULL, 0, NULL, 0},
};
