/* runtime/planfile/planfile_read_plan.c — the PLAN and MEMORY sections of a
 * plan file (docs/plan-format.md), read into the plan after both graphs: every
 * index is checked against what it indexes, every enum against its range,
 * and every fused program with the IR's one checker, bp_program_check. */
#include "runtime/planfile/planfile_read.h"

#include "passes/passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool device_at(br_pf_rd *r, const bp_plan *p, const char *field,
                      bp_device *out) {
    uint32_t d;
    if (!br_pf_get_u32(r, field, &d)) return false;
    if (d >= p->in.devs.ndevices)
        return br_pf_fail(r, field,
                          "device %u out of range (the plan lists "
                          "%u)",
                          d, p->in.devs.ndevices),
               false;
    *out = p->in.devs.devices[d];
    return true;
}

static bool read_devices(br_pf_rd *r, bp_plan *p) {
    uint32_t n;
    if (!br_pf_get_count(r, "ndevices", 8, &n)) return false;
    if (n < 1 || n > BP_MAX_DEVICES)
        return br_pf_fail(r, "ndevices", "%u devices (expected 1..%d)", n,
                          BP_MAX_DEVICES),
               false;
    r->array = "devices";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        uint32_t kind;
        int32_t index;
        if (!br_pf_get_u32(r, "kind", &kind) ||
            !br_pf_get_i32(r, "index", &index))
            return false;
        bool ok = kind == BP_DEVICE_CPU ? index == 0
                  : kind == BP_DEVICE_CUDA
                      ? index >= 0 && index < BG_MAX_CUDA_DEVICES
                      : false;
        if (!ok)
            return br_pf_fail(r, NULL, "kind %u index %d is not cpu or "
                                       "cuda:0..63",
                              kind, (int)index),
                   false;
        bp_device d = {(bp_device_kind)kind, index};
        if ((i == 0) != (d.kind == BP_DEVICE_CPU))
            return br_pf_fail(r, NULL, "the cpu must be device 0, and only "
                                       "it"),
                   false;
        for (uint32_t k = 0; k < i; k++)
            if (bp_device_equal(p->in.devs.devices[k], d))
                return br_pf_fail(r, NULL, "listed twice"), false;
        p->in.devs.devices[i] = d;
    }
    p->in.devs.ndevices = n;
    r->array = NULL;
    return true;
}

static bool rate(br_pf_rd *r, const char *field, double *v) {
    if (!br_pf_get_f64(r, field, v)) return false;
    if (!isfinite(*v) || *v < 0)
        return br_pf_fail(r, field, "%g (expected a finite value >= 0)", *v),
               false;
    return true;
}

static bool read_settings(br_pf_rd *r, bp_plan *p) {
    bp_settings *st = &p->in.settings;
    if (!br_pf_get_u32(r, "settings.disabled", &st->disabled) ||
        !br_pf_get_u32(r, "settings.max_streams", &st->max_streams) ||
        !br_pf_get_u32(r, "settings.chunks", &st->chunks))
        return false;
    if (st->disabled & ~(uint32_t)(BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE |
                                   BRAID_PASS_CHUNK | BRAID_PASS_REUSE |
                                   BRAID_PASS_STRIDED))
        return br_pf_fail(r, "settings.disabled", "unknown bits 0x%x",
                          st->disabled),
               false;
    if (st->max_streams < 1 || st->max_streams > BRAID_MAX_STREAMS)
        return br_pf_fail(r, "settings.max_streams", "%u is out of range 1..%d",
                          st->max_streams, BRAID_MAX_STREAMS),
               false;
    if (st->chunks > BRAID_MAX_CHUNKS)
        return br_pf_fail(r, "settings.chunks", "%u is out of range 0..%d",
                          st->chunks, BRAID_MAX_CHUNKS),
               false;
    r->array = "settings.profile";
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++) {
        r->index = i;
        bp_device_profile *pr = &p->in.devs.profile[i];
        /* per dtype by name; a dtype the file lacks keeps rate 0 (the
           device is then never chosen for it: the plan is compiled) */
        uint32_t nflops;
        if (!br_pf_get_u32(r, "nflops", &nflops)) return false;
        if (nflops > 64)
            return br_pf_fail(r, "nflops", "%u dtypes (at most 64)", nflops),
                   false;
        for (uint32_t k = 0; k < nflops; k++) {
            braid_dtype t;
            double v;
            if (!br_pf_get_dtype(r, "flops.dtype", &t) ||
                !rate(r, "flops", &v))
                return false;
            pr->flops[t] = v;
        }
        if (!rate(r, "elementwise_flops", &pr->elementwise_flops) ||
            !rate(r, "mem_bytes_per_s", &pr->mem_bytes_per_s) ||
            !rate(r, "h2d_bytes_per_s", &pr->h2d_bytes_per_s) ||
            !rate(r, "d2h_bytes_per_s", &pr->d2h_bytes_per_s) ||
            !rate(r, "launch_s", &pr->launch_s))
            return false;
    }
    r->array = NULL;
    st->dump_after = NULL;
    return true;
}

