/* tests/support/random_graph_shape.c — the generator's shape ops: reshape,
 * permute/transpose, slice, concat, broadcast_to. They move values without
 * computing, so they keep exactness and drift as they are. */
#include "tests/support/random_graph.h"

#include <stdlib.h>

/* Dims with product n (> 0): random divisors, the last dim takes the rest. */
static int factor_dims(ts_gen *G, int64_t n, int64_t *dims) {
    int rank =
        ts_gen_int(G, n == 1 ? 0 : 1, G->o.max_rank > 0 ? G->o.max_rank : 1);
    int64_t rest = n;
    for (int k = 0; k + 1 < rank; k++) {
        int64_t divs[64];
        int nd = 0;
        for (int64_t d = 1; d <= rest && nd < 64 && d <= 2 * G->o.max_dim; d++)
            if (rest % d == 0) divs[nd++] = d;
        dims[k] = divs[ts_gen_int(G, 0, nd - 1)];
        rest /= dims[k];
    }
    if (rank > 0) dims[rank - 1] = rest;
    return rank;
}

bool ts_gen_reshape(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 0, false});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int64_t n = ts_numel(x.rank, x.dims), dims[BRAID_MAX_RANK];
    int rank;
    if (n == 0) { /* any shape with a zero in it */
        rank = ts_gen_int(G, 1, G->o.max_rank > 0 ? G->o.max_rank : 1);
        for (int k = 0; k < rank; k++)
            dims[k] = ts_gen_int(G, 1, (int)G->o.max_dim);
        dims[ts_gen_int(G, 0, rank - 1)] = 0;
    } else {
        rank = factor_dims(G, n, dims);
        if (rank > 0 && ts_gen_chance(G, 0.3))
            dims[ts_gen_int(G, 0, rank - 1)] = -1; /* inferred */
    }
    braid_tensor t = braid_reshape(G->g, x.t, rank, dims);
    ts_gen_emit(G, t, x.v, x.exact);
    return true;
}

bool ts_gen_permute(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 1, false});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    braid_tensor t;
    if (x.rank >= 2 && ts_gen_chance(G, 0.3)) {
        t = braid_transpose(G->g, x.t);
    } else {
        int perm[BRAID_MAX_RANK];
        for (int k = 0; k < x.rank; k++)
            perm[k] = k;
        for (int k = x.rank - 1; k > 0; k--) {
            int j = ts_gen_int(G, 0, k), tmp = perm[k];
            perm[k] = perm[j];
            perm[j] = tmp;
        }
        t = braid_permute(G->g, x.t, perm);
    }
    ts_gen_emit(G, t, x.v, x.exact);
    return true;
}

/* One axis of a slice: mostly a non-empty range written in either Python
 * form (negative indices count from the end; stops past the end clamp). */
static void slice_axis(ts_gen *G, int64_t dim, int64_t *start, int64_t *stop,
                       int64_t *step) {
    *step = ts_gen_chance(G, 0.6) ? 1 : ts_gen_int(G, 2, 3);
    if (dim == 0) {
        *start = 0;
        *stop = 0;
        return;
    }
    int64_t s = ts_gen_int(G, 0, (int)dim - 1);
    int64_t e = ts_gen_int(G, (int)s + 1, (int)dim);
    if (ts_gen_chance(G, 0.2)) { /* backwards: e - 1 down to s */
        *step = -*step;
        *start = e - 1;
        *stop = s > 0 ? s - 1 : -dim - 1 - ts_gen_int(G, 0, 2);
        return;
    }
    if (ts_gen_chance(G, 0.25)) s -= dim;
    if (ts_gen_chance(G, 0.25))
        e = e == dim ? dim + ts_gen_int(G, 0, 3) : e - dim;
    *start = s;
    *stop = e;
}

