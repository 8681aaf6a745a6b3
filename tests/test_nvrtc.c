/* tests/test_nvrtc.c — bc_compile: NVRTC output, the in-memory and on-disk
 * kernel caches (hits, reuse by a fresh process-level cache, corrupt and
 * truncated entries rebuilt, concurrent writers, BRAID_CACHE_DIR and
 * XDG_CACHE_HOME), counters, and compile errors that name the node and
 * quote the generated line. Needs no GPU: NVRTC compiles for sm_90 on any
 * machine with the toolkit. Skipped when braid was built without it. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tests/support/golden.h"
#include "tests/tmpfiles.h"

#ifndef BRAID_HAVE_CUDA

Test(nvrtc, skipped) {
    cr_skip_test("braid was built without the CUDA toolkit");
}

#else

/* A small module, made unique by salt so no earlier run's cache answers. */
static char *kernel_text(unsigned long salt) {
    char *s = malloc(1024);
    cr_assert_not_null(s);
    snprintf(s, 1024,
             "// salt %lu %ld\n"
             "extern \"C\" __global__ void k0(float *out, const float *in0) "
             "{\n"
             "    unsigned i = blockIdx.x * 256 + threadIdx.x;\n"
             "    out[i] = in0[i] * 2.0f + 1.0f;\n"
             "}\n",
             salt, (long)getpid());
    return s;
}

/* A fresh cache folder for this test (BRAID_CACHE_DIR), removed at the
 * end by the caller. */
static char *fresh_cache(void) {
    char *dir = tf_mkdtemp();
    cr_assert_not_null(dir);
    cr_assert_eq(setenv("BRAID_CACHE_DIR", dir, 1), 0);
    bc_cache_clear();
    bc_stats_reset();
    return dir;
}

/* The one cache entry in dir (malloc'd path); fails the test otherwise. */
static char *only_entry(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    char *found = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        found = tf_path(dir, e->d_name);
        cr_assert(strstr(e->d_name, ".bkc") && !strstr(e->d_name, ".tmp"),
                  "unexpected file %s in the cache", e->d_name);
    }
    closedir(d);
    cr_assert_eq(n, 1, "%d files in the cache, expected 1", n);
    return found;
}

static void compile_ok(const char *src, bc_binary *b) {
    char err[4096];
    braid_status s = bc_compile(src, "kernel.cu", 90, b, err, sizeof err);
    cr_assert_eq(s, BRAID_OK, "%s", err);
    cr_assert(b->cubin && b->cubin_size > 0);
    cr_assert(b->ptx && b->ptx_size == strlen(b->ptx) + 1);
}

Test(nvrtc, compiles_cubin_and_ptx) {
    char *dir = fresh_cache();
    char *src = kernel_text(1);
    bc_binary b;
    compile_ok(src, &b);
    cr_assert_eq(b.sm, 90);
    cr_assert_not(b.cached);
    /* CUBIN is an ELF image; the PTX names the entry and the target. */
    cr_assert_eq(memcmp(b.cubin,
                        "\x7f"
                        "ELF",
                        4),
                 0);
    cr_assert(strstr(b.ptx, ".entry k0"));
    cr_assert(strstr(b.ptx, ".target sm_90"));
    cr_assert_gt(bc_nvrtc_version(), 12000);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 1);
    cr_assert_eq(st.disk_writes, 1);
    cr_assert_gt(st.nvrtc_seconds, 0.0);
    cr_log_info("NVRTC %d: one small kernel in %.3f s", bc_nvrtc_version(),
                st.nvrtc_seconds);
    bc_binary_free(&b);
    free(src);
    tf_rmtree(dir);
    free(dir);
}

Test(nvrtc, memory_hit_after_miss) {
    char *dir = fresh_cache();
    char *src = kernel_text(2);
    bc_binary a, b;
    compile_ok(src, &a);
    compile_ok(src, &b);
    cr_assert_not(a.cached);
    cr_assert(b.cached);
    cr_assert_eq(a.cubin_size, b.cubin_size);
    cr_assert_eq(memcmp(a.cubin, b.cubin, a.cubin_size), 0);
    cr_assert_str_eq(a.ptx, b.ptx);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 1);
    cr_assert_eq(st.memory_hits, 1);
    cr_assert_eq(st.disk_hits, 0);
    bc_binary_free(&a);
    bc_binary_free(&b);
    free(src);
    tf_rmtree(dir);
    free(dir);
}

