/* tests/test_codegen.c — CUDA code generation: every GPU kernel of the
 * example graphs, the fuse pass's test graphs, random graphs, an
 * op × dtype matrix and random fused programs (elementwise, reductions of
 * every strategy, matmul epilogues) is generated and compiled by NVRTC for
 * sm_90; any failure fails with the node, the NVRTC message and the
 * generated source. On a machine with a GPU every kernel also runs and is
 * compared with the reference evaluator (tests/codegen_gpu.h).
 *
 * One module per plan (one NVRTC call). The disk cache is off for this
 * suite (BRAID_CACHE_DIR=""), so compiles are real. BRAID_CODEGEN_GRAPHS=k
 * multiplies the random-graph count. Skipped when braid was built without
 * the CUDA toolkit. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "tests/support/support.h"

#ifndef BRAID_HAVE_CUDA

Test(codegen, skipped) {
    cr_skip_test("braid was built without the CUDA toolkit");
}

#else

#include "tests/codegen_gpu.h"
#include "tests/codegen_programs.h"

static void setup(void) {
    setenv("BRAID_CACHE_DIR", "", 1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- modules
 * ------------------------------------------------------------------ */

/* Logs text with line numbers (the lines compile errors name). */
static void log_source(const char *text) {
    int line = 1;
    for (const char *s = text; *s;) {
        const char *e = strchr(s, '\n');
        int len = e ? (int)(e - s) : (int)strlen(s);
        cr_log_info("%5d | %.*s", line++, len, s);
        s = e ? e + 1 : s + len;
    }
}

/* Log each module's compile time (the example graphs). */
static bool verbose_times;

/* With BRAID_CODEGEN_DUMP=<folder>, writes the module there as
 * <what>.cu (for reading generated code). */
static void dump_source(const char *what, const char *text) {
    const char *dir = getenv("BRAID_CODEGEN_DUMP");
    if (!dir || !*dir) return;
    char name[128], path[1200];
    snprintf(name, sizeof name, "%s", what);
    for (char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))) *c = '_';
    snprintf(path, sizeof path, "%s/%s.cu", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Generates p's module, checks its kernel records, compiles it for sm_90
 * and (with a GPU) runs every kernel. Returns the kernel count. */
static uint32_t check_plan(const bp_plan *p, const char *what, uint64_t seed) {
    bc_source src;
    braid_status s = bc_plan_source(p, &src);
    cr_assert_eq(s, BRAID_OK, "%s: %s", what, braid_last_error());
    uint32_t want = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        bc_node_class c = bc_classify(p, id);
        if (c != BC_NODE_KERNEL && c != BC_NODE_MATMUL_EPILOGUE) continue;
        want++;
        const bc_kernel *k = bc_source_kernel(&src, id);
        cr_assert_not_null(k, "%s: node %u has no kernel", what, id);
        cr_assert_eq(k->nparams, 1 + bg_node_at(p->res.graph, id)->ninputs +
                                     (k->extra != BC_EXTRA_NONE) +
                                     k->run_check);
        cr_assert_eq(k->run_check, bp_node_run_check(p, id));
        cr_assert_leq(k->nlaunch, BC_MAX_LAUNCHES);
        for (uint32_t l = 0; l < k->nlaunch; l++) {
            const bc_launch *L = &k->launch[l];
            uint32_t threads = L->block[0] * L->block[1] * L->block[2];
            cr_assert(threads >= 32 && threads <= 1024 && L->grid[0] >= 1 &&
                      L->grid[1] >= 1 && L->grid[1] < 65536);
            char decl[BC_NAME_MAX + 8];
            snprintf(decl, sizeof decl, " %s(\n", L->entry);
            cr_assert(strstr(src.text, decl), "%s: no entry %s", what,
                      L->entry);
        }
    }
    cr_assert_eq(src.nkernels, want);
    dump_source(what, src.text);
    bc_binary bin;
    char err[16384];
    double t0 = now();
    s = bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err);
    if (s != BRAID_OK) log_source(src.text);
    if (verbose_times)
        cr_log_info("%s: %u kernels, %zu bytes of source, NVRTC %.0f ms", what,
                    (unsigned)src.nkernels, src.len, 1e3 * (now() - t0));
    cr_assert_eq(s, BRAID_OK, "%s: %s", what, err);
    for (uint32_t i = 0; i < src.nkernels; i++)
        for (uint32_t l = 0; l < src.kernels[i].nlaunch; l++) {
            char entry[BC_NAME_MAX + 16];
            snprintf(entry, sizeof entry, ".entry %s(",
                     src.kernels[i].launch[l].entry);
            cr_assert(strstr(bin.ptx, entry), "%s: PTX lacks %s", what, entry);
        }
    if (gpu_available()) gpu_check_module(p, &src, &bin, seed, what);
    bc_binary_free(&bin);
    uint32_t n = src.nkernels;
    bc_source_free(&src);
    return n;
}

