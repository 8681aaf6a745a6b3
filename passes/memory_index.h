/* passes/memory_index.h — which groups may conflict (memory_index.c).
 *
 * Groups g and h can conflict (share no bytes without an event) only when
 * their extended lifetimes [min(first, safe), last] intersect: a hard
 * conflict is an overlap of [first, last], and a soft one needs the earlier
 * group's last access at or after the later one's safe position. The
 * greedy packer asks this index for the groups whose extended lifetime
 * meets g's instead of testing every placed group, so its work is the
 * number of such pairs (counted up front to choose the packer). */
#ifndef BRAID_PASSES_MEMORY_INDEX_H
#define BRAID_PASSES_MEMORY_INDEX_H

#include "passes/memory.h"

typedef struct pk_index {
    uint32_t n;       /* groups indexed */
    uint32_t *grp;    /* group ids sorted by lo */
    uint64_t *lo;     /* per sorted entry: extended lifetime start */
    uint64_t *hi;     /* per sorted entry: its end (END as nschedule + 1) */
    uint64_t *hisort; /* every hi, ascending (for counting) */
    uint64_t *tmax;   /* segment tree over sorted entries: largest hi */
    uint32_t size;    /* leaves in tmax (a power of two ≥ n) */
    bool *placed;     /* per group id: placed in the current try */
    uint32_t *out;    /* pk_candidates' answer (n entries) */
} pk_index;

/* Indexes groups order[0..n). */
braid_status pk_index_init(const bp_mem *m, pk_index *ix, const uint32_t *order,
                           uint32_t n);
void pk_index_free(pk_index *ix);
/* Pairs of indexed groups whose extended lifetimes intersect. */
uint64_t pk_pairs(const pk_index *ix);
/* Placed groups other than g whose extended lifetime meets g's, into
 * ix->out; returns how many. */
uint32_t pk_candidates(const bp_mem *m, pk_index *ix, uint32_t g);

#endif /* BRAID_PASSES_MEMORY_INDEX_H */
