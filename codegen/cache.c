/* codegen/cache.c — the compiled-kernel caches and their counters.
 *
 * Keys are 128-bit hashes (bc_hash128, below) of everything that changes
 * NVRTC's output: source, options, architecture, NVRTC version and this
 * file's format version. The in-memory cache holds copies of recent
 * results (FIFO, bounded in bytes); the disk cache holds one file per key:
 *
 *   offset  size  field
 *   0       8     magic "BRKCUBIN"
 *   8       4     format version (BC_CACHE_VERSION), little-endian
 *   12      4     sm
 *   16      16    key (two u64)
 *   32      8     cubin bytes
 *   40      8     ptx bytes (NUL included)
 *   48      8     hash of the payload
 *   56      8     hash of bytes 0..55
 *   64      ...   cubin, then ptx
 *
 * Writers write a temporary file in the same folder and rename it over the
 * final name, so readers see a whole old entry or a whole new one and
 * concurrent writers of one key cannot interleave. A reader that finds a
 * bad magic, size or hash ignores the file (bc_compile then rebuilds and
 * replaces it). */
#define _POSIX_C_SOURCE 200809L
#include "codegen/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BC_MAGIC "BRKCUBIN"
#define BC_HEADER 64
#define BC_MEM_LIMIT ((size_t)128 << 20)    /* bytes the memory cache keeps */
#define BC_FILE_LIMIT ((uint64_t)256 << 20) /* larger files are corrupt */

/* ---- hashing ---------------------------------------------------------------
 */

