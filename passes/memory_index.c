/* passes/memory_index.c — the packer's conflict candidates: extended
 * lifetimes sorted by start, with a segment tree of the largest end below
 * each node, so a query visits only intervals that meet it
 * (O((k + 1) log n) for k answers). */
#include "graph/sort.h"
#include "passes/memory_index.h"

#include <stdlib.h>
#include <string.h>

#define END UINT32_MAX

static void ext(const bp_mem *m, uint32_t g, uint64_t *lo, uint64_t *hi) {
    const bp_mem_group *gr = &m->group[g];
    *lo = gr->safe < gr->first ? gr->safe : gr->first;
    *hi = gr->last == END ? (uint64_t)m->plan->res.nschedule + 1 : gr->last;
}

/* key: scratch for 2n items. */
static braid_status fill(const bp_mem *m, pk_index *ix, const uint32_t *order,
                         bg_sort_item *key) {
    uint32_t n = ix->n;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo, hi;
        ext(m, order[i], &lo, &hi);
        key[i] = (bg_sort_item){lo, 0, order[i]}; /* by (start, group) */
    }
    bg_sort_items(key, n, key + n);
    for (uint32_t i = 0; i < n; i++) {
        ix->grp[i] = key[i].v;
        ext(m, key[i].v, &ix->lo[i], &ix->hi[i]);
    }
    for (uint32_t i = 0; i < n; i++)
        key[i] = (bg_sort_item){ix->hi[i], 0, 0};
    bg_sort_items(key, n, key + n);
    for (uint32_t i = 0; i < n; i++)
        ix->hisort[i] = key[i].k1;
    for (uint32_t i = 0; i < n; i++)
        ix->tmax[ix->size + i] = ix->hi[i];
    for (uint32_t k = ix->size; k-- > 1;)
        ix->tmax[k] = ix->tmax[2 * k] > ix->tmax[2 * k + 1]
                          ? ix->tmax[2 * k]
                          : ix->tmax[2 * k + 1];
    return BRAID_OK;
}

braid_status pk_index_init(const bp_mem *m, pk_index *ix, const uint32_t *order,
                           uint32_t n) {
    memset(ix, 0, sizeof *ix);
    ix->n = n;
    ix->size = 1;
    while (ix->size < n)
        ix->size *= 2;
    size_t c = n ? n : 1;
    ix->grp = bp_calloc(c, sizeof *ix->grp, "memory index");
    ix->lo = bp_calloc(c, sizeof *ix->lo, "memory index");
    ix->hi = bp_calloc(c, sizeof *ix->hi, "memory index");
    ix->hisort = bp_calloc(c, sizeof *ix->hisort, "memory index");
    ix->tmax = bp_calloc(2 * (size_t)ix->size, sizeof *ix->tmax,
                         "memory index"); /* empty leaves: 0 */
    ix->placed = bp_calloc(m->ngroups ? m->ngroups : 1, sizeof *ix->placed,
                           "memory index");
    ix->out = bp_calloc(c, sizeof *ix->out, "memory index");
    bg_sort_item *key = bp_calloc(2 * c, sizeof *key, "memory index");
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (ix->grp && ix->lo && ix->hi && ix->hisort && ix->tmax && ix->placed &&
        ix->out && key)
        s = fill(m, ix, order, key);
    free(key);
    return s;
}

void pk_index_free(pk_index *ix) {
    free(ix->grp);
    free(ix->lo);
    free(ix->hi);
    free(ix->hisort);
    free(ix->tmax);
    free(ix->placed);
    free(ix->out);
    memset(ix, 0, sizeof *ix);
}

/* Entries of sorted v[0..n) that are ≤ x (upper bound). */
static uint32_t count_le(const uint64_t *v, uint32_t n, uint64_t x) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t pk_pairs(const pk_index *ix) {
    uint64_t twice = 0;
    for (uint32_t i = 0; i < ix->n; i++) {
        /* h meets i: lo_h ≤ hi_i, less those ending before lo_i (which
         * start before it too), less i itself */
        uint64_t start = count_le(ix->lo, ix->n, ix->hi[i]);
        uint64_t ended =
            ix->lo[i] ? count_le(ix->hisort, ix->n, ix->lo[i] - 1) : 0;
        twice += start - ended - 1;
    }
    return twice / 2;
}

/* Entries in [0, limit) below tree node k (leaves [a, b)) whose hi ≥ lo. */
static void collect(pk_index *ix, uint32_t k, uint32_t a, uint32_t b,
                    uint32_t limit, uint64_t lo, uint32_t g, uint32_t *n) {
    if (a >= limit || ix->tmax[k] < lo) return;
    if (b - a == 1) {
        uint32_t h = ix->grp[a];
        if (h != g && ix->placed[h]) ix->out[(*n)++] = h;
        return;
    }
    uint32_t mid = a + (b - a) / 2;
    collect(ix, 2 * k, a, mid, limit, lo, g, n);
    collect(ix, 2 * k + 1, mid, b, limit, lo, g, n);
}

uint32_t pk_candidates(const bp_mem *m, pk_index *ix, uint32_t g) {
    uint64_t lo, hi;
    ext(m, g, &lo, &hi);
    uint32_t n = 0;
    collect(ix, 1, 0, ix->size, count_le(ix->lo, ix->n, hi), lo, g, &n);
    return n;
}
