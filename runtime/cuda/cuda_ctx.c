/* runtime/cuda/cuda_ctx.c — creating and freeing the CUDA side of an executor.
 *
 * br_cuda_new does, once: check that every GPU the plan uses exists;
 * classify each node (kernel, cuBLAS matmul, copy direction, no work; the
 * event lists are the dispatcher's br_sched); allocate each GPU arena with
 * cudaMalloc and each pinned arena (plus the CPU arena when copies touch
 * it) with cudaHostAlloc; take a non-blocking stream per GPU queue, a
 * cuBLAS handle with its own workspace per compute stream, a CUDA event
 * (timing disabled) per event whose producer runs on a GPU, from the
 * process's pool (cuda_pool.c; created when it has none); enable peer
 * access where D2D copies need it; allocate staging slots; upload
 * constants copied to GPUs; load the plan's kernels; choose the fused
 * matmuls cuBLASLt runs with its bias epilogue; decide whether the GPU
 * part can become a CUDA graph. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const WHERE = "braid_exec_new";

/* ---- devices ------------------------------------------------------------- */

/* Says what the plan runs on the missing GPU in the user's terms (a node
 * they wrote, never a copy the compiler made); what (a queue, an arena)
 * only when no node runs there. */
static braid_status missing_device(const bp_plan *p, int want, int have,
                                   const char *what) {
    char use[160];
    bp_device d = {.kind = BP_DEVICE_CUDA, .index = want};
    bp_device_use_str(p, d, use, sizeof use);
    bool nodes = strncmp(use, "0 nodes", 7) != 0;
    return bg_set_last_error(BRAID_ERR_DEVICE,
                             "braid_exec_new: the plan runs %s, but %d CUDA "
                             "device%s present%s%s%s",
                             use, have, have == 1 ? " is" : "s are",
                             nodes ? "" : " (", nodes ? "" : what,
                             nodes ? "" : ")");
}

/* Every GPU a queue, arena or node uses must exist. */
static braid_status check_devices(br_cuda *c) {
    const bp_plan *p = c->plan;
    c->ndev = braid_cuda_device_count();
    if (c->ndev == 0) return br_cuda_no_device(p, braid_cuda_status());
    char what[96];
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        const bp_queue *qu = &p->res.queues[q];
        if (qu->kind == BP_QUEUE_CPU) continue;
        if (qu->device.kind != BP_DEVICE_CUDA || qu->device.index < 0)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "braid_exec_new: queue %u is a GPU "
                                     "stream on a non-CUDA device",
                                     q);
        if (qu->device.index >= c->ndev) {
            snprintf(what, sizeof what, "queue %u streams to it", q);
            return missing_device(p, qu->device.index, c->ndev, what);
        }
    }
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        bp_device d = p->res.arenas[a].device;
        if (d.kind == BP_DEVICE_CUDA && d.index >= c->ndev) {
            snprintf(what, sizeof what, "arena %u lives there", a);
            return missing_device(p, d.index, c->ndev, what);
        }
    }
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        bp_device d = p->res.info[id].device;
        if (d.kind == BP_DEVICE_CUDA && d.index >= c->ndev) {
            snprintf(what, sizeof what, "node %u (%s) runs there", id,
                     bg_op(bg_node_at(p->res.graph, id)->op)->name);
            return missing_device(p, d.index, c->ndev, what);
        }
    }
    return BRAID_OK;
}

/* ---- tables -------------------------------------------------------------- */

static void *zalloc(size_t n, size_t size) {
    return calloc(n ? n : 1, size ? size : 1);
}

