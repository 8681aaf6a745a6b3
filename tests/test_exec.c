/* tests/test_exec.c — the plan and executor API: compile errors, binding
 * errors, output subsets, repeated runs, several executors of one plan,
 * plan printing, thread-count independence, and hand-built models (MLP,
 * softmax, layer norm) against the reference evaluator.
 *
 * Tolerances: ts_tolerance (f32: |x - r| ≤ 1e-4 + 1e-4·|r|). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "passes/plan.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- helpers ------------------------------------------------------------- */

static braid_plan *compile_ok(const braid_graph *g, const char *devices,
                              int threads) {
    braid_compile_options o = ts_compile_options(devices, 0);
    o.num_threads = threads;
    return ts_compile_ok(g, &o);
}

static braid_exec *exec_ok(const braid_plan *p) {
    braid_exec *e = NULL;
    braid_status s = braid_exec_new(p, &e);
    cr_assert_eq(s, BRAID_OK, "exec_new: %s", braid_last_error());
    return e;
}

/* Runs g through a fresh plan (threads workers) and the reference on io's
 * inputs, and compares within ts_tolerance. */
static void check_against_reference(const braid_graph *g, ts_io *io,
                                    int threads) {
    braid_plan *p = compile_ok(g, "cpu", threads);
    braid_exec *e = exec_ok(p);
    braid_status s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    cr_assert_eq(s, BRAID_OK, "run: %s", braid_last_error());
    s = braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs);
    cr_assert_eq(s, BRAID_OK, "reference: %s", braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    braid_exec_free(e);
    braid_plan_free(p);
}

/* y = relu(x·w + b) and z = sum(y) — small, two outputs, one dead node. */
static braid_graph *small_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, DIMS(3, 4));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(4));
    braid_tensor y = braid_relu(g, braid_add(g, braid_matmul(g, x, w, 0), b));
    braid_exp(g, x); /* dead: no output needs it */
    braid_tensor z = braid_sum(g, y, 0, NULL, false);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "z", z), BRAID_OK);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* ---- compile ------------------------------------------------------------- */

Test(exec, compile_rejects_null_and_errored_graphs) {
    braid_plan *p = (braid_plan *)1;
    cr_assert_eq(braid_compile(NULL, NULL, &p), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), "graph is NULL"));

    braid_graph *g = braid_graph_new(NULL);
    cr_assert_eq(braid_compile(g, NULL, NULL), BRAID_ERR_INVALID_ARGUMENT);

    braid_tensor a = braid_input(g, "a", BRAID_F32, 1, DIMS(3));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(4));
    braid_tensor c = braid_add(g, a, b); /* shapes do not broadcast */
    cr_assert(!braid_tensor_valid(c));
    braid_output(g, "c", c);
    braid_status s = braid_compile(g, NULL, &p);
    cr_assert_eq(s, braid_graph_status(g));
    cr_assert_eq(s, BRAID_ERR_SHAPE);
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), braid_graph_error(g)),
              "message '%s' lacks the graph's '%s'", braid_last_error(),
              braid_graph_error(g));
    braid_graph_free(g);
}

Test(exec, compile_rejects_graph_without_outputs) {
    braid_graph *g = braid_graph_new(NULL);
    braid_neg(g, braid_input(g, "x", BRAID_F32, 1, DIMS(3)));
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, NULL, &p), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), "no outputs"), "%s",
              braid_last_error());
    braid_graph_free(g);
}

