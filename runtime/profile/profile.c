/* runtime/profile/profile.c — the profiler's state: what each node is (name, op,
 * device, bytes, flops), the spans of the run in progress, the aggregates
 * over the runs profiled, and the public snapshot (braid_exec_profile).
 * See runtime/profile/profile.h for the model and docs/profiler.md for what the
 * figures mean. */
#define _POSIX_C_SOURCE 200809L
#include "graph/attention.h"
#include "graph/window.h"
#include "runtime/profile/profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One span of the run in progress. */
typedef struct br_span {
    uint32_t node;  /* plan node id */
    uint32_t track; /* track index */
    int64_t t0, t1; /* CLOCK_MONOTONIC ns */
    bool primary;   /* the node's own span (not a worker's share) */
} br_span;

/* Aggregates of one node over the runs profiled. */
typedef struct br_agg {
    uint64_t count;            /* runs that timed it */
    double total, min, max;    /* milliseconds */
} br_agg;

/* What a node is, decided once. */
typedef struct br_node_desc {
    char name[BRAID_PROFILE_NAME_MAX]; /* its name or "%<id>" */
    char op[24];                       /* "matmul", "fused", "copy h2d" */
    char device[BRAID_DEVICE_NAME_MAX]; /* device of its queue */
    uint32_t track;                    /* its queue */
    uint64_t bytes;                    /* read + written per run */
    double flops;                      /* floating-point ops per run */
} br_node_desc;

struct br_prof {
    const bp_plan *plan;  /* the plan profiled; not owned */
    uint32_t nnodes;      /* plan->ninfo */
    br_node_desc *desc;   /* per node; owned */
    br_agg *agg;          /* per node; owned */
    uint64_t runs;        /* runs profiled since created / reset */
    br_span *spans;       /* this (or the last) run's spans; owned */
    uint32_t nspans;      /* entries used */
    uint32_t cap;         /* entries allocated */
    uint64_t dropped;     /* spans lost to out of memory */
    int64_t run_t0;       /* start of the run in progress / the last */
    int64_t wall;         /* the last run's wall time (ns) */
    int nworkers;         /* pool workers (tracks after the queues) */
    uint32_t ntracks;     /* nqueues + nworkers */
    void *gpu;            /* runtime/profile/profile_cuda.c's state, or NULL */
};

int64_t br_prof_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- what a node is -------------------------------------------------------- */

static int64_t numel_of(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int k = 0; k < rank; k++) n *= dims[k];
    return n;
}

/* Instructions of a program that compute (not loads, constants, or the
 * matmul itself, counted apart). */
static uint32_t computing_instrs(const bp_program *pr) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        braid_op op = pr->instr[i].op;
        n += op != BP_INSTR_LOAD && op != BP_INSTR_CONST &&
             op != BP_INSTR_STORE && op != BRAID_OP_MATMUL;
    }
    return n;
}

/* K of the product node id computes from its first two inputs. */
static double matmul_k(const braid_graph *g, const bg_node *n,
                       uint32_t flags) {
    if (n->ninputs < 2) return 0;
    const bg_node *a = bg_node_at(g, n->inputs[0]);
    if (a->rank < 2) return 0;
    return (double)(flags & BRAID_TRANSPOSE_A ? a->dims[a->rank - 2]
                                              : a->dims[a->rank - 1]);
}

