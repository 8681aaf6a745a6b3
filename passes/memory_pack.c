/* passes/memory_pack.c — buffer groups, lower bounds and offsets.
 *
 * A group's accesses are the nodes that write its bytes (its computing
 * members) and the computing nodes that read any member. Group a may hand
 * its bytes to group b when every access of a happens-before every writer
 * of b (then it happens-before every access of b, since each of those
 * follows one of b's writers through a data edge). Outputs keep their
 * bytes to the end of the run, GPU constants for the executor's lifetime.
 *
 * Offsets: greedy by size. Groups are placed largest first, each at the
 * offset that fits it among the groups placed so far that it may not share
 * bytes with — "best fit" (the smallest gap that holds it) and "first fit"
 * (the lowest offset) are both tried and the smaller arena kept. Where
 * sharing is refused only for want of ordering (the schedule puts one
 * group's accesses entirely before the other's, but no chain of queue
 * order and events says so), the packer may add reuse events from the
 * earlier group's last accesses to the later group's writers — only when
 * that keeps the arena from growing, and at most a budget of them. An
 * event from an earlier to a later node in the schedule cannot make a
 * cycle. The groups that may conflict with the one being placed come from
 * an interval index (memory_index.c), so a try costs about the number of
 * conflicting pairs; past BP_MEM_GREEDY_PAIRS of them the arena is packed
 * by the sweep of memory_sweep.c instead. */
#include "graph/sort.h"
#include "passes/memory.h"
#include "passes/memory_index.h"

#include <stdlib.h>
#include <string.h>

#define END UINT32_MAX /* "until the end of the run" */

uint64_t bp_mem_greedy_pairs = BP_MEM_GREEDY_PAIRS;
int bp_mem_sweep_first = 0;

uint64_t bp_mem_align(const bp_plan *p, uint32_t d) {
    return p->in.devs.devices[d].kind == BP_DEVICE_CPU ? BP_MEM_ALIGN_CPU
                                                       : BP_MEM_ALIGN_GPU;
}

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static uint32_t device_index(const bp_plan *p, bp_device d) {
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return i;
    return BG_NONE;
}

/* The ARENA root whose bytes node id uses, or BG_NONE. */
static uint32_t arena_root(const bp_mem *m, uint32_t id) {
    const bp_plan *p = m->plan;
    uint32_t r =
        p->res.info[id].place.storage == BP_STORAGE_VIEW ? m->base[id] : id;
    return p->res.info[r].place.storage == BP_STORAGE_ARENA ? r : BG_NONE;
}

/* Notes an access of group g by node u (a computing node). */
static void access(bp_mem *m, uint32_t g, uint32_t u) {
    const bp_mem_hb *hb = &m->hb;
    bp_mem_group *gr = &m->group[g];
    int32_t *acc = m->lastacc + (size_t)g * hb->nq;
    if ((int32_t)hb->qpos[u] > acc[hb->queue[u]])
        acc[hb->queue[u]] = (int32_t)hb->qpos[u];
    if (hb->pos[u] < gr->first) gr->first = hb->pos[u];
    if (hb->pos[u] > gr->last) gr->last = hb->pos[u];
}

/* Numbers the groups (in schedule order of their first member) and sizes
 * them. */
static braid_status number_groups(bp_mem *m) {
    bp_plan *p = m->plan;
    m->ngroups = 0;
    for (uint32_t id = 0; id < m->hb.n; id++) m->gid[id] = BG_NONE;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i], r = arena_root(m, id);
        if (r == BG_NONE) continue;
        uint32_t top = bp_mem_find(m, r);
        if (m->gid[top] == BG_NONE) {
            uint32_t d = device_index(p, p->res.info[top].device);
            if (d == BG_NONE) {
                char dev[32];
                return bg_set_last_error(
                    BRAID_ERR_INTERNAL,
                    "memory: node %u runs on %s, which the plan does not "
                    "list",
                    top,
                    bp_device_str(p->res.info[top].device, dev, sizeof dev));
            }
            m->group[m->ngroups] = (bp_mem_group){
                .device = d, .first = END, .last = 0,
                .to_end = m->to_end[top]};
            m->gid[top] = m->ngroups++;
        }
        uint32_t g = m->gid[top];
        m->gid[id] = g;
        bp_mem_group *gr = &m->group[g];
        uint64_t b =
            round_up(p->res.info[id].place.bytes, bp_mem_align(p, gr->device));
        if (id == r && b > gr->bytes) gr->bytes = b;
        if (bg_op_persistent(p->res.graph->nodes[id].op))
            gr->whole_run = true;
        if (m->output[id]) gr->to_end = true;
    }
    return BRAID_OK;
}