/* Every node but inputs and constants hinted to cuda:0. */
static void hint_all(braid_graph *g) {
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++) {
        braid_op op = bg_node_at(g, id)->op;
        if (op != BRAID_OP_INPUT && op != BRAID_OP_CONSTANT)
            cr_assert_eq(braid_set_device(g, (braid_tensor){id}, "cuda:0"),
                         BRAID_OK);
    }
}

static uint32_t check_graph(braid_graph *g, const char *what, bool hint,
                            uint64_t seed) {
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s: %s", what,
                 braid_graph_error(g));
    if (hint) hint_all(g);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none"; /* no ahead-of-time NVRTC build here */
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    cr_assert_eq(s, BRAID_OK, "%s: %s", what, braid_last_error());
    uint32_t n = check_plan(p, what, seed);
    braid_plan_free(p);
    return n;
}

/* Every *.graph in dir, as written and with every node hinted to the GPU.
 * Returns the number of files (0 when dir does not exist). */
static int check_folder(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".graph") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        for (int hint = 0; hint < 2; hint++) {
            braid_graph *g = braid_graph_load(path, NULL);
            cr_assert_not_null(g);
            uint32_t n = check_graph(g, path, hint, (uint64_t)len);
            cr_log_info("%s%s: %u kernels", e->d_name,
                        hint ? " (all on cuda:0)" : "", (unsigned)n);
            braid_graph_free(g);
        }
        files++;
    }
    closedir(d);
    return files;
}

Test(codegen, example_graphs, .init = setup) {
    verbose_times = true;
    cr_assert_gt(check_folder(BRAID_SOURCE_DIR "/examples/graphs"), 0);
}

Test(codegen, fuse_test_graphs, .init = setup) {
    int n = check_folder(BRAID_SOURCE_DIR "/tests/golden/fuse");
    cr_log_info("%d fuse graphs", n);
}

/* ---- random graphs
 * --------------------------------------------------------------- */

static uint64_t env_scale(void) {
    const char *v = getenv("BRAID_CODEGEN_GRAPHS");
    return v && *v ? strtoull(v, NULL, 10) : 1;
}

static void random_graphs(uint64_t base, int count, bool mixed) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = mixed;
    o.max_nodes = 16;
    uint32_t kernels = 0;
    double t0 = now();
    bc_stats before, after;
    bc_stats_get(&before);
    for (uint64_t i = 0; i < (uint64_t)count * env_scale(); i++) {
        braid_graph *g = ts_random_graph(base + i, &o);
        char what[64];
        snprintf(what, sizeof what, "random graph seed %llu",
                 (unsigned long long)(base + i));
        kernels += check_graph(g, what, true, base + i);
        braid_graph_free(g);
    }
    bc_stats_get(&after);
    cr_log_info("%d graphs, %u kernels: %.1f s, of which NVRTC %.1f s", count,
                (unsigned)kernels, now() - t0,
                after.nvrtc_seconds - before.nvrtc_seconds);
}

Test(codegen, random_graphs_f32, .init = setup, .timeout = 600) {
    random_graphs(1000, 50, false);
}

Test(codegen, random_graphs_mixed_a, .init = setup, .timeout = 600) {
    random_graphs(2000, 50, true);
}

Test(codegen, random_graphs_mixed_b, .init = setup, .timeout = 600) {
    random_graphs(3000, 50, true);
}

Test(codegen, random_graphs_mixed_c, .init = setup, .timeout = 600) {
    random_graphs(4000, 50, true);
}

/* ---- rebuilt programs on the CPU
 * -----------------------------------------------------
 * What the GPU comparison feeds a kernel, checked on the CPU: the rebuilt
 * programs of fused nodes, and the strided buffers of unfused nodes that
 * read strided views (whose absence made seeds 2007 and 4031 "differ" on
 * the H200: the kernels indexed dense buffers through the views' strides).
 */

/* Fused node id of p run by the CPU interpreter (br_cpu_run) on
 * gpu_case_init's inputs against the reference evaluator on
 * gpu_node_graph's rebuild of its program: proves the rebuild the GPU
 * comparison trusts (POOL, GATHER, reductions) without a GPU. false when
 * the CPU does not take the node (not compared). */
