/* tests/codegen_gpu.h — runs generated kernels on a GPU and compares them
 * with the reference evaluator (for tests/test_codegen.c only; static
 * functions). Each kernel node is checked on its own: its inputs get
 * random values, the kernel's launches run on the device exactly as
 * bc_kernel describes them (parameters, scratch, the matmul buffer of an
 * epilogue), and the output is compared with the reference evaluator run
 * on a small graph computing the same node (a fused program rebuilt op by
 * op). Random generators, fills, iota and shape ops must match bit for
 * bit; sums are allowed float-accumulation error relative to the sum of
 * magnitudes. Needs BRAID_HAVE_CUDA; callers check gpu_available(). */
#ifndef BRAID_TESTS_CODEGEN_GPU_H
#define BRAID_TESTS_CODEGEN_GPU_H

#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/window.h"
#include "passes/layout.h"
#include "tests/support/support.h"

/* ---- the node as a reference graph
 * ----------------------------------------------- */

/* GATHER (passes/program.h) of data x by ix (a value over the space) as
 * graph ops: the value at space position c is x[c[0..axis), w, c[R-t..R)],
 * w = ix at c, t = the data's dims after the axis — a GatherElements along
 * axis of x broadcast over the space's middle dims (a unit middle dim
 * inserted when the indices are a scalar's, removed after). */
static braid_tensor gpu_gather(braid_graph *g, const bp_program *pr,
                               braid_tensor x, braid_tensor ix, int axis) {
    if (x.id == BRAID_INVALID_ID || ix.id == BRAID_INVALID_ID)
        return BRAID_NONE;
    const bg_node *xn = bg_node_at(g, x.id);
    int R = pr->rank, t = xn->rank - axis - 1;
    int m = R - axis - t; /* the indices' own dims: >= 0 (program check) */
    int rank = axis + (m > 0 ? m : 1) + t;
    int64_t idims[BRAID_MAX_RANK], xdims[BRAID_MAX_RANK], bdims[BRAID_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        bool lead = d < axis, trail = d >= rank - t;
        idims[d] = lead    ? pr->dims[d]
                   : trail ? pr->dims[d - rank + R]
                   : m > 0 ? pr->dims[d]
                           : 1;
        xdims[d] = lead        ? xn->dims[d]
                   : trail     ? xn->dims[d - rank + xn->rank]
                   : d == axis ? xn->dims[axis]
                               : 1;
        bdims[d] = d == axis ? xn->dims[axis] : idims[d];
    }
    ix = braid_broadcast_to(g, ix, R, pr->dims);
    if (m == 0) ix = braid_reshape(g, ix, rank, idims);
    x = braid_broadcast_to(g, braid_reshape(g, x, rank, xdims), rank, bdims);
    braid_tensor y = braid_gather_elements(g, x, ix, axis);
    return m == 0 ? braid_reshape(g, y, R, pr->dims) : y;
}

/* The last instruction of a POOL program as a graph op on a (the
 * prologue's value over the pool's input shape), with the geometry the
 * program holds (the pool node's, by bp_program_check). */
static braid_tensor gpu_pool(braid_graph *g, const bp_program *pr,
                             const bp_instr *s, braid_tensor a) {
    bg_attrs at;
    memset(&at, 0, sizeof at);
    at.flags = pr->flags;
    for (int q = 0; q < 5; q++)
        for (int i = 0; i + 2 < pr->rank && i < 3; i++)
            bg_window_set_param(&at, q, i, pr->window[q][i]);
    a = braid_broadcast_to(g, a, pr->rank, pr->dims);
    braid_tensor y;
    y.id = bg_build(g, s->op, &a.id, 1, s->dtype, 0, NULL, &at, NULL);
    return y;
}

/* Program instruction values as graph tensors; NULL-safe on failure (the
 * graph records the error). abs_reduce inserts abs before the reduction
 * (the magnitude sum bounding accumulation error); mm_only stops at the
 * matmul. */