static braid_status alloc_tables(br_cuda *c) {
    const bp_plan *p = c->plan;
    uint32_t n = p->res.ninfo, nq = p->res.nqueues ? p->res.nqueues : 1;
    c->mem.arena = zalloc(p->res.narenas, sizeof *c->mem.arena);
    c->mem.kind = zalloc(p->res.narenas, 1);
    c->mem.home = zalloc(n, sizeof *c->mem.home);
    c->node = zalloc(n, sizeof *c->node);
    c->q.stream = zalloc(nq, sizeof *c->q.stream);
    c->q.event = zalloc(p->res.nevents, sizeof *c->q.event);
    c->blas.handle = zalloc(nq, sizeof *c->blas.handle);
    c->blas.ws = zalloc(nq, sizeof *c->blas.ws);
    c->copy.stage = zalloc(nq, sizeof *c->copy.stage);
    c->copy.pending = zalloc(n, sizeof *c->copy.pending);
    c->copy.pend_list = zalloc(n, sizeof *c->copy.pend_list);
    if (!c->mem.arena || !c->mem.kind || !c->mem.home || !c->node ||
        !c->q.stream || !c->q.event || !c->blas.handle || !c->blas.ws ||
        !c->copy.stage || !c->copy.pending || !c->copy.pend_list)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory for the CUDA "
                                 "backend's tables (%u nodes)",
                                 n);
    for (uint32_t id = 0; id < n; id++) {
        c->node[id].kernel = BG_NONE;
        c->node[id].lt = BG_NONE;
        c->node[id].ptrs = BG_NONE;
        c->node[id].dev = -1;
    }
    return BRAID_OK;
}

/* What a copy on a GPU queue does: its queue says the direction; a copy
 * of constant bytes to a GPU is uploaded once instead. */
static br_node_kind copy_kind(const bp_plan *p, uint32_t id) {
    switch (br_queue_kind(p, p->res.info[id].queue)) {
    case BP_QUEUE_H2D: {
        /* a copy that writes into another tensor's bytes (an input of a
           concat assembled in place) must really copy */
        uint32_t root =
            br_root(p, bg_node_at(p->res.graph, id)->inputs[0], NULL);
        return p->res.info[root].place.storage == BP_STORAGE_CONSTANT &&
                       bg_node_at(p->res.graph, root)->op ==
                           BRAID_OP_CONSTANT &&
                       p->res.info[id].place.storage != BP_STORAGE_VIEW
                   ? BR_NODE_CONST_H2D
                   : BR_NODE_H2D;
    }
    case BP_QUEUE_D2H:
        return BR_NODE_D2H;
    default: /* D2D stream, or a same-GPU copy on a compute stream */
        return BR_NODE_D2D;
    }
}

/* What a node on a GPU queue does; codegen's classification decides
 * which nodes get kernels, so the two always agree. */
static braid_status gpu_kind(const bp_plan *p, uint32_t id, br_node_kind *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->op == BRAID_OP_COPY) {
        *k = copy_kind(p, id);
        return BRAID_OK;
    }
    if (bg_op(n->op)->kind == BRAID_KIND_COLLECTIVE) {
        *k = BR_NODE_COLL;
        return BRAID_OK;
    }
    switch (bc_classify(p, id)) {
    case BC_NODE_DATA: /* a GPU constant: uploaded at creation */
    case BC_NODE_VIEW:
        *k = BR_NODE_NOOP;
        return BRAID_OK;
    case BC_NODE_MATMUL:
        *k = BR_NODE_GEMM;
        return BRAID_OK;
    case BC_NODE_MATMUL_EPILOGUE:
        *k = BR_NODE_GEMM_EPI;
        return BRAID_OK;
    case BC_NODE_KERNEL:
        *k = BR_NODE_KERNEL;
        return BRAID_OK;
    default:
        if (br_node_noop(p, id)) {
            *k = BR_NODE_NOOP;
            return BRAID_OK;
        }
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: node %u (%s) is on a GPU "
                                 "stream but placed on the cpu",
                                 id, bg_op(n->op)->name);
    }
}

/* Node kinds, devices and queues: the CPU list's nodes stay BR_NODE_CPU,
 * the device list's are classified. */
static braid_status classify(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->sched->ncpu; i++) {
        uint32_t id = c->sched->cpu_list[i];
        c->node[id].queue = p->res.info[id].queue;
    }
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        br_cnode *cn = &c->node[id];
        cn->queue = p->res.info[id].queue;
        cn->dev = p->res.queues[cn->queue].device.index;
        braid_status s = gpu_kind(p, id, &cn->kind);
        bool gemm = cn->kind == BR_NODE_GEMM || cn->kind == BR_NODE_GEMM_EPI;
        if (s == BRAID_OK && gemm &&
            br_queue_kind(p, cn->queue) != BP_QUEUE_COMPUTE)
            s = bg_set_last_error(BRAID_ERR_INTERNAL,
                                  "braid_exec_new: matmul node %u is not on "
                                  "a compute stream (no cuBLAS handle)",
                                  id);
        if (s == BRAID_OK && gemm) s = br_cuda_gemm_check(c, id);
        if (s != BRAID_OK) return s;
    }
    return BRAID_OK;
}

