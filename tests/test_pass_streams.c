/* tests/test_pass_streams.c — the streams pass: queues and events.
 *
 * Independent branches spread over compute streams (bounded by
 * max_streams), chains stay on one stream, copies go on the stream of their
 * direction, queue indices count per (device, kind), and there is exactly
 * one event per cross-queue data edge and none within a queue (checked by
 * recomputing the set from the plan). A property test runs 300 random
 * graphs with random device hints, compiled for "cpu,cuda:0", through the
 * emulated executor with 3 interleaving seeds each and compares with the
 * reference evaluator.
 *
 * Golden cases: tests/golden/streams/<case>.graph is the input; comment
 * lines "# devices: LIST" (default cpu,cuda:0) and "# options: streams=N
 * chunks=N fuse simplify" set the compile options (fuse and simplify are
 * off unless named, so the cases do not move with those passes);
 * <case>.expected is bp_plan_dump after the streams pass. Regenerate with
 * BRAID_UPDATE_GOLDEN=1 and check the diff by eye. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/streams/"

/* ---- harness ------------------------------------------------------------- */

static braid_graph *parse(const char *text) {
    return ts_parse_ok(text, "test");
}

/* Options for the tests: fuse and simplify off, the cost model's chunking
 * off, unless a test says otherwise. */
static braid_compile_options options(const char *devices, int streams) {
    braid_compile_options o =
        ts_compile_options(devices, BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE);
    o.max_streams = streams;
    o.chunks = 1;
    return o;
}

/* After the dump: the plan's data events, one "# event %after -> %before"
 * line each. */
static void put_events(FILE *f, const braid_plan *p) {
    for (uint32_t e = 0; e < p->res.nevents; e++)
        if (!p->res.events[e].reuse)
            fprintf(f, "# event %%%u -> %%%u\n", p->res.events[e].after,
                    p->res.events[e].before);
}

static void check_golden(const char *name) {
    braid_compile_options base = options("cpu,cuda:0", 0);
    ts_check_dump_case(GOLDEN, name, &base, "streams", put_events);
}

/* ---- invariants ------------------------------------------------------------ */

static const bp_queue *queue_of(const braid_plan *p, uint32_t id) {
    cr_assert_lt(p->res.info[id].queue, p->res.nqueues, "node %u has no queue",
                 id);
    return &p->res.queues[p->res.info[id].queue];
}

/* Queue table: cpu first, indices counting per (device, kind), nodes on
 * queues of their kind and device. */
static void check_queues(const braid_plan *p) {
    cr_assert_geq(p->res.nqueues, 1);
    cr_assert_eq(p->res.queues[0].kind, BP_QUEUE_CPU);
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        uint32_t before = 0;
        for (uint32_t r = 0; r < q; r++)
            before += p->res.queues[r].kind == p->res.queues[q].kind &&
                      bp_device_equal(p->res.queues[r].device,
                                      p->res.queues[q].device);
        cr_assert_eq(p->res.queues[q].index, before, "queue %u index", q);
        cr_assert(p->res.queues[q].kind == BP_QUEUE_CPU ||
                  p->res.queues[q].device.kind == BP_DEVICE_CUDA);
    }
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        const bp_queue *q = queue_of(p, id);
        bp_device dev = p->res.info[id].device;
        if (n->op == BRAID_OP_COPY) {
            bp_device src = p->res.info[n->inputs[0]].device;
            if (src.kind == BP_DEVICE_CPU) {
                cr_assert_eq(q->kind, BP_QUEUE_H2D, "copy %u", id);
                cr_assert(bp_device_equal(q->device, dev));
            } else if (dev.kind == BP_DEVICE_CPU) {
                cr_assert_eq(q->kind, BP_QUEUE_D2H, "copy %u", id);
                cr_assert(bp_device_equal(q->device, src));
            } else {
                cr_assert_eq(q->kind, BP_QUEUE_D2D, "copy %u", id);
                cr_assert(bp_device_equal(q->device, dev));
            }
        } else if (dev.kind == BP_DEVICE_CPU) {
            cr_assert_eq(q->kind, BP_QUEUE_CPU, "node %u", id);
        } else {
            cr_assert_eq(q->kind, BP_QUEUE_COMPUTE, "node %u", id);
            cr_assert(bp_device_equal(q->device, dev));
            cr_assert_lt(q->index, (uint32_t)p->in.settings.max_streams);
        }
    }
}

/* Exactly one data event per distinct cross-queue (producer, consumer)
 * pair, none within a queue. */