static bool cpu_check_rebuild(const bp_plan *p, uint32_t id, br_pool *pool,
                              const char *what, uint64_t seed) {
    const braid_graph *pg = p->res.graph;
    const bg_node *n = bg_node_at(pg, id);
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    size_t scratch = 0;
    if (pr->kind == BP_PROGRAM_MATMUL || /* accumulation order: GPU tests */
        br_cpu_prepare(pg, id, &scratch) != BRAID_OK ||
        br_fused_check(pg, id, pr) != BRAID_OK)
        return false;
    br_fused_scratch(pg, id, pr, &scratch);
    gpu_case c;
    gpu_case_init(&c, p, id, seed);
    size_t ob = bg_nbytes(n);
    braid_graph *g = gpu_node_graph(p, id, false, false);
    void *ref = gpu_ref(g, &c, ob);
    braid_graph_free(g);
    void **srefs = gpu_store_refs(p, id, &c);
    braid_op last = pr->instr[pr->ninstr - 1].op;
    void *mag = NULL;
    if ((last == BRAID_OP_SUM || last == BRAID_OP_MEAN) &&
        braid_dtype_is_float(n->dtype)) {
        g = gpu_node_graph(p, id, true, false);
        mag = gpu_ref(g, &c, ob);
        braid_graph_free(g);
    }
    void *out = malloc(ob ? ob : 1), *scr = NULL;
    cr_assert(out && posix_memalign(&scr, 64, scratch + 64) == 0);
    bc_run_check rc;
    memset(&rc, 0, sizeof rc);
    br_kernel_args a = {.g = pg,
                        .id = id,
                        .node = n,
                        .program = pr,
                        .out = out,
                        .in = (const void *const *)c.host,
                        .pool = pool,
                        .scratch = scr,
                        .scratch_bytes = scratch + 64,
                        .check = &rc};
    cr_assert_eq(br_cpu_run(&a), BRAID_OK, "%s: node %u: %s", what,
                 (unsigned)id, braid_last_error());
    cr_assert_eq(rc.kind, BC_CHECK_NONE,
                 "%s: node %u: run check %u on valid data", what, (unsigned)id,
                 (unsigned)rc.kind);
    /* the STOREs wrote into the inputs themselves */
    cr_assert_eq(gpu_store_compare(p, id, srefs, c.host, "cpu"), 0,
                 "%s: node %u: stored values differ (above)", what,
                 (unsigned)id);
    braid_dtype tol_t = gpu_tol_dtype(p, id);
    for (int64_t i = 0; i < bg_numel(n); i++) {
        double m = mag ? fabs(bg_load(n->dtype, mag, i)) : 0.0;
        if (last == BRAID_OP_MEAN && mag) m *= (double)gpu_reduced(p, id);
        cr_assert(gpu_close(n->dtype, tol_t, out, ref, i, m, false),
                  "%s: node %u (%s program, %s): element %lld: cpu %.17g, "
                  "reference %.17g",
                  what, (unsigned)id, bp_program_kind_name(pr->kind),
                  braid_dtype_name(n->dtype), (long long)i,
                  bg_load(n->dtype, out, i), bg_load(n->dtype, ref, i));
    }
    free(scr);
    free(out);
    free(ref);
    free(mag);
    gpu_case_free(&c);
    return true;
}

/* The random graphs' fused nodes (as the GPU tests compile them) through
 * cpu_check_rebuild. */
/* Unfused node id of p, some input of which is a strided view: the CPU
 * kernel on the harness's strided buffers (gpu_strided_input) against the
 * reference of the rebuilt node on the dense inputs — the layout the GPU
 * check feeds the generated kernel. False when no input is strided. */
static bool cpu_check_strided(const bp_plan *p, uint32_t id, br_pool *pool,
                              const char *what, uint64_t seed) {
    const braid_graph *pg = p->res.graph;
    const bg_node *n = bg_node_at(pg, id);
    bool any = false;
    for (uint32_t k = 0; k < n->ninputs; k++)
        any = any || bp_layout_of(p, n->inputs[k]) != NULL;
    size_t scratch = 0;
    if (!any || n->op == BRAID_OP_FUSED ||
        bg_op(n->op)->kind != BRAID_KIND_ELEMENTWISE ||
        n->ninputs > BC_MAX_PARAMS ||
        br_cpu_prepare(pg, id, &scratch) != BRAID_OK)
        return false;
    gpu_case c;
    gpu_case_init(&c, p, id, seed);
    void *strided[BC_MAX_PARAMS] = {0};
    const void *in[BC_MAX_PARAMS];
    const int64_t *strides[BC_MAX_PARAMS];
    for (uint32_t k = 0; k < n->ninputs; k++) {
        size_t bytes = 0;
        strided[k] = gpu_strided_input(p, n->inputs[k], c.host[k], &bytes);
        in[k] = strided[k] ? strided[k] : c.host[k];
        strides[k] = bp_layout_of(p, n->inputs[k]);
    }
    size_t ob = bg_nbytes(n);
    braid_graph *g = gpu_node_graph(p, id, false, false);
    void *ref = gpu_ref(g, &c, ob);
    braid_graph_free(g);
    void *out = malloc(ob ? ob : 1), *scr = NULL;
    cr_assert(out && posix_memalign(&scr, 64, scratch + 64) == 0);
    br_kernel_args a = {.g = pg,
                        .id = id,
                        .node = n,
                        .out = out,
                        .in = in,
                        .in_strides = strides,
                        .pool = pool,
                        .scratch = scr,
                        .scratch_bytes = scratch + 64};
    cr_assert_eq(br_cpu_run(&a), BRAID_OK, "%s: node %u: %s", what,
                 (unsigned)id, braid_last_error());
    braid_dtype tol_t = gpu_tol_dtype(p, id);
    for (int64_t i = 0; i < bg_numel(n); i++)
        cr_assert(gpu_close(n->dtype, tol_t, out, ref, i, 0, false),
                  "%s: node %u (%s, a strided input): element %lld: cpu "
                  "%.17g, reference %.17g",
                  what, (unsigned)id, bg_op(n->op)->name, (long long)i,
                  bg_load(n->dtype, out, i), bg_load(n->dtype, ref, i));
    for (uint32_t k = 0; k < n->ninputs; k++)
        free(strided[k]);
    free(out);
    free(scr);
    free(ref);
    gpu_case_free(&c);
    return true;
}

