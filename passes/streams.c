/* passes/streams.c — PLACEHOLDER: the CPU queue, and per GPU one compute,
 * one H2D, one D2H and one D2D queue; an event on every cross-queue edge. */
#include "passes/passes.h"

#include <stdlib.h>

/* Index of the queue (kind, device, 0), added when missing; BG_NONE when
 * the table is full. */
static uint32_t queue_of(bp_plan *p, bp_queue_kind kind, bp_device dev) {
    for (uint32_t q = 0; q < p->nqueues; q++)
        if (p->queues[q].kind == kind && bp_device_equal(p->queues[q].device, dev))
            return q;
    if (p->nqueues == BP_MAX_QUEUES) return BG_NONE;
    p->queues[p->nqueues] = (bp_queue){kind, dev, 0};
    return p->nqueues++;
}

static uint32_t node_queue(bp_plan *p, uint32_t id) {
    const bg_node *n = &p->graph->nodes[id];
    bp_device dst = p->info[id].device;
    if (n->op == BRAID_OP_COPY) {
        bp_device src = p->info[n->inputs[0]].device;
        if (dst.kind == BP_DEVICE_CUDA && src.kind == BP_DEVICE_CPU)
            return queue_of(p, BP_QUEUE_H2D, dst);
        if (dst.kind == BP_DEVICE_CPU && src.kind == BP_DEVICE_CUDA)
            return queue_of(p, BP_QUEUE_D2H, src);
        if (dst.kind == BP_DEVICE_CUDA) return queue_of(p, BP_QUEUE_D2D, dst);
    }
    if (dst.kind == BP_DEVICE_CPU) return 0;
    return queue_of(p, BP_QUEUE_COMPUTE, dst);
}

braid_status bp_streams(bp_plan *plan) {
    const braid_graph *g = plan->graph;
    free(plan->queues);
    free(plan->events);
    plan->nqueues = plan->nevents = 0;
    plan->queues = bp_calloc(BP_MAX_QUEUES, sizeof *plan->queues, "queues");
    size_t nedges = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) nedges += g->nodes[id].ninputs;
    plan->events = bp_calloc(nedges ? nedges : 1, sizeof *plan->events, "events");
    if (!plan->queues || !plan->events) return BRAID_ERR_OUT_OF_MEMORY;
    plan->queues[plan->nqueues++] = (bp_queue){BP_QUEUE_CPU, {BP_DEVICE_CPU, 0}, 0};
    for (uint32_t id = 0; id < g->nnodes; id++) {
        uint32_t q = node_queue(plan, id);
        if (q == BG_NONE)
            return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                     "streams: more than %d queues",
                                     BP_MAX_QUEUES);
        plan->info[id].queue = q;
    }
    /* One event per (producer, consumer) pair on different queues. */
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t in = n->inputs[k];
            bool dup = false;
            for (uint32_t j = 0; j < k; j++) dup |= n->inputs[j] == in;
            if (!dup && plan->info[in].queue != plan->info[id].queue)
                plan->events[plan->nevents++] = (bp_event){in, id, false};
        }
    }
    return BRAID_OK;
}
