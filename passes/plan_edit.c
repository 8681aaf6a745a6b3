/* passes/plan_edit.c — rewriting the plan's working graph: appending compiler
 * nodes and programs, rewiring uses, and compaction, which restores the
 * invariants of passes/plan.h (topological ids, only live nodes, one info
 * entry per node) after a pass has rewritten the graph. */
#include "graph/collective.h"
#include "passes/collectives.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

static bp_node_info default_info(const bp_plan *plan, uint32_t ninputs,
                                 const uint32_t *inputs) {
    bp_node_info in = {0};
    in.device = (bp_device){BP_DEVICE_CPU, 0};
    if (ninputs > 0 && inputs[0] < plan->res.ninfo)
        in.device = plan->res.info[inputs[0]].device;
    in.program = BG_NONE;
    in.origin = BG_NONE;
    return in;
}

braid_status bp_plan_reserve_info(bp_plan *plan, uint32_t n) {
    if (n <= plan->res.info_cap) return BRAID_OK;
    bp_node_info *info =
        bg_huge_realloc(plan->res.info, plan->res.info_cap * sizeof *info,
                        (size_t)n * sizeof *info);
    if (!info)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "compile: out of memory for node info");
    plan->res.info = info;
    plan->res.info_cap = n;
    return BRAID_OK;
}

/* Grows info to one entry per graph node (nodes made by bg_build on the
 * plan's graph get defaults here). */
braid_status bp_plan_sync_info(bp_plan *plan) {
    const braid_graph *g = plan->res.graph;
    if (plan->res.ninfo >= g->nnodes) return BRAID_OK;
    if (g->nnodes > plan->res.info_cap) {
        size_t cap = plan->res.info_cap ? plan->res.info_cap : 16;
        while (cap < g->nnodes) cap *= 2;
        braid_status s = bp_plan_reserve_info(plan, (uint32_t)cap);
        if (s != BRAID_OK) return s;
    }
    for (uint32_t id = plan->res.ninfo; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        plan->res.info[id] = default_info(plan, n->ninputs, n->inputs);
    }
    plan->res.ninfo = g->nnodes;
    return BRAID_OK;
}

static braid_status graph_status(bp_plan *plan, const char *what) {
    braid_graph *g = plan->res.graph;
    return bg_set_last_error(g->status ? g->status : BRAID_ERR_INTERNAL,
                             "compile: %s: %s", what, g->error);
}

uint32_t bp_plan_add_node(bp_plan *plan, braid_op op, const uint32_t *inputs,
                          uint32_t ninputs, braid_dtype dtype, int rank,
                          const int64_t *dims, const bg_attrs *attr) {
    braid_graph *g = plan->res.graph;
    if (bp_plan_sync_info(plan) != BRAID_OK) return BG_NONE;
    if (g->nnodes == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 16;
        bg_node *n = bg_realloc(g, g->nodes, (size_t)g->cap * sizeof *n,
                                (size_t)cap * sizeof *n);
        if (!n) return graph_status(plan, "adding a node"), BG_NONE;
        g->nodes = n;
        g->cap = cap;
    }
    uint32_t *in = NULL;
    if (ninputs) {
        in = bg_alloc(g, ninputs * sizeof *in);
        if (!in) return graph_status(plan, "adding a node"), BG_NONE;
        memcpy(in, inputs, ninputs * sizeof *in);
    }
    bg_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dtype = dtype;
    n->rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) n->dims[i] = dims[i];
    n->ninputs = ninputs;
    n->inputs = in;
    if (attr) n->attr = *attr;
    n->attr.data = NULL; /* compiler nodes never own constant bytes */
    g->nnodes++;
    if (bp_plan_sync_info(plan) != BRAID_OK) {
        g->nnodes--;
        bg_free(g, in, ninputs * sizeof *in);
        return BG_NONE;
    }
    return g->nnodes - 1;
}

uint32_t bp_plan_add_program(bp_plan *plan, bp_program *prog) {
    bp_result *r = &plan->res;
    if (!bp_grow((void **)&r->programs, r->nprograms, &r->programs_cap,
                 sizeof *r->programs, "a fused program"))
        return BG_NONE;
    r->programs[r->nprograms] = *prog;
    return r->nprograms++;
}

bool bp_assign_stored(const bp_plan *plan, uint32_t a) {
    const braid_graph *g = plan->res.graph;
    if (a >= g->nnodes || g->nodes[a].op != BRAID_OP_ASSIGN ||
        g->nodes[a].ninputs < 2)
        return false;
    uint32_t x = g->nodes[a].inputs[1];
    if (g->nodes[x].op != BRAID_OP_FUSED || x >= plan->res.ninfo) return false;
    uint32_t pi = plan->res.info[x].program;
    return pi < plan->res.nprograms &&
           bp_program_stores_into(&plan->res.programs[pi], g, x,
                                  g->nodes[a].inputs[0]);
}

