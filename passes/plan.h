/* passes/plan.h — the compiled plan as plain data (prefix bp_).
 *
 * A plan is what passes produce and what executors, DOT export and (later)
 * plan files consume. It owns a private working copy of the user's graph
 * that passes rewrite: they add compiler nodes (copy, fused, and the slice /
 * concat nodes chunking makes) and drop dead ones. After every pass that
 * rewrites the graph, bp_plan_compact() renumbers it so the invariants below
 * hold again for the next pass:
 *   - ids are topological (a node's inputs have smaller ids);
 *   - every node is live (needed by an output);
 *   - info[] has one entry per node.
 * Everything here is read-only once braid_compile returns, so many executors
 * may share one plan across threads. */
#ifndef BRAID_PASSES_PLAN_H
#define BRAID_PASSES_PLAN_H

#include "graph/graph.h"
#include "passes/program.h"

/* Largest number of devices a plan may list ("cpu,cuda:0,cuda:1,..."). */
#define BP_MAX_DEVICES 64
/* Largest number of GPU architectures a plan's kernels are built for. */
#define BP_MAX_ARCHS 16
/* Largest number of queues (CPU + streams of every GPU) a plan may use. */
#define BP_MAX_QUEUES 256

typedef enum bp_device_kind {
    BP_DEVICE_CPU = 0, /* the host, run by the CPU backend */
    BP_DEVICE_CUDA     /* an NVIDIA GPU, run by the CUDA backend */
} bp_device_kind;

typedef struct bp_device {
    bp_device_kind kind; /* cpu or cuda */
    int32_t index;       /* CUDA device ordinal; 0 for the cpu */
} bp_device;

/* ---- devices' cost profiles (the placement cost model) ------------------- */

/* What the placement pass believes of a device: the public
 * braid_device_profile (defaults in docs/placement.md). */
typedef braid_device_profile bp_device_profile;

/* ---- queues and events -------------------------------------------------- */

/* What a queue carries. A CPU queue is the host dispatcher; CUDA queues are
 * streams. */
typedef enum bp_queue_kind {
    BP_QUEUE_CPU = 0, /* host compute (one per plan) */
    BP_QUEUE_COMPUTE, /* a GPU compute stream */
    BP_QUEUE_H2D,     /* a GPU's host → device copy stream */
    BP_QUEUE_D2H,     /* a GPU's device → host copy stream */
    BP_QUEUE_D2D,     /* device → device copies into this GPU */
    BP_QUEUE_COMM     /* a GPU's collectives (NCCL), overlapping compute */
} bp_queue_kind;

/* An in-order queue: nodes on it run one after another in schedule order. */
typedef struct bp_queue {
    bp_queue_kind kind; /* what runs on it */
    bp_device device;   /* the device it belongs to */
    uint32_t index;     /* n-th queue of this kind on this device */
} bp_queue;

/* A cross-queue dependency: node `after` (on another queue) must complete
 * before node `before` starts. The streams pass adds exactly one for every
 * cross-queue edge the graph needs (direct data edges and the memory pass's
 * reuse edges), and none between nodes of the same queue. */
typedef struct bp_event {
    uint32_t after;  /* producer node id (records the event) */
    uint32_t before; /* consumer node id (waits for it) */
    bool reuse;      /* added by the memory pass for buffer reuse, not for
                        data */
} bp_event;

/* ---- memory --------------------------------------------------------------- */

/* Where a tensor's bytes come from at run time. */
typedef enum bp_storage {
    BP_STORAGE_NONE = 0, /* not materialised (before the memory pass) */
    BP_STORAGE_ARENA,    /* arena `arena` at `offset` (executor-owned).
                            A constant on a GPU is ARENA: the executor
                            uploads attr.data there once, at creation, and
                            no other tensor ever shares those bytes */
    BP_STORAGE_INPUT,    /* the caller's bound input, read in place (inputs
                            are always on the cpu) */
    BP_STORAGE_CONSTANT, /* attr.data of the plan's graph, read in place
                            (cpu constants only) */
    BP_STORAGE_VIEW      /* bytes of tensor `base` at `offset`. `base` is
                            never itself a VIEW, so views resolve in any
                            order once bases are bound. A pure view
                            (reshape, contiguous slice, ...) has info.noop
                            set and does no work; an input of a concat
                            assembled in place is a VIEW of the concat
                            that still runs (noop false): it computes
                            straight into the concat's bytes */
} bp_storage;

