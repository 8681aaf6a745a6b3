/* tests/test_dispatch.c — the one dispatcher (runtime/dispatch.c) and its
 * host emulator (runtime/emulate.c).
 *
 * The policy is checked directly, with queues that only record what they
 * are asked: device work is issued before host work that does not feed it
 * (so the two overlap, as seed 001 needs), the host waits for a device
 * producer right before the CPU node that reads it and not earlier, and
 * CPU nodes run in schedule order. The emulator is checked for what the
 * tests rely on it for: every seed of an intact GPU plan matches the
 * reference, while the same plan with one event dropped (device → host,
 * host → device, or between two compute streams) gives wrong results
 * under some seed. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/dispatch.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

/* A GPU chain (exp, tanh) whose result a CPU node adds to an independent
 * CPU branch (sin). */
static const char *mixed = "braid-graph 1\n"
                           "%x = input f32[64,64] name=\"x\"\n"
                           "%y = input f32[64,64] name=\"y\"\n"
                           "%g1 = exp %x device=\"cuda:0\"\n"
                           "%g2 = tanh %g1 device=\"cuda:0\"\n"
                           "%c1 = sin %y device=\"cpu\"\n"
                           "%c2 = add %c1, %g2 device=\"cpu\"\n"
                           "output \"o\" = %c2\n"
                           "output \"p\" = %c1\n";

/* A CPU node feeding GPU work. */
static const char *feed = "braid-graph 1\n"
                          "%y = input f32[64,64] name=\"y\"\n"
                          "%c = sin %y device=\"cpu\"\n"
                          "%g = exp %c device=\"cuda:0\"\n"
                          "output \"o\" = %g\n";

/* Two GPU branches joined on the GPU: with two compute streams the join
 * waits for the other stream through an event. */
static const char *join = "braid-graph 1\n"
                          "%x = input f32[128,64] name=\"x\"\n"
                          "%a1 = exp %x device=\"cuda:0\"\n"
                          "%a2 = tanh %a1 device=\"cuda:0\"\n"
                          "%b1 = sin %x device=\"cuda:0\"\n"
                          "%b2 = cos %b1 device=\"cuda:0\"\n"
                          "%j = add %a2, %b2 device=\"cuda:0\"\n"
                          "output \"o\" = %j\n";

static braid_plan *compile(const braid_graph *g, int streams) {
    braid_compile_options o =
        ts_compile_options("cpu,cuda:0", BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE);
    o.max_streams = streams;
    return ts_compile_ok(g, &o);
}

static uint32_t node_of(const braid_plan *p, braid_op op) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (bg_node_at(p->res.graph, id)->op == op) return id;
    cr_assert_fail("no %s node", bg_op(op)->name);
    return 0;
}

/* ---- the policy, with recording queues ----------------------------------- */

#define LOG_MAX 256

/* What the dispatcher asked, in order: 'I' issue, 'W' host wait, 'C' a
 * CPU node run; with the node. */
typedef struct recorder {
    char what[LOG_MAX];
    uint32_t node[LOG_MAX];
    uint32_t n;
} recorder;

static void note(recorder *r, char what, uint32_t node) {
    cr_assert_lt(r->n, LOG_MAX);
    r->what[r->n] = what;
    r->node[r->n++] = node;
}

static uint32_t rec_span(void *q, uint32_t i) {
    (void)q;
    (void)i;
    return 1;
}

static braid_status rec_issue(void *q, const uint32_t *ids, uint32_t m) {
    for (uint32_t i = 0; i < m; i++)
        note(q, 'I', ids[i]);
    return BRAID_OK;
}

static braid_status rec_wait(void *q, uint32_t producer, uint32_t ev,
                             uint32_t consumer) {
    (void)ev;
    (void)consumer;
    note(q, 'W', producer);
    return BRAID_OK;
}

static braid_status rec_cpu(void *q, uint32_t id) {
    note(q, 'C', id);
    return BRAID_OK;
}

/* Index of the first entry (what, node), or -1. */
static int find(const recorder *r, char what, uint32_t node) {
    for (uint32_t i = 0; i < r->n; i++)
        if (r->what[i] == what && r->node[i] == node) return (int)i;
    return -1;
}