bool ts_gen_slice(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 1, false});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int64_t start[BRAID_MAX_RANK], stop[BRAID_MAX_RANK], step[BRAID_MAX_RANK];
    bool unit = true;
    for (int k = 0; k < x.rank; k++) {
        slice_axis(G, x.dims[k], &start[k], &stop[k], &step[k]);
        unit = unit && step[k] == 1;
    }
    if (ts_gen_chance(G, 0.03)) { /* an empty result now and then */
        int k = ts_gen_int(G, 0, x.rank - 1);
        stop[k] = start[k];
    }
    braid_tensor t = braid_slice(G->g, x.t, start, stop,
                                 unit && ts_gen_chance(G, 0.5) ? NULL : step);
    ts_gen_emit(G, t, x.v, x.exact);
    return true;
}

/* A piece to join with x along axis: x itself, a pool tensor that fits, or
 * a fresh leaf with its own size along the axis. */
static int concat_piece(ts_gen *G, int xi, int axis) {
    ts_val x = G->vals[xi];
    if (ts_gen_chance(G, 0.25)) return xi;
    if (ts_gen_chance(G, 0.3)) {
        for (int i = G->nvals - 1; i >= 0; i--) {
            const ts_val *y = &G->vals[i];
            bool fits =
                i != xi && y->dt == x.dt && y->rank == x.rank && !y->special;
            for (int k = 0; fits && k < x.rank; k++)
                fits = k == axis || y->dims[k] == x.dims[k];
            if (fits) return i;
        }
    }
    int64_t d[BRAID_MAX_RANK];
    for (int k = 0; k < x.rank; k++)
        d[k] = x.dims[k];
    d[axis] = ts_gen_chance(G, 0.05) ? 0 : ts_gen_int(G, 1, (int)G->o.max_dim);
    return ts_gen_leaf(G, x.dt, x.rank, d);
}

bool ts_gen_concat(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 1, false});
    if (xi < 0) return false;
    int rank = G->vals[xi].rank;
    int axis = ts_gen_int(G, 0, rank - 1);
    int n = ts_gen_int(G, 1, 3), at = ts_gen_int(G, 0, n - 1);
    int idx[3] = {xi, xi, xi};
    int64_t along = 0, rest = 1; /* elements per unit along the axis */
    for (int k = 0; k < rank; k++)
        rest *= k == axis ? 1 : G->vals[xi].dims[k];
    for (int i = 0; i < n; i++) {
        idx[i] = i == at ? xi : concat_piece(G, xi, axis);
        along += G->vals[idx[i]].dims[axis];
        if (along * rest > TS_NUMEL_LIMIT) { /* too big: keep what fits */
            n = i;
            break;
        }
    }
    if (n == 0) return false;
    braid_tensor ts[3];
    ts_iv v = G->vals[idx[0]].v;
    bool exact = true;
    for (int i = 0; i < n; i++) {
        ts[i] = G->vals[idx[i]].t;
        v = ts_iv_union(v, G->vals[idx[i]].v);
        exact = exact && G->vals[idx[i]].exact;
    }
    int ax = ts_gen_chance(G, 0.3) ? axis - rank : axis;
    ts_gen_emit(G, braid_concat(G->g, n, ts, ax), v, exact);
    return true;
}

bool ts_gen_broadcast(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 0, false});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    ts_gen_grow_shape(G, x.rank, x.dims, &rank, dims);
    braid_tensor t = braid_broadcast_to(G->g, x.t, rank, dims);
    ts_gen_emit(G, t, x.v, x.exact);
    return true;
}

/* ---- gather and scatter (issue #13): values move, so they keep exactness;
 * indices are constants in range (negative ones included) --------------- */

/* A constant i32 (rank, dims) whose element p indexes an axis of length
 * bounds[p % m] (m 0: bounds[0]). */
static braid_tensor gen_indices(ts_gen *G, int rank, const int64_t *dims, int m,
                                const int64_t *bounds) {
    int64_t n = ts_numel(rank, dims);
    int32_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) abort();
    for (int64_t p = 0; p < n; p++) {
        int b = (int)bounds[m > 0 ? p % m : 0];
        v[p] = ts_gen_int(G, -b, b - 1);
    }
    braid_tensor t = braid_constant(G->g, BRAID_I32, rank, dims, v);
    free(v);
    return t;
}