Test(codegen, rebuilt_programs_cpu, .init = setup, .timeout = 600) {
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.max_nodes = 16;
    br_pool *pool = br_pool_new(1);
    uint32_t checked = 0, pools = 0, gathers = 0, strided = 0;
    for (uint64_t seed = 1000; seed < 4050; seed++) {
        if (seed % 1000 >= 50) continue;
        go.mixed_dtypes = seed >= 2000;
        braid_graph *g = ts_random_graph(seed, &go);
        cr_assert_eq(braid_graph_status(g), BRAID_OK);
        hint_all(g);
        braid_compile_options o;
        braid_compile_options_init(&o);
        o.devices = "cpu,cuda:0";
        o.archs = "none";
        braid_plan *p = NULL;
        cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "seed %llu: %s",
                     (unsigned long long)seed, braid_last_error());
        char what[64];
        snprintf(what, sizeof what, "random graph seed %llu",
                 (unsigned long long)seed);
        for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
            strided += cpu_check_strided(p, id, pool, what, seed + 31 * id);
            if (bg_node_at(p->res.graph, id)->op != BRAID_OP_FUSED) continue;
            if (!cpu_check_rebuild(p, id, pool, what, seed + 7919 * id))
                continue;
            const bp_program *pr = &p->res.programs[p->res.info[id].program];
            checked++;
            pools += pr->kind == BP_PROGRAM_POOL;
            gathers += bp_program_has_gather(pr);
        }
        braid_plan_free(p);
        braid_graph_free(g);
    }
    br_pool_free(pool);
    cr_log_info("%u fused nodes compared (%u pool, %u with a gather); %u "
                "unfused nodes reading strided views",
                (unsigned)checked, (unsigned)pools, (unsigned)gathers,
                (unsigned)strided);
    cr_assert_gt(checked, 0);
    cr_assert_gt(strided, 0); /* seeds 2007 and 4031 have them */
}

/* ---- op × dtype matrix
 * ---------------------------------------------------------- */

static bool is_float(braid_dtype t) {
    return braid_dtype_is_float(t);
}

/* docs/ops.md's dtype rules for one op. */
/* The op table's dtypes column (operands; where: the values). */
static bool op_accepts(braid_op op, braid_dtype t) {
    return bg_op_accepts(op, t);
}

/* Every elementwise op on every dtype it accepts (broadcasting, with a
 * tail that is not a multiple of the vector width), every cast, every
 * reduction over inner, outer and all axes, every shape op and every
 * generator: one module. */
static void build_matrix(bp_plan *p) {
    int64_t ad[2] = {4, 33}, bd[1] = {33}, cd[2] = {4, 1}, bc[3] = {2, 4, 33};
    for (braid_dtype t = 0; t < BRAID_DTYPE_COUNT_; t++) {
        braid_graph *g = p->res.graph;
        braid_tensor a = hand_input(p, t, 2, ad), b = hand_input(p, t, 1, bd);
        braid_tensor c = hand_input(p, t, 2, cd);
        braid_tensor cond = hand_input(p, BRAID_BOOL, 2, cd);
        for (braid_op op = 0; op < BRAID_OP_COUNT_; op++) {
            if (bg_op(op)->kind != BRAID_KIND_ELEMENTWISE || !op_accepts(op, t))
                continue;
            int arity = bg_op(op)->arity;
            if (op == BRAID_OP_CAST)
                for (braid_dtype u = 0; u < BRAID_DTYPE_COUNT_; u++)
                    braid_cast(g, a, u);
            else if (op == BRAID_OP_WHERE)
                braid_where(g, cond, a, b);
            else if (arity == 1)
                braid_unary(g, op, a);
            else
                braid_binary(g, op, a, op == BRAID_OP_DIV ? c : b);
        }
        for (braid_op op = 0; op < BRAID_OP_COUNT_; op++) {
            if (bg_op(op)->kind != BRAID_KIND_REDUCE || !op_accepts(op, t))
                continue;
            bg_attrs at = {.axes = 1};
            bg_build(g, op, &a.id, 1, t, 0, NULL, &at, NULL);
            at.axes = 2;
            at.flags = BG_KEEPDIMS;
            bg_build(g, op, &a.id, 1, t, 0, NULL, &at, NULL);
            at.axes = 3;
            at.flags = 0;
            bg_build(g, op, &a.id, 1, t, 0, NULL, &at, NULL);
        }
        int perm[2] = {1, 0};
        int64_t start[2] = {1, 2}, stop[2] = {4, 33}, step[2] = {2, 3};
        int64_t flat[1] = {132};
        braid_tensor two[2] = {a, a};
        braid_permute(g, a, perm);
        braid_slice(g, a, start, stop, step);
        braid_concat(g, 2, two, 0);
        braid_concat(g, 2, two, 1);
        braid_broadcast_to(g, b, 3, bc);
        braid_reshape(g, a, 1, flat);
        braid_fill(g, t, 2, ad, t == BRAID_I32 ? 7.0 : 1.5);
        if (bg_op_accepts(BRAID_OP_IOTA, t)) braid_iota(g, t, 2, ad, 1);
        if (is_float(t)) {
            int64_t rd[1] = {1000};
            braid_random_uniform(g, t, 1, rd, 42 + t, -3.0, 5.0);
            braid_random_normal(g, t, 1, rd, 0x1234567890abcdefull + t, 1.0,
                                2.0);
        }
        hand_place(p);
    }
}

