/* tests/test_pass_chunk.c — the chunking pass: copy → elementwise → copy
 * chains split into N slices along the leading axis.
 *
 * Chunked plans must compute exactly what the unchunked plan computes (the
 * same kernels on slices: bitwise equal) under every interleaving the
 * emulated executor draws; the cost model chunks a 256 MiB chain and not a
 * 1 MiB one; chains with a non-elementwise op, or whose intermediate is
 * used elsewhere on the GPU, are left alone.
 *
 * Golden cases: tests/golden/chunk/<case>.graph is the input ("# devices:"
 * and "# options: chunks=N fuse simplify" comment lines; fuse and simplify
 * off unless named); <case>.expected is bp_plan_dump after the chunk pass.
 * Regenerate with BRAID_UPDATE_GOLDEN=1 and check the diff by eye. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/chunk/"

/* ---- harness ------------------------------------------------------------- */

static braid_graph *parse(const char *text) {
    return ts_parse_ok(text, "test");
}

/* chunks pipeline chunks (0: the cost model decides); simplify off, fuse
 * off unless asked. */
static braid_compile_options options(int chunks, bool fuse) {
    braid_compile_options o = ts_compile_options(
        "cpu,cuda:0", BRAID_PASS_SIMPLIFY | (fuse ? 0 : BRAID_PASS_FUSE));
    o.chunks = chunks;
    return o;
}

static void check_golden(const char *name) {
    braid_compile_options base = options(0, false);
    ts_check_dump_case(GOLDEN, name, &base, "chunk", NULL);
}

/* ---- what a plan did ---------------------------------------------------------- */

typedef struct chunk_counts {
    uint32_t slices, uploads, downloads, concats, chunk_nodes;
} chunk_counts;

static chunk_counts count(const braid_plan *p) {
    chunk_counts c = {0};
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (!p->res.info[id].chunk) continue;
        const bg_node *n = bg_node_at(p->res.graph, id);
        c.chunk_nodes++;
        c.slices += n->op == BRAID_OP_SLICE;
        c.concats += n->op == BRAID_OP_CONCAT;
        if (n->op == BRAID_OP_COPY) {
            if (p->res.info[id].device.kind == BP_DEVICE_CUDA)
                c.uploads++;
            else
                c.downloads++;
        }
    }
    return c;
}

/* Fused chunk nodes iterate over their own rows. */
static void check_programs(const braid_plan *p) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (n->op != BRAID_OP_FUSED) continue;
        cr_assert_lt(p->res.info[id].program, p->res.nprograms);
        const bp_program *prog = &p->res.programs[p->res.info[id].program];
        if (prog->kind != BP_PROGRAM_ELEMENTWISE) continue;
        cr_assert_eq(prog->rank, n->rank);
        for (int i = 0; i < n->rank; i++)
            cr_assert_eq(prog->dims[i], n->dims[i], "node %u axis %d", id, i);
    }
}

/* Runs plan emulated (seed) into io->out. */
static void run_emulated(const braid_plan *p, ts_io *io, uint64_t seed) {
    braid_exec *e = NULL;
    cr_assert_eq(br_exec_new_emulated(p, seed, &e), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    braid_exec_free(e);
}

/* The chunked plan's outputs equal the unchunked plan's bit for bit, for
 * several interleavings, and match the reference. */
static void check_same_results(const braid_graph *g, const braid_plan *chunked,
                               const braid_plan *plain) {
    for (uint64_t seed = 1; seed <= 4; seed++) {
        ts_io *io = ts_io_new(g, seed);
        cr_assert(io);
        run_emulated(plain, io, seed);
        size_t nout = io->noutputs;
        void **want = calloc(nout, sizeof *want);
        cr_assert(want);
        for (size_t k = 0; k < nout; k++) {
            want[k] = malloc(io->out[k].bytes ? io->out[k].bytes : 1);
            memcpy(want[k], io->out[k].data, io->out[k].bytes);
            memset(io->out[k].data, 0xA5, io->out[k].bytes);
        }
        run_emulated(chunked, io, seed * 31 + 7);
        for (size_t k = 0; k < nout; k++)
            cr_assert(!memcmp(want[k], io->out[k].data, io->out[k].bytes),
                      "output %s differs from the unchunked plan (seed %llu)",
                      io->out[k].name, (unsigned long long)seed);
        cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK);
        char msg[256] = "";
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
        for (size_t k = 0; k < nout; k++) free(want[k]);
        free(want);
        ts_io_free(io);
    }
}

