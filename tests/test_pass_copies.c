/* tests/test_pass_copies.c — the copies pass: one copy node per (tensor,
 * destination device), outputs returned to the host.
 *
 * Golden cases: tests/golden/copies/<case>.graph is the input ("# devices:"
 * on a comment line picks the device list, default cpu,cuda:0);
 * <case>.expected is the plan's graph after compilation with the optional
 * graph-rewriting passes off: one line per node, "%id op device <- inputs",
 * then the outputs. Regenerate with BRAID_UPDATE_GOLDEN=1 and check the
 * diff by eye. A property test checks the pass's invariants on random
 * DAGs with random hints. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/copies/"
#define REWRITES_OFF (BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE | BRAID_PASS_CHUNK)

/* ---- harness ------------------------------------------------------------- */

static braid_plan *compile_with(const braid_graph *g, const char *devices) {
    braid_compile_options o = ts_compile_options(devices, REWRITES_OFF);
    return ts_compile_ok(g, &o);
}

/* The plan's graph, one line per node, then the outputs. */
static char *summary(const braid_plan *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    const braid_graph *g = p->res.graph;
    char dev[32];
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = bg_node_at(g, id);
        fprintf(f, "%%%u %s %s", (unsigned)id, bg_op(n->op)->name,
                bp_device_str(p->res.info[id].device, dev, sizeof dev));
        for (uint32_t k = 0; k < n->ninputs; k++)
            fprintf(f, "%s%%%u", k ? " " : " <- ", (unsigned)n->inputs[k]);
        fputc('\n', f);
    }
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        fprintf(f, "output \"%s\" = %%%u\n", p->res.outputs[i].name,
                (unsigned)p->res.outputs[i].node);
    fclose(f);
    return buf;
}

static braid_plan *golden(const char *name) {
    char *text, devices[128] = "cpu,cuda:0";
    braid_graph *g = ts_golden_graph(GOLDEN, name, &text);
    ts_directive(text, "# devices:", devices, sizeof devices);
    free(text);
    braid_plan *p = compile_with(g, devices);
    braid_graph_free(g);
    char *got = summary(p);
    ts_check_golden(GOLDEN, name, got);
    free(got);
    return p;
}

/* ---- the invariants ------------------------------------------------------ */

static bool listed(const braid_plan *p, bp_device d) {
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return true;
    return false;
}

/* The node a plan node reads through copies. */
static uint32_t through_copies(const braid_plan *p, uint32_t id) {
    while (bg_node_at(p->res.graph, id)->op == BRAID_OP_COPY)
        id = bg_node_at(p->res.graph, id)->inputs[0];
    return id;
}

static void check_copy(const braid_plan *p, uint32_t id, const char *what) {
    const bg_node *c = bg_node_at(p->res.graph, id);
    const bg_node *s = bg_node_at(p->res.graph, c->inputs[0]);
    cr_assert_eq(c->ninputs, 1, "%s: copy %%%u", what, (unsigned)id);
    cr_assert(!bp_device_equal(p->res.info[id].device,
                               p->res.info[c->inputs[0]].device),
              "%s: copy %%%u stays on its device", what, (unsigned)id);
    cr_assert_eq(p->res.info[id].origin, BG_NONE, "%s", what);
    cr_assert(c->dtype == s->dtype && c->rank == s->rank &&
                  !memcmp(c->dims, s->dims, sizeof c->dims),
              "%s: copy %%%u changes the type", what, (unsigned)id);
    for (uint32_t j = 0; j < id; j++) {
        const bg_node *o = bg_node_at(p->res.graph, j);
        cr_assert(
            !(o->op == BRAID_OP_COPY && o->inputs[0] == c->inputs[0] &&
              bp_device_equal(p->res.info[j].device, p->res.info[id].device)),
            "%s: copies %%%u and %%%u of one tensor to one device", what,
            (unsigned)j, (unsigned)id);
    }
}

