/* runtime/profile/profile_cuda.c — timing GPU nodes with CUDA events.
 *
 * When profiling is turned on, every GPU node that does work per run (a
 * kernel, a cuBLAS / cuBLASLt matmul, a copy) gets a pair of timing events,
 * created once, and every GPU a base event. A run records the base events
 * first (each on an idle stream of its GPU, waited for, its host time
 * noted), then cuda_run.c records a node's start event after its event
 * waits and its end event after its work, on its stream; a copy deferred
 * until later (a D2H into pageable memory) records both when it is
 * flushed. Once every stream is done (braid_wait) the pairs are read with
 * cudaEventElapsedTime: a node's duration is end - start, and its place on
 * the host clock is the base's host time plus start - base. The host time
 * is noted after the base event completed, so GPU spans may sit up to that
 * wait's latency (microseconds) late, never early. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"
#include "runtime/profile/profile.h"

#ifdef BRAID_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

/* The GPU side of a profiler. */
typedef struct br_prof_gpu {
    uint32_t n;           /* plan nodes */
    cudaEvent_t *start;   /* per node: recorded before its work, or NULL
                             for nodes not timed on a GPU */
    cudaEvent_t *end;     /* per node: recorded after its work */
    uint8_t *marked;      /* per node, this run: 1 start recorded, 2 end */
    int ndev;             /* entries below (CUDA devices present) */
    cudaEvent_t *base;    /* per device: the run's time origin, or NULL
                             for a device the plan does not use */
    int64_t *base_host;   /* per device: host time (ns) of base */
} br_prof_gpu;

/* Kinds of node that do work on a GPU every run. */
static bool timed(br_node_kind k) {
    return k == BR_NODE_KERNEL || k == BR_NODE_GEMM ||
           k == BR_NODE_GEMM_EPI || k == BR_NODE_H2D || k == BR_NODE_D2H ||
           k == BR_NODE_D2D || k == BR_NODE_CONV;
}

/* A stream of device d (the first queue on it), or NULL. */
static cudaStream_t stream_on(const br_cuda *c, int d) {
    for (uint32_t q = 0; q < c->plan->res.nqueues; q++)
        if (br_cuda_stream(c, q) &&
            c->plan->res.queues[q].device.kind == BP_DEVICE_CUDA &&
            c->plan->res.queues[q].device.index == d)
            return br_cuda_stream(c, q);
    return NULL;
}

static braid_status create(br_cuda *c, uint32_t id, int dev, cudaEvent_t *ev) {
    const char *where = "braid_exec_set_profiling";
    braid_status s = br_cuda_use(c, where, id, dev);
    if (s == BRAID_OK)
        s = br_cu(c, where, id, "cudaEventCreateWithFlags (profile)",
                  cudaEventCreateWithFlags(ev, cudaEventDefault));
    return s;
}

static braid_status create_all(br_prof_gpu *g, br_cuda *c) {
    braid_status s = BRAID_OK;
    for (uint32_t id = 0; s == BRAID_OK && id < g->n; id++) {
        const br_cnode *cn = &c->node[id];
        if (!timed(cn->kind) || cn->dev < 0) continue;
        s = create(c, id, cn->dev, &g->start[id]);
        if (s == BRAID_OK) s = create(c, id, cn->dev, &g->end[id]);
    }
    for (int d = 0; s == BRAID_OK && d < g->ndev; d++)
        if (stream_on(c, d)) s = create(c, BG_NONE, d, &g->base[d]);
    return s;
}

braid_status br_prof_cuda_init(br_prof *pf, br_cuda *c) {
    void **slot = br_prof_gpu_slot(pf);
    if (!c || c->dry || *slot) return BRAID_OK;
    br_prof_gpu *g = calloc(1, sizeof *g);
    if (g) {
        g->n = c->plan->res.ninfo;
        g->ndev = c->ndev > 0 ? c->ndev : 1;
        g->start = calloc(g->n ? g->n : 1, sizeof *g->start);
        g->end = calloc(g->n ? g->n : 1, sizeof *g->end);
        g->marked = calloc(g->n ? g->n : 1, sizeof *g->marked);
        g->base = calloc((size_t)g->ndev, sizeof *g->base);
        g->base_host = calloc((size_t)g->ndev, sizeof *g->base_host);
    }
    *slot = g;
    if (!g || !g->start || !g->end || !g->marked || !g->base ||
        !g->base_host) {
        br_prof_cuda_free(pf, c);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_set_profiling: out of memory");
    }
    c->cur_dev = -1; /* this may be another thread than the last call's */
    braid_status s = create_all(g, c);
    if (s != BRAID_OK) br_prof_cuda_free(pf, c);
    return s;
}