Test(codegen, op_dtype_matrix, .init = setup, .timeout = 600) {
    bp_plan *p = hand_new();
    build_matrix(p);
    uint32_t n = check_plan(p, "op matrix", 1);
    cr_log_info("op matrix: %u kernels in one module", (unsigned)n);
    cr_assert_gt(n, 250);
    braid_plan_free(p);
}

static void random_shape(pgen *g, int *rank, int64_t *dims) {
    *rank = pg_int(g, 0, 4);
    for (int d = 0; d < *rank; d++)
        dims[d] = pg_int(g, 1, 7);
}

Test(codegen, random_programs, .init = setup, .timeout = 600) {
    uint64_t rounds = gpu_available() ? 16 : 4; /* a GPU run is cheap */
    for (uint64_t round = 0; round < rounds; round++) {
        bp_plan *p = hand_new();
        pgen g = {.st = 0xc0de + round};
        for (int i = 0; i < 30; i++) {
            int rank;
            int64_t dims[BRAID_MAX_RANK];
            random_shape(&g, &rank, dims);
            if (i % 3 == 2 && rank > 0)
                pg_node(p, &g, BP_PROGRAM_REDUCE, rank, dims,
                        (uint8_t)pg_int(&g, 1, (1 << rank) - 1));
            else
                pg_node(p, &g, BP_PROGRAM_ELEMENTWISE, rank, dims, 0);
            if (i % 10 == 0)
                pg_epilogue(p, &g, pg_int(&g, 1, 40), pg_int(&g, 1, 40),
                            pg_int(&g, 1, 40));
        }
        char what[48];
        snprintf(what, sizeof what, "random programs %llu",
                 (unsigned long long)round);
        check_plan(p, what, round);
        braid_plan_free(p);
    }
}

/* Elementwise programs with side stores (BP_INSTR_STORE) into variables
 * they also read, as the fuse pass makes for optimizers: the kernels
 * compile (NVRTC, here too), the CPU interpreter and (with a GPU) the
 * generated kernel give the result and every stored value of the
 * reference, on aligned and misaligned buffers, over random shapes and
 * dtypes. */
Test(codegen, store_programs, .init = setup, .timeout = 600) {
    br_pool *pool = br_pool_new(2);
    uint32_t nodes = 0, stores = 0;
    for (uint64_t round = 0; round < 4; round++) {
        bp_plan *p = hand_new();
        pgen g = {.st = 0x5707e + round};
        for (int i = 0; i < 12; i++) {
            int rank;
            int64_t dims[BRAID_MAX_RANK];
            random_shape(&g, &rank, dims);
            if (i % 4 == 0 && rank > 0) dims[rank - 1] = 1031; /* a tail */
            stores += pg_store_node(p, &g, rank, dims);
            nodes++;
        }
        char what[48];
        snprintf(what, sizeof what, "store programs %llu",
                 (unsigned long long)round);
        check_plan(p, what, round);
        for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
            if (p->res.graph->nodes[id].op == BRAID_OP_FUSED)
                cr_assert(cpu_check_rebuild(p, id, pool, what, round + id),
                          "%s: node %u not checked on the cpu", what,
                          (unsigned)id);
        braid_plan_free(p);
    }
    br_pool_free(pool);
    cr_log_info("%u programs with %u stores", (unsigned)nodes,
                (unsigned)stores);
    cr_assert_geq(stores, nodes);
}

/* ---- reduction strategies and launch geometry
 * ------------------------------------- */

/* One reduction of a random prologue over (rank, dims, axes): its kernel. */
static void check_reduce_case(int rank, const int64_t *dims, uint8_t axes,
                              uint32_t nlaunch, uint32_t threads,
                              uint64_t seed) {
    bp_plan *p = hand_new();
    pgen g = {.st = seed};
    pg_node(p, &g, BP_PROGRAM_REDUCE, rank, dims, axes);
    uint32_t id = p->res.graph->nnodes - 1;
    bc_source src;
    cr_assert_eq(bc_kernel_source(p, id, &src), BRAID_OK, "%s",
                 braid_last_error());
    const bc_kernel *k = &src.kernels[0];
    char shape[128];
    bg_shape_str(rank, dims, shape, sizeof shape);
    cr_log_info("reduce %s axes 0x%x: %u launches, block %ux%u, grid %ux%u, "
                "scratch %llu",
                shape, axes, k->nlaunch, k->launch[0].block[0],
                k->launch[0].block[1], k->launch[0].grid[0],
                k->launch[0].grid[1], (unsigned long long)k->scratch_bytes);
    cr_assert_eq(k->kind, BC_KERNEL_REDUCE);
    cr_assert_eq(k->nlaunch, nlaunch, "%s", shape);
    if (nlaunch > 0)
        cr_assert_eq(k->launch[0].block[0] * k->launch[0].block[1], threads,
                     "%s", shape);
    cr_assert_eq(k->extra == BC_EXTRA_SCRATCH, nlaunch == 2);
    cr_assert_eq(k->scratch_bytes > 0, nlaunch == 2);
    bc_source_free(&src);
    check_plan(p, shape, seed);
    braid_plan_free(p);
}

