/* runtime/cuda/cuda_graph.c — replaying a plan's GPU work as one CUDA graph.
 *
 * A plan's GPU part is static when, run after run, the same GPU work runs
 * on the same device addresses. Arenas, constants and kernel buffers never
 * move; what varies is the caller's host memory that copies read and
 * write. So in graph mode every H2D copy reads and every D2H copy writes a
 * fixed pinned host buffer: the tensor's own bytes when they lie in a
 * pinned arena, else a buffer allocated for the graph; the host copies the
 * caller's bytes in before the launch and out after it (on the executor's
 * threads). That costs a host memcpy per byte, so graphs are used only when
 * those bytes are few (BR_GRAPH_STAGING_MAX); large transfers stream
 * through the staging slots, where launch overhead does not matter.
 *
 * Conditions (checked at creation; the log says which one failed):
 *   - the GPU work runs on one GPU;
 *   - in CPU-queue order, every CPU node that GPU work depends on comes
 *     before every CPU node that depends on GPU work (no GPU → CPU → GPU
 *     round trip): the first group runs before the launch, the second after
 *     it, the CPU queue keeps its order;
 *   - copies touch no pageable arena.
 * And per run (br_graph_bindings_match): the caller's host bytes the
 * copies stage stay within BR_GRAPH_STAGING_MAX (bytes read or written in
 * device memory by the graph itself do not count).
 * The first run is the warm-up (ordinary dispatch: cuBLAS picks its
 * kernels, modules load). From the second on, the dispatcher
 * (runtime/dispatch.h) issues every GPU node as one unit (cuda_run.c's
 * span), once the CPU nodes GPU work waits for have run: the second run
 * captures the GPU nodes, issued as usual, by stream capture: the origin stream
 * forks every other stream at the start and joins them at the end, events
 * become graph edges. Later runs replay with cudaGraphLaunch. An input or
 * output bound to device memory on the copy's GPU is read or written by
 * the graph itself, at the address bound during the capture
 * (br_graph_state.bound): later runs replay when they bind the same device
 * buffers (a serving loop or benchmark reusing its buffers, as PyTorch's
 * CUDA graphs require) and host memory for every other copy; any other
 * run dispatches node by node (br_graph_bindings_match). A failed capture
 * is logged and never retried. The host waits for the graph (and copies its
 * outputs out) before the first CPU node that waits for a GPU node (the
 * dispatcher's host wait), else when the run is finished (br_graph_finish from
 * br_cuda_run_finish, i.e. braid_wait). While the executor profiles, no graph
 * is captured or replayed: every node must be timed on its own
 * (runtime/profile/profile.h). */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"
#include "runtime/profile/profile.h"

#ifdef BRAID_HAVE_CUDA

#include <stdlib.h>

static const char *const WHERE = "braid_run";

/* ---- dependencies -------------------------------------------------------- */

/* node[].gpu_dep: the node runs after GPU work (through data or events);
 * node[].feeds_gpu: GPU work runs after it. GPU nodes are both. */
static void dependencies(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        br_cnode *cn = &c->node[id];
        const bg_node *n = bg_node_at(p->res.graph, id);
        cn->gpu_dep = cn->kind != BR_NODE_CPU;
        for (uint32_t k = 0; k < n->ninputs; k++)
            cn->gpu_dep |= c->node[n->inputs[k]].gpu_dep;
        for (uint32_t k = c->sched->wstart[id]; k < c->sched->wstart[id + 1];
             k++)
            cn->gpu_dep |=
                c->node[p->res.events[c->sched->waits[k]].after].gpu_dep;
    }
    for (uint32_t i = p->res.nschedule; i-- > 0;) {
        uint32_t id = p->res.schedule[i];
        br_cnode *cn = &c->node[id];
        cn->feeds_gpu |= cn->kind != BR_NODE_CPU;
        if (!cn->feeds_gpu) continue;
        const bg_node *n = bg_node_at(p->res.graph, id);
        for (uint32_t k = 0; k < n->ninputs; k++)
            c->node[n->inputs[k]].feeds_gpu = true;
        for (uint32_t k = c->sched->wstart[id]; k < c->sched->wstart[id + 1];
             k++)
            c->node[p->res.events[c->sched->waits[k]].after].feeds_gpu = true;
    }
}

