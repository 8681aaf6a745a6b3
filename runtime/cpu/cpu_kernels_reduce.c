/* runtime/cpu/cpu_kernels_reduce.c — sum, mean, reduce_max, reduce_min,
 * reduce_prod.
 *
 * The input's dims are collapsed into alternating groups of kept and reduced
 * axes (size-1 axes dropped, neighbours of one kind merged). Then one of two
 * loops runs:
 *   inner reduced (softmax, layer norm): each output element reduces
 *     contiguous runs of the last group, in pieces of RED_PIECE elements;
 *   inner kept (sum over rows): each block of the last group is accumulated
 *     row after row, a vectorisable loop over contiguous elements.
 * Float sums accumulate in double; i32 sums wrap in uint32; the meaning of
 * every reduction is graph/scalar.h's. The order of
 * accumulation depends only on the shape, never on the number of threads,
 * so results are reproducible. */
#include "graph/scalar.h"
#include "runtime/cpu/cpu_reduce.h"

#include <string.h>

/* Elements per piece of a contiguous run: piece results are combined in
 * order, and a long run is split over threads at piece boundaries. */
#define RED_PIECE 16384

typedef struct red_ctx {
    braid_op op;    /* sum, mean, reduce_max, reduce_min, reduce_prod */
    braid_dtype t;  /* input and output dtype */
    size_t esz;     /* element size */
    const char *in; /* input base */
    char *out;      /* output base */
    br_red_groups gr;   /* the collapsed dims */
    bool inner_reduced; /* last group is reduced (else kept) */
    int64_t inner;      /* length of the last group (1 when none) */
    double *partial;    /* scratch for a run split over threads */
} red_ctx;

void br_red_groups_of(int rank, const int64_t *dims, unsigned axes,
                      br_red_groups *gr) {
    int64_t st[BRAID_MAX_RANK];
    br_dense_strides(rank, dims, st);
    gr->nk = gr->nr = 0;
    gr->O = gr->R = 1;
    gr->last = -1;
    for (int i = 0; i < rank; i++) {
        int red = (axes >> i) & 1;
        (red ? &gr->R : &gr->O)[0] *= dims[i];
        if (dims[i] == 1) continue;
        int64_t *d = red ? gr->rd : gr->kd, *s = red ? gr->rs : gr->ks;
        int *cnt = red ? &gr->nr : &gr->nk;
        if (gr->last == red) { /* merge with the previous group of its kind */
            d[*cnt - 1] *= dims[i];
            s[*cnt - 1] = st[i];
        } else {
            d[*cnt] = dims[i];
            s[*cnt] = st[i];
            (*cnt)++;
        }
        gr->last = red;
    }
}

/* The collapse described above; numel 0 leaves O or R zero. */
static void red_analyze(const braid_graph *g, const bg_node *n, red_ctx *c) {
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    br_red_groups *gr = &c->gr;
    br_red_groups_of(x->rank, x->dims, n->attr.axes, gr);
    c->inner_reduced = gr->last != 0; /* no groups: one reduced run of 1 */
    c->inner = gr->last < 0 ? 1
               : gr->last   ? gr->rd[gr->nr - 1]
                            : gr->kd[gr->nk - 1];
}

int64_t br_red_decode(int64_t i, int n, const int64_t *dims,
                      const int64_t *strides) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (i % dims[d]) * strides[d];
        i /= dims[d];
    }
    return off;
}

void br_red_store(braid_op op, braid_dtype t, void *out, int64_t o, double acc,
                  int64_t count) {
    double v = bg_reduce_finish(op, t, acc, count);
    br_store_f64(t, (char *)out + o * (int64_t)braid_dtype_size(t), 1, &v);
}

/* ---- contiguous pieces --------------------------------------------------- */

