/* tests/test_verify_plan.c — the plan checker rejects corrupted plans.
 *
 * Valid plans (compiled for "cpu,cuda:0" with GPU hints, so they have
 * copies, several queues, events, views and shared arena bytes) are
 * corrupted one thing at a time; bp_verify_plan must answer
 * BRAID_ERR_INTERNAL with a message naming the check that failed. The
 * uncorrupted plans are accepted. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "passes/passes.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

/* x on the host; a GPU chain with a view and a matmul; a host branch.
 * Fusion and simplification are off so every op stays a node. */
static const char *const GRAPH =
    "braid-graph 1\n"
    "%x = input f32[64,64] name=\"x\"\n"
    "%a = exp %x device=\"cuda:0\" : f32[64,64]\n"
    "%b = tanh %a device=\"cuda:0\" : f32[64,64]\n"
    "%m = matmul %b, %b device=\"cuda:0\" : f32[64,64]\n"
    "%r = reshape %m shape=[4096] device=\"cuda:0\" : f32[4096]\n"
    "%n = neg %r device=\"cuda:0\" : f32[4096]\n"
    "%c = sin %x : f32[64,64]\n"
    "%d = cos %c : f32[64,64]\n"
    "output \"y\" = %n\n"
    "output \"z\" = %d\n";

/* Graph ids of GRAPH's nodes (the plan's info.origin). */
enum { X, A, B, M, R, N, C, D };

typedef struct fixture {
    braid_graph *g; /* the parsed graph */
    braid_plan *p;  /* its plan, corrupted by the test */
} fixture;

static fixture make(const char *text, const char *devices) {
    fixture f;
    f.g = ts_parse_ok(text, NULL);
    braid_compile_options o =
        ts_compile_options(devices, BRAID_PASS_FUSE | BRAID_PASS_SIMPLIFY);
    f.p = ts_compile_ok(f.g, &o);
    cr_assert_eq(bp_verify_plan(f.p), BRAID_OK, "%s", braid_last_error());
    return f;
}

static void done(fixture *f) {
    braid_plan_free(f->p);
    braid_graph_free(f->g);
}

/* The plan node made from graph node `origin`. */
static uint32_t node_of(const bp_plan *p, uint32_t origin) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.info[id].origin == origin) return id;
    cr_assert_fail("no plan node comes from graph node %u", origin);
    return BG_NONE;
}

/* The verifier rejects the plan with a message containing every word. */
static void rejected(bp_plan *p, const char *w1, const char *w2) {
    braid_status s = bp_verify_plan(p);
    const char *msg = braid_last_error();
    cr_assert_eq(s, BRAID_ERR_INTERNAL, "accepted a corrupt plan (%s)", w1);
    cr_assert(strstr(msg, "verify_plan: ") != NULL, "message: %s", msg);
    cr_assert(strstr(msg, w1) != NULL, "expected \"%s\" in: %s", w1, msg);
    cr_assert(!w2 || strstr(msg, w2) != NULL, "expected \"%s\" in: %s", w2,
              msg);
    cr_log_info("rejected: %s", msg);
}

static uint32_t find_event(const bp_plan *p, uint32_t after, uint32_t before) {
    for (uint32_t k = 0; k < p->res.nevents; k++)
        if (p->res.events[k].after == after &&
            p->res.events[k].before == before)
            return k;
    return BG_NONE;
}

Test(verify_plan, valid_plans_accepted) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    /* the plan has what the corruptions below need */
    cr_assert_eq(p->res.info[node_of(p, A)].device.kind, BP_DEVICE_CUDA);
    cr_assert_eq(p->res.info[node_of(p, C)].device.kind, BP_DEVICE_CPU);
    cr_assert_gt(p->res.nevents, 0);
    cr_assert_eq(p->res.info[node_of(p, R)].place.storage, BP_STORAGE_VIEW);
    done(&f);
    fixture h = make(GRAPH, "cpu");
    cr_assert_eq(bp_verify_plan(h.p), BRAID_OK, "%s", braid_last_error());
    done(&h);
}

