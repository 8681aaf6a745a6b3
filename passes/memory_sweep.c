/* passes/memory_sweep.c — the packer for plans too big for the greedy.
 *
 * The greedy of memory_pack.c places groups largest first against every
 * group they conflict with: its work is the number of conflicting pairs,
 * quadratic when many groups live at once (a model's many outputs, long
 * lived values of a random DAG). Past a budget of pairs the pass packs
 * in schedule order instead, like an allocator replaying the run: a group
 * takes the lowest free block that holds it (first fit, growing the arena's
 * top when none does, extending a free block that ends at the top) and
 * gives its bytes back once it is done. O(n log n): the free blocks live in
 * a treap keyed by offset that keeps the largest block of each subtree.
 *
 * Groups are placed in order of their first access; group h's bytes go
 * back to the free blocks once the group being placed starts after h's
 * last access. Each free block carries what its former groups accessed:
 * per queue, the last position (the largest of their lastacc). Group g
 * may take a block only when g's writers know all of that complete (per
 * queue, at most g's `known`), as the greedy's `ordered` test asks.
 * That is transitive: once g holds the bytes, its own accesses stand for
 * the former groups'. On one queue every free block qualifies; across
 * streams fitting blocks are tried lowest first, up to a budget
 * (FB_TRIES); when none is known free, reuse events from the former
 * accesses to g's writers make one of the lowest fitting blocks usable
 * (within the sweep's event and clock-cell budgets, memory.c); else the
 * top grows. Events are added in schedule order, so the clocks they change
 * are recomputed over about the span they cover (memory_hb.c). Outputs,
 * GPU constants and groups without writers are never released. */
#include "graph/sort.h"
#include "passes/memory.h"

#include <stdlib.h>

#define END UINT32_MAX

/* ---- free blocks: a treap by offset, with the largest size below ------- */

typedef struct fb_node {
    uint64_t off, size, max; /* block [off, off + size); max over subtree */
    uint32_t prio;           /* heap priority (random) */
    uint32_t l, r;           /* children, or FB_NIL */
} fb_node;

#define FB_NIL UINT32_MAX
/* Fitting blocks a group may try and pass over: FB_TRIES, plus what is
 * left of a budget of FB_SHARED per group shared by the whole sweep (a
 * few groups may search far; the sweep stays O(n log n)). */
#define FB_TRIES 16
#define FB_SHARED 64
/* Fitting blocks weighed when reuse events are to be added. */
#define FB_EVENT_TRIES 8
/* Schedule positions past a group's first access up to which its writers'
 * clocks are brought up to date before it is placed (beyond, a clock may
 * miss the latest reuse events: it knows less, never more). Bounds the
 * clock recomputation one reuse event causes when groups have writers far
 * apart (in place over long chains). */
#define BP_MEM_SWEEP_AHEAD 256u

typedef struct fb_tree {
    fb_node *node;  /* pool */
    uint32_t cap;   /* entries in the pool (acc has one row more) */
    int32_t *acc;   /* per pool entry: nq last access positions of the
                       block's former groups (-1: none) */
    uint32_t nq;    /* queues */
    uint32_t *free; /* recycled pool entries */
    uint32_t nfree, used, root;
    uint64_t seed;
    uint64_t shared; /* tries left in the shared budget */
    uint64_t floor;  /* the arena's lower bound: bytes below it are no
                        loss, since no placement uses fewer */
} fb_tree;

static uint64_t fb_max(const fb_tree *t, uint32_t k) {
    return k == FB_NIL ? 0 : t->node[k].max;
}

static void fb_pull(fb_tree *t, uint32_t k) {
    fb_node *n = &t->node[k];
    uint64_t a = fb_max(t, n->l), b = fb_max(t, n->r);
    n->max = n->size > a ? n->size : a;
    if (b > n->max) n->max = b;
}

/* Splits k into offsets < off (*a) and ≥ off (*b). */
static void fb_split(fb_tree *t, uint32_t k, uint64_t off, uint32_t *a,
                     uint32_t *b) {
    if (k == FB_NIL) {
        *a = *b = FB_NIL;
    } else if (t->node[k].off < off) {
        fb_split(t, t->node[k].r, off, &t->node[k].r, b);
        fb_pull(t, k);
        *a = k;
    } else {
        fb_split(t, t->node[k].l, off, a, &t->node[k].l);
        fb_pull(t, k);
        *b = k;
    }
}

