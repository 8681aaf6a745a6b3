/* braid/braid.h — the public API of braid, a lazy tensor-graph compiler.
 *
 * Lifecycle: build a graph (braid_graph_new + builder calls, or parse a
 * .graph file) → compile it into a plan (braid_compile) → create an executor
 * (braid_exec_new) → run it many times (braid_run) → free all three.
 *
 * Errors never abort. Builder calls record the first error on the graph and
 * return an invalid tensor; calls that receive an invalid tensor return an
 * invalid tensor quietly. Read the message with braid_graph_error(). Every
 * other call returns a braid_status and leaves a message for
 * braid_last_error() (per thread). */
#ifndef BRAID_BRAID_H
#define BRAID_BRAID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "braid/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_VERSION_MAJOR 0
#define BRAID_VERSION_MINOR 1
#define BRAID_VERSION_PATCH 0

/* "0.1.0" plus the build's CUDA support, e.g. "0.1.0 (cuda 13.0)". */
const char *braid_version(void);

/* ---- status ------------------------------------------------------------ */

typedef enum braid_status {
    BRAID_OK = 0,
    BRAID_ERR_INVALID_ARGUMENT, /* NULL, bad axis, bad name, ... */
    BRAID_ERR_SHAPE,            /* shapes do not agree */
    BRAID_ERR_DTYPE,            /* dtype not accepted by the op */
    BRAID_ERR_OUT_OF_MEMORY,    /* an allocation failed */
    BRAID_ERR_PARSE,            /* malformed .graph text */
    BRAID_ERR_IO,               /* a file could not be read or written */
    BRAID_ERR_NOT_FOUND,        /* an input/output name is unknown */
    BRAID_ERR_UNSUPPORTED,      /* valid request braid cannot do (yet) */
    BRAID_ERR_DEVICE,           /* a device is missing or failed */
    BRAID_ERR_INTERNAL          /* a bug in braid: please report */
} braid_status;

/* "ok", "invalid argument", ... */
const char *braid_status_name(braid_status s);

/* The message left by the last failing call on this thread ("" if none).
 * Successful calls leave it unchanged, like errno. */
const char *braid_last_error(void);

/* ---- dtypes and shapes ------------------------------------------------- */

typedef enum braid_dtype {
    BRAID_F32,
    BRAID_F16,
    BRAID_BF16,
    BRAID_F64,
    BRAID_I32,
    BRAID_BOOL,
    /* integer storage dtypes (elemwise helper): i64 holds ONNX's int64 at
     * the boundary, i8/u8 its small integers; docs/ops.md "Integer
     * dtypes" says which ops take them (arithmetic stays in i32) */
    BRAID_I64,
    BRAID_DTYPE_COUNT_
} braid_dtype;

#define BRAID_MAX_RANK 8

size_t braid_dtype_size(braid_dtype t);      /* bytes per element; 0 if bad */
const char *braid_dtype_name(braid_dtype t); /* "f32", ...; "?" if bad */
bool braid_dtype_is_float(braid_dtype t);

/* ---- allocator hook ---------------------------------------------------- */

/* Lua-style: new_size == 0 frees ptr and returns NULL; otherwise behaves like
 * realloc(ptr, new_size) (ptr NULL: allocate). old_size is the size the block
 * was allocated with (0 when ptr is NULL). Returning NULL for a nonzero
 * new_size means out of memory: the graph records BRAID_ERR_OUT_OF_MEMORY. */
typedef void *(*braid_alloc_fn)(void *user, void *ptr, size_t old_size,
                                size_t new_size);

typedef struct braid_graph_options {
    braid_alloc_fn alloc; /* NULL: the C library's malloc/realloc/free */
    void *alloc_user;     /* passed to alloc unchanged */
} braid_graph_options;

/* ---- graphs ------------------------------------------------------------ */

typedef struct braid_graph braid_graph;

/* A tensor is the output of one graph node, named by its dense id. */
typedef struct braid_tensor {
    uint32_t id; /* node id; BRAID_INVALID_ID when invalid */
} braid_tensor;

#define BRAID_INVALID_ID UINT32_MAX
#define BRAID_NONE ((braid_tensor){BRAID_INVALID_ID})

static inline bool braid_tensor_valid(braid_tensor t) {
    return t.id != BRAID_INVALID_ID;
}

/* opts may be NULL. Returns NULL only when the graph itself cannot be
 * allocated. */
braid_graph *braid_graph_new(const braid_graph_options *opts);
void braid_graph_free(braid_graph *g); /* NULL is fine */

/* BRAID_OK, or the first error recorded on the graph. */
braid_status braid_graph_status(const braid_graph *g);
/* The first error's message ("" when none): op, operand shapes, expectation.
 * Parse errors start with "file:line:col: ". */
const char *braid_graph_error(const braid_graph *g);

/* Number of nodes (tensors) in the graph. */
uint32_t braid_graph_node_count(const braid_graph *g);

/* Shape and dtype of a tensor. rank and dims may be NULL; dims must hold
 * BRAID_MAX_RANK entries. */
braid_status braid_tensor_info(const braid_graph *g, braid_tensor t,
                               braid_dtype *dtype, int *rank, int64_t *dims);
/* Elements in a tensor (1 for a scalar), or -1 when t is invalid. */
int64_t braid_tensor_numel(const braid_graph *g, braid_tensor t);

/* Inputs and named outputs, in the order they were added. */
uint32_t braid_graph_input_count(const braid_graph *g);
braid_status braid_graph_input(const braid_graph *g, uint32_t i,
                               const char **name, braid_tensor *t);
uint32_t braid_graph_output_count(const braid_graph *g);
braid_status braid_graph_output(const braid_graph *g, uint32_t i,
                                const char **name, braid_tensor *t);

/* ---- builder: sources --------------------------------------------------- */

/* A value bound at run time. name must be unique among inputs:
 * [A-Za-z_][A-Za-z0-9_.]* . */
braid_tensor braid_input(braid_graph *g, const char *name, braid_dtype dtype,
                         int rank, const int64_t *dims);
/* data (numel × dtype size bytes, C order) is copied into the graph. */
braid_tensor braid_constant(braid_graph *g, braid_dtype dtype, int rank,
                            const int64_t *dims, const void *data);
braid_tensor braid_fill(braid_graph *g, braid_dtype dtype, int rank,
                        const int64_t *dims, double value);
/* Element index along axis (0, 1, 2, ...). */
braid_tensor braid_iota(braid_graph *g, braid_dtype dtype, int rank,
                        const int64_t *dims, int axis);
/* Counter-based (Philox-4x32-10) random numbers: element i depends only on
 * (seed, i), so the result is the same on any device. Float dtypes only. */
braid_tensor braid_random_uniform(braid_graph *g, braid_dtype dtype, int rank,
                                  const int64_t *dims, uint64_t seed,
                                  double low, double high);
braid_tensor braid_random_normal(braid_graph *g, braid_dtype dtype, int rank,
                                 const int64_t *dims, uint64_t seed,
                                 double mean, double stddev);

/* ---- builder: elementwise ----------------------------------------------
 * Binary ops broadcast by NumPy's rules and need equal dtypes (no implicit
 * promotion: use braid_cast). Integer arithmetic wraps; i32 division by zero
 * gives 0. max/min propagate NaN. Comparisons give bool. */
braid_tensor braid_unary(braid_graph *g, braid_op op, braid_tensor x);
braid_tensor braid_binary(braid_graph *g, braid_op op, braid_tensor a,
                          braid_tensor b);

braid_tensor braid_neg(braid_graph *g, braid_tensor x);
braid_tensor braid_abs(braid_graph *g, braid_tensor x);
braid_tensor braid_exp(braid_graph *g, braid_tensor x);
braid_tensor braid_log(braid_graph *g, braid_tensor x);
braid_tensor braid_sqrt(braid_graph *g, braid_tensor x);
braid_tensor braid_rsqrt(braid_graph *g, braid_tensor x);
braid_tensor braid_sin(braid_graph *g, braid_tensor x);
braid_tensor braid_cos(braid_graph *g, braid_tensor x);
braid_tensor braid_tan(braid_graph *g, braid_tensor x);
braid_tensor braid_tanh(braid_graph *g, braid_tensor x);
braid_tensor braid_sigmoid(braid_graph *g, braid_tensor x);
braid_tensor braid_relu(braid_graph *g, braid_tensor x);
braid_tensor braid_gelu(braid_graph *g, braid_tensor x); /* erf form */
braid_tensor braid_silu(braid_graph *g, braid_tensor x);
braid_tensor braid_erf(braid_graph *g, braid_tensor x);
braid_tensor braid_floor(braid_graph *g, braid_tensor x);
braid_tensor braid_ceil(braid_graph *g, braid_tensor x);
braid_tensor braid_reciprocal(braid_graph *g, braid_tensor x);
braid_tensor braid_square(braid_graph *g, braid_tensor x);