/* ---- arenas -------------------------------------------------------------- */

/* True when a copy node reads or writes bytes of CPU arena a. */
static bool copies_touch(const br_cuda *c, uint32_t a) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        br_node_kind k = c->node[id].kind;
        uint32_t t = BG_NONE;
        if (k == BR_NODE_H2D)
            t = br_root(p, bg_node_at(p->res.graph, id)->inputs[0], NULL);
        else if (k == BR_NODE_D2H)
            t = br_root(p, id, NULL);
        if (t != BG_NONE && p->res.info[t].place.storage == BP_STORAGE_ARENA &&
            p->res.info[t].place.arena == a)
            return true;
    }
    return false;
}

/* True when some scheduled tensor lives in arena a. */
static bool arena_holds_tensor(const bp_plan *p, uint32_t a) {
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        const bp_tensor_place *pl = &p->res.info[p->res.schedule[i]].place;
        if (pl->storage == BP_STORAGE_ARENA && pl->arena == a) return true;
    }
    return false;
}

static braid_status arena_oom(br_cuda *c, uint32_t a, const char *what,
                              const char *call, cudaError_t err) {
    char dev[32];
    const bp_arena *ar = &c->plan->res.arenas[a];
    (void)cudaGetLastError();
    return bg_set_last_error(
        BRAID_ERR_OUT_OF_MEMORY,
        "braid_exec_new: out of memory allocating arena %u (%llu bytes of "
        "%s for %s): %s failed: %s",
        a, (unsigned long long)ar->bytes, what,
        bp_device_str(ar->device, dev, sizeof dev), call,
        cudaGetErrorString(err));
}

/* arena_kind per arena, decided from the plan alone: 1 GPU memory, 2
 * pinned host memory (pinned arenas holding tensors, and a CPU arena that
 * copies touch, up to BR_PIN_CPU_ARENA_MAX), 3 a stand-in for a pinned
 * arena that holds no tensor (the memory pass's staging reservation: the
 * backend stages through per-stream slots instead, since H2D and D2H run
 * at once), 0 left to exec.c. */
static void decide_arenas(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        const bp_arena *ar = &p->res.arenas[a];
        if (ar->kind == BP_ARENA_DEVICE && ar->device.kind == BP_DEVICE_CUDA)
            c->mem.kind[a] = 1;
        else if (ar->kind == BP_ARENA_PINNED)
            c->mem.kind[a] = arena_holds_tensor(p, a) ? 2 : 3;
        else if (ar->bytes <= BR_PIN_CPU_ARENA_MAX && copies_touch(c, a))
            c->mem.kind[a] = 2;
    }
}

static braid_status alloc_arenas(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        const bp_arena *ar = &p->res.arenas[a];
        size_t bytes =
            ar->bytes && c->mem.kind[a] != 3 ? (size_t)ar->bytes : 256;
        cudaError_t err;
        if (c->mem.kind[a] == 1) {
            braid_status s = br_cuda_use(c, WHERE, BG_NONE, ar->device.index);
            if (s != BRAID_OK) return s;
            if ((err = cudaMalloc(&c->mem.arena[a], bytes)) != cudaSuccess)
                return arena_oom(c, a, "device memory", "cudaMalloc", err);
            continue;
        }
        if (c->mem.kind[a] == 0) continue;
        err = cudaHostAlloc(&c->mem.arena[a], bytes, cudaHostAllocPortable);
        if (err != cudaSuccess)
            return arena_oom(c, a, "pinned host memory", "cudaHostAlloc", err);
        memset(c->mem.arena[a], 0, bytes); /* fault pages in now */
        if (c->mem.kind[a] == 3)
            br_cuda_logf(c,
                         "arena %u: pinned staging of %llu bytes replaced "
                         "by per-stream staging slots",
                         a, (unsigned long long)ar->bytes);
        else if (ar->kind == BP_ARENA_DEVICE)
            br_cuda_logf(c,
                         "arena %u: cpu arena of %llu bytes allocated "
                         "pinned (copies use it)",
                         a, (unsigned long long)ar->bytes);
    }
    return BRAID_OK;
}

/* ---- streams, handles, events -------------------------------------------- */

