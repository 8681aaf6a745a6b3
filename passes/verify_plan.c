/* passes/verify_plan.c — the independent plan checker.
 *
 * Trusts nothing the other passes computed and calls none of their code (the
 * program rules are the IR's own checker, passes/program.c, not a pass):
 * it re-derives positions, queue order, happens-before and lifetimes from
 * the plan's tables and checks, in order:
 *   schedule  a permutation of all nodes, inputs first, info.order right;
 *   io        the input and output tables; outputs scheduled;
 *   device    every node on a listed device;
 *   queue     every node on a queue of its device and kind (copies on the
 *             stream of their direction);
 *   event     valid nodes, the source earlier in the schedule, never two
 *             nodes of one queue, no repeats, data events on data edges;
 *             every cross-queue data edge has one;
 *   place     storage fits the op, views inside their base on the same
 *             device, arena tensors inside an arena of their device and
 *             aligned, work skipped only where nothing is to be done;
 *   arena     listed devices, lower bound ≤ size;
 *   program   fused nodes name a program that bp_program_check
 *             (passes/program.c) accepts for them;
 *   overlap   (verify_plan_overlap.c) tensors sharing arena bytes are
 *             ordered by happens-before.
 * Every failure is BRAID_ERR_INTERNAL with "verify_plan: <check>: ..."
 * naming the nodes. Parts a pass has not produced yet (no schedule, no
 * queues, no places) are skipped, so it can run after any pass. */
#include "passes/verify_plan.h"

#include <stdarg.h>
#include <stdlib.h>

braid_status vp_fail(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bg_set_last_error(BRAID_ERR_INTERNAL, "verify_plan: %s", msg);
}

static const char *op_name(const bp_plan *p, uint32_t id) {
    return bg_op(p->res.graph->nodes[id].op)->name;
}

static bool device_listed(const bp_plan *p, bp_device d) {
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return true;
    return false;
}

/* ---- schedule and io -------------------------------------------------------- */

static braid_status check_schedule(vp_state *st) {
    const bp_plan *p = st->plan;
    if (p->res.nschedule != st->n)
        return vp_fail("schedule: %u entries for %u nodes", p->res.nschedule,
                       st->n);
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id >= st->n)
            return vp_fail("schedule: entry %u is node %u, which does not "
                           "exist",
                           i, id);
        if (st->pos[id] >= 0)
            return vp_fail("schedule: node %u is scheduled twice (entries "
                           "%lld and %u)",
                           id, (long long)st->pos[id], i);
        st->pos[id] = i;
        if (p->res.info[id].order != i)
            return vp_fail("schedule: node %u is entry %u but its info.order "
                           "is %u",
                           id, i, p->res.info[id].order);
        const bg_node *n = &p->res.graph->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k] >= st->n || st->pos[n->inputs[k]] < 0)
                return vp_fail("schedule: node %u (%s) reads node %u, which "
                               "is not scheduled before it",
                               id, op_name(p, id), n->inputs[k]);
    }
    return BRAID_OK;
}

static braid_status check_io(vp_state *st, bool scheduled) {
    const bp_plan *p = st->plan;
    for (uint32_t i = 0; i < p->res.noutputs; i++) {
        uint32_t id = p->res.outputs[i].node;
        if (id >= st->n || (scheduled && st->pos[id] < 0))
            return vp_fail("io: output \"%s\" is node %u, which is not "
                           "scheduled",
                           p->res.outputs[i].name, id);
        if (p->res.outputs[i].bytes != bg_nbytes(&p->res.graph->nodes[id]))
            return vp_fail("io: output \"%s\" (node %u) has %llu bytes in "
                           "the table, %zu in the graph",
                           p->res.outputs[i].name, id,
                           (unsigned long long)p->res.outputs[i].bytes,
                           bg_nbytes(&p->res.graph->nodes[id]));
        st->output[id] = true;
    }
    for (uint32_t i = 0; i < p->res.ninputs; i++) {
        uint32_t id = p->res.inputs[i].node;
        if (id >= st->n || p->res.graph->nodes[id].op != BRAID_OP_INPUT ||
            p->res.inputs[i].bytes != bg_nbytes(&p->res.graph->nodes[id]))
            return vp_fail("io: input table entry %u (node %u) is wrong", i,
                           id);
    }
    return BRAID_OK;
}

/* ---- queues and events --------------------------------------------------------- */

