/* passes/plan_summary.c — the public plan summary: counts, devices,
 * arenas, provenance and stored kernels of a compiled plan
 * (braid_plan_summary_get and friends), read straight from the plan's data
 * (passes/plan.h), so tools/ need not include it. */
#include "passes/passes.h"

#include <string.h>

/* Nodes with both a graph node and an info entry: all of them in a
 * compiled plan; fewer only in a half-built one, which must not crash the
 * accessors. */
static uint32_t plan_nodes(const bp_plan *p) {
    if (!p->res.graph || !p->res.info) return 0;
    return p->res.ninfo < p->res.graph->nnodes ? p->res.ninfo
                                               : p->res.graph->nnodes;
}

braid_status braid_plan_summary_get(const braid_plan *p,
                                    braid_plan_summary *out) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_summary_get: %s is NULL",
                                 !p ? "plan" : "out");
    memset(out, 0, sizeof *out);
    out->devices = p->in.devs.ndevices;
    out->nodes = plan_nodes(p);
    for (uint32_t id = 0; id < out->nodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        out->fused_kernels += n->op == BRAID_OP_FUSED;
        if (n->op == BRAID_OP_COPY) {
            out->copies++;
            out->copy_bytes += bg_nbytes(n);
        }
        out->chunk_nodes += p->res.info[id].chunk;
    }
    out->queues = p->res.nqueues;
    out->events = p->res.events ? p->res.nevents : 0;
    for (uint32_t i = 0; i < out->events; i++)
        out->reuse_events += p->res.events[i].reuse;
    out->arenas = p->res.arenas ? p->res.narenas : 0;
    for (uint32_t i = 0; i < out->arenas; i++) {
        out->arena_bytes += p->res.arenas[i].bytes;
        out->lower_bound_bytes += p->res.arenas[i].lower_bound;
    }
    return BRAID_OK;
}

/* The indexed accessors' checks: fn's plan and out not NULL, item i of the
 * plan's n `what`s in range. */
static braid_status check_get(const char *fn, const braid_plan *p,
                              const void *out, const char *what, uint32_t i,
                              uint32_t n) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: %s is NULL",
                                 fn, !p ? "plan" : "out");
    if (i >= n)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: %s %u out of range (the plan has %u)", fn,
                                 what, (unsigned)i, (unsigned)n);
    return BRAID_OK;
}

braid_status braid_plan_device_get(const braid_plan *p, uint32_t i,
                                   braid_plan_device_info *out) {
    uint32_t ndev = p ? p->in.devs.ndevices : 0;
    braid_status s = check_get("braid_plan_device_get", p, out, "device", i,
                               ndev < BP_MAX_DEVICES ? ndev : BP_MAX_DEVICES);
    if (s != BRAID_OK) return s;
    memset(out, 0, sizeof *out);
    bp_device d = p->in.devs.devices[i];
    bp_device_str(d, out->name, sizeof out->name);
    uint32_t n = plan_nodes(p);
    for (uint32_t id = 0; id < n; id++)
        out->nodes += bp_device_equal(p->res.info[id].device, d);
    for (uint32_t q = 0; p->res.queues && q < p->res.nqueues; q++)
        out->queues += bp_device_equal(p->res.queues[q].device, d);
    return BRAID_OK;
}

braid_status braid_plan_arena_get(const braid_plan *p, uint32_t i,
                                  braid_plan_arena_info *out) {
    uint32_t n = p && p->res.arenas ? p->res.narenas : 0;
    braid_status s = check_get("braid_plan_arena_get", p, out, "arena", i, n);
    if (s != BRAID_OK) return s;
    memset(out, 0, sizeof *out);
    const bp_arena *a = &p->res.arenas[i];
    bp_device_str(a->device, out->device, sizeof out->device);
    out->kind =
        a->kind == BP_ARENA_PINNED ? BRAID_ARENA_PINNED : BRAID_ARENA_DEVICE;
    out->bytes = a->bytes;
    out->lower_bound_bytes = a->lower_bound;
    return BRAID_OK;
}

