/* passes/program.h — fused programs: the small expression IR a
 * BRAID_OP_FUSED node computes (prefix bp_), and its one checker.
 *
 * The fuse pass (passes/fuse_program.c) writes programs; the code generator
 * (codegen/), the CPU interpreter (runtime/cpu/cpu_fused*.c), the plan
 * verifier and plan files read them. Every reader relies on the rules
 * bp_program_check states (listed in docs/fusion.md, "Programs") and on
 * nothing else, so a program from anywhere — a pass, a hand-built test
 * plan, a crafted plan file — is checked once by the same function before
 * any consumer indexes with it. */
#ifndef BRAID_PASSES_PROGRAM_H
#define BRAID_PASSES_PROGRAM_H

#include "graph/graph.h"

/* The op of a program instruction: a graph op of kind elementwise (the
 * instruction computes it from its operands), a reduction (last instruction
 * of a REDUCE program only), BRAID_OP_MATMUL (MATMUL programs only, as
 * instruction 2: its operands are instructions 0 and 1, LOADs of the fused
 * node's inputs 0 and 1, which it reads whole as matrices instead of
 * broadcasting them), or one of the two below. */
#define BP_INSTR_LOAD ((braid_op)(BRAID_OP_COUNT_ + 0))  /* read input k */
#define BP_INSTR_CONST ((braid_op)(BRAID_OP_COUNT_ + 1)) /* a scalar value */
/* A gather along an axis (ONNX Gather) inside a program: the value at
 * space position c is input[c[0..axis), w, c[rank-t..rank)] of the fused
 * node's input `input` (the data, rank r, t = r - axis - 1 trailing dims),
 * w = arg[0]'s i32 value at c, normalised (negative counts from the end);
 * the positions c[axis..rank-t) are the indices' own, in C order. An index
 * out of range gives 0 and a run check record naming the instruction
 * (BC_CHECK_INDEX_AT). ELEMENTWISE programs only, whose flat positions are
 * the space's C order. */
#define BP_INSTR_GATHER ((braid_op)(BRAID_OP_COUNT_ + 2))
/* A side store (ELEMENTWISE programs only): writes the value of arg[0] at
 * each position of the space into the bytes of the fused node's input
 * `input`, a variable of exactly the space's shape and arg[0]'s dtype, at
 * the same position. It has no value of its own: no instruction reads it,
 * and it is never the last. Every read of the program (every load of any
 * input, the store's target included) happens before the stores of the
 * same position, so the target's loads see its value from before the run
 * (docs/fusion.md, "Side stores"). The fuse pass makes them for an
 * optimizer's moments: the new moment is computed once, stored into its
 * variable and used by the parameter's update in the same kernel; the
 * moment's assign then does no work (passes/memory_views.c). */
#define BP_INSTR_STORE ((braid_op)(BRAID_OP_COUNT_ + 3))

/* Longest program any consumer accepts. The fuse pass stays far below it
 * (4 · BP_FUSE_MAX_MEMBERS + 4); the CPU interpreter sizes its per-
 * instruction tables by it, and a fused node has at most this many
 * inputs. */
#define BP_PROGRAM_MAX_INSTR 256

typedef struct bp_instr {
    braid_op op;       /* graph op, BP_INSTR_LOAD or BP_INSTR_CONST */
    braid_dtype dtype; /* the value's dtype (what the graph node had) */
    uint32_t arg[3];   /* operand instruction indices (< this index); entries
                          beyond the op's arity are never read */
    uint32_t input;    /* LOAD, GATHER, STORE: index into the fused node's
                          inputs (GATHER: the data; STORE: the variable
                          written); never read for other ops */
    uint32_t axis;     /* GATHER: the data's gathered axis; 0 otherwise */
    double value;      /* CONST: the value (already rounded to dtype) */
    uint32_t source;   /* graph node this came from (for dumps / errors),
                          BG_NONE for LOADs */
} bp_instr;

typedef enum bp_program_kind {
    BP_PROGRAM_ELEMENTWISE = 0, /* out[i] = expr(inputs broadcast to out) */
    BP_PROGRAM_REDUCE,          /* out = reduce(expr over the reduce
                                   input's shape); last instr reduces */
    BP_PROGRAM_MATMUL,          /* out = epilogue(matmul(load, load)) */
    /* 3 was SOFTMAX (softmax is the op BRAID_OP_SOFTMAX now): plan files
       store kinds as numbers, so 3 stays refused */
    BP_PROGRAM_POOL = 4, /* out = pool(expr over the pool's input
                            shape): the prologue evaluated at each
                            tap; last instr max_pool / avg_pool */
    BP_PROGRAM_CONV = 5  /* out = epilogue(conv(load, load[, load])):
                            an ungrouped, channels-first conv whose
                            attributes are `window`; the CPU's
                            (docs/fusion.md, rule 16) */
} bp_program_kind;