/* ANCHORS.md's pipeline, sqrt(sin²x + cos²x) + x on cuda:0, over shape. */
static braid_graph *anchor_chain(const char *type) {
    char text[1024];
    snprintf(text, sizeof text,
             "braid-graph 1\n"
             "%%x = input %s name=\"x\"\n"
             "%%s = sin %%x device=\"cuda:0\"\n"
             "%%c = cos %%x device=\"cuda:0\"\n"
             "%%s2 = square %%s device=\"cuda:0\"\n"
             "%%c2 = square %%c device=\"cuda:0\"\n"
             "%%a = add %%s2, %%c2 device=\"cuda:0\"\n"
             "%%q = sqrt %%a device=\"cuda:0\"\n"
             "%%r = add %%q, %%x device=\"cuda:0\"\n"
             "output \"y\" = %%r\n",
             type);
    return parse(text);
}

/* ---- tests ------------------------------------------------------------------------ */

Test(chunk, forced_four_chunks_match_the_unchunked_plan) {
    static const char *const types[] = {"f32[256,64]", "f32[1000]",
                                        "f32[10,3,7]", "f64[64,8]"};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        for (int fuse = 0; fuse < 2; fuse++) {
            braid_graph *g = anchor_chain(types[t]);
            braid_compile_options o4 = options(4, fuse), o1 = options(1, fuse);
            braid_plan *chunked = ts_compile_ok(g, &o4),
                       *plain = ts_compile_ok(g, &o1);
            chunk_counts c = count(chunked);
            cr_assert_eq(c.slices, 4, "%s: %u slices", types[t], c.slices);
            cr_assert_eq(c.uploads, 4);
            cr_assert_eq(c.downloads, 4);
            cr_assert_eq(c.concats, 1);
            cr_assert_eq(count(plain).chunk_nodes, 0);
            check_programs(chunked);
            check_same_results(g, chunked, plain);
            braid_plan_free(chunked);
            braid_plan_free(plain);
            braid_graph_free(g);
        }
    }
}

Test(chunk, chunks_rotate_over_compute_streams) {
    braid_graph *g = anchor_chain("f32[64,16]");
    braid_compile_options o = options(8, false);
    o.max_streams = 3;
    braid_plan *p = ts_compile_ok(g, &o);
    /* every GPU compute node of chunk k (slice start 8k) on stream k % 3 */
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bp_queue *q = &p->res.queues[p->res.info[id].queue];
        if (q->kind != BP_QUEUE_COMPUTE) continue;
        cr_assert(p->res.info[id].chunk);
        uint32_t at = id;
        while (bg_node_at(p->res.graph, at)->op != BRAID_OP_SLICE)
            at = bg_node_at(p->res.graph, at)->inputs[0];
        int64_t k = bg_node_at(p->res.graph, at)->attr.start[0] / 8;
        cr_assert_eq(q->index, (uint32_t)(k % 3), "node %u chunk %lld", id,
                     (long long)k);
    }
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(chunk, uneven_rows_and_shared_operands) {
    /* 250 rows in 3 chunks; a bias broadcast along the rows and a scalar
     * made on the GPU are shared by every chunk, not sliced. */
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[250,24] name=\"x\"\n"
                           "%y = input f32[250,24] name=\"y\"\n"
                           "%b = input f32[24] name=\"b\"\n"
                           "%h = fill f32[] value=0.5 device=\"cuda:0\"\n"
                           "%m = mul %x, %y device=\"cuda:0\"\n"
                           "%p = add %m, %b device=\"cuda:0\"\n"
                           "%t = mul %p, %h device=\"cuda:0\"\n"
                           "%u = tanh %t device=\"cuda:0\"\n"
                           "output \"u\" = %u\n"
                           "output \"p\" = %p\n");
    for (int fuse = 0; fuse < 2; fuse++) {
        braid_compile_options o3 = options(3, fuse), o1 = options(1, fuse);
        braid_plan *chunked = ts_compile_ok(g, &o3),
                   *plain = ts_compile_ok(g, &o1);
        chunk_counts c = count(chunked);
        cr_assert_eq(c.slices, 6, "x and y sliced, not b: %u", c.slices);
        if (!fuse) cr_assert_eq(c.concats, 2, "u and p come back");
        cr_assert_geq(c.concats, 1);
        check_programs(chunked);
        check_same_results(g, chunked, plain);
        braid_plan_free(chunked);
        braid_plan_free(plain);
    }
    braid_graph_free(g);
}

