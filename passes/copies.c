/* passes/copies.c — a BRAID_OP_COPY node for every (tensor, destination
 * device) pair the placement implies.
 *
 * After bp_place every node has a device. Wherever a consumer runs on
 * another device than its producer, the consumer must read a copy; all
 * consumers on one device share that copy. Graph outputs are returned in
 * host memory, so an output produced on a GPU is read through a copy to
 * the cpu (shared with cpu consumers of the same tensor), and the output
 * tables point at that copy. A copy's info.device is its destination; its
 * source device is its input's. The pass ends with bp_plan_compact, which
 * renumbers the appended copies into topological position. */
#include "passes/passes.h"

#include <stdlib.h>

/* The copies made so far, chained per source tensor. */
typedef struct copy_map {
    uint32_t *head; /* per original node: first copy made of it, or
                       BG_NONE */
    uint32_t *next; /* per copy (index id - n0): next copy of the same
                       source, or BG_NONE */
    uint32_t n0;    /* nodes before the pass (copies have ids ≥ n0) */
    uint32_t ncap;  /* entries allocated in next */
} copy_map;

/* Grows next to hold copy index k. */
static braid_status map_reserve(copy_map *m, uint32_t k) {
    if (k < m->ncap) return BRAID_OK;
    uint32_t cap = m->ncap ? m->ncap * 2 : 16;
    while (cap <= k)
        cap *= 2;
    uint32_t *p = realloc(m->next, (size_t)cap * sizeof *p);
    if (!p)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "copies: out of memory");
    m->next = p;
    m->ncap = cap;
    return BRAID_OK;
}

/* The copy of `src` on device `to`, made now if there is none yet; BG_NONE
 * when out of memory (message set). */
static uint32_t copy_of(bp_plan *plan, copy_map *m, uint32_t src,
                        bp_device to) {
    for (uint32_t c = m->head[src]; c != BG_NONE; c = m->next[c - m->n0])
        if (bp_device_equal(plan->res.info[c].device, to)) return c;
    /* bp_plan_add_node may move the node array: copy the type first */
    const bg_node *s = bg_node_at(plan->res.graph, src);
    braid_dtype dtype = s->dtype;
    int rank = s->rank;
    int64_t dims[BRAID_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = s->dims[i];
    uint32_t id = plan->res.graph->nnodes;
    if (map_reserve(m, id - m->n0) != BRAID_OK) return BG_NONE;
    id =
        bp_plan_add_node(plan, BRAID_OP_COPY, &src, 1, dtype, rank, dims, NULL);
    if (id == BG_NONE) return BG_NONE;
    plan->res.info[id].device = to;
    m->next[id - m->n0] = m->head[src];
    m->head[src] = id;
    return id;
}

/* Points every input of the original nodes that crosses devices at a
 * copy on the consumer's device. */
static braid_status rewire_inputs(bp_plan *plan, copy_map *m) {
    for (uint32_t id = 0; id < m->n0; id++) {
        bp_device to = plan->res.info[id].device;
        uint32_t nin = bg_node_at(plan->res.graph, id)->ninputs;
        for (uint32_t k = 0; k < nin; k++) {
            uint32_t src = plan->res.graph->nodes[id].inputs[k];
            if (bp_device_equal(plan->res.info[src].device, to)) continue;
            uint32_t c = copy_of(plan, m, src, to);
            if (c == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
            plan->res.graph->nodes[id].inputs[k] = c;
        }
    }
    return BRAID_OK;
}

/* Outputs live in host memory: an output made elsewhere is read through
 * its copy to the cpu. */
static braid_status rewire_outputs(bp_plan *plan, copy_map *m) {
    const bp_device cpu = {BP_DEVICE_CPU, 0};
    braid_graph *g = plan->res.graph;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t src = g->outputs[i].node;
        if (bp_device_equal(plan->res.info[src].device, cpu)) continue;
        uint32_t c = copy_of(plan, m, src, cpu);
        if (c == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        g->outputs[i].node = c;
        if (i < plan->res.noutputs)
            plan->res.outputs[i].node = c; /* same order */
    }
    return BRAID_OK;
}

braid_status bp_copies(bp_plan *plan) {
    braid_status s = bp_plan_sync_info(plan);
    if (s != BRAID_OK) return s;
    copy_map m = {NULL, NULL, plan->res.graph->nnodes, 0};
    m.head = bp_calloc(m.n0, sizeof *m.head, "copies: copy table");
    if (!m.head) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < m.n0; i++)
        m.head[i] = BG_NONE;
    s = rewire_inputs(plan, &m);
    if (s == BRAID_OK) s = rewire_outputs(plan, &m);
    bool added = plan->res.graph->nnodes > m.n0;
    free(m.head);
    free(m.next);
    if (s == BRAID_OK && added) s = bp_plan_compact(plan);
    return s;
}
