/* codegen/codegen.h — CUDA code generation and NVRTC compilation (prefix
 * bc_).
 *
 * Two halves:
 *   1. Source generation (pure C, no CUDA needed): every GPU node of a plan
 *      that needs a generated kernel becomes CUDA C text plus its launch
 *      geometry (bc_kernel). One plan gives one module (bc_plan_source):
 *      all kernels in one source, compiled by one NVRTC call, loaded as one
 *      library by the runtime.
 *   2. Compilation (bc_compile, needs BRAID_HAVE_CUDA): NVRTC to CUBIN for
 *      the exact architecture, PTX kept too, behind an in-memory cache and
 *      an on-disk cache under $BRAID_CACHE_DIR, else $XDG_CACHE_HOME/braid,
 *      else ~/.cache/braid.
 *
 * Kernel calling convention (every generated kernel, every launch):
 *   extern "C" __global__ void <entry>(out, in_0, ..., in_{n-1} [, extra]
 *                                      [, check])
 * All parameters are device pointers, so a launcher builds
 *   void *args[] = {&out_ptr, &in_ptr[0], ..., &in_ptr[n-1], &extra_ptr};
 * `out` is the node's output, in_k the data of node->inputs[k] (every
 * tensor is dense C order with the shape its graph node states), and the
 * extra pointer exists only when bc_kernel.extra is not BC_EXTRA_NONE, the
 * check pointer (a bc_run_check in device memory) only when
 * bc_kernel.run_check.
 * Kernels need no alignment beyond the element size: they check 16-byte
 * alignment themselves and take a vectorised path only when it holds.
 * Outputs may alias a same-shaped, same-dtype input (in-place elementwise):
 * every thread reads its elements before writing them. Launches of one
 * kernel run in order on the node's stream; no launch needs dynamic shared
 * memory or a cooperative launch. */
#ifndef BRAID_CODEGEN_CODEGEN_H
#define BRAID_CODEGEN_CODEGEN_H

#include "passes/plan.h"

/* ---- what a node needs on a GPU ------------------------------------------ */

/* How the CUDA runtime executes a node placed on a GPU. */
typedef enum bc_node_class {
    BC_NODE_HOST = 0,        /* not on a GPU: nothing for the CUDA backend */
    BC_NODE_KERNEL,          /* a generated kernel (bc_kernel) */
    BC_NODE_MATMUL,          /* plain matmul: cuBLAS, no kernel */
    BC_NODE_MATMUL_EPILOGUE, /* FUSED with a MATMUL program: cuBLAS into
                                the bc_kernel's matmul buffer, then the
                                generated epilogue kernel */
    BC_NODE_COPY,            /* copy node: cudaMemcpy* */
    BC_NODE_VIEW,            /* no work: the bytes are already in place
                                (views, in-place concat) */
    BC_NODE_DATA,            /* input or constant: bytes the runtime
                                provides (uploads); nothing runs */
    BC_NODE_COLLECTIVE       /* a collective member: NCCL, no kernel */
} bc_node_class;

/* The class of node id of p (BC_NODE_HOST for nodes not on a GPU). */
bc_node_class bc_classify(const bp_plan *p, uint32_t node);

/* ---- run checks (docs/architecture.md, "Run checks") ----------------------
 *
 * A kernel of an op flagged BRAID_OPF_RUN_CHECK that meets a value making
 * the run fail (an index out of range) does no access outside its operands
 * and records the failure in its executor's run check record: the CPU
 * kernels in one host record per executor, generated kernels in one
 * device record per GPU (passed as their last parameter). The first
 * failure claims the record (flag 0 → kind, atomically) and fills the
 * rest; the executor reads the records once the run is done (one 32-byte
 * device-to-host copy per GPU, only for plans with such kernels), turns a
 * claimed one into the run's error (runtime/run_check.c) and clears it.
 * Generated kernels claim the record with one 64-bit compare-and-swap of
 * kind and node together (the prelude's bc_check_fail), so a kernel can
 * tell its own claim from another node's. Which nodes take the record:
 * bg_node_run_check (graph/graph.h). The layout is also emitted as CUDA C
 * (codegen/prelude.c), so it is fixed: four 8-byte fields. */
typedef enum bc_check_kind {
    BC_CHECK_NONE = 0,  /* nothing recorded */
    BC_CHECK_INDEX = 1, /* an index out of range: a = the index, b = its
                           position in the indices operand, c = the length
                           of the axis it indexes */
    BC_CHECK_CAST = 2,  /* a range-checked cast's value that does not fit
                           (bg_cast_checked): a = the value, b = its
                           element (the first in C order), c = the target
                           braid_dtype */
    /* The GPU kernel of a checked cast while it runs (codegen/cast.c): the
     * record is claimed for the node, c = INT64_MAX - the lowest failing
     * element so far (an atomic max, so the first in C order wins); the
     * kernel's "_final" launch reads that element's value and rewrites the
     * record as BC_CHECK_CAST. Never seen by the host after a run. */
    BC_CHECK_CAST_PENDING = 0x102
} bc_check_kind;