/* A count that must equal want. */
static bool count_is(br_pf_rd *r, const char *field, uint64_t min_record,
                     uint32_t want, uint32_t *n) {
    if (!br_pf_get_count(r, field, min_record, n)) return false;
    if (*n != want)
        return br_pf_fail(r, field, "%u entries (the plan has %u nodes)", *n,
                          want),
               false;
    return true;
}

static bool read_info(br_pf_rd *r, bp_plan *p, uint32_t nsource) {
    uint32_t n;
    if (!count_is(r, "ninfo", 22, p->res.graph->nnodes, &n)) return false;
    r->array = "info";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        bp_node_info *in = &p->res.info[i];
        memset(&in->device, 0, sizeof in->device);
        if (!device_at(r, p, "device", &in->device) ||
            !br_pf_get_u32(r, "queue", &in->queue) ||
            !br_pf_get_u32(r, "program", &in->program) ||
            !br_pf_get_u32(r, "order", &in->order) ||
            !br_pf_get_u32(r, "origin", &in->origin) ||
            !br_pf_get_bool(r, "chunk", &in->chunk) ||
            !br_pf_get_bool(r, "noop", &in->noop))
            return false;
        if (in->origin != BG_NONE && in->origin >= nsource)
            return br_pf_fail(r, "origin", "node %u out of range (the user's "
                                           "graph has %u nodes)",
                              in->origin, nsource),
                   false;
        bool fused = p->res.graph->nodes[i].op == BRAID_OP_FUSED;
        if (!fused && in->program != BG_NONE)
            return br_pf_fail(r, "program", "%u for a node that is not fused "
                                            "(expected NONE)",
                              in->program),
                   false;
        if (in->order >= n)
            return br_pf_fail(r, "order", "%u out of range (the plan has %u "
                                          "nodes)",
                              in->order, n),
                   false;
    }
    r->array = NULL;
    return true;
}

static bool read_schedule(br_pf_rd *r, bp_plan *p) {
    uint32_t n;
    if (!count_is(r, "nschedule", 4, p->res.graph->nnodes, &n)) return false;
    p->res.schedule = bp_calloc(n, sizeof *p->res.schedule, "schedule");
    uint32_t *pos = bp_calloc(n, sizeof *pos, "schedule");
    bool ok = p->res.schedule && pos;
    if (!ok) br_pf_fail(r, "schedule", "out of memory");
    if (ok) p->res.nschedule = n;
    for (uint32_t i = 0; ok && i < n; i++) pos[i] = BG_NONE;
    r->array = "schedule";
    for (uint32_t i = 0; ok && i < n; i++) {
        r->index = i;
        uint32_t id;
        ok = br_pf_get_u32(r, NULL, &id);
        if (ok && (id >= n || pos[id] != BG_NONE))
            ok = br_pf_fail(r, NULL, id >= n ? "node %u out of range"
                                             : "node %u scheduled twice",
                            id) == BRAID_OK;
        if (!ok) break;
        const bg_node *nd = &p->res.graph->nodes[id];
        for (uint32_t k = 0; ok && k < nd->ninputs; k++)
            if (pos[nd->inputs[k]] == BG_NONE)
                ok = br_pf_fail(r, NULL, "node %u reads node %u, which is "
                                         "scheduled later",
                                id, nd->inputs[k]) == BRAID_OK;
        pos[id] = i;
        p->res.schedule[i] = id;
    }
    free(pos);
    r->array = NULL;
    return ok;
}

