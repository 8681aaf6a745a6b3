/* graph/window.h — windowed ops over [N, C, spatial...] (max_pool,
 * avg_pool), internal to the library (prefix bg_).
 *
 * Attributes reuse bg_attrs fields, as collectives do, so every printer
 * hash, clone, equality and plan file carries them without knowing these
 * ops: 15 int64 parameters live in attr.start[0..7] then attr.step[0..7]
 * (slot s: start[s] for s < 8, else step[s - 8]), parameter p of spatial
 * axis i at slot 3·p + i, p being kernel, stride, dilation, pad_lo,
 * pad_hi; attr.flags holds BG_POOL_CEIL and BG_POOL_COUNT_PAD. The output
 * dims follow from them (bg_window_out_dim). Nothing else may read these
 * fields of a window node: use bg_window_get.
 *
 * Kernels see every window op as 3-D: bg_window_get puts the k spatial
 * axes last and pads the missing leading ones with size 1 and a trivial
 * window, so one loop nest serves 1-D, 2-D and 3-D pooling. */
#ifndef BRAID_GRAPH_WINDOW_H
#define BRAID_GRAPH_WINDOW_H

#include "graph/graph.h"

/* attr.flags bits of a pool node */
#define BG_POOL_CEIL 1u      /* ceil_mode: output sizes rounded up */
#define BG_POOL_COUNT_PAD 2u /* avg_pool: the divisor counts padding */

/* A window op's geometry, normalised to three spatial axes. */
typedef struct bg_window {
    int64_t planes;      /* N · C: independent planes */
    int64_t in[3];       /* input spatial dims */
    int64_t out[3];      /* output spatial dims */
    int64_t kernel[3];   /* window size */
    int64_t stride[3];   /* step between windows */
    int64_t dilation[3]; /* step between a window's taps */
    int64_t pad_lo[3];   /* padding before (taps there read nothing) */
    int64_t pad_hi[3];   /* padding after */
    unsigned flags;      /* BG_POOL_* */
} bg_window;

/* Parameter p (0 kernel, 1 stride, 2 dilation, 3 pad_lo, 4 pad_hi) of
 * spatial axis i (as the user counts them, 0..k-1) in a's slots. */
int64_t bg_window_param(const bg_attrs *a, int p, int i);
void bg_window_set_param(bg_attrs *a, int p, int i, int64_t v);

/* The geometry of window node n reading x (kernels, reference). */
void bg_window_get(const bg_node *n, const bg_node *x, bg_window *w);

/* Taps per window of window node n (the product of its kernel sizes): the
 * work per output element that cost models count. */
static inline double bg_window_volume(const bg_node *n) {
    double v = 1;
    for (int i = 0; i + 2 < n->rank && i < 3; i++)
        v *= (double)bg_window_param(&n->attr, 0, i);
    return v;
}

/* Output size of one axis: (in + lo + hi - dil·(k - 1) - 1) / stride + 1
 * rounded down, or up with ceil (then a last window starting past the
 * input and its low padding is dropped). ≤ 0 when no window fits. Callers
 * bound the arguments (builder checks) so nothing overflows. */
int64_t bg_window_out_dim(int64_t in, int64_t k, int64_t stride, int64_t dil,
                          int64_t lo, int64_t hi, bool ceil);

/* The taps of output position o along axis a: j in [*j0, *j1) read input
 * o·stride - pad_lo + j·dilation, all inside [0, in); *padded: the taps
 * inside the padded input [-pad_lo, in + pad_hi) (avg_pool's divisor with
 * count_include_pad). */
void bg_window_taps(const bg_window *w, int a, int64_t o, int64_t *j0,
                    int64_t *j1, int64_t *padded);

/* Output elements [lo, hi) of window node n from x's values in (float64,
 * before rounding): the reference meaning, for graph/eval.c. */
void bg_eval_window(const bg_node *n, const bg_node *x, const double *in,
                    double *out, int64_t lo, int64_t hi);

/* bg_build's checks and output type for a window op (graph/build.c). */
braid_status bg_infer_window(braid_graph *g, braid_op op, const bg_node *x,
                             const bg_attrs *a, bg_node *out);

#endif /* BRAID_GRAPH_WINDOW_H */
