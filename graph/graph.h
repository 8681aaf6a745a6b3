/* graph/graph.h — braid's IR, internal to the library (prefix bg_).
 *
 * A graph is an array of nodes with dense ids. A node's inputs always have
 * smaller ids, so id order is a topological order. Nodes, names and constant
 * data are allocated through the graph's allocator hook. Nothing here knows
 * about devices or memory plans. */
#ifndef BRAID_GRAPH_GRAPH_H
#define BRAID_GRAPH_GRAPH_H

#include "braid/braid.h"

#include <stdarg.h>

#define BG_NONE UINT32_MAX
#define BG_ERROR_MAX 512
/* Largest tensor a graph may describe, in bytes (keeps size arithmetic far
 * from overflow: 2^50 bytes = 1 PiB). */
#define BG_MAX_BYTES ((int64_t)1 << 50)

/* Reduction flags (bg_attrs.flags) */
#define BG_KEEPDIMS 1u
/* Axis-op flags (bg_attrs.flags; graph/axis.h): argmax/argmin keep BG_KEEPDIMS
 * and take the last extreme; cumsum exclusive / reverse; topk smallest. */
#define BG_SELECT_LAST 2u
#define BG_EXCLUSIVE 4u
#define BG_REVERSE 8u
#define BG_SMALLEST 16u

/* Op attributes; which fields mean something depends on the op. */
typedef struct bg_attrs {
    double value[2];  /* fill: value[0]; random_uniform: low, high;
                         random_normal: mean, stddev */
    uint64_t seed;    /* random_*: the seed; topk_*: k */
    int32_t axis;     /* iota: counted axis; concat: joined axis; axis
                         ops (argmax, argmin, topk_*, cumsum): 0..rank-1 */
    uint32_t flags;   /* matmul: BRAID_TRANSPOSE_A|B; reduce: BG_KEEPDIMS;
                         axis ops: BG_KEEPDIMS, BG_SELECT_LAST, BG_EXCLUSIVE,
                         BG_REVERSE, BG_SMALLEST (graph/axis.h) */
    uint8_t axes;     /* reduce: bit i set when input axis i is reduced */
    uint8_t perm[BRAID_MAX_RANK]; /* permute: out axis i = input axis perm[i] */
    int64_t start[BRAID_MAX_RANK]; /* slice: first index per input axis */
    int64_t step[BRAID_MAX_RANK];  /* slice: stride per input axis (≠ 0;
                                      negative walks the axis backwards
                                      from start) */
    void *data;       /* constant, variable initialised from data: numel ×
                         dtype size bytes, C order; owned */
    /* state across runs (issue #15) */
    braid_op init;    /* variable: its initializer, BRAID_OP_CONSTANT (data),
                         FILL (value[0]), RANDOM_UNIFORM or RANDOM_NORMAL
                         (seed, value[0..1]) */
} bg_attrs;

/* Constant bytes shared by reference counting instead of copied: by the
 * two graphs of a compiled plan (the user's graph as compiled and the
 * working graph), and by a loaded plan's graphs, whose constants point into
 * the bytes read from the plan file. A node whose `shared` is set borrows
 * attr.data from the holder and holds one reference; the bytes are never
 * written once shared. Holders are allocated with malloc (or mmap), not
 * through a graph's allocator hook, since they outlive any one graph. */
typedef struct bg_shared bg_shared;
struct bg_shared {
    size_t refs;                       /* references; atomic updates */
    void (*destroy)(bg_shared *s);     /* frees the holder and its bytes */
};

/* Whether g allocates through braid's default hook (malloc), not a
 * caller's: only then may its constants live in shared holders. */
bool bg_default_allocator(const braid_graph *g);
/* braid_constant, with the bytes copied once into a shared holder rather
 * than through the graph's allocator (a graph with a caller's allocator
 * hook gets plain braid_constant): braid_compile then shares them instead
 * of copying them. For importers of large weights (onnx/load.c). */
braid_tensor bg_constant_shared(braid_graph *g, braid_dtype dtype, int rank,
                                const int64_t *dims, const void *data);

/* Advises the whole 2 MiB pages inside [p, p + n) to be backed by
 * transparent huge pages when n is large (≥ 4 MiB; graph/huge.c says
 * why); a no-op elsewhere. For arrays with an entry per node. */
