/* passes/verify_plan_overlap.c — shared arena bytes under happens-before.
 *
 * A tensor owning arena bytes (storage ARENA) is accessed by the nodes that
 * write it (itself unless skipped, and views that compute into it) and by
 * every computing node reading it or a view of it. Two such tensors whose
 * bytes overlap are fine only when one of them, A, is entirely done before
 * the other, B, is written: every access of A happens-before every writer
 * of B — on every executor, so through queue order and events, not just
 * schedule order. The one exception is an elementwise node writing its
 * output exactly over an input it is the last to read (in place). An
 * output is never done (callers read it after the run) and a GPU constant
 * lives as long as the executor. */
#include "graph/sort.h"
#include "passes/verify_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vp_before(const vp_state *st, uint32_t a, uint32_t b) {
    return a != b &&
           (int32_t)st->qpos[a] <= st->clock[(size_t)b * st->nq + st->dq[a]];
}

/* c := max(c, what is known once node a has completed). */
static void join_done(const vp_state *st, int32_t *c, uint32_t a) {
    const int32_t *ca = st->clock + (size_t)a * st->nq;
    for (uint32_t j = 0; j < st->nq; j++)
        if (ca[j] > c[j]) c[j] = ca[j];
    if ((int32_t)st->qpos[a] > c[st->dq[a]]) c[st->dq[a]] = (int32_t)st->qpos[a];
}

/* Dense queue numbers, queue positions and predecessors. */
static braid_status number_queues(vp_state *st) {
    const bp_plan *p = st->plan;
    uint32_t *dense = bp_calloc(p->res.nqueues, sizeof *dense, "verify_plan");
    uint32_t *last = bp_calloc(p->res.nqueues, sizeof *last, "verify_plan");
    if (!dense || !last) {
        free(dense);
        free(last);
        return BRAID_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t q = 0; q < p->res.nqueues; q++)
        dense[q] = last[q] = BG_NONE;
    st->nq = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i], q = p->res.info[id].queue;
        if (dense[q] == BG_NONE) dense[q] = st->nq++;
        st->dq[id] = dense[q];
        st->qprev[id] = last[q];
        st->qpos[id] = last[q] == BG_NONE ? 0 : st->qpos[last[q]] + 1;
        last[q] = id;
    }
    free(dense);
    free(last);
    return BRAID_OK;
}

braid_status vp_clocks(vp_state *st) {
    const bp_plan *p = st->plan;
    braid_status s = number_queues(st);
    if (s != BRAID_OK) return s;
    uint32_t nq = st->nq ? st->nq : 1;
    st->clock = bp_calloc((size_t)st->n * nq, sizeof *st->clock,
                          "verify_plan clocks");
    uint32_t *estart = bp_calloc((size_t)st->n + 1, sizeof *estart, "events");
    uint32_t *eafter = bp_calloc(p->res.nevents, sizeof *eafter, "events");
    if (!st->clock || !estart || !eafter) {
        free(estart);
        free(eafter);
        return BRAID_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t k = 0; k < p->res.nevents; k++)
        estart[p->res.events[k].before + 1]++;
    for (uint32_t i = 0; i < st->n; i++) estart[i + 1] += estart[i];
    for (uint32_t k = 0; k < p->res.nevents; k++)
        eafter[estart[p->res.events[k].before]++] = p->res.events[k].after;
    for (uint32_t i = st->n; i > 0; i--) estart[i] = estart[i - 1];
    estart[0] = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        int32_t *c = st->clock + (size_t)id * st->nq;
        for (uint32_t j = 0; j < st->nq; j++) c[j] = -1;
        if (st->qprev[id] != BG_NONE) join_done(st, c, st->qprev[id]);
        for (uint32_t k = estart[id]; k < estart[id + 1]; k++)
            join_done(st, c, eafter[k]); /* earlier: checked with events */
    }
    free(estart);
    free(eafter);
    return BRAID_OK;
}

bool vp_aliasing_ok(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    /* a range-checked cast's GPU kernel reads the failing element back
     * after writing its output (codegen/cast.c) */
    if (bg_node_run_check(p->res.graph, id)) return false;
    /* a fused gather reads rows other than the element it writes */
    if (bp_node_run_check(p, id)) return false;
    if (n->op == BRAID_OP_CAST) /* same-dtype casts are memcpy */
        return p->res.graph->nodes[n->inputs[0]].dtype != n->dtype;
    if (bg_op(n->op)->kind == BRAID_KIND_ELEMENTWISE) return true;
    return n->op == BRAID_OP_FUSED &&
           p->res.info[id].program < p->res.nprograms &&
           p->res.programs[p->res.info[id].program].kind ==
               BP_PROGRAM_ELEMENTWISE;
}

