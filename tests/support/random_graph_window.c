/* tests/support/random_graph_window.c — window ops for the random graphs:
 * max_pool / avg_pool and resize.
 *
 * Pools use dilation 1 and pads below the kernel, and ceil_mode only
 * without pads, so every window holds a tap inside the input (no -inf
 * from an empty max). Max copies a value (exact when x is); an average or
 * a linear resize is a convex combination of x's values (with
 * count_include_pad, of zeros too): within x's range, 1-Lipschitz in x's
 * drift, rounded once. Nearest resize copies values. */
#include "tests/support/random_graph.h"

#include <math.h>

bool ts_gen_pool(ts_gen *G) {
    bool max = ts_gen_chance(G, 0.5);
    unsigned dts = max ? (TS_FLOATS | TS_DT(BRAID_I32)) : TS_FLOATS;
    int xi = ts_gen_pick(G, (ts_want){dts, false, 3, true});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    if (x.rank > 5) return false;
    braid_pool_params pp = {0};
    bool padded = false;
    for (int i = 0; i < x.rank - 2; i++) {
        int64_t d = x.dims[2 + i];
        pp.kernel[i] = ts_gen_int(G, 1, d < 3 ? (int)d : 3);
        pp.strides[i] = ts_gen_int(G, 1, 2);
        pp.pads_lo[i] = ts_gen_int(G, 0, (int)pp.kernel[i] - 1);
        pp.pads_hi[i] = ts_gen_int(G, 0, (int)pp.kernel[i] - 1);
        padded |= pp.pads_lo[i] || pp.pads_hi[i];
    }
    pp.ceil_mode = !padded && ts_gen_chance(G, 0.5);
    pp.count_include_pad = !max && ts_gen_chance(G, 0.5);
    braid_tensor t = max ? braid_max_pool(G->g, x.t, &pp)
                         : braid_avg_pool(G->g, x.t, &pp);
    ts_gen_check(G, "pool");
    if (max) {
        ts_gen_emit(G, t, x.v, x.exact);
        return true;
    }
    double lo = x.v.lo, hi = x.v.hi;
    if (pp.count_include_pad) lo = fmin(lo, 0), hi = fmax(hi, 0);
    ts_gen_emit(G, t, ts_iv_round(ts_iv_lipschitz(x.v, 1, lo, hi), x.dt),
                false);
    return true;
}

bool ts_gen_resize(ts_gen *G) {
    if (G->o.grad_ops_only) return false; /* no gradient rule */
    int xi = ts_gen_pick(G, (ts_want){TS_FLOATS, false, 1, true});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int64_t sizes[BRAID_MAX_RANK];
    int64_t numel = 1;
    for (int a = 0; a < x.rank; a++) {
        sizes[a] = x.dims[a];
        if (a >= x.rank - 3 && ts_gen_chance(G, 0.6))
            sizes[a] = ts_gen_int(G, 1, (int)(2 * x.dims[a] + 1));
        numel *= sizes[a];
    }
    if (numel > 4 * ts_numel(x.rank, x.dims) + 64) return false;
    bool linear = ts_gen_chance(G, 0.5);
    braid_tensor t = braid_resize(
        G->g, x.t, sizes, NULL,
        linear ? BRAID_RESIZE_LINEAR : BRAID_RESIZE_NEAREST,
        (braid_resize_coord)ts_gen_int(G, 0, 3),
        (braid_resize_nearest)ts_gen_int(G, 0, 3));
    ts_gen_check(G, "resize");
    if (!linear) {
        ts_gen_emit(G, t, x.v, x.exact);
        return true;
    }
    ts_gen_emit(G, t,
                ts_iv_round(ts_iv_lipschitz(x.v, 1, x.v.lo, x.v.hi), x.dt),
                false);
    return true;
}