/* NULL when the GPU part is static, else why not. */
static const char *why_not_static(br_cuda *c, char *buf, size_t size) {
    const bp_plan *p = c->plan;
    int dev = -1;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        int d = c->node[c->sched->dev_list[i]].dev;
        if (dev >= 0 && d != dev) return "the GPU work spans several GPUs";
        dev = d;
    }
    uint32_t last_feed = 0, first_dep = c->sched->ncpu;
    for (uint32_t i = 0; i < c->sched->ncpu; i++) {
        const br_cnode *cn = &c->node[c->sched->cpu_list[i]];
        if (cn->feeds_gpu) last_feed = i + 1;
        if (cn->gpu_dep && first_dep == c->sched->ncpu) first_dep = i;
    }
    if (last_feed > first_dep) {
        snprintf(buf, size,
                 "cpu node %u waits for GPU work and GPU work waits for cpu "
                 "node %u after it (a GPU → CPU → GPU round trip)",
                 c->sched->cpu_list[first_dep],
                 c->sched->cpu_list[last_feed - 1]);
        return buf;
    }
    c->graph.npre = last_feed;
    for (uint32_t a = 0; a < p->res.narenas; a++)
        if (p->res.arenas[a].device.kind == BP_DEVICE_CPU &&
            c->mem.kind[a] == 0) {
            for (uint32_t i = 0; i < c->sched->ndev; i++) {
                uint32_t id = c->sched->dev_list[i], t = BG_NONE;
                if (c->node[id].kind == BR_NODE_H2D)
                    t = br_root(p, bg_node_at(p->res.graph, id)->inputs[0],
                                NULL);
                else if (c->node[id].kind == BR_NODE_D2H)
                    t = br_root(p, id, NULL);
                if (t != BG_NONE &&
                    p->res.info[t].place.storage == BP_STORAGE_ARENA &&
                    p->res.info[t].place.arena == a) {
                    snprintf(buf, size,
                             "copies use cpu arena %u, which is "
                             "not pinned",
                             a);
                    return buf;
                }
            }
        }
    return NULL;
}

braid_status br_graph_prepare(br_cuda *c) {
    br_graph_state *g = &c->graph;
    uint32_t n = c->plan->res.ninfo,
             nq = c->plan->res.nqueues ? c->plan->res.nqueues : 1;
    dependencies(c);
    char buf[256];
    bool coll = false;
    for (uint32_t i = 0; i < c->sched->ndev; i++)
        coll |= c->node[c->sched->dev_list[i]].kind == BR_NODE_COLL;
    const char *why = c->sched->ndev == 0 ? "no GPU work"
                      : coll ? "collectives (NCCL) are issued directly"
                             : why_not_static(c, buf, sizeof buf);
    if (why) {
        br_cuda_logf(c, "graph: not used: %s", why);
        return BRAID_OK;
    }
    g->src = calloc(n, sizeof *g->src);
    g->dst = calloc(n, sizeof *g->dst);
    g->owned = calloc(n, sizeof *g->owned);
    g->bound = calloc(n, sizeof *g->bound);
    g->join = calloc(nq, sizeof *g->join);
    if (!g->src || !g->dst || !g->owned || !g->bound || !g->join)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    g->static_plan = true;
    g->origin = c->node[c->sched->dev_list[0]].queue;
    br_cuda_logf(c,
                 "graph: static GPU part (%u GPU nodes, %u cpu nodes "
                 "before the launch); captured on the second run",
                 c->sched->ndev, g->npre);
    return BRAID_OK;
}

void br_graph_free(br_cuda *c) {
    br_graph_state *g = &c->graph;
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    for (uint32_t id = 0; g->owned && id < c->plan->res.ninfo; id++)
        if (g->owned[id]) cudaFreeHost(g->src[id] ? g->src[id] : g->dst[id]);
    for (uint32_t q = 0; g->join && q < c->plan->res.nqueues; q++)
        if (g->join[q]) cudaEventDestroy(g->join[q]);
    if (g->fork) cudaEventDestroy(g->fork);
    free(g->src);
    free(g->dst);
    free(g->owned);
    free(g->bound);
    free(g->join);
}

/* ---- fixed buffers ------------------------------------------------------- */

/* Tensor t's bytes (plus off) when they lie in a pinned arena, else NULL. */
static void *pinned_home(const br_cuda *c, uint32_t t, uint64_t off) {
    const bp_tensor_place *pl = &c->plan->res.info[t].place;
    if (pl->storage != BP_STORAGE_ARENA || c->mem.kind[pl->arena] != 2)
        return NULL;
    return (char *)c->mem.arena[pl->arena] + pl->offset + off;
}

/* The caller's buffer copy id reads (H2D) or writes (D2H) this run. */
static const void *caller_buffer(const br_cuda *c, uint32_t id) {
    return c->node[id].kind == BR_NODE_H2D
               ? c->run.args->ptr[bg_node_at(c->plan->res.graph, id)->inputs[0]]
               : c->run.args->ptr[id];
}

/* Whether this run's buffer for copy id is device memory on the copy's
 * GPU (the graph may read or write it itself). */
static bool on_copy_gpu(const br_cuda *c, uint32_t id, const void *buf) {
    int dev = -1;
    return buf && br_pointer_kind(buf, &dev) == 2 && dev == c->node[id].dev;
}