/* BC_CHECK_INDEX from GATHER instruction i of a fused node's program
 * (passes/program.h): the instruction rides in the kind's upper half, so
 * the message names the gather the fused node absorbed. */
#define BC_CHECK_INDEX_AT(i) (BC_CHECK_INDEX | (((uint32_t)(i) + 1u) << 16))

typedef struct bc_run_check {
    uint32_t kind;   /* bc_check_kind; 0 until the first failure */
    uint32_t node;   /* plan node id of the kernel that recorded it */
    int64_t a, b, c; /* what failed, by kind */
} bc_run_check;

/* ---- kernels --------------------------------------------------------------
 */

#define BC_NAME_MAX 48 /* entry names ("k12", "k12_final"), NUL included */
#define BC_MAX_LAUNCHES 2

/* What kind of kernel was generated (for dumps and profiles). */
typedef enum bc_kernel_kind {
    BC_KERNEL_ELEMENTWISE = 0, /* fused or single elementwise/broadcast */
    BC_KERNEL_REDUCE,          /* reduction, prologue inlined */
    BC_KERNEL_GATHER,          /* permute/slice/concat/broadcast/reshape */
    BC_KERNEL_SOURCE,          /* fill, iota, random_uniform/normal */
    BC_KERNEL_EPILOGUE,        /* matmul epilogue (after cuBLAS) */
    BC_KERNEL_SOFTMAX,         /* the softmax op, over rows */
    BC_KERNEL_INDEX,           /* gather, scatter (codegen/index.c) */
    BC_KERNEL_CONV,            /* conv ops: braid's direct convolution, the
                                  fallback when cuDNN is absent
                                  (codegen/conv.c) */
    BC_KERNEL_POOL,            /* max_pool, avg_pool (codegen/pool.c) */
    BC_KERNEL_RESIZE,          /* resize (codegen/resize.c) */
    BC_KERNEL_AXIS,            /* argmax, argmin, topk_*, cumsum */
    BC_KERNEL_LAYER_NORM,      /* the layer_norm op, over rows
                                  (codegen/layernorm.c) */
    BC_KERNEL_ATTENTION        /* the attention op, one kernel
                                  (codegen/attention.c) */
} bc_kernel_kind;

/* The pointer a kernel takes after its inputs, if any. */
typedef enum bc_extra {
    BC_EXTRA_NONE = 0, /* no extra parameter */
    BC_EXTRA_SCRATCH,  /* device scratch of scratch_bytes (any content; the
                          launches of one node share it; 256-byte aligned) */
    BC_EXTRA_MATMUL    /* the matmul result (mm_dtype, mm_bytes) the
                          epilogue reads; may equal `out` when mm_in_place */
} bc_extra;

/* One kernel launch. */
typedef struct bc_launch {
    char entry[BC_NAME_MAX]; /* extern "C" symbol in the module */
    uint32_t grid[3];        /* grid dimensions (x < 2^31, y, z < 65536) */
    uint32_t block[3];       /* block dimensions (≤ 1024 threads) */
} bc_launch;

/* Everything the runtime needs to run one node's generated kernel. */
typedef struct bc_kernel {
    uint32_t node;       /* plan node id */
    bc_kernel_kind kind; /* what was generated */
    uint32_t nlaunch;    /* launches in order: 0 (empty output, nothing
                            to do), 1 or 2 */
    bc_launch launch[BC_MAX_LAUNCHES]; /* the launches */
    uint32_t nparams;       /* pointer parameters: 1 + ninputs (+ 1) */
    bc_extra extra;         /* the last parameter's meaning */
    uint64_t scratch_bytes; /* SCRATCH: bytes needed (multiple of 256) */
    braid_dtype mm_dtype;   /* MATMUL: dtype cuBLAS must produce */
    uint64_t mm_bytes;      /* MATMUL: bytes of the matmul result */
    bool mm_in_place;       /* MATMUL: cuBLAS may write straight into
                               `out` (same dtype) and pass out as extra */
    uint32_t mm_instr;      /* MATMUL: index of the matmul instruction in
                               the program (its loads name a and b) */
    bool run_check;         /* takes the GPU's bc_run_check record as one
                               more (last) parameter, counted in nparams */
} bc_kernel;

/* A generated module: CUDA C text and its kernels. */
typedef struct bc_source {
    char *text;         /* NUL-terminated CUDA C; owned */
    size_t len;         /* strlen(text) */
    bc_kernel *kernels; /* sorted by node id; owned */
    uint32_t nkernels;  /* entries in kernels */
    bool uses_rng;      /* embeds graph/rng.c (random generators) */
} bc_source;

/* Generates the kernel of one node (bc_classify says BC_NODE_KERNEL or
 * BC_NODE_MATMUL_EPILOGUE) as a complete module with one bc_kernel.
 * BRAID_ERR_INVALID_ARGUMENT for another class or a bad id,
 * BRAID_ERR_UNSUPPORTED (message naming the node) for what codegen cannot
 * do (e.g. > BC_MAX_PARAMS inputs), BRAID_ERR_OUT_OF_MEMORY. On failure
 * *out is zeroed. Free with bc_source_free. */