Test(verify_plan, schedule_swap_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    uint32_t a = node_of(p, A), b = node_of(p, B);
    uint32_t ia = p->res.info[a].order, ib = p->res.info[b].order;
    p->res.schedule[ia] = b;
    p->res.schedule[ib] = a;
    p->res.info[a].order = ib;
    p->res.info[b].order = ia;
    rejected(p, "schedule:", "is not scheduled before it");
    done(&f);
}

Test(verify_plan, schedule_repeat_and_order_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    uint32_t keep = p->res.schedule[1];
    p->res.schedule[1] = p->res.schedule[0];
    rejected(p, "schedule:", "scheduled twice");
    p->res.schedule[1] = keep;
    p->res.info[keep].order++;
    rejected(p, "schedule:", "info.order");
    done(&f);
}

Test(verify_plan, dropped_event_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    /* a's input is the copy of x on the H2D stream: a data event */
    uint32_t a = node_of(p, A), cp = p->res.graph->nodes[a].inputs[0];
    cr_assert_eq(p->res.graph->nodes[cp].op, BRAID_OP_COPY);
    uint32_t k = find_event(p, cp, a);
    cr_assert_neq(k, BG_NONE);
    p->res.events[k] = p->res.events[--p->res.nevents];
    rejected(p, "event:", "without an event");
    done(&f);
}

Test(verify_plan, bad_events_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    uint32_t a = node_of(p, A), b = node_of(p, B), c = node_of(p, C);
    uint32_t n = p->res.nevents;
    /* two nodes of one queue */
    cr_assert_eq(p->res.info[a].queue, p->res.info[b].queue);
    p->res.events[n] = (bp_event){a, b, true};
    p->res.nevents = n + 1;
    rejected(p, "event:", "on one queue");
    /* waits for a node scheduled later */
    uint32_t early = p->res.info[a].order < p->res.info[c].order ? a : c;
    uint32_t late = early == a ? c : a;
    p->res.events[n] = (bp_event){late, early, true};
    rejected(p, "event:", "not scheduled before it");
    /* a data event where no data flows */
    p->res.events[n] = (bp_event){early, late, false};
    rejected(p, "event:", "does not read");
    /* the same event twice */
    p->res.events[n] = p->res.events[0];
    rejected(p, "event:", "both make node");
    done(&f);
}

Test(verify_plan, overlapping_live_tensors_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    /* the matmul writes while it reads b: they must not share bytes */
    bp_tensor_place *m = &p->res.info[node_of(p, M)].place;
    const bp_tensor_place *b = &p->res.info[node_of(p, B)].place;
    cr_assert_eq(m->storage, BP_STORAGE_ARENA);
    cr_assert_eq(b->storage, BP_STORAGE_ARENA);
    m->offset = b->offset;
    rejected(p, "overlap:", "may be live");
    done(&f);
}

Test(verify_plan, past_arena_end_and_misaligned_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    bp_tensor_place *m = &p->res.info[node_of(p, M)].place;
    uint64_t keep = m->offset;
    m->offset = p->res.arenas[m->arena].bytes - m->bytes + 256;
    rejected(p, "arena:", "runs past the end");
    m->offset = keep + 4;
    rejected(p, "arena:", "aligned");
    m->offset = keep;
    p->res.arenas[m->arena].lower_bound = p->res.arenas[m->arena].bytes + 1;
    rejected(p, "arena:", "lower bound");
    done(&f);
}

Test(verify_plan, unlisted_device_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    p->res.info[node_of(p, B)].device = (bp_device){BP_DEVICE_CUDA, 3};
    rejected(p, "device:", "cuda:3");
    done(&f);
}

Test(verify_plan, view_outside_base_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    bp_tensor_place *r = &p->res.info[node_of(p, R)].place;
    cr_assert_eq(r->storage, BP_STORAGE_VIEW);
    r->offset = 256;
    rejected(p, "view:", "outside its base");
    r->offset = 0;
    r->base = node_of(p, C); /* a cpu tensor of the same size */
    rejected(p, "view:", "another device");
    done(&f);
}

