/* tests/support/random_graph.h — internals of ts_random_graph (prefix ts_).
 *
 * The generator grows a pool of tensors. For each one it knows, besides its
 * type, an interval holding every reference value and a bound on how far
 * the executor's value may drift from the reference's (ts_iv). An op is only
 * added when its operands are in the op's safe domain and its modelled
 * drift stays within half of ts_tolerance, so a generated graph compares
 * cleanly on any correct executor, for every input ts_io_new produces.
 *
 * Ops with a discontinuity (floor, ceil, comparisons, casts to i32/bool)
 * only ever see "exact" tensors: values that executor and reference hold
 * bit for bit (inputs, sources, and what selection-like ops such as neg,
 * abs, max, where, shape ops and casts make of them). An f32 value that is
 * 2.9999999 on one side and 3.0 on the other therefore never reaches floor. */
#ifndef BRAID_TESTS_RANDOM_GRAPH_H
#define BRAID_TESTS_RANDOM_GRAPH_H

#include "tests/support/op_cases.h" /* TS_DT, TS_FLOATS, ... */

/* Ranges ts_io_new fills inputs with (support.c uses these). */
#define TS_INPUT_FLOAT 2.0 /* floats in [-2, 2] */
#define TS_INPUT_INT 100.0 /* i32 in [-100, 100] */

/* Largest magnitude a float tensor may reach, and largest element count. */
#define TS_MAG_LIMIT 1000.0
#define TS_NUMEL_LIMIT 4096
/* Most elements one reduction (or one matmul dot product) may combine. */
#define TS_REDUCE_LIMIT 64

/* Value interval and executor-vs-reference drift of a tensor: every
 * reference value r lies in [lo, hi] and the executor's value x satisfies
 * |x - r| <= ea + er·|r|. For i32/bool only lo/hi mean something. */
typedef struct ts_iv {
    double lo, hi; /* value range */
    double ea;     /* absolute drift */
    double er;     /* relative drift */
} ts_iv;

/* One tensor of the generated graph. */
typedef struct ts_val {
    braid_tensor t;               /* the node */
    braid_dtype dt;               /* its dtype */
    int rank;                     /* its rank */
    int64_t dims[BRAID_MAX_RANK]; /* its dims */
    ts_iv v;                      /* what is known of its values */
    bool exact;   /* executor and reference hold bitwise-equal values */
    bool special; /* may hold NaN/inf (empty reductions): output only */
} ts_val;

/* Generator state. */
typedef struct ts_gen {
    braid_graph *g;     /* the graph being built */
    uint64_t seed;      /* ts_random_graph's seed, for messages */
    uint64_t rng;       /* splitmix64 state */
    ts_graph_options o; /* the options */
    ts_val *vals;       /* the pool, nvals of cap */
    int nvals, cap;     /* used and allocated pool slots */
    int ninputs;        /* inputs created so far (named in0, in1, ...) */
} ts_gen;

/* What an operand search asks for. */
typedef struct ts_want {
    unsigned dtypes; /* bit (1u << dtype) per acceptable dtype */
    bool exact;      /* only exact tensors */
    int min_rank;    /* smallest rank */
    bool nonempty;   /* numel > 0 */
} ts_want;

/* ---- drift model (random_graph_iv.c) ------------------------------------- */

/* Unit roundoff of the precision executors compute dt in (f32 for f32,
 * f16 and bf16; f64 for f64). */
double ts_iv_compute_unit(braid_dtype dt);
ts_iv ts_iv_exact(double lo, double hi);
double ts_iv_mag(ts_iv a);
bool ts_iv_ok(ts_iv a, braid_dtype dt); /* within range and half tolerance */
ts_iv ts_iv_round(ts_iv a, braid_dtype dt); /* one computed+rounded node */
ts_iv ts_iv_neg(ts_iv a);
ts_iv ts_iv_abs(ts_iv a);
ts_iv ts_iv_relu(ts_iv a);
ts_iv ts_iv_add(ts_iv a, ts_iv b);
ts_iv ts_iv_mul(ts_iv a, ts_iv b);
ts_iv ts_iv_square(ts_iv a);
ts_iv ts_iv_recip(ts_iv a); /* needs an interval away from 0 */
ts_iv ts_iv_exp(ts_iv a);
ts_iv ts_iv_log(ts_iv a);  /* needs lo > 0 */
ts_iv ts_iv_sqrt(ts_iv a); /* needs lo >= 0 */
/* A function with Lipschitz constant lip and range [lo, hi]. */
ts_iv ts_iv_lipschitz(ts_iv a, double lip, double lo, double hi);
ts_iv ts_iv_sum(ts_iv a, int64_t n, braid_dtype dt); /* n terms, no final
                                                         rounding */
