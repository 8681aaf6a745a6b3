/* graph/graph.c — graph lifecycle, the allocator hook, error recording and
 * the read-only queries of the public API. */
#include "graph/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- allocator -------------------------------------------------------------
 */

/* The default hook: the C library, Lua-style (size 0 frees). */
static void *bg_default_alloc(void *user, void *ptr, size_t old_size,
                              size_t new_size) {
    (void)user;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    /* the node array of a large graph gets huge pages */
    return bg_huge_realloc(ptr, old_size, new_size);
}

braid_graph *braid_graph_new(const braid_graph_options *opts) {
    braid_alloc_fn fn = opts && opts->alloc ? opts->alloc : bg_default_alloc;
    void *user = opts && opts->alloc ? opts->alloc_user : NULL;
    braid_graph *g = fn(user, NULL, 0, sizeof *g);
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_graph_new: out of memory");
        return NULL;
    }
    memset(g, 0, sizeof *g);
    g->alloc = fn;
    g->alloc_user = user;
    g->status = BRAID_OK;
    return g;
}

/* Frees what a node owns (not the node slot itself). Works on partially
 * built nodes as long as unset pointers are NULL. */
void bg_node_release(braid_graph *g, bg_node *n) {
    bg_free(g, n->inputs, (size_t)n->ninputs * sizeof *n->inputs);
    if (n->shared)
        bg_shared_unref(n->shared);
    else
        bg_free(g, n->attr.data, bg_nbytes(n));
    bg_free_str(g, n->name);
    bg_free_str(g, n->device);
    n->inputs = NULL;
    n->attr.data = NULL;
    n->shared = NULL;
    n->name = NULL;
    n->device = NULL;
}

void braid_graph_free(braid_graph *g) {
    if (g == NULL) return;
    for (uint32_t i = 0; i < g->nnodes; i++)
        bg_node_release(g, &g->nodes[i]);
    bg_free(g, g->nodes, (size_t)g->cap * sizeof *g->nodes);
    for (uint32_t i = 0; i < g->noutputs; i++)
        bg_free_str(g, g->outputs[i].name);
    bg_free(g, g->outputs, (size_t)g->ocap * sizeof *g->outputs);
    bg_names_free(g);
    if (g->bulk) g->alloc(g->alloc_user, g->bulk, g->bulk_size, 0);
    g->alloc(g->alloc_user, g, sizeof *g, 0);
}

/* Size 0 returns NULL without an error: callers treat empty blocks as
 * absent. */
void *bg_alloc(braid_graph *g, size_t size) {
    return bg_realloc(g, NULL, 0, size);
}

/* ---- bulk block -------------------------------------------------------------
 * A clone (the compile makes two) takes its nodes' input lists and names
 * from one block instead of one malloc each: a 150k-node graph otherwise makes
 * ~200k small allocations per copy, and every pass that walks input lists jumps
 * around the heap (issue 17: at 150k nodes those misses are what grows faster
 * than the node count). */

bool bg_bulk_reserve(braid_graph *g, size_t bytes) {
    if (g->bulk || bytes == 0) return true;
    if ((g->bulk = bg_alloc(g, bytes)) == NULL) return false;
    g->bulk_size = bytes;
    g->bulk_used = 0;
    return true;
}

void bg_bulk_close(braid_graph *g) {
    g->bulk_used = g->bulk_size;
}

void *bg_alloc_piece(braid_graph *g, size_t size) {
    size_t need = bg_piece_size(size);
    if (size == 0 || !g->bulk || g->bulk_size - g->bulk_used < need)
        return bg_alloc(g, size);
    void *p = g->bulk + g->bulk_used;
    g->bulk_used += need;
    return p;
}

/* Whether ptr is a piece of the graph's bulk block (never freed alone). */
static bool in_bulk(const braid_graph *g, const void *ptr) {
    uintptr_t p = (uintptr_t)ptr, b = (uintptr_t)g->bulk;
    return g->bulk && p >= b && p - b < g->bulk_size;
}

void *bg_realloc(braid_graph *g, void *ptr, size_t old_size, size_t new_size) {
    if (new_size == 0) {
        bg_free(g, ptr, old_size);
        return NULL;
    }
    bool piece = ptr && in_bulk(g, ptr); /* moved out, never resized */
    void *p = g->alloc(g->alloc_user, piece ? NULL : ptr,
                       ptr && !piece ? old_size : 0, new_size);
    if (p == NULL)
        bg_fail(g, BRAID_ERR_OUT_OF_MEMORY,
                "out of memory allocating %zu bytes", new_size);
    else if (piece)
        memcpy(p, ptr, old_size < new_size ? old_size : new_size);
    return p;
}

void bg_free(braid_graph *g, void *ptr, size_t size) {
    if (ptr != NULL && !in_bulk(g, ptr)) g->alloc(g->alloc_user, ptr, size, 0);
}

char *bg_strdup(braid_graph *g, const char *s) {
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *p = bg_alloc_piece(g, n);
    if (p != NULL) memcpy(p, s, n);
    return p;
}

void bg_free_str(braid_graph *g, char *s) {
    if (s != NULL) bg_free(g, s, strlen(s) + 1);
}

/* ---- errors
 * ------------------------------------------------------------------ */

static _Thread_local char bg_last_error[BG_ERROR_MAX];

/* Formats through a local buffer so that an argument may be the current
 * message itself (e.g. "%s", braid_last_error()). */