void bp_plan_replace_uses(bp_plan *plan, uint32_t from, uint32_t to) {
    braid_graph *g = plan->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        bg_node *n = &g->nodes[id];
        if (id == to) continue; /* `to` may read `from` (e.g. a copy) */
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k] == from) n->inputs[k] = to;
    }
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].node == from) g->outputs[i].node = to;
}

void bp_plan_replace_map(bp_plan *plan, const uint32_t *rep, uint32_t n) {
    braid_graph *g = plan->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        bg_node *nd = &g->nodes[id];
        for (uint32_t k = 0; k < nd->ninputs; k++) {
            uint32_t in = nd->inputs[k];
            if (in < n && rep[in] != BG_NONE && rep[in] != id)
                nd->inputs[k] = rep[in];
        }
    }
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t o = g->outputs[i].node;
        if (o < n && rep[o] != BG_NONE) g->outputs[i].node = rep[o];
    }
}

/* ---- compaction --------------------------------------------------------- */

/* Live: reachable backwards from the outputs and the assigns, plus every
 * input (callers bind all inputs by name, needed or not). */
static braid_status mark_live(const braid_graph *g, bool *live,
                              uint32_t *stack) {
    uint32_t top = 0, collectives = 0;
    for (uint32_t i = 0; i < g->noutputs; i++) stack[top++] = g->outputs[i].node;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        if (n->op == BRAID_OP_INPUT) live[id] = true;
        /* an assign is needed for its effect (a variable's next value) */
        if (n->op == BRAID_OP_ASSIGN) stack[top++] = id;
        collectives += bg_is_collective(n);
    }
    do { /* again while collective groups revive members (a group is
            kept whole); without collectives, no scan for them */
        while (top > 0) {
            uint32_t id = stack[--top];
            if (live[id]) continue;
            live[id] = true;
            const bg_node *n = &g->nodes[id];
            for (uint32_t k = 0; k < n->ninputs; k++)
                if (!live[n->inputs[k]]) stack[top++] = n->inputs[k];
        }
        top = collectives ? bp_coll_revive(g, live, stack) : 0;
    } while (top > 0);
    return BRAID_OK;
}

/* Post-order DFS from roots in ascending id: a topological order that keeps
 * ids' relative order wherever the edges allow. state: 0 new, 1 open,
 * 2 done. order receives the live nodes. A cycle is an internal error. */
static braid_status topo_order(const braid_graph *g, const bool *live,
                               uint8_t *state, uint32_t *stack, uint32_t *kid,
                               uint32_t *order, uint32_t *norder) {
    *norder = 0;
    for (uint32_t root = 0; root < g->nnodes; root++) {
        if (!live[root] || state[root]) continue;
        uint32_t top = 0;
        stack[top] = root;
        kid[top++] = 0;
        state[root] = 1;
        while (top > 0) {
            uint32_t id = stack[top - 1];
            const bg_node *n = &g->nodes[id];
            if (kid[top - 1] < n->ninputs) {
                uint32_t in = n->inputs[kid[top - 1]++];
                if (state[in] == 1)
                    return bg_set_last_error(BRAID_ERR_INTERNAL,
                                             "compile: cycle through node %u",
                                             (unsigned)in);
                if (state[in] == 0) {
                    state[in] = 1;
                    stack[top] = in;
                    kid[top++] = 0;
                }
                continue;
            }
            state[id] = 2;
            order[(*norder)++] = id;
            top--;
        }
    }
    return BRAID_OK;
}

/* Whether every node reads only smaller ids (then the live ids ascending
 * are the order topo_order would find, its roots' inputs all visited as
 * earlier roots, without its depth-first walk over the nodes); *edges gets
 * the number of input edges. One sweep for both: at a million nodes, each
 * sweep over the node array is a trip through memory. */
static bool topological(const braid_graph *g, size_t *edges) {
    bool topo = true;
    *edges = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        *edges += n->ninputs;
        for (uint32_t k = 0; topo && k < n->ninputs; k++)
            topo = n->inputs[k] < id;
    }
    return topo;
}

/* The live ids ascending into order; how many. */
static uint32_t live_ids(const bool *live, uint32_t n, uint32_t *order) {
    uint32_t k = 0;
    for (uint32_t id = 0; id < n; id++)
        if (live[id]) order[k++] = id;
    return k;
}

/* Moves node order[k] into slot k (k < norder) in place, each node copied
 * once: no new node array (at 150k nodes of 312 bytes that would be ~47 MB
 * of fresh pages per compaction, faulted in and cache-cold). Slot p pulls
 * from order[p]; the slots form paths, which start at a released slot
 * (newid BG_NONE: free to overwrite) and end at a slot >= norder, and
 * cycles, which go round through one saved node. done: n bytes, zero. */
