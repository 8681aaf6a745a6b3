/* runtime/cuda/cuda_impl.h — the CUDA backend's own state, shared by
 * runtime/cuda/cuda_*.c only (exec.c sees runtime/cuda/cuda.h). Compiled only with
 * the toolkit (BRAID_HAVE_CUDA).
 *
 * Everything a run needs is prepared at creation: per node what it is
 * (kernel, cuBLAS matmul, copy direction, nothing), its stream, the events
 * it waits for and records, its kernel; per copy stream the pinned staging
 * slots. A run only reads these tables and the executor's pointer table. */
#ifndef BRAID_RUNTIME_CUDA_IMPL_H
#define BRAID_RUNTIME_CUDA_IMPL_H

#ifdef BRAID_HAVE_CUDA

#include "codegen/codegen.h"
#include "runtime/cuda/cuda.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

/* Staging of pageable host memory: slots per copy stream, bytes per slot
 * at most (a copy larger than a slot moves in slot-sized chunks, the host
 * memcpy of one chunk overlapping the DMA of the previous ones). */
#define BR_STAGE_SLOTS 4
#define BR_STAGE_SLOT_MAX ((uint64_t)32 << 20)
#define BR_STAGE_SLOT_MIN                                                      \
    ((uint64_t)256 << 10) /* unless the copies are smaller */
/* Host bytes per thread per staging memcpy job (below this the copy runs
 * on the calling thread). */
#define BR_STAGE_GRAIN ((int64_t)2 << 20)
/* The CPU arena is allocated as pinned memory (so copies to and from it
 * are plain DMA) when copies touch it and it is at most this big. */
#define BR_PIN_CPU_ARENA_MAX ((uint64_t)4 << 30)
/* cuBLAS workspace per handle (set explicitly so that cuBLAS never
 * allocates during a CUDA-graph capture). */
#define BR_BLAS_WORKSPACE ((size_t)32 << 20)
/* Largest total of caller bytes a CUDA graph run stages through its fixed
 * pinned buffers; plans moving more stream through the staging slots
 * instead, where copies overlap host memcpys. */
#define BR_GRAPH_STAGING_MAX ((uint64_t)16 << 20)
/* cuBLASLt workspace per compute stream that runs cuBLASLt matmuls. */
#define BR_LT_WORKSPACE ((size_t)32 << 20)
/* Distinct GPU architectures one executor compiles for. */
#define BR_MAX_ARCHS 8
/* Size of the executor log. */
#define BR_LOG_MAX 32768

/* What the backend does for one node. */
typedef enum br_node_kind {
    BR_NODE_CPU = 0,  /* on the CPU queue: exec.c's kernels run it */
    BR_NODE_NOOP,     /* on a GPU queue, no work (a view, in-place
                         concat): only its events */
    BR_NODE_KERNEL,   /* a generated kernel */
    BR_NODE_GEMM,     /* matmul through cuBLAS */
    BR_NODE_GEMM_EPI, /* a fused MATMUL program: cuBLAS, then the
                         generated epilogue kernel */
    BR_NODE_H2D,      /* copy host → device */
    BR_NODE_D2H,      /* copy device → host */
    BR_NODE_D2D,      /* copy device → device (peer) */
    BR_NODE_CONST_H2D, /* copy of constant bytes to a GPU: uploaded at
                          creation, nothing to do per run */
    BR_NODE_COLL,      /* a collective member: NCCL on its comm stream
                          (cuda_coll.c), a group issued at once */
    BR_NODE_CONV       /* conv ops through cuDNN (cuda_conv.c) */
} br_node_kind;

