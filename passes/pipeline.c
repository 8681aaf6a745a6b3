/* passes/pipeline.c — the compiler's part of braid_compile: checks, then
 * the pass list, each pass timed into the plan's compile report
 * (passes/report.c). braid_compile itself (runtime/compile.c) describes
 * the devices and builds the kernels around it. */
#define _POSIX_C_SOURCE 200809L
#include "passes/passes.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The pipeline, in order. Each pass sees only the plan the previous ones
 * left. A pass with a nonzero `optional` bit is skipped when the options
 * disable it. */
static const struct {
    const char *name;  /* for messages and BRAID_DUMP=after:<name> */
    bp_pass_fn run;    /* the pass */
    unsigned optional; /* BRAID_PASS_* bit that turns it off, or 0 */
} pipeline[] = {
    {"verify", bp_verify, 0},
    {"simplify", bp_simplify, BRAID_PASS_SIMPLIFY},
    {"shard", bp_shard, 0},
    {"place", bp_place, 0},
    {"copies", bp_copies, 0},
    {"channels_last", bp_channels_last, BRAID_PASS_CHANNELS_LAST},
    {"fuse", bp_fuse, BRAID_PASS_FUSE},
    {"chunk", bp_chunk, BRAID_PASS_CHUNK},
    {"state", bp_state, 0},
    {"streams", bp_streams, 0},
    {"schedule", bp_schedule, 0},
    {"memory", bp_memory, 0},
    {"verify_plan", bp_verify_plan, 0},
};

#define NPASSES (sizeof pipeline / sizeof *pipeline)
_Static_assert(sizeof pipeline / sizeof *pipeline <= BRAID_REPORT_MAX_PASSES,
               "the compile report has room for every pass");

/* Default compute streams per GPU. */
#define BP_DEFAULT_STREAMS 4

void braid_compile_options_init(braid_compile_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->devices = NULL;
    o->num_threads = 0;
}

/* A known pass name (for dump_after), or false. */
static bool known_pass(const char *name) {
    for (size_t i = 0; i < NPASSES; i++)
        if (strcmp(pipeline[i].name, name) == 0) return true;
    return false;
}

static char *dup_string(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

/* The pass to dump after: the option, else $BRAID_DUMP ("after:<pass>").
 * A BRAID_DUMP in another syntax may be meant for another program: it is
 * ignored with a warning (once per process), never a failed compile. A
 * value in braid's syntax naming no pass is still an error. */
static braid_status dump_setting(bp_plan *p) {
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    const char *name = p->in.opts.dump_after;
    const char *env = getenv("BRAID_DUMP");
    if (!name && env && *env) {
        if (strncmp(env, "after:", 6) == 0)
            name = env + 6;
        else if (!atomic_flag_test_and_set(&warned))
            fprintf(stderr,
                    "braid: warning: ignoring BRAID_DUMP=\"%s\" (braid "
                    "reads after:<pass>)\n",
                    env);
    }
    if (!name) return BRAID_OK;
    if (!known_pass(name)) {
        char list[256] = "";
        for (size_t i = 0; i < NPASSES; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, pipeline[i].name, sizeof list - strlen(list) - 1);
        }
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: no pass \"%s\" to dump "
                                 "after (passes: %s)",
                                 name, list);
    }
    if (!(p->in.dump_text = dup_string(name)))
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_compile: out of memory");
    p->in.opts.dump_after = p->in.settings.dump_after = p->in.dump_text;
    return BRAID_OK;
}

/* settings from the options: pass bits, streams, chunks, the dump. */
static braid_status fill_settings(bp_plan *p) {
    const braid_compile_options *o = &p->in.opts;
    bp_settings *st = &p->in.settings;
    st->disabled = o->disable_passes;
    st->max_streams = o->max_streams > 0 ? (uint32_t)o->max_streams
                                         : BP_DEFAULT_STREAMS;
    st->chunks = (uint32_t)o->chunks;
    p->in.opts.cpu_profile = p->in.opts.cuda_profile = NULL; /* in devs */
    return dump_setting(p);
}

braid_status bp_compile_check(const braid_graph *g,
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
    if (g->noutputs == 0 && !bg_has_assign(g))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: the graph has no outputs "
                                 "(mark one with braid_output)");
    if (opts &&
        (opts->num_threads < 0 || opts->num_threads > BRAID_MAX_THREADS))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: num_threads is %d (expected "
                                 "0 for one per core, or 1..%d)",
                                 opts->num_threads, BRAID_MAX_THREADS);
    if (opts &&
        (opts->max_streams < 0 || opts->max_streams > BRAID_MAX_STREAMS))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: max_streams is %d (expected "
                                 "0 for the default, or 1..%d)",
                                 opts->max_streams, BRAID_MAX_STREAMS);
    if (opts && (opts->chunks < 0 || opts->chunks > BRAID_MAX_CHUNKS))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: chunks is %d (expected 0 "
                                 "for the cost model, 1 for none, or up to "
                                 "%d)",
                                 opts->chunks, BRAID_MAX_CHUNKS);
    if (opts && (opts->disable_passes &
                 ~(unsigned)(BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE |
                             BRAID_PASS_CHUNK | BRAID_PASS_REUSE |
                             BRAID_PASS_STRIDED | BRAID_PASS_CHANNELS_LAST)))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: disable_passes has unknown "
                                 "bits 0x%x",
                                 opts->disable_passes);
    return BRAID_OK;
}

