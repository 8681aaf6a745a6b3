/* passes/schedule.c — one global issue order (plan->res.schedule, info.order).
 *
 * A list scheduler: it repeatedly issues one ready node (all inputs
 * issued), so the order is topological, and since a queue's order is the
 * order its nodes appear in the schedule, every queue's order is consistent
 * with it. Which ready node goes next, in this precedence:
 *   1. device → host and device → device copies, lowest id first: they
 *      start transfers early and end the device tensor's life;
 *   2. host → device copies and the host nodes whose only consumers are
 *      such copies (the slices of a chunked input), lowest id first, while
 *      the GPU's prefetch window allows: a copy belongs to a group (all
 *      H2D copies of one chunk form one group, any other copy is a group
 *      of its own); a group opens when its first copy is issued and stays
 *      open until every member (the chunk's copies and compute) has been
 *      issued with all its consumers; a copy may go when its group is
 *      open or fewer than W groups are. W is twice the largest number of
 *      groups one GPU node reads (at least 2): double buffering, so a
 *      chunked chain issues
 *      h2d0, h2d1, k0, d2h0, h2d2, k1, d2h1, ... and the memory pass can
 *      reuse chunk k's buffers for chunk k + 2 without stalling the copy
 *      stream;
 *   3. other nodes, GPU nodes before host nodes (issuing GPU work only
 *      queues it, while the dispatcher runs a host node to completion
 *      before it issues the next node: GPU work ready now must be queued
 *      before host work, or the GPUs idle while the host computes); within
 *      each, most net bytes freed first (bytes of inputs whose last
 *      consumer this is, minus the bytes the node allocates), then the one
 *      reading the most recently issued computed tensor, then lowest id:
 *      this finishes a branch before starting the next, which shortens
 *      lifetimes on wide graphs, while work that starts from uploaded data
 *      (chunks) keeps id order;
 *   4. H2D copies and their feeders held back by a closed window;
 *   5. host nodes reading a D2H copy's result: they wait on the device, so
 *      they go after everything else that is ready.
 * Freed bytes change as other consumers are issued; heap entries are
 * re-pushed then and stale ones skipped, so the pass is O((n + e) log n).
 * docs/streams.md has an example. */
#include "passes/collectives.h"
#include "passes/passes.h"

#include <stdlib.h>

/* Node classes, in the precedence of the file comment. */
enum { SC_OUT = 0, SC_FEED, SC_MAIN, SC_HOST, SC_WAIT, SC_NCLASS };

/* A heap entry: smaller key first. */
typedef struct sc_entry {
    int64_t key;      /* class-dependent priority (smaller is earlier) */
    int64_t key2;     /* tie-break before the id (smaller is earlier) */
    uint32_t id;      /* the node */
    uint32_t version; /* stale when it differs from the node's version */
} sc_entry;

typedef struct sc_heap {
    sc_entry *e;  /* binary min-heap on (key, key2, id) */
    size_t n;     /* entries used */
    size_t cap;   /* entries allocated */
} sc_heap;

/* Working state of the pass. */
typedef struct sc_state {
    bp_plan *plan;          /* the plan being ordered */
    uint32_t *cstart;       /* per node: first index in cons (n + 1) */
    uint32_t *cons;         /* distinct consumers of each node */
    uint32_t *npred;        /* per node: distinct inputs not issued yet */
    uint32_t *remaining;    /* per node: distinct consumers not issued yet */
    int64_t *freed;         /* per node: bytes its issue would free */
    uint32_t *version;      /* per node: current heap-entry version */
    uint8_t *cls;           /* per node: SC_* class */
    int32_t *gpu; /* per node: plan->in.devs.devices index of the GPU an
                     H2D copy (or its feeder) targets, else -1 */
    bool *is_output;        /* per node: a graph output (never freed) */
    bool *issued;           /* per node: already in the schedule */
    uint32_t *mark;         /* per node: scratch for distinct-input scans */
    uint32_t *group;        /* per node: union-find parent; an H2D copy's
                               root names its prefetch group */
    uint32_t *open;         /* per group root: members not finished
                               (finished: issued, consumers issued) */
    bool *started;          /* per group root: a copy of it was issued */
    int32_t *group_gpu;     /* per group root: its device, once started */
    uint32_t *outstanding;  /* per device: open groups */
    uint32_t *window;       /* per device: prefetch window W */
    sc_heap heap[SC_NCLASS - 1]; /* OUT, MAIN, HOST, WAIT (FEED is per
                                    GPU) */
    sc_heap *feed;          /* per device: its H2D copies and feeders */
} sc_state;

