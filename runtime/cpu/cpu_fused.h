/* runtime/cpu/cpu_fused.h — the CPU tile interpreter for fused nodes (prefix
 * br_fz_ / br_fused_).
 *
 * A fused node's program (passes/plan.h) is evaluated over its iteration
 * space in tiles of at most BR_FZ_TILE_MAX elements, one tile per thread at
 * a time: each instruction computes a whole tile-vector with the typed loops
 * of runtime/cpu/cpu_ew.h, so interpretation costs one dispatch per instruction
 * per tile and the inner loops are the unfused kernels' own. Values live in
 * "slots" of a per-thread stack buffer of BR_FZ_TILE_BYTES, reused as soon
 * as a value is dead, so a tile's temporaries stay in L1/L2; the tile size
 * is the largest power of two that fits them.
 *
 * Values are held in a compute type: f32 for f32/f16/bf16 (f16/bf16 results
 * rounded to their dtype after every instruction, so results match the
 * unfused kernels bit for bit), f64, i32, bool (one byte 0/1). A load reads
 * its input in place when it is contiguous in the tile and already of the
 * compute type; broadcast inputs are gathered through element strides
 * (0 along broadcast dims); scalars and constants, and everything computed
 * from only those, are evaluated once per run.
 *
 * Files: cpu_fused.c (set-up, the tile evaluator, ELEMENTWISE and MATMUL
 * programs, entry points), cpu_fused_ops.c (one instruction over a tile,
 * loads, stores, casts), cpu_fused_reduce.c (REDUCE programs). Programs are
 * validated by bp_program_check (passes/program.c) before any of it runs. */
#ifndef BRAID_RUNTIME_CPU_FUSED_H
#define BRAID_RUNTIME_CPU_FUSED_H

#include "runtime/cpu/cpu_kernels.h"
#include "codegen/codegen.h"

/* Longest program the interpreter runs: any program bp_program_check
 * accepts (the interpreter has no limit of its own). */
#define BR_FZ_MAX_INSTR BP_PROGRAM_MAX_INSTR
/* Largest tile, in elements. */
#define BR_FZ_TILE_MAX 4096
/* Smallest tile: below it, a program has too many live values. */
#define BR_FZ_TILE_MIN 16
/* Slot memory per thread, on its stack. */
#define BR_FZ_TILE_BYTES (48 * 1024)

/* Compute types. */
typedef enum br_fz_ct {
    BR_FZ_F32 = 0, /* float (also f16 and bf16 values) */
    BR_FZ_F64,     /* double */
    BR_FZ_I32,     /* int32_t, arithmetic wrapping */
    BR_FZ_BOOL     /* uint8_t 0/1 */
} br_fz_ct;

/* Where a value's tile comes from. */
typedef enum br_fz_how {
    BR_FZ_SLOT = 0, /* computed or gathered into a slot */
    BR_FZ_DIRECT,   /* read in place from a contiguous input */
    BR_FZ_UNIFORM   /* one value for the whole run, in br_fz.u */
} br_fz_how;

/* A value over one tile: element i at p + i·step elements (step 0 or 1). */
typedef struct br_fz_ref {
    const void *p; /* first element */
    int64_t step;  /* 0 (uniform) or 1 (contiguous) */
} br_fz_ref;

/* What the interpreter decided about one instruction. */
typedef struct br_fz_val {
    uint8_t ct;    /* br_fz_ct of its value */
    uint8_t how;   /* br_fz_how */
    bool round;    /* round results to f16/bf16 (its dtype) */
    uint16_t slot; /* BR_FZ_SLOT: its slot */
} br_fz_val;

/* One fused-node input as loads read it over the tile space. */
typedef struct br_fz_input {
    const char *base;           /* its data */
    braid_dtype t;              /* its dtype */
    bool used;                  /* read by an evaluated LOAD */
    bool dense;                 /* walks the space contiguously */
    bool scalar;                /* one element for every position */
    int64_t st[BRAID_MAX_RANK]; /* element stride per space dim */
} br_fz_input;

/* A uniform value. */
typedef union br_fz_cell {
    float f;   /* BR_FZ_F32 */
    double d;  /* BR_FZ_F64 */
    int32_t i; /* BR_FZ_I32 */
    uint8_t b; /* BR_FZ_BOOL */
} br_fz_cell;

/* A GATHER instruction's geometry over the space (passes/program.h): flat
 * position s reads data row (s / (nidx·inner)) · bound + w, element
 * s % inner, w the index at s; (s / inner) % nidx is the index's position
 * in the indices. */
typedef struct br_fz_gat {
    int64_t bound; /* the data's gathered axis length */
    int64_t nidx;  /* positions of the indices (space dims they span) */
    int64_t inner; /* data elements after the axis */
    bool rows;     /* the index is a load constant along a data row (the
                      pass's programs): no per-element test */
} br_fz_gat;

