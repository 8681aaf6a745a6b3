/* runtime/cuda/cuda_ctx.c — creating and freeing the CUDA side of an executor.
 *
 * br_cuda_new does, once: check that every GPU the plan uses exists;
 * classify each node (kernel, cuBLAS matmul, copy direction, no work); list
 * every node's event waits and records; allocate each GPU arena with
 * cudaMalloc and each pinned arena (plus the CPU arena when copies touch
 * it) with cudaHostAlloc; create a non-blocking stream per GPU queue, a
 * cuBLAS handle with its own workspace per compute stream, a CUDA event
 * (timing disabled) per event whose producer runs on a GPU; enable peer
 * access where D2D copies need it; allocate staging slots; upload
 * constants copied to GPUs; load the plan's kernels; choose the fused
 * matmuls cuBLASLt runs with its bias epilogue; decide whether the GPU
 * part can become a CUDA graph. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

static const char *const WHERE = "braid_exec_new";

/* ---- devices ------------------------------------------------------------- */

static braid_status missing_device(const bp_plan *p, int want, int have,
                                   const char *what) {
    (void)p;
    return bg_set_last_error(BRAID_ERR_DEVICE,
                             "braid_exec_new: plan needs cuda:%d but %d CUDA "
                             "device%s present (%s)",
                             want, have, have == 1 ? "" : "s", what);
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
    c->arena = zalloc(p->res.narenas, sizeof *c->arena);
    c->arena_kind = zalloc(p->res.narenas, 1);
    c->home = zalloc(n, sizeof *c->home);
    c->node = zalloc(n, sizeof *c->node);
    c->wstart = zalloc(n + 1, sizeof *c->wstart);
    c->rstart = zalloc(n + 1, sizeof *c->rstart);
    c->waits = zalloc(p->res.nevents, sizeof *c->waits);
    c->recs = zalloc(p->res.nevents, sizeof *c->recs);
    c->gpu_list = zalloc(p->res.nschedule, sizeof *c->gpu_list);
    c->cpu_list = zalloc(p->res.nschedule, sizeof *c->cpu_list);
    c->stream = zalloc(nq, sizeof *c->stream);
    c->blas = zalloc(nq, sizeof *c->blas);
    c->blas_ws = zalloc(nq, sizeof *c->blas_ws);
    c->event = zalloc(p->res.nevents, sizeof *c->event);
    c->stage = zalloc(nq, sizeof *c->stage);
    c->cpu_done = zalloc(n, sizeof *c->cpu_done);
    c->pending = zalloc(n, sizeof *c->pending);
    c->pend_list = zalloc(n, sizeof *c->pend_list);
    if (!c->arena || !c->arena_kind || !c->home || !c->node || !c->wstart ||
        !c->rstart || !c->waits || !c->recs || !c->gpu_list || !c->cpu_list ||
        !c->stream || !c->blas || !c->blas_ws || !c->event || !c->stage ||
        !c->cpu_done || !c->pending || !c->pend_list)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory for the CUDA "
                                 "backend's tables (%u nodes)",
                                 n);
    for (uint32_t id = 0; id < n; id++) {
        c->node[id].kernel = BG_NONE;
        c->node[id].lt = BG_NONE;
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

/* Node kinds, devices, queues and the schedule split into GPU and CPU
 * lists. */
static braid_status classify(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        br_cnode *cn = &c->node[id];
        cn->queue = p->res.info[id].queue;
        if (!br_cuda_node_on_gpu(p, id)) {
            cn->kind = BR_NODE_CPU;
            c->cpu_list[c->ncpu++] = id;
            continue;
        }
        cn->dev = p->res.queues[cn->queue].device.index;
        c->gpu_list[c->ngpu++] = id;
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

/* waits[wstart[id] ..] lists the events node id waits for, recs[...] the
 * ones it records. */
static braid_status event_lists(br_cuda *c) {
    const bp_plan *p = c->plan;
    uint32_t n = p->res.ninfo;
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        const bp_event *ev = &p->res.events[k];
        if (ev->after >= n || ev->before >= n)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "braid_exec_new: event %u joins node %u "
                                     "and node %u of a %u-node plan",
                                     k, ev->after, ev->before, n);
        c->wstart[ev->before + 1]++;
        c->rstart[ev->after + 1]++;
    }
    for (uint32_t i = 0; i < n; i++) {
        c->wstart[i + 1] += c->wstart[i];
        c->rstart[i + 1] += c->rstart[i];
    }
    uint32_t *wfill = zalloc(n, sizeof *wfill),
             *rfill = zalloc(n, sizeof *rfill);
    if (!wfill || !rfill) {
        free(wfill);
        free(rfill);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    }
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        uint32_t a = p->res.events[k].after, b = p->res.events[k].before;
        c->waits[c->wstart[b] + wfill[b]++] = k;
        c->recs[c->rstart[a] + rfill[a]++] = k;
    }
    free(wfill);
    free(rfill);
    return BRAID_OK;
}

