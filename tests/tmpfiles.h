/* tests/tmpfiles.h — temporary directories and file writing for the tests
 * that touch the file system (test_npy.c, test_cli.c, test_examples.c);
 * whole files are read with ts_read_file (tests/support/golden.h).
 * Static functions: each including test file gets its own copy. Needs
 * _POSIX_C_SOURCE 200809L defined before any include. */
#ifndef BRAID_TESTS_TMPFILES_H
#define BRAID_TESTS_TMPFILES_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh empty directory under $TMPDIR (or /tmp); the path is malloc'd.
 * NULL on failure. */
static inline char *tf_mkdtemp(void) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t len = strlen(base) + 32;
    char *path = malloc(len);
    if (!path) return NULL;
    snprintf(path, len, "%s/braid-test-XXXXXX", base);
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

/* "dir/name" in a malloc'd string. */
static inline char *tf_path(const char *dir, const char *name) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", dir, name);
    return p;
}

/* Removes dir and everything below it (regular files, links, subfolders). */
static inline void tf_rmtree(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *p = tf_path(dir, e->d_name);
            struct stat st;
            if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                tf_rmtree(p);
            else if (p)
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Writes len bytes to path; true on success. */
static inline bool tf_write(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static inline bool tf_write_str(const char *path, const char *text) {
    return tf_write(path, text, strlen(text));
}

/* Number of entries in dir (without "." and ".."), -1 when unreadable. */
static inline int tf_count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

#endif /* BRAID_TESTS_TMPFILES_H */