static bool read_queues(br_pf_rd *r, bp_plan *p) {
    uint32_t n;
    if (!br_pf_get_count(r, "nqueues", 12, &n)) return false;
    if (n < 1 || n > BP_MAX_QUEUES)
        return br_pf_fail(r, "nqueues", "%u queues (expected 1..%d)", n,
                          BP_MAX_QUEUES),
               false;
    p->res.queues = bp_calloc(n, sizeof *p->res.queues, "queues");
    if (!p->res.queues) return br_pf_fail(r, "queues", "out of memory"), false;
    p->res.nqueues = n;
    r->array = "queues";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        bp_queue *q = &p->res.queues[i];
        uint32_t kind;
        if (!br_pf_get_u32(r, "kind", &kind) ||
            !device_at(r, p, "device", &q->device) ||
            !br_pf_get_u32(r, "index", &q->index))
            return false;
        if (kind > BP_QUEUE_COMM)
            return br_pf_fail(r, "kind", "%u out of range", kind), false;
        q->kind = (bp_queue_kind)kind;
        bool cpu = q->device.kind == BP_DEVICE_CPU;
        if ((q->kind == BP_QUEUE_CPU) != cpu || (i == 0) != (kind == 0) ||
            q->index >= BP_MAX_QUEUES)
            return br_pf_fail(r, NULL, "a queue of kind %u on %s device, "
                                       "index %u (queue 0 is the only cpu "
                                       "queue; streams are on GPUs)",
                              kind, cpu ? "the cpu" : "a cuda", q->index),
                   false;
    }
    r->array = "info";
    for (uint32_t i = 0; i < p->res.ninfo; i++)
        if (p->res.info[i].queue >= n) {
            r->index = i;
            return br_pf_fail(r, "queue",
                              "queue %u out of range (the plan "
                              "has %u)",
                              p->res.info[i].queue, n),
                   false;
        }
    r->array = NULL;
    return true;
}

static bool read_events(br_pf_rd *r, bp_plan *p) {
    uint32_t n, nn = p->res.graph->nnodes;
    if (!br_pf_get_count(r, "nevents", 9, &n)) return false;
    p->res.events = bp_calloc(n, sizeof *p->res.events, "events");
    if (!p->res.events) return br_pf_fail(r, "events", "out of memory"), false;
    p->res.nevents = n;
    r->array = "events";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        bp_event *e = &p->res.events[i];
        if (!br_pf_get_u32(r, "after", &e->after) ||
            !br_pf_get_u32(r, "before", &e->before) ||
            !br_pf_get_bool(r, "reuse", &e->reuse))
            return false;
        if (e->after >= nn || e->before >= nn)
            return br_pf_fail(r, e->after >= nn ? "after" : "before",
                              "node %u out of range (plan has %u nodes)",
                              e->after >= nn ? e->after : e->before, nn),
                   false;
    }
    r->array = NULL;
    return true;
}

/* One instruction: op and dtype in range, the fields its op does not use
 * NONE (the format's one spelling of an instruction), its source in the
 * user's graph. Operands, dtypes and inputs are the program checker's
 * (check_programs). */