/* A program ready to evaluate over a tile space: a C-order space of numel
 * positions whose flat index s names one element of every value. Set up
 * once per run in executor scratch, read-only while tiles run. */
typedef struct br_fz {
    const bp_program *prog; /* the program */
    uint32_t first, last;   /* instructions evaluated per tile */
    int rank;               /* the space's dims after collapsing */
    int64_t dims[BRAID_MAX_RANK];
    int64_t numel;                       /* its positions */
    int64_t tile;                        /* positions per tile (power of two) */
    size_t slot_bytes;                   /* bytes per slot */
    uint32_t nslots;                     /* slots a tile needs */
    uint32_t ninputs;                    /* entries in in */
    char *out;                           /* ELEMENTWISE / MATMUL: the output */
    braid_dtype out_t;                   /* its dtype */
    bool out_direct;                     /* the last instruction may write the
                                            output tile itself */
    bool stores;                         /* the program has STOREs (written
                                            after each tile) */
    br_fz_input in[BR_FZ_MAX_INSTR + 1]; /* inputs (+ the MATMUL result) */
    br_fz_val v[BR_FZ_MAX_INSTR];        /* per instruction */
    br_fz_cell u[BR_FZ_MAX_INSTR];       /* uniform values */
    br_fz_gat gat[BR_FZ_MAX_INSTR];      /* GATHER instructions' geometry */
    bc_run_check *check;                 /* the run check record (GATHER) */
    uint32_t id;                         /* the node, for the record */
} br_fz;

/* Per-thread tile memory (on the thread's stack). */
typedef struct br_fz_mem {
    _Alignas(64) unsigned char slots[BR_FZ_TILE_BYTES]; /* value slots */
    br_fz_ref refs[BR_FZ_MAX_INSTR];                    /* each value's tile */
} br_fz_mem;

/* ---- set-up and evaluation (cpu_fused.c) ----------------------------------
 */

/* Sets z up for instructions [first, last] of a->program over its
 * iteration space (prog->dims) visited in the order perm (space dim i is
 * iteration dim perm[i]; NULL: C order), tiles of at most max_tile. For
 * MATMUL programs `first` is the MATMUL instruction, whose value is read
 * from a->out. */
void br_fz_setup(br_fz *z, const br_kernel_args *a, uint32_t first,
                 uint32_t last, const int *perm, int64_t max_tile);
/* Evaluates positions [s, s + m) (m ≤ z->tile): returns the tile of
 * instruction z->last. When dst is not NULL and the last instruction is
 * computed, it is computed into dst (its compute type's layout). */
br_fz_ref br_fz_eval(const br_fz *z, br_fz_mem *mem, int64_t s, int64_t m,
                     void *dst);

/* ---- one instruction, loads, stores (cpu_fused_ops.c) ----------------------
 */

braid_dtype br_fz_storage(br_fz_ct ct); /* the dtype laid out like ct */
size_t br_fz_size(br_fz_ct ct);         /* its element size */
br_fz_ct br_fz_ct_of(braid_dtype t);    /* the compute type of dtype t */
/* Instruction i over n elements into out, operands in refs (by
 * instruction index). out overlaps no operand. */
void br_fz_exec(const br_fz *z, uint32_t i, int64_t n, void *out,
                const br_fz_ref *refs);
/* GATHER instruction i at positions [s, s + m) into out (compute type),
 * its indices in refs; a bad index gives 0 and a run check record. */
void br_fz_gather_rows(const br_fz *z, uint32_t i, int64_t s, int64_t m,
                       void *out, const br_fz_ref *refs);
/* Positions [s, s + m) of input in, as compute type ct, into dst. */
void br_fz_gather(const br_fz *z, const br_fz_input *in, br_fz_ct ct, int64_t s,
                  int64_t m, void *dst);
/* Element 0 of a buffer of dtype t as compute type ct. */
br_fz_cell br_fz_load_one(braid_dtype t, const void *p, br_fz_ct ct);
/* n elements of r (compute type ct) stored as dtype t at dst (which may be
 * r's own memory). */
void br_fz_store(braid_dtype t, br_fz_ct ct, br_fz_ref r, int64_t n, void *dst);

/* ---- programs (cpu_fused.c, cpu_fused_reduce.c)
 * ------------------------------ */

void br_fz_run_reduce(const br_kernel_args *a);
/* POOL programs (cpu_fused_pool.c); scratch: what they need beyond the
 * set-up (br_fused_pool_scratch). */
void br_fz_run_pool(const br_kernel_args *a);
size_t br_fz_pool_scratch(const bp_program *p, const bg_node *n);

/* Scratch a fused node needs (the set-up, plus f16/bf16 matmul widening
 * when its inputs could be a matmul's). */
braid_status br_fused_prepare(const braid_graph *g, uint32_t id,
                              size_t *scratch);
/* Computes a fused node (a->program set). */
void br_fused_run(const br_kernel_args *a);

#endif /* BRAID_RUNTIME_CPU_FUSED_H */
