/* runtime/cpu/cpu_kernels_shape.c — reshape, permute, slice, concat,
 * broadcast_to and copy as (strided) copies.
 *
 * Every output is dense; permute, slice and broadcast_to read their input
 * through strides (runtime/cpu/cpu_kernels.c's n-d walk), so the innermost
 * dimension is one tight loop (a permute that moves the input's innermost
 * axis is copied in tiles instead, permute_tiled); reshape, copy and concat
 * are plain memcpy.
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

/* ---- transposing permutes ------------------------------------------------
 *
 * When the input's innermost axis is not the output's, the strided copy
 * reads one element per cache line (the dense output's inner loop walks the
 * input with a large stride): a [50257, 768] -> [768, 50257] transpose ran
 * at 0.5-0.9 GB/s. Instead the two axes are copied in tiles: axis j of the
 * output (the input's innermost, stride 1 there) and the output's innermost
 * axis (stride sb in the input). A tile of PT_A × PT_B elements writes
 * PT_A runs of PT_B contiguous outputs and reads PT_B runs of PT_A
 * contiguous inputs, all of it in L1. The other axes are walked per item. */
#define PT_A 32 /* elements along output axis j (input-contiguous) */
#define PT_B 64 /* elements along the output's innermost axis */

typedef struct ptile_ctx {
    size_t esz;
    char *out;
    const char *in;
    int no;                      /* other axes */
    int64_t od[BRAID_MAX_RANK];  /* their sizes */
    int64_t ois[BRAID_MAX_RANK]; /* their input strides (elements) */
    int64_t oos[BRAID_MAX_RANK]; /* their output strides (elements) */
    int64_t A, B;                /* sizes of axis j and the innermost */
    int64_t sa_out;              /* output stride of axis j */
    int64_t sb_in;               /* input stride of the innermost */
    int64_t ntiles;              /* tiles of A per outer index */
} ptile_ctx;

#define PTILE_LOOP(T)                                                          \
    do {                                                                       \
        const T *restrict in = (const T *)c->in + ib;                          \
        T *restrict out = (T *)c->out + ob;                                    \
        for (int64_t b0 = 0; b0 < c->B; b0 += PT_B) {                          \
            int64_t b1 = b0 + PT_B < c->B ? b0 + PT_B : c->B;                  \
            for (int64_t i = a0; i < a1; i++) {                                \
                T *o = out + i * c->sa_out;                                    \
                const T *src = in + i;                                         \
                for (int64_t k = b0; k < b1; k++)                              \
                    o[k] = src[k * c->sb_in];                                  \
            }                                                                  \
        }                                                                      \
    } while (0)

static void ptile_range(void *ctx, int64_t b, int64_t e) {
    const ptile_ctx *c = ctx;
    for (int64_t item = b; item < e; item++) {
        int64_t outer = item / c->ntiles, t = item % c->ntiles;
        int64_t ib = 0, ob = 0;
        for (int d = c->no - 1; d >= 0; d--) {
            int64_t k = outer % c->od[d];
            outer /= c->od[d];
            ib += k * c->ois[d];
            ob += k * c->oos[d];
        }
        int64_t a0 = t * PT_A, a1 = a0 + PT_A < c->A ? a0 + PT_A : c->A;
        switch (c->esz) {
        case 1:
            PTILE_LOOP(uint8_t);
            break;
        case 2:
            PTILE_LOOP(uint16_t);
            break;
        case 4:
            PTILE_LOOP(uint32_t);
            break;
        default:
            PTILE_LOOP(uint64_t);
            break;
        }
    }
}

/* The tiled copy of permute node n of x when it transposes the innermost
 * axis away and both axes are long enough for tiles to pay; else false. */
static bool permute_tiled(const br_kernel_args *a, const bg_node *x,
                          const int64_t *st) {
    const bg_node *n = a->node;
    int r = n->rank, j = -1;
    size_t esz = braid_dtype_size(n->dtype);
    if (r < 2 || (esz != 1 && esz != 2 && esz != 4 && esz != 8)) return false;
    for (int i = 0; i < r; i++)
        if (n->attr.perm[i] == x->rank - 1) j = i;
    if (j < 0 || j == r - 1 || n->dims[j] < 8 || n->dims[r - 1] < 8)
        return false;
    ptile_ctx c = {.esz = esz, .out = a->out, .in = a->in[0]};
    int64_t os[BRAID_MAX_RANK];
    br_dense_strides(r, n->dims, os);
    for (int i = 0; i < r - 1; i++) {
        if (i == j) continue;
        c.od[c.no] = n->dims[i];
        c.ois[c.no] = st[i];
        c.oos[c.no++] = os[i];
    }
    c.A = n->dims[j];
    c.B = n->dims[r - 1];
    c.sa_out = os[j];
    c.sb_in = st[r - 1];
    c.ntiles = (c.A + PT_A - 1) / PT_A;
    int64_t outer = bg_numel(n) / (c.A * c.B);
    if (outer == 0) return true;
    int64_t per_item = PT_A * c.B; /* elements an item copies */
    br_parallel_for(a->pool, outer * c.ntiles,
                    per_item >= BR_GRAIN ? 1 : BR_GRAIN / per_item, ptile_range,
                    &c);
    return true;
}

static void permute_run(const br_kernel_args *a, const bg_node *x) {
    int64_t s[BRAID_MAX_RANK], st[BRAID_MAX_RANK];
    br_dense_strides(x->rank, x->dims, s);
    for (int i = 0; i < a->node->rank; i++)
        st[i] = s[a->node->attr.perm[i]];
    if (permute_tiled(a, x, st)) return;
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
            if (chunk == 0) continue;
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