/* Writers (computing members), accesses and lifetimes of every group. */
static braid_status summarise(bp_mem *m) {
    bp_plan *p = m->plan;
    const bp_mem_hb *hb = &m->hb;
    for (size_t i = 0; i < (size_t)m->ngroups * hb->nq; i++) m->lastacc[i] = -1;
    uint32_t nw = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i], g = m->gid[id];
        if (g == BG_NONE) continue;
        if (!p->res.info[id].noop) {
            access(m, g, id);
            m->group[g].nwriters++;
            nw++;
        }
        for (uint32_t k = m->ustart[id]; k < m->ustart[id + 1]; k++)
            if (!p->res.info[m->users[k]].noop) access(m, g, m->users[k]);
    }
    m->writer = bp_calloc(nw, sizeof *m->writer, "memory writers");
    if (!m->writer) return BRAID_ERR_OUT_OF_MEMORY;
    uint32_t at = 0;
    for (uint32_t g = 0; g < m->ngroups; g++) {
        bp_mem_group *gr = &m->group[g];
        gr->wstart = at;
        at += gr->nwriters;
        gr->nwriters = 0;
        if (gr->first == END) gr->first = gr->last = 0; /* never accessed */
        if (gr->to_end || gr->whole_run) gr->last = END;
        if (gr->whole_run) gr->first = 0;
    }
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i], g = m->gid[id];
        if (g != BG_NONE && !p->res.info[id].noop)
            m->writer[m->group[g].wstart + m->group[g].nwriters++] = id;
    }
    return BRAID_OK;
}

void bp_mem_known(bp_mem *m, uint32_t g) {
    bp_mem_hb *hb = &m->hb;
    bp_mem_group *gr = &m->group[g];
    int32_t *kn = m->known + (size_t)g * hb->nq;
    if (gr->nwriters > 0) { /* writers are listed in schedule order */
        uint32_t last = hb->pos[m->writer[gr->wstart + gr->nwriters - 1]];
        bp_mem_hb_need(hb, m->plan, last < m->horizon ? last : m->horizon);
    }
    for (uint32_t j = 0; j < hb->nq; j++)
        kn[j] = INT32_MAX;
    for (uint32_t w = 0; w < gr->nwriters; w++) {
        const int32_t *c =
            hb->clock + (size_t)m->writer[gr->wstart + w] * hb->nq;
        for (uint32_t j = 0; j < hb->nq; j++)
            if (c[j] < kn[j]) kn[j] = c[j];
    }
    gr->safe = gr->nwriters == 0 ? 0 : END;
    for (uint32_t j = 0; j < hb->nq && gr->nwriters > 0; j++) {
        uint32_t next = (uint32_t)(kn[j] + 1);
        if (hb->qstart[j] + next >= hb->qstart[j + 1]) continue;
        uint32_t p = hb->pos[hb->qnode[hb->qstart[j] + next]];
        if (p < gr->safe) gr->safe = p;
    }
}

static void compute_known(bp_mem *m) {
    for (uint32_t g = 0; g < m->ngroups; g++)
        bp_mem_known(m, g);
}

braid_status bp_mem_groups(bp_mem *m) {
    size_t cells = (size_t)m->hb.n * (m->hb.nq ? m->hb.nq : 1);
    m->group = bp_calloc(m->hb.n, sizeof *m->group, "memory groups");
    m->known = bp_calloc(cells, sizeof *m->known, "memory groups");
    if (!m->group || !m->known) return BRAID_ERR_OUT_OF_MEMORY;
    braid_status s = number_groups(m);
    if (s == BRAID_OK) s = summarise(m);
    if (s == BRAID_OK) compute_known(m);
    return s;
}