static double flops_of(const bp_plan *p, uint32_t id) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    double out = (double)bg_numel(n);
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_ELEMENTWISE:
        return out;
    case BRAID_KIND_REDUCE:
        return n->ninputs
                   ? (double)bg_numel(bg_node_at(p->res.graph, n->inputs[0]))
                   : 0;
    case BRAID_KIND_MATMUL:
        return 2 * out * matmul_k(p->res.graph, n, n->attr.flags);
    case BRAID_KIND_ROW: /* softmax per element: max, sub, exp, add, div;
                            layer_norm: add, sub, mul, add, sub, mul, mul,
                            add */
        return (n->op == BRAID_OP_LAYER_NORM ? 8 : 5) * out;
    case BRAID_KIND_CONV: { /* conv ops: 2 per multiply-add */
        bg_conv_geom c;
        return bg_conv_geom_of(p->res.graph, n, &c) ? 2 * bg_conv_macs(&c) : 0;
    }
    case BRAID_KIND_ATTENTION: { /* 2 per multiply-add of its products */
        bg_attn_geom a;
        return bg_attn_geom_of(p->res.graph, n, &a) ? 2 * bg_attn_macs(&a) : 0;
    }
    case BRAID_KIND_WINDOW: /* pooling: a max or an add per tap */
        return out * bg_window_volume(n);
    case BRAID_KIND_AXIS: /* a compare or an add per input element */
        return (double)bg_numel(bg_node_at(p->res.graph, n->inputs[0]));
    case BRAID_KIND_FUSED: {
        uint32_t k = p->res.info[id].program;
        if (k >= p->res.nprograms) return 0;
        const bp_program *pr = &p->res.programs[k];
        double space = (double)numel_of(pr->rank, pr->dims);
        double f = space * computing_instrs(pr);
        if (pr->kind == BP_PROGRAM_MATMUL)
            f += 2 * out * matmul_k(p->res.graph, n, pr->flags);
        bg_node cv;
        bg_conv_geom geo;
        if (pr->kind == BP_PROGRAM_CONV &&
            bp_program_conv_node(pr, p->res.graph, id, &cv) &&
            bg_conv_geom_of(p->res.graph, &cv, &geo))
            f += 2 * bg_conv_macs(&geo);
        if (pr->kind == BP_PROGRAM_POOL) { /* a max or an add per tap */
            double taps = 1;
            for (int i = 0; i + 2 < pr->rank && i < 3; i++)
                taps *= (double)pr->window[0][i];
            f += out * taps - out;
        }
        return f;
    }
    default: /* sources, shape ops, broadcasts, copies: data movement */
        return 0;
    }
}

static const char *copy_direction(bp_device from, bp_device to) {
    if (from.kind == BP_DEVICE_CPU && to.kind == BP_DEVICE_CUDA) return "h2d";
    if (from.kind == BP_DEVICE_CUDA && to.kind == BP_DEVICE_CPU) return "d2h";
    if (from.kind == BP_DEVICE_CUDA && to.kind == BP_DEVICE_CUDA) return "d2d";
    return "h2h";
}

static void op_of(const bp_plan *p, uint32_t id, char *buf, size_t size) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->op == BRAID_OP_COPY && n->ninputs == 1) {
        snprintf(buf, size, "copy %s",
                 copy_direction(p->res.info[n->inputs[0]].device,
                                p->res.info[id].device));
    } else if (n->op == BRAID_OP_FUSED &&
               p->res.info[id].program < p->res.nprograms) {
        bp_program_kind k = p->res.programs[p->res.info[id].program].kind;
        snprintf(buf, size, "%s",
                 k == BP_PROGRAM_REDUCE   ? "fused reduce"
                 : k == BP_PROGRAM_MATMUL ? "fused matmul"
                 : k == BP_PROGRAM_POOL   ? "fused pool"
                 : k == BP_PROGRAM_CONV   ? "fused conv"
                                          : "fused");
    } else {
        snprintf(buf, size, "%s", bg_op(n->op)->name);
    }
}

static void describe(const bp_plan *p, uint32_t id, br_node_desc *d) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->name)
        snprintf(d->name, sizeof d->name, "%s", n->name);
    else
        snprintf(d->name, sizeof d->name, "%%%" PRIu32, id);
    op_of(p, id, d->op, sizeof d->op);
    uint32_t q = p->res.info[id].queue;
    d->track = q < p->res.nqueues ? q : 0;
    bp_device dev =
        q < p->res.nqueues ? p->res.queues[q].device : p->res.info[id].device;
    bp_device_str(dev, d->device, sizeof d->device);
    d->bytes = bg_nbytes(n);
    if (n->op != BRAID_OP_COPY)
        for (uint32_t k = 0; k < n->ninputs; k++)
            d->bytes += bg_nbytes(bg_node_at(p->res.graph, n->inputs[k]));
    uint32_t pi = p->res.info[id].program;
    if (n->op == BRAID_OP_FUSED && pi < p->res.nprograms) { /* side stores */
        const bp_program *pr = &p->res.programs[pi];
        for (uint32_t i = 0; i < pr->ninstr; i++)
            if (pr->instr[i].op == BP_INSTR_STORE &&
                pr->instr[i].input < n->ninputs)
                d->bytes += bg_nbytes(
                    bg_node_at(p->res.graph, n->inputs[pr->instr[i].input]));
    }
    d->flops = flops_of(p, id);
}

