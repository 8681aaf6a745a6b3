/* runtime/cuda/cuda_kernels.c — the plan's generated kernels: one module per
 * plan from codegen (bc_plan_source), loaded with cudaLibraryLoadData, its
 * entries found with cudaLibraryGetKernel and launched with
 * cudaLaunchKernel. The module's code for a GPU architecture comes from
 * the plan's stored kernels when they were built from the same source
 * (braid_compile's ahead-of-time build, or a plan file): the CUBIN of that
 * architecture, else the PTX of an older one for the driver to JIT; only
 * otherwise does NVRTC compile it (bc_compile caches in memory and on
 * disk, so a second executor of the same plan compiles nothing). The
 * executor log says which ("kernels: 37 for sm_90 (stored cubin, 0.2
 * ms)"); $BRAID_LOG echoes those lines to stderr.
 *
 * Launch parameters follow codegen's convention (codegen/codegen.h): the
 * output pointer, one pointer per input, then the extra buffer when the
 * kernel asks for one (scratch, or the matmul result an epilogue reads). */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"
#include "runtime/devices.h"

#ifdef BRAID_HAVE_CUDA

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const WHERE = "braid_exec_new";

#ifdef BRAID_CUDA_MOCK
void br_cuda_mock_hook(const bp_plan *p, uint32_t node);
#endif

/* Size of the message buffer for NVRTC errors. */
#define ERR_MAX 8192

static bool needs_kernel(br_node_kind k) {
    return k == BR_NODE_KERNEL || k == BR_NODE_GEMM_EPI;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Compute capability of device dev as 10·major + minor (90 for sm_90),
 * from the process's device probe (runtime/devices.h). */
static braid_status device_sm(br_cuda *c, int dev, int *sm) {
    (void)c;
    const br_devices *found = br_devices_probe();
    *sm = dev >= 0 && dev < found->ngpus ? found->gpu[dev].sm : 0;
    if (*sm > 0) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_DEVICE,
                             "%s: cuda:%d: CUDA did not report its compute "
                             "capability (%s)",
                             WHERE, dev, found->status);
}

/* The code to load for sm from the plan's stored kernels (plan files and
 * braid_compile's ahead-of-time build): the CUBIN built for exactly sm,
 * else the PTX of the newest stored architecture not above sm (the driver
 * JITs it), else NULL. Stored binaries are used only when the stored
 * source is the module codegen generates now: the launch geometry and
 * parameters come from c->mod.src, so binaries of other source (a plan saved
 * by a braid whose codegen differed) could not be launched safely. */
static const void *stored_code(br_cuda *c, int sm, char *how, size_t size) {
    const bp_kernels *k = &c->plan->kernels;
    if (!k->source || k->nbin == 0) return NULL;
    if (k->source_len != c->mod.src.len ||
        memcmp(k->source, c->mod.src.text, c->mod.src.len) != 0) {
        if (c->mod.nlib == 0)
            br_cuda_logf(c,
                         "kernels: the plan's stored kernels were built from "
                         "other source than this braid generates (%zu bytes "
                         "stored, %zu now): compiling the new source",
                         k->source_len, c->mod.src.len);
        return NULL;
    }
    const bp_kernel_binary *ptx = NULL;
    for (uint32_t i = 0; i < k->nbin; i++) {
        const bp_kernel_binary *b = &k->bin[i];
        if (b->sm == sm && b->cubin && b->cubin_size) {
            snprintf(how, size, "stored cubin");
            return b->cubin;
        }
        if (b->sm <= sm && b->ptx && b->ptx_size && (!ptx || b->sm > ptx->sm))
            ptx = b;
    }
    if (!ptx) return NULL;
    snprintf(how, size, "stored ptx of sm_%d, JIT", ptx->sm);
    return ptx->ptx;
}

/* Compiles the module for sm (NVRTC, or its caches) into
 * c->mod.bin[c->mod.nlib]; the code to load in *code. */
static braid_status compile_module(br_cuda *c, int sm, const void **code,
                                   char *how, size_t size) {
    char *err = malloc(ERR_MAX);
    bc_binary *bin = &c->mod.bin[c->mod.nlib];
    braid_status s = bc_compile(c->mod.src.text, "kernel.cu", sm, bin, err,
                                err ? ERR_MAX : 0);
    if (s != BRAID_OK) {
        s = bg_set_last_error(s,
                              "braid_exec_new: compiling the plan's %u "
                              "kernels for sm_%d: %s",
                              c->mod.src.nkernels, sm, err ? err : "");
        free(err);
        return s;
    }
    free(err);
    *code = bin->cubin ? bin->cubin : (const void *)bin->ptx;
    snprintf(how, size, "%s, %s", bin->cubin ? "cubin" : "ptx",
             bin->cached ? "cached" : "compiled");
    return BRAID_OK;
}