Test(codegen, reduce_strategies, .init = setup, .timeout = 600) {
    int64_t rows[2] = {16, 64}, wide[2] = {300, 8192}, few[2] = {3, 100000};
    int64_t wider[2] = {64, 20000}, flat[1] = {300000}, tall[2] = {20000, 8};
    int64_t cols[3] = {8, 3000, 4}, tallk[3] = {2, 70000, 3};
    int64_t colsk[2] = {100000, 64}, colsm[2] = {3000, 256};
    int64_t narrow[2] = {1000, 7}, mixed[3] = {4, 6, 5};
    int64_t empty_r[2] = {0, 5}, empty_o[2] = {5, 0};
    check_reduce_case(2, rows, 2, 1, 256, 1);   /* warp per row */
    check_reduce_case(2, wide, 2, 1, 256, 2);   /* block per row */
    check_reduce_case(2, wider, 2, 2, 512, 12); /* bigger rows, split */
    check_reduce_case(2, few, 2, 2, 512, 3);    /* rows split over blocks */
    check_reduce_case(1, flat, 1, 2, 512, 4);   /* full: two passes */
    check_reduce_case(2, tall, 1, 2, 512, 5);   /* narrow columns, split */
    check_reduce_case(3, cols, 2, 1, 256, 6);   /* strided rows */
    check_reduce_case(3, tallk, 2, 2, 512, 7);  /* strided rows, split */
    check_reduce_case(2, colsk, 1, 2, 256, 13); /* columns 32 × 8, split */
    check_reduce_case(2, colsm, 1, 1, 256, 14); /* columns 32 × 8 */
    check_reduce_case(2, narrow, 2, 1, 256, 8); /* short rows: a thread each */
    check_reduce_case(3, mixed, 5, 1, 256, 9);  /* kept axis between */
    check_reduce_case(2, empty_r, 1, 1, 256, 10); /* zero reduced elements */
    check_reduce_case(2, empty_o, 1, 0, 0, 11);   /* zero outputs */
}

/* Elementwise geometry: VEC outputs per thread, a vector path and a tail,
 * broadcast offsets as constant divisions. */
Test(codegen, elementwise_geometry, .init = setup) {
    bp_plan *p = hand_new();
    int64_t ad[2] = {999, 1001}, bd[1] = {1001}, cd[2] = {999, 1};
    braid_tensor a = hand_input(p, BRAID_F16, 2, ad);
    braid_tensor b = hand_input(p, BRAID_F16, 1, bd);
    braid_tensor c = hand_input(p, BRAID_F16, 2, cd);
    braid_tensor y = braid_mul(p->res.graph, a, b);
    braid_add(p->res.graph, y, c);
    hand_place(p);
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    const bc_kernel *k = bc_source_kernel(&src, y.id);
    cr_assert_not_null(k);
    cr_assert_eq(k->launch[0].block[0], 256);
    cr_assert_eq(k->launch[0].grid[0], (999 * 1001 + 8 * 256 - 1) / (8 * 256));
    cr_assert(strstr(src.text, "bc_vload(a0, in0 + base)"), "%s", src.text);
    cr_assert(strstr(src.text, "in1[((i % (unsigned)1001))]"), "%s", src.text);
    cr_assert(strstr(src.text, "in1[((i / (unsigned)1001))]"), "%s", src.text);
    cr_assert(strstr(src.text, "bc_rh("), "f16 results are rounded");
    cr_assert_not(src.uses_rng);
    bc_source_free(&src);
    check_plan(p, "elementwise geometry", 3);
    braid_plan_free(p);
}

/* ---- classification, refusals, errors
 * ------------------------------------------- */

