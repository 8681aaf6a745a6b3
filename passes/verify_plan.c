/* passes/verify_plan.c — the independent plan checker.
 *
 * Trusts nothing the other passes computed: it re-derives positions and
 * lifetimes from the schedule and checks every read, every place and every
 * pair of tensors sharing an arena. Runs at the end of every compile. */
#include "passes/passes.h"

#include <stdlib.h>

typedef struct vp_state {
    const bp_plan *plan; /* the plan checked */
    int64_t *pos;        /* per node: schedule position, -1 when absent */
    int64_t *last;       /* per node: last reading position (nschedule for
                            outputs), -1 when never read */
} vp_state;

static braid_status fail(const char *fmt, uint32_t id, uint32_t other) {
    return bg_set_last_error(BRAID_ERR_INTERNAL, "verify_plan: node %u: %s %u",
                             id, fmt, other);
}

static bool device_listed(const bp_plan *p, bp_device d) {
    if (d.kind == BP_DEVICE_CPU) return true; /* the host always exists */
    for (uint32_t i = 0; i < p->ndevices; i++)
        if (bp_device_equal(p->devices[i], d)) return true;
    return false;
}

static braid_status check_order(vp_state *st) {
    const bp_plan *p = st->plan;
    for (uint32_t i = 0; i < p->ninfo; i++)
        st->pos[i] = st->last[i] = -1;
    for (uint32_t i = 0; i < p->nschedule; i++) {
        uint32_t id = p->schedule[i];
        if (id >= p->ninfo)
            return fail("scheduled id out of range, position", id, i);
        if (st->pos[id] >= 0)
            return fail("scheduled twice, again at position", id, i);
        st->pos[id] = i;
        const bg_node *n = &p->graph->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t in = n->inputs[k];
            if (in >= p->ninfo || st->pos[in] < 0)
                return fail("reads a node not scheduled before it:", id, in);
            st->last[in] = i;
        }
    }
    for (uint32_t i = 0; i < p->noutputs; i++) {
        uint32_t id = p->outputs[i].node;
        if (id >= p->ninfo || st->pos[id] < 0)
            return fail("is an output but not scheduled; output", id, i);
        if (p->outputs[i].bytes != bg_nbytes(&p->graph->nodes[id]))
            return fail("output table has the wrong size; output", id, i);
        st->last[id] = p->nschedule;
    }
    return BRAID_OK;
}

static braid_status check_place(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->graph->nodes[id];
    const bp_tensor_place *pl = &p->info[id].place;
    if (!device_listed(p, p->info[id].device))
        return fail("runs on a device the plan does not list; kind", id,
                    p->info[id].device.kind);
    if (pl->bytes != bg_nbytes(n))
        return fail("place has the wrong size; storage", id, pl->storage);
    bool in = n->op == BRAID_OP_INPUT, k = n->op == BRAID_OP_CONSTANT;
    switch (pl->storage) {
    case BP_STORAGE_NONE:
        return fail("has no place; storage", id, pl->storage);
    case BP_STORAGE_INPUT:
    case BP_STORAGE_CONSTANT:
        if (pl->storage != (in  ? BP_STORAGE_INPUT
                            : k ? BP_STORAGE_CONSTANT
                                : BP_STORAGE_NONE))
            return fail("is placed in caller/graph memory it is not; "
                        "storage",
                        id, pl->storage);
        return BRAID_OK;
    case BP_STORAGE_VIEW:
        if (pl->base >= p->ninfo || pl->offset > p->info[pl->base].place.bytes ||
            pl->bytes > p->info[pl->base].place.bytes - pl->offset)
            return fail("is a view outside its base", id, pl->base);
        return BRAID_OK;
    case BP_STORAGE_ARENA:
        break;
    }
    if (pl->arena >= p->narenas)
        return fail("is placed in a missing arena", id, pl->arena);
    const bp_arena *a = &p->arenas[pl->arena];
    if (pl->offset > a->bytes || pl->bytes > a->bytes - pl->offset)
        return fail("runs past the end of arena", id, pl->arena);
    if (!bp_device_equal(a->device, p->info[id].device))
        return fail("lives on another device than it runs on; arena", id,
                    pl->arena);
    return BRAID_OK;
}

/* A buffer tensor, keyed for sorting by where it lives. */
typedef struct vp_span {
    uint32_t arena;  /* arena index */
    uint64_t offset; /* first byte */
    uint64_t bytes;  /* size */
    uint32_t id;     /* node id */
} vp_span;

static int by_arena_offset(const void *x, const void *y) {
    const vp_span *a = x, *b = y;
    if (a->arena != b->arena) return a->arena < b->arena ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static bool lifetimes_meet(const vp_state *st, uint32_t a, uint32_t b) {
    int64_t a0 = st->pos[a], a1 = st->last[a] < a0 ? a0 : st->last[a];
    int64_t b0 = st->pos[b], b1 = st->last[b] < b0 ? b0 : st->last[b];
    return a0 <= b1 && b0 <= a1;
}

/* Two tensors may share bytes only when one is dead before the other is
 * written. Sorted by (arena, offset), only spans that overlap in bytes need
 * comparing. */
static braid_status check_overlaps(vp_state *st, vp_span *sp, uint32_t n) {
    qsort(sp, n, sizeof *sp, by_arena_offset);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = i + 1; j < n; j++) {
            if (sp[j].arena != sp[i].arena ||
                sp[j].offset >= sp[i].offset + sp[i].bytes)
                break;
            if (sp[i].bytes > 0 && sp[j].bytes > 0 &&
                lifetimes_meet(st, sp[i].id, sp[j].id))
                return fail("shares arena bytes with live node", sp[i].id,
                            sp[j].id);
        }
    }
    return BRAID_OK;
}

static braid_status check_all(vp_state *st, vp_span *sp) {
    const bp_plan *p = st->plan;
    braid_status s = check_order(st);
    uint32_t nbuf = 0;
    for (uint32_t i = 0; s == BRAID_OK && i < p->nschedule; i++) {
        uint32_t id = p->schedule[i];
        s = check_place(p, id);
        const bp_tensor_place *pl = &p->info[id].place;
        if (s == BRAID_OK && pl->storage == BP_STORAGE_ARENA)
            sp[nbuf++] = (vp_span){pl->arena, pl->offset, pl->bytes, id};
    }
    for (uint32_t i = 0; s == BRAID_OK && i < p->ninputs; i++) {
        uint32_t id = p->inputs[i].node;
        if (id >= p->ninfo || p->graph->nodes[id].op != BRAID_OP_INPUT ||
            p->inputs[i].bytes != bg_nbytes(&p->graph->nodes[id]))
            s = fail("input table entry is wrong; entry", id, i);
    }
    return s == BRAID_OK ? check_overlaps(st, sp, nbuf) : s;
}

braid_status bp_verify_plan(bp_plan *plan) {
    vp_state st = {plan, NULL, NULL};
    st.pos = bp_calloc(plan->ninfo, sizeof *st.pos, "verify_plan positions");
    st.last = bp_calloc(plan->ninfo, sizeof *st.last, "verify_plan uses");
    vp_span *sp = bp_calloc(plan->nschedule, sizeof *sp, "verify_plan spans");
    braid_status s =
        st.pos && st.last && sp ? check_all(&st, sp) : BRAID_ERR_OUT_OF_MEMORY;
    free(st.pos);
    free(st.last);
    free(sp);
    return s;
}