static bool read_instr(br_pf_rd *r, bp_instr *in, uint32_t k,
                       uint32_t nsource) {
    braid_op op;
    braid_dtype dt;
    if (!br_pf_get_op(r, "instr.op", true, &op) ||
        !br_pf_get_dtype(r, "instr.dtype", &dt) ||
        !br_pf_get_u32(r, "instr.arg", &in->arg[0]) ||
        !br_pf_get_u32(r, "instr.arg", &in->arg[1]) ||
        !br_pf_get_u32(r, "instr.arg", &in->arg[2]) ||
        !br_pf_get_u32(r, "instr.input", &in->input) ||
        !br_pf_get_f64(r, "instr.value", &in->value) ||
        !br_pf_get_u32(r, "instr.source", &in->source))
        return false;
    in->op = op;
    in->dtype = dt;
    if (op == BP_INSTR_GATHER && !br_pf_get_u32(r, "instr.axis", &in->axis))
        return false;
    int arity = bp_instr_arity(in);
    for (int j = arity < 0 ? 0 : arity; j < 3; j++)
        if (in->arg[j] != BG_NONE)
            return br_pf_fail(r, "instr.arg",
                              "instruction %u: unused operand "
                              "%d is %u (expected NONE)",
                              k, j, in->arg[j]),
                   false;
    if ((in->op == BP_INSTR_LOAD || in->op == BP_INSTR_GATHER ||
         in->op == BP_INSTR_STORE) != (in->input != BG_NONE))
        return br_pf_fail(r, "instr.input",
                          "instruction %u: input %u (only "
                          "loads, gathers and stores have "
                          "one)",
                          k, in->input),
               false;
    if (in->source != BG_NONE && in->source >= nsource)
        return br_pf_fail(r, "instr.source", "instruction %u: node %u out of "
                                             "range (the user's graph has %u "
                                             "nodes)",
                          k, in->source, nsource),
               false;
    return true;
}

static bool read_program(br_pf_rd *r, bp_program *pr, uint32_t nsource) {
    uint32_t kind, rank, axes, n;
    if (!br_pf_get_u32(r, "kind", &kind) || !br_pf_get_u32(r, "rank", &rank))
        return false;
    /* 3 was a fused softmax (passes/program.h): refused like an unknown
     * kind */
    if (kind >= BP_PROGRAM_KIND_COUNT || kind == 3 || rank > BRAID_MAX_RANK)
        return br_pf_fail(r, NULL, "kind %u (0..2, 4, 5), rank %u (0..8)", kind,
                          rank),
               false;
    pr->kind = (bp_program_kind)kind;
    pr->rank = (uint8_t)rank;
    for (uint32_t i = 0; i < rank; i++) {
        if (!br_pf_get_i64(r, "dims", &pr->dims[i])) return false;
        if (pr->dims[i] < 0 || pr->dims[i] > BG_MAX_BYTES)
            return br_pf_fail(r, "dims", "dim %u is %lld", i,
                              (long long)pr->dims[i]),
                   false;
    }
    if (br_pf_node_bytes(BRAID_F64, (int)rank, pr->dims) == UINT64_MAX)
        return br_pf_fail(r, "dims", "iteration space beyond 2^50"), false;
    if (!br_pf_get_u32(r, "axes", &axes) ||
        !br_pf_get_u32(r, "flags", &pr->flags))
        return false;
    bool windowed = pr->kind == BP_PROGRAM_POOL || pr->kind == BP_PROGRAM_CONV;
    for (int q = 0; q < 5 && windowed; q++)
        for (int i = 0; i < 3; i++)
            if (!br_pf_get_i64(r, "window", &pr->window[q][i])) return false;
    if (!br_pf_get_count(r, "ninstr", 36, &n)) return false;
    if (axes > 0xFF || n < 1 || n > BP_PROGRAM_MAX_INSTR)
        return br_pf_fail(r, NULL, "axes 0x%x (< 0x100), ninstr %u (1..%d)",
                          axes, n, BP_PROGRAM_MAX_INSTR),
               false;
    pr->axes = (uint8_t)axes;
    pr->instr = calloc(n, sizeof *pr->instr);
    if (!pr->instr) return br_pf_fail(r, "instr", "out of memory"), false;
    pr->ninstr = n;
    for (uint32_t k = 0; k < n; k++)
        if (!read_instr(r, &pr->instr[k], k, nsource)) return false;
    return true;
}

/* Every fused node's program is one bp_program_check accepts for it, as
 * every reader of programs requires. Chunk nodes of equal size share a
 * program, and a program may be left unused by compaction. */