static braid_tensor gpu_program_graph(braid_graph *g, const bp_program *pr,
                                      const braid_tensor *in, bool abs_reduce,
                                      bool mm_only, uint32_t result) {
    braid_tensor *v = calloc(pr->ninstr, sizeof *v);
    cr_assert_not_null(v);
    braid_tensor y = BRAID_NONE;
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        const bp_instr *s = &pr->instr[i];
        braid_tensor a = i > 0 ? v[s->arg[0] < i ? s->arg[0] : 0] : BRAID_NONE;
        if (s->op == BP_INSTR_STORE) { /* no value: gpu_store_refs */
            v[i] = a;
            continue;
        }
        if (s->op == BP_INSTR_LOAD) {
            v[i] = in[s->input];
        } else if (s->op == BP_INSTR_CONST) {
            v[i] = braid_fill(g, s->dtype, 0, NULL, s->value);
        } else if (s->op == BP_INSTR_GATHER) {
            v[i] = gpu_gather(g, pr, in[s->input], a, (int)s->axis);
        } else if (s->op == BRAID_OP_MAX_POOL || s->op == BRAID_OP_AVG_POOL) {
            v[i] = gpu_pool(g, pr, s, a);
        } else if (s->op == BRAID_OP_MATMUL) {
            v[i] = braid_matmul(g, a, v[s->arg[1]],
                                pr->flags &
                                    (BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B));
            if (mm_only) {
                y = v[i];
                break;
            }
        } else if (bg_op(s->op)->kind == BRAID_KIND_REDUCE) {
            if (abs_reduce) a = braid_abs(g, a);
            a = braid_broadcast_to(g, a, pr->rank, pr->dims);
            bg_attrs at = {.axes = pr->axes, .flags = pr->flags};
            v[i].id =
                bg_build(g, s->op, &a.id, 1, s->dtype, 0, NULL, &at, NULL);
        } else if (s->op == BRAID_OP_CAST) {
            v[i] = braid_cast(g, a, s->dtype);
        } else if (s->op == BRAID_OP_WHERE) {
            v[i] = braid_where(g, a, v[s->arg[1]], v[s->arg[2]]);
        } else if (bg_op(s->op)->arity == 1) {
            v[i] = braid_unary(g, s->op, a);
        } else {
            v[i] = braid_binary(g, s->op, a, v[s->arg[1]]);
        }
        y = v[i];
        if (i == result) break;
    }
    if (!mm_only && pr->kind != BP_PROGRAM_REDUCE &&
        pr->kind != BP_PROGRAM_POOL)
        y = braid_broadcast_to(g, y, pr->rank, pr->dims);
    free(v);
    return y;
}

/* A graph with inputs in0.. (the node's inputs' types) and output "out":
 * the node's value (or, mm_only, its matmul's). */
static braid_graph *gpu_node_graph_at(const bp_plan *p, uint32_t id,
                                      bool abs_reduce, bool mm_only,
                                      uint32_t result) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor *in = calloc(n->ninputs + 1, sizeof *in);
    cr_assert(g && in);
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[k]);
        char name[16];
        snprintf(name, sizeof name, "in%u", (unsigned)k);
        in[k] = braid_input(g, name, x->dtype, x->rank, x->dims);
    }
    braid_tensor y;
    if (n->op == BRAID_OP_ASSIGN) { /* its kernel copies the value (input
                                       1) over the variable's bytes */
        y = in[1];
    } else if (n->op == BRAID_OP_FUSED) {
        y = gpu_program_graph(g, &p->res.programs[p->res.info[id].program], in,
                              abs_reduce, mm_only, result);
        if (!mm_only && y.id != BRAID_INVALID_ID &&
            braid_tensor_numel(g, y) == bg_numel(n))
            y = braid_reshape(g, y, n->rank, n->dims);
    } else {
        uint32_t ids[BC_MAX_PARAMS];
        for (uint32_t k = 0; k < n->ninputs; k++)
            ids[k] = in[k].id;
        if (abs_reduce) ids[0] = braid_abs(g, in[0]).id;
        y.id = bg_build(g, n->op, ids, n->ninputs, n->dtype, n->rank, n->dims,
                        &n->attr, NULL);
    }
    braid_output(g, "out", y);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "node %u: %s", (unsigned)id,
                 braid_graph_error(g));
    free(in);
    return g;
}