/* ---- spans ------------------------------------------------------------------ */

/* Every tensor owning arena bytes, with its accesses. */
typedef struct vp_spans {
    uint32_t n;         /* spans */
    uint32_t *node;     /* per span: the owning node, sorted by (arena,
                           offset) */
    uint32_t *of;       /* per node: its span, or BG_NONE */
    uint32_t *astart;   /* per span: first index in acc (n + 1) */
    uint32_t *acc;      /* accessing nodes; writers first in each span */
    uint32_t *nwrite;   /* per span: how many of its accesses write */
    uint8_t *flags;     /* per span: VP_TO_END, VP_PERSISTENT */
    int32_t *lastacc;   /* n × nq: last access position per queue */
    int32_t *known;     /* n × nq: min over writers of their clock */
} vp_spans;

/* A span's flags: it holds an output (never done before anything after
 * it); its node is persistent (never done before, nor after); its node may
 * write over its input (vp_aliasing_ok). Kept beside the spans, found in
 * sweeps over the nodes in id order, so the paint sweep does not fetch
 * nodes at random. */
#define VP_TO_END 1u
#define VP_PERSISTENT 2u
#define VP_ALIAS_OK 4u

/* The span node u's bytes belong to, or BG_NONE. */
static uint32_t span_of(const vp_state *st, const vp_spans *sp, uint32_t u) {
    return sp->of[st->root[u]];
}

/* Calls fn(span, u, writes) for each access, writers first. */
static void each_access(const vp_state *st, vp_spans *sp,
                        void (*fn)(vp_spans *, uint32_t, uint32_t, bool)) {
    const bp_plan *p = st->plan;
    for (int writers = 1; writers >= 0; writers--) {
        for (uint32_t i = 0; i < p->res.nschedule; i++) {
            uint32_t u = p->res.schedule[i];
            if (p->res.info[u].noop) continue;
            if (writers) {
                uint32_t s = span_of(st, sp, u);
                if (s != BG_NONE) fn(sp, s, u, true);
                continue;
            }
            const bg_node *n = &p->res.graph->nodes[u];
            for (uint32_t k = 0; k < n->ninputs; k++) {
                uint32_t s = span_of(st, sp, n->inputs[k]);
                if (s != BG_NONE) fn(sp, s, u, false);
            }
        }
    }
}

static void count_access(vp_spans *sp, uint32_t s, uint32_t u, bool w) {
    (void)u;
    sp->astart[s + 1]++;
    sp->nwrite[s] += w;
}

static void fill_access(vp_spans *sp, uint32_t s, uint32_t u, bool w) {
    (void)w;
    sp->acc[sp->astart[s]++] = u;
}

static braid_status build_spans(const vp_state *st, vp_spans *sp) {
    const bp_plan *p = st->plan;
    /* spans in (arena, offset, node) order; the second half is scratch */
    bg_sort_item *key =
        bp_calloc(2 * (size_t)st->n + 1, sizeof *key, "verify_plan spans");
    if (!key) return BRAID_ERR_OUT_OF_MEMORY;
    sp->n = 0;
    for (uint32_t id = 0; id < st->n; id++) {
        sp->of[id] = BG_NONE;
        const bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->storage == BP_STORAGE_ARENA && pl->bytes > 0)
            key[sp->n++] = (bg_sort_item){pl->arena, pl->offset, id};
    }
    bg_sort_items(key, sp->n, key + sp->n);
    for (uint32_t s = 0; s < sp->n; s++) {
        sp->node[s] = key[s].v;
        sp->of[key[s].v] = s;
    }
    free(key);
    for (uint32_t id = 0; id < st->n; id++) { /* in node order: a sweep */
        uint32_t s = sp->of[id];
        if (s == BG_NONE) continue;
        if (bg_op_persistent(p->res.graph->nodes[id].op))
            sp->flags[s] |= VP_PERSISTENT;
        if (vp_aliasing_ok(p, id)) sp->flags[s] |= VP_ALIAS_OK;
    }
    for (uint32_t id = 0; id < st->n; id++)
        if (st->output[id] && span_of(st, sp, id) != BG_NONE)
            sp->flags[span_of(st, sp, id)] |= VP_TO_END;
    each_access(st, sp, count_access);
    for (uint32_t s = 0; s < sp->n; s++) sp->astart[s + 1] += sp->astart[s];
    sp->acc = bp_calloc(sp->astart[sp->n], sizeof *sp->acc, "verify_plan");
    if (!sp->acc) return BRAID_ERR_OUT_OF_MEMORY;
    each_access(st, sp, fill_access);
    for (uint32_t s = sp->n; s > 0; s--) sp->astart[s] = sp->astart[s - 1];
    sp->astart[0] = 0;
    return BRAID_OK;
}

