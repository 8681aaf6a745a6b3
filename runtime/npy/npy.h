/* runtime/npy/npy.h — reading and writing NumPy .npy files (prefix br_npy_).
 *
 * Internal to braid: the command-line tool and the tests use it to move
 * tensors in and out of graphs. Supported element types and their descr:
 *   f32 '<f4', f16 '<f2', f64 '<f8', i32 '<i4', bool '|b1', and bf16 as
 *   '|V2' (NumPy has no bfloat16: braid writes the raw 2-byte values as a
 *   void type and reads '|V2' / '<V2' back only when the caller expects bf16).
 * Reading accepts format versions 1.0, 2.0 and 3.0 and validates every field
 * of the header; writing produces version 1.0 (2.0 only when the header would
 * not fit in 1.0's 16-bit length). Data are little-endian, C order.
 *
 * Errors return a braid_status and leave a message naming the file in
 * braid_last_error(). */
#ifndef BRAID_RUNTIME_NPY_H
#define BRAID_RUNTIME_NPY_H

#include "braid/braid.h"

/* Largest header braid accepts from a version 2.0/3.0 file, in bytes. A
 * well-formed header for rank ≤ 8 is under 200 bytes; the bound only keeps
 * a corrupt length from driving a huge allocation. */
#define BR_NPY_MAX_HEADER ((uint32_t)1 << 20)

/* A dense array read from a .npy file. */
typedef struct br_npy_array {
    braid_dtype dtype;            /* element type */
    int rank;                     /* number of dims, 0..BRAID_MAX_RANK */
    int64_t dims[BRAID_MAX_RANK]; /* shape; dims[rank..] are 0 */
    void *data;                   /* numel × dtype size bytes, C order;
                                     malloc'd (never NULL after success) */
    size_t bytes;                 /* size of data in bytes */
} br_npy_array;

/* Decodes a whole .npy file held in memory. name is used in messages (may be
 * NULL). expect is the dtype the caller wants, or BRAID_DTYPE_COUNT_ for
 * "any": it only decides whether a void '|V2' payload is accepted as bf16;
 * the caller still compares out->dtype with what it needs. On success out
 * owns a malloc'd copy of the data; on failure out is zeroed. */
braid_status br_npy_decode(const void *buf, size_t len, const char *name,
                           braid_dtype expect, br_npy_array *out);

/* Same as br_npy_decode, reading from the file at path. Sizes are checked
 * against the file's length before the data are allocated, so a corrupt
 * shape cannot cause a huge allocation. */
braid_status br_npy_read(const char *path, braid_dtype expect,
                         br_npy_array *out);

/* Frees out->data and zeroes out (NULL is fine). */
void br_npy_array_free(br_npy_array *a);

/* Writes data (numel × dtype size bytes, C order) as a .npy file: first to
 * a temporary file beside path, then renamed over path, so readers never see
 * a half-written file and a failed write leaves any old file intact. */
braid_status br_npy_write(const char *path, braid_dtype dtype, int rank,
                          const int64_t *dims, const void *data);

/* The descr string braid writes for dtype ("<f4", "|V2", ...), or NULL. */
const char *br_npy_descr(braid_dtype dtype);

#endif /* BRAID_RUNTIME_NPY_H */