Test(exec, compile_checks_devices_and_threads) {
    braid_graph *g = small_graph();
    const char *bad[] = {
        "gpu",     "cpu,",    "",        "cuda:", "cuda:x",
        "cuda:-1", "cpu,cpu", "cuda:01", "CPU",   "cpu;cuda:0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        braid_compile_options o;
        braid_compile_options_init(&o);
        o.devices = bad[i];
        braid_plan *p = NULL;
        cr_assert_eq(braid_compile(g, &o, &p), BRAID_ERR_INVALID_ARGUMENT,
                     "devices \"%s\" accepted", bad[i]);
        cr_assert_null(p);
        cr_assert(strstr(braid_last_error(), "device"), "%s",
                  braid_last_error());
    }
    braid_compile_options o;
    braid_compile_options_init(&o);
    cr_assert_null(o.devices);
    cr_assert_eq(o.num_threads, 0);
    o.num_threads = -1;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_ERR_INVALID_ARGUMENT);

    /* Listed GPUs are kept even without one; nodes still run on the cpu. */
    p = compile_ok(g, " cpu , cuda:0,cuda:1 ", 2);
    cr_assert_eq(p->in.devs.ndevices, 3u);
    cr_assert_eq(p->in.devs.devices[1].kind, BP_DEVICE_CUDA);
    cr_assert_eq(p->in.devs.devices[2].index, 1);
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        cr_assert_eq(p->res.info[p->res.schedule[i]].device.kind,
                     BP_DEVICE_CPU);
    braid_plan_free(p);
    p = compile_ok(g, NULL, 0); /* detect: the cpu, and no GPU here */
    cr_assert_eq(p->in.devs.devices[0].kind, BP_DEVICE_CPU);
    cr_assert_eq(p->in.devs.ndevices, 1u + (uint32_t)braid_cuda_device_count());
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(exec, plan_is_independent_of_the_graph) {
    braid_graph *g = small_graph();
    braid_plan *p = compile_ok(g, "cpu", 1);
    braid_graph_free(g); /* the plan holds its own copy */
    braid_exec *e = exec_ok(p);
    float x[6] = {1, 2, 3, 4, 5, 6}, w[12], b[4] = {0, -100, 1, 2}, y[8], z;
    for (int i = 0; i < 12; i++)
        w[i] = (float)(i % 3) - 0.5f;
    braid_input_binding in[] = {
        {"x", x, sizeof x}, {"w", w, sizeof w}, {"b", b, sizeof b}};
    braid_output_binding out[] = {{"y", y, sizeof y}, {"z", &z, sizeof z}};
    cr_assert_eq(braid_run(e, in, 3, out, 2), BRAID_OK, "%s",
                 braid_last_error());
    float sum = 0;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++) {
            float acc = b[c];
            for (int k = 0; k < 3; k++)
                acc += x[r * 3 + k] * w[k * 4 + c];
            float want = acc > 0 ? acc : 0;
            cr_assert_float_eq(y[r * 4 + c], want, 1e-5, "y[%d,%d]", r, c);
            sum += want;
        }
    cr_assert_float_eq(z, sum, 1e-4);
    braid_exec_free(e);
    braid_plan_free(p);
}

/* ---- plan printing ------------------------------------------------------- */

Test(exec, plan_print_lists_scheduled_nodes_and_devices) {
    braid_graph *g = small_graph();
    braid_plan *p = compile_ok(g, "cpu,cuda:0", 3);
    /* Fusion may merge nodes too, so only an upper bound is exact. */
    cr_assert_lt(p->res.nschedule, braid_graph_node_count(g),
                 "the dead exp must be dropped");
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(braid_plan_print(p, f), BRAID_OK);
    rewind(f);
    char line[512];
    uint32_t node_lines = 0;
    bool header = false, total = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "plan:", 5) == 0)
            header = strstr(line, "cpu,cuda:0") != NULL;
        if (strncmp(line, "total:", 6) == 0) total = true;
        if (strncmp(line, "  %", 3) == 0) {
            node_lines++;
            cr_assert(strstr(line, " cpu "), "no device in: %s", line);
            cr_assert(strstr(line, " B "), "no bytes in: %s", line);
            cr_assert(!strstr(line, " exp "), "dead node printed: %s", line);
        }
    }
    fclose(f);
    cr_assert(header, "header lacks the device list");
    cr_assert(total, "no summary line");
    cr_assert_eq(node_lines, p->res.nschedule);
    cr_assert_eq(braid_plan_print(NULL, stdout), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_print(p, NULL), BRAID_ERR_INVALID_ARGUMENT);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- bindings ------------------------------------------------------------ */

