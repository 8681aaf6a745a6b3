/* graph/outfile.h — the one way braid writes a file (prefix bg_): plan
 * files, graph text, traces, .npy outputs, DOT output and kernel-cache
 * entries all go through it, so they share one policy (docs/cli.md,
 * "Output files"):
 *
 *  - a missing or regular file is replaced atomically: the data goes to
 *    "<path>.braid-tmp.<pid>.<n>" beside it, which is renamed over it on
 *    commit; a replaced file keeps its mode (and owner, where allowed), a
 *    new one gets 0666 less the umask;
 *  - a symbolic link is followed: the file it points at is replaced and the
 *    link stays (as cp does); a link to nothing is refused;
 *  - a character device or FIFO (/dev/null, /dev/stdout, a named pipe) is
 *    written in place, never replaced;
 *  - anything else (a directory, a block device, a socket) is refused;
 *  - temporary files of braid's own left beside path by a process that no
 *    longer exists (a killed save) are removed.
 *
 * BG_OUT_PRIVATE is for the kernel cache, in a folder only its owner may
 * write: whatever is at path is replaced, never written through, and new
 * files are 0600. */
#ifndef BRAID_GRAPH_OUTFILE_H
#define BRAID_GRAPH_OUTFILE_H

#include <braid/braid.h>

#include <stdio.h>

#define BG_OUT_PRIVATE 1u        /* flag: a cache entry (see above) */
#define BG_OUT_TMP ".braid-tmp." /* what temporary names add to the path */

typedef struct bg_outfile {
    FILE *f;     /* where the data goes (the temporary, or the device) */
    char *tmp;   /* the temporary file; NULL when writing in place */
    char *final; /* the file tmp replaces on commit (links resolved) */
    char *path;  /* the path as given, for messages */
    int err;     /* errno of the first failed bg_outfile_write, else 0 */
} bg_outfile;

/* Opens path for writing under the policy above. On failure sets the last
 * error ("<who>: cannot write <path>: <why>", BRAID_ERR_IO, or
 * BRAID_ERR_OUT_OF_MEMORY) and leaves *o empty. */
braid_status bg_outfile_open(bg_outfile *o, const char *path, const char *who,
                             unsigned flags);

/* Flushes, syncs and closes o->f, then renames the temporary over the
 * final file. A write that failed earlier (o->err, or the error flag of
 * o->f) fails the commit. On failure removes the temporary, sets the last
 * error and returns it. Frees o's strings either way. */
braid_status bg_outfile_commit(bg_outfile *o, const char *who);

/* Closes and removes the temporary (nothing reaches path); frees o. */
void bg_outfile_abort(bg_outfile *o);

/* Writes n bytes of data through o->f; false on failure (remembered in
 * o->err for the commit). */
bool bg_outfile_write(bg_outfile *o, const void *data, size_t n);

#endif /* BRAID_GRAPH_OUTFILE_H */