Test(verify_plan, wrong_queue_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    uint32_t b = node_of(p, B), keep = p->res.info[b].queue;
    p->res.info[b].queue = 0; /* the cpu queue */
    rejected(p, "queue:", "compute queue of cuda:0");
    p->res.info[b].queue = keep;
    /* the host → device copy on another stream of its GPU */
    uint32_t cp = p->res.graph->nodes[node_of(p, A)].inputs[0];
    uint32_t other = BG_NONE;
    for (uint32_t q = 0; q < p->res.nqueues; q++)
        if (p->res.queues[q].kind == BP_QUEUE_COMPUTE) other = q;
    cr_assert_neq(other, BG_NONE);
    p->res.info[cp].queue = other;
    rejected(p, "queue:", "H2D");
    p->res.info[cp].queue = p->res.nqueues;
    rejected(p, "queue:", NULL);
    done(&f);
}

Test(verify_plan, wrong_storage_rejected) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    uint32_t x = node_of(p, X), d = node_of(p, D), b = node_of(p, B);
    p->res.info[x].place.storage = BP_STORAGE_ARENA;
    rejected(p, "place:", "storage");
    p->res.info[x].place.storage = BP_STORAGE_INPUT;
    p->res.info[d].place.storage = BP_STORAGE_NONE;
    rejected(p, "place:", "storage");
    p->res.info[d].place.storage = BP_STORAGE_ARENA;
    p->res.info[d].place.bytes += 4;
    rejected(p, "place:", "bytes");
    p->res.info[d].place.bytes -= 4;
    p->res.info[b].noop = true; /* tanh must run */
    rejected(p, "place:", "skipped");
    done(&f);
}

/* In place: tanh over exp's dead bytes is accepted; the same sharing is
 * rejected once exp is read again after tanh. */
Test(verify_plan, in_place_accepted_only_when_dead) {
    static const char *const chain =
        "braid-graph 1\n"
        "%x = input f32[256] name=\"x\"\n"
        "%a = exp %x : f32[256]\n"
        "%b = tanh %a : f32[256]\n"
        "%c = sin %b : f32[256]\n"
        "output \"y\" = %c\n";
    fixture f = make(chain, "cpu");
    bp_plan *p = f.p;
    const bp_tensor_place *a = &p->res.info[node_of(p, 1)].place;
    const bp_tensor_place *b = &p->res.info[node_of(p, 2)].place;
    cr_assert_eq(a->storage, BP_STORAGE_ARENA);
    cr_assert_eq(a->offset, b->offset, "tanh is not in place over exp");
    /* c now reads a too (a graph change the places do not follow) */
    bg_node *c = &p->res.graph->nodes[node_of(p, 3)];
    c->op = BRAID_OP_ADD;
    uint32_t *in = bg_alloc(p->res.graph, 2 * sizeof *in);
    cr_assert_not_null(in);
    in[0] = c->inputs[0];
    in[1] = node_of(p, 1);
    bg_free(p->res.graph, c->inputs, c->ninputs * sizeof *c->inputs);
    c->inputs = in;
    c->ninputs = 2;
    rejected(p, "overlap:", NULL);
    done(&f);
}

/* Before the schedule and memory passes have run, their parts are not
 * checked; what exists still is. */
Test(verify_plan, partial_plans_checked_as_far_as_they_go) {
    fixture f = make(GRAPH, "cpu,cuda:0");
    bp_plan *p = f.p;
    free(p->res.schedule);
    p->res.schedule = NULL;
    p->res.nschedule = 0;
    free(p->res.arenas);
    p->res.arenas = NULL;
    p->res.narenas = 0;
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    p->res.info[node_of(p, B)].queue = 0;
    rejected(p, "queue:", NULL);
    done(&f);
}
