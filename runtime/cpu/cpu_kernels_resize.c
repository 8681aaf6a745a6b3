/* runtime/cpu/cpu_kernels_resize.c — the resize op (kind WINDOW).
 *
 * The taps and weights of every output position along each of the three
 * trailing axes come from graph/resize.c's bg_resize_taps, tabulated once
 * per run in the executor's scratch (out[0] + out[1] + out[2] entries of
 * 2 indices and 2 weights, asked for by br_resize_prepare), so the kernel
 * restates no
 * coordinate formula. Each output element sums its 1 (nearest) to 8
 * (trilinear) weighted taps in float64 in the reference's order and is
 * rounded once by the store: the reference's bits. Work is split over the
 * pool by output rows (a plane and a position of the outer two axes). */
#include "graph/window.h"
#include "runtime/cpu/cpu_kernels.h"


typedef struct axis_taps {
    int64_t *idx; /* out entries of 2 input indices */
    double *w;    /* out entries of 2 weights */
    int n;        /* taps per position: 1 or 2 */
} axis_taps;

typedef struct resize_ctx {
    bg_resize r;       /* the geometry */
    axis_taps t[3];    /* per trailing axis */
    braid_dtype dt;    /* dtype of x and the output */
    const void *x;     /* the input */
    void *out;         /* the output */
} resize_ctx;

static double load(const resize_ctx *c, int64_t i) {
    if (c->dt == BRAID_F32) return ((const float *)c->x)[i];
    if (c->dt == BRAID_F64) return ((const double *)c->x)[i];
    return bg_load(c->dt, c->x, i);
}

static double resize_one(const resize_ctx *c, int64_t pl, int64_t o0,
                         int64_t o1, int64_t o2) {
    const int64_t *i0 = c->t[0].idx + 2 * o0, *i1 = c->t[1].idx + 2 * o1,
                  *i2 = c->t[2].idx + 2 * o2;
    const double *w0 = c->t[0].w + 2 * o0, *w1 = c->t[1].w + 2 * o1,
                 *w2 = c->t[2].w + 2 * o2;
    const int64_t *in = c->r.in;
    double acc = 0;
    for (int i = 0; i < c->t[0].n; i++)
        for (int j = 0; j < c->t[1].n; j++)
            for (int k = 0; k < c->t[2].n; k++) {
                int64_t at = ((pl * in[0] + i0[i]) * in[1] + i1[j]) * in[2] +
                             i2[k];
                acc += w0[i] * w1[j] * w2[k] * load(c, at);
            }
    return acc;
}

static void resize_rows(void *ctx, int64_t b, int64_t e) {
    const resize_ctx *c = ctx;
    const bg_resize *r = &c->r;
    int64_t len = r->out[2];
    double v[BR_BLOCK];
    size_t esz = braid_dtype_size(c->dt);
    for (int64_t row = b; row < e; row++) {
        int64_t o1 = row % r->out[1], o0 = (row / r->out[1]) % r->out[0];
        int64_t pl = row / (r->out[0] * r->out[1]);
        for (int64_t k0 = 0; k0 < len; k0 += BR_BLOCK) {
            int64_t m = len - k0 < BR_BLOCK ? len - k0 : BR_BLOCK;
            for (int64_t k = 0; k < m; k++)
                v[k] = resize_one(c, pl, o0, o1, k0 + k);
            br_store_f64(c->dt,
                         (char *)c->out + (row * len + k0) * (int64_t)esz, m,
                         v);
        }
    }
}

/* Bytes of the tap tables of node n. */
static size_t table_bytes(const bg_node *n) {
    int64_t total = 0;
    for (int ax = n->rank - 3 < 0 ? 0 : n->rank - 3; ax < n->rank; ax++)
        total += n->dims[ax];
    return (size_t)(total + 3) * 2 * (sizeof(int64_t) + sizeof(double));
}

braid_status br_resize_prepare(const braid_graph *g, uint32_t id,
                               size_t *scratch) {
    const bg_node *n = bg_node_at(g, id);
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    if (n->ninputs == 1 && x->dtype == n->dtype && x->rank == n->rank &&
        bg_op_accepts(n->op, n->dtype)) {
        if (table_bytes(n) > *scratch) *scratch = table_bytes(n);
        return BRAID_OK;
    }
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: resize of a %s value "
                             "has no CPU kernel",
                             id, braid_dtype_name(n->dtype));
}

void br_resize_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    if (bg_numel(n) == 0) return;
    resize_ctx c = {.dt = n->dtype, .x = a->in[0], .out = a->out};
    bg_resize_get(n, bg_node_at(a->g, n->inputs[0]), &c.r);
    int64_t total = c.r.out[0] + c.r.out[1] + c.r.out[2];
    double *w = a->scratch; /* table_bytes(n) bytes, 64-byte aligned */
    int64_t *idx = (int64_t *)(w + 2 * total);
    int64_t at = 0;
    for (int ax = 0; ax < 3; ax++) {
        c.t[ax] = (axis_taps){idx + 2 * at, w + 2 * at, 1};
        for (int64_t o = 0; o < c.r.out[ax]; o++)
            c.t[ax].n = bg_resize_taps(&c.r, ax, o, c.t[ax].idx + 2 * o,
                                       c.t[ax].w + 2 * o);
        at += c.r.out[ax];
    }
    int64_t rows = c.r.planes * c.r.out[0] * c.r.out[1];
    int64_t work = c.r.out[2] * 8;
    br_parallel_for(a->pool, rows, work >= BR_GRAIN ? 1 : BR_GRAIN / work,
                    resize_rows, &c);
}
