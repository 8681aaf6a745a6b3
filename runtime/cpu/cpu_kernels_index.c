/* runtime/cpu/cpu_kernels_index.c — gather and scatter on the CPU
 * (graph/index.h says where each index lands).
 *
 * gather: along an axis, whole rows of `inner` elements are copied with
 * memcpy, rows split over the pool; the other forms copy element by
 * element, output elements split over the pool. An out-of-range index
 * gives zeros and a run check record (never a read outside the data).
 * scatter: the data is copied, then updates are applied in C order within
 * each group of updates that may land on the same elements, so the result
 * (duplicates included) is the reference evaluator's: ELEMENTS splits
 * over the columns (all but the axis coordinate: a column's updates land
 * in that column only), ND over the elements of a slice (slice element i
 * of every tuple lands at offset i of its slice). Combining is graph/
 * scalar.h's rule in double, rounded to the dtype after every step. */
#include "graph/index.h"
#include "graph/scalar.h"
#include "runtime/cpu/cpu_kernels.h"

#include <string.h>

typedef struct ix {
    const br_kernel_args *a;
    bg_index_geom geo;
    size_t es;        /* element size */
    const char *data; /* operand 0 */
    const void *idx;  /* i32 or i64 (geo.idx64) */
    const char *upd;  /* scatter: operand 2 */
    char *out;
} ix;

static void record(const ix *c, const bg_index_bad *bad) {
    br_run_check_record(c->a->check, c->a->id, BC_CHECK_INDEX, bad->value,
                        bad->pos, bad->bound);
}

/* ---- gather -------------------------------------------------------------- */

/* Rows [lo, hi) of outer × nidx, each `inner` elements. */
static void gather_rows(void *ctx, int64_t lo, int64_t hi) {
    const ix *c = ctx;
    const bg_index_geom *g = &c->geo;
    size_t row = (size_t)g->inner * c->es;
    for (int64_t r = lo; r < hi; r++) {
        int64_t q = r % g->nidx, o = r / g->nidx;
        int64_t v = bg_index_at(g, c->idx, q);
        int64_t w = bg_index_norm(v, g->bound[0]);
        char *dst = c->out + (size_t)r * row;
        if (w < 0) {
            bg_index_bad bad = {v, q, g->bound[0]};
            record(c, &bad);
            memset(dst, 0, row);
            continue;
        }
        memcpy(dst, c->data + (size_t)(o * g->bound[0] + w) * row, row);
    }
}

static void gather_elems(void *ctx, int64_t lo, int64_t hi) {
    const ix *c = ctx;
    for (int64_t p = lo; p < hi; p++) {
        bg_index_bad bad;
        int64_t t = bg_index_target(&c->geo, p, c->idx, &bad);
        char *dst = c->out + (size_t)p * c->es;
        if (t < 0) {
            record(c, &bad);
            memset(dst, 0, c->es);
        } else {
            memcpy(dst, c->data + (size_t)t * c->es, c->es);
        }
    }
}

/* ---- scatter ------------------------------------------------------------- */

/* Update p combined into the output (skipped, recorded, when its index is
 * out of range). */
static void apply(const ix *c, int64_t p) {
    bg_index_bad bad;
    int64_t t = bg_index_target(&c->geo, p, c->idx, &bad);
    if (t < 0) {
        record(c, &bad);
        return;
    }
    braid_dtype dt = c->a->node->dtype;
    if (c->geo.red == BG_SCATTER_NONE) {
        memcpy(c->out + (size_t)t * c->es, c->upd + (size_t)p * c->es, c->es);
        return;
    }
    double x[2] = {bg_load(dt, c->out, t), bg_load(dt, c->upd, p)};
    bg_store(dt, c->out, t,
             bg_scalar_apply(bg_scatter_red_op(c->geo.red), dt, x));
}

/* ELEMENTS: columns [lo, hi) of the indices (their coordinates but the
 * axis's, in C order), each walked along the axis. */
static void scatter_columns(void *ctx, int64_t lo, int64_t hi) {
    const ix *c = ctx;
    const bg_index_geom *g = &c->geo;
    int64_t len = g->idims[g->axis], inner = 1;
    for (int k = g->axis + 1; k < g->rank; k++)
        inner *= g->idims[k];
    for (int64_t col = lo; col < hi; col++) {
        int64_t o = col / inner, i = col % inner;
        for (int64_t j = 0; j < len; j++)
            apply(c, (o * len + j) * inner + i);
    }
}

/* ND: slice elements [lo, hi), each walked over every tuple. */
static void scatter_slices(void *ctx, int64_t lo, int64_t hi) {
    const ix *c = ctx;
    int64_t tuples = c->geo.outer * c->geo.nidx;
    for (int64_t i = lo; i < hi; i++)
        for (int64_t t = 0; t < tuples; t++)
            apply(c, t * c->geo.inner + i);
}

/* ---- entry --------------------------------------------------------------- */

braid_status br_index_prepare(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    if (bg_index_mode_of(&n->attr) < BG_INDEX_MODE_COUNT_ &&
        (g->nodes[n->inputs[1]].dtype == BRAID_I32 ||
         g->nodes[n->inputs[1]].dtype == BRAID_I64))
        return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_INTERNAL,
                             "braid_exec_new: node %u (%s): flags 0x%x or "
                             "indices are not a form the CPU runs",
                             id, bg_op(n->op)->name, (unsigned)n->attr.flags);
}

void br_index_run(const br_kernel_args *a) {
    ix c = {.a = a,
            .es = braid_dtype_size(a->node->dtype),
            .data = a->in[0],
            .idx = a->in[1],
            .upd = a->node->ninputs > 2 ? a->in[2] : NULL,
            .out = a->out};
    bg_index_geom_of(a->g, a->node, &c.geo);
    const bg_index_geom *g = &c.geo;
    if (g->nwork == 0 && a->node->op == BRAID_OP_GATHER) return;
    if (a->node->op == BRAID_OP_GATHER) {
        if (g->mode == BG_INDEX_AXIS)
            br_parallel_for(a->pool, g->outer * g->nidx,
                            g->inner >= BR_GRAIN ? 1 : BR_GRAIN / g->inner,
                            gather_rows, &c);
        else
            br_parallel_for(a->pool, g->nwork, BR_GRAIN, gather_elems, &c);
        return;
    }
    if (c.out != c.data) memmove(c.out, c.data, (size_t)g->ndata * c.es);
    if (g->nwork == 0) return;
    if (g->mode == BG_INDEX_ELEMENTS) {
        int64_t len = g->idims[g->axis];
        br_parallel_for(a->pool, g->nwork / len,
                        len >= BR_GRAIN ? 1 : BR_GRAIN / len, scatter_columns,
                        &c);
    } else {
        int64_t tuples = g->outer * g->nidx;
        br_parallel_for(a->pool, g->inner,
                        tuples >= BR_GRAIN ? 1 : BR_GRAIN / tuples,
                        scatter_slices, &c);
    }
}