/* Per node of the plan. */
typedef struct br_cnode {
    br_node_kind kind; /* see above */
    int dev;           /* CUDA ordinal of its queue's GPU; -1 on the CPU */
    uint32_t queue;    /* index in plan->queues */
    uint32_t kernel;   /* KERNEL, GEMM_EPI: index in c->kern; else BG_NONE */
    uint32_t lt;       /* GEMM_EPI run by one cublasLtMatmul with a bias
                          epilogue: index in c->lt; else BG_NONE */
    uint32_t ptrs;     /* GEMM, GEMM_EPI whose batch dims do not merge into
                          one strided batch: index in c->blas.ptrs (one
                          pointer-array call); else BG_NONE */
    bool gpu_dep;      /* depends (data or events, transitively) on GPU
                          work: a CPU node that must wait in graph mode */
    bool feeds_gpu;    /* GPU work depends on it (transitively) */
} br_cnode;

/* Pinned staging slots of one copy stream. */
typedef struct br_stage {
    void *host;                       /* BR_STAGE_SLOTS × slot bytes, pinned;
                                         NULL when the stream never stages */
    size_t bytes;                     /* size of host (at least
                                         BR_STAGE_SLOTS × slot) */
    uint64_t slot;                    /* bytes per slot */
    cudaEvent_t free[BR_STAGE_SLOTS]; /* recorded after the DMA using the
                                         slot; the host waits on it before
                                         refilling the slot */
    uint32_t next;                    /* slot the next chunk uses */
} br_stage;

/* One node's generated kernel (codegen/), loaded. */
typedef struct br_kernel {
    const bc_kernel *bk; /* codegen's description (points into c->src) */
    cudaKernel_t fn[BC_MAX_LAUNCHES]; /* its launches' functions */
    void *extra; /* the last parameter's buffer when codegen asks
                    for one (SCRATCH, or a MATMUL result that
                    cannot live in the output); device, owned */
} br_kernel;

/* A fused MATMUL node computed by one cublasLtMatmul whose epilogue adds
 * the bias (and applies ReLU): cuda_lt.c. braid's row-major C [M, N] read
 * column-major is D = Cᵀ (N×M, ld N) = op(A)·op(B) with cuBLASLt's A
 * braid's b and its B braid's a, so braid's bias of length N runs along
 * D's rows: cuBLASLt's BIAS epilogue adds a vector of D's row count to
 * every column. */
typedef struct br_lt {
    uint32_t node;                /* the fused node */
    cublasLtMatmulDesc_t desc;    /* ops, compute type, epilogue, bias */
    cublasLtMatrixLayout_t lay_b; /* braid's b: cuBLASLt's A */
    cublasLtMatrixLayout_t lay_a; /* braid's a: cuBLASLt's B */
    cublasLtMatrixLayout_t lay_c; /* C and D: the node's output */
    cublasLtMatmulAlgo_t algo;    /* the heuristic's first choice, or
                                     the fastest candidate (cuda_lt.c) */
    uint32_t a, b, bias;          /* operand and bias node ids */
    uint32_t resid;               /* residual node id (C, beta 1), or
                                     BG_NONE (C is D, beta 0) */
    const void *pa, *pb, *pbias;  /* their device addresses the algorithm
                                     was chosen for (alignment) */
    const void *pr;               /* the residual's, or NULL */
    void *pd;                     /* the output's */
    bool moved;                   /* a run found other addresses (logged
                                     once; such runs use cuBLAS) */
} br_lt;

/* A product whose batch dims do not merge into one stride (attention's
 * heads read in place from [B, T, H, D]: B and H strides do not compose)
 * issued as one cublasGemmBatchedEx over pointer arrays instead of a
 * strided-batched call per outer batch (cuda_blas.c). The arrays are
 * built at creation for the device addresses a run will use. */
typedef struct br_gemm_ptrs {
    const void *pa, *pb; /* braid's a and b the arrays were built for */
    const void *pc;      /* the product's target */
    void **arr;          /* device: cuBLAS's A (braid's b), B (braid's a)
                            and C pointers, count each */
    int64_t count;       /* matrices in the batch */
    bool moved;          /* a run found other addresses (logged once; such
                            runs loop over strided-batched calls) */
} br_gemm_ptrs;