static uint32_t fb_merge(fb_tree *t, uint32_t a, uint32_t b) {
    if (a == FB_NIL) return b;
    if (b == FB_NIL) return a;
    if (t->node[a].prio > t->node[b].prio) {
        t->node[a].r = fb_merge(t, t->node[a].r, b);
        fb_pull(t, a);
        return a;
    }
    t->node[b].l = fb_merge(t, a, t->node[b].l);
    fb_pull(t, b);
    return b;
}

/* Inserts a block whose former accesses are acc (nq entries). */
static void fb_insert(fb_tree *t, uint64_t off, uint64_t size,
                      const int32_t *acc) {
    uint32_t k = t->nfree ? t->free[--t->nfree] : t->used++;
    t->seed = t->seed * 6364136223846793005u + 1442695040888963407u;
    t->node[k] =
        (fb_node){off, size, size, (uint32_t)(t->seed >> 33), FB_NIL, FB_NIL};
    int32_t *row = t->acc + (size_t)k * t->nq;
    if (row != acc)
        for (uint32_t j = 0; j < t->nq; j++)
            row[j] = acc[j];
    uint32_t a, b;
    fb_split(t, t->root, off, &a, &b);
    t->root = fb_merge(t, fb_merge(t, a, k), b);
}

/* Removes the block at exactly off (present). */
static void fb_erase(fb_tree *t, uint64_t off) {
    uint32_t a, b, m, c;
    fb_split(t, t->root, off, &a, &b);
    fb_split(t, b, off + 1, &m, &c);
    if (m != FB_NIL) t->free[t->nfree++] = m;
    t->root = fb_merge(t, a, c);
}

/* The block with the largest offset < off (pred) or the smallest ≥ off
 * (succ); FB_NIL when none. */
static uint32_t fb_pred(const fb_tree *t, uint64_t off) {
    uint32_t k = t->root, best = FB_NIL;
    while (k != FB_NIL)
        if (t->node[k].off < off)
            best = k, k = t->node[k].r;
        else
            k = t->node[k].l;
    return best;
}

static uint32_t fb_succ(const fb_tree *t, uint64_t off) {
    uint32_t k = t->root, best = FB_NIL;
    while (k != FB_NIL)
        if (t->node[k].off >= off)
            best = k, k = t->node[k].l;
        else
            k = t->node[k].r;
    return best;
}

/* Every former access of block k is known complete by g's writers. */
static bool fb_known(const fb_tree *t, uint32_t k, const int32_t *known) {
    const int32_t *a = t->acc + (size_t)k * t->nq;
    for (uint32_t j = 0; j < t->nq; j++)
        if (a[j] > known[j]) return false;
    return true;
}

/* The lowest block of at least size bytes whose former accesses `known`
 * covers (NULL: any), among the first *tries fitting ones; FB_NIL when
 * none. */
static uint32_t fb_fit(const fb_tree *t, uint32_t k, uint64_t size,
                       const int32_t *known, uint32_t *tries) {
    if (k == FB_NIL || t->node[k].max < size || *tries == 0) return FB_NIL;
    uint32_t r = fb_fit(t, t->node[k].l, size, known, tries);
    if (r != FB_NIL) return r;
    if (t->node[k].size >= size && *tries > 0) {
        if (!known || fb_known(t, k, known)) return k;
        --*tries;
    }
    return fb_fit(t, t->node[k].r, size, known, tries);
}

/* Up to max fitting blocks of at least size bytes below k, lowest first,
 * into out[*n]. */
static void fb_collect(const fb_tree *t, uint32_t k, uint64_t size,
                       uint32_t *out, uint32_t *n, uint32_t max) {
    if (k == FB_NIL || t->node[k].max < size || *n == max) return;
    fb_collect(t, t->node[k].l, size, out, n, max);
    if (t->node[k].size >= size && *n < max) out[(*n)++] = k;
    fb_collect(t, t->node[k].r, size, out, n, max);
}

/* acc := max(acc, block k's). */
static void fb_join(const fb_tree *t, int32_t *acc, uint32_t k) {
    const int32_t *a = t->acc + (size_t)k * t->nq;
    for (uint32_t j = 0; j < t->nq; j++)
        if (a[j] > acc[j]) acc[j] = a[j];
}

/* Gives [off, off + size) back, merged with free neighbours; acc (nq
 * entries, scratch) holds the accesses of the group giving it back. */