static braid_graph *gpu_node_graph(const bp_plan *p, uint32_t id,
                                   bool abs_reduce, bool mm_only) {
    return gpu_node_graph_at(p, id, abs_reduce, mm_only, BG_NONE);
}

/* ---- running
 * ------------------------------------------------------------------- */

static int gpu_state = -1; /* -1 unknown, 0 none, 1 present */

static bool gpu_available(void) {
    if (gpu_state < 0) {
        int n = 0;
        gpu_state = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    }
    return gpu_state == 1;
}

#define GPU_OK(call)                                                           \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        cr_assert_eq(e_, cudaSuccess, "%s: %s", #call,                         \
                     cudaGetErrorString(e_));                                  \
    } while (0)

/* Host data of one run: the node's inputs, reference outputs. */
typedef struct gpu_case {
    uint32_t nin;              /* node inputs */
    void **host;               /* per input: random data */
    size_t *bytes;             /* per input: its size */
    braid_input_binding *bind; /* bindings in0.. */
    char (*names)[16];         /* binding names */
} gpu_case;

static void *gpu_ref(const braid_graph *g, const gpu_case *c, size_t bytes) {
    void *out = malloc(bytes ? bytes : 1);
    cr_assert_not_null(out);
    braid_output_binding ob = {"out", out, bytes};
    braid_status s = braid_reference_run(g, c->bind, c->nin, &ob, 1);
    cr_assert_eq(s, BRAID_OK, "reference: %s", braid_last_error());
    return out;
}

/* The smallest gathered dim of fused node id's GATHERs whose indices are
 * its input k (loaded, through casts: a value in [-b, b) stays in range
 * through a cast to i32); -1 when none are. */
static int64_t gpu_gather_bound(const bp_plan *p, uint32_t id, uint32_t k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->op != BRAID_OP_FUSED) return -1;
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    int64_t b = -1;
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        const bp_instr *s = &pr->instr[i];
        if (s->op != BP_INSTR_GATHER) continue;
        uint32_t j = s->arg[0];
        while (j < i && pr->instr[j].op == BRAID_OP_CAST)
            j = pr->instr[j].arg[0];
        if (j >= i || pr->instr[j].op != BP_INSTR_LOAD ||
            pr->instr[j].input != k)
            continue;
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[s->input]);
        int64_t d = x->dims[s->axis];
        if (b < 0 || d < b) b = d;
    }
    return b;
}

static void gpu_case_init(gpu_case *c, const bp_plan *p, uint32_t id,
                          uint64_t seed) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    c->nin = n->ninputs;
    c->host = calloc(c->nin + 1, sizeof *c->host);
    c->bytes = calloc(c->nin + 1, sizeof *c->bytes);
    c->bind = calloc(c->nin + 1, sizeof *c->bind);
    c->names = calloc(c->nin + 1, sizeof *c->names);
    cr_assert(c->host && c->bytes && c->bind && c->names);
    for (uint32_t k = 0; k < c->nin; k++) {
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[k]);
        c->bytes[k] = bg_nbytes(x);
        c->host[k] = malloc(c->bytes[k] ? c->bytes[k] : 1);
        cr_assert_not_null(c->host[k]);
        double r = x->dtype == BRAID_I32 ? 100.0 : 2.0;
        int64_t gb = gpu_gather_bound(p, id, k);
        /* an index operand (gather, scatter; a fused GATHER's indices)
         * gets random values valid for every axis of the data (the
         * gathered one), negative ones included: wider ones would be out
         * of range (a run error, not a kernel to compare) */
        if (gb >= 0) {
            r = gb > 0 ? (double)gb : 1.0;
            ts_fill_random(x->dtype, c->host[k], bg_numel(x), seed + k, -r,
                           gb > 0 ? r - 1 : 0);
        } else if (bg_op(n->op)->kind == BRAID_KIND_INDEX && k == 1) {
            const bg_node *d = bg_node_at(p->res.graph, n->inputs[0]);
            int64_t m = d->rank ? d->dims[0] : 1;
            for (int a = 1; a < d->rank; a++)
                if (d->dims[a] < m) m = d->dims[a];
            r = m > 0 ? (double)m : 1.0;
            ts_fill_random(x->dtype, c->host[k], bg_numel(x), seed + k, -r,
                           m > 0 ? r - 1 : 0);
        } else {
            ts_fill_random(x->dtype, c->host[k], bg_numel(x), seed + k, -r,
                           r);
        }
        snprintf(c->names[k], sizeof c->names[k], "in%u", (unsigned)k);
        c->bind[k] =
            (braid_input_binding){c->names[k], c->host[k], c->bytes[k]};
    }
}

