/* tests/fuse_cases.h — random graphs whose gather feeds elementwise work
 * and whose pool reads an elementwise prologue (docs/fusion.md, rules 12
 * and 13), shared by the CPU suite (tests/test_fuse_gather_pool.c) and the
 * GPU suite (tests/test_cuda_fuse_gather_pool.c).
 *
 * Each case builds y from named inputs ("x" the gathered data or pooled
 * input, "i" the indices, "z"/"b" elementwise operands) and records what
 * the fuse pass must make of it. Static functions only. */
#ifndef BRAID_TESTS_FUSE_CASES_H
#define BRAID_TESTS_FUSE_CASES_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "passes/passes.h"
#include "tests/support/support.h"

/* One case. */
typedef struct fc_case {
    braid_graph *g;  /* the graph (output "y") */
    braid_tensor y;  /* its output */
    braid_dtype dt;  /* the data's dtype */
    int64_t bound;   /* gather: the gathered axis's length */
    int64_t nidx;    /* gather: elements of the indices */
    char what[160];  /* a description for messages */
} fc_case;

static inline braid_input_binding *fc_binding(ts_io *io, const char *name) {
    for (uint32_t k = 0; k < io->ninputs; k++)
        if (strcmp(io->in[k].name, name) == 0) return &io->in[k];
    return NULL;
}

/* ---- gather → elementwise ------------------------------------------------ */

/* y = act(gather(x, i, axis) + z): x of rank 1..3 and a random dtype
 * (f32, f64, f16, bf16, i32), i32 indices of rank 0..2, z of the gather's
 * shape or one broadcasting to it (trailing dims kept or 1); act tanh for
 * floats, relu for i32. */
static inline fc_case fc_gather(uint64_t seed) {
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F64, BRAID_F16,
                                      BRAID_BF16, BRAID_I32};
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 5;
    fc_case c = {.g = braid_graph_new(NULL)};
    c.dt = dts[ts_rand_int(&st, 0, 4)];
    int r = ts_rand_int(&st, 1, 3), ri = ts_rand_int(&st, 0, 2);
    int axis = ts_rand_int(&st, 0, r - 1);
    int64_t xd[3], id[2], od[BRAID_MAX_RANK], zd[BRAID_MAX_RANK];
    for (int d = 0; d < r; d++)
        xd[d] = ts_rand_int(&st, 1, 6);
    for (int d = 0; d < ri; d++)
        id[d] = ts_rand_int(&st, 1, 4);
    int orank = 0;
    for (int d = 0; d < axis; d++)
        od[orank++] = xd[d];
    for (int d = 0; d < ri; d++)
        od[orank++] = id[d];
    for (int d = axis + 1; d < r; d++)
        od[orank++] = xd[d];
    int zr = orank - ts_rand_int(&st, 0, orank);
    for (int d = 0; d < zr; d++)
        zd[d] = ts_rand_int(&st, 0, 2) ? od[orank - zr + d] : 1;
    c.bound = xd[axis];
    c.nidx = 1;
    for (int d = 0; d < ri; d++)
        c.nidx *= id[d];
    braid_graph *g = c.g;
    braid_tensor x = braid_input(g, "x", c.dt, r, xd);
    braid_tensor i = braid_input(g, "i", BRAID_I32, ri, id);
    braid_tensor z = braid_input(g, "z", c.dt, zr, zd);
    braid_tensor s = braid_add(g, braid_gather(g, x, i, axis), z);
    c.y = c.dt == BRAID_I32 ? braid_relu(g, s) : braid_tanh(g, s);
    snprintf(c.what, sizeof c.what,
             "seed %llu: %s x rank %d axis %d (length %lld), indices rank "
             "%d, z rank %d",
             (unsigned long long)seed, braid_dtype_name(c.dt), r, axis,
             (long long)c.bound, ri, zr);
    return c;
}

/* Fills input "i" with indices in [-bound, bound) (negatives included);
 * when bad ≥ 0, the index at position bad % nidx is out of range
 * (bound, or -bound - 1). Returns that bad value (0 when none). */
static inline int32_t fc_fill_indices(const fc_case *c, ts_io *io,
                                      uint64_t seed, int64_t bad) {
    braid_input_binding *in = fc_binding(io, "i");
    cr_assert(in);
    int32_t *v = (int32_t *)in->data, badv = 0;
    uint64_t st = seed ^ 0x5DEECE66Dull;
    for (int64_t p = 0; p < c->nidx; p++)
        v[p] = (int32_t)ts_rand_int(&st, (int)-c->bound, (int)c->bound - 1);
    if (bad >= 0) {
        badv = (int32_t)(seed % 2 ? -c->bound - 1 : c->bound);
        v[bad % c->nidx] = badv;
    }
    return badv;
}

/* ---- elementwise → pool -------------------------------------------------- */

/* y = pool(act(x · s + b)) or pool(act(x)): x [N, C, k spatial axes] of a
 * random dtype (f32, f64, f16, bf16; i32 for max pools, with relu only),
 * s a scalar fill, b a per-channel bias [C, 1, ...]; random kernels,
 * strides, dilations, asymmetric pads (some windows entirely in the
 * padding when `empty`), ceil_mode and count_include_pad. */
