/* passes/streams.c — queues and events.
 *
 * Every node gets a queue (info.queue). Queue 0 is the CPU queue, which runs
 * every host node. Each GPU gets one H2D, one D2H and one D2D copy stream
 * and up to settings.max_streams compute streams, created only when used.
 * Copies go on the stream of their direction, so transfers in both
 * directions overlap each other and compute:
 *   cpu → cuda:N        the H2D stream of cuda:N
 *   cuda:N → cpu        the D2H stream of cuda:N (the source GPU)
 *   cuda:M → cuda:N     the D2D stream of cuda:N (the destination)
 * GPU compute nodes are assigned greedily in id (topological) order, so
 * that independent branches land on different streams while a chain stays
 * on one stream (no events inside it):
 *   - chunk nodes (info.chunk): the GPU chunk nodes linked by edges
 *     (compute nodes and their H2D copies) form one chunk; each chunk, in
 *     order of its lowest id, takes the next stream of a per-GPU rotation,
 *     so chunk k of a chain runs wholly on stream k mod max_streams;
 *   - another node continues the stream of its first compute input on the
 *     same GPU when it is that producer's first compute consumer, and a
 *     reshape, permute or slice always does: it is a view of the input or
 *     a short copy of it, which a branch to another stream would wrap in
 *     two event hops for nothing (GPT-2's k and v slices of the QKV
 *     product moved to two more streams and back in every layer; one
 *     stream ran the model 3% faster on the H200);
 *   - otherwise it takes the least-loaded stream (estimated seconds of
 *     work from the device profile; lowest index on ties).
 * Events: exactly one per (producer, consumer) data edge whose ends are on
 * different queues, none within a queue. Queues are numbered per (device,
 * kind) in the order: cpu; then per GPU in plan->in.devs.devices order its
 * compute streams, H2D, D2H, D2D, COMM (collectives: one communication stream
 * per GPU, so NCCL overlaps compute). docs/streams.md has the details. */
#include "passes/passes.h"

#include <stdlib.h>

/* A queue before numbering: kind, device and the n-th of that kind. */
typedef struct st_slot {
    bp_queue_kind kind; /* what it carries */
    int32_t gpu;        /* index into plan->in.devs.devices; -1 for the cpu */
    uint32_t index;     /* compute stream number (0 for the others) */
} st_slot;

/* Working state of the pass. */
typedef struct st_state {
    bp_plan *plan;         /* the plan being assigned */
    st_slot *slot;         /* per node: its queue before numbering */
    uint32_t *first_use;   /* per node: its first compute consumer on its
                              own device (smallest id), or BG_NONE */
    double *load;          /* per (GPU, compute stream): seconds assigned */
    uint32_t *rotation;    /* per GPU: next stream for a new chunk */
    uint32_t *chunk;       /* per node: union-find parent over a GPU's
                              chunk nodes (one set per chunk), or
                              BG_NONE for other nodes */
    uint32_t *chunk_stream; /* per set root: its stream, or BG_NONE */
    uint32_t streams;      /* compute streams per GPU (≥ 1) */
} st_state;

/* Index of d in plan->in.devs.devices, or -1 (the cpu or an unlisted device).
 */
static int32_t gpu_slot(const bp_plan *p, bp_device d) {
    if (d.kind != BP_DEVICE_CUDA) return -1;
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return (int32_t)i;
    return -1;
}

/* A compute node on a GPU (not a copy, not a host node). */
static bool is_gpu_compute(const st_state *st, uint32_t id) {
    return st->slot[id].kind == BP_QUEUE_COMPUTE;
}

/* Estimated seconds of work of node id on its GPU: matmul FLOPs at the
 * profile's rate, other ops their traffic at memory bandwidth, plus the
 * launch cost. Only compared with other estimates on the same device. */