/* Input x of a node as the kernel reads it when the plan made x a strided
 * view (passes/layout.h): a buffer from the view's first element on, with
 * x's elements at their layout's offsets (the gaps 0xA5 bytes), *bytes its
 * size; NULL for a dense input. dense (x's elements in C order) is
 * rewritten from the buffer, so that elements a broadcast axis (stride 0)
 * shares are equal there too, as the reference must see them. */
static void *gpu_strided_input(const bp_plan *p, uint32_t x, void *dense,
                               size_t *bytes) {
    const int64_t *st = bp_layout_of(p, x);
    if (!st) return NULL;
    const bg_node *xn = bg_node_at(p->res.graph, x);
    size_t es = braid_dtype_size(xn->dtype);
    int64_t numel = bg_numel(xn), ext = numel > 0 ? 1 : 0;
    for (int a = 0; a < xn->rank && numel > 0; a++)
        ext += (xn->dims[a] - 1) * st[a];
    *bytes = (size_t)ext * es;
    char *buf = malloc(*bytes ? *bytes : 1);
    cr_assert_not_null(buf);
    memset(buf, 0xA5, *bytes);
    for (int pass = 0; pass < 2; pass++) /* scatter, then gather back */
        for (int64_t i = 0; i < numel; i++) {
            int64_t off = 0, rest = i;
            for (int a = xn->rank - 1; a >= 0; a--) {
                off += rest % xn->dims[a] * st[a];
                rest /= xn->dims[a];
            }
            char *d = (char *)dense + i * (int64_t)es, *v = buf + off * es;
            if (pass == 0)
                memcpy(v, d, es);
            else
                memcpy(d, v, es);
        }
    return buf;
}

static void gpu_case_free(gpu_case *c) {
    for (uint32_t k = 0; k < c->nin; k++)
        free(c->host[k]);
    free(c->host);
    free(c->bytes);
    free(c->bind);
    free(c->names);
}

/* Element i of the GPU result against the reference; mag: the magnitude
 * sum of a sum/mean output (0 otherwise). */
static bool gpu_close(braid_dtype t, braid_dtype tol_t, const void *x,
                      const void *r, int64_t i, double mag, bool bits) {
    size_t es = braid_dtype_size(t);
    if (bits || t == BRAID_BOOL || t == BRAID_I32)
        return memcmp((const char *)x + i * es, (const char *)r + i * es, es) ==
               0;
    double a = bg_load(t, x, i), b = bg_load(t, r, i), atol, rtol;
    if (a != a || b != b) return a != a && b != b;
    if (isinf(a) || isinf(b)) return a == b;
    ts_tolerance(tol_t, &atol, &rtol);
    double lim = 2 * (atol + rtol * fabs(b));
    if (tol_t != BRAID_F64) lim += 2e-6 * mag;
    return fabs(a - b) <= lim;
}

/* The dtype whose tolerance applies to node id: the loosest of the
 * dtypes it computes in (an f32 program stored as f64 carries f32
 * rounding). */
static braid_dtype gpu_tol_dtype(const bp_plan *p, uint32_t id) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    braid_dtype worst = n->dtype;
    double a, r, wr;
    ts_tolerance(worst, &a, &wr);
    if (n->op != BRAID_OP_FUSED) return worst;
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        braid_dtype t = pr->instr[i].dtype;
        if (!braid_dtype_is_float(t)) continue;
        ts_tolerance(t, &a, &r);
        if (r > wr || !braid_dtype_is_float(worst)) worst = t, wr = r;
    }
    return worst;
}

