/* tests/test_cuda_common.h — helpers shared by the GPU suites
 * (tests/test_cuda_*.c): skip without a GPU, hint nodes to a GPU, compile
 * for "cpu,cuda:0", run on the GPU and on the reference, compare.
 *
 * Every GPU test starts with TC_REQUIRE_GPU(), which skips it (exit status
 * 0, so CI without a GPU passes) when braid_cuda_device_count() is 0.
 * Static functions only: each suite includes this once. */
#ifndef BRAID_TESTS_TEST_CUDA_COMMON_H
#define BRAID_TESTS_TEST_CUDA_COMMON_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "runtime/cuda/cuda.h"
#include "tests/support/op_cases.h"
#include "tests/support/support.h"

#define TC_DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Skips the test without a GPU; the reason reads "no CUDA device: ..." or
 * "built without CUDA". */
#define TC_REQUIRE_GPU()                                                       \
    do {                                                                       \
        if (braid_cuda_device_count() == 0)                                    \
            cr_skip_test("%s", braid_cuda_status());                           \
    } while (0)

/* True when tools/gpu-check.sh runs the suite under compute-sanitizer
 * (BRAID_TEST_SANITIZER set): timings and overlap figures mean nothing
 * there, and suites that repeat or stream large data do less of it. */
static inline bool tc_under_sanitizer(void) {
    return getenv("BRAID_TEST_SANITIZER") != NULL;
}

/* Hints every node of g that is not an input or a constant to device. */
static inline void tc_hint_all(braid_graph *g, const char *device) {
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++) {
        braid_op op = g->nodes[id].op;
        if (op != BRAID_OP_INPUT && op != BRAID_OP_CONSTANT)
            braid_set_device(g, (braid_tensor){id}, device);
    }
}

/* Hints each non-input node to "cpu" or "cuda:0" at random (p_gpu). */
static inline void tc_hint_random(braid_graph *g, uint64_t seed, double p_gpu) {
    uint64_t st = seed * 0x9E3779B97F4A7C15u + 17;
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++) {
        braid_op op = g->nodes[id].op;
        if (op == BRAID_OP_INPUT || op == BRAID_OP_CONSTANT) continue;
        bool gpu = ts_rand_unit(&st) < p_gpu;
        braid_set_device(g, (braid_tensor){id}, gpu ? "cuda:0" : "cpu");
    }
}

/* Compile options for the GPU suites: devices "cpu,cuda:0", 2 threads.
 * With a GPU, kernels are built ahead of time for it (executors load the
 * stored CUBIN); without one, not at all (archs "none": the suites that
 * run here never launch them, and NVRTC per plan would cost minutes). */
static inline braid_compile_options tc_options(void) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.num_threads = 2;
    o.archs = braid_cuda_device_count() > 0 ? NULL : "none";
    return o;
}

/* The plan of g (hinted to cuda:0) holds exactly one node of op, placed on
 * cuda:0 (compiled without kernels: a check of placement only). */
static inline void tc_assert_one_on_gpu(const braid_graph *g, braid_op op,
                                        const char *what) {
    braid_compile_options o = tc_options();
    o.archs = "none";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.graph->nodes[id].op == op) {
            cr_assert_eq(p->res.info[id].device.kind, BP_DEVICE_CUDA, "%s",
                         what);
            n++;
        }
    cr_assert_eq(n, 1, "%s: %u %s nodes", what, (unsigned)n, bg_op(op)->name);
    braid_plan_free(p);
}

/* Logs g in the text format (for reproducing a failure by hand). */
static inline void tc_log_graph(const braid_graph *g) {
    char *text = NULL;
    size_t len = 0;
    if (braid_graph_print(g, &text, &len) == BRAID_OK)
        cr_log_info("graph:\n%s", text);
    free(text);
}

/* Compiles g with o, runs it `runs` times on io's inputs into io->out, and
 * runs the reference into io->ref. The first failing status, message in
 * braid_last_error(). *gpu_nodes (may be NULL) receives how many nodes the
 * executor runs on a GPU queue. */
static inline braid_status tc_run(const braid_graph *g,
                                  const braid_compile_options *o, ts_io *io,
                                  int runs, uint32_t *gpu_nodes) {
    braid_plan *plan = NULL;
    braid_exec *exec = NULL;
    braid_status s = braid_compile(g, o, &plan);
    if (s == BRAID_OK && gpu_nodes) {
        *gpu_nodes = 0;
        for (uint32_t i = 0; i < plan->res.nschedule; i++)
            *gpu_nodes += br_node_on_device_queue(plan, plan->res.schedule[i]);
    }
    if (s == BRAID_OK) s = braid_exec_new(plan, &exec);
    for (int r = 0; s == BRAID_OK && r < runs; r++)
        s = braid_run(exec, io->in, io->ninputs, io->out, io->noutputs);
    braid_exec_free(exec);
    braid_plan_free(plan);
    if (s != BRAID_OK) return s;
    return braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs);
}

/* Cases run by tc_check_gpu whose plan had GPU nodes (the simplifier may
 * leave none, e.g. for a cast to the same dtype; a suite asserts that most
 * of its cases reached the GPU). */
static int tc_gpu_cases;

/* Marks y as output "y", fills inputs from ranges (NULL: defaults), runs g
 * hinted entirely to cuda:0 and the reference, compares. False with a
 * message on failure. */
static inline bool tc_check_gpu(braid_graph *g, braid_tensor y,
                                const ts_range *ranges, uint64_t seed,
                                const braid_compile_options *o, char *msg,
                                size_t msgsize) {
    if (!braid_tensor_valid(y) || braid_output(g, "y", y) != BRAID_OK) {
        snprintf(msg, msgsize, "builder: %s", braid_graph_error(g));
        return false;
    }
    tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, seed);
    if (!io) {
        snprintf(msg, msgsize, "ts_io_new: out of memory");
        return false;
    }
    for (uint32_t i = 0; ranges && i < io->ninputs; i++) {
        const char *name;
        braid_tensor t;
        braid_dtype dt = BRAID_F32;
        braid_graph_input(g, i, &name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        ts_fill_input(io, i, dt, ranges[i], seed);
    }
    braid_compile_options def = tc_options();
    uint32_t gpu = 0;
    braid_status s = tc_run(g, o ? o : &def, io, 1, &gpu);
    bool ok = s == BRAID_OK;
    if (!ok)
        snprintf(msg, msgsize, "%s: %s", braid_status_name(s),
                 braid_last_error());
    else
        ok = ts_io_compare(io, msg, msgsize);
    if (gpu > 0) tc_gpu_cases++;
    if (!ok) tc_log_graph(g);
    ts_io_free(io);
    return ok;
}

#define TC_CHECK(g, y, ranges, seed, what)                                     \
    do {                                                                       \
        char msg_[900];                                                        \
        cr_assert(                                                             \
            tc_check_gpu((g), (y), (ranges), (seed), NULL, msg_, sizeof msg_), \
            "%s: %s", (what), msg_);                                           \
    } while (0)

#endif /* BRAID_TESTS_TEST_CUDA_COMMON_H */
