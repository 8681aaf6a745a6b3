/* tests/support/random_graph.c — ts_random_graph: the pool, shapes, leaves
 * and the top-level loop. The ops live in random_graph_ops.c and
 * random_graph_shape.c, the drift model in random_graph_iv.c. */
#include "tests/support/random_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ts_graph_options_default(ts_graph_options *o) {
    o->max_nodes = 12;
    o->max_rank = 4;
    o->max_dim = 6;
    o->mixed_dtypes = false;
    o->device_hints = false;
}

/* ---- randomness ---------------------------------------------------------- */

int ts_gen_int(ts_gen *G, int lo, int hi) {
    return ts_rand_int(&G->rng, lo, hi);
}

double ts_gen_unit(ts_gen *G) {
    return ts_rand_unit(&G->rng);
}

bool ts_gen_chance(ts_gen *G, double p) {
    return ts_gen_unit(G) < p;
}

/* ---- pool ---------------------------------------------------------------- */

void ts_gen_check(ts_gen *G, const char *what) {
    if (braid_graph_status(G->g) == BRAID_OK) return;
    /* A generator bug, not a test failure: stop loudly with the seed. */
    fprintf(stderr,
            "ts_random_graph(seed %llu): generator built an invalid graph "
            "(%s): %s\n",
            (unsigned long long)G->seed, what, braid_graph_error(G->g));
    abort();
}

static bool is_input(const ts_gen *G, braid_tensor t) {
    return bg_node_at(G->g, t.id)->op == BRAID_OP_INPUT;
}

/* Node names and device hints change nothing computed; they exercise the
 * code that carries them. */
static void decorate(ts_gen *G, braid_tensor t) {
    static const char *const stems[] = {"h", "attn.q", "mlp_out",
                                        "x", "_t",     "blk.0.norm"};
    char name[64];
    if (ts_gen_chance(G, 0.15)) {
        snprintf(name, sizeof name, "%s%u", stems[ts_gen_int(G, 0, 5)],
                 (unsigned)t.id);
        braid_set_name(G->g, t, name);
        ts_gen_check(G, "braid_set_name");
    }
    if (G->o.device_hints && ts_gen_chance(G, 0.3)) {
        braid_set_device(G->g, t, ts_gen_chance(G, 0.5) ? "cpu" : "cuda:0");
        ts_gen_check(G, "braid_set_device");
    }
}

int ts_gen_emit(ts_gen *G, braid_tensor t, ts_iv v, bool exact) {
    ts_gen_check(G, "emit");
    if (G->nvals == G->cap) {
        int cap = G->cap ? 2 * G->cap : 32;
        ts_val *p = realloc(G->vals, (size_t)cap * sizeof *p);
        if (!p) {
            fprintf(stderr, "ts_random_graph: out of memory\n");
            abort();
        }
        G->vals = p;
        G->cap = cap;
    }
    ts_val *x = &G->vals[G->nvals];
    memset(x, 0, sizeof *x);
    x->t = t;
    braid_tensor_info(G->g, t, &x->dt, &x->rank, x->dims);
    x->exact = exact;
    x->v = exact ? ts_iv_exact(v.lo, v.hi) : v;
    if (!is_input(G, t)) decorate(G, t);
    return G->nvals++;
}

int64_t ts_numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= dims[k];
    return n;
}

static bool wanted(const ts_val *v, ts_want w) {
    return !v->special && (w.dtypes & TS_DT(v->dt)) && (!w.exact || v->exact) &&
           v->rank >= w.min_rank &&
           (!w.nonempty || ts_numel(v->rank, v->dims) > 0);
}

int ts_gen_pick(ts_gen *G, ts_want w) {
    int n = 0;
    int *cand = malloc((size_t)(G->nvals + 1) * sizeof *cand);
    if (!cand) abort();
    for (int i = 0; i < G->nvals; i++)
        if (wanted(&G->vals[i], w)) cand[n++] = i;
    int pick = -1;
    if (n > 0) {
        /* squaring the uniform draw favours recent tensors: deeper chains */
        double u = ts_gen_unit(G);
        pick = cand[n - 1 - (int)((double)n * u * u)];
    }
    free(cand);
    return pick;
}