uint64_t bp_mem_lower_bound(const bp_mem *m, uint32_t d) {
    uint32_t n = m->plan->res.nschedule;
    int64_t *delta = calloc((size_t)n + 2, sizeof *delta);
    if (!delta) return 0; /* only a report; the arena size stands */
    for (uint32_t g = 0; g < m->ngroups; g++) {
        const bp_mem_group *gr = &m->group[g];
        if (gr->device != d || gr->bytes == 0) continue;
        uint32_t last = gr->last == END ? n : gr->last + 1;
        delta[gr->first] += (int64_t)gr->bytes;
        delta[last] -= (int64_t)gr->bytes;
    }
    int64_t live = 0, best = 0;
    for (uint32_t i = 0; i <= n; i++) {
        live += delta[i];
        if (live > best) best = live;
    }
    free(delta);
    return (uint64_t)best;
}

/* ---- packing -------------------------------------------------------------- */

/* Group a's every access happens-before every writer of group b. */
static bool ordered(const bp_mem *m, uint32_t a, uint32_t b) {
    const bp_mem_group *ga = &m->group[a], *gb = &m->group[b];
    if (ga->last == END || gb->whole_run || gb->nwriters == 0) return false;
    const int32_t *acc = m->lastacc + (size_t)a * m->hb.nq;
    const int32_t *kn = m->known + (size_t)b * m->hb.nq;
    for (uint32_t j = 0; j < m->hb.nq; j++)
        if (acc[j] > kn[j]) return false;
    return true;
}

/* How group h and the group g being placed relate. */
typedef enum { PK_FREE, PK_HARD, PK_SOFT } pk_conflict;

static pk_conflict conflict(const bp_mem *m, uint32_t h, uint32_t g) {
    const bp_mem_group *gh = &m->group[h], *gg = &m->group[g];
    if (gh->last != END && gh->last < gg->first)
        return gh->last < gg->safe || ordered(m, h, g) ? PK_FREE : PK_SOFT;
    if (gg->last != END && gg->last < gh->first)
        return gg->last < gh->safe || ordered(m, g, h) ? PK_FREE : PK_SOFT;
    return PK_HARD;
}

/* A byte range taken by a placed group. */
typedef struct pk_span {
    uint64_t lo, hi; /* [lo, hi) */
    uint32_t group;  /* which group */
    bool soft;       /* could be shared by adding events */
} pk_span;

static int by_lo(const void *x, const void *y) {
    const pk_span *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Offset for size bytes avoiding spans (sorted by lo; soft ones skipped
 * when use_soft is false): the lowest fitting gap (first fit) or the
 * smallest (best fit); past the last span when no gap fits. */
static uint64_t fit(const pk_span *sp, uint32_t n, bool use_soft,
                    uint64_t size, bool best) {
    uint64_t cur = 0, pick = UINT64_MAX, pick_gap = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (sp[i].soft && !use_soft) continue;
        if (sp[i].lo > cur) {
            uint64_t gap = sp[i].lo - cur;
            if (gap >= size && gap < pick_gap) {
                pick = cur;
                pick_gap = gap;
                if (!best) return pick;
            }
        }
        if (sp[i].hi > cur) cur = sp[i].hi;
    }
    return pick != UINT64_MAX ? pick : cur;
}

braid_status bp_mem_order(bp_mem *m, const int32_t *acc, uint32_t b, bool add,
                          uint32_t *count) {
    bp_mem_hb *hb = &m->hb;
    const bp_mem_group *gb = &m->group[b];
    uint32_t *q = m->qscratch, *src = m->qscratch + hb->nq;
    for (uint32_t w = 0; w < gb->nwriters; w++) {
        uint32_t dst = m->writer[gb->wstart + w], nj = 0, nchosen = 0;
        bp_mem_hb_need(hb, m->plan, /* earlier waits */
                       hb->pos[dst] < m->horizon ? hb->pos[dst] : m->horizon);
        const int32_t *cd = hb->clock + (size_t)dst * hb->nq;
        /* the accesses dst does not know complete, latest first: an event
         * from a later one often covers an earlier one on another queue
         * (a download covers the compute it copies) */
        for (uint32_t j = 0; j < hb->nq; j++) {
            if (acc[j] < 0 || cd[j] >= acc[j]) continue;
            uint32_t a = hb->qnode[hb->qstart[j] + (uint32_t)acc[j]], k = nj++;
            for (; k > 0 && hb->pos[src[k - 1]] < hb->pos[a]; k--)
                q[k] = q[k - 1], src[k] = src[k - 1];
            q[k] = j, src[k] = a;
        }
        for (uint32_t i = 0; i < nj; i++) {
            bool covered = false; /* by a source chosen before */
            for (uint32_t c = 0; c < nchosen && !covered; c++)
                covered = hb->clock[(size_t)src[c] * hb->nq + q[i]] >=
                          acc[q[i]];
            if (covered) continue;
            q[nchosen] = q[i], src[nchosen++] = src[i];
            ++*count;
            if (!add) continue;
            braid_status s = bp_mem_hb_add_wait(hb, m->plan, src[i], dst);
            if (s != BRAID_OK) return s;
        }
    }
    return BRAID_OK;
}

