/* passes/fuse.c — the fuse pass: groups of elementwise work become one
 * BRAID_OP_FUSED node each (the rules are in docs/fusion.md).
 *
 * First a conv on a GPU whose only user is elementwise work gives its
 * bias add to that work (phase 0, rule 15). Then two phases over the graph
 * as it stands (ids topological):
 *   1. matmul epilogues: a matmul whose only user adds a row bias, the
 *      activation after it when the add's only user is one, and a
 *      residual add of a whole tensor after those; and a CPU conv's
 *      relu, or residual add and relu;
 *   2. from the last node to the first, every node not yet taken roots a
 *      group: a reduction grows one from its input (the prologue), an
 *      elementwise or broadcast_to node from itself. An elementwise group
 *      may also take a member whose one use outside it is the assign of a
 *      variable only the group reads (an optimizer's new moment): the
 *      program stores it into the variable (BP_INSTR_STORE), so the
 *      moments and the parameter update are one kernel.
 * Growing pops candidate producers in decreasing id order, so when a node is
 * considered every one of its users has already been decided: it joins
 * only when all its uses are inside the group, which keeps every group
 * convex (no path leaves it and comes back), its only outside use its root,
 * and nothing computed twice. Then each group with work worth fusing
 * becomes a fused node (passes/fuse_program.c), and bp_plan_compact drops
 * what it replaced. */
#include "passes/fuse.h"
#include "graph/index.h"

#include <stdlib.h>
#include <string.h>

/* The pass's working state; arrays are per node id below n. */
typedef struct fuse_state {
    bp_plan *plan;         /* the plan */
    braid_graph *g;        /* its graph */
    uint32_t n;            /* nodes when the pass started */
    uint32_t *nuse;        /* input slots reading the node */
    uint32_t *user;        /* the last node found reading it */
    bool *is_output;       /* a graph output */
    bool *taken;           /* member, root, reduction or matmul of a group */
    bool *member;          /* in the group being grown (scratch) */
    uint32_t *inref;       /* uses from the group being grown (scratch) */
    uint32_t *heap;        /* candidate producers, a max-heap (scratch) */
    bool *queued;          /* in heap or popped this group (scratch) */
    uint32_t nheap;        /* entries in heap */
    uint32_t *touched;     /* nodes whose scratch entries to reset */
    uint32_t ntouched;     /* entries in touched */
    uint32_t *members;     /* all groups' members, group after group */
    uint32_t nmembers;     /* entries in members */
    bp_fuse_group *groups; /* the groups found */
    uint32_t ngroups;      /* entries in groups */
    bool gathers;          /* the group being grown may hold gathers
                              (ELEMENTWISE groups only) */
    uint32_t max_members;  /* the group being grown holds at most this */
    uint32_t *assign_of;   /* per node: the assign taking it as its value,
                              or BG_NONE */
    bool stores;           /* the group being grown may store members into
                              their variables (ELEMENTWISE groups only) */
    uint32_t nstores;      /* members of that group stored so far */
} fuse_state;

static braid_status oom(void) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "fuse: out of memory");
}

static braid_status state_init(fuse_state *s, bp_plan *plan) {
    memset(s, 0, sizeof *s);
    s->plan = plan;
    s->g = plan->res.graph;
    uint32_t n = s->n = plan->res.graph->nnodes;
    size_t m = n ? n : 1;
    s->nuse = calloc(m, sizeof *s->nuse);
    s->user = calloc(m, sizeof *s->user);
    s->is_output = calloc(m, sizeof *s->is_output);
    s->taken = calloc(m, sizeof *s->taken);
    s->member = calloc(m, sizeof *s->member);
    s->inref = calloc(m, sizeof *s->inref);
    s->heap = calloc(m, sizeof *s->heap);
    s->queued = calloc(m, sizeof *s->queued);
    s->touched = calloc(m, sizeof *s->touched);
    s->members = calloc(m, sizeof *s->members);
    s->groups = calloc(m, sizeof *s->groups);
    s->assign_of = malloc(m * sizeof *s->assign_of);
    if (!s->nuse || !s->user || !s->is_output || !s->taken || !s->member ||
        !s->inref || !s->heap || !s->queued || !s->touched || !s->members ||
        !s->groups || !s->assign_of)
        return oom();
    for (uint32_t id = 0; id < n; id++)
        s->assign_of[id] = BG_NONE;
    for (uint32_t id = 0; id < n; id++) {
        const bg_node *nd = bg_node_at(s->g, id);
        if (nd->op == BRAID_OP_ASSIGN && nd->ninputs == 2)
            s->assign_of[nd->inputs[1]] = id;
        for (uint32_t k = 0; k < nd->ninputs; k++) {
            s->nuse[nd->inputs[k]]++;
            s->user[nd->inputs[k]] = id;
        }
    }
    for (uint32_t i = 0; i < s->g->noutputs; i++)
        s->is_output[s->g->outputs[i].node] = true;
    return BRAID_OK;
}

