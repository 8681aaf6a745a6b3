/* graph/names.c — hash indexes of input and output names.
 *
 * Builders check names for uniqueness on every input and output; a scan per
 * check would make building (and parsing) n inputs quadratic. The indexes
 * are caches: any change the incremental path cannot follow (growth, a
 * rename, renumbering by the compiler, a failed allocation) marks them
 * stale, and the next lookup rebuilds from the graph in linear time. */
#include "graph/graph.h"

#include <limits.h>
#include <string.h>

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static const char *entry_name(const braid_graph *g, bool inputs, uint32_t e) {
    return inputs ? g->nodes[e].name : g->outputs[e].name;
}

/* Inserts entry e; false when the table is (too) full. */
static bool insert(bg_name_index *ix, const braid_graph *g, bool inputs,
                   uint32_t e) {
    if (ix->cap == 0 || (ix->count + 1) * 2 > ix->cap) return false;
    uint32_t mask = ix->cap - 1, h = hash_name(entry_name(g, inputs, e));
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        if (ix->slot[i].entry == 0) {
            ix->slot[i] = (bg_name_slot){e + 1, h};
            ix->count++;
            return true;
        }
    }
}

/* Rebuilds ix from the graph with room to grow; false when out of memory
 * (recorded on g by bg_alloc). */
static bool rebuild(braid_graph *g, bg_name_index *ix, bool inputs) {
    uint32_t n = 0, total = inputs ? g->nnodes : g->noutputs;
    for (uint32_t e = 0; e < total; e++)
        n += !inputs || (g->nodes[e].op == BRAID_OP_INPUT && g->nodes[e].name);
    uint32_t cap = 16;
    while (cap < 4 * (n + 1)) cap *= 2;
    if (cap != ix->cap) {
        bg_name_slot *slot = bg_alloc(g, cap * sizeof *slot);
        if (!slot) return false;
        bg_free(g, ix->slot, ix->cap * sizeof *ix->slot);
        ix->slot = slot;
        ix->cap = cap;
    }
    memset(ix->slot, 0, ix->cap * sizeof *ix->slot);
    ix->count = 0;
    for (uint32_t e = 0; e < total; e++)
        if (!inputs ||
            (g->nodes[e].op == BRAID_OP_INPUT && g->nodes[e].name))
            insert(ix, g, inputs, e);
    ix->stale = false;
    return true;
}

static uint32_t find(braid_graph *g, bg_name_index *ix, bool inputs,
                     const char *name) {
    if ((ix->stale || ix->cap == 0) && !rebuild(g, ix, inputs)) {
        /* Out of memory: answer by scanning, slowly but correctly. */
        uint32_t total = inputs ? g->nnodes : g->noutputs;
        for (uint32_t e = 0; e < total; e++) {
            const char *s = entry_name(g, inputs, e);
            if ((!inputs || g->nodes[e].op == BRAID_OP_INPUT) && s &&
                strcmp(s, name) == 0)
                return e;
        }
        return BG_NONE;
    }
    uint32_t mask = ix->cap - 1, h = hash_name(name);
    for (uint32_t i = h & mask; ix->slot[i].entry; i = (i + 1) & mask) {
        uint32_t e = ix->slot[i].entry - 1;
        if (ix->slot[i].hash == h &&
            strcmp(entry_name(g, inputs, e), name) == 0)
            return e;
    }
    return BG_NONE;
}

uint32_t bg_find_input(braid_graph *g, const char *name) {
    return find(g, &g->input_names, true, name);
}

uint32_t bg_find_output(braid_graph *g, const char *name) {
    return find(g, &g->output_names, false, name);
}

void bg_names_added_input(braid_graph *g, uint32_t id) {
    bg_name_index *ix = &g->input_names;
    if (!ix->stale && !insert(ix, g, true, id)) ix->stale = true;
}

void bg_names_added_output(braid_graph *g, uint32_t i) {
    bg_name_index *ix = &g->output_names;
    if (!ix->stale && !insert(ix, g, false, i)) ix->stale = true;
}

void bg_names_invalidate(braid_graph *g) {
    g->input_names.stale = g->output_names.stale = true;
}

void bg_names_free(braid_graph *g) {
    bg_free(g, g->input_names.slot,
            g->input_names.cap * sizeof *g->input_names.slot);
    bg_free(g, g->output_names.slot,
            g->output_names.cap * sizeof *g->output_names.slot);
    g->input_names = g->output_names = (bg_name_index){0};
}

int bg_edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    int row[BG_EDIT_MAX + 1];
    if (na > BG_EDIT_MAX || nb > BG_EDIT_MAX) return INT_MAX;
    for (size_t j = 0; j <= nb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}