braid_dtype ts_gen_dtype(ts_gen *G, unsigned allowed) {
    if (!G->o.mixed_dtypes)
        return (allowed & TS_DT(BRAID_F32)) ? BRAID_F32 : BRAID_BOOL;
    static const struct {
        braid_dtype dt;
        int weight;
    } table[] = {{BRAID_F32, 36}, {BRAID_F16, 12}, {BRAID_BF16, 12},
                 {BRAID_F64, 12}, {BRAID_I32, 14}, {BRAID_BOOL, 10},
                 {BRAID_I64, 4}};
    for (;;) {
        int r = ts_gen_int(G, 0, 99);
        for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
            if (r < table[i].weight) {
                if (allowed & TS_DT(table[i].dt)) return table[i].dt;
                break;
            }
            r -= table[i].weight;
        }
    }
}

/* ---- shapes -------------------------------------------------------------- */

static int64_t random_dim(ts_gen *G) {
    if (G->o.max_dim < 2 || ts_gen_chance(G, 0.25)) return 1;
    return ts_gen_int(G, 2, (int)G->o.max_dim);
}

void ts_gen_shape(ts_gen *G, int *rank, int64_t *dims) {
    int r = G->o.max_rank == 0 || ts_gen_chance(G, 0.1)
                ? 0
                : ts_gen_int(G, 1, G->o.max_rank);
    for (int k = 0; k < r; k++)
        dims[k] = random_dim(G);
    if (r > 0 && ts_gen_chance(G, 0.02))
        dims[ts_gen_int(G, 0, r - 1)] = 0; /* an empty tensor now and then */
    *rank = r;
}

bool ts_broadcast_ok(int ra, const int64_t *a, int rb, const int64_t *b,
                     int *rout, int64_t *out) {
    int r = ra > rb ? ra : rb;
    for (int k = 0; k < r; k++) {
        int ia = k - (r - ra), ib = k - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        if (out) out[k] = da == 1 ? db : da;
    }
    if (rout) *rout = r;
    return true;
}

void ts_gen_grow_shape(ts_gen *G, int rank, const int64_t *dims, int *grank,
                       int64_t *gdims) {
    int extra =
        ts_gen_int(G, 0, G->o.max_rank > rank ? G->o.max_rank - rank : 0);
    int64_t d[BRAID_MAX_RANK];
    for (int k = 0; k < extra; k++)
        d[k] = random_dim(G);
    for (int k = 0; k < rank; k++) {
        d[extra + k] = dims[k];
        if (dims[k] == 1 && ts_gen_chance(G, 0.5)) d[extra + k] = random_dim(G);
    }
    if (ts_numel(extra + rank, d) > TS_NUMEL_LIMIT) {
        memcpy(gdims, dims, (size_t)rank * sizeof *dims); /* no growth */
        *grank = rank;
        return;
    }
    memcpy(gdims, d, (size_t)(extra + rank) * sizeof *d);
    *grank = extra + rank;
}

void ts_gen_partner_shape(ts_gen *G, int rank, const int64_t *dims, bool grow,
                          int *prank, int64_t *pdims) {
    int mode = ts_gen_int(G, 0, grow ? 5 : 4);
    if (mode == 5) {
        ts_gen_grow_shape(G, rank, dims, prank, pdims);
        return;
    }
    int drop = (mode == 2 || mode == 4) ? ts_gen_int(G, 0, rank) : 0;
    *prank = rank - drop;
    for (int k = 0; k < *prank; k++) {
        pdims[k] = dims[drop + k];
        if ((mode == 3 || mode == 4) && ts_gen_chance(G, 0.4)) pdims[k] = 1;
    }
}

/* ---- leaves -------------------------------------------------------------- */

/* v as stored in dtype dt. */
static double round_to(braid_dtype dt, double v) {
    union {
        double d;
        unsigned char b[8];
    } slot;
    bg_store(dt, &slot, 0, v);
    return bg_load(dt, &slot, 0);
}

int ts_gen_input(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims) {
    char name[32];
    snprintf(name, sizeof name, "in%d", G->ninputs++);
    braid_tensor t = braid_input(G->g, name, dt, rank, dims);
    ts_gen_check(G, "braid_input");
    double r = dt == BRAID_BOOL        ? 1.0
               : bg_dtype_is_int(dt) ? TS_INPUT_INT
                                     : TS_INPUT_FLOAT;
    return ts_gen_emit(G, t, ts_iv_exact(dt == BRAID_BOOL ? 0.0 : -r, r), true);
}

int ts_gen_fill(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims,
                double value) {
    braid_tensor t = braid_fill(G->g, dt, rank, dims, value);
    ts_gen_check(G, "braid_fill");
    double v = round_to(dt, value);
    return ts_gen_emit(G, t, ts_iv_exact(v, v), true);
}