/* lastacc and known of every span. */
static void summarise(const vp_state *st, vp_spans *sp) {
    for (uint32_t s = 0; s < sp->n; s++) {
        int32_t *la = sp->lastacc + (size_t)s * st->nq;
        int32_t *kn = sp->known + (size_t)s * st->nq;
        for (uint32_t j = 0; j < st->nq; j++) {
            la[j] = -1;
            kn[j] = INT32_MAX;
        }
        for (uint32_t k = sp->astart[s]; k < sp->astart[s + 1]; k++) {
            uint32_t u = sp->acc[k];
            if ((int32_t)st->qpos[u] > la[st->dq[u]])
                la[st->dq[u]] = (int32_t)st->qpos[u];
            if (k - sp->astart[s] >= sp->nwrite[s]) continue;
            const int32_t *c = st->clock + (size_t)u * st->nq;
            for (uint32_t j = 0; j < st->nq; j++)
                if (c[j] < kn[j]) kn[j] = c[j];
        }
    }
}

/* Node w writes span b exactly over span a, which it is allowed to read
 * while writing (in place). */
static bool in_place(const vp_state *st, const vp_spans *sp, uint32_t a,
                     uint32_t b, uint32_t w) {
    const bp_plan *p = st->plan;
    uint32_t x = sp->node[a];
    const bp_tensor_place *pa = &p->res.info[x].place,
                          *pb = &p->res.info[w].place;
    if (sp->node[b] != w || pa->offset != pb->offset ||
        pa->bytes != pb->bytes || !(sp->flags[b] & VP_ALIAS_OK) ||
        bg_numel(&p->res.graph->nodes[x]) != bg_numel(&p->res.graph->nodes[w]))
        return false;
    const bg_node *n = &p->res.graph->nodes[w];
    bool reads_x = false;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        if (st->root[n->inputs[k]] == x && n->inputs[k] != x) return false;
        reads_x |= n->inputs[k] == x;
    }
    return reads_x;
}

/* Span a is done before span b is written. */
static bool done_before(const vp_state *st, const vp_spans *sp, uint32_t a,
                        uint32_t b) {
    if ((sp->flags[a] & (VP_TO_END | VP_PERSISTENT)) ||
        (sp->flags[b] & VP_PERSISTENT) || sp->nwrite[b] == 0)
        return false;
    const int32_t *la = sp->lastacc + (size_t)a * st->nq;
    const int32_t *kn = sp->known + (size_t)b * st->nq;
    bool fast = true;
    for (uint32_t j = 0; j < st->nq && fast; j++) fast = la[j] <= kn[j];
    if (fast) return true;
    for (uint32_t i = 0; i < sp->nwrite[b]; i++) {
        uint32_t w = sp->acc[sp->astart[b] + i];
        for (uint32_t k = sp->astart[a]; k < sp->astart[a + 1]; k++) {
            uint32_t u = sp->acc[k];
            if (u == w ? !in_place(st, sp, a, b, w) : !vp_before(st, u, w))
                return false;
        }
    }
    return true;
}

/* ---- the paint sweep
 * ---------------------------------------------------------
 *
 * Checking every pair of spans whose bytes overlap is quadratic (a chain
 * whose tensors take turns in two slots overlaps every other one). The
 * relation "a is done before b" is transitive (a's accesses happen-before
 * b's writers, which are accesses of b, which happen-before c's writers),
 * so it is enough that spans sharing a byte form a chain in which each is
 * done before the next. The spans are painted over the arenas' bytes in
 * the schedule order of their first access (the only order such a chain
 * can have: a done-before b puts all of a's accesses before b's first
 * write); each span, when painted, must be done after every span whose
 * paint it covers. Byte ranges are cut at every span boundary (arena,
 * offset) into a segment tree whose nodes hold the span painted over all
 * of their range (PT_NONE: none yet, PT_MIXED: several), so each span
 * meets only the pieces it covers: O(n log n) in all. */