/* The queue kind and device node id must run on. */
static bool expected_queue(const bp_plan *p, uint32_t id, bp_queue *want) {
    const bg_node *n = &p->res.graph->nodes[id];
    bp_device dst = p->res.info[id].device;
    *want = (bp_queue){dst.kind == BP_DEVICE_CPU ? BP_QUEUE_CPU
                                                 : BP_QUEUE_COMPUTE,
                       dst, 0};
    if (bg_op(n->op)->kind == BRAID_KIND_COLLECTIVE &&
        dst.kind == BP_DEVICE_CUDA)
        want->kind = BP_QUEUE_COMM;
    if (n->op != BRAID_OP_COPY) return true;
    bp_device src = p->res.info[n->inputs[0]].device;
    if (bp_device_equal(src, dst)) return false;
    if (src.kind == BP_DEVICE_CPU)
        *want = (bp_queue){BP_QUEUE_H2D, dst, 0};
    else if (dst.kind == BP_DEVICE_CPU)
        *want = (bp_queue){BP_QUEUE_D2H, src, 0};
    else
        *want = (bp_queue){BP_QUEUE_D2D, dst, 0};
    return true;
}

static braid_status check_queue(const bp_plan *p, uint32_t id) {
    static const char *const kinds[] = {"cpu", "compute", "H2D",
                                        "D2H", "D2D",     "comm"};
    char want_dev[32], got[64];
    uint32_t q = p->res.info[id].queue;
    if (q >= p->res.nqueues)
        return vp_fail("queue: node %u (%s) is on queue %u of %u", id,
                       op_name(p, id), q, p->res.nqueues);
    bp_queue want;
    if (!expected_queue(p, id, &want))
        return vp_fail("queue: node %u copies from a device to itself", id);
    const bp_queue *have = &p->res.queues[q];
    if (have->kind != want.kind || !bp_device_equal(have->device, want.device))
        return vp_fail("queue: node %u (%s) runs on queue %u (%s), expected "
                       "a %s queue of %s",
                       id, op_name(p, id), q,
                       bp_queue_str(p, q, got, sizeof got),
                       kinds[want.kind],
                       bp_device_str(want.device, want_dev, sizeof want_dev));
    return BRAID_OK;
}

static braid_status check_queues(vp_state *st) {
    const bp_plan *p = st->plan;
    if (p->res.nqueues == 0 || p->res.queues[0].kind != BP_QUEUE_CPU)
        return vp_fail("queue: queue 0 is not the cpu queue");
    for (uint32_t q = 0; q < p->res.nqueues; q++)
        if (!device_listed(p, p->res.queues[q].device))
            return vp_fail("queue: queue %u is on a device the plan does not "
                           "list",
                           q);
    for (uint32_t id = 0; id < st->n; id++) {
        braid_status s = check_queue(p, id);
        if (s != BRAID_OK) return s;
    }
    return BRAID_OK;
}

/* Index of the event (after → before), or -1. */
static int64_t find_event(const bp_plan *p, const uint32_t *estart,
                          const uint32_t *elist, uint32_t after,
                          uint32_t before) {
    for (uint32_t k = estart[before]; k < estart[before + 1]; k++)
        if (p->res.events[elist[k]].after == after) return elist[k];
    return -1;
}

static bool reads(const bg_node *n, uint32_t id) {
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] == id) return true;
    return false;
}

static braid_status check_event(const vp_state *st, uint32_t k,
                                bool scheduled) {
    const bp_plan *p = st->plan;
    const bp_event *e = &p->res.events[k];
    if (e->after >= st->n || e->before >= st->n)
        return vp_fail("event: event %u joins node %u and node %u, which "
                       "do not both exist",
                       k, e->after, e->before);
    if (scheduled && st->pos[e->after] >= st->pos[e->before])
        return vp_fail("event: event %u makes node %u wait for node %u, "
                       "which is not scheduled before it",
                       k, e->before, e->after);
    if (p->res.info[e->after].queue == p->res.info[e->before].queue)
        return vp_fail("event: event %u joins node %u and node %u on one "
                       "queue (%u)",
                       k, e->after, e->before, p->res.info[e->after].queue);
    if (!e->reuse && !reads(&p->res.graph->nodes[e->before], e->after))
        return vp_fail("event: event %u (node %u → node %u) is a data event "
                       "but node %u does not read node %u",
                       k, e->after, e->before, e->before, e->after);
    return BRAID_OK;
}

