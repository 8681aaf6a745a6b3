/* runtime/cuda/cuda_copy.c — copy nodes: host ↔ device and device ↔ device.
 *
 * Paths, chosen per run from where the bytes are:
 *   - pinned host memory (the backend's pinned arenas, or a caller buffer
 *     cudaPointerGetAttributes calls host memory) and device memory: one
 *     cudaMemcpyAsync on the copy's stream (cudaMemcpyPeerAsync when a
 *     caller's device buffer is on another GPU than the copy's); never
 *     staged nor deferred;
 *   - pageable host memory: staged through the stream's pinned slots in
 *     slot-sized chunks. H2D: the host copies chunk k+1 into a free slot
 *     (on the executor's threads) while the DMA of chunk k runs; a slot is
 *     refilled only after the event recorded behind its last DMA. D2H: the
 *     DMAs of up to BR_STAGE_SLOTS chunks are in flight while the host
 *     copies finished chunks out. A D2H copy into pageable memory that no
 *     GPU node waits for is deferred (c->copy.pending) until a CPU node needs
 *     its bytes, the next node of its stream is issued (a stream is never
 *     reordered: events behind later nodes imply earlier ones are done) or
 *     the run ends, so the host need not wait for the GPU work it depends
 *     on right away;
 *   - constants copied to a GPU: uploaded once at creation (c->mem.home), no
 *     work per run. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

static const char *const WHERE = "braid_run";

/* ---- staging slots ------------------------------------------------------- */

/* Bytes the copies on queue q may stage at most (0: they never stage). */
static uint64_t staged_bytes(const br_cuda *c, uint32_t q) {
    const bp_plan *p = c->plan;
    uint64_t most = 0;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        const br_cnode *cn = &c->node[id];
        if (cn->queue != q) continue;
        uint32_t t = BG_NONE;
        if (cn->kind == BR_NODE_H2D)
            t = br_root(p, bg_node_at(p->res.graph, id)->inputs[0], NULL);
        else if (cn->kind == BR_NODE_D2H)
            t = br_root(p, id, NULL);
        else
            continue;
        const bp_tensor_place *pl = &p->res.info[t].place;
        /* caller buffers (inputs, outputs written in place) may be
           pageable; so may an arena exec.c allocates */
        bool maybe_pageable =
            pl->storage == BP_STORAGE_INPUT ||
            (pl->storage == BP_STORAGE_ARENA && c->mem.kind[pl->arena] == 0);
        for (uint32_t o = 0; !maybe_pageable && o < p->res.noutputs; o++)
            maybe_pageable = p->res.outputs[o].node == t; /* bound in place */
        uint64_t n = bg_nbytes(bg_node_at(p->res.graph, id));
        if (maybe_pageable && n > most) most = n;
    }
    return most;
}

/* Pinned host memory of at least bytes for staging: from the process
 * pool, else new (*got: its size). */
static braid_status take_pinned(uint32_t q, size_t bytes, void **out,
                                size_t *got) {
    br_res r;
    if (br_res_take(BR_RES_PINNED, -1, bytes, &r)) {
        *out = r.obj;
        *got = r.bytes;
        return BRAID_OK;
    }
    cudaError_t err = cudaHostAlloc(out, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        *out = NULL;
        return bg_set_last_error(
            BRAID_ERR_OUT_OF_MEMORY,
            "braid_exec_new: out of memory allocating %llu bytes of pinned "
            "staging for queue %u: cudaHostAlloc failed: %s",
            (unsigned long long)bytes, q, cudaGetErrorString(err));
    }
    br_res_created(BR_RES_PINNED);
    *got = bytes;
    return BRAID_OK;
}

