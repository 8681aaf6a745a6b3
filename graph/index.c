/* graph/index.c — gather and scatter: names, the builder's checks and
 * shape rule, and where an index lands (graph/index.h). */
#include "graph/index.h"

#include <stdio.h>
#include <string.h>

#define TYPE_BUF 200

static const char *const mode_names[BG_INDEX_MODE_COUNT_] = {"axis", "elements",
                                                             "nd"};
static const char *const red_names[BG_SCATTER_RED_COUNT_] = {
    "none", "add", "mul", "max", "min"};

const char *bg_index_mode_name(bg_index_mode m) {
    return (unsigned)m < BG_INDEX_MODE_COUNT_ ? mode_names[m] : "?";
}

const char *bg_scatter_red_name(bg_scatter_red r) {
    return (unsigned)r < BG_SCATTER_RED_COUNT_ ? red_names[r] : "?";
}

static int lookup(const char *const *names, int n, const char *s, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) return i;
    return -1;
}

int bg_index_mode_lookup(const char *s, size_t len) {
    return lookup(mode_names, BG_INDEX_MODE_COUNT_, s, len);
}

int bg_scatter_red_lookup(const char *s, size_t len) {
    return lookup(red_names, BG_SCATTER_RED_COUNT_, s, len);
}

braid_op bg_scatter_red_op(bg_scatter_red r) {
    static const braid_op ops[BG_SCATTER_RED_COUNT_] = {
        BRAID_OP_COUNT_, BRAID_OP_ADD, BRAID_OP_MUL, BRAID_OP_MAX,
        BRAID_OP_MIN};
    return (unsigned)r < BG_SCATTER_RED_COUNT_ ? ops[r] : BRAID_OP_COUNT_;
}

/* ---- the builder's rules ------------------------------------------------- */

/* What one bg_infer_index call is working on. */
typedef struct ictx {
    braid_graph *g;
    const char *op;               /* "gather" / "scatter" */
    const bg_node *x, *idx, *upd; /* data, indices, updates (scatter) */
    char tx[TYPE_BUF], ti[TYPE_BUF], tu[TYPE_BUF]; /* their types */
    bg_index_mode mode;
    int axis; /* normalised axis / batch_dims */
    bg_node *out;
} ictx;

static braid_status shape_fail(ictx *c, const char *why) {
    return bg_fail(c->g, BRAID_ERR_SHAPE,
                   "%s (%s): data %s, indices %s%s%s: %s", c->op,
                   bg_index_mode_name(c->mode), c->tx, c->ti,
                   c->upd ? ", updates " : "", c->upd ? c->tu : "", why);
}

static void set_out(ictx *c, int rank, const int64_t *dims) {
    c->out->rank = (uint8_t)rank;
    memcpy(c->out->dims, dims, (size_t)rank * sizeof *dims);
    c->out->dtype = c->x->dtype;
}

/* Gather along an axis: out = x.dims[:axis] + idx.dims + x.dims[axis+1:]. */
static braid_status infer_axis(ictx *c) {
    int r = c->x->rank, q = c->idx->rank;
    if (r + q - 1 > BRAID_MAX_RANK)
        return shape_fail(c, "the result would have rank above 8");
    int64_t d[BRAID_MAX_RANK];
    int k = 0;
    for (int i = 0; i < c->axis; i++)
        d[k++] = c->x->dims[i];
    for (int i = 0; i < q; i++)
        d[k++] = c->idx->dims[i];
    for (int i = c->axis + 1; i < r; i++)
        d[k++] = c->x->dims[i];
    set_out(c, k, d);
    return BRAID_OK;
}

/* Elements: indices of data's rank, each dim but the axis's no larger than
 * data's (so every coordinate but the indexed one is in range); the
 * result (gather) has the indices' shape. */
static braid_status infer_elements(ictx *c) {
    if (c->idx->rank != c->x->rank)
        return shape_fail(c, "expected indices of the data's rank");
    for (int i = 0; i < c->x->rank; i++)
        if (i != c->axis && c->idx->dims[i] > c->x->dims[i])
            return shape_fail(c, "an indices dim other than the axis's "
                                 "exceeds the data's");
    if (c->upd) {
        bool same = c->upd->rank == c->idx->rank;
        for (int i = 0; same && i < c->idx->rank; i++)
            same = c->upd->dims[i] == c->idx->dims[i];
        if (!same)
            return shape_fail(c, "expected updates of the indices' shape");
        set_out(c, c->x->rank, c->x->dims);
    } else {
        set_out(c, c->idx->rank, c->idx->dims);
    }
    return BRAID_OK;
}

/* ND: indices [batch..., q..., m]; result batch + q + data.dims[b+m:]
 * (gather) or the data's shape (scatter, whose updates have that shape). */
