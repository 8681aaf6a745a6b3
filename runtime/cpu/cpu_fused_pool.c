/* runtime/cpu/cpu_fused_pool.c — POOL programs: a max_pool or avg_pool
 * whose input is a prologue program (passes/program.h).
 *
 * The prologue is evaluated over a batch of whole input planes (N·C
 * planes, as many as fit POOL_BATCH_BYTES, at least one; channels last,
 * whole images, whose C planes interleave) into executor
 * scratch, tile by tile over the threads, then the unfused pool kernel
 * (br_pool_window_run) pools that batch; so the prologue's values go
 * through a cache-sized buffer instead of a tensor of the input's size,
 * and each is computed once however many windows read it. Values are
 * stored in the pool's dtype as the unfused prologue would store them, so
 * results are the unfused graph's bit for bit. */
#include "graph/window.h"
#include "runtime/cpu/cpu_fused.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of prologue values one batch aims at (about an L2). */
#define POOL_BATCH_BYTES ((int64_t)1 << 20)

/* The set-up, rounded up to keep the batch buffer 64-byte aligned. */
static size_t setup_bytes(void) {
    return (sizeof(br_fz) + 63) & ~(size_t)63;
}

/* The unit a batch holds whole: a plane (N·C of them), or channels last
 * an image (N of them, C planes interleaved). Its elements and count. */
static void pool_units(const bp_program *p, int64_t *elems, int64_t *units) {
    bool cl = p->flags & BG_POOL_CHANNELS_LAST;
    int64_t e = 1;
    for (int d = 1; d < p->rank; d++)
        e *= p->dims[d];
    *units = p->dims[0] * (cl ? 1 : p->dims[1]);
    *elems = cl || p->dims[1] == 0 ? e : e / p->dims[1];
}

size_t br_fz_pool_scratch(const bp_program *p, const bg_node *n) {
    int64_t unit, units;
    pool_units(p, &unit, &units);
    unit *= (int64_t)braid_dtype_size(n->dtype);
    int64_t nb = unit > 0 ? POOL_BATCH_BYTES / unit : 1;
    if (nb < 1) nb = 1;
    if (nb > units) nb = units;
    return setup_bytes() + (size_t)(nb * unit);
}

/* One batch's prologue: positions [s0, s0 + len) of the space into buf. */
typedef struct batch {
    const br_fz *z;   /* the prologue */
    int64_t s0, len;  /* its positions */
    char *buf;        /* their values, dtype t */
    braid_dtype t;    /* the prologue's dtype */
} batch;

static void prologue_tiles(void *ctx, int64_t tb, int64_t te) {
    const batch *c = ctx;
    const br_fz *z = c->z;
    br_fz_mem mem;
    br_fz_ct ct = (br_fz_ct)z->v[z->last].ct;
    size_t esz = braid_dtype_size(c->t);
    for (int64_t t = tb; t < te; t++) {
        int64_t k = t * z->tile;
        int64_t m = c->len - k < z->tile ? c->len - k : z->tile;
        char *dst = c->buf + k * (int64_t)esz;
        br_fz_ref r = br_fz_eval(z, &mem, c->s0 + k, m,
                                 br_fz_storage(ct) == c->t ? dst : NULL);
        br_fz_store(c->t, ct, r, m, dst);
    }
}

void br_fz_run_pool(const br_kernel_args *a) {
    const bp_program *p = a->program;
    const bp_instr *pool = &p->instr[p->ninstr - 1];
    if (bg_numel(a->node) == 0) return;
    bg_window w;
    bp_program_window(p, a->node->dims, &w);
    int64_t plane, planes; /* the batch's units: planes or images */
    pool_units(p, &plane, &planes);
    size_t esz = braid_dtype_size(a->node->dtype);
    int64_t oplane = w.out[0] * w.out[1] * w.out[2] * w.inner;
    br_fz *z = a->scratch;
    size_t avail = a->scratch_bytes > setup_bytes()
                       ? a->scratch_bytes - setup_bytes()
                       : 0;
    int64_t nb = plane > 0 ? (int64_t)(avail / ((size_t)plane * esz)) : planes;
    if (nb > planes) nb = planes;
    if (nb < 1) return; /* br_fused_check sized the scratch: never */
    batch c = {.z = z, .buf = (char *)a->scratch + setup_bytes(),
               .t = a->node->dtype};
    br_fz_setup(z, a, 0, pool->arg[0], NULL, BR_FZ_TILE_MAX);
    for (int64_t p0 = 0; p0 < planes; p0 += nb) {
        int64_t n = planes - p0 < nb ? planes - p0 : nb;
        c.s0 = p0 * plane;
        c.len = n * plane;
        int64_t ntiles = (c.len + z->tile - 1) / z->tile;
        br_parallel_for(a->pool, ntiles, (BR_GRAIN + z->tile - 1) / z->tile,
                        prologue_tiles, &c);
        bg_window wb = w;
        wb.planes = n * w.inner;
        br_pool_window_run(a->pool, &wb, a->node->dtype,
                           pool->op == BRAID_OP_MAX_POOL, c.buf,
                           (char *)a->out + p0 * oplane * (int64_t)esz);
    }
}
