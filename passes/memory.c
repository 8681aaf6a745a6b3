/* passes/memory.c — the memory pass: where every tensor's bytes live.
 *
 *   1. storage (memory_views.c): inputs in the caller's memory, cpu
 *      constants in the graph, views sharing their base's bytes, concats
 *      assembled in place; everything else owns bytes in its device's
 *      arena (GPU constants too: the executor uploads them at creation);
 *   2. happens-before over the schedule (memory_hb.c): queue order plus
 *      events, as vector clocks;
 *   3. in place (memory_views.c): elementwise nodes over a dead input;
 *   4. groups, lower bounds and offsets (memory_pack.c): one arena per
 *      device, greedy by size, bytes shared only under happens-before,
 *      reuse events added where they keep an arena from growing;
 *   5. a pinned staging arena on the cpu when host and GPU copy.
 * With BRAID_PASS_REUSE disabled, steps 3 and the sharing of 4 are
 * skipped: every group gets bytes of its own (views are still views).
 * docs/memory.md states the rules and the figures. */
#include "passes/memory.h"

#include <stdlib.h>
#include <string.h>

/* Reuse events the greedy (memory_pack.c) may add: up to one per
 * scheduled node, like the sweep (where streams do not know each other's
 * work, a byte-sharing pair needs one or two). Each one makes the greedy
 * recompute every group's clocks (up to nodes × queues cells), so a big
 * plan gets fewer: at most about 2^26 cells of recomputation in all,
 * which keeps the pass linear in the plan; an arena with more groups than
 * that allows is packed by the sweep first (memory_pack.c,
 * sweep_then_greedy). */
static uint32_t event_budget(const bp_plan *p, uint32_t nq) {
    uint64_t budget = 16 + (uint64_t)p->res.nschedule;
    uint64_t cells = (uint64_t)p->res.nschedule * (nq ? nq : 1);
    uint64_t cap = ((uint64_t)1 << 26) / (cells ? cells : 1);
    return (uint32_t)(budget < cap ? budget : cap);
}

/* The sweep's reuse events (memory_sweep.c). It adds them in schedule
 * order, each to a writer of the group being placed, so the clocks they
 * change are recomputed lazily over about the span of schedule they cover
 * (bp_mem_hb_need), not the rest of the plan each: the budget can grow
 * with the plan. Up to one event per scheduled node (where streams do not
 * know each other's work, a byte-sharing pair needs one or two), and the
 * clock cells recomputed stay within BP_MEM_SWEEP_CELLS × nodes × queues
 * (plus 2^22 for small plans), so the pass stays linear in the plan even
 * where groups' writers span much of the schedule. */
static void sweep_budget(bp_mem *m) {
    uint64_t cells =
        (uint64_t)m->plan->res.nschedule * (m->hb.nq ? m->hb.nq : 1);
    m->sweep_events = m->reuse ? 16 + m->plan->res.nschedule : 0;
    m->sweep_cells =
        m->hb.cells + BP_MEM_SWEEP_CELLS * cells + ((uint64_t)1 << 22);
}

/* Reuse events from an earlier run of this pass are stale. */
static void drop_reuse_events(bp_plan *p) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->res.nevents; i++)
        if (!p->res.events[i].reuse) p->res.events[k++] = p->res.events[i];
    p->res.nevents = k;
}

/* Readers of every node (one entry per reading node) and output flags. */
static braid_status list_users(bp_mem *m) {
    const braid_graph *g = m->plan->res.graph;
    uint32_t n = g->nnodes;
    m->ustart = bp_calloc((size_t)n + 1, sizeof *m->ustart, "memory users");
    size_t nedges = 0;
    for (uint32_t id = 0; id < n; id++) nedges += g->nodes[id].ninputs;
    m->users = bp_calloc(nedges, sizeof *m->users, "memory users");
    if (!m->ustart || !m->users) return BRAID_ERR_OUT_OF_MEMORY;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t id = 0; id < n; id++) {
            const bg_node *nd = &g->nodes[id];
            for (uint32_t k = 0; k < nd->ninputs; k++) {
                uint32_t in = nd->inputs[k];
                bool dup = in >= n;
                for (uint32_t j = 0; j < k && !dup; j++)
                    dup = nd->inputs[j] == in;
                if (dup) continue;
                if (pass == 0)
                    m->ustart[in + 1]++;
                else
                    m->users[m->ustart[in]++] = id;
            }
        }
        if (pass == 0)
            for (uint32_t id = 0; id < n; id++)
                m->ustart[id + 1] += m->ustart[id];
    }
    for (uint32_t id = n; id > 0; id--) m->ustart[id] = m->ustart[id - 1];
    m->ustart[0] = 0;
    for (uint32_t i = 0; i < m->plan->res.noutputs; i++)
        if (m->plan->res.outputs[i].node < n)
            m->output[m->plan->res.outputs[i].node] = true;
    return BRAID_OK;
}

static braid_status alloc_tables(bp_mem *m) {
    uint32_t n = m->plan->res.graph->nnodes;
    size_t cells = (size_t)n * (m->hb.nq ? m->hb.nq : 1);
    m->output = bp_calloc(n, sizeof *m->output, "memory tables");
    m->to_end = bp_calloc(n, sizeof *m->to_end, "memory tables");
    m->base = bp_calloc(n, sizeof *m->base, "memory tables");
    m->voff = bp_calloc(n, sizeof *m->voff, "memory tables");
    m->parent = bp_calloc(n, sizeof *m->parent, "memory tables");
    m->gid = bp_calloc(n, sizeof *m->gid, "memory tables");
    m->lastacc = bp_calloc(cells, sizeof *m->lastacc, "memory tables");
    m->qscratch = bp_calloc(2 * (size_t)(m->hb.nq ? m->hb.nq : 1),
                            sizeof *m->qscratch, "memory tables");
    if (!m->output || !m->to_end || !m->base || !m->voff || !m->parent ||
        !m->gid || !m->lastacc || !m->qscratch)
        return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t id = 0; id < n; id++) m->parent[id] = id;
    return list_users(m);
}

