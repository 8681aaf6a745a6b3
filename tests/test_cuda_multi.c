/* tests/test_cuda_multi.c — several GPUs (skips unless 2 CUDA devices and
 * NCCL are present): every collective and reduction against the reference
 * evaluator on cuda:0 + cuda:1 (NCCL, one process), device-to-device
 * copies between the GPUs, a two-process all_reduce (one process per GPU,
 * braid_comm_init_rank) and a sharded MLP on both GPUs. Run with
 * NCCL_NVLS_ENABLE=0 (tools/gpu-multi.sh sets it). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* ---- two processes, one GPU each ------------------------------------------------ */

#define MP_N 100003       /* elements all-reduced */
#define MP_CHILD_LIMIT 60 /* seconds a rank may take (alarm) */
#define MP_WAIT_LIMIT 90  /* seconds the test waits for both ranks */
#define MP_SKIP 77        /* a rank's exit status: no 2 GPUs or no NCCL */

static void mp_sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void mp_touch(const char *dir, const char *name, const char *text) {
    char tmp[512], path[512];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s\n", text);
    fclose(f);
    rename(tmp, path); /* whole file or none for the reader */
}

static bool mp_exists(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Rank r's part: x · (r + 1) on cuda:r, all-reduced (sum) over both
 * processes: 3x. Returns the exit status (0 ok, MP_SKIP, else failure);
 * messages go to stderr. No Criterion call: this is a forked child. */
static int mp_rank(int rank, const char *dir) {
    if (braid_cuda_device_count() < 2) {
        if (rank == 0) mp_touch(dir, "skip", "no 2 GPUs");
        return MP_SKIP;
    }
    char hex[BRAID_COMM_ID_HEX];
    const char *id = NULL;
    if (rank == 0) {
        if (braid_comm_unique_id(hex, sizeof hex) != BRAID_OK) {
            fprintf(stderr, "rank 0: %s\n", braid_last_error());
            mp_touch(dir, "skip", "no NCCL");
            return MP_SKIP;
        }
        mp_touch(dir, "id", hex);
        id = hex;
    } else {
        /* rank 1 reads the id through $BRAID_NCCL_ID_FILE once it exists */
        for (int t = 0; !mp_exists(dir, "id"); t++) {
            if (mp_exists(dir, "skip")) return MP_SKIP;
            if (t > 30 * 100) {
                fprintf(stderr, "rank 1: no id from rank 0 after 30 s\n");
                return 3;
            }
            mp_sleep_ms(10);
        }
        char path[512];
        snprintf(path, sizeof path, "%s/id", dir);
        setenv("BRAID_NCCL_ID_FILE", path, 1);
    }
    braid_comm *comm = NULL;
    if (braid_comm_init_rank(2, rank, rank, id, &comm) != BRAID_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, braid_last_error());
        return 4;
    }
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[1] = {MP_N};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, d);
    braid_tensor h = braid_mul(g, x, braid_fill(g, BRAID_F32, 1, d, rank + 1));
    char dev[16];
    snprintf(dev, sizeof dev, "cuda:%d", rank);
    braid_set_device(g, h, dev);
    braid_tensor y = braid_rank_collective(g, BRAID_OP_ALL_REDUCE, h,
                                           BRAID_REDUCE_SUM, 0, rank, 2);
    braid_output(g, "y", y);
    char devices[32];
    snprintf(devices, sizeof devices, "cpu,%s", dev);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    float *xv = malloc(MP_N * sizeof *xv), *yv = malloc(MP_N * sizeof *yv);
    int rc = 0;
    if (braid_graph_status(g) != BRAID_OK || !xv || !yv) {
        fprintf(stderr, "rank %d: graph: %s\n", rank, braid_graph_error(g));
        rc = 5;
    } else if (braid_compile(g, &o, &p) != BRAID_OK ||
               braid_exec_new(p, &e) != BRAID_OK ||
               braid_exec_set_comm(e, comm) != BRAID_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, braid_last_error());
        rc = 6;
    }
    ts_fill_random(BRAID_F32, xv, MP_N, 5, -1, 1); /* same in both ranks */
    for (int run = 0; rc == 0 && run < 3; run++) {
        braid_input_binding in = {"x", xv, MP_N * sizeof *xv};
        braid_output_binding out = {"y", yv, MP_N * sizeof *yv};
        memset(yv, 0, MP_N * sizeof *yv);
        if (braid_run(e, &in, 1, &out, 1) != BRAID_OK) {
            fprintf(stderr, "rank %d run %d: %s\n", rank, run,
                    braid_last_error());
            rc = 7;
            break;
        }
        for (int i = 0; i < MP_N; i++) {
            float want = xv[i] * 1.0f + xv[i] * 2.0f;
            if (fabsf(yv[i] - want) > 1e-6f + 1e-6f * fabsf(want)) {
                fprintf(stderr, "rank %d run %d: y[%d] = %.9g, want %.9g\n",
                        rank, run, i, yv[i], want);
                rc = 8;
                break;
            }
        }
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    braid_comm_free(comm);
    free(xv);
    free(yv);
    return rc;
}