static void bg_vset_last_error(const char *fmt, va_list ap) {
    char msg[BG_ERROR_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(bg_last_error, msg, sizeof msg);
}

braid_status bg_set_last_error(braid_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bg_vset_last_error(fmt, ap);
    va_end(ap);
    return s;
}

void bg_clear_last_error(void) {
    bg_last_error[0] = '\0';
}

const char *braid_last_error(void) {
    return bg_last_error;
}

/* The graph keeps the first error (later ones are consequences of it); the
 * thread's last-error message always gets the newest one. */
braid_status bg_fail(braid_graph *g, braid_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bg_vset_last_error(fmt, ap);
    va_end(ap);
    if (g != NULL && g->status == BRAID_OK && s != BRAID_OK) {
        g->status = s;
        memcpy(g->error, bg_last_error, sizeof g->error);
    }
    return s;
}

braid_status braid_graph_status(const braid_graph *g) {
    return g ? g->status : BRAID_ERR_INVALID_ARGUMENT;
}

const char *braid_graph_error(const braid_graph *g) {
    if (g == NULL) return "braid_graph_error: graph is NULL";
    return g->error;
}

/* ---- queries ---------------------------------------------------------------
 */

uint32_t braid_graph_node_count(const braid_graph *g) {
    return g ? g->nnodes : 0;
}

/* Checks g and t for the query functions; leaves a message on failure. */
static braid_status bg_check_tensor(const braid_graph *g, braid_tensor t,
                                    const char *fn) {
    if (g == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: graph is NULL", fn);
    if (t.id >= g->nnodes)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: invalid tensor (id %u, graph has %u "
                                 "nodes)",
                                 fn, (unsigned)t.id, (unsigned)g->nnodes);
    return BRAID_OK;
}

braid_status braid_tensor_info(const braid_graph *g, braid_tensor t,
                               braid_dtype *dtype, int *rank, int64_t *dims) {
    braid_status s = bg_check_tensor(g, t, "braid_tensor_info");
    if (s != BRAID_OK) return s;
    const bg_node *n = bg_node_at(g, t.id);
    if (dtype) *dtype = n->dtype;
    if (rank) *rank = n->rank;
    if (dims)
        for (int i = 0; i < BRAID_MAX_RANK; i++)
            dims[i] = i < n->rank ? n->dims[i] : 0;
    return BRAID_OK;
}

int64_t braid_tensor_numel(const braid_graph *g, braid_tensor t) {
    if (bg_check_tensor(g, t, "braid_tensor_numel") != BRAID_OK) return -1;
    return bg_numel(bg_node_at(g, t.id));
}

uint32_t braid_graph_input_count(const braid_graph *g) {
    uint32_t count = 0;
    for (uint32_t i = 0; g && i < g->nnodes; i++)
        count += g->nodes[i].op == BRAID_OP_INPUT;
    return count;
}

braid_status braid_graph_input(const braid_graph *g, uint32_t i,
                               const char **name, braid_tensor *t) {
    if (g == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_graph_input: graph is NULL");
    uint32_t seen = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        if (g->nodes[id].op != BRAID_OP_INPUT || seen++ != i) continue;
        if (name) *name = g->nodes[id].name;
        if (t) t->id = id;
        return BRAID_OK;
    }
    return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                             "braid_graph_input: index %u out of range (%u "
                             "inputs)",
                             (unsigned)i, (unsigned)seen);
}

uint32_t braid_graph_output_count(const braid_graph *g) {
    return g ? g->noutputs : 0;
}

braid_status braid_graph_output(const braid_graph *g, uint32_t i,
                                const char **name, braid_tensor *t) {
    if (g == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_graph_output: graph is NULL");
    if (i >= g->noutputs)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_graph_output: index %u out of range "
                                 "(%u outputs)",
                                 (unsigned)i, (unsigned)g->noutputs);
    if (name) *name = g->outputs[i].name;
    if (t) t->id = g->outputs[i].node;
    return BRAID_OK;
}

/* ---- version
 * ----------------------------------------------------------------- */

#ifndef BRAID_VERSION_STRING
#define BRAID_VERSION_STRING "0.1.0"
#endif

const char *braid_version(void) {
#ifdef BRAID_HAVE_CUDA
    return BRAID_VERSION_STRING " (cuda " BRAID_CUDA_VERSION_STRING ")";
#else
    return BRAID_VERSION_STRING " (cpu only)";
#endif
}

/* ---- shared constant bytes ------------------------------------------------ */

void bg_shared_ref(bg_shared *s) {
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void bg_shared_unref(bg_shared *s) {
    if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
        s->destroy(s);
}

static void bg_shared_free(bg_shared *s) { free(s); }

bg_shared *bg_shared_copy(const void *data, size_t n, void **bytes) {
    enum { HEAD = 64 }; /* the bytes start 64-byte aligned */
    if (n > SIZE_MAX - HEAD) return NULL;
    bg_shared *s = aligned_alloc(HEAD, (HEAD + n + HEAD - 1) / HEAD * HEAD);
    if (s == NULL) return NULL;
    s->refs = 1;
    s->destroy = bg_shared_free;
    *bytes = (char *)s + HEAD;
    if (n && data) memcpy(*bytes, data, n);
    return s;
}

bool bg_default_allocator(const braid_graph *g) {
    return g->alloc == bg_default_alloc;
}