/* ---- arenas -------------------------------------------------------------- */

/* True when a copy node reads or writes bytes of CPU arena a. */
static bool copies_touch(const br_cuda *c, uint32_t a) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->ngpu; i++) {
        uint32_t id = c->gpu_list[i];
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
            c->arena_kind[a] = 1;
        else if (ar->kind == BP_ARENA_PINNED)
            c->arena_kind[a] = arena_holds_tensor(p, a) ? 2 : 3;
        else if (ar->bytes <= BR_PIN_CPU_ARENA_MAX && copies_touch(c, a))
            c->arena_kind[a] = 2;
    }
}

static braid_status alloc_arenas(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        const bp_arena *ar = &p->res.arenas[a];
        size_t bytes =
            ar->bytes && c->arena_kind[a] != 3 ? (size_t)ar->bytes : 256;
        cudaError_t err;
        if (c->arena_kind[a] == 1) {
            braid_status s = br_cuda_use(c, WHERE, BG_NONE, ar->device.index);
            if (s != BRAID_OK) return s;
            if ((err = cudaMalloc(&c->arena[a], bytes)) != cudaSuccess)
                return arena_oom(c, a, "device memory", "cudaMalloc", err);
            continue;
        }
        if (c->arena_kind[a] == 0) continue;
        err = cudaHostAlloc(&c->arena[a], bytes, cudaHostAllocPortable);
        if (err != cudaSuccess)
            return arena_oom(c, a, "pinned host memory", "cudaHostAlloc", err);
        memset(c->arena[a], 0, bytes); /* fault pages in now */
        if (c->arena_kind[a] == 3)
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

static braid_status make_blas(br_cuda *c, uint32_t q) {
    cublasHandle_t h;
    braid_status s =
        br_blas(c, WHERE, BG_NONE, "cublasCreate", cublasCreate(&h));
    if (s != BRAID_OK) return s;
    c->blas[q] = h;
    s = br_cu(c, WHERE, BG_NONE, "cudaMalloc (cuBLAS workspace)",
              cudaMalloc(&c->blas_ws[q], BR_BLAS_WORKSPACE));
    if (s == BRAID_OK)
        s = br_blas(c, WHERE, BG_NONE, "cublasSetWorkspace",
                    cublasSetWorkspace(h, c->blas_ws[q], BR_BLAS_WORKSPACE));
    if (s == BRAID_OK)
        s = br_blas(c, WHERE, BG_NONE, "cublasSetStream",
                    cublasSetStream(h, c->stream[q]));
    cublasMath_t mode =
        c->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    if (s == BRAID_OK)
        s = br_blas(c, WHERE, BG_NONE, "cublasSetMathMode",
                    cublasSetMathMode(h, mode));
    return s;
}

/* A queue that holds at least one scheduled node. */
static bool queue_used(const br_cuda *c, uint32_t q) {
    for (uint32_t i = 0; i < c->ngpu; i++)
        if (c->node[c->gpu_list[i]].queue == q) return true;
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
            s = br_cu(c, WHERE, BG_NONE, "cudaStreamCreateWithFlags",
                      cudaStreamCreateWithFlags(&c->stream[q],
                                                cudaStreamNonBlocking));
        if (s == BRAID_OK && p->res.queues[q].kind == BP_QUEUE_COMPUTE)
            s = make_blas(c, q);
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
            s = br_cu(
                c, WHERE, p->res.events[k].after, "cudaEventCreateWithFlags",
                cudaEventCreateWithFlags(&c->event[k], cudaEventDisableTiming));
        if (s != BRAID_OK) return s;
    }
    return BRAID_OK;
}

/* Peer access from each D2D copy's destination GPU to its source GPU, where
 * the hardware allows (otherwise the driver stages through the host). */
static braid_status enable_peers(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->ngpu; i++) {
        uint32_t id = c->gpu_list[i];
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
    if (s == BRAID_OK) s = event_lists(c);
    if (s == BRAID_OK) decide_arenas(c);
    return s;
}

static br_cuda *new_ctx(const bp_plan *p) {
    br_cuda *c = calloc(1, sizeof *c);
    if (!c) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_exec_new: out of memory");
        return NULL;
    }
    c->plan = p;
    c->cur_dev = -1;
    c->allow_tf32 = p->in.opts.allow_tf32;
    const char *env = getenv("BRAID_CUDA_GRAPHS");
    c->graph.enabled = !(env && env[0] == '0');
    return c;
}