void bg_huge_advise(void *p, size_t n);
/* realloc(p, new_size) for a block of old_size bytes, advised like
 * bg_huge_advise; a block growing past 4 MiB is advised before the old
 * bytes are copied into it (graph/huge.c). */
void *bg_huge_realloc(void *p, size_t old_size, size_t new_size);

/* One more reference to s. */
void bg_shared_ref(bg_shared *s);
/* One reference less; the last one destroys s. NULL is ignored. */
void bg_shared_unref(bg_shared *s);
/* A holder (one reference) of a copy of n bytes of data, 64-byte aligned;
 * *bytes gets where they are (data NULL: left for the caller to fill
 * before sharing them). NULL when out of memory. */
bg_shared *bg_shared_copy(const void *data, size_t n, void **bytes);

typedef struct bg_node {
    /* The fields most passes read come first, within one 64-byte line. */
    braid_op op;                   /* what the node computes */
    braid_dtype dtype;             /* element type of the output */
    uint8_t rank;                  /* number of dims, 0..BRAID_MAX_RANK */
    uint32_t ninputs;              /* entries in inputs */
    uint32_t *inputs;              /* input node ids, each < this id; owned */
    int64_t dims[BRAID_MAX_RANK];  /* output shape; dims[rank..] are 0 */
    bg_attrs attr;                 /* op attributes */
    char *name;                    /* input name (required) or node name;
                                      NULL when unnamed; owned */
    char *device;                  /* placement hint or NULL; owned */
    bg_shared *shared;             /* non-NULL: attr.data is borrowed from
                                      this holder (one reference held), not
                                      owned through the allocator */
} bg_node;

typedef struct bg_output {
    char *name;    /* output name, unique among outputs; owned */
    uint32_t node; /* node id */
} bg_output;

/* A hash index of names (open addressing, linear probing), rebuilt lazily
 * from the graph when stale, so name checks stay linear overall. */
typedef struct bg_name_slot {
    uint32_t entry; /* entry + 1, 0 when empty */
    uint32_t hash;  /* the name's hash: most probes that miss compare it
                       alone, without fetching the node and its name */
} bg_name_slot;
typedef struct bg_name_index {
    bg_name_slot *slot; /* owned */
    uint32_t cap;   /* slots (a power of two), 0 before the first build */
    uint32_t count; /* entries */
    bool stale;     /* out of date: rebuild before the next lookup */
} bg_name_index;

struct braid_graph {
    braid_alloc_fn alloc;  /* allocator hook (never NULL once created) */
    void *alloc_user;      /* its user pointer */
    bg_node *nodes;        /* nnodes nodes, capacity cap */
    uint32_t nnodes;       /* number of nodes */
    uint32_t cap;          /* allocated node slots */
    bg_output *outputs;    /* noutputs named outputs, capacity ocap */
    uint32_t noutputs;     /* number of outputs */
    uint32_t ocap;         /* allocated output slots */
    braid_status status;   /* first error, BRAID_OK when none */
    char error[BG_ERROR_MAX]; /* first error's message */
    bg_name_index input_names;  /* input node ids by name */
    bg_name_index output_names; /* output indices by name */
    char *bulk;       /* one block for the input lists and names a clone
                         copied: see bg_bulk_reserve; owned */
    size_t bulk_size; /* its bytes */
    size_t bulk_used; /* bytes handed out (bulk_size once closed) */
};

/* ---- op table ----------------------------------------------------------- */

/* One row of BRAID_OP_LIST (include/braid/ops.h says what each column
 * means). */
typedef struct bg_op_info {
    const char *name;       /* text-format name */
    int arity;              /* inputs; -1 variadic */
    braid_op_kind kind;     /* drives passes */
    braid_op_dtypes dtypes; /* operand dtypes the builder accepts */
    unsigned flags;         /* BRAID_OPF_* */
    double flops;           /* cost-model arithmetic per element */
} bg_op_info;

/* The row of op; NULL for an op outside the table. */
const bg_op_info *bg_op(braid_op op);
/* Whether op's row has flag (a BRAID_OPF_* bit); false for a bad op. */
bool bg_op_has(braid_op op, unsigned flag);
/* Whether node id of g runs a run check (docs/architecture.md, "Run
 * checks"): its op has BRAID_OPF_RUN_CHECK and, for a cast, it is
 * range-checked (bg_cast_checked). Its kernels record failures in the run
 * check record; its generated kernel takes the record (bc_kernel.run_check)
 * and is never fused (passes/fuse.c). */
