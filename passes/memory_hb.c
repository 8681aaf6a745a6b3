/* passes/memory_hb.c — happens-before over a plan's schedule.
 *
 * Node a happens-before node b when a completes before b starts on every
 * executor: a precedes b on the same queue, or a chain of queue order and
 * events leads from a to b. Each node carries a vector clock over the
 * queues: clock[b][j] is the last position on queue j known complete when b
 * starts. Clocks are computed in schedule order (every queue predecessor
 * and every event source comes earlier in the schedule), so
 *   a happens-before b  ⇔  qpos(a) ≤ clock[b][queue(a)].
 * Events whose source is not earlier in the schedule are ignored here (no
 * ordering is assumed from them; verify_plan rejects such plans). */
#include "passes/memory.h"

#include <stdlib.h>
#include <string.h>

static braid_status hb_oom(void) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "memory: out of memory for the happens-before "
                             "tables");
}

/* Dense queue numbers for the plan's queues that hold scheduled nodes; a
 * node with an invalid queue gets one extra queue of its own kind. */
static braid_status number_queues(bp_mem_hb *hb, const bp_plan *p) {
    uint32_t nplan = p->res.nqueues + 1; /* last slot: invalid queue ids */
    uint32_t *dense = bp_calloc(nplan, sizeof *dense, "memory queues");
    if (!dense) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t q = 0; q < nplan; q++) dense[q] = BG_NONE;
    hb->nq = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id >= hb->n || hb->pos[id] != i) continue;
        uint32_t q = p->res.info[id].queue < p->res.nqueues
                         ? p->res.info[id].queue
                         : p->res.nqueues;
        if (dense[q] == BG_NONE) dense[q] = hb->nq++;
        hb->queue[id] = dense[q];
    }
    free(dense);
    hb->qstart = bp_calloc(hb->nq + 1, sizeof *hb->qstart, "memory queues");
    hb->qnode = bp_calloc(p->res.nschedule, sizeof *hb->qnode, "memory queues");
    if (!hb->qstart || !hb->qnode) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id < hb->n && hb->pos[id] == i) hb->qstart[hb->queue[id] + 1]++;
    }
    for (uint32_t q = 0; q < hb->nq; q++) hb->qstart[q + 1] += hb->qstart[q];
    uint32_t *fill = bp_calloc(hb->nq + 1, sizeof *fill, "memory queues");
    if (!fill) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id >= hb->n || hb->pos[id] != i) continue;
        uint32_t q = hb->queue[id];
        hb->qpos[id] = fill[q];
        hb->qnode[hb->qstart[q] + fill[q]++] = id;
    }
    free(fill);
    return BRAID_OK;
}

/* The plan's events as per-node wait lists (only sources scheduled
 * earlier than the waiting node). */
static braid_status list_events(bp_mem_hb *hb, const bp_plan *p) {
    hb->estart = bp_calloc((size_t)hb->n + 1, sizeof *hb->estart, "events");
    hb->ewait = bp_calloc(p->res.nevents, sizeof *hb->ewait, "events");
    if (!hb->estart || !hb->ewait) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        uint32_t a = p->res.events[k].after, b = p->res.events[k].before;
        if (a < hb->n && b < hb->n && hb->pos[a] < hb->pos[b] &&
            hb->pos[b] != UINT32_MAX)
            hb->estart[b + 1]++;
    }
    for (uint32_t i = 0; i < hb->n; i++) hb->estart[i + 1] += hb->estart[i];
    uint32_t *fill = bp_calloc(hb->n, sizeof *fill, "events");
    if (!fill) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        uint32_t a = p->res.events[k].after, b = p->res.events[k].before;
        if (a < hb->n && b < hb->n && hb->pos[a] < hb->pos[b] &&
            hb->pos[b] != UINT32_MAX)
            hb->ewait[hb->estart[b] + fill[b]++] = a;
    }
    free(fill);
    return BRAID_OK;
}

braid_status bp_mem_hb_init(bp_mem_hb *hb, const bp_plan *p) {
    memset(hb, 0, sizeof *hb);
    hb->n = p->res.graph->nnodes;
    hb->pos = bp_calloc(hb->n, sizeof *hb->pos, "memory positions");
    hb->queue = bp_calloc(hb->n, sizeof *hb->queue, "memory positions");
    hb->qpos = bp_calloc(hb->n, sizeof *hb->qpos, "memory positions");
    hb->xhead = bp_calloc(hb->n, sizeof *hb->xhead, "memory positions");
    if (!hb->pos || !hb->queue || !hb->qpos || !hb->xhead)
        return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < hb->n; i++) {
        hb->pos[i] = UINT32_MAX;
        hb->xhead[i] = BG_NONE;
    }
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id < hb->n && hb->pos[id] == UINT32_MAX) hb->pos[id] = i;
    }
    braid_status s = number_queues(hb, p);
    if (s == BRAID_OK) s = list_events(hb, p);
    if (s != BRAID_OK) return s;
    hb->clock = bp_calloc((size_t)hb->n * (hb->nq ? hb->nq : 1),
                          sizeof *hb->clock, "memory clocks");
    if (!hb->clock) return hb_oom();
    bp_mem_hb_clocks(hb, p);
    return BRAID_OK;
}