double br_red_sum_f32(const float *x, int64_t n) {
    double s[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            s[k] += x[i + k];
    for (; i < n; i++)
        s[0] += x[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

double br_red_sum_f64(const double *x, int64_t n) {
    double s[4] = {0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++)
            s[k] += x[i + k];
    for (; i < n; i++)
        s[0] += x[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

double br_red_sum_i32(const int32_t *x, int64_t n) {
    uint32_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint32_t)x[i];
    return s;
}

/* max (sign 1) or min (sign -1) of floats, NaN if any is NaN. */
static double extreme_f32(const float *x, int64_t n, bool max) {
    float m = max ? -INFINITY : INFINITY;
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        nan |= v != v;
        m = max ? (v > m ? v : m) : (v < m ? v : m);
    }
    return nan ? NAN : m;
}

static double extreme_f64(const double *x, int64_t n, bool max) {
    double m = max ? -INFINITY : INFINITY;
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        nan |= v != v;
        m = max ? (v > m ? v : m) : (v < m ? v : m);
    }
    return nan ? NAN : m;
}

/* reduce_prod's piece: the product in double in index order (i32
 * wrapping), by graph/scalar.h's combine. */
static double piece_prod(const red_ctx *c, const char *p, int64_t n) {
    double acc = 1.0, tmp[BR_BLOCK];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_load_f64(c->t, p + i * c->esz, 1, m, tmp);
        for (int64_t k = 0; k < m; k++)
            acc = bg_reduce_combine(c->op, c->t, acc, tmp[k]);
    }
    return acc;
}

/* One piece (n ≤ RED_PIECE contiguous elements) reduced to a double; an
 * i32 sum comes back modulo 2^32 (exact in a double). */
static double piece(const red_ctx *c, const char *p, int64_t n) {
    bool sum = c->op == BRAID_OP_SUM || c->op == BRAID_OP_MEAN;
    bool max = c->op == BRAID_OP_REDUCE_MAX;
    if (c->op == BRAID_OP_REDUCE_PROD) return piece_prod(c, p, n);
    if (c->t == BRAID_F32)
        return sum ? br_red_sum_f32((const float *)p, n)
                   : extreme_f32((const float *)p, n, max);
    if (c->t == BRAID_F64)
        return sum ? br_red_sum_f64((const double *)p, n)
                   : extreme_f64((const double *)p, n, max);
    if (c->t == BRAID_I32 && sum) return br_red_sum_i32((const int32_t *)p, n);
    double acc = bg_reduce_identity(c->op), tmp[BR_BLOCK];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_load_f64(c->t, p + i * c->esz, 1, m, tmp);
        double v = sum ? br_red_sum_f64(tmp, m) : extreme_f64(tmp, m, max);
        acc = bg_reduce_combine(c->op, c->t, acc, v);
    }
    return acc;
}

/* Combines piece results (an i32 sum piece is a uint32 residue). */
static double merge(const red_ctx *c, double acc, double v) {
    return bg_reduce_combine(c->op, c->t, acc, v);
}

/* Writes output element o from its reduced value. */
static void finish(const red_ctx *c, int64_t o, double v) {
    br_red_store(c->op, c->t, c->out, o, v, c->gr.R);
}

/* ---- inner axis reduced -------------------------------------------------- */

/* Output element o, every run, every piece, in order. */
static double reduce_one(const red_ctx *c, int64_t o) {
    int64_t base = br_red_decode(o, c->gr.nk, c->gr.kd, c->gr.ks);
    int64_t runs = c->inner > 0 ? c->gr.R / c->inner : 0;
    double acc = bg_reduce_identity(c->op);
    for (int64_t r = 0; r < runs; r++) {
        const char *p = c->in + (base + br_red_decode(r, c->gr.nr - 1, c->gr.rd,
                                                      c->gr.rs)) *
                                    c->esz;
        for (int64_t i = 0; i < c->inner; i += RED_PIECE) {
            int64_t m = c->inner - i < RED_PIECE ? c->inner - i : RED_PIECE;
            acc = merge(c, acc, piece(c, p + i * c->esz, m));
        }
    }
    return acc;
}

static void reduce_outputs(void *ctx, int64_t b, int64_t e) {
    const red_ctx *c = ctx;
    for (int64_t o = b; o < e; o++)
        finish(c, o, reduce_one(c, o));
}

typedef struct split_ctx {
    const red_ctx *c; /* the reduction */
    int64_t base;     /* offset of the output element's first input */
    int64_t ppr;      /* pieces per run */
} split_ctx;

static void split_pieces(void *ctx, int64_t b, int64_t e) {
    const split_ctx *s = ctx;
    const red_ctx *c = s->c;
    for (int64_t k = b; k < e; k++) {
        int64_t r = k / s->ppr, i = (k % s->ppr) * RED_PIECE;
        int64_t m = c->inner - i < RED_PIECE ? c->inner - i : RED_PIECE;
        const char *p =
            c->in +
            (s->base + br_red_decode(r, c->gr.nr - 1, c->gr.rd, c->gr.rs) + i) *
                c->esz;
        c->partial[k] = piece(c, p, m);
    }
}

/* Few outputs with long runs: the pieces of each output go to the threads,
 * and are merged in the order reduce_one would have used. */
static void reduce_split(const red_ctx *c, br_pool *pool) {
    split_ctx s = {c, 0, (c->inner + RED_PIECE - 1) / RED_PIECE};
    int64_t npieces = c->gr.R / c->inner * s.ppr;
    for (int64_t o = 0; o < c->gr.O; o++) {
        s.base = br_red_decode(o, c->gr.nk, c->gr.kd, c->gr.ks);
        br_parallel_for(pool, npieces, 1, split_pieces, &s);
        double acc = bg_reduce_identity(c->op);
        for (int64_t k = 0; k < npieces; k++)
            acc = merge(c, acc, c->partial[k]);
        finish(c, o, acc);
    }
}

static bool use_split(const red_ctx *c, int threads) {
    return c->inner_reduced && c->inner >= 2 * RED_PIECE &&
           c->gr.O < 2 * threads;
}

/* ---- inner axis kept ----------------------------------------------------- */