/* A stream (non-blocking) or an event (no timing) on device dev, which is
 * current: from the process pool, else new. */
static braid_status take_object(br_cuda *c, const char *where, uint32_t node,
                                br_res_kind kind, int dev, void **out) {
    br_res r;
    if (br_res_take(kind, dev, 0, &r)) {
        *out = r.obj;
        return BRAID_OK;
    }
    cudaStream_t st = NULL;
    cudaEvent_t ev = NULL;
    braid_status s =
        kind == BR_RES_STREAM
            ? br_cu(c, where, node, "cudaStreamCreateWithFlags",
                    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking))
            : br_cu(c, where, node, "cudaEventCreateWithFlags",
                    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    if (s == BRAID_OK) br_res_created(kind);
    *out = kind == BR_RES_STREAM ? (void *)st : (void *)ev;
    return s;
}

static braid_status take_stream(br_cuda *c, int dev, cudaStream_t *out) {
    void *obj = NULL;
    braid_status s = take_object(c, WHERE, BG_NONE, BR_RES_STREAM, dev, &obj);
    *out = obj;
    return s;
}

braid_status br_cuda_take_event(br_cuda *c, const char *where, uint32_t node,
                                int dev, cudaEvent_t *out) {
    void *obj = NULL;
    braid_status s = take_object(c, where, node, BR_RES_EVENT, dev, &obj);
    *out = obj;
    return s;
}

/* An event last recorded inside a stream capture is a node of the captured
 * graph, not an ordinary event: synchronising on it fails with "invalid
 * argument" (seen on an H100, where every executor after one that had
 * replayed a graph failed its first staged copy). So the events of an
 * executor that began a capture are destroyed, not pooled. */
void br_cuda_give_event(const br_cuda *c, int dev, cudaEvent_t ev) {
    br_res r = {.kind = BR_RES_EVENT, .dev = dev, .obj = ev};
    if (c->graph.captured)
        br_res_destroy(&r);
    else
        br_res_give(&r);
}

/* A queue that holds at least one scheduled node. */
static bool queue_used(const br_cuda *c, uint32_t q) {
    for (uint32_t i = 0; i < c->sched->ndev; i++)
        if (c->node[c->sched->dev_list[i]].queue == q) return true;
    return false;
}

static braid_status make_streams(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        if (p->res.queues[q].kind == BP_QUEUE_CPU || !queue_used(c, q))
            continue;
        braid_status s =
            br_cuda_use(c, WHERE, BG_NONE, p->res.queues[q].device.index);
        if (s == BRAID_OK)
            s = take_stream(c, p->res.queues[q].device.index, &c->q.stream[q]);
        if (s == BRAID_OK && p->res.queues[q].kind == BP_QUEUE_COMPUTE)
            s = br_cuda_blas_take(c, q);
        if (s != BRAID_OK) return s;
    }
    return BRAID_OK;
}

/* An event per plan event whose producer is issued on a GPU stream (its
 * queue's device current when created, as cudaEventRecord requires). */
static braid_status make_events(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        const br_cnode *a = &c->node[p->res.events[k].after];
        if (a->kind == BR_NODE_CPU) continue;
        braid_status s = br_cuda_use(c, WHERE, p->res.events[k].after, a->dev);
        if (s == BRAID_OK)
            s = br_cuda_take_event(c, WHERE, p->res.events[k].after, a->dev,
                                   &c->q.event[k]);
        if (s != BRAID_OK) return s;
    }
    return BRAID_OK;
}

/* Peer access from each D2D copy's destination GPU to its source GPU, where
 * the hardware allows (otherwise the driver stages through the host). */
static braid_status enable_peers(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (c->node[id].kind != BR_NODE_D2D) continue;
        int dst = c->node[id].dev;
        int src = c->node[bg_node_at(p->res.graph, id)->inputs[0]].dev;
        if (src < 0 || src == dst) continue;
        int ok = 0;
        braid_status s = br_cu(c, WHERE, id, "cudaDeviceCanAccessPeer",
                               cudaDeviceCanAccessPeer(&ok, dst, src));
        if (s != BRAID_OK) return s;
        if (!ok) {
            br_cuda_logf(c,
                         "peer: cuda:%d cannot read cuda:%d directly; "
                         "copies go through the host",
                         dst, src);
            continue;
        }
        if ((s = br_cuda_use(c, WHERE, id, dst)) != BRAID_OK) return s;
        cudaError_t err = cudaDeviceEnablePeerAccess(src, 0);
        if (err == cudaErrorPeerAccessAlreadyEnabled) {
            (void)cudaGetLastError();
            continue;
        }
        if ((s = br_cu(c, WHERE, id, "cudaDeviceEnablePeerAccess", err)))
            return s;
        br_cuda_logf(c, "peer: cuda:%d reads cuda:%d directly", dst, src);
    }
    return BRAID_OK;
}

