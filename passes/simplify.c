/* passes/simplify.c — the simplify pass: dead nodes, common subexpressions,
 * constant folding and algebraic identities (docs/simplify.md).
 *
 * Contract: the simplified plan computes, on every executor, bit for bit
 * what the original computes (NaN payloads aside, see the doc), never has
 * more nodes, keeps every input and every named output (an output whose
 * node is rewritten reads the replacement), and keeps user names and device
 * hints on the nodes folding creates.
 *
 * Rules, applied to each node in one forward sweep (ids are topological, so
 * a node's inputs are final when it is visited):
 *  1. Dead nodes (not needed by an output; inputs always stay) are dropped
 *     by bp_plan_compact, before the sweep and after it.
 *  2. Identities (simplify_rules.c), where exact in IEEE arithmetic:
 *     x*1, 1*x, x/1 → x; x+(-0.0), (-0.0)+x, x-0.0 → x; x+0.0, 0.0+x,
 *     x-(-0.0) → x only when x provably holds no -0.0; i32 x+0, 0+x,
 *     x-0 → x. "1"/"0" is a constant or fill whose every element has that
 *     value in the node's dtype, and the rule applies only when x already
 *     has the result's shape (x*ones of a larger shape is not x).
 *     neg(neg(x)) → x; cast to x's own dtype → x; reshape, broadcast_to to
 *     x's own shape → x; permute by the identity → x; a slice taking every
 *     element with step 1 → x; concat of one operand → x; where(c, x, x),
 *     where(true, x, y), where(false, y, x) → x (shape permitting);
 *     permute∘permute, reshape∘reshape, broadcast_to∘broadcast_to → one
 *     node (or x when the composition is the identity).
 *  3. Constant folding (simplify_fold.c): a node whose inputs are all
 *     constant/fill/iota/random nodes and whose op every executor computes
 *     exactly like the reference evaluator (correctly rounded or exact ops)
 *     is evaluated by graph/eval.c, the reference evaluator's core. A result
 *     whose elements are all equal becomes a fill (any size); otherwise one
 *     of at most BP_SIMP_FOLD_MAX elements becomes a constant. The new node
 *     keeps the folded node's name and device hint.
 *  4. Common subexpressions: nodes with the same op, dtype, shape, inputs,
 *     attributes (constant bytes included) and device hint are merged into
 *     the first; generators are deterministic, so equal ones merge too.
 *     Inputs are never merged. A hash table keeps this linear in the graph.
 * A node created by a rule is itself swept (rules 2-4) as soon as it is
 * made, so a folded constant can merge with an equal one, and a composed
 * permute can reduce to the identity. */
#include "passes/simplify.h"

#include <stdlib.h>
#include <string.h>

static uint32_t fail(bp_simp *s, braid_status st) {
    if (s->status == BRAID_OK) s->status = st;
    return BG_NONE;
}

static uint32_t oom(bp_simp *s, const char *what) {
    bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "simplify: out of memory (%s)",
                      what);
    return fail(s, BRAID_ERR_OUT_OF_MEMORY);
}

/* Grows the per-node arrays to at least n entries; new entries start
 * unvisited. */
static bool grow(bp_simp *s, uint32_t n) {
    if (n <= s->cap) return true;
    uint64_t cap = s->cap ? s->cap : 64;
    while (cap < n)
        cap *= 2;
    uint32_t *rep = realloc(s->rep, cap * sizeof *rep);
    if (rep) s->rep = rep;
    uint8_t *facts = realloc(s->facts, cap * sizeof *facts);
    if (facts) s->facts = facts;
    double *splat = realloc(s->splat, cap * sizeof *splat);
    if (splat) s->splat = splat;
    if (!rep || !facts || !splat) {
        oom(s, "node tables");
        return false;
    }
    for (uint64_t i = s->cap; i < cap; i++) {
        s->rep[i] = BG_NONE;
        s->facts[i] = 0;
        s->splat[i] = 0.0;
    }
    s->cap = (uint32_t)cap;
    return true;
}

