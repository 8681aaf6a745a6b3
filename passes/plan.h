/* passes/plan.h — the compiled plan as plain data (prefix bp_).
 *
 * A plan is what passes produce and what executors (and later plan files and
 * DOT export) consume. It owns a private clone of the user's graph, so node
 * ids in the plan are the user's ids and the plan never refers back to the
 * user's graph. Everything here is read-only once braid_compile returns, so
 * many executors may share one plan across threads. */
#ifndef BRAID_PASSES_PLAN_H
#define BRAID_PASSES_PLAN_H

#include "graph/graph.h"

/* Largest number of devices a plan may list ("cpu,cuda:0,cuda:1,..."). */
#define BP_MAX_DEVICES 64

typedef enum bp_device_kind {
    BP_DEVICE_CPU = 0, /* the host, run by the CPU backend */
    BP_DEVICE_CUDA     /* an NVIDIA GPU, run by the CUDA backend */
} bp_device_kind;

typedef struct bp_device {
    bp_device_kind kind; /* cpu or cuda */
    int32_t index;       /* CUDA device ordinal; 0 for the cpu */
} bp_device;

/* Where a tensor's bytes come from at run time. */
typedef enum bp_storage {
    BP_STORAGE_NONE = 0, /* not scheduled: the tensor is never materialised */
    BP_STORAGE_BUFFER,   /* an executor-owned buffer (arena + offset) */
    BP_STORAGE_INPUT,    /* the caller's bound input, read in place */
    BP_STORAGE_CONSTANT  /* attr.data of the plan's graph, read in place */
} bp_storage;

/* A tensor's memory assignment. While each tensor gets a buffer of its own,
 * arena is the buffer's index and offset is 0; the memory pass will later
 * pack tensors into one arena per device and fill offset. */
typedef struct bp_tensor_place {
    bp_storage storage; /* kind of storage, see bp_storage */
    bp_device device;   /* the device whose memory holds the bytes */
    uint32_t arena;     /* BP_STORAGE_BUFFER: index in plan->arenas */
    uint64_t offset;    /* BP_STORAGE_BUFFER: byte offset in that arena */
    uint64_t bytes;     /* numel × dtype size (0 for an empty tensor) */
} bp_tensor_place;

/* One block of memory an executor allocates, once, at creation. */
typedef struct bp_arena {
    bp_device device; /* where it lives */
    uint64_t bytes;   /* size in bytes (the executor rounds up to 64) */
    uint32_t node;    /* first tensor placed in it (for error messages) */
} bp_arena;

/* A named graph input or output. */
typedef struct bp_io {
    const char *name; /* the input/output name; points into plan->graph */
    uint32_t node;    /* node id in plan->graph */
    uint64_t bytes;   /* numel × dtype size the caller must bind */
} bp_io;

struct braid_plan {
    braid_graph *graph;         /* private clone of the compiled graph; owned */
    braid_compile_options opts; /* the options compiled with; opts.devices
                                   points to devices_text (or is NULL) */
    char *devices_text;         /* owned copy of the devices string, or NULL */
    bp_device devices[BP_MAX_DEVICES]; /* the devices the plan may use, in
                                          the order listed ("cpu" first when
                                          detected) */
    uint32_t ndevices;                 /* entries used in devices (≥ 1) */
    uint32_t nnodes;        /* graph->nnodes, for the per-node arrays */
    bool *live;             /* per node id: needed for an output; owned */
    uint32_t *schedule;     /* ids of live nodes in execution order,
                               inputs before users; owned */
    uint32_t nschedule;     /* entries in schedule */
    bp_device *node_device; /* per node id: where it runs (meaningful for
                               scheduled nodes); owned */
    bp_tensor_place *place; /* per node id: where its output lives;
                               BP_STORAGE_NONE when not scheduled; owned */
    bp_arena *arenas;       /* buffers to allocate; owned */
    uint32_t narenas;       /* entries in arenas */
    bp_io *inputs;          /* every graph input, in id order; owned */
    uint32_t ninputs;       /* entries in inputs */
    bp_io *outputs;         /* every named output, in the order added;
                               owned */
    uint32_t noutputs;      /* entries in outputs */
};

typedef struct braid_plan bp_plan;

/* "cpu" / "cuda:3" into buf (always NUL-terminated); returns buf. */
const char *bp_device_str(bp_device d, char *buf, size_t size);

static inline bool bp_device_equal(bp_device a, bp_device b) {
    return a.kind == b.kind && a.index == b.index;
}

#endif /* BRAID_PASSES_PLAN_H */
