/* passes/state.c — ordering of variable reads before their assign.
 *
 * The rule (docs/training.md): every read of a variable in a run sees its
 * value from before the run's assigns. An assign writes its variable's
 * bytes in place, so it must run after every other node that reads those
 * bytes: the variable's consumers, and the consumers of shape ops on it
 * (which the memory pass may turn into views of the same bytes), through
 * chains of such ops. This pass runs after fusion and chunking, when the
 * nodes that will actually read the bytes exist, and appends each of them
 * to the inputs of the assign (inputs 2...) or, when the assign's value is
 * a fused elementwise node only the assign reads, of that node (after the
 * inputs its program loads): ordering edges that carry no data, which
 * streams, schedule and memory order like any data edge (events across
 * queues, queue order within one, lifetimes). The second form lets the
 * memory pass compute the value straight into the variable's bytes, with
 * no copy (passes/memory_state.c). Then it restores
 * topological ids (an ordering edge may come from a later id). The plan
 * verifier checks the result (verify_plan.c, check_assigns). */
#include "passes/passes.h"

#include <stdlib.h>

typedef struct st_ctx {
    braid_graph *g;
    uint32_t *cstart; /* per node: first index in cons (n + 1 entries) */
    uint32_t *cons;   /* consumers of each node (an edge per entry) */
    uint32_t *mark;   /* per node: the assign that last collected it */
    uint32_t *stack;  /* work list of nodes whose consumers read the bytes */
    uint32_t *add;    /* ordering edges collected for the current assign */
    uint32_t *desc;   /* per node: the assign whose value it descends from */
    uint32_t *work;   /* work list of the descendant search */
} st_ctx;

static braid_status consumers(st_ctx *c) {
    braid_graph *g = c->g;
    uint32_t n = g->nnodes, e = 0;
    c->cstart = bp_calloc((size_t)n + 1, sizeof *c->cstart, "state");
    if (!c->cstart) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t id = 0; id < n; id++)
        for (uint32_t k = 0; k < g->nodes[id].ninputs; k++)
            c->cstart[g->nodes[id].inputs[k] + 1]++, e++;
    for (uint32_t id = 0; id < n; id++)
        c->cstart[id + 1] += c->cstart[id];
    c->cons = bp_calloc(e ? e : 1, sizeof *c->cons, "state");
    uint32_t *fill = bp_calloc(n ? n : 1, sizeof *fill, "state");
    if (!c->cons || !fill) {
        free(fill);
        return BRAID_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t id = 0; id < n; id++)
        for (uint32_t k = 0; k < g->nodes[id].ninputs; k++) {
            uint32_t x = g->nodes[id].inputs[k];
            c->cons[c->cstart[x] + fill[x]++] = id;
        }
    free(fill);
    return BRAID_OK;
}

/* A node whose output the memory pass may make a view of its input. */
static bool may_view(const bg_node *n) {
    braid_op_kind k = bg_op(n->op)->kind;
    return (k == BRAID_KIND_SHAPE || k == BRAID_KIND_BROADCAST) &&
           n->ninputs == 1;
}

/* Ordering inputs a node may gain: a fused node's kernel takes one
 * pointer per input, so keep them well inside codegen's and the CPU
 * interpreter's limits. */
#define ST_MAX_INPUTS 64

/* Whether one of c->add[0..nadd) depends on node x (then an edge from it
 * to x would close a cycle). */
static bool reaches_reader(st_ctx *c, uint32_t a, uint32_t x, uint32_t nadd) {
    uint32_t top = 0;
    c->work[top++] = x;
    c->desc[x] = a;
    while (top > 0) {
        uint32_t y = c->work[--top];
        for (uint32_t i = c->cstart[y]; i < c->cstart[y + 1]; i++)
            if (c->desc[c->cons[i]] != a) {
                c->desc[c->cons[i]] = a;
                c->work[top++] = c->cons[i];
            }
    }
    for (uint32_t k = 0; k < nadd; k++)
        if (c->desc[c->add[k]] == a) return true;
    return false;
}

/* The node the ordering edges of assign a go to: its value when that is a
 * fused elementwise node on the variable's device that no reader of the
 * old value depends on (the memory pass may then compute it straight into
 * the variable's bytes, passes/memory_state.c; its consumers read the new
 * value there), else the assign itself. */