typedef enum bp_arena_kind {
    BP_ARENA_DEVICE = 0, /* memory of the device (host malloc for cpu) */
    BP_ARENA_PINNED      /* page-locked host memory for staging copies:
                            on the cpu, holds no tensor; two slots of
                            min(largest host↔GPU copy, 64 MiB) */
} bp_arena_kind;

/* A tensor's memory assignment. */
typedef struct bp_tensor_place {
    bp_storage storage; /* kind of storage, see bp_storage */
    uint32_t arena;     /* ARENA: index in plan->res.arenas */
    uint32_t base;      /* VIEW: node id whose bytes this tensor shares */
    uint64_t offset;    /* ARENA: byte offset in the arena; VIEW: in base */
    uint64_t bytes;     /* numel × dtype size (0 for an empty tensor) */
    uint32_t layout;    /* VIEW: 0 when the view's elements are dense
                           (C order from offset); k > 0 when they are a
                           strided view of base: plan->res.layouts[k - 1]
                           holds their element strides (passes/layout.h) */
} bp_tensor_place;

/* Where a strided view's elements lie in its base: element (i0, .., ir-1)
 * at byte offset + Σ i_d·stride[d]·dtype size. Only matmuls read such a
 * view (as an operand, through leading dimensions and batch strides), and
 * only a matmul writes through one (its result laid out as the permute
 * reading it wants): docs/memory.md, "Strided views". */
typedef struct bp_layout {
    uint32_t node;                  /* the node whose place names it */
    int64_t stride[BRAID_MAX_RANK]; /* element strides per dim (≥ 0) */
} bp_layout;

/* One block of memory an executor allocates, once, at creation. */
typedef struct bp_arena {
    bp_arena_kind kind;    /* device memory or pinned staging */
    bp_device device;      /* where it lives */
    uint64_t bytes;        /* size chosen by the memory pass */
    uint64_t lower_bound;  /* largest sum of simultaneously live bytes in
                              it: no plan can use less */
} bp_arena;

/* ---- ahead-of-time kernels (codegen/aot.c) ----------------------------------- */

/* The plan's kernel module compiled for one GPU architecture. */
typedef struct bp_kernel_binary {
    int sm;            /* compute capability as 10·major + minor (90) */
    void *cubin;       /* CUBIN for exactly sm_<sm>; NULL when only PTX */
    size_t cubin_size; /* bytes in cubin */
    char *ptx;         /* NUL-terminated PTX (JIT for newer GPUs); NULL
                          when absent */
    size_t ptx_size;   /* strlen(ptx) + 1, or 0 */
} bp_kernel_binary;

/* The generated kernels of a plan, built by braid_compile for the
 * architectures the options name (bc_aot_build) or read from a plan file.
 * An executor loads the binary whose sm equals its GPU's, else JITs a PTX
 * of an older architecture, else compiles `source` with NVRTC. */
typedef struct bp_kernels {
    char *source;          /* the module's CUDA C (bc_plan_source), NUL-
                              terminated; NULL when the plan has no
                              generated kernel; owned */
    size_t source_len;     /* strlen(source) */
    uint32_t nkernels;     /* kernels in the module */
    bp_kernel_binary *bin; /* one per architecture, sm ascending; owned */
    uint32_t nbin;         /* entries in bin */
} bp_kernels;

/* Where the plan came from (plan files record and restore it). */
typedef struct bp_provenance {
    braid_graph *source;    /* the user's graph as given to braid_compile
                               (before any pass): for braid_plan_graph,
                               plan files and the CPU fallback; owned */
    bool loaded;            /* read from a plan file */
    char braid_version[32]; /* braid that compiled it ("0.1.0") */
    int nvrtc_version;      /* NVRTC that built its kernels (13000), 0 */
    int64_t created;        /* Unix time it was compiled */
} bp_provenance;