braid_status braid_plan_provenance_get(const braid_plan *p,
                                       braid_plan_provenance *out) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_provenance_get: %s is NULL",
                                 !p ? "plan" : "out");
    const bp_provenance *pv = bp_plan_provenance(p);
    const bp_kernels *k = bp_plan_kernels(p);
    memset(out, 0, sizeof *out);
    out->loaded = pv->loaded;
    memcpy(out->braid_version, pv->braid_version, sizeof out->braid_version);
    out->nvrtc_version = pv->nvrtc_version;
    out->created = pv->created;
    out->kernels = k->source ? k->nkernels : 0;
    out->source_bytes = k->source ? k->source_len : 0;
    out->archs = k->bin ? k->nbin : 0;
    return BRAID_OK;
}

braid_status braid_plan_arch_get(const braid_plan *p, uint32_t i,
                                 braid_plan_arch_info *out) {
    const bp_kernels *k = p ? bp_plan_kernels(p) : NULL;
    uint32_t n = k && k->bin ? k->nbin : 0;
    braid_status s =
        check_get("braid_plan_arch_get", p, out, "architecture", i, n);
    if (s != BRAID_OK) return s;
    const bp_kernel_binary *b = &k->bin[i];
    out->sm = b->sm;
    out->cubin_bytes = b->cubin ? b->cubin_size : 0;
    out->ptx_bytes = b->ptx ? b->ptx_size : 0;
    return BRAID_OK;
}

/* ---- placement decisions (recorded by passes/place.c) -------------------- */

_Static_assert((int)BP_PLACE_COST == (int)BRAID_PLACE_COST_MODEL &&
                   (int)BP_PLACE_COLLECTIVE == (int)BRAID_PLACE_COLLECTIVE &&
                   (int)BP_PLACE_CHECKED_CAST ==
                       (int)BRAID_PLACE_CHECKED_CAST,
               "bp_place_reason and braid_place_reason list the same "
               "reasons in the same order");

uint32_t braid_plan_placement_count(const braid_plan *p) {
    return p && p->placement.notes ? p->placement.nnotes : 0;
}

static const char *reason_words(bp_place_reason r) {
    static const char *const words[] = {
        [BP_PLACE_ONLY_DEVICE] = "the only device compiled for",
        [BP_PLACE_HINT] = "device hint",
        [BP_PLACE_HOST_DATA] = "input/constant: host memory",
        [BP_PLACE_FOLLOW] = "shape op: with its input",
        [BP_PLACE_GENERATOR] = "generator: where its consumers are",
        [BP_PLACE_COST] = "cost model: cheapest device",
        [BP_PLACE_PREFER_GPU] = "--devices named no cpu: GPU preferred",
        [BP_PLACE_COLLECTIVE] = "collective: with its own input",
        [BP_PLACE_CHECKED_CAST] = "range-checked cast from i64 (no longer given)",
    };
    return (unsigned)r < sizeof words / sizeof words[0] ? words[r] : "?";
}

braid_status braid_plan_placement_get(const braid_plan *p, uint32_t i,
                                      braid_node_placement *out) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_placement_get: %s is NULL",
                                 !p ? "plan" : "out");
    uint32_t n = braid_plan_placement_count(p);
    if (i >= n)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_placement_get: decision %u out "
                                 "of range (the plan has %u)",
                                 (unsigned)i, (unsigned)n);
    const bp_placement *r = &p->placement;
    const bp_place_note *note = &r->notes[i];
    memset(out, 0, sizeof *out);
    out->node = note->origin == BG_NONE ? BRAID_INVALID_ID : note->origin;
    out->op = bg_op(note->op)->name;
    if (p->prov.source && note->origin < p->prov.source->nnodes)
        out->name = bg_node_at(p->prov.source, note->origin)->name;
    if (note->device < p->in.devs.ndevices)
        bp_device_str(p->in.devs.devices[note->device], out->device,
                      sizeof out->device);
    /* the public enum lists the reasons in the same order */
    out->reason = (braid_place_reason)note->reason;
    out->why = reason_words((bp_place_reason)note->reason);
    if (note->costed) {
        out->ndevices = r->ndevices;
        out->cost_s = &r->cost[(size_t)i * r->ndevices];
        out->transfer_s = &r->transfer[(size_t)i * r->ndevices];
    }
    return BRAID_OK;
}
