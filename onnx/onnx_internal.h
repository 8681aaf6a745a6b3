/* onnx/onnx_internal.h — the ONNX importer, internal (prefix ox_).
 *
 * A front end right of graph/: it includes braid/ and graph/ only and
 * builds an ordinary graph through the public builders, so nothing
 * downstream knows a graph came from a file (docs/onnx.md).
 *
 * Pieces: wire.c (the small protobuf reader that keeps initializer
 * payloads out of protobuf-c's copies), load.c (files, external data,
 * tensors), values.c (the name → value table, static values), import.c
 * (the driver and folding), ops_*.c (one table of op mappings). */
#ifndef BRAID_ONNX_INTERNAL_H
#define BRAID_ONNX_INTERNAL_H

#include "braid/onnx.h"
#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- wire.c: protobuf framing ------------------------------------------- */

typedef struct ox_span {
    const uint8_t *p; /* payload of a length-delimited field */
    size_t n;         /* its length */
} ox_span;

/* Walks the top-level fields of the message in buf[0, len): copies every
 * field except field number skip (wire type 2) to out (which must hold len
 * bytes; NULL: count only) and records those fields' payloads in spans
 * (malloc'd, *nspans entries; NULL when none). *outlen gets the bytes
 * copied. False with a message in err for a malformed message (bad varint,
 * field 0, a length past the end, groups, unknown wire types). */
bool ox_wire_split(const uint8_t *buf, size_t len, uint32_t skip, uint8_t *out,
                   size_t *outlen, ox_span **spans, size_t *nspans, char *err,
                   size_t errsize);
/* Whether buf[0, len) nests messages of type desc at most max_depth deep
 * (following the schema), so protobuf-c's recursive unpack stays shallow. */
bool ox_wire_depth_ok(const uint8_t *buf, size_t len,
                      const ProtobufCMessageDescriptor *desc, int max_depth);
/* Appends field number f, wire type 2, length n as a key and a varint to
 * out; returns the bytes written (at most 15). */
size_t ox_wire_put_header(uint8_t *out, uint32_t f, uint64_t n);

/* ---- the importer's state ------------------------------------------------ */

/* Static values (known at import time) are kept as doubles, the reference
 * evaluator's currency (graph/eval.c): integers are exact up to 2^53. Only
 * values up to this many elements stay static; larger ones are weights. */
#define OX_STATIC_MAX ((int64_t)1 << 16)
/* Largest node result folding computes at import. */
#define OX_FOLD_MAX ((int64_t)1 << 22)

typedef struct ox_value {
    char *name;                   /* ONNX name; owned */
    int elem;                     /* ONNX TensorProto.DataType */
    int rank;                     /* dims known at import (static shapes) */
    int64_t dims[BRAID_MAX_RANK]; /* shape */
    braid_tensor t;               /* tensor in the main graph; BRAID_NONE
                                     for a static value not used yet */
    double *sv;                   /* static values (numel), owned; NULL for
                                     a value known only at run time */
} ox_value;

typedef struct ox_import {
    const char *file;       /* name in messages */
    braid_graph *g;         /* the graph being built */
    ox_value *vals;         /* values, nvals of cap */
    uint32_t nvals, cap;
    uint32_t *slot;         /* hash index over vals: index + 1, 0 empty */
    uint32_t nslots;        /* power of two */
    int opset;              /* default-domain opset of the model */
    const char *base_dir;   /* external data folder, or NULL */
    const braid_onnx_options *opts; /* the caller's options, or NULL */
    bool keep_int64;        /* tensors of int64 become i64 constants, not
                               i32 (braid_onnx_tensor_decode) */
    const uint8_t *map;     /* the whole model file, when mapped */
    size_t map_len;
    char err[1024];         /* first error */
    braid_status status;
    const Onnx__GraphProto *graph; /* the main graph (fuse_attention.c) */
    struct ox_uses *uses;   /* its values' producers and consumer counts,
                               built on demand; owned */
} ox_import;

