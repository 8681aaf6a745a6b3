/* graph/huge.c — transparent huge pages for braid's large arrays.
 *
 * A compile or a plan load sweeps arrays with one entry per node (the
 * graph's nodes, 312 bytes each; the plan's per-node info; the passes'
 * scratch) again and again. With 4 KiB pages, a 150k-node graph's 47 MB
 * node array needs 11k TLB entries, far past the CPU's second-level TLB
 * (about 1.5-2k entries): every pass pays a page walk per node, where a
 * 15k-node graph's array fits the TLB. On Linux with transparent huge pages
 * in "madvise" mode (the usual default) an allocation advised
 * MADV_HUGEPAGE gets 2 MiB pages when its memory is first touched; this
 * is what glibc's glibc.malloc.hugetlb=1 tunable does for every large
 * allocation, done here for braid's own (bench/RESULTS.md, issue 17).
 * Elsewhere, or when the kernel says no, nothing happens. */
#define _DEFAULT_SOURCE
#include "graph/graph.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Below this many bytes an array fits the TLB anyway (and a huge page
 * would mostly hold memory it never uses). */
#define HUGE_MIN ((size_t)4 << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

void bg_huge_advise(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    if (!p || n < HUGE_MIN) return;
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

/* realloc, then bg_huge_advise; except for a block growing from below
 * HUGE_MIN to HUGE_MIN or more, which realloc would copy into fresh memory
 * before it could be advised (every 4 KiB page of the copy a fault): that
 * one is a new block, advised, then copied into. A block already HUGE_MIN
 * or larger stays with realloc, which moves a block the C library mapped
 * itself with mremap (no copy, its advice kept): copying those instead
 * cost the fuse pass's program array 0.5 s at 1.5M nodes. */
void *bg_huge_realloc(void *p, size_t old_size, size_t new_size) {
    if (!p || old_size >= HUGE_MIN || new_size < HUGE_MIN) {
        void *q = realloc(p, new_size);
        bg_huge_advise(q, new_size);
        return q;
    }
    void *q = malloc(new_size);
    if (!q) return NULL;
    bg_huge_advise(q, new_size);
    memcpy(q, p, old_size); /* old_size < HUGE_MIN <= new_size */
    free(p);
    return q;
}