/* ---- creation --------------------------------------------------------------- */

braid_status br_prof_new(const bp_plan *p, int nworkers, br_prof **out) {
    *out = NULL;
    br_prof *pf = calloc(1, sizeof *pf);
    if (!pf) goto oom;
    pf->plan = p;
    pf->nnodes = p->res.ninfo;
    pf->nworkers = nworkers > 0 ? nworkers : 0;
    pf->ntracks =
        (p->res.nqueues ? p->res.nqueues : 1) + (uint32_t)pf->nworkers;
    pf->desc = calloc(pf->nnodes ? pf->nnodes : 1, sizeof *pf->desc);
    pf->agg = calloc(pf->nnodes ? pf->nnodes : 1, sizeof *pf->agg);
    pf->cap = p->res.nschedule * 2 + 64;
    pf->spans = malloc(pf->cap * sizeof *pf->spans);
    if (!pf->desc || !pf->agg || !pf->spans) goto oom;
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        describe(p, p->res.schedule[i], &pf->desc[p->res.schedule[i]]);
    *out = pf;
    return BRAID_OK;
oom:
    br_prof_free(pf);
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "braid_exec_set_profiling: out of memory");
}

void br_prof_free(br_prof *pf) {
    if (!pf) return;
    free(pf->desc);
    free(pf->agg);
    free(pf->spans);
    free(pf);
}

void br_prof_reset(br_prof *pf) {
    memset(pf->agg, 0, (pf->nnodes ? pf->nnodes : 1) * sizeof *pf->agg);
    pf->runs = 0;
    pf->nspans = 0;
    pf->wall = 0;
    pf->dropped = 0;
}

void **br_prof_gpu_slot(br_prof *pf) { return &pf->gpu; }

uint32_t br_prof_worker_track(const br_prof *pf, int w) {
    return pf->ntracks - (uint32_t)pf->nworkers + (uint32_t)(w - 1);
}

/* ---- runs ----------------------------------------------------------------- */

void br_prof_run_begin(br_prof *pf) {
    pf->nspans = 0;
    pf->run_t0 = br_prof_now_ns();
}

void br_prof_span(br_prof *pf, uint32_t node, uint32_t track, int64_t t0,
                  int64_t t1, bool primary) {
    if (pf->nspans == pf->cap) {
        uint32_t cap = pf->cap * 2;
        br_span *s = cap > pf->cap ? realloc(pf->spans, cap * sizeof *s)
                                   : NULL;
        if (!s) {
            pf->dropped++;
            return;
        }
        pf->spans = s;
        pf->cap = cap;
    }
    if (t1 < t0) t1 = t0;
    pf->spans[pf->nspans++] = (br_span){node, track, t0, t1, primary};
}

void br_prof_run_end(br_prof *pf, bool ok) {
    pf->wall = br_prof_now_ns() - pf->run_t0;
    if (!ok) return;
    pf->runs++;
    for (uint32_t i = 0; i < pf->nspans; i++) {
        const br_span *s = &pf->spans[i];
        if (!s->primary || s->node >= pf->nnodes) continue;
        br_agg *a = &pf->agg[s->node];
        double ms = (double)(s->t1 - s->t0) * 1e-6;
        if (a->count == 0 || ms < a->min) a->min = ms;
        if (a->count == 0 || ms > a->max) a->max = ms;
        a->total += ms;
        a->count++;
    }
}

static void worker_span(void *ctx, int w, int64_t begin, int64_t end) {
    void **c = ctx;
    br_prof *pf = c[0];
    uint32_t node = *(const uint32_t *)c[1];
    if (w >= 1 && w <= pf->nworkers)
        br_prof_span(pf, node, br_prof_worker_track(pf, w), begin, end, false);
}

void br_prof_take_workers(br_prof *pf, br_pool *p, uint32_t node) {
    void *ctx[2] = {pf, &node};
    br_pool_trace_drain(p, pf ? worker_span : NULL, ctx);
}

/* ---- the snapshot ----------------------------------------------------------- */

