/* runtime/cuda/cuda_util.c — the CUDA backend's small helpers: error messages,
 * the executor log, the current device, pointer kinds, views, parallel
 * memcpy. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void br_cuda_logf(br_cuda *c, const char *fmt, ...) {
    if (!c) return;
    char line[1024]; /* longer lines are cut */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    /* echoed even once the log is full: docs/cli.md */
    const char *env = getenv("BRAID_LOG");
    if (env && *env && strcmp(env, "0") != 0)
        fprintf(stderr, "braid: %s\n", line);
    if (c->log.len + 2 >= sizeof c->log.text) return;
    size_t len = strlen(line), room = sizeof c->log.text - c->log.len - 2;
    if (len > room) len = room;
    memcpy(c->log.text + c->log.len, line, len);
    c->log.len += len;
    c->log.text[c->log.len++] = '\n';
    c->log.text[c->log.len] = '\0';
}

const char *br_cuda_log(const br_cuda *c) {
    return c ? c->log.text : "";
}

const char *br_cuda_created(const br_cuda *c) {
    return c ? c->log.created : "";
}

/* "node 12 (add "h1") on cuda:0: " into buf, or "" for BG_NONE. */
static const char *node_part(const br_cuda *c, uint32_t node, char *buf,
                             size_t size) {
    buf[0] = '\0';
    if (!c || node == BG_NONE || node >= c->plan->res.ninfo) return buf;
    const bp_plan *p = c->plan;
    const bg_node *n = bg_node_at(p->res.graph, node);
    char dev[32];
    const char *where = "cpu";
    if (c->node && c->node[node].dev >= 0) {
        snprintf(dev, sizeof dev, "cuda:%d", c->node[node].dev);
        where = dev;
    }
    snprintf(buf, size, "node %u (%s%s%s%s) on %s: ", node, bg_op(n->op)->name,
             n->name ? " \"" : "", n->name ? n->name : "", n->name ? "\"" : "",
             where);
    return buf;
}

braid_status br_cu(const br_cuda *c, const char *where, uint32_t node,
                   const char *call, cudaError_t err) {
    if (err == cudaSuccess) return BRAID_OK;
    char np[256];
    (void)cudaGetLastError(); /* clears a non-sticky error */
    braid_status s = err == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY
                                                      : BRAID_ERR_DEVICE;
    return bg_set_last_error(s, "%s: %s%s failed: %s (error %d)", where,
                             node_part(c, node, np, sizeof np), call,
                             cudaGetErrorString(err), (int)err);
}

braid_status br_blas(const br_cuda *c, const char *where, uint32_t node,
                     const char *call, cublasStatus_t st) {
    if (st == CUBLAS_STATUS_SUCCESS) return BRAID_OK;
    char np[256];
    (void)cudaGetLastError();
    braid_status s = st == CUBLAS_STATUS_ALLOC_FAILED ? BRAID_ERR_OUT_OF_MEMORY
                     : st == CUBLAS_STATUS_NOT_SUPPORTED ? BRAID_ERR_UNSUPPORTED
                                                         : BRAID_ERR_DEVICE;
    return bg_set_last_error(s, "%s: %s%s failed: %s (cuBLAS status %d)", where,
                             node_part(c, node, np, sizeof np), call,
                             cublasGetStatusString(st), (int)st);
}

braid_status br_cuda_use(br_cuda *c, const char *where, uint32_t node,
                         int dev) {
    if (dev < 0 || c->cur_dev == dev) return BRAID_OK;
    braid_status s = br_cu(c, where, node, "cudaSetDevice", cudaSetDevice(dev));
    c->cur_dev = s == BRAID_OK ? dev : -1;
    return s;
}

uint32_t br_root(const bp_plan *p, uint32_t id, uint64_t *offset) {
    uint64_t off = 0;
    /* bases precede views, so the chain ends; the bound guards a corrupt
       plan from looping */
    for (uint32_t hops = 0; hops <= p->res.ninfo; hops++) {
        const bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->storage != BP_STORAGE_VIEW || pl->base >= p->res.ninfo) break;
        off += pl->offset;
        id = pl->base;
    }
    if (offset) *offset = off;
    return id;
}

char *br_cuda_fixed_addr(const br_cuda *c, uint32_t id) {
    uint64_t off = 0;
    uint32_t r = br_root(c->plan, id, &off);
    if (c->mem.home[r]) return (char *)c->mem.home[r] + off;
    const bp_tensor_place *pl = &c->plan->res.info[r].place;
    if (pl->storage != BP_STORAGE_ARENA || c->mem.kind[pl->arena] != 1)
        return NULL;
    return (char *)c->mem.arena[pl->arena] + pl->offset + off;
}

bp_queue_kind br_queue_kind(const bp_plan *p, uint32_t q) {
    return q < p->res.nqueues ? p->res.queues[q].kind : BP_QUEUE_CPU;
}

int br_pointer_kind(const void *ptr, int *dev) {
    struct cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    cudaError_t err = cudaPointerGetAttributes(&at, ptr);
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* older drivers: unknown host memory */
        return 0;
    }
    if (at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged) {
        if (dev) *dev = at.device;
        return 2;
    }
    return at.type == cudaMemoryTypeHost ? 1 : 0;
}

typedef struct memcpy_job {
    char *dst;       /* destination bytes */
    const char *src; /* source bytes */
} memcpy_job;

static void memcpy_range(void *ctx, int64_t begin, int64_t end) {
    memcpy_job *j = ctx;
    memcpy(j->dst + begin, j->src + begin, (size_t)(end - begin));
}

void br_parallel_memcpy_grain(br_pool *pool, void *dst, const void *src,
                              uint64_t n, int64_t grain) {
    if (n == 0 || dst == src) return;
    memcpy_job j = {dst, src};
    br_parallel_for(pool, (int64_t)n, grain, memcpy_range, &j);
}

void br_parallel_memcpy(br_pool *pool, void *dst, const void *src, uint64_t n) {
    br_parallel_memcpy_grain(pool, dst, src, n, BR_STAGE_GRAIN);
}

bool br_node_noop(const bp_plan *p, uint32_t id) {
    braid_op op = bg_node_at(p->res.graph, id)->op;
    return p->res.info[id].noop || op == BRAID_OP_INPUT ||
           op == BRAID_OP_CONSTANT;
}

#else
typedef int br_cuda_util_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
