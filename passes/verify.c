/* passes/verify.c — re-checks the graph a plan was cloned from.
 *
 * The builder already checked every node once; this pass guards against
 * graphs that did not come from the builder (plan files, passes that rewrite
 * the graph) by re-running shape/dtype inference on a scratch graph and
 * comparing the result with what each node says.
 *
 * The scratch graph holds one node at a time, rebuilt over placeholders
 * (unnamed input nodes written directly) with the types its inputs claim. Ids are topological and every node is
 * checked, so each input's claim was checked before it is relied on: by
 * induction this checks the same as rebuilding the whole graph, in memory
 * that does not grow with the graph (a whole-graph copy, ~300 bytes a
 * node, was most of this pass's time at 150k nodes: fresh pages and cache
 * misses). */
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inputs rebuilt without a heap array. */
#define BP_VERIFY_MAX_INPUTS 8

/* Type, arity and id checks that need no inference. */
static braid_status check_node_basics(const braid_graph *g, uint32_t id) {
    const bg_node *n = &g->nodes[id];
    if ((unsigned)n->op >= BRAID_OP_COUNT_)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "verify: node %u has op %d, out of range", id,
                                 (int)n->op);
    const char *op = bg_op(n->op)->name;
    if ((unsigned)n->dtype >= BRAID_DTYPE_COUNT_ || n->rank > BRAID_MAX_RANK)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "verify: node %u (%s) has dtype %d, rank %d",
                                 id, op, (int)n->dtype, (int)n->rank);
    int64_t numel = 0;
    if (!bg_shape_fits(n->rank, n->dims, braid_dtype_size(n->dtype), &numel)) {
        char t[200];
        return bg_set_last_error(BRAID_ERR_SHAPE,
                                 "verify: node %u (%s): %s is negative or "
                                 "larger than 2^50 bytes",
                                 id, op, bg_type_str(n, t, sizeof t));
    }
    int arity = bg_op(n->op)->arity;
    if ((arity >= 0 && n->ninputs != (uint32_t)arity) ||
        (arity < 0 && n->ninputs == 0) || (n->ninputs > 0 && !n->inputs))
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "verify: node %u (%s) has %u inputs", id, op,
                                 n->ninputs);
    for (uint32_t i = 0; i < n->ninputs; i++)
        if (n->inputs[i] >= id)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "verify: node %u (%s) reads node %u: ids "
                                     "are not topological",
                                     id, op, n->inputs[i]);
    if (n->op == BRAID_OP_INPUT && !n->name)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "verify: input node %u has no name", id);
    if (n->op == BRAID_OP_CONSTANT && numel > 0 && !n->attr.data)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "verify: constant node %u has no data", id);
    return BRAID_OK;
}

/* Empties scratch and fills slots 0..ninputs-1 with placeholders (input
 * nodes, no name) of the types n's inputs claim. False when out of
 * memory (recorded on scratch). */
static bool placeholders(braid_graph *scratch, const braid_graph *g,
                         const bg_node *n) {
    for (uint32_t i = 0; i < scratch->nnodes; i++)
        bg_node_release(scratch, &scratch->nodes[i]);
    scratch->nnodes = 0;
    uint32_t need = n->ninputs + 1; /* and the node rebuilt after them */
    if (need > scratch->cap) {
        bg_node *nodes =
            bg_realloc(scratch, scratch->nodes,
                       (size_t)scratch->cap * sizeof *nodes,
                       (size_t)need * sizeof *nodes);
        if (!nodes) return false;
        scratch->nodes = nodes, scratch->cap = need;
    }
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *t = &g->nodes[n->inputs[k]];
        bg_node *p = &scratch->nodes[k];
        memset(p, 0, sizeof *p);
        p->op = BRAID_OP_INPUT;
        p->dtype = t->dtype;
        p->rank = t->rank;
        memcpy(p->dims, t->dims, sizeof p->dims);
    }
    scratch->nnodes = n->ninputs;
    return true;
}

/* Rebuilds n in scratch over placeholders of its inputs' claimed types
 * (ids 0..ninputs-1); its id there (ninputs), or BG_NONE. */
static uint32_t rebuild(braid_graph *scratch, const braid_graph *g,
                        const bg_node *n) {
    uint32_t in[BP_VERIFY_MAX_INPUTS], *ins = in;
    if (!placeholders(scratch, g, n)) return BG_NONE;
    if (n->ninputs > BP_VERIFY_MAX_INPUTS &&
        !(ins = malloc(n->ninputs * sizeof *ins))) {
        bg_fail(scratch, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        return BG_NONE;
    }
    for (uint32_t k = 0; k < n->ninputs; k++) ins[k] = k;
    bg_attrs attr = n->attr;
    attr.data = NULL;
    uint32_t got = bg_build(scratch, n->op, ins, n->ninputs, n->dtype, n->rank,
                            n->dims, &attr, NULL);
    if (ins != in) free(ins);
    return got;
}

static bool same_type(const bg_node *a, const bg_node *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static braid_status check_inference(const braid_graph *g, braid_graph *scratch,
                                    uint32_t id) {
    const bg_node *n = &g->nodes[id];
    braid_op_kind kind = bg_op(n->op)->kind;
    /* Sources have the type they say (check_node_basics checked it); fused
     * groups are checked by the pass that makes them, assigns when built. */
    if (kind == BRAID_KIND_SOURCE || kind == BRAID_KIND_FUSED ||
        kind == BRAID_KIND_STATE)
        return BRAID_OK;
    /* A copy has its input's type; any other node what the builder infers
     * from its inputs. */
    const bg_node *want;
    if (kind == BRAID_KIND_COPY) {
        want = &g->nodes[n->inputs[0]];
    } else {
        uint32_t got = rebuild(scratch, g, n);
        if (got == BG_NONE)
            return bg_set_last_error(scratch->status != BRAID_OK
                                         ? scratch->status
                                         : BRAID_ERR_INTERNAL,
                                     "verify: node %u (%s): %s", id,
                                     bg_op(n->op)->name, scratch->error);
        if (got != n->ninputs)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "verify: node %u rebuilt as an existing "
                                     "node",
                                     id);
        want = &scratch->nodes[got];
    }
    if (!same_type(n, want)) {
        char t[128], have[128];
        return bg_set_last_error(
            BRAID_ERR_SHAPE, "verify: node %u (%s) says %s but infers %s", id,
            bg_op(n->op)->name, bg_type_str(n, have, sizeof have),
            bg_type_str(want, t, sizeof t));
    }
    return BRAID_OK;
}

static braid_status check_outputs(const braid_graph *g) {
    if (g->noutputs == 0 && !bg_has_assign(g))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "verify: the graph has no outputs");
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (!g->outputs[i].name || g->outputs[i].node >= g->nnodes)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "verify: output %u names node %u of %u", i,
                                     g->outputs[i].node, g->nnodes);
    return BRAID_OK;
}

braid_status bp_verify(bp_plan *plan) {
    const braid_graph *g = plan->res.graph;
    braid_graph_options o = {g->alloc, g->alloc_user};
    braid_graph *scratch = braid_graph_new(&o);
    if (!scratch)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "verify: out of memory");
    braid_status s = BRAID_OK;
    for (uint32_t id = 0; s == BRAID_OK && id < g->nnodes; id++) {
        s = check_node_basics(g, id);
        if (s == BRAID_OK) s = check_inference(g, scratch, id);
    }
    braid_graph_free(scratch);
    return s == BRAID_OK ? check_outputs(g) : s;
}