/* Events that order group a before group b (bp_mem_order with a's last
 * accesses). */
static braid_status order_groups(bp_mem *m, uint32_t a, uint32_t b, bool add,
                                 uint32_t *count) {
    return bp_mem_order(m, m->lastacc + (size_t)a * m->hb.nq, b, add, count);
}

/* Adds the events that let g share [lo, lo + size) with the soft spans
 * there; false (nothing added) when they exceed the budget. */
static braid_status add_events(bp_mem *m, uint32_t g, const pk_span *sp,
                               uint32_t n, uint64_t lo, uint64_t size,
                               bool *done) {
    uint32_t need = 0;
    *done = false;
    for (uint32_t i = 0; i < n; i++) {
        if (!sp[i].soft || sp[i].hi <= lo || sp[i].lo >= lo + size) continue;
        uint32_t h = sp[i].group;
        bool h_first = m->group[h].last < m->group[g].first;
        order_groups(m, h_first ? h : g, h_first ? g : h, false, &need);
    }
    if (need > m->event_budget) return BRAID_OK;
    for (uint32_t i = 0; i < n; i++) {
        if (!sp[i].soft || sp[i].hi <= lo || sp[i].lo >= lo + size) continue;
        uint32_t h = sp[i].group, added = 0;
        bool h_first = m->group[h].last < m->group[g].first;
        braid_status s =
            order_groups(m, h_first ? h : g, h_first ? g : h, true, &added);
        if (s != BRAID_OK) return s;
        m->event_budget -= added < m->event_budget ? added : m->event_budget;
        if (added) compute_known(m);
    }
    *done = true;
    return BRAID_OK;
}

/* Places group g among the placed groups of its device (those marked in
 * ix->placed; ix lists the candidates that may conflict with g). */
static braid_status place_one(bp_mem *m, pk_index *ix, uint32_t g, bool best,
                              pk_span *sp, uint64_t *top) {
    uint32_t n = 0, nc = pk_candidates(m, ix, g);
    for (uint32_t i = 0; i < nc; i++) {
        uint32_t h = ix->out[i];
        pk_conflict c = conflict(m, h, g);
        if (c == PK_FREE) continue;
        sp[n++] = (pk_span){m->group[h].offset,
                            m->group[h].offset + m->group[h].bytes, h,
                            c == PK_SOFT};
    }
    qsort(sp, n, sizeof *sp, by_lo);
    uint64_t size = m->group[g].bytes;
    uint64_t all = fit(sp, n, true, size, best);
    uint64_t hard = fit(sp, n, false, size, best);
    m->group[g].offset = all;
    if (hard < all && all + size > *top && m->event_budget > 0) {
        bool done = false;
        braid_status s = add_events(m, g, sp, n, hard, size, &done);
        if (s != BRAID_OK) return s;
        if (done) m->group[g].offset = hard;
    }
    if (m->group[g].offset + size > *top) *top = m->group[g].offset + size;
    ix->placed[g] = true;
    return BRAID_OK;
}

/* The orders tried: largest first (then earliest), earliest first (then
 * largest), longest-lived first, most byte-time first. */
#define PK_ORDERS 4

