/* tests/test_cuda_bindings.c — device pointers as braid_run / braid_run_async
 * bindings: a device input read only by copies to the GPU, device outputs
 * written by a D2H copy or copied out with cudaMemcpy when the cpu computes
 * them (or a CPU node also reads them), fresh device buffers every run
 * (those dispatch without the CUDA graph, host runs in between replay
 * it), the same device buffers every run (captured once with them, then
 * replayed; host or other device buffers in between dispatch node by
 * node, and the kept buffers replay again), the refusal when a CPU node would
 * read a device input (nothing written), and braid_run_async + braid_wait.
 * Results are compared with braid_reference_run on random inputs, f32 and f16.
 * Skipped without a CUDA device; tests/cuda_mock/run.sh runs it on the host
 * emulation, where the host touching device memory crashes. */
#include "tests/test_cuda_common.h"

/* Per graph input and output, a device buffer and the bindings naming
 * them, built from io (same names, same sizes). */
typedef struct tb_dev {
    uint32_t nin, nout;
    void **in_mem;              /* per input: device buffer */
    void **out_mem;             /* per output: device buffer */
    braid_input_binding *in;    /* bindings to in_mem */
    braid_output_binding *out;  /* bindings to out_mem */
} tb_dev;

/* Device copies of io's inputs (uploaded) and device outputs (filled with
 * 0xA5 bytes), on cuda:0. */
static tb_dev tb_dev_new(const ts_io *io) {
    tb_dev d = {io->ninputs, io->noutputs, NULL, NULL, NULL, NULL};
    d.in_mem = calloc(d.nin + 1, sizeof *d.in_mem);
    d.out_mem = calloc(d.nout + 1, sizeof *d.out_mem);
    d.in = calloc(d.nin + 1, sizeof *d.in);
    d.out = calloc(d.nout + 1, sizeof *d.out);
    cr_assert(d.in_mem && d.out_mem && d.in && d.out);
    for (uint32_t i = 0; i < d.nin; i++) {
        size_t n = io->in[i].bytes;
        d.in_mem[i] = br_cuda_device_alloc(0, n);
        cr_assert(d.in_mem[i], "cudaMalloc of %zu bytes failed", n);
        cr_assert_eq(br_cuda_memcpy(d.in_mem[i], io->in[i].data, n), BRAID_OK,
                     "%s", braid_last_error());
        d.in[i] = (braid_input_binding){io->in[i].name, d.in_mem[i], n};
    }
    for (uint32_t j = 0; j < d.nout; j++) {
        size_t n = io->out[j].bytes;
        d.out_mem[j] = br_cuda_device_alloc(0, n);
        cr_assert(d.out_mem[j], "cudaMalloc of %zu bytes failed", n);
        void *junk = malloc(n ? n : 1);
        memset(junk, 0xA5, n);
        cr_assert_eq(br_cuda_memcpy(d.out_mem[j], junk, n), BRAID_OK);
        free(junk);
        d.out[j] = (braid_output_binding){io->out[j].name, d.out_mem[j], n};
    }
    return d;
}

/* Downloads the device outputs into io->out (for ts_io_compare). */
static void tb_dev_download(const tb_dev *d, ts_io *io) {
    for (uint32_t j = 0; j < d->nout; j++)
        cr_assert_eq(br_cuda_memcpy(io->out[j].data, d->out_mem[j],
                                    io->out[j].bytes),
                     BRAID_OK, "%s", braid_last_error());
}

static void tb_dev_free(tb_dev *d) {
    for (uint32_t i = 0; i < d->nin; i++)
        br_cuda_device_free(d->in_mem[i]);
    for (uint32_t j = 0; j < d->nout; j++)
        br_cuda_device_free(d->out_mem[j]);
    free(d->in_mem);
    free(d->out_mem);
    free(d->in);
    free(d->out);
}