braid_status bc_kernel_source(const bp_plan *p, uint32_t node, bc_source *out);

/* Generates one module holding the kernels of every node of p that needs
 * one (every GPU of the plan: the module is arch-generic source). A plan
 * with no such node gives an empty module (nkernels 0, text still valid
 * and compilable). Errors as bc_kernel_source. */
braid_status bc_plan_source(const bp_plan *p, bc_source *out);

/* The kernel of node in s, or NULL (binary search). */
const bc_kernel *bc_source_kernel(const bc_source *s, uint32_t node);

void bc_source_free(bc_source *s); /* NULL and zeroed are fine */

/* Largest number of inputs a kernel may take (CUDA's 4 KiB of parameters
 * with room to spare). */
#define BC_MAX_PARAMS 400

/* ---- compilation ------------------------------------------------------------
 */

/* A compiled module. */
typedef struct bc_binary {
    void *cubin;       /* CUBIN for sm_<sm>, or NULL when NVRTC does not
                          know that architecture (then load the PTX) */
    size_t cubin_size; /* bytes in cubin */
    char *ptx;         /* NUL-terminated PTX (for a newer GPU's JIT) */
    size_t ptx_size;   /* strlen(ptx) + 1 */
    int sm;            /* the architecture asked for (e.g. 90) */
    bool cached;       /* came from the memory or disk cache */
} bc_binary;

void bc_binary_free(bc_binary *b); /* NULL and zeroed are fine */

/* Compiles CUDA source (NUL-terminated; name is its file name in messages,
 * e.g. "kernel.cu") for compute capability sm (90 = sm_90) with NVRTC.
 * Options: --fmad=false (CPU-identical rounding, required by the random
 * generators), -default-device, -std=c++17. Results are cached in memory
 * and on disk, keyed by a 128-bit hash of (source, options, sm, NVRTC
 * version, cache format).
 * On failure *out is zeroed and err (errsize bytes, may be NULL) receives
 * the message, also left for braid_last_error(); a compile error reads
 * "node %12 (fused): kernel.cu:34: error: <NVRTC's text>" followed by the
 * offending generated line and the full NVRTC log, and returns
 * BRAID_ERR_INTERNAL (generated code must always compile).
 * BRAID_ERR_UNSUPPORTED when braid was built without the CUDA toolkit;
 * BRAID_ERR_INVALID_ARGUMENT for NULL source/out or sm ≤ 0. Thread-safe. */
braid_status bc_compile(const char *source, const char *name, int sm,
                        bc_binary *out, char *err, size_t errsize);

/* Counters since the process started (or the last bc_stats_reset). */
typedef struct bc_stats {
    uint64_t compiles;      /* NVRTC compilations that succeeded */
    uint64_t failures;      /* NVRTC compilations that failed */
    uint64_t memory_hits;   /* answered by the in-memory cache */
    uint64_t disk_hits;     /* answered by the on-disk cache */
    uint64_t disk_writes;   /* entries written to the disk cache */
    uint64_t disk_rejected; /* disk entries found corrupt or truncated */
    double nvrtc_seconds;   /* wall time spent inside NVRTC */
    double disk_seconds;    /* wall time spent reading/writing entries */
} bc_stats;

void bc_stats_get(bc_stats *out);
void bc_stats_reset(void);

/* Empties the in-memory cache (the disk cache stays). */
void bc_cache_clear(void);

/* The disk cache folder bc_compile uses now, written to buf (always
 * NUL-terminated); false when the disk cache is off: BRAID_CACHE_DIR set
 * but empty, or neither XDG_CACHE_HOME nor HOME usable. */
bool bc_cache_dir(char *buf, size_t size);

/* NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0), 0 when
 * braid has no NVRTC. */
int bc_nvrtc_version(void);

/* ---- ahead-of-time kernels (codegen/aot.c) --------------------------------- */

/* Called by braid_compile after the passes: when p has generated GPU
 * kernels, stores their source in p->kernels and compiles it for every
 * architecture of the plan's device description (bp_plan_devices(p)->
 * archs, which braid_compile filled: opts.archs, else the GPUs present,
 * else sm_90; none for "none"), filling p->report's kernel fields. Without
 * NVRTC (a CPU-only build) only the source is kept. */
braid_status bc_aot_build(bp_plan *p);

/* Parses "sm_90,sm_80" (also "90", "sm90"; spaces allowed) into up to max
 * architectures, sorted and deduplicated; *n 0 for "none". A number that
 * is no CUDA architecture NVIDIA has shipped (sm_200) is
 * BRAID_ERR_INVALID_ARGUMENT listing the known ones. */
braid_status bc_parse_archs(const char *text, int *sm, uint32_t max,
                            uint32_t *n);
/* Inserts architecture v into the ascending list sm[0..*n) unless present;
 * false when the list already holds max. */
bool bc_archs_add(int *sm, uint32_t max, uint32_t *n, int v);

#endif /* BRAID_CODEGEN_CODEGEN_H */