static void state_free(fuse_state *s) {
    free(s->nuse);
    free(s->user);
    free(s->is_output);
    free(s->taken);
    free(s->member);
    free(s->inref);
    free(s->heap);
    free(s->queued);
    free(s->touched);
    free(s->members);
    free(s->groups);
    free(s->assign_of);
}

static const bg_node *node(const fuse_state *s, uint32_t id) {
    return bg_node_at(s->g, id);
}

static bool same_device(const fuse_state *s, uint32_t a, uint32_t b) {
    return bp_device_equal(s->plan->res.info[a].device,
                           s->plan->res.info[b].device);
}

/* An op a group may hold: elementwise (incl. cast, compare, where) and
 * broadcast_to. Copies, shape ops, sources, reductions and matmuls never
 * are members. */
static bool fusible_op(braid_op op) {
    braid_op_kind k = bg_op(op)->kind;
    return k == BRAID_KIND_ELEMENTWISE || k == BRAID_KIND_BROADCAST;
}

/* A node a group may hold: a fusible op whose values and operands are all
 * exactly doubles. Programs hold constants as doubles and the CPU
 * interpreter's tiles know no i64; i64 nodes (data movement, eq/ne, where,
 * casts) run alone, by the unfused kernels. A run-checked node (the
 * range-checked cast, bg_node_run_check) runs alone too: programs carry no
 * run check record (docs/fusion.md, rule 1). */
static bool fusible(const fuse_state *s, uint32_t id) {
    const bg_node *nd = bg_node_at(s->g, id);
    if (!fusible_op(nd->op) || !bg_dtype_f64_exact(nd->dtype) ||
        bg_node_run_check(s->g, id))
        return false;
    for (uint32_t k = 0; k < nd->ninputs; k++)
        if (!bg_dtype_f64_exact(bg_node_at(s->g, nd->inputs[k])->dtype))
            return false;
    return true;
}

/* A gather an ELEMENTWISE group may hold as a member (never its root): the
 * axis form (ONNX Gather), i32 indices, data of a dtype programs hold. Its
 * indices are a full-size operand like any member's; its data is read at
 * the gathered rows, so it stays outside the group (an input of the fused
 * node, never a member: add_member does not queue it). */
static bool gather_member(const fuse_state *s, uint32_t id) {
    const bg_node *nd = bg_node_at(s->g, id);
    if (nd->op != BRAID_OP_GATHER || nd->ninputs != 2 ||
        bg_index_mode_of(&nd->attr) != BG_INDEX_AXIS)
        return false;
    const bg_node *x = bg_node_at(s->g, nd->inputs[0]);
    const bg_node *ix = bg_node_at(s->g, nd->inputs[1]);
    return ix->dtype == BRAID_I32 && bg_dtype_f64_exact(x->dtype) &&
           x->dtype != BRAID_I64 && nd->dtype == x->dtype;
}

/* ---- the candidate heap ------------------------------------------------- */

static void heap_push(fuse_state *s, uint32_t id) {
    if (s->queued[id]) return;
    s->queued[id] = true;
    s->touched[s->ntouched++] = id;
    uint32_t i = s->nheap++;
    while (i > 0 && s->heap[(i - 1) / 2] < id) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = id;
}