static double work_estimate(const bp_plan *p, uint32_t id, int32_t gpu) {
    const bg_node *n = &p->res.graph->nodes[id];
    const bp_device_profile *pr = &p->in.devs.profile[gpu];
    double bytes = (double)bg_nbytes(n);
    for (uint32_t k = 0; k < n->ninputs; k++)
        bytes += (double)bg_nbytes(&p->res.graph->nodes[n->inputs[k]]);
    double t = pr->mem_bytes_per_s > 0 ? bytes / pr->mem_bytes_per_s : 0;
    if (n->op == BRAID_OP_MATMUL && n->ninputs == 2) {
        const bg_node *a = &p->res.graph->nodes[n->inputs[0]];
        bool ta = (n->attr.flags & BRAID_TRANSPOSE_A) != 0;
        double k = (double)(a->rank >= 2 ? a->dims[a->rank - (ta ? 2 : 1)] : 1);
        double flops = 2.0 * (double)bg_numel(n) * k;
        double rate = pr->flops[n->dtype];
        if (rate > 0 && flops / rate > t) t = flops / rate;
    }
    return t + (pr->launch_s > 0 ? pr->launch_s : 0);
}

/* The slot of a copy node by its direction. */
static st_slot copy_slot(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    bp_device dst = p->res.info[id].device;
    bp_device src = p->res.info[n->inputs[0]].device;
    int32_t gd = gpu_slot(p, dst), gs = gpu_slot(p, src);
    if (gd >= 0 && src.kind == BP_DEVICE_CPU)
        return (st_slot){BP_QUEUE_H2D, gd, 0};
    if (dst.kind == BP_DEVICE_CPU && gs >= 0)
        return (st_slot){BP_QUEUE_D2H, gs, 0};
    if (gd >= 0 && gs >= 0 && gd != gs)
        return (st_slot){BP_QUEUE_D2D, gd, 0};
    if (gd >= 0) return (st_slot){BP_QUEUE_COMPUTE, gd, BG_NONE};
    return (st_slot){BP_QUEUE_CPU, -1, 0};
}

/* first_use[u]: the smallest-id compute consumer of u on u's own GPU. Ids
 * are topological, so visiting consumers in id order finds it first. */
static void find_first_uses(st_state *st) {
    const braid_graph *g = st->plan->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        if (!is_gpu_compute(st, id)) continue;
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t u = n->inputs[k];
            if (is_gpu_compute(st, u) && st->slot[u].gpu == st->slot[id].gpu &&
                st->first_use[u] == BG_NONE)
                st->first_use[u] = id;
        }
    }
}

/* The least-loaded compute stream of gpu (lowest index on ties). */
static uint32_t least_loaded(const st_state *st, int32_t gpu) {
    const double *load = &st->load[(size_t)gpu * st->streams];
    uint32_t best = 0;
    for (uint32_t s = 1; s < st->streams; s++)
        if (load[s] < load[best]) best = s;
    return best;
}

static uint32_t find(uint32_t *parent, uint32_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* A GPU chunk node that belongs to a chunk's set: compute or H2D copy. */
static bool chunk_member(const st_state *st, uint32_t id) {
    return st->plan->res.info[id].chunk &&
           (st->slot[id].kind == BP_QUEUE_COMPUTE ||
            st->slot[id].kind == BP_QUEUE_H2D);
}

/* Joins chunk nodes linked by an edge on one GPU into one set per chunk. */
static void group_chunks(st_state *st) {
    const braid_graph *g = st->plan->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        st->chunk[id] = chunk_member(st, id) ? id : BG_NONE;
        st->chunk_stream[id] = BG_NONE;
    }
    for (uint32_t id = 0; id < g->nnodes; id++) {
        if (st->chunk[id] == BG_NONE) continue;
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t u = n->inputs[k];
            if (st->chunk[u] == BG_NONE || st->slot[u].gpu != st->slot[id].gpu)
                continue;
            uint32_t a = find(st->chunk, u), b = find(st->chunk, id);
            if (a != b) st->chunk[a > b ? a : b] = a > b ? b : a;
        }
    }
}

