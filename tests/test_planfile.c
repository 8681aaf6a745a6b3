/* tests/test_planfile.c — plan files: save → load round trips (bit-identical
 * results, equal graphs and plan dumps), a deterministic writer, atomic
 * saves, load options and the CPU fallback. Hostile files are in
 * test_planfile_hostile.c. */
#define _POSIX_C_SOURCE 200809L

#include "planfile_support.h"
#include "support/golden.h"
#include "tmpfiles.h"

#include <dirent.h>
#include <errno.h>

#define GRAPHS BRAID_SOURCE_DIR "/examples/graphs"

/* g compiled for devices, saved, loaded: the loaded plan has g as its
 * user's graph, prints and dumps like the compiled one, saves to the same
 * bytes, and runs (emulated or on the cpu) to bit-identical outputs. */
static void round_trip(const braid_graph *g, const char *devices,
                       bool emulate, uint64_t seed, const char *what) {
    braid_plan *p = pf_compile(g, devices);
    size_t size, size2;
    unsigned char *data = pf_save(p, &size);
    braid_plan *q = pf_load(data, size);
    cr_assert(bg_graph_equal(braid_plan_graph(q), g),
              "%s: the loaded user graph differs", what);
    char *a = pf_text(p, false), *b = pf_text(q, false);
    cr_assert_str_eq(a, b, "%s: braid_plan_print differs", what);
    free(a);
    free(b);
    a = pf_text(p, true);
    b = pf_text(q, true);
    cr_assert_str_eq(a, b, "%s: the plan dump differs", what);
    free(a);
    free(b);
    unsigned char *again = pf_save(q, &size2);
    cr_assert(size == size2 && memcmp(data, again, size) == 0,
              "%s: saving the loaded plan gives other bytes", what);
    ts_io *x = ts_io_new(g, seed), *y = ts_io_new(g, seed);
    cr_assert(x && y);
    cr_assert_eq(pf_run(p, x, emulate, seed), BRAID_OK, "%s: run: %s", what,
                 braid_last_error());
    cr_assert_eq(pf_run(q, y, emulate, seed), BRAID_OK, "%s: loaded run: %s",
                 what, braid_last_error());
    cr_assert(pf_same_outputs(x, y), "%s: outputs differ after loading", what);
    ts_io_free(x);
    ts_io_free(y);
    free(again);
    free(data);
    braid_plan_free(p);
    braid_plan_free(q);
}

Test(planfile, example_graphs_round_trip_bit_identically, .timeout = 300) {
    DIR *d = opendir(GRAPHS);
    cr_assert(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".graph") != 0) continue;
        char *path = tf_path(GRAPHS, e->d_name);
        braid_graph *g = braid_graph_load(path, NULL);
        cr_assert(g && braid_graph_status(g) == BRAID_OK, "%s", path);
        round_trip(g, "cpu", false, 7 + (uint64_t)n, e->d_name);
        round_trip(g, "cpu,cuda:0", true, 11 + (uint64_t)n, e->d_name);
        braid_graph_free(g);
        free(path);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 4);
}

Test(planfile, random_graphs_round_trip_bit_identically, .timeout = 300) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    int n = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        braid_graph *g = ts_random_graph(seed, &o);
        cr_assert(g && braid_graph_status(g) == BRAID_OK);
        char what[64];
        snprintf(what, sizeof what, "random graph %llu",
                 (unsigned long long)seed);
        if (seed % 2) round_trip(g, "cpu", false, seed, what);
        round_trip(g, "cpu,cuda:0", true, seed, what);
        braid_graph_free(g);
        n++;
    }
    cr_log_info("%d random graphs round-tripped", n);
}