/* ---- the plan --------------------------------------------------------------- */

/* What passes decided about one node. */
typedef struct bp_node_info {
    bp_device device;      /* where it runs (place pass); for a copy node,
                              the destination device */
    uint32_t queue;        /* index in plan->res.queues (streams pass) */
    uint32_t program; /* FUSED: index in plan->res.programs; else BG_NONE */
    uint32_t order;   /* position in plan->res.schedule (schedule pass) */
    bp_tensor_place place; /* where its output lives (memory pass) */
    uint32_t origin;       /* node id in the user's graph this node came
                              from (messages, dumps); BG_NONE for nodes the
                              compiler made */
    bool chunk;            /* made by the chunking pass (for DOT/info) */
    bool noop;             /* does no work at run time (memory pass):
                              inputs, constants, pure views, and a concat
                              whose inputs were computed into its bytes.
                              Executors skip it (its events still count) */
} bp_node_info;

/* A named graph input or output. */
typedef struct bp_io {
    const char *name; /* the input/output name; points into plan->res.graph */
    uint32_t node;    /* node id in plan->res.graph */
    uint64_t bytes;   /* numel × dtype size the caller must bind */
} bp_io;

/* The devices a plan is compiled for: what braid_compile hands the
 * pipeline (runtime/compile.c fills it from the options' device list, or
 * from the devices this process has, probed once). Passes read it and never
 * ask the runtime or CUDA themselves. */
typedef struct bp_device_desc {
    bp_device devices[BP_MAX_DEVICES]; /* devices the plan may use, in the
                                          order listed ("cpu" first) */
    uint32_t ndevices;                 /* entries used in devices (≥ 1) */
    bp_device_profile profile[BP_MAX_DEVICES]; /* the cost model's numbers,
                                                  per devices entry */
    int archs[BP_MAX_ARCHS]; /* GPU architectures (10·major + minor) to
                                build kernels for, ascending */
    uint32_t narchs;         /* entries in archs (0: build none) */
    bool prefer_gpu;         /* the devices list named no "cpu": every node
                                a GPU can run goes to one; the cpu keeps
                                inputs, outputs and constants only */
    bool archs_detected;     /* archs are the GPUs present (or the default
                                sm_90), not named by the caller: a GPU
                                NVRTC cannot build for is then skipped */
} bp_device_desc;

/* Compile-time settings the passes read (from braid_compile_options). */
typedef struct bp_settings {
    uint32_t disabled;        /* bit per pass (BP_PASS_*) turned off */
    uint32_t max_streams;     /* compute streams per GPU (≥ 1) */
    uint32_t chunks;          /* 0: the cost model decides; 1: never;
                                 N: split eligible chains in N */
    const char *dump_after;   /* pass name after which the IR is printed to
                                 stderr (BRAID_DUMP=after:<pass>), or NULL */
} bp_settings;

/* Why the place pass put a node where it did (braid_place_reason). */
typedef enum bp_place_reason {
    BP_PLACE_ONLY_DEVICE = 0, /* the plan lists the cpu alone */
    BP_PLACE_HINT,            /* the node's device hint */
    BP_PLACE_HOST_DATA,       /* an input or constant: host memory */
    BP_PLACE_FOLLOW,          /* a shape op: with its input */
    BP_PLACE_GENERATOR,       /* a generator: where its consumers are */
    BP_PLACE_COST,            /* the cost model's cheapest device */
    BP_PLACE_PREFER_GPU,      /* the devices list named no cpu */
    BP_PLACE_COLLECTIVE,      /* a collective: with its own input */
    BP_PLACE_CHECKED_CAST     /* no longer given: a range-checked cast from
                                 i64 is placed like any elementwise op (its
                                 GPU kernel reports through the run check
                                 record); kept so the numbers stay */
} bp_place_reason;