/* Records the first error (file prefix added) and returns its status. */
braid_status ox_fail(ox_import *im, braid_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- values.c ---------------------------------------------------------------- */

/* The value called name, or NULL. */
ox_value *ox_find(ox_import *im, const char *name);
/* Adds a value (name copied); NULL on a duplicate name or out of memory
 * (error recorded). */
ox_value *ox_add(ox_import *im, const char *name);
void ox_values_free(ox_import *im);
#define OX_ELEM_INT64 7 /* TensorProto.INT64 */

/* braid's dtype for ONNX element type elem inside a graph (int64 and the
 * other integers compute as i32), or BRAID_DTYPE_COUNT_. */
braid_dtype ox_dtype(int elem);
/* "float", "int64", ...: ONNX's name for elem. */
const char *ox_elem_name(int elem);
/* Whether elem is one of ONNX's integer types braid keeps as i32. */
bool ox_elem_is_int(int elem);
int64_t ox_numel(int rank, const int64_t *dims);
/* Builds static values sv (numel of rank/dims, ONNX type elem) as a
 * constant in g, rounded to braid's dtype; integers must fit i32 (else an
 * error naming what). ox_constant_as: the same in dtype t (i64 keeps
 * int64 values exact up to 2^53). */
braid_tensor ox_constant_as(ox_import *im, braid_graph *g, const char *what,
                            int elem, braid_dtype t, int rank,
                            const int64_t *dims, const double *sv);
braid_tensor ox_constant(ox_import *im, braid_graph *g, const char *what,
                         int elem, int rank, const int64_t *dims,
                         const double *sv);

/* ---- load.c ------------------------------------------------------------------ */

/* Reads tensor tp (payload raw when the raw_data field was split off by
 * the wire reader, else NULL) into value v: static when small, otherwise a
 * constant in im->g. what names it in messages. */
braid_status ox_load_tensor(ox_import *im, const Onnx__TensorProto *tp,
                            const ox_span *raw, const char *what, ox_value *v);

/* ---- import.c: the node context mappings see ------------------------------ */

#define OX_MAX_IO 64

typedef struct ox_node {
    ox_import *im;
    braid_graph *g;                 /* where to build: im->g, or a scratch
                                       graph when folding */
    bool folding;                   /* every input is static */
    const Onnx__NodeProto *np;
    int nin, nout;
    ox_value *in[OX_MAX_IO];        /* NULL for an absent optional input */
    braid_tensor out[OX_MAX_IO];    /* results the mapping built */
    int out_elem[OX_MAX_IO];        /* their ONNX types */
    double *out_sv[OX_MAX_IO];      /* or static results (owned) */
    int out_rank[OX_MAX_IO];
    int64_t out_dims[OX_MAX_IO][BRAID_MAX_RANK];
} ox_node;

/* Fails the node: 'file: node "NAME" (Op, opset N): unsupported: WHY'
 * with status s (BRAID_ERR_UNSUPPORTED for what braid cannot express). */
braid_status ox_node_fail(ox_node *n, braid_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Input k as a tensor of n->g (static values become constants there);
 * BRAID_NONE, error recorded, when absent. */
braid_tensor ox_in(ox_node *n, int k);
bool ox_has(const ox_node *n, int k);
int ox_in_elem(const ox_node *n, int k);
/* Input k's static values (NULL with the error recorded, naming the input
 * as one that must be known at import time, when it is not). */
const double *ox_static(ox_node *n, int k, int64_t *numel);
/* Static input k as int64s (at most max; clamped to int64's range). */
bool ox_static_ints(ox_node *n, int k, int64_t *out, int max, int *count);

/* Attributes: the value, or dflt when absent. */
const Onnx__AttributeProto *ox_attr(const ox_node *n, const char *name);
int64_t ox_attr_int(const ox_node *n, const char *name, int64_t dflt);
double ox_attr_float(const ox_node *n, const char *name, double dflt);
/* The string attribute into buf ("" when absent). */
const char *ox_attr_str(const ox_node *n, const char *name, char *buf,
                        size_t size, const char *dflt);
/* An ints attribute; *count -1 when absent; false (error recorded) when it
 * has more than max entries. */
bool ox_attr_ints(ox_node *n, const char *name, int64_t *out, int max,
                  int *count);
/* Axes from attribute name or, when absent, from static input k (k < 0:
 * attribute only). *count -1 when neither is given. */
bool ox_axes(ox_node *n, const char *name, int k, int64_t *out, int *count);

/* Sets output k. */
void ox_out(ox_node *n, int k, braid_tensor t, int elem);
/* Sets output k to static values (copied). */
braid_status ox_out_static(ox_node *n, int k, int elem, int rank,
                           const int64_t *dims, const double *v);

/* Rank and dims of a tensor of n->g. */
int ox_rank(const ox_node *n, braid_tensor t, int64_t *dims);
braid_dtype ox_tdtype(const ox_node *n, braid_tensor t);
/* A scalar constant of dtype t in n->g. */
braid_tensor ox_scalar(ox_node *n, braid_dtype t, double v);
/* Normalises axis into [0, rank); false (error recorded) when out of range. */
bool ox_axis(ox_node *n, int64_t axis, int rank, int *out);

/* ---- fuse_attention.c ---------------------------------------------------------- */

/* At a MatMul: when it ends PyTorch's exported attention subgraph (the
 * file's comment) and nothing else uses the intermediates, builds the
 * attention op as output 0 and returns true; else false, nothing built,
 * no error. */
bool ox_try_attention(ox_node *n);
/* Frees im->uses. */
void ox_uses_free(ox_import *im);

/* ---- the op table (ops.c) ---------------------------------------------------- */

typedef braid_status (*ox_map_fn)(ox_node *n);

typedef struct ox_op {
    const char *type; /* ONNX op_type */
    int since;        /* first opset this entry covers */
    ox_map_fn map;    /* builds the node */
    unsigned flags;   /* OX_NOFOLD: never evaluate at import */
} ox_op;
#define OX_NOFOLD 1u

/* The entry for op type at opset, or NULL. */
const ox_op *ox_op_find(const char *type, int opset);
/* The per-area tables, each ending with a {NULL} row. */
extern const ox_op ox_ops_elem[], ox_ops_shape[], ox_ops_nn[],
    ox_ops_layout[], ox_ops_einsum[], ox_ops_attention[], ox_ops_loss[],
    ox_ops_index[], ox_ops_conv[];

#endif /* BRAID_ONNX_INTERNAL_H */
