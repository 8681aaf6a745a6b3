/* graph/outfile.c — writing a file safely; the policy is in outfile.h.
 *
 * Why each rule: renaming a temporary over the target keeps a reader from
 * ever seeing half a file, but rename replaces whatever has the name, so a
 * device node (/dev/null, as root) or a FIFO would become a regular file,
 * and a symbolic link would become a file beside what it pointed at. Plans
 * embed weights, so a 0600 file must stay 0600. */
#define _XOPEN_SOURCE 700 /* realpath, fchmod, fstatat, dirfd */
#include "graph/outfile.h"

#include "graph/graph.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static braid_status out_fail(const char *who, const char *path,
                             const char *why) {
    return bg_set_last_error(BRAID_ERR_IO, "%s: cannot write %s: %s",
                             who ? who : "braid", path ? path : "(null)", why);
}

static braid_status out_oom(const char *who) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "%s: out of memory",
                             who ? who : "braid");
}

static char *dup_str(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static void out_free(bg_outfile *o) {
    free(o->tmp);
    free(o->final);
    free(o->path);
    memset(o, 0, sizeof *o);
}

/* ---- stale temporaries ------------------------------------------------ */

/* True when name is "<base>.braid-tmp.<pid>.<n>" for a pid other than ours
 * that no longer runs. A pid that runs (even reused by another program) or
 * that we may not signal is left alone: its save may still be going on. */
static bool stale_name(const char *name, const char *base) {
    size_t bl = strlen(base), tl = strlen(BG_OUT_TMP);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, BG_OUT_TMP, tl))
        return false;
    char *end;
    errno = 0;
    long pid = strtol(name + bl + tl, &end, 10);
    if (errno || pid <= 0 || *end != '.' || (pid_t)pid == getpid())
        return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Removes stale temporaries of final's (regular files of ours only). */
static void remove_stale(const char *final) {
    const char *slash = strrchr(final, '/');
    char *dir = slash ? dup_str(final) : dup_str(".");
    if (!dir) return;
    if (slash) dir[slash == final ? 1 : slash - final] = '\0';
    const char *base = slash ? slash + 1 : final;
    DIR *d = opendir(dir);
    free(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!stale_name(e->d_name, base) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        (void)unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* ---- opening ---------------------------------------------------------- */

/* Creates the temporary beside o->final; st is the file it replaces (NULL:
 * a new file). */
static braid_status open_temp(bg_outfile *o, const struct stat *st,
                              unsigned flags, const char *who) {
    static atomic_uint counter;
    size_t size = strlen(o->final) + sizeof BG_OUT_TMP + 48;
    if (!(o->tmp = malloc(size))) return out_oom(who);
    mode_t mode = (flags & BG_OUT_PRIVATE) || st ? 0600 : 0666;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(o->tmp, size, "%s%s%ld.%u", o->final, BG_OUT_TMP,
                 (long)getpid(), atomic_fetch_add(&counter, 1u));
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        char why[300];
        snprintf(why, sizeof why,
                 "cannot create a temporary file beside it: %s",
                 strerror(errno));
        return out_fail(who, o->path, why);
    }
    if (st && !(flags & BG_OUT_PRIVATE)) {
        /* The owner where we may (root, or a group we are in); then the
         * mode, which chown may have cleared bits of. */
        if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
            fchown(fd, st->st_uid, st->st_gid) != 0) {
            /* not allowed: the file becomes ours, as an editor's would */
        }
        (void)fchmod(fd, st->st_mode & 07777);
    }
    if (!(o->f = fdopen(fd, "wb"))) {
        int err = errno;
        close(fd);
        unlink(o->tmp);
        return out_fail(who, o->path, strerror(err));
    }
    return BRAID_OK;
}

/* A character device or FIFO: written in place. Opening a FIFO waits for
 * a reader, as `cat > fifo` does. */
static braid_status open_in_place(bg_outfile *o, const char *who) {
    int fd = open(o->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || !(o->f = fdopen(fd, "wb"))) {
        int err = errno;
        if (fd >= 0) close(fd);
        return out_fail(who, o->path, strerror(err));
    }
    return BRAID_OK;
}

