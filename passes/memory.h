/* passes/memory.h — internals of the memory pass (passes/memory*.c).
 *
 * The pass works on "buffers": a tensor that owns bytes (storage ARENA) is a
 * buffer root; views map onto the root whose bytes they share; an
 * elementwise node written in place over a dead input joins that input's
 * buffer (union-find over roots). After the decisions each buffer group is
 * one interval of bytes in its device's arena, packed against the others
 * under happens-before (docs/memory.md). */
#ifndef BRAID_PASSES_MEMORY_H
#define BRAID_PASSES_MEMORY_H

#include "passes/passes.h"

/* Alignment of every arena tensor: 256 bytes on GPUs (what cudaMalloc
 * gives and vector loads like), 64 on the cpu (a cache line). */
#define BP_MEM_ALIGN_GPU 256u
#define BP_MEM_ALIGN_CPU 64u
/* Pinned staging: two slots (one filling while the other transfers) of
 * min(largest host↔device copy, this) bytes. */
#define BP_MEM_STAGING_SLOT ((uint64_t)64 << 20)

/* Happens-before over the schedule: queue order plus events. */
typedef struct bp_mem_hb {
    uint32_t n;        /* nodes (graph->nnodes) */
    uint32_t nq;       /* dense queues: the plan's queues that hold nodes */
    uint32_t *pos;     /* per node: schedule position */
    uint32_t *queue;   /* per node: dense queue index */
    uint32_t *qpos;    /* per node: position within its queue */
    uint32_t *qstart;  /* per dense queue: first index in qnode (nq + 1) */
    uint32_t *qnode;   /* nodes grouped by queue, in queue order */
    int32_t *clock;    /* n × nq: per node, per queue, the last queue
                          position known complete before the node starts
                          (-1: none) */
    uint32_t *estart;  /* per node: first index in ewait (n + 1) */
    uint32_t *ewait;   /* the plan's event sources each node waits for */
    uint32_t *xhead;   /* per node: newest added wait, or BG_NONE */
    uint32_t *xsrc;    /* per added wait: the node waited for */
    uint32_t *xdst;    /* per added wait: the waiting node */
    uint32_t *xnext;   /* per added wait: the next older one of xdst */
    uint32_t nx;       /* added waits (the memory pass's reuse events) */
    uint32_t xcap;     /* entries allocated in xsrc / xdst / xnext */
    uint32_t valid;    /* clocks are up to date at schedule positions below
                          this (an added wait lowers it to its waiter's;
                          bp_mem_hb_need raises it) */
    uint64_t cells;    /* clock cells computed so far (nodes × nq) */
} bp_mem_hb;

/* One buffer group: the bytes a set of tensors shares over time. */
typedef struct bp_mem_group {
    uint32_t device;   /* index in plan->in.devs.devices */
    uint64_t bytes;    /* largest member, rounded up to the alignment */
    uint32_t first;    /* schedule position of its first access */
    uint32_t last;     /* schedule position of its last access (UINT32_MAX
                          when it lives to the end of the run) */
    bool to_end;       /* holds an output: live until the run ends */
    bool whole_run;    /* a GPU constant uploaded at executor creation:
                          never shares bytes */
    uint32_t wstart;   /* first index of its writers in the writer list */
    uint32_t nwriters; /* number of nodes writing it */
    uint64_t offset;   /* assigned offset in the arena */
    uint32_t safe;     /* every node scheduled before this position
                          happens-before every writer (a quick test) */
} bp_mem_group;

/* The pass's working state. */
typedef struct bp_mem {
    bp_plan *plan;       /* the plan placed */
    bp_mem_hb hb;        /* happens-before tables */
    uint32_t *ustart;    /* per node: first index in users (n + 1) */
    uint32_t *users;     /* readers of each node, one per reading node */
    bool *output;        /* per node: is a graph output */
    bool *to_end;        /* per root: its bytes hold an output (live to the
                            end of the run); in-place merges OR it */
    uint32_t *base;      /* per node: VIEW base (immediate, then root) */
    uint64_t *voff;      /* per node: VIEW offset in base */
    uint32_t *parent;    /* per node: union-find parent for in-place */
    uint32_t *gid;       /* per node: group index of its bytes, or BG_NONE */
    bp_mem_group *group; /* the groups */
    uint32_t ngroups;    /* entries in group */
    uint32_t *writer;    /* writers of every group, grouped (wstart) */
    int32_t *lastacc;    /* ngroups × nq: last queue position of an access
                            per queue (-1: none) */
    int32_t *known;      /* ngroups × nq: min over writers of their clock:
                            what is complete before any writer starts */
    uint32_t *qscratch;  /* 2 × nq: bp_mem_order's scratch */
    bool reuse;          /* BRAID_PASS_REUSE not disabled */
    uint32_t event_budget; /* reuse events the greedy may still add */
    uint32_t sweep_events; /* reuse events the sweep may still add */
    uint64_t sweep_cells;  /* clock cells (hb.cells) past which the sweep
                              adds no more reuse events */
    uint32_t horizon;      /* bp_mem_known and bp_mem_order bring clocks up
                              to date up to this schedule position only
                              (UINT32_MAX: all); later clocks may lack
                              recent waits, which only makes them smaller:
                              "known" errs on the safe side */
} bp_mem;