/* State of a CUDA graph (cuda_graph.c). */
typedef struct br_graph_state {
    bool enabled;         /* capture allowed (br_cuda_set_graphs) */
    bool static_plan;     /* the plan's GPU part can be captured */
    bool failed;          /* capture failed once: never again */
    bool captured;        /* a capture was begun: the events recorded in
                             it are graph nodes now, not ordinary events
                             (br_cuda_give_event destroys them) */
    bool device_logged;   /* the log says why a run binding device memory
                             did not replay (once) */
    bool staging_logged;  /* the log says a run staged too many host
                             bytes for the graph (once) */
    uint32_t runs;        /* successful runs so far (capture after 1) */
    bool used_last;       /* the last run replayed the graph */
    bool unfinished;      /* this run launched the graph and the host has
                             not waited for it and copied its outputs out
                             yet (br_graph_finish) */
    cudaGraph_t graph;    /* the captured graph */
    cudaGraphExec_t exec; /* its executable instance */
    uint32_t origin;      /* queue whose stream launches the graph */
    uint32_t npre;        /* CPU nodes (cpu_list prefix) the dispatcher
                             runs before the launch: every CPU node up to
                             the last one GPU work depends on (logged) */
    void **src;           /* per node (H2D copies): the fixed pinned host
                             buffer the graph reads */
    void **dst;           /* per node (D2H copies): the fixed pinned host
                             buffer the graph writes */
    bool *owned;          /* per node: src / dst allocated here (pinned,
                             freed with the state) */
    const void **bound;   /* per node (H2D / D2H copies): the caller's
                             device buffer the graph reads (H2D) or writes
                             (D2H) itself, as bound at the capture; NULL:
                             the copy goes through src / dst. A run
                             replays only with these same buffers bound
                             (and host memory for every other copy) */
    cudaEvent_t *join;    /* per queue: joins its stream into the origin
                             at the end of a capture */
    cudaEvent_t fork;     /* recorded on the origin at capture start */
} br_graph_state;

/* ---- the concerns of an executor's CUDA side, one struct each ------------ */

/* Device and pinned memory (cuda_ctx.c). */
typedef struct br_cuda_mem {
    void **arena;  /* per plan arena: the backend's buffer, or NULL when
                      exec.c allocates it */
    uint8_t *kind; /* per arena: 0 exec's, 1 device, 2 pinned host, 3 a
                      stand-in for an unused staging reservation (256
                      pinned bytes) */
    void **home;   /* per node: where a pre-uploaded constant copy lives
                      (device memory, owned), or NULL (cuda_copy.c) */
} br_cuda_mem;

/* Streams and events (cuda_ctx.c), taken from the process pool
 * (cuda_pool.c) and given back when the executor is freed. */
typedef struct br_cuda_queues {
    cudaStream_t *stream; /* per queue (NULL for the CPU queue and unused
                             queues) */
    cudaEvent_t *event;   /* per plan event (NULL when its producer is a
                             CPU node: the host orders those) */
} br_cuda_queues;

/* cuBLAS (cuda_blas.c) and cuBLASLt (cuda_lt.c): handles with their
 * workspaces come from the process pool. */
typedef struct br_cuda_blas {
    cublasHandle_t *handle;      /* per queue (compute streams only) */
    void **ws;                   /* per queue: cuBLAS workspace (device) */
    cublasLtHandle_t *lt_handle; /* per queue: cuBLASLt handle (compute
                                    streams running cuBLASLt matmuls) */
    void **lt_ws;                /* per queue: cuBLASLt workspace */
    br_lt *lt;                   /* the nodes cuBLASLt runs */
    uint32_t nlt;                /* entries in lt */
    br_gemm_ptrs *ptrs;          /* the products run over pointer arrays */
    uint32_t nptrs;              /* entries in ptrs */
} br_cuda_blas;