#define PT_NONE UINT32_MAX
#define PT_MIXED (UINT32_MAX - 1)

typedef struct vp_paint {
    const vp_state *st;
    const vp_spans *sp;
    uint32_t *color; /* per tree node: span, PT_NONE or PT_MIXED */
    uint32_t *seen;  /* per span: the last span checked against it */
    uint32_t span;   /* the span being painted */
    uint32_t l, r;   /* its piece range [l, r) */
    braid_status status;
} vp_paint;

static braid_status overlap_error(const vp_state *st, const vp_spans *sp,
                                  uint32_t a, uint32_t b) {
    const bp_plan *p = st->plan;
    const bp_tensor_place *pa = &p->res.info[sp->node[a]].place;
    const bp_tensor_place *pb = &p->res.info[sp->node[b]].place;
    uint64_t lo = pa->offset > pb->offset ? pa->offset : pb->offset;
    uint64_t hi = pa->offset + pa->bytes < pb->offset + pb->bytes
                      ? pa->offset + pa->bytes
                      : pb->offset + pb->bytes;
    uint32_t x = sp->node[a] < sp->node[b] ? sp->node[a] : sp->node[b];
    uint32_t y = sp->node[a] < sp->node[b] ? sp->node[b] : sp->node[a];
    return vp_fail("overlap: node %u and node %u share bytes %llu..%llu of "
                   "arena %u while both may be live (no happens-before "
                   "order between their uses)",
                   x, y, (unsigned long long)lo, (unsigned long long)hi,
                   pa->arena);
}

/* The span painted before must be done before the one painted now. */
static void meet(vp_paint *pt, uint32_t old) {
    if (old == PT_NONE || pt->seen[old] == pt->span || pt->status != BRAID_OK)
        return;
    pt->seen[old] = pt->span;
    if (!done_before(pt->st, pt->sp, old, pt->span))
        pt->status = overlap_error(pt->st, pt->sp, old, pt->span);
}

/* Paints [pt->l, pt->r) within tree node k covering pieces [lo, hi). */
static void paint(vp_paint *pt, uint32_t k, uint32_t lo, uint32_t hi) {
    if (pt->r <= lo || hi <= pt->l) return;
    if (pt->l <= lo && hi <= pt->r && pt->color[k] != PT_MIXED) {
        meet(pt, pt->color[k]);
        pt->color[k] = pt->span;
        return;
    }
    uint32_t mid = lo + (hi - lo) / 2;
    if (pt->color[k] != PT_MIXED) /* push the uniform colour down */
        pt->color[2 * k] = pt->color[2 * k + 1] = pt->color[k];
    paint(pt, 2 * k, lo, mid);
    paint(pt, 2 * k + 1, mid, hi);
    pt->color[k] =
        pt->color[2 * k] == pt->color[2 * k + 1] ? pt->color[2 * k] : PT_MIXED;
}

/* Piece boundaries: every span's (arena, start) and (arena, end). */
typedef struct vp_cut {
    uint32_t arena;
    uint64_t at;
} vp_cut;

