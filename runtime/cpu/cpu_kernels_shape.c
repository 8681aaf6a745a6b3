/* runtime/cpu/cpu_kernels_shape.c — reshape, permute, slice, concat,
 * broadcast_to and copy as (strided) copies.
 *
 * Every output is dense; permute, slice and broadcast_to read their input
 * through strides (runtime/cpu/cpu_kernels.c's n-d walk), so the innermost
 * dimension is one tight loop; reshape, copy and concat are plain memcpy.
 * Views that skip the copy are a later pass's decision. */
#include "runtime/cpu/cpu_kernels.h"

#include <string.h>

/* Bytes per chunk of a parallel memcpy. */
#define COPY_GRAIN ((int64_t)1 << 16)

typedef struct bytes_ctx {
    char *dst;       /* destination */
    const char *src; /* source */
} bytes_ctx;

static void bytes_range(void *ctx, int64_t b, int64_t e) {
    const bytes_ctx *c = ctx;
    memcpy(c->dst + b, c->src + b, (size_t)(e - b));
}

static void copy_bytes(br_pool *pool, void *dst, const void *src, int64_t n) {
    bytes_ctx c = {dst, src};
    br_parallel_for(pool, n, COPY_GRAIN, bytes_range, &c);
}

/* ---- strided copies ------------------------------------------------------ */

typedef struct strided_ctx {
    size_t esz;     /* element size */
    char *out;      /* dense output */
    const char *in; /* input, already advanced to the first element read */
} strided_ctx;

#define STRIDED_LOOP(T)                                                        \
    do {                                                                       \
        T *restrict o = (T *)(c->out + oi * sizeof(T));                        \
        const T *restrict a =                                                  \
            (const T *)(c->in + off[0] * (int64_t)sizeof(T));                  \
        if (s == 0) {                                                          \
            const T v = a[0];                                                  \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = v;                                                      \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = a[i * s];                                               \
        }                                                                      \
    } while (0)

static void strided_seg(void *ctx, int64_t oi, int64_t n, const int64_t *off,
                        const int64_t *step) {
    const strided_ctx *c = ctx;
    int64_t s = step[0];
    if (s == 1) {
        memcpy(c->out + oi * c->esz, c->in + off[0] * (int64_t)c->esz,
               (size_t)n * c->esz);
        return;
    }
    switch (c->esz) {
    case 1:
        STRIDED_LOOP(uint8_t);
        break;
    case 2:
        STRIDED_LOOP(uint16_t);
        break;
    case 4:
        STRIDED_LOOP(uint32_t);
        break;
    default:
        STRIDED_LOOP(uint64_t);
        break;
    }
}

/* Output of node n read from in through strides (one per output dim). */
static void strided_copy(const br_kernel_args *a, const char *in,
                         const int64_t *strides, bool broadcast,
                         const bg_node *x) {
    const bg_node *n = a->node;
    strided_ctx c = {braid_dtype_size(n->dtype), a->out, in};
    br_nd it;
    br_nd_init(&it, n->rank, n->dims);
    if (broadcast)
        br_nd_add_broadcast(&it, x->rank, x->dims);
    else
        br_nd_add_strided(&it, strides);
    br_nd_collapse(&it);
    br_nd_parallel(a->pool, &it, strided_seg, &c);
}

static void permute_run(const br_kernel_args *a, const bg_node *x) {
    int64_t s[BRAID_MAX_RANK], st[BRAID_MAX_RANK];
    br_dense_strides(x->rank, x->dims, s);
    for (int i = 0; i < a->node->rank; i++)
        st[i] = s[a->node->attr.perm[i]];
    strided_copy(a, a->in[0], st, false, x);
}

static void slice_run(const br_kernel_args *a, const bg_node *x) {
    const bg_node *n = a->node;
    int64_t s[BRAID_MAX_RANK], st[BRAID_MAX_RANK], base = 0;
    br_dense_strides(x->rank, x->dims, s);
    for (int i = 0; i < x->rank; i++) {
        st[i] = s[i] * n->attr.step[i];
        base += n->attr.start[i] * s[i];
    }
    strided_copy(
        a, (const char *)a->in[0] + base * (int64_t)braid_dtype_size(n->dtype),
        st, false, x);
}

/* ---- concat -------------------------------------------------------------- */

typedef struct concat_ctx {
    const br_kernel_args *a; /* the node */
    int64_t row;             /* output bytes per outer index */
    int64_t inner;           /* bytes per index of the joined axis */
    int axis;                /* the joined axis */
} concat_ctx;