static void permute(bg_node *nodes, bp_node_info *info, const uint32_t *order,
                    uint32_t norder, uint32_t *newid, uint8_t *done) {
    for (uint32_t p = 0; p < norder; p++) {
        if (newid[p] != BG_NONE) continue;
        for (uint32_t d = p, s;; d = s) {
            s = order[d];
            nodes[d] = nodes[s], info[d] = info[s], done[d] = 1;
            if (s >= norder) break;
        }
    }
    for (uint32_t p = 0; p < norder; p++) {
        if (done[p] || order[p] == p) continue;
        bg_node nd = nodes[p];
        bp_node_info in = info[p];
        for (uint32_t d = p, s;; d = s) {
            s = order[d];
            done[d] = 1;
            if (s == p) {
                nodes[d] = nd, info[d] = in;
                break;
            }
            nodes[d] = nodes[s], info[d] = info[s];
        }
    }
}

/* Gives back the slots of a graph left with less than half of them used
 * (a shrinking realloc: no copy for the default allocator). */
static void shrink(bp_plan *plan) {
    braid_graph *g = plan->res.graph;
    uint32_t n = g->nnodes ? g->nnodes : 1;
    if (n >= g->cap / 2) return;
    bg_node *nodes =
        g->alloc(g->alloc_user, g->nodes, (size_t)g->cap * sizeof *nodes,
                 (size_t)n * sizeof *nodes);
    if (nodes) g->nodes = nodes, g->cap = n; /* else keep the larger one */
    bp_node_info *info = realloc(plan->res.info, (size_t)n * sizeof *info);
    if (info) plan->res.info = info, plan->res.info_cap = n;
}

/* Moves the nodes into their new order (newid[old] = new id or BG_NONE),
 * in place. done: n bytes of scratch. */
static braid_status renumber(bp_plan *plan, const uint32_t *order,
                             uint32_t norder, uint32_t *newid, uint8_t *done) {
    braid_graph *g = plan->res.graph;
    uint32_t n = g->nnodes;
    for (uint32_t i = 0; i < n; i++) newid[i] = BG_NONE;
    for (uint32_t k = 0; k < norder; k++) newid[order[k]] = k;
    for (uint32_t i = 0; i < n; i++)
        if (newid[i] == BG_NONE) bg_node_release(g, &g->nodes[i]);
    memset(done, 0, n);
    permute(g->nodes, plan->res.info, order, norder, newid, done);
    for (uint32_t k = 0; k < norder; k++) {
        bg_node *nd = &g->nodes[k];
        for (uint32_t j = 0; j < nd->ninputs; j++)
            nd->inputs[j] = newid[nd->inputs[j]];
    }
    g->nnodes = norder;
    plan->res.ninfo = norder;
    shrink(plan);
    for (uint32_t i = 0; i < g->noutputs; i++)
        g->outputs[i].node = newid[g->outputs[i].node];
    bg_names_invalidate(g);
    for (uint32_t i = 0; i < plan->res.ninputs; i++)
        plan->res.inputs[i].node = newid[plan->res.inputs[i].node];
    for (uint32_t i = 0; i < plan->res.noutputs; i++)
        plan->res.outputs[i].node = g->outputs[i].node;
    return BRAID_OK;
}

braid_status bp_plan_compact(bp_plan *plan) {
    braid_status s = bp_plan_sync_info(plan);
    if (s != BRAID_OK) return s;
    const braid_graph *g = plan->res.graph;
    uint32_t n = g->nnodes;
    size_t m = n ? n : 1;
    bool *live = calloc(m, sizeof *live);
    uint8_t *state = calloc(m, 1);
    uint32_t *stack = malloc(m * sizeof *stack);
    uint32_t *kid = malloc(m * sizeof *kid);
    uint32_t *order = malloc(m * sizeof *order);
    uint32_t *newid = malloc(m * sizeof *newid);
    if (!live || !state || !stack || !kid || !order || !newid)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "compile: out of memory compacting the plan");
    uint32_t norder = 0;
    /* The liveness stack may hold a node once per edge into it; bound it by
     * the number of edges plus outputs. */
    size_t edges = 0;
    bool topo = topological(g, &edges);
    edges += (size_t)g->noutputs + 2 * (size_t)n; /* + assigns, revived
                                                    collectives */
    uint32_t *wstack = s == BRAID_OK ? malloc((edges + 1) * sizeof *wstack)
                                     : NULL;
    if (s == BRAID_OK && !wstack)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "compile: out of memory compacting the plan");
    if (s == BRAID_OK) s = mark_live(g, live, wstack);
    if (s == BRAID_OK && topo)
        norder = live_ids(live, n, order);
    else if (s == BRAID_OK)
        s = topo_order(g, live, state, stack, kid, order, &norder);
    /* Every node live and already in order: the ids stay as they are (the
     * common case after a pass that only rewired uses). */
    if (s == BRAID_OK && topo && norder == n)
        shrink(plan);
    else if (s == BRAID_OK)
        s = renumber(plan, order, norder, newid, state);
    free(wstack);
    free(live);
    free(state);
    free(stack);
    free(kid);
    free(order);
    free(newid);
    return s;
}