static bool check_programs(br_pf_rd *r, bp_plan *p) {
    r->array = "info";
    for (uint32_t id = 0; id < p->res.ninfo; id++) {
        if (p->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        r->index = id;
        uint32_t k = p->res.info[id].program;
        if (k >= p->res.nprograms)
            return br_pf_fail(r, "program",
                              "program %u out of range (the "
                              "plan has %u)",
                              k, p->res.nprograms),
                   false;
        char why[256];
        if (!bp_program_check(&p->res.programs[k], p->res.graph, id, why,
                              sizeof why))
            return br_pf_fail(r, "program", "program %u of fused node %u: %s",
                              k, id, why),
                   false;
    }
    r->array = NULL;
    return true;
}

static bool read_programs(br_pf_rd *r, bp_plan *p, uint32_t nsource) {
    uint32_t n;
    if (!br_pf_get_count(r, "nprograms", 20, &n)) return false;
    p->res.programs = bp_calloc(n, sizeof *p->res.programs, "programs");
    if (!p->res.programs)
        return br_pf_fail(r, "programs", "out of memory"), false;
    r->array = "programs";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        p->res.nprograms = i + 1; /* freed with the plan from here on */
        if (!read_program(r, &p->res.programs[i], nsource)) return false;
    }
    p->res.nprograms = n;
    r->array = NULL;
    return check_programs(r, p);
}

/* An io table entry must name node `node` with its name and size. */
static bool io_entry(br_pf_rd *r, bp_io *e, uint32_t node, const char *name,
                     const braid_graph *g) {
    const char *s;
    uint32_t len;
    if (!br_pf_get_str(r, "name", false, BR_PF_MAX_STRING, &s, &len) ||
        !br_pf_get_u32(r, "node", &e->node) ||
        !br_pf_get_u64(r, "bytes", &e->bytes))
        return false;
    if (e->node != node || strlen(name) != len || memcmp(s, name, len) != 0 ||
        e->bytes != bg_nbytes(&g->nodes[node]))
        return br_pf_fail(r, NULL, "node %u \"%.*s\" of %llu bytes; the graph "
                                   "says node %u \"%s\" of %zu bytes",
                          e->node, (int)(len > 64 ? 64 : len), s,
                          (unsigned long long)e->bytes, node, name,
                          bg_nbytes(&g->nodes[node])),
               false;
    e->name = name; /* points into the graph, like a compiled plan's */
    return true;
}

static bool read_io(br_pf_rd *r, bp_plan *p) {
    const braid_graph *g = p->res.graph;
    uint32_t nin = 0, n;
    for (uint32_t i = 0; i < g->nnodes; i++)
        nin += g->nodes[i].op == BRAID_OP_INPUT;
    p->res.inputs = bp_calloc(nin, sizeof *p->res.inputs, "input table");
    p->res.outputs =
        bp_calloc(g->noutputs, sizeof *p->res.outputs, "output table");
    if (!p->res.inputs || !p->res.outputs)
        return br_pf_fail(r, "inputs", "out of memory"), false;
    if (!br_pf_get_count(r, "ninputs", 16, &n)) return false;
    if (n != nin)
        return br_pf_fail(r, "ninputs", "%u entries, the graph has %u inputs",
                          n, nin),
               false;
    r->array = "inputs";
    for (uint32_t id = 0, i = 0; id < g->nnodes; id++) {
        if (g->nodes[id].op != BRAID_OP_INPUT) continue;
        r->index = i;
        if (!io_entry(r, &p->res.inputs[i], id, g->nodes[id].name, g))
            return false;
        p->res.ninputs = ++i;
    }
    r->array = NULL;
    if (!br_pf_get_count(r, "noutputs", 16, &n)) return false;
    if (n != g->noutputs)
        return br_pf_fail(r, "noutputs", "%u entries, the graph has %u "
                                         "outputs",
                          n, g->noutputs),
               false;
    r->array = "outputs";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        if (!io_entry(r, &p->res.outputs[i], g->outputs[i].node,
                      g->outputs[i].name, g))
            return false;
        p->res.noutputs = i + 1;
    }
    r->array = NULL;
    return true;
}

braid_status br_pf_read_plan(br_pf_load *L) {
    bp_plan *p = L->plan;
    br_pf_rd r = br_pf_reader(L, BR_PF_PLAN);
    uint32_t nsource = p->prov.source->nnodes;
    if (read_devices(&r, p) && read_settings(&r, p) &&
        read_info(&r, p, nsource) && read_schedule(&r, p) &&
        read_queues(&r, p) && read_events(&r, p) &&
        read_programs(&r, p, nsource) && read_io(&r, p))
        br_pf_end(&r);
    return r.status;
}

