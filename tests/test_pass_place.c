/* tests/test_pass_place.c — the placement pass and its cost model.
 *
 * Golden cases: tests/golden/place/<case>.graph is the input; comment lines
 * at its top set the compile options:
 *     # devices: cpu,cuda:0
 *     # cuda_profile: h2d=1e8 d2h=1e8     (keys below; the rest default)
 * <case>.expected holds one line per user node, "%<user id> op device",
 * then one line per copy the placement implies, "copy %<src> -> device"
 * (or "error: <status>: <message>"). Regenerate with BRAID_UPDATE_GOLDEN=1
 * and check the diff by eye. Plans are data: "cuda:0" compiles without a
 * GPU. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "support/golden.h"
#include "support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/place/"

/* ---- harness ------------------------------------------------------------- */

typedef struct place_case {
    char devices[128];              /* "# devices:" */
    braid_device_profile cpu, cuda; /* defaults + "# *_profile:" keys */
    bool has_cpu, has_cuda;         /* a profile line was given */
} place_case;

/* "key=value ..." into a profile: f32 f64 f16 bf16 (matmul FLOP/s), ew,
 * mem, h2d, d2h, launch. */
static void parse_profile(const char *s, braid_device_profile *p) {
    char key[16];
    double v;
    int used;
    while (sscanf(s, " %15[a-z0-9_]=%lf%n", key, &v, &used) == 2) {
        s += used;
        if (!strcmp(key, "f32"))
            p->flops[BRAID_F32] = v;
        else if (!strcmp(key, "f64"))
            p->flops[BRAID_F64] = v;
        else if (!strcmp(key, "f16"))
            p->flops[BRAID_F16] = v;
        else if (!strcmp(key, "bf16"))
            p->flops[BRAID_BF16] = v;
        else if (!strcmp(key, "ew"))
            p->elementwise_flops = v;
        else if (!strcmp(key, "mem"))
            p->mem_bytes_per_s = v;
        else if (!strcmp(key, "h2d"))
            p->h2d_bytes_per_s = v;
        else if (!strcmp(key, "d2h"))
            p->d2h_bytes_per_s = v;
        else if (!strcmp(key, "launch"))
            p->launch_s = v;
        else
            cr_assert_fail("unknown profile key %s", key);
    }
}

static void parse_directives(const char *text, place_case *pc) {
    memset(pc, 0, sizeof *pc);
    strcpy(pc->devices, "cpu,cuda:0");
    pc->cpu = bp_default_profile(BP_DEVICE_CPU);
    pc->cuda = bp_default_profile(BP_DEVICE_CUDA);
    char line[256];
    ts_directive(text, "# devices:", pc->devices, sizeof pc->devices);
    if ((pc->has_cpu = ts_directive(text, "# cpu_profile:", line, sizeof line)))
        parse_profile(line, &pc->cpu);
    if ((pc->has_cuda =
             ts_directive(text, "# cuda_profile:", line, sizeof line)))
        parse_profile(line, &pc->cuda);
}

/* Compiles case `name` with the optional passes that rewrite the graph off
 * (so the plan's graph is the user's plus copies). *status gets the
 * result; the plan (NULL on error) is returned. */
static braid_plan *compile_case(const char *name, braid_status *status) {
    char *text;
    braid_graph *g = ts_golden_graph(GOLDEN, name, &text);
    place_case pc;
    parse_directives(text, &pc);
    free(text);
    braid_compile_options o = ts_compile_options(
        pc.devices, BRAID_PASS_SIMPLIFY | BRAID_PASS_FUSE | BRAID_PASS_CHUNK);
    if (pc.has_cpu) o.cpu_profile = &pc.cpu;
    if (pc.has_cuda) o.cuda_profile = &pc.cuda;
    braid_plan *p = NULL;
    *status = braid_compile(g, &o, &p);
    braid_graph_free(g);
    return p;
}