static int by_cut(const void *x, const void *y) {
    const vp_cut *a = x, *b = y;
    if (a->arena != b->arena) return a->arena < b->arena ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

static uint32_t find_cut(const vp_cut *c, uint32_t n, vp_cut key) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (by_cut(&c[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The spans in paint order, by (first access, node), into key[0..sp->n):
 * each item's v is the span. key: room for 2 · sp->n (the rest scratch). */
static void order_spans(const vp_state *st, const vp_spans *sp,
                        bg_sort_item *key) {
    for (uint32_t s = 0; s < sp->n; s++) {
        int64_t first = -1; /* never accessed: done before anything */
        for (uint32_t k = sp->astart[s]; k < sp->astart[s + 1]; k++)
            if (first < 0 || st->pos[sp->acc[k]] < first)
                first = st->pos[sp->acc[k]];
        key[s] = (bg_sort_item){bg_sort_signed(first), sp->node[s], s};
    }
    bg_sort_items(key, sp->n, key + sp->n);
}

/* key: scratch for 4 · sp->n items. */
static braid_status sweep_with(vp_paint *pt, vp_cut *cut, bg_sort_item *key) {
    const bp_plan *p = pt->st->plan;
    const vp_spans *sp = pt->sp;
    uint32_t ncut = 0;
    for (uint32_t s = 0; s < sp->n; s++) {
        const bp_tensor_place *pl = &p->res.info[sp->node[s]].place;
        key[ncut++] = (bg_sort_item){pl->arena, pl->offset, 0};
        key[ncut++] = (bg_sort_item){pl->arena, pl->offset + pl->bytes, 0};
    }
    bg_sort_items(key, ncut, key + ncut);
    uint32_t m = 0;
    for (uint32_t i = 0; i < ncut; i++) {
        vp_cut c = {(uint32_t)key[i].k1, key[i].k2};
        if (m == 0 || by_cut(&cut[m - 1], &c) != 0) cut[m++] = c;
    }
    order_spans(pt->st, sp, key);
    for (uint32_t k = 0; k < 4 * (size_t)m; k++)
        pt->color[k] = PT_NONE;
    for (uint32_t i = 0; i < sp->n && pt->status == BRAID_OK; i++) {
        pt->span = key[i].v;
        const bp_tensor_place *pl = &p->res.info[sp->node[pt->span]].place;
        pt->l = find_cut(cut, m, (vp_cut){pl->arena, pl->offset});
        pt->r = find_cut(cut, m, (vp_cut){pl->arena, pl->offset + pl->bytes});
        paint(pt, 1, 0, m);
    }
    return pt->status;
}

static braid_status sweep(const vp_state *st, const vp_spans *sp) {
    size_t n = sp->n ? sp->n : 1;
    vp_paint pt = {st,
                   sp,
                   bp_calloc(8 * n, sizeof *pt.color, "verify_plan"),
                   bp_calloc(n, sizeof *pt.seen, "verify_plan"),
                   0,
                   0,
                   0,
                   BRAID_OK};
    vp_cut *cut = bp_calloc(2 * n, sizeof *cut, "verify_plan");
    bg_sort_item *key = bp_calloc(4 * n, sizeof *key, "verify_plan");
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (pt.color && pt.seen && cut && key) {
        for (uint32_t i = 0; i < sp->n; i++)
            pt.seen[i] = PT_NONE;
        s = sweep_with(&pt, cut, key);
    }
    free(pt.color);
    free(pt.seen);
    free(cut);
    free(key);
    return s;
}

braid_status vp_check_overlaps(vp_state *st) {
    vp_spans sp = {0};
    size_t n = st->n, cells = n * (st->nq ? st->nq : 1);
    sp.node = bp_calloc(n, sizeof *sp.node, "verify_plan spans");
    sp.of = bp_calloc(n, sizeof *sp.of, "verify_plan spans");
    sp.astart = bp_calloc(n + 1, sizeof *sp.astart, "verify_plan spans");
    sp.nwrite = bp_calloc(n, sizeof *sp.nwrite, "verify_plan spans");
    sp.flags = bp_calloc(n, sizeof *sp.flags, "verify_plan spans");
    sp.lastacc = bp_calloc(cells, sizeof *sp.lastacc, "verify_plan spans");
    sp.known = bp_calloc(cells, sizeof *sp.known, "verify_plan spans");
    braid_status s = BRAID_ERR_OUT_OF_MEMORY;
    if (sp.node && sp.of && sp.astart && sp.nwrite && sp.flags && sp.lastacc &&
        sp.known) {
        s = build_spans(st, &sp);
        if (s == BRAID_OK) summarise(st, &sp);
        if (s == BRAID_OK) s = sweep(st, &sp);
    }
    free(sp.node);
    free(sp.of);
    free(sp.astart);
    free(sp.acc);
    free(sp.nwrite);
    free(sp.flags);
    free(sp.lastacc);
    free(sp.known);
    return s;
}

/* ---- variables -------------------------------------------------------------- */

/* The assign of variable v reading x as its value, or BG_NONE:
 * assign_of[x] when the table is given (an assign whose variable x's
 * program stores into is not in it), else a scan. */
static uint32_t assign_with_value(const vp_state *st, const uint32_t *assign_of,
                                  uint32_t x, uint32_t v) {
    if (assign_of) return assign_of[x];
    const braid_graph *g = st->plan->res.graph;
    for (uint32_t a = x + 1; a < st->n; a++)
        if (g->nodes[a].op == BRAID_OP_ASSIGN && g->nodes[a].inputs[1] == x &&
            g->nodes[a].inputs[0] == v)
            return a;
    return BG_NONE;
}

static uint32_t written(const vp_state *st, const uint32_t *assign_of,
                        uint32_t id) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    const bp_tensor_place *pl = &p->res.info[id].place;
    if (pl->storage != BP_STORAGE_VIEW || pl->offset != 0) return BG_NONE;
    if (g->nodes[id].op == BRAID_OP_ASSIGN)
        return g->nodes[id].inputs[0] == pl->base ? id : BG_NONE;
    uint32_t a = assign_with_value(st, assign_of, id, pl->base);
    return a != BG_NONE && g->nodes[a].inputs[0] == pl->base ? a : BG_NONE;
}

uint32_t vp_assign_of_written(const vp_state *st, uint32_t id) {
    return written(st, NULL, id);
}

/* The node computing what input node x holds: x, or through skipped views
 * the node whose bytes they show (a variable: its value before the run's
 * assign; the value written over it: the new one). */
static uint32_t source_of(const vp_state *st, uint32_t x) {
    const bp_plan *p = st->plan;
    while (p->res.info[x].noop && !bg_op_persistent(p->res.graph->nodes[x].op) &&
           p->res.graph->nodes[x].ninputs >= 1 &&
           p->res.graph->nodes[x].op != BRAID_OP_ASSIGN)
        x = p->res.graph->nodes[x].inputs[0];
    return x;
}

/* A value written over its variable v reads v's bytes only as v itself,
 * shaped like it, from an elementwise kernel (element i read before it is
 * written, no other element after). */
static bool in_place_ok(const vp_state *st, uint32_t w, uint32_t v) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[w], *vn = &p->res.graph->nodes[v];
    if (n->op == BRAID_OP_ASSIGN) return true;
    uint32_t pi = p->res.info[w].program;
    bool ew = n->op == BRAID_OP_FUSED
                  ? pi < p->res.nprograms &&
                        p->res.programs[pi].kind == BP_PROGRAM_ELEMENTWISE
                  : bg_op(n->op)->kind == BRAID_KIND_ELEMENTWISE;
    for (uint32_t k = 0; ew && k < n->ninputs; k++)
        if (st->root[n->inputs[k]] == v && source_of(st, n->inputs[k]) == v)
            ew = n->inputs[k] == v && vn->rank == n->rank &&
                 memcmp(vn->dims, n->dims, sizeof n->dims) == 0;
    return ew;
}

static const char *var_name(const vp_state *st, uint32_t v) {
    const char *s = st->plan->res.graph->nodes[v].name;
    return s ? s : "?";
}

/* One sweep over the assigns: assign_of[x] for each assign whose value x
 * may be computed in its variable's bytes, and writer[v] for variables
 * written by a program's STORE (passes/program.h) — the store's fused node
 * is the variable's writer, named as the value of the variable's assign,
 * which does no work, and it reads the variable only at its own positions.
 * Then every STORE of every program must have such an assign. */
static braid_status find_stores(const vp_state *st, uint32_t *assign_of,
                                uint32_t *writer) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t a = 0; a < st->n; a++) {
        if (g->nodes[a].op != BRAID_OP_ASSIGN || g->nodes[a].ninputs < 2)
            continue;
        if (!bp_assign_stored(p, a)) {
            assign_of[g->nodes[a].inputs[1]] = a;
            continue;
        }
        uint32_t v = g->nodes[a].inputs[0], x = g->nodes[a].inputs[1];
        if (!p->res.info[a].noop)
            return vp_fail("variable: assign node %u copies node %u into "
                           "variable node %u (\"%s\"), which that node's "
                           "program stores into already",
                           a, x, v, var_name(st, v));
        if (writer[v] != BG_NONE)
            return vp_fail("variable: node %u (\"%s\") is written by nodes "
                           "%u and %u",
                           v, var_name(st, v), writer[v], x);
        writer[v] = x;
        if (!in_place_ok(st, x, v))
            return vp_fail("variable: node %u stores into variable node %u "
                           "(\"%s\") but is no elementwise kernel reading it "
                           "at its own index",
                           x, v, var_name(st, v));
    }
    for (uint32_t x = 0; x < st->n; x++) {
        uint32_t pi = p->res.info[x].program;
        if (g->nodes[x].op != BRAID_OP_FUSED || pi >= p->res.nprograms)
            continue;
        const bp_program *pr = &p->res.programs[pi];
        for (uint32_t i = 0; i < pr->ninstr; i++) {
            if (pr->instr[i].op != BP_INSTR_STORE ||
                pr->instr[i].input >= g->nodes[x].ninputs)
                continue; /* bp_program_check refuses it */
            uint32_t v = g->nodes[x].inputs[pr->instr[i].input];
            if (writer[v] != x)
                return vp_fail("variable: node %u stores into variable node "
                               "%u (\"%s\") (instruction %u), but the "
                               "variable's assign does not take it as its "
                               "value",
                               x, v, var_name(st, v), i);
        }
    }
    return BRAID_OK;
}