static braid_status load_library(br_cuda *c, const void *code) {
    return br_cu(c, WHERE, BG_NONE, "cudaLibraryLoadData",
                 cudaLibraryLoadData(&c->mod.lib[c->mod.nlib], code, NULL, NULL,
                                     0, NULL, NULL, 0));
}

/* Index in c->mod.lib of the module for sm, loaded when new: from the plan's
 * stored kernels when they fit (no NVRTC), else compiled. */
static braid_status module_for(br_cuda *c, int sm, uint32_t *index) {
    for (uint32_t i = 0; i < c->mod.nlib; i++)
        if (c->mod.sm[i] == sm) {
            *index = i;
            return BRAID_OK;
        }
    if (c->mod.nlib == BR_MAX_ARCHS)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: the plan's GPUs have more "
                                 "than %d architectures",
                                 BR_MAX_ARCHS);
    char how[64];
    double t0 = now_s();
    if (br_module_take(sm, c->mod.src.text, c->mod.src.len,
                       &c->mod.lib[c->mod.nlib])) {
        br_cuda_logf(c, "kernels: %u for sm_%d (loaded already, shared)",
                     c->mod.src.nkernels, sm);
        c->mod.sm[c->mod.nlib] = sm;
        *index = c->mod.nlib++;
        return BRAID_OK;
    }
    const void *code = stored_code(c, sm, how, sizeof how);
    braid_status s = BRAID_OK;
    if (code && (s = load_library(c, code)) != BRAID_OK) {
        /* A stored binary the driver refuses: the source still works. */
        br_cuda_logf(c,
                     "kernels: the driver refused the plan's %s for sm_%d "
                     "(%s): compiling the source",
                     how, sm, braid_last_error());
        code = NULL;
    }
    if (!code) {
        s = compile_module(c, sm, &code, how, sizeof how);
        if (s == BRAID_OK) s = load_library(c, code);
        if (s != BRAID_OK) {
            bc_binary_free(&c->mod.bin[c->mod.nlib]);
            return s;
        }
    }
    br_cuda_logf(c, "kernels: %u for sm_%d (%s, %.1f ms)", c->mod.src.nkernels,
                 sm, how, 1e3 * (now_s() - t0));
    br_module_keep(sm, c->mod.src.text, c->mod.src.len,
                   c->mod.lib[c->mod.nlib]);
    c->mod.sm[c->mod.nlib] = sm;
    *index = c->mod.nlib++;
    return BRAID_OK;
}

/* Checks GPU node id against its generated kernel (it exists, takes the
 * parameters the convention gives for the node) and records it. */
static braid_status check_kernel(br_cuda *c, uint32_t id) {
    const bp_plan *p = c->plan;
    const bc_kernel *bk = bc_source_kernel(&c->mod.src, id);
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (!bk)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u (%s) on cuda:%d: "
                                 "codegen made no kernel for it",
                                 id, bg_op(n->op)->name, c->node[id].dev);
    uint32_t want =
        1 + n->ninputs + (bk->extra != BC_EXTRA_NONE) + bk->run_check;
    bool epi = c->node[id].kind == BR_NODE_GEMM_EPI;
    if (bk->nparams != want || bk->nlaunch > BC_MAX_LAUNCHES ||
        epi != (bk->extra == BC_EXTRA_MATMUL))
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: node %u (%s): the "
                                 "generated kernel takes %u parameters, "
                                 "extra %d, for %u inputs%s",
                                 id, bg_op(n->op)->name, bk->nparams,
                                 (int)bk->extra, n->ninputs,
                                 epi ? " (a matmul epilogue)" : "");
    if (epi) { /* the product cuBLAS writes is what the epilogue reads */
        braid_dtype dt;
        uint64_t bytes;
        braid_status s = br_cuda_gemm_result(c, id, &dt, &bytes);
        if (s != BRAID_OK) return s;
        if (dt != bk->mm_dtype || bytes != bk->mm_bytes ||
            (bk->mm_in_place && bytes != bg_nbytes(n)))
            return bg_set_last_error(
                BRAID_ERR_INTERNAL,
                "braid_exec_new: node %u (%s): the epilogue reads a %s "
                "product of %llu bytes%s, cuBLAS makes %s, %llu bytes",
                id, bg_op(n->op)->name, braid_dtype_name(bk->mm_dtype),
                (unsigned long long)bk->mm_bytes,
                bk->mm_in_place ? " in the output" : "", braid_dtype_name(dt),
                (unsigned long long)bytes);
    }
    uint32_t ki = (uint32_t)(bk - c->mod.src.kernels);
    c->mod.kern[ki].bk = bk;
    c->node[id].kernel = ki;
    return BRAID_OK;
}

