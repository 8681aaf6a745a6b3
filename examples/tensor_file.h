/* examples/tensor_file.h — one tensor from a file, for the ONNX examples
 * (classify.c, next_token.c): a NumPy .npy file, or an ONNX TensorProto
 * .pb file (the test_data_set_N/input_K.pb of ONNX's test-data layout,
 * which tests/models/tiny holds). Told apart by content, as the braid tool
 * does: a .npy opens with "\x93NUMPY".
 *
 * The .npy reader is braid's own (runtime/npy/npy.h, as train_digits.c and
 * the tool use it); the .pb decoder is public (braid_onnx_tensor_decode).
 * Both check the file against its header and leave a message naming the
 * file in braid_last_error(). */
#ifndef BRAID_EXAMPLES_TENSOR_FILE_H
#define BRAID_EXAMPLES_TENSOR_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "braid/onnx.h"
#include "runtime/npy/npy.h"

typedef struct ex_tensor {
    braid_dtype dtype;            /* element type */
    int rank;                     /* dims in dims */
    int64_t dims[BRAID_MAX_RANK]; /* shape */
    int64_t numel;                /* product of dims */
    void *data;                   /* numel elements, C order; malloc'd */
} ex_tensor;

/* "f32[2,3,32,32]" into buf. */
static inline void ex_type_str(braid_dtype dtype, int rank, const int64_t *dims,
                               char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "%s[", braid_dtype_name(dtype));
    for (int k = 0; k < rank && n < size; k++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", k ? "," : "",
                              (long long)dims[k]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

/* The whole file at path (NULL when it cannot be read: errno says why). */
static inline unsigned char *ex_read_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    *len = 0;
    for (size_t k; buf && (k = fread(buf + *len, 1, cap - *len, f)) > 0;) {
        *len += k;
        if (*len < cap) continue;
        unsigned char *more = realloc(buf, cap *= 2);
        if (!more) free(buf);
        buf = more;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) free(buf);
    return bad ? NULL : buf;
}

/* Reads the tensor in path into *t. On failure prints "prog: message" on
 * stderr and returns false. */
static inline bool ex_read_tensor(const char *prog, const char *path,
                                  ex_tensor *t) {
    memset(t, 0, sizeof *t);
    size_t len = 0;
    unsigned char *bytes = ex_read_bytes(path, &len);
    braid_status s;
    if (!bytes || (len >= 6 && !memcmp(bytes, "\x93NUMPY", 6))) {
        /* a .npy, or a file we could not read: the reader says why */
        br_npy_array a;
        s = bytes ? br_npy_decode(bytes, len, path, BRAID_DTYPE_COUNT_, &a)
                  : br_npy_read(path, BRAID_DTYPE_COUNT_, &a);
        t->dtype = a.dtype, t->rank = a.rank, t->data = a.data;
        memcpy(t->dims, a.dims, sizeof t->dims);
    } else {
        s = braid_onnx_tensor_decode(bytes, len, path, &t->dtype, &t->rank,
                                     t->dims, &t->data, NULL);
    }
    free(bytes);
    if (s != BRAID_OK) {
        fprintf(stderr, "%s: %s\n", prog, braid_last_error());
        return false;
    }
    t->numel = 1;
    for (int k = 0; k < t->rank; k++)
        t->numel *= t->dims[k];
    return true;
}

#endif /* BRAID_EXAMPLES_TENSOR_FILE_H */