static void fb_release(fb_tree *t, uint64_t off, uint64_t size, int32_t *acc) {
    uint32_t p = fb_pred(t, off), s = fb_succ(t, off + size);
    if (s != FB_NIL && t->node[s].off == off + size) {
        size += t->node[s].size;
        fb_join(t, acc, s);
        fb_erase(t, t->node[s].off);
    }
    if (p != FB_NIL && t->node[p].off + t->node[p].size == off) {
        off = t->node[p].off;
        size += t->node[p].size;
        fb_join(t, acc, p);
        fb_erase(t, off);
    }
    fb_insert(t, off, size, acc);
}

/* Takes size bytes at the start of block k (removed; what is left of it
 * stays free with the same former accesses). */
static uint64_t fb_cut(fb_tree *t, uint32_t k, uint64_t size) {
    uint64_t off = t->node[k].off, rest = t->node[k].size - size;
    fb_erase(t, off); /* entry k and its row stay intact until the next
                         insert, which reuses them */
    if (rest) fb_insert(t, off + size, rest, t->acc + (size_t)k * t->nq);
    return off;
}

/* Fresh bytes at *top, extending the free block that ends there when
 * `known` covers its former accesses. */
static uint64_t fb_top(fb_tree *t, uint64_t size, const int32_t *known,
                       uint64_t *top) {
    uint32_t p = fb_pred(t, *top);
    if (known && p != FB_NIL && t->node[p].off + t->node[p].size == *top &&
        fb_known(t, p, known)) {
        if (t->node[p].size >= size) /* past the blocks tried */
            return fb_cut(t, p, size);
        uint64_t off = t->node[p].off;
        fb_erase(t, off);
        *top = off + size;
        return off;
    }
    uint64_t off = *top;
    *top += size;
    return off;
}

/* ---- the sweep ------------------------------------------------------------
 */

/* Never gives its bytes back. */
static bool kept(const bp_mem_group *gr) {
    return gr->last == END || gr->whole_run || gr->nwriters == 0;
}

/* The lowest fitting block g's writers know free, within the tries. */
static uint32_t fit_known(fb_tree *t, uint64_t size, const int32_t *known) {
    uint32_t extra = t->shared < (1u << 20) ? (uint32_t)t->shared : 1u << 20;
    uint32_t tries = FB_TRIES + extra;
    uint32_t k = fb_fit(t, t->root, size, known, &tries);
    if (tries < extra) t->shared -= extra - tries;
    return k;
}

/* The latest schedule position among the former accesses of block k that
 * g's writers do not know complete (what the reuse events would wait
 * for); 0 when none. */
static uint32_t newest_wait(const bp_mem *m, const fb_tree *t, uint32_t k,
                            uint32_t g) {
    const bp_mem_hb *hb = &m->hb;
    const int32_t *a = t->acc + (size_t)k * t->nq;
    const int32_t *kn = m->known + (size_t)g * t->nq;
    uint32_t newest = 0;
    for (uint32_t j = 0; j < t->nq; j++) {
        if (a[j] <= kn[j]) continue;
        uint32_t pos = hb->pos[hb->qnode[hb->qstart[j] + (uint32_t)a[j]]];
        if (pos > newest) newest = pos;
    }
    return newest;
}

/* Of the lowest FB_EVENT_TRIES fitting blocks, the one needing the
 * fewest reuse events (within the budget; ties: the one whose events wait
 * for the earliest work, which is likelier done, so the wait costs less
 * overlap) into *k, events added; FB_NIL when none. */
static braid_status with_events(bp_mem *m, fb_tree *t, uint32_t g,
                                uint32_t *k) {
    uint32_t cand[FB_EVENT_TRIES], n = 0, best = UINT32_MAX, newest = 0;
    fb_collect(t, t->root, m->group[g].bytes, cand, &n, FB_EVENT_TRIES);
    *k = FB_NIL;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t need = 0;
        bp_mem_order(m, t->acc + (size_t)cand[i] * t->nq, g, false, &need);
        if (need > m->sweep_events || need > best) continue;
        uint32_t w = newest_wait(m, t, cand[i], g);
        if (need < best || w < newest) best = need, newest = w, *k = cand[i];
    }
    if (*k == FB_NIL) return BRAID_OK;
    uint32_t added = 0;
    braid_status s =
        bp_mem_order(m, t->acc + (size_t)*k * t->nq, g, true, &added);
    m->sweep_events -= added < m->sweep_events ? added : m->sweep_events;
    bp_mem_known(m, g);
    return s;
}

/* Where group g goes: a free block its writers know done; else, when the
 * top would pass the arena's lower bound, a fitting block made known by
 * reuse events, if the budget allows; else the top. */