/* The place pass's decision for one node, kept for `braid info --verbose`
 * (braid_plan_placement_get). Self-contained: later passes rebuild the
 * graph, so nothing here points into it. */
typedef struct bp_place_note {
    uint32_t node;   /* id in plan->res.graph at the place pass */
    uint32_t origin; /* id in the user's graph (plan->prov.source), or
                        BG_NONE for a node the compiler made */
    braid_op op;     /* its op */
    uint8_t device;  /* index in plan->in.devs.devices */
    uint8_t reason;  /* a bp_place_reason */
    bool costed;     /* cost[] and transfer[] are filled in */
} bp_place_note;

/* Every placement note of a plan; cost and transfer are nnotes × ndevices
 * (row per note): the modelled seconds of the note's group (the node and
 * the shape ops that follow it) on each device, and the part of it spent
 * in copies. */
typedef struct bp_placement {
    bp_place_note *notes; /* owned */
    uint32_t nnotes;      /* entries in notes */
    uint32_t ndevices;    /* columns in cost and transfer */
    double *cost;         /* owned */
    double *transfer;     /* owned */
} bp_placement;

/* What braid_compile was asked for: the inputs of the pipeline. */
typedef struct bp_compile_input {
    braid_compile_options opts; /* the options compiled with; string
                                   fields point to the owned copies below */
    char *devices_text;         /* owned copy of opts.devices, or NULL */
    char *dump_text;            /* owned copy of opts.dump_after, or NULL */
    char *archs_text;           /* owned copy of opts.archs, or NULL */
    bp_settings settings;       /* what the passes read of the options */
    bp_device_desc devs;        /* the devices, their profiles and archs */
} bp_compile_input;

/* What the passes decided: the plan as plain data, what executors run,
 * DOT shows and plan files store. */
typedef struct bp_result {
    braid_graph *graph;         /* working copy of the graph; owned */
    bp_node_info *info;         /* per node id; owned */
    uint32_t ninfo;             /* entries in info (= graph->nnodes between
                                   passes; bp_plan_sync_info catches up) */
    uint32_t info_cap;          /* allocated entries */
    uint32_t *schedule;         /* node ids in issue order, inputs before
                                   users (schedule pass); owned */
    uint32_t nschedule;         /* entries in schedule (= graph->nnodes
                                   after the schedule pass) */
    bp_queue *queues;           /* queues[0] is the CPU queue; owned */
    uint32_t nqueues;           /* entries in queues */
    bp_event *events;           /* cross-queue edges; owned */
    uint32_t nevents;           /* entries in events */
    bp_program *programs;       /* fused nodes' expressions; owned */
    uint32_t nprograms;         /* entries in programs */
    uint32_t programs_cap;      /* allocated entries (bp_grow) */
    bp_arena *arenas;           /* memory to allocate; owned */
    uint32_t narenas;           /* entries in arenas */
    bp_layout *layouts;         /* strided views' strides (memory pass);
                                   owned */
    uint32_t nlayouts;          /* entries in layouts */
    uint32_t layouts_cap;       /* allocated entries (bp_grow) */
    bp_io *inputs;              /* every graph input, in id order; owned */
    uint32_t ninputs;           /* entries in inputs */
    bp_io *outputs;             /* every named output, in the order added;
                                   owned */
    uint32_t noutputs;          /* entries in outputs */
} bp_result;

/* A plan: one struct per concern. Passes write `in` (bp_plan_new) and
 * `res`; codegen writes `kernels`; braid_compile and the loader write
 * `prov` and `report`. Readers outside passes/ take the part they need
 * through the accessors below; tools/ and bench/ see none of it (the
 * public API in include/braid/braid.h describes a plan). */
/* Most bytes of a GPU model's name in a tuning record (with its NUL). */
#define BP_TUNE_DEVICE_MAX 64

/* What an executor chose for one conv node on one kind of GPU (cuDNN's
 * algorithm, found by timing: runtime/cuda/cuda_conv.c), kept in the plan
 * so that plan files carry it (docs/plan-format.md, TUNING) and a later
 * executor on the same GPU model and cuDNN version times nothing. */
