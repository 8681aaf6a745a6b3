/* tests/test_plan_properties.c — property test of whole plans over random
 * DAGs (ts_random_graph, half of them with random device hints), compiled
 * for "cpu" and for "cpu,cuda:0":
 *   - verify_plan accepts every plan (it also runs inside braid_compile);
 *   - the cpu plan's outputs match the reference evaluator;
 *   - the cpu,cuda:0 plan's outputs match the reference when run by the
 *     emulating executor (queues interleaved at random, respecting only
 *     queue order and events) under two seeds: a missing event or an
 *     unsafe buffer reuse shows up as a wrong value;
 *   - the same with buffer reuse disabled, every eighth graph.
 * The worst arena / lower-bound ratio is logged (not asserted: the 1.05
 * target is for the example graphs, tests/test_pass_memory.c).
 *
 * 1200 graphs per run. BRAID_PLAN_PROPS=k multiplies the count (a longer
 * soak), BRAID_PLAN_PROPS_BASE=n shifts the seeds, and
 * BRAID_PLAN_PROPS_DISABLE=bits compiles with those BRAID_PASS_* bits
 * off. A failure logs the seed and the graph. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "tests/support/support.h"

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}

/* Worst arena / lower bound over the run's plans (logged at the end of
 * each test). */
typedef struct worst {
    double ratio;     /* the largest ratio seen (reuse on) */
    uint64_t seed;    /* the graph it came from */
    uint32_t gpu;     /* plans with a node on cuda:0 */
    uint32_t queues;  /* plans with more than one queue */
    uint32_t reuse;   /* reuse events added by the memory pass */
    uint32_t views;   /* tensors placed as views */
    uint32_t shared;  /* arena tensors sharing an offset with another */
} worst;

/* Counts what the plans exercised, so the log shows the test bites. */
static void note_plan(const braid_plan *p, worst *w) {
    bool gpu = false;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        gpu |= p->res.info[id].device.kind == BP_DEVICE_CUDA;
        w->views += p->res.info[id].place.storage == BP_STORAGE_VIEW;
        for (uint32_t j = 0; j < i; j++) {
            const bp_tensor_place *a = &p->res.info[id].place,
                                  *b = &p->res.info[p->res.schedule[j]].place;
            if (a->storage == BP_STORAGE_ARENA &&
                b->storage == BP_STORAGE_ARENA && a->arena == b->arena &&
                a->offset == b->offset && a->bytes && b->bytes) {
                w->shared++;
                break;
            }
        }
    }
    w->gpu += gpu;
    w->queues += p->res.nqueues > 1;
    for (uint32_t k = 0; k < p->res.nevents; k++)
        w->reuse += p->res.events[k].reuse;
}

static void note_ratio(const braid_plan *p, uint64_t seed, worst *w) {
    note_plan(p, w);
    if (p->in.settings.disabled & BRAID_PASS_REUSE) return;
    for (uint32_t a = 0; a < p->res.narenas; a++) {
        const bp_arena *ar = &p->res.arenas[a];
        if (ar->kind != BP_ARENA_DEVICE || ar->lower_bound == 0) continue;
        double r = (double)ar->bytes / (double)ar->lower_bound;
        if (r > w->ratio) {
            w->ratio = r;
            w->seed = seed;
        }
    }
}

/* Clears the output buffers so a result never written is caught. */
static void scribble_outputs(ts_io *io) {
    for (uint32_t i = 0; i < io->noutputs; i++)
        memset(io->out[i].data, 0xa5, io->out[i].bytes);
}

/* Compiles g for devices (with `disable` passes off) and checks the plan. */
static braid_plan *compile(const braid_graph *g, const char *devices,
                           unsigned disable, uint64_t seed) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.disable_passes = disable;
    o.num_threads = 2;
    o.archs = "none"; /* no ahead-of-time NVRTC build here */
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    if (s != BRAID_OK) ts_log_graph(g);
    cr_assert_eq(s, BRAID_OK, "seed %llu, %s: compile: %s",
                 (unsigned long long)seed, devices, braid_last_error());
    s = bp_verify_plan(p);
    cr_assert_eq(s, BRAID_OK, "seed %llu, %s: %s", (unsigned long long)seed,
                 devices, braid_last_error());
    return p;
}