braid_status br_cuda_check_plan(const bp_plan *p, int sm, char *report,
                                size_t size) {
    br_cuda *c = new_ctx(p);
    if (!c) return BRAID_ERR_OUT_OF_MEMORY;
    c->dry = true;
    braid_status s = prepare(c);
    if (s == BRAID_OK) s = br_cuda_coll_init(c);
    if (s == BRAID_OK) s = br_cuda_check_kernels(c, sm);
    if (s == BRAID_OK) s = br_cuda_lt_prepare(c);
    if (s == BRAID_OK) s = br_graph_prepare(c);
    if (s == BRAID_OK && report && size) {
        uint32_t kinds[BR_NODE_COLL + 1] = {0};
        for (uint32_t i = 0; i < c->ngpu; i++)
            kinds[c->node[c->gpu_list[i]].kind]++;
        snprintf(report, size,
                 "%u GPU nodes (%u kernels, %u matmuls, %u matmul epilogues, "
                 "%u H2D, %u D2H, %u D2D, %u constant uploads, %u no-ops, "
                 "%u collectives), %u cpu nodes\n%s",
                 c->ngpu, kinds[BR_NODE_KERNEL], kinds[BR_NODE_GEMM],
                 kinds[BR_NODE_GEMM_EPI], kinds[BR_NODE_H2D],
                 kinds[BR_NODE_D2H], kinds[BR_NODE_D2D],
                 kinds[BR_NODE_CONST_H2D], kinds[BR_NODE_NOOP],
                 kinds[BR_NODE_COLL], c->ncpu,
                 c->log);
    }
    br_cuda_free(c);
    return s;
}

braid_status br_cuda_new(const bp_plan *p, br_cuda **out) {
    *out = NULL;
    br_cuda *c = new_ctx(p);
    if (!c) return BRAID_ERR_OUT_OF_MEMORY;
    braid_status s = check_devices(c);
    if (s == BRAID_OK) s = prepare(c);
    if (s == BRAID_OK) s = alloc_arenas(c);
    if (s == BRAID_OK) s = make_streams(c);
    if (s == BRAID_OK) s = make_events(c);
    if (s == BRAID_OK) s = enable_peers(c);
    if (s == BRAID_OK) s = br_cuda_coll_init(c);
    if (s == BRAID_OK) s = br_cuda_stage_init(c);
    if (s == BRAID_OK) s = br_cuda_upload_constants(c);
    if (s == BRAID_OK) s = br_cuda_load_kernels(c);
    if (s == BRAID_OK) s = br_cuda_lt_prepare(c);
    if (s == BRAID_OK) s = br_graph_prepare(c);
    if (s != BRAID_OK) {
        br_cuda_free(c);
        return s;
    }
    *out = c;
    return BRAID_OK;
}

static void free_queues(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        if (!c->stream || !c->stream[q]) continue;
        cudaSetDevice(p->res.queues[q].device.index);
        cudaStreamSynchronize(c->stream[q]);
        if (c->blas[q]) cublasDestroy(c->blas[q]);
        if (c->blas_ws[q]) cudaFree(c->blas_ws[q]);
        cudaStreamDestroy(c->stream[q]);
    }
}

static void free_memory(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t a = 0; c->arena && a < p->res.narenas; a++) {
        if (c->arena_kind[a] == 1) cudaFree(c->arena[a]);
        if (c->arena_kind[a] >= 2) cudaFreeHost(c->arena[a]);
    }
    for (uint32_t id = 0; id < p->res.ninfo; id++) {
        if (c->home && c->home[id]) cudaFree(c->home[id]);
    }
    for (uint32_t k = 0; c->event && k < p->res.nevents; k++)
        if (c->event[k]) cudaEventDestroy(c->event[k]);
}

void br_cuda_free(br_cuda *c) {
    if (!c) return;
    if (!c->dry) { /* a dry check made no CUDA objects */
        free_queues(c);
        br_cuda_coll_free(c);
        br_cuda_lt_free(c);
        br_graph_free(c);
        br_cuda_stage_free(c);
        br_cuda_free_kernels(c);
        free_memory(c);
        (void)cudaGetLastError();
    } else {
        br_cuda_lt_free(c); /* tables only */
        br_graph_free(c);
        bc_source_free(&c->src);
        free(c->kern);
        free(c->argv);
        free(c->argp);
    }
    free(c->arena);
    free(c->arena_kind);
    free(c->home);
    free(c->node);
    free(c->wstart);
    free(c->rstart);
    free(c->waits);
    free(c->recs);
    free(c->gpu_list);
    free(c->cpu_list);
    free(c->stream);
    free(c->blas);
    free(c->blas_ws);
    free(c->event);
    free(c->stage);
    free(c->cpu_done);
    free(c->pending);
    free(c->pend_list);
    free(c->coll_comm);
    free(c->comms);
    free(c);
}

void *br_cuda_arena(const br_cuda *c, uint32_t a) {
    return c && a < c->plan->res.narenas ? c->arena[a] : NULL;
}

void *br_cuda_home(const br_cuda *c, uint32_t id) {
    return c && id < c->plan->res.ninfo ? c->home[id] : NULL;
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
