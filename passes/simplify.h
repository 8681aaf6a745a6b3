/* passes/simplify.h — internals of the simplify pass (prefix bp_simp_).
 *
 * The pass is one forward sweep over the plan's graph (passes/simplify.c);
 * the per-node rewrites live in passes/simplify_rules.c (algebraic
 * identities, what is known of constant values) and passes/simplify_fold.c
 * (constant folding through the reference evaluator). The rules themselves
 * are listed at the top of passes/simplify.c and in docs/simplify.md. */
#ifndef BRAID_PASSES_SIMPLIFY_H
#define BRAID_PASSES_SIMPLIFY_H

#include "passes/passes.h"

/* Largest result (elements) folded into a constant node. Results whose
 * elements are all equal become fill nodes of any size. */
#define BP_SIMP_FOLD_MAX 4096
/* Largest operand (elements) the folder hands to the reference evaluator,
 * so that folding a small slice of a huge generator stays cheap. */
#define BP_SIMP_FOLD_INPUT_MAX 65536

/* Per-node facts (bp_simp.facts bits), computed once per canonical node. */
#define BP_SIMP_SPLAT_KNOWN 1u /* SPLAT and NO_NEGZERO below are known */
#define BP_SIMP_SPLAT 2u       /* every element holds the bits of splat[id] */
#define BP_SIMP_NO_NEGZERO 4u  /* no element can be -0.0 (float dtypes) */

/* A slot of the CSE table: a node and the low 32 bits of its key's hash,
 * kept beside it so that a probe past other nodes reads no node and no
 * per-node array (at a million nodes, each would be a miss to memory). */
typedef struct bp_simp_slot {
    uint32_t node; /* node id, BG_NONE when free */
    uint32_t hash; /* (uint32_t)node_hash(node) */
} bp_simp_slot;

/* State of one bp_simplify run. Per-node arrays have cap entries and grow
 * with the graph as the pass appends nodes. */
typedef struct bp_simp {
    bp_plan *plan;       /* the plan being simplified */
    uint32_t cap;        /* entries allocated in the per-node arrays */
    uint32_t *rep;       /* per node: the canonical node now standing for it
                            (itself when kept); BG_NONE before the visit */
    uint8_t *facts;      /* per node: BP_SIMP_* bits */
    double *splat;       /* per node with BP_SIMP_SPLAT: the element value
                            (bg_store of it gives back the element's bits) */
    bp_simp_slot *table; /* CSE hash table (linear probing), node BG_NONE
                            when free */
    uint32_t tcap;       /* table slots (a power of two) */
    uint32_t tcount;     /* occupied slots */
    braid_status status; /* first failure (message set), BRAID_OK */
} bp_simp;

/* ---- the sweep (simplify.c) ---------------------------------------------- */

/* Appends a node standing in for node `like` (whose name, device hint and
 * origin it takes over), processes it like any other node and returns the
 * canonical id now standing for it, or BG_NONE when out of memory (message
 * set). inputs must be canonical. data (constants only) is copied. */
uint32_t bp_simp_emit(bp_simp *s, uint32_t like, braid_op op,
                      const uint32_t *inputs, uint32_t ninputs,
                      braid_dtype dtype, int rank, const int64_t *dims,
                      const bg_attrs *attr, const void *data);

/* ---- facts and identities (simplify_rules.c) ----------------------------- */

/* Sources whose values are known at compile time: constant, fill, iota,
 * random_uniform, random_normal (input is not one). */
bool bp_simp_is_value_source(braid_op op);
/* Whether canonical node id is a splat (every element equal, known value);
 * the value goes to *v. */
bool bp_simp_splat(bp_simp *s, uint32_t id, double *v);
/* Whether no element of canonical node id can be -0.0 (true for non-float
 * dtypes). */
bool bp_simp_no_negzero(bp_simp *s, uint32_t id);
/* Algebraic identities: the canonical id that node id reduces to (maybe a
 * newly emitted node), id itself when no rule applies, BG_NONE when out of
 * memory. id's inputs are canonical. */
uint32_t bp_simp_identity(bp_simp *s, uint32_t id);

/* ---- constant folding (simplify_fold.c) ---------------------------------- */

/* Whether every executor computes node n's op on its dtype bit for bit like
 * the reference evaluator (correctly rounded or exact ops only). */
bool bp_simp_exact_op(const braid_graph *g, const bg_node *n);
/* Folds node id when every input is a value source: into a fill when the
 * result is a splat, else into a constant when it has at most
 * BP_SIMP_FOLD_MAX elements. Returns the canonical replacement, id itself
 * when the node is not folded, or BG_NONE on failure (message set). */
uint32_t bp_simp_fold(bp_simp *s, uint32_t id);

#endif /* BRAID_PASSES_SIMPLIFY_H */
