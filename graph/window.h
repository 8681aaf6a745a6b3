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
#define BG_POOL_CHANNELS_LAST                                                  \
    4u /* x [N, spatial..., C] and the output                                  \
          likewise; no builder makes it:                                       \
          passes/channels_last.c does, the text                                \
          format spells it channels_last */

/* A window op's geometry, normalised to three spatial axes. Plane p = n·C
 * + c of x starts at element bg_window_at(w, p, 0); its spatial positions
 * are `inner` elements apart (1 channels first, C channels last). */
typedef struct bg_window {
    int64_t planes;      /* N · C: independent planes */
    int64_t inner;       /* channels interleaved: 1, or C channels last */
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

/* The element of plane pl at flat spatial position s (of vol positions per
 * plane): channels first pl·vol + s; channels last (n·vol + s)·C + c. The
 * same for an output element with the output's vol. */
static inline int64_t bg_window_at(const bg_window *w, int64_t pl, int64_t vol,
                                   int64_t s) {
    return (pl / w->inner * vol + s) * w->inner + pl % w->inner;
}

/* The plane and flat spatial position of output element e (of ovol
 * positions per plane): bg_window_at's inverse. */
static inline void bg_window_split(const bg_window *w, int64_t e, int64_t ovol,
                                   int64_t *pl, int64_t *s) {
    int64_t c = e % w->inner, r = e / w->inner;
    *s = r % ovol;
    *pl = r / ovol * w->inner + c;
}

/* Taps per output element of window node n (a pool: the product of its
 * kernel sizes; resize: 1 nearest, 2 per resized axis linear): the work
 * per output element that cost models count. */
double bg_window_volume(const bg_node *n);

/* Whether output index i of axis 0 reads only input index i along axis 0
 * (so the op may run on row blocks of axis 0 apart: sharding). Pools:
 * always (axis 0 is N); resize: when axis 0 is not resized. */
bool bg_window_batched(const bg_node *n, const bg_node *x);

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

/* bg_build's checks and output type for a window op (graph/build.c);
 * rank/dims: the requested output shape (resize only). */
braid_status bg_infer_window(braid_graph *g, braid_op op, const bg_node *x,
                             const bg_attrs *a, int rank, const int64_t *dims,
                             bg_node *out);

/* ---- resize (graph/resize.c) ---------------------------------------------
 *
 * resize changes the last three axes at most (the leading ones, "planes",
 * keep their size). Attributes: attr.flags packs the mode, coordinate
 * transformation and nearest rounding (BG_RESIZE_* below); the scale of
 * each of the last three axes is a double stored bit for bit in
 * attr.start[0..2] (start[0] for the third axis from the end), every other
 * slot 0. The output shape is the node's (bg_build's requested dims). */
#define BG_RESIZE_MODE(f) ((f) & 3u)           /* braid_resize_mode */
#define BG_RESIZE_COORD(f) (((f) >> 2) & 7u)   /* braid_resize_coord */
#define BG_RESIZE_NEAREST(f) (((f) >> 5) & 3u) /* braid_resize_nearest */
#define BG_RESIZE_FLAGS(mode, coord, nearest)                                  \
    ((unsigned)(mode) | (unsigned)(coord) << 2 | (unsigned)(nearest) << 5)

/* A resize's geometry, normalised to three trailing axes. */
typedef struct bg_resize {
    int64_t planes;   /* product of the leading (unchanged) dims */
    int64_t in[3];    /* input sizes of the last three axes */
    int64_t out[3];   /* output sizes */
    double scale[3];  /* out / in as given (ONNX scales) */
    unsigned flags;   /* BG_RESIZE_* */
} bg_resize;

void bg_resize_get(const bg_node *n, const bg_node *x, bg_resize *r);
double bg_resize_scale(const bg_attrs *a, int i);
void bg_resize_set_scale(bg_attrs *a, int i, double s);
/* The taps of output position o along axis a: input indices idx[0..1]
 * with weights w[0..1]; nearest gives one tap (returns 1), linear always
 * two (returns 2; the neighbours clamped to the axis, as onnxruntime and
 * PyTorch do; one neighbour twice at half weight at the border). */
int bg_resize_taps(const bg_resize *r, int a, int64_t o, int64_t idx[2],
                   double w[2]);
/* The text format's names of resize's enums (kind 0: mode, 1: coordinate
 * transformation, 2: nearest rounding; ONNX's spellings); NULL for a value
 * past the end. */
const char *bg_resize_name(int kind, unsigned v);
/* The float64 meaning of output elements [lo, hi). */
void bg_eval_resize(const bg_node *n, const bg_node *x, const double *in,
                    double *out, int64_t lo, int64_t hi);
braid_status bg_infer_resize(braid_graph *g, const bg_node *x,
                             const bg_attrs *a, int rank, const int64_t *dims,
                             bg_node *out);

/* ---- a pool's taps as graph nodes (graph/window.c) -----------------------
 * Tap j (per normalised axis; 0 on the trivial ones) of every window of a
 * pool node reads the input at o·stride − pad_lo + j·dilation along each
 * spatial axis: a strided slice of the input padded by pad_lo before and
 * `hi` after, so that every window fits. The gradient rules of max_pool and
 * avg_pool (graph/grad_window.c) and ONNX MaxPool's Indices output
 * (onnx/ops_conv.c) build their composites tap by tap through these. */
typedef struct bg_pool_taps {
    bg_window w;                  /* the pool's geometry, normalised */
    int rank;                     /* its rank: spatial axes + 2 */
    int64_t dims[BRAID_MAX_RANK]; /* its input's shape */
    int64_t hi[3];                /* padding after, per normalised axis */
} bg_pool_taps;

/* The taps of pool node `pool` of g. */
void bg_pool_taps_init(const braid_graph *g, uint32_t pool, bg_pool_taps *t);
/* The node axis (2 + spatial index) of normalised axis a, or -1 when a is
 * one of the trivial leading axes. */
int bg_pool_taps_axis(const bg_pool_taps *t, int a);
/* x (of the input's shape) padded with `value`: pad_lo before and t->hi
 * after each spatial axis. */
braid_tensor bg_pool_taps_pad(braid_graph *g, const bg_pool_taps *t,
                              braid_tensor x, double value);
/* Tap j's values: the strided slice of padded xp aligned with the pool's
 * output. */
braid_tensor bg_pool_tap(braid_graph *g, const bg_pool_taps *t, braid_tensor xp,
                         const int64_t *j);
/* Every tap j[3] of the window, row-major (the first spatial axis
 * slowest). */
#define BG_POOL_FOR_TAPS(t, j)                                                 \
    for (j[0] = 0; j[0] < (t)->w.kernel[0]; j[0]++)                            \
        for (j[1] = 0; j[1] < (t)->w.kernel[1]; j[1]++)                        \
            for (j[2] = 0; j[2] < (t)->w.kernel[2]; j[2]++)

#endif /* BRAID_GRAPH_WINDOW_H */