void bp_mem_hb_free(bp_mem_hb *hb) {
    free(hb->pos);
    free(hb->queue);
    free(hb->qpos);
    free(hb->qstart);
    free(hb->qnode);
    free(hb->clock);
    free(hb->estart);
    free(hb->ewait);
    free(hb->xhead);
    free(hb->xsrc);
    free(hb->xdst);
    free(hb->xnext);
    memset(hb, 0, sizeof *hb);
}

/* c := max(c, what is known once node a has completed). */
static void join_done(const bp_mem_hb *hb, int32_t *c, uint32_t a) {
    const int32_t *ca = hb->clock + (size_t)a * hb->nq;
    for (uint32_t j = 0; j < hb->nq; j++)
        if (ca[j] > c[j]) c[j] = ca[j];
    if ((int32_t)hb->qpos[a] > c[hb->queue[a]])
        c[hb->queue[a]] = (int32_t)hb->qpos[a];
}

/* Clocks of the scheduled nodes at positions [from, to). */
static void clocks_range(bp_mem_hb *hb, const bp_plan *p, uint32_t from,
                         uint32_t to) {
    if (to > p->res.nschedule) to = p->res.nschedule;
    if (from < to) hb->cells += (uint64_t)(to - from) * hb->nq;
    for (uint32_t i = from; i < to; i++) {
        uint32_t id = p->res.schedule[i];
        if (id >= hb->n || hb->pos[id] != i) continue;
        int32_t *c = hb->clock + (size_t)id * hb->nq;
        for (uint32_t j = 0; j < hb->nq; j++) c[j] = -1;
        uint32_t q = hb->queue[id];
        if (hb->qpos[id] > 0)
            join_done(hb, c, hb->qnode[hb->qstart[q] + hb->qpos[id] - 1]);
        for (uint32_t k = hb->estart[id]; k < hb->estart[id + 1]; k++)
            join_done(hb, c, hb->ewait[k]);
        for (uint32_t k = hb->xhead[id]; k != BG_NONE; k = hb->xnext[k])
            join_done(hb, c, hb->xsrc[k]);
    }
}

void bp_mem_hb_clocks(bp_mem_hb *hb, const bp_plan *p) {
    clocks_range(hb, p, 0, p->res.nschedule);
    hb->valid = p->res.nschedule;
}

void bp_mem_hb_need(bp_mem_hb *hb, const bp_plan *p, uint32_t pos) {
    if (pos < hb->valid || hb->valid >= p->res.nschedule) return;
    uint32_t to = pos < p->res.nschedule ? pos + 1 : p->res.nschedule;
    clocks_range(hb, p, hb->valid, to);
    hb->valid = to;
}

braid_status bp_mem_hb_add_wait(bp_mem_hb *hb, const bp_plan *p, uint32_t a,
                                uint32_t b) {
    if (hb->nx == hb->xcap) {
        uint32_t cap = hb->xcap ? hb->xcap * 2 : 16;
        uint32_t *s = realloc(hb->xsrc, cap * sizeof *s);
        if (s) hb->xsrc = s;
        uint32_t *d = realloc(hb->xdst, cap * sizeof *d);
        if (d) hb->xdst = d;
        uint32_t *x = realloc(hb->xnext, cap * sizeof *x);
        if (x) hb->xnext = x;
        if (!s || !d || !x) return hb_oom();
        hb->xcap = cap;
    }
    hb->xsrc[hb->nx] = a;
    hb->xdst[hb->nx] = b;
    hb->xnext[hb->nx] = hb->xhead[b];
    hb->xhead[b] = hb->nx++;
    if (hb->pos[b] < hb->valid) hb->valid = hb->pos[b];
    /* b's clock knows a at once, even while it is not recomputed (a stale
     * clock joined with a stale clock is still never ahead of the truth):
     * no later wait repeats this one */
    join_done(hb, hb->clock + (size_t)b * hb->nq, a);
    (void)p;
    return BRAID_OK;
}

void bp_mem_hb_truncate(bp_mem_hb *hb, const bp_plan *p, uint32_t nx) {
    if (nx >= hb->nx) return;
    uint32_t from = UINT32_MAX;
    while (hb->nx > nx) {
        uint32_t k = --hb->nx, b = hb->xdst[k];
        hb->xhead[b] = hb->xnext[k];
        if (hb->pos[b] < from) from = hb->pos[b];
    }
    if (from < hb->valid) hb->valid = from;
    (void)p;
}
