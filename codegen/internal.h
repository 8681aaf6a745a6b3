/* codegen/internal.h — pieces shared by the files of codegen/ (prefix bc_).
 *
 * Generation works on a text buffer (bc_buf) and a normalised view of the
 * node being compiled (bc_node): a fused node's program, or a single node
 * turned into a small program, so that elementwise and reduction emitters
 * only ever see programs. */
#ifndef BRAID_CODEGEN_INTERNAL_H
#define BRAID_CODEGEN_INTERNAL_H

#include "codegen/codegen.h"
#include "passes/layout.h"

#include <stdarg.h>

/* The name emitters give a kernel (and prefix its helpers with): module
 * assembly replaces it with "k<node>", or drops the text when an earlier
 * node's kernel is the same code (bc_plan_source shares it). */
#define BC_ENTRY "KNAME"

/* Threads per block of the one-dimensional kernels. */
#define BC_BLOCK 256
/* Largest grid.x; larger work needs bigger per-thread strides. */
#define BC_GRID_X_MAX 2147483647u

/* ---- text ------------------------------------------------------------------
 */

/* A growable NUL-terminated string; `oom` is sticky. */
typedef struct bc_buf {
    char *p;    /* text (NULL until the first append) */
    size_t len; /* bytes used, NUL excluded */
    size_t cap; /* bytes allocated */
    bool oom;   /* an allocation failed: the text is incomplete */
} bc_buf;

