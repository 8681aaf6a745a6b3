/* runtime/cpu/cpu_kernels_sources.c — fill, iota, random_uniform, random_normal.
 *
 * Generators are computed on every run, once, into their buffer. Values are
 * rounded with bg_store itself, so every element is bit for bit what the
 * reference evaluator writes: random element i is a pure function of
 * (seed, i), so splitting the range over threads changes nothing. */
#include "runtime/cpu/cpu_kernels.h"

#include <string.h>

typedef struct src_ctx {
    const bg_node *n; /* the generator */
    char *out;        /* its buffer */
    size_t esz;       /* element size */
    int64_t inner;    /* iota: elements per step of the counted axis */
    int64_t dim;      /* iota: size of the counted axis */
    char one[8];      /* fill: the value, stored once */
} src_ctx;

static void fill_range(void *ctx, int64_t b, int64_t e) {
    const src_ctx *c = ctx;
    for (int64_t i = b; i < e; i++)
        memcpy(c->out + i * c->esz, c->one, c->esz);
}

static void iota_range(void *ctx, int64_t b, int64_t e) {
    const src_ctx *c = ctx;
    for (int64_t i = b; i < e; i++)
        bg_store(c->n->dtype, c->out, i, (double)((i / c->inner) % c->dim));
}

static void uniform_range(void *ctx, int64_t b, int64_t e) {
    const src_ctx *c = ctx;
    const bg_attrs *at = &c->n->attr;
    for (int64_t i = b; i < e; i++)
        bg_store(c->n->dtype, c->out, i,
                 bg_random_uniform_at(at->seed, i, at->value[0], at->value[1]));
}

static void normal_range(void *ctx, int64_t b, int64_t e) {
    const src_ctx *c = ctx;
    const bg_attrs *at = &c->n->attr;
    for (int64_t i = b; i < e; i++)
        bg_store(c->n->dtype, c->out, i,
                 bg_random_normal_at(at->seed, i, at->value[0], at->value[1]));
}

void br_source_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    src_ctx c = {n, a->out, braid_dtype_size(n->dtype), 1, 1, {0}};
    int64_t numel = bg_numel(n);
    switch (n->op) {
    case BRAID_OP_FILL:
        bg_store(n->dtype, c.one, 0, n->attr.value[0]);
        br_parallel_for(a->pool, numel, BR_GRAIN, fill_range, &c);
        return;
    case BRAID_OP_IOTA:
        if (n->rank > 0) {
            int axis = n->attr.axis;
            for (int i = axis + 1; i < n->rank; i++)
                c.inner *= n->dims[i];
            c.dim = n->dims[axis];
        }
        br_parallel_for(a->pool, numel, BR_GRAIN, iota_range, &c);
        return;
    case BRAID_OP_RANDOM_UNIFORM:
        br_parallel_for(a->pool, numel, BR_GRAIN / 8, uniform_range, &c);
        return;
    case BRAID_OP_RANDOM_NORMAL:
        br_parallel_for(a->pool, numel, BR_GRAIN / 8, normal_range, &c);
        return;
    default: /* input, constant: bound or read in place, never computed */
        return;
    }
}
