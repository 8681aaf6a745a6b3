/* passes/plan.c — plan data helpers: allocation, free, print. */
#include "passes/passes.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void *bp_calloc(size_t n, size_t size, const char *what) {
    if (size != 0 && n > SIZE_MAX / size) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_compile: %s: %zu × %zu bytes overflows", what,
                          n, size);
        return NULL;
    }
    /* calloc(0) may return NULL; ask for one byte so NULL means failure. */
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    bg_huge_advise(p, n * size);
    if (!p)
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_compile: out of memory allocating %s (%zu "
                          "entries)",
                          what, n);
    return p;
}

bool bp_grow(void **arr, uint32_t n, uint32_t *cap, size_t size,
             const char *what) {
    if (n < *cap) return true;
    size_t want = n < 8 ? 16 : 2 * (size_t)n;
    if (want > UINT32_MAX) want = UINT32_MAX;
    void *p = want > n && want <= SIZE_MAX / size
                  ? bg_huge_realloc(*arr, (size_t)*cap * size, want * size)
                  : NULL;
    if (!p) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_compile: out of memory adding %s (%u "
                          "entries)",
                          what, (unsigned)n);
        return false;
    }
    *arr = p;
    *cap = (uint32_t)want;
    return true;
}

static void input_free(bp_compile_input *in) {
    free(in->devices_text);
    free(in->dump_text);
    free(in->archs_text);
}

static void result_free(bp_result *r) {
    braid_graph_free(r->graph);
    free(r->info);
    free(r->schedule);
    free(r->queues);
    free(r->events);
    for (uint32_t i = 0; i < r->nprograms; i++)
        free(r->programs[i].instr);
    free(r->programs);
    free(r->arenas);
    free(r->layouts);
    free(r->inputs);
    free(r->outputs);
}

void braid_plan_free(braid_plan *p) {
    if (!p) return;
    input_free(&p->in);
    result_free(&p->res);
    bp_kernels_free(&p->kernels);
    braid_graph_free(p->prov.source);
    free(p->placement.notes);
    free(p->placement.cost);
    free(p->placement.transfer);
    bp_tuning_free(&p->tune);
    free(p);
}

void bp_kernels_free(bp_kernels *k) {
    if (!k) return;
    free(k->source);
    for (uint32_t i = 0; i < k->nbin; i++) {
        free(k->bin[i].cubin);
        free(k->bin[i].ptx);
    }
    free(k->bin);
    memset(k, 0, sizeof *k);
}

static const char *storage_name(bp_storage s) {
    switch (s) {
    case BP_STORAGE_ARENA:
        return "arena";
    case BP_STORAGE_VIEW:
        return "view";
    case BP_STORAGE_INPUT:
        return "input";
    case BP_STORAGE_CONSTANT:
        return "constant";
    case BP_STORAGE_NONE:
        break;
    }
    return "none";
}

const char *bp_device_use_str(const bp_plan *p, bp_device d, char *buf,
                              size_t size) {
    uint32_t count = 0, first = BG_NONE;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (!bp_device_equal(p->res.info[id].device, d)) continue;
        count++;
        if (first == BG_NONE && p->res.info[id].origin != BG_NONE &&
            bg_node_at(p->res.graph, id)->op != BRAID_OP_COPY)
            first = id;
    }
    char dev[32];
    int n = snprintf(buf, size, "%u node%s on %s", (unsigned)count,
                     count == 1 ? "" : "s", bp_device_str(d, dev, sizeof dev));
    if (first != BG_NONE && n > 0 && (size_t)n < size) {
        const bg_node *f = bg_node_at(p->res.graph, first);
        snprintf(buf + n, size - (size_t)n, " (the first: %%%u %s%s%s%s)",
                 (unsigned)p->res.info[first].origin, bg_op(f->op)->name,
                 f->name ? " \"" : "", f->name ? f->name : "",
                 f->name ? "\"" : "");
    }
    return buf;
}