bool bg_node_run_check(const braid_graph *g, uint32_t id);
static inline bool bg_op_is_compare(braid_op op) {
    return bg_op_has(op, BRAID_OPF_COMPARE);
}
/* Whether the builder accepts an operand of dtype t for op (where: a value
 * operand), by the dtypes column. */
bool bg_op_accepts(braid_op op, braid_dtype t);
/* The dtypes column in words for error messages ("a float dtype", ...). */
const char *bg_op_dtypes_text(braid_op op);
/* Op by text name, or BRAID_OP_COUNT_ when unknown. */
braid_op bg_op_lookup(const char *name, size_t len);
/* dtype by text name ("f32", ...), or BRAID_DTYPE_COUNT_ when unknown. */
braid_dtype bg_dtype_lookup(const char *name, size_t len);

/* ---- device names (graph/device.c) --------------------------------------- */

/* CUDA device ordinals a name may carry: cuda:0 .. cuda:63. */
#define BG_MAX_CUDA_DEVICES 64
/* What bg_device_parse stores for "cpu". */
#define BG_DEVICE_CPU (-1)

/* True when [s, s + len) is exactly a device name: "cpu", or "cuda:N" with
 * N decimal in 0 .. BG_MAX_CUDA_DEVICES-1 and no sign, leading zero or
 * space. *cuda (when not NULL) gets N, or BG_DEVICE_CPU. The one parser of
 * device names: hints, text files, compile options, plan files and the
 * command line all go through it. */
bool bg_device_parse(const char *s, size_t len, int *cuda);

/* ---- memory and errors ---------------------------------------------------- */

/* Allocate / resize / free through the graph's hook. On failure these record
 * BRAID_ERR_OUT_OF_MEMORY on g and return NULL. */
void *bg_alloc(braid_graph *g, size_t size);
void *bg_realloc(braid_graph *g, void *ptr, size_t old_size, size_t new_size);
void bg_free(braid_graph *g, void *ptr, size_t size);
/* One block of `bytes` for the input lists and names of the nodes about to
 * be copied in (a clone; graph/graph.c says why): bg_alloc_piece carves
 * them from it until bg_bulk_close. bg_free leaves pieces alone (the block
 * goes with the graph) and bg_realloc moves a piece out. False when out of
 * memory; a graph has at most one block (true, nothing done, after). */
bool bg_bulk_reserve(braid_graph *g, size_t bytes);
void bg_bulk_close(braid_graph *g);
/* The bytes a piece of `size` takes in the block (input lists stay
 * aligned). */
static inline size_t bg_piece_size(size_t size) {
    return (size + 3) & ~(size_t)3;
}
/* bg_alloc for an input list or a name (bg_strdup): from the bulk block
 * while it has room, else bg_alloc. */
void *bg_alloc_piece(braid_graph *g, size_t size);
char *bg_strdup(braid_graph *g, const char *s);
void bg_free_str(braid_graph *g, char *s);