/* The plan's generated module, compiled and loaded (cuda_kernels.c). */
typedef struct br_cuda_module {
    bc_source src;                   /* the generated module (codegen) */
    br_kernel *kern;                 /* per kernel of src (same order) */
    uint32_t nkern;                  /* entries in kern */
    int sm[BR_MAX_ARCHS];            /* compute capabilities compiled for */
    bc_binary bin[BR_MAX_ARCHS];     /* the module compiled, per sm (kept
                                        while loaded) */
    cudaLibrary_t lib[BR_MAX_ARCHS]; /* the module loaded, per sm */
    uint32_t nlib;                   /* entries used in sm and lib */
    void **argv; /* a launch's parameter values (max params) */
    void **argp; /* pointers to them, what cudaLaunchKernel takes */
    bc_run_check **check; /* per device (ndev): the run check record its
                             kernels write (bc_kernel.run_check), zeroed
                             device memory; NULL where no kernel takes one;
                             owned */
} br_cuda_module;

/* Copies (cuda_copy.c): pinned staging per copy stream, and the D2H
 * copies into pageable memory deferred during a run. */
typedef struct br_cuda_copies {
    br_stage *stage;     /* per queue: staging of H2D / D2H streams */
    bool *pending;       /* per node: a deferred D2H copy whose DMA and
                            host copy are still to do (run state) */
    uint32_t *pend_list; /* pending nodes in issue order */
    uint32_t npend;      /* entries in pend_list */
} br_cuda_copies;

/* Collectives through NCCL (cuda_coll.c). */
typedef struct br_cuda_coll {
    braid_comm *comm; /* multi-process communicator (braid_exec_set_comm),
                         not owned; or NULL */
    void **member;    /* per node: the ncclComm_t of a member of a group
                         run inside this process, or NULL */
    void **comms;     /* communicators made by ncclCommInitAll (owned) */
    uint32_t ncomms;  /* entries in comms */
} br_cuda_coll;

/* A conv node run by cuDNN (cuda_conv.c): its descriptors (opaque cuDNN
 * objects; x is the op's input, cuDNN's dy for conv_transpose, y its
 * output), the algorithm chosen and the workspace it needs. */
typedef struct br_conv {
    uint32_t node;
    void *x, *w, *y, *b, *conv; /* descriptors (b: bias [1, OC, 1...]) */
    int algo;                   /* cudnnConvolution{Fwd,BwdData}Algo_t */
    int math;                   /* the descriptor's cudnnMathType_t: once
                                   chosen, the algorithm's (cuda_conv.c) */
    size_t ws;                  /* workspace bytes it needs */
    bool bias, transpose, f64;
} br_conv;

/* cuDNN for the conv ops (cuda_conv.c). */
typedef struct br_cuda_conv {
    const struct br_cudnn_api *api; /* loaded cuDNN, or NULL: none used */
    void **handle;      /* per queue: cudnnHandle_t, or NULL */
    void **ws;          /* per queue: workspace (device), or NULL */
    size_t *ws_bytes;   /* per queue: its size, the most its nodes need */
    br_conv *nodes;     /* the conv nodes cuDNN runs */
    uint32_t n;         /* entries in nodes */
    uint32_t *index;    /* per plan node: index in nodes, or BG_NONE */
} br_cuda_conv;

/* The run in progress (cuda_run.c). */
typedef struct br_cuda_run {
    const br_cuda_run_args *args; /* its arguments; NULL between runs */
    bool graph;                   /* it replays the CUDA graph */
    bool capturing;               /* issuing into a CUDA-graph capture:
                                     copies use the graph's fixed host
                                     buffers */
} br_cuda_run;

/* The executor log (cuda_util.c). */
typedef struct br_cuda_logbuf {
    char text[BR_LOG_MAX]; /* one line per notable decision */
    size_t len;            /* bytes used in text */
    char created[512];     /* "created in T ms: step ms ...", also when
                              text is full */
} br_cuda_logbuf;