static braid_status events_against_edges(const vp_state *st, uint32_t *estart,
                                         uint32_t *elist) {
    const bp_plan *p = st->plan;
    for (uint32_t k = 0; k < p->res.nevents; k++)
        estart[p->res.events[k].before + 1]++;
    for (uint32_t i = 0; i < st->n; i++) estart[i + 1] += estart[i];
    for (uint32_t k = 0; k < p->res.nevents; k++)
        elist[estart[p->res.events[k].before]++] = k;
    for (uint32_t i = st->n; i > 0; i--) estart[i] = estart[i - 1];
    estart[0] = 0;
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        const bp_event *e = &p->res.events[k];
        int64_t first = find_event(p, estart, elist, e->after, e->before);
        if (first != k)
            return vp_fail("event: events %lld and %u both make node %u wait "
                           "for node %u",
                           (long long)first, k, e->before, e->after);
    }
    for (uint32_t id = 0; id < st->n; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        for (uint32_t j = 0; j < n->ninputs; j++) {
            uint32_t in = n->inputs[j];
            if (p->res.info[in].queue != p->res.info[id].queue &&
                find_event(p, estart, elist, in, id) < 0)
                return vp_fail("event: node %u (%s) reads node %u across "
                               "queues %u → %u without an event",
                               id, op_name(p, id), in, p->res.info[in].queue,
                               p->res.info[id].queue);
        }
    }
    return BRAID_OK;
}

static braid_status check_events(vp_state *st, bool scheduled) {
    const bp_plan *p = st->plan;
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        braid_status s = check_event(st, k, scheduled);
        if (s != BRAID_OK) return s;
    }
    uint32_t *estart = bp_calloc((size_t)st->n + 1, sizeof *estart, "events");
    uint32_t *elist = bp_calloc(p->res.nevents, sizeof *elist, "events");
    braid_status s = estart && elist
                         ? events_against_edges(st, estart, elist)
                         : BRAID_ERR_OUT_OF_MEMORY;
    free(estart);
    free(elist);
    return s;
}

/* ---- places ---------------------------------------------------------------------- */

/* Offset of a slice's first element in its input, and whether the
 * selected elements are one contiguous range of the input's bytes in
 * order (an axis of several elements taken backwards never is). */
static bool slice_range(const bg_node *n, const bg_node *x, uint64_t *first) {
    int64_t lo = 0, hi = 0, stride = (int64_t)braid_dtype_size(x->dtype);
    int64_t esize = stride;
    if (n->rank != x->rank) return false;
    bool empty = bg_numel(n) == 0; /* a view wherever it starts */
    for (int a = n->rank - 1; a >= 0; a--) {
        if (!empty && n->dims[a] > 1 && n->attr.step[a] < 0) return false;
        lo += n->attr.start[a] * stride;
        hi += (n->attr.start[a] + (n->dims[a] - 1) * n->attr.step[a]) * stride;
        stride *= x->dims[a];
    }
    *first = (uint64_t)lo;
    return bg_numel(n) == 0 || hi - lo + esize == (int64_t)bg_nbytes(n);
}

/* Where a pure view's bytes must start within its input's root. */
static bool view_expected(const vp_state *st, uint32_t id, uint64_t *off) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    const bg_node *x = &p->res.graph->nodes[n->inputs[0]];
    uint64_t in_off = st->roff[n->inputs[0]], rel = 0;
    switch (n->op) {
    case BRAID_OP_RESHAPE:
        break;
    case BRAID_OP_SLICE:
        if (!slice_range(n, x, &rel)) return false;
        break;
    case BRAID_OP_PERMUTE: {
        int last = -1;
        for (int i = 0; i < n->rank; i++) {
            int a = n->attr.perm[i];
            if (a >= x->rank) return false;
            if (x->dims[a] == 1) continue;
            if (a < last) return false;
            last = a;
        }
        break;
    }
    case BRAID_OP_BROADCAST_TO:
        if (bg_numel(n) != bg_numel(x)) return false;
        break;
    default:
        return false;
    }
    *off = bg_numel(n) == 0 ? st->roff[id] : in_off + rel;
    return n->dtype == x->dtype;
}