/* Records the first error on g (later ones are ignored) and returns s. */
braid_status bg_fail(braid_graph *g, braid_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, for any caller: sets the thread's braid_last_error() message. */
braid_status bg_set_last_error(braid_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bg_clear_last_error(void);

/* ---- name indexes (graph/names.c) ----------------------------------------- */

/* The input node called name, or BG_NONE. */
uint32_t bg_find_input(braid_graph *g, const char *name);
/* The output index called name, or BG_NONE. */
uint32_t bg_find_output(braid_graph *g, const char *name);
/* Records that node id (an input) / output index i was just added. */
void bg_names_added_input(braid_graph *g, uint32_t id);
void bg_names_added_output(braid_graph *g, uint32_t i);
/* Marks both indexes stale (after renaming or renumbering nodes). */
void bg_names_invalidate(braid_graph *g);
/* Frees both indexes. */
void bg_names_free(braid_graph *g);
/* Longest strings bg_edit_distance compares. */
#define BG_EDIT_MAX 32
/* Levenshtein distance of a[0..na) and b[0..nb), or INT_MAX when either
 * is longer than BG_EDIT_MAX: the parser's and the CLI's "did you mean". */
int bg_edit_distance(const char *a, size_t na, const char *b, size_t nb);
/* Releases what a node owns (inputs, name, hint, constant bytes). */
void bg_node_release(braid_graph *g, bg_node *n);

/* ---- shapes ---------------------------------------------------------------- */

/* The size rule every layer applies to a shape (builder, text parser, .npy
 * reader, plan loader, plan verifier): rank 0..8, each dim in 0..2^50, and
 * the product of the dims with zeros counted as ones, times elem_size, at
 * most BG_MAX_BYTES. Counting zeros as ones bounds every stride and partial
 * product whatever the order of the dims, so an empty f32[0,2^32,2^32]
 * (whose strides would be 2^64) is refused like a full one. True when the
 * shape fits; *numel (may be NULL) then gets the element count. */
bool bg_shape_fits(int rank, const int64_t *dims, size_t elem_size,
                   int64_t *numel);
/* Product of dims (1 for rank 0). Valid graphs keep this ≤ BG_MAX_BYTES. */
int64_t bg_numel(const bg_node *n);
/* Whether a and b have the same rank and dims. */
static inline bool bg_same_shape(const bg_node *a, const bg_node *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}
size_t bg_nbytes(const bg_node *n);
/* Formats "f32[2,3]" into buf (always NUL-terminated). */
const char *bg_type_str(const bg_node *n, char *buf, size_t size);
const char *bg_shape_str(int rank, const int64_t *dims, char *buf,
                         size_t size);
/* NumPy broadcast of two shapes into out; false when incompatible. */
bool bg_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b,
                         int *rout, int64_t *out);

/* Slices (graph/shape.c): the one owner of what a slice's attributes mean.
 * bg_slice_bounds applies Python's rules to one axis of length dim (a
 * negative start/stop counts from the end, then clamps: to [0, dim] for a
 * positive step, to [-1, dim - 1] for a negative one, so a stop below -dim
 * means "through element 0"); it gives the IR's first index and count.
 * False when step is 0 (or INT64_MIN, whose magnitude has no int64).
 * bg_slice_fits: count elements from start stepping by step stay within
 * [0, dim) (count 0 always fits). */
bool bg_slice_bounds(int64_t dim, int64_t start, int64_t stop, int64_t step,
                     int64_t *first, int64_t *count);
bool bg_slice_fits(int64_t dim, int64_t start, int64_t step, int64_t count);

/* ---- the generic builder --------------------------------------------------- */

/* The one place nodes are created: checks inputs, dtypes, shapes and
 * attributes for op, infers the output type, appends the node and returns
 * its id (BG_NONE on error, recorded on g; BG_NONE quietly when g already
 * has an error or an input is BG_NONE).
 *   dtype/rank/dims: the output type for source ops, the target dtype for
 *   cast, the target shape for reshape (may hold one -1) and broadcast_to;
 *   ignored otherwise.
 *   attr: copied (constant data is copied too); NULL means all zero.
 *   name: the input's name for BRAID_OP_INPUT, else ignored. */
uint32_t bg_build(braid_graph *g, braid_op op, const uint32_t *inputs,
                  uint32_t ninputs, braid_dtype dtype, int rank,
                  const int64_t *dims, const bg_attrs *attr,
                  const char *name);
/* bg_build, except that a constant's (or data-initialised variable's)
 * attr->data, which must lie inside holder `shared`, is borrowed (one
 * reference taken) instead of copied. shared NULL: bg_build. */
uint32_t bg_build_shared(braid_graph *g, braid_op op, const uint32_t *inputs,
                         uint32_t ninputs, braid_dtype dtype, int rank,
                         const int64_t *dims, const bg_attrs *attr,
                         const char *name, bg_shared *shared);

/* Makes room for `nnodes` nodes in all, so that appending up to that many
 * moves the node array no more (a reader that knows the count: the plan
 * file's loader). False, with g's error set, when out of memory. */
bool bg_reserve_nodes(braid_graph *g, uint32_t nnodes);

static inline const bg_node *bg_node_at(const braid_graph *g, uint32_t id) {
    return &g->nodes[id];
}

/* A deep copy of g (same ids, attributes, names, outputs, error state),
 * allocated with g's allocator. NULL when out of memory. */
braid_graph *bg_graph_clone(const braid_graph *g);
/* bg_graph_clone, except that the clone's constant bytes are moved into
 * shared holders (copied once): a bg_graph_clone of the result then shares
 * them instead of copying them again. */
braid_graph *bg_graph_clone_shared(const braid_graph *g);
/* bg_graph_clone with room for `room` more nodes in its node array, so that
 * adding them does not copy the array into a new one twice its size (the
 * compile's working graph: graph/graph_edit.c says why). */
braid_graph *bg_graph_clone_room(const braid_graph *g, uint32_t room);

/* Structural equality (ops, types, attributes, constant bytes, names, hints,
 * outputs). Used by round-trip tests. */
bool bg_graph_equal(const braid_graph *a, const braid_graph *b);

/* ---- elementwise scalar semantics ------------------------------------------ */

/* f16 / bf16 conversions, round to nearest even, NaN preserved. */
float bg_f16_to_f32(uint16_t h);
uint16_t bg_f32_to_f16(float f);
float bg_bf16_to_f32(uint16_t h);
uint16_t bg_f32_to_bf16(float f);

/* Reads element i of a buffer of dtype t as a double / writes it, rounding
 * to t (integer dtypes: truncation toward zero, saturating, NaN → 0; bool:
 * != 0). i64 values beyond ±2^53 are rounded by the double (docs/ops.md,
 * "Integer dtypes"). */
double bg_load(braid_dtype t, const void *buf, int64_t i);
void bg_store(braid_dtype t, void *buf, int64_t i, double v);

/* ---- conv ops (graph/conv.c) ------------------------------------------------
 *
 * conv and conv_transpose keep their attributes in bg_attrs fields the
 * other ops already have, so the text format, plan files, cloning and
 * equality carry them with no new fields: for spatial axis i (< 3)
 *   step[i]      stride            step[3 + i]   dilation
 *   start[i]     pad at the start  start[3 + i]  pad at the end
 *   axis         groups
 * conv_transpose's output_padding is folded into the end pad (end pad =
 * pads_end - output_padding, so it may be negative): both say where the
 * output stops in the full transposed result. Axes past the spatial rank
 * are zero (bg_build normalises).
 *
 * flags BG_CONV_CHANNELS_LAST (conv only) moves the channel axis last:
 * x [N, in..., C], w [OC, k..., C/G], y [N, out..., OC]. No builder makes
 * it: passes/channels_last.c rewrites GPU convolutions into it, and the
 * text format spells it `channels_last`. The CPU does not run it. */
#define BG_CONV_MAX_SPATIAL 3
#define BG_CONV_CHANNELS_LAST 1u

/* A convolution's geometry with every spatial axis present: axes past the
 * node's spatial rank have size 1, kernel 1, stride 1, dilation 1, no pad.
 * For conv: x [N, C, in...], w [OC, C/G, k...], y [N, OC, out...],
 * out = (in + pb + pe - ((k-1)·d + 1)) / s + 1.
 * For conv_transpose: x [N, C, in...], w [C, OC/G, k...], y [N, OC, out...],
 * out = s·(in - 1) + (k-1)·d + 1 - pb - pe. */
typedef struct bg_conv_geom {
    bool transpose;   /* conv_transpose */
    bool bias;        /* a third input: bias [OC] */
    bool channels_last; /* BG_CONV_CHANNELS_LAST: [N, spatial..., C] */
    int nspatial;     /* 1..3 */
    int64_t N, C, OC, G; /* batch, input and output channels, groups */
    int64_t in[BG_CONV_MAX_SPATIAL], k[BG_CONV_MAX_SPATIAL],
        out[BG_CONV_MAX_SPATIAL];
    int64_t stride[BG_CONV_MAX_SPATIAL], dil[BG_CONV_MAX_SPATIAL];
    int64_t pb[BG_CONV_MAX_SPATIAL], pe[BG_CONV_MAX_SPATIAL];
} bg_conv_geom;

/* The geometry of conv node n of g. False (nothing recorded) when n is not
 * a well-formed conv node: what the reference's and the executors' checks
 * of a loaded plan ask. */
bool bg_conv_geom_of(const braid_graph *g, const bg_node *n, bg_conv_geom *c);
/* The attributes of an ungrouped, channels-first conv (not transposed)
 * with the given geometry's strides, dilations and pads on its nspatial
 * axes: what a conv node built with them holds (the fused CONV program's
 * conv, passes/program.h, is rebuilt from them). */
void bg_conv_attrs(const bg_conv_geom *c, bg_attrs *a);
/* Multiply-adds of the convolution (the cost model's and profiler's
 * count: N · OC · out-volume · C/G · kernel-volume, and for conv_transpose
 * the same count over the input volume). */
double bg_conv_macs(const bg_conv_geom *c);
/* The tap (one index per spatial axis, into kk[3]) of flat kernel index k
 * (C order over c->k). */
void bg_conv_tap(const bg_conv_geom *c, int64_t k, int64_t *kk);

/* ---- integer dtypes (graph/dtype.c; elemwise helper) ---------------------- */

/* Whether t is an integer dtype (i32, i64; not bool). */
bool bg_dtype_is_int(braid_dtype t);
/* Whether every value of t is exactly a double (all but i64). Constant
 * folding and fusion, which compute in double, leave the others alone. */
bool bg_dtype_f64_exact(braid_dtype t);
/* Element i of an integer-dtype buffer, exactly; bool as 0/1, floats
 * truncated by bg_store's rules. */
int64_t bg_load_int(braid_dtype t, const void *buf, int64_t i);
/* Stores v, which must fit integer dtype t, exactly. */
void bg_store_int(braid_dtype t, void *buf, int64_t i, int64_t v);
/* The range of integer dtype t. */
void bg_int_range(braid_dtype t, int64_t *lo, int64_t *hi);
/* Whether a cast from `from` to `to` is range-checked at run time: an
 * integer narrowing from i64, which ONNX import relies on (a value that does
 * not fit fails the run instead of wrapping), on any device, through the
 * run check record (BC_CHECK_CAST). */
bool bg_cast_checked(braid_dtype from, braid_dtype to);
/* Whether value v (of a checked cast's source) fits in dtype to. */
bool bg_int_fits(braid_dtype to, int64_t v);
/* The run error of checked cast node id of g whose element `index` holds
 * `value`, which does not fit: BRAID_ERR_INVALID_ARGUMENT naming the node
 * (id and name), the dtypes, the element and the value. One message for
 * every executor (the CPU kernel and the GPU's record both reach it through
 * br_run_check_take) and the reference. */
braid_status bg_cast_range_error(const braid_graph *g, uint32_t id,
                                 int64_t index, int64_t value);

/* ---- random generators (graph/rng.c) -------------------------------------- */

/* Philox-4x32-10 of counter (low32(i), high32(i), 0, 0) under key seed
 * (split into two 32-bit words): 4 random words. */
void bg_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);
/* Element i of random_uniform / random_normal with the node's attributes, as
 * a double, before rounding to the node's dtype. Uses only IEEE basic
 * operations so every device computes the same bits. */