static void print_header(const bp_plan *p, FILE *out) {
    char dev[32];
    fprintf(out,
            "plan: %" PRIu32 " node%s, %" PRIu32 " queue%s, %" PRIu32
            " event%s, devices ",
            p->res.nschedule, p->res.nschedule == 1 ? "" : "s", p->res.nqueues,
            p->res.nqueues == 1 ? "" : "s", p->res.nevents,
            p->res.nevents == 1 ? "" : "s");
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        fprintf(out, "%s%s", i ? "," : "",
                bp_device_str(p->in.devs.devices[i], dev, sizeof dev));
    if (p->in.opts.num_threads > 0)
        fprintf(out, ", %d cpu threads\n", p->in.opts.num_threads);
    else
        fprintf(out, ", cpu threads: one per core\n");
}

static const char *queue_kind_name(bp_queue_kind k) {
    static const char *const names[] = {"cpu", "compute", "h2d",
                                        "d2h", "d2d",     "comm"};
    return k <= BP_QUEUE_COMM ? names[k] : "?";
}

/* "cpu" or "cuda:0/compute1" for the queue a node runs on. */
const char *bp_queue_str(const bp_plan *p, uint32_t q, char *buf,
                         size_t size) {
    if (q >= p->res.nqueues) {
        snprintf(buf, size, "-");
        return buf;
    }
    char dev[32];
    const bp_queue *qu = &p->res.queues[q];
    if (qu->kind == BP_QUEUE_CPU)
        snprintf(buf, size, "cpu");
    else
        snprintf(buf, size, "%s/%s%" PRIu32,
                 bp_device_str(qu->device, dev, sizeof dev),
                 queue_kind_name(qu->kind), qu->index);
    return buf;
}

static void print_node(const bp_plan *p, uint32_t id, FILE *out) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    const bp_tensor_place *pl = &p->res.info[id].place;
    char type[128], q[48];
    fprintf(out, "  %%%-5" PRIu32 " %-14s %-24s %-18s %12" PRIu64 " B  %s", id,
            bg_op(n->op)->name, bg_type_str(n, type, sizeof type),
            bp_queue_str(p, p->res.info[id].queue, q, sizeof q), pl->bytes,
            storage_name(pl->storage));
    if (pl->storage == BP_STORAGE_ARENA)
        fprintf(out, " %" PRIu32 "+%" PRIu64, pl->arena, pl->offset);
    if (pl->storage == BP_STORAGE_VIEW)
        fprintf(out, " %%%" PRIu32 "+%" PRIu64 "%s", pl->base, pl->offset,
                pl->layout ? " strided" : "");
    if (n->name) fprintf(out, "  \"%s\"", n->name);
    fputc('\n', out);
}

braid_status braid_plan_print(const braid_plan *p, FILE *out) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_print: %s is NULL",
                                 !p ? "plan" : "out");
    print_header(p, out);
    uint64_t by_kind[BP_STORAGE_VIEW + 1] = {0};
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        print_node(p, id, out);
        by_kind[p->res.info[id].place.storage] += p->res.info[id].place.bytes;
    }
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        fprintf(out, "  output \"%s\" = %%%" PRIu32 "\n",
                p->res.outputs[i].name, p->res.outputs[i].node);
    uint64_t arena_bytes = 0;
    for (uint32_t i = 0; i < p->res.narenas; i++)
        arena_bytes += p->res.arenas[i].bytes;
    fprintf(out,
            "total: %" PRIu32 " nodes, %" PRIu32 " arenas of %" PRIu64
            " bytes; inputs %" PRIu64 " bytes, constants %" PRIu64 " bytes\n",
            p->res.nschedule, p->res.narenas, arena_bytes,
            by_kind[BP_STORAGE_INPUT], by_kind[BP_STORAGE_CONSTANT]);
    return ferror(out) ? bg_set_last_error(BRAID_ERR_IO,
                                           "braid_plan_print: write failed")
                       : BRAID_OK;
}

bool bp_node_run_check(const bp_plan *p, uint32_t id) {
    if (bg_node_run_check(p->res.graph, id)) return true;
    uint32_t pi = id < p->res.ninfo ? p->res.info[id].program : BG_NONE;
    return p->res.graph->nodes[id].op == BRAID_OP_FUSED &&
           pi < p->res.nprograms &&
           bp_program_has_gather(&p->res.programs[pi]);
}