static void free_tables(bp_mem *m) {
    bp_mem_hb_free(&m->hb);
    free(m->ustart);
    free(m->users);
    free(m->output);
    free(m->to_end);
    free(m->base);
    free(m->voff);
    free(m->parent);
    free(m->gid);
    free(m->group);
    free(m->writer);
    free(m->lastacc);
    free(m->known);
    free(m->qscratch);
}

/* One DEVICE arena per device holding arena tensors, in plan->devices
 * order; arena_of[d] is its index (BG_NONE for devices without). */
static braid_status make_arenas(bp_mem *m, uint32_t *arena_of) {
    bp_plan *p = m->plan;
    for (uint32_t d = 0; d < p->in.devs.ndevices; d++) {
        arena_of[d] = BG_NONE;
        bool used = false;
        for (uint32_t g = 0; g < m->ngroups && !used; g++)
            used = m->group[g].device == d;
        if (!used) continue;
        uint64_t bytes = 0;
        braid_status s = bp_mem_pack(m, d, &bytes);
        if (s != BRAID_OK) return s;
        arena_of[d] = p->res.narenas;
        p->res.arenas[p->res.narenas++] =
            (bp_arena){BP_ARENA_DEVICE, p->in.devs.devices[d], bytes,
                       bp_mem_lower_bound(m, d)};
    }
    return BRAID_OK;
}

/* The pinned staging arena: two slots of min(largest host↔GPU copy,
 * BP_MEM_STAGING_SLOT), when the plan copies between host and a GPU. */
static void staging_arena(bp_plan *p) {
    const braid_graph *g = p->res.graph;
    bool any = false;
    uint64_t largest = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bg_node *n = &g->nodes[id];
        if (n->op != BRAID_OP_COPY || n->inputs[0] >= g->nnodes) continue;
        bool src_cpu = p->res.info[n->inputs[0]].device.kind == BP_DEVICE_CPU;
        bool dst_cpu = p->res.info[id].device.kind == BP_DEVICE_CPU;
        if (src_cpu == dst_cpu) continue;
        any = true;
        if (bg_nbytes(n) > largest) largest = bg_nbytes(n);
    }
    if (!any) return;
    uint64_t slot = largest < BP_MEM_STAGING_SLOT ? largest
                                                  : BP_MEM_STAGING_SLOT;
    slot = (slot + BP_MEM_ALIGN_CPU - 1) / BP_MEM_ALIGN_CPU * BP_MEM_ALIGN_CPU;
    p->res.arenas[p->res.narenas++] = (bp_arena){
        BP_ARENA_PINNED, (bp_device){BP_DEVICE_CPU, 0}, 2 * slot, 2 * slot};
}

/* Offsets into info.place: arena tensors at their group's offset, views
 * at their root. */
static void write_places(bp_mem *m, const uint32_t *arena_of) {
    bp_plan *p = m->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->storage == BP_STORAGE_VIEW) {
            pl->base = m->base[id];
            pl->offset = m->voff[id];
        } else if (pl->storage == BP_STORAGE_ARENA) {
            const bp_mem_group *gr = &m->group[m->gid[id]];
            pl->arena = arena_of[gr->device];
            pl->offset = gr->offset;
        }
    }
}

/* Appends the packer's reuse events to plan->events. */
static braid_status commit_events(bp_mem *m) {
    bp_plan *p = m->plan;
    if (m->hb.nx == 0) return BRAID_OK;
    bp_event *e =
        realloc(p->res.events, ((size_t)p->res.nevents + m->hb.nx) * sizeof *e);
    if (!e)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "memory: out of memory adding reuse events");
    p->res.events = e;
    for (uint32_t k = 0; k < m->hb.nx; k++)
        p->res.events[p->res.nevents++] =
            (bp_event){m->hb.xsrc[k], m->hb.xdst[k], true};
    return BRAID_OK;
}

static braid_status run(bp_mem *m) {
    bp_plan *p = m->plan;
    braid_status s = bp_mem_hb_init(&m->hb, p);
    if (s == BRAID_OK) s = alloc_tables(m);
    if (s == BRAID_OK) s = bp_mem_views(m);
    if (s != BRAID_OK) return s;
    if (m->reuse) bp_mem_in_place(m);
    s = bp_mem_groups(m);
    if (s != BRAID_OK) return s;
    m->event_budget = m->reuse ? event_budget(p, m->hb.nq) : 0;
    sweep_budget(m);
    uint32_t arena_of[BP_MAX_DEVICES];
    s = make_arenas(m, arena_of);
    if (s != BRAID_OK) return s;
    write_places(m, arena_of);
    staging_arena(p);
    return commit_events(m);
}

braid_status bp_memory(bp_plan *plan) {
    free(plan->res.arenas);
    plan->res.narenas = 0;
    plan->res.arenas = bp_calloc(plan->in.devs.ndevices + 1,
                                 sizeof *plan->res.arenas, "arenas");
    if (!plan->res.arenas) return BRAID_ERR_OUT_OF_MEMORY;
    drop_reuse_events(plan);
    bp_mem m;
    memset(&m, 0, sizeof m);
    m.plan = plan;
    m.reuse = !(plan->in.settings.disabled & BRAID_PASS_REUSE);
    m.horizon = UINT32_MAX;
    braid_status s = run(&m);
    free_tables(&m);
    return s;
}