Test(nvrtc, disk_entry_reused_by_fresh_memory_cache) {
    char *dir = fresh_cache();
    char *src = kernel_text(3);
    bc_binary a, b;
    compile_ok(src, &a);
    free(only_entry(dir));
    bc_cache_clear(); /* as a new process would start */
    compile_ok(src, &b);
    cr_assert(b.cached);
    cr_assert_eq(a.cubin_size, b.cubin_size);
    cr_assert_eq(memcmp(a.cubin, b.cubin, a.cubin_size), 0);
    cr_assert_str_eq(a.ptx, b.ptx);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 1);
    cr_assert_eq(st.disk_hits, 1);
    cr_assert_eq(st.memory_hits, 0);
    /* A different source or architecture is a different entry. */
    char *other = kernel_text(4);
    bc_binary c;
    compile_ok(other, &c);
    cr_assert_not(c.cached);
    bc_binary_free(&c);
    char err[256];
    cr_assert_eq(bc_compile(src, "kernel.cu", 80, &c, err, sizeof err),
                 BRAID_OK, "%s", err);
    cr_assert_not(c.cached);
    cr_assert(strstr(c.ptx, ".target sm_80"));
    cr_assert_eq(tf_count_entries(dir), 3);
    bc_binary_free(&a);
    bc_binary_free(&b);
    bc_binary_free(&c);
    free(src);
    free(other);
    tf_rmtree(dir);
    free(dir);
}

/* Damages the entry with how(), then checks it is ignored, rebuilt, and
 * good again afterwards. */
static void check_rebuilt(unsigned long salt, void (*how)(const char *path)) {
    char *dir = fresh_cache();
    char *src = kernel_text(salt);
    bc_binary a, b, c;
    compile_ok(src, &a);
    char *path = only_entry(dir);
    how(path);
    bc_cache_clear();
    compile_ok(src, &b);
    cr_assert_not(b.cached, "a damaged entry was used");
    cr_assert_eq(memcmp(a.cubin, b.cubin, a.cubin_size), 0);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.disk_rejected, 1);
    cr_assert_eq(st.compiles, 2);
    bc_cache_clear();
    compile_ok(src, &c); /* the rebuilt entry replaced the bad one */
    cr_assert(c.cached);
    bc_stats_get(&st);
    cr_assert_eq(st.disk_hits, 1);
    free(only_entry(dir));
    bc_binary_free(&a);
    bc_binary_free(&b);
    bc_binary_free(&c);
    free(path);
    free(src);
    tf_rmtree(dir);
    free(dir);
}

static void flip_payload_byte(const char *path) {
    size_t len;
    char *data = ts_read_file_len(path, &len);
    cr_assert(data && len > 200);
    data[len / 2] ^= 0x40;
    cr_assert(tf_write(path, data, len));
    free(data);
}

static void truncate_entry(const char *path) {
    size_t len;
    char *data = ts_read_file_len(path, &len);
    cr_assert(data && len > 200);
    cr_assert(tf_write(path, data, len - 100));
    free(data);
}

static void garbage_entry(const char *path) {
    cr_assert(tf_write_str(path, "not a cache entry"));
}

Test(nvrtc, corrupted_entry_rebuilt) {
    check_rebuilt(5, flip_payload_byte);
}

Test(nvrtc, truncated_entry_rebuilt) {
    check_rebuilt(6, truncate_entry);
}

Test(nvrtc, garbage_entry_rebuilt) {
    check_rebuilt(7, garbage_entry);
}

/* ---- entries nobody but the user may have planted ------------------------ */

/* A FIFO where the entry was: opening it used to wait for a writer forever. */
static void fifo_entry(const char *path) {
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
}

/* An intact entry that group and others may write: anyone could have put
 * a kernel there, whatever its digests say. */
static void shared_entry(const char *path) {
    cr_assert_eq(chmod(path, 0666), 0);
}

/* An intact entry of another user's. */
static void foreign_entry(const char *path) {
    cr_assert_eq(chown(path, geteuid() == 0 ? 65534 : 0, (gid_t)-1), 0);
}

/* A link to an intact entry elsewhere: links are not followed. */
static void linked_entry(const char *path) {
    char *moved = malloc(strlen(path) + 8);
    cr_assert_not_null(moved);
    sprintf(moved, "%s.moved", path);
    cr_assert_eq(rename(path, moved), 0);
    cr_assert_eq(symlink(moved, path), 0);
    free(moved);
}

Test(nvrtc, fifo_entry_is_a_miss, .timeout = 60) {
    check_rebuilt(20, fifo_entry);
}