/* A noop concat: each input sits in its bytes where the concat puts it. */
static braid_status check_noop_concat(const vp_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    int axis = n->attr.axis < 0 ? n->attr.axis + n->rank : n->attr.axis;
    for (int a = 0; a < axis && a < n->rank; a++)
        if (n->dims[a] != 1)
            return vp_fail("place: node %u (concat) is skipped but its "
                           "inputs cannot be contiguous in it (axis %d)",
                           id, axis);
    if (p->res.info[st->root[id]].place.storage != BP_STORAGE_ARENA)
        return vp_fail("place: node %u (concat) is skipped but its bytes are "
                       "not in an arena",
                       id);
    uint64_t off = st->roff[id];
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t x = n->inputs[k];
        if (st->root[x] != st->root[id] || st->roff[x] != off)
            return vp_fail("place: node %u (concat) is skipped but its input "
                           "node %u is not in its bytes at offset %llu",
                           id, x, (unsigned long long)(off - st->roff[id]));
        off += bg_nbytes(&p->res.graph->nodes[x]);
    }
    return BRAID_OK;
}

/* A VIEW that runs writes into its base: only an input of a noop concat
 * sharing its root does that. */
static bool feeds_noop_concat(const vp_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    for (uint32_t u = 0; u < st->n; u++) {
        const bg_node *n = &p->res.graph->nodes[u];
        if (n->op == BRAID_OP_CONCAT && p->res.info[u].noop && reads(n, id) &&
            st->root[u] == st->root[id])
            return true;
    }
    return false;
}

/* Work is skipped (info.noop) only where there is none, and views that
 * run feed a concat assembled in place. */
static braid_status check_noop(const vp_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    const bp_node_info *in = &p->res.info[id];
    if (!in->noop) {
        if (in->place.storage == BP_STORAGE_VIEW && !feeds_noop_concat(st, id) &&
            vp_assign_of_written(st, id) == BG_NONE &&
            !vp_writes_permute(st, id))
            return vp_fail("place: node %u (%s) is a view of node %u that "
                           "writes into it, but no concat is assembled "
                           "there, nor is it a matmul writing the strided "
                           "layout of the permute reading it",
                           id, op_name(p, id), in->place.base);
        return BRAID_OK;
    }
    if (n->op == BRAID_OP_INPUT || bg_op_persistent(n->op)) return BRAID_OK;
    if (n->op == BRAID_OP_ASSIGN && in->place.storage == BP_STORAGE_VIEW &&
        in->place.base == n->inputs[0] && in->place.offset == 0)
        return BRAID_OK; /* its value computed into the variable: checked by
                            vp_check_assigns */
    if (n->op == BRAID_OP_CONCAT && in->place.storage != BP_STORAGE_INPUT &&
        in->place.storage != BP_STORAGE_CONSTANT)
        return check_noop_concat(st, id);
    bool handled;
    braid_status s = vp_check_strided_noop(st, id, &handled);
    if (handled) return s;
    uint64_t want = 0;
    if (in->place.storage != BP_STORAGE_VIEW || n->ninputs != 1 ||
        st->root[id] != st->root[n->inputs[0]] || !view_expected(st, id, &want))
        return vp_fail("place: node %u (%s) is skipped but its output is not "
                       "a view of its input's bytes",
                       id, op_name(p, id));
    if (want != st->roff[id])
        return vp_fail("place: node %u (%s) is a view at byte %llu of node "
                       "%u, expected byte %llu",
                       id, op_name(p, id), (unsigned long long)st->roff[id],
                       st->root[id], (unsigned long long)want);
    return BRAID_OK;
}

static braid_status check_view(vp_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bp_tensor_place *pl = &p->res.info[id].place;
    uint32_t b = pl->base;
    if (b >= st->n || b == id)
        return vp_fail("view: node %u is a view of node %u, which does not "
                       "exist",
                       id, b);
    const bp_tensor_place *bp = &p->res.info[b].place;
    if (bp->storage == BP_STORAGE_VIEW && st->pos[b] >= st->pos[id])
        return vp_fail("view: node %u is a view of node %u, a view scheduled "
                       "after it",
                       id, b);
    if (pl->layout == 0 && /* a strided view: vp_check_layouts */
        (pl->offset > bp->bytes || pl->bytes > bp->bytes - pl->offset))
        return vp_fail("view: node %u (bytes %llu..%llu) lies outside its "
                       "base node %u (%llu bytes)",
                       id, (unsigned long long)pl->offset,
                       (unsigned long long)(pl->offset + pl->bytes), b,
                       (unsigned long long)bp->bytes);
    if (!bp_device_equal(p->res.info[b].device, p->res.info[id].device))
        return vp_fail("view: node %u is a view of node %u on another device",
                       id, b);
    return BRAID_OK;
}