static braid_graph *small_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[2] = {4, 8}, wd[2] = {8, 3};
    float w[24];
    for (int i = 0; i < 24; i++) w[i] = 0.25f * (float)(i % 7) - 0.5f;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor c = braid_constant(g, BRAID_F32, 2, wd, w);
    braid_tensor c2 = braid_constant(g, BRAID_F32, 2, wd, w); /* same bytes */
    braid_tensor m = braid_matmul(g, braid_relu(g, x), braid_add(g, c, c2), 0);
    braid_tensor y = braid_tanh(g, braid_add(g, m, braid_fill(g, BRAID_F32, 2,
                                                              (int64_t[]){4, 3},
                                                              0.5)));
    braid_output(g, "y", y);
    braid_output(g, "s", braid_sum(g, x, 0, NULL, false));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

Test(planfile, writer_is_deterministic_and_files_equal_memory) {
    braid_graph *g = small_graph();
    braid_plan *p = pf_compile(g, "cpu");
    size_t n1, n2, nf;
    unsigned char *a = pf_save(p, &n1), *b = pf_save(p, &n2);
    cr_assert(n1 == n2 && memcmp(a, b, n1) == 0, "two saves differ");
    cr_assert(memcmp(a, BR_PLANFILE_MAGIC, 8) == 0);
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "small.plan");
    cr_assert_eq(braid_plan_save(p, path), BRAID_OK, "%s", braid_last_error());
    char *f = ts_read_file_len(path, &nf);
    cr_assert(f && nf == n1 && memcmp(f, a, n1) == 0, "file != memory bytes");
    cr_assert_eq(tf_count_entries(dir), 1, "a temporary file was left");
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load(path, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    braid_compile_report r;
    cr_assert_eq(braid_plan_compile_report(q, &r), BRAID_OK);
    cr_assert(r.loaded && q->prov.loaded && r.total_ms >= 0);
    cr_assert(!br_planfile_was_replaced(q));
    cr_assert_str_eq(q->prov.braid_version, p->prov.braid_version);
    cr_assert_eq(q->prov.created, p->prov.created);
    free(f);
    free(a);
    free(b);
    free(path);
    tf_rmtree(dir);
    free(dir);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

/* Without folding, both graphs hold the two equal constants: four
 * references to one blob. */
Test(planfile, identical_constants_are_stored_once) {
    braid_graph *g = small_graph();
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu";
    co.disable_passes = BRAID_PASS_SIMPLIFY;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "%s",
                 braid_last_error());
    size_t n;
    unsigned char *a = pf_save(p, &n);
    braid_plan *q = pf_load(a, n);
    /* the blob count, first field of the CONSTANTS section */
    uint32_t count = 0;
    for (uint32_t i = 0; i < 7; i++) {
        const unsigned char *e = a + 64 + 32 * i;
        if (e[0] != BR_PF_CONSTANTS) continue;
        uint64_t off = 0;
        for (int k = 0; k < 8; k++) off |= (uint64_t)e[8 + k] << (8 * k);
        count = (uint32_t)a[off] | (uint32_t)a[off + 1] << 8;
    }
    cr_assert_eq(count, 1, "%u blobs for one distinct constant", count);
    free(a);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

Test(planfile, load_options_override_threads) {
    braid_graph *g = small_graph();
    braid_plan *p = pf_compile(g, "cpu");
    size_t n;
    unsigned char *a = pf_save(p, &n);
    braid_load_options o;
    braid_load_options_init(&o);
    cr_assert_eq(o.num_threads, -1);
    cr_assert(!o.cpu_fallback);
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load_memory(a, n, &o, &q), BRAID_OK);
    cr_assert_eq(q->in.opts.num_threads, 2);
    braid_plan_free(q);
    o.num_threads = 1;
    cr_assert_eq(braid_plan_load_memory(a, n, &o, &q), BRAID_OK);
    cr_assert_eq(q->in.opts.num_threads, 1);
    braid_plan_free(q);
    o.num_threads = -2;
    cr_assert_eq(braid_plan_load_memory(a, n, &o, &q), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(q);
    cr_assert_eq(braid_plan_load_memory(NULL, 0, NULL, &q), BRAID_ERR_PARSE);
    void *none = NULL;
    size_t nn = 0;
    cr_assert_eq(braid_plan_save_memory(NULL, &none, &nn),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_null(none);
    free(a);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- atomic saves ----------------------------------------------------------- */

Test(planfile, save_into_a_missing_folder_fails_cleanly) {
    braid_graph *g = small_graph();
    braid_plan *p = pf_compile(g, "cpu");
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "no/such/folder/x.plan");
    braid_status s = braid_plan_save(p, path);
    cr_assert_eq(s, BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), path), "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), strerror(ENOENT)), "%s",
              braid_last_error());
    cr_assert_eq(tf_count_entries(dir), 0);
    free(path);
    tf_rmtree(dir);
    free(dir);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A failed save leaves the old target byte-identical and no temporary. */
Test(planfile, failed_save_keeps_the_old_file) {
    braid_graph *g = small_graph();
    braid_plan *p = pf_compile(g, "cpu");
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "x.plan");
    cr_assert(tf_write_str(path, "old contents"));
    cr_assert_eq(chmod(dir, 0555), 0);
    bool writable = access(dir, W_OK) == 0; /* root writes anyway */
    braid_status s = braid_plan_save(p, path);
    chmod(dir, 0755);
    if (writable) {
        cr_log_info("running as a user who can write a read-only folder: "
                    "checked the rename failure only");
        cr_assert_eq(s, BRAID_OK);
    } else {
        cr_assert_eq(s, BRAID_ERR_IO);
        cr_assert(strstr(braid_last_error(), path), "%s", braid_last_error());
        char *now = ts_read_file(path);
        cr_assert_str_eq(now, "old contents");
        free(now);
    }
    cr_assert_eq(tf_count_entries(dir), 1, "a temporary file was left");
    /* the target is a folder: rename fails after the temporary file was
     * written; the folder stays, the temporary goes */
    char *sub = tf_path(dir, "sub.plan");
    cr_assert_eq(mkdir(sub, 0755), 0);
    char *inner = tf_path(sub, "keep");
    cr_assert(tf_write_str(inner, "keep"));
    cr_assert_eq(braid_plan_save(p, sub), BRAID_ERR_IO);
    cr_assert(strstr(braid_last_error(), sub), "%s", braid_last_error());
    cr_assert_eq(tf_count_entries(dir), 2, "a temporary file was left");
    cr_assert_eq(tf_count_entries(sub), 1);
    free(inner);
    free(sub);
    free(path);
    tf_rmtree(dir);
    free(dir);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- GPUs this machine lacks -------------------------------------------------- */

Test(planfile, gpu_plan_needs_cpu_fallback_here) {
    braid_graph *g = small_graph();
    /* "cuda:0" alone: its nodes run there, so the plan needs the GPU (a
     * cpu,cuda:0 plan of this small graph runs on the cpu and needs none) */
    braid_plan *p = pf_compile(g, "cuda:0");
    size_t n;
    unsigned char *a = pf_save(p, &n);
    braid_plan *q = NULL;
    braid_status s = braid_plan_load_memory(a, n, NULL, &q);
    if (braid_cuda_device_count() > 0) {
        cr_log_info("a GPU is present: the plan loads as it is");
        cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
        braid_plan_free(q);
    } else {
        cr_assert_eq(s, BRAID_ERR_DEVICE);
        cr_assert_null(q);
        const char *m = braid_last_error();
        cr_assert(strstr(m, "plan file: the plan runs on cuda:0, but this "
                            "machine has no usable GPU") &&
                      strstr(m, "cpu_fallback"),
                  "%s", m);
    }
    braid_load_options o;
    braid_load_options_init(&o);
    o.cpu_fallback = true;
    cr_assert_eq(braid_plan_load_memory(a, n, &o, &q), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(q->prov.loaded);
    cr_assert_eq(br_planfile_was_replaced(q), braid_cuda_device_count() == 0);
    ts_io *io = ts_io_new(g, 99);
    cr_assert_eq(pf_run(q, io, braid_cuda_device_count() > 0, 1), BRAID_OK,
                 "%s", braid_last_error());
    cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                     io->noutputs),
                 BRAID_OK);
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_plan_free(q);
    free(a);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Chunking's slices, copies and concat survive the round trip: a large
 * host → GPU → host chain split in 4, run emulated. */
Test(planfile, chunked_gpu_plan_round_trips) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[2] = {64, 256};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor y = braid_exp(g, braid_mul(g, x, x));
    braid_set_device(g, y, "cuda:0");
    braid_output(g, "y", y);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none";
    o.chunks = 4;
    o.max_streams = 2;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_plan_summary sum;
    cr_assert_eq(braid_plan_summary_get(p, &sum), BRAID_OK);
    cr_assert_gt(sum.chunk_nodes, 0, "nothing was chunked");
    size_t n, n2;
    unsigned char *a = pf_save(p, &n);
    braid_plan *q = pf_load(a, n);
    char *ta = pf_text(p, true), *tb = pf_text(q, true);
    cr_assert_str_eq(ta, tb);
    unsigned char *b = pf_save(q, &n2);
    cr_assert(n == n2 && memcmp(a, b, n) == 0);
    ts_io *x1 = ts_io_new(g, 4), *x2 = ts_io_new(g, 4);
    cr_assert_eq(pf_run(p, x1, true, 9), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(pf_run(q, x2, true, 9), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(x1, x2));
    ts_io_free(x1);
    ts_io_free(x2);
    free(ta);
    free(tb);
    free(a);
    free(b);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

/* Kernels built ahead of time (NVRTC works without a GPU) travel in the
 * file: source, CUBIN and PTX come back byte for byte, with the report's
 * kernel figures. */
Test(planfile, ahead_of_time_kernels_round_trip, .timeout = 300) {
    braid_graph *g = braid_graph_load(GRAPHS "/elementwise_chain.graph", NULL);
    cr_assert(g && braid_graph_status(g) == BRAID_OK);
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (g->nodes[id].op != BRAID_OP_INPUT &&
            g->nodes[id].op != BRAID_OP_CONSTANT)
            braid_set_device(g, (braid_tensor){id}, "cuda:0");
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "sm_90";
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    if (s == BRAID_ERR_UNSUPPORTED) {
        cr_log_info("no NVRTC in this build: %s", braid_last_error());
        braid_graph_free(g);
        return;
    }
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    size_t n;
    unsigned char *a = pf_save(p, &n);
    braid_plan *q = pf_load(a, n);
    const bp_kernels *k = &p->kernels, *l = &q->kernels;
    cr_log_info("%u kernels, %u binaries, source %zu bytes", k->nkernels,
                k->nbin, k->source_len);
    cr_assert_eq(k->nkernels, l->nkernels);
    cr_assert_eq(k->nbin, l->nbin);
    cr_assert_eq(k->source_len, l->source_len);
    if (k->source) cr_assert_str_eq(k->source, l->source);
    for (uint32_t i = 0; i < k->nbin; i++) {
        const bp_kernel_binary *x = &k->bin[i], *y = &l->bin[i];
        cr_assert_eq(x->sm, y->sm);
        cr_assert_eq(x->cubin_size, y->cubin_size);
        cr_assert_eq(x->ptx_size, y->ptx_size);
        cr_assert(!x->cubin_size ||
                  memcmp(x->cubin, y->cubin, x->cubin_size) == 0);
        cr_assert(!x->ptx_size || memcmp(x->ptx, y->ptx, x->ptx_size) == 0);
    }
    cr_assert_eq(p->report.kernels, q->report.kernels);
    cr_assert_eq(p->report.archs, q->report.archs);
    cr_assert_eq(p->prov.nvrtc_version, q->prov.nvrtc_version);
    free(a);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

/* p saved, loaded: dumps alike, re-saved to the same bytes. */
static braid_plan *structural_round_trip(const braid_plan *p,
                                         const char *what) {
    size_t n, n2;
    unsigned char *a = pf_save(p, &n);
    braid_plan *q = pf_load(a, n);
    char *ta = pf_text(p, true), *tb = pf_text(q, true);
    cr_assert_str_eq(ta, tb, "%s: the plan dump differs", what);
    unsigned char *b = pf_save(q, &n2);
    cr_assert(n == n2 && memcmp(a, b, n) == 0,
              "%s: saving the loaded plan gives other bytes", what);
    free(ta);
    free(tb);
    free(a);
    free(b);
    return q;
}

/* Collectives lowered to NCCL on two GPUs' comm queues travel in the file:
 * the op, its group attributes and the comm queues come back as compiled
 * (the GPUs are absent here, so the plans are compared, not run). */
Test(planfile, collective_plan_round_trips) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t d[1] = {1000};
    braid_tensor xs[2], outs[2];
    for (int r = 0; r < 2; r++) {
        char name[8], dev[8];
        snprintf(name, sizeof name, "x%d", r);
        snprintf(dev, sizeof dev, "cuda:%d", r);
        braid_tensor x = braid_input(g, name, BRAID_F32, 1, d);
        xs[r] = braid_exp(g, x);
        braid_set_device(g, xs[r], dev);
    }
    cr_assert_eq(braid_all_reduce(g, 2, xs, BRAID_REDUCE_SUM, outs), BRAID_OK,
                 "%s", braid_last_error());
    braid_output(g, "y0", outs[0]);
    braid_output(g, "y1", outs[1]);
    braid_plan *p = pf_compile(g, "cpu,cuda:0,cuda:1");
    braid_plan *q = structural_round_trip(p, "all_reduce over 2 GPUs");
    cr_assert(bg_graph_equal(braid_plan_graph(q), g));
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

/* A batch-sharded plan (two replicas, inputs sliced) round-trips and runs
 * bit-identically on the emulated executor. */
Test(planfile, sharded_plan_round_trips) {
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[2] = {8, 16}, wd[2] = {16, 4};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, wd);
    braid_output(g, "y", braid_relu(g, braid_matmul(g, x, w, 0)));
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0,cuda:1";
    o.archs = "none";
    o.shards = 2;
    o.shard_inputs = "x";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_plan *q = structural_round_trip(p, "sharded over 2 GPUs");
    ts_io *x1 = ts_io_new(g, 5), *x2 = ts_io_new(g, 5);
    cr_assert_eq(pf_run(p, x1, true, 3), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(pf_run(q, x2, true, 3), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(x1, x2));
    ts_io_free(x1);
    ts_io_free(x2);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

/* ---- CRC-32C: the hardware and portable paths agree ---------------------- */

Test(planfile_crc, known_vectors) {
    static const struct {
        const char *s;
        uint32_t crc;
    } v[] = {{"", 0x00000000u},
             {"a", 0xC1D04330u},
             {"123456789", 0xE3069283u},
             {"The quick brown fox jumps over the lazy dog", 0x22620404u}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = strlen(v[i].s);
        cr_assert_eq(br_pf_crc32c_sw(0, v[i].s, n), v[i].crc,
                     "portable CRC of \"%s\"", v[i].s);
        cr_assert_eq(br_pf_crc32c_hw(0, v[i].s, n), v[i].crc,
                     "hardware CRC of \"%s\"", v[i].s);
        cr_assert_eq(br_pf_crc32c(0, v[i].s, n), v[i].crc);
    }
    /* 32 zero bytes (RFC 3720, B.4) */
    unsigned char z[32] = {0};
    cr_assert_eq(br_pf_crc32c_sw(0, z, 32), 0x8A9136AAu);
    cr_assert_eq(br_pf_crc32c_hw(0, z, 32), 0x8A9136AAu);
}

Test(planfile_crc, hardware_equals_portable_on_random_buffers) {
    enum { MAX = 4096 + 77 };
    unsigned char *buf = malloc(MAX + 16);
    cr_assert(buf);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < MAX + 16; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    /* every length up to 300 and some large ones, at every misalignment,
     * chained from arbitrary starting CRCs as the writer chains pieces */
    for (size_t n = 0; n < MAX; n += n < 300 ? 1 : 257)
        for (size_t off = 0; off < 16; off += n < 300 ? 1 : 5) {
            uint32_t seed = (uint32_t)(n * 2654435761u + off);
            uint32_t a = br_pf_crc32c_sw(seed, buf + off, n);
            uint32_t b = br_pf_crc32c_hw(seed, buf + off, n);
            cr_assert_eq(a, b, "length %zu offset %zu: 0x%08x vs 0x%08x", n,
                         off, a, b);
            /* in two pieces equals in one */
            size_t k = n / 3;
            cr_assert_eq(br_pf_crc32c(br_pf_crc32c(seed, buf + off, k),
                                      buf + off + k, n - k),
                         a);
        }
    free(buf);
}

/* Long buffers take the three-stripe path (rounds of 3 x 8 KiB combined):
 * lengths around its boundaries and a few MB, misaligned, chained. */
Test(planfile_crc, three_stripe_path_equals_portable) {
    const size_t max = (size_t)3 << 20;
    unsigned char *buf = malloc(max + 16);
    cr_assert(buf);
    uint64_t x = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < max + 16; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)(x >> 24);
    }
    const size_t round = 3 * 8192;
    const size_t lens[] = {round - 1, round,         round + 1,
                           round + 7, 2 * round - 8, 2 * round + 31,
                           100000,    max - 3,       max};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        for (size_t off = 0; off < 16; off += 5) {
            size_t n = lens[k] - (off && lens[k] == max ? off : 0);
            uint32_t a = br_pf_crc32c_sw(0x1234567u * (uint32_t)k, buf + off,
                                         n);
            uint32_t b = br_pf_crc32c_hw(0x1234567u * (uint32_t)k, buf + off,
                                         n);
            cr_assert_eq(a, b, "length %zu offset %zu: 0x%08x vs 0x%08x", n,
                         off, a, b);
        }
    /* a zero buffer of one round: the CRC of zeros only shifts */
    memset(buf, 0, round);
    cr_assert_eq(br_pf_crc32c_hw(0, buf, round),
                 br_pf_crc32c_sw(0, buf, round));
    free(buf);
}

/* Large sections are checked on several threads, in 4 MiB pieces folded
 * together: every length around the piece boundaries, chained from
 * arbitrary starting CRCs, equals the one-thread value. */
Test(planfile_crc, pooled_equals_one_thread) {
    const size_t piece = (size_t)4 << 20, max = 3 * piece + 4099;
    unsigned char *buf = malloc(max);
    cr_assert(buf);
    uint64_t x = 0x13198A2E03707344ull;
    for (size_t i = 0; i < max; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)(x >> 32);
    }
    br_pool *pool = br_pool_new(3);
    cr_assert(pool);
    const size_t lens[] = {0,         1,         piece - 1,     piece,
                           piece + 1, piece + 8, 2 * piece - 3, 2 * piece,
                           max - 1,   max};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        uint32_t seed = 0x9E3779B9u * (uint32_t)(k + 1);
        uint32_t one = br_pf_crc32c(seed, buf, lens[k]);
        uint32_t many = br_pf_crc32c_pool(seed, buf, lens[k], pool);
        cr_assert_eq(many, one, "length %zu: 0x%08x vs 0x%08x", lens[k], many,
                     one);
        cr_assert_eq(br_pf_crc32c_pool(seed, buf, lens[k], NULL), one);
    }
    br_pool_free(pool);
    free(buf);
}

