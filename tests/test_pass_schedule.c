/* tests/test_pass_schedule.c — the schedule pass: one global issue order.
 *
 * The order is a topological permutation with info.order matching; every
 * queue's induced order runs to completion under the plan's events (no
 * deadlock in the emulator); transfers start early (an H2D copy right after
 * its input, a D2H copy right after its producer); a chunked chain issues
 * as a software pipeline (h2d0 h2d1 k0 d2h0 h2d2 k1 d2h1 ...); on a wide
 * graph written breadth first the peak of live bytes is well below that of
 * plain id order.
 *
 * Golden cases: tests/golden/schedule/<case>.graph is the input ("#
 * devices:" and "# options:" comment lines as in test_pass_streams.c);
 * <case>.expected is bp_plan_dump after the schedule pass followed by the
 * issue order ("# schedule: %a %b ..."). Regenerate with
 * BRAID_UPDATE_GOLDEN=1 and check the diff by eye. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/schedule/"

/* ---- harness ------------------------------------------------------------- */

static braid_graph *parse(const char *text) {
    return ts_parse_ok(text, "test");
}

static braid_compile_options options(const char *devices, int chunks) {
    braid_compile_options o =
        ts_compile_options(devices, BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE);
    o.chunks = chunks;
    return o;
}

/* After the dump: the issue order. */
static void put_schedule(FILE *f, const braid_plan *p) {
    fprintf(f, "# schedule:");
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        fprintf(f, " %%%u", p->res.schedule[i]);
    fprintf(f, "\n");
}

static void check_golden(const char *name) {
    braid_compile_options base = options("cpu,cuda:0", 1);
    ts_check_dump_case(GOLDEN, name, &base, "schedule", put_schedule);
}

/* ---- invariants ------------------------------------------------------------ */

/* A permutation of the nodes, inputs first, info.order its inverse. */
static void check_topological(const braid_plan *p) {
    uint32_t n = p->res.graph->nnodes;
    cr_assert_eq(p->res.nschedule, n);
    int64_t *pos = malloc((n ? n : 1) * sizeof *pos);
    cr_assert(pos);
    for (uint32_t i = 0; i < n; i++) pos[i] = -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = p->res.schedule[i];
        cr_assert_lt(id, n);
        cr_assert_eq(pos[id], -1, "node %u scheduled twice", id);
        pos[id] = i;
        cr_assert_eq(p->res.info[id].order, i);
        const bg_node *nd = bg_node_at(p->res.graph, id);
        for (uint32_t k = 0; k < nd->ninputs; k++)
            cr_assert(pos[nd->inputs[k]] >= 0, "node %u before its input %u",
                      id, nd->inputs[k]);
    }
    free(pos);
}

/* Every queue's order together with the events can run to completion:
 * repeatedly run any queue head whose event producers are done. */
static void check_queues_complete(const braid_plan *p) {
    uint32_t n = p->res.graph->nnodes, nq = p->res.nqueues;
    uint32_t *next = calloc(nq, sizeof *next);
    bool *done = calloc(n ? n : 1, sizeof *done);
    cr_assert(next && done);
    for (uint32_t left = n; left > 0;) {
        bool progress = false;
        for (uint32_t q = 0; q < nq; q++) {
            /* the queue's next node: first not-done node of q in order */
            while (next[q] < n &&
                   (p->res.info[p->res.schedule[next[q]]].queue != q ||
                    done[p->res.schedule[next[q]]]))
                next[q]++;
            if (next[q] == n) continue;
            uint32_t id = p->res.schedule[next[q]];
            bool ready = true;
            for (uint32_t e = 0; e < p->res.nevents; e++)
                if (p->res.events[e].before == id &&
                    !done[p->res.events[e].after])
                    ready = false;
            if (!ready) continue;
            done[id] = true;
            left--;
            progress = true;
        }
        cr_assert(progress, "queues deadlock with %u nodes left", left);
    }
    free(next);
    free(done);
}

/* Peak of live bytes over an order: a tensor lives from its producer to
 * its last reader (outputs to the end); inputs and constants are the
 * caller's / plan's memory and do not count. */