static uint64_t rotl(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

/* A final avalanche: every input bit affects every output bit. */
static uint64_t avalanche(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

static uint64_t read64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Two 64-bit lanes over 16-byte blocks, each lane multiplied and rotated
 * and then fed into the other, finished with the length and an avalanche.
 * Not cryptographic: it separates cache entries, and checksums them. */
void bc_hash128(const void *data, size_t n, uint64_t seed, uint64_t out[2]) {
    const unsigned char *p = data;
    uint64_t a = seed ^ 0x243f6a8885a308d3ull;
    uint64_t b = rotl(seed, 32) ^ 0x13198a2e03707344ull;
    size_t left = n;
    unsigned char tail[16];
    while (left > 0) {
        const unsigned char *blk = p;
        if (left < 16) {
            memset(tail, 0, sizeof tail);
            memcpy(tail, p, left);
            tail[15] = (unsigned char)left;
            blk = tail;
        }
        uint64_t w0 = read64(blk), w1 = read64(blk + 8);
        a = rotl(a ^ (w0 * 0x9fb21c651e98df25ull), 29) * 0xc13fa9a902a6328full;
        b = rotl(b ^ (w1 * 0xc13fa9a902a6328full), 35) * 0x9fb21c651e98df25ull;
        a += b;
        b ^= a;
        size_t step = left < 16 ? left : 16;
        p += step;
        left -= step;
    }
    a ^= (uint64_t)n;
    b += (uint64_t)n * 0x9e3779b97f4a7c15ull;
    a = avalanche(a + b);
    b = avalanche(b ^ a);
    out[0] = a;
    out[1] = b;
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
    uint64_t key[2]; /* the key */
    bc_binary bin;   /* an owned copy */
} mem_entry;

static mem_entry *mem;        /* entries, oldest first */
static size_t mem_n, mem_cap; /* used / allocated entries */
static size_t mem_bytes;      /* cubin + ptx bytes held */

static size_t entry_bytes(const bc_binary *b) {
    return b->cubin_size + b->ptx_size;
}

bool bc_mem_lookup(const uint64_t key[2], bc_binary *out) {
    bool found = false, ok = true;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < mem_n && !found; i++) {
        if (mem[i].key[0] != key[0] || mem[i].key[1] != key[1]) continue;
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

void bc_mem_store(const uint64_t key[2], const bc_binary *b) {
    if (entry_bytes(b) > BC_MEM_LIMIT / 4) return;
    mem_entry e = {{key[0], key[1]}, {0}};
    if (!bc_binary_set(&e.bin, b->cubin, b->cubin_size, b->ptx, b->ptx_size,
                       b->sm))
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < mem_n; i++)
        if (mem[i].key[0] == key[0] && mem[i].key[1] == key[1]) {
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

/* ---- disk cache
 * ------------------------------------------------------------------- */

bool bc_cache_dir(char *buf, size_t size) {
    const char *env = getenv("BRAID_CACHE_DIR");
    int n;
    if (env) {
        if (!*env) return false;
        n = snprintf(buf, size, "%s", env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (xdg && xdg[0] == '/')
            n = snprintf(buf, size, "%s/braid", xdg);
        else if (home && home[0] == '/')
            n = snprintf(buf, size, "%s/.cache/braid", home);
        else
            return false;
    }
    return n > 0 && (size_t)n < size;
}

/* mkdir -p: every missing component, 0755 (umask applies). */
static bool make_dirs(const char *dir) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return false;
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) return false;
        *s = '/';
    }
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

static void entry_path(char *buf, size_t size, const char *dir,
                       const uint64_t key[2], int sm) {
    snprintf(buf, size, "%s/sm%d-%016llx%016llx.bkc", dir, sm,
             (unsigned long long)key[0], (unsigned long long)key[1]);
}

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t read32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t hash64(const void *p, size_t n) {
    uint64_t h[2];
    bc_hash128(p, n, 0x62726169646b6331ull, h);
    return h[0];
}

/* Reads a whole file (at most BC_FILE_LIMIT bytes); NULL when missing. */
static unsigned char *read_file(const char *path, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size <= BC_FILE_LIMIT &&
        (buf = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        *size = got;
    }
    close(fd);
    return buf;
}

/* True when buf (size bytes) is a whole, intact entry for (key, sm). */
static bool entry_valid(const unsigned char *buf, size_t size,
                        const uint64_t key[2], int sm) {
    if (size < BC_HEADER || memcmp(buf, BC_MAGIC, 8) != 0 ||
        read32(buf + 8) != BC_CACHE_VERSION ||
        read32(buf + 12) != (uint32_t)sm || read64(buf + 16) != key[0] ||
        read64(buf + 24) != key[1] || read64(buf + 56) != hash64(buf, 56))
        return false;
    uint64_t cubin = read64(buf + 32), ptx = read64(buf + 40);
    if (cubin > size || ptx > size || BC_HEADER + cubin + ptx != size ||
        ptx == 0 || buf[size - 1] != '\0')
        return false;
    return read64(buf + 48) == hash64(buf + BC_HEADER, size - BC_HEADER);
}

bool bc_disk_lookup(const char *dir, const uint64_t key[2], int sm,
                    bc_binary *out, bc_stats *d) {
    char path[1200];
    entry_path(path, sizeof path, dir, key, sm);
    double t0 = bc_now();
    size_t size = 0;
    unsigned char *buf = read_file(path, &size);
    bool ok = false;
    if (buf) {
        if (entry_valid(buf, size, key, sm)) {
            uint64_t cubin = read64(buf + 32), ptx = read64(buf + 40);
            ok = bc_binary_set(out, buf + BC_HEADER, (size_t)cubin,
                               (const char *)buf + BC_HEADER + cubin,
                               (size_t)ptx, sm);
        } else {
            d->disk_rejected++;
        }
        free(buf);
    }
    if (ok) d->disk_hits++;
    d->disk_seconds += bc_now() - t0;
    return ok;
}

static bool write_all(int fd, const void *p, size_t n) {
    const unsigned char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return false;
        }
        c += w;
        n -= (size_t)w;
    }
    return true;
}

void bc_disk_store(const char *dir, const uint64_t key[2], int sm,
                   const bc_binary *b, bc_stats *d) {
    static atomic_uint serial;
    double t0 = bc_now();
    char path[1200], tmp[1300];
    if (!make_dirs(dir)) return;
    entry_path(path, sizeof path, dir, key, sm);
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(),
             atomic_fetch_add(&serial, 1u));
    size_t payload = b->cubin_size + b->ptx_size;
    unsigned char *buf = malloc(BC_HEADER + payload);
    if (!buf) return;
    memcpy(buf, BC_MAGIC, 8);
    put32(buf + 8, BC_CACHE_VERSION);
    put32(buf + 12, (uint32_t)sm);
    put64(buf + 16, key[0]);
    put64(buf + 24, key[1]);
    put64(buf + 32, b->cubin_size);
    put64(buf + 40, b->ptx_size);
    if (b->cubin_size) memcpy(buf + BC_HEADER, b->cubin, b->cubin_size);
    memcpy(buf + BC_HEADER + b->cubin_size, b->ptx, b->ptx_size);
    put64(buf + 48, hash64(buf + BC_HEADER, payload));
    put64(buf + 56, hash64(buf, 56));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, buf, BC_HEADER + payload);
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (ok && rename(tmp, path) == 0)
        d->disk_writes++;
    else if (fd >= 0)
        unlink(tmp);
    free(buf);
    d->disk_seconds += bc_now() - t0;
}
