/* runtime/checkpoint/safetensors.h — safetensors files (prefix br_st_).
 *
 * The format (https://github.com/huggingface/safetensors): 8 bytes of
 * little-endian header length N, N bytes of JSON — an object mapping each
 * tensor name to {"dtype": "F32", "shape": [..], "data_offsets": [begin,
 * end]} (offsets relative to the byte after the header), plus an optional
 * "__metadata__" object of strings — then the raw little-endian bytes, C
 * order. braid writes the header padded with spaces to a multiple of 8 and
 * the tensors in order, densely. dtypes: F32 F16 BF16 F64 I32 I64 BOOL.
 * Internal to runtime/: executors' checkpoints (runtime/exec_state.c). */
#ifndef BRAID_RUNTIME_SAFETENSORS_H
#define BRAID_RUNTIME_SAFETENSORS_H

#include "graph/graph.h"

/* Largest header braid reads (a corrupt length must not drive a huge
 * allocation); 100 MB like the reference implementation. */
#define BR_ST_MAX_HEADER ((uint64_t)100000000)

typedef struct br_st_tensor {
    const char *name;             /* not owned (the file's or the plan's) */
    braid_dtype dtype;            /* element type */
    int rank;                     /* dims used */
    int64_t dims[BRAID_MAX_RANK]; /* shape */
    const void *data;             /* bytes bytes, C order */
    size_t bytes;                 /* numel × dtype size */
} br_st_tensor;

typedef struct br_st_file {
    br_st_tensor *t; /* n tensors; owned */
    uint32_t n;      /* entries used */
    bool owns_data;  /* each t[i].data was malloc'd (freed by br_st_free) */
    void *buf;       /* a read file's bytes (names and data point in); owned */
    char *names;     /* a read file's decoded names; owned */
} br_st_file;

/* Writes f's tensors to path atomically (graph/outfile.c). */
braid_status br_st_write(const char *path, const br_st_file *f);
/* Reads and validates path: every entry's dtype, shape and byte range
 * (inside the data, sized numel × dtype size, no overlaps), unique names. */
braid_status br_st_read(const char *path, br_st_file *out);
/* The tensor called name, or NULL. */
const br_st_tensor *br_st_find(const br_st_file *f, const char *name);
/* Every tensor of want is in got with the same dtype and shape, and got has
 * no other: else an error naming the first difference and path. */
braid_status br_st_match(const char *path, const br_st_file *want,
                         const br_st_file *got);
void br_st_free(br_st_file *f);

#endif /* BRAID_RUNTIME_SAFETENSORS_H */