static uint32_t heap_pop(fuse_state *s) {
    uint32_t top = s->heap[0], last = s->heap[--s->nheap], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= s->nheap) break;
        if (c + 1 < s->nheap && s->heap[c + 1] > s->heap[c]) c++;
        if (s->heap[c] <= last) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0) s->heap[i] = last;
    return top;
}

/* ---- growing a group ---------------------------------------------------- */

/* Marks id a member and queues its producers. Every node touched enters
 * `touched` once (through the heap), so its scratch entries get reset. */
static void add_member(fuse_state *s, uint32_t id) {
    s->member[id] = true;
    s->members[s->nmembers++] = id;
    if (!s->queued[id]) {
        s->queued[id] = true;
        s->touched[s->ntouched++] = id;
    }
    const bg_node *nd = node(s, id);
    /* a gather's data (input 0) is never a member: not counted as a use
     * from the group, so it never joins */
    uint32_t k0 = nd->op == BRAID_OP_GATHER ? 1 : 0;
    for (uint32_t k = k0; k < nd->ninputs; k++) {
        s->inref[nd->inputs[k]]++;
        heap_push(s, nd->inputs[k]);
    }
}

/* The variable p's one outside use assigns it to, when the group rooted at
 * root may store p there (BP_INSTR_STORE, passes/program.h): its other
 * uses are all inside, p computes (a broadcast_to would be a load), and
 * the variable — on the root's device, no graph output — has the space's
 * shape and p's dtype; else BG_NONE. grow() checks afterwards that only
 * the group reads the variable (stores_valid). */
static uint32_t store_target(const fuse_state *s, uint32_t p, uint32_t root) {
    uint32_t a = s->assign_of[p];
    if (!s->stores || s->nstores >= BP_FUSE_MAX_STORES || a == BG_NONE ||
        s->inref[p] + 1 != s->nuse[p] ||
        node(s, p)->op == BRAID_OP_BROADCAST_TO)
        return BG_NONE;
    uint32_t v = node(s, a)->inputs[0];
    const bg_node *vn = node(s, v);
    return vn->op == BRAID_OP_VARIABLE && !s->is_output[v] &&
                   same_device(s, v, root) &&
                   bg_same_shape(vn, node(s, root)) &&
                   vn->dtype == node(s, p)->dtype
               ? v
               : BG_NONE;
}

/* p may join the group rooted at root (iteration space of `numel`
 * elements): fusible, free, on the root's device, every use inside the
 * group (or, stored, all but its assign), not an output, and of the full
 * size (a smaller, broadcast value would be recomputed for every element
 * it is broadcast to). */
static bool joinable(fuse_state *s, uint32_t p, uint32_t root, int64_t numel,
                     uint32_t count) {
    const bg_node *nd = node(s, p);
    if (count >= s->max_members || s->taken[p] || s->member[p] ||
        !(fusible(s, p) || (s->gathers && gather_member(s, p) &&
                            bg_same_shape(nd, node(s, root)))) ||
        !same_device(s, p, root) || s->is_output[p] || bg_numel(nd) != numel)
        return false;
    if (s->inref[p] == s->nuse[p]) return true;
    if (store_target(s, p, root) == BG_NONE) return false;
    s->nstores++;
    return true;
}

/* Every member of the group grown last (members[first..first+count)) that
 * is stored into its variable is the variable's only writer and the group
 * its only reader: each use of the variable but its assign's is a member's
 * (never as a gather's data, read at other positions). */
static bool stores_valid(const fuse_state *s, uint32_t first, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
        uint32_t p = s->members[first + i];
        if (i == 0 || s->inref[p] == s->nuse[p]) continue; /* i 0: root */
        uint32_t v = node(s, s->assign_of[p])->inputs[0];
        if (s->inref[v] + 1 != s->nuse[v]) return false;
        for (uint32_t j = 0; j < count; j++) {
            const bg_node *m = node(s, s->members[first + j]);
            if (m->op == BRAID_OP_GATHER && m->inputs[0] == v) return false;
        }
    }
    return true;
}

