/* runtime/cuda/cuda_run.c — the CUDA backend as the dispatcher's queues
 * (runtime/dispatch.h): one run of a plan with GPU nodes.
 *
 * The dispatcher walks the schedule; this file does what it asks on the
 * GPUs: issue a node (cudaStreamWaitEvent for each event it waits on, its
 * work, cudaEventRecord for each event it records), issue a collective
 * group inside one NCCL group, replay the whole GPU part as a CUDA graph
 * (cuda_graph.c: the span of the first GPU node is then every GPU node),
 * and make the host wait for a GPU producer before a CPU node reads it (a
 * deferred D2H copy is completed then, else its event is synchronised).
 * br_cuda_run_start prepares a run (bindings, graph or not);
 * br_cuda_run_finish (braid_wait) ends it by finishing deferred copies and
 * synchronising every stream: outputs are ready when it returns.
 *
 * Profiling (runtime/profile/profile.h): when the run's executor profiles
 * (run args' prof), each GPU node records a start event after its waits
 * and an end event after its work; a deferred copy records both when it is
 * flushed, one copy at a time. Host threads' shares of staging memcpys
 * count for the copy. When off, the cost per node is one branch. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"
#include "runtime/profile/profile.h"

#ifdef BRAID_HAVE_CUDA

#include <string.h>

static const char *const WHERE = "braid_run";

/* ---- issuing a GPU node -------------------------------------------------- */

static braid_status do_work(br_cuda *c, uint32_t id, cudaStream_t s) {
    switch (c->node[id].kind) {
    case BR_NODE_KERNEL:
        return br_cuda_launch(c, id, s);
    case BR_NODE_GEMM:
        return br_cuda_gemm(c, id, c->run.args->ptr[id]);
    case BR_NODE_GEMM_EPI: {
        bool done = false; /* cuBLASLt did product and epilogue in one */
        braid_status r = c->node[id].lt != BG_NONE
                             ? br_cuda_lt_matmul(c, id, s, &done)
                             : BRAID_OK;
        if (r != BRAID_OK || done) return r;
        r = br_cuda_gemm(c, id, br_cuda_matmul_target(c, id));
        return r == BRAID_OK ? br_cuda_launch(c, id, s) : r;
    }
    case BR_NODE_H2D:
    case BR_NODE_D2H:
    case BR_NODE_D2D:
        return br_cuda_copy(c, id);
    case BR_NODE_CONV: /* conv ops */
        return br_cuda_conv_run(c, id, s);
    default: /* NOOP, CONST_H2D: nothing per run */
        return BRAID_OK;
    }
}

/* br_cuda_flush(c, q, upto), each deferred copy timed when pf is set. */
static braid_status flush(br_cuda *c, br_prof *pf, uint32_t q, uint32_t upto) {
    if (!pf) return br_cuda_flush(c, q, upto);
    braid_status r = BRAID_OK;
    for (uint32_t i = 0; r == BRAID_OK && i < c->copy.npend; i++) {
        uint32_t id = c->copy.pend_list[i];
        if (!c->copy.pending[id] || (q != BG_NONE && c->node[id].queue != q))
            continue;
        r = br_prof_cuda_mark(pf, c, id, false);
        if (r == BRAID_OK) r = br_cuda_flush(c, c->node[id].queue, id);
        if (r == BRAID_OK) r = br_prof_cuda_mark(pf, c, id, true);
        br_prof_take_workers(pf, c->run.args->pool, id);
        if (id == upto) break;
    }
    return r;
}

braid_status br_cuda_wait_events(br_cuda *c, uint32_t id) {
    cudaStream_t s = br_cuda_stream(c, c->node[id].queue);
    braid_status r = br_cuda_use(c, WHERE, id, c->node[id].dev);
    for (uint32_t k = c->sched->wstart[id];
         r == BRAID_OK && k < c->sched->wstart[id + 1]; k++) {
        cudaEvent_t ev = c->q.event[c->sched->waits[k]];
        if (ev) /* NULL: a CPU producer, which has run already */
            r = br_cu(c, WHERE, id, "cudaStreamWaitEvent",
                      cudaStreamWaitEvent(s, ev, 0));
    }
    return r;
}