braid_status br_cuda_stage_init(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        bp_queue_kind k = p->res.queues[q].kind;
        if ((k != BP_QUEUE_H2D && k != BP_QUEUE_D2H) || !br_cuda_stream(c, q))
            continue;
        uint64_t most = staged_bytes(c, q);
        if (most == 0) continue;
        br_stage *st = &c->copy.stage[q];
        int dev = p->res.queues[q].device.index;
        /* a copy of `most` bytes fills each slot once: the host copy of
           one chunk overlaps the DMAs of the others, and the pinned bytes
           (whose allocation costs ~0.5 ms per MB) are about `most` */
        uint64_t slot = (most + BR_STAGE_SLOTS - 1) / BR_STAGE_SLOTS;
        if (slot < BR_STAGE_SLOT_MIN)
            slot = most < BR_STAGE_SLOT_MIN ? most : BR_STAGE_SLOT_MIN;
        if (slot > BR_STAGE_SLOT_MAX) slot = BR_STAGE_SLOT_MAX;
        slot = (slot + 4095) / 4096 * 4096;
        braid_status s = br_cuda_use(c, "braid_exec_new", BG_NONE, dev);
        if (s == BRAID_OK)
            s = take_pinned(q, slot * BR_STAGE_SLOTS, &st->host, &st->bytes);
        st->slot = slot;
        for (int i = 0; s == BRAID_OK && i < BR_STAGE_SLOTS; i++)
            s = br_cuda_take_event(c, "braid_exec_new", BG_NONE, dev,
                                   &st->free[i]);
        if (s != BRAID_OK) return s;
        br_cuda_logf(c, "staging: queue %u has %d pinned slots of %llu bytes",
                     q, BR_STAGE_SLOTS, (unsigned long long)slot);
    }
    return BRAID_OK;
}

void br_cuda_stage_free(br_cuda *c) {
    if (!c->copy.stage) return;
    for (uint32_t q = 0; q < c->plan->res.nqueues; q++) {
        br_stage *st = &c->copy.stage[q];
        for (int i = 0; i < BR_STAGE_SLOTS; i++)
            if (st->free[i])
                br_cuda_give_event(c, c->plan->res.queues[q].device.index,
                                   st->free[i]);
        br_res_give(&(br_res){.kind = BR_RES_PINNED,
                              .dev = -1,
                              .bytes = st->bytes,
                              .obj = st->host});
    }
}

/* ---- constants ----------------------------------------------------------- */

/* Bytes of a constant a CONST_H2D node copies: the root's attr.data. */
static const char *constant_bytes(const bp_plan *p, uint32_t id) {
    uint64_t off = 0;
    uint32_t root = br_root(p, bg_node_at(p->res.graph, id)->inputs[0], &off);
    const char *data = bg_node_at(p->res.graph, root)->attr.data;
    return data ? data + off : NULL;
}

/* Constants are uploaded once, at creation. Their bytes sit in pageable
 * memory (the graph's, or a loaded plan file's image), which a plain
 * cudaMemcpy stages through the driver at ~9 GB/s on an H200; GPT-2 small's
 * 623 MB took ~70 ms that way. Past UP_STAGED bytes they go through
 * UP_SLOTS pinned slots instead: the executor's threads copy into one slot
 * while the DMAs of the others run (braid's own staged copies reach
 * ~50 GB/s). */
#define UP_SLOTS 4
#define UP_SLOT ((size_t)8 << 20)
#define UP_STAGED ((size_t)32 << 20)
#define UP_GRAIN                                                               \
    ((int64_t)512 << 10) /* bytes per thread and task: a slot                  \
                            on 16 threads */

typedef struct uploader {
    int dev;             /* the device uploaded to; -1 before the first */
    cudaStream_t stream; /* a stream of the executor on dev */
    char *host;          /* UP_SLOTS slots of UP_SLOT pinned bytes, or NULL:
                            plain cudaMemcpy */
    size_t host_bytes;   /* its size (the pool's buffer may be larger) */
    cudaEvent_t done[UP_SLOTS]; /* per slot: its DMAs finished */
    uint32_t slot;              /* the slot being filled */
    size_t used;                /* bytes of it filled */
} uploader;

/* A stream of the executor on device dev, or NULL (none: plain copies). */
static cudaStream_t stream_on(const br_cuda *c, int dev) {
    const bp_plan *p = c->plan;
    for (uint32_t q = 0; q < p->res.nqueues; q++)
        if (p->res.queues[q].kind != BP_QUEUE_CPU &&
            p->res.queues[q].device.index == dev && c->q.stream[q])
            return c->q.stream[q];
    return NULL;
}