bool br_graph_bindings_match(br_cuda *c) {
    br_graph_state *g = &c->graph;
    uint64_t staged = 0; /* host bytes the graph's copies would stage */
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        br_node_kind k = c->node[id].kind;
        if (k != BR_NODE_H2D && k != BR_NODE_D2H) continue;
        const void *buf = caller_buffer(c, id);
        int dev = -1;
        bool device = buf && br_pointer_kind(buf, &dev) == 2;
        if (!g->exec) { /* this run captures: device memory on its GPU */
            if (device && dev != c->node[id].dev) return false;
        } else if (g->bound[id] ? buf != g->bound[id] : device) {
            return false;
        }
        if (!device) staged += bg_nbytes(bg_node_at(c->plan->res.graph, id));
    }
    if (staged <= BR_GRAPH_STAGING_MAX) return true;
    if (!g->staging_logged)
        br_cuda_logf(c,
                     "graph: not used for runs whose copies move %llu host "
                     "bytes per run (graphs only up to %llu; above that the "
                     "staged copies overlap host memcpys)",
                     (unsigned long long)staged,
                     (unsigned long long)BR_GRAPH_STAGING_MAX);
    g->staging_logged = true;
    return false;
}

/* Chooses (allocating when needed) the fixed buffer of every H2D / D2H
 * that does not read or write the caller's device buffer itself. */
static braid_status fixed_buffers(br_cuda *c) {
    const bp_plan *p = c->plan;
    br_graph_state *g = &c->graph;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        br_node_kind k = c->node[id].kind;
        if (k != BR_NODE_H2D && k != BR_NODE_D2H) continue;
        const void *caller = caller_buffer(c, id);
        g->bound[id] = on_copy_gpu(c, id, caller) ? caller : NULL;
        if (g->bound[id] || g->src[id] || g->dst[id]) continue;
        uint64_t off = 0; /* D2H: its own bytes may be a view (concat) */
        uint32_t t = br_root(
            p, k == BR_NODE_H2D ? bg_node_at(p->res.graph, id)->inputs[0] : id,
            &off);
        void *buf = pinned_home(c, t, off);
        if (!buf) {
            size_t bytes = bg_nbytes(bg_node_at(p->res.graph, id));
            braid_status s =
                br_cu(c, WHERE, id, "cudaHostAlloc (graph staging)",
                      cudaHostAlloc(&buf, bytes ? bytes : 256,
                                    cudaHostAllocPortable));
            if (s != BRAID_OK) return s;
            g->owned[id] = true;
        }
        if (k == BR_NODE_H2D)
            g->src[id] = buf;
        else
            g->dst[id] = buf;
    }
    return BRAID_OK;
}

/* ---- capture ------------------------------------------------------------- */

static braid_status fork_join_events(br_cuda *c) {
    br_graph_state *g = &c->graph;
    braid_status s = BRAID_OK;
    if (!g->fork)
        s = br_cu(c, WHERE, BG_NONE, "cudaEventCreateWithFlags",
                  cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming));
    for (uint32_t q = 0; s == BRAID_OK && q < c->plan->res.nqueues; q++)
        if (br_cuda_stream(c, q) && q != g->origin && !g->join[q])
            s = br_cu(
                c, WHERE, BG_NONE, "cudaEventCreateWithFlags",
                cudaEventCreateWithFlags(&g->join[q], cudaEventDisableTiming));
    return s;
}

/* Issues every GPU node between the fork and the join. */
static braid_status capture_body(br_cuda *c) {
    br_graph_state *g = &c->graph;
    cudaStream_t origin = br_cuda_stream(c, g->origin);
    braid_status s = br_cu(c, WHERE, BG_NONE, "cudaEventRecord (fork)",
                           cudaEventRecord(g->fork, origin));
    for (uint32_t q = 0; s == BRAID_OK && q < c->plan->res.nqueues; q++)
        if (br_cuda_stream(c, q) && q != g->origin)
            s = br_cu(c, WHERE, BG_NONE, "cudaStreamWaitEvent (fork)",
                      cudaStreamWaitEvent(br_cuda_stream(c, q), g->fork, 0));
    c->run.capturing = true;
    for (uint32_t i = 0; s == BRAID_OK && i < c->sched->ndev; i++)
        s = br_cuda_issue(c, c->sched->dev_list[i]);
    c->run.capturing = false;
    for (uint32_t q = 0; s == BRAID_OK && q < c->plan->res.nqueues; q++) {
        if (!br_cuda_stream(c, q) || q == g->origin) continue;
        s = br_cu(c, WHERE, BG_NONE, "cudaEventRecord (join)",
                  cudaEventRecord(g->join[q], br_cuda_stream(c, q)));
        if (s == BRAID_OK)
            s = br_cu(c, WHERE, BG_NONE, "cudaStreamWaitEvent (join)",
                      cudaStreamWaitEvent(origin, g->join[q], 0));
    }
    return s;
}