/* A value a fill or constant may hold: quarters/eighths are exact in every
 * float dtype, small integers in i32. */
static double leaf_value(ts_gen *G, braid_dtype dt, int denom) {
    if (dt == BRAID_BOOL) return ts_gen_int(G, 0, 1);
    if (bg_dtype_is_int(dt)) return ts_gen_int(G, -20, 20);
    return ts_gen_int(G, -2 * denom, 2 * denom) / (double)denom;
}

static int gen_constant(ts_gen *G, braid_dtype dt, int rank,
                        const int64_t *dims) {
    int64_t n = ts_numel(rank, dims);
    void *buf = malloc((size_t)(n > 0 ? n : 1) * braid_dtype_size(dt));
    if (!buf) abort();
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        bg_store(dt, buf, i, leaf_value(G, dt, 8));
        double v = bg_load(dt, buf, i);
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    braid_tensor t = braid_constant(G->g, dt, rank, dims, buf);
    free(buf);
    ts_gen_check(G, "braid_constant");
    return ts_gen_emit(G, t, n > 0 ? ts_iv_exact(lo, hi) : ts_iv_exact(0, 0),
                       true);
}

static int gen_iota(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims) {
    int axis = ts_gen_int(G, 0, rank - 1);
    braid_tensor t = braid_iota(G->g, dt, rank, dims, axis);
    ts_gen_check(G, "braid_iota");
    double hi = dims[axis] > 0 ? round_to(dt, (double)(dims[axis] - 1)) : 0.0;
    return ts_gen_emit(G, t, ts_iv_exact(0.0, hi), true);
}

static int gen_random(ts_gen *G, braid_dtype dt, int rank,
                      const int64_t *dims) {
    uint64_t seed = ts_rand_u64(&G->rng);
    braid_tensor t;
    double lo, hi;
    if (ts_gen_chance(G, 0.6)) {
        lo = -2.0 + 0.25 * ts_gen_int(G, 0, 8);
        hi = lo + 0.25 * ts_gen_int(G, 1, 12);
        t = braid_random_uniform(G->g, dt, rank, dims, seed, lo, hi);
    } else {
        double mean = 0.25 * ts_gen_int(G, -4, 4);
        double sd = 0.125 * ts_gen_int(G, 1, 4);
        t = braid_random_normal(G->g, dt, rank, dims, seed, mean, sd);
        /* Box-Muller from 53-bit uniforms never leaves ±8.6 sigma */
        lo = mean - 9.0 * sd;
        hi = mean + 9.0 * sd;
    }
    ts_gen_check(G, "braid_random_*");
    /* the values are rounded to dt: widen by an ulp */
    lo -= fabs(lo) * 0x1p-7;
    hi += fabs(hi) * 0x1p-7;
    return ts_gen_emit(G, t, ts_iv_exact(lo, hi), true);
}

int ts_gen_leaf(ts_gen *G, braid_dtype dt, int rank, const int64_t *dims) {
    bool fl = braid_dtype_is_float(dt);
    for (;;) {
        int kind = ts_gen_int(G, 0, 9);
        if (kind <= 2 && G->ninputs < 8) return ts_gen_input(G, dt, rank, dims);
        if (kind == 3 || kind == 4)
            return ts_gen_fill(G, dt, rank, dims, leaf_value(G, dt, 4));
        if (kind == 5 && rank > 0 && bg_op_accepts(BRAID_OP_IOTA, dt))
            return gen_iota(G, dt, rank, dims);
        if ((kind == 6 || kind == 7) && fl)
            return gen_random(G, dt, rank, dims);
        if (kind >= 8 && ts_numel(rank, dims) <= TS_NUMEL_LIMIT)
            return gen_constant(G, dt, rank, dims);
    }
}

int ts_gen_partner(ts_gen *G, int a, bool exact) {
    ts_val x = G->vals[a];
    if (ts_gen_chance(G, 0.35)) {
        int n = 0;
        int *cand = malloc((size_t)(G->nvals + 1) * sizeof *cand);
        if (!cand) abort();
        for (int i = 0; i < G->nvals; i++) {
            const ts_val *y = &G->vals[i];
            int r;
            int64_t d[BRAID_MAX_RANK];
            if (y->dt == x.dt && !y->special && (!exact || y->exact) &&
                ts_broadcast_ok(x.rank, x.dims, y->rank, y->dims, &r, d) &&
                ts_numel(r, d) <= TS_NUMEL_LIMIT)
                cand[n++] = i;
        }
        int pick = n > 0 ? cand[ts_gen_int(G, 0, n - 1)] : -1;
        free(cand);
        if (pick >= 0) return pick;
    }
    int r;
    int64_t d[BRAID_MAX_RANK];
    ts_gen_partner_shape(G, x.rank, x.dims, true, &r, d);
    return ts_gen_leaf(G, x.dt, r, d);
}

