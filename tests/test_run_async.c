/* tests/test_run_async.c — braid_run_async / braid_wait on CPU plans (the
 * GPU variants are in tests/test_cuda_graph.c): the same bits as
 * braid_run on random graphs, emulated device plans, a second run before
 * the wait refused (braid_run_async and braid_run) with the outstanding
 * run intact, braid_wait without a run, twice, or with NULL, a run that
 * cannot start leaving nothing outstanding, binding arrays reusable once
 * braid_run_async returned, the wait on another thread, and
 * braid_exec_free of an executor with a run outstanding (it waits: the
 * outputs are written).
 *
 * Tolerances: ts_tolerance against the reference; async against braid_run:
 * bit for bit (same plan, same kernels). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "runtime/runtime.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* y = relu(x·w + b), z = sum(y): two outputs, z from y. */
static braid_graph *small_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(5, 7));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, DIMS(7, 4));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(4));
    braid_tensor y = braid_relu(g, braid_add(g, braid_matmul(g, x, w, 0), b));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "z", braid_sum(g, y, 0, NULL, false)),
                 BRAID_OK);
    return g;
}

static braid_exec *exec_for(const braid_graph *g, braid_plan **p) {
    braid_compile_options o = ts_compile_options("cpu", 0);
    o.num_threads = 2;
    *p = ts_compile_ok(g, &o);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

/* Outputs of a and b are byte-identical. */
static void assert_same(const ts_io *a, const ts_io *b, const char *what) {
    for (uint32_t k = 0; k < a->noutputs; k++)
        cr_assert(memcmp(a->out[k].data, b->out[k].data, a->out[k].bytes) == 0,
                  "%s: output %s differs from braid_run's", what,
                  a->out[k].name);
}

static void assert_reference(const braid_graph *g, ts_io *io,
                             const char *what) {
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: reference: %s", what, braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", what, msg);
}