/* ---- heap --------------------------------------------------------------- */

static bool entry_less(sc_entry a, sc_entry b) {
    if (a.key != b.key) return a.key < b.key;
    return a.key2 != b.key2 ? a.key2 < b.key2 : a.id < b.id;
}

static bool heap_push(sc_heap *h, sc_entry x) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        sc_entry *e = realloc(h->e, cap * sizeof *e);
        if (!e) return false;
        h->e = e;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && entry_less(x, h->e[(i - 1) / 2])) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = x;
    return true;
}

static sc_entry heap_pop(sc_heap *h) {
    sc_entry top = h->e[0], x = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && entry_less(h->e[c + 1], h->e[c])) c++;
        if (!entry_less(h->e[c], x)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n > 0) h->e[i] = x;
    return top;
}

/* Drops stale entries from the top; true when a live one remains. */
static bool heap_ready(sc_state *st, sc_heap *h) {
    while (h->n > 0) {
        sc_entry t = h->e[0];
        if (!st->issued[t.id] && t.version == st->version[t.id]) return true;
        heap_pop(h);
    }
    return false;
}

/* ---- classification --------------------------------------------------------- */

static int32_t gpu_index(const bp_plan *p, bp_device d) {
    if (d.kind != BP_DEVICE_CUDA) return -1;
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return (int32_t)i;
    return -1;
}

/* A copy from the host onto a listed GPU: its device index, else -1. */
static int32_t h2d_target(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    if (n->op != BRAID_OP_COPY || n->ninputs != 1) return -1;
    if (p->res.info[n->inputs[0]].device.kind != BP_DEVICE_CPU) return -1;
    return gpu_index(p, p->res.info[id].device);
}

/* A copy that leaves a GPU (to the host or another GPU). */
static bool is_outbound(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    return n->op == BRAID_OP_COPY && n->ninputs == 1 &&
           p->res.info[n->inputs[0]].device.kind == BP_DEVICE_CUDA &&
           !bp_device_equal(p->res.info[n->inputs[0]].device,
                            p->res.info[id].device);
}

/* Bytes the node allocates (0 for inputs, constants and reshapes, which
 * own no new bytes or are views) and bytes freed when its last consumer
 * issues (0 for outputs and for caller/constant memory). */
static int64_t alloc_bytes(const bg_node *n) {
    if (n->op == BRAID_OP_INPUT || bg_op_persistent(n->op) ||
        n->op == BRAID_OP_RESHAPE || n->op == BRAID_OP_ASSIGN)
        return 0;
    return (int64_t)bg_nbytes(n);
}

static void classify(sc_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    st->gpu[id] = h2d_target(p, id);
    if (is_outbound(p, id)) {
        st->cls[id] = SC_OUT;
        return;
    }
    if (st->gpu[id] >= 0) {
        st->cls[id] = SC_FEED;
        return;
    }
    st->cls[id] = SC_MAIN;
    if (p->res.info[id].device.kind != BP_DEVICE_CPU) return;
    bool feeder = n->op != BRAID_OP_INPUT && n->op != BRAID_OP_CONSTANT &&
                  st->cstart[id + 1] > st->cstart[id];
    for (uint32_t k = st->cstart[id]; feeder && k < st->cstart[id + 1]; k++)
        feeder = h2d_target(p, st->cons[k]) >= 0;
    if (feeder) {
        st->cls[id] = SC_FEED;
        st->gpu[id] = h2d_target(p, st->cons[st->cstart[id]]);
        return;
    }
    /* inputs and constants cost nothing to issue: they stay MAIN */
    if (n->op != BRAID_OP_INPUT && n->op != BRAID_OP_CONSTANT)
        st->cls[id] = SC_HOST;
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (is_outbound(p, n->inputs[k])) st->cls[id] = SC_WAIT;
}

/* ---- setup -------------------------------------------------------------------- */