/* Indices of x's rank for the elements forms: the axis dim 1..3, the
 * others at most x's. */
static void elements_shape(ts_gen *G, const ts_val *x, int axis,
                           int64_t *dims) {
    for (int k = 0; k < x->rank; k++)
        dims[k] =
            k == axis ? ts_gen_int(G, 1, 3) : ts_gen_int(G, 1, (int)x->dims[k]);
}

/* Indices [Q.., m] for nd forms after b batch dims of x: q extra dims. */
static int nd_shape(ts_gen *G, const ts_val *x, int b, int m, int64_t *dims) {
    int q = ts_gen_int(G, 0, 1);
    for (int k = 0; k < b; k++)
        dims[k] = x->dims[k];
    for (int k = b; k < b + q; k++)
        dims[k] = ts_gen_int(G, 1, 3);
    dims[b + q] = m;
    return b + q + 1;
}

bool ts_gen_gather(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 1, true});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int r = x.rank, axis = ts_gen_int(G, 0, r - 1), form = ts_gen_int(G, 0, 2);
    int64_t d[BRAID_MAX_RANK];
    braid_tensor t;
    if (form == 0) {
        int ir = ts_gen_int(G, 0, r < BRAID_MAX_RANK ? 1 : 0);
        for (int k = 0; k < ir; k++)
            d[k] = ts_gen_int(G, 1, 3);
        braid_tensor i = gen_indices(G, ir, d, 0, &x.dims[axis]);
        t = braid_gather(G->g, x.t, i, ts_gen_chance(G, 0.3) ? axis - r : axis);
    } else if (form == 1) {
        elements_shape(G, &x, axis, d);
        braid_tensor i = gen_indices(G, r, d, 0, &x.dims[axis]);
        t = braid_gather_elements(G->g, x.t, i, axis);
    } else {
        int b = ts_gen_int(G, 0, r - 1), m = ts_gen_int(G, 1, r - b);
        int ir = nd_shape(G, &x, b, m, d);
        braid_tensor i = gen_indices(G, ir, d, m, &x.dims[b]);
        t = braid_gather_nd(G->g, x.t, i, b);
    }
    ts_gen_check(G, "gather");
    ts_gen_emit(G, t, x.v, x.exact);
    return true;
}

/* Updates are x's own values (gathered elsewhere) put in place (none: the
 * reductions would add kinks or drift the gradient suites do not expect),
 * so the result's values stay x's. */
bool ts_gen_scatter(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 1, true});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int r = x.rank, axis = ts_gen_int(G, 0, r - 1);
    braid_scatter_reduction red = BRAID_SCATTER_NONE;
    int64_t d[BRAID_MAX_RANK];
    braid_tensor t;
    if (ts_gen_chance(G, 0.5)) {
        elements_shape(G, &x, axis, d);
        braid_tensor i = gen_indices(G, r, d, 0, &x.dims[axis]);
        braid_tensor j = gen_indices(G, r, d, 0, &x.dims[axis]);
        braid_tensor u = braid_gather_elements(G->g, x.t, j, axis);
        t = braid_scatter_elements(G->g, x.t, i, u, axis, red);
    } else {
        int m = ts_gen_int(G, 1, r), ir = nd_shape(G, &x, 0, m, d);
        braid_tensor i = gen_indices(G, ir, d, m, x.dims);
        braid_tensor j = gen_indices(G, ir, d, m, x.dims);
        braid_tensor u = braid_gather_nd(G->g, x.t, j, 0);
        t = braid_scatter_nd(G->g, x.t, i, u, red);
    }
    ts_gen_check(G, "scatter");
    ts_gen_emit(G, t, x.v, x.exact);
    return true;
}