/* Every assign's work is done by one node: the assign itself, or (when it
 * is skipped) its value, computed in place or stored into the variable. */
static braid_status check_assign_done(const vp_state *st,
                                      const uint32_t *writer) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t a = 0; a < st->n; a++) {
        const bg_node *n = &g->nodes[a];
        if (n->op != BRAID_OP_ASSIGN || n->ninputs < 2) continue;
        uint32_t v = n->inputs[0];
        uint32_t want = p->res.info[a].noop ? n->inputs[1] : a;
        if (writer[v] == want) continue;
        char who[48] = "nothing";
        if (writer[v] != BG_NONE)
            snprintf(who, sizeof who, "node %u", writer[v]);
        return vp_fail("variable: assign node %u of variable node %u "
                       "(\"%s\") %s, but %s writes the variable",
                       a, v, var_name(st, v),
                       p->res.info[a].noop ? "is skipped" : "copies its value",
                       who);
    }
    return BRAID_OK;
}

/* writer[v]: the one node writing variable v's bytes (its assign, the
 * assign's value computed in place, or the value's program storing into
 * it), BG_NONE when none. One sweep. */
static braid_status find_writers(const vp_state *st, uint32_t *assign_of,
                                 uint32_t *writer) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t id = 0; id < st->n; id++) assign_of[id] = writer[id] = BG_NONE;
    braid_status s = find_stores(st, assign_of, writer);
    if (s != BRAID_OK) return s;
    for (uint32_t id = 0; id < st->n; id++) {
        uint32_t v = st->root[id];
        if (v == id || p->res.info[id].noop ||
            g->nodes[v].op != BRAID_OP_VARIABLE)
            continue;
        if (writer[v] != BG_NONE || written(st, assign_of, id) == BG_NONE)
            return vp_fail("variable: node %u (\"%s\") is written by a node "
                           "other than its assign or the assign's value",
                           v, var_name(st, v));
        writer[v] = id;
        if (!in_place_ok(st, id, v))
            return vp_fail("variable: node %u computes into variable node %u "
                           "(\"%s\") but is no elementwise kernel reading it "
                           "at its own index",
                           id, v, var_name(st, v));
    }
    return check_assign_done(st, writer);
}