static uint64_t peak_bytes(const braid_plan *p, const uint32_t *order) {
    uint32_t n = p->res.graph->nnodes;
    uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
    uint32_t *last = malloc((n ? n : 1) * sizeof *last);
    int64_t *delta = calloc((size_t)n + 2, sizeof *delta);
    cr_assert(pos && last && delta);
    for (uint32_t i = 0; i < n; i++) pos[order[i]] = i;
    for (uint32_t i = 0; i < n; i++) last[i] = pos[i];
    for (uint32_t id = 0; id < n; id++) {
        const bg_node *nd = bg_node_at(p->res.graph, id);
        for (uint32_t k = 0; k < nd->ninputs; k++)
            if (pos[id] > last[nd->inputs[k]]) last[nd->inputs[k]] = pos[id];
    }
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        last[p->res.outputs[i].node] = n;
    for (uint32_t id = 0; id < n; id++) {
        braid_op op = bg_node_at(p->res.graph, id)->op;
        if (op == BRAID_OP_INPUT || op == BRAID_OP_CONSTANT) continue;
        int64_t b = (int64_t)bg_nbytes(bg_node_at(p->res.graph, id));
        delta[pos[id]] += b;
        delta[last[id] + 1] -= b;
    }
    int64_t live = 0, peak = 0;
    for (uint32_t i = 0; i <= n; i++) {
        live += delta[i];
        if (live > peak) peak = live;
    }
    free(pos);
    free(last);
    free(delta);
    return (uint64_t)peak;
}

static uint32_t position(const braid_plan *p, uint32_t id) {
    return p->res.info[id].order;
}

/* The id of the nth node with op (in id order). */
static uint32_t find_op(const braid_plan *p, braid_op op, uint32_t nth) {
    uint32_t want = nth;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (bg_node_at(p->res.graph, id)->op == op && nth-- == 0) return id;
    cr_assert_fail("no %s #%u", bg_op(op)->name, want);
    return 0;
}

/* ---- tests ----------------------------------------------------------------------- */

Test(schedule, random_graphs_topological_and_complete) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.device_hints = true;
    for (uint64_t seed = 0; seed < 200; seed++) {
        go.max_nodes = 8 + (int)(seed % 24);
        braid_graph *g = ts_random_graph(0x5C4Eu + seed, &go);
        braid_compile_options o = options(seed % 3 ? "cpu,cuda:0" : "cpu", 0);
        o.max_streams = 1 + (int)(seed % 3);
        braid_plan *p = ts_compile_ok(g, &o);
        check_topological(p);
        check_queues_complete(p);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(schedule, h2d_copy_issued_right_after_its_input) {
    /* A long cpu chain written first, then a GPU op on the second input:
     * id order would issue the upload after the whole chain. */
    char text[2048];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "braid-graph 1\n"
                                  "%%x = input f32[64,64] name=\"x\"\n"
                                  "%%y = input f32[64,64] name=\"y\"\n"
                                  "%%c0 = exp %%x device=\"cpu\"\n");
    for (int i = 1; i < 10; i++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%%c%d = sin %%c%d device=\"cpu\"\n", i, i - 1);
    snprintf(text + len, sizeof text - len,
             "%%g = tanh %%y device=\"cuda:0\"\n"
             "output \"a\" = %%c9\n"
             "output \"b\" = %%g\n");
    braid_graph *g = parse(text);
    braid_compile_options o = options("cpu,cuda:0", 1);
    braid_plan *p = ts_compile_ok(g, &o);
    check_topological(p);
    uint32_t up = BG_NONE, down = BG_NONE, y = BG_NONE, tanh_id = BG_NONE;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (n->op == BRAID_OP_COPY &&
            p->res.info[id].device.kind == BP_DEVICE_CUDA)
            up = id;
        if (n->op == BRAID_OP_COPY &&
            p->res.info[id].device.kind == BP_DEVICE_CPU)
            down = id;
        if (n->op == BRAID_OP_INPUT && !strcmp(n->name, "y")) y = id;
        if (n->op == BRAID_OP_TANH) tanh_id = id;
    }
    cr_assert(up != BG_NONE && down != BG_NONE && y != BG_NONE);
    cr_assert_eq(position(p, up), position(p, y) + 1,
                 "the upload follows its input at once (%u vs %u)",
                 position(p, up), position(p, y));
    cr_assert_lt(position(p, up), position(p, find_op(p, BRAID_OP_SIN, 0)));
    cr_assert_eq(position(p, down), position(p, tanh_id) + 1,
                 "the download follows its producer at once");
    check_queues_complete(p);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The chunk index of a chunk node of a 4-chunk chain over rows 0..63:
 * found through the slice it descends from. */
static int chunk_of(const braid_plan *p, uint32_t id) {
    for (;;) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (n->op == BRAID_OP_SLICE) return (int)(n->attr.start[0] / 16);
        if (n->ninputs == 0) return -1;
        id = n->inputs[0];
    }
}