braid_tensor braid_add(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_sub(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_mul(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_div(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_pow(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_max(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_min(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_eq(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_ne(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_lt(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_le(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_gt(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_ge(braid_graph *g, braid_tensor a, braid_tensor b);

/* elemwise helper (issue 13; docs/ops.md "More elementwise ops"). Float:
 * the C library's asin ... atanh; round is half to even. sign (floats and
 * i32) is -1, 0 or 1 (±0 and NaN pass through). mod is ONNX Mod with fmod=0
 * (the divisor's sign, Python's %), fmod ONNX Mod with fmod=1 (the
 * dividend's sign, C's fmod / %); floats and i32, x mod 0 = 0 on i32. The
 * bitwise ops and shifts take i32 (right shifts are arithmetic; a count
 * outside [0, 32) shifts every bit out). */
braid_tensor braid_asin(braid_graph *g, braid_tensor x);
braid_tensor braid_acos(braid_graph *g, braid_tensor x);
braid_tensor braid_atan(braid_graph *g, braid_tensor x);
braid_tensor braid_sinh(braid_graph *g, braid_tensor x);
braid_tensor braid_cosh(braid_graph *g, braid_tensor x);
braid_tensor braid_asinh(braid_graph *g, braid_tensor x);
braid_tensor braid_acosh(braid_graph *g, braid_tensor x);
braid_tensor braid_atanh(braid_graph *g, braid_tensor x);
braid_tensor braid_sign(braid_graph *g, braid_tensor x);
braid_tensor braid_round(braid_graph *g, braid_tensor x);
braid_tensor braid_bitwise_not(braid_graph *g, braid_tensor x);
braid_tensor braid_mod(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_fmod(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_bitwise_and(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_bitwise_or(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_bitwise_xor(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_shift_left(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_shift_right(braid_graph *g, braid_tensor a, braid_tensor b);
/* Composites (exact, and they fuse): isnan(x) = x != x and isinf(x) =
 * |x| == inf (ONNX IsInf's detect flags pick +inf, -inf or both) on float
 * x, giving bool; the logical ops on bool operands (ONNX And, Or, Xor, Not):
 * and = where(a, b, a), or = where(a, a, b), xor = a != b, not = a == false,
 * broadcasting like binary ops. */
braid_tensor braid_isnan(braid_graph *g, braid_tensor x);
braid_tensor braid_isinf(braid_graph *g, braid_tensor x, bool detect_positive,
                         bool detect_negative);
braid_tensor braid_logical_and(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_logical_or(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_logical_xor(braid_graph *g, braid_tensor a, braid_tensor b);
braid_tensor braid_logical_not(braid_graph *g, braid_tensor x);

/* cond (bool) ? a : b, all three broadcast together. */
braid_tensor braid_where(braid_graph *g, braid_tensor cond, braid_tensor a,
                         braid_tensor b);
/* Float → i32 truncates toward zero, saturates, NaN → 0; x → bool is x != 0. */
braid_tensor braid_cast(braid_graph *g, braid_tensor x, braid_dtype dtype);

/* ---- builder: matmul, reductions, composites --------------------------- */

#define BRAID_TRANSPOSE_A 1u
#define BRAID_TRANSPOSE_B 2u

/* a [..., M, K] × b [..., K, N] → [..., M, N]; ranks ≥ 2, batch dims
 * broadcast. flags transpose the last two axes of a / b. Float dtypes. */
braid_tensor braid_matmul(braid_graph *g, braid_tensor a, braid_tensor b,
                          unsigned flags);

/* Reduce over naxes axes (negative counts from the end); naxes == 0 reduces
 * over every axis. keepdims keeps reduced axes as size 1. mean needs a float
 * dtype; sum/max/min accept f*, i32. */
braid_tensor braid_sum(braid_graph *g, braid_tensor x, int naxes,
                       const int *axes, bool keepdims);
braid_tensor braid_mean(braid_graph *g, braid_tensor x, int naxes,
                        const int *axes, bool keepdims);
braid_tensor braid_reduce_max(braid_graph *g, braid_tensor x, int naxes,
                              const int *axes, bool keepdims);
braid_tensor braid_reduce_min(braid_graph *g, braid_tensor x, int naxes,
                              const int *axes, bool keepdims);

/* Composites (built from the ops above): softmax over axis, subtracting the
 * max first; layer norm over the last axis, then × gamma + beta when those
 * are valid tensors (pass BRAID_NONE to skip). */
braid_tensor braid_softmax(braid_graph *g, braid_tensor x, int axis);
braid_tensor braid_layer_norm(braid_graph *g, braid_tensor x,
                              braid_tensor gamma, braid_tensor beta,
                              double eps);

/* Attention (one op, issue 14): per batch b and head h,
 *   out[b,:,h,:] = softmax(q[b,:,h,:]·k[b,:,h,:]ᵀ·scale + mask[b,h]) ·
 *                  v[b,:,h,:]
 * q [B,S,H,D], k and v [B,T,H,D] (sequence-major, as projections produce
 * them; D ≤ 256), mask additive, of q's dtype, broadcastable to [B,H,S,T]
 * (BRAID_NONE: none); the result is [B,S,H,D]. A row whose scores are all
 * -inf (fully masked) gives 0. scale must be finite (1/sqrt(D) is the usual
 * one). flags: BRAID_ATTENTION_CAUSAL also masks key j > query i. Float
 * dtypes; differentiable (docs/training.md). */
#define BRAID_ATTENTION_CAUSAL 1u
braid_tensor braid_attention(braid_graph *g, braid_tensor q, braid_tensor k,
                             braid_tensor v, braid_tensor mask, double scale,
                             unsigned flags);

/* ---- builder: shape ops ------------------------------------------------- */

/* One dim may be -1 (inferred). Element count must match. */
braid_tensor braid_reshape(braid_graph *g, braid_tensor x, int rank,
                           const int64_t *dims);
/* Output axis i is input axis perm[i]. */
braid_tensor braid_permute(braid_graph *g, braid_tensor x, const int *perm);
/* Swap the last two axes. */
braid_tensor braid_transpose(braid_graph *g, braid_tensor x);
/* Per axis: elements start, start+step, ... below stop (Python rules for
 * negative start/stop, clamped); step ≠ 0, a negative step walking
 * backwards from start (a stop below -dim means through element 0). NULL
 * steps means all 1. */
braid_tensor braid_slice(braid_graph *g, braid_tensor x, const int64_t *start,
                         const int64_t *stop, const int64_t *step);
braid_tensor braid_concat(braid_graph *g, int n, const braid_tensor *xs,
                          int axis);
braid_tensor braid_broadcast_to(braid_graph *g, braid_tensor x, int rank,
                                const int64_t *dims);

/* ---- builder: gather and scatter (issue #13; docs/ops.md) ---------------
 *
 * Indices are i32 or i64; a negative index counts from the end of its axis. An
 * index outside -dim .. dim-1 fails the run (braid_run returns
 * BRAID_ERR_INVALID_ARGUMENT naming the node and the index). Axes may be
 * negative (counted from the end). */

/* ONNX Gather: slices of x along axis picked by indices; the result is
 * x.dims[:axis] + indices.dims + x.dims[axis+1:]. */
braid_tensor braid_gather(braid_graph *g, braid_tensor x, braid_tensor indices,
                          int axis);
/* ONNX GatherElements: out[p] = x[p with coordinate axis = indices[p]];
 * indices has x's rank (its other dims at most x's), out its shape. */
braid_tensor braid_gather_elements(braid_graph *g, braid_tensor x,
                                   braid_tensor indices, int axis);
/* ONNX GatherND: the last dim of indices is a tuple into x's dims after
 * the first batch_dims (which indices and x share). */
braid_tensor braid_gather_nd(braid_graph *g, braid_tensor x,
                             braid_tensor indices, int batch_dims);

/* How scatter combines an update with the element it lands on. */
typedef enum braid_scatter_reduction {
    BRAID_SCATTER_NONE = 0, /* replace (duplicates: docs/ops.md) */
    BRAID_SCATTER_ADD,
    BRAID_SCATTER_MUL,
    BRAID_SCATTER_MAX,
    BRAID_SCATTER_MIN
} braid_scatter_reduction;

/* ONNX ScatterElements: a copy of x where element p of updates lands at
 * p's coordinates with coordinate axis = indices[p]. */
braid_tensor braid_scatter_elements(braid_graph *g, braid_tensor x,
                                    braid_tensor indices, braid_tensor updates,
                                    int axis, braid_scatter_reduction r);
/* ONNX ScatterND: a copy of x where each tuple of indices (its last dim)
 * receives the matching slice of updates. */
braid_tensor braid_scatter_nd(braid_graph *g, braid_tensor x,
                              braid_tensor indices, braid_tensor updates,
                              braid_scatter_reduction r);
/* ---- builder: convolution (conv ops; docs/ops.md) -------------------------
 *
 * ONNX Conv / ConvTranspose over 1, 2 or 3 spatial axes, channels first:
 * x [N, C, D1..Ds]. conv: w [OC, C/groups, K1..Ks]; conv_transpose:
 * w [C, OC/groups, K1..Ks]. bias [OC], or BRAID_NONE for none. Float
 * dtypes, all operands the same. params may be NULL (every default); in it
 * a zero stride, dilation or groups means 1, and only the first s entries
 * of strides/dilations/output_padding and the first 2s of pads (the s
 * starts, then the s ends) are read. */
typedef struct braid_conv_params {
    int64_t strides[3];        /* ≥ 1 (0: 1) */
    int64_t dilations[3];      /* ≥ 1 (0: 1) */
    int64_t pads[6];           /* ≥ 0: starts, then ends */
    int64_t output_padding[3]; /* conv_transpose: 0 ≤ p < max(stride,
                                  dilation); must be 0 for conv */
    int64_t groups;            /* divides C and OC (0: 1) */
} braid_conv_params;

braid_tensor braid_conv(braid_graph *g, braid_tensor x, braid_tensor w,
                        braid_tensor bias, const braid_conv_params *params);
braid_tensor braid_conv_transpose(braid_graph *g, braid_tensor x,
                                  braid_tensor w, braid_tensor bias,
                                  const braid_conv_params *params);
/* ---- builder: index ops (argmax/argmin, topk, cumsum, reduce_prod,
 * log-sum-exp; docs/ops.md "Axis ops") ----------------------------------
 *
 * axis counts from the end when negative. Indices are i32 (the ONNX
 * importer narrows int64 at the boundary). NaN and tie rules are the same
 * on every device: argmax/argmin pick NaN first (it beats every number),
 * then the lowest index among equal values (the highest with
 * select_last_index); topk ranks NaN above +inf and keeps equal values in
 * index order. */

/* The index of the largest / smallest element along axis (i32); keepdims
 * keeps the axis as size 1. The axis must not be empty. f*, i32. */
braid_tensor braid_argmax(braid_graph *g, braid_tensor x, int axis,
                          bool keepdims, bool select_last_index);
braid_tensor braid_argmin(braid_graph *g, braid_tensor x, int axis,
                          bool keepdims, bool select_last_index);
/* The k largest (smallest when !largest) elements along axis, sorted, as two
 * nodes sharing their attributes: the values (returned) and, when indices
 * is not NULL, their i32 positions (*indices; BRAID_NONE on error). Each
 * node computes its result alone (braid nodes have one output each).
 * 0 <= k <= the axis' length. f*, i32. */
braid_tensor braid_topk(braid_graph *g, braid_tensor x, int64_t k, int axis,
                        bool largest, braid_tensor *indices);
/* Running sums along axis: out[j] = sum of x[i] for i <= j (i < j when
 * exclusive; i >= j / i > j when reverse). i32 sums wrap. f*, i32. */
braid_tensor braid_cumsum(braid_graph *g, braid_tensor x, int axis,
                          bool exclusive, bool reverse);
/* Product over axes (as braid_sum; an empty set of values gives 1; i32
 * products wrap). */
braid_tensor braid_reduce_prod(braid_graph *g, braid_tensor x, int naxes,
                               const int *axes, bool keepdims);
/* log(sum(exp(x))) over axes (as braid_sum), a composite: the max m of
 * each set is subtracted first (0 when m is ±inf or NaN), so it neither
 * overflows nor underflows: log(sum(exp(x - m))) + m. Float dtypes. */
braid_tensor braid_reduce_logsumexp(braid_graph *g, braid_tensor x, int naxes,
                                    const int *axes, bool keepdims);

/* ---- builder: collectives (docs/multi-gpu.md) ---------------------------
 *
 * A collective is a group of k members, one per participant (a GPU, or a
 * process). The group calls build all k members at once: outs[r] is member
 * r, which reads xs[r] (and, for the reference evaluator and the CPU, every
 * other xs[j]). Members without a device hint take their input's hint; a
 * plan runs a group on k distinct GPUs through NCCL, or on the cpu as a
 * host reduction. All xs must have one dtype and shape.
 *   all_reduce:     outs[r] = reduce over j of xs[j]        (xs[r]'s shape)
 *   all_gather:     outs[r] = concat of xs[0..k-1] on dim 0  (k × dim 0)
 *   broadcast:      outs[r] = xs[root]  (the others give only shape/device)
 *   reduce_scatter: outs[r] = rows [r·m, (r+1)·m) of reduce over j of xs[j],
 *                   m = dim 0 / k (dim 0 must divide by k)
 * Reductions need a numeric dtype (not bool); avg needs a float dtype.
 * Errors are recorded on the graph (like every builder) and returned;
 * outs[] are then invalid. */
typedef enum braid_reduce_kind {
    BRAID_REDUCE_SUM = 0,
    BRAID_REDUCE_MAX,
    BRAID_REDUCE_MIN,
    BRAID_REDUCE_AVG,
    BRAID_REDUCE_COUNT_
} braid_reduce_kind;

braid_status braid_all_reduce(braid_graph *g, int k, const braid_tensor *xs,
                              braid_reduce_kind op, braid_tensor *outs);
braid_status braid_all_gather(braid_graph *g, int k, const braid_tensor *xs,
                              braid_tensor *outs);
braid_status braid_broadcast(braid_graph *g, int k, const braid_tensor *xs,
                             int root, braid_tensor *outs);
braid_status braid_reduce_scatter(braid_graph *g, int k,
                                  const braid_tensor *xs, braid_reduce_kind op,
                                  braid_tensor *outs);

/* One rank of a collective whose other nranks - 1 members live in other
 * processes (multi-process mode): op is BRAID_OP_ALL_REDUCE, _ALL_GATHER,
 * _BROADCAST or _REDUCE_SCATTER; reduce is used by the reductions, root by
 * broadcast. An executor of such a plan needs a communicator
 * (braid_exec_set_comm). Every process must build its collectives in the
 * same order: they are issued in that order. The reference evaluator
 * cannot evaluate such a node (it lacks the other ranks' data). */
braid_tensor braid_rank_collective(braid_graph *g, braid_op op, braid_tensor x,
                                   braid_reduce_kind reduce, int root,
                                   int rank, int nranks);

/* "sum", "max", "min", "avg"; "?" if bad. */
const char *braid_reduce_name(braid_reduce_kind k);

/* ---- builder: pooling, pad, rms_norm (ONNX; docs/ops.md) --------------- */

/* ONNX RMSNormalization: x / sqrt(mean(x², axes [axis, rank)) + eps), then
 * × scale when scale is a valid tensor broadcasting to x (BRAID_NONE to
 * skip). A composite: one reduction and one elementwise kernel once fused. */
braid_tensor braid_rms_norm(braid_graph *g, braid_tensor x, braid_tensor scale,
                            int axis, double eps);

/* ONNX Pad. pads_lo[i] / pads_hi[i] elements are added before / after axis
 * i; a negative pad crops. CONSTANT fills with value, EDGE repeats the
 * border element, REFLECT mirrors without repeating it (a pad of at most
 * the axis length less one). A composite of slice, fill, broadcast_to and
 * one concat per padded axis. */
typedef enum braid_pad_mode {
    BRAID_PAD_CONSTANT,
    BRAID_PAD_REFLECT,
    BRAID_PAD_EDGE
} braid_pad_mode;
braid_tensor braid_pad(braid_graph *g, braid_tensor x, const int64_t *pads_lo,
                       const int64_t *pads_hi, braid_pad_mode mode,
                       double value);

/* ONNX MaxPool / AveragePool over x [N, C, D1, ..., Dk], k = 1..3 spatial
 * axes; entry i of each array is for spatial axis i (entries past k are
 * ignored). Output dim i: (Di + lo + hi - dilation·(kernel - 1) - 1) /
 * stride + 1, rounded down, or up with ceil_mode (a window that would start
 * in the high padding is dropped, as in ONNX and PyTorch). Windows read
 * padding as absent: max ignores it, average divides by the elements read,
 * or with count_include_pad by the window's positions inside the padded
 * input. Max takes any number dtype, average a float one. */
typedef struct braid_pool_params {
    int64_t kernel[3];       /* window size per spatial axis (>= 1) */
    int64_t strides[3];      /* >= 1; 0 means 1 */
    int64_t dilations[3];    /* >= 1; 0 means 1 */
    int64_t pads_lo[3];      /* padding before each axis (>= 0) */
    int64_t pads_hi[3];      /* padding after each axis (>= 0) */
    bool ceil_mode;          /* round the output size up */
    bool count_include_pad;  /* average: padding counts in the divisor */
} braid_pool_params;
braid_tensor braid_max_pool(braid_graph *g, braid_tensor x,
                            const braid_pool_params *p);
braid_tensor braid_avg_pool(braid_graph *g, braid_tensor x,
                            const braid_pool_params *p);
/* ONNX Resize (static scales or sizes) over the last three axes at most:
 * leading axes keep their size. sizes (NULL: floor(in · scale)) and scales
 * (NULL: out / in) have one entry per axis of x; with both, the sizes set
 * the shape and the scales the coordinates, as ONNX does. An output
 * coordinate x maps to the input coordinate x_in by coord: half_pixel
 * (x + 0.5) / scale - 0.5; pytorch_half_pixel the same, but 0 when the
 * output axis has one element; align_corners x · (in - 1) / (out - 1) (0
 * when out is 1); asymmetric x / scale. NEAREST reads x_in rounded by
 * `nearest` (clamped to the axis); LINEAR interpolates between the two
 * neighbours of x_in clamped to [0, in - 1] on every resized axis
 * (bilinear, trilinear). Float dtypes; computed in float64. */
typedef enum braid_resize_mode {
    BRAID_RESIZE_NEAREST,
    BRAID_RESIZE_LINEAR
} braid_resize_mode;
typedef enum braid_resize_coord {
    BRAID_COORD_HALF_PIXEL,
    BRAID_COORD_PYTORCH_HALF_PIXEL,
    BRAID_COORD_ALIGN_CORNERS,
    BRAID_COORD_ASYMMETRIC
} braid_resize_coord;
typedef enum braid_resize_nearest {
    BRAID_NEAREST_ROUND_PREFER_FLOOR,
    BRAID_NEAREST_ROUND_PREFER_CEIL,
    BRAID_NEAREST_FLOOR,
    BRAID_NEAREST_CEIL
} braid_resize_nearest;
braid_tensor braid_resize(braid_graph *g, braid_tensor x, const int64_t *sizes,
                          const double *scales, braid_resize_mode mode,
                          braid_resize_coord coord,
                          braid_resize_nearest nearest);

/* ONNX GlobalMaxPool / GlobalAveragePool: x [N, C, spatial...] (rank >= 3)
 * → [N, C, 1, ...]; one reduce_max / mean over the spatial axes. */
braid_tensor braid_global_max_pool(braid_graph *g, braid_tensor x);
braid_tensor braid_global_avg_pool(braid_graph *g, braid_tensor x);

/* ---- reverse-mode autodiff (docs/training.md) ---------------------------
 *
 * Adds to g the gradient of the scalar loss (a float tensor of one
 * element, any rank) with respect to each of wrt[0..n): grads_out[i] has
 * wrt[i]'s shape and dtype and is an ordinary node of g (fused, placed
 * and planned like the rest; mark it with braid_output to read it). A wrt
 * tensor the loss does not depend on gets a zero gradient (a fill). The
 * gradient nodes are appended after every existing node; nothing already
 * in g changes. Comparisons, floor and ceil pass a zero gradient; any
 * other op without a gradient rule on a path from a wrt tensor to the
 * loss is BRAID_ERR_UNSUPPORTED naming the node. Errors are recorded on
 * the graph like a builder call's and returned; grads_out[] are then
 * invalid. */
braid_status braid_grad(braid_graph *g, braid_tensor loss, size_t n,
                        const braid_tensor *wrt, braid_tensor *grads_out);

/* ---- outputs, names, placement hints ------------------------------------ */

/* Mark t as a graph output called name (unique among outputs). */
braid_status braid_output(braid_graph *g, const char *name, braid_tensor t);
/* A name for the node (shown in dumps and errors). */
braid_status braid_set_name(braid_graph *g, braid_tensor t, const char *name);
/* Placement hint: "cpu" or "cuda:N" (0 <= N < 64, no leading zeros: the
 * names braid_compile_options.devices lists). Recorded now; the placement
 * pass of the compiler honours it. device NULL removes the hint. */
braid_status braid_set_device(braid_graph *g, braid_tensor t,
                              const char *device);

/* ---- text format (.graph) ----------------------------------------------- */

/* The graph as text (docs/graph-format.md). *text is NUL-terminated,
 * allocated with malloc; free it with free(). */
braid_status braid_graph_print(const braid_graph *g, char **text,
                               size_t *len);
/* The text written to path like braid_plan_save writes a plan file. */
braid_status braid_graph_write_file(const braid_graph *g, const char *path);
/* Parse text (len bytes, need not be NUL-terminated). filename is used in
 * messages ("file:line:col: ..."); may be NULL. Returns a graph whose status
 * tells whether parsing succeeded (NULL only when out of memory). */
braid_graph *braid_graph_parse(const char *text, size_t len,
                               const char *filename,
                               const braid_graph_options *opts);
braid_graph *braid_graph_load(const char *path,
                              const braid_graph_options *opts);

/* ---- compile, plan, execute --------------------------------------------- */

typedef struct braid_plan braid_plan;
typedef struct braid_exec braid_exec;

/* What the placement cost model believes of a device (sustained rates).
 * Defaults per device kind are in docs/placement.md. */
typedef struct braid_device_profile {
    double flops[BRAID_DTYPE_COUNT_]; /* matmul FLOP/s per dtype */
    double elementwise_flops;         /* elementwise FLOP/s (f32) */
    double mem_bytes_per_s;           /* memory bandwidth, read + write */
    double h2d_bytes_per_s;           /* host → device (0 for the cpu) */
    double d2h_bytes_per_s;           /* device → host (0 for the cpu) */
    double launch_s;                  /* fixed cost per node */
} braid_device_profile;

/* Limits of the compile options, checked by braid_compile (and by
 * braid_plan_load, so a plan that saves always loads again). */
#define BRAID_MAX_THREADS 1024 /* num_threads */
#define BRAID_MAX_STREAMS 64   /* max_streams */
#define BRAID_MAX_CHUNKS 1024  /* chunks */

/* Optional passes, for braid_compile_options.disable_passes. */
#define BRAID_PASS_SIMPLIFY 1u /* dead code, CSE, folding, identities */
#define BRAID_PASS_FUSE 2u     /* elementwise fusion */
#define BRAID_PASS_CHUNK 4u    /* copy/compute pipelining */
#define BRAID_PASS_REUSE 8u    /* memory reuse (each tensor its own bytes) */
#define BRAID_PASS_STRIDED 16u /* strided views: every slice / permute a
                                  matmul reads is materialised */
#define BRAID_PASS_CHANNELS_LAST                                               \
    32u /* GPU convolutions channels last                                      \
           (TF32, f16, bf16) */

typedef struct braid_compile_options {
    const char *devices;   /* "cpu", "cpu,cuda:0", ...: names as
                              braid_set_device takes them, spaces around
                              each ignored; NULL: the cpu and every GPU
                              present (probed once per process). The cpu
                              is always included (it holds inputs and
                              outputs). A list naming GPUs this machine
                              lacks still compiles (the plan then needs
                              them to run). */
    int num_threads;       /* CPU worker threads, 0..BRAID_MAX_THREADS;
                              0: one per core */
    unsigned disable_passes; /* BRAID_PASS_* bits of passes to skip */
    int max_streams;       /* compute streams per GPU; 0: default (4) */
    int chunks;            /* pipeline chunks: 0 cost model, 1 never, N */
    const braid_device_profile *cpu_profile;  /* NULL: defaults */
    const braid_device_profile *cuda_profile; /* NULL: defaults */
    const char *dump_after; /* print the IR to stderr after this pass
                               ("fuse", ...); NULL: $BRAID_DUMP=after:<pass> */
    bool allow_tf32;       /* f32 matmuls on a GPU may use TF32 tensor
                              cores (10-bit mantissa products, ~1e-3
                              relative error); false: full f32 */
    const char *archs;     /* GPU architectures to build the plan's
                              kernels for ahead of time, as
                              "sm_90,sm_80"; NULL: those of the GPUs
                              present, or sm_90 when there are none;
                              "none": build none (an executor compiles
                              them when created). The plan keeps CUBIN
                              and PTX per architecture and the CUDA
                              source (docs/plan-format.md) */
    int shards;            /* batch sharding (docs/multi-gpu.md): > 1
                              replicates the graph over this many GPUs
                              (the first GPUs listed in devices), splits
                              the inputs named in shard_inputs along dim 0
                              and concatenates the outputs along dim 0;
                              0 or 1: off */
    const char *shard_inputs; /* comma list of input names to split
                                 ("x,labels"); NULL with shards > 1: every
                                 input whose dim 0 divides by shards */
    size_t fold_generators;   /* random_uniform/random_normal/iota nodes of
                                 at most this many bytes each become
                                 constants at compile time (the same bits:
                                 the generators are counter-based), so runs
                                 stop regenerating weights; the plan (and a
                                 plan file) grows by those bytes. 0: off
                                 (the default). docs/simplify.md */
} braid_compile_options;

void braid_compile_options_init(braid_compile_options *o);

/* Compiles g (which must have status OK and at least one output) into a
 * plan. opts may be NULL (defaults). The plan does not refer to g. */
braid_status braid_compile(const braid_graph *g,
                           const braid_compile_options *opts,
                           braid_plan **plan);
void braid_plan_free(braid_plan *p);
/* Human-readable summary: each scheduled node, its device, its bytes. */
braid_status braid_plan_print(const braid_plan *p, FILE *out);

/* An executor holds the buffers and threads to run p; p must outlive it.
 * Many executors may share one plan; one executor runs one call at a time
 * (a concurrent braid_run, braid_run_async or braid_wait on the same
 * executor is refused with BRAID_ERR_INVALID_ARGUMENT). */
braid_status braid_exec_new(const braid_plan *p, braid_exec **exec);
void braid_exec_free(braid_exec *e);

/* ---- plans per input shape (docs/architecture.md) ----------------------- */

/* A graph's shapes are fixed when it is built, so a serving loop that sees
 * a handful of batch sizes needs one plan per size. A plan cache builds,
 * compiles and makes an executor for a size the first time it is asked
 * for, and hands back the same executor afterwards: compile and executor
 * cost are paid once per size.
 *
 * The trade-off, against re-specializing a compiled plan in place: a
 * cache needs the caller's builder (braid infers no symbolic dims, and
 * reshape, slice, fill and constants carry concrete shapes, so a plan
 * cannot be re-inferred for a new batch), and holds one plan and one
 * executor (arenas included) per size it keeps; in return each size gets
 * a plan optimized for exactly its shapes (fusion, placement, chunking
 * and memory are chosen per size) and nothing symbolic reaches the
 * passes. `capacity` bounds the memory: past it the least recently used
 * size is dropped (its executor freed) and rebuilt if asked for again. */
typedef struct braid_plan_cache braid_plan_cache;

/* Builds the graph for the shape key key[0..nkey) (e.g. {batch}, or every
 * input's dims in turn: the caller's convention); returns a new graph (the
 * cache frees it after compiling) or NULL. */
typedef braid_graph *(*braid_graph_builder)(void *user, const int64_t *key,
                                            uint32_t nkey);

#define BRAID_CACHE_KEY_MAX 32 /* longest shape key */

/* opts (may be NULL) and the strings and profiles it points to must
 * outlive the cache; capacity ≥ 1 plans are kept. */
braid_status braid_plan_cache_new(braid_graph_builder build, void *user,
                                  const braid_compile_options *opts,
                                  uint32_t capacity, braid_plan_cache **cache);
/* The executor (and, when plan is not NULL, its plan) for shape key
 * key[0..nkey), built, compiled and created on the first request. Both
 * belong to the cache and stay valid until a later call of this function
 * drops them (at most capacity - 1 other keys asked for since) or the
 * cache is freed. One caller at a time. */
braid_status braid_plan_cache_get(braid_plan_cache *c, const int64_t *key,
                                  uint32_t nkey, braid_exec **exec,
                                  const braid_plan **plan);
/* Requests answered from the cache (hits) and by compiling (misses), and
 * plans held now. Any pointer may be NULL. */
void braid_plan_cache_stats(const braid_plan_cache *c, uint64_t *hits,
                            uint64_t *misses, uint32_t *plans);
void braid_plan_cache_free(braid_plan_cache *c);

/* Caller buffers bound by tensor name: dense, C order, the tensor's dtype
 * (bool: one byte, 0 or 1).
 *
 * Where the bytes may live (plans with GPU nodes, CUDA builds; the kind is
 * asked of cudaPointerGetAttributes on every run, so it may change from
 * run to run):
 *   - pageable host memory (malloc, the stack): always allowed; copies to
 *     and from GPUs are staged through the executor's pinned buffers.
 *   - pinned host memory (cudaHostAlloc, cudaHostRegister): always
 *     allowed; copies to and from GPUs are one DMA each.
 *   - device memory (cudaMalloc, managed memory):
 *       input: allowed when only copies to a GPU read it (each becomes a
 *         device-to-device copy, peer-to-peer when the buffer is on
 *         another GPU). When a node placed on the cpu reads the input,
 *         braid_run / braid_run_async fail with BRAID_ERR_INVALID_ARGUMENT
 *         naming the input, its GPU and that node, and nothing is run or
 *         written;
 *       output: always allowed. A copy from a GPU writes it directly
 *         (cudaMemcpyAsync); an output computed on the cpu (or also read
 *         by a cpu node, or an input returned as an output) is computed in
 *         host memory and copied there with cudaMemcpy when the run ends.
 *     A run binding device memory does not replay the executor's CUDA
 *     graph (docs/cuda.md); its results are the same.
 * Plans without GPU nodes, and builds without CUDA, read and write every
 * binding with the host: bind host memory there. */
typedef struct braid_input_binding {
    const char *name;
    const void *data; /* host memory, or device memory read only by copies
                         to a GPU (above) */
    size_t bytes; /* must equal numel × dtype size */
} braid_input_binding;

typedef struct braid_output_binding {
    const char *name;
    void *data; /* host or device memory (above) */
    size_t bytes; /* must equal numel × dtype size */
} braid_output_binding;

/* Runs the plan once. Every graph input must be bound; any subset of the
 * outputs may be requested. Returns when the outputs are written. */
braid_status braid_run(braid_exec *e, const braid_input_binding *inputs,
                       size_t ninputs, const braid_output_binding *outputs,
                       size_t noutputs);

/* Starts a run and returns without waiting for it; braid_wait completes
 * it. braid_run(e, ...) is braid_run_async(e, ...) followed by
 * braid_wait(e).
 *
 * Contract:
 *   - Until braid_wait returns, the bound input buffers must stay valid
 *     and unmodified, and the output buffers valid and untouched (neither
 *     read nor written by the caller): the run may read inputs and write
 *     outputs until then. The binding arrays themselves and the name
 *     strings may be reused as soon as braid_run_async returns.
 *   - One outstanding run per executor: a second braid_run_async or a
 *     braid_run before braid_wait returns BRAID_ERR_INVALID_ARGUMENT and
 *     leaves the outstanding run as it was.
 *   - braid_run_async returns an error only when the run could not start
 *     (the argument and binding errors of braid_run, or the above); then
 *     nothing is outstanding. Once it returned BRAID_OK, errors of the
 *     run itself (a failing CUDA call, for instance) are returned by
 *     braid_wait, with their message in braid_last_error() of the thread
 *     calling braid_wait (which may be another thread than the one that
 *     started the run, as long as the calls do not overlap).
 *   - braid_wait without an outstanding run (never started, or already
 *     waited for) returns BRAID_OK at once.
 *   - braid_exec_free waits for an outstanding run first.
 * How much runs before braid_run_async returns: plans run on the CPU
 * only run entirely inside braid_run_async (braid_wait then only returns
 * the status). Plans with GPU nodes return once every GPU node has been
 * issued to its stream and every CPU node has run, without waiting for
 * the GPUs: so a plan whose CPU nodes consume GPU results waits for those
 * results inside braid_run_async, while a plan whose CPU part precedes
 * its GPU part (or has none) returns while the GPUs work. braid_wait
 * waits for the GPUs, finishes the device-to-host copies into pageable
 * memory and copies the outputs that were not computed in place. */
braid_status braid_run_async(braid_exec *e, const braid_input_binding *inputs,
                             size_t ninputs,
                             const braid_output_binding *outputs,
                             size_t noutputs);
braid_status braid_wait(braid_exec *e);

/* The reference evaluator: naive, float64 arithmetic for float dtypes,
 * results rounded to each node's dtype. The oracle of braid's tests. Same
 * binding rules as braid_run. Large nodes run their loops on one thread
 * per core; every element is computed by the same code whatever the
 * split, so the results do not depend on the thread count. */
braid_status braid_reference_run(const braid_graph *g,
                                 const braid_input_binding *inputs,
                                 size_t ninputs,
                                 const braid_output_binding *outputs,
                                 size_t noutputs);

/* Options of braid_reference_run_with. */
typedef struct braid_reference_options {
    int num_threads; /* threads for the loops: 0 one per core (the
                        default), 1 the caller alone */
    void (*progress)(void *ctx, double done); /* called after each node
                        with the fraction of the estimated work done
                        (0..1], from the calling thread; NULL: none */
    void *progress_ctx;                       /* passed to progress */
} braid_reference_options;

void braid_reference_options_init(braid_reference_options *o);
/* braid_reference_run with options (opts NULL: the defaults). */
braid_status braid_reference_run_with(const braid_graph *g,
                                      const braid_input_binding *inputs,
                                      size_t ninputs,
                                      const braid_output_binding *outputs,
                                      size_t noutputs,
                                      const braid_reference_options *opts);

/* Size of device-name fields ("cpu", "cuda:12", NUL included). */
#define BRAID_DEVICE_NAME_MAX 16

/* ---- plan files (docs/plan-format.md) ------------------------------------ */

/* Writes p to path: a temporary file in the same folder
 * ("<path>.braid-tmp.<pid>.<n>"), flushed to disk, then renamed over path,
 * so an interrupted save never leaves a half written file nor destroys an
 * old one; temporaries left by a killed save are removed by the next save
 * to path. A file replaced keeps its mode (a new one gets 0666 less the
 * umask); a symbolic link is followed and what it points at replaced; a
 * character device or FIFO (/dev/null, a named pipe) is written in place,
 * never replaced; a directory, block device, socket or link to nothing is
 * refused. BRAID_ERR_IO naming the path and the reason when writing
 * fails. braid_graph_write_file, braid_profile_write_trace and the CLI's
 * outputs are written the same way (docs/cli.md, "Output files"). */
braid_status braid_plan_save(const braid_plan *p, const char *path);
/* The same bytes in memory: *data (free with free()) of *size bytes. */
braid_status braid_plan_save_memory(const braid_plan *p, void **data,
                                    size_t *size);

typedef struct braid_load_options {
    bool cpu_fallback; /* a plan that needs a GPU this machine lacks is
                          re-placed on the CPU (compiled again, for
                          "cpu", from the graph the file embeds) instead
                          of failing with BRAID_ERR_DEVICE */
    int num_threads;   /* CPU worker threads; -1: as stored in the file;
                          0: one per core; at most BRAID_MAX_THREADS */
} braid_load_options;

void braid_load_options_init(braid_load_options *o); /* num_threads -1 */

/* Loads a plan saved by braid_plan_save. opts may be NULL (defaults).
 * Every count, id, offset, size, dimension and string of the file is
 * validated before use; a truncated, corrupt or crafted file returns
 * BRAID_ERR_PARSE (or BRAID_ERR_UNSUPPORTED for a newer major version)
 * with a message naming the section and field, and *plan NULL. A plan's
 * GPU kernels are taken from the stored CUBIN of the present GPU's
 * architecture (no NVRTC), else its PTX, else compiled from the stored
 * source when an executor is created. */
braid_status braid_plan_load(const char *path, const braid_load_options *opts,
                             braid_plan **plan);
/* The same from size bytes at data (not referenced after return). */
braid_status braid_plan_load_memory(const void *data, size_t size,
                                    const braid_load_options *opts,
                                    braid_plan **plan);

/* The graph p was compiled from (as the user built it, before any pass),
 * owned by p: what `braid run --check` compares against and what a
 * CPU fallback recompiles. Never NULL for a valid plan. */
const braid_graph *braid_plan_graph(const braid_plan *p);

/* ---- compile report ------------------------------------------------------ */

#define BRAID_REPORT_MAX_PASSES 16

/* What braid_compile (or braid_plan_load) spent its time on. */
typedef struct braid_compile_report {
    uint32_t npasses;                           /* passes that ran */
    const char *pass_name[BRAID_REPORT_MAX_PASSES]; /* "verify", "fuse", ...
                                                       (static strings) */
    double pass_ms[BRAID_REPORT_MAX_PASSES];    /* wall time of each */
    uint32_t kernels;          /* generated GPU kernels in the plan */
    uint32_t archs;            /* architectures kernels were built for */
    uint32_t modules_compiled; /* modules NVRTC compiled (one per arch) */
    uint32_t modules_cached;   /* modules taken from the kernel caches */
    double nvrtc_ms;           /* wall time inside NVRTC */
    double kernels_ms;         /* codegen + NVRTC + cache, in all */
    double total_ms;           /* braid_compile (or load) in all */
    bool loaded;               /* the plan came from a plan file: no pass
                                  ran; total_ms is the load time */
    uint64_t folded_bytes;     /* generator results made into constants at
                                  compile time (fold_generators) */
} braid_compile_report;

/* Fills *out with p's report; BRAID_ERR_INVALID_ARGUMENT for NULL. */
braid_status braid_plan_compile_report(const braid_plan *p,
                                       braid_compile_report *out);
/* Prints it as text (what `braid compile --report` shows). */
braid_status braid_compile_report_print(const braid_compile_report *r,
                                        FILE *out);

/* ---- profiler (docs/profiler.md) ------------------------------------------- */

/* Per-node timing, off by default. While on, every node an executor runs
 * is timed: CUDA events around GPU nodes on their streams, the monotonic
 * clock around CPU nodes (and each CPU worker's share of them). The cost
 * when off is one branch per node. Turning it on or off between runs is
 * allowed; a CUDA-graph replay is not used while profiling (each node
 * must be timed). */
braid_status braid_exec_set_profiling(braid_exec *e, bool on);

#define BRAID_PROFILE_NAME_MAX 64

/* Aggregate figures of one node over the runs profiled. */
typedef struct braid_profile_node {
    uint32_t node;                      /* plan node id */
    char name[BRAID_PROFILE_NAME_MAX];  /* its name, or "%<id>" */
    char op[24];                        /* "matmul", "fused", "copy h2d" */
    char device[BRAID_DEVICE_NAME_MAX]; /* where it ran */
    uint32_t track;                     /* track it ran on (its queue) */
    uint64_t count;                     /* runs timed */
    double total_ms, min_ms, max_ms;    /* over those runs */
    uint64_t bytes;                     /* bytes read + written per run */
    double flops;                       /* floating-point ops per run (0
                                           for copies and data movement) */
} braid_profile_node;

/* A timeline track: a CUDA stream, a copy direction, a CPU worker. */
typedef struct braid_profile_track {
    char name[40]; /* "cpu", "cpu worker 2", "cuda:0 compute 1",
                      "cuda:0 h2d", "cuda:0 d2h" */
} braid_profile_track;

/* One node's execution in the last run profiled (times from its start). */
typedef struct braid_profile_span {
    uint32_t node;   /* plan node id (index into nothing: look it up in
                        braid_profile.nodes by .node) */
    uint32_t track;  /* index into braid_profile.tracks */
    double start_ms; /* from the start of the run */
    double end_ms;
} braid_profile_span;

typedef struct braid_profile {
    uint64_t runs;                 /* runs profiled since enabled/reset */
    braid_profile_node *nodes;     /* nodes that did work, by total_ms
                                      descending */
    uint32_t nnodes;
    braid_profile_track *tracks;
    uint32_t ntracks;
    braid_profile_span *spans;     /* the last run's timeline */
    uint32_t nspans;
    double wall_ms;                /* the last run's wall time */
    double busy_ms;                /* sum over tracks of the time busy in
                                      the last run (overlapping spans of
                                      one track counted once) */
    double overlap;                /* busy_ms / wall_ms (> 1: tracks ran
                                      at once) */
} braid_profile;

/* A snapshot of e's figures (after braid_run, or braid_wait of an async
 * run). BRAID_ERR_INVALID_ARGUMENT when profiling was never turned on. */
braid_status braid_exec_profile(braid_exec *e, braid_profile **out);
void braid_profile_free(braid_profile *p);
/* Forgets the figures gathered so far. */
braid_status braid_exec_profile_reset(braid_exec *e);
/* The table `braid run --profile` prints: per node, then per op kind:
 * count, total, min, max, avg (ms), device, track, bytes, GB/s or
 * GFLOP/s; sorted by total time. */
braid_status braid_profile_print(const braid_profile *p, FILE *out);
/* The last run's timeline as Chrome trace-event JSON (Perfetto,
 * chrome://tracing): one thread per track, one complete event per span
 * named after its node. Written like braid_plan_save (temporary file +
 * rename, modes kept, links followed, devices and FIFOs in place). */
braid_status braid_profile_write_trace(const braid_profile *p,
                                       const char *path);

/* ---- devices ------------------------------------------------------------- */

/* Host memory for inputs and outputs that move to and from GPUs: page-
 * locked (pinned) when a GPU is present, so a plan's copies DMA straight
 * from it at full PCIe speed (plain malloc memory is staged through
 * braid's own pinned buffers, which is fast too but uses CPU time); plain
 * 64-byte aligned memory otherwise. NULL when out of memory (message in
 * braid_last_error()). Free only with braid_host_free (NULL is fine). */
void *braid_host_alloc(size_t bytes);
void braid_host_free(void *ptr);

/* Memory on CUDA device `device` (cudaMalloc), for binding inputs that
 * are already on the GPU and outputs that stay there (docs/cuda.md,
 * "Device memory as bindings"; `braid run --no-transfers`). NULL with a
 * message when there is no such device or no memory. Free only with
 * braid_device_free (NULL is fine). */
void *braid_device_alloc(int device, size_t bytes);
void braid_device_free(void *ptr);
/* Copies bytes between any two of host memory and device memory
 * (cudaMemcpy with cudaMemcpyDefault; plain memcpy without CUDA); returns
 * when the bytes are at dst, so a braid_run after it reads them. */
braid_status braid_memcpy(void *dst, const void *src, size_t bytes);

/* Number of usable CUDA devices (0 without toolkit, driver or GPU). The
 * reason there are none, if any, is in braid_cuda_status(). */
int braid_cuda_device_count(void);
const char *braid_cuda_status(void);
/* cuDNN, which runs the conv ops on a GPU, is loaded at run time (dlopen
 * "libcudnn.so.9", then "libcudnn.so"; $BRAID_CUDNN_LIBRARY overrides;
 * BRAID_CONV=braid makes executors use braid's own kernel instead): its
 * version as cudnnGetVersion says it (90100 for 9.1.0), 0 when it cannot
 * be loaded; and in words, "cuDNN 9.1.0 (libcudnn.so.9)" or why not. */
int braid_cudnn_version(void);
const char *braid_cudnn_status(void);

/* Destroys the CUDA resources braid keeps for the next executor: streams,
 * events, cuBLAS / cuBLASLt handles with their device workspaces, pinned
 * staging buffers. An executor takes these from a per-process pool when
 * it is created and gives them back when it is freed, so creating the
 * second executor of a plan is cheap; without this call they live until
 * the process exits. Executors alive keep theirs. Thread-safe; a no-op
 * without CUDA. */
void braid_cuda_release_cached(void);

/* ---- communicators for several processes (docs/multi-gpu.md) ------------ */

/* An NCCL communicator for one rank of a multi-process job. braid loads
 * NCCL at run time (dlopen "libnccl.so.2"; $BRAID_NCCL_LIBRARY overrides),
 * so these return BRAID_ERR_UNSUPPORTED when NCCL cannot be loaded. */
typedef struct braid_comm braid_comm;

#define BRAID_COMM_ID_BYTES 128
#define BRAID_COMM_ID_HEX (2 * BRAID_COMM_ID_BYTES + 1)

/* A fresh unique id (rank 0 makes it and hands it to the others) as hex
 * text, NUL-terminated, in hex (BRAID_COMM_ID_HEX bytes). */
braid_status braid_comm_unique_id(char *hex, size_t size);
/* Rank `rank` of nranks on CUDA device `device`, joining the job named by
 * hex (from braid_comm_unique_id; NULL: read $BRAID_NCCL_ID, or the file
 * named by $BRAID_NCCL_ID_FILE). Blocks until every rank has joined (NCCL
 * semantics). */
braid_status braid_comm_init_rank(int nranks, int rank, int device,
                                  const char *hex, braid_comm **comm);
void braid_comm_free(braid_comm *comm); /* NULL is fine */
/* Gives the executor the communicator its rank collectives run on
 * (braid_rank_collective). comm must outlive e's runs; NULL detaches. */
braid_status braid_exec_set_comm(braid_exec *e, braid_comm *comm);

/* ---- DOT and plan summary ------------------------------------------------- */

/* Writes g to out as a Graphviz DOT digraph: one node per graph node,
 * labelled with its id, op, type, name and device hint; an edge from each
 * input to its user; inputs drawn as houses, outputs with a double border
 * and their output names. g must have status OK. Returns BRAID_ERR_IO when
 * writing to out fails. Calls from several threads are serialised
 * (libcgraph, which builds the DOT, keeps global state). */
braid_status braid_graph_to_dot(const braid_graph *g, FILE *out);

/* Writes the compiled plan p to out as a DOT digraph (docs/cli.md, "braid
 * dot"): nodes filled with their device's colour (legend in the cluster
 * "cluster_legend"); one cluster "cluster_q<i>" per queue that runs nodes,
 * labelled like "cpu", "cuda:0 compute 1", "cuda:0 h2d"; copy nodes as cds
 * shapes labelled with direction and bytes; fused nodes as records listing
 * their program's instructions; every node's memory place (arena index,
 * offset and size, or input / constant / view of %base at offset); events
 * as dashed red edges (a data edge an event synchronises is itself drawn
 * dashed), reuse events as dotted orange ones; chunk nodes bold with
 * "[chunk]". Every object carries a Graphviz "class" attribute (input,
 * node, copy, fused, chunk, output, data, event, reuse-event, queue,
 * legend) for tools. The same plan always gives the same text. */
braid_status braid_plan_to_dot(const braid_plan *p, FILE *out);

/* Counts describing a compiled plan (braid info prints them). */
typedef struct braid_plan_summary {
    uint32_t devices;           /* devices the plan was compiled for
                                   (braid_plan_device_get 0..devices-1) */
    uint32_t nodes;             /* nodes the plan runs, compiler-made copy,
                                   fused and chunk nodes included */
    uint32_t fused_kernels;     /* fused nodes: one kernel each */
    uint32_t copies;            /* copy nodes between devices */
    uint64_t copy_bytes;        /* bytes those copies move per run */
    uint32_t chunk_nodes;       /* nodes made by the chunking pass */
    uint32_t queues;            /* in-order queues: the CPU queue plus every
                                   GPU stream (compute and copy) */
    uint32_t events;            /* cross-queue synchronisations, reuse
                                   events included */
    uint32_t reuse_events;      /* events added for memory reuse only */
    uint32_t arenas;            /* memory blocks (braid_plan_arena_get
                                   0..arenas-1) */
    uint64_t arena_bytes;       /* sum of all arenas' sizes */
    uint64_t lower_bound_bytes; /* sum of all arenas' lower bounds */
} braid_plan_summary;

/* What the plan does on one of its devices. */
typedef struct braid_plan_device_info {
    char name[BRAID_DEVICE_NAME_MAX]; /* "cpu", "cuda:0" */
    uint32_t nodes;  /* nodes running there (a copy counts on the device it
                        copies to) */
    uint32_t queues; /* queues it owns: the CPU queue, or the GPU's streams */
} braid_plan_device_info;

typedef enum braid_arena_kind {
    BRAID_ARENA_DEVICE = 0, /* the device's memory (host memory for cpu) */
    BRAID_ARENA_PINNED      /* page-locked host memory staging copies */
} braid_arena_kind;

/* One block of memory an executor of the plan allocates. */
typedef struct braid_plan_arena_info {
    char device[BRAID_DEVICE_NAME_MAX]; /* where it lives: "cpu", "cuda:0" */
    braid_arena_kind kind;              /* device memory or pinned staging */
    uint64_t bytes;                     /* size allocated */
    uint64_t lower_bound_bytes;         /* largest total of tensors live in
                                           it at one time: no placement of
                                           them can use less */
} braid_plan_arena_info;

/* Fills *out; BRAID_ERR_INVALID_ARGUMENT for NULL arguments. */
braid_status braid_plan_summary_get(const braid_plan *p,
                                    braid_plan_summary *out);
/* Device i (0 .. summary.devices-1, in the order compiled for) and arena i
 * (0 .. summary.arenas-1); BRAID_ERR_INVALID_ARGUMENT when out of range. */
braid_status braid_plan_device_get(const braid_plan *p, uint32_t i,
                                   braid_plan_device_info *out);
braid_status braid_plan_arena_get(const braid_plan *p, uint32_t i,
                                  braid_plan_arena_info *out);

/* Where a plan came from and the GPU kernels it carries (braid info and
 * braid compile print them). */
typedef struct braid_plan_provenance {
    bool loaded;            /* read from a plan file */
    char braid_version[32]; /* braid that compiled it ("0.1.0"); may hold
                               any bytes when loaded from a file */
    int nvrtc_version;      /* NVRTC that built its kernels (13000), 0 */
    int64_t created;        /* Unix time it was compiled */
    uint32_t kernels;       /* generated GPU kernels in its module */
    size_t source_bytes;    /* bytes of the module's CUDA source; 0: the
                               plan has no generated kernel */
    uint32_t archs;         /* architectures built ahead of time
                               (braid_plan_arch_get 0..archs-1) */
} braid_plan_provenance;

/* The plan's kernel module built for one GPU architecture. */
typedef struct braid_plan_arch_info {
    int sm;             /* compute capability, 10·major + minor (90) */
    size_t cubin_bytes; /* CUBIN for exactly this sm; 0: none */
    size_t ptx_bytes;   /* PTX (JIT for newer GPUs); 0: none */
} braid_plan_arch_info;

/* Fill *out; BRAID_ERR_INVALID_ARGUMENT for NULL arguments or i out of
 * range (architectures in ascending sm). */
braid_status braid_plan_provenance_get(const braid_plan *p,
                                       braid_plan_provenance *out);
braid_status braid_plan_arch_get(const braid_plan *p, uint32_t i,
                                 braid_plan_arch_info *out);

/* Why the compiler put a node on its device (docs/placement.md). */
typedef enum braid_place_reason {
    BRAID_PLACE_ONLY_DEVICE = 0, /* the plan lists the cpu alone */
    BRAID_PLACE_HINT,            /* the node's device hint */
    BRAID_PLACE_HOST_DATA,       /* an input or constant: host memory */
    BRAID_PLACE_FOLLOW,          /* a shape op: goes with its input */
    BRAID_PLACE_GENERATOR,       /* fill/iota/random: where its consumers
                                    are */
    BRAID_PLACE_COST_MODEL,      /* the cheapest device by the cost model */
    BRAID_PLACE_PREFER_GPU,      /* the devices list named no cpu: a GPU
                                    whenever one can run it */
    BRAID_PLACE_COLLECTIVE,      /* a collective: with its own input */
    BRAID_PLACE_CHECKED_CAST     /* no longer given (kept for the numbering):
                                    a range-checked cast from i64 is placed
                                    like any elementwise op (docs/ops.md,
                                    "Integer dtypes") */
} braid_place_reason;

/* The place pass's decision for one node of the optimised graph (after
 * simplify, before copies and fusion). Pointers stay valid while the plan
 * lives. */
typedef struct braid_node_placement {
    uint32_t node;    /* id in the user's graph (braid_plan_graph),
                         or BRAID_INVALID_ID for a node the
                         compiler made */
    const char *op;   /* op name, "matmul" */
    const char *name; /* the node's name (a .graph label), or
                         NULL */
    char device[BRAID_DEVICE_NAME_MAX]; /* where it runs */
    braid_place_reason reason;          /* why */
    const char *why;                    /* the reason in words */
    uint32_t ndevices;                  /* entries in cost_s and transfer_s: the
                                           plan's devices (braid_plan_device_get),
                                           or 0 when no cost was modelled (a hint,
                                           host data, a shape op, one device) */
    const double *cost_s;               /* modelled seconds of the node and the
                                           shape ops following it on each device,
                                           copies it implies included */
    const double *transfer_s;           /* the part of cost_s spent in copies */
} braid_node_placement;

/* Decisions recorded when the plan was compiled: one per node of the
 * graph the place pass saw. 0 for a plan loaded from a file (not stored:
 * compile its graph again to see them). */
uint32_t braid_plan_placement_count(const braid_plan *p);
/* Decision i (0 .. count-1); BRAID_ERR_INVALID_ARGUMENT out of range. */
braid_status braid_plan_placement_get(const braid_plan *p, uint32_t i,
                                      braid_node_placement *out);

/* ---- state across runs: variables, assign, checkpoints, optimizers
 * (issue #15; docs/training.md) -------------------------------------------
 *
 * A variable is a named tensor whose value an executor keeps on its device
 * between runs, initialised when the executor is created. assign(var,
 * value) makes value the variable's value for the next run. Ordering: every
 * read of a variable in a run sees its value from before the run's
 * assigns, whatever the order the builder calls came in; one assign per
 * variable and graph. An assign's result is not a value: it may not be an
 * operand or an output. */

/* How a variable starts. op: BRAID_OP_FILL (every element a),
 * BRAID_OP_RANDOM_UNIFORM (low a, high b, seed), BRAID_OP_RANDOM_NORMAL
 * (mean a, stddev b, seed), both the bits of braid_random_*, or
 * BRAID_OP_CONSTANT (data: numel × dtype size bytes, copied). */
typedef struct braid_init {
    braid_op op;      /* which initializer */
    double a, b;      /* its numbers (above) */
    uint64_t seed;    /* random initializers' seed */
    const void *data; /* BRAID_OP_CONSTANT's bytes */
} braid_init;
braid_init braid_init_fill(double value);
braid_init braid_init_uniform(uint64_t seed, double low, double high);
braid_init braid_init_normal(uint64_t seed, double mean, double stddev);
braid_init braid_init_data(const void *data);

/* A variable called name ([A-Za-z_][A-Za-z0-9_.]*, unique among the
 * graph's variables); its tensor reads the value before this run's
 * assigns. */
braid_tensor braid_variable(braid_graph *g, const char *name,
                            braid_dtype dtype, int rank, const int64_t *dims,
                            braid_init init);
/* value (same dtype and shape as var) becomes var's value after this run. */
braid_tensor braid_assign(braid_graph *g, braid_tensor var,
                          braid_tensor value);

/* Host access to an executor's variables, by name; bytes must be numel ×
 * dtype size. Refused while a run is outstanding. A write is seen by the
 * next run. */
braid_status braid_exec_variable_read(braid_exec *e, const char *name,
                                      void *data, size_t bytes);
braid_status braid_exec_variable_write(braid_exec *e, const char *name,
                                       const void *data, size_t bytes);
/* The executor's variables, in graph order: count, and name/dtype/shape of
 * variable i (the name points into the plan). */
uint32_t braid_exec_variable_count(const braid_exec *e);
braid_status braid_exec_variable_info(const braid_exec *e, uint32_t i,
                                      const char **name, braid_dtype *dtype,
                                      int *rank, int64_t *dims);
/* Checkpoints: every variable to / from a safetensors file (an 8-byte
 * little-endian header length, a JSON header naming each tensor's dtype,
 * shape and byte range, then the raw little-endian bytes). Saving writes a
 * temporary file and renames it. Loading reads every variable of the
 * executor from the file, checking names, dtypes and shapes first: a
 * missing, extra or mismatched tensor is an error naming it, and nothing
 * is changed. */
braid_status braid_exec_save(braid_exec *e, const char *path);
braid_status braid_exec_load(braid_exec *e, const char *path);

/* The reference evaluator with state: variables are bound by name in
 * vars_in (a variable left unbound starts from its initializer); after the
 * run, every variable bound in vars_out receives its value after the
 * run's assigns (its old value when it has none). */
braid_status braid_reference_run_state(
    const braid_graph *g, const braid_input_binding *inputs, size_t ninputs,
    const braid_output_binding *outputs, size_t noutputs,
    const braid_input_binding *vars_in, size_t nvars_in,
    const braid_output_binding *vars_out, size_t nvars_out);

/* Optimizers: elementwise update graphs, one assign per parameter and
 * moment, which the fusion pass turns into one kernel per parameter
 * tensor. params are variables, grads their gradients (same types). The
 * moment (and step) variables are named "<param>.momentum", "<param>.m",
 * "<param>.v", "<prefix>step" and initialised to zero. */
typedef struct braid_sgd_options {
    double lr;           /* learning rate */
    double momentum;     /* 0: plain SGD (no velocity variable) */
    double weight_decay; /* L2 term added to the gradient */
    bool nesterov;       /* Nesterov momentum */
} braid_sgd_options;
braid_status braid_sgd(braid_graph *g, uint32_t n, const braid_tensor *params,
                       const braid_tensor *grads,
                       const braid_sgd_options *opts);

typedef struct braid_adamw_options {
    double lr;           /* learning rate (1e-3) */
    double beta1, beta2; /* moment decay (0.9, 0.999) */
    double eps;          /* denominator guard (1e-8) */
    double weight_decay; /* decoupled: p -= lr·wd·p (0.01) */
    const char *prefix;  /* names the step counter "<prefix>step"; NULL: "" */
} braid_adamw_options;
/* Fills the defaults above. */
void braid_adamw_options_init(braid_adamw_options *o);
braid_status braid_adamw(braid_graph *g, uint32_t n,
                         const braid_tensor *params, const braid_tensor *grads,
                         const braid_adamw_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_BRAID_H */
