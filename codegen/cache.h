/* codegen/cache.h — the kernel caches behind bc_compile (prefix bc_),
 * internal to codegen/. */
#ifndef BRAID_CODEGEN_CACHE_H
#define BRAID_CODEGEN_CACHE_H

#include "codegen/codegen.h"

/* Bumped whenever the entry layout or what the key covers changes. */
#define BC_CACHE_VERSION 2u
#define BC_KEY_BYTES 32 /* a SHA-256 digest */

/* A cache key: the SHA-256 of every input of a compilation. */
typedef struct bc_key {
    unsigned char b[BC_KEY_BYTES]; /* the digest */
} bc_key;

/* SHA-256 of n bytes (nettle). */
void bc_sha256(const void *data, size_t n, unsigned char out[BC_KEY_BYTES]);

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
bool bc_mem_lookup(const bc_key *key, bc_binary *out);
void bc_mem_store(const bc_key *key, const bc_binary *b);

/* Disk cache in folder dir: lookup reads and validates the entry (a
 * corrupt one, or one that is not a regular file of the user's that only
 * the user may write, counts in d->disk_rejected and is reported missing);
 * store creates dir (mkdir -p, the last component 0700) and writes the
 * entry atomically (temporary file + rename). Neither uses a folder that is
 * not the user's or that group or others may write. I/O failures only cost
 * the cache. */
bool bc_disk_lookup(const char *dir, const bc_key *key, int sm, bc_binary *out,
                    bc_stats *d);
void bc_disk_store(const char *dir, const bc_key *key, int sm,
                   const bc_binary *b, bc_stats *d);

#endif /* BRAID_CODEGEN_CACHE_H */