/* The compute stream of GPU compute node id (see the file comment). */
static uint32_t pick_stream(st_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    int32_t gpu = st->slot[id].gpu;
    if (st->chunk[id] != BG_NONE) {
        uint32_t r = find(st->chunk, id);
        if (st->chunk_stream[r] == BG_NONE)
            st->chunk_stream[r] = st->rotation[gpu]++ % st->streams;
        return st->chunk_stream[r];
    }
    bool view_like = n->ninputs == 1 &&
                     bg_op(n->op)->kind == BRAID_KIND_SHAPE; /* not concat */
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t u = n->inputs[k];
        if (!is_gpu_compute(st, u) || st->slot[u].gpu != gpu) continue;
        if (st->first_use[u] == id || view_like) return st->slot[u].index;
        break; /* only the first compute input may be continued */
    }
    return least_loaded(st, gpu);
}

static void assign_slots(st_state *st) {
    bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        bp_device d = p->res.info[id].device;
        if (g->nodes[id].op == BRAID_OP_COPY && g->nodes[id].ninputs == 1)
            st->slot[id] = copy_slot(p, id);
        else if (gpu_slot(p, d) >= 0 &&
                 bg_op(g->nodes[id].op)->kind == BRAID_KIND_COLLECTIVE)
            st->slot[id] = (st_slot){BP_QUEUE_COMM, gpu_slot(p, d), 0};
        else if (gpu_slot(p, d) >= 0)
            st->slot[id] = (st_slot){BP_QUEUE_COMPUTE, gpu_slot(p, d), BG_NONE};
        else
            st->slot[id] = (st_slot){BP_QUEUE_CPU, -1, 0};
    }
    find_first_uses(st);
    group_chunks(st);
    for (uint32_t id = 0; id < g->nnodes; id++) {
        if (!is_gpu_compute(st, id)) continue;
        int32_t gpu = st->slot[id].gpu;
        uint32_t s = pick_stream(st, id);
        st->slot[id].index = s;
        st->load[(size_t)gpu * st->streams + s] += work_estimate(p, id, gpu);
    }
}

/* Position of a slot in the queue table layout before compaction: per GPU
 * `streams` compute streams, then H2D, D2H, D2D; the cpu queue is 0. */
static uint32_t slot_key(const st_state *st, st_slot s) {
    if (s.kind == BP_QUEUE_CPU) return 0;
    uint32_t per = st->streams + 4;
    uint32_t base = 1 + (uint32_t)s.gpu * per;
    switch (s.kind) {
    case BP_QUEUE_COMPUTE: return base + s.index;
    case BP_QUEUE_H2D: return base + st->streams;
    case BP_QUEUE_D2H: return base + st->streams + 1;
    case BP_QUEUE_COMM: return base + st->streams + 3;
    default: return base + st->streams + 2;
    }
}

/* Builds plan->res.queues from the used slots, numbering compute streams per
 * GPU densely in stream order, and sets info.queue. */