/* Distinct consumer lists (CSR), predecessor and consumer counts. mark[u]
 * == v marks u as already counted for consumer v. */
static void build_consumers(sc_state *st) {
    const braid_graph *g = st->plan->res.graph;
    uint32_t *mark = st->mark;
    uint32_t n = g->nnodes;
    for (uint32_t v = 0; v < n; v++) mark[v] = BG_NONE;
    for (uint32_t v = 0; v < n; v++) {
        const bg_node *nd = &g->nodes[v];
        for (uint32_t k = 0; k < nd->ninputs; k++) {
            uint32_t u = nd->inputs[k];
            if (mark[u] == v) continue;
            mark[u] = v;
            st->npred[v]++;
            st->remaining[u]++;
        }
    }
    for (uint32_t v = 0; v < n; v++)
        st->cstart[v + 1] = st->cstart[v] + st->remaining[v];
    for (uint32_t v = 0; v < n; v++) mark[v] = BG_NONE;
    uint32_t *pos = st->version; /* per node write cursor, reset below */
    for (uint32_t v = 0; v < n; v++) pos[v] = st->cstart[v];
    for (uint32_t v = 0; v < n; v++) {
        const bg_node *nd = &g->nodes[v];
        for (uint32_t k = 0; k < nd->ninputs; k++) {
            uint32_t u = nd->inputs[k];
            if (mark[u] == v) continue;
            mark[u] = v;
            st->cons[pos[u]++] = v;
        }
    }
    for (uint32_t v = 0; v < n; v++) pos[v] = 0;
    for (uint32_t v = 0; v < n; v++) mark[v] = BG_NONE;
}

static int64_t freeable(const sc_state *st, uint32_t u) {
    const bg_node *n = &st->plan->res.graph->nodes[u];
    return st->is_output[u] ? 0 : alloc_bytes(n);
}

static uint32_t find(uint32_t *parent, uint32_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Chunk nodes on one GPU linked by edges (a chunk's H2D copies and
 * compute) share a group; every other node is its own. */
static void group_chunks(sc_state *st) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) st->group[id] = id;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        if (!p->res.info[id].chunk || gpu_index(p, p->res.info[id].device) < 0)
            continue;
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t u = n->inputs[k];
            if (!p->res.info[u].chunk ||
                !bp_device_equal(p->res.info[u].device, p->res.info[id].device))
                continue;
            uint32_t a = find(st->group, u), b = find(st->group, id);
            if (a != b) st->group[a > b ? a : b] = a > b ? b : a;
        }
    }
}

/* Initial freed bytes, classes and prefetch windows. */
static void prepare(sc_state *st) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t i = 0; i < g->noutputs; i++)
        st->is_output[g->outputs[i].node] = true;
    for (uint32_t u = 0; u < g->nnodes; u++)
        if (st->remaining[u] == 1)
            st->freed[st->cons[st->cstart[u]]] += freeable(st, u);
    for (uint32_t id = 0; id < g->nnodes; id++) classify(st, id);
    group_chunks(st);
    for (uint32_t id = 0; id < g->nnodes; id++) st->open[find(st->group, id)]++;
    for (uint32_t d = 0; d < p->in.devs.ndevices; d++)
        st->window[d] = 2;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        int32_t d = gpu_index(p, p->res.info[id].device);
        if (d < 0) continue;
        uint32_t groups = 0;
        for (uint32_t k = 0; k < g->nodes[id].ninputs; k++) {
            uint32_t u = g->nodes[id].inputs[k];
            if (h2d_target(p, u) < 0) continue;
            uint32_t r = find(st->group, u);
            if (st->mark[r] == id) continue;
            st->mark[r] = id;
            groups++;
        }
        if (2 * groups > st->window[d]) st->window[d] = 2 * groups;
    }
    for (uint32_t id = 0; id < g->nnodes; id++) st->mark[id] = BG_NONE;
}

/* The prefetch group of an H2D copy, or of a feeder (its first
 * consumer's). */
static uint32_t group_of(sc_state *st, uint32_t id) {
    if (st->plan->res.graph->nodes[id].op != BRAID_OP_COPY)
        id = st->cons[st->cstart[id]];
    return find(st->group, id);
}