/* ---- creation and freeing ------------------------------------------------ */

/* The decisions that need no GPU: tables, node kinds, event lists, arena
 * kinds. */
static braid_status prepare(br_cuda *c) {
    braid_status s = alloc_tables(c);
    if (s == BRAID_OK) s = classify(c);
    if (s == BRAID_OK) decide_arenas(c);
    return s;
}

static br_cuda *new_ctx(const bp_plan *p, const br_sched *sched) {
    br_cuda *c = calloc(1, sizeof *c);
    if (!c) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_exec_new: out of memory");
        return NULL;
    }
    c->plan = p;
    c->sched = sched ? sched : &c->own_sched;
    c->cur_dev = -1;
    c->allow_tf32 = p->in.opts.allow_tf32;
    const char *env = getenv("BRAID_CUDA_GRAPHS");
    c->graph.enabled = !(env && env[0] == '0');
    return c;
}

braid_status br_cuda_check_plan(const bp_plan *p, int sm, char *report,
                                size_t size) {
    br_cuda *c = new_ctx(p, NULL);
    if (!c) return BRAID_ERR_OUT_OF_MEMORY;
    c->dry = true;
    braid_status s = br_sched_build(p, &c->own_sched);
    if (s == BRAID_OK) s = prepare(c);
    if (s == BRAID_OK) s = br_cuda_coll_init(c);
    if (s == BRAID_OK) s = br_cuda_check_kernels(c, sm);
    if (s == BRAID_OK) s = br_cuda_lt_prepare(c);
    if (s == BRAID_OK) s = br_graph_prepare(c);
    if (s == BRAID_OK && report && size) {
        uint32_t kinds[BR_NODE_CONV + 1] = {0};
        for (uint32_t i = 0; i < c->sched->ndev; i++)
            kinds[c->node[c->sched->dev_list[i]].kind]++;
        snprintf(report, size,
                 "%u GPU nodes (%u kernels, %u matmuls, %u matmul epilogues, "
                 "%u H2D, %u D2H, %u D2D, %u constant uploads, %u no-ops, "
                 "%u collectives), %u cpu nodes\n%s",
                 c->sched->ndev, kinds[BR_NODE_KERNEL], kinds[BR_NODE_GEMM],
                 kinds[BR_NODE_GEMM_EPI], kinds[BR_NODE_H2D],
                 kinds[BR_NODE_D2H], kinds[BR_NODE_D2D],
                 kinds[BR_NODE_CONST_H2D], kinds[BR_NODE_NOOP],
                 kinds[BR_NODE_COLL], c->sched->ncpu, c->log.text);
    }
    br_cuda_free(c);
    return s;
}

