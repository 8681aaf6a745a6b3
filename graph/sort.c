/* graph/sort.c — bg_sort_items (graph/sort.h): an LSD radix sort over the
 * 20 bytes of (k1, k2, v), least significant first. Each pass is stable, so
 * after the pass over the most significant byte the items are in key
 * order. One read of the items counts every byte's histogram; a byte whose
 * histogram has a single bucket (the same in every item) is skipped. */
#include "graph/sort.h"

#include <stdbool.h>
#include <string.h>

#define DIGITS 20 /* bytes of the key: v (4), k2 (8), k1 (8) */

/* Byte d of the key, counted from the least significant. */
static inline unsigned digit(const bg_sort_item *it, int d) {
    if (d < 4) return (it->v >> (8 * d)) & 0xff;
    if (d < 12) return (unsigned)(it->k2 >> (8 * (d - 4))) & 0xff;
    return (unsigned)(it->k1 >> (8 * (d - 12))) & 0xff;
}

static bool less(const bg_sort_item *a, const bg_sort_item *b) {
    if (a->k1 != b->k1) return a->k1 < b->k1;
    if (a->k2 != b->k2) return a->k2 < b->k2;
    return a->v < b->v;
}

/* Insertion sort for short arrays, where the histograms cost more than
 * the sort. */
static void insertion_sort(bg_sort_item *items, size_t n) {
    for (size_t i = 1; i < n; i++) {
        bg_sort_item x = items[i];
        size_t j = i;
        for (; j > 0 && less(&x, &items[j - 1]); j--)
            items[j] = items[j - 1];
        items[j] = x;
    }
}

void bg_sort_items(bg_sort_item *items, size_t n, bg_sort_item *tmp) {
    if (n < 64) {
        insertion_sort(items, n);
        return;
    }
    _Static_assert(DIGITS * 256 * sizeof(size_t) <= 64 * 1024,
                   "the histograms stay small");
    size_t count[DIGITS][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < DIGITS; d++)
            count[d][digit(&items[i], d)]++;
    bg_sort_item *src = items, *dst = tmp;
    for (int d = 0; d < DIGITS; d++) {
        if (count[d][digit(&items[0], d)] == n) continue; /* one value */
        size_t at = 0;
        for (int b = 0; b < 256; b++) { /* bucket starts */
            size_t c = count[d][b];
            count[d][b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[d][digit(&src[i], d)]++] = src[i];
        bg_sort_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != items) memcpy(items, src, n * sizeof *items);
}