/* ---- common subexpressions ----------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

/* FNV-1a over bytes, folded into h. */
static uint64_t mix_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t f = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        f = (f ^ b[i]) * 0x100000001b3ull;
    return mix(h, f);
}

/* n bytes (a multiple of 8: fixed attribute arrays) folded into h eight at
 * a time: a byte loop over perm, start and step was a chain of 136
 * dependent multiplies per node. */
static uint64_t mix_words(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h = mix(h, w);
    }
    return h;
}

/* Constant bytes (weights: hundreds of MB in an imported model), hashed
 * eight bytes at a time in four independent lanes so that the multiplies
 * overlap: memory-bound, where the byte loop above costs about a second
 * per 600 MB. Equal bytes hash equal; node_same compares them in full. */
static uint64_t mix_data(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t lane[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull,
                        0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * k, sizeof w);
            lane[k] = (lane[k] ^ w) * 0x9E3779B97F4A7C15ull;
            lane[k] ^= lane[k] >> 29;
        }
    for (int k = 0; k < 4; k++)
        h = mix(h, lane[k]);
    return mix_bytes(mix(h, n), b + i, n - i);
}

static uint64_t mix_double(uint64_t h, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return mix(h, bits);
}

/* Hash of everything node_same compares, the inputs read through rep
 * (visit has rewired a node's inputs before it hashes it, and rep[r] = r
 * for a node r standing for itself, so only a look ahead, whose inputs are
 * not yet rewired, sees a difference). */
static uint64_t node_hash(const bg_node *n, const uint32_t *rep) {
    const bg_attrs *a = &n->attr;
    uint64_t h = mix(mix(mix(0, n->op), n->dtype), n->rank);
    for (int i = 0; i < n->rank; i++)
        h = mix(h, (uint64_t)n->dims[i]);
    h = mix(h, n->ninputs);
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t in = n->inputs[k];
        h = mix(h, rep[in] != BG_NONE ? rep[in] : in);
    }
    h = mix_double(mix_double(h, a->value[0]), a->value[1]);
    h = mix(mix(mix(mix(h, a->seed), (uint32_t)a->axis), a->flags), a->axes);
    _Static_assert(sizeof a->perm % 8 == 0 && sizeof a->start % 8 == 0 &&
                       sizeof a->step % 8 == 0,
                   "mix_words takes whole words");
    h = mix_words(h, a->perm, sizeof a->perm);
    h = mix_words(h, a->start, sizeof a->start);
    h = mix_words(h, a->step, sizeof a->step);
    if (a->data) h = mix_data(h, a->data, bg_nbytes(n));
    if (n->device) h = mix_bytes(h, n->device, strlen(n->device));
    return h;
}

static bool str_same(const char *a, const char *b) {
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Same computation: op, type, inputs, attributes (fill values by bits),
 * constant bytes and device hint. Names do not matter. */
static bool node_same(const bg_node *a, const bg_node *b) {
    const bg_attrs *x = &a->attr, *y = &b->attr;
    if (a->op != b->op || a->dtype != b->dtype || a->rank != b->rank ||
        a->ninputs != b->ninputs ||
        memcmp(a->dims, b->dims, a->rank * sizeof *a->dims) != 0 ||
        (a->ninputs &&
         memcmp(a->inputs, b->inputs, a->ninputs * sizeof *a->inputs) != 0))
        return false;
    if (memcmp(x->value, y->value, sizeof x->value) != 0 ||
        x->seed != y->seed || x->axis != y->axis || x->flags != y->flags ||
        x->axes != y->axes || memcmp(x->perm, y->perm, sizeof x->perm) ||
        memcmp(x->start, y->start, sizeof x->start) ||
        memcmp(x->step, y->step, sizeof x->step))
        return false;
    if ((x->data == NULL) != (y->data == NULL)) return false;
    if (x->data && memcmp(x->data, y->data, bg_nbytes(a)) != 0) return false;
    return str_same(a->device, b->device);
}

/* Inputs are bound by name, and compiler-made nodes carry state outside the
 * graph (programs, destinations): those are never merged. */
static bool cse_candidate(const bg_node *n) {
    braid_op_kind k = bg_op(n->op)->kind;
    return n->op != BRAID_OP_INPUT && k != BRAID_KIND_COPY &&
           k != BRAID_KIND_FUSED && k != BRAID_KIND_COLLECTIVE &&
           n->op != BRAID_OP_VARIABLE && k != BRAID_KIND_STATE;
}

static void table_insert(bp_simp *s, uint32_t id, uint32_t hash) {
    uint32_t mask = s->tcap - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask)
        if (s->table[i].node == BG_NONE) {
            s->table[i] = (bp_simp_slot){id, hash};
            s->tcount++;
            return;
        }
}