/* Every plan invariant the copies pass promises, and that stripping the
 * copies gives back user graph `u` (simplify off: same nodes, same edges,
 * hints honoured). */
static void check_plan(const braid_plan *p, const braid_graph *u,
                       const char *what) {
    const braid_graph *g = p->res.graph;
    bp_device cpu = {BP_DEVICE_CPU, 0};
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = bg_node_at(g, id);
        cr_assert(listed(p, p->res.info[id].device), "%s: %%%u", what,
                  (unsigned)id);
        for (uint32_t k = 0; k < n->ninputs; k++)
            cr_assert_lt(n->inputs[k], id, "%s: ids not topological", what);
        if (n->op == BRAID_OP_COPY) {
            check_copy(p, id, what);
            continue;
        }
        for (uint32_t k = 0; k < n->ninputs; k++)
            cr_assert(bp_device_equal(p->res.info[n->inputs[k]].device,
                                      p->res.info[id].device),
                      "%s: %%%u reads input %u from another device", what,
                      (unsigned)id, (unsigned)k);
        uint32_t o = p->res.info[id].origin;
        cr_assert_lt(o, u->nnodes, "%s", what);
        const bg_node *un = bg_node_at(u, o);
        cr_assert_eq(n->op, un->op, "%s", what);
        cr_assert_eq(n->ninputs, un->ninputs, "%s", what);
        for (uint32_t k = 0; k < n->ninputs; k++)
            cr_assert_eq(p->res.info[through_copies(p, n->inputs[k])].origin,
                         un->inputs[k], "%s: %%%u input %u", what, (unsigned)id,
                         (unsigned)k);
        bool host_data = n->op == BRAID_OP_INPUT || n->op == BRAID_OP_CONSTANT;
        char dev[32];
        if (un->device && !host_data && p->in.devs.ndevices > 1)
            cr_assert_str_eq(
                bp_device_str(p->res.info[id].device, dev, sizeof dev),
                un->device, "%s: hint of %%%u", what, (unsigned)o);
    }
    cr_assert_eq(p->res.noutputs, u->noutputs, "%s", what);
    for (uint32_t i = 0; i < p->res.noutputs; i++) {
        uint32_t id = p->res.outputs[i].node;
        cr_assert_eq(id, g->outputs[i].node, "%s", what);
        cr_assert(bp_device_equal(p->res.info[id].device, cpu),
                  "%s: output %s not on the host", what,
                  p->res.outputs[i].name);
        cr_assert_eq(p->res.info[through_copies(p, id)].origin,
                     u->outputs[i].node, "%s", what);
    }
}

static int count_op(const braid_plan *p, braid_op op) {
    int k = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        k += bg_node_at(p->res.graph, id)->op == op;
    return k;
}

/* ---- cases --------------------------------------------------------------- */

Test(copies, one_copy_per_tensor_and_destination) {
    braid_plan *p = golden("shared_copy");
    /* x up once for three readers; s and c down */
    cr_assert_eq(count_op(p, BRAID_OP_COPY), 3);
    braid_plan_free(p);
}

Test(copies, gpu_output_comes_back_through_one_copy) {
    braid_plan *p = golden("gpu_output");
    uint32_t y = p->res.outputs[0].node;
    cr_assert_eq(bg_node_at(p->res.graph, y)->op, BRAID_OP_COPY);
    cr_assert_eq(p->res.info[y].device.kind, BP_DEVICE_CPU);
    cr_assert_eq(p->res.outputs[1].node, y, "both names read the same copy");
    /* the cpu sum reads that copy too */
    uint32_t s = through_copies(p, p->res.outputs[2].node);
    cr_assert_eq(bg_node_at(p->res.graph, s)->inputs[0], y);
    cr_assert_eq(count_op(p, BRAID_OP_COPY), 2, "x up, m down");
    braid_plan_free(p);
}