/* Per instruction of fused node id's program: for a STORE (passes/
 * program.h), the reference of the value it stores (the program rebuilt
 * up to that value) on c's inputs, else NULL. Computed before the node
 * runs: a STORE writes over one of those inputs. NULL when it has none. */
static void **gpu_store_refs(const bp_plan *p, uint32_t id, const gpu_case *c) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->op != BRAID_OP_FUSED) return NULL;
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    if (!bp_program_has_store(pr)) return NULL;
    void **refs = calloc(pr->ninstr, sizeof *refs);
    cr_assert_not_null(refs);
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        if (pr->instr[i].op != BP_INSTR_STORE) continue;
        braid_graph *g =
            gpu_node_graph_at(p, id, false, false, pr->instr[i].arg[0]);
        refs[i] = gpu_ref(g, c, c->bytes[pr->instr[i].input]);
        braid_graph_free(g);
    }
    return refs;
}

/* Compares what each STORE left in its variable (after[k]: input k's
 * bytes after the run) with gpu_store_refs' references, and frees them;
 * returns the mismatches (logged). */
static int gpu_store_compare(const bp_plan *p, uint32_t id, void **refs,
                             void *const *after, const char *who) {
    if (!refs) return 0;
    const bg_node *n = bg_node_at(p->res.graph, id);
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    braid_dtype tol_t = gpu_tol_dtype(p, id);
    int bad = 0;
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        if (!refs[i]) continue;
        uint32_t k = pr->instr[i].input;
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[k]);
        for (int64_t e = 0; e < bg_numel(x); e++) {
            if (gpu_close(x->dtype, tol_t, after[k], refs[i], e, 0, false))
                continue;
            cr_log_info("node %u: %s: STORE %u into input %u (%s): element "
                        "%lld of %lld: %.17g, reference %.17g",
                        (unsigned)id, who, (unsigned)i, (unsigned)k,
                        braid_dtype_name(x->dtype), (long long)e,
                        (long long)bg_numel(x), bg_load(x->dtype, after[k], e),
                        bg_load(x->dtype, refs[i], e));
            bad++;
            break;
        }
        free(refs[i]);
    }
    free(refs);
    return bad;
}

/* Elements each output of reduction node id combines. */
static int64_t gpu_reduced(const bp_plan *p, uint32_t id) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    int rank;
    const int64_t *dims;
    uint8_t axes;
    if (n->op == BRAID_OP_FUSED) {
        const bp_program *pr = &p->res.programs[p->res.info[id].program];
        rank = pr->rank, dims = pr->dims, axes = pr->axes;
    } else {
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[0]);
        rank = x->rank, dims = x->dims, axes = n->attr.axes;
    }
    int64_t r = 1;
    for (int d = 0; d < rank; d++)
        if ((axes >> d) & 1) r *= dims[d];
    return r;
}

/* Logs node id's part of the module text. */
static void gpu_log_kernel(const char *text, uint32_t id) {
    char tag[48];
    snprintf(tag, sizeof tag, "// @braid node %%%u ", (unsigned)id);
    const char *s = strstr(text, tag);
    if (!s) return;
    const char *e = strstr(s + 1, "// @braid node %");
    int len = e ? (int)(e - s) : (int)strlen(s);
    cr_log_info("%.*s", len, s);
}

/* Launches the kernel's launches in order with parameters ptr, without
 * waiting. */
static void gpu_launch_async(cudaLibrary_t lib, const bc_kernel *k,
                             void **ptr) {
    void *args[BC_MAX_PARAMS + 2];
    for (uint32_t i = 0; i < k->nparams; i++)
        args[i] = &ptr[i];
    for (uint32_t l = 0; l < k->nlaunch; l++) {
        const bc_launch *L = &k->launch[l];
        cudaKernel_t fn;
        GPU_OK(cudaLibraryGetKernel(&fn, lib, L->entry));
        dim3 grid = {L->grid[0], L->grid[1], L->grid[2]};
        dim3 block = {L->block[0], L->block[1], L->block[2]};
        GPU_OK(cudaLaunchKernel((const void *)fn, grid, block, args, 0, 0));
    }
}