void br_prof_cuda_free(br_prof *pf, br_cuda *c) {
    (void)c;
    if (!pf) return;
    void **slot = br_prof_gpu_slot(pf);
    br_prof_gpu *g = *slot;
    if (!g) return;
    for (uint32_t id = 0; id < g->n; id++) {
        if (g->start && g->start[id]) cudaEventDestroy(g->start[id]);
        if (g->end && g->end[id]) cudaEventDestroy(g->end[id]);
    }
    for (int d = 0; g->base && d < g->ndev; d++)
        if (g->base[d]) cudaEventDestroy(g->base[d]);
    free(g->start);
    free(g->end);
    free(g->marked);
    free(g->base);
    free(g->base_host);
    free(g);
    *slot = NULL;
}

braid_status br_prof_cuda_begin(br_prof *pf, br_cuda *c) {
    br_prof_gpu *g = pf && c ? *br_prof_gpu_slot(pf) : NULL;
    if (!g) return BRAID_OK;
    const char *where = "braid_run";
    memset(g->marked, 0, g->n ? g->n : 1);
    c->cur_dev = -1; /* this may be another thread than the last run's */
    braid_status s = BRAID_OK;
    for (int d = 0; s == BRAID_OK && d < g->ndev; d++) {
        if (!g->base[d]) continue;
        s = br_cuda_use(c, where, BG_NONE, d);
        if (s == BRAID_OK)
            s = br_cu(c, where, BG_NONE, "cudaEventRecord (profile base)",
                      cudaEventRecord(g->base[d], stream_on(c, d)));
        if (s == BRAID_OK)
            s = br_cu(c, where, BG_NONE, "cudaEventSynchronize (profile base)",
                      cudaEventSynchronize(g->base[d]));
        g->base_host[d] = br_prof_now_ns();
    }
    return s;
}

braid_status br_prof_cuda_mark(br_prof *pf, br_cuda *c, uint32_t id,
                               bool end) {
    br_prof_gpu *g = *br_prof_gpu_slot(pf);
    if (!g || id >= g->n || !g->start[id]) return BRAID_OK;
    const br_cnode *cn = &c->node[id];
    braid_status s = br_cuda_use(c, "braid_run", id, cn->dev);
    if (s == BRAID_OK)
        s = br_cu(c, "braid_run", id,
                  end ? "cudaEventRecord (profile end)"
                      : "cudaEventRecord (profile start)",
                  cudaEventRecord(end ? g->end[id] : g->start[id],
                                  br_cuda_stream(c, cn->queue)));
    if (s == BRAID_OK) g->marked[id] |= end ? 2 : 1;
    return s;
}

/* Milliseconds from a to b, into *ms. */
static braid_status elapsed(br_cuda *c, uint32_t id, cudaEvent_t a,
                            cudaEvent_t b, float *ms) {
    return br_cu(c, "braid_wait", id, "cudaEventElapsedTime (profile)",
                 cudaEventElapsedTime(ms, a, b));
}

braid_status br_prof_cuda_collect(br_prof *pf, br_cuda *c) {
    br_prof_gpu *g = pf && c ? *br_prof_gpu_slot(pf) : NULL;
    if (!g) return BRAID_OK;
    braid_status s = BRAID_OK;
    for (uint32_t id = 0; s == BRAID_OK && id < g->n; id++) {
        const br_cnode *cn = &c->node[id];
        if (g->marked[id] != 3 || cn->dev < 0 || cn->dev >= g->ndev ||
            !g->base[cn->dev])
            continue;
        float from_base = 0, dur = 0;
        s = br_cuda_use(c, "braid_wait", id, cn->dev);
        if (s == BRAID_OK)
            s = elapsed(c, id, g->base[cn->dev], g->start[id], &from_base);
        if (s == BRAID_OK) s = elapsed(c, id, g->start[id], g->end[id], &dur);
        if (s != BRAID_OK) break;
        int64_t t0 = g->base_host[cn->dev] + (int64_t)((double)from_base * 1e6);
        br_prof_span(pf, id, cn->queue, t0, t0 + (int64_t)((double)dur * 1e6),
                     true);
    }
    return s;
}

#else /* no CUDA: nothing runs on a GPU, nothing to time there */

braid_status br_prof_cuda_init(br_prof *pf, br_cuda *c) {
    (void)pf;
    (void)c;
    return BRAID_OK;
}

void br_prof_cuda_free(br_prof *pf, br_cuda *c) {
    (void)pf;
    (void)c;
}

braid_status br_prof_cuda_begin(br_prof *pf, br_cuda *c) {
    (void)pf;
    (void)c;
    return BRAID_OK;
}

braid_status br_prof_cuda_mark(br_prof *pf, br_cuda *c, uint32_t id,
                               bool end) {
    (void)pf;
    (void)c;
    (void)id;
    (void)end;
    return BRAID_OK;
}

braid_status br_prof_cuda_collect(br_prof *pf, br_cuda *c) {
    (void)pf;
    (void)c;
    return BRAID_OK;
}

#endif /* BRAID_HAVE_CUDA */