/* The input and output tables: names point into the plan's graph. */
static braid_status fill_io(bp_plan *p) {
    const braid_graph *g = p->res.graph;
    uint32_t nin = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        nin += g->nodes[i].op == BRAID_OP_INPUT;
    p->res.inputs = bp_calloc(nin, sizeof *p->res.inputs, "input table");
    p->res.outputs =
        bp_calloc(g->noutputs, sizeof *p->res.outputs, "output table");
    if (!p->res.inputs || !p->res.outputs) return BRAID_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const bg_node *n = &g->nodes[i];
        if (n->op == BRAID_OP_INPUT)
            p->res.inputs[p->res.ninputs++] = (bp_io){n->name, i, bg_nbytes(n)};
    }
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t id = g->outputs[i].node;
        uint64_t bytes = id < g->nnodes ? bg_nbytes(&g->nodes[id]) : 0;
        p->res.outputs[p->res.noutputs++] =
            (bp_io){g->outputs[i].name, id, bytes};
    }
    return BRAID_OK;
}

braid_status bp_plan_new(const braid_graph *g,
                         const braid_compile_options *opts,
                         const bp_device_desc *devs, bp_plan **out) {
    bp_plan *p = bp_calloc(1, sizeof *p, "plan");
    if (!p) return BRAID_ERR_OUT_OF_MEMORY;
    *out = p;
    braid_compile_options_init(&p->in.opts);
    if (opts) p->in.opts = *opts;
    if (p->in.opts.devices) {
        p->in.devices_text = malloc(strlen(p->in.opts.devices) + 1);
        if (!p->in.devices_text)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "braid_compile: out of memory copying "
                                     "the devices string");
        strcpy(p->in.devices_text, p->in.opts.devices);
        p->in.opts.devices = p->in.devices_text;
    }
    p->in.devs = *devs;
    if (p->in.opts.archs) {
        if (!(p->in.archs_text = dup_string(p->in.opts.archs)))
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "braid_compile: out of memory copying "
                                     "the archs string");
        p->in.opts.archs = p->in.archs_text;
    }
    /* The user's constants are copied once, into shared holders; the
     * working graph shares them (the user's graph is never touched, and
     * nothing writes constant bytes). */
    p->prov.source = bg_graph_clone_shared(g);
    /* The working graph has room for as many nodes again: the fuse pass
     * adds one a group, the copies pass one a crossing. */
    p->res.graph =
        p->prov.source ? bg_graph_clone_room(p->prov.source, g->nnodes) : NULL;
    if (!p->res.graph || !p->prov.source)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_compile: out of memory copying the "
                                 "graph (%u nodes)",
                                 (unsigned)g->nnodes);
    p->prov.created = (int64_t)time(NULL);
    snprintf(p->prov.braid_version, sizeof p->prov.braid_version, "%s",
             BRAID_VERSION_STRING);
    braid_status s = fill_settings(p);
    if (s == BRAID_OK) s = fill_io(p);
    if (s == BRAID_OK) s = bp_plan_sync_info(p);
    for (uint32_t id = 0; s == BRAID_OK && id < p->res.ninfo; id++)
        p->res.info[id].origin = id;
    return s;
}

/* Monotonic clock in milliseconds. */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Runs pass i, noting its wall time in the report (a dump is not timed). */
static braid_status run_pass(bp_plan *p, size_t i) {
    double t0 = now_ms();
    braid_status s = pipeline[i].run(p);
    braid_compile_report *r = &p->report;
    if (r->npasses < BRAID_REPORT_MAX_PASSES) {
        r->pass_name[r->npasses] = pipeline[i].name;
        r->pass_ms[r->npasses++] = now_ms() - t0;
    }
    return s;
}

braid_status bp_compile(const braid_graph *g, const braid_compile_options *opts,
                        const bp_device_desc *devs, bp_plan **out) {
    bp_plan *p = NULL;
    braid_status s = bp_plan_new(g, opts, devs, &p);
    for (size_t i = 0; s == BRAID_OK && i < NPASSES; i++) {
        if (pipeline[i].optional & p->in.settings.disabled) continue;
        s = run_pass(p, i);
        if (s == BRAID_OK && p->in.settings.dump_after &&
            strcmp(p->in.settings.dump_after, pipeline[i].name) == 0)
            bp_plan_dump(p, pipeline[i].name, stderr);
    }
    if (s != BRAID_OK) {
        braid_plan_free(p);
        p = NULL;
    }
    *out = p;
    return s;
}

const braid_graph *braid_plan_graph(const braid_plan *p) {
    return p ? p->prov.source : NULL;
}