static void check_events(const braid_plan *p) {
    uint32_t n = p->res.graph->nnodes;
    uint32_t expected = 0;
    uint32_t *seen = malloc((n ? n : 1) * sizeof *seen);
    cr_assert(seen);
    for (uint32_t i = 0; i < n; i++) seen[i] = UINT32_MAX;
    for (uint32_t id = 0; id < n; id++) {
        const bg_node *nd = bg_node_at(p->res.graph, id);
        for (uint32_t k = 0; k < nd->ninputs; k++) {
            uint32_t u = nd->inputs[k];
            if (seen[u] == id || p->res.info[u].queue == p->res.info[id].queue)
                continue;
            seen[u] = id;
            expected++;
            uint32_t found = 0;
            for (uint32_t e = 0; e < p->res.nevents; e++)
                found += !p->res.events[e].reuse &&
                         p->res.events[e].after == u &&
                         p->res.events[e].before == id;
            cr_assert_eq(found, 1, "edge %u -> %u has %u events", u, id, found);
        }
    }
    uint32_t data = 0;
    for (uint32_t e = 0; e < p->res.nevents; e++) {
        const bp_event *ev = &p->res.events[e];
        cr_assert_neq(p->res.info[ev->after].queue,
                      p->res.info[ev->before].queue,
                      "event %u -> %u within one queue", ev->after, ev->before);
        data += !ev->reuse;
    }
    cr_assert_eq(data, expected, "%u data events, expected %u", data, expected);
    free(seen);
}

/* Runs the plan emulated with `seeds` interleavings; compares each with
 * the reference. Returns false (with msg) on a mismatch. */
static bool emulate_matches(const braid_graph *g, const braid_plan *p,
                            uint64_t seed, int seeds, char *msg, size_t size) {
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                     io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    bool ok = true;
    for (int s = 0; ok && s < seeds; s++) {
        braid_exec *e = NULL;
        cr_assert_eq(br_exec_new_emulated(p, seed * 7 + (uint64_t)s, &e),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        ok = ts_io_compare(io, msg, size);
        braid_exec_free(e);
    }
    ts_io_free(io);
    return ok;
}

/* ---- graphs ------------------------------------------------------------------ */

/* Four independent two-op branches on cuda:0. */
static const char *branches =
    "braid-graph 1\n"
    "%x0 = input f32[8,16] name=\"x0\"\n"
    "%x1 = input f32[8,16] name=\"x1\"\n"
    "%x2 = input f32[8,16] name=\"x2\"\n"
    "%x3 = input f32[8,16] name=\"x3\"\n"
    "%e0 = exp %x0 device=\"cuda:0\"\n"
    "%e1 = exp %x1 device=\"cuda:0\"\n"
    "%e2 = exp %x2 device=\"cuda:0\"\n"
    "%e3 = exp %x3 device=\"cuda:0\"\n"
    "%t0 = tanh %e0 device=\"cuda:0\"\n"
    "%t1 = tanh %e1 device=\"cuda:0\"\n"
    "%t2 = tanh %e2 device=\"cuda:0\"\n"
    "%t3 = tanh %e3 device=\"cuda:0\"\n"
    "output \"o0\" = %t0\n"
    "output \"o1\" = %t1\n"
    "output \"o2\" = %t2\n"
    "output \"o3\" = %t3\n";

/* The node computing op on the branch reading input `name`. */
static uint32_t find_op(const braid_plan *p, braid_op op, uint32_t nth) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (bg_node_at(p->res.graph, id)->op == op && nth-- == 0) return id;
    cr_assert_fail("no %s #%u", bg_op(op)->name, nth);
    return 0;
}

/* Distinct compute queues used. */
static uint32_t compute_queues(const braid_plan *p) {
    uint32_t used = 0;
    for (uint32_t q = 0; q < p->res.nqueues; q++) {
        if (p->res.queues[q].kind != BP_QUEUE_COMPUTE) continue;
        for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
            if (p->res.info[id].queue == q) {
                used++;
                break;
            }
    }
    return used;
}

/* ---- tests ----------------------------------------------------------------------- */

Test(streams, independent_branches_spread_up_to_max_streams) {
    braid_graph *g = parse(branches);
    for (int streams = 1; streams <= 6; streams++) {
        braid_compile_options o = options("cpu,cuda:0", streams);
        braid_plan *p = ts_compile_ok(g, &o);
        check_queues(p);
        check_events(p);
        uint32_t want = streams < 4 ? (uint32_t)streams : 4;
        cr_assert_eq(compute_queues(p), want, "max_streams %d", streams);
        for (uint32_t b = 0; b < 4; b++) {
            uint32_t e = find_op(p, BRAID_OP_EXP, b), t = find_op(p, BRAID_OP_TANH, b);
            cr_assert_eq(p->res.info[e].queue, p->res.info[t].queue,
                         "a chain stays on one stream");
            for (uint32_t c = 0; c < b && streams >= 4; c++)
                cr_assert_neq(p->res.info[e].queue,
                              p->res.info[find_op(p, BRAID_OP_EXP, c)].queue,
                              "branches %u and %u share a stream", b, c);
        }
        char msg[256] = "";
        cr_assert(emulate_matches(g, p, 3, 3, msg, sizeof msg), "%s", msg);
        braid_plan_free(p);
    }
    braid_graph_free(g);
}