/* Waits for dev's uploads and gives the slots' events back. */
static braid_status up_finish(br_cuda *c, uploader *u) {
    braid_status s = BRAID_OK;
    if (u->dev < 0) return s;
    if (u->stream)
        s = br_cu(c, "braid_exec_new", BG_NONE,
                  "cudaStreamSynchronize (constants)",
                  cudaStreamSynchronize(u->stream));
    for (int i = 0; i < UP_SLOTS; i++)
        if (u->done[i]) br_cuda_give_event(c, u->dev, u->done[i]);
    memset(u->done, 0, sizeof u->done);
    u->stream = NULL;
    u->dev = -1;
    return s;
}

/* Makes dev the device uploaded to: its stream and the slots' events (none
 * found: plain copies). */
static braid_status up_device(br_cuda *c, uploader *u, uint32_t id, int dev) {
    if (u->dev == dev) return BRAID_OK;
    braid_status s = up_finish(c, u);
    if (s == BRAID_OK) s = br_cuda_use(c, "braid_exec_new", id, dev);
    if (s != BRAID_OK) return s;
    u->dev = dev;
    u->slot = 0;
    u->used = 0;
    if (!u->host || !(u->stream = stream_on(c, dev))) return BRAID_OK;
    for (int i = 0; s == BRAID_OK && i < UP_SLOTS; i++)
        s = br_cuda_take_event(c, "braid_exec_new", id, dev, &u->done[i]);
    return s;
}

/* Uploads size bytes from host src to device dst on device dev. */
static braid_status upload(br_cuda *c, uploader *u, uint32_t id, int dev,
                           char *dst, const char *src, size_t size) {
    braid_status s = up_device(c, u, id, dev);
    if (s != BRAID_OK || size == 0 || !src) return s;
    if (!u->stream) /* a plain synchronous copy */
        return br_cu(c, "braid_exec_new", id, "cudaMemcpy (constant)",
                     cudaMemcpy(dst, src, size, cudaMemcpyHostToDevice));
    while (size > 0 && s == BRAID_OK) {
        if (u->used == UP_SLOT) { /* the next slot, once its DMAs are done */
            s = br_cu(c, "braid_exec_new", id, "cudaEventRecord (constants)",
                      cudaEventRecord(u->done[u->slot], u->stream));
            u->slot = (u->slot + 1) % UP_SLOTS;
            u->used = 0;
            if (s == BRAID_OK)
                s = br_cu(c, "braid_exec_new", id,
                          "cudaEventSynchronize (constants)",
                          cudaEventSynchronize(u->done[u->slot]));
            if (s != BRAID_OK) break;
        }
        size_t n = UP_SLOT - u->used < size ? UP_SLOT - u->used : size;
        char *at = u->host + (size_t)u->slot * UP_SLOT + u->used;
        br_parallel_memcpy_grain(c->pool, at, src, n, UP_GRAIN);
        s = br_cu(
            c, "braid_exec_new", id, "cudaMemcpyAsync (constant)",
            cudaMemcpyAsync(dst, at, n, cudaMemcpyHostToDevice, u->stream));
        u->used += n;
        dst += n;
        src += n;
        size -= n;
    }
    return s;
}

/* What creation uploads for node id: a constant placed on a GPU (into its
 * own arena bytes), the copy of a cpu constant to a GPU (into a buffer of
 * its own), or nothing. */
typedef enum { UP_NONE, UP_ARENA, UP_COPY } up_kind;

static up_kind uploads(const br_cuda *c, uint32_t id) {
    const bp_plan *p = c->plan;
    const bp_tensor_place *pl = &p->res.info[id].place;
    if (bg_node_at(p->res.graph, id)->op == BRAID_OP_CONSTANT &&
        pl->storage == BP_STORAGE_ARENA && pl->arena < p->res.narenas &&
        c->mem.kind[pl->arena] == 1)
        return UP_ARENA;
    return c->node[id].kind == BR_NODE_CONST_H2D ? UP_COPY : UP_NONE;
}

