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
 * When is a group done for the groups still to come? Groups are placed in
 * order of their first access. Group h's bytes are released before group
 * g_i is placed when h.last < min(first_i, safe_j for every j ≥ i): every
 * later group's writers then know all of h's accesses complete (safe, see
 * bp_mem_group), so sharing needs no event. On one queue safe is the first
 * access and this is exact; across streams it is conservative (the greedy
 * adds reuse events where they pay; this packer never adds any). Outputs,
 * GPU constants and groups without writers are never released. */
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

typedef struct fb_tree {
    fb_node *node;  /* pool */
    uint32_t *free; /* recycled pool entries */
    uint32_t nfree, used, root;
    uint64_t seed;
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

static void fb_insert(fb_tree *t, uint64_t off, uint64_t size) {
    uint32_t k = t->nfree ? t->free[--t->nfree] : t->used++;
    t->seed = t->seed * 6364136223846793005u + 1442695040888963407u;
    t->node[k] = (fb_node){off, size, size, (uint32_t)(t->seed >> 33),
                           FB_NIL, FB_NIL};
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

/* The lowest block of at least size bytes, or FB_NIL. */
static uint32_t fb_first_fit(const fb_tree *t, uint64_t size) {
    uint32_t k = t->root;
    if (fb_max(t, k) < size) return FB_NIL;
    for (;;) {
        const fb_node *n = &t->node[k];
        if (fb_max(t, n->l) >= size)
            k = n->l;
        else if (n->size >= size)
            return k;
        else
            k = n->r;
    }
}

/* Gives [off, off + size) back, merged with free neighbours. */
static void fb_release(fb_tree *t, uint64_t off, uint64_t size) {
    uint32_t p = fb_pred(t, off), s = fb_succ(t, off + size);
    if (s != FB_NIL && t->node[s].off == off + size) {
        size += t->node[s].size;
        fb_erase(t, t->node[s].off);
    }
    if (p != FB_NIL && t->node[p].off + t->node[p].size == off) {
        off = t->node[p].off;
        size += t->node[p].size;
        fb_erase(t, off);
    }
    fb_insert(t, off, size);
}

/* Takes size bytes: the lowest free block that holds them, else the free
 * block ending at *top grown, else fresh bytes at *top. */
static uint64_t fb_take(fb_tree *t, uint64_t size, uint64_t *top) {
    uint32_t k = fb_first_fit(t, size);
    if (k != FB_NIL) {
        uint64_t off = t->node[k].off, rest = t->node[k].size - size;
        fb_erase(t, off);
        if (rest) fb_insert(t, off + size, rest);
        return off;
    }
    uint32_t p = fb_pred(t, *top);
    uint64_t off = *top;
    if (p != FB_NIL && t->node[p].off + t->node[p].size == *top) {
        off = t->node[p].off;
        fb_erase(t, off);
    }
    *top = off + size;
    return off;
}

/* ---- the sweep ------------------------------------------------------------ */

typedef struct sw_key {
    uint64_t at;    /* sort key */
    uint32_t group; /* its group (smaller first on ties) */
} sw_key;

static int by_at(const void *x, const void *y) {
    const sw_key *a = x, *b = y;
    if (a->at != b->at) return a->at < b->at ? -1 : 1;
    return a->group < b->group ? -1 : a->group > b->group;
}

/* Never gives its bytes back. */
static bool kept(const bp_mem_group *gr) {
    return gr->last == END || gr->whole_run || gr->nwriters == 0;
}

/* The sweep over order[0..n) (sorted by first access here); scratch in
 * byfirst, bylast and limit (n each). */
static void sweep(bp_mem *m, const uint32_t *order, uint32_t n,
                  sw_key *byfirst, sw_key *bylast, uint32_t *limit,
                  fb_tree *t, uint64_t *bytes) {
    uint32_t nlast = 0;
    for (uint32_t i = 0; i < n; i++) {
        const bp_mem_group *gr = &m->group[order[i]];
        byfirst[i] = (sw_key){gr->first, order[i]};
        if (!kept(gr)) bylast[nlast++] = (sw_key){gr->last, order[i]};
    }
    qsort(byfirst, n, sizeof *byfirst, by_at);
    qsort(bylast, nlast, sizeof *bylast, by_at);
    uint32_t low = END; /* min safe over the groups still to place */
    for (uint32_t i = n; i-- > 0;) {
        const bp_mem_group *gr = &m->group[byfirst[i].group];
        if (gr->nwriters > 0 && gr->safe < low) low = gr->safe;
        limit[i] = low < gr->first ? low : gr->first;
    }
    uint64_t top = 0;
    uint32_t next = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (; next < nlast && bylast[next].at < limit[i]; next++) {
            const bp_mem_group *h = &m->group[bylast[next].group];
            fb_release(t, h->offset, h->bytes);
        }
        bp_mem_group *gr = &m->group[byfirst[i].group];
        gr->offset = fb_take(t, gr->bytes, &top);
    }
    *bytes = top;
}

braid_status bp_mem_pack_sweep(bp_mem *m, const uint32_t *order, uint32_t n,
                               uint64_t *bytes) {
    size_t c = n ? n : 1;
    sw_key *byfirst = bp_calloc(c, sizeof *byfirst, "memory sweep");
    sw_key *bylast = bp_calloc(c, sizeof *bylast, "memory sweep");
    uint32_t *limit = bp_calloc(c, sizeof *limit, "memory sweep");
    /* each take or release adds at most one block */
    fb_tree t = {bp_calloc(2 * c + 2, sizeof *t.node, "memory sweep"),
                 bp_calloc(2 * c + 2, sizeof *t.free, "memory sweep"),
                 0, 0, FB_NIL, 0x2545f4914f6cdd1du};
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (byfirst && bylast && limit && t.node && t.free) {
        sweep(m, order, n, byfirst, bylast, limit, &t, bytes);
        s = BRAID_OK;
    }
    free(byfirst);
    free(bylast);
    free(limit);
    free(t.node);
    free(t.free);
    return s;
}