double bg_random_uniform_at(uint64_t seed, int64_t i, double low,
                            double high);
double bg_random_normal_at(uint64_t seed, int64_t i, double mean,
                           double stddev);

/* ---- state across runs (graph/state.c, docs/training.md) ----------------- */

/* The builder's checks (bg_build) of a variable whose dtype and shape out
 * already holds (its name, its initializer a, copied into out->attr) and
 * of an assign (inputs: the variable, the value, then the ordering edges
 * the compiler adds; same type; one assign per variable), which fills
 * out's type. An error is recorded on g. */
braid_status bg_check_variable(braid_graph *g, const bg_attrs *a,
                               const char *name, bg_node *out);
braid_status bg_check_assign(braid_graph *g, const uint32_t *in, uint32_t nin,
                             bg_node *out);
/* Writes a variable's initial value (its initializer) into dst, numel ×
 * dtype size bytes. The one definition every executor and the reference
 * evaluator use. */
void bg_variable_init(const bg_node *n, void *dst);
/* Element i of that value as a double, before rounding to n's dtype. */
double bg_variable_init_at(const bg_node *n, int64_t i);
/* The variable node called name, or BG_NONE. */
uint32_t bg_find_variable(const braid_graph *g, const char *name);
/* Whether g has an assign (a graph whose only effect is updating
 * variables needs no output). */
bool bg_has_assign(const braid_graph *g);
/* Whether op's output lives as long as the executor (a variable; a
 * constant when not read in place): the memory pass never reuses it. */
static inline bool bg_op_persistent(braid_op op) {
    return op == BRAID_OP_CONSTANT || op == BRAID_OP_VARIABLE;
}

#endif /* BRAID_GRAPH_GRAPH_H */