static braid_status infer_nd(ictx *c) {
    int b = c->axis, r = c->x->rank, q = c->idx->rank;
    if (q < 1 || b >= q || b >= r)
        return shape_fail(c, "expected indices of rank >= 1 and batch_dims "
                             "below both ranks");
    int64_t m = c->idx->dims[q - 1];
    if (m < 1 || m > r - b)
        return shape_fail(c, "the indices' last dim (the tuple length) must "
                             "be 1 .. data rank - batch_dims");
    for (int i = 0; i < b; i++)
        if (c->idx->dims[i] != c->x->dims[i])
            return shape_fail(c, "batch dims differ");
    int64_t d[2 * BRAID_MAX_RANK];
    int k = 0;
    for (int i = 0; i < q - 1; i++)
        d[k++] = c->idx->dims[i];
    for (int i = b + (int)m; i < r; i++)
        d[k++] = c->x->dims[i];
    if (k > BRAID_MAX_RANK)
        return shape_fail(c, "the result would have rank above 8");
    if (!c->upd) {
        set_out(c, k, d);
        return BRAID_OK;
    }
    bool same = c->upd->rank == k;
    for (int i = 0; same && i < k; i++)
        same = c->upd->dims[i] == d[i];
    if (!same)
        return shape_fail(c, "expected updates of shape indices.dims[:-1] + "
                             "data.dims[m:]");
    set_out(c, r, c->x->dims);
    return BRAID_OK;
}

/* The attributes: a known mode for the op, a reduction for scatter only
 * (one the data's dtype supports), the axis in range (negative counts from
 * the end) or batch_dims ≥ 0. */
static braid_status check_attrs(ictx *c, braid_op op, const bg_attrs *a) {
    bg_index_mode mode = bg_index_mode_of(a);
    bg_scatter_red red = bg_scatter_red_of(a);
    bool scatter = op == BRAID_OP_SCATTER;
    if ((a->flags & ~0xFFu) || mode >= BG_INDEX_MODE_COUNT_ ||
        red >= BG_SCATTER_RED_COUNT_ || (scatter && mode == BG_INDEX_AXIS) ||
        (!scatter && red != BG_SCATTER_NONE))
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: flags 0x%x name no form of the op (expected %s)",
                       c->op, (unsigned)a->flags,
                       scatter ? "elements or nd, and a reduction"
                               : "axis, elements or nd");
    c->mode = mode;
    if (red != BG_SCATTER_NONE &&
        !bg_op_accepts(bg_scatter_red_op(red), c->x->dtype))
        return bg_fail(c->g, BRAID_ERR_DTYPE,
                       "%s: reduction %s on data %s; expected %s", c->op,
                       bg_scatter_red_name(red), c->tx,
                       bg_op_dtypes_text(bg_scatter_red_op(red)));
    int r = c->x->rank;
    c->axis = a->axis;
    if (mode == BG_INDEX_ND) {
        if (a->axis < 0 || (scatter && a->axis != 0))
            return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                           "%s (nd): batch_dims %d; expected %s", c->op,
                           (int)a->axis, scatter ? "0" : ">= 0");
        return BRAID_OK;
    }
    if (a->axis < -r || a->axis >= r)
        return bg_fail(c->g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s (%s): axis %d out of range for data %s", c->op,
                       bg_index_mode_name(mode), (int)a->axis, c->tx);
    if (c->axis < 0) c->axis += r;
    return BRAID_OK;
}

braid_status bg_infer_index(braid_graph *g, braid_op op, const uint32_t *in,
                            uint32_t nin, const bg_attrs *a, bg_node *out) {
    ictx c = {.g = g, .op = bg_op(op)->name, .out = out};
    c.x = &g->nodes[in[0]];
    c.idx = &g->nodes[in[1]];
    c.upd = nin > 2 ? &g->nodes[in[2]] : NULL;
    bg_type_str(c.x, c.tx, sizeof c.tx);
    bg_type_str(c.idx, c.ti, sizeof c.ti);
    if (c.upd) bg_type_str(c.upd, c.tu, sizeof c.tu);
    out->dtype = c.x->dtype;
    bool int_idx = c.idx->dtype == BRAID_I32 || c.idx->dtype == BRAID_I64;
    if (!int_idx || (c.upd && c.upd->dtype != c.x->dtype))
        return bg_fail(
            g, BRAID_ERR_DTYPE,
            "%s: data %s, indices %s%s%s; expected i32 or i64 indices%s", c.op,
            c.tx, c.ti, c.upd ? ", updates " : "", c.upd ? c.tu : "",
            c.upd ? " and updates of the data's dtype" : "");
    if (c.x->rank == 0)
        return bg_fail(g, BRAID_ERR_SHAPE, "%s: data %s; expected rank >= 1",
                       c.op, c.tx);
    braid_status s = check_attrs(&c, op, a);
    if (s != BRAID_OK) return s;
    out->attr.flags = a->flags;
    out->attr.axis = c.axis;
    switch (c.mode) {
    case BG_INDEX_AXIS:
        return infer_axis(&c);
    case BG_INDEX_ELEMENTS:
        return infer_elements(&c);
    default:
        return infer_nd(&c);
    }
}