/* ---- memory_hb.c --------------------------------------------------------- */

/* Positions, queue tables, event lists and clocks of plan. */
braid_status bp_mem_hb_init(bp_mem_hb *hb, const bp_plan *plan);
void bp_mem_hb_free(bp_mem_hb *hb);
/* Recomputes every clock from queue order and the event lists. */
void bp_mem_hb_clocks(bp_mem_hb *hb, const bp_plan *plan);
/* Brings the clocks up to date at schedule positions ≤ pos (only those
 * from hb->valid on are recomputed). Call before reading the clock of a
 * node at pos once waits have been added or dropped. */
void bp_mem_hb_need(bp_mem_hb *hb, const bp_plan *plan, uint32_t pos);
/* Adds a wait of node b on node a (a reuse event, a earlier in the
 * schedule). The clocks from b's position on are recomputed lazily, by
 * bp_mem_hb_need: a run of waits added in schedule order costs the span
 * they cover, not the rest of the plan each. */
braid_status bp_mem_hb_add_wait(bp_mem_hb *hb, const bp_plan *plan,
                                uint32_t a, uint32_t b);
/* Drops the added waits after the first nx (clocks recomputed lazily). */
void bp_mem_hb_truncate(bp_mem_hb *hb, const bp_plan *plan, uint32_t nx);

/* ---- memory_views.c -------------------------------------------------------- */

/* Storage of inputs, constants and views (reshape, contiguous slice,
 * layout-preserving permute / broadcast_to, concat written in place);
 * sets info.place.storage, info.noop, m->base and m->voff (bases resolved
 * to roots). */
braid_status bp_mem_views(bp_mem *m);
/* An assign's value computed straight into its variable's bytes where
 * legal (memory_state.c); before views are resolved to roots. */
braid_status bp_mem_assigns(bp_mem *m);
/* Node y's kernel stays correct when its output is exactly the bytes of a
 * same-shaped input (memory_views.c). */
bool bp_mem_kernel_allows_alias(const bp_plan *p, uint32_t y);
/* Strided views (memory_strided.c): view ops only matmuls read become
 * VIEWs with a layout, a matmul read only by a permute computes into the
 * permute's bytes; resets plan->res.layouts. After the contiguous views
 * are classified, before concats and bases are resolved. */
braid_status bp_mem_strided(bp_mem *m);
/* In-place elementwise: unions a node with a dead input's buffer. */
void bp_mem_in_place(bp_mem *m);
/* Union-find root of node id. */
uint32_t bp_mem_find(bp_mem *m, uint32_t id);

/* ---- memory_pack.c ----------------------------------------------------------- */

/* Builds the groups with their lifetimes, writers and access summaries. */
braid_status bp_mem_groups(bp_mem *m);
/* Recomputes known[g] and group g's safe position from the clocks. */
void bp_mem_known(bp_mem *m, uint32_t g);
/* Events that let group b's writers know every access in acc (per queue,
 * the last position accessed; -1: none) complete: from such accesses to
 * each writer of b not yet knowing them, latest first, none from an access
 * that one already chosen for that writer follows (happens-before it).
 * Counts them into *count and, when add is set, adds them (m->hb). */
braid_status bp_mem_order(bp_mem *m, const int32_t *acc, uint32_t b, bool add,
                          uint32_t *count);
/* Lower bound of device d's arena: the largest sum of the (aligned) sizes
 * of groups live at one schedule position. */
uint64_t bp_mem_lower_bound(const bp_mem *m, uint32_t d);
/* Assigns group offsets in device d's arena; returns the arena size. May
 * add reuse events (plan->res.events, m->hb). */
braid_status bp_mem_pack(bp_mem *m, uint32_t d, uint64_t *bytes);
/* Alignment of tensors on device index d. */
uint64_t bp_mem_align(const bp_plan *p, uint32_t d);

/* Conflicting pairs (memory_index.h) above which a device's groups are
 * packed by the sweep instead of the greedy: the greedy's work is about
 * this many pair tests per try. */
#define BP_MEM_GREEDY_PAIRS ((uint64_t)1 << 21)
/* The limit in force (BP_MEM_GREEDY_PAIRS; tests set 0 to send small
 * plans through the sweep). Not for concurrent change. */
extern uint64_t bp_mem_greedy_pairs;
/* Tests set this to 1 to pack every arena of a plan with several queues
 * by the sweep first and the greedy after (memory_pack.c,
 * sweep_then_greedy), as arenas whose groups outnumber the greedy's event
 * budget are; 2 also keeps the sweep's arena where the greedy's is smaller
 * (so the way back to the sweep's placement and events is taken). 0 by
 * default. Not for concurrent change. */
extern int bp_mem_sweep_first;

/* ---- memory_sweep.c
 * ---------------------------------------------------------- */

/* Clock cells the sweep may recompute for its reuse events, per node and
 * queue of the plan (memory.c, sweep_budget). */
#define BP_MEM_SWEEP_CELLS 16u

/* Packs groups order[0..n) in schedule order, first fit, releasing a
 * group's bytes once every later group may reuse them without an event;
 * returns the arena size. O(n log n). */
braid_status bp_mem_pack_sweep(bp_mem *m, const uint32_t *order, uint32_t n,
                               uint64_t *bytes);

#endif /* BRAID_PASSES_MEMORY_H */