Test(dispatch, device_work_goes_out_before_host_work) {
    braid_graph *g = ts_parse_ok(mixed, "mixed");
    braid_plan *p = compile(g, 0);
    br_sched s;
    cr_assert_eq(br_sched_build(p, &s), BRAID_OK, "%s", braid_last_error());
    cr_assert_gt(s.ndev, 0);
    recorder r = {.n = 0};
    br_queue_ops ops = {rec_span, rec_issue, rec_wait, NULL};
    bool *done = calloc(s.n, sizeof *done);
    br_dispatch d = {&s, &ops, &r, rec_cpu, &r, done};
    cr_assert_eq(br_dispatch_run(&d), BRAID_OK, "%s", braid_last_error());

    /* every node once, in its list's order */
    uint32_t issued = 0, ran = 0;
    for (uint32_t i = 0; i < r.n; i++) {
        if (r.what[i] == 'I') cr_assert_eq(r.node[i], s.dev_list[issued++]);
        if (r.what[i] == 'C') cr_assert_eq(r.node[i], s.cpu_list[ran++]);
    }
    cr_assert_eq(issued, s.ndev);
    cr_assert_eq(ran, s.ncpu);
    /* the GPU chain is issued before the host computes sin: overlap */
    int tanh_at = find(&r, 'I', node_of(p, BRAID_OP_TANH));
    int sin_at = find(&r, 'C', node_of(p, BRAID_OP_SIN));
    int add_at = find(&r, 'C', node_of(p, BRAID_OP_ADD));
    cr_assert(tanh_at >= 0 && sin_at >= 0 && add_at >= 0);
    cr_assert_lt(tanh_at, sin_at, "device work waited for host work");
    /* one host wait, for the copy back, after sin and right before add */
    uint32_t waits = 0;
    for (uint32_t i = 0; i < r.n; i++)
        waits += r.what[i] == 'W';
    cr_assert_eq(waits, 1);
    cr_assert_eq(r.what[add_at - 1], 'W');
    uint32_t back = r.node[add_at - 1];
    cr_assert_eq(bg_node_at(p->res.graph, back)->op, BRAID_OP_COPY);
    cr_assert(s.on_dev[back]);
    cr_assert_gt(add_at - 1, sin_at, "the host waited before it had to");
    free(done);
    br_sched_free(&s);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(dispatch, device_nodes_without_backend_are_refused) {
    braid_graph *g = ts_parse_ok(mixed, "mixed");
    braid_plan *p = compile(g, 0);
    br_sched s;
    cr_assert_eq(br_sched_build(p, &s), BRAID_OK);
    bool *done = calloc(s.n, sizeof *done);
    recorder r = {.n = 0};
    br_dispatch d = {&s, NULL, NULL, rec_cpu, &r, done};
    cr_assert_eq(br_dispatch_run(&d), BRAID_ERR_INTERNAL);
    cr_assert(strstr(braid_last_error(), "no device backend"), "%s",
              braid_last_error());
    free(done);
    br_sched_free(&s);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the emulator finds what a GPU would get wrong ----------------------- */

/* How many of seeds 1..nseeds give results matching the reference. */
static int seeds_matching(const braid_graph *g, const braid_plan *p,
                          int nseeds) {
    ts_io *io = ts_io_new(g, 11);
    cr_assert(io);
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    int good = 0;
    char msg[256];
    for (int seed = 1; seed <= nseeds; seed++) {
        braid_exec *e = NULL;
        cr_assert_eq(br_exec_new_emulated(p, (uint64_t)seed, &e), BRAID_OK,
                     "%s", braid_last_error());
        for (uint32_t j = 0; j < io->noutputs; j++) /* no stale results */
            memset(io->out[j].data, 0, io->out[j].bytes);
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        good += ts_io_compare(io, msg, sizeof msg);
        braid_exec_free(e);
    }
    ts_io_free(io);
    return good;
}

/* Moves the first event matching (after on a device queue or not, before
 * likewise) to the end and hides it; returns the old count. */
static uint32_t drop_event(braid_plan *p, bool after_dev, bool before_dev) {
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        bp_event ev = p->res.events[k];
        if (br_node_on_device_queue(p, ev.after) != after_dev ||
            br_node_on_device_queue(p, ev.before) != before_dev)
            continue;
        uint32_t n = p->res.nevents;
        p->res.events[k] = p->res.events[n - 1];
        p->res.events[n - 1] = ev;
        p->res.nevents = n - 1;
        return n;
    }
    cr_assert_fail("no such event");
    return 0;
}

static void check_drop(const char *text, int streams, bool after_dev,
                       bool before_dev) {
    enum { SEEDS = 24 };
    braid_graph *g = ts_parse_ok(text, "graph");
    braid_plan *p = compile(g, streams);
    cr_assert_eq(seeds_matching(g, p, SEEDS), SEEDS,
                 "the intact plan fails under some interleaving");
    uint32_t n = drop_event(p, after_dev, before_dev);
    int good = seeds_matching(g, p, SEEDS);
    p->res.nevents = n;
    cr_assert_lt(good, SEEDS,
                 "no interleaving exposed the missing event (%d/%d good)", good,
                 SEEDS);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(dispatch, emulator_exposes_a_missing_device_to_host_event) {
    check_drop(mixed, 0, true, false);
}

Test(dispatch, emulator_exposes_a_missing_cross_stream_event) {
    check_drop(join, 2, true, true);
}

Test(dispatch, emulator_exposes_a_missing_host_to_device_event) {
    check_drop(feed, 0, false, true);
}