Test(nvrtc, entry_writable_by_others_refused) {
    check_rebuilt(21, shared_entry);
}

Test(nvrtc, entry_of_another_user_refused) {
    if (geteuid() != 0) cr_skip_test("chown to another user needs root");
    check_rebuilt(22, foreign_entry);
}

Test(nvrtc, linked_entry_refused) {
    char *dir = fresh_cache();
    char *src = kernel_text(23);
    bc_binary a, b;
    compile_ok(src, &a);
    char *path = only_entry(dir);
    linked_entry(path);
    bc_cache_clear();
    compile_ok(src, &b);
    cr_assert_not(b.cached, "an entry reached through a link was used");
    bc_binary_free(&a);
    bc_binary_free(&b);
    free(path);
    free(src);
    tf_rmtree(dir);
    free(dir);
}

/* The folder is made private, entries are named by a 256-bit digest, and
 * a folder that others may write is not used at all. */
Test(nvrtc, cache_folder_private_and_keys_sha256) {
    char *root = tf_mkdtemp();
    cr_assert_not_null(root);
    char *dir = tf_path(root, "cache");
    setenv("BRAID_CACHE_DIR", dir, 1);
    bc_cache_clear();
    bc_stats_reset();
    char *src = kernel_text(24);
    bc_binary a, b;
    compile_ok(src, &a);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "cache folder mode %o",
                 st.st_mode & 0777);
    char *path = only_entry(dir);
    const char *name = strrchr(path, '/') + 1; /* sm90-<64 hex>.bkc */
    cr_assert_eq(strlen(name), strlen("sm90-.bkc") + 64, "%s", name);
    cr_assert_eq(strspn(name + 5, "0123456789abcdef"), 64, "%s", name);
    cr_assert_eq(chmod(dir, 0777), 0);
    bc_cache_clear();
    compile_ok(src, &b);
    cr_assert_not(b.cached, "an entry in a folder anyone may write was used");
    bc_stats st2;
    bc_stats_get(&st2);
    cr_assert_eq(st2.disk_hits, 0);
    cr_assert_eq(st2.disk_writes, 1, "stored into a folder anyone may write");
    bc_binary_free(&a);
    bc_binary_free(&b);
    free(path);
    free(src);
    free(dir);
    tf_rmtree(root);
    free(root);
}

typedef struct writer {
    const char *src; /* the source every thread compiles */
    bc_binary bin;   /* its result */
    braid_status s;  /* its status */
} writer;

static void *write_one(void *arg) {
    writer *w = arg;
    w->s = bc_compile(w->src, "kernel.cu", 90, &w->bin, NULL, 0);
    return NULL;
}

/* Threads miss together, compile together and all write the same entry:
 * the renames leave one whole entry and no temporary files. */