/* Grows the group rooted at root (a fusible node, taken by no group).
 * Returns the member count; the members are the tail of s->members, in
 * descending id. */
static uint32_t grow(fuse_state *s, uint32_t root) {
    uint32_t first = s->nmembers;
    int64_t numel = bg_numel(node(s, root));
    add_member(s, root);
    while (s->nheap > 0) {
        uint32_t p = heap_pop(s);
        if (joinable(s, p, root, numel, s->nmembers - first)) add_member(s, p);
    }
    return s->nmembers - first;
}

/* Clears the scratch entries of everything the last grow touched. */
static void reset_scratch(fuse_state *s) {
    for (uint32_t i = 0; i < s->ntouched; i++) {
        uint32_t id = s->touched[i];
        s->member[id] = s->queued[id] = false;
        s->inref[id] = 0;
    }
    s->ntouched = 0;
    s->nheap = 0;
}

/* Members popped in descending id: store them ascending, mark them taken
 * and record the group. */
static void keep_group(fuse_state *s, bp_program_kind kind, uint32_t out,
                       uint32_t root, uint32_t first, uint32_t count) {
    uint32_t *m = s->members + first;
    for (uint32_t i = 0; i < count / 2; i++) {
        uint32_t t = m[i];
        m[i] = m[count - 1 - i];
        m[count - 1 - i] = t;
    }
    for (uint32_t i = 0; i < count; i++)
        s->taken[m[i]] = true;
    s->taken[out] = s->taken[root] = true;
    s->groups[s->ngroups++] = (bp_fuse_group){kind, out, root, first, count};
}

/* ---- phase 1: matmul epilogues ---------------------------------------- */

/* The only user of id when it has exactly one and is no output. */
static uint32_t sole_user(const fuse_state *s, uint32_t id) {
    return s->nuse[id] == 1 && !s->is_output[id] ? s->user[id] : BG_NONE;
}

/* An epilogue chain's group: members [first, s->nmembers), each a user of
 * the one before (ids ascending), after root. keep_group expects them in
 * descending id, as grow leaves them. */
static void keep_chain(fuse_state *s, bp_program_kind kind, uint32_t out,
                       uint32_t root, uint32_t first) {
    uint32_t count = s->nmembers - first;
    for (uint32_t i = 0; i < count / 2; i++) {
        uint32_t t = s->members[first + i];
        s->members[first + i] = s->members[first + count - 1 - i];
        s->members[first + count - 1 - i] = t;
    }
    keep_group(s, kind, out, root, first, count);
}

/* bias broadcasts along the rows of mm: shape [N] or [1, N]. */
static bool row_bias(const bg_node *bias, const bg_node *mm) {
    int64_t N = mm->dims[mm->rank - 1];
    if (bias->rank == 1) return bias->dims[0] == N;
    return bias->rank == 2 && bias->dims[0] == 1 && bias->dims[1] == N;
}

/* The residual add after an epilogue's last member `last`: its sole user
 * add(last, r) of mm's shape and dtype, r a whole tensor of that shape on
 * the same device (a transformer block's h + proj(x)), else BG_NONE. */
static uint32_t residual_add(const fuse_state *s, uint32_t last, uint32_t mm) {
    uint32_t res = sole_user(s, last);
    if (res == BG_NONE || s->taken[res] || !same_device(s, res, mm))
        return BG_NONE;
    const bg_node *a = node(s, res), *m = node(s, mm);
    if (a->op != BRAID_OP_ADD || a->inputs[0] == a->inputs[1] ||
        !bg_same_shape(a, m) || a->dtype != m->dtype)
        return BG_NONE;
    const bg_node *r =
        node(s, a->inputs[0] == last ? a->inputs[1] : a->inputs[0]);
    return bg_same_shape(r, m) && r->dtype == m->dtype ? res : BG_NONE;
}

/* matmul mm → add(mm, bias) [→ activation] [→ add(·, r)] on one device: a
 * MATMUL group when mm and each member but the last have no other user. */