static void track_name(const br_prof *pf, uint32_t t, char *buf, size_t size) {
    const bp_plan *p = pf->plan;
    if (t >= p->res.nqueues) {
        snprintf(buf, size, "cpu worker %" PRIu32, t - p->res.nqueues + 1);
        return;
    }
    const bp_queue *q = &p->res.queues[t];
    char dev[BRAID_DEVICE_NAME_MAX];
    bp_device_str(q->device, dev, sizeof dev);
    const char *kind = q->kind == BP_QUEUE_H2D   ? "h2d"
                       : q->kind == BP_QUEUE_D2H ? "d2h"
                       : q->kind == BP_QUEUE_D2D ? "d2d"
                                                 : NULL;
    if (q->kind == BP_QUEUE_CPU)
        snprintf(buf, size, "%s", dev);
    else if (q->kind == BP_QUEUE_COMPUTE)
        snprintf(buf, size, "%s compute %" PRIu32, dev, q->index);
    else if (q->index)
        snprintf(buf, size, "%s %s %" PRIu32, dev, kind, q->index);
    else
        snprintf(buf, size, "%s %s", dev, kind);
}

static int by_total_desc(const void *a, const void *b) {
    const braid_profile_node *x = a, *y = b;
    if (x->total_ms != y->total_ms) return x->total_ms < y->total_ms ? 1 : -1;
    return (x->node > y->node) - (x->node < y->node);
}

static int by_track_start(const void *a, const void *b) {
    const braid_profile_span *x = a, *y = b;
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

/* The union of each track's spans, summed (spans sorted by track, start). */
static double busy_of(const braid_profile_span *s, uint32_t n) {
    double busy = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t t = s[i].track;
        double lo = s[i].start_ms, hi = s[i].end_ms;
        for (i++; i < n && s[i].track == t; i++) {
            if (s[i].start_ms > hi) {
                busy += hi - lo;
                lo = s[i].start_ms;
            }
            if (s[i].end_ms > hi) hi = s[i].end_ms;
        }
        busy += hi - lo;
    }
    return busy;
}

static void fill_nodes(const br_prof *pf, braid_profile *r) {
    for (uint32_t id = 0; id < pf->nnodes; id++) {
        const br_agg *a = &pf->agg[id];
        if (a->count == 0) continue;
        const br_node_desc *d = &pf->desc[id];
        braid_profile_node *o = &r->nodes[r->nnodes++];
        o->node = id;
        memcpy(o->name, d->name, sizeof o->name);
        memcpy(o->op, d->op, sizeof o->op);
        memcpy(o->device, d->device, sizeof o->device);
        o->track = d->track;
        o->count = a->count;
        o->total_ms = a->total;
        o->min_ms = a->min;
        o->max_ms = a->max;
        o->bytes = d->bytes;
        o->flops = d->flops;
    }
    qsort(r->nodes, r->nnodes, sizeof *r->nodes, by_total_desc);
}

braid_status br_prof_snapshot(const br_prof *pf, braid_profile **out) {
    braid_profile *r = calloc(1, sizeof *r);
    uint32_t nn = 0;
    for (uint32_t id = 0; id < pf->nnodes; id++) nn += pf->agg[id].count > 0;
    if (r) {
        r->nodes = calloc(nn ? nn : 1, sizeof *r->nodes);
        r->tracks = calloc(pf->ntracks, sizeof *r->tracks);
        r->spans = calloc(pf->nspans ? pf->nspans : 1, sizeof *r->spans);
    }
    if (!r || !r->nodes || !r->tracks || !r->spans) {
        braid_profile_free(r);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_profile: out of memory");
    }
    r->runs = pf->runs;
    fill_nodes(pf, r);
    r->ntracks = pf->ntracks;
    for (uint32_t t = 0; t < pf->ntracks; t++)
        track_name(pf, t, r->tracks[t].name, sizeof r->tracks[t].name);
    for (uint32_t i = 0; i < pf->nspans; i++) {
        const br_span *s = &pf->spans[i];
        r->spans[i] = (braid_profile_span){
            s->node, s->track, (double)(s->t0 - pf->run_t0) * 1e-6,
            (double)(s->t1 - pf->run_t0) * 1e-6};
    }
    r->nspans = pf->nspans;
    qsort(r->spans, r->nspans, sizeof *r->spans, by_track_start);
    r->wall_ms = (double)pf->wall * 1e-6;
    r->busy_ms = busy_of(r->spans, r->nspans);
    r->overlap = r->wall_ms > 0 ? r->busy_ms / r->wall_ms : 0;
    *out = r;
    return BRAID_OK;
}

void braid_profile_free(braid_profile *p) {
    if (!p) return;
    free(p->nodes);
    free(p->tracks);
    free(p->spans);
    free(p);
}