static braid_status check_arena_place(const bp_plan *p, uint32_t id) {
    const bp_tensor_place *pl = &p->res.info[id].place;
    if (pl->arena >= p->res.narenas)
        return vp_fail("arena: node %u is in arena %u of %u", id, pl->arena,
                       p->res.narenas);
    const bp_arena *a = &p->res.arenas[pl->arena];
    uint64_t align = a->device.kind == BP_DEVICE_CPU ? 64 : 256;
    if (a->kind != BP_ARENA_DEVICE)
        return vp_fail("arena: node %u is in the pinned staging arena %u", id,
                       pl->arena);
    if (!bp_device_equal(a->device, p->res.info[id].device))
        return vp_fail("arena: node %u lives in arena %u of another device "
                       "than it runs on",
                       id, pl->arena);
    if (pl->offset % align != 0)
        return vp_fail("arena: node %u at offset %llu of arena %u is not "
                       "%llu-byte aligned",
                       id, (unsigned long long)pl->offset, pl->arena,
                       (unsigned long long)align);
    if (pl->offset > a->bytes || pl->bytes > a->bytes - pl->offset)
        return vp_fail("arena: node %u (bytes %llu..%llu) runs past the end "
                       "of arena %u (%llu bytes)",
                       id, (unsigned long long)pl->offset,
                       (unsigned long long)(pl->offset + pl->bytes), pl->arena,
                       (unsigned long long)a->bytes);
    return BRAID_OK;
}

static const char *storage_name(bp_storage s) {
    static const char *const names[] = {"none", "arena", "input", "constant",
                                        "view"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "invalid";
}

static braid_status check_place(vp_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    const bp_tensor_place *pl = &p->res.info[id].place;
    bool cpu = p->res.info[id].device.kind == BP_DEVICE_CPU;
    char dev[32];
    bp_device_str(p->res.info[id].device, dev, sizeof dev);
    if (pl->bytes != bg_nbytes(n))
        return vp_fail("place: node %u has %llu bytes, its type %zu", id,
                       (unsigned long long)pl->bytes, bg_nbytes(n));
    bool want_input = n->op == BRAID_OP_INPUT;
    bool want_const = n->op == BRAID_OP_CONSTANT && cpu;
    if (pl->storage == BP_STORAGE_NONE ||
        (pl->storage == BP_STORAGE_INPUT) != want_input ||
        (pl->storage == BP_STORAGE_CONSTANT) != want_const)
        return vp_fail("place: node %u (%s on %s) has storage %s", id,
                       op_name(p, id), dev, storage_name(pl->storage));
    if (n->op == BRAID_OP_CONSTANT && !cpu &&
        pl->storage != BP_STORAGE_ARENA)
        return vp_fail("place: constant node %u on %s is not in its arena",
                       id, dev);
    if (want_input && !cpu)
        return vp_fail("place: input node %u is on %s (inputs are read from "
                       "host memory)",
                       id, dev);
    if (n->op == BRAID_OP_VARIABLE && pl->storage != BP_STORAGE_ARENA)
        return vp_fail("place: variable node %u on %s is not in its arena",
                       id, dev);
    if (pl->storage == BP_STORAGE_VIEW) return check_view(st, id);
    if (pl->storage == BP_STORAGE_ARENA) return check_arena_place(p, id);
    return BRAID_OK;
}

/* root/roff of every node (after every place checked: chains end). */
static void resolve_roots(vp_state *st) {
    const bp_plan *p = st->plan;
    for (uint32_t id = 0; id < st->n; id++) {
        uint32_t r = id;
        uint64_t off = 0;
        for (uint32_t hops = 0;
             p->res.info[r].place.storage == BP_STORAGE_VIEW && hops <= st->n;
             hops++) {
            off += p->res.info[r].place.offset;
            r = p->res.info[r].place.base;
        }
        st->root[id] = r;
        st->roff[id] = off;
    }
}

static braid_status check_devices(const vp_state *st) {
    const bp_plan *p = st->plan;
    for (uint32_t id = 0; id < st->n; id++) {
        char dev[32];
        if (!device_listed(p, p->res.info[id].device))
            return vp_fail(
                "device: node %u (%s) runs on %s, which the plan "
                "does not list",
                id, op_name(p, id),
                bp_device_str(p->res.info[id].device, dev, sizeof dev));
        /* a range-checked cast may run on any device: its CPU and GPU
         * kernels both report through the run check record. What it
         * needs is checked where it belongs: a node of its own, never an
         * instruction of a program (bp_program_check), and its output
         * sharing no byte with its input (vp_aliasing_ok) */
    }
    return BRAID_OK;
}

static braid_status check_places(vp_state *st) {
    const bp_plan *p = st->plan;
    for (uint32_t id = 0; id < st->n; id++) {
        braid_status s = check_place(st, id);
        if (s != BRAID_OK) return s;
    }
    resolve_roots(st);
    for (uint32_t id = 0; id < st->n; id++)
        if (p->res.info[st->root[id]].place.storage == BP_STORAGE_VIEW)
            return vp_fail("view: node %u's chain of views has a cycle", id);
    /* layouts inside their roots before any arithmetic on their strides */
    braid_status ls = vp_check_layouts(st);
    if (ls != BRAID_OK) return ls;
    for (uint32_t id = 0; id < st->n; id++) {
        braid_status s = check_noop(st, id);
        if (s != BRAID_OK) return s;
    }
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        const bp_arena *ar = &p->res.arenas[a];
        if (!device_listed(p, ar->device) ||
            (ar->kind == BP_ARENA_PINNED && ar->device.kind != BP_DEVICE_CPU))
            return vp_fail("arena: arena %u is on a device it cannot be on", a);
        if (ar->lower_bound > ar->bytes)
            return vp_fail("arena: arena %u has %llu bytes, below its lower "
                           "bound %llu",
                           a, (unsigned long long)ar->bytes,
                           (unsigned long long)ar->lower_bound);
    }
    return BRAID_OK;
}