/* Makes room for want entries in all, keeping the table at most half
 * full. bp_simplify asks for the whole graph first, so a sweep rehashes
 * only for the nodes its rules add. */
static bool table_reserve(bp_simp *s, uint64_t want) {
    if (2 * want <= s->tcap) return true;
    bp_simp_slot *old = s->table;
    uint32_t ocap = s->tcap;
    uint64_t cap = ocap ? ocap : 256;
    while (cap < 2 * want)
        cap *= 2;
    if (cap > UINT32_MAX) return oom(s, "subexpression table"), false;
    s->table = malloc(cap * sizeof *s->table);
    if (!s->table) {
        s->table = old;
        return oom(s, "subexpression table"), false;
    }
    s->tcap = (uint32_t)cap;
    s->tcount = 0;
    for (uint32_t i = 0; i < s->tcap; i++)
        s->table[i] = (bp_simp_slot){BG_NONE, 0};
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i].node != BG_NONE) table_insert(s, old[i].node, old[i].hash);
    free(old);
    return true;
}

/* The first node computing what canonical node id computes (id itself when
 * it is the first), BG_NONE when out of memory. */
static uint32_t cse(bp_simp *s, uint32_t id) {
    const braid_graph *g = s->plan->res.graph;
    const bg_node *n = &g->nodes[id];
    if (!cse_candidate(n)) return id;
    if (!table_reserve(s, (uint64_t)s->tcount + 1)) return BG_NONE;
    uint32_t h = (uint32_t)node_hash(n, s->rep), mask = s->tcap - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        bp_simp_slot t = s->table[i];
        if (t.node == BG_NONE) break;
        if (t.hash == h && node_same(&g->nodes[t.node], n)) return t.node;
    }
    table_insert(s, id, h);
    return id;
}

/* ---- the sweep ----------------------------------------------------------- */

/* How many nodes ahead of the sweep prefetch_slot looks. */
#define SIMP_LOOKAHEAD 8

/* Starts fetching the table slot node id will probe, hashing it with the
 * inputs it will likely have (its inputs' current stand-ins): the probes
 * of a large graph go to random slots of a table far larger than the
 * caches, and without this each one waits on memory. A wrong guess (a
 * rule rewrites the node, an input not yet visited is merged) costs one
 * unused fetch. Constants are skipped: hashing their bytes twice would
 * cost more than the miss. */
static void prefetch_slot(const bp_simp *s, uint32_t id) {
    const bg_node *n = &s->plan->res.graph->nodes[id];
    if (s->tcap == 0 || n->attr.data || !cse_candidate(n)) return;
    uint32_t h = (uint32_t)node_hash(n, s->rep);
    __builtin_prefetch(&s->table[h & (s->tcap - 1)]);
}

/* Rewires node id to canonical inputs, applies the rules and records the
 * node standing for it in rep[id]. Returns that node, BG_NONE on failure. */
