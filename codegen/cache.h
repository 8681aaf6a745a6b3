/* codegen/cache.h — the kernel caches behind bc_compile (prefix bc_),
 * internal to codegen/. */
#ifndef BRAID_CODEGEN_CACHE_H
#define BRAID_CODEGEN_CACHE_H

#include "codegen/codegen.h"

/* Bumped whenever the entry layout or what the key covers changes. */
#define BC_CACHE_VERSION 1u

/* 128-bit hash of n bytes under seed (not cryptographic). */
void bc_hash128(const void *data, size_t n, uint64_t seed, uint64_t out[2]);

/* Adds d's counters to the process-wide ones. */
void bc_stats_add(const bc_stats *d);
/* Monotonic seconds. */
double bc_now(void);

/* Deep-copies (cubin, ptx) into *out (zeroed first); false when out of
 * memory. ptx_size counts the NUL. */
bool bc_binary_set(bc_binary *out, const void *cubin, size_t cubin_size,
                   const char *ptx, size_t ptx_size, int sm);

/* In-memory cache: lookup copies into *out (and counts a hit); store
 * copies b. Thread-safe. */
bool bc_mem_lookup(const uint64_t key[2], bc_binary *out);
void bc_mem_store(const uint64_t key[2], const bc_binary *b);

/* Disk cache in folder dir: lookup reads and validates the entry (a
 * corrupt one counts in d->disk_rejected and is reported missing); store
 * creates dir (mkdir -p) and writes the entry atomically (temporary file +
 * rename). I/O failures only cost the cache. */
bool bc_disk_lookup(const char *dir, const uint64_t key[2], int sm,
                    bc_binary *out, bc_stats *d);
void bc_disk_store(const char *dir, const uint64_t key[2], int sm,
                   const bc_binary *b, bc_stats *d);

#endif /* BRAID_CODEGEN_CACHE_H */
