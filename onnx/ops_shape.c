/* onnx/ops_shape.c — ONNX's constants, shape queries and data movement.
 * Shape-carrying inputs (Reshape's shape, Slice's starts, ...) must be
 * static after folding (ox_static_ints says so when they are not). */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ELEM_INT64 7
#define ELEM_BOOL 9
#define ELEM_FLOAT 1

/* ---- constants and shapes ------------------------------------------------------ */

static braid_status map_constant(ox_node *n) {
    const Onnx__AttributeProto *a = n->np->n_attribute ? n->np->attribute[0]
                                                        : NULL;
    const char *name = a && a->name ? a->name : "";
    int64_t one = 1;
    if (a && a->t && !strcmp(name, "value")) {
        ox_value v = {.t = BRAID_NONE};
        const char *what = n->nout ? n->np->output[0] : "Constant";
        braid_status s = ox_load_tensor(n->im, a->t, NULL, what, &v);
        if (s == BRAID_OK && v.sv)
            s = ox_out_static(n, 0, v.elem, v.rank, v.dims, v.sv);
        else if (s == BRAID_OK)
            ox_out(n, 0, v.t, v.elem);
        free(v.sv);
        return s;
    }
    if (a && !strcmp(name, "value_float"))
        return ox_out_static(n, 0, ELEM_FLOAT, 0, &one, &(double){a->f});
    if (a && !strcmp(name, "value_int"))
        return ox_out_static(n, 0, ELEM_INT64, 0, &one, &(double){(double)a->i});
    if (a && (!strcmp(name, "value_floats") || !strcmp(name, "value_ints"))) {
        bool f = name[6] == 'f';
        int64_t m = f ? (int64_t)a->n_floats : (int64_t)a->n_ints;
        double *v = malloc((size_t)m * sizeof *v + 1);
        if (!v) return ox_node_fail(n, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        for (int64_t i = 0; i < m; i++)
            v[i] = f ? a->floats[i] : (double)a->ints[i];
        braid_status s =
            ox_out_static(n, 0, f ? ELEM_FLOAT : ELEM_INT64, 1, &m, v);
        free(v);
        return s;
    }
    return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "attribute \"%s\" (sparse "
                        "and string constants are not supported)", name);
}

static braid_status map_shape(ox_node *n) {
    if (!ox_has(n, 0)) return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT,
                                           "input 0 is missing");
    const ox_value *v = n->in[0];
    int64_t lo = ox_attr_int(n, "start", 0), hi = ox_attr_int(n, "end", v->rank);
    if (lo < 0) lo += v->rank;
    if (hi < 0) hi += v->rank;
    lo = lo < 0 ? 0 : lo > v->rank ? v->rank : lo;
    hi = hi < lo ? lo : hi > v->rank ? v->rank : hi;
    double d[BRAID_MAX_RANK];
    for (int64_t i = lo; i < hi; i++) d[i - lo] = (double)v->dims[i];
    int64_t m = hi - lo;
    return ox_out_static(n, 0, ELEM_INT64, 1, &m, d);
}

static braid_status map_size(ox_node *n) {
    if (!ox_has(n, 0)) return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT,
                                           "input 0 is missing");
    double m = (double)ox_numel(n->in[0]->rank, n->in[0]->dims);
    return ox_out_static(n, 0, ELEM_INT64, 0, NULL, &m);
}

static braid_status map_constant_of_shape(ox_node *n) {
    int64_t dims[BRAID_MAX_RANK];
    int rank;
    if (!ox_static_ints(n, 0, dims, BRAID_MAX_RANK, &rank)) return n->im->status;
    if (!bg_shape_fits(rank, dims, 8, NULL))
        return ox_node_fail(n, BRAID_ERR_SHAPE, "shape is negative or too "
                            "large");
    const Onnx__AttributeProto *a = ox_attr(n, "value");
    int elem = ELEM_FLOAT;
    double val = 0;
    if (a && a->t) {
        ox_value v = {.t = BRAID_NONE};
        braid_status s = ox_load_tensor(n->im, a->t, NULL, "value", &v);
        if (s == BRAID_OK && (!v.sv || ox_numel(v.rank, v.dims) != 1)) {
            free(v.sv);
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "value must "
                                "hold one element");
        }
        if (s != BRAID_OK) return s;
        elem = v.elem;
        val = v.sv[0];
        free(v.sv);
    }
    int64_t m = ox_numel(rank, dims);
    if (m > OX_STATIC_MAX) {
        braid_dtype t = ox_dtype(elem);
        if (t == BRAID_DTYPE_COUNT_)
            return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "element type %s",
                                ox_elem_name(elem));
        ox_out(n, 0, braid_fill(n->g, t, rank, dims, val), elem);
        return BRAID_OK;
    }
    double *v = malloc((size_t)m * sizeof *v + 1);
    if (!v) return ox_node_fail(n, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < m; i++) v[i] = val;
    braid_status s = ox_out_static(n, 0, elem, rank, dims, v);
    free(v);
    return s;
}