/* ---- MEMORY -------------------------------------------------------------------- */

/* The most bytes an arena may claim: its tensors end to end (each aligned
 * to 256 bytes), or, for the pinned staging arena, two slots of at most
 * the largest tensor (and 64 MiB). Keeps a crafted file from making an
 * executor allocate more than the plan could ever use. */
static uint64_t arena_limit(const bp_plan *p, uint32_t a) {
    uint64_t sum = 0, largest = 0;
    for (uint32_t i = 0; i < p->res.ninfo; i++) {
        const bp_tensor_place *pl = &p->res.info[i].place;
        uint64_t b = (pl->bytes + 255) / 256 * 256;
        if (pl->bytes > largest) largest = pl->bytes;
        if (pl->storage == BP_STORAGE_ARENA && pl->arena == a) sum += b;
    }
    if (p->res.arenas[a].kind == BP_ARENA_PINNED) {
        uint64_t slot = largest < ((uint64_t)64 << 20) ? largest
                                                       : (uint64_t)64 << 20;
        return 2 * ((slot + 63) / 64 * 64);
    }
    return sum;
}

static bool read_arenas(br_pf_rd *r, bp_plan *p) {
    uint32_t n;
    if (!br_pf_get_count(r, "narenas", 24, &n)) return false;
    p->res.arenas = bp_calloc(n, sizeof *p->res.arenas, "arenas");
    if (!p->res.arenas) return br_pf_fail(r, "arenas", "out of memory"), false;
    p->res.narenas = n;
    r->array = "arenas";
    for (uint32_t i = 0; i < n; i++) {
        r->index = i;
        bp_arena *a = &p->res.arenas[i];
        uint32_t kind;
        if (!br_pf_get_u32(r, "kind", &kind) ||
            !device_at(r, p, "device", &a->device) ||
            !br_pf_get_u64(r, "bytes", &a->bytes) ||
            !br_pf_get_u64(r, "lower_bound", &a->lower_bound))
            return false;
        if (kind > BP_ARENA_PINNED ||
            (kind == BP_ARENA_PINNED && a->device.kind != BP_DEVICE_CPU))
            return br_pf_fail(r, "kind", "%u on this device", kind), false;
        a->kind = (bp_arena_kind)kind;
        if (a->bytes > (uint64_t)BG_MAX_BYTES || a->lower_bound > a->bytes)
            return br_pf_fail(r, "bytes", "%llu bytes, lower bound %llu",
                              (unsigned long long)a->bytes,
                              (unsigned long long)a->lower_bound),
                   false;
    }
    r->array = NULL;
    return true;
}

static bool read_place(br_pf_rd *r, bp_plan *p, uint32_t id) {
    bp_tensor_place *pl = &p->res.info[id].place;
    uint32_t storage;
    if (!br_pf_get_u32(r, "storage", &storage) ||
        !br_pf_get_u32(r, "arena", &pl->arena) ||
        !br_pf_get_u32(r, "base", &pl->base) ||
        !br_pf_get_u64(r, "offset", &pl->offset) ||
        !br_pf_get_u64(r, "bytes", &pl->bytes))
        return false;
    if (storage == BP_STORAGE_NONE || storage > BP_STORAGE_VIEW)
        return br_pf_fail(r, "storage", "%u out of range (1..4)", storage),
               false;
    pl->storage = (bp_storage)storage;
    if (pl->bytes != bg_nbytes(&p->res.graph->nodes[id]))
        return br_pf_fail(r, "bytes", "%llu, the tensor has %zu",
                          (unsigned long long)pl->bytes,
                          bg_nbytes(&p->res.graph->nodes[id])),
               false;
    if (pl->storage == BP_STORAGE_ARENA) {
        if (pl->arena >= p->res.narenas)
            return br_pf_fail(r, "arena",
                              "arena %u out of range (the plan "
                              "has %u)",
                              pl->arena, p->res.narenas),
                   false;
        uint64_t size = p->res.arenas[pl->arena].bytes;
        if (pl->offset > size || pl->bytes > size - pl->offset)
            return br_pf_fail(r, "offset", "bytes %llu..+%llu outside arena "
                                           "%u (%llu bytes)",
                              (unsigned long long)pl->offset,
                              (unsigned long long)pl->bytes, pl->arena,
                              (unsigned long long)size),
                   false;
    }
    if (pl->storage == BP_STORAGE_VIEW &&
        (pl->base >= p->res.ninfo || pl->base == id))
        return br_pf_fail(r, "base",
                          "node %u is not another node of the plan "
                          "(%u nodes)",
                          pl->base, p->res.ninfo),
               false;
    return true;
}