Test(nvrtc, concurrent_writers_leave_one_good_entry) {
    char *dir = fresh_cache();
    char *src = kernel_text(8);
    enum { N = 4 };
    writer w[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        w[i] = (writer){.src = src};
        cr_assert_eq(pthread_create(&t[i], NULL, write_one, &w[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(w[i].s, BRAID_OK);
        cr_assert_eq(w[i].bin.cubin_size, w[0].bin.cubin_size);
        cr_assert_eq(
            memcmp(w[i].bin.cubin, w[0].bin.cubin, w[0].bin.cubin_size), 0);
    }
    bc_stats st;
    bc_stats_get(&st);
    cr_log_info("%d threads: %llu compiles, %llu memory hits, %llu disk "
                "writes",
                N, (unsigned long long)st.compiles,
                (unsigned long long)st.memory_hits,
                (unsigned long long)st.disk_writes);
    cr_assert_eq(st.compiles + st.memory_hits + st.disk_hits, N);
    free(only_entry(dir));
    bc_cache_clear();
    bc_binary b;
    compile_ok(src, &b);
    cr_assert(b.cached);
    for (int i = 0; i < N; i++)
        bc_binary_free(&w[i].bin);
    bc_binary_free(&b);
    free(src);
    tf_rmtree(dir);
    free(dir);
}

Test(nvrtc, cache_dir_from_environment) {
    char *root = tf_mkdtemp();
    cr_assert_not_null(root);
    char buf[1024];
    /* BRAID_CACHE_DIR wins, and is created with its parents. */
    char *nested = tf_path(root, "a/b/braid-cache");
    setenv("BRAID_CACHE_DIR", nested, 1);
    setenv("XDG_CACHE_HOME", root, 1);
    cr_assert(bc_cache_dir(buf, sizeof buf));
    cr_assert_str_eq(buf, nested);
    bc_cache_clear();
    char *src = kernel_text(9);
    bc_binary b;
    compile_ok(src, &b);
    bc_binary_free(&b);
    free(only_entry(nested));
    /* Unset: $XDG_CACHE_HOME/braid. */
    unsetenv("BRAID_CACHE_DIR");
    cr_assert(bc_cache_dir(buf, sizeof buf));
    char *xdg = tf_path(root, "braid");
    cr_assert_str_eq(buf, xdg);
    bc_cache_clear();
    compile_ok(src, &b);
    bc_binary_free(&b);
    free(only_entry(xdg));
    /* Neither: ~/.cache/braid. */
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", root, 1);
    cr_assert(bc_cache_dir(buf, sizeof buf));
    char *home = tf_path(root, ".cache/braid");
    cr_assert_str_eq(buf, home);
    /* Empty BRAID_CACHE_DIR: no disk cache at all. */
    setenv("BRAID_CACHE_DIR", "", 1);
    cr_assert_not(bc_cache_dir(buf, sizeof buf));
    bc_cache_clear();
    bc_stats_reset();
    char *other = kernel_text(10);
    compile_ok(other, &b);
    bc_binary_free(&b);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.disk_writes, 0);
    cr_assert_eq(tf_count_entries(root), 2); /* a/ and braid/ only */
    free(src);
    free(other);
    free(nested);
    free(xdg);
    free(home);
    tf_rmtree(root);
    free(root);
}

/* A module like the generator's, with a mistake in the second kernel. */
static const char broken[] =
    "// braid generated module\n"
    "// @braid node %3 (add)\n"
    "extern \"C\" __global__ void k3(float *out, const float *in0) {\n"
    "    out[threadIdx.x] = in0[threadIdx.x] + 1.0f;\n"
    "}\n"
    "\n"
    "// @braid node %12 (fused \"h1\")\n"
    "static __device__ float k12_e(float x) {\n"
    "    return x * undefined_thing;\n"
    "}\n";

Test(nvrtc, compile_error_names_node_and_line) {
    setenv("BRAID_CACHE_DIR", "", 1);
    bc_stats_reset();
    char err[8192];
    bc_binary b;
    braid_status s = bc_compile(broken, "kernel.cu", 90, &b, err, sizeof err);
    cr_assert_eq(s, BRAID_ERR_INTERNAL);
    cr_assert_null(b.cubin);
    cr_log_info("%s", err);
    cr_assert(strstr(err, "node %12 (fused \"h1\"): kernel.cu:9: error"), "%s",
              err);
    cr_assert(strstr(err, "undefined_thing"), "%s", err);
    cr_assert(strstr(err, "     9 |     return x * undefined_thing;"), "%s",
              err);
    cr_assert(strstr(err, "NVRTC log:"), "%s", err);
    cr_assert(strstr(braid_last_error(), "node %12"));
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.failures, 1);
    cr_assert_eq(st.compiles, 0);
    /* Without markers the file and line are still named. */
    s = bc_compile("extern \"C\" __global__ void k(int *o) { o[0] = q; }\n",
                   "x.cu", 90, &b, err, sizeof err);
    cr_assert_eq(s, BRAID_ERR_INTERNAL);
    cr_assert(strncmp(err, "x.cu:1: error", 13) == 0, "%s", err);
}

Test(nvrtc, architectures_and_bad_arguments) {
    setenv("BRAID_CACHE_DIR", "", 1);
    char err[512];
    bc_binary b;
    char *src = kernel_text(11);
    /* Older than NVRTC supports: refused. */
    cr_assert_eq(bc_compile(src, NULL, 10, &b, err, sizeof err),
                 BRAID_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "sm_10"), "%s", err);
    /* Newer than NVRTC knows: PTX for the newest virtual architecture. */
    cr_assert_eq(bc_compile(src, NULL, 990, &b, err, sizeof err), BRAID_OK,
                 "%s", err);
    cr_assert_null(b.cubin);
    cr_assert(strstr(b.ptx, ".entry k0"));
    bc_binary_free(&b);
    cr_assert_eq(bc_compile(NULL, NULL, 90, &b, err, sizeof err),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(bc_compile(src, NULL, 0, &b, err, sizeof err),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(bc_compile(src, NULL, 90, NULL, NULL, 0),
                 BRAID_ERR_INVALID_ARGUMENT);
    free(src);
}

#endif /* BRAID_HAVE_CUDA */