braid_status br_cuda_upload_constants(br_cuda *c) {
    const bp_plan *p = c->plan;
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        if (uploads(c, p->res.schedule[i]) != UP_NONE)
            total += bg_nbytes(bg_node_at(p->res.graph, p->res.schedule[i]));
    uploader u = {.dev = -1};
    /* pinned slots only where they pay (a failure: plain copies) */
    if (total >= UP_STAGED &&
        take_pinned(0, UP_SLOTS * UP_SLOT, (void **)&u.host, &u.host_bytes) !=
            BRAID_OK) {
        u.host = NULL;
        bg_clear_last_error();
    }
    braid_status s = BRAID_OK;
    for (uint32_t i = 0; s == BRAID_OK && i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bg_node *n = bg_node_at(p->res.graph, id);
        const bp_tensor_place *pl = &p->res.info[id].place;
        size_t bytes = bg_nbytes(n);
        up_kind k = uploads(c, id);
        if (k == UP_ARENA) {
            s = upload(c, &u, id, p->res.arenas[pl->arena].device.index,
                       (char *)c->mem.arena[pl->arena] + pl->offset,
                       n->attr.data, bytes);
        } else if (k == UP_COPY) {
            s = br_cuda_use(c, "braid_exec_new", id, c->node[id].dev);
            if (s == BRAID_OK)
                s = br_cu(c, "braid_exec_new", id, "cudaMalloc (constant)",
                          cudaMalloc(&c->mem.home[id], bytes ? bytes : 256));
            if (s == BRAID_OK)
                s = upload(c, &u, id, c->node[id].dev, c->mem.home[id],
                           constant_bytes(p, id), bytes);
        }
    }
    braid_status f = up_finish(c, &u); /* also after an error: slots idle */
    if (s == BRAID_OK) s = f;
    if (u.host)
        br_res_give(&(br_res){.kind = BR_RES_PINNED,
                              .dev = -1,
                              .bytes = u.host_bytes,
                              .obj = u.host});
    if (s == BRAID_OK && total)
        br_cuda_logf(c, "constants: %llu bytes uploaded at creation%s",
                     (unsigned long long)total,
                     u.host ? " through pinned staging" : "");
    return s;
}

/* ---- the copies ---------------------------------------------------------- */

/* True when ptr lies in one of the backend's pinned arenas. */
static bool in_pinned_arena(const br_cuda *c, const void *ptr) {
    const bp_plan *p = c->plan;
    uintptr_t x = (uintptr_t)ptr;
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        if (c->mem.kind[a] != 2) continue;
        uintptr_t b = (uintptr_t)c->mem.arena[a];
        if (x >= b && x < b + p->res.arenas[a].bytes) return true;
    }
    return false;
}

/* True for host memory that needs staging: neither pinned nor device
 * memory. Sets *gpu to the GPU of a caller's device buffer (else -1): a
 * copy between it and another GPU is a peer copy. */
static bool pageable_or_gpu(const br_cuda *c, const void *ptr, int *gpu) {
    int dev = -1;
    *gpu = -1;
    if (in_pinned_arena(c, ptr)) return false;
    int kind = br_pointer_kind(ptr, &dev);
    if (kind == 2) *gpu = dev;
    return kind == 0;
}

static char *slot_at(const br_stage *st, uint32_t i) {
    return (char *)st->host + (size_t)i * st->slot;
}