Test(copies, gpu_to_gpu_copy) {
    braid_plan *p = golden("d2d");
    int d2d = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (n->op != BRAID_OP_COPY) continue;
        bp_device from = p->res.info[n->inputs[0]].device,
                  to = p->res.info[id].device;
        d2d += from.kind == BP_DEVICE_CUDA && from.index == 0 &&
               to.kind == BP_DEVICE_CUDA && to.index == 1;
    }
    cr_assert_eq(d2d, 1);
    cr_assert_eq(count_op(p, BRAID_OP_COPY), 3);
    braid_plan_free(p);
}

Test(copies, nothing_to_copy_on_the_cpu_alone) {
    braid_plan *p = golden("all_cpu");
    cr_assert_eq(count_op(p, BRAID_OP_COPY), 0);
    braid_plan_free(p);
}

Test(copies, each_crossing_is_a_copy) {
    braid_plan *p = golden("back_and_forth");
    /* x→gpu, a→cpu, b→gpu, c→cpu */
    cr_assert_eq(count_op(p, BRAID_OP_COPY), 4);
    braid_plan_free(p);
}

/* Random DAGs with random "cpu"/"cuda:0" hints, small and larger shapes,
 * for two device lists: every invariant holds and stripping the copies
 * gives back the user's graph. */
static void random_plans(uint64_t seed0, int count, int64_t max_dim,
                         const char *devices) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    o.max_nodes = 16;
    o.max_dim = max_dim;
    o.max_rank = max_dim > 8 ? 3 : 4;
    int with_copies = 0;
    for (int i = 0; i < count; i++) {
        braid_graph *g = ts_random_graph(seed0 + (uint64_t)i, &o);
        char what[96];
        snprintf(what, sizeof what, "seed %llu on %s",
                 (unsigned long long)(seed0 + (uint64_t)i), devices);
        braid_plan *p = compile_with(g, devices);
        check_plan(p, g, what);
        with_copies += count_op(p, BRAID_OP_COPY) > 0;
        braid_plan_free(p);
        braid_graph_free(g);
    }
    cr_log_info("%s, dims ≤ %lld: %d of %d plans have copies", devices,
                (long long)max_dim, with_copies, count);
    if (strchr(devices, ','))
        cr_assert_gt(with_copies, count / 4, "the hints should force copies");
}

Test(copies, random_dags_small_shapes) {
    random_plans(5000, 300, 6, "cpu,cuda:0");
}

Test(copies, random_dags_large_shapes) {
    random_plans(6000, 200, 192, "cpu,cuda:0");
}

Test(copies, random_dags_two_gpus) {
    random_plans(7000, 200, 64, "cpu,cuda:0,cuda:1");
}

Test(copies, random_dags_cpu_only) {
    random_plans(8000, 200, 6, "cpu");
}

/* Values: plans with copies, run by the emulated executor (every device's
 * memory is host memory, copies are memcpy, queues interleave at random),
 * match the reference on the user's graph. */
Test(copies, plans_with_copies_compute_the_reference_values) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    o.max_nodes = 12;
    int with_copies = 0;
    for (uint64_t seed = 9000; seed < 9150; seed++) {
        braid_graph *g = ts_random_graph(seed, &o);
        braid_plan *p = compile_with(g, "cpu,cuda:0");
        with_copies += count_op(p, BRAID_OP_COPY) > 0;
        ts_io *io = ts_io_new(g, seed);
        cr_assert(io);
        braid_exec *e = NULL;
        cr_assert_eq(br_exec_new_emulated(p, seed, &e), BRAID_OK,
                     "seed %llu: %s", (unsigned long long)seed,
                     braid_last_error());
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "seed %llu: %s", (unsigned long long)seed,
                     braid_last_error());
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK, "%s", braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "seed %llu: %s",
                  (unsigned long long)seed, msg);
        braid_exec_free(e);
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    cr_assert_gt(with_copies, 50);
}