static braid_status map_range(ox_node *n) {
    int64_t c;
    const double *st = ox_static(n, 0, &c), *li = st ? ox_static(n, 1, &c) : 0;
    const double *de = li ? ox_static(n, 2, &c) : NULL;
    if (!de) return n->im->status;
    double cnt = ceil((li[0] - st[0]) / de[0]);
    if (!(cnt >= 0)) cnt = 0;
    if (cnt > OX_FOLD_MAX)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "%g elements", cnt);
    int64_t m = (int64_t)cnt;
    braid_tensor s = ox_in(n, 0), d = ox_in(n, 2);
    braid_dtype t = ox_tdtype(n, s);
    braid_tensor i = braid_iota(n->g, t, 1, &m, 0);
    ox_out(n, 0, braid_add(n->g, braid_mul(n->g, i, d), s), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* ---- reshaping ------------------------------------------------------------------- */

static braid_status map_reshape(ox_node *n) {
    int64_t shape[BRAID_MAX_RANK];
    int rank;
    bool ok = n->im->opset < 5
                  ? ox_attr_ints(n, "shape", shape, BRAID_MAX_RANK, &rank)
                  : ox_static_ints(n, 1, shape, BRAID_MAX_RANK, &rank);
    if (!ok) return n->im->status;
    if (rank < 0) return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "no shape");
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    bool allowzero = ox_attr_int(n, "allowzero", 0);
    for (int i = 0; i < rank; i++)
        if (shape[i] == 0 && !allowzero) {
            if (i >= r)
                return ox_node_fail(n, BRAID_ERR_SHAPE, "shape[%d] is 0 (copy) "
                                    "past the input's rank %d", i, r);
            shape[i] = d[i];
        }
    ox_out(n, 0, braid_reshape(n->g, x, rank, shape), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_flatten(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), axis;
    int64_t a = ox_attr_int(n, "axis", 1);
    if (a < 0) a += r;
    if (a < 0 || a > r)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "axis %lld for rank "
                            "%d", (long long)ox_attr_int(n, "axis", 1), r);
    axis = (int)a;
    int64_t out[2] = {ox_numel(axis, d), ox_numel(r - axis, d + axis)};
    ox_out(n, 0, braid_reshape(n->g, x, 2, out), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_squeeze(ox_node *n) {
    int64_t axes[BRAID_MAX_RANK];
    int na;
    if (!ox_axes(n, "axes", 1, axes, &na)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], out[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), k = 0;
    bool drop[BRAID_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int ax;
        if (!ox_axis(n, axes[i], r, &ax)) return n->im->status;
        if (d[ax] != 1)
            return ox_node_fail(n, BRAID_ERR_SHAPE, "axis %d has size %lld, "
                                "not 1", ax, (long long)d[ax]);
        drop[ax] = true;
    }
    for (int i = 0; i < r; i++)
        if (!(na < 0 ? d[i] == 1 : drop[i])) out[k++] = d[i];
    ox_out(n, 0, braid_reshape(n->g, x, k, out), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_unsqueeze(ox_node *n) {
    int64_t axes[BRAID_MAX_RANK];
    int na;
    if (!ox_axes(n, "axes", 1, axes, &na)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], out[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    if (na < 0 || r + na > BRAID_MAX_RANK)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "axes missing or the "
                            "result's rank above %d", BRAID_MAX_RANK);
    bool ins[BRAID_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int ax;
        if (!ox_axis(n, axes[i], r + na, &ax)) return n->im->status;
        if (ins[ax])
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "axis %d twice",
                                ax);
        ins[ax] = true;
    }
    for (int i = 0, k = 0; i < r + na; i++) out[i] = ins[i] ? 1 : d[k++];
    ox_out(n, 0, braid_reshape(n->g, x, r + na, out), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_transpose(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), cnt;
    int64_t p[BRAID_MAX_RANK];
    int perm[BRAID_MAX_RANK];
    if (!ox_attr_ints(n, "perm", p, BRAID_MAX_RANK, &cnt)) return n->im->status;
    if (cnt >= 0 && cnt != r)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "perm has %d "
                            "entries for rank %d", cnt, r);
    for (int i = 0; i < r; i++)
        perm[i] = cnt < 0 ? r - 1 - i : (int)(p[i] < 0 ? p[i] + r : p[i]);
    ox_out(n, 0, braid_permute(n->g, x, perm), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* ---- slicing and joining ------------------------------------------------------------- */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

static braid_status map_slice(ox_node *n) {
    int64_t st[BRAID_MAX_RANK], en[BRAID_MAX_RANK], ax[BRAID_MAX_RANK],
        sp[BRAID_MAX_RANK];
    int ns, ne, na = -1, nsp = -1;
    bool ok;
    if (n->im->opset < 10)
        ok = ox_attr_ints(n, "starts", st, BRAID_MAX_RANK, &ns) &&
             ox_attr_ints(n, "ends", en, BRAID_MAX_RANK, &ne) &&
             ox_attr_ints(n, "axes", ax, BRAID_MAX_RANK, &na);
    else
        ok = ox_static_ints(n, 1, st, BRAID_MAX_RANK, &ns) &&
             ox_static_ints(n, 2, en, BRAID_MAX_RANK, &ne) &&
             (!ox_has(n, 3) || ox_static_ints(n, 3, ax, BRAID_MAX_RANK, &na)) &&
             (!ox_has(n, 4) || ox_static_ints(n, 4, sp, BRAID_MAX_RANK, &nsp));
    if (!ok) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    if (ns != ne || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "starts, ends, axes "
                            "and steps differ in length");
    int64_t b[BRAID_MAX_RANK], e[BRAID_MAX_RANK], s[BRAID_MAX_RANK];
    for (int i = 0; i < r; i++) b[i] = 0, e[i] = d[i], s[i] = 1;
    for (int i = 0; i < ns; i++) {
        int a;
        if (!ox_axis(n, na >= 0 ? ax[i] : i, r, &a)) return n->im->status;
        int64_t step = nsp >= 0 ? sp[i] : 1;
        if (step == 0)
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "step 0");
        if (step < 0) { /* braid_slice walks back with Python's rules,
                           which ONNX's clamping matches */
            b[a] = clamp64(st[i], -d[a] - 1, d[a]);
            e[a] = clamp64(en[i], -d[a] - 1, d[a]);
            s[a] = step;
            continue;
        }
        int64_t lo = st[i] < 0 ? (st[i] < -d[a] ? 0 : st[i] + d[a]) : st[i];
        int64_t hi = en[i] < 0 ? (en[i] < -d[a] ? 0 : en[i] + d[a]) : en[i];
        b[a] = clamp64(lo, 0, d[a]);
        e[a] = clamp64(hi, b[a], d[a]);
        s[a] = step;
    }
    ox_out(n, 0, braid_slice(n->g, x, b, e, s), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_concat(ox_node *n) {
    braid_tensor xs[OX_MAX_IO];
    int k = 0;
    for (int i = 0; i < n->nin; i++)
        if (ox_has(n, i)) xs[k++] = ox_in(n, i);
    if (!k) return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "no inputs");
    int r = ox_rank(n, xs[0], NULL), axis;
    if (!ox_axis(n, ox_attr_int(n, "axis", 0), r, &axis)) return n->im->status;
    ox_out(n, 0, k == 1 ? xs[0] : braid_concat(n->g, k, xs, axis),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_tensor slice_axis(ox_node *n, braid_tensor x, int axis,
                               int64_t lo, int64_t hi) {
    int64_t d[BRAID_MAX_RANK], b[BRAID_MAX_RANK] = {0};
    int r = ox_rank(n, x, d);
    (void)r;
    b[axis] = lo;
    d[axis] = hi;
    return braid_slice(n->g, x, b, d, NULL);
}

static braid_status map_split(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], sizes[OX_MAX_IO];
    int r = ox_rank(n, x, d), axis, cnt = -1;
    if (!ox_axis(n, ox_attr_int(n, "axis", 0), r, &axis)) return n->im->status;
    bool ok = ox_attr_ints(n, "split", sizes, OX_MAX_IO, &cnt) &&
              (cnt >= 0 || !ox_has(n, 1) ||
               ox_static_ints(n, 1, sizes, OX_MAX_IO, &cnt));
    if (!ok) return n->im->status;
    if (cnt < 0) { /* equal parts; the last one smaller (opset 18) */
        int64_t parts = n->nout, chunk = (d[axis] + parts - 1) / parts;
        for (int i = 0; i < n->nout; i++) {
            int64_t lo = chunk * i;
            sizes[i] = lo >= d[axis] ? 0 : (lo + chunk > d[axis] ? d[axis] - lo
                                                                  : chunk);
        }
        cnt = n->nout;
    }
    if (cnt != n->nout)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "%d sizes for %d "
                            "outputs", cnt, n->nout);
    int64_t at = 0;
    for (int i = 0; i < cnt; i++) {
        if (sizes[i] < 0 || at + sizes[i] > d[axis])
            return ox_node_fail(n, BRAID_ERR_SHAPE, "split sizes exceed the "
                                "axis (%lld)", (long long)d[axis]);
        ox_out(n, i, slice_axis(n, x, axis, at, at + sizes[i]),
               ox_in_elem(n, 0));
        at += sizes[i];
    }
    return BRAID_OK;
}

static braid_status map_expand(ox_node *n) {
    int64_t shape[BRAID_MAX_RANK], d[BRAID_MAX_RANK], out[BRAID_MAX_RANK];
    int rank, ro;
    if (!ox_static_ints(n, 1, shape, BRAID_MAX_RANK, &rank)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, d);
    if (!bg_broadcast_shapes(r, d, rank, shape, &ro, out))
        return ox_node_fail(n, BRAID_ERR_SHAPE, "shape does not broadcast with "
                            "the input");
    ox_out(n, 0, braid_broadcast_to(n->g, x, ro, out), ox_in_elem(n, 0));
    return BRAID_OK;
}


static braid_status map_tile(ox_node *n) {
    int64_t reps[BRAID_MAX_RANK];
    int nr;
    if (!ox_static_ints(n, 1, reps, BRAID_MAX_RANK, &nr)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL);
    if (nr != r)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "%d repeats for "
                            "rank %d", nr, r);
    for (int a = 0; a < r; a++) {
        if (reps[a] < 0 || reps[a] > 1024)
            return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "repeat %lld",
                                (long long)reps[a]);
        if (reps[a] == 1) continue;
        braid_tensor xs[1024];
        for (int64_t k = 0; k < reps[a]; k++) xs[k] = x;
        x = reps[a] ? braid_concat(n->g, (int)reps[a], xs, a)
                    : slice_axis(n, x, a, 0, 0);
    }
    ox_out(n, 0, x, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* Inference only: the identity, and a mask of ones. */
static braid_status map_dropout(ox_node *n) {
    if (ox_has(n, 2) && (!n->in[2]->sv || n->in[2]->sv[0] != 0))
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "training_mode (true, or "
                            "known only at run time)");
    braid_tensor x = ox_in(n, 0);
    ox_out(n, 0, x, ox_in_elem(n, 0));
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    if (n->nout > 1) ox_out(n, 1, braid_fill(n->g, BRAID_BOOL, r, d, 1), ELEM_BOOL);
    return BRAID_OK;
}

const ox_op ox_ops_shape[] = {
    {"Concat", 1, map_concat, 0},
    {"Constant", 1, map_constant, OX_NOFOLD},
    {"ConstantOfShape", 9, map_constant_of_shape, OX_NOFOLD},
    {"Dropout", 1, map_dropout, 0},
    {"Expand", 8, map_expand, 0},
    {"Flatten", 1, map_flatten, 0},
    {"Range", 11, map_range, 0},
    {"Reshape", 1, map_reshape, 0},
    {"Shape", 1, map_shape, OX_NOFOLD},
    {"Size", 1, map_size, OX_NOFOLD},
    {"Slice", 1, map_slice, 0},
    {"Split", 1, map_split, 0},
    {"Squeeze", 1, map_squeeze, 0},
    {"Tile", 6, map_tile, 0},
    {"Transpose", 1, map_transpose, 0},
    {"Unsqueeze", 1, map_unsqueeze, 0},
    {NULL, 0, NULL, 0},
};