Test(streams, max_streams_one_uses_one_compute_stream) {
    braid_graph *g = parse(branches);
    braid_compile_options o = options("cpu,cuda:0", 1);
    braid_plan *p = ts_compile_ok(g, &o);
    uint32_t compute = 0;
    for (uint32_t q = 0; q < p->res.nqueues; q++)
        compute += p->res.queues[q].kind == BP_QUEUE_COMPUTE;
    cr_assert_eq(compute, 1);
    check_events(p);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(streams, diamond_branches_split_and_join) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[32,32] name=\"x\"\n"
                           "%a = exp %x device=\"cuda:0\"\n"
                           "%b = sin %a device=\"cuda:0\"\n"
                           "%c = cos %a device=\"cuda:0\"\n"
                           "%d = add %b, %c device=\"cuda:0\"\n"
                           "output \"y\" = %d\n");
    braid_compile_options o = options("cpu,cuda:0", 4);
    braid_plan *p = ts_compile_ok(g, &o);
    uint32_t a = find_op(p, BRAID_OP_EXP, 0), b = find_op(p, BRAID_OP_SIN, 0),
             c = find_op(p, BRAID_OP_COS, 0), d = find_op(p, BRAID_OP_ADD, 0);
    cr_assert_eq(p->res.info[a].queue, p->res.info[b].queue, "b continues a");
    cr_assert_neq(p->res.info[b].queue, p->res.info[c].queue, "c branches off");
    cr_assert_eq(p->res.info[d].queue, p->res.info[b].queue, "d continues b");
    check_queues(p);
    check_events(p);
    /* One event joins the branches: c → d (plus copies' events). */
    uint32_t joins = 0;
    for (uint32_t e = 0; e < p->res.nevents; e++)
        joins += p->res.events[e].after == c && p->res.events[e].before == d;
    cr_assert_eq(joins, 1);
    char msg[256] = "";
    cr_assert(emulate_matches(g, p, 5, 3, msg, sizeof msg), "%s", msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A tensor split into parts (GPT-2's q, k, v of one product): every slice
 * stays on the producer's stream, so no event wraps a view; a real branch
 * (the exp of one part) may still take another stream. */
Test(streams, slices_stay_on_their_producers_stream) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[8,96] name=\"x\"\n"
                           "%a = tanh %x device=\"cuda:0\"\n"
                           "%q = slice %a start=[0,0] stop=[8,32] step=[1,1] "
                           "device=\"cuda:0\"\n"
                           "%k = slice %a start=[0,32] stop=[8,64] step=[1,1] "
                           "device=\"cuda:0\"\n"
                           "%v = slice %a start=[0,64] stop=[8,96] step=[1,1] "
                           "device=\"cuda:0\"\n"
                           "%e = exp %k device=\"cuda:0\"\n"
                           "%s = add %q, %e device=\"cuda:0\"\n"
                           "%t = mul %s, %v device=\"cuda:0\"\n"
                           "output \"y\" = %t\n");
    braid_compile_options o = options("cpu,cuda:0", 4);
    o.disable_passes = BRAID_PASS_FUSE; /* keep the slices as nodes */
    braid_plan *p = ts_compile_ok(g, &o);
    check_queues(p);
    check_events(p);
    uint32_t a = find_op(p, BRAID_OP_TANH, 0);
    for (uint32_t i = 0; i < 3; i++)
        cr_assert_eq(p->res.info[find_op(p, BRAID_OP_SLICE, i)].queue,
                     p->res.info[a].queue,
                     "slice %u left the producer's stream", i);
    char msg[256] = "";
    cr_assert(emulate_matches(g, p, 7, 3, msg, sizeof msg), "%s", msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(streams, copies_on_direction_streams) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[16,16] name=\"x\"\n"
                           "%y = input f32[16,16] name=\"y\"\n"
                           "%a = mul %x, %y device=\"cuda:0\"\n"
                           "%b = relu %a device=\"cpu\"\n"
                           "%c = add %b, %a device=\"cuda:0\"\n"
                           "output \"c\" = %c\n"
                           "output \"b\" = %b\n");
    braid_compile_options o = options("cpu,cuda:0", 2);
    braid_plan *p = ts_compile_ok(g, &o);
    check_queues(p);
    check_events(p);
    uint32_t h2d = 0, d2h = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (bg_node_at(p->res.graph, id)->op != BRAID_OP_COPY) continue;
        h2d += queue_of(p, id)->kind == BP_QUEUE_H2D;
        d2h += queue_of(p, id)->kind == BP_QUEUE_D2H;
    }
    cr_assert_eq(h2d, 3, "x, y and b go up");
    cr_assert_eq(d2h, 2, "a and c come down");
    char msg[256] = "";
    cr_assert(emulate_matches(g, p, 9, 3, msg, sizeof msg), "%s", msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(streams, d2d_between_two_gpus) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[16,16] name=\"x\"\n"
                           "%a = exp %x device=\"cuda:0\"\n"
                           "%b = tanh %a device=\"cuda:1\"\n"
                           "%c = sin %b device=\"cuda:0\"\n"
                           "output \"y\" = %c\n");
    braid_compile_options o = options("cpu,cuda:0,cuda:1", 2);
    braid_plan *p = ts_compile_ok(g, &o);
    check_queues(p);
    check_events(p);
    uint32_t d2d[2] = {0, 0};
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bp_queue *q = queue_of(p, id);
        if (bg_node_at(p->res.graph, id)->op != BRAID_OP_COPY ||
            q->kind != BP_QUEUE_D2D)
            continue;
        const bg_node *n = bg_node_at(p->res.graph, id);
        cr_assert(bp_device_equal(q->device, p->res.info[id].device),
                  "a D2D copy runs on its destination's D2D stream");
        cr_assert_eq(p->res.info[n->inputs[0]].device.kind, BP_DEVICE_CUDA);
        d2d[q->device.index]++;
    }
    cr_assert_eq(d2d[0], 1, "cuda:1 → cuda:0");
    cr_assert_eq(d2d[1], 1, "cuda:0 → cuda:1");
    char msg[256] = "";
    cr_assert(emulate_matches(g, p, 11, 3, msg, sizeof msg), "%s", msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(streams, cpu_only_plans_use_the_cpu_queue) {
    braid_graph *g = parse(branches);
    braid_compile_options o = options("cpu", 4);
    braid_plan *p = ts_compile_ok(g, &o);
    cr_assert_eq(p->res.nqueues, 1);
    cr_assert_eq(p->res.nevents, 0);
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        cr_assert_eq(p->res.info[id].queue, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(streams, golden) {
    static const char *const cases[] = {"branches", "diamond", "two_gpus",
                                        "chunked_rotation", "shared_input"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_golden(cases[i]);
}

/* More GPU work than the generator's hints give: about half of the
 * unhinted non-input nodes go to cuda:0. */
static void add_gpu_hints(braid_graph *g, uint64_t seed) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15u + 1;
    uint32_t n = braid_graph_node_count(g);
    for (uint32_t id = 0; id < n; id++) {
        const bg_node *nd = bg_node_at(g, id);
        if (nd->op == BRAID_OP_INPUT || nd->device || ts_rand_unit(&rng) < 0.5)
            continue;
        cr_assert_eq(braid_set_device(g, (braid_tensor){id}, "cuda:0"),
                     BRAID_OK);
    }
}

/* 300 random graphs with hints on cpu,cuda:0; 3 interleavings each. */
Test(streams, random_graphs_emulated_match_reference, .timeout = 600) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.device_hints = true;
    uint64_t gpu_nodes = 0, events = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        go.mixed_dtypes = seed % 2 == 1;
        go.max_nodes = seed % 3 == 0 ? 24 : 12;
        braid_graph *g = ts_random_graph(0x57AE0000u + seed, &go);
        cr_assert_eq(braid_graph_status(g), BRAID_OK);
        if (seed % 2 == 0) add_gpu_hints(g, seed);
        braid_compile_options o;
        braid_compile_options_init(&o);
        o.devices = "cpu,cuda:0";
        o.max_streams = 1 + (int)(seed % 4);
        o.archs = "none"; /* no ahead-of-time NVRTC build here */
        braid_plan *p = ts_compile_ok(g, &o);
        check_queues(p);
        check_events(p);
        for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
            gpu_nodes += p->res.info[id].device.kind == BP_DEVICE_CUDA;
        events += p->res.nevents;
        char msg[256] = "";
        bool ok = emulate_matches(g, p, seed, 3, msg, sizeof msg);
        if (!ok) {
            char *text = NULL;
            size_t len = 0;
            if (braid_graph_print(g, &text, &len) == BRAID_OK)
                cr_log_info("graph:\n%s", text);
            free(text);
        }
        cr_assert(ok, "seed %llu: %s", (unsigned long long)seed, msg);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    cr_log_info("300 graphs: %llu GPU nodes, %llu events",
                (unsigned long long)gpu_nodes, (unsigned long long)events);
    cr_assert_gt(gpu_nodes, 300, "the graphs exercise the GPU queues");
}