static braid_status number_queues(st_state *st) {
    bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    size_t nkeys = 1 + (size_t)p->in.devs.ndevices * (st->streams + 4);
    uint32_t *qid = malloc(nkeys * sizeof *qid);
    if (!qid)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "streams: out of memory");
    for (size_t k = 0; k < nkeys; k++) qid[k] = BG_NONE;
    qid[0] = 0; /* the cpu queue always exists */
    for (uint32_t id = 0; id < g->nnodes; id++) qid[slot_key(st, st->slot[id])] = 1;
    uint32_t nq = 0;
    for (size_t k = 0; k < nkeys; k++)
        if (qid[k] != BG_NONE) qid[k] = nq++;
    if (nq > BP_MAX_QUEUES) {
        free(qid);
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "streams: the plan needs %u queues, more "
                                 "than the %d a plan may have (lower "
                                 "max_streams)",
                                 nq, BP_MAX_QUEUES);
    }
    p->res.queues = bp_calloc(nq, sizeof *p->res.queues, "queues");
    if (!p->res.queues) {
        free(qid);
        return BRAID_ERR_OUT_OF_MEMORY;
    }
    p->res.nqueues = nq;
    p->res.queues[0] = (bp_queue){BP_QUEUE_CPU, {BP_DEVICE_CPU, 0}, 0};
    uint32_t per = st->streams + 4;
    for (uint32_t gpu = 0; gpu < p->in.devs.ndevices; gpu++) {
        uint32_t compute = 0;
        for (uint32_t j = 0; j < per; j++) {
            uint32_t q = qid[1 + gpu * per + j];
            if (q == BG_NONE) continue;
            bp_queue_kind kind = j < st->streams       ? BP_QUEUE_COMPUTE
                                 : j == st->streams     ? BP_QUEUE_H2D
                                 : j == st->streams + 1 ? BP_QUEUE_D2H
                                 : j == st->streams + 2 ? BP_QUEUE_D2D
                                                        : BP_QUEUE_COMM;
            uint32_t index = kind == BP_QUEUE_COMPUTE ? compute++ : 0;
            p->res.queues[q] = (bp_queue){kind, p->in.devs.devices[gpu], index};
        }
    }
    for (uint32_t id = 0; id < g->nnodes; id++)
        p->res.info[id].queue = qid[slot_key(st, st->slot[id])];
    free(qid);
    return BRAID_OK;
}

/* One event per distinct (producer, consumer) pair on different queues.
 * seen[u] == id marks u as already handled for consumer id. */
static braid_status add_events(bp_plan *p) {
    const braid_graph *g = p->res.graph;
    size_t nedges = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) nedges += g->nodes[id].ninputs;
    p->res.events =
        bp_calloc(nedges ? nedges : 1, sizeof *p->res.events, "events");
    uint32_t *seen = malloc((g->nnodes ? g->nnodes : 1) * sizeof *seen);
    if (!p->res.events || !seen) {
        free(seen);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "streams: out of memory for %zu events",
                                 nedges);
    }
    for (uint32_t id = 0; id < g->nnodes; id++) seen[id] = BG_NONE;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t u = n->inputs[k];
            if (seen[u] == id || p->res.info[u].queue == p->res.info[id].queue)
                continue;
            seen[u] = id;
            p->res.events[p->res.nevents++] = (bp_event){u, id, false};
        }
    }
    free(seen);
    return BRAID_OK;
}

braid_status bp_streams(bp_plan *plan) {
    const braid_graph *g = plan->res.graph;
    free(plan->res.queues);
    free(plan->res.events);
    plan->res.queues = NULL;
    plan->res.events = NULL;
    plan->res.nqueues = plan->res.nevents = 0;
    st_state st = {.plan = plan};
    st.streams =
        plan->in.settings.max_streams ? plan->in.settings.max_streams : 1;
    size_t n = g->nnodes ? g->nnodes : 1;
    st.slot = malloc(n * sizeof *st.slot);
    st.first_use = malloc(n * sizeof *st.first_use);
    st.load =
        calloc((size_t)plan->in.devs.ndevices * st.streams, sizeof *st.load);
    st.rotation = calloc(plan->in.devs.ndevices, sizeof *st.rotation);
    st.chunk = malloc(n * sizeof *st.chunk);
    st.chunk_stream = malloc(n * sizeof *st.chunk_stream);
    braid_status s = BRAID_OK;
    if (!st.slot || !st.first_use || !st.load || !st.rotation || !st.chunk ||
        !st.chunk_stream)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "streams: out of memory (%u nodes)", g->nnodes);
    if (s == BRAID_OK) {
        for (uint32_t id = 0; id < g->nnodes; id++) st.first_use[id] = BG_NONE;
        assign_slots(&st);
        s = number_queues(&st);
    }
    if (s == BRAID_OK) s = add_events(plan);
    free(st.slot);
    free(st.first_use);
    free(st.load);
    free(st.rotation);
    free(st.chunk);
    free(st.chunk_stream);
    return s;
}
