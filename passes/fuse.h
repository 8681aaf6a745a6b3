/* passes/fuse.h — internals of the fuse pass (prefix bp_fuse_).
 *
 * passes/fuse.c finds the groups (docs/fusion.md states the rules);
 * passes/fuse_program.c turns each group into a BRAID_OP_FUSED node with
 * its program. */
#ifndef BRAID_PASSES_FUSE_H
#define BRAID_PASSES_FUSE_H

#include "passes/passes.h"

/* Most member nodes in one group. Each member adds one instruction and at
 * most three loads or constants, so a program has at most
 * 4 · BP_FUSE_MAX_MEMBERS + 4 instructions (the limit of any program,
 * BP_PROGRAM_MAX_INSTR, is above that). */
#define BP_FUSE_MAX_MEMBERS 60
/* Most members of one group stored into variables (BP_INSTR_STORE): one
 * instruction each, keeping 4 · BP_FUSE_MAX_MEMBERS + 4 +
 * BP_FUSE_MAX_STORES within BP_PROGRAM_MAX_INSTR. */
#define BP_FUSE_MAX_STORES 8
/* Most members of a pool's prologue (recomputed at every tap on the GPU:
 * an activation or a short chain, not a long expression). */
#define BP_FUSE_POOL_MAX_MEMBERS 8

/* One group found by the pass. */
typedef struct bp_fuse_group {
    bp_program_kind kind; /* what program it becomes */
    uint32_t out;         /* the node the fused node replaces: the group's
                             root, its reduction or its epilogue's last
                             op */
    uint32_t root;        /* ELEMENTWISE: = out; REDUCE, POOL: the
                             reduction's or pool's input (the prologue's
                             result); MATMUL: the matmul node */
    uint32_t first;       /* index of its first member in the pass's member
                             list */
    uint32_t nmembers;    /* members: elementwise, broadcast_to and (in
                             ELEMENTWISE groups) gather nodes in ascending
                             id (MATMUL: the bias add and the activation);
                             the reduction, pool and matmul are not
                             members; in ELEMENTWISE groups a member
                             other than the root with an assign among
                             its uses is stored into that variable */
} bp_fuse_group;

/* The pass's arrays bp_fuse_build works in, one entry per node id below
 * n (allocated once per pass: a per-group allocation of n entries would
 * make the pass quadratic). */
typedef struct bp_fuse_scratch {
    uint32_t n;     /* nodes when the pass started */
    bool *member;   /* in the group being built (all false between
                       groups) */
    uint32_t *vmap; /* per member: its instruction */
    uint32_t *rep;  /* per group output (and stored member): the fused node
                       replacing it, or BG_NONE */
    const uint32_t *assign_of; /* per node: the assign taking it as its
                                  value, or BG_NONE */
} bp_fuse_scratch;

/* Builds group g's program and appends its fused node, noting it in
 * sc->rep[g->out]. Uses are not rewired here: the pass does that once for
 * every group (bp_plan_replace_map), so the graph keeps its original ids
 * while groups are built. members: the pass's member list. */
braid_status bp_fuse_build(bp_plan *plan, const bp_fuse_group *g,
                           const uint32_t *members, bp_fuse_scratch *sc);

#endif /* BRAID_PASSES_FUSE_H */