/* The same, then waits for the device. */
static void gpu_launch(cudaLibrary_t lib, const bc_kernel *k, void **ptr) {
    gpu_launch_async(lib, k, ptr);
    GPU_OK(cudaDeviceSynchronize());
}

/* Device buffers are allocated `shift` bytes past a cudaMalloc'd base (a
 * shift of one element makes them misaligned for 16-byte access, so the
 * kernels' scalar path runs); gpu_free takes the shifted pointer. */
static void *gpu_alloc(size_t bytes, size_t shift) {
    char *d = NULL;
    GPU_OK(cudaMalloc((void **)&d, bytes + 16));
    return d + shift;
}

static void gpu_free(void *p, size_t shift) {
    if (p) cudaFree((char *)p - shift);
}

static void *gpu_upload(const void *host, size_t bytes, size_t shift) {
    void *d = gpu_alloc(bytes, shift);
    if (bytes) GPU_OK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* Runs node k->node of p from library lib and compares it; *failures
 * counts mismatching nodes (their details are logged). */
static void gpu_check_kernel(const bp_plan *p, cudaLibrary_t lib,
                             const bc_kernel *k, const char *text,
                             uint64_t seed, int *failures) {
    const bg_node *n = bg_node_at(p->res.graph, k->node);
    gpu_case c;
    gpu_case_init(&c, p, k->node, seed);
    void *strided[BC_MAX_PARAMS] = {0}; /* inputs that are strided views */
    size_t sbytes[BC_MAX_PARAMS] = {0};
    for (uint32_t i = 0; i < c.nin && i < BC_MAX_PARAMS; i++)
        strided[i] = gpu_strided_input(p, n->inputs[i], c.host[i], &sbytes[i]);
    size_t ob = bg_nbytes(n);
    braid_graph *g = gpu_node_graph(p, k->node, false, false);
    void *ref = gpu_ref(g, &c, ob);
    braid_graph_free(g);
    void **srefs = gpu_store_refs(p, k->node, &c);
    void *mag = NULL; /* magnitude sums of float sum/mean outputs */
    const bp_program *pr = n->op == BRAID_OP_FUSED
                               ? &p->res.programs[p->res.info[k->node].program]
                               : NULL;
    braid_op last = pr ? pr->instr[pr->ninstr - 1].op : n->op;
    if ((last == BRAID_OP_SUM || last == BRAID_OP_MEAN) &&
        braid_dtype_is_float(n->dtype)) {
        g = gpu_node_graph(p, k->node, true, false);
        mag = gpu_ref(g, &c, ob);
        braid_graph_free(g);
    }
    /* Every other kernel runs on buffers shifted by one element. */
    size_t shift[BC_MAX_PARAMS + 2] = {0};
    if (seed & 1) {
        shift[0] = braid_dtype_size(n->dtype);
        for (uint32_t i = 0; i < c.nin; i++)
            shift[1 + i] =
                braid_dtype_size(bg_node_at(p->res.graph, n->inputs[i])->dtype);
        if (k->extra == BC_EXTRA_MATMUL)
            shift[1 + c.nin] = braid_dtype_size(k->mm_dtype);
    }
    void *ptr[BC_MAX_PARAMS + 2] = {0};
    ptr[0] = gpu_alloc(ob, shift[0]);
    for (uint32_t i = 0; i < c.nin; i++)
        ptr[1 + i] = strided[i]
                         ? gpu_upload(strided[i], sbytes[i], shift[1 + i])
                         : gpu_upload(c.host[i], c.bytes[i], shift[1 + i]);
    for (uint32_t i = 0; i < c.nin && i < BC_MAX_PARAMS; i++)
        free(strided[i]);
    if (k->extra == BC_EXTRA_SCRATCH) {
        ptr[1 + c.nin] = gpu_alloc(k->scratch_bytes, 0);
    } else if (k->extra == BC_EXTRA_MATMUL) {
        g = gpu_node_graph(p, k->node, false, true);
        void *mm = gpu_ref(g, &c, k->mm_bytes);
        braid_graph_free(g);
        ptr[1 + c.nin] = gpu_upload(mm, k->mm_bytes, shift[1 + c.nin]);
        free(mm);
    }
    if (k->run_check) { /* the record, zeroed; the inputs are valid, so
                           it must stay clear */
        ptr[k->nparams - 1] = gpu_alloc(sizeof(bc_run_check), 0);
        GPU_OK(cudaMemset(ptr[k->nparams - 1], 0, sizeof(bc_run_check)));
    }
    gpu_launch(lib, k, ptr);
    if (k->run_check) {
        bc_run_check rec;
        GPU_OK(cudaMemcpy(&rec, ptr[k->nparams - 1], sizeof rec,
                          cudaMemcpyDeviceToHost));
        if (rec.kind != BC_CHECK_NONE) {
            cr_log_info("node %u (%s): run check %u recorded on valid data",
                        (unsigned)k->node, bg_op(n->op)->name,
                        (unsigned)rec.kind);
            ++*failures;
        }
    }
    if (srefs) { /* the variables as the kernel left them */
        void *after[BC_MAX_PARAMS] = {0};
        for (uint32_t i = 0; i < c.nin && i < BC_MAX_PARAMS; i++) {
            after[i] = malloc(c.bytes[i] ? c.bytes[i] : 1);
            cr_assert_not_null(after[i]);
            if (c.bytes[i])
                GPU_OK(cudaMemcpy(after[i], ptr[1 + i], c.bytes[i],
                                  cudaMemcpyDeviceToHost));
        }
        int bad = gpu_store_compare(p, k->node, srefs, after, "gpu");
        if (bad) gpu_log_kernel(text, k->node);
        *failures += bad;
        for (uint32_t i = 0; i < c.nin && i < BC_MAX_PARAMS; i++)
            free(after[i]);
    }
    void *out = malloc(ob ? ob : 1);
    cr_assert_not_null(out);
    if (ob) GPU_OK(cudaMemcpy(out, ptr[0], ob, cudaMemcpyDeviceToHost));
    bool bits = k->kind == BC_KERNEL_SOURCE || k->kind == BC_KERNEL_GATHER;
    int64_t numel = bg_numel(n);
    braid_dtype tol_t = gpu_tol_dtype(p, k->node);
    for (int64_t i = 0; i < numel; i++) {
        double m = mag ? fabs(bg_load(n->dtype, mag, i)) : 0.0;
        if (last == BRAID_OP_MEAN && mag) m *= (double)gpu_reduced(p, k->node);
        if (gpu_close(n->dtype, tol_t, out, ref, i, m, bits)) continue;
        cr_log_info("node %u (%s, %s%s): element %lld of %lld: gpu %.17g, "
                    "reference %.17g",
                    (unsigned)k->node, bg_op(n->op)->name,
                    braid_dtype_name(n->dtype), shift[0] ? ", misaligned" : "",
                    (long long)i, (long long)numel, bg_load(n->dtype, out, i),
                    bg_load(n->dtype, ref, i));
        gpu_log_kernel(text, k->node);
        ++*failures;
        break;
    }
    for (uint32_t i = 0; i < k->nparams; i++)
        gpu_free(ptr[i], shift[i]);
    free(out);
    free(ref);
    free(mag);
    gpu_case_free(&c);
}

/* Loads bin and checks every kernel of src; fails with the count. */
static void gpu_check_module(const bp_plan *p, const bc_source *src,
                             const bc_binary *bin, uint64_t seed,
                             const char *what) {
    cudaLibrary_t lib;
    GPU_OK(cudaLibraryLoadData(&lib, bin->cubin, NULL, NULL, 0, NULL, NULL, 0));
    int failures = 0;
    for (uint32_t i = 0; i < src->nkernels; i++)
        gpu_check_kernel(p, lib, &src->kernels[i], src->text, seed + 7919 * i,
                         &failures);
    GPU_OK(cudaLibraryUnload(lib));
    cr_assert_eq(failures, 0,
                 "%s: %d of %u kernels differ from the "
                 "reference (details above)",
                 what, failures, (unsigned)src->nkernels);
}

/* ---- timing (tests/test_codegen.c, gpu_bandwidth)
 * ---------------------------- */

/* Average seconds of one run of kernel k (on zeroed buffers). */
static double gpu_bench_kernel(const bp_plan *p, const bc_source *src,
                               const bc_binary *bin, const bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, k->node);
    cudaLibrary_t lib;
    GPU_OK(cudaLibraryLoadData(&lib, bin->cubin, NULL, NULL, 0, NULL, NULL, 0));
    void *ptr[BC_MAX_PARAMS + 2] = {0};
    ptr[0] = gpu_alloc(bg_nbytes(n), 0);
    for (uint32_t i = 0; i < n->ninputs; i++) {
        size_t b = bg_nbytes(bg_node_at(p->res.graph, n->inputs[i]));
        ptr[1 + i] = gpu_alloc(b, 0);
        GPU_OK(cudaMemset(ptr[1 + i], 0, b));
    }
    if (k->extra == BC_EXTRA_SCRATCH)
        ptr[1 + n->ninputs] = gpu_alloc(k->scratch_bytes, 0);
    if (k->run_check) {
        ptr[k->nparams - 1] = gpu_alloc(sizeof(bc_run_check), 0);
        GPU_OK(cudaMemset(ptr[k->nparams - 1], 0, sizeof(bc_run_check)));
    }
    cudaEvent_t e0, e1;
    GPU_OK(cudaEventCreate(&e0));
    GPU_OK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; w++)
        gpu_launch(lib, k, ptr);
    enum { REPS = 20 };
    GPU_OK(cudaEventRecord(e0, 0));
    for (int r = 0; r < REPS; r++)
        gpu_launch_async(lib, k, ptr);
    GPU_OK(cudaEventRecord(e1, 0));
    GPU_OK(cudaEventSynchronize(e1));
    float ms = 0;
    GPU_OK(cudaEventElapsedTime(&ms, e0, e1));
    for (uint32_t i = 0; i < k->nparams; i++)
        gpu_free(ptr[i], 0);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    GPU_OK(cudaLibraryUnload(lib));
    (void)src;
    return ms * 1e-3 / REPS;
}

