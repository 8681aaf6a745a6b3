/* tests/test_pass_memory.c — the memory pass (passes/memory*.c).
 *
 * Explicit cases: reuse along a chain, in-place elementwise (and where it
 * must not happen), views (reshape, contiguous slice, concat assembled in
 * place), GPU constants, reuse across streams only under happens-before
 * (with hand-made queue assignments, so the cases do not depend on the
 * streams pass's choices), reuse events, BRAID_PASS_REUSE off, the pinned
 * staging arena, and the arena / lower-bound ratio of every example and
 * bench graph. Every plan is also run (natively on the cpu, emulated for
 * GPU plans) against the reference evaluator.
 *
 * Golden cases: tests/golden/memory/<case>.graph is the input ("# devices:
 * LIST", "# disable: reuse" and "# streams: N" comment lines set options;
 * simplify, fuse and chunk are always off so every op stays visible);
 * <case>.expected lists the arenas, every node's place in schedule order
 * and the reuse events. Regenerate with BRAID_UPDATE_GOLDEN=1 and check the
 * diff by eye. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "examples/mlp_build.h"
#include "passes/layout.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/memory/"
#define OFF (BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE | BRAID_PASS_CHUNK)

/* ---- harness --------------------------------------------------------------- */

static braid_graph *parse(const char *text) {
    return ts_parse_ok(text, "test");
}

static braid_plan *compile(const braid_graph *g, const char *devices,
                           unsigned disable, int streams) {
    braid_compile_options o = ts_compile_options(devices, disable);
    o.max_streams = streams;
    o.num_threads = 2;
    return ts_compile_ok(g, &o);
}

static uint32_t node_of(const bp_plan *p, uint32_t origin) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.info[id].origin == origin) return id;
    cr_assert_fail("graph node %u is not in the plan", origin);
    return BG_NONE;
}

static const bp_tensor_place *place_of(const bp_plan *p, uint32_t origin) {
    return &p->res.info[node_of(p, origin)].place;
}

/* Runs p (natively, or emulated under seeds 1..nseeds) and compares with
 * the reference evaluator on g. */
static void check_values(const braid_graph *g, const bp_plan *p, int nseeds) {
    ts_check_plan(g, p, nseeds, 42);
}

/* Two arena tensors share at least one byte. */
static bool share(const bp_tensor_place *a, const bp_tensor_place *b) {
    return a->storage == BP_STORAGE_ARENA && b->storage == BP_STORAGE_ARENA &&
           a->arena == b->arena && a->bytes > 0 && b->bytes > 0 &&
           a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
}

static uint32_t reuse_events(const bp_plan *p) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < p->res.nevents; k++)
        n += p->res.events[k].reuse;
    return n;
}

static const bp_arena *device_arena(const bp_plan *p, bp_device_kind kind) {
    for (uint32_t a = 0; a < p->res.narenas; a++)
        if (p->res.arenas[a].kind == BP_ARENA_DEVICE &&
            p->res.arenas[a].device.kind == kind)
            return &p->res.arenas[a];
    return NULL;
}

/* ---- reuse and in place ------------------------------------------------------ */

/* Matmuls cannot work in place, so a chain needs two buffers (the tanh
 * between them works in place). */
Test(memory, chain_reuses_two_buffers) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[64,64] name=\"x\"\n"
                           "%a = matmul %x, %x : f32[64,64]\n"
                           "%ta = tanh %a : f32[64,64]\n"
                           "%b = matmul %ta, %ta : f32[64,64]\n"
                           "%tb = tanh %b : f32[64,64]\n"
                           "%c = matmul %tb, %tb : f32[64,64]\n"
                           "%tc = tanh %c : f32[64,64]\n"
                           "output \"y\" = %tc\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    const bp_arena *a = device_arena(p, BP_DEVICE_CPU);
    cr_assert_not_null(a);
    cr_assert_eq(a->bytes, 2 * 16384, "arena %llu", (unsigned long long)a->bytes);
    cr_assert_eq(a->lower_bound, 2 * 16384);
    cr_assert(!share(place_of(p, 1), place_of(p, 3)));
    cr_assert(share(place_of(p, 1), place_of(p, 5)), "a's bytes not reused");
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Each elementwise op overwrites its dead input: one buffer. */
Test(memory, elementwise_chain_in_place) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[1000] name=\"x\"\n"
                           "%a = exp %x : f32[1000]\n"
                           "%b = tanh %a : f32[1000]\n"
                           "%c = cast %b to=i32 : i32[1000]\n"
                           "%d = neg %c : i32[1000]\n"
                           "output \"y\" = %d\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    for (uint32_t k = 2; k <= 4; k++)
        cr_assert_eq(place_of(p, k)->offset, place_of(p, 1)->offset,
                     "node %u not in place", k);
    cr_assert_eq(device_arena(p, BP_DEVICE_CPU)->bytes, 4032);
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Not in place: over a tensor read later, over a broadcast input, over a
 * graph input, and casts to the same dtype (a memcpy). */