/* The decisions as text: user nodes by their user id, then the copies. */
static char *summary(const braid_plan *p, braid_status s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    if (s != BRAID_OK) {
        fprintf(f, "error: %s: %s\n", braid_status_name(s), braid_last_error());
        fclose(f);
        return buf;
    }
    const braid_graph *g = p->res.graph;
    char dev[32];
    for (uint32_t want = 0; want < g->nnodes; want++)
        for (uint32_t id = 0; id < g->nnodes; id++) {
            if (p->res.info[id].origin != want) continue;
            const bg_node *n = bg_node_at(g, id);
            fprintf(f, "%%%u %s %s", (unsigned)want, bg_op(n->op)->name,
                    bp_device_str(p->res.info[id].device, dev, sizeof dev));
            if (n->name) fprintf(f, " \"%s\"", n->name);
            fputc('\n', f);
        }
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = bg_node_at(g, id);
        if (n->op != BRAID_OP_COPY) continue;
        fprintf(f, "copy %%%u -> %s\n",
                (unsigned)p->res.info[n->inputs[0]].origin,
                bp_device_str(p->res.info[id].device, dev, sizeof dev));
    }
    fclose(f);
    return buf;
}

/* Runs a golden case that must compile; returns its plan. */
static braid_plan *golden(const char *name) {
    braid_status s;
    braid_plan *p = compile_case(name, &s);
    cr_assert_eq(s, BRAID_OK, "%s: %s", name, braid_last_error());
    char *got = summary(p, s);
    ts_check_golden(GOLDEN, name, got);
    free(got);
    return p;
}

/* ---- queries for the explicit assertions --------------------------------- */

/* The plan node that came from user node `origin`. */
static uint32_t node_of(const braid_plan *p, uint32_t origin) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.info[id].origin == origin) return id;
    cr_assert_fail("user node %u not in the plan", (unsigned)origin);
    return BG_NONE;
}

static bool on(const braid_plan *p, uint32_t origin, const char *device) {
    char buf[32];
    return !strcmp(
        bp_device_str(p->res.info[node_of(p, origin)].device, buf, sizeof buf),
        device);
}

/* Copies whose source is user node `origin`. */
static int copies_of(const braid_plan *p, uint32_t origin) {
    int k = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        k += n->op == BRAID_OP_COPY &&
             p->res.info[n->inputs[0]].origin == origin;
    }
    return k;
}

static int count_copies(const braid_plan *p) {
    int k = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        k += bg_node_at(p->res.graph, id)->op == BRAID_OP_COPY;
    return k;
}

/* ---- cases --------------------------------------------------------------- */

Test(place, everything_cpu_without_a_gpu) {
    braid_plan *p = golden("all_cpu");
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        cr_assert_eq(p->res.info[id].device.kind, BP_DEVICE_CPU);
    cr_assert_eq(count_copies(p), 0);
    braid_plan_free(p);
}

Test(place, hints_win_over_the_cost_model) {
    braid_plan *p = golden("hints");
    cr_assert(on(p, 2, "cpu"), "big matmul hinted cpu");
    cr_assert(on(p, 4, "cuda:0"), "tiny exp hinted cuda:0");
    braid_plan_free(p);
}

Test(place, a_hint_naming_an_unlisted_device_is_an_error) {
    braid_status s;
    braid_plan *p = compile_case("bad_hint", &s);
    cr_assert_null(p);
    cr_assert_eq(s, BRAID_ERR_DEVICE);
    const char *msg = braid_last_error();
    cr_assert(strstr(msg, "%2") && strstr(msg, "\"cuda:1\"") &&
                  strstr(msg, "cpu,cuda:0") && strstr(msg, "\"act\""),
              "message names the node, its hint and the devices: %s", msg);
    char *got = summary(NULL, s);
    ts_check_golden(GOLDEN, "bad_hint", got);
    free(got);
}

Test(place, random_data_for_a_gpu_matmul_is_made_on_the_gpu) {
    braid_plan *p = golden("random_matmul");
    cr_assert(on(p, 1, "cuda:0"), "the generator goes with its consumer");
    cr_assert(on(p, 2, "cuda:0"), "the big matmul runs on the GPU");
    cr_assert_eq(copies_of(p, 1), 0, "random data never crosses PCIe");
    cr_assert_eq(copies_of(p, 0), 1, "the host input is copied once");
    cr_assert_eq(copies_of(p, 2), 1, "the output comes back to the host");
    braid_plan_free(p);
}

Test(place, seed_000_both_operands_random) {
    braid_plan *p = golden("seed000");
    cr_assert(on(p, 0, "cuda:0") && on(p, 1, "cuda:0") && on(p, 2, "cuda:0"));
    cr_assert_eq(count_copies(p), 1, "only the result crosses PCIe");
    braid_plan_free(p);
}