/* Waits for pid up to the deadline (monotonic seconds); -1 on timeout. */
static int mp_wait(pid_t pid, double deadline) {
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(st)) return WEXITSTATUS(st);
            return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        }
        if (r < 0 && errno != EINTR) return 255;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)now.tv_sec + now.tv_nsec * 1e-9 > deadline) return -1;
        mp_sleep_ms(20);
    }
}

/* Two processes (forked before this process touches CUDA), one GPU each:
 * rank 0 makes the NCCL id and writes it to a file, both join through
 * braid_comm_init_rank and all-reduce their part. Each child has an alarm
 * and the test a deadline, so a hang fails instead of blocking. */
Test(cuda_multi, two_processes_all_reduce) {
    char dir[] = "/tmp/braid-mp-XXXXXX";
    cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    fflush(NULL);
    pid_t pid[2] = {-1, -1};
    for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        cr_assert_geq(pid[r], 0, "fork: %s", strerror(errno));
        if (pid[r] == 0) {
            alarm(MP_CHILD_LIMIT);
            _exit(mp_rank(r, dir));
        }
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double deadline = (double)now.tv_sec + now.tv_nsec * 1e-9 + MP_WAIT_LIMIT;
    int rc[2];
    for (int r = 0; r < 2; r++) rc[r] = mp_wait(pid[r], deadline);
    for (int r = 0; r < 2; r++)
        if (rc[r] < 0) { /* hung: kill both, reap */
            kill(pid[r], SIGKILL);
            waitpid(pid[r], NULL, 0);
        }
    char path[600];
    const char *names[] = {"id", "skip", "id.tmp", "skip.tmp"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    if (rc[0] == MP_SKIP && (rc[1] == MP_SKIP || rc[1] == 0)) {
        cr_log_info("skipped: needs 2 CUDA devices and NCCL");
        cr_skip_test("needs 2 GPUs");
    }
    cr_assert_eq(rc[0], 0, "rank 0 %s %d (stderr has its message)",
                 rc[0] < 0 ? "hung: killed after" : "exit status",
                 rc[0] < 0 ? MP_WAIT_LIMIT : rc[0]);
    cr_assert_eq(rc[1], 0, "rank 1 %s %d (stderr has its message)",
                 rc[1] < 0 ? "hung: killed after" : "exit status",
                 rc[1] < 0 ? MP_WAIT_LIMIT : rc[1]);
}

/* ---- batch sharding on two GPUs --------------------------------------------------- */

/* An MLP over x [512, 256] sharded over cuda:0 and cuda:1 against the
 * reference on the unsharded graph. */
Test(cuda_multi, sharded_mlp) {
    if (braid_cuda_device_count() < 2) cr_skip_test("needs 2 GPUs");
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {512, 256}, wd[2] = {256, 256}, bd[1] = {256};
    braid_tensor h = braid_input(g, "x", BRAID_F32, 2, xd);
    float *w = malloc(256 * 256 * sizeof *w), bias[256];
    cr_assert(w);
    for (int l = 0; l < 3; l++) {
        ts_fill_random(BRAID_F32, w, 256 * 256, 40 + (uint64_t)l, -0.1, 0.1);
        ts_fill_random(BRAID_F32, bias, 256, 50 + (uint64_t)l, -1, 1);
        braid_tensor wt = braid_constant(g, BRAID_F32, 2, wd, w);
        braid_tensor bt = braid_constant(g, BRAID_F32, 1, bd, bias);
        h = braid_gelu(g, braid_add(g, braid_matmul(g, h, wt, 0), bt));
    }
    free(w);
    braid_output(g, "y", h);
    ts_io *io = ts_io_new(g, 11);
    cr_assert(io);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0,cuda:1";
    o.shards = 2;
    o.shard_inputs = "x";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
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