typedef struct bind_fixture {
    braid_graph *g;
    braid_plan *p;
    braid_exec *e;
    float x[6], w[12], b[4], y[8], z;
    braid_input_binding in[3];
    braid_output_binding out[2];
} bind_fixture;

static void fixture_init(bind_fixture *f) {
    memset(f, 0, sizeof *f);
    f->g = small_graph();
    f->p = compile_ok(f->g, "cpu", 2);
    f->e = exec_ok(f->p);
    ts_fill_random(BRAID_F32, f->x, 6, 1, -1, 1);
    ts_fill_random(BRAID_F32, f->w, 12, 2, -1, 1);
    ts_fill_random(BRAID_F32, f->b, 4, 3, -1, 1);
    f->in[0] = (braid_input_binding){"x", f->x, sizeof f->x};
    f->in[1] = (braid_input_binding){"w", f->w, sizeof f->w};
    f->in[2] = (braid_input_binding){"b", f->b, sizeof f->b};
    f->out[0] = (braid_output_binding){"y", f->y, sizeof f->y};
    f->out[1] = (braid_output_binding){"z", &f->z, sizeof f->z};
}

static void fixture_fini(bind_fixture *f) {
    braid_exec_free(f->e);
    braid_plan_free(f->p);
    braid_graph_free(f->g);
}

static void expect_run_error(bind_fixture *f, braid_status want,
                             const char *needle) {
    braid_status s = braid_run(f->e, f->in, 3, f->out, 2);
    cr_assert_eq(s, want, "got %s (%s), want %s", braid_status_name(s),
                 braid_last_error(), braid_status_name(want));
    cr_assert(strstr(braid_last_error(), needle), "message '%s' lacks '%s'",
              braid_last_error(), needle);
}