/* Decides from lstat/stat what path is and fills o->final (NULL: write in
 * place) and *st (the file replaced; *exists false when there is none). */
static braid_status classify(bg_outfile *o, const char *who, struct stat *st,
                             bool *exists, bool *in_place) {
    const char *path = o->path;
    *exists = *in_place = false;
    size_t len = strlen(path);
    struct stat lst;
    if (lstat(path, &lst) != 0) {
        if (errno != ENOENT) return out_fail(who, path, strerror(errno));
        if (path[len - 1] == '/')
            return out_fail(who, path,
                            "no such directory (the name ends "
                            "with '/')");
        return (o->final = dup_str(path)) ? BRAID_OK : out_oom(who);
    }
    if (S_ISLNK(lst.st_mode) && stat(path, st) != 0)
        return out_fail(who, path,
                        errno == ENOENT ? "it is a symbolic link to nothing"
                                        : strerror(errno));
    if (!S_ISLNK(lst.st_mode)) *st = lst;
    if (S_ISDIR(st->st_mode)) return out_fail(who, path, "it is a directory");
    if (S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode)) {
        *in_place = true;
        return BRAID_OK;
    }
    if (!S_ISREG(st->st_mode))
        return out_fail(who, path,
                        "it is neither a regular file nor a character device "
                        "nor a FIFO, so braid will not replace it");
    *exists = true;
    if (!S_ISLNK(lst.st_mode))
        return (o->final = dup_str(path)) ? BRAID_OK : out_oom(who);
    /* Replace what the link points at; the link stays. */
    if (!(o->final = realpath(path, NULL)))
        return errno == ENOMEM ? out_oom(who)
                               : out_fail(who, path, strerror(errno));
    return BRAID_OK;
}

braid_status bg_outfile_open(bg_outfile *o, const char *path, const char *who,
                             unsigned flags) {
    memset(o, 0, sizeof *o);
    if (!path || !*path)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: path is %s",
                                 who ? who : "braid", path ? "empty" : "NULL");
    if (!(o->path = dup_str(path))) return out_oom(who);
    struct stat st;
    bool exists = false, in_place = false;
    braid_status s;
    if (flags & BG_OUT_PRIVATE)
        s = (o->final = dup_str(path)) ? BRAID_OK : out_oom(who);
    else
        s = classify(o, who, &st, &exists, &in_place);
    if (s == BRAID_OK && in_place) {
        s = open_in_place(o, who);
    } else if (s == BRAID_OK) {
        remove_stale(o->final);
        s = open_temp(o, exists ? &st : NULL, flags, who);
    }
    if (s != BRAID_OK) {
        if (o->f) fclose(o->f);
        out_free(o);
    }
    return s;
}

/* ---- writing and finishing -------------------------------------------- */

bool bg_outfile_write(bg_outfile *o, const void *data, size_t n) {
    if (n == 0 || fwrite(data, 1, n, o->f) == n) return true;
    if (!o->err) o->err = errno ? errno : EIO;
    return false;
}

braid_status bg_outfile_commit(bg_outfile *o, const char *who) {
    int err = o->err;
    if (!err && (fflush(o->f) != 0 || ferror(o->f))) err = errno ? errno : EIO;
    /* A device or pipe may not support fsync; only the replacement must
     * reach the disk before it takes the final name. */
    if (!err && o->tmp && fsync(fileno(o->f)) != 0) err = errno;
    if (fclose(o->f) != 0 && !err) err = errno ? errno : EIO;
    o->f = NULL;
    if (!err && o->tmp && rename(o->tmp, o->final) != 0) err = errno;
    braid_status s = BRAID_OK;
    if (err) {
        if (o->tmp) unlink(o->tmp);
        s = out_fail(who, o->path, strerror(err));
    }
    out_free(o);
    return s;
}

void bg_outfile_abort(bg_outfile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    out_free(o);
}