braid_status vp_check_assigns(const vp_state *st) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    uint32_t *assign_of = bp_calloc(st->n, sizeof *assign_of, "verify_plan");
    uint32_t *writer = bp_calloc(st->n, sizeof *writer, "verify_plan");
    braid_status s = assign_of && writer ? find_writers(st, assign_of, writer)
                                         : BRAID_ERR_OUT_OF_MEMORY;
    bool any = false; /* no variable written: no reader to order */
    for (uint32_t v = 0; s == BRAID_OK && v < st->n && !any; v++)
        any = writer[v] != BG_NONE;
    for (uint32_t u = 0; s == BRAID_OK && any && u < st->n; u++) {
        if (p->res.info[u].noop) continue;
        const bg_node *n = &g->nodes[u];
        for (uint32_t k = 0; s == BRAID_OK && k < n->ninputs; k++) {
            uint32_t v = source_of(st, n->inputs[k]);
            uint32_t w = g->nodes[v].op == BRAID_OP_VARIABLE ? writer[v] : BG_NONE;
            if (w != BG_NONE && u != w && !vp_before(st, u, w))
                s = vp_fail("variable: node %u reads variable node %u "
                            "(\"%s\") but does not happen before node %u "
                            "writes it",
                            u, v, var_name(st, v), w);
        }
    }
    free(assign_of);
    free(writer);
    return s;
}