/* Pageable host → device, chunk by chunk through the stream's slots. */
static braid_status staged_h2d(br_cuda *c, uint32_t id, char *dst,
                               const char *src, uint64_t n) {
    br_cnode *cn = &c->node[id];
    br_stage *st = &c->copy.stage[cn->queue];
    cudaStream_t s = br_cuda_stream(c, cn->queue);
    if (!st->host) /* not foreseen at creation: the driver stages */
        return br_cu(c, WHERE, id, "cudaMemcpyAsync (pageable H2D)",
                     cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s));
    for (uint64_t off = 0; off < n; off += st->slot) {
        uint64_t len = n - off < st->slot ? n - off : st->slot;
        uint32_t k = st->next;
        st->next = (st->next + 1) % BR_STAGE_SLOTS;
        braid_status r = br_cu(c, WHERE, id, "cudaEventSynchronize (staging)",
                               cudaEventSynchronize(st->free[k]));
        if (r != BRAID_OK) return r;
        br_parallel_memcpy(c->run.args->pool, slot_at(st, k), src + off, len);
        r = br_cu(c, WHERE, id, "cudaMemcpyAsync (staged H2D)",
                  cudaMemcpyAsync(dst + off, slot_at(st, k), len,
                                  cudaMemcpyHostToDevice, s));
        if (r == BRAID_OK)
            r = br_cu(c, WHERE, id, "cudaEventRecord (staging)",
                      cudaEventRecord(st->free[k], s));
        if (r != BRAID_OK) return r;
    }
    return BRAID_OK;
}

/* Device → pageable host: up to BR_STAGE_SLOTS chunk DMAs in flight while
 * the host copies finished chunks out. Returns when dst is written. */
static braid_status staged_d2h(br_cuda *c, uint32_t id, char *dst,
                               const char *src, uint64_t n) {
    br_cnode *cn = &c->node[id];
    br_stage *st = &c->copy.stage[cn->queue];
    cudaStream_t s = br_cuda_stream(c, cn->queue);
    if (!st->host) { /* not foreseen at creation: the driver stages */
        braid_status r =
            br_cu(c, WHERE, id, "cudaMemcpyAsync (pageable D2H)",
                  cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s));
        return r == BRAID_OK ? br_cu(c, WHERE, id, "cudaStreamSynchronize",
                                     cudaStreamSynchronize(s))
                             : r;
    }
    uint64_t nchunks = (n + st->slot - 1) / st->slot;
    braid_status r = BRAID_OK;
    for (uint64_t k = 0; r == BRAID_OK && k < nchunks + BR_STAGE_SLOTS; k++) {
        if (k < nchunks) { /* issue chunk k into slot k mod S */
            uint32_t i = (uint32_t)(k % BR_STAGE_SLOTS);
            uint64_t off = k * st->slot;
            uint64_t len = n - off < st->slot ? n - off : st->slot;
            r = br_cu(c, WHERE, id, "cudaMemcpyAsync (staged D2H)",
                      cudaMemcpyAsync(slot_at(st, i), src + off, len,
                                      cudaMemcpyDeviceToHost, s));
            if (r == BRAID_OK)
                r = br_cu(c, WHERE, id, "cudaEventRecord (staging)",
                          cudaEventRecord(st->free[i], s));
        }
        /* once S chunks are in flight (or all are issued), drain the
           oldest: chunk j = k - S + 1 */
        if (r != BRAID_OK || k + 1 < BR_STAGE_SLOTS) continue;
        uint64_t j = k + 1 - BR_STAGE_SLOTS;
        if (j >= nchunks) continue;
        uint32_t i = (uint32_t)(j % BR_STAGE_SLOTS);
        uint64_t off = j * st->slot;
        uint64_t len = n - off < st->slot ? n - off : st->slot;
        r = br_cu(c, WHERE, id, "cudaEventSynchronize (staging)",
                  cudaEventSynchronize(st->free[i]));
        if (r == BRAID_OK)
            br_parallel_memcpy(c->run.args->pool, dst + off, slot_at(st, i),
                               len);
    }
    return r;
}

/* No GPU node waits for D2H copy id: it may be deferred. */
static bool deferrable(const br_cuda *c, uint32_t id) {
    for (uint32_t k = c->sched->rstart[id]; k < c->sched->rstart[id + 1]; k++)
        if (c->node[c->plan->res.events[c->sched->recs[k]].before].kind !=
            BR_NODE_CPU)
            return false;
    return true;
}