/* ---- where an index lands ------------------------------------------------ */

static int64_t prod(const int64_t *d, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

void bg_index_geom_of(const braid_graph *g, const bg_node *n,
                      bg_index_geom *geo) {
    const bg_node *x = &g->nodes[n->inputs[0]];
    const bg_node *idx = &g->nodes[n->inputs[1]];
    memset(geo, 0, sizeof *geo);
    geo->mode = bg_index_mode_of(&n->attr);
    geo->red = bg_scatter_red_of(&n->attr);
    geo->axis = n->attr.axis;
    geo->ndata = bg_numel(x);
    geo->idx64 = idx->dtype == BRAID_I64;
    geo->nwork = n->op == BRAID_OP_SCATTER ? bg_numel(&g->nodes[n->inputs[2]])
                                           : bg_numel(n);
    int r = x->rank;
    if (geo->mode == BG_INDEX_AXIS) {
        geo->outer = prod(x->dims, 0, geo->axis);
        geo->bound[0] = x->dims[geo->axis];
        geo->inner = prod(x->dims, geo->axis + 1, r);
        geo->nidx = bg_numel(idx);
    } else if (geo->mode == BG_INDEX_ELEMENTS) {
        geo->rank = r;
        memcpy(geo->idims, idx->dims, sizeof geo->idims);
        for (int i = 0; i < r; i++)
            geo->dstride[i] = prod(x->dims, i + 1, r);
        geo->bound[0] = x->dims[geo->axis];
    } else {
        int b = geo->axis, q = idx->rank;
        geo->m = idx->dims[q - 1];
        geo->outer = prod(idx->dims, 0, b);
        geo->nidx = prod(idx->dims, b, q - 1);
        geo->inner = prod(x->dims, b + (int)geo->m, r);
        geo->batch_stride = prod(x->dims, b, r);
        for (int k = 0; k < geo->m; k++) {
            geo->bound[k] = x->dims[b + k];
            geo->dstride[k] = prod(x->dims, b + k + 1, r);
        }
    }
}

static int64_t fail(bg_index_bad *bad, int64_t v, int64_t pos, int64_t bound) {
    bad->value = v;
    bad->pos = pos;
    bad->bound = bound;
    return -1;
}

int64_t bg_index_target(const bg_index_geom *geo, int64_t p, const void *idx,
                        bg_index_bad *bad) {
    if (geo->mode == BG_INDEX_AXIS) {
        int64_t i = p % geo->inner, t = p / geo->inner;
        int64_t q = t % geo->nidx, o = t / geo->nidx;
        int64_t w = bg_index_norm(bg_index_at(geo, idx, q), geo->bound[0]);
        if (w < 0) return fail(bad, bg_index_at(geo, idx, q), q, geo->bound[0]);
        return (o * geo->bound[0] + w) * geo->inner + i;
    }
    if (geo->mode == BG_INDEX_ELEMENTS) {
        int64_t w = bg_index_norm(bg_index_at(geo, idx, p), geo->bound[0]);
        if (w < 0) return fail(bad, bg_index_at(geo, idx, p), p, geo->bound[0]);
        int64_t off = 0, rest = p;
        for (int k = geo->rank - 1; k >= 0; k--) {
            int64_t c = rest % geo->idims[k];
            rest /= geo->idims[k];
            off += (k == geo->axis ? w : c) * geo->dstride[k];
        }
        return off;
    }
    int64_t i = p % geo->inner, t = p / geo->inner; /* t = b · nidx + q */
    int64_t off = (t / geo->nidx) * geo->batch_stride + i;
    for (int64_t k = 0; k < geo->m; k++) {
        int64_t pos = t * geo->m + k;
        int64_t w = bg_index_norm(bg_index_at(geo, idx, pos), geo->bound[k]);
        if (w < 0)
            return fail(bad, bg_index_at(geo, idx, pos), pos, geo->bound[k]);
        off += w * geo->dstride[k];
    }
    return off;
}

bool bg_index_first_bad(const bg_index_geom *geo, const void *idx,
                        int64_t nidx_elems, bg_index_bad *bad) {
    if (geo->nwork == 0) return false; /* no index is ever read */
    for (int64_t pos = 0; pos < nidx_elems; pos++) {
        int64_t bound =
            geo->mode == BG_INDEX_ND ? geo->bound[pos % geo->m] : geo->bound[0];
        if (bg_index_norm(bg_index_at(geo, idx, pos), bound) < 0) {
            fail(bad, bg_index_at(geo, idx, pos), pos, bound);
            return true;
        }
    }
    return false;
}

const char *bg_index_bad_text(const bg_index_bad *bad, char *buf, size_t size) {
    snprintf(buf, size,
             "index %lld at position %lld of the indices is out of range for "
             "an axis of length %lld (expected %lld .. %lld)",
             (long long)bad->value, (long long)bad->pos, (long long)bad->bound,
             (long long)-bad->bound, (long long)bad->bound - 1);
    return buf;
}