static braid_status take(bp_mem *m, fb_tree *t, uint32_t g, uint64_t *top) {
    bp_mem_group *gr = &m->group[g];
    if (gr->nwriters == 0) { /* nothing waits for a former access */
        gr->offset = fb_top(t, gr->bytes, NULL, top);
        return BRAID_OK;
    }
    /* the clocks may have gained events: brought up to date a little past
     * g's first access (BP_MEM_SWEEP_AHEAD), stale (smaller) beyond */
    m->horizon = gr->first + BP_MEM_SWEEP_AHEAD;
    bp_mem_known(m, g);
    const int32_t *known = m->known + (size_t)g * t->nq;
    uint32_t k = fit_known(t, gr->bytes, known);
    /* events only where the arena would otherwise grow past its lower
     * bound: below it, fresh bytes cost nothing the arena will not hold
     * anyway, and keep the streams from waiting for each other */
    bool below = *top + gr->bytes <= t->floor;
    if (k == FB_NIL && !below && m->sweep_events > 0 &&
        m->hb.cells < m->sweep_cells) {
        braid_status s = with_events(m, t, g, &k);
        if (s != BRAID_OK) return s;
    }
    gr->offset = k != FB_NIL ? fb_cut(t, k, gr->bytes)
                             : fb_top(t, gr->bytes, known, top);
    return BRAID_OK;
}

/* The sweep over order[0..n); scratch in byfirst and bylast (2n each: the
 * groups by first and by last use, (time, group) ascending). */
static braid_status sweep(bp_mem *m, const uint32_t *order, uint32_t n,
                          bg_sort_item *byfirst, bg_sort_item *bylast,
                          fb_tree *t, uint64_t *bytes) {
    uint32_t nlast = 0;
    for (uint32_t i = 0; i < n; i++) {
        const bp_mem_group *gr = &m->group[order[i]];
        byfirst[i] = (bg_sort_item){gr->first, 0, order[i]};
        if (!kept(gr)) bylast[nlast++] = (bg_sort_item){gr->last, 0, order[i]};
    }
    bg_sort_items(byfirst, n, byfirst + n);
    bg_sort_items(bylast, nlast, bylast + nlast);
    uint64_t top = 0;
    uint32_t next = 0, nq = t->nq, nx0 = m->hb.nx;
    int32_t *acc = t->acc + (size_t)t->cap * nq; /* scratch row */
    braid_status s = BRAID_OK;
    for (uint32_t i = 0; i < n && s == BRAID_OK; i++) {
        uint32_t g = byfirst[i].v;
        for (; next < nlast && bylast[next].k1 < m->group[g].first; next++) {
            uint32_t h = bylast[next].v;
            for (uint32_t j = 0; j < nq; j++)
                acc[j] = m->lastacc[(size_t)h * nq + j];
            fb_release(t, m->group[h].offset, m->group[h].bytes, acc);
        }
        s = take(m, t, g, &top);
    }
    m->horizon = UINT32_MAX;
    if (m->hb.nx != nx0) /* other devices' groups see them */
        for (uint32_t g = 0; g < m->ngroups; g++)
            bp_mem_known(m, g);
    *bytes = top;
    return s;
}

braid_status bp_mem_pack_sweep(bp_mem *m, const uint32_t *order, uint32_t n,
                               uint64_t *bytes) {
    size_t c = n ? n : 1;
    bg_sort_item *byfirst = bp_calloc(2 * c, sizeof *byfirst, "memory sweep");
    bg_sort_item *bylast = bp_calloc(2 * c, sizeof *bylast, "memory sweep");
    /* at most one free block per released group, plus one */
    uint32_t cap = (uint32_t)c + 2, nq = m->hb.nq ? m->hb.nq : 1;
    fb_tree t = {
        .node = bp_calloc(cap, sizeof *t.node, "memory sweep"),
        .cap = cap,
        .acc = bp_calloc(((size_t)cap + 1) * nq, sizeof *t.acc, "memory sweep"),
        .nq = m->hb.nq,
        .free = bp_calloc(cap, sizeof *t.free, "memory sweep"),
        .root = FB_NIL,
        .seed = 0x2545f4914f6cdd1du,
        .shared = (uint64_t)FB_SHARED * n,
        .floor = n ? bp_mem_lower_bound(m, m->group[order[0]].device) : 0};
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (byfirst && bylast && t.node && t.acc && t.free) {
        s = sweep(m, order, n, byfirst, bylast, &t, bytes);
    }
    free(byfirst);
    free(bylast);
    free(t.node);
    free(t.acc);
    free(t.free);
    return s;
}