static braid_status sort_groups(const bp_mem *m, uint32_t *order, uint32_t n,
                                int how) {
    /* keys larger first (complemented), then the group smaller first; the
     * second half is scratch */
    bg_sort_item *key =
        bp_calloc(2 * (size_t)n + 1, sizeof *key, "memory order");
    if (!key) return BRAID_ERR_OUT_OF_MEMORY;
    uint64_t end = (uint64_t)m->plan->res.nschedule + 1;
    for (uint32_t i = 0; i < n; i++) {
        const bp_mem_group *gr = &m->group[order[i]];
        uint64_t last = gr->last == END ? end : gr->last;
        uint64_t life = last - gr->first + 1, early = end - gr->first;
        uint64_t k1, k2;
        switch (how) {
        case 0:
            k1 = gr->bytes, k2 = early;
            break;
        case 1:
            k1 = early, k2 = gr->bytes;
            break;
        case 2:
            k1 = life, k2 = gr->bytes;
            break;
        default:
            k1 = gr->bytes * life, k2 = gr->bytes;
            break;
        }
        key[i] = (bg_sort_item){~k1, ~k2, order[i]};
    }
    bg_sort_items(key, n, key + n);
    for (uint32_t i = 0; i < n; i++)
        order[i] = key[i].v;
    free(key);
    return BRAID_OK;
}

static braid_status pack_mode(bp_mem *m, pk_index *ix, const uint32_t *order,
                              uint32_t n, bool best, pk_span *sp,
                              uint64_t *bytes) {
    *bytes = 0;
    for (uint32_t i = 0; i < n; i++)
        ix->placed[order[i]] = false;
    for (uint32_t i = 0; i < n; i++) {
        braid_status s = place_one(m, ix, order[i], best, sp, bytes);
        if (s != BRAID_OK) return s;
    }
    return BRAID_OK;
}

/* Without reuse every group gets bytes of its own, in schedule order. */
static uint64_t pack_apart(bp_mem *m, const uint32_t *order, uint32_t n) {
    uint64_t top = 0;
    for (uint32_t i = 0; i < n; i++) {
        m->group[order[i]].offset = top;
        top += m->group[order[i]].bytes;
    }
    return top;
}

/* One packing: order `how`, best or first fit. Returns the arena size and
 * the events it added (left in place). */
static braid_status pack_try(bp_mem *m, pk_index *ix, uint32_t *order,
                             uint32_t n, int how, bool best, pk_span *sp,
                             uint64_t *bytes) {
    braid_status s = sort_groups(m, order, n, how);
    return s == BRAID_OK ? pack_mode(m, ix, order, n, best, sp, bytes) : s;
}

/* Undoes the events of a packing try. */
static void undo_try(bp_mem *m, uint32_t nx0, uint32_t budget0) {
    bp_mem_hb_truncate(&m->hb, m->plan, nx0);
    m->event_budget = budget0;
    compute_known(m);
}

/* Every order with both fits from the same starting events; keeps the
 * smallest arena (ties: fewer events, then the first tried). Each try
 * costs about the conflicting pairs (at most bp_mem_greedy_pairs), so big
 * plans try fewer: both fits of the largest-first order up to 6000
 * groups, best fit alone beyond. */
static braid_status pack_best(bp_mem *m, pk_index *ix, uint32_t *order,
                              uint32_t n, pk_span *sp, uint64_t *bytes) {
    uint32_t nx0 = m->hb.nx, budget0 = m->event_budget;
    uint64_t best_bytes = UINT64_MAX;
    uint32_t best_events = UINT32_MAX;
    int best_try = 0;
    int tries = n <= 1500 ? 2 * PK_ORDERS : n <= 6000 ? 2 : 1;
    for (int t = 0; t < tries; t++) {
        uint64_t b = 0;
        braid_status s = pack_try(m, ix, order, n, t / 2, t % 2 == 0, sp, &b);
        if (s != BRAID_OK) return s;
        uint32_t ev = m->hb.nx - nx0;
        if (b < best_bytes || (b == best_bytes && ev < best_events)) {
            best_bytes = b;
            best_events = ev;
            best_try = t;
        }
        undo_try(m, nx0, budget0);
    }
    return pack_try(m, ix, order, n, best_try / 2, best_try % 2 == 0, sp,
                    bytes);
}

/* The sweep first, for an arena where the greedy may run short of reuse
 * events (its budget, capped by the cost of its clock updates, is below
 * the number of groups): an arena at the lower bound cannot be beaten, so
 * it stands. Otherwise the greedy tries too, and the smaller arena is kept
 * (ties: the sweep's), with its events. */
