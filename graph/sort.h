/* graph/sort.h — sorting many keyed records in linear time.
 *
 * The compiler sorts arrays with an entry per node or per buffer (the
 * memory planner's groups, the plan verifier's spans and cut points): at a
 * million entries, qsort's n log n comparisons through a function pointer
 * were a fifth of a compile. bg_sort_items sorts by integer keys instead,
 * a least-significant-digit radix sort over the key's bytes that skips the
 * bytes every entry shares (offsets far below 2^64, one arena, ...). */
#ifndef BRAID_GRAPH_SORT_H
#define BRAID_GRAPH_SORT_H

#include <stddef.h>
#include <stdint.h>

/* A record to sort: its keys and a payload that breaks ties. */
typedef struct bg_sort_item {
    uint64_t k1; /* first key */
    uint64_t k2; /* second key, among equal k1 */
    uint32_t v;  /* payload (an index), last key: equal keys keep no
                    other order than v's */
} bg_sort_item;

/* Sorts items[0..n) ascending by (k1, k2, v). tmp: scratch room for n
 * items (the result is in items). Linear in n: at most 20 passes over
 * the items, one per byte of the key that differs between them. */
void bg_sort_items(bg_sort_item *items, size_t n, bg_sort_item *tmp);

/* The key that orders signed values as unsigned ones order. */
static inline uint64_t bg_sort_signed(int64_t x) {
    return (uint64_t)x ^ (UINT64_C(1) << 63);
}

#endif
