/* passes/dot_ids.c — the libcgraph ID discipline of braid's DOT views.
 *
 * libcgraph's default discipline makes a named object's ID the address of
 * its interned name, and writes subgraphs in ID order, so the order of the
 * clusters in the output would change from run to run. Here names get IDs
 * in creation order (even: 2, 4, ...; anonymous objects, i.e. edges, get
 * odd ones), kept in a small hash table this file owns and frees when the
 * graph closes; the names themselves are strings of the graph's pool, as
 * libcgraph expects. (Declining to map names and letting libcgraph's internal
 * name map do it is not an option: agclose leaks some of its entries.) */
#define _POSIX_C_SOURCE 200809L

#include "passes/dot.h"

#include <stdlib.h>
#include <string.h>

/* One graph's names. */
typedef struct id_names {
    Agraph_t *g;      /* the root graph, whose string pool holds the names */
    char **names;     /* names[i] is the object with ID 2(i + 1): strings
                         of g's pool (agstrdup), since libcgraph reads a
                         header in front of names it is given */
    uint32_t count;   /* names used */
    uint32_t cap;     /* names allocated */
    uint32_t *slots;  /* open-addressing table: 1 + index into names, or 0
                         for an empty slot */
    uint32_t nslots;  /* table size, a power of two (0 before the first) */
    IDTYPE next_anon; /* next anonymous ID (odd) */
} id_names;

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The slot holding name, or the empty slot where it would go. */
static uint32_t *find_slot(id_names *st, const char *name) {
    uint32_t mask = st->nslots - 1;
    for (uint32_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        uint32_t *slot = &st->slots[i];
        if (*slot == 0 || strcmp(st->names[*slot - 1], name) == 0) return slot;
    }
}

/* Doubles the table (keeping it at most half full). */
static bool grow_slots(id_names *st) {
    if (st->nslots > (1u << 30)) return false;
    uint32_t n = st->nslots ? st->nslots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return false;
    uint32_t *old = st->slots;
    st->slots = slots;
    st->nslots = n;
    for (uint32_t i = 0; i < st->count; i++)
        *find_slot(st, st->names[i]) = i + 1;
    free(old);
    return true;
}

/* Adds name; its index in names, or UINT32_MAX when out of memory. */
static uint32_t add_name(id_names *st, const char *name) {
    if ((st->count + 1) * 2 > st->nslots && !grow_slots(st)) return UINT32_MAX;
    if (st->count == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : 64;
        char **names = realloc(st->names, (size_t)cap * sizeof *names);
        if (!names) return UINT32_MAX;
        st->names = names;
        st->cap = cap;
    }
    char *copy = agstrdup(st->g, (char *)name);
    if (!copy) return UINT32_MAX;
    st->names[st->count] = copy;
    *find_slot(st, copy) = st->count + 1;
    return st->count++;
}

static void *id_open(Agraph_t *g, Agdisc_t *disc) {
    (void)disc;
    id_names *st = calloc(1, sizeof *st);
    if (st) {
        st->g = g;
        st->next_anon = 1;
    }
    return st; /* NULL: id_map maps nothing, so agnode and friends fail
                  and the caller reports out of memory */
}

/* Returns 1 with *id set, or 0 for an unknown name without createflag
 * (or out of memory, when libcgraph falls back on its own name map). */
static long id_map(void *state, int objtype, char *str, IDTYPE *id,
                   int createflag) {
    (void)objtype;
    id_names *st = state;
    if (!st) return 0;
    if (!str) {
        if (!createflag) return 0;
        *id = st->next_anon;
        st->next_anon += 2;
        return 1;
    }
    uint32_t *slot = st->nslots ? find_slot(st, str) : NULL;
    uint32_t index = slot && *slot ? *slot - 1 : UINT32_MAX;
    if (index == UINT32_MAX && createflag) index = add_name(st, str);
    if (index == UINT32_MAX) return 0;
    *id = 2 * ((IDTYPE)index + 1);
    return 1;
}

/* Names live until the graph closes: libcgraph may print an object's name
 * after freeing another with the same name. */
static void id_free(void *state, int objtype, IDTYPE id) {
    (void)state;
    (void)objtype;
    (void)id;
}

static char *id_print(void *state, int objtype, IDTYPE id) {
    (void)objtype;
    const id_names *st = state;
    if (!st || id == 0 || id % 2 || id / 2 > st->count) return NULL;
    return st->names[id / 2 - 1];
}

static void id_close(void *state) {
    id_names *st = state;
    if (!st) return;
    for (uint32_t i = 0; i < st->count; i++)
        agstrfree(st->g, st->names[i]);
    free(st->names);
    free(st->slots);
    free(st);
}

static void id_register(void *state, int objtype, void *obj) {
    (void)state;
    (void)objtype;
    (void)obj;
}

/* Designated fields only: the struct's layout differs between Graphviz
 * releases (older ones have an `alloc` member, used only by agidnode and
 * friends, which braid never calls). */
static Agiddisc_t id_disc = {.open = id_open,
                             .map = id_map,
                             .free = id_free,
                             .print = id_print,
                             .close = id_close,
                             .idregister = id_register};
static Agdisc_t disc = {.id = &id_disc};

Agdisc_t *bp_dot_disc(void) {
    return &disc;
}