/* Output elements [p·W + j0, p·W + j0 + m): every reduced row in order. */
static void rows_block(const red_ctx *c, int64_t p, int64_t j0, int64_t m) {
    double acc[BR_BLOCK], tmp[BR_BLOCK];
    uint32_t uacc[BR_BLOCK];
    bool usum = c->t == BRAID_I32 && c->op == BRAID_OP_SUM;
    bool sum = c->op == BRAID_OP_SUM || c->op == BRAID_OP_MEAN;
    bool max = c->op == BRAID_OP_REDUCE_MAX;
    for (int64_t j = 0; j < m; j++)
        acc[j] = bg_reduce_identity(c->op), uacc[j] = 0;
    int64_t base = br_red_decode(p, c->gr.nk - 1, c->gr.kd, c->gr.ks) + j0;
    for (int64_t r = 0; r < c->gr.R; r++) {
        int64_t off = base + br_red_decode(r, c->gr.nr, c->gr.rd, c->gr.rs);
        const char *row = c->in + off * c->esz;
        if (usum) {
            const int32_t *x = (const int32_t *)row;
            for (int64_t j = 0; j < m; j++)
                uacc[j] += (uint32_t)x[j];
            continue;
        }
        br_load_f64(c->t, row, 1, m, tmp);
        if (sum)
            for (int64_t j = 0; j < m; j++)
                acc[j] += tmp[j];
        else if (c->op == BRAID_OP_REDUCE_PROD)
            for (int64_t j = 0; j < m; j++)
                acc[j] = bg_reduce_combine(c->op, c->t, acc[j], tmp[j]);
        else if (max)
            for (int64_t j = 0; j < m; j++)
                acc[j] = BG_MAX(double, tmp[j], acc[j]);
        else
            for (int64_t j = 0; j < m; j++)
                acc[j] = BG_MIN(double, tmp[j], acc[j]);
    }
    for (int64_t j = 0; j < m; j++)
        finish(c, p * c->inner + j0 + j, usum ? (double)uacc[j] : acc[j]);
}

static void rows_units(void *ctx, int64_t b, int64_t e) {
    const red_ctx *c = ctx;
    int64_t nb = (c->inner + BR_BLOCK - 1) / BR_BLOCK;
    for (int64_t u = b; u < e; u++) {
        int64_t p = u / nb, j0 = (u % nb) * BR_BLOCK;
        rows_block(c, p, j0,
                   c->inner - j0 < BR_BLOCK ? c->inner - j0 : BR_BLOCK);
    }
}

/* ---- entry points -------------------------------------------------------- */

void br_reduce_run(const br_kernel_args *a) {
    red_ctx c = {.op = a->node->op,
                 .t = a->node->dtype,
                 .in = a->in[0],
                 .out = a->out,
                 .partial = a->scratch};
    c.esz = braid_dtype_size(c.t);
    red_analyze(a->g, a->node, &c);
    if (c.gr.O == 0) return;
    /* Work per output element is R; aim for BR_GRAIN elements a chunk. */
    int64_t per = c.gr.R > 0 ? c.gr.R : 1;
    int64_t grain = per >= BR_GRAIN ? 1 : BR_GRAIN / per;
    if (c.gr.R == 0 || c.inner_reduced) {
        if (c.gr.R > 0 && use_split(&c, br_pool_threads(a->pool)))
            reduce_split(&c, a->pool);
        else
            br_parallel_for(a->pool, c.gr.O, grain, reduce_outputs, &c);
        return;
    }
    int64_t nb = (c.inner + BR_BLOCK - 1) / BR_BLOCK;
    int64_t bl = c.inner < BR_BLOCK ? c.inner : BR_BLOCK;
    br_parallel_for(a->pool, c.gr.O / c.inner * nb,
                    per * bl >= BR_GRAIN ? 1 : BR_GRAIN / (per * bl),
                    rows_units, &c);
}

braid_status br_reduce_prepare(const braid_graph *g, uint32_t id,
                               size_t *scratch) {
    const bg_node *n = bg_node_at(g, id);
    if (n->dtype == BRAID_BOOL ||
        (n->op == BRAID_OP_MEAN && !braid_dtype_is_float(n->dtype)))
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u: no CPU kernel for "
                                 "%s on %s",
                                 id, bg_op(n->op)->name,
                                 braid_dtype_name(n->dtype));
    red_ctx c;
    red_analyze(g, n, &c);
    /* The split path may run with any thread count: size for it whenever
     * the run is long enough, whatever the output count. */
    if (c.gr.O > 0 && c.gr.R > 0 && c.inner_reduced &&
        c.inner >= 2 * RED_PIECE) {
        size_t pieces = (size_t)(c.gr.R / c.inner) *
                        (size_t)((c.inner + RED_PIECE - 1) / RED_PIECE);
        size_t bytes = pieces * sizeof(double);
        if (bytes > *scratch) *scratch = bytes;
    }
    return BRAID_OK;
}