/* Program kinds there are (the largest kind + 1). */
#define BP_PROGRAM_KIND_COUNT 6

/* A fused node's expression: instr[ninstr-1] is the result. Loads read the
 * fused node's inputs with NumPy broadcasting against `shape` (the output
 * shape for ELEMENTWISE, the reduction's input shape for REDUCE, the matmul
 * result shape for MATMUL epilogues). */
typedef struct bp_program {
    bp_program_kind kind;         /* see bp_program_kind */
    uint32_t ninstr;              /* entries in instr */
    bp_instr *instr;              /* the instructions; owned */
    uint8_t rank;                 /* rank of the iteration space */
    int64_t dims[BRAID_MAX_RANK]; /* the iteration space (see above) */
    uint8_t axes;                 /* REDUCE: reduced axes of dims;
                                     0 for the other kinds */
    uint32_t flags;               /* REDUCE: BG_KEEPDIMS; MATMUL:
                                     BRAID_TRANSPOSE_A|B; POOL: BG_POOL_*
                                     (graph/window.h); 0 for the other
                                     kinds */
    int64_t window[5][3];         /* POOL, CONV: parameter p (kernel,
                                     stride, dilation, pad_lo, pad_hi) of
                                     spatial axis i < rank - 2, as the pool
                                     or conv node had them; all 0
                                     otherwise */
} bp_program;

/* Where a CONV program's conv instruction is: 2 (LOAD x, LOAD w, CONV), or
 * 3 with a bias (LOAD x, LOAD w, LOAD b, CONV). */
uint32_t bp_program_conv_at(const bp_program *p);

/* The conv a CONV program p of fused node `node` of g computes, as a conv
 * node (*conv: the fused node with op conv, its first two or three inputs,
 * the space's shape and the attributes of p->window). False when p is not
 * a CONV program or that conv is malformed (bp_program_check says why). */
bool bp_program_conv_node(const bp_program *p, const braid_graph *g,
                          uint32_t node, bg_node *conv);

/* Whether p is a program node `node` of g may compute: every rule of
 * docs/fusion.md ("Programs") — structure and sizes, each instruction's op,
 * operands and dtypes as the builder would type them, loads against the
 * node's inputs and the iteration space, and the space, attributes and
 * result against the node. `node` is a fused node, or (for the code
 * generator's single-node programs) an elementwise, broadcast or reduce
 * node whose inputs the loads read. On failure writes the first broken
 * rule to err (n bytes, always NUL-terminated, naming the instruction and
 * field: "instruction 3: operand 1 (7) is not an earlier instruction") and
 * returns false. Never reads outside p, g or the node's inputs. */
bool bp_program_check(const bp_program *p, const braid_graph *g, uint32_t node,
                      char *err, size_t n);

/* "elementwise", "reduce", "matmul", "pool"; "invalid" otherwise (for
 * dumps, DOT and messages). */
const char *bp_program_kind_name(bp_program_kind k);

/* A POOL program's geometry (graph/window.h's view: three spatial axes):
 * its space is the pool's input, out_dims the node's shape. */
struct bg_window;
void bp_program_window(const bp_program *p, const int64_t *out_dims,
                       struct bg_window *w);

/* Whether p holds a GATHER instruction. */
bool bp_program_has_gather(const bp_program *p);

/* Whether p holds a STORE instruction. */
bool bp_program_has_store(const bp_program *p);

/* Whether fused node `node` of g, computing p, stores into variable node
 * var (a STORE whose target input is var). */
bool bp_program_stores_into(const bp_program *p, const braid_graph *g,
                            uint32_t node, uint32_t var);

/* Operands an instruction reads: 0 for LOAD and CONST, 1 for GATHER and
 * STORE, 2 or 3 for CONV (3 when arg[2] is set: the bias), the op's arity
 * otherwise. */
int bp_instr_arity(const bp_instr *in);

#endif /* BRAID_PASSES_PROGRAM_H */