static uint32_t visit(bp_simp *s, uint32_t id) {
    bg_node *n = &s->plan->res.graph->nodes[id];
    for (uint32_t k = 0; k < n->ninputs; k++)
        n->inputs[k] = s->rep[n->inputs[k]];
    uint32_t r = bp_simp_identity(s, id);
    if (r == id) r = bp_simp_fold(s, id);
    if (r == id) r = cse(s, id);
    s->rep[id] = r;
    return r;
}

/* Copies what the new node takes over from `like`: name, hint, origin. */
static bool inherit(bp_simp *s, uint32_t id, uint32_t like) {
    bp_plan *p = s->plan;
    braid_graph *g = p->res.graph;
    const bg_node *l = &g->nodes[like];
    bg_node *n = &g->nodes[id];
    if (l->name && !(n->name = bg_strdup(g, l->name))) return false;
    if (l->device && !(n->device = bg_strdup(g, l->device))) return false;
    if (like < p->res.ninfo && id < p->res.ninfo)
        p->res.info[id].origin = p->res.info[like].origin;
    return true;
}

uint32_t bp_simp_emit(bp_simp *s, uint32_t like, braid_op op,
                      const uint32_t *inputs, uint32_t ninputs,
                      braid_dtype dtype, int rank, const int64_t *dims,
                      const bg_attrs *attr, const void *data) {
    bp_plan *p = s->plan;
    uint32_t id =
        bp_plan_add_node(p, op, inputs, ninputs, dtype, rank, dims, attr);
    if (id == BG_NONE) return fail(s, BRAID_ERR_OUT_OF_MEMORY);
    braid_graph *g = p->res.graph;
    bg_node *n = &g->nodes[id];
    size_t bytes = bg_nbytes(n);
    if (op == BRAID_OP_CONSTANT && bytes) {
        /* The node owns its bytes like a user constant: compaction and
         * braid_graph_free release them through the graph's allocator. */
        if (!(n->attr.data = bg_alloc(g, bytes))) return oom(s, "constant");
        memcpy(n->attr.data, data, bytes);
    }
    if (!inherit(s, id, like)) return oom(s, "node name");
    if (!grow(s, g->nnodes)) return BG_NONE;
    return visit(s, id);
}

/* Points every output whose node was rewritten at the replacement. Other
 * uses were rewired during the sweep; the outputs' uses are rewired in one
 * sweep over the graph (bp_plan_replace_map), not one per output. */
static void redirect_outputs(bp_simp *s) {
    braid_graph *g = s->plan->res.graph;
    uint32_t n = g->nnodes, *map = NULL;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t o = g->outputs[i].node;
        if (s->rep[o] == BG_NONE || s->rep[o] == o) continue;
        if (!map) {
            if (!(map = malloc((n ? n : 1) * sizeof *map))) {
                oom(s, "output table");
                return;
            }
            for (uint32_t k = 0; k < n; k++)
                map[k] = BG_NONE;
        }
        map[o] = s->rep[o];
    }
    if (map) bp_plan_replace_map(s->plan, map, n);
    free(map);
}

braid_status bp_simplify(bp_plan *plan) {
    /* Dead nodes first, so no folding work is spent on them. */
    braid_status st = bp_plan_compact(plan);
    if (st != BRAID_OK) return st;
    bp_simp s = {.plan = plan, .status = BRAID_OK};
    uint32_t n0 = plan->res.graph->nnodes;
    if (grow(&s, n0) && table_reserve(&s, n0))
        for (uint32_t id = 0; id < n0; id++) {
            if (id + SIMP_LOOKAHEAD < n0)
                prefetch_slot(&s, id + SIMP_LOOKAHEAD);
            if (visit(&s, id) == BG_NONE) break;
        }
    if (s.status == BRAID_OK) redirect_outputs(&s);
    free(s.rep);
    free(s.facts);
    free(s.splat);
    free(s.table);
    return s.status != BRAID_OK ? s.status : bp_plan_compact(plan);
}
