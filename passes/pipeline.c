/* passes/pipeline.c — braid_compile: checks, then the pass list. */
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* The pipeline, in order. Each pass sees only the plan the previous ones
 * left; bp_verify_plan may be inserted after any pass that produced a
 * schedule. */
static const struct {
    const char *name; /* for messages and future dump flags */
    bp_pass_fn run;   /* the pass */
} pipeline[] = {
    {"verify", bp_verify}, {"schedule", bp_schedule},       {"place", bp_place},
    {"memory", bp_memory}, {"verify_plan", bp_verify_plan},
};

void braid_compile_options_init(braid_compile_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->devices = NULL;
    o->num_threads = 0;
}

static braid_status check_args(const braid_graph *g,
                               const braid_compile_options *opts,
                               braid_plan **plan) {
    if (!plan)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: plan is NULL");
    *plan = NULL;
    if (!g)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: graph is NULL");
    if (g->status != BRAID_OK)
        return bg_set_last_error(g->status,
                                 "braid_compile: the graph has an "
                                 "error: %s",
                                 g->error);
    if (g->noutputs == 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: the graph has no outputs "
                                 "(mark one with braid_output)");
    if (opts && opts->num_threads < 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: num_threads is %d (expected "
                                 "0 for one per core, or more)",
                                 opts->num_threads);
    return BRAID_OK;
}

/* The input and output tables: names point into the plan's graph. */
static braid_status fill_io(bp_plan *p) {
    const braid_graph *g = p->graph;
    uint32_t nin = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        nin += g->nodes[i].op == BRAID_OP_INPUT;
    p->inputs = bp_calloc(nin, sizeof *p->inputs, "input table");
    p->outputs = bp_calloc(g->noutputs, sizeof *p->outputs, "output table");
    if (!p->inputs || !p->outputs) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const bg_node *n = &g->nodes[i];
        if (n->op == BRAID_OP_INPUT)
            p->inputs[p->ninputs++] = (bp_io){n->name, i, bg_nbytes(n)};
    }
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t id = g->outputs[i].node;
        uint64_t bytes = id < g->nnodes ? bg_nbytes(&g->nodes[id]) : 0;
        p->outputs[p->noutputs++] = (bp_io){g->outputs[i].name, id, bytes};
    }
    return BRAID_OK;
}

static braid_status new_plan(const braid_graph *g,
                             const braid_compile_options *opts, bp_plan **out) {
    bp_plan *p = bp_calloc(1, sizeof *p, "plan");
    if (!p) return BRAID_ERR_OUT_OF_MEMORY;
    *out = p;
    braid_compile_options_init(&p->opts);
    if (opts) p->opts = *opts;
    if (p->opts.devices) {
        p->devices_text = malloc(strlen(p->opts.devices) + 1);
        if (!p->devices_text)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "braid_compile: out of memory copying "
                                     "the devices string");
        strcpy(p->devices_text, p->opts.devices);
        p->opts.devices = p->devices_text;
    }
    braid_status s =
        bp_parse_devices(p->opts.devices, p->devices, &p->ndevices);
    if (s != BRAID_OK) return s;
    p->graph = bg_graph_clone(g);
    if (!p->graph)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_compile: out of memory copying the "
                                 "graph (%u nodes)",
                                 (unsigned)g->nnodes);
    s = bp_plan_alloc_nodes(p);
    return s != BRAID_OK ? s : fill_io(p);
}

braid_status braid_compile(const braid_graph *g,
                           const braid_compile_options *opts,
                           braid_plan **plan) {
    braid_status s = check_args(g, opts, plan);
    if (s != BRAID_OK) return s;
    bp_plan *p = NULL;
    s = new_plan(g, opts, &p);
    for (size_t i = 0; s == BRAID_OK && i < sizeof pipeline / sizeof *pipeline;
         i++)
        s = pipeline[i].run(p);
    if (s != BRAID_OK) {
        braid_plan_free(p);
        return s;
    }
    *plan = p;
    return BRAID_OK;
}