/* ---- constants shared, not copied (issue 14) ------------------------------ */

/* The constant nodes of g with bytes, in id order: their data pointers. */
static uint32_t constant_data(const braid_graph *g, const void **out,
                              uint32_t max) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nnodes && n < max; i++)
        if (g->nodes[i].op == BRAID_OP_CONSTANT && g->nodes[i].attr.data)
            out[n++] = g->nodes[i].attr.data;
    return n;
}

/* braid_compile copies the user's constants once: the plan's user graph
 * and its working graph share the bytes, the user's graph is untouched
 * (its own bytes, not shared), and the plan outlives the user's graph. */
Test(planfile, compiled_plan_shares_constants_between_its_graphs) {
    braid_graph *g = small_graph();
    const void *user[4], *src[4], *work[4];
    uint32_t nu = constant_data(g, user, 4);
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu";
    co.disable_passes = BRAID_PASS_SIMPLIFY; /* keep both constants */
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "%s",
                 braid_last_error());
    const braid_graph *s = braid_plan_graph(p);
    cr_assert_eq(constant_data(s, src, 4), nu);
    cr_assert_eq(constant_data(p->res.graph, work, 4), nu);
    for (uint32_t i = 0; i < nu; i++) {
        cr_assert(src[i] != user[i], "the plan borrows the user's bytes");
        cr_assert(work[i] == src[i], "constant %u copied twice", i);
        cr_assert(g->nodes[i].shared == NULL);
    }
    ts_io *x = ts_io_new(g, 3), *y = ts_io_new(g, 3);
    cr_assert(x && y);
    cr_assert_eq(pf_run(p, x, false, 0), BRAID_OK, "%s", braid_last_error());
    braid_graph *g2 = small_graph(); /* the same graph, to compare against */
    braid_graph_free(g);             /* the plan keeps its own bytes */
    cr_assert_eq(pf_run(p, y, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(x, y));
    ts_io_free(x);
    ts_io_free(y);
    braid_graph_free(g2);
    braid_plan_free(p);
}