static void try_epilogue(fuse_state *s, uint32_t mm) {
    uint32_t add = sole_user(s, mm);
    if (add == BG_NONE || s->taken[add] || !same_device(s, add, mm)) return;
    const bg_node *a = node(s, add);
    if (a->op != BRAID_OP_ADD || a->inputs[0] == a->inputs[1] ||
        !bg_same_shape(a, node(s, mm)))
        return;
    uint32_t bias = a->inputs[0] == mm ? a->inputs[1] : a->inputs[0];
    if (!row_bias(node(s, bias), node(s, mm))) return;
    uint32_t first = s->nmembers, out = add;
    s->members[s->nmembers++] = add;
    uint32_t act = sole_user(s, add);
    if (act != BG_NONE && !s->taken[act] && same_device(s, act, mm) &&
        bg_op_has(node(s, act)->op, BRAID_OPF_ACTIVATION)) {
        s->members[s->nmembers++] = act;
        out = act;
    }
    uint32_t res = residual_add(s, out, mm);
    if (res != BG_NONE) {
        s->members[s->nmembers++] = res;
        out = res;
    }
    keep_chain(s, BP_PROGRAM_MATMUL, out, mm, first);
}

/* Rule 16 (docs/fusion.md): conv c on the CPU (f32, ungrouped, channels
 * first, pads not negative) → relu, or → add(c, r) [→ relu] with r a
 * whole tensor of c's shape and dtype: a CONV group when c and each
 * member but the last have no other user. The CPU's conv kernels apply
 * the epilogue as they store each output (the add reads r there), so the
 * conv's output is never written and read back by another pass. */
static void try_conv_epilogue(fuse_state *s, uint32_t c) {
    const bg_node *cv = node(s, c);
    bg_conv_geom geo;
    if (cv->dtype != BRAID_F32 ||
        s->plan->res.info[c].device.kind != BP_DEVICE_CPU ||
        !bg_conv_geom_of(s->g, cv, &geo) || geo.G != 1 || geo.channels_last)
        return;
    for (int i = 0; i < geo.nspatial; i++)
        if (geo.pe[i] < 0) return;
    uint32_t u = sole_user(s, c);
    if (u == BG_NONE || s->taken[u] || !same_device(s, u, c)) return;
    uint32_t first = s->nmembers, out = u;
    if (node(s, u)->op != BRAID_OP_RELU) { /* the residual add, a relu */
        if (residual_add(s, c, c) != u) return;
        uint32_t act = sole_user(s, u);
        if (act != BG_NONE && !s->taken[act] && same_device(s, act, c) &&
            node(s, act)->op == BRAID_OP_RELU)
            out = act;
    }
    s->members[s->nmembers++] = u;
    if (out != u) s->members[s->nmembers++] = out;
    keep_chain(s, BP_PROGRAM_CONV, out, c, first);
}

/* ---- phase 2: reductions and elementwise groups ------------------------- */

/* A reduction (REDUCE) or a pool (POOL) absorbs the group producing its
 * input: its prologue, evaluated where the reduction or each tap of the
 * pool reads. A pool's prologue is recomputed at every tap on the GPU
 * (kernel-volume times), so it holds at most BP_FUSE_POOL_MAX_MEMBERS. */
static void try_prologue(fuse_state *s, uint32_t r, bp_program_kind kind) {
    uint32_t p = node(s, r)->inputs[0];
    if (s->taken[p] || !fusible(s, p) || !same_device(s, p, r) ||
        sole_user(s, p) != r)
        return;
    s->gathers = false;
    s->max_members = kind == BP_PROGRAM_POOL ? BP_FUSE_POOL_MAX_MEMBERS
                                             : BP_FUSE_MAX_MEMBERS;
    uint32_t first = s->nmembers, count = grow(s, p);
    reset_scratch(s);
    keep_group(s, kind, r, p, first, count);
}

/* A pool that may take a prologue: max_pool or avg_pool of a value of a
 * dtype programs hold. */