/* Captures and instantiates the graph. A failure here is not the run's:
 * it is logged, graphs are off for this executor, and *ok stays false. */
static braid_status capture(br_cuda *c, bool *ok) {
    br_graph_state *g = &c->graph;
    *ok = false;
    braid_status s = fixed_buffers(c);
    if (s == BRAID_OK) s = fork_join_events(c);
    if (s != BRAID_OK) return s;
    cudaStream_t origin = br_cuda_stream(c, g->origin);
    s = br_cuda_use(c, WHERE, BG_NONE,
                    c->plan->res.queues[g->origin].device.index);
    if (s != BRAID_OK) return s;
    g->captured = true; /* before: a failed capture may record events */
    cudaError_t err =
        cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal);
    if (err == cudaSuccess) {
        s = capture_body(c);
        err = cudaStreamEndCapture(origin, &g->graph);
        if (s == BRAID_OK && err == cudaSuccess)
            err = cudaGraphInstantiate(&g->exec, g->graph, 0);
    }
    if (s == BRAID_OK && err == cudaSuccess) {
        size_t nodes = 0;
        cudaGraphGetNodes(g->graph, NULL, &nodes);
        br_cuda_logf(c, "graph: captured %zu graph nodes from %u GPU nodes",
                     nodes, c->sched->ndev);
        *ok = true;
        return BRAID_OK;
    }
    br_cuda_logf(c, "graph: capture failed, not used again: %s",
                 s != BRAID_OK ? braid_last_error() : cudaGetErrorString(err));
    (void)cudaGetLastError();
    if (g->graph) cudaGraphDestroy(g->graph);
    g->graph = NULL;
    g->exec = NULL;
    g->failed = true;
    c->run.capturing = false;
    return BRAID_OK;
}

/* ---- replay -------------------------------------------------------------- */

/* Copies the caller's bytes into the fixed buffers the graph reads. */
static void copy_in(br_cuda *c) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (c->node[id].kind != BR_NODE_H2D || c->graph.bound[id]) continue;
        const void *from =
            c->run.args->ptr[bg_node_at(p->res.graph, id)->inputs[0]];
        br_parallel_memcpy(c->run.args->pool, c->graph.src[id], from,
                           bg_nbytes(bg_node_at(p->res.graph, id)));
    }
}

/* Waits for the graph, then copies what it wrote to the run's places. */
static braid_status finish(br_cuda *c) {
    const bp_plan *p = c->plan;
    braid_status s =
        br_cu(c, WHERE, BG_NONE, "cudaStreamSynchronize (graph)",
              cudaStreamSynchronize(br_cuda_stream(c, c->graph.origin)));
    for (uint32_t i = 0; s == BRAID_OK && i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (c->node[id].kind == BR_NODE_D2H && !c->graph.bound[id])
            br_parallel_memcpy(c->run.args->pool, c->run.args->ptr[id],
                               c->graph.dst[id],
                               bg_nbytes(bg_node_at(p->res.graph, id)));
    }
    return s;
}

bool br_graph_wanted(const br_cuda *c) {
    const br_graph_state *g = &c->graph;
    return g->enabled && g->static_plan && !g->failed && g->runs >= 1 &&
           !c->run.args->prof;
}

/* Issues every GPU node the ordinary way (this run's capture failed). */
static braid_status issue_each(br_cuda *c) {
    braid_status s = BRAID_OK;
    c->run.graph = false;
    for (uint32_t i = 0; s == BRAID_OK && i < c->sched->ndev; i++)
        s = br_cuda_issue(c, c->sched->dev_list[i]);
    return s;
}

braid_status br_graph_launch(br_cuda *c) {
    br_graph_state *g = &c->graph;
    if (!g->exec) {
        bool ok = false;
        braid_status s = capture(c, &ok);
        if (s != BRAID_OK) return s;
        if (!ok) return issue_each(c);
    }
    copy_in(c);
    braid_status s = br_cuda_use(c, WHERE, BG_NONE,
                                 c->plan->res.queues[g->origin].device.index);
    if (s == BRAID_OK)
        s = br_cu(c, WHERE, BG_NONE, "cudaGraphLaunch",
                  cudaGraphLaunch(g->exec, br_cuda_stream(c, g->origin)));
    g->unfinished = s == BRAID_OK;
    return s;
}

braid_status br_graph_finish(br_cuda *c) {
    br_graph_state *g = &c->graph;
    braid_status s = finish(c);
    g->unfinished = false;
    g->used_last = s == BRAID_OK;
    return s;
}

#else
typedef int br_cuda_graph_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
