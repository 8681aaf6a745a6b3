/* onnx/ops_conv.c — Conv and MaxPool over two spatial axes as composites
 * until braid's conv and pool ops (issue #13) land on main: the padded
 * input's kernel-offset slices (strided) are stacked, then Conv is one
 * matmul with the weights ([OC, C·KH·KW] × [N, C·KH·KW, OH·OW]),
 * MaxPool a max and AveragePool a mean over the stack. groups = 1 for Conv. auto_pad resolves to
 * explicit pads at import (static shapes). */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <string.h>

typedef struct cv_geom {
    int64_t k[2], st[2], dl[2], lo[2], hi[2], out[2];
} cv_geom;

static bool geometry(ox_node *n, const int64_t *d, const int64_t *kern,
                     cv_geom *gm) {
    int64_t v[4];
    int cnt;
    for (int i = 0; i < 2; i++) {
        gm->k[i] = kern[i];
        gm->st[i] = gm->dl[i] = 1;
        gm->lo[i] = gm->hi[i] = 0;
    }
    if (!ox_attr_ints(n, "strides", v, 2, &cnt)) return false;
    for (int i = 0; i < cnt; i++) gm->st[i] = v[i];
    if (!ox_attr_ints(n, "dilations", v, 2, &cnt)) return false;
    for (int i = 0; i < cnt; i++) gm->dl[i] = v[i];
    if (!ox_attr_ints(n, "pads", v, 4, &cnt)) return false;
    for (int i = 0; cnt == 4 && i < 2; i++) gm->lo[i] = v[i], gm->hi[i] = v[i + 2];
    char ap[16];
    ox_attr_str(n, "auto_pad", ap, sizeof ap, "NOTSET");
    bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
    for (int i = 0; i < 2; i++) {
        if (gm->st[i] < 1 || gm->dl[i] < 1 || gm->k[i] < 1 || gm->lo[i] < 0 ||
            gm->hi[i] < 0) {
            ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "bad kernel, stride, "
                         "dilation or pad");
            return false;
        }
        int64_t in = d[i + 2];
        if (upper || lower) {
            int64_t out = (in + gm->st[i] - 1) / gm->st[i];
            int64_t need = (out - 1) * gm->st[i] + (gm->k[i] - 1) * gm->dl[i] + 1 - in;
            if (need < 0) need = 0;
            gm->lo[i] = upper ? need / 2 : need - need / 2;
            gm->hi[i] = need - gm->lo[i];
        }
        int64_t span = (gm->k[i] - 1) * gm->dl[i] + 1;
        int64_t padded = in + gm->lo[i] + gm->hi[i];
        gm->out[i] = padded < span ? 0 : (padded - span) / gm->st[i] + 1;
        if (gm->out[i] <= 0) {
            ox_node_fail(n, BRAID_ERR_SHAPE, "the window does not fit");
            return false;
        }
    }
    return true;
}

/* x [N, C, H, W] padded with v, then stacked kernel-offset slices
 * [N, C, KH·KW, OH·OW]. */
static braid_tensor patches(ox_node *n, braid_tensor x, const cv_geom *gm,
                            double v) {
    braid_graph *g = n->g;
    int64_t d[BRAID_MAX_RANK];
    ox_rank(n, x, d);
    for (int a = 0; a < 2; a++) {
        int64_t pd[4] = {d[0], d[1], d[2], d[3]};
        braid_tensor parts[3];
        int k = 0;
        if (gm->lo[a]) {
            pd[a + 2] = gm->lo[a];
            parts[k++] = braid_fill(g, ox_tdtype(n, x), 4, pd, v);
        }
        parts[k++] = x;
        if (gm->hi[a]) {
            pd[a + 2] = gm->hi[a];
            parts[k++] = braid_fill(g, ox_tdtype(n, x), 4, pd, v);
        }
        if (k > 1) x = braid_concat(g, k, parts, a + 2);
        ox_rank(n, x, d);
    }
    int64_t kk = gm->k[0] * gm->k[1], oo = gm->out[0] * gm->out[1];
    braid_tensor sl[256];
    if (kk > 256) return BRAID_NONE;
    for (int64_t i = 0; i < gm->k[0]; i++)
        for (int64_t j = 0; j < gm->k[1]; j++) {
            int64_t b[4] = {0, 0, i * gm->dl[0], j * gm->dl[1]};
            int64_t e[4] = {d[0], d[1], b[2] + (gm->out[0] - 1) * gm->st[0] + 1,
                            b[3] + (gm->out[1] - 1) * gm->st[1] + 1};
            int64_t s[4] = {1, 1, gm->st[0], gm->st[1]};
            braid_tensor t = braid_slice(g, x, b, e, s);
            sl[i * gm->k[1] + j] =
                braid_reshape(g, t, 4, (int64_t[]){d[0], d[1], 1, oo});
        }
    return kk == 1 ? sl[0] : braid_concat(g, (int)kk, sl, 2);
}