typedef struct bp_conv_choice {
    uint32_t node;                   /* the conv node (plan graph id) */
    char device[BP_TUNE_DEVICE_MAX]; /* GPU model, cudaDeviceProp.name */
    int32_t cc;                      /* compute capability, major·10+minor */
    int32_t cudnn;                   /* cudnnGetVersion() it was timed on */
    int32_t algo;       /* cuDNN algorithm, or -1: braid's own kernel won */
    int32_t math;       /* cuDNN math type the algorithm runs with */
    uint64_t workspace; /* bytes the algorithm needs */
} bp_conv_choice;

/* The plan's tuning records. The one part of a plan an executor writes
 * (its choices, so braid_plan_save can keep them): every access goes
 * through passes/plan_tuning.c, under one process-wide lock. */
typedef struct bp_tuning {
    bp_conv_choice *conv; /* records, at most one per (node, device, cc,
                             cudnn); owned */
    uint32_t nconv;       /* entries in conv */
    uint32_t cap;         /* allocated entries */
} bp_tuning;

/* The record for (node, device, cc, cudnn) into *out; false when none. */
bool bp_tuning_find(const struct braid_plan *p, uint32_t node,
                    const char *device, int32_t cc, int32_t cudnn,
                    bp_conv_choice *out);
/* Adds c, or replaces the record with c's key. False when out of memory
 * (the plan is unchanged: a choice not kept is only timed again). */
bool bp_tuning_note(const struct braid_plan *p, const bp_conv_choice *c);
/* A copy of every record, sorted by (node, device, cc, cudnn): *out
 * malloc'ed (NULL when there are none). False when out of memory. */
bool bp_tuning_snapshot(const struct braid_plan *p, bp_conv_choice **out,
                        uint32_t *n);
/* The records' order: by node, device, cc, cudnn (<0, 0, >0). */
int bp_tuning_cmp(const bp_conv_choice *x, const bp_conv_choice *y);
void bp_tuning_free(bp_tuning *t);

struct braid_plan {
    bp_compile_input in;         /* what it was compiled for */
    bp_result res;               /* what the passes decided */
    bp_kernels kernels;          /* ahead-of-time kernels (bc_aot_build) */
    bp_provenance prov;          /* where it came from */
    braid_compile_report report; /* time per pass, kernels, NVRTC */
    bp_placement placement;      /* the place pass's decisions (empty for a
                                    plan loaded from a file) */
    bp_tuning tune;              /* executors' choices (plan_tuning.c) */
};

typedef struct braid_plan bp_plan;

static inline const bp_compile_input *bp_plan_input(const bp_plan *p) {
    return &p->in;
}
static inline const bp_device_desc *bp_plan_devices(const bp_plan *p) {
    return &p->in.devs;
}
static inline const bp_result *bp_plan_result(const bp_plan *p) {
    return &p->res;
}
static inline const bp_kernels *bp_plan_kernels(const bp_plan *p) {
    return &p->kernels;
}
static inline const bp_provenance *bp_plan_provenance(const bp_plan *p) {
    return &p->prov;
}

/* One device name [s, s + len), exactly as bg_device_parse accepts it, as
 * a bp_device; false when it is not one (passes/devices.c). */
bool bp_device_parse(const char *s, size_t len, bp_device *d);
/* "12 nodes on cuda:7 (the first: %3 matmul \"mm0\")" into buf: what the
 * plan runs on device d, naming the first scheduled node there that the
 * user wrote (copies and other compiler-made nodes are not named: the
 * user never saw them). For messages about a device that is missing. */
const char *bp_device_use_str(const bp_plan *p, bp_device d, char *buf,
                              size_t size);

/* "cpu" / "cuda:3" into buf (always NUL-terminated); returns buf. */
const char *bp_device_str(bp_device d, char *buf, size_t size);

static inline bool bp_device_equal(bp_device a, bp_device b) {
    return a.kind == b.kind && a.index == b.index;
}

#endif /* BRAID_PASSES_PLAN_H */