/* Runs p (emulated under emu_seed, or natively when emulate is false) and
 * compares with the reference already in io->ref. */
static void run_and_compare(const braid_graph *g, const braid_plan *p,
                            ts_io *io, bool emulate, uint64_t emu_seed,
                            uint64_t seed, const char *what) {
    braid_exec *e = NULL;
    braid_status s = emulate ? br_exec_new_emulated(p, emu_seed, &e)
                             : braid_exec_new(p, &e);
    cr_assert_eq(s, BRAID_OK, "seed %llu, %s: exec: %s",
                 (unsigned long long)seed, what, braid_last_error());
    scribble_outputs(io);
    s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    braid_exec_free(e);
    cr_assert_eq(s, BRAID_OK, "seed %llu, %s: run: %s",
                 (unsigned long long)seed, what, braid_last_error());
    char msg[512] = "";
    bool ok = ts_io_compare(io, msg, sizeof msg);
    if (!ok) {
        ts_log_graph(g);
        bp_plan_dump(p, "verify_plan", stderr);
    }
    cr_assert(ok, "seed %llu, %s (emulation seed %llu): %s",
              (unsigned long long)seed, what, (unsigned long long)emu_seed,
              msg);
}

static void check_graph(uint64_t seed, const ts_graph_options *o,
                        unsigned disable, worst *w) {
    braid_graph *g = ts_random_graph(seed, o);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "seed %llu: %s",
                 (unsigned long long)seed, braid_graph_error(g));
    ts_io *io = ts_io_new(g, seed);
    cr_assert_not_null(io);
    braid_status s =
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs);
    cr_assert_eq(s, BRAID_OK, "seed %llu: reference: %s",
                 (unsigned long long)seed, braid_last_error());
    braid_plan *cpu = compile(g, "cpu", disable, seed);
    note_ratio(cpu, seed, w);
    run_and_compare(g, cpu, io, false, 0, seed, "cpu");
    braid_plan_free(cpu);
    unsigned gpu_disable = disable | (seed % 8 == 7 ? BRAID_PASS_REUSE : 0);
    braid_plan *gpu = compile(g, "cpu,cuda:0", gpu_disable, seed);
    note_ratio(gpu, seed, w);
    for (uint64_t k = 0; k < 2; k++)
        run_and_compare(g, gpu, io, true, seed * 2 + k, seed, "cpu,cuda:0");
    braid_plan_free(gpu);
    ts_io_free(io);
    braid_graph_free(g);
}

/* count graphs from seed base + salt; hints on odd seeds. */
static void run_many(int count, uint64_t salt, int max_nodes, bool mixed) {
    uint64_t scale = env_u64("BRAID_PLAN_PROPS", 1);
    uint64_t base = env_u64("BRAID_PLAN_PROPS_BASE", 0) + salt;
    unsigned disable = (unsigned)env_u64("BRAID_PLAN_PROPS_DISABLE", 0);
    worst w = {0};
    for (uint64_t i = 0; i < (uint64_t)count * scale; i++) {
        ts_graph_options o;
        ts_graph_options_default(&o);
        o.max_nodes = max_nodes;
        o.mixed_dtypes = mixed;
        o.max_dim = 5;
        o.device_hints = (base + i) % 2 == 1;
        check_graph(base + i, &o, disable, &w);
    }
    cr_log_info("%llu graphs from seed %llu: worst arena / lower bound %.3f "
                "(seed %llu); %u plans with GPU nodes, %u with several "
                "queues, %u reuse events, %u views, %u tensors sharing "
                "bytes",
                (unsigned long long)(count * scale), (unsigned long long)base,
                w.ratio, (unsigned long long)w.seed, w.gpu, w.queues, w.reuse,
                w.views, w.shared);
}

Test(plan_properties, f32_small) { run_many(400, 900000, 12, false); }

Test(plan_properties, mixed_small) { run_many(400, 910000, 12, true); }

Test(plan_properties, f32_deep) { run_many(200, 920000, 30, false); }

Test(plan_properties, mixed_deep) { run_many(200, 930000, 30, true); }