struct br_cuda {
    const bp_plan *plan;   /* the plan run; not owned */
    const br_sched *sched; /* its schedule tables (device and CPU lists,
                              event waits and records): the executor's,
                              or own_sched in a dry check */
    br_sched own_sched;    /* built by br_cuda_check_plan; else empty */
    int ndev;              /* CUDA devices present */
    bool allow_tf32;       /* compile option: f32 matmul may use TF32 */
    bool dry;              /* made by br_cuda_check_plan: no CUDA objects */
    int cur_dev;           /* device current on this thread (-1 unknown) */
    br_cnode *node;        /* per node: what the backend does for it */
    br_cuda_mem mem;       /* arenas and constants */
    br_cuda_queues q;      /* streams and events */
    br_cuda_blas blas;     /* cuBLAS and cuBLASLt */
    br_cuda_module mod;    /* the generated kernels */
    br_cuda_copies copy;   /* staging and deferred copies */
    br_graph_state graph;  /* CUDA graph capture and replay */
    br_cuda_coll coll;     /* NCCL */
    br_cuda_run run;       /* the run in progress */
    br_cuda_logbuf log;    /* the executor log */
    br_cuda_conv conv;     /* conv ops: cuDNN */
    br_pool *pool;         /* the executor's CPU threads: host copies at
                              creation (constants into pinned staging);
                              may be NULL */
};

/* The stream of queue q (NULL for the CPU queue): what every concern
 * issues on; cuda_ctx.c owns the streams. */
static inline cudaStream_t br_cuda_stream(const br_cuda *c, uint32_t q) {
    return c->q.stream[q];
}

/* ---- cuda_conv.c (conv ops) ----------------------------------------------- */

/* Moves the conv nodes cuDNN can run from braid's kernel to cuDNN
 * (descriptors, algorithm, workspaces); a creation step after the
 * kernels are loaded. Nothing in a dry check. */
braid_status br_cuda_conv_prepare(br_cuda *c);
/* Issues conv node id (kind BR_NODE_CONV) on stream s. */
braid_status br_cuda_conv_run(br_cuda *c, uint32_t id, cudaStream_t s);
void br_cuda_conv_free(br_cuda *c);

/* ---- cuda_pool.c --------------------------------------------------------- */

/* One pooled resource. */
typedef struct br_res {
    br_res_kind kind; /* what obj is */
    int dev;          /* the device it was created on (-1: pinned host
                         memory, usable from any device) */
    size_t bytes;     /* PINNED: its size */
    void *obj;        /* the stream, event, cuBLAS / cuBLASLt handle, or
                         the pinned buffer */
    void *ws;         /* BLAS, LT: its device workspace, else NULL */
} br_res;

/* Takes a resource of kind on device dev from the pool (PINNED: one of at
 * least bytes); false when the pool has none and the caller creates it
 * (then calls br_res_created). Thread-safe. */
bool br_res_take(br_res_kind kind, int dev, size_t bytes, br_res *out);
void br_res_created(br_res_kind kind);
/* Gives r back (NULL obj: nothing): it must be idle. Thread-safe. */
void br_res_give(const br_res *r);
/* Destroys r (a resource the pool no longer holds). */
void br_res_destroy(const br_res *r);

/* The module loaded for (sm, generated source text of len bytes), shared
 * with the executors that use it: true with *lib when one is loaded (its
 * count goes up). Otherwise the caller loads it and calls br_module_keep
 * (count 1). br_module_give drops the count (an idle module stays loaded
 * for the next executor; one the cache does not know is unloaded).
 * Thread-safe. */
bool br_module_take(int sm, const char *text, size_t len, cudaLibrary_t *lib);
void br_module_keep(int sm, const char *text, size_t len, cudaLibrary_t lib);
void br_module_give(cudaLibrary_t lib);

/* ---- cuda_util.c --------------------------------------------------------- */

/* Appends one line (up to 1023 characters) to the executor log
 * (printf-like; dropped when the log is full);
 * with $BRAID_LOG set (non-empty, not "0") also prints it to stderr as
 * "braid: <line>". */
