/* runtime/cpu/cpu_fused_pool.c — POOL programs: a max_pool or avg_pool
 * whose input is a prologue program (passes/program.h).
 *
 * The prologue is evaluated over a batch of whole input planes (N·C
 * planes, as many as fit POOL_BATCH_BYTES, at least one; channels last,
 * whole images, whose C planes interleave) into a scratch slot, tile by
 * tile, then the unfused pool kernel (br_pool_window_run) pools that
 * batch, both on one thread; batches run side by side over the threads
 * (br_waves), one slot each. So the prologue's values go through a
 * cache-sized buffer of the thread that pools them instead of a tensor of
 * the input's size, and each is computed once however many windows read
 * it. (Sharing each batch between the threads, a prologue phase and a
 * pool phase per batch, cost ResNet-18's stem pool two thread wake-ups
 * per 1 MB and ran it at a third of the unfused pool's speed.) Values are
 * stored in the pool's dtype as the unfused prologue would store them, so
 * results are the unfused graph's bit for bit. */
#include "graph/window.h"
#include "runtime/cpu/cpu_fused.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes of prologue values one batch aims at (a quarter of an L2: the
 * batch's values are written and then pooled by the same thread). */
#define POOL_BATCH_BYTES ((int64_t)1 << 19)
/* Most batches in flight (scratch slots, one per thread). */
#define POOL_MAX_SLOTS 16

/* The set-up, rounded up to keep the batch buffers 64-byte aligned. */
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

/* Units per batch, and the bytes of one batch's buffer. */
static int64_t batch_units(const bp_program *p, const bg_node *n,
                           size_t *bytes) {
    int64_t unit, units;
    pool_units(p, &unit, &units);
    unit *= (int64_t)braid_dtype_size(n->dtype);
    int64_t nb = unit > 0 ? POOL_BATCH_BYTES / unit : 1;
    if (nb < 1) nb = 1;
    if (nb > units) nb = units;
    *bytes = ((size_t)(nb * unit) + 63) & ~(size_t)63;
    return nb;
}

size_t br_fz_pool_scratch(const bp_program *p, const bg_node *n) {
    int64_t unit, units;
    pool_units(p, &unit, &units);
    size_t bytes;
    int64_t nb = batch_units(p, n, &bytes);
    int64_t slots = (units + nb - 1) / (nb > 0 ? nb : 1);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (slots > cores) slots = cores;
    if (slots > POOL_MAX_SLOTS) slots = POOL_MAX_SLOTS;
    if (slots < 1) slots = 1;
    return setup_bytes() + (size_t)slots * bytes;
}

/* The fused pool's run: the prologue and the pool's geometry. */
typedef struct pool_job {
    const br_fz *z;    /* the prologue */
    bg_window w;       /* the pool's geometry (all planes) */
    bool max;          /* max_pool, else avg_pool */
    braid_dtype t;     /* the prologue's and the pool's dtype */
    int64_t unit;      /* elements of a unit (plane or image) */
    int64_t units, nb; /* units in all, per batch */
    int64_t oplane;    /* output elements per unit */
    char *bufs;        /* the slots' batch buffers */
    size_t buf_bytes;  /* one slot's */
    char *out;
} pool_job;

/* Batch `task` (units [task·nb, +nb)) in slot `slot`: its prologue, tile
 * by tile, into the slot's buffer, then the unfused pool kernel over it,
 * both on this thread, so the values are pooled from its own caches. */
static void pool_batch(void *ctx, int64_t task, int64_t slot) {
    const pool_job *j = ctx;
    const br_fz *z = j->z;
    int64_t u0 = task * j->nb;
    int64_t n = j->units - u0 < j->nb ? j->units - u0 : j->nb;
    int64_t s0 = u0 * j->unit, len = n * j->unit;
    char *buf = j->bufs + (size_t)slot * j->buf_bytes;
    size_t esz = braid_dtype_size(j->t);
    br_fz_ct ct = (br_fz_ct)z->v[z->last].ct;
    br_fz_mem mem;
    for (int64_t k = 0; k < len; k += z->tile) {
        int64_t m = len - k < z->tile ? len - k : z->tile;
        char *dst = buf + k * (int64_t)esz;
        br_fz_ref r = br_fz_eval(z, &mem, s0 + k, m,
                                 br_fz_storage(ct) == j->t ? dst : NULL);
        br_fz_store(j->t, ct, r, m, dst);
    }
    bg_window wb = j->w;
    wb.planes = n * j->w.inner;
    br_pool_window_run(NULL, &wb, j->t, j->max, buf,
                       j->out + u0 * j->oplane * (int64_t)esz);
}

void br_fz_run_pool(const br_kernel_args *a) {
    const bp_program *p = a->program;
    const bp_instr *pool = &p->instr[p->ninstr - 1];
    if (bg_numel(a->node) == 0) return;
    pool_job j = {.max = pool->op == BRAID_OP_MAX_POOL,
                  .t = a->node->dtype,
                  .out = a->out};
    bp_program_window(p, a->node->dims, &j.w);
    pool_units(p, &j.unit, &j.units); /* the batch's units: planes or images */
    j.oplane = j.w.out[0] * j.w.out[1] * j.w.out[2] * j.w.inner;
    j.nb = batch_units(p, a->node, &j.buf_bytes);
    size_t avail = a->scratch_bytes > setup_bytes()
                       ? a->scratch_bytes - setup_bytes()
                       : 0;
    int64_t slots = (int64_t)(avail / j.buf_bytes);
    int64_t tasks = (j.units + j.nb - 1) / j.nb;
    if (slots > tasks) slots = tasks;
    if (slots < 1) return; /* br_fused_check sized the scratch: never */
    br_fz *z = a->scratch;
    br_fz_setup(z, a, 0, pool->arg[0], NULL, BR_FZ_TILE_MAX);
    j.z = z;
    j.bufs = (char *)a->scratch + setup_bytes();
    br_waves(a->pool, tasks, slots, pool_batch, &j);
}
