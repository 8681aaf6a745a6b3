/* tests/test_pass_memory_sweep.c — the memory pass's schedule-order packer
 * (passes/memory_sweep.c), which takes over from the greedy when a plan
 * has more conflicting pairs than bp_mem_greedy_pairs. The limit is set to
 * 0 here so small plans go through it: random DAGs (with GPU hints, so
 * streams, events and reuse events come into play) must pass the plan
 * verifier (the pipeline runs it) and give the reference evaluator's
 * values, natively or under the emulated executor's random interleavings
 * (and on the GPU, where there is one);
 * the arenas of the scaling shapes stay within 1.05× of their lower bound,
 * on the cpu and (reuse events across streams) on the GPU, through the
 * sweep and at the default thresholds; the sweep-first packing of arenas
 * where the greedy may run short of events keeps the smaller arena and
 * can put the sweep's back; and the lazily recomputed clocks of
 * memory_hb.c match a full recomputation. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "bench/scaling_graphs.h"
#include "passes/memory.h"
#include "runtime/runtime.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

static void force_sweep(void) {
    bp_mem_greedy_pairs = 0;
}
static void restore(void) {
    bp_mem_greedy_pairs = BP_MEM_GREEDY_PAIRS;
    bp_mem_sweep_first = 0;
}

static void random_dags(const char *devices, bool hints, int count) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.max_nodes = 40;
    go.device_hints = hints;
    for (int seed = 1; seed <= count; seed++) {
        braid_graph *g = ts_random_graph((uint64_t)seed, &go);
        cr_assert_not_null(g);
        braid_compile_options o = ts_compile_options(devices, 0);
        o.max_streams = 3;
        bp_plan *p = ts_compile_ok(g, &o); /* verify_plan runs last */
        ts_check_plan(g, p, hints ? 3 : 0, (uint64_t)seed);
        if (hints && braid_cuda_device_count() > 0) /* on the GPU too */
            ts_check_plan(g, p, 0, (uint64_t)seed);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(memory_sweep, random_dags_cpu, .init = force_sweep, .fini = restore) {
    random_dags("cpu", false, 150);
}

Test(memory_sweep, random_dags_across_streams, .init = force_sweep,
     .fini = restore) {
    random_dags("cpu,cuda:0", true, 150);
}

/* On one queue the sweep replays the run like an allocator: first fit
 * keeps the scaling shapes near their lower bound. */