static braid_exec *tb_exec(const braid_graph *g, braid_plan **p) {
    braid_compile_options o = tc_options();
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

/* y = sigmoid(x·w + b) · (x·w), t = tanh(x) on cuda:0 (inputs x [32, 40],
 * w [40, 24], b [24]). */
static braid_graph *tb_gpu_graph(braid_dtype dt) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, 2, TC_DIMS(32, 40));
    braid_tensor w = braid_input(g, "w", dt, 2, TC_DIMS(40, 24));
    braid_tensor b = braid_input(g, "b", dt, 1, TC_DIMS(24));
    braid_tensor h = braid_matmul(g, x, w, 0);
    braid_tensor y = braid_mul(g, braid_sigmoid(g, braid_add(g, h, b)), h);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s",
                 braid_graph_error(g));
    cr_assert_eq(braid_output(g, "t", braid_tanh(g, x)), BRAID_OK, "%s",
                 braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    return g;
}

/* io's outputs (already in host memory) against the reference evaluator
 * run on the same inputs, within ts_tolerance. */
static void tb_assert_reference(const braid_graph *g, ts_io *io,
                                const char *what) {
    cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                     io->noutputs),
                 BRAID_OK, "%s: reference: %s", what, braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", what, msg);
}

/* Runs io through e with device bindings (sync or async), downloads the
 * outputs, runs the reference and compares. */
static void tb_check_device_run(braid_exec *e, const braid_graph *g,
                                ts_io *io, bool async, const char *what) {
    tb_dev d = tb_dev_new(io);
    braid_status s =
        async ? braid_run_async(e, d.in, d.nin, d.out, d.nout)
              : braid_run(e, d.in, d.nin, d.out, d.nout);
    cr_assert_eq(s, BRAID_OK, "%s: %s", what, braid_last_error());
    if (async) {
        s = braid_wait(e);
        cr_assert_eq(s, BRAID_OK, "%s: braid_wait: %s", what,
                     braid_last_error());
    }
    tb_dev_download(&d, io);
    tb_assert_reference(g, io, what);
    tb_dev_free(&d);
}

/* Device in → GPU → device out, fresh buffers and inputs every run, host
 * runs in between (those capture and replay the CUDA graph). */
static void device_runs(braid_dtype dt) {
    braid_graph *g = tb_gpu_graph(dt);
    braid_plan *p = NULL;
    braid_exec *e = tb_exec(g, &p);
    for (int r = 0; r < 6; r++) {
        ts_io *io = ts_io_new(g, 100 + (uint64_t)r);
        cr_assert(io);
        char what[64];
        if (r % 2 == 1) { /* host buffers: warm-up, capture, replays */
            cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out,
                                   io->noutputs),
                         BRAID_OK, "%s", braid_last_error());
            snprintf(what, sizeof what, "host run %d", r);
            tb_assert_reference(g, io, what);
        } else {
            snprintf(what, sizeof what, "%s device run %d",
                     braid_dtype_name(dt), r);
            tb_check_device_run(e, g, io, false, what);
            cr_assert(!br_cuda_last_run_used_graph(br_exec_cuda(e)),
                      "a run binding device memory replayed the graph");
        }
        ts_io_free(io);
    }
    cr_log_info("%s log:\n%s", braid_dtype_name(dt),
                br_cuda_log(br_exec_cuda(e)));
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_bindings, device_in_device_out_f32) {
    TC_REQUIRE_GPU();
    device_runs(BRAID_F32);
}

Test(cuda_bindings, device_in_device_out_f16) {
    TC_REQUIRE_GPU();
    device_runs(BRAID_F16);
}

/* The same device buffers every run, new values uploaded into them: the
 * second run captures the CUDA graph reading and writing those buffers
 * itself, later ones replay it; a run with host buffers, and one with
 * fresh device buffers, dispatch node by node (the graph is not theirs),
 * and the kept buffers replay again after them. Every run against the
 * reference on its own random inputs. */