/* The creation steps of a real executor, in order. */
static const struct {
    const char *name;
    braid_status (*run)(br_cuda *c);
} steps[] = {
    {"devices", check_devices},
    {"tables", prepare},
    {"arenas", alloc_arenas},
    {"streams", make_streams},
    {"events", make_events},
    {"peers", enable_peers},
    {"nccl", br_cuda_coll_init},
    /* constants first: their pinned slots go back to the process pool,
       where the staging slots find them */
    {"constants", br_cuda_upload_constants},
    {"staging", br_cuda_stage_init},
    {"kernels", br_cuda_load_kernels},
    {"cudnn", br_cuda_conv_prepare}, /* conv ops */
    {"cublaslt", br_cuda_lt_prepare},
    {"batches", br_cuda_gemm_ptrs_prepare},
    {"graph", br_graph_prepare},
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Runs the steps; the log gets one line with the time of each (what an
 * executor's creation costs, and where). */
braid_status br_cuda_new(const bp_plan *p, const br_sched *sched, br_pool *pool,
                         br_cuda **out) {
    *out = NULL;
    br_cuda *c = new_ctx(p, sched);
    if (!c) return BRAID_ERR_OUT_OF_MEMORY;
    c->pool = pool;
    enum { N = sizeof steps / sizeof steps[0] };
    double ms[N], t = now_ms(), t0 = t;
    braid_status s = BRAID_OK;
    for (size_t i = 0; s == BRAID_OK && i < N; i++) {
        s = steps[i].run(c);
        double t1 = now_ms();
        ms[i] = t1 - t;
        t = t1;
    }
    if (s != BRAID_OK) {
        br_cuda_free(c);
        return s;
    }
    char *line = c->log.created;
    size_t size = sizeof c->log.created;
    size_t len = (size_t)snprintf(line, size, "created in %.2f ms:", t - t0);
    for (size_t i = 0; i < N && len < size; i++)
        len += (size_t)snprintf(line + len, size - len, " %s %.2f",
                                steps[i].name, ms[i]);
    br_cuda_logf(c, "%s", line);
    *out = c;
    return BRAID_OK;
}

/* Gives the streams (idle first) and events back to the pool; a stream
 * that reports an error is destroyed instead. */
static void free_queues(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t q = 0; c->q.stream && q < p->res.nqueues; q++) {
        if (!c->q.stream[q]) continue;
        br_res r = {.kind = BR_RES_STREAM,
                    .dev = p->res.queues[q].device.index,
                    .obj = c->q.stream[q]};
        cudaSetDevice(r.dev);
        if (cudaStreamSynchronize(c->q.stream[q]) == cudaSuccess)
            br_res_give(&r);
        else
            br_res_destroy(&r);
    }
    for (uint32_t k = 0; c->q.event && k < p->res.nevents; k++)
        if (c->q.event[k])
            br_cuda_give_event(c, c->node[p->res.events[k].after].dev,
                               c->q.event[k]);
}

static void free_memory(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t a = 0; c->mem.arena && a < p->res.narenas; a++) {
        if (c->mem.kind[a] == 1) cudaFree(c->mem.arena[a]);
        if (c->mem.kind[a] >= 2) cudaFreeHost(c->mem.arena[a]);
    }
    for (uint32_t id = 0; id < p->res.ninfo; id++) {
        if (c->mem.home && c->mem.home[id]) cudaFree(c->mem.home[id]);
    }
}

void br_cuda_free(br_cuda *c) {
    if (!c) return;
    if (!c->dry) {      /* a dry check made no CUDA objects */
        free_queues(c); /* idle streams first: everything else is idle */
        br_cuda_blas_give(c);
        br_cuda_coll_free(c);
        br_cuda_lt_free(c);
        br_cuda_gemm_ptrs_free(c);
        br_graph_free(c);
        br_cuda_stage_free(c);
        br_cuda_free_kernels(c);
        br_cuda_conv_free(c);
        free_memory(c);
        (void)cudaGetLastError();
    } else {
        br_cuda_lt_free(c); /* tables only */
        br_graph_free(c);
        bc_source_free(&c->mod.src);
        free(c->mod.kern);
        free(c->mod.argv);
        free(c->mod.argp);
    }
    free(c->mem.arena);
    free(c->mem.kind);
    free(c->mem.home);
    free(c->node);
    br_sched_free(&c->own_sched);
    free(c->q.stream);
    free(c->blas.handle);
    free(c->blas.ws);
    free(c->q.event);
    free(c->copy.stage);
    free(c->copy.pending);
    free(c->copy.pend_list);
    free(c->coll.member);
    free(c->coll.comms);
    free(c);
}

void *br_cuda_arena(const br_cuda *c, uint32_t a) {
    return c && a < c->plan->res.narenas ? c->mem.arena[a] : NULL;
}

void *br_cuda_home(const br_cuda *c, uint32_t id) {
    return c && id < c->plan->res.ninfo ? c->mem.home[id] : NULL;
}

void br_cuda_set_graphs(br_cuda *c, bool on) {
    if (!c) return;
    c->graph.enabled = on;
    if (!on && c->graph.exec) {
        cudaGraphExecDestroy(c->graph.exec);
        cudaGraphDestroy(c->graph.graph);
        c->graph.exec = NULL;
        c->graph.graph = NULL;
    }
}

bool br_cuda_last_run_used_graph(const br_cuda *c) {
    return c && c->graph.used_last;
}

#else
typedef int br_cuda_ctx_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