/* Compiles g (hinted to the GPU) and times its kernels that are not
 * generators or shape ops; bytes: their compulsory traffic. */
static void gpu_bench_graph(braid_graph *g, const char *label, double bytes,
                            double d2d) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none"; /* no ahead-of-time NVRTC build here */
    o.disable_passes = BRAID_PASS_CHUNK; /* one kernel over the whole */
    braid_plan *p;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK);
    bc_binary bin;
    char err[4096];
    cr_assert_eq(bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err),
                 BRAID_OK, "%s", err);
    for (uint32_t i = 0; i < src.nkernels; i++) {
        const bc_kernel *k = &src.kernels[i];
        if (k->kind == BC_KERNEL_SOURCE || k->kind == BC_KERNEL_GATHER)
            continue;
        double t = gpu_bench_kernel(p, &src, &bin, k);
        cr_log_info("%-44s %8.3f ms %7.0f GB/s  %5.1f%% of D2D copy", label,
                    t * 1e3, bytes / t * 1e-9, 100.0 * bytes / t / d2d);
    }
    bc_binary_free(&bin);
    bc_source_free(&src);
    braid_plan_free(p);
}

/* Read + write bytes per second of a 1 GiB device-to-device copy. */
static double gpu_d2d_bandwidth(void) {
    size_t bytes = (size_t)1 << 30;
    void *a = gpu_alloc(bytes, 0), *b = gpu_alloc(bytes, 0);
    cudaEvent_t e0, e1;
    GPU_OK(cudaEventCreate(&e0));
    GPU_OK(cudaEventCreate(&e1));
    GPU_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    GPU_OK(cudaEventRecord(e0, 0));
    for (int r = 0; r < 10; r++)
        GPU_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
    GPU_OK(cudaEventRecord(e1, 0));
    GPU_OK(cudaEventSynchronize(e1));
    float ms = 0;
    GPU_OK(cudaEventElapsedTime(&ms, e0, e1));
    gpu_free(a, 0);
    gpu_free(b, 0);
    return 2.0 * (double)bytes * 10 / (ms * 1e-3);
}

#endif /* BRAID_TESTS_CODEGEN_GPU_H */