ts_iv ts_iv_scale(ts_iv a, double s); /* exact scaling by s > 0 */
ts_iv ts_iv_maxmin(ts_iv a, ts_iv b, bool is_max);
ts_iv ts_iv_union(ts_iv a, ts_iv b); /* where / concat */
ts_iv ts_iv_cast(ts_iv a, braid_dtype to, bool exact);
ts_iv ts_iv_int(double lo, double hi); /* i32 range, wrapped when it leaves
                                          int32 */

/* ---- pool and leaves (random_graph.c) ------------------------------------ */

int ts_gen_int(ts_gen *G, int lo, int hi);
double ts_gen_unit(ts_gen *G);
bool ts_gen_chance(ts_gen *G, double p);
/* Aborts with the graph's message when the last builder call failed: the
 * generator must never produce an invalid graph. */
void ts_gen_check(ts_gen *G, const char *what);
/* Appends t (just built) to the pool; may give it a name and a device
 * hint. Returns its pool index. */
int ts_gen_emit(ts_gen *G, braid_tensor t, ts_iv v, bool exact);
/* A random pool index matching w (recent ones more likely), or -1. */
int ts_gen_pick(ts_gen *G, ts_want w);
braid_dtype ts_gen_dtype(ts_gen *G, unsigned allowed);
void ts_gen_shape(ts_gen *G, int *rank, int64_t *dims);
int64_t ts_numel(int rank, const int64_t *dims);
/* Shape of a fresh operand that broadcasts with (rank, dims): equal, a
 * suffix, some dims 1, or (grow) larger. */
void ts_gen_partner_shape(ts_gen *G, int rank, const int64_t *dims, bool grow,
                          int *prank, int64_t *pdims);
/* A shape (rank, dims) broadcasts to: size-1 dims expanded, leading dims
 * added; within the rank and element limits. */
void ts_gen_grow_shape(ts_gen *G, int rank, const int64_t *dims, int *grank,
                       int64_t *gdims);
bool ts_broadcast_ok(int ra, const int64_t *a, int rb, const int64_t *b,
                     int *rout, int64_t *out);
/* A fresh exact tensor: an input, fill, iota, random or constant. */
int ts_gen_leaf(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims);
int ts_gen_input(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims);
int ts_gen_fill(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims,
                double value);
/* An operand for a binary op with pool entry a: a pool tensor of the same
 * dtype whose shape broadcasts with a's (exact if asked), or a new leaf. */
int ts_gen_partner(ts_gen *G, int a, bool exact);

/* ---- op generators (random_graph_ops.c, random_graph_shape.c) ------------ */

/* Each adds one op (plus any helper nodes) and returns true, or returns
 * false when the pool offers nothing suitable this time. */
/* Domain helpers: abs(x) + c (at least c) and tanh(x) (within (-1, 1));
 * the new pool entry, or -1 over budget. */
int ts_gen_abs_plus(ts_gen *G, int xi, double c);
int ts_gen_bounded(ts_gen *G, int xi);
/* The elemwise helper's ops (random_graph_elemwise.c): inverse and
 * hyperbolic functions, sign, round, mod, fmod, bitwise ops, shifts. */
bool ts_gen_elemwise(ts_gen *G);
bool ts_gen_unary(ts_gen *G);
bool ts_gen_binary(ts_gen *G);
bool ts_gen_compare(ts_gen *G);
bool ts_gen_where(ts_gen *G);
bool ts_gen_cast(ts_gen *G);
bool ts_gen_matmul(ts_gen *G);
bool ts_gen_reduce(ts_gen *G);
bool ts_gen_softmax(ts_gen *G);
bool ts_gen_conv(ts_gen *G); /* conv ops */
bool ts_gen_layer_norm(ts_gen *G);
bool ts_gen_reshape(ts_gen *G);
bool ts_gen_permute(ts_gen *G);
bool ts_gen_slice(ts_gen *G);
bool ts_gen_concat(ts_gen *G);
bool ts_gen_broadcast(ts_gen *G);
bool ts_gen_gather(ts_gen *G);  /* gather, scatter (issue #13) */
bool ts_gen_scatter(ts_gen *G);
bool ts_gen_source(ts_gen *G);
/* max_pool / avg_pool of a rank >= 3 operand, resize (random_graph_window.c) */
bool ts_gen_pool(ts_gen *G);
bool ts_gen_resize(ts_gen *G);
/* index ops (random_graph_axis.c): argmax/argmin, topk, cumsum,
 * reduce_prod, log-sum-exp */
bool ts_gen_axis(ts_gen *G);
bool ts_gen_reduce_prod(ts_gen *G);

#endif /* BRAID_TESTS_RANDOM_GRAPH_H */
