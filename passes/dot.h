/* passes/dot.h — shared pieces of the DOT views (prefix bp_dot_).
 *
 * passes/dot.c holds the public entry points (braid_graph_to_dot,
 * braid_plan_to_dot), the graph view and these helpers; passes/dot_plan.c
 * builds the plan view. Both build a libcgraph graph and let agwrite print
 * it, so quoting and escaping of the DOT syntax is libcgraph's job; the
 * helpers here only escape what Graphviz interprets inside labels. */
#ifndef BRAID_PASSES_DOT_H
#define BRAID_PASSES_DOT_H

#include "passes/plan.h"

#include <cgraph.h>

/* A growing label string (malloc'd). Appends after a failed allocation are
 * ignored and leave failed set, so builders check once at the end. */
typedef struct bp_text {
    char *s;     /* the text, NUL-terminated once anything was appended */
    size_t len;  /* bytes used, NUL excluded */
    size_t cap;  /* bytes allocated */
    bool failed; /* an allocation failed */
} bp_text;

void bp_text_printf(bp_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends user text (names, hints) so Graphviz shows it literally:
 * backslashes doubled, control bytes (and every byte ≥ 0x80 when s is not
 * well-formed UTF-8) as '?', and in record labels (record true) the field
 * syntax characters {}|<> escaped. */
void bp_text_user(bp_text *t, const char *s, bool record);
/* The text so far ("" when empty); NULL after a failed allocation. */
const char *bp_text_str(const bp_text *t);
void bp_text_reset(bp_text *t); /* empties it, keeping the allocation */
void bp_text_free(bp_text *t);

/* libcgraph discipline that numbers named objects in creation order, so
 * equal inputs give equal output (passes/dot_ids.c). */
Agdisc_t *bp_dot_disc(void);

/* agsafeset with const strings; false when libcgraph fails (memory). */
bool bp_dot_set(void *obj, const char *name, const char *value);
/* The node named "<prefix><id>" in parent (created, and added to the root
 * graph as well), or NULL when out of memory. */
Agnode_t *bp_dot_node(Agraph_t *parent, const char *prefix, uint32_t id);
/* A new anonymous edge t → h of the root graph g (parallel edges stay
 * separate), or NULL when out of memory. */
Agedge_t *bp_dot_edge(Agraph_t *g, Agnode_t *t, Agnode_t *h);

/* Fill colour of a device: one for the cpu, one per CUDA ordinal (a
 * palette of 8, repeating). */
const char *bp_dot_colour(bp_device d);

/* "1.50 MiB" style size into buf; returns buf. */
const char *bp_dot_bytes(uint64_t bytes, char *buf, size_t size);

/* The outputs each node feeds, so a label finds them without a search
 * over all outputs (which made DOT quadratic in a graph with many
 * outputs): head[id] is node id's first output index, next[i] the next
 * output of the same node, in the order they were added; BG_NONE ends. */
typedef struct bp_dot_outs {
    uint32_t *head; /* per node id */
    uint32_t *next; /* per output index */
} bp_dot_outs;

/* For nout outputs, output i feeding node node_of(outs, i) (< nnodes).
 * False when out of memory. */
bool bp_dot_outs_init(bp_dot_outs *o, uint32_t nnodes, uint32_t nout,
                      uint32_t (*node_of)(const void *outs, uint32_t i),
                      const void *outs);
void bp_dot_outs_free(bp_dot_outs *o);

/* Builds the plan view of p into g (opened by braid_plan_to_dot with the
 * shared attribute defaults declared). False when out of memory. */
bool bp_dot_build_plan(const bp_plan *p, Agraph_t *g);

#endif /* BRAID_PASSES_DOT_H */