/* ---- programs ---------------------------------------------------------------------- */

/* Every fused node names a program that bp_program_check accepts for it
 * (the one statement of the program rules, docs/fusion.md): executors and
 * the code generator index with programs the verifier has passed. */
static braid_status check_programs(const vp_state *st) {
    const bp_plan *p = st->plan;
    for (uint32_t id = 0; id < st->n; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        if (n->op != BRAID_OP_FUSED) continue;
        uint32_t k = p->res.info[id].program;
        if (k >= p->res.nprograms)
            return vp_fail("program: fused node %%%u names program %u of %u",
                           id, k, p->res.nprograms);
        char why[256];
        if (!bp_program_check(&p->res.programs[k], p->res.graph, id, why,
                              sizeof why))
            return vp_fail("program: fused node %%%u (program %u): %s", id, k,
                           why);
    }
    return BRAID_OK;
}

/* ---- the checker -------------------------------------------------------------------- */

static braid_status check_all(vp_state *st) {
    const bp_plan *p = st->plan;
    bool scheduled = p->res.schedule != NULL, queued = p->res.queues != NULL;
    bool placed = p->res.arenas != NULL;
    if (p->res.ninfo < st->n)
        return vp_fail("plan: %u info entries for %u nodes", p->res.ninfo,
                       st->n);
    braid_status s = check_programs(st);
    if (s == BRAID_OK && scheduled) s = check_schedule(st);
    if (s == BRAID_OK) s = check_io(st, scheduled);
    if (s == BRAID_OK) s = check_devices(st);
    if (s == BRAID_OK && queued) s = check_queues(st);
    if (s == BRAID_OK && queued) s = check_events(st, scheduled);
    if (s == BRAID_OK && placed) s = check_places(st);
    if (s == BRAID_OK && scheduled && queued && placed) s = vp_clocks(st);
    if (s == BRAID_OK && scheduled && queued && placed)
        s = vp_check_overlaps(st);
    if (s == BRAID_OK && scheduled && queued && placed)
        s = vp_check_assigns(st);
    return s;
}

braid_status bp_verify_plan(bp_plan *plan) {
    vp_state st = {.plan = plan, .n = plan->res.graph->nnodes};
    size_t n = st.n;
    st.pos = bp_calloc(n, sizeof *st.pos, "verify_plan tables");
    st.root = bp_calloc(n, sizeof *st.root, "verify_plan tables");
    st.roff = bp_calloc(n, sizeof *st.roff, "verify_plan tables");
    st.output = bp_calloc(n, sizeof *st.output, "verify_plan tables");
    st.dq = bp_calloc(n, sizeof *st.dq, "verify_plan tables");
    st.qpos = bp_calloc(n, sizeof *st.qpos, "verify_plan tables");
    st.qprev = bp_calloc(n, sizeof *st.qprev, "verify_plan tables");
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (st.pos && st.root && st.roff && st.output && st.dq && st.qpos &&
        st.qprev) {
        for (size_t i = 0; i < n; i++) st.pos[i] = -1;
        s = check_all(&st);
    }
    free(st.pos);
    free(st.root);
    free(st.roff);
    free(st.output);
    free(st.dq);
    free(st.qpos);
    free(st.qprev);
    free(st.clock);
    return s;
}