Test(codegen, classify_plan_nodes, .init = setup) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {64, 64}, flat[1] = {4096};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, d);
    braid_tensor m = braid_matmul(g, x, x, 0);
    braid_tensor r = braid_reshape(g, braid_relu(g, x), 1, flat);
    braid_output(g, "m", m);
    braid_output(g, "r", braid_exp(g, r));
    hint_all(g);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none"; /* no ahead-of-time NVRTC build here */
    braid_plan *p;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    int seen[BC_NODE_DATA + 1] = {0};
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        bc_node_class c = bc_classify(p, id);
        seen[c]++;
        bc_source src;
        braid_status s = bc_kernel_source(p, id, &src);
        if (c == BC_NODE_KERNEL)
            cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
        else
            cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT);
        bc_source_free(&src);
    }
    cr_assert_gt(seen[BC_NODE_HOST], 0);   /* the input */
    cr_assert_gt(seen[BC_NODE_COPY], 0);   /* to and from the GPU */
    cr_assert_eq(seen[BC_NODE_MATMUL], 1); /* cuBLAS */
    cr_assert_gt(seen[BC_NODE_KERNEL], 0);
    cr_assert_eq(bc_classify(p, 1u << 30), BC_NODE_HOST);
    bc_source src;
    cr_assert_eq(bc_kernel_source(p, 1u << 30, &src),
                 BRAID_ERR_INVALID_ARGUMENT);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A malformed program is refused with the node named, never a crash. */
Test(codegen, malformed_program_refused) {
    bp_plan *p = hand_new();
    int64_t d[1] = {8};
    braid_tensor x = hand_input(p, BRAID_F32, 1, d);
    bp_instr *ins = calloc(2, sizeof *ins);
    cr_assert_not_null(ins);
    ins[0] = (bp_instr){.op = BP_INSTR_LOAD, .dtype = BRAID_F32, .input = 0};
    ins[1] = (bp_instr){.op = BRAID_OP_ADD, .dtype = BRAID_F32, .arg = {0, 5}};
    bp_program prog = {.kind = BP_PROGRAM_ELEMENTWISE,
                       .ninstr = 2,
                       .instr = ins,
                       .rank = 1,
                       .dims = {8}};
    uint32_t id = hand_fused(p, &x, 1, BRAID_F32, 1, d, &prog);
    bc_source src;
    cr_assert_eq(bc_kernel_source(p, id, &src), BRAID_ERR_INTERNAL);
    cr_assert(strstr(braid_last_error(), "node %1 (fused)"), "%s",
              braid_last_error());
    cr_assert(strstr(braid_last_error(), "instruction 1"), "%s",
              braid_last_error());
    braid_plan_free(p);
}

/* A range-checked cast (i64 -> i32) on the GPU: a kernel of its own that
 * takes the run check record (two launches: the cast, then "_final" filling
 * in the first failing element's value), the elementwise work after it
 * fused apart; the module compiles for sm_90 (and on a GPU the kernel runs
 * against the reference, the record staying clear). */
Test(codegen, checked_cast_kernel, .init = setup) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {37, 1001};
    braid_tensor x = braid_input(g, "x", BRAID_I64, 2, d);
    braid_tensor c = braid_cast(g, x, BRAID_I32);
    braid_tensor y = braid_add(g, braid_mul(g, c, c), c);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cuda:0"; /* no hint: placement puts it there */
    o.archs = "none";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    uint32_t cast = BG_NONE, fused = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (n->op == BRAID_OP_CAST) cast = id;
        if (n->op != BRAID_OP_FUSED) continue;
        fused++;
        const bp_program *pr = &p->res.programs[p->res.info[id].program];
        for (uint32_t i = 0; i < pr->ninstr; i++)
            cr_assert_neq(pr->instr[i].op, BRAID_OP_CAST, "cast fused");
    }
    cr_assert_neq(cast, BG_NONE);
    cr_assert_eq(fused, 1, "mul and add fused after the cast");
    cr_assert_eq(p->res.info[cast].device.kind, BP_DEVICE_CUDA);
    cr_assert(bg_node_run_check(p->res.graph, cast));
    cr_assert_eq(bc_classify(p, cast), BC_NODE_KERNEL);
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    const bc_kernel *k = bc_source_kernel(&src, cast);
    cr_assert_not_null(k);
    cr_assert(k->run_check);
    cr_assert_eq(k->nparams, 3);
    cr_assert_eq(k->nlaunch, 2);
    cr_assert(strstr(k->launch[1].entry, "_final"), "%s", k->launch[1].entry);
    cr_assert_eq(k->launch[0].grid[0], (37 * 1001 + 1023) / 1024);
    cr_assert(strstr(src.text, "bc_check_first(chk, "), "%s", src.text);
    /* exact 64-bit comparisons, no double on the way */
    cr_assert(strstr(src.text, "v < (-2147483647LL - 1) || v > 2147483647LL"),
              "%s", src.text);
    bc_source_free(&src);
    check_plan(p, "checked cast", 5);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A checked cast inside a program is refused (programs carry no run check
 * record): bp_program_check's rule, so codegen and the plan verifier both
 * refuse it. */
Test(codegen, checked_cast_in_a_program_refused) {
    bp_plan *p = hand_new();
    int64_t d[1] = {8};
    braid_tensor x = hand_input(p, BRAID_I64, 1, d);
    bp_instr *ins = calloc(2, sizeof *ins);
    cr_assert_not_null(ins);
    ins[0] = (bp_instr){.op = BP_INSTR_LOAD, .dtype = BRAID_I64, .input = 0};
    ins[1] = (bp_instr){.op = BRAID_OP_CAST, .dtype = BRAID_I32, .arg = {0}};
    bp_program prog = {.kind = BP_PROGRAM_ELEMENTWISE,
                       .ninstr = 2,
                       .instr = ins,
                       .rank = 1,
                       .dims = {8}};
    uint32_t id = hand_fused(p, &x, 1, BRAID_I32, 1, d, &prog);
    bc_source src;
    cr_assert_eq(bc_kernel_source(p, id, &src), BRAID_ERR_INTERNAL);
    cr_assert(strstr(braid_last_error(), "range-checked cast"), "%s",
              braid_last_error());
    braid_plan_free(p);
}