Test(run_async, same_bits_as_run_on_random_graphs) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.mixed_dtypes = true;
    for (uint64_t seed = 500; seed < 540; seed++) {
        braid_graph *g = ts_random_graph(seed, &go);
        braid_plan *p = NULL;
        braid_exec *e = exec_for(g, &p);
        ts_io *a = ts_io_new(g, seed), *b = ts_io_new(g, seed);
        char what[48];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
        for (int r = 0; r < 2; r++) { /* a second run reuses the tables */
            cr_assert_eq(braid_run(e, b->in, b->ninputs, b->out, b->noutputs),
                         BRAID_OK, "%s: %s", what, braid_last_error());
            cr_assert_eq(
                braid_run_async(e, a->in, a->ninputs, a->out, a->noutputs),
                BRAID_OK, "%s: %s", what, braid_last_error());
            cr_assert_eq(braid_wait(e), BRAID_OK, "%s: %s", what,
                         braid_last_error());
            assert_same(a, b, what);
        }
        assert_reference(g, a, what);
        ts_io_free(a);
        ts_io_free(b);
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(run_async, emulated_device_plan) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.device_hints = true;
    for (uint64_t seed = 900; seed < 910; seed++) {
        braid_graph *g = ts_random_graph(seed, &go);
        braid_compile_options o = ts_compile_options("cpu,cuda:0", 0);
        braid_plan *p = ts_compile_ok(g, &o);
        braid_exec *e = NULL;
        cr_assert_eq(br_exec_new_emulated(p, seed, &e), BRAID_OK, "%s",
                     braid_last_error());
        ts_io *io = ts_io_new(g, seed);
        cr_assert_eq(
            braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs),
            BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(braid_wait(e), BRAID_OK, "%s", braid_last_error());
        assert_reference(g, io, "emulated");
        ts_io_free(io);
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(run_async, second_run_before_wait_is_refused) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p);
    ts_io *a = ts_io_new(g, 1), *b = ts_io_new(g, 2), *want = ts_io_new(g, 1);
    cr_assert_eq(
        braid_run(e, want->in, want->ninputs, want->out, want->noutputs),
        BRAID_OK);
    cr_assert_eq(braid_run_async(e, a->in, a->ninputs, a->out, a->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    braid_status s = braid_run_async(e, b->in, b->ninputs, b->out, b->noutputs);
    cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s", braid_status_name(s));
    cr_assert(strstr(braid_last_error(), "braid_run_async") &&
                  strstr(braid_last_error(), "braid_wait"),
              "message: %s", braid_last_error());
    s = braid_run(e, b->in, b->ninputs, b->out, b->noutputs);
    cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s", braid_status_name(s));
    cr_assert(strstr(braid_last_error(), "braid_run:") &&
                  strstr(braid_last_error(), "outstanding"),
              "message: %s", braid_last_error());
    cr_assert_eq(braid_wait(e), BRAID_OK, "%s", braid_last_error());
    assert_same(a, want, "the outstanding run");
    /* after the wait the executor takes runs again */
    cr_assert_eq(braid_run(e, b->in, b->ninputs, b->out, b->noutputs), BRAID_OK,
                 "%s", braid_last_error());
    assert_reference(g, b, "after the wait");
    ts_io_free(a);
    ts_io_free(b);
    ts_io_free(want);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(run_async, wait_without_a_run) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p);
    cr_assert_eq(braid_wait(e), BRAID_OK, "never started");
    ts_io *io = ts_io_new(g, 3);
    cr_assert_eq(braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK);
    cr_assert_eq(braid_wait(e), BRAID_OK);
    cr_assert_eq(braid_wait(e), BRAID_OK, "waited for already");
    cr_assert_eq(braid_wait(NULL), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "braid_wait"), "%s",
              braid_last_error());
    assert_reference(g, io, "run");
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(run_async, a_run_that_cannot_start_leaves_nothing_outstanding) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p);
    ts_io *io = ts_io_new(g, 4);
    const char *name = io->in[0].name;
    io->in[0].name = "nope";
    braid_status s =
        braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs);
    cr_assert_eq(s, BRAID_ERR_NOT_FOUND, "%s", braid_status_name(s));
    cr_assert(strstr(braid_last_error(), "braid_run_async:") &&
                  strstr(braid_last_error(), "nope"),
              "message: %s", braid_last_error());
    io->in[0].name = name;
    io->in[0].bytes++;
    s = braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs);
    cr_assert_eq(s, BRAID_ERR_SHAPE, "%s", braid_status_name(s));
    io->in[0].bytes--;
    cr_assert_eq(braid_run_async(NULL, io->in, io->ninputs, io->out, 1),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_wait(e), BRAID_OK, "nothing was outstanding");
    cr_assert_eq(braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_wait(e), BRAID_OK, "%s", braid_last_error());
    assert_reference(g, io, "after refused starts");
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(run_async, binding_arrays_may_be_reused_before_the_wait) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p);
    ts_io *io = ts_io_new(g, 5), *want = ts_io_new(g, 5);
    cr_assert_eq(
        braid_run(e, want->in, want->ninputs, want->out, want->noutputs),
        BRAID_OK);
    /* copies of the binding arrays with names in scratch memory, clobbered
       once braid_run_async returned */
    braid_input_binding *in = calloc(io->ninputs, sizeof *in);
    braid_output_binding *out = calloc(io->noutputs, sizeof *out);
    char(*names)[16] = calloc(io->ninputs + io->noutputs, sizeof *names);
    for (uint32_t i = 0; i < io->ninputs; i++) {
        snprintf(names[i], sizeof names[i], "%s", io->in[i].name);
        in[i] = io->in[i];
        in[i].name = names[i];
    }
    for (uint32_t j = 0; j < io->noutputs; j++) {
        char *nm = names[io->ninputs + j];
        snprintf(nm, sizeof names[0], "%s", io->out[j].name);
        out[j] = io->out[j];
        out[j].name = nm;
    }
    cr_assert_eq(braid_run_async(e, in, io->ninputs, out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    memset(names, 0x5A, (io->ninputs + io->noutputs) * sizeof *names);
    memset(in, 0, io->ninputs * sizeof *in);
    memset(out, 0, io->noutputs * sizeof *out);
    free(names);
    free(in);
    free(out);
    cr_assert_eq(braid_wait(e), BRAID_OK, "%s", braid_last_error());
    assert_same(io, want, "reused arrays");
    ts_io_free(io);
    ts_io_free(want);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A braid_wait on another thread, with its status. */
typedef struct waiter {
    braid_exec *e;       /* executor waited for */
    braid_status status; /* braid_wait's answer */
} waiter;

static void *wait_thread(void *arg) {
    waiter *w = arg;
    w->status = braid_wait(w->e);
    return NULL;
}

Test(run_async, wait_on_another_thread) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p);
    ts_io *io = ts_io_new(g, 6), *want = ts_io_new(g, 6);
    cr_assert_eq(
        braid_run(e, want->in, want->ninputs, want->out, want->noutputs),
        BRAID_OK);
    for (int r = 0; r < 3; r++) {
        memset(io->out[0].data, 0, io->out[0].bytes);
        cr_assert_eq(
            braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs),
            BRAID_OK, "%s", braid_last_error());
        waiter w = {e, BRAID_ERR_INTERNAL};
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
        pthread_join(t, NULL);
        cr_assert_eq(w.status, BRAID_OK);
        assert_same(io, want, "waited on another thread");
    }
    ts_io_free(io);
    ts_io_free(want);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(run_async, free_with_a_run_outstanding_waits) {
    braid_graph *g = small_graph();
    braid_plan *p = NULL;
    braid_exec *e = exec_for(g, &p);
    ts_io *io = ts_io_new(g, 7), *want = ts_io_new(g, 7);
    cr_assert_eq(
        braid_run(e, want->in, want->ninputs, want->out, want->noutputs),
        BRAID_OK);
    for (uint32_t k = 0; k < io->noutputs; k++)
        memset(io->out[k].data, 0xA5, io->out[k].bytes);
    cr_assert_eq(braid_run_async(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    braid_exec_free(e); /* no braid_wait */
    assert_same(io, want, "freed while outstanding");
    ts_io_free(io);
    ts_io_free(want);
    braid_plan_free(p);
    braid_graph_free(g);
}