Test(cuda_bindings, kept_device_buffers_replay_the_graph) {
    TC_REQUIRE_GPU();
    braid_graph *g = tb_gpu_graph(BRAID_F32);
    braid_plan *p = NULL;
    braid_exec *e = tb_exec(g, &p);
    ts_io *io0 = ts_io_new(g, 400);
    cr_assert(io0);
    tb_dev kept = tb_dev_new(io0); /* names its bindings with io0's */
    /* 0: warm-up, 1: capture, 2-3: replays, 4: host, 5: fresh device
     * buffers, 6-7: the kept ones again */
    for (int r = 0; r < 8; r++) {
        ts_io *io = ts_io_new(g, 401 + (uint64_t)r);
        cr_assert(io);
        char what[80];
        snprintf(what, sizeof what, "run %d", r);
        if (r == 4) {
            cr_assert_eq(
                braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                BRAID_OK, "%s", braid_last_error());
            tb_assert_reference(g, io, what);
        } else if (r == 5) {
            tb_check_device_run(e, g, io, false, what);
        } else {
            for (uint32_t i = 0; i < kept.nin; i++)
                cr_assert_eq(br_cuda_memcpy(kept.in_mem[i], io->in[i].data,
                                            io->in[i].bytes),
                             BRAID_OK, "%s", braid_last_error());
            cr_assert_eq(braid_run(e, kept.in, kept.nin, kept.out, kept.nout),
                         BRAID_OK, "%s: %s", what, braid_last_error());
            tb_dev_download(&kept, io);
            tb_assert_reference(g, io, what);
        }
        bool replayed = br_cuda_last_run_used_graph(br_exec_cuda(e));
        bool want = r >= 1 && r != 4 && r != 5;
        cr_assert_eq(replayed, want, "%s: graph %s, expected %s", what,
                     replayed ? "used" : "not used", want ? "used" : "not");
        ts_io_free(io);
    }
    cr_log_info("log:\n%s", br_cuda_log(br_exec_cuda(e)));
    tb_dev_free(&kept);
    ts_io_free(io0);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_bindings, device_input_on_the_plans_gpu) {
    TC_REQUIRE_GPU();
    braid_graph *g = tb_gpu_graph(BRAID_F32);
    braid_plan *p = NULL;
    braid_exec *e = tb_exec(g, &p);
    ts_io *io = ts_io_new(g, 7);
    tb_dev d = tb_dev_new(io);
    cr_assert_eq(br_cuda_pointer_device(d.in_mem[0]), 0);
    cr_assert_eq(br_cuda_pointer_device(io->in[0].data), -1);
    /* device inputs, host outputs (pageable: staged or deferred D2H) */
    cr_assert_eq(braid_run(e, d.in, d.nin, io->out, io->noutputs), BRAID_OK,
                 "%s", braid_last_error());
    tb_assert_reference(g, io, "mixed host and device bindings");
    /* host inputs, device outputs */
    cr_assert_eq(braid_run(e, io->in, io->ninputs, d.out, d.nout), BRAID_OK,
                 "%s", braid_last_error());
    tb_dev_download(&d, io);
    tb_assert_reference(g, io, "host inputs, device outputs");
    tb_dev_free(&d);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_bindings, cpu_reader_of_a_device_input_is_refused) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(64));
    braid_tensor c = braid_exp(g, x); /* on the cpu: reads x there */
    braid_set_device(g, c, "cpu");
    braid_tensor n = braid_neg(g, x);
    braid_set_device(g, n, "cuda:0");
    cr_assert_eq(braid_output(g, "c", c), BRAID_OK);
    cr_assert_eq(braid_output(g, "n", n), BRAID_OK);
    braid_plan *p = NULL;
    braid_exec *e = tb_exec(g, &p);
    ts_io *io = ts_io_new(g, 3);
    tb_dev d = tb_dev_new(io);
    float host_c[64], host_n[64];
    memset(host_c, 0x5A, sizeof host_c);
    memset(host_n, 0x5A, sizeof host_n);
    braid_output_binding out[2] = {{"c", host_c, sizeof host_c},
                                   {"n", host_n, sizeof host_n}};
    for (int async = 0; async < 2; async++) {
        braid_status s = async ? braid_run_async(e, d.in, 1, out, 2)
                               : braid_run(e, d.in, 1, out, 2);
        cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s", braid_last_error());
        const char *m = braid_last_error();
        cr_log_info("refused: %s", m);
        cr_assert(strstr(m, "input \"x\" is device memory on cuda:0, but "
                            "node %"),
                  "%s", m);
        cr_assert(strstr(m, " (exp) reads it on the cpu: bind host memory, "
                            "or place that node on a GPU"),
                  "%s", m);
        cr_assert_eq(braid_wait(e), BRAID_OK); /* nothing outstanding */
        for (int i = 0; i < 64; i++) {
            uint32_t bc, bn;
            memcpy(&bc, &host_c[i], 4);
            memcpy(&bn, &host_n[i], 4);
            cr_assert(bc == 0x5A5A5A5Au && bn == 0x5A5A5A5Au,
                      "element %d written by a refused run", i);
        }
    }
    /* the executor still runs: host input, device outputs (c is computed
       on the cpu, n copied from the GPU) */
    cr_assert_eq(braid_run(e, io->in, 1, d.out, d.nout), BRAID_OK, "%s",
                 braid_last_error());
    tb_dev_download(&d, io);
    tb_assert_reference(g, io, "after the refusals");
    tb_dev_free(&d);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Outputs in device memory that the cpu computes or also reads: y on the
 * GPU and read by a CPU sum (so its D2H copy must not land in device
 * memory), z = sum(-y) and u = x·x on the cpu, xo the input itself. */