Test(exec, binding_errors) {
    bind_fixture f;
    fixture_init(&f);
    cr_assert_eq(braid_run(f.e, f.in, 3, f.out, 2), BRAID_OK);
    float y0[8];
    memcpy(y0, f.y, sizeof y0);

    f.in[1].name = "weights";
    expect_run_error(&f, BRAID_ERR_NOT_FOUND, "\"weights\"");
    f.in[1].name = NULL;
    expect_run_error(&f, BRAID_ERR_INVALID_ARGUMENT, "NULL name");
    f.in[1].name = "x"; /* x twice, w missing */
    expect_run_error(&f, BRAID_ERR_INVALID_ARGUMENT, "\"x\" is bound twice");
    f.in[1].name = "w";
    f.in[1].bytes = 44;
    expect_run_error(&f, BRAID_ERR_SHAPE, "f32[3,4]");
    f.in[1].bytes = sizeof f.w;
    f.in[1].data = NULL;
    expect_run_error(&f, BRAID_ERR_INVALID_ARGUMENT, "NULL data");
    f.in[1].data = f.w;
    cr_assert_eq(braid_run(f.e, f.in, 2, f.out, 2),
                 BRAID_ERR_INVALID_ARGUMENT); /* b not bound */
    cr_assert(strstr(braid_last_error(), "\"b\""), "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), "not bound"), "%s",
              braid_last_error());

    f.out[0].name = "q";
    expect_run_error(&f, BRAID_ERR_NOT_FOUND, "\"q\"");
    f.out[0].name = "y";
    f.out[1].name = "y";
    expect_run_error(&f, BRAID_ERR_INVALID_ARGUMENT, "\"y\" is bound twice");
    f.out[1].name = "z";
    f.out[0].bytes = 4;
    expect_run_error(&f, BRAID_ERR_SHAPE, "f32[2,4]");
    f.out[0].bytes = sizeof f.y;
    f.out[0].data = NULL;
    expect_run_error(&f, BRAID_ERR_INVALID_ARGUMENT, "NULL data");
    f.out[0].data = f.y;

    cr_assert_eq(braid_run(NULL, f.in, 3, f.out, 2),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_run(f.e, NULL, 3, f.out, 2), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_run(f.e, f.in, 3, NULL, 2), BRAID_ERR_INVALID_ARGUMENT);
    braid_exec *e = (braid_exec *)1;
    cr_assert_eq(braid_exec_new(NULL, &e), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(e);
    cr_assert_eq(braid_exec_new(f.p, NULL), BRAID_ERR_INVALID_ARGUMENT);

    /* After all that, the executor still works and gives the same. */
    memset(f.y, 0, sizeof f.y);
    cr_assert_eq(braid_run(f.e, f.in, 3, f.out, 2), BRAID_OK);
    cr_assert_arr_eq(f.y, y0, sizeof y0);
    fixture_fini(&f);
}

Test(exec, outputs_subset_and_misaligned_buffers) {
    bind_fixture f;
    fixture_init(&f);
    cr_assert_eq(braid_run(f.e, f.in, 3, f.out, 2), BRAID_OK);
    float y0[8], z0 = f.z;
    memcpy(y0, f.y, sizeof y0);
    f.z = -1;
    cr_assert_eq(braid_run(f.e, f.in, 3, f.out, 1), BRAID_OK); /* y only */
    cr_assert_arr_eq(f.y, y0, sizeof y0);
    cr_assert_eq(f.z, -1);
    memset(f.y, 0, sizeof f.y);
    cr_assert_eq(braid_run(f.e, f.in, 3, &f.out[1], 1), BRAID_OK); /* z */
    cr_assert_eq(f.z, z0);
    cr_assert_eq(f.y[0], 0);
    cr_assert_eq(braid_run(f.e, f.in, 3, NULL, 0), BRAID_OK); /* nothing */

    /* Unaligned caller memory for an input and an output. */
    unsigned char *raw = malloc(sizeof f.x + 1), *rawy = malloc(sizeof f.y + 1);
    memcpy(raw + 1, f.x, sizeof f.x);
    braid_input_binding in[3] = {{"x", raw + 1, sizeof f.x}, f.in[1], f.in[2]};
    braid_output_binding out = {"y", rawy + 1, sizeof f.y};
    cr_assert_eq(braid_run(f.e, in, 3, &out, 1), BRAID_OK);
    cr_assert_arr_eq(rawy + 1, y0, sizeof y0);
    free(raw);
    free(rawy);
    fixture_fini(&f);
}

Test(exec, output_aliasing_an_input_is_safe) {
    /* y = x + 1 and w = x · 2 written into x's own buffer: the executor may
     * not compute y in place, or w would read the new x. */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1);
    braid_tensor two = braid_fill(g, BRAID_F32, 0, NULL, 2);
    braid_output(g, "y", braid_add(g, x, one));
    braid_output(g, "w", braid_mul(g, x, two));
    braid_output(g, "x_again", x);
    braid_plan *p = compile_ok(g, "cpu", 2);
    braid_exec *e = exec_ok(p);
    float buf[4] = {1, 2, 3, 4}, w[4], xa[4];
    braid_input_binding in = {"x", buf, sizeof buf};
    braid_output_binding out[] = {
        {"y", buf, sizeof buf}, {"w", w, sizeof w}, {"x_again", xa, sizeof xa}};
    cr_assert_eq(braid_run(e, &in, 1, out, 3), BRAID_OK, "%s",
                 braid_last_error());
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(buf[i], (float)(i + 2));
        cr_assert_eq(w[i], (float)(2 * (i + 1)));
        cr_assert_eq(xa[i], (float)(i + 1));
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- repeated runs, several executors ------------------------------------ */

/* softmax(x·w) per row, plus its row max: a graph with some substance. */
static braid_graph *model_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(33, 40));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, DIMS(40, 70));
    braid_tensor h = braid_matmul(g, x, w, 0);
    braid_output(g, "p", braid_softmax(g, h, 1));
    braid_output(g, "m", braid_reduce_max(g, h, 1, (const int[]){1}, true));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

