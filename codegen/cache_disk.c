/* codegen/cache_disk.c — the on-disk kernel cache (see cache.h), one file
 * per key:
 *
 *   offset  size  field
 *   0       8     magic "BRKCUBIN"
 *   8       4     format version (BC_CACHE_VERSION), little-endian
 *   12      4     sm
 *   16      32    key (SHA-256)
 *   48      8     cubin bytes
 *   56      8     ptx bytes (NUL included)
 *   64      32    SHA-256 of the payload
 *   96      32    SHA-256 of bytes 0..95
 *   128     ...   cubin, then ptx
 *
 * Writers go through graph/outfile.h (a temporary file in the same folder
 * renamed over the final name), so readers see a whole old entry or a whole
 * new one and concurrent writers of one key cannot interleave. A reader
 * that finds a bad magic, size or digest ignores the file (bc_compile then
 * rebuilds and replaces it).
 *
 * An entry becomes code that braid runs and embeds in plan files, so only
 * the user may be able to plant one: the folder is created 0700, and a
 * folder or entry not owned by the user, or writable by group or others,
 * is not used. The digests catch damage, not forgery (anyone who can write
 * an entry can write its digests): the ownership rules are the defence.
 * Entries are opened without following links and without blocking, so a
 * FIFO planted there is a miss, not a hang. */
#define _POSIX_C_SOURCE 200809L
#include "codegen/cache.h"

#include "graph/graph.h"
#include "graph/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BC_MAGIC "BRKCUBIN"
#define BC_HEADER 128
#define BC_FILE_LIMIT ((uint64_t)256 << 20) /* larger files are corrupt */

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

/* True when st is ours and neither group nor others may write it. */
static bool private_to_us(const struct stat *st) {
    return st->st_uid == geteuid() && (st->st_mode & 022) == 0;
}

/* True when dir is a folder the cache may trust (not a link to one). */
static bool dir_trusted(const char *dir) {
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && private_to_us(&st);
}

/* mkdir -p: missing parents 0755 (umask applies), the cache folder itself
 * 0700; true when dir ends up trusted. */
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
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return false;
    return dir_trusted(dir);
}

static void entry_path(char *buf, size_t size, const char *dir,
                       const bc_key *key, int sm) {
    int n = snprintf(buf, size, "%s/sm%d-", dir, sm);
    for (int i = 0; i < BC_KEY_BYTES && n > 0 && (size_t)n + 3 < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%02x", key->b[i]);
    if (n > 0 && (size_t)n + 5 < size)
        snprintf(buf + n, size - (size_t)n, ".bkc");
}

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t read64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t read32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Reads a whole entry (at most BC_FILE_LIMIT bytes). NULL with *bad false
 * when there is none; NULL with *bad true when something is there that the
 * cache must not use (not a regular file of ours, writable by others). */
static unsigned char *read_entry(const char *path, size_t *size, bool *bad) {
    *bad = false;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *bad = errno != ENOENT;
        return NULL;
    }
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !private_to_us(&st) ||
        (uint64_t)st.st_size > BC_FILE_LIMIT)
        *bad = true;
    else if ((buf = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        *size = got;
    }
    close(fd);
    return buf;
}

static bool digest_is(const unsigned char *at, const void *data, size_t n) {
    unsigned char d[BC_KEY_BYTES];
    bc_sha256(data, n, d);
    return memcmp(at, d, BC_KEY_BYTES) == 0;
}

/* True when buf (size bytes) is a whole, intact entry for (key, sm). */
static bool entry_valid(const unsigned char *buf, size_t size,
                        const bc_key *key, int sm) {
    if (size < BC_HEADER || memcmp(buf, BC_MAGIC, 8) != 0 ||
        read32(buf + 8) != BC_CACHE_VERSION ||
        read32(buf + 12) != (uint32_t)sm ||
        memcmp(buf + 16, key->b, BC_KEY_BYTES) != 0 ||
        !digest_is(buf + 96, buf, 96))
        return false;
    uint64_t cubin = read64(buf + 48), ptx = read64(buf + 56);
    if (cubin > size || ptx > size || BC_HEADER + cubin + ptx != size ||
        ptx == 0 || buf[size - 1] != '\0')
        return false;
    return digest_is(buf + 64, buf + BC_HEADER, size - BC_HEADER);
}

bool bc_disk_lookup(const char *dir, const bc_key *key, int sm, bc_binary *out,
                    bc_stats *d) {
    char path[1200];
    double t0 = bc_now();
    if (!dir_trusted(dir)) return false;
    entry_path(path, sizeof path, dir, key, sm);
    size_t size = 0;
    bool bad = false, ok = false;
    unsigned char *buf = read_entry(path, &size, &bad);
    if (buf && entry_valid(buf, size, key, sm)) {
        uint64_t cubin = read64(buf + 48), ptx = read64(buf + 56);
        ok = bc_binary_set(out, buf + BC_HEADER, (size_t)cubin,
                           (const char *)buf + BC_HEADER + cubin, (size_t)ptx,
                           sm);
    } else if (buf || bad) {
        d->disk_rejected++;
    }
    free(buf);
    if (ok) d->disk_hits++;
    d->disk_seconds += bc_now() - t0;
    return ok;
}

/* The whole entry for b (malloc'd, *n bytes); NULL when out of memory. */
static unsigned char *make_entry(const bc_key *key, int sm, const bc_binary *b,
                                 size_t *n) {
    size_t payload = b->cubin_size + b->ptx_size;
    unsigned char *buf = malloc(BC_HEADER + payload);
    if (!buf) return NULL;
    memcpy(buf, BC_MAGIC, 8);
    put32(buf + 8, BC_CACHE_VERSION);
    put32(buf + 12, (uint32_t)sm);
    memcpy(buf + 16, key->b, BC_KEY_BYTES);
    put64(buf + 48, b->cubin_size);
    put64(buf + 56, b->ptx_size);
    if (b->cubin_size) memcpy(buf + BC_HEADER, b->cubin, b->cubin_size);
    memcpy(buf + BC_HEADER + b->cubin_size, b->ptx, b->ptx_size);
    bc_sha256(buf + BC_HEADER, payload, buf + 64);
    bc_sha256(buf, 96, buf + 96);
    *n = BC_HEADER + payload;
    return buf;
}

void bc_disk_store(const char *dir, const bc_key *key, int sm,
                   const bc_binary *b, bc_stats *d) {
    double t0 = bc_now();
    char path[1200];
    if (!make_dirs(dir)) return;
    entry_path(path, sizeof path, dir, key, sm);
    size_t n;
    unsigned char *buf = make_entry(key, sm, b, &n);
    bg_outfile o;
    /* A failed store costs only the cache: its message must not replace
     * whatever the caller reports. */
    char saved[BG_ERROR_MAX];
    snprintf(saved, sizeof saved, "%s", braid_last_error());
    if (buf &&
        bg_outfile_open(&o, path, "kernel cache", BG_OUT_PRIVATE) == BRAID_OK) {
        bg_outfile_write(&o, buf, n);
        if (bg_outfile_commit(&o, "kernel cache") == BRAID_OK) d->disk_writes++;
    }
    if (saved[0])
        bg_set_last_error(BRAID_OK, "%s", saved);
    else
        bg_clear_last_error();
    free(buf);
    d->disk_seconds += bc_now() - t0;
}
