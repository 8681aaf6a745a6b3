/* tests/test_sort.c — bg_sort_items (graph/sort.h) against qsort with the
 * same order, on fresh random keys: sizes on both sides of the short-array
 * path, keys that share most of their bytes (the skipped passes), many
 * ties, and the signed-key helper. The seed is printed with any failure. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/sort.h"

static uint64_t rng(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t fresh_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000007ull + (uint64_t)ts.tv_nsec;
}

static int by_keys(const void *x, const void *y) {
    const bg_sort_item *a = x, *b = y;
    if (a->k1 != b->k1) return a->k1 < b->k1 ? -1 : 1;
    if (a->k2 != b->k2) return a->k2 < b->k2 ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

/* Key shapes: full 64-bit keys; small offsets in one "arena" (most bytes
 * shared); few distinct values (ties in k1 and k2, order by v); keys that
 * differ only in high bits. */
static bg_sort_item make(uint64_t *s, int shape, uint32_t i) {
    uint64_t a = rng(s), b = rng(s);
    switch (shape) {
    case 0:
        return (bg_sort_item){a, b, (uint32_t)rng(s)};
    case 1:
        return (bg_sort_item){3, a % (1u << 20), i};
    case 2:
        return (bg_sort_item){a % 4, b % 3, (uint32_t)(rng(s) % 1000)};
    default: /* only high bits differ: the low bytes' passes are skipped */
        return (bg_sort_item){((a % 5000) << 43) | 0x5a5, ~UINT64_C(0),
                              (uint32_t)((b % 7) << 21) | 3};
    }
}

static void check(size_t n, int shape, uint64_t seed) {
    bg_sort_item *a = malloc((n ? n : 1) * sizeof *a);
    bg_sort_item *want = malloc((n ? n : 1) * sizeof *want);
    bg_sort_item *tmp = malloc((n ? n : 1) * sizeof *tmp);
    cr_assert(a && want && tmp);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        a[i] = make(&s, shape, (uint32_t)i);
    memcpy(want, a, n * sizeof *a);
    qsort(want, n, sizeof *want, by_keys);
    bg_sort_items(a, n, tmp);
    for (size_t i = 0; i < n; i++)
        cr_assert(by_keys(&a[i], &want[i]) == 0,
                  "n=%zu shape=%d seed=%llu: item %zu is (%llu, %llu, %u), "
                  "want (%llu, %llu, %u)",
                  n, shape, (unsigned long long)seed, i,
                  (unsigned long long)a[i].k1, (unsigned long long)a[i].k2,
                  a[i].v, (unsigned long long)want[i].k1,
                  (unsigned long long)want[i].k2, want[i].v);
    free(a);
    free(want);
    free(tmp);
}

Test(sort, matches_qsort_on_random_keys) {
    uint64_t seed = fresh_seed();
    const size_t sizes[] = {0, 1, 2, 63, 64, 65, 1000, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int shape = 0; shape < 4; shape++)
            check(sizes[k], shape, seed + 31 * k + (uint64_t)shape);
}

Test(sort, all_keys_equal_keeps_order_by_payload) {
    enum { N = 500 };
    bg_sort_item a[N], tmp[N];
    for (uint32_t i = 0; i < N; i++)
        a[i] = (bg_sort_item){7, 9, N - 1 - i};
    bg_sort_items(a, N, tmp);
    for (uint32_t i = 0; i < N; i++)
        cr_assert_eq(a[i].v, i, "item %u has payload %u", i, a[i].v);
}

Test(sort, signed_keys_order_as_signed_values) {
    const int64_t v[] = {INT64_MIN, -5, -1, 0, 1, 42, INT64_MAX};
    for (size_t i = 0; i + 1 < sizeof v / sizeof v[0]; i++)
        cr_assert(bg_sort_signed(v[i]) < bg_sort_signed(v[i + 1]),
                  "%lld before %lld", (long long)v[i], (long long)v[i + 1]);
    enum { N = 300 };
    bg_sort_item a[N], tmp[N];
    uint64_t s = fresh_seed();
    for (uint32_t i = 0; i < N; i++)
        a[i] = (bg_sort_item){bg_sort_signed((int64_t)(rng(&s) % 2001) - 1000),
                              0, i};
    bg_sort_items(a, N, tmp);
    for (uint32_t i = 1; i < N; i++)
        cr_assert((int64_t)(a[i - 1].k1 ^ bg_sort_signed(0)) <=
                  (int64_t)(a[i].k1 ^ bg_sort_signed(0)));
}