Test(exec, same_executor_many_inputs) {
    braid_graph *g = model_graph();
    braid_plan *p = compile_ok(g, "cpu", 0);
    braid_exec *e = exec_ok(p);
    for (uint64_t seed = 1; seed <= 12; seed++) {
        ts_io *io = ts_io_new(g, seed * 1000);
        cr_assert_not_null(io);
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "run %llu: %s",
                  (unsigned long long)seed, msg);
        ts_io_free(io);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

typedef struct worker_arg {
    const braid_graph *g; /* for the reference */
    braid_exec *e;        /* this worker's executor */
    uint64_t seed;        /* its inputs */
    bool ok;              /* every run matched */
} worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    w->ok = true;
    for (int r = 0; r < 6 && w->ok; r++) {
        ts_io *io = ts_io_new(w->g, w->seed + (uint64_t)r * 7);
        w->ok = io &&
                braid_run(w->e, io->in, io->ninputs, io->out, io->noutputs) ==
                    BRAID_OK &&
                braid_reference_run(w->g, io->in, io->ninputs, io->ref,
                                    io->noutputs) == BRAID_OK &&
                ts_io_compare(io, NULL, 0);
        ts_io_free(io);
    }
    return NULL;
}

Test(exec, two_executors_of_one_plan_run_at_once) {
    braid_graph *g = model_graph();
    braid_plan *p = compile_ok(g, "cpu", 2);
    worker_arg w[2] = {{g, exec_ok(p), 11, false}, {g, exec_ok(p), 99, false}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        cr_assert(w[i].ok, "executor %d gave a wrong result", i);
        braid_exec_free(w[i].e);
    }
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- thread counts ------------------------------------------------------- */

Test(exec, one_and_many_threads_agree_bitwise) {
    /* Large enough that every kernel splits its work. */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, 3, DIMS(7, 61, 97));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, DIMS(61, 1));
    braid_tensor h = braid_input(g, "h", BRAID_F16, 1, DIMS(97));
    braid_tensor t = braid_tanh(g, braid_mul(g, braid_add(g, a, b), a));
    braid_tensor hh =
        braid_cast(g, braid_gelu(g, braid_cast(g, a, BRAID_F16)), BRAID_F32);
    braid_output(g, "t", t);
    braid_output(g, "hh", braid_add(g, hh, braid_cast(g, h, BRAID_F32)));
    braid_output(g, "rows", braid_sum(g, t, 1, (const int[]){2}, false));
    braid_output(g, "cols", braid_mean(g, t, 2, (const int[]){0, 1}, false));
    braid_output(g, "all", braid_sum(g, t, 0, NULL, false));
    braid_output(g, "perm", braid_permute(g, t, (const int[]){2, 0, 1}));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *one = ts_io_new(g, 5), *many = ts_io_new(g, 5);
    braid_plan *p1 = compile_ok(g, "cpu", 1), *p4 = compile_ok(g, "cpu", 4);
    braid_exec *e1 = exec_ok(p1), *e4 = exec_ok(p4);
    cr_assert_eq(braid_run(e1, one->in, one->ninputs, one->out, one->noutputs),
                 BRAID_OK);
    cr_assert_eq(
        braid_run(e4, many->in, many->ninputs, many->out, many->noutputs),
        BRAID_OK);
    for (uint32_t i = 0; i < one->noutputs; i++)
        cr_assert_arr_eq(one->out[i].data, many->out[i].data, one->out[i].bytes,
                         "output %s differs", one->out[i].name);
    cr_assert_eq(
        braid_reference_run(g, one->in, one->ninputs, one->ref, one->noutputs),
        BRAID_OK);
    char msg[512];
    cr_assert(ts_io_compare(one, msg, sizeof msg), "%s", msg);
    braid_exec_free(e1);
    braid_exec_free(e4);
    braid_plan_free(p1);
    braid_plan_free(p4);
    ts_io_free(one);
    ts_io_free(many);
    braid_graph_free(g);
}

/* ---- models against the reference ---------------------------------------- */

