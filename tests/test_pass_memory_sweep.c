/* tests/test_pass_memory_sweep.c — the memory pass's schedule-order packer
 * (passes/memory_sweep.c), which takes over from the greedy when a plan
 * has more conflicting pairs than bp_mem_greedy_pairs. The limit is set to
 * 0 here so small plans go through it: random DAGs (with GPU hints, so
 * streams, events and reuse events come into play) must pass the plan
 * verifier (the pipeline runs it) and give the reference evaluator's
 * values, natively or under the emulated executor's random interleavings
 * (and on the GPU, where there is one);
 * on the cpu the arenas of the scaling shapes stay within 1.05× of their
 * lower bound. */
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