/* Whether the top of a GPU's feed heap may go now. */
static bool window_allows(sc_state *st, uint32_t d) {
    if (!heap_ready(st, &st->feed[d])) return false;
    uint32_t r = group_of(st, st->feed[d].e[0].id);
    return (st->started[r] && st->open[r] > 0) ||
           st->outstanding[d] < st->window[d];
}

/* ---- the list scheduler ----------------------------------------------------- */

static sc_heap *heap_of(sc_state *st, uint32_t id) {
    switch (st->cls[id]) {
    case SC_OUT: return &st->heap[0];
    case SC_FEED: return &st->feed[st->gpu[id]];
    case SC_MAIN: return &st->heap[1];
    case SC_HOST: return &st->heap[2];
    default: return &st->heap[3];
    }
}

/* Position of the latest computed input (not an upload, input or
 * constant), -1 when none: ties go to the node continuing the most recent
 * work (depth first), while nodes starting from uploaded data keep id
 * order, so chunks run in order. */
static int64_t recency(const sc_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    int64_t r = -1;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t u = n->inputs[k];
        braid_op op = p->res.graph->nodes[u].op;
        if (st->gpu[u] >= 0 || op == BRAID_OP_INPUT || op == BRAID_OP_CONSTANT)
            continue;
        if ((int64_t)p->res.info[u].order > r) r = p->res.info[u].order;
    }
    return r;
}

static bool push_ready(sc_state *st, uint32_t id) {
    int64_t key = 0, key2 = 0;
    if (st->cls[id] == SC_MAIN || st->cls[id] == SC_HOST ||
        st->cls[id] == SC_WAIT) {
        key = -(st->freed[id] - alloc_bytes(&st->plan->res.graph->nodes[id]));
        key2 = -recency(st, id);
    }
    return heap_push(heap_of(st, id),
                     (sc_entry){key, key2, id, st->version[id]});
}

/* The next node to issue (see the file comment for the precedence). */
static uint32_t pick(sc_state *st) {
    const bp_plan *p = st->plan;
    if (heap_ready(st, &st->heap[0])) return heap_pop(&st->heap[0]).id;
    for (uint32_t d = 0; d < p->in.devs.ndevices; d++)
        if (window_allows(st, d)) return heap_pop(&st->feed[d]).id;
    if (heap_ready(st, &st->heap[1])) return heap_pop(&st->heap[1]).id;
    if (heap_ready(st, &st->heap[2])) return heap_pop(&st->heap[2]).id;
    for (uint32_t d = 0; d < p->in.devs.ndevices; d++)
        if (heap_ready(st, &st->feed[d])) return heap_pop(&st->feed[d]).id;
    if (heap_ready(st, &st->heap[3])) return heap_pop(&st->heap[3]).id;
    return BG_NONE;
}

/* Node id is issued and so are all its consumers: its group may close. */
static void finish(sc_state *st, uint32_t id) {
    uint32_t r = find(st->group, id);
    if (--st->open[r] == 0 && st->started[r])
        st->outstanding[st->group_gpu[r]]--;
}

/* Bookkeeping after issuing id: consumer counts, freed bytes of the last
 * remaining consumers, the prefetch window, newly ready consumers. */
static bool issue(sc_state *st, uint32_t id) {
    const braid_graph *g = st->plan->res.graph;
    st->issued[id] = true;
    for (uint32_t k = st->cstart[id]; k < st->cstart[id + 1]; k++) {
        uint32_t c = st->cons[k];
        if (--st->npred[c] == 0 && !push_ready(st, c)) return false;
    }
    if (st->gpu[id] >= 0 && g->nodes[id].op == BRAID_OP_COPY) {
        uint32_t r = find(st->group, id);
        if (!st->started[r]) {
            st->started[r] = true;
            st->group_gpu[r] = st->gpu[id];
            st->outstanding[st->gpu[id]]++;
        }
    }
    if (st->remaining[id] == 0) finish(st, id);
    const bg_node *n = &g->nodes[id];
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t u = n->inputs[k];
        if (st->mark[u] == id) continue; /* each distinct input once */
        st->mark[u] = id;
        if (--st->remaining[u] == 0) finish(st, u);
        if (st->remaining[u] != 1 || freeable(st, u) == 0) continue;
        for (uint32_t j = st->cstart[u]; j < st->cstart[u + 1]; j++) {
            uint32_t c = st->cons[j];
            if (st->issued[c]) continue;
            st->freed[c] += freeable(st, u);
            st->version[c]++;
            if (st->npred[c] == 0 && !push_ready(st, c)) return false;
            break;
        }
    }
    return true;
}