/* A mistake planted in one kernel of a real module: the message names that
 * node and quotes the planted line. */
Test(codegen, compile_error_names_generated_node, .init = setup) {
    braid_graph *g =
        braid_graph_load(BRAID_SOURCE_DIR "/examples/graphs/mlp.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    hint_all(g);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none"; /* no ahead-of-time NVRTC build here */
    braid_plan *p;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK);
    cr_assert_geq(src.nkernels, 2);
    uint32_t victim = src.kernels[1].node;
    char tag[64];
    snprintf(tag, sizeof tag, "// @braid node %%%u ", (unsigned)victim);
    char *at = strstr(src.text, tag);
    cr_assert_not_null(at);
    char *body = strstr(at, ") {\n");
    cr_assert_not_null(body);
    body += 4;
    static const char bad[] = "    int planted = no_such_name;\n";
    size_t head = (size_t)(body - src.text);
    char *text = malloc(src.len + sizeof bad);
    cr_assert_not_null(text);
    memcpy(text, src.text, head);
    memcpy(text + head, bad, sizeof bad - 1);
    strcpy(text + head + sizeof bad - 1, body);
    int line = 1;
    for (size_t i = 0; i < head; i++)
        line += text[i] == '\n';
    bc_binary bin;
    char err[16384], want[96];
    cr_assert_eq(bc_compile(text, "kernel.cu", 90, &bin, err, sizeof err),
                 BRAID_ERR_INTERNAL);
    snprintf(want, sizeof want, "node %%%u (", (unsigned)victim);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "%s", err);
    snprintf(want, sizeof want, "kernel.cu:%d: error", line);
    cr_assert(strstr(err, want), "%s", err);
    cr_assert(strstr(err, "| "
                          "    int planted = no_such_name;"),
              "%s", err);
    cr_log_info("%.300s", err);
    free(text);
    bc_source_free(&src);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- GPU bandwidth (BRAID_CODEGEN_BENCH=1 on a machine with a GPU)
 * ------------- */

/* out as output "y", every node hinted to the GPU, then timed. */
static void bench(braid_graph *g, braid_tensor out, const char *label,
                  double bytes, double d2d) {
    braid_output(g, "y", out);
    hint_all(g);
    gpu_bench_graph(g, label, bytes, d2d);
}

Test(codegen, gpu_bandwidth, .init = setup, .timeout = 600) {
    const char *want = getenv("BRAID_CODEGEN_BENCH");
    if (!want || !*want || !gpu_available())
        cr_skip_test("set BRAID_CODEGEN_BENCH=1 on a machine with a GPU");
    double d2d = gpu_d2d_bandwidth();
    cr_log_info("device-to-device copy: %.0f GB/s (read + write)", d2d * 1e-9);
    int64_t n = (int64_t)1 << 26, sq[2] = {8192, 8192};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &n);
    braid_tensor y = braid_input(g, "y", BRAID_F32, 1, &n);
    braid_tensor z = braid_input(g, "z", BRAID_F32, 1, &n);
    braid_tensor t = braid_tanh(g, braid_add(g, braid_mul(g, x, y), z));
    braid_tensor acc =
        braid_add(g, braid_mul(g, t, braid_sigmoid(g, x)),
                  braid_mul(g, y, braid_fill(g, BRAID_F32, 0, NULL, 0.5)));
    bench(g, braid_sub(g, acc, braid_exp(g, braid_neg(g, z))),
          "elementwise chain 2^26 f32, 3 in 1 out", 16.0 * (double)n, d2d);
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, sq);
    y = braid_input(g, "b", BRAID_F32, 1, &sq[1]);
    bench(g, braid_relu(g, braid_add(g, x, y)), "bias + relu 8192 x 8192 f32",
          8.0 * 8192 * 8192, d2d);
    braid_graph_free(g);
    int axis1 = 1, axis0 = 0;
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, sq);
    bench(g, braid_reduce_max(g, x, 1, &axis1, true), "row max 8192 x 8192 f32",
          4.0 * 8192 * 8192, d2d);
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, sq);
    bench(g, braid_sum(g, x, 1, &axis0, false), "column sum 8192 x 8192 f32",
          4.0 * 8192 * 8192, d2d);
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 1, &n);
    bench(g, braid_sum(g, braid_square(g, x), 0, NULL, false),
          "full sum of squares 2^26 f32", 4.0 * (double)n, d2d);
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F16, 1, &n);
    bench(g, braid_gelu(g, x), "gelu 2^26 f16", 4.0 * (double)n, d2d);
    braid_graph_free(g);
}

#endif /* BRAID_HAVE_CUDA */