Test(schedule, chunked_chain_is_a_software_pipeline) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[64,32] name=\"x\"\n"
                           "%s = sin %x device=\"cuda:0\"\n"
                           "%c = cos %x device=\"cuda:0\"\n"
                           "%a = add %s, %c device=\"cuda:0\"\n"
                           "%q = sqrt %a device=\"cuda:0\"\n"
                           "output \"y\" = %q\n");
    braid_compile_options o = options("cpu,cuda:0", 4);
    braid_plan *p = ts_compile_ok(g, &o);
    check_topological(p);
    /* Collapse the order into stages: H<k> upload, K<k> compute (once per
     * run of a chunk's GPU nodes), D<k> download. */
    char seq[256] = "", last[8] = "";
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (!p->res.info[id].chunk || n->op == BRAID_OP_SLICE ||
            n->op == BRAID_OP_CONCAT)
            continue;
        char st[8];
        bool gpu = p->res.info[id].device.kind == BP_DEVICE_CUDA;
        char kind = n->op == BRAID_OP_COPY ? (gpu ? 'H' : 'D') : 'K';
        snprintf(st, sizeof st, "%c%d", kind, chunk_of(p, id));
        if (kind == 'K' && !strcmp(st, last)) continue;
        snprintf(last, sizeof last, "%s", st);
        strncat(seq, st, sizeof seq - strlen(seq) - 1);
        strncat(seq, " ", sizeof seq - strlen(seq) - 1);
    }
    cr_assert_str_eq(seq, "H0 H1 K0 D0 H2 K1 D1 H3 K2 D2 K3 D3 ");
    check_queues_complete(p);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* width branches x_i → a_i → b_i → c_i written breadth first, summed. */
static braid_graph *wide_graph(int width, const char *device) {
    size_t cap = 256 * (size_t)width + 1024, len = 0;
    char *t = malloc(cap);
    cr_assert(t);
    len += (size_t)snprintf(t + len, cap - len, "braid-graph 1\n");
    for (int i = 0; i < width; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "%%x%d = input f32[64,64] name=\"x%d\"\n", i, i);
    static const char *const ops[] = {"exp", "sin", "tanh"};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < width; i++)
            len += (size_t)snprintf(t + len, cap - len,
                                    "%%%c%d = %s %%%c%d device=\"%s\"\n",
                                    'a' + s, i, ops[s], s ? 'a' + s - 1 : 'x',
                                    i, device);
    len += (size_t)snprintf(t + len, cap - len,
                            "%%s0 = add %%c0, %%c1 device=\"%s\"\n", device);
    for (int i = 2; i < width; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "%%s%d = add %%s%d, %%c%d device=\"%s\"\n",
                                i - 1, i - 2, i, device);
    snprintf(t + len, cap - len, "output \"y\" = %%s%d\n", width - 2);
    braid_graph *g = parse(t);
    free(t);
    return g;
}

Test(schedule, wide_graph_peak_below_id_order) {
    for (int dev = 0; dev < 2; dev++) {
        braid_graph *g = wide_graph(16, dev ? "cuda:0" : "cpu");
        braid_compile_options o = options(dev ? "cpu,cuda:0" : "cpu", 1);
        braid_plan *p = ts_compile_ok(g, &o);
        check_topological(p);
        uint32_t n = p->res.graph->nnodes;
        uint32_t *ids = malloc(n * sizeof *ids);
        cr_assert(ids);
        for (uint32_t i = 0; i < n; i++) ids[i] = i;
        uint64_t naive = peak_bytes(p, ids),
                 ours = peak_bytes(p, p->res.schedule);
        cr_log_info("%s: peak live bytes %llu scheduled vs %llu in id order",
                    dev ? "cuda:0" : "cpu", (unsigned long long)ours,
                    (unsigned long long)naive);
        cr_assert_lt(ours * 3, naive, "the scheduler keeps a third or less");
        free(ids);
        check_queues_complete(p);
        char msg[256] = "";
        ts_io *io = ts_io_new(g, 3);
        cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK);
        braid_exec *e = NULL;
        cr_assert_eq(br_exec_new_emulated(p, 3, &e), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK);
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
        braid_exec_free(e);
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* A large graph schedules in about linear time: 8× the nodes take well
 * under 8² × the time (a generous bound for noisy machines). Process CPU
 * time: the wall clock of a loaded machine failed it at random. */
static double schedule_seconds(int width) {
    braid_graph *g = wide_graph(width, "cpu");
    braid_compile_options o = options("cpu", 1);
    braid_plan *p = ts_compile_ok(g, &o);
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(bp_schedule(p), BRAID_OK, "%s", braid_last_error());
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    check_topological(p);
    braid_plan_free(p);
    braid_graph_free(g);
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

Test(schedule, scales_near_linearly) {
    double small = schedule_seconds(250), big = schedule_seconds(2000);
    cr_log_info("schedule: %.2f ms for ~1000 nodes, %.2f ms for ~8000",
                small * 1e3, big * 1e3);
    cr_assert_lt(big, small * 24 + 0.05);
}

Test(schedule, golden) {
    static const char *const cases[] = {"transfers_early", "pipeline",
                                        "wide", "join_on_cpu"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_golden(cases[i]);
}