Test(memory_sweep, cpu_arenas_near_lower_bound, .init = force_sweep,
     .fini = restore) {
    for (int shape = 0; shape < SG_NSHAPES; shape++) {
        braid_graph *g = sg_build((sg_shape)shape, 3000);
        cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s",
                     braid_graph_error(g));
        braid_compile_options o = ts_compile_options("cpu", 0);
        bp_plan *p = ts_compile_ok(g, &o);
        for (uint32_t a = 0; a < p->res.narenas; a++) {
            const bp_arena *ar = &p->res.arenas[a];
            cr_assert_leq((double)ar->bytes, 1.05 * (double)ar->lower_bound,
                          "%s: arena %u of %llu bytes, lower bound %llu",
                          sg_names[shape], a, (unsigned long long)ar->bytes,
                          (unsigned long long)ar->lower_bound);
        }
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* ---- multi-stream plans -------------------------------------------------- */

/* A scaling shape with every node but the inputs hinted to cuda:0, as
 * bench/compile_scaling does for GPU plans. */
static braid_graph *gpu_shape(sg_shape shape, uint32_t n) {
    braid_graph *g = sg_build(shape, n);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        braid_set_device(g, (braid_tensor){id}, "cuda:0"); /* inputs refuse */
    return g;
}

static void gpu_arenas_within(uint32_t n, double ratio) {
    for (int shape = 0; shape < SG_NSHAPES; shape++) {
        braid_graph *g = gpu_shape((sg_shape)shape, n);
        braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
        o.archs = "none";
        bp_plan *p = ts_compile_ok(g, &o); /* verify_plan runs last */
        for (uint32_t a = 0; a < p->res.narenas; a++) {
            const bp_arena *ar = &p->res.arenas[a];
            cr_log_info("%s %u: arena %u: %llu bytes, lower bound %llu",
                        sg_names[shape], n, a, (unsigned long long)ar->bytes,
                        (unsigned long long)ar->lower_bound);
            cr_assert_leq((double)ar->bytes, ratio * (double)ar->lower_bound,
                          "%s %u: arena %u of %llu bytes, lower bound %llu",
                          sg_names[shape], n, a, (unsigned long long)ar->bytes,
                          (unsigned long long)ar->lower_bound);
        }
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* Where streams do not know each other's work, the sweep shares bytes
 * through reuse events; with enough of them (its budget grows with the
 * plan: the clocks they change are recomputed lazily) the GPU plans of the
 * scaling shapes stay near their lower bound too. */
Test(memory_sweep, gpu_arenas_near_lower_bound, .init = force_sweep,
     .fini = restore) {
    gpu_arenas_within(3000, 1.05);
}

/* The default thresholds: the greedy at 3000 nodes; at 10000 the wide
 * shape has more groups than the greedy's event budget, so the sweep goes
 * first (memory_pack.c, sweep_then_greedy); the others take the sweep. */
Test(memory_sweep, gpu_arenas_near_lower_bound_default) {
    gpu_arenas_within(3000, 1.05);
    gpu_arenas_within(10000, 1.05);
}

/* Small GPU plans of the shapes, run under the emulated executor's random
 * interleavings: the reuse events order what shares bytes. */
Test(memory_sweep, gpu_shapes_run_under_interleavings, .init = force_sweep,
     .fini = restore) {
    for (int shape = 0; shape < SG_NSHAPES; shape++) {
        braid_graph *g = gpu_shape((sg_shape)shape, 300);
        braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
        o.archs = "none";
        bp_plan *p = ts_compile_ok(g, &o);
        uint32_t reuse = 0;
        for (uint32_t k = 0; k < p->res.nevents; k++)
            reuse += p->res.events[k].reuse;
        cr_log_info("%s 300: %u reuse events", sg_names[shape], reuse);
        /* one per fill of the outputs shape (149 of them; sharing a
         * downloaded output's bytes needs no event from the compute that
         * wrote them: the download follows it), one per chain of the
         * wide one (60) */
        if (shape == SG_OUTPUTS) cr_assert_leq(reuse, 149);
        if (shape == SG_WIDE) cr_assert_leq(reuse, 60);
        ts_check_plan(g, p, 3, (uint64_t)shape + 1);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* ---- lazily recomputed clocks (memory_hb.c) ------------------------------ */

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return *s >> 33;
}

/* Waits added one by one with bp_mem_hb_need at random positions give,
 * below hb.valid, exactly the clocks of a full recomputation with the same
 * waits, and at or above it clocks never ahead of them (a stale clock
 * knows less, never more: what the sweep relies on past its horizon);
 * truncating gives the clocks of the waits kept. */
Test(memory_hb, lazy_clocks_match_full_recomputation) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.max_nodes = 60;
    go.device_hints = true;
    int checked = 0;
    for (int seed = 1; seed <= 40; seed++) {
        braid_graph *g = ts_random_graph((uint64_t)seed, &go);
        braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
        o.max_streams = 3;
        o.archs = "none";
        bp_plan *p = ts_compile_ok(g, &o);
        bp_mem_hb lazy, full;
        cr_assert_eq(bp_mem_hb_init(&lazy, p), BRAID_OK);
        cr_assert_eq(bp_mem_hb_init(&full, p), BRAID_OK);
        uint32_t ns = p->res.nschedule, nq = lazy.nq;
        uint64_t s = (uint64_t)seed * 7919;
        for (int k = 0; k < 40 && ns > 1 && nq > 1; k++) {
            uint32_t i = (uint32_t)(lcg(&s) % ns), j = (uint32_t)(lcg(&s) % ns);
            if (i == j) continue;
            uint32_t a = p->res.schedule[i < j ? i : j];
            uint32_t b = p->res.schedule[i < j ? j : i];
            if (lazy.queue[a] == lazy.queue[b]) continue;
            cr_assert_eq(bp_mem_hb_add_wait(&lazy, p, a, b), BRAID_OK);
            cr_assert_eq(bp_mem_hb_add_wait(&full, p, a, b), BRAID_OK);
            if (lcg(&s) % 2) bp_mem_hb_need(&lazy, p, (uint32_t)(lcg(&s) % ns));
            if (k == 30) { /* drop the newest few */
                bp_mem_hb_truncate(&lazy, p, lazy.nx > 3 ? lazy.nx - 3 : 0);
                bp_mem_hb_truncate(&full, p, full.nx > 3 ? full.nx - 3 : 0);
            }
            bp_mem_hb_clocks(&full, p);
            for (uint32_t x = 0; x < ns; x++) {
                uint32_t id = p->res.schedule[x];
                for (uint32_t q = 0; q < nq; q++) {
                    int32_t l = lazy.clock[(size_t)id * nq + q];
                    int32_t f = full.clock[(size_t)id * nq + q];
                    if (x < lazy.valid)
                        cr_assert_eq(l, f, "seed %d: node %u queue %u", seed,
                                     id, q);
                    else if (k < 30) /* only waits added so far */
                        cr_assert_leq(l, f, "seed %d: node %u queue %u", seed,
                                      id, q);
                }
            }
            checked++;
        }
        bp_mem_hb_need(&lazy, p, ns);
        bp_mem_hb_clocks(&full, p);
        cr_assert_eq(lazy.valid, ns);
        for (size_t c = 0; c < (size_t)lazy.n * nq; c++)
            cr_assert_eq(lazy.clock[c], full.clock[c]);
        bp_mem_hb_free(&lazy);
        bp_mem_hb_free(&full);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    cr_assert_gt(checked, 100, "only %d waits checked", checked);
}

/* ---- the sweep first, then the greedy (memory_pack.c) ------------------- */

/* Total arena bytes of g compiled for devices with the packers as set. */
static uint64_t arena_total(const braid_graph *g, uint64_t pairs,
                            int sweep_first, int seed, bool *above) {
    bp_mem_greedy_pairs = pairs;
    bp_mem_sweep_first = sweep_first;
    braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
    o.max_streams = 3;
    o.archs = "none";
    bp_plan *p = ts_compile_ok(g, &o); /* verify_plan runs last */
    if (sweep_first) ts_check_plan(g, p, 2, (uint64_t)seed);
    uint64_t total = 0;
    *above = false;
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        total += p->res.arenas[a].bytes;
        *above |= p->res.arenas[a].bytes > p->res.arenas[a].lower_bound;
    }
    braid_plan_free(p);
    bp_mem_greedy_pairs = BP_MEM_GREEDY_PAIRS;
    bp_mem_sweep_first = 0;
    return total;
}

/* Where the greedy may run short of events the sweep packs first and the
 * greedy only tries when the sweep misses the lower bound; the smaller
 * arena is kept (ties: the sweep's, whose placement and events are put
 * back). On random DAGs across streams the result is never larger than
 * either packer alone; with bp_mem_sweep_first = 2 the sweep's placement
 * and events are put back even where the greedy's arena is smaller (some
 * DAGs then get a larger arena: the way back was taken). Every plan is
 * verified and run under random interleavings. */
Test(memory_sweep, sweep_first_keeps_the_smaller_arena, .fini = restore) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.max_nodes = 40;
    go.device_hints = true;
    int greedy_won = 0, put_back = 0, at_bound = 0;
    for (int seed = 1; seed <= 150; seed++) {
        braid_graph *g = ts_random_graph((uint64_t)seed, &go);
        cr_assert_not_null(g);
        bool ga, sa, ba, ka;
        uint64_t greedy = arena_total(g, BP_MEM_GREEDY_PAIRS, 0, seed, &ga);
        uint64_t swept = arena_total(g, 0, 0, seed, &sa);
        uint64_t both = arena_total(g, BP_MEM_GREEDY_PAIRS, 1, seed, &ba);
        uint64_t back = arena_total(g, BP_MEM_GREEDY_PAIRS, 2, seed, &ka);
        cr_assert_leq(both, greedy, "seed %d", seed);
        cr_assert_leq(both, swept, "seed %d", seed);
        cr_assert_geq(back, both, "seed %d", seed);
        greedy_won += greedy < swept;
        put_back += back > both;
        at_bound += !sa;
        braid_graph_free(g);
    }
    cr_log_info("greedy smaller on %d DAGs, the sweep put back over it on "
                "%d, sweep at the bound on %d", greedy_won, put_back,
                at_bound);
    cr_assert_gt(put_back, 0);
    cr_assert_gt(at_bound, 0);
}