static bool pool_node(const fuse_state *s, uint32_t id) {
    const bg_node *nd = node(s, id);
    return (nd->op == BRAID_OP_MAX_POOL || nd->op == BRAID_OP_AVG_POOL) &&
           nd->ninputs == 1 && nd->rank >= 3 && nd->rank <= 5 &&
           bg_dtype_f64_exact(nd->dtype);
}

/* A group of one op gains nothing from fusion: left as it is. Grown with
 * stores first; when a stored member's variable is read outside the
 * group, grown again without. */
static void try_elementwise(fuse_state *s, uint32_t root) {
    s->gathers = true;
    s->max_members = BP_FUSE_MAX_MEMBERS;
    s->stores = true;
    s->nstores = 0;
    uint32_t first = s->nmembers, count = grow(s, root);
    if (s->nstores > 0 && !stores_valid(s, first, count)) {
        reset_scratch(s);
        s->nmembers = first;
        s->stores = false;
        count = grow(s, root);
    }
    s->stores = false;
    reset_scratch(s);
    if (count < 2) {
        s->nmembers = first;
        return;
    }
    keep_group(s, BP_PROGRAM_ELEMENTWISE, root, root, first, count);
}

static void find_groups(fuse_state *s) {
    for (uint32_t id = 0; id < s->n; id++)
        if (node(s, id)->op == BRAID_OP_MATMUL && !s->taken[id])
            try_epilogue(s, id);
        else if (node(s, id)->op == BRAID_OP_CONV && !s->taken[id])
            try_conv_epilogue(s, id);
    for (uint32_t id = s->n; id-- > 0;) {
        if (s->taken[id]) continue;
        braid_op_kind k = bg_op(node(s, id)->op)->kind;
        if (k == BRAID_KIND_REDUCE)
            try_prologue(s, id, BP_PROGRAM_REDUCE);
        else if (pool_node(s, id))
            try_prologue(s, id, BP_PROGRAM_POOL);
        else if (fusible(s, id))
            try_elementwise(s, id);
    }
}

/* ---- phase 0: a GPU conv's bias joins the elementwise work after it ----- */

/* Whether conv c (a conv with a bias, on a GPU) has as its only use an
 * elementwise node of its shape, dtype and device that a group may hold
 * (ResNet's relu, or the residual add and relu): then its bias add can be
 * one more member of that node's group. */
static bool bias_joins_user(const fuse_state *s, uint32_t c) {
    const bg_node *n = node(s, c);
    if (n->op != BRAID_OP_CONV || n->ninputs != 3 ||
        s->plan->res.info[c].device.kind != BP_DEVICE_CUDA ||
        !bg_dtype_f64_exact(n->dtype))
        return false;
    uint32_t u = sole_user(s, c);
    return u != BG_NONE && fusible(s, u) && same_device(s, u, c) &&
           node(s, u)->dtype == n->dtype && bg_same_shape(node(s, u), n);
}

/* Rule 15 (docs/fusion.md): conv(x, w, b) whose only user qualifies
 * (bias_joins_user) becomes add(conv(x, w), reshape(b, [C, 1, ...])),
 * which phase 2 fuses with that user: on a GPU cuDNN's convolution and its
 * separate bias pass (cudnnAddTensor, a read and a write of the output)
 * were two launches before the user's kernel, now the bias is added where
 * the user reads the conv (the same float additions: the same bits). The
 * new nodes carry the conv's device and origin. *count: conv nodes
 * rewritten; when any, the graph is compacted and s is stale. */