braid_status br_cuda_copy(br_cuda *c, uint32_t id) {
    const bp_plan *p = c->plan;
    const bg_node *n = bg_node_at(p->res.graph, id);
    br_cnode *cn = &c->node[id];
    uint64_t bytes = bg_nbytes(n);
    char *dst = c->run.args->ptr[id];
    const char *src = c->run.args->ptr[n->inputs[0]];
    cudaStream_t s = br_cuda_stream(c, cn->queue);
    if (bytes == 0 || cn->kind == BR_NODE_CONST_H2D) return BRAID_OK;
    /* captured: fixed pinned buffers, or the caller's device buffer bound
     * at the capture (br_graph_state.bound) */
    if (c->run.capturing && cn->kind == BR_NODE_H2D && !c->graph.bound[id])
        src = c->graph.src[id];
    if (c->run.capturing && cn->kind == BR_NODE_D2H && !c->graph.bound[id])
        dst = c->graph.dst[id];
    if (c->run.capturing && cn->kind != BR_NODE_D2D)
        return br_cu(c, WHERE, id, "cudaMemcpyAsync",
                     cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    int other = -1; /* the GPU of a caller's device buffer */
    switch (cn->kind) {
    case BR_NODE_H2D:
        if (pageable_or_gpu(c, src, &other))
            return staged_h2d(c, id, dst, src, bytes);
        if (other >= 0 && other != cn->dev) /* caller memory on another GPU */
            return br_cu(
                c, WHERE, id, "cudaMemcpyPeerAsync",
                cudaMemcpyPeerAsync(dst, cn->dev, src, other, bytes, s));
        break;
    case BR_NODE_D2H:
        if (!pageable_or_gpu(c, dst, &other)) {
            if (other >= 0 && other != cn->dev)
                return br_cu(
                    c, WHERE, id, "cudaMemcpyPeerAsync",
                    cudaMemcpyPeerAsync(dst, other, src, cn->dev, bytes, s));
            break; /* pinned or device memory: one DMA, never deferred */
        }
        if (!deferrable(c, id)) return staged_d2h(c, id, dst, src, bytes);
        c->copy.pending[id] = true;
        c->copy.pend_list[c->copy.npend++] = id;
        return BRAID_OK;
    case BR_NODE_D2D: {
        int from = c->node[n->inputs[0]].dev;
        if (from >= 0 && from != cn->dev)
            return br_cu(
                c, WHERE, id, "cudaMemcpyPeerAsync",
                cudaMemcpyPeerAsync(dst, cn->dev, src, from, bytes, s));
        break;
    }
    default:
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_run: node %u is not a copy", id);
    }
    return br_cu(c, WHERE, id, "cudaMemcpyAsync",
                 cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
}

/* Completes deferred copy id (staged through the stream's slots) and
 * records its events. */
static braid_status flush_one(br_cuda *c, uint32_t id) {
    c->copy.pending[id] = false;
    const bg_node *n = bg_node_at(c->plan->res.graph, id);
    braid_status s = br_cuda_use(c, WHERE, id, c->node[id].dev);
    if (s == BRAID_OK)
        s = staged_d2h(c, id, c->run.args->ptr[id],
                       c->run.args->ptr[n->inputs[0]], bg_nbytes(n));
    /* its events: CPU waiters synchronise on them (already complete) */
    for (uint32_t k = c->sched->rstart[id];
         s == BRAID_OK && k < c->sched->rstart[id + 1]; k++)
        if (c->q.event[c->sched->recs[k]])
            s = br_cu(c, WHERE, id, "cudaEventRecord",
                      cudaEventRecord(c->q.event[c->sched->recs[k]],
                                      br_cuda_stream(c, c->node[id].queue)));
    return s;
}

braid_status br_cuda_flush(br_cuda *c, uint32_t q, uint32_t upto) {
    braid_status s = BRAID_OK;
    for (uint32_t i = 0; s == BRAID_OK && i < c->copy.npend; i++) {
        uint32_t id = c->copy.pend_list[i];
        if (!c->copy.pending[id] || (q != BG_NONE && c->node[id].queue != q))
            continue;
        s = flush_one(c, id);
        if (id == upto) break;
    }
    return s;
}

#else
typedef int br_cuda_copy_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
