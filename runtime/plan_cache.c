/* runtime/plan_cache.c — plans per input shape (braid_plan_cache_*): a
 * small table of (shape key → plan, executor), least recently used
 * dropped past the capacity. A linear search is right here: a cache holds
 * a handful of sizes, and each miss costs a compile. */
#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

typedef struct pc_entry {
    int64_t key[BRAID_CACHE_KEY_MAX]; /* the shape key */
    uint32_t nkey;                    /* entries used in key */
    braid_plan *plan;                 /* owned */
    braid_exec *exec;                 /* owned; runs plan */
    uint64_t used;                    /* tick of the last request */
} pc_entry;

struct braid_plan_cache {
    braid_graph_builder build;  /* the caller's builder */
    void *user;                 /* its argument */
    braid_compile_options opts; /* compile options (pointers the caller's) */
    bool has_opts;              /* opts given (else defaults) */
    pc_entry *entry;            /* capacity entries; plan NULL when free */
    uint32_t capacity;          /* entries in entry */
    uint64_t tick;              /* requests so far */
    uint64_t hits, misses;      /* answered from the table / compiled */
};

braid_status braid_plan_cache_new(braid_graph_builder build, void *user,
                                  const braid_compile_options *opts,
                                  uint32_t capacity, braid_plan_cache **cache) {
    if (!cache || !build || capacity == 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_cache_new: %s",
                                 !cache   ? "cache is NULL"
                                 : !build ? "build is NULL"
                                          : "capacity is 0");
    *cache = NULL;
    braid_plan_cache *c = calloc(1, sizeof *c);
    if (c) c->entry = calloc(capacity, sizeof *c->entry);
    if (!c || !c->entry) {
        free(c);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_plan_cache_new: out of memory for "
                                 "%u entries",
                                 capacity);
    }
    c->build = build;
    c->user = user;
    c->capacity = capacity;
    if (opts) c->opts = *opts, c->has_opts = true;
    *cache = c;
    return BRAID_OK;
}

static void drop(pc_entry *e) {
    braid_exec_free(e->exec);
    braid_plan_free(e->plan);
    memset(e, 0, sizeof *e);
}

void braid_plan_cache_free(braid_plan_cache *c) {
    if (!c) return;
    for (uint32_t i = 0; i < c->capacity; i++)
        drop(&c->entry[i]);
    free(c->entry);
    free(c);
}

void braid_plan_cache_stats(const braid_plan_cache *c, uint64_t *hits,
                            uint64_t *misses, uint32_t *plans) {
    uint32_t n = 0;
    for (uint32_t i = 0; c && i < c->capacity; i++)
        n += c->entry[i].plan != NULL;
    if (hits) *hits = c ? c->hits : 0;
    if (misses) *misses = c ? c->misses : 0;
    if (plans) *plans = n;
}

/* The entry holding key, or NULL. */
static pc_entry *lookup(braid_plan_cache *c, const int64_t *key,
                        uint32_t nkey) {
    for (uint32_t i = 0; i < c->capacity; i++) {
        pc_entry *e = &c->entry[i];
        if (e->plan && e->nkey == nkey &&
            (nkey == 0 || memcmp(e->key, key, nkey * sizeof *key) == 0))
            return e;
    }
    return NULL;
}

/* A free entry, or the least recently used one emptied. */
static pc_entry *victim(braid_plan_cache *c) {
    pc_entry *v = &c->entry[0];
    for (uint32_t i = 0; i < c->capacity; i++) {
        if (!c->entry[i].plan) return &c->entry[i];
        if (c->entry[i].used < v->used) v = &c->entry[i];
    }
    drop(v);
    return v;
}

/* Builds, compiles and creates the executor for key into e. */
static braid_status fill(braid_plan_cache *c, pc_entry *e, const int64_t *key,
                         uint32_t nkey) {
    braid_graph *g = c->build(c->user, key, nkey);
    if (!g)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_cache_get: the builder returned "
                                 "no graph for a key of %u dims",
                                 nkey);
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, c->has_opts ? &c->opts : NULL, &p);
    braid_graph_free(g);
    braid_exec *x = NULL;
    if (s == BRAID_OK) s = braid_exec_new(p, &x);
    if (s != BRAID_OK) {
        braid_plan_free(p);
        return s;
    }
    memcpy(e->key, key, nkey * sizeof *key);
    e->nkey = nkey;
    e->plan = p;
    e->exec = x;
    return BRAID_OK;
}

braid_status braid_plan_cache_get(braid_plan_cache *c, const int64_t *key,
                                  uint32_t nkey, braid_exec **exec,
                                  const braid_plan **plan) {
    if (exec) *exec = NULL;
    if (plan) *plan = NULL;
    if (!c || !exec || (!key && nkey > 0) || nkey > BRAID_CACHE_KEY_MAX)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_cache_get: %s",
                                 !c      ? "cache is NULL"
                                 : !exec ? "exec is NULL"
                                 : !key  ? "key is NULL"
                                         : "key longer than "
                                           "BRAID_CACHE_KEY_MAX");
    pc_entry *e = lookup(c, key, nkey);
    if (e) {
        c->hits++;
    } else {
        c->misses++;
        e = victim(c);
        braid_status s = fill(c, e, key, nkey);
        if (s != BRAID_OK) return s;
    }
    e->used = ++c->tick;
    *exec = e->exec;
    if (plan) *plan = e->plan;
    return BRAID_OK;
}