static braid_status run(sc_state *st) {
    bp_plan *p = st->plan;
    uint32_t n = p->res.graph->nnodes;
    for (uint32_t id = 0; id < n; id++)
        if (st->npred[id] == 0 && !push_ready(st, id))
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "schedule: out of memory");
    for (uint32_t pos = 0; pos < n; pos++) {
        uint32_t id = pick(st);
        if (id == BG_NONE)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "schedule: no node ready after %u of "
                                     "%u (a cycle?)",
                                     pos, n);
        p->res.schedule[pos] = id;
        p->res.info[id].order = pos;
        if (!issue(st, id))
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "schedule: out of memory");
    }
    p->res.nschedule = n;
    return BRAID_OK;
}

static void free_state(sc_state *st, uint32_t ndev) {
    free(st->cstart);
    free(st->cons);
    free(st->npred);
    free(st->remaining);
    free(st->freed);
    free(st->version);
    free(st->cls);
    free(st->gpu);
    free(st->is_output);
    free(st->issued);
    free(st->mark);
    free(st->group);
    free(st->open);
    free(st->started);
    free(st->group_gpu);
    free(st->outstanding);
    free(st->window);
    for (int h = 0; h < SC_NCLASS - 1; h++) free(st->heap[h].e);
    for (uint32_t d = 0; st->feed && d < ndev; d++) free(st->feed[d].e);
    free(st->feed);
}

braid_status bp_schedule(bp_plan *plan) {
    const braid_graph *g = plan->res.graph;
    uint32_t n = g->nnodes;
    size_t m = n ? n : 1,
           nd = plan->in.devs.ndevices ? plan->in.devs.ndevices : 1;
    size_t edges = 0;
    for (uint32_t id = 0; id < n; id++) edges += g->nodes[id].ninputs;
    free(plan->res.schedule);
    plan->res.nschedule = 0;
    plan->res.schedule = bp_calloc(m, sizeof *plan->res.schedule, "schedule");
    sc_state st = {.plan = plan};
    st.cstart = calloc(m + 1, sizeof *st.cstart);
    st.cons = calloc(edges ? edges : 1, sizeof *st.cons);
    st.npred = calloc(m, sizeof *st.npred);
    st.remaining = calloc(m, sizeof *st.remaining);
    st.freed = calloc(m, sizeof *st.freed);
    st.version = calloc(m, sizeof *st.version);
    st.cls = calloc(m, sizeof *st.cls);
    st.gpu = calloc(m, sizeof *st.gpu);
    st.is_output = calloc(m, sizeof *st.is_output);
    st.issued = calloc(m, sizeof *st.issued);
    st.group = calloc(m, sizeof *st.group);
    st.open = calloc(m, sizeof *st.open);
    st.started = calloc(m, sizeof *st.started);
    st.group_gpu = calloc(m, sizeof *st.group_gpu);
    st.outstanding = calloc(nd, sizeof *st.outstanding);
    st.window = calloc(nd, sizeof *st.window);
    st.feed = calloc(nd, sizeof *st.feed);
    st.mark = malloc(m * sizeof *st.mark);
    braid_status s = BRAID_OK;
    if (!plan->res.schedule || !st.cstart || !st.cons || !st.npred ||
        !st.remaining || !st.freed || !st.version || !st.cls || !st.gpu ||
        !st.is_output || !st.issued || !st.group || !st.open || !st.started ||
        !st.group_gpu || !st.outstanding || !st.window || !st.feed || !st.mark)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "schedule: out of memory (%u nodes)", n);
    if (s == BRAID_OK) {
        build_consumers(&st);
        prepare(&st);
        s = run(&st);
    }
    free_state(&st, plan->in.devs.ndevices);
    if (s == BRAID_OK) s = bp_coll_schedule(plan); /* groups back to back */
    return s;
}