/* Views: the base is not a view, the bytes lie inside it. */
static bool check_views(br_pf_rd *r, bp_plan *p) {
    r->array = "places";
    for (uint32_t id = 0; id < p->res.ninfo; id++) {
        const bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->storage != BP_STORAGE_VIEW || pl->layout != 0) continue;
        r->index = id; /* a strided view's extent: bp_verify_plan */
        const bp_tensor_place *b = &p->res.info[pl->base].place;
        if (b->storage == BP_STORAGE_VIEW)
            return br_pf_fail(r, "base", "node %u is itself a view", pl->base),
                   false;
        if (pl->offset > b->bytes || pl->bytes > b->bytes - pl->offset)
            return br_pf_fail(r, "offset", "bytes %llu..+%llu outside base "
                                           "node %u (%llu bytes)",
                              (unsigned long long)pl->offset,
                              (unsigned long long)pl->bytes, pl->base,
                              (unsigned long long)b->bytes),
                   false;
    }
    r->array = "arenas";
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        r->index = a;
        uint64_t limit = arena_limit(p, a);
        if (p->res.arenas[a].bytes > limit)
            return br_pf_fail(r, "bytes",
                              "%llu bytes, more than its tensors "
                              "need (%llu)",
                              (unsigned long long)p->res.arenas[a].bytes,
                              (unsigned long long)limit),
                   false;
    }
    r->array = NULL;
    return true;
}

/* Strided views (1.1): each names a distinct VIEW node; its strides are
 * checked against the ops by bp_verify_plan. */
static bool read_layouts(br_pf_rd *r, bp_plan *p) {
    uint32_t n;
    r->array = NULL;
    if (!br_pf_get_count(r, "nlayouts", 4, &n)) return false;
    p->res.layouts = bp_calloc(n, sizeof *p->res.layouts, "layouts");
    if (!p->res.layouts) return br_pf_fail(r, "layouts", "out of memory"), false;
    r->array = "layouts";
    for (uint32_t k = 0; k < n; k++) {
        r->index = k;
        bp_layout *l = &p->res.layouts[k];
        if (!br_pf_get_u32(r, "node", &l->node)) return false;
        if (l->node >= p->res.ninfo ||
            p->res.info[l->node].place.storage != BP_STORAGE_VIEW ||
            p->res.info[l->node].place.layout != 0)
            return br_pf_fail(r, "node",
                              "%u is not a view without a layout (the plan "
                              "has %u nodes)",
                              l->node, p->res.ninfo),
                   false;
        for (int a = 0; a < p->res.graph->nodes[l->node].rank; a++)
            if (!br_pf_get_i64(r, "stride", &l->stride[a])) return false;
        p->res.layouts[k].node = l->node;
        p->res.info[l->node].place.layout = k + 1;
        p->res.nlayouts = k + 1;
    }
    r->array = NULL;
    return true;
}

braid_status br_pf_read_memory(br_pf_load *L) {
    bp_plan *p = L->plan;
    br_pf_rd r = br_pf_reader(L, BR_PF_MEMORY);
    uint32_t n;
    if (!read_arenas(&r, p) || !count_is(&r, "nplaces", 28, p->res.ninfo, &n))
        return r.status;
    r.array = "places";
    for (uint32_t id = 0; id < n; id++) {
        r.index = id;
        if (!read_place(&r, p, id)) return r.status;
    }
    if (L->minor >= 1 && !read_layouts(&r, p)) return r.status;
    if (check_views(&r, p)) br_pf_end(&r);
    return r.status;
}