static braid_status sweep_then_greedy(bp_mem *m, uint32_t d, pk_index *ix,
                                      uint32_t *order, uint32_t n,
                                      pk_span *sp, uint64_t *bytes) {
    uint32_t nx0 = m->hb.nx, sweep0 = m->sweep_events,
             budget0 = m->event_budget;
    uint64_t swept = 0, greedy = 0;
    braid_status s = bp_mem_pack_sweep(m, order, n, &swept);
    *bytes = swept;
    if (s != BRAID_OK || swept <= bp_mem_lower_bound(m, d)) return s;
    uint32_t nsw = m->hb.nx - nx0;
    uint64_t *off = bp_calloc(n ? n : 1, sizeof *off, "memory sweep copy");
    uint32_t *ev = bp_calloc(2 * (size_t)nsw + 1, sizeof *ev,
                             "memory sweep copy");
    if (!off || !ev) {
        free(off);
        free(ev);
        return BRAID_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < n; i++) off[i] = m->group[order[i]].offset;
    for (uint32_t k = 0; k < nsw; k++) {
        ev[2 * k] = m->hb.xsrc[nx0 + k];
        ev[2 * k + 1] = m->hb.xdst[nx0 + k];
    }
    uint32_t *was = bp_calloc(n ? n : 1, sizeof *was, "memory sweep copy");
    if (!was) s = BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; was && i < n; i++) was[i] = order[i];
    if (s == BRAID_OK) {
        undo_try(m, nx0, budget0);
        m->sweep_events = sweep0;
        s = pack_best(m, ix, order, n, sp, &greedy);
    }
    if (s == BRAID_OK && greedy < swept && bp_mem_sweep_first < 2) {
        *bytes = greedy;
    } else if (s == BRAID_OK) { /* the sweep's placement and events back */
        undo_try(m, nx0, budget0);
        for (uint32_t i = 0; i < n; i++) m->group[was[i]].offset = off[i];
        for (uint32_t k = 0; k < nsw && s == BRAID_OK; k++)
            s = bp_mem_hb_add_wait(&m->hb, m->plan, ev[2 * k], ev[2 * k + 1]);
        m->sweep_events = sweep0 - nsw;
        compute_known(m);
    }
    free(off);
    free(ev);
    free(was);
    return s;
}

/* The greedy when its conflicting pairs stay within the budget, else the
 * sweep (memory_sweep.c); both where the greedy may run short of events. */
static braid_status pack_reuse(bp_mem *m, uint32_t d, uint32_t *order,
                               uint32_t n, uint64_t *bytes) {
    pk_index ix;
    pk_span *sp = bp_calloc(n ? n : 1, sizeof *sp, "memory spans");
    braid_status s =
        sp ? pk_index_init(m, &ix, order, n) : BRAID_ERR_OUT_OF_MEMORY;
    if (s == BRAID_OK && pk_pairs(&ix) > bp_mem_greedy_pairs)
        s = bp_mem_pack_sweep(m, order, n, bytes);
    else if (s == BRAID_OK && m->hb.nq > 1 &&
             (m->event_budget < n || bp_mem_sweep_first > 0))
        s = sweep_then_greedy(m, d, &ix, order, n, sp, bytes);
    else if (s == BRAID_OK)
        s = pack_best(m, &ix, order, n, sp, bytes);
    pk_index_free(&ix);
    free(sp);
    return s;
}

braid_status bp_mem_pack(bp_mem *m, uint32_t d, uint64_t *bytes) {
    uint32_t *order =
        bp_calloc(m->ngroups ? m->ngroups : 1, sizeof *order, "memory order");
    braid_status s = order ? BRAID_OK : BRAID_ERR_OUT_OF_MEMORY;
    uint32_t n = 0;
    for (uint32_t g = 0; s == BRAID_OK && g < m->ngroups; g++) {
        if (m->group[g].device != d) continue;
        m->group[g].offset = 0;
        if (m->group[g].bytes > 0) order[n++] = g;
    }
    *bytes = 0;
    if (s == BRAID_OK && !m->reuse) {
        *bytes = pack_apart(m, order, n);
    } else if (s == BRAID_OK) {
        s = pack_reuse(m, d, order, n, bytes);
    }
    free(order);
    return s;
}
