/* braid/onnx.h — ONNX models in: an ONNX ModelProto becomes an ordinary
 * braid graph (docs/onnx.md), so every pass, device, plan file and tool
 * works on it unchanged.
 *
 * Errors follow braid's convention for calls that are not builders: a
 * braid_status, the message in braid_last_error() (per thread), e.g.
 *   model.onnx: node "attn/Mul" (Einsum, opset 17): unsupported: ...
 * Nothing aborts on a malformed or hostile file. */
#ifndef BRAID_ONNX_H
#define BRAID_ONNX_H

#include "braid/braid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A graph input replaced by a constant at import time ("frozen"): braid
 * compiles static shapes, so an input that carries a shape (Reshape's
 * shape, Slice's starts, ...) must be known when the model is imported.
 * data holds numel elements of dtype (braid's dtype for the input's ONNX
 * type: ONNX's integers as i32, int64 as i32 or i64), C order; rank and
 * dims must agree with the model's. */
typedef struct braid_onnx_constant {
    const char *name;    /* the graph input's ONNX name */
    braid_dtype dtype;   /* element type of data */
    int rank;            /* dims in dims */
    const int64_t *dims; /* shape */
    const void *data;    /* the values (copied) */
} braid_onnx_constant;

typedef struct braid_onnx_options {
    /* Bindings of symbolic or free dims, ';'- or ','-separated entries
     * "NAME=D0xD1x...", e.g. "input_ids=1x128": the whole shape of graph
     * input NAME (its ONNX name). A fixed dim of the model must agree. An
     * input with a dim neither fixed nor bound is an error naming the
     * input and the dim. NULL: none. */
    const char *shapes;
    /* The folder external-data files are read from (they must stay
     * inside it). NULL: the model file's folder for braid_onnx_import;
     * braid_onnx_import_memory then refuses external data. */
    const char *base_dir;
    /* Name used in messages for braid_onnx_import_memory; NULL: "model". */
    const char *filename;
    /* Graph inputs to freeze (above); nconstants entries. */
    const braid_onnx_constant *constants;
    size_t nconstants;
    /* Options of the graph created (allocator hook); NULL: defaults. */
    const braid_graph_options *graph;
} braid_onnx_options;

void braid_onnx_options_init(braid_onnx_options *o);

/* Reads the ONNX file at path into a new graph (*out, freed with
 * braid_graph_free). opts may be NULL. On failure *out is NULL and the
 * message is in braid_last_error(). */
braid_status braid_onnx_import(const char *path, const braid_onnx_options *opts,
                               braid_graph **out);
/* The same from size bytes in memory (not kept after the call). */
braid_status braid_onnx_import_memory(const void *data, size_t size,
                                      const braid_onnx_options *opts,
                                      braid_graph **out);

/* Whether the first n bytes of a file look like an ONNX model (a protobuf
 * ModelProto opening with one of its fields), as opposed to braid's text
 * format or a plan file: how the tool tells files apart by content. */
bool braid_onnx_is_model(const void *head, size_t n);

/* The braid input name of an ONNX graph input called onnx_name: every
 * character outside [A-Za-z0-9_.] becomes '_', and a leading digit or dot
 * gets a '_' in front (braid input names are [A-Za-z_][A-Za-z0-9_.]*).
 * Outputs keep their ONNX names. Writes at most size bytes (NUL
 * included); returns the length the full name needs. */
size_t braid_onnx_input_name(const char *onnx_name, char *buf, size_t size);

/* Decodes an ONNX TensorProto (ONNX's test-data .pb files) held in
 * memory: *data (malloc'd, free with free()) gets its elements in braid's
 * dtype for the ONNX type (*dtype), C order: int64 as i64 (exact), ONNX's
 * other integer types narrowed to i32, each value checked (a value that
 * does not fit is an error, never a wrap). name (may be NULL) is used in messages; *tensor_name (may be
 * NULL) gets a malloc'd copy of the tensor's own name ("" when none). */
braid_status braid_onnx_tensor_decode(const void *bytes, size_t size,
                                      const char *name, braid_dtype *dtype,
                                      int *rank, int64_t *dims, void **data,
                                      char **tensor_name);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_ONNX_H */