static inline fc_case fc_pool(uint64_t seed, bool empty) {
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F64, BRAID_F16,
                                      BRAID_BF16, BRAID_I32};
    uint64_t st = seed * 0xD1B54A32D192ED03ull + 9;
    fc_case c = {.g = braid_graph_new(NULL)};
    bool max = ts_rand_int(&st, 0, 1);
    c.dt = dts[ts_rand_int(&st, 0, max ? 4 : 3)];
    int k = ts_rand_int(&st, 1, 3);
    int64_t dims[5] = {ts_rand_int(&st, 1, 3), ts_rand_int(&st, 1, 4)};
    int64_t bd[5] = {dims[1]};
    braid_pool_params pp;
    memset(&pp, 0, sizeof pp);
    for (int i = 0; i < k; i++) {
        bd[1 + i] = 1;
        pp.kernel[i] = ts_rand_int(&st, 1, 3);
        pp.strides[i] = ts_rand_int(&st, 1, 3);
        pp.dilations[i] = ts_rand_int(&st, 1, 2);
        int64_t span = pp.dilations[i] * (pp.kernel[i] - 1) + 1;
        int most = empty ? (int)span + 1 : (int)(span - 1 < 2 ? span - 1 : 2);
        pp.pads_lo[i] = ts_rand_int(&st, 0, most);
        pp.pads_hi[i] = ts_rand_int(&st, 0, most);
        int64_t in = ts_rand_int(&st, 1, 7), least = span - pp.pads_lo[i] -
                                                     pp.pads_hi[i];
        dims[2 + i] = in > least ? in : least; /* one window at least */
    }
    pp.ceil_mode = ts_rand_int(&st, 0, 1);
    pp.count_include_pad = !max && ts_rand_int(&st, 0, 1);
    braid_graph *g = c.g;
    braid_tensor x = braid_input(g, "x", c.dt, 2 + k, dims);
    braid_tensor v = x;
    bool affine = c.dt != BRAID_I32 && ts_rand_int(&st, 0, 1);
    if (affine) {
        braid_tensor b = braid_input(g, "b", c.dt, 1 + k, bd);
        v = braid_add(g, braid_mul(g, v, braid_fill(g, c.dt, 0, NULL, 1.5)),
                      b);
    }
    v = braid_relu(g, v);
    c.y = max ? braid_max_pool(g, v, &pp) : braid_avg_pool(g, v, &pp);
    snprintf(c.what, sizeof c.what,
             "seed %llu: %s %s_pool of %s, %d-D, kernel %lld, stride %lld, "
             "dilation %lld, pads %lld/%lld%s%s",
             (unsigned long long)seed, braid_dtype_name(c.dt),
             max ? "max" : "avg", affine ? "relu(x*s+b)" : "relu(x)", k,
             (long long)pp.kernel[0], (long long)pp.strides[0],
             (long long)pp.dilations[0], (long long)pp.pads_lo[0],
             (long long)pp.pads_hi[0], pp.ceil_mode ? ", ceil" : "",
             pp.count_include_pad ? ", count_include_pad" : "");
    return c;
}

/* Makes input "x" of a pool case hold ties (values from {-1, 0, 1, 2}
 * with -0.0 among the zeros) and, for floats, a NaN every 7th element. */
static inline void fc_pool_ties(const fc_case *c, ts_io *io, uint64_t seed) {
    braid_input_binding *in = fc_binding(io, "x");
    cr_assert(in);
    int64_t n = (int64_t)(in->bytes / braid_dtype_size(c->dt));
    uint64_t st = seed ^ 0x1234567ull;
    for (int64_t p = 0; p < n; p++) {
        double v = ts_rand_int(&st, -1, 2);
        if (v == 0 && ts_rand_int(&st, 0, 1)) v = -0.0;
        if (c->dt != BRAID_I32 && p % 7 == 3) v = NAN;
        bg_store(c->dt, (void *)in->data, p, v);
    }
}

/* ---- what the fuse pass made ---------------------------------------------- */

/* Counts over p's nodes: fused programs with a GATHER, POOL programs,
 * gather nodes, pool nodes, and nodes that run a kernel (not inputs,
 * constants or views). */
typedef struct fc_count {
    int gather_programs, pool_programs, gathers, pools, kernels;
} fc_count;

static inline fc_count fc_count_plan(const braid_plan *p) {
    fc_count k = {0};
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        if (n->op == BRAID_OP_GATHER) k.gathers++;
        if (n->op == BRAID_OP_MAX_POOL || n->op == BRAID_OP_AVG_POOL)
            k.pools++;
        if (n->op != BRAID_OP_INPUT && n->op != BRAID_OP_CONSTANT &&
            !p->res.info[id].noop)
            k.kernels++;
        if (n->op != BRAID_OP_FUSED) continue;
        const bp_program *pr = &p->res.programs[p->res.info[id].program];
        k.gather_programs += bp_program_has_gather(pr);
        k.pool_programs += pr->kind == BP_PROGRAM_POOL;
    }
    return k;
}

#endif /* BRAID_TESTS_FUSE_CASES_H */