Test(exec, mlp_matches_reference) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(24, 48));
    braid_tensor w1 = braid_input(g, "w1", BRAID_F32, 2, DIMS(48, 64));
    braid_tensor b1 = braid_input(g, "b1", BRAID_F32, 1, DIMS(64));
    braid_tensor w2 = braid_input(g, "w2", BRAID_F32, 2, DIMS(16, 64));
    braid_tensor b2 = braid_input(g, "b2", BRAID_F32, 1, DIMS(16));
    braid_tensor h = braid_gelu(g, braid_add(g, braid_matmul(g, x, w1, 0), b1));
    /* w2 stored as [out, in]: transpose_b, as in a linear layer */
    braid_tensor y =
        braid_add(g, braid_matmul(g, h, w2, BRAID_TRANSPOSE_B), b2);
    braid_output(g, "y", y);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    for (int threads = 1; threads <= 3; threads += 2) {
        ts_io *io = ts_io_new(g, 42);
        /* Weights of 1/sqrt(fan-in) scale keep activations O(1). */
        ts_fill_random(BRAID_F32, (void *)io->in[1].data, 48 * 64, 7, -0.15,
                       0.15);
        ts_fill_random(BRAID_F32, (void *)io->in[3].data, 16 * 64, 8, -0.12,
                       0.12);
        check_against_reference(g, io, threads);
        ts_io_free(io);
    }
    braid_graph_free(g);
}

Test(exec, softmax_matches_reference) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(3, 37, 129));
    braid_output(g, "last", braid_softmax(g, x, 2));
    braid_output(g, "middle", braid_softmax(g, x, 1));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, 3);
    check_against_reference(g, io, 0);
    /* rows sum to one */
    const float *p = io->out[0].data;
    double s = 0;
    for (int i = 0; i < 129; i++)
        s += p[i];
    cr_assert_float_eq(s, 1.0, 1e-5);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(exec, layer_norm_matches_reference) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(19, 300));
    braid_tensor gamma = braid_input(g, "gamma", BRAID_F32, 1, DIMS(300));
    braid_tensor beta = braid_input(g, "beta", BRAID_F32, 1, DIMS(300));
    braid_output(g, "y", braid_layer_norm(g, x, gamma, beta, 1e-5));
    braid_output(g, "plain",
                 braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, 1e-3));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, 17);
    check_against_reference(g, io, 2);
    /* normalised rows have mean 0 */
    const float *y = io->out[1].data;
    double m = 0;
    for (int i = 0; i < 300; i++)
        m += y[i];
    cr_assert(fabs(m / 300) < 1e-4, "row mean %g", m / 300);
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- devices ------------------------------------------------------------- */

Test(exec, cuda_status_explains_missing_devices) {
    int n = braid_cuda_device_count();
    cr_assert(n >= 0);
    const char *s = braid_cuda_status();
    cr_assert_not_null(s);
    cr_assert(s[0] != '\0');
    if (n == 0)
        cr_assert(strstr(s, "no CUDA device") || strstr(s, "without CUDA"),
                  "%s", s);
    cr_log_info("cuda: %d device(s): %s", n, s);
    cr_assert_eq(braid_cuda_device_count(), n); /* computed once */
    cr_assert_eq(braid_cuda_status(), s);
}

Test(exec, empty_inputs_may_have_null_data) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor e = braid_input(g, "e", BRAID_F32, 2, DIMS(2, 0));
    braid_output(g, "cat",
                 braid_concat(g, 3, (const braid_tensor[]){e, x, e}, 1));
    braid_output(g, "e2", braid_exp(g, e));
    braid_plan *p = compile_ok(g, "cpu", 2);
    braid_exec *ex = exec_ok(p);
    float xv[6] = {1, 2, 3, 4, 5, 6}, cat[6];
    braid_input_binding in[] = {{"x", xv, sizeof xv}, {"e", NULL, 0}};
    braid_output_binding out[] = {{"cat", cat, sizeof cat}, {"e2", NULL, 0}};
    cr_assert_eq(braid_run(ex, in, 2, out, 2), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_arr_eq(cat, xv, sizeof xv);
    braid_exec_free(ex);
    braid_plan_free(p);
    braid_graph_free(g);
}