/* The chunk count the default cost model picks for the anchor chain of
 * this type (0 when not chunked). Compiles only: nothing is allocated. */
static uint32_t model_chunks(const char *type, bool fuse) {
    braid_graph *g = anchor_chain(type);
    braid_compile_options o = options(0, fuse);
    braid_plan *p = ts_compile_ok(g, &o);
    uint32_t n = count(p).slices;
    braid_plan_free(p);
    braid_graph_free(g);
    return n;
}

Test(chunk, cost_model_chunks_big_chains_only) {
    uint32_t big = model_chunks("f32[65536,1024]", false); /* 256 MiB */
    uint32_t small = model_chunks("f32[256,1024]", false); /* 1 MiB */
    uint32_t anchor = model_chunks("f32[262144,1024]", false); /* 1 GiB */
    uint32_t anchor_fused = model_chunks("f32[262144,1024]", true);
    cr_log_info("cost model: 256 MiB → %u chunks, 1 MiB → %u, 1 GiB → %u "
                "(fused: %u)",
                big, small, anchor, anchor_fused);
    cr_assert_geq(big, 2);
    cr_assert_eq(small, 0);
    cr_assert_eq(anchor, 16);
    cr_assert_eq(anchor_fused, 16);
}

Test(chunk, cost_model_needs_copy_rates) {
    /* A profile without copy rates predicts no time in the copies, so
     * there is nothing to overlap: never chunked. */
    braid_graph *g = anchor_chain("f32[65536,1024]");
    braid_device_profile gpu = bp_default_profile(BP_DEVICE_CUDA);
    gpu.h2d_bytes_per_s = gpu.d2h_bytes_per_s = 0;
    braid_compile_options o = options(0, false);
    o.cuda_profile = &gpu;
    braid_plan *p = ts_compile_ok(g, &o);
    cr_assert_eq(count(p).chunk_nodes, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(chunk, non_elementwise_chains_are_left_alone) {
    static const char *const graphs[] = {
        /* a reduction inside */
        "braid-graph 1\n"
        "%x = input f32[64,32] name=\"x\"\n"
        "%e = exp %x device=\"cuda:0\"\n"
        "%s = sum %e axes=[1] keepdims device=\"cuda:0\"\n"
        "%d = sub %e, %s device=\"cuda:0\"\n"
        "output \"y\" = %d\n",
        /* a permute inside */
        "braid-graph 1\n"
        "%x = input f32[32,32] name=\"x\"\n"
        "%e = exp %x device=\"cuda:0\"\n"
        "%p = permute %e perm=[1,0] device=\"cuda:0\"\n"
        "%t = tanh %p device=\"cuda:0\"\n"
        "output \"y\" = %t\n",
        /* a matmul */
        "braid-graph 1\n"
        "%x = input f32[64,32] name=\"x\"\n"
        "%w = input f32[32,32] name=\"w\"\n"
        "%m = matmul %x, %w device=\"cuda:0\"\n"
        "%t = tanh %m device=\"cuda:0\"\n"
        "output \"y\" = %t\n",
        /* too few rows for 4 chunks */
        "braid-graph 1\n"
        "%x = input f32[3,64] name=\"x\"\n"
        "%t = tanh %x device=\"cuda:0\"\n"
        "output \"y\" = %t\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
        braid_graph *g = parse(graphs[i]);
        braid_compile_options o = options(4, false);
        braid_plan *p = ts_compile_ok(g, &o);
        cr_assert_eq(count(p).chunk_nodes, 0, "graph %zu was chunked", i);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(chunk, intermediate_used_elsewhere_is_left_alone) {
    static const char *const graphs[] = {
        /* t also feeds a GPU reduction */
        "braid-graph 1\n"
        "%x = input f32[64,32] name=\"x\"\n"
        "%t = sin %x device=\"cuda:0\"\n"
        "%y = exp %t device=\"cuda:0\"\n"
        "%s = sum %t axes=[0,1] device=\"cuda:0\"\n"
        "output \"y\" = %y\n"
        "output \"s\" = %s\n",
        /* the uploaded input is also read by a GPU matmul */
        "braid-graph 1\n"
        "%x = input f32[32,32] name=\"x\"\n"
        "%t = sin %x device=\"cuda:0\"\n"
        "%m = matmul %x, %x device=\"cuda:0\"\n"
        "%a = add %t, %m device=\"cuda:0\"\n"
        "output \"y\" = %a\n",
        /* a GPU result read by an op of another shape */
        "braid-graph 1\n"
        "%x = input f32[64,32] name=\"x\"\n"
        "%t = sin %x device=\"cuda:0\"\n"
        "%r = reshape %t shape=[32,64] device=\"cuda:0\"\n"
        "output \"r\" = %r\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
        braid_graph *g = parse(graphs[i]);
        braid_compile_options o = options(4, false);
        braid_plan *p = ts_compile_ok(g, &o);
        cr_assert_eq(count(p).chunk_nodes, 0, "graph %zu was chunked", i);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(chunk, host_consumers_of_an_intermediate_are_fine) {
    /* t comes back to the host as well as u: both get a concat. */
    braid_graph *g = parse("braid-graph 1\n"
                           "%x = input f32[64,32] name=\"x\"\n"
                           "%t = sin %x device=\"cuda:0\"\n"
                           "%u = exp %t device=\"cuda:0\"\n"
                           "%v = neg %t device=\"cpu\"\n"
                           "%w = add %u, %v device=\"cpu\"\n"
                           "output \"w\" = %w\n");
    braid_compile_options o4 = options(4, false), o1 = options(1, false);
    braid_plan *chunked = ts_compile_ok(g, &o4), *plain = ts_compile_ok(g, &o1);
    chunk_counts c = count(chunked);
    cr_assert_eq(c.concats, 2);
    cr_assert_eq(c.downloads, 8);
    check_same_results(g, chunked, plain);
    braid_plan_free(chunked);
    braid_plan_free(plain);
    braid_graph_free(g);
}

Test(chunk, off_switches) {
    braid_graph *g = anchor_chain("f32[65536,1024]");
    braid_compile_options o = options(1, false);
    braid_plan *p = ts_compile_ok(g, &o);
    cr_assert_eq(count(p).chunk_nodes, 0, "chunks=1 never chunks");
    braid_plan_free(p);
    o = options(4, false);
    o.disable_passes |= BRAID_PASS_CHUNK;
    p = ts_compile_ok(g, &o);
    cr_assert_eq(count(p).chunk_nodes, 0, "the pass switched off");
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(chunk, golden) {
    static const char *const cases[] = {"anchor_small", "uneven_1d",
                                        "two_inputs_bias", "reduce_inside",
                                        "intermediate_used"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_golden(cases[i]);
}
