/* codegen/cache.c — the compiled-kernel caches and their counters.
 *
 * Keys are SHA-256 digests (bc_sha256, Debian's nettle) of everything that
 * changes NVRTC's output: source, options, architecture, NVRTC version and
 * this file's format version. The in-memory cache holds copies of recent
 * results (FIFO, bounded in bytes); the disk cache is in cache_disk.c. */
#define _POSIX_C_SOURCE 200809L
#include "codegen/cache.h"

#include <nettle/sha2.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BC_MEM_LIMIT ((size_t)128 << 20) /* bytes the memory cache keeps */

/* ---- hashing ------------------------------------------------------------ */

void bc_sha256(const void *data, size_t n, unsigned char out[BC_KEY_BYTES]) {
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, n, data);
    sha256_digest(&c, SHA256_DIGEST_SIZE, out);
}

/* ---- counters
 * ---------------------------------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bc_stats stats;

void bc_stats_get(bc_stats *out) {
    pthread_mutex_lock(&lock);
    *out = stats;
    pthread_mutex_unlock(&lock);
}

void bc_stats_reset(void) {
    pthread_mutex_lock(&lock);
    memset(&stats, 0, sizeof stats);
    pthread_mutex_unlock(&lock);
}

void bc_stats_add(const bc_stats *d) {
    pthread_mutex_lock(&lock);
    stats.compiles += d->compiles;
    stats.failures += d->failures;
    stats.memory_hits += d->memory_hits;
    stats.disk_hits += d->disk_hits;
    stats.disk_writes += d->disk_writes;
    stats.disk_rejected += d->disk_rejected;
    stats.nvrtc_seconds += d->nvrtc_seconds;
    stats.disk_seconds += d->disk_seconds;
    pthread_mutex_unlock(&lock);
}

double bc_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- binaries
 * ------------------------------------------------------------------- */

void bc_binary_free(bc_binary *b) {
    if (!b) return;
    free(b->cubin);
    free(b->ptx);
    memset(b, 0, sizeof *b);
}

/* A deep copy of (cubin, ptx) into *out; false when out of memory. */
bool bc_binary_set(bc_binary *out, const void *cubin, size_t cubin_size,
                   const char *ptx, size_t ptx_size, int sm) {
    memset(out, 0, sizeof *out);
    out->sm = sm;
    if (cubin_size) {
        if (!(out->cubin = malloc(cubin_size))) return false;
        memcpy(out->cubin, cubin, cubin_size);
        out->cubin_size = cubin_size;
    }
    out->ptx = malloc(ptx_size ? ptx_size : 1);
    if (!out->ptx) {
        bc_binary_free(out);
        return false;
    }
    if (ptx_size) memcpy(out->ptx, ptx, ptx_size);
    out->ptx[ptx_size ? ptx_size - 1 : 0] = '\0';
    out->ptx_size = ptx_size ? ptx_size : 1;
    return true;
}

/* ---- memory cache
 * ------------------------------------------------------------------ */

typedef struct mem_entry {
    bc_key key;      /* the key */
    bc_binary bin;   /* an owned copy */
} mem_entry;

static mem_entry *mem;        /* entries, oldest first */
static size_t mem_n, mem_cap; /* used / allocated entries */
static size_t mem_bytes;      /* cubin + ptx bytes held */

static size_t entry_bytes(const bc_binary *b) {
    return b->cubin_size + b->ptx_size;
}

bool bc_mem_lookup(const bc_key *key, bc_binary *out) {
    bool found = false, ok = true;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < mem_n && !found; i++) {
        if (memcmp(&mem[i].key, key, sizeof *key) != 0) continue;
        const bc_binary *b = &mem[i].bin;
        found = true;
        ok = bc_binary_set(out, b->cubin, b->cubin_size, b->ptx, b->ptx_size,
                           b->sm);
    }
    if (found && ok) stats.memory_hits++;
    pthread_mutex_unlock(&lock);
    return found && ok;
}

static void mem_drop_oldest(void) {
    mem_bytes -= entry_bytes(&mem[0].bin);
    bc_binary_free(&mem[0].bin);
    memmove(mem, mem + 1, (mem_n - 1) * sizeof *mem);
    mem_n--;
}

void bc_mem_store(const bc_key *key, const bc_binary *b) {
    if (entry_bytes(b) > BC_MEM_LIMIT / 4) return;
    mem_entry e = {*key, {0}};
    if (!bc_binary_set(&e.bin, b->cubin, b->cubin_size, b->ptx, b->ptx_size,
                       b->sm))
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < mem_n; i++)
        if (memcmp(&mem[i].key, key, sizeof *key) == 0) {
            pthread_mutex_unlock(&lock);
            bc_binary_free(&e.bin);
            return;
        }
    while (mem_n > 0 && mem_bytes + entry_bytes(b) > BC_MEM_LIMIT)
        mem_drop_oldest();
    if (mem_n == mem_cap) {
        size_t cap = mem_cap ? mem_cap * 2 : 64;
        mem_entry *m = realloc(mem, cap * sizeof *m);
        if (!m) {
            pthread_mutex_unlock(&lock);
            bc_binary_free(&e.bin);
            return;
        }
        mem = m;
        mem_cap = cap;
    }
    mem[mem_n++] = e;
    mem_bytes += entry_bytes(b);
    pthread_mutex_unlock(&lock);
}

void bc_cache_clear(void) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < mem_n; i++)
        bc_binary_free(&mem[i].bin);
    free(mem);
    mem = NULL;
    mem_n = mem_cap = mem_bytes = 0;
    pthread_mutex_unlock(&lock);
}