/* A plan loaded from a file: the constants of both graphs point into one
 * buffer (the two equal constants into one blob's bytes, 64-byte aligned;
 * for this small plan a copy of the CONSTANTS section, for GPT-2 the
 * bytes read from the file); the
 * plan runs the same after the file is truncated and removed (the bytes
 * are braid's, not a mapping of the file); and after braid_plan_load_memory
 * the caller's buffer may be freed. */
Test(planfile, loaded_plan_constants_share_the_read_bytes) {
    braid_graph *g = small_graph();
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu";
    co.disable_passes = BRAID_PASS_SIMPLIFY;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "%s",
                 braid_last_error());
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "shared.plan");
    cr_assert_eq(braid_plan_save(p, path), BRAID_OK, "%s", braid_last_error());
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load(path, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    const void *src[4], *work[4];
    uint32_t n = constant_data(braid_plan_graph(q), src, 4);
    cr_assert_eq(n, 2);
    cr_assert_eq(constant_data(q->res.graph, work, 4), 2);
    cr_assert(src[0] == src[1] && work[0] == src[0] && work[1] == src[0],
              "equal constants of a loaded plan are not one blob's bytes");
    cr_assert_eq((uintptr_t)src[0] % 64, 0, "a blob is not 64-byte aligned");
    const braid_graph *qs = braid_plan_graph(q);
    for (uint32_t i = 0; i < qs->nnodes; i++)
        if (qs->nodes[i].attr.data) cr_assert(qs->nodes[i].shared);
    ts_io *x = ts_io_new(g, 5), *y = ts_io_new(g, 5);
    cr_assert(x && y);
    cr_assert_eq(pf_run(p, x, false, 0), BRAID_OK, "%s", braid_last_error());
    FILE *f = fopen(path, "wb"); /* truncate it, then remove it */
    cr_assert(f);
    fclose(f);
    cr_assert_eq(remove(path), 0);
    cr_assert_eq(pf_run(q, y, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(x, y), "the loaded plan computes otherwise");
    /* from memory: the caller's bytes are freed before the run */
    size_t size;
    unsigned char *data = pf_save(p, &size);
    braid_plan *m = NULL;
    cr_assert_eq(braid_plan_load_memory(data, size, NULL, &m), BRAID_OK, "%s",
                 braid_last_error());
    memset(data, 0xAB, size);
    free(data);
    ts_io *z = ts_io_new(g, 5);
    cr_assert(z);
    cr_assert_eq(pf_run(m, z, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(x, z));
    /* a plan compiled from a loaded plan's graph shares its bytes too */
    braid_plan *r = NULL;
    cr_assert_eq(braid_compile(braid_plan_graph(q), &co, &r), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan_free(q); /* r keeps the bytes it shares alive */
    ts_io *w = ts_io_new(g, 5);
    cr_assert(w);
    cr_assert_eq(pf_run(r, w, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(x, w));
    ts_io_free(x);
    ts_io_free(y);
    ts_io_free(z);
    ts_io_free(w);
    braid_plan_free(m);
    braid_plan_free(r);
    braid_plan_free(p);
    free(path);
    tf_rmtree(dir);
    free(dir);
    braid_graph_free(g);
}

/* A plan file of more than 64 MiB is read and checked on several threads:
 * it loads and runs to the same result as the graph's own bytes, and a
 * byte flipped deep in its constants or a file cut short is a load error
 * naming the problem, not a plan. */
Test(planfile, large_file_threaded_read_and_check) {
    const int64_t n = (int64_t)18 << 20; /* 72 MiB of f32 */
    float *w = malloc((size_t)n * sizeof *w);
    cr_assert(w);
    uint32_t r = 12345;
    for (int64_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        w[i] = (float)(r >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &n);
    braid_output(g, "y",
                 braid_add(g, x, braid_constant(g, BRAID_F32, 1, &n, w)));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p = pf_compile(g, "cpu");
    char *dir = tf_mkdtemp();
    char *path = tf_path(dir, "large.plan");
    cr_assert(dir && path);
    cr_assert_eq(braid_plan_save(p, path), BRAID_OK, "%s", braid_last_error());
    braid_plan_free(p);

    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load(path, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    float *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * 4);
    cr_assert(in && out);
    for (int64_t i = 0; i < n; i++)
        in[i] = (float)(i % 1000) * 0.25f;
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(q, &e), BRAID_OK, "%s", braid_last_error());
    braid_input_binding bi = {.name = "x", .data = in, .bytes = (size_t)n * 4};
    braid_output_binding bo = {
        .name = "y", .data = out, .bytes = (size_t)n * 4};
    cr_assert_eq(braid_run(e, &bi, 1, &bo, 1), BRAID_OK, "%s",
                 braid_last_error());
    for (int64_t i = 0; i < n; i++)
        if (out[i] != in[i] + w[i])
            cr_assert_fail("y[%lld] = %g, expected %g", (long long)i,
                           (double)out[i], (double)(in[i] + w[i]));
    braid_exec_free(e);
    braid_plan_free(q);

    /* one byte flipped 40 MiB into the file: inside the constants */
    size_t size = 0;
    unsigned char *bytes = (unsigned char *)ts_read_file_len(path, &size);
    cr_assert(bytes && size > ((size_t)64 << 20));
    bytes[(size_t)40 << 20] ^= 0x10;
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(bytes, 1, size, f) == size && fclose(f) == 0);
    q = NULL;
    cr_assert_eq(braid_plan_load(path, NULL, &q), BRAID_ERR_PARSE);
    cr_assert_null(q);
    cr_assert(strstr(braid_last_error(), "CONSTANTS") &&
                  strstr(braid_last_error(), "corrupt"),
              "%s", braid_last_error());
    /* cut short: the header's file size no longer matches */
    f = fopen(path, "wb");
    cr_assert(f && fwrite(bytes, 1, size / 2, f) == size / 2 && fclose(f) == 0);
    cr_assert_eq(truncate(path, (off_t)(size * 3 / 4)), 0);
    cr_assert_neq(braid_plan_load(path, NULL, &q), BRAID_OK);
    cr_assert_null(q);
    cr_assert(strstr(braid_last_error(), path), "%s", braid_last_error());
    free(bytes);
    free(in);
    free(out);
    free(w);
    free(path);
    tf_rmtree(dir);
    free(dir);
    braid_graph_free(g);
}