/* The run check record of device dev (codegen/codegen.h), made zeroed on
 * first use. */
static braid_status alloc_check(br_cuda *c, uint32_t id, int dev) {
    if (!c->mod.check)
        c->mod.check = calloc((size_t)c->ndev + 1, sizeof *c->mod.check);
    if (!c->mod.check)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "%s: out of memory", WHERE);
    if (c->mod.check[dev]) return BRAID_OK;
    void *rec = NULL;
    static const bc_run_check zero;
    braid_status s = br_cuda_use(c, WHERE, id, dev);
    if (s == BRAID_OK)
        s = br_cu(c, WHERE, id, "cudaMalloc (run check)",
                  cudaMalloc(&rec, sizeof(bc_run_check)));
    if (s == BRAID_OK)
        s = br_cu(c, WHERE, id, "cudaMemcpy (run check)",
                  cudaMemcpy(rec, &zero, sizeof zero, cudaMemcpyHostToDevice));
    if (rec && s != BRAID_OK) cudaFree(rec);
    if (s == BRAID_OK) c->mod.check[dev] = rec;
    return s;
}

braid_status br_cuda_take_checks(br_cuda *c) {
    braid_status st = BRAID_OK;
    for (int d = 0; c->mod.check && d < c->ndev; d++) {
        if (!c->mod.check[d]) continue;
        bc_run_check rec;
        braid_status s = br_cuda_use(c, "braid_run", BG_NONE, d);
        if (s == BRAID_OK)
            s = br_cu(c, "braid_run", BG_NONE, "cudaMemcpy (run check)",
                      cudaMemcpy(&rec, c->mod.check[d], sizeof rec,
                                 cudaMemcpyDeviceToHost));
        static const bc_run_check zero;
        if (s == BRAID_OK && rec.kind != BC_CHECK_NONE)
            s = br_cu(c, "braid_run", BG_NONE, "cudaMemcpy (run check)",
                      cudaMemcpy(c->mod.check[d], &zero, sizeof zero,
                                 cudaMemcpyHostToDevice));
        if (s == BRAID_OK) s = br_run_check_take(c->plan, &rec);
        if (st == BRAID_OK) st = s;
    }
    return st;
}

/* Loads GPU node id's kernel functions and allocates its extra buffer. */
static braid_status bind_kernel(br_cuda *c, uint32_t id) {
    br_kernel *k = &c->mod.kern[c->node[id].kernel];
    const bc_kernel *bk = k->bk;
    int dev = c->node[id].dev, sm = 0;
    uint32_t li = 0;
    braid_status s = device_sm(c, dev, &sm);
    if (s == BRAID_OK) s = module_for(c, sm, &li);
    for (uint32_t l = 0; s == BRAID_OK && l < bk->nlaunch; l++)
        s = br_cu(c, WHERE, id, "cudaLibraryGetKernel",
                  cudaLibraryGetKernel(&k->fn[l], c->mod.lib[li],
                                       bk->launch[l].entry));
    uint64_t extra = bk->extra == BC_EXTRA_SCRATCH ? bk->scratch_bytes
                     : bk->extra == BC_EXTRA_MATMUL && !bk->mm_in_place
                         ? bk->mm_bytes
                         : 0;
    if (s == BRAID_OK && bk->run_check) s = alloc_check(c, id, dev);
    if (s == BRAID_OK && bk->extra != BC_EXTRA_NONE &&
        !(bk->extra == BC_EXTRA_MATMUL && bk->mm_in_place)) {
        s = br_cuda_use(c, WHERE, id, dev);
        if (s == BRAID_OK)
            s = br_cu(c, WHERE, id, "cudaMalloc (kernel scratch)",
                      cudaMalloc(&k->extra, extra ? extra : 256));
    }
    return s;
}

/* Generates the module and checks every node that needs a kernel. */
static braid_status generate(br_cuda *c) {
    const bp_plan *p = c->plan;
    bool any = false;
    for (uint32_t i = 0; i < c->sched->ndev; i++)
        any |= needs_kernel(c->node[c->sched->dev_list[i]].kind);
    if (!any) return BRAID_OK;
    braid_status s = bc_plan_source(p, &c->mod.src);
    if (s != BRAID_OK) return s;
    c->mod.nkern = c->mod.src.nkernels;
    c->mod.kern = calloc(c->mod.nkern ? c->mod.nkern : 1, sizeof *c->mod.kern);
    uint32_t maxp = 1;
    for (uint32_t k = 0; k < c->mod.nkern; k++)
        if (c->mod.src.kernels[k].nparams > maxp)
            maxp = c->mod.src.kernels[k].nparams;
    c->mod.argv = calloc(maxp, sizeof *c->mod.argv);
    c->mod.argp = calloc(maxp, sizeof *c->mod.argp);
    if (!c->mod.kern || !c->mod.argv || !c->mod.argp)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory for %u "
                                 "kernels",
                                 c->mod.nkern);
    for (uint32_t i = 0; s == BRAID_OK && i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (needs_kernel(c->node[id].kind)) s = check_kernel(c, id);
    }
    return s;
}