static braid_status map_conv(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0), w = ox_in(n, 1);
    int64_t d[BRAID_MAX_RANK], wd[BRAID_MAX_RANK];
    if (ox_rank(n, x, d) != 4 || ox_rank(n, w, wd) != 4)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "only 2-D convolutions "
                            "until braid's conv op");
    if (ox_attr_int(n, "group", 1) != 1 || wd[1] != d[1])
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "group > 1 until braid's "
                            "conv op");
    cv_geom gm;
    if (!geometry(n, d, wd + 2, &gm)) return n->im->status;
    if (gm.k[0] * gm.k[1] > 256)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "a kernel over 256 taps");
    int64_t ckk = d[1] * gm.k[0] * gm.k[1], oo = gm.out[0] * gm.out[1];
    braid_tensor p = braid_reshape(g, patches(n, x, &gm, 0), 3,
                                   (int64_t[]){d[0], ckk, oo});
    braid_tensor wm = braid_reshape(g, w, 2, (int64_t[]){wd[0], ckk});
    braid_tensor y = braid_matmul(g, wm, p, 0); /* [N, OC, OH·OW] */
    if (ox_has(n, 2))
        y = braid_add(g, y, braid_reshape(g, ox_in(n, 2), 2,
                                          (int64_t[]){wd[0], 1}));
    y = braid_reshape(g, y, 4, (int64_t[]){d[0], wd[0], gm.out[0], gm.out[1]});
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* MaxPool (max) and AveragePool (sum / count: the positions inside the
 * input, or the whole window with count_include_pad). */
static braid_status pool(ox_node *n, bool max) {
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], k[2];
    int cnt, axis = 2;
    if (ox_rank(n, x, d) != 4)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "only 2-D pooling until "
                            "braid's pool op");
    if ((max && n->nout > 1) || ox_attr_int(n, "ceil_mode", 0) ||
        ox_attr_int(n, "storage_order", 0))
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "Indices, ceil_mode or "
                            "storage_order until braid's pool op");
    if (!ox_attr_ints(n, "kernel_shape", k, 2, &cnt)) return n->im->status;
    if (cnt != 2)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "kernel_shape");
    cv_geom gm;
    if (!geometry(n, d, k, &gm)) return n->im->status;
    if (gm.k[0] * gm.k[1] > 256)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "a window over 256");
    braid_graph *g = n->g;
    braid_tensor y;
    if (max) {
        y = braid_reduce_max(g, patches(n, x, &gm, -INFINITY), 1, &axis, false);
    } else {
        y = braid_sum(g, patches(n, x, &gm, 0), 1, &axis, false);
        double all = (double)(gm.k[0] * gm.k[1]);
        if (ox_attr_int(n, "count_include_pad", 0)) {
            y = braid_div(g, y, ox_scalar(n, ox_tdtype(n, y), all));
        } else {
            int64_t od[4] = {1, 1, d[2], d[3]};
            braid_tensor ones = braid_fill(g, ox_tdtype(n, x), 4, od, 1);
            braid_tensor c = braid_sum(g, patches(n, ones, &gm, 0), 1, &axis,
                                       false);
            y = braid_div(g, y, c);
        }
    }
    y = braid_reshape(g, y, 4, (int64_t[]){d[0], d[1], gm.out[0], gm.out[1]});
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}
static braid_status map_max_pool(ox_node *n) { return pool(n, true); }
static braid_status map_avg_pool(ox_node *n) { return pool(n, false); }

const ox_op ox_ops_conv[] = {
    {"AveragePool", 1, map_avg_pool, 0},
    {"Conv", 1, map_conv, 0},
    {"MaxPool", 1, map_max_pool, 0},
    {NULL, 0, NULL, 0},
};