braid_status br_cuda_record_events(br_cuda *c, uint32_t id) {
    cudaStream_t s = br_cuda_stream(c, c->node[id].queue);
    braid_status r = br_cuda_use(c, WHERE, id, c->node[id].dev);
    for (uint32_t k = c->sched->rstart[id];
         r == BRAID_OK && k < c->sched->rstart[id + 1]; k++) {
        cudaEvent_t ev = c->q.event[c->sched->recs[k]];
        if (ev)
            r = br_cu(c, WHERE, id, "cudaEventRecord", cudaEventRecord(ev, s));
    }
    return r;
}

braid_status br_cuda_issue(br_cuda *c, uint32_t id) {
    const br_cnode *cn = &c->node[id];
    cudaStream_t s = br_cuda_stream(c, cn->queue);
    br_prof *pf = c->run.args->prof;
    braid_status r = BRAID_OK;
    if (c->copy.npend > 0) /* deferred copies keep their place in the stream */
        r = flush(c, pf, cn->queue, BG_NONE);
    if (r == BRAID_OK) r = br_cuda_wait_events(c, id);
    if (pf && r == BRAID_OK) r = br_prof_cuda_mark(pf, c, id, false);
    if (r == BRAID_OK) r = do_work(c, id, s);
    if (r != BRAID_OK || c->copy.pending[id])
        return r; /* a deferred copy records its events when done */
    if (pf) {
        r = br_prof_cuda_mark(pf, c, id, true);
        br_prof_take_workers(pf, c->run.args->pool, id); /* staging memcpys */
    }
    if (r == BRAID_OK) r = br_cuda_record_events(c, id);
    return r;
}

/* ---- the end of a run ---------------------------------------------------- */

braid_status br_cuda_sync_all(br_cuda *c, braid_status st) {
    const bp_plan *p = c->plan;
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        if (!br_cuda_stream(c, q)) continue;
        braid_status r =
            br_cuda_use(c, WHERE, BG_NONE, p->res.queues[q].device.index);
        if (r == BRAID_OK)
            r = br_cu(c, WHERE, BG_NONE, "cudaStreamSynchronize",
                      cudaStreamSynchronize(br_cuda_stream(c, q)));
        if (st == BRAID_OK) st = r;
    }
    return st;
}

static braid_status flush_all(br_cuda *c) {
    braid_status r = flush(c, c->run.args->prof, BG_NONE, BG_NONE);
    c->copy.npend = 0;
    return r;
}

/* ---- bindings ------------------------------------------------------------ */

/* A CPU node that computes from node id's bytes (directly or through
 * views), or BG_NONE. */
static uint32_t cpu_reader(const br_cuda *c, uint32_t id) {
    const bp_plan *p = c->plan;
    for (uint32_t i = 0; i < c->sched->ncpu; i++) {
        uint32_t u = c->sched->cpu_list[i];
        if (br_node_noop(p, u)) continue;
        const bg_node *n = bg_node_at(p->res.graph, u);
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (br_root(p, n->inputs[k], NULL) == id) return u;
    }
    return BG_NONE;
}

static uint32_t io_node(const bp_io *io, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(io[i].name, name) == 0) return io[i].node;
    return BG_NONE;
}

bool br_cuda_device_output_in_place(const br_cuda *c, uint32_t id) {
    return c && id < c->plan->res.ninfo && c->node[id].kind == BR_NODE_D2H &&
           cpu_reader(c, id) == BG_NONE;
}

/* Device memory is accepted for an input that only copies to a GPU read
 * (the copy becomes device → device, peer when the GPUs differ), never
 * for one a CPU node reads: the host would dereference device memory.
 * Outputs in device memory are always accepted: exec.c writes them in
 * place only through a D2H copy (br_cuda_device_output_in_place), else
 * copies them out with cudaMemcpy. Sets *device when some binding is
 * device memory (the run replays the CUDA graph only with the device
 * buffers it was captured with: br_graph_bindings_match). */
static braid_status check_bindings(br_cuda *c, bool *device) {
    const bp_plan *p = c->plan;
    const br_cuda_run_args *a = c->run.args;
    *device = false;
    for (size_t i = 0; i < a->nin; i++) {
        int dev = -1;
        if (a->in[i].bytes == 0 || br_pointer_kind(a->in[i].data, &dev) != 2)
            continue;
        *device = true;
        uint32_t id = io_node(p->res.inputs, p->res.ninputs, a->in[i].name);
        uint32_t u = id == BG_NONE ? BG_NONE : cpu_reader(c, id);
        if (u != BG_NONE)
            return bg_set_last_error(
                BRAID_ERR_INVALID_ARGUMENT,
                "braid_run: input \"%s\" is device memory on cuda:%d, but "
                "node %%%u (%s) reads it on the cpu: bind host memory, or "
                "place that node on a GPU",
                a->in[i].name, dev, u,
                bg_op(bg_node_at(p->res.graph, u)->op)->name);
    }
    for (size_t j = 0; !*device && j < a->nout; j++)
        *device = a->out[j].bytes > 0 &&
                  br_pointer_kind(a->out[j].data, NULL) == 2;
    return BRAID_OK;
}