Test(memory, in_place_only_when_legal) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[32,32] name=\"x\"\n"
                           "%m = matmul %x, %x : f32[32,32]\n"
                           "%e = exp %m : f32[32,32]\n"
                           "%z = add %e, %m : f32[32,32]\n"
                           "%r = sum %x axes=[0] keepdims : f32[1,32]\n"
                           "%b = mul %z, %r : f32[32,32]\n"
                           "%n = neg %x : f32[32,32]\n"
                           "%s = add %b, %n : f32[32,32]\n"
                           "output \"y\" = %s\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    cr_assert(!share(place_of(p, 2), place_of(p, 1)), "exp over a live m");
    cr_assert(share(place_of(p, 3), place_of(p, 2)) ||
                  share(place_of(p, 3), place_of(p, 1)),
              "add not in place over e or m");
    cr_assert(!share(place_of(p, 5), place_of(p, 4)), "mul over broadcast r");
    cr_assert_eq(place_of(p, 5)->offset, place_of(p, 3)->offset);
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- views ----------------------------------------------------------------------- */

Test(memory, views) {
    braid_graph *g = parse(
        "braid-graph 1\n"
        "%x = input f32[8,16] name=\"x\"\n"
        "%e = exp %x : f32[8,16]\n"
        "%r = reshape %e shape=[16,8] : f32[16,8]\n"
        "%s = slice %r start=[2,0] stop=[6,8] step=[1,1] : f32[4,8]\n"
        "%t = slice %r start=[0,1] stop=[16,3] step=[1,1] : f32[16,2]\n"
        "%u = tanh %s : f32[4,8]\n"
        "%v = sin %t : f32[16,2]\n"
        "%xr = reshape %x shape=[128] : f32[128]\n"
        "%o = slice %xr start=[5] stop=[9] step=[1] : f32[4]\n"
        "%p = permute %s perm=[1,0] : f32[8,4]\n"
        "%oe = exp %o : f32[4]\n"
        "output \"u\" = %u\n"
        "output \"v\" = %v\n"
        "output \"o\" = %oe\n"
        "output \"p\" = %p\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    uint32_t e = node_of(p, 1), x = node_of(p, 0);
    const bp_tensor_place *r = place_of(p, 2), *s = place_of(p, 3);
    cr_assert_eq(r->storage, BP_STORAGE_VIEW);
    cr_assert_eq(r->base, e);
    cr_assert_eq(r->offset, 0);
    cr_assert(p->res.info[node_of(p, 2)].noop);
    cr_assert_eq(s->storage, BP_STORAGE_VIEW, "contiguous slice copied");
    cr_assert_eq(s->base, e, "view base not resolved to the owner");
    cr_assert_eq(s->offset, 2 * 8 * 4);
    /* a strided slice read by an elementwise node: a strided view */
    const bp_tensor_place *t = place_of(p, 4);
    cr_assert_eq(t->storage, BP_STORAGE_VIEW, "strided slice");
    cr_assert(p->res.info[node_of(p, 4)].noop);
    cr_assert_eq(t->base, e);
    cr_assert_eq(t->offset, 4);
    const int64_t *ts = bp_layout_of(p, node_of(p, 4));
    cr_assert(ts && ts[0] == 8 && ts[1] == 1, "strides of the column slice");
    cr_assert_eq(place_of(p, 8)->storage, BP_STORAGE_VIEW);
    cr_assert_eq(place_of(p, 8)->base, x, "view of an input");
    cr_assert_eq(place_of(p, 8)->offset, 20);
    cr_assert_eq(place_of(p, 9)->storage, BP_STORAGE_ARENA, "real permute");
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* An output that is a reshape of an input gets bytes of its own: the
 * caller may bind another output over the input's buffer, and outputs are
 * copied out after the run. */
Test(memory, output_never_views_an_input) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[4] name=\"x\"\n"
                           "%a = neg %x : f32[4]\n"
                           "%b = reshape %x shape=[2,2] : f32[2,2]\n"
                           "%c = reshape %x shape=[4,1] : f32[4,1]\n"
                           "%d = exp %c : f32[4,1]\n"
                           "output \"a\" = %a\n"
                           "output \"b\" = %b\n"
                           "output \"d\" = %d\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    cr_assert_eq(place_of(p, 2)->storage, BP_STORAGE_ARENA);
    cr_assert_eq(place_of(p, 3)->storage, BP_STORAGE_VIEW, "not an output");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    float x[4] = {1, 2, 3, 4}, b[4], d[4];
    braid_input_binding in = {"x", x, sizeof x};
    braid_output_binding out[3] = {
        {"a", x, sizeof x}, {"b", b, sizeof b}, {"d", d, sizeof d}};
    cr_assert_eq(braid_run(e, &in, 1, out, 3), BRAID_OK, "%s",
                 braid_last_error());
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(x[i], -(float)(i + 1), 0, "a[%d]", i);
        cr_assert_float_eq(b[i], (float)(i + 1), 0, "b[%d]", i);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

static const char *const CONCATS =
    "braid-graph 1\n"
    "%x = input f32[8,16] name=\"x\"\n"
    "%a = neg %x : f32[8,16]\n"
    "%b = abs %x : f32[8,16]\n"
    "%c = concat %a, %b axis=0 : f32[16,16]\n" /* in place */
    "%d = exp %c : f32[16,16]\n"
    "%r = reshape %x shape=[1,128] : f32[1,128]\n"
    "%f = sin %r : f32[1,128]\n"
    "%h = cos %r : f32[1,128]\n"
    "%j = concat %f, %h axis=1 : f32[1,256]\n" /* in place: leading dim 1 */
    "%k = tanh %x : f32[8,16]\n"
    "%l = sqrt %b : f32[8,16]\n"
    "%m = concat %k, %k axis=0 : f32[16,16]\n" /* k twice: copied */
    "%n = concat %k, %x axis=1 : f32[8,32]\n"  /* axis 1 of 8 rows */
    "output \"d\" = %d\n"
    "output \"j\" = %j\n"
    "output \"l\" = %l\n"
    "output \"m\" = %m\n"
    "output \"n\" = %n\n";

Test(memory, concat_in_place) {
    braid_graph *g = parse(CONCATS);
    bp_plan *p = compile(g, "cpu", OFF, 0);
    /* c: b is also read by l, so not in place */
    cr_assert_eq(place_of(p, 3)->storage, BP_STORAGE_ARENA);
    cr_assert(!p->res.info[node_of(p, 3)].noop);
    /* j: f and h computed into its bytes */
    uint32_t j = node_of(p, 8);
    cr_assert(p->res.info[j].noop, "concat j not assembled in place");
    cr_assert_eq(place_of(p, 6)->storage, BP_STORAGE_VIEW);
    cr_assert_eq(place_of(p, 6)->base, j);
    cr_assert_eq(place_of(p, 6)->offset, 0);
    cr_assert_eq(place_of(p, 7)->base, j);
    cr_assert_eq(place_of(p, 7)->offset, 512);
    cr_assert(!p->res.info[node_of(p, 6)].noop, "f must still run");
    cr_assert(!p->res.info[node_of(p, 11)].noop, "m reads k twice");
    cr_assert(!p->res.info[node_of(p, 12)].noop, "n joins rows");
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(memory, concat_in_place_when_inputs_are_private) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[8,16] name=\"x\"\n"
                           "%a = neg %x : f32[8,16]\n"
                           "%b = abs %x : f32[8,16]\n"
                           "%c = concat %a, %b axis=0 : f32[16,16]\n"
                           "%e = exp %x : f32[8,16]\n"
                           "%f = concat %c, %e axis=0 : f32[24,16]\n"
                           "output \"f\" = %f\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    uint32_t f = node_of(p, 5);
    cr_assert(p->res.info[f].noop);
    cr_assert(p->res.info[node_of(p, 3)].noop, "inner concat not in place");
    cr_assert_eq(place_of(p, 1)->base, f, "nested view not at the root");
    cr_assert_eq(place_of(p, 2)->offset, 512);
    cr_assert_eq(place_of(p, 4)->offset, 1024);
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The same graphs on cpu,cuda:0 with everything on the GPU: views stay on
 * their device, the plan runs correctly under the emulator. */
Test(memory, views_on_the_gpu) {
    braid_graph *g = parse(
        "braid-graph 1\n"
        "%x = input f32[8,16] name=\"x\"\n"
        "%a = neg %x device=\"cuda:0\" : f32[8,16]\n"
        "%b = abs %x device=\"cuda:0\" : f32[8,16]\n"
        "%c = concat %a, %b axis=0 device=\"cuda:0\" : f32[16,16]\n"
        "%r = reshape %c shape=[256] device=\"cuda:0\" : f32[256]\n"
        "%s = slice %r start=[16] stop=[48] step=[1] device=\"cuda:0\" : "
        "f32[32]\n"
        "%t = exp %s : f32[32]\n"
        "output \"t\" = %t\n");
    bp_plan *p = compile(g, "cpu,cuda:0", OFF, 0);
    uint32_t c = node_of(p, 3);
    cr_assert_eq(p->res.info[c].device.kind, BP_DEVICE_CUDA);
    cr_assert(p->res.info[c].noop);
    cr_assert_eq(place_of(p, 5)->storage, BP_STORAGE_VIEW);
    cr_assert_eq(place_of(p, 5)->base, c);
    cr_assert_eq(place_of(p, 5)->offset, 64);
    check_values(g, p, 3);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* One data event per cross-queue edge (and no other events); the
 * schedule in id order. */
static void data_events(bp_plan *p) {
    uint32_t n = p->res.graph->nnodes;
    free(p->res.events);
    p->res.events = calloc(n * 3 + 1, sizeof *p->res.events);
    p->res.nevents = 0;
    for (uint32_t id = 0; id < n; id++) {
        const bg_node *nd = &p->res.graph->nodes[id];
        for (uint32_t j = 0; j < nd->ninputs; j++)
            if (p->res.info[nd->inputs[j]].queue != p->res.info[id].queue &&
                (j == 0 || nd->inputs[j] != nd->inputs[0]))
                p->res.events[p->res.nevents++] =
                    (bp_event){nd->inputs[j], id, false};
    }
}

/* A constant on the GPU (the place pass keeps constants on the host, so
 * the plan is edited: the copy is dropped and the constant moved) is
 * uploaded at executor creation: ARENA, no work, and no other tensor ever
 * touches its bytes. */
Test(memory, gpu_constant_keeps_its_bytes) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[4] name=\"x\"\n"
                           "%k = constant f32[4] [1, 2, 3, 4]\n"
                           "%a = add %x, %k device=\"cuda:0\" : f32[4]\n"
                           "%b = mul %a, %k device=\"cuda:0\" : f32[4]\n"
                           "%c = exp %b device=\"cuda:0\" : f32[4]\n"
                           "output \"y\" = %c\n");
    bp_plan *p = compile(g, "cpu,cuda:0", OFF, 0);
    uint32_t k = node_of(p, 1), a = node_of(p, 2);
    uint32_t copy = p->res.graph->nodes[a].inputs[1];
    cr_assert_eq(p->res.graph->nodes[copy].op, BRAID_OP_COPY);
    p->res.info[k].device = p->res.info[a].device;
    p->res.info[k].queue = p->res.info[a].queue;
    bp_plan_replace_uses(p, copy, k);
    cr_assert_eq(bp_plan_compact(p), BRAID_OK);
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        p->res.schedule[id] = id;
        p->res.info[id].order = id;
    }
    p->res.nschedule = p->res.graph->nnodes;
    data_events(p);
    cr_assert_eq(bp_memory(p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    k = node_of(p, 1);
    cr_assert_eq(p->res.info[k].device.kind, BP_DEVICE_CUDA);
    cr_assert_eq(p->res.info[k].place.storage, BP_STORAGE_ARENA);
    cr_assert(p->res.info[k].noop);
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        cr_assert(id == k ||
                      !share(&p->res.info[id].place, &p->res.info[k].place),
                  "node %u shares the constant's bytes", id);
    check_values(g, p, 2);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- streams and happens-before ---------------------------------------------- */

/* Two independent GPU branches of two matmuls each (16 KiB tensors); in
 * DEPENDENT, branch b starts from branch a's last node (a data edge), the
 * only reader of a's result. */
static const char *const BRANCHES =
    "braid-graph 1\n"
    "%a0 = random_normal f32[64,64] seed=1 mean=0 stddev=0.2 "
    "device=\"cuda:0\"\n"
    "%a1 = matmul %a0, %a0 device=\"cuda:0\" : f32[64,64]\n"
    "%a2 = matmul %a1, %a1 device=\"cuda:0\" : f32[64,64]\n"
    "%a3 = sum %a2 axes=[0,1] keepdims device=\"cuda:0\" : f32[1,1]\n"
    "%b0 = random_normal f32[64,64] seed=2 mean=0 stddev=0.2 "
    "device=\"cuda:0\"\n"
    "%b1 = matmul %b0, %b0 device=\"cuda:0\" : f32[64,64]\n"
    "%b2 = matmul %b1, %b1 device=\"cuda:0\" : f32[64,64]\n"
    "%b3 = sum %b2 axes=[0,1] keepdims device=\"cuda:0\" : f32[1,1]\n"
    "output \"a\" = %a3\n"
    "output \"b\" = %b3\n";

static const char *const DEPENDENT =
    "braid-graph 1\n"
    "%a0 = random_normal f32[64,64] seed=1 mean=0 stddev=0.2 "
    "device=\"cuda:0\"\n"
    "%a1 = matmul %a0, %a0 device=\"cuda:0\" : f32[64,64]\n"
    "%a2 = matmul %a1, %a1 device=\"cuda:0\" : f32[64,64]\n"
    "%a3 = sum %a2 axes=[0,1] keepdims device=\"cuda:0\" : f32[1,1]\n"
    "%b0 = broadcast_to %a3 shape=[64,64] device=\"cuda:0\" : f32[64,64]\n"
    "%b1 = matmul %b0, %b0 device=\"cuda:0\" : f32[64,64]\n"
    "%b2 = matmul %b1, %b1 device=\"cuda:0\" : f32[64,64]\n"
    "%b3 = sum %b2 axes=[0,1] keepdims device=\"cuda:0\" : f32[1,1]\n"
    "output \"b\" = %b3\n";

/* Branch of a plan node: 0 for a (graph ids < first_b, and copies of
 * them), 1 for b. */
static int branch(const bp_plan *p, uint32_t id, uint32_t first_b) {
    while (p->res.info[id].origin == BG_NONE)
        id = p->res.graph->nodes[id].inputs[0];
    return p->res.info[id].origin >= first_b;
}

/* Hand-made streams: branch a's GPU compute on one new compute queue,
 * branch b's on another; the schedule all of a then all of b; one data
 * event per cross-queue edge; then the memory pass and the checker. */
static void two_streams(bp_plan *p, uint32_t first_b) {
    uint32_t n = p->res.graph->nnodes, q0 = p->res.nqueues;
    bp_queue *qs = realloc(p->res.queues, (q0 + 2) * sizeof *qs);
    cr_assert_not_null(qs);
    p->res.queues = qs;
    bp_device gpu = {BP_DEVICE_CUDA, 0};
    qs[q0] = (bp_queue){BP_QUEUE_COMPUTE, gpu, 10};
    qs[q0 + 1] = (bp_queue){BP_QUEUE_COMPUTE, gpu, 11};
    p->res.nqueues = q0 + 2;
    uint32_t k = 0;
    for (int b = 0; b < 2; b++)
        for (uint32_t id = 0; id < n; id++) {
            if (branch(p, id, first_b) != b) continue;
            p->res.schedule[k] = id;
            p->res.info[id].order = k++;
            if (p->res.graph->nodes[id].op != BRAID_OP_COPY)
                p->res.info[id].queue = q0 + (uint32_t)b;
        }
    cr_assert_eq(k, n, "a node in no branch");
    data_events(p);
    cr_assert_eq(bp_memory(p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
}

/* An a tensor and a b tensor share bytes. */
static bool branches_share(const bp_plan *p, uint32_t first_b) {
    for (uint32_t i = 0; i < p->res.graph->nnodes; i++)
        for (uint32_t j = 0; j < p->res.graph->nnodes; j++)
            if (branch(p, i, first_b) == 0 && branch(p, j, first_b) == 1 &&
                share(&p->res.info[i].place, &p->res.info[j].place))
                return true;
    return false;
}

/* Nothing orders the two streams, so sharing needs reuse events: the
 * packer adds them (b's buffers would otherwise double the arena), each
 * from an earlier node to a later one of the other stream, and without
 * them the checker refuses the plan. */
Test(memory, reuse_across_streams_needs_events) {
    braid_graph *g = parse(BRANCHES);
    bp_plan *p = compile(g, "cpu,cuda:0", OFF, 2);
    two_streams(p, 4);
    const bp_arena *gpu = device_arena(p, BP_DEVICE_CUDA);
    cr_assert_not_null(gpu);
    cr_assert(branches_share(p, 4), "b did not reuse a's bytes");
    cr_assert_gt(reuse_events(p), 0);
    cr_assert_leq(gpu->bytes, gpu->lower_bound * 105 / 100);
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        const bp_event *e = &p->res.events[k];
        if (!e->reuse) continue;
        cr_assert_lt(p->res.info[e->after].order, p->res.info[e->before].order);
        cr_assert_neq(p->res.info[e->after].queue,
                      p->res.info[e->before].queue);
        cr_log_info("reuse event %%%u -> %%%u", e->after, e->before);
    }
    check_values(g, p, 16);
    /* the sharing rests on the reuse events */
    uint32_t kept = 0;
    for (uint32_t k = 0; k < p->res.nevents; k++)
        if (!p->res.events[k].reuse) p->res.events[kept++] = p->res.events[k];
    p->res.nevents = kept;
    cr_assert_eq(bp_verify_plan(p), BRAID_ERR_INTERNAL);
    cr_assert(strstr(braid_last_error(), "overlap:"), "%s", braid_last_error());
    braid_plan_free(p);
    braid_graph_free(g);
}

/* When a data event already orders the streams, bytes are shared without
 * any reuse event. */
Test(memory, reuse_across_streams_through_data_events) {
    braid_graph *g = parse(DEPENDENT);
    bp_plan *p = compile(g, "cpu,cuda:0", OFF, 2);
    two_streams(p, 4);
    cr_assert(branches_share(p, 4), "b did not reuse a's bytes");
    cr_assert_eq(reuse_events(p), 0);
    check_values(g, p, 16);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Streams working at the same time (interleaved schedule, no ordering)
 * keep separate bytes: nothing ever shares across them. */
Test(memory, concurrent_streams_keep_separate_bytes) {
    braid_graph *g = parse(BRANCHES);
    bp_plan *p = compile(g, "cpu,cuda:0", OFF, 2);
    two_streams(p, 4);
    /* interleave: a and b alternate, so their lifetimes overlap */
    uint32_t n = p->res.graph->nnodes, ia = 0, ib = 0, k = 0;
    uint32_t *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = p->res.schedule[i];
        if (branch(p, id, 4)) b[ib++] = id;
        else a[ia++] = id;
    }
    for (uint32_t i = 0; i < ia || i < ib; i++) {
        if (i < ia) p->res.schedule[k++] = a[i];
        if (i < ib) p->res.schedule[k++] = b[i];
    }
    for (uint32_t i = 0; i < n; i++)
        p->res.info[p->res.schedule[i]].order = i;
    free(a);
    free(b);
    cr_assert_eq(bp_memory(p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (branch(p, i, 4) == 0 && branch(p, j, 4) == 1 &&
                share(&p->res.info[i].place, &p->res.info[j].place))
                cr_assert(reuse_events(p) > 0,
                          "%%%u and %%%u share bytes with nothing ordering "
                          "them",
                          i, j);
    check_values(g, p, 16);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A chunked copy → compute → copy chain: the chunks' slices of the inputs
 * are views of the caller's buffers, the copies back are computed straight
 * into the final concat, and the GPU buffers of chunk k serve chunk k + 2. */
Test(memory, chunked_pipeline) {
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[4096] name=\"x\"\n"
                           "%y = input f32[4096] name=\"y\"\n"
                           "%a = mul %x, %y device=\"cuda:0\" : f32[4096]\n"
                           "%b = tanh %a device=\"cuda:0\" : f32[4096]\n"
                           "%c = add %b, %x device=\"cuda:0\" : f32[4096]\n"
                           "output \"out\" = %c\n");
    braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
    o.chunks = 4;
    braid_plan *p = ts_compile_ok(g, &o);
    uint32_t slices = 0, concats = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        if (n->op == BRAID_OP_SLICE &&
            p->res.graph->nodes[n->inputs[0]].op == BRAID_OP_INPUT) {
            cr_assert_eq(p->res.info[id].place.storage, BP_STORAGE_VIEW);
            slices++;
        }
        if (n->op == BRAID_OP_CONCAT) {
            cr_assert(p->res.info[id].noop, "concat %u copies", id);
            concats++;
        }
    }
    cr_log_info("chunked: %u input slices as views, %u concat(s) in place, "
                "%u reuse events, GPU arena %llu bytes",
                slices, concats, reuse_events(p),
                (unsigned long long)device_arena(p, BP_DEVICE_CUDA)->bytes);
    if (slices > 0) /* the chunk pass split the chain */
        cr_assert_gt(concats, 0);
    check_values(g, p, 16);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- options and arenas ----------------------------------------------------------- */

Test(memory, reuse_off_gives_every_tensor_its_bytes) {
    braid_graph *g = parse(CONCATS);
    bp_plan *p = compile(g, "cpu", OFF | BRAID_PASS_REUSE, 0);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < p->res.graph->nnodes; i++) {
        const bp_tensor_place *a = &p->res.info[i].place;
        if (a->storage == BP_STORAGE_ARENA) sum += (a->bytes + 63) / 64 * 64;
        for (uint32_t j = 0; j < i; j++)
            cr_assert(!share(a, &p->res.info[j].place), "%%%u and %%%u share",
                      i, j);
    }
    const bp_arena *ar = device_arena(p, BP_DEVICE_CPU);
    cr_assert_eq(ar->bytes, sum);
    cr_assert_leq(ar->lower_bound, ar->bytes);
    cr_assert(p->res.info[node_of(p, 8)].noop, "views are not reuse");
    cr_assert_eq(reuse_events(p), 0);
    check_values(g, p, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

static uint32_t pinned_arenas(const bp_plan *p, uint64_t *bytes) {
    uint32_t n = 0;
    for (uint32_t a = 0; a < p->res.narenas; a++)
        if (p->res.arenas[a].kind == BP_ARENA_PINNED) {
            n++;
            *bytes = p->res.arenas[a].bytes;
            cr_assert_eq(p->res.arenas[a].device.kind, BP_DEVICE_CPU);
        }
    return n;
}

/* Staging: two slots of min(largest host↔GPU copy, 64 MiB), only when the
 * plan copies between host and GPU. */
Test(memory, pinned_staging_iff_host_device_copies) {
    uint64_t bytes = 0;
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[1000] name=\"x\"\n"
                           "%y = exp %x device=\"cuda:0\" : f32[1000]\n"
                           "%z = sum %x axes=[0] : f32[]\n"
                           "output \"y\" = %y\n"
                           "output \"z\" = %z\n");
    bp_plan *p = compile(g, "cpu", OFF, 0);
    cr_assert_eq(pinned_arenas(p, &bytes), 0);
    braid_plan_free(p);
    p = compile(g, "cpu,cuda:0", OFF, 0);
    cr_assert_eq(pinned_arenas(p, &bytes), 1);
    cr_assert_eq(bytes, 2 * 4032);
    check_values(g, p, 2);
    braid_plan_free(p);
    braid_graph_free(g);
    g = parse("braid-graph 1\n"
              "%x = input f32[4096,8192] name=\"x\"\n"
              "%y = exp %x device=\"cuda:0\" : f32[4096,8192]\n"
              "%z = sum %y axes=[0,1] : f32[]\n"
              "output \"z\" = %z\n");
    p = compile(g, "cpu,cuda:0", OFF, 0);
    cr_assert_eq(pinned_arenas(p, &bytes), 1);
    cr_assert_eq(bytes, (uint64_t)2 << 26, "%llu", (unsigned long long)bytes);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Running the pass again gives the same places and events. */
Test(memory, pass_is_repeatable) {
    braid_graph *g = parse(BRANCHES);
    bp_plan *p = compile(g, "cpu,cuda:0", 0, 0);
    uint32_t n = p->res.graph->nnodes, nev = p->res.nevents;
    bp_tensor_place *before = calloc(n, sizeof *before);
    for (uint32_t i = 0; i < n; i++)
        before[i] = p->res.info[i].place;
    cr_assert_eq(bp_memory(p), BRAID_OK);
    cr_assert_eq(p->res.nevents, nev);
    for (uint32_t i = 0; i < n; i++)
        cr_assert(!memcmp(&before[i], &p->res.info[i].place, sizeof *before),
                  "node %u moved", i);
    free(before);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- the 1.05 target --------------------------------------------------------------- */

/* Checks and logs every device arena of g compiled for cpu,cuda:0. */
static void check_ratio(const char *what, const braid_graph *g) {
    bp_plan *p = compile(g, "cpu,cuda:0", 0, 0);
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        const bp_arena *ar = &p->res.arenas[a];
        char dev[32];
        bp_device_str(ar->device, dev, sizeof dev);
        double r = ar->lower_bound ? (double)ar->bytes / ar->lower_bound : 1;
        cr_log_info("| %s | %s%s | %llu | %llu | %.4f |", what, dev,
                    ar->kind == BP_ARENA_PINNED ? " (pinned)" : "",
                    (unsigned long long)ar->bytes,
                    (unsigned long long)ar->lower_bound, r);
        if (ar->kind == BP_ARENA_DEVICE)
            cr_assert_leq(ar->bytes * 100, ar->lower_bound * 105,
                          "%s: arena %u on %s: %llu bytes, lower bound %llu",
                          what, a, dev, (unsigned long long)ar->bytes,
                          (unsigned long long)ar->lower_bound);
    }
    braid_plan_free(p);
}

static void ratio_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return; /* no bench graphs yet */
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".graph")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        braid_graph *g = ts_load_ok(path);
        check_ratio(e->d_name, g);
        braid_graph_free(g);
    }
    closedir(d);
}

Test(memory, arenas_within_5_percent_of_lower_bound) {
    ratio_dir(BRAID_SOURCE_DIR "/examples/graphs");
    ratio_dir(BRAID_SOURCE_DIR "/bench");
    braid_graph *g = braid_graph_new(NULL);
    mlp_build(g);
    check_ratio("mlp (examples/mlp_build.h)", g);
    braid_graph_free(g);
}

/* ---- golden cases
 * -------------------------------------------------------------------- */

static void put_place(FILE *f, const bp_plan *p, uint32_t id) {
    const bp_tensor_place *pl = &p->res.info[id].place;
    static const char *const kinds[] = {"none", "arena", "input", "constant",
                                        "view"};
    fprintf(f, "%s", kinds[pl->storage]);
    if (pl->storage == BP_STORAGE_ARENA)
        fprintf(f, " %u+%llu", pl->arena, (unsigned long long)pl->offset);
    if (pl->storage == BP_STORAGE_VIEW)
        fprintf(f, " of %%%u+%llu", pl->base, (unsigned long long)pl->offset);
    const int64_t *s = bp_layout_of(p, id);
    for (int a = 0; s && a < p->res.graph->nodes[id].rank; a++)
        fprintf(f, "%s%lld", a ? "," : " strides ", (long long)s[a]);
    fprintf(f, " %lluB%s\n", (unsigned long long)pl->bytes,
            p->res.info[id].noop ? " noop" : "");
}

/* Arenas, then every node in schedule order, then the reuse events. */
static char *summary(const bp_plan *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    char a[64], b[64];
    for (uint32_t i = 0; i < p->res.narenas; i++) {
        const bp_arena *ar = &p->res.arenas[i];
        fprintf(f, "arena %u %s %s %llu lower_bound %llu\n", i,
                bp_device_str(ar->device, a, sizeof a),
                ar->kind == BP_ARENA_PINNED ? "pinned" : "device",
                (unsigned long long)ar->bytes,
                (unsigned long long)ar->lower_bound);
    }
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        fprintf(f, "%%%u %s %s ", id, bg_op(p->res.graph->nodes[id].op)->name,
                bp_queue_str(p, p->res.info[id].queue, b, sizeof b));
        put_place(f, p, id);
    }
    for (uint32_t k = 0; k < p->res.nevents; k++)
        if (p->res.events[k].reuse)
            fprintf(f, "reuse event %%%u -> %%%u\n", p->res.events[k].after,
                    p->res.events[k].before);
    fclose(f);
    return buf;
}

/* Compiles golden case `name` (directives in its comments), compares the
 * summary and checks the values. */
static void golden(const char *name) {
    char *text, devices[128] = "cpu,cuda:0", word[16];
    braid_graph *g = ts_golden_graph(GOLDEN, name, &text);
    unsigned disable = OFF;
    int streams = 0;
    ts_directive(text, "# devices:", devices, sizeof devices);
    if (strstr(text, "# disable: reuse")) disable |= BRAID_PASS_REUSE;
    if (ts_directive(text, "# streams:", word, sizeof word))
        streams = atoi(word);
    free(text);
    bp_plan *p = compile(g, devices, disable, streams);
    char *got = summary(p);
    ts_check_golden(GOLDEN, name, got);
    free(got);
    check_values(g, p, strcmp(devices, "cpu") ? 4 : 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(memory_golden, chain) { golden("chain"); }
Test(memory_golden, in_place) { golden("in_place"); }
Test(memory_golden, views) { golden("views"); }
Test(memory_golden, gpu_mlp) { golden("gpu_mlp"); }
Test(memory_golden, two_streams) { golden("two_streams"); }
Test(memory_golden, reuse_off) { golden("reuse_off"); }
Test(memory_golden, gpu_constant) { golden("gpu_constant"); }