static uint32_t edge_target(st_ctx *c, const bp_plan *p, uint32_t a,
                            uint32_t nadd) {
    const bg_node *n = &c->g->nodes[a];
    uint32_t x = n->inputs[1], var = n->inputs[0];
    const bg_node *xn = &c->g->nodes[x];
    uint32_t pi = p->res.info[x].program;
    bool ok = xn->op == BRAID_OP_FUSED && pi < p->res.nprograms &&
              p->res.programs[pi].kind == BP_PROGRAM_ELEMENTWISE &&
              !bp_program_has_gather(&p->res.programs[pi]) &&
              bp_device_equal(p->res.info[x].device, p->res.info[var].device) &&
              xn->ninputs + nadd <= ST_MAX_INPUTS;
    return ok && !reaches_reader(c, a, x, nadd) ? x : a;
}

/* Collects the nodes reading assign a's variable's bytes into c->add;
 * returns how many. */
static uint32_t collect(st_ctx *c, uint32_t a) {
    braid_graph *g = c->g;
    uint32_t var = g->nodes[a].inputs[0], top = 0, nadd = 0;
    c->stack[top++] = var;
    c->mark[var] = a;
    c->mark[a] = a;                     /* its own read is the write */
    c->mark[g->nodes[a].inputs[1]] = a; /* the value: ordered already */
    while (top > 0) {
        uint32_t x = c->stack[--top];
        for (uint32_t i = c->cstart[x]; i < c->cstart[x + 1]; i++) {
            uint32_t r = c->cons[i];
            /* a possible view: its consumers may read the same bytes */
            if (may_view(&g->nodes[r]) && c->mark[r] != a) c->stack[top++] = r;
            if (c->mark[r] == a) continue;
            c->mark[r] = a;
            c->add[nadd++] = r;
        }
    }
    return nadd;
}

/* Appends c->add[0..nadd) to node t's inputs; false when out of memory. */
static bool append(st_ctx *c, uint32_t t, uint32_t nadd) {
    bg_node *n = &c->g->nodes[t];
    uint32_t *in = bg_realloc(c->g, n->inputs, n->ninputs * sizeof *in,
                              (n->ninputs + nadd) * sizeof *in);
    if (!in) return false;
    for (uint32_t k = 0; k < nadd; k++)
        in[n->ninputs + k] = c->add[k];
    n->inputs = in;
    n->ninputs += nadd;
    return true;
}

braid_status bp_state(bp_plan *plan) {
    braid_graph *g = plan->res.graph;
    uint32_t n = g->nnodes;
    bool any = false;
    for (uint32_t id = 0; id < n && !any; id++)
        any = g->nodes[id].op == BRAID_OP_ASSIGN;
    if (!any) return BRAID_OK;
    st_ctx c = {.g = g};
    braid_status s = consumers(&c);
    c.mark = bp_calloc(n, sizeof *c.mark, "state");
    c.stack = bp_calloc(n, sizeof *c.stack, "state");
    c.add = bp_calloc(n, sizeof *c.add, "state");
    c.desc = bp_calloc(n, sizeof *c.desc, "state");
    c.work = bp_calloc(n, sizeof *c.work, "state");
    if (s == BRAID_OK && (!c.mark || !c.stack || !c.add || !c.desc || !c.work))
        s = BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t id = 0; id < n && s == BRAID_OK; id++)
        c.mark[id] = c.desc[id] = BG_NONE;
    bool moved = false;
    for (uint32_t id = 0; id < n && s == BRAID_OK; id++) {
        if (g->nodes[id].op != BRAID_OP_ASSIGN) continue;
        uint32_t k = collect(&c, id);
        if (k > 0 && !append(&c, edge_target(&c, plan, id, k), k))
            s = BRAID_ERR_OUT_OF_MEMORY;
        moved |= k > 0;
    }
    free(c.cstart);
    free(c.cons);
    free(c.mark);
    free(c.stack);
    free(c.add);
    free(c.desc);
    free(c.work);
    if (s != BRAID_OK) return bg_set_last_error(s, "state: out of memory");
    return moved ? bp_plan_compact(plan) : BRAID_OK;
}