/* ---- the top level ------------------------------------------------------- */

typedef bool (*ts_gen_fn)(ts_gen *G);

/* Picks and runs one op generator by weight. */
static bool gen_one(ts_gen *G) {
    static const struct {
        ts_gen_fn fn;
        int weight;
    } table[] = {
        {ts_gen_unary, 18},  {ts_gen_binary, 22},    {ts_gen_compare, 5},
        {ts_gen_where, 6},   {ts_gen_cast, 6},       {ts_gen_matmul, 7},
        {ts_gen_reduce, 10}, {ts_gen_reshape, 4},    {ts_gen_permute, 4},
        {ts_gen_slice, 4},   {ts_gen_concat, 4},     {ts_gen_broadcast, 3},
        {ts_gen_softmax, 2}, {ts_gen_layer_norm, 2}, {ts_gen_source, 3},
    };
    int total = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        total += table[i].weight;
    int r = ts_gen_int(G, 0, total - 1);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (r < table[i].weight) return table[i].fn(G);
        r -= table[i].weight;
    }
    return false;
}

/* Consumers per node id, to prefer graph sinks as outputs. */
static uint32_t *count_uses(const braid_graph *g) {
    uint32_t *uses = calloc(g->nnodes + 1, sizeof *uses);
    if (!uses) abort();
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].ninputs; k++)
            uses[g->nodes[i].inputs[k]]++;
    return uses;
}

static void add_outputs(ts_gen *G) {
    static const char *const stems[] = {"out", "y", "logits", "h.final", "_z"};
    uint32_t *uses = count_uses(G->g);
    int want = ts_gen_int(G, 1, 3);
    int chosen[3];
    int n = 0;
    chosen[n++] = G->nvals - 1; /* the last op, so every op chain counts */
    for (int tries = 0; n < want && tries < 40; tries++) {
        int i = ts_gen_int(G, 0, G->nvals - 1);
        bool dup = false;
        for (int j = 0; j < n; j++)
            dup = dup || chosen[j] == i;
        /* the same tensor under two names, rarely; sinks preferred */
        if ((dup && !ts_gen_chance(G, 0.05)) ||
            (uses[G->vals[i].t.id] > 0 && !ts_gen_chance(G, 0.3)))
            continue;
        chosen[n++] = i;
    }
    for (int j = 0; j < n; j++) {
        char name[48];
        snprintf(name, sizeof name, "%s%d", stems[ts_gen_int(G, 0, 4)], j);
        braid_output(G->g, name, G->vals[chosen[j]].t);
        ts_gen_check(G, "braid_output");
    }
    free(uses);
}

braid_graph *ts_random_graph(uint64_t seed, const ts_graph_options *o) {
    ts_gen G;
    memset(&G, 0, sizeof G);
    if (o)
        G.o = *o;
    else
        ts_graph_options_default(&G.o);
    if (G.o.max_rank < 0) G.o.max_rank = 0;
    if (G.o.max_rank > BRAID_MAX_RANK) G.o.max_rank = BRAID_MAX_RANK;
    if (G.o.max_dim < 1) G.o.max_dim = 1;
    G.seed = seed;
    G.rng = seed ^ 0x243F6A8885A308D3ull;
    G.g = braid_graph_new(NULL);
    if (!G.g) abort();
    int n0 = ts_gen_int(&G, 1, 3);
    for (int i = 0; i < n0; i++) {
        int r;
        int64_t d[BRAID_MAX_RANK];
        ts_gen_shape(&G, &r, d);
        unsigned dts = ts_gen_chance(&G, 0.8) ? TS_FLOATS : TS_ALL;
        ts_gen_input(&G, ts_gen_dtype(&G, dts), r, d);
    }
    int tries = 0;
    while ((int)braid_graph_node_count(G.g) - G.ninputs < G.o.max_nodes &&
           tries++ < 40 * (G.o.max_nodes + 1))
        gen_one(&G);
    add_outputs(&G);
    ts_gen_check(&G, "finish");
    free(G.vals);
    return G.g;
}