static braid_status split_conv_bias(fuse_state *s, uint32_t *count) {
    bp_plan *p = s->plan;
    *count = 0;
    uint32_t *rep = NULL; /* per node below s->n: the conv's add */
    for (uint32_t c = 0; c < s->n; c++) {
        if (!bias_joins_user(s, c)) continue;
        if (!rep) {
            if (!(rep = malloc(s->n * sizeof *rep))) return oom();
            for (uint32_t id = 0; id < s->n; id++)
                rep[id] = BG_NONE;
        }
        bg_node conv = *node(s, c); /* the node array may move below */
        bool cl = conv.attr.flags & BG_CONV_CHANNELS_LAST;
        int64_t bd[BRAID_MAX_RANK] = {conv.dims[cl ? conv.rank - 1 : 1]};
        for (int d = 1; d + 1 < conv.rank; d++)
            bd[d] = 1;
        uint32_t xw[2] = {conv.inputs[0], conv.inputs[1]};
        uint32_t b = conv.inputs[2];
        /* channels first the bias broadcasts as [C, 1, ...]; channels last
         * as it is, [C] */
        uint32_t r = bp_plan_add_node(p, BRAID_OP_RESHAPE, &b, 1, conv.dtype,
                                      cl ? 1 : conv.rank - 1, bd, NULL);
        uint32_t c2 =
            r == BG_NONE ? BG_NONE
                         : bp_plan_add_node(p, BRAID_OP_CONV, xw, 2, conv.dtype,
                                            conv.rank, conv.dims, &conv.attr);
        uint32_t ops[2] = {c2, r};
        uint32_t a = c2 == BG_NONE
                         ? BG_NONE
                         : bp_plan_add_node(p, BRAID_OP_ADD, ops, 2, conv.dtype,
                                            conv.rank, conv.dims, NULL);
        if (a == BG_NONE) {
            free(rep);
            return BRAID_ERR_OUT_OF_MEMORY; /* message set */
        }
        braid_graph *g = p->res.graph;
        if (conv.name && !(g->nodes[c2].name = bg_strdup(g, conv.name))) {
            free(rep);
            return oom();
        }
        uint32_t made[3] = {r, c2, a};
        for (int k = 0; k < 3; k++) {
            p->res.info[made[k]].device = p->res.info[c].device;
            p->res.info[made[k]].origin = p->res.info[c].origin;
        }
        rep[c] = a;
        (*count)++;
    }
    if (!rep) return BRAID_OK;
    bp_plan_replace_map(p, rep, s->n);
    free(rep);
    return bp_plan_compact(p);
}

static int by_out(const void *a, const void *b) {
    uint32_t x = ((const bp_fuse_group *)a)->out;
    uint32_t y = ((const bp_fuse_group *)b)->out;
    return (x > y) - (x < y);
}

/* Every group as a fused node, then every use of a group's output
 * rewired to its fused node in one sweep. */
static braid_status build_groups(fuse_state *s) {
    size_t m = s->n ? s->n : 1;
    bp_fuse_scratch sc = {s->n, s->member, calloc(m, sizeof *sc.vmap),
                          malloc(m * sizeof *sc.rep), s->assign_of};
    braid_status st = sc.vmap && sc.rep ? BRAID_OK : oom();
    for (uint32_t id = 0; st == BRAID_OK && id < s->n; id++)
        sc.rep[id] = BG_NONE;
    for (uint32_t i = 0; st == BRAID_OK && i < s->ngroups; i++)
        st = bp_fuse_build(s->plan, &s->groups[i], s->members, &sc);
    if (st == BRAID_OK) bp_plan_replace_map(s->plan, sc.rep, s->n);
    free(sc.vmap);
    free(sc.rep);
    return st;
}

braid_status bp_fuse(bp_plan *plan) {
    fuse_state s;
    uint32_t split = 0;
    braid_status st = state_init(&s, plan);
    if (st == BRAID_OK) st = split_conv_bias(&s, &split);
    if (st == BRAID_OK && split) { /* counted again over the new graph */
        state_free(&s);
        st = state_init(&s, plan);
    }
    if (st == BRAID_OK) find_groups(&s);
    /* fused nodes appended in the order of what they replace keep the
     * graph's order through compaction */
    if (st == BRAID_OK) qsort(s.groups, s.ngroups, sizeof *s.groups, by_out);
    if (st == BRAID_OK && s.ngroups > 0) st = build_groups(&s);
    if (st == BRAID_OK && s.ngroups > 0) st = bp_plan_compact(plan);
    state_free(&s);
    return st;
}