braid_status br_cuda_check_kernels(br_cuda *c, int sm) {
    braid_status s = generate(c);
    if (s != BRAID_OK || sm <= 0 || c->mod.nkern == 0) return s;
    char *err = malloc(ERR_MAX);
    bc_binary bin;
    double t0 = now_s();
    s = bc_compile(c->mod.src.text, "kernel.cu", sm, &bin, err,
                   err ? ERR_MAX : 0);
    if (s == BRAID_OK)
        br_cuda_logf(c, "kernels: %u for sm_%d (%s, %s, %.1f ms)",
                     c->mod.src.nkernels, sm, bin.cubin ? "cubin" : "ptx",
                     bin.cached ? "cached" : "compiled", 1e3 * (now_s() - t0));
    else
        s = bg_set_last_error(s,
                              "compiling the plan's %u kernels for sm_%d: %s",
                              c->mod.src.nkernels, sm, err ? err : "");
    bc_binary_free(&bin);
    free(err);
    return s;
}

braid_status br_cuda_load_kernels(br_cuda *c) {
    braid_status s = generate(c);
    for (uint32_t i = 0; s == BRAID_OK && i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (needs_kernel(c->node[id].kind)) s = bind_kernel(c, id);
    }
    return s;
}

void br_cuda_free_kernels(br_cuda *c) {
    for (uint32_t k = 0; c->mod.kern && k < c->mod.nkern; k++)
        if (c->mod.kern[k].extra) cudaFree(c->mod.kern[k].extra);
    for (int d = 0; c->mod.check && d < c->ndev; d++)
        if (c->mod.check[d]) cudaFree(c->mod.check[d]);
    free(c->mod.check);
    for (uint32_t i = 0; i < c->mod.nlib; i++) {
        br_module_give(c->mod.lib[i]); /* stays loaded for the next one */
        bc_binary_free(&c->mod.bin[i]);
    }
    bc_source_free(&c->mod.src);
    free(c->mod.kern);
    free(c->mod.argv);
    free(c->mod.argp);
}

braid_status br_cuda_launch(br_cuda *c, uint32_t id, cudaStream_t s) {
    const br_kernel *k = &c->mod.kern[c->node[id].kernel];
    const bc_kernel *bk = k->bk;
    const bg_node *n = bg_node_at(c->plan->res.graph, id);
    void *const *ptr = c->run.args->ptr;
    c->mod.argv[0] = ptr[id];
    for (uint32_t i = 0; i < n->ninputs; i++)
        c->mod.argv[1 + i] = ptr[n->inputs[i]];
    if (bk->extra != BC_EXTRA_NONE)
        c->mod.argv[1 + n->ninputs] =
            bk->extra == BC_EXTRA_MATMUL && bk->mm_in_place ? ptr[id]
                                                            : k->extra;
    if (bk->run_check) /* the last parameter */
        c->mod.argv[bk->nparams - 1] = c->mod.check[c->node[id].dev];
    for (uint32_t i = 0; i < bk->nparams; i++)
        c->mod.argp[i] = &c->mod.argv[i];
#ifdef BRAID_CUDA_MOCK /* tests/cuda_mock: runs the node's CPU kernel */
    br_cuda_mock_hook(c->plan, id);
#endif
    for (uint32_t l = 0; l < bk->nlaunch; l++) {
        const bc_launch *L = &bk->launch[l];
        dim3 grid = {L->grid[0], L->grid[1], L->grid[2]};
        dim3 block = {L->block[0], L->block[1], L->block[2]};
        braid_status r = br_cu(c, "braid_run", id, "cudaLaunchKernel",
                               cudaLaunchKernel((const void *)k->fn[l], grid,
                                                block, c->mod.argp, 0, s));
        if (r != BRAID_OK) return r;
    }
    return BRAID_OK;
}

void *br_cuda_matmul_target(const br_cuda *c, uint32_t id) {
    const br_kernel *k = &c->mod.kern[c->node[id].kernel];
    return k->bk->mm_in_place ? c->run.args->ptr[id] : k->extra;
}

#else
typedef int br_cuda_kernels_unused; /* ISO C: no empty translation unit */
#endif /* BRAID_HAVE_CUDA */
