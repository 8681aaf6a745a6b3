/* tests/test_cuda_multi.c — several GPUs (skips unless 2 CUDA devices and
 * NCCL are present): every collective and reduction against the reference
 * evaluator on cuda:0 + cuda:1 (NCCL, one process), and device-to-device
 * copies between the GPUs. Run with NCCL_NVLS_ENABLE=0 (tools/gpu-multi.sh
 * sets it). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

#define N 4099 /* odd: no size is a multiple of a vector width */

static bool two_gpus(void) {
    if (braid_cuda_device_count() < 2) return false;
    char hex[BRAID_COMM_ID_HEX];
    return braid_comm_unique_id(hex, sizeof hex) == BRAID_OK; /* NCCL */
}

#define SKIP_UNLESS_TWO()                                                   \
    do {                                                                    \
        if (!two_gpus()) {                                                  \
            cr_log_info("skipped: needs 2 CUDA devices and NCCL (%s)",      \
                        braid_last_error());                                \
            cr_skip_test("needs 2 GPUs");                                   \
        }                                                                   \
    } while (0)

static const char *op_name(braid_op op) {
    switch (op) {
    case BRAID_OP_ALL_REDUCE: return "all_reduce";
    case BRAID_OP_ALL_GATHER: return "all_gather";
    case BRAID_OP_BROADCAST: return "broadcast";
    default: return "reduce_scatter";
    }
}

/* Inputs a, b of dtype t and [rows, N/..] made on cuda:0 / cuda:1, one
 * collective over them, every member an output. Compares both executors'
 * members with the reference. */
static void check_op(braid_op op, braid_dtype t, braid_reduce_kind red) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {4, N};
    braid_tensor a = braid_input(g, "a", t, 2, d);
    braid_tensor b = braid_input(g, "b", t, 2, d);
    braid_tensor x[2] = {braid_abs(g, a), braid_neg(g, b)};
    braid_set_device(g, x[0], "cuda:0");
    braid_set_device(g, x[1], "cuda:1");
    braid_tensor y[2];
    braid_status s;
    switch (op) {
    case BRAID_OP_ALL_REDUCE: s = braid_all_reduce(g, 2, x, red, y); break;
    case BRAID_OP_ALL_GATHER: s = braid_all_gather(g, 2, x, y); break;
    case BRAID_OP_BROADCAST: s = braid_broadcast(g, 2, x, 1, y); break;
    default: s = braid_reduce_scatter(g, 2, x, red, y); break;
    }
    cr_assert_eq(s, BRAID_OK, "%s", braid_graph_error(g));
    braid_output(g, "y0", y[0]);
    braid_output(g, "y1", y[1]);
    ts_io *io = ts_io_new(g, 7);
    cr_assert(io);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0,cuda:1";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    for (int run = 0; run < 3; run++) { /* again: nothing stale */
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s %s: %s", op_name(op),
                     braid_dtype_name(t), braid_last_error());
        cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s %s %s: %s",
                  op_name(op), braid_dtype_name(t),
                  braid_reduce_name(red), msg);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cuda_multi, all_reduce_every_reduction_f32) {
    SKIP_UNLESS_TWO();
    for (int r = 0; r < BRAID_REDUCE_COUNT_; r++)
        check_op(BRAID_OP_ALL_REDUCE, BRAID_F32, (braid_reduce_kind)r);
}

Test(cuda_multi, all_reduce_other_dtypes) {
    SKIP_UNLESS_TWO();
    check_op(BRAID_OP_ALL_REDUCE, BRAID_F16, BRAID_REDUCE_SUM);
    check_op(BRAID_OP_ALL_REDUCE, BRAID_BF16, BRAID_REDUCE_MAX);
    check_op(BRAID_OP_ALL_REDUCE, BRAID_F64, BRAID_REDUCE_AVG);
    check_op(BRAID_OP_ALL_REDUCE, BRAID_I32, BRAID_REDUCE_SUM);
    check_op(BRAID_OP_ALL_REDUCE, BRAID_I32, BRAID_REDUCE_MIN);
}

Test(cuda_multi, gather_broadcast_scatter) {
    SKIP_UNLESS_TWO();
    check_op(BRAID_OP_ALL_GATHER, BRAID_F32, BRAID_REDUCE_SUM);
    check_op(BRAID_OP_ALL_GATHER, BRAID_F16, BRAID_REDUCE_SUM);
    check_op(BRAID_OP_BROADCAST, BRAID_F32, BRAID_REDUCE_SUM);
    check_op(BRAID_OP_BROADCAST, BRAID_I32, BRAID_REDUCE_SUM);
    for (int r = 0; r < BRAID_REDUCE_COUNT_; r++)
        check_op(BRAID_OP_REDUCE_SCATTER, BRAID_F32, (braid_reduce_kind)r);
}

/* x made on cuda:0, read on cuda:1 (a D2D peer copy), and back. */
Test(cuda_multi, peer_copies) {
    SKIP_UNLESS_TWO();
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {64, 1031};
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, d);
    braid_tensor x = braid_exp(g, a);
    braid_set_device(g, x, "cuda:0");
    braid_tensor y = braid_sin(g, x);
    braid_set_device(g, y, "cuda:1");
    braid_tensor z = braid_add(g, y, x);
    braid_set_device(g, z, "cuda:0");
    braid_output(g, "z", z);
    ts_io *io = ts_io_new(g, 3);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0,cuda:1";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_plan_summary sum;
    braid_plan_summary_get(p, &sum);
    cr_assert_geq(sum.copies, 3); /* h2d, d2d both ways, d2h */
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    for (int run = 0; run < 3; run++) {
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    braid_graph_free(g);
}

/* Random DAGs placed by the cost model over cpu, cuda:0 and cuda:1. */
Test(cuda_multi, random_dags_three_devices) {
    if (braid_cuda_device_count() < 2) cr_skip_test("needs 2 GPUs");
    ts_graph_options go;
    ts_graph_options_default(&go);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        braid_graph *g = ts_random_graph(seed, &go);
        ts_io *io = ts_io_new(g, seed);
        braid_compile_options o;
        braid_compile_options_init(&o);
        o.devices = "cpu,cuda:0,cuda:1";
        braid_plan *p = NULL;
        cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "seed %llu: %s",
                     (unsigned long long)seed, braid_last_error());
        braid_exec *e = NULL;
        cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "seed %llu: %s", (unsigned long long)seed,
                     braid_last_error());
        cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "seed %llu: %s",
                  (unsigned long long)seed, msg);
        braid_exec_free(e);
        braid_plan_free(p);
        ts_io_free(io);
        braid_graph_free(g);
    }
}