/* A run binding device memory other than the graph was captured with
 * dispatches the ordinary way: the graph reads and writes the device
 * buffers bound at its capture, and copies host memory through fixed
 * pinned buffers. Logged once. */
static void skip_graph(br_cuda *c) {
    br_graph_state *g = &c->graph;
    if (g->device_logged || !g->enabled || !g->static_plan || g->failed)
        return;
    g->device_logged = true;
    br_cuda_logf(c, "graph: not replayed for a run binding other device "
                    "buffers than the capture (the graph reads and writes "
                    "the device buffers bound then); such runs dispatch "
                    "node by node");
}

/* ---- the dispatcher's queues --------------------------------------------- */

static uint32_t cuda_span(void *q, uint32_t i) {
    br_cuda *c = q;
    if (c->run.graph && i == 0) return c->sched->ndev; /* one replay */
    uint32_t m = br_cuda_coll_span(c, i);
    return m ? m : 1;
}

static braid_status cuda_issue(void *q, const uint32_t *ids, uint32_t m) {
    br_cuda *c = q;
    if (c->run.graph) return br_graph_launch(c);
    if (c->node[ids[0]].kind == BR_NODE_COLL)
        return br_cuda_coll_issue(c, ids, m);
    braid_status r = BRAID_OK;
    for (uint32_t i = 0; r == BRAID_OK && i < m; i++)
        r = br_cuda_issue(c, ids[i]);
    return r;
}

static braid_status cuda_host_wait(void *q, uint32_t producer, uint32_t ev,
                                   uint32_t consumer) {
    br_cuda *c = q;
    if (c->run.graph && c->graph.exec) {
        /* the replay holds every GPU node: the first wait finishes it and
           later ones have nothing to wait for (the plan's events were
           recorded inside the capture: synchronising on them fails) */
        return c->graph.unfinished ? br_graph_finish(c) : BRAID_OK;
    }
    if (c->copy.pending[producer])
        return flush(c, c->run.args->prof, c->node[producer].queue, producer);
    if (!c->q.event[ev]) return BRAID_OK; /* no GPU producer: nothing */
    return br_cu(c, WHERE, consumer, "cudaEventSynchronize",
                 cudaEventSynchronize(c->q.event[ev]));
}

const br_queue_ops *br_cuda_ops(void) {
    static const br_queue_ops ops = {cuda_span, cuda_issue, cuda_host_wait,
                                     NULL};
    return &ops;
}

/* ---- the run ------------------------------------------------------------- */

braid_status br_cuda_run_start(br_cuda *c, const br_cuda_run_args *a,
                               bool *started) {
    const bp_plan *p = c->plan;
    *started = false;
    c->run.args = a;
    c->run.graph = false;
    c->cur_dev = -1; /* this may be another thread than the last run's */
    c->copy.npend = 0;
    c->graph.used_last = false;
    c->graph.unfinished = false;
    memset(c->copy.pending, 0, p->res.ninfo * sizeof *c->copy.pending);
    bool device = false;
    braid_status r = check_bindings(c, &device);
    if (r != BRAID_OK) {
        c->run.args = NULL;
        return r;
    }
    *started = true;
    c->run.graph = br_graph_wanted(c);
    if (c->run.graph && !br_graph_bindings_match(c)) {
        c->run.graph = false;
        if (device) skip_graph(c);
    }
    return BRAID_OK;
}

braid_status br_cuda_run_finish(br_cuda *c, braid_status st) {
    c->cur_dev = -1; /* braid_wait may run on another thread */
    braid_status r = st;
    if (r == BRAID_OK && c->graph.unfinished)
        r = br_graph_finish(c);
    else if (r == BRAID_OK)
        r = flush_all(c);
    r = br_cuda_sync_all(c, r);
    if (r == BRAID_OK) r = br_cuda_take_checks(c); /* after the sync */
    c->graph.unfinished = false;
    if (r == BRAID_OK) c->graph.runs++;
    c->run.args = NULL;
    c->run.graph = false;
    return r;
}

#else
typedef int br_cuda_run_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