Test(cuda_bindings, cpu_computed_outputs_in_device_memory) {
    TC_REQUIRE_GPU();
    for (int t = 0; t < 2; t++) {
        braid_dtype dt = t ? BRAID_F16 : BRAID_F32;
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 2, TC_DIMS(16, 33));
        braid_tensor y = braid_tanh(g, braid_mul(g, x, x));
        braid_set_device(g, y, "cuda:0");
        braid_tensor z = braid_sum(g, braid_neg(g, y), 1, (int[]){1}, false);
        braid_set_device(g, z, "cpu");
        braid_tensor u = braid_mul(g, x, x);
        braid_set_device(g, u, "cpu");
        cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
        cr_assert_eq(braid_output(g, "z", z), BRAID_OK);
        cr_assert_eq(braid_output(g, "u", u), BRAID_OK);
        cr_assert_eq(braid_output(g, "xo", x), BRAID_OK);
        braid_plan *p = NULL;
        braid_exec *e = tb_exec(g, &p);
        for (int r = 0; r < 3; r++) {
            ts_io *io = ts_io_new(g, 40 + (uint64_t)r);
            tb_dev d = tb_dev_new(io);
            /* host inputs (the cpu reads x), every output in device memory */
            cr_assert_eq(braid_run(e, io->in, io->ninputs, d.out, d.nout),
                         BRAID_OK, "%s", braid_last_error());
            tb_dev_download(&d, io);
            char what[64];
            snprintf(what, sizeof what, "%s run %d", braid_dtype_name(dt), r);
            tb_assert_reference(g, io, what);
            tb_dev_free(&d);
            ts_io_free(io);
        }
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* A device input that is also an output, copied out by braid_wait. */
Test(cuda_bindings, device_input_returned_as_output) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(300));
    braid_tensor y = braid_exp(g, x);
    braid_set_device(g, y, "cuda:0");
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "xo", x), BRAID_OK);
    braid_plan *p = NULL;
    braid_exec *e = tb_exec(g, &p);
    ts_io *io = ts_io_new(g, 9);
    tb_dev d = tb_dev_new(io);
    /* device input, host outputs */
    tb_check_device_run(e, g, io, false, "device x, host outputs");
    cr_assert_eq(braid_run(e, d.in, d.nin, io->out, io->noutputs), BRAID_OK,
                 "%s", braid_last_error());
    tb_assert_reference(g, io, "device x, host outputs");
    tb_dev_free(&d);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_bindings, async_with_device_bindings) {
    TC_REQUIRE_GPU();
    for (int t = 0; t < 2; t++) {
        braid_dtype dt = t ? BRAID_F16 : BRAID_F32;
        braid_graph *g = tb_gpu_graph(dt);
        braid_plan *p = NULL;
        braid_exec *e = tb_exec(g, &p);
        for (int r = 0; r < 3; r++) {
            ts_io *io = ts_io_new(g, 200 + (uint64_t)r);
            char what[64];
            snprintf(what, sizeof what, "%s async run %d",
                     braid_dtype_name(dt), r);
            tb_check_device_run(e, g, io, true, what);
            ts_io_free(io);
        }
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}