static void concat_rows(void *ctx, int64_t b, int64_t e) {
    const concat_ctx *c = ctx;
    const br_kernel_args *a = c->a;
    for (int64_t o = b; o < e; o++) {
        char *dst = (char *)a->out + o * c->row;
        for (uint32_t k = 0; k < a->node->ninputs; k++) {
            const bg_node *x = bg_node_at(a->g, a->node->inputs[k]);
            int64_t chunk = x->dims[c->axis] * c->inner;
            if (chunk == 0) /* an empty input may have no buffer at all */
                continue;
            memcpy(dst, (const char *)a->in[k] + o * chunk, (size_t)chunk);
            dst += chunk;
        }
    }
}

static void concat_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    int axis = n->attr.axis < 0 ? n->attr.axis + n->rank : n->attr.axis;
    concat_ctx c = {a, 0, (int64_t)braid_dtype_size(n->dtype), axis};
    int64_t outer = 1;
    for (int i = 0; i < axis; i++)
        outer *= n->dims[i];
    for (int i = axis + 1; i < n->rank; i++)
        c.inner *= n->dims[i];
    c.row = n->dims[axis] * c.inner;
    if (outer == 0 || c.row == 0) return;
    if (outer >= 4 * br_pool_threads(a->pool)) {
        int64_t grain = c.row >= COPY_GRAIN ? 1 : COPY_GRAIN / c.row;
        br_parallel_for(a->pool, outer, grain, concat_rows, &c);
        return;
    }
    /* Few long rows: split each piece's copy instead. */
    for (int64_t o = 0; o < outer; o++) {
        char *dst = (char *)a->out + o * c.row;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            const bg_node *x = bg_node_at(a->g, n->inputs[k]);
            int64_t chunk = x->dims[axis] * c.inner;
            if (chunk == 0)
                continue;
            copy_bytes(a->pool, dst, (const char *)a->in[k] + o * chunk, chunk);
            dst += chunk;
        }
    }
}

void br_shape_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    const bg_node *x = bg_node_at(a->g, n->inputs[0]);
    switch (n->op) {
    case BRAID_OP_PERMUTE:
        permute_run(a, x);
        return;
    case BRAID_OP_SLICE:
        if (bg_numel(n) > 0) slice_run(a, x);
        return;
    case BRAID_OP_BROADCAST_TO:
        strided_copy(a, a->in[0], NULL, true, x);
        return;
    case BRAID_OP_CONCAT:
        concat_run(a);
        return;
    default: /* reshape, copy: same bytes */
        copy_bytes(a->pool, a->out, a->in[0], (int64_t)bg_nbytes(n));
        return;
    }
}

static bool concat_fits(const braid_graph *g, const bg_node *n) {
    int axis = n->attr.axis < 0 ? n->attr.axis + n->rank : n->attr.axis;
    if (axis < 0 || axis >= n->rank) return false;
    int64_t total = 0;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = bg_node_at(g, n->inputs[k]);
        if (x->rank != n->rank || x->dtype != n->dtype) return false;
        for (int i = 0; i < n->rank; i++)
            if (i != axis && x->dims[i] != n->dims[i]) return false;
        total += x->dims[axis];
    }
    return total == n->dims[axis];
}

/* The attributes the strided reads trust, checked once. */
braid_status br_shape_prepare(const braid_graph *g, uint32_t id) {
    const bg_node *n = bg_node_at(g, id);
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    bool ok = true;
    if (n->op == BRAID_OP_PERMUTE) {
        unsigned seen = 0;
        for (int i = 0; i < n->rank; i++)
            seen |= n->attr.perm[i] < x->rank ? 1u << n->attr.perm[i] : 0;
        ok = n->rank == x->rank && seen == (1u << x->rank) - 1;
    } else if (n->op == BRAID_OP_SLICE && bg_numel(n) > 0) {
        ok = n->rank == x->rank;
        for (int i = 0; ok && i < n->rank; i++)
            ok = bg_slice_fits(x->dims[i], n->attr.start[i], n->attr.step[i],
                               n->dims[i]);
    } else if (n->op == BRAID_OP_RESHAPE || n->op == BRAID_OP_COPY) {
        ok = bg_nbytes(n) == bg_nbytes(x);
    } else if (n->op == BRAID_OP_BROADCAST_TO) {
        ok = x->rank <= n->rank;
        for (int i = 0; ok && i < x->rank; i++) {
            int64_t d = x->dims[i], o = n->dims[i + n->rank - x->rank];
            ok = d == o || d == 1;
        }
    } else if (n->op == BRAID_OP_CONCAT) {
        ok = concat_fits(g, n);
    }
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_INTERNAL,
                             "braid_exec_new: node %u: %s attributes do not "
                             "fit its input",
                             id, bg_op(n->op)->name);
}