void br_cuda_logf(br_cuda *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The error helpers turn a failed call into a status and a message:
 *   "<where>: node %u (op "name") on cuda:N: <call> failed: <why> (error E)"
 * where is "braid_exec_new" or "braid_run"; node BG_NONE leaves out the
 * node part. cudaSuccess / CUBLAS_STATUS_SUCCESS return BRAID_OK. A CUDA
 * out-of-memory error becomes BRAID_ERR_OUT_OF_MEMORY, every other one
 * BRAID_ERR_DEVICE. The non-sticky error state is cleared. */
braid_status br_cu(const br_cuda *c, const char *where, uint32_t node,
                   const char *call, cudaError_t err);
braid_status br_blas(const br_cuda *c, const char *where, uint32_t node,
                     const char *call, cublasStatus_t st);

/* Makes device dev current on this thread (cheap when it already is). */
braid_status br_cuda_use(br_cuda *c, const char *where, uint32_t node, int dev);
/* After a run's synchronisation: reads every GPU's run check record (one
 * 32-byte copy each, only where kernels take one) and returns the first
 * failure as the run's error, clearing the record (runtime/run_check.c). */
braid_status br_cuda_take_checks(br_cuda *c);

/* The node whose bytes node id's data is (following views), and the byte
 * offset of id's data in it. */
uint32_t br_root(const bp_plan *p, uint32_t id, uint64_t *offset);

/* Device address of node id's bytes as every run sees them (arenas and
 * uploaded constants never move), or NULL when not known at creation. */
char *br_cuda_fixed_addr(const br_cuda *c, uint32_t id);

/* The kind of queue q ("cpu" for out-of-range). */
bp_queue_kind br_queue_kind(const bp_plan *p, uint32_t q);

/* Where host pointer ptr lives: 0 pageable (or unknown), 1 pinned or
 * registered host memory, 2 device memory (*dev set). */
int br_pointer_kind(const void *ptr, int *dev);

/* Copies n bytes from src to dst on the pool's threads. */
void br_parallel_memcpy(br_pool *pool, void *dst, const void *src, uint64_t n);
/* The same with chunks of at least grain bytes per thread. */
void br_parallel_memcpy_grain(br_pool *pool, void *dst, const void *src,
                              uint64_t n, int64_t grain);

/* True when node id does no work (info.noop: inputs, constants, pure
 * views, concats assembled in place). */
bool br_node_noop(const bp_plan *p, uint32_t id);

/* ---- cuda_ctx.c ---------------------------------------------------------- */

/* An event without timing on device dev (current), from the process pool
 * or new; br_cuda_give_event hands it back. Errors name where and node. */
braid_status br_cuda_take_event(br_cuda *c, const char *where, uint32_t node,
                                int dev, cudaEvent_t *out);
void br_cuda_give_event(const br_cuda *c, int dev, cudaEvent_t ev);

/* ---- cuda_kernels.c ------------------------------------------------------ */

/* Generates, compiles (cached) and loads the kernels of every GPU node
 * that needs one; sets node[].kernel. */
braid_status br_cuda_load_kernels(br_cuda *c);
/* The same without a GPU: generates the module, checks every node against
 * its kernel, and when sm > 0 compiles it with NVRTC for sm_<sm>. */
braid_status br_cuda_check_kernels(br_cuda *c, int sm);
void br_cuda_free_kernels(br_cuda *c);
/* Launches node id's kernel on stream s with the run's pointers. */
braid_status br_cuda_launch(br_cuda *c, uint32_t id, cudaStream_t s);
/* The buffer the matmul of GEMM_EPI node id writes: its output when the
 * epilogue reads it in place, else the kernel's own buffer. */
void *br_cuda_matmul_target(const br_cuda *c, uint32_t id);

/* ---- cuda_blas.c --------------------------------------------------------- */

/* The product to compute, from a matmul node or a MATMUL program. */
typedef struct br_gemm_shape {
    uint32_t a, b;                /* operand node ids */
    braid_dtype dtype;            /* operands' and result's dtype */
    bool ta, tb;                  /* op(a), op(b) transposed: the
                                     BRAID_TRANSPOSE_A / _B flags, flipped
                                     for a strided view stored by columns */
    int64_t m, n, k;              /* C is m×n, contraction k */
    int64_t lda, ldb, ldc;        /* row-major leading dims (elements) */
    bool strided;                 /* an operand or the result is a strided
                                     view (passes/layout.h) */
    int nb;                       /* batch dims after merging */
    int64_t bdim[BRAID_MAX_RANK]; /* their sizes, outermost first */
    int64_t sa[BRAID_MAX_RANK];   /* a's stride per batch dim (elements) */
    int64_t sb[BRAID_MAX_RANK];   /* b's */
    int64_t sc[BRAID_MAX_RANK];   /* c's */
} br_gemm_shape;

/* Fills g for node id (a matmul, or a fused node with a MATMUL program):
 * batch dims of size 1 dropped, neighbours whose strides compose merged.
 * False when it is no matmul. */
bool br_gemm_shape_of(const bp_plan *p, uint32_t id, br_gemm_shape *g);
/* cuBLAS types of a float dtype: storage type and compute type (f32 uses
 * TF32 tensor cores only with allow_tf32). */
void br_blas_types(const br_cuda *c, braid_dtype t, cudaDataType *data,
                   cublasComputeType_t *compute);

/* Checks that matmul node id (or a fused MATMUL program) fits cuBLAS:
 * BRAID_ERR_UNSUPPORTED for a non-float dtype. */
braid_status br_cuda_gemm_check(const br_cuda *c, uint32_t id);
/* The dtype and bytes of the product of matmul node id (plain or fused). */
braid_status br_cuda_gemm_result(const br_cuda *c, uint32_t id,
                                 braid_dtype *dtype, uint64_t *bytes);
/* Issues the matmul of node id (plain, or the product of a fused MATMUL
 * program) into out on its queue's stream and cuBLAS handle. */
braid_status br_cuda_gemm(br_cuda *c, uint32_t id, void *out);
/* Gives compute queue q (its stream made, its device current) a cuBLAS
 * handle with its workspace from the process pool (else a new one), set
 * to q's stream and the plan's math mode. */
braid_status br_cuda_blas_take(br_cuda *c, uint32_t q);
/* Gives every cuBLAS handle back to the pool (streams idle). */
void br_cuda_blas_give(br_cuda *c);
/* For every matmul whose batch dims do not merge into one stride, builds
 * the pointer arrays of one cublasGemmBatchedEx for the device addresses
 * runs will use (after the kernels: a fused node's product may go to its
 * kernel's buffer); the log names each. */
braid_status br_cuda_gemm_ptrs_prepare(br_cuda *c);
void br_cuda_gemm_ptrs_free(br_cuda *c);

/* ---- cuda_lt.c ----------------------------------------------------------- */

/* Decides for every GEMM_EPI node whether one cublasLtMatmul with a
 * BIAS or RELU_BIAS epilogue computes exactly what its program says
 * (matmul + row bias [+ relu], f32 / f16 / bf16, no broadcast batch) and,
 * in a real executor, creates its handle, descriptors and workspace and
 * asks cuBLASLt's heuristic for an algorithm for the node's device
 * addresses. The log names the path each node takes and, for the cuBLAS
 * path, why. A node cuBLASLt cannot take keeps the cuBLAS + epilogue
 * kernel path; only running out of host memory is an error. */
braid_status br_cuda_lt_prepare(br_cuda *c);
void br_cuda_lt_free(br_cuda *c);
/* Issues GEMM_EPI node id's cublasLtMatmul on stream s when it has one
 * (*done true); *done false: the caller takes the cuBLAS path. */
braid_status br_cuda_lt_matmul(br_cuda *c, uint32_t id, cudaStream_t s,
                               bool *done);

/* ---- cuda_copy.c --------------------------------------------------------- */

/* Allocates the staging slots of each H2D / D2H stream that may stage
 * pageable memory (sized by the largest such copy). */
braid_status br_cuda_stage_init(br_cuda *c);
void br_cuda_stage_free(br_cuda *c);
/* Issues copy node id. A D2H copy into pageable memory is deferred
 * (c->pending) when no GPU node waits for it: its DMA and host copy are
 * done by br_cuda_flush, before a CPU node needs it, before the next node
 * of its stream is issued, or at the end of the run. */
braid_status br_cuda_copy(br_cuda *c, uint32_t id);
/* Completes, in issue order, the deferred copies of queue q (BG_NONE: of
 * every queue) up to and including node upto (BG_NONE: all of them), so
 * that deferral never reorders a stream: an event recorded behind a later
 * node of the stream still implies the deferred copy is done. */
braid_status br_cuda_flush(br_cuda *c, uint32_t q, uint32_t upto);
/* Uploads, at creation, the constant bytes every CONST_H2D node copies. */
braid_status br_cuda_upload_constants(br_cuda *c);

/* ---- cuda_run.c ---------------------------------------------------------- */

/* Issues GPU node id: its event waits, its work, its event records. */
braid_status br_cuda_issue(br_cuda *c, uint32_t id);
/* Node id's stream waits for the events of its producers on other queues
 * (a CPU producer has no event: it has run already) / records the events
 * its consumers on other queues wait for. */
braid_status br_cuda_wait_events(br_cuda *c, uint32_t id);
braid_status br_cuda_record_events(br_cuda *c, uint32_t id);
/* Waits on every stream; the first error wins over st. */
braid_status br_cuda_sync_all(br_cuda *c, braid_status st);

/* ---- cuda_coll.c --------------------------------------------------------- */

/* At creation: checks every collective group on the GPUs and, unless dry,
 * makes one NCCL communicator set (ncclCommInitAll) per distinct ordered
 * device list of the groups run inside this process. A rank-form member
 * alone in its group (multi-process) waits for braid_exec_set_comm. */
braid_status br_cuda_coll_init(br_cuda *c);
void br_cuda_coll_free(br_cuda *c);
/* Entries of sched->dev_list from index gi on that form one collective
 * group (1 for a multi-process member); 0 when dev_list[gi] is no
 * collective. */
uint32_t br_cuda_coll_span(const br_cuda *c, uint32_t gi);
/* Issues the m members ids[0..m) of one group: every member's event
 * waits, the NCCL calls inside one ncclGroupStart/End, then every
 * member's event records. */
braid_status br_cuda_coll_issue(br_cuda *c, const uint32_t *ids, uint32_t m);

/* ---- cuda_graph.c -------------------------------------------------------- */

/* Decides at creation whether the plan's GPU part is static (logs why
 * not); computes node[].gpu_dep / feeds_gpu. */
braid_status br_graph_prepare(br_cuda *c);
/* True when this run replays the CUDA graph (captured first when it is
 * not yet): the plan's GPU part is static, graphs are on, no capture
 * failed, the warm-up run is done and the run is not profiled. */
bool br_graph_wanted(const br_cuda *c);
/* With br_graph_wanted: whether this run's bindings fit the graph. Before
 * the capture: every copy's caller buffer is host memory or device memory
 * on the copy's GPU (the capture reads and writes those itself). After:
 * each copy's caller buffer is the device buffer the capture bound
 * (graph.bound), or host memory where it bound none. Either way the host
 * bytes staged stay within BR_GRAPH_STAGING_MAX (else logged once). */
bool br_graph_bindings_match(br_cuda *c);
/* Issues every GPU node at once: launches the graph (capturing it
 * first), with the caller's bytes copied into its fixed buffers; sets
 * graph.unfinished. A capture that fails is logged and the nodes are
 * issued one by one instead. */
braid_status br_graph_launch(br_cuda *c);
/* Waits for the launched graph and copies what it wrote to the run's
 * places; sets used_last. */
braid_status br_graph_finish(br_cuda *c);
void br_graph_free(br_cuda *c);

#endif /* BRAID_HAVE_CUDA */
#endif /* BRAID_RUNTIME_CUDA_IMPL_H */