void bc_buf_puts(bc_buf *b, const char *s);
void bc_buf_printf(bc_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bc_buf_free(bc_buf *b);

/* ---- types ------------------------------------------------------------------
 */

/* C type a value of dtype t is computed in: float (f32, f16, bf16), double,
 * int (i32, wrapping through unsigned), bool. */
const char *bc_ctype(braid_dtype t);
/* C type t is stored as: float, unsigned short (f16, bf16), double, int,
 * unsigned char (bool). */
const char *bc_stype(braid_dtype t);
/* Writes the expression converting storage expression `e` of dtype t to
 * its compute type. */
void bc_emit_from_storage(bc_buf *b, braid_dtype t, const char *e);
/* The same expression into out (size bytes, always NUL-terminated): for
 * the short operand names kernels pass to their expression function. */
void bc_from_storage_str(braid_dtype t, const char *e, char *out,
                         size_t size);
/* Writes the expression converting compute expression `e` of dtype t to
 * its storage type. */
void bc_emit_to_storage(bc_buf *b, braid_dtype t, const char *e);
/* A literal of dtype t with value v (exact: bit patterns for floats). */
void bc_emit_literal(bc_buf *b, braid_dtype t, double v);

/* ---- the node being generated
 * ------------------------------------------------ */

/* Instructions a single node becomes (loads of its inputs, one op). */
#define BC_SINGLE_INSTR 4

/* A node seen as a program. */
typedef struct bc_node {
    const bp_plan *plan;             /* the plan */
    uint32_t id;                     /* node id */
    const bg_node *n;                /* the node */
    const bp_program *prog;          /* its program (fused) or `own` */
    bp_program own;                  /* a single node's program */
    bp_instr instr[BC_SINGLE_INSTR]; /* own's instructions */
    int64_t numel;                   /* elements of the iteration space */
    bool idx64;                      /* index arithmetic needs 64 bits */
    const char *idx;                 /* "unsigned" or "unsigned long long" */
    char entry[BC_NAME_MAX];         /* base entry name ("k12") */
} bc_node;

/* Fills *c for node id (a program kind of node: fused, elementwise,
 * broadcast, reduce). BRAID_ERR_UNSUPPORTED with a message otherwise. */
braid_status bc_node_init(bc_node *c, const bp_plan *p, uint32_t id);
/* The graph node of the node's input k. */
const bg_node *bc_input(const bc_node *c, uint32_t k);
/* "%12 (fused)" style description for messages and markers. */
const char *bc_node_desc(const bp_plan *p, uint32_t id, char *buf, size_t size);
/* Formats an error naming the node and returns s. */
braid_status bc_fail(const bp_plan *p, uint32_t id, braid_status s,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- index arithmetic
 * --------------------------------------------------------- */

/* One term of an input offset: ((i / div) % mod) * stride, where mod 0
 * means "no modulo" (outermost term). */
typedef struct bc_term {
    int64_t div;    /* divisor of the flat index (≥ 1) */
    int64_t mod;    /* extent of the dim, 0 to skip the modulo */
    int64_t stride; /* element stride in the operand */
} bc_term;

/* Terms mapping a flat index over (rank, dims), dense C order, to the
 * offset of an operand that steps by strides[d] along dim d (0 where it
 * broadcasts). Size-1 dims are dropped and adjacent dims the operand
 * walks contiguously are merged. Returns the number of terms (≤ rank). */
int bc_terms(int rank, const int64_t *dims, const int64_t *strides,
             bc_term *out);
/* Strides of an input of shape (irank, idims), dense, broadcast against
 * (rank, dims) by NumPy rules (right-aligned, 0 along broadcast dims). */
void bc_broadcast_strides(int rank, const int64_t *dims, int irank,
                          const int64_t *idims, int64_t *strides);
/* Writes "(<sum of terms over index expression ix>)" or "0". */
void bc_emit_terms(bc_buf *b, const bc_term *t, int n, const char *ix,
                   const char *idx_type);

/* ---- expressions
 * ----------------------------------------------------------------- */

/* How the expression function receives input k. */
typedef enum bc_operand {
    BC_OPERAND_UNUSED = 0, /* no load reads it */
    BC_OPERAND_VALUE,      /* as a compute-type value parameter f<k> */
    BC_OPERAND_POINTER     /* as a pointer in<k>, loaded by index */
} bc_operand;

/* Emits
 *   static __device__ __forceinline__ <ctype> <fn>(IDX i, <params>)
 * computing instruction `root` of c's program at flat index i of the
 * program's iteration space. Parameters, in input order: `<ctype> f<k>`
 * for VALUE operands, `const <stype> *in<k>` for POINTER ones; then
 * `<ctype> fmm` when mm_instr != BG_NONE (that instruction's value is the
 * parameter: a matmul result), then `bc_check *chk` when the program has a
 * GATHER (the kernel's run check record), then `<ctype> *s<j>` for each
 * STORE instruction j before root, which receives the stored value (the
 * caller writes it to the variable after reading every operand of the
 * position). root_stored: the caller stores the result
 * as root's dtype, which rounds an f16/bf16 root (so it is not rounded
 * twice); otherwise the result is rounded like every instruction. */
void bc_emit_expr_fn(bc_buf *b, const bc_node *c, const char *fn, uint32_t root,
                     const bc_operand *mode, uint32_t mm_instr,
                     bool root_stored);
/* Writes the argument list matching bc_emit_expr_fn's parameters:
 * "i" then per used operand its value expression (values[k]) or "in<k>",
 * then "mm" when mm_instr != BG_NONE. */
void bc_emit_expr_args(bc_buf *b, const bc_node *c, const char *ix,
                       const bc_operand *mode, const char *const *values,
                       uint32_t mm_instr, const char *mm);
/* Whether input k is the data of a GATHER instruction (read at gathered
 * rows: always a pointer, never a value at the output's index). */
bool bc_gather_data(const bc_node *c, uint32_t k);
/* Marks which inputs instructions up to root read (BC_OPERAND_POINTER),
 * skipping loads only the matmul instruction reads. */
void bc_operands_used(const bc_node *c, uint32_t root, uint32_t mm_instr,
                      bc_operand *mode);

/* ---- emitters (one per kernel family)
 * --------------------------------------------- */

/* Each appends its kernel's text, named BC_ENTRY (no marker line), to b
 * and fills k's launches. */
braid_status bc_gen_elementwise(const bc_node *c, bc_buf *b, bc_kernel *k);
braid_status bc_gen_epilogue(const bc_node *c, bc_buf *b, bc_kernel *k);
braid_status bc_gen_reduce(const bc_node *c, bc_buf *b, bc_kernel *k);
braid_status bc_gen_softmax(const bc_node *c, bc_buf *b, bc_kernel *k);
braid_status bc_gen_layer_norm(const bp_plan *p, uint32_t id, bc_buf *b,
                               bc_kernel *k);
braid_status bc_gen_attention(const bp_plan *p, uint32_t id, bc_buf *b,
                              bc_kernel *k); /* codegen/attention.c */
/* max_pool, avg_pool: one thread per output element (codegen/pool.c). */
braid_status bc_gen_pool(const bp_plan *p, uint32_t id, bc_buf *b,
                         bc_kernel *k);
/* A fused POOL program: the pool kernel reading each tap through the
 * prologue's expression (codegen/pool.c). */
braid_status bc_gen_pool_program(const bc_node *c, bc_buf *b, bc_kernel *k);
/* Window kernels (pool, resize: one thread per output element of a
 * [planes, out0, out1, out2] space): the signature, the thread's flat
 * index i (returning past numel) and its split into plane, o0, o1, o2 —
 * with inner > 1 (a channels-last pool: [N, out0, out1, out2, inner])
 * into the image `plane`, o0, o1, o2 and the channel cc; and the 1-D
 * launch of numel threads (UNSUPPORTED past the grid). */
void bc_emit_window_head(bc_buf *b, const bp_plan *p, uint32_t id,
                         int64_t numel, const int64_t *out, int64_t inner);
braid_status bc_window_launch(const bp_plan *p, uint32_t id, int64_t numel,
                              bc_kernel *k);
/* resize: one thread per output element, tap tables baked in
 * (codegen/resize.c). */
braid_status bc_gen_resize(const bp_plan *p, uint32_t id, bc_buf *b,
                           bc_kernel *k);
braid_status bc_gen_gather(const bp_plan *p, uint32_t id, bc_buf *b,
                           bc_kernel *k);
braid_status bc_gen_axis(const bp_plan *p, uint32_t id, bc_buf *b,
                         bc_kernel *k); /* codegen/axis.c */
braid_status bc_gen_source(const bp_plan *p, uint32_t id, bc_buf *b,
                           bc_kernel *k, bool *rng);
/* conv ops (codegen/conv.c) */
braid_status bc_gen_conv(const bp_plan *p, uint32_t id, bc_buf *b,
                         bc_kernel *k);

/* gather, scatter (codegen/index.c); the kernel takes the run check
 * record (k->run_check). */
braid_status bc_gen_index(const bp_plan *p, uint32_t id, bc_buf *b,
                          bc_kernel *k);
/* A range-checked cast (bg_node_run_check): its own kernel, taking the
 * run check record, never fused (codegen/cast.c). */
braid_status bc_gen_checked_cast(const bp_plan *p, uint32_t id, bc_buf *b,
                                 bc_kernel *k);
/* An elementwise op's CUDA spelling for compute dtype s, "$0" / "$1" the
 * operands (graph/scalar.h's rows); NULL when it has none. */
const char *bc_op_template(braid_op op, braid_dtype s);

/* Writes the module prelude (types, conversions, helpers) to b. */
void bc_emit_prelude(bc_buf *b);
/* Writes graph/rng.c adapted for NVRTC (the random generators). */
void bc_emit_rng(bc_buf *b);
/* True when the build embedded graph/rng.c (BRAID_HAVE_RNG_TEXT). */
bool bc_have_rng(void);
/* Writes the kernel's marker line "// @braid node %12 (fused)" that
 * bc_compile uses to name the node in compile errors. */
void bc_emit_marker(bc_buf *b, const bp_plan *p, uint32_t id);
/* Writes the kernel signature up to and including "{\n":
 *   extern "C" __global__ void __launch_bounds__(threads) <entry>(
 *       <stype(out)> *out, const <stype(in_k)> *in<k>..., [extra]) */
void bc_emit_signature(bc_buf *b, const bp_plan *p, uint32_t id,
                       const char *entry, unsigned threads,
                       const char *extra_decl);

/* ceil(a / b) for positive b. */
static inline int64_t bc_cdiv(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/* The least power of two >= n, at most 1024 (a block's threads): the
 * threads of a row group in the row kernels (softmax, layer_norm). */
static inline int bc_pow2_at_least(int64_t n) {
    int p = 1;
    while (p < n && p < 1024)
        p *= 2;
    return p;
}

#endif /* BRAID_CODEGEN_INTERNAL_H */