Test(place, tiny_elementwise_stays_on_the_host_big_matmul_moves) {
    braid_plan *p = golden("tiny_vs_big");
    cr_assert(on(p, 1, "cpu"), "a 16-float exp is not worth two copies");
    cr_assert(on(p, 4, "cuda:0"), "a 2048³ matmul is worth its copies");
    braid_plan_free(p);
}

Test(place, cuda_profile_override_changes_the_decision) {
    /* the same graph as tiny_vs_big over a 100 MB/s link */
    braid_plan *p = golden("slow_link");
    cr_assert(on(p, 4, "cpu"), "48 MB over 100 MB/s costs more than sgemm");
    cr_assert_eq(count_copies(p), 0);
    braid_plan_free(p);
}

Test(place, shape_ops_go_with_their_input) {
    braid_plan *p = golden("shape_follow");
    cr_assert(on(p, 1, "cpu"), "reshape of a host input stays with it");
    cr_assert(on(p, 4, "cuda:0"), "permute of a GPU result stays on the GPU");
    cr_assert(on(p, 6, "cuda:0"), "reshape of random data made on the GPU");
    braid_plan_free(p);
}

/* A range-checked cast from i64 is placed like any elementwise op: with
 * only the GPU listed, on it, its i64 input copied there (docs/placement.md). */
Test(place, checked_cast_goes_to_the_gpu) {
    braid_plan *p = golden("checked_cast");
    cr_assert(on(p, 1, "cuda:0"), "the checked cast on the GPU");
    cr_assert_eq(copies_of(p, 0), 1, "the i64 ids cross once");
    cr_assert_eq(copies_of(p, 1), 0, "the i32 ids do not cross");
    braid_plan_free(p);
}

Test(place, generator_with_consumers_on_both_sides) {
    braid_plan *p = golden("generator_split");
    /* The weight feeds a GPU matmul and a small cpu reduction: made on the
     * GPU, one copy back for the cpu side. */
    cr_assert(on(p, 1, "cuda:0"));
    cr_assert_eq(copies_of(p, 1), 1);
    braid_plan_free(p);
}

Test(place, refinement_moves_a_cheap_producer_next_to_its_consumer) {
    braid_plan *p = golden("refine");
    /* see refine.graph: the first sweep leaves neg(x) on the host */
    cr_assert(on(p, 2, "cuda:0"), "neg joins the GPU side");
    cr_assert_eq(copies_of(p, 0), 1);
    cr_assert_eq(copies_of(p, 2), 0);
    braid_plan_free(p);
}

/* The MLP example (seed 000's lesson at scale): weights and biases are
 * generated on the GPU; only x goes up and y comes back. */
Test(place, mlp_example_runs_on_the_gpu) {
    char *text = ts_read_file_ok(BRAID_SOURCE_DIR "/examples/graphs/mlp.graph");
    braid_graph *g = ts_parse_ok(text, "mlp.graph");
    free(text);
    braid_compile_options o =
        ts_compile_options("cpu,cuda:0", BRAID_PASS_FUSE | BRAID_PASS_CHUNK);
    braid_plan *p = ts_compile_ok(g, &o);
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (n->op == BRAID_OP_COPY || n->op == BRAID_OP_INPUT) continue;
        cr_assert_eq(p->res.info[id].device.kind, BP_DEVICE_CUDA, "%%%u %s",
                     (unsigned)id, bg_op(n->op)->name);
    }
    cr_assert_eq(count_copies(p), 2, "x up, y down");
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The profile defaults are the documented figures (docs/placement.md). */
Test(place, default_profiles) {
    braid_device_profile c = bp_default_profile(BP_DEVICE_CPU);
    braid_device_profile g = bp_default_profile(BP_DEVICE_CUDA);
    cr_assert_float_eq(c.flops[BRAID_F32], 1.5e11, 1);
    cr_assert_float_eq(c.mem_bytes_per_s, 50e9, 1);
    cr_assert_float_eq(c.launch_s, 2e-6, 1e-12);
    cr_assert_float_eq(g.flops[BRAID_F32], 50e12, 1);
    cr_assert_float_eq(g.flops[BRAID_F16], 400e12, 1);
    cr_assert_float_eq(g.mem_bytes_per_s, 3.0e12, 1);
    cr_assert_float_eq(g.h2d_bytes_per_s, 50e9, 1);
    cr_assert_float_eq(g.d2h_bytes_per_s, 50e9, 1);
    cr_assert_float_eq(g.launch_s, 5e-6, 1e-12);
    cr_assert_eq(c.h2d_bytes_per_s, 0);
}
