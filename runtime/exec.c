/* runtime/exec.c — the executor: braid_exec_new, braid_run,
 * braid_run_async, braid_wait.
 *
 * An executor owns everything a run needs, allocated once: one 64-byte
 * aligned buffer per arena of the plan (touched at creation so the first
 * run pays no page faults), kernel scratch and a thread pool. A run binds
 * the caller's buffers (inputs are read in place; an output the caller
 * binds is computed straight into the caller's buffer when that is safe),
 * runs the schedule through the one dispatcher (runtime/dispatch.h) and
 * copies the other requested outputs out. The dispatcher's device queues
 * are the CUDA backend's streams, or, in an emulated executor
 * (br_exec_new_emulated), host queues (runtime/emulate.c); a CPU plan has
 * none.
 *
 * A run has two halves: braid_run_async binds and starts it (a CPU plan
 * runs entirely there; a plan with device nodes returns once every device
 * node is issued and every CPU node ran, before the final
 * synchronisation), braid_wait finishes it (GPU synchronisation or the
 * emulated queues' last nodes, deferred copies, outputs copied out).
 * braid_run is the two in a row. */
#define _POSIX_C_SOURCE 200809L
#include "passes/layout.h"
#include "runtime/cuda/cuda.h"
#include "runtime/dispatch.h"
#include "runtime/profile/profile.h"
#include "runtime/runtime.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BR_ALIGN 64

#include "runtime/exec_impl.h"

static braid_status run_node(braid_exec *e, br_kernel_args *a, uint32_t id);
static braid_status run_host_node(void *ctx, uint32_t id);

/* ---- creation ------------------------------------------------------------ */

/* Node id's fused program, or NULL (not fused, or malformed). */
static const bp_program *node_program(const bp_plan *p, uint32_t id) {
    uint32_t k = p->res.info[id].program;
    return k < p->res.nprograms ? &p->res.programs[k] : NULL;
}

static void *aligned_buffer(uint64_t bytes) {
    if (bytes > SIZE_MAX - BR_ALIGN) return NULL;
    size_t n = ((size_t)bytes + BR_ALIGN - 1) & ~(size_t)(BR_ALIGN - 1);
    return aligned_alloc(BR_ALIGN, n ? n : BR_ALIGN);
}

static braid_status oom_for_arena(const bp_plan *p, uint32_t a) {
    char dev[32];
    return bg_set_last_error(
        BRAID_ERR_OUT_OF_MEMORY,
        "braid_exec_new: out of memory allocating arena %u (%llu bytes on "
        "%s)",
        a, (unsigned long long)p->res.arenas[a].bytes,
        bp_device_str(p->res.arenas[a].device, dev, sizeof dev));
}

/* "no CUDA device: <why>" or "braid has no CUDA backend yet". */
static const char *why_no_device(void) {
    return braid_cuda_device_count() == 0
               ? braid_cuda_status()
               : "this build of braid cannot run CUDA nodes yet";
}

/* Every scheduled node runs here: on the CPU (or any device, emulated),
 * with a kernel. */
static braid_status check_nodes(braid_exec *e) {
    const bp_plan *p = e->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bg_node *n = bg_node_at(p->res.graph, id);
        if (e->cuda && (e->sched.on_dev[id] || p->res.info[id].noop))
            continue; /* the CUDA backend issues it, or nothing runs */
        if (p->res.info[id].device.kind != BP_DEVICE_CPU && !e->emulate) {
            char use[160];
            return bg_set_last_error(
                BRAID_ERR_DEVICE,
                "braid_exec_new: the plan runs %s: %s (compile for \"cpu\" "
                "to run here)",
                bp_device_use_str(p, p->res.info[id].device, use, sizeof use),
                why_no_device());
        }
        if (p->res.info[id].noop) continue;
        braid_status s = br_cpu_prepare(p->res.graph, id, &e->scratch_bytes);
        if (s == BRAID_OK && n->op == BRAID_OP_FUSED)
            s = node_program(p, id)
                    ? br_fused_check(p->res.graph, id, node_program(p, id))
                    : bg_set_last_error(BRAID_ERR_INTERNAL,
                                        "braid_exec_new: fused node %u has "
                                        "no program",
                                        id);
        if (s == BRAID_OK && n->op == BRAID_OP_FUSED)
            s = br_fused_scratch(p->res.graph, id,
                                 &p->res.programs[p->res.info[id].program],
                                 &e->scratch_bytes);
        if (s != BRAID_OK) return s;
        if (n->ninputs > e->max_inputs) e->max_inputs = n->ninputs;
    }
    return BRAID_OK;
}

static braid_status alloc_tables(braid_exec *e) {
    const bp_plan *p = e->plan;
    e->arena = calloc(p->res.narenas ? p->res.narenas : 1, sizeof *e->arena);
    e->home = calloc(p->res.ninfo ? p->res.ninfo : 1, sizeof *e->home);
    e->ptr = calloc(p->res.ninfo ? p->res.ninfo : 1, sizeof *e->ptr);
    e->args = calloc(e->max_inputs ? e->max_inputs : 1, sizeof *e->args);
    e->sargs = calloc(e->max_inputs ? e->max_inputs : 1, sizeof *e->sargs);
    e->staging =
        calloc(p->res.ninputs ? p->res.ninputs : 1, sizeof *e->staging);
    e->in_binding =
        calloc(p->res.ninputs ? p->res.ninputs : 1, sizeof *e->in_binding);
    e->out_binding = calloc(p->res.noutputs, sizeof *e->out_binding);
    e->cpu_done = calloc(p->res.ninfo ? p->res.ninfo : 1, sizeof *e->cpu_done);
    if (!e->arena || !e->home || !e->ptr || !e->args || !e->sargs || !e->staging ||
        !e->in_binding || !e->out_binding || !e->cpu_done)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory for the "
                                 "executor's tables (%u nodes)",
                                 p->res.ninfo);
    return BRAID_OK;
}

static braid_status alloc_buffers(braid_exec *e) {
    const bp_plan *p = e->plan;
    for (uint32_t i = 0; i < p->res.narenas; i++) {
        e->arena[i] = br_cuda_arena(e->cuda, i); /* GPU, pinned: CUDA's */
        if (e->arena[i]) continue;
        e->arena[i] = aligned_buffer(p->res.arenas[i].bytes);
        if (!e->arena[i])
            return oom_for_arena(p, i);
        memset(e->arena[i], 0, p->res.arenas[i].bytes); /* fault pages in now */
    }
    if (e->scratch_bytes > 0) {
        e->scratch = aligned_buffer(e->scratch_bytes);
        if (!e->scratch)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "braid_exec_new: out of memory "
                                     "allocating %zu bytes of kernel scratch",
                                     e->scratch_bytes);
    }
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->storage == BP_STORAGE_ARENA)
            e->home[id] = (char *)e->arena[pl->arena] + pl->offset;
        if (pl->storage == BP_STORAGE_ARENA && pl->bytes > 0 && !e->cuda &&
            p->res.graph->nodes[id].op ==
                BRAID_OP_CONSTANT) /* a GPU constant */
            memcpy(e->home[id], p->res.graph->nodes[id].attr.data, pl->bytes);
        else if (pl->storage == BP_STORAGE_CONSTANT)
            e->home[id] = p->res.graph->nodes[id].attr.data;
        else if (pl->storage == BP_STORAGE_ARENA && pl->bytes > 0 &&
                 p->res.graph->nodes[id].op == BRAID_OP_VARIABLE &&
                 (!e->cuda || p->res.info[id].device.kind == BP_DEVICE_CPU))
            /* its first value; a GPU variable's is uploaded from here */
            bg_variable_init(&p->res.graph->nodes[id], e->home[id]);
        if (br_cuda_home(e->cuda, id)) /* uploaded by the CUDA backend */
            e->home[id] = br_cuda_home(e->cuda, id);
        e->ptr[id] = e->home[id];
    }
    return BRAID_OK;
}

/* What the host's nodes can derive once from their constant inputs
 * (br_cpu_derive: a Winograd conv's filter transform, a matmul's packed
 * weights), where each run
 * would otherwise derive it again. Memory that runs short leaves a node
 * deriving it per run, as before. */
static void derive_constants(braid_exec *e) {
    const bp_plan *p = e->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bg_node *n = bg_node_at(g, id);
        if (p->res.info[id].noop || (e->cuda && e->sched.on_dev[id])) continue;
        bool any = false; /* e->args (max_inputs) holds the constants */
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t x = n->inputs[k];
            bool c = g->nodes[x].op == BRAID_OP_CONSTANT &&
                     p->res.info[x].place.storage == BP_STORAGE_CONSTANT &&
                     !bp_layout_of(p, x) && g->nodes[x].attr.data;
            e->args[k] = c ? g->nodes[x].attr.data : NULL;
            any |= c;
        }
        void *d =
            any ? br_cpu_derive(g, id, e->args, node_program(p, id), e->pool)
                : NULL;
        if (!d) continue;
        if (!e->derived &&
            !(e->derived = calloc(p->res.ninfo, sizeof *e->derived))) {
            free(d); /* memory is short: the node derives it per run */
            return;
        }
        e->derived[id] = d;
    }
}

static braid_status exec_new(const braid_plan *p, bool emulate, uint64_t seed,
                             braid_exec **exec) {
    if (!exec)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_new: exec is NULL");
    *exec = NULL;
    if (!p)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_new: plan is NULL");
    braid_exec *e = calloc(1, sizeof *e);
    if (!e)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    e->plan = p;
    e->emulate = emulate;
    atomic_flag_clear(&e->busy);
    braid_status s = br_sched_build(p, &e->sched);
    if (s == BRAID_OK && !(e->pool = br_pool_new(p->in.opts.num_threads)))
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "braid_exec_new: cannot create the thread "
                              "pool");
    if (s == BRAID_OK && !emulate && br_plan_uses_cuda(p))
        s = br_cuda_new(p, &e->sched, e->pool, &e->cuda);
    if (s == BRAID_OK) s = check_nodes(e);
    if (s == BRAID_OK) s = alloc_tables(e);
    if (s == BRAID_OK) s = alloc_buffers(e);
    if (s == BRAID_OK) derive_constants(e);
    if (s == BRAID_OK) s = br_exec_init_variables(e);
    if (s == BRAID_OK && emulate &&
        !(e->emu = br_emu_new(p, &e->sched, seed, run_host_node, e)))
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "braid_exec_new: out of memory");
    if (s != BRAID_OK) {
        braid_exec_free(e);
        return s;
    }
    *exec = e;
    return BRAID_OK;
}

braid_status braid_exec_new(const braid_plan *p, braid_exec **exec) {
    return exec_new(p, false, 0, exec);
}

braid_status br_exec_new_emulated(const braid_plan *p, uint64_t seed,
                                  braid_exec **exec) {
    return exec_new(p, true, seed, exec);
}

void braid_exec_free(braid_exec *e) {
    if (!e) return;
    if (e->run.pending) /* a run in flight reads and writes our buffers */
        (void)braid_wait(e);
    br_prof_cuda_free(e->prof, e->cuda);
    br_prof_free(e->prof);
    br_pool_free(e->pool);
    if (e->arena)
        for (uint32_t i = 0; i < e->plan->res.narenas; i++)
            if (!br_cuda_arena(e->cuda, i)) free(e->arena[i]);
    br_cuda_free(e->cuda);
    if (e->staging)
        for (uint32_t i = 0; i < e->plan->res.ninputs; i++)
            free(e->staging[i]);
    free(e->arena);
    free(e->home);
    free(e->ptr);
    free(e->args);
    free(e->sargs);
    if (e->derived)
        for (uint32_t i = 0; i < e->plan->res.ninfo; i++)
            free(e->derived[i]);
    free(e->derived);
    free(e->scratch);
    free(e->staging);
    free(e->in_binding);
    free(e->out_binding);
    free(e->outs);
    free(e->cpu_done);
    br_emu_free(e->emu);
    br_sched_free(&e->sched);
    free(e);
}

/* ---- binding ------------------------------------------------------------- */

/* "x, w, b" (shortened when long) for messages. */
static const char *io_names(const bp_io *io, uint32_t n, char *buf,
                            size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && len + 8 < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                                io[i].name);
    if (len >= size) snprintf(buf + size - 5, 5, "...");
    return n ? buf : "none";
}

static int64_t find_io(const bp_io *io, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(io[i].name, name) == 0) return i;
    return -1;
}

/* What one binding check needs: the call's name for messages, "input" or
 * "output", and the plan's inputs or outputs. */
typedef struct bind_ctx {
    const bp_plan *p;  /* the plan */
    const char *where; /* "braid_run" or "braid_run_async" */
    const char *kind;  /* "input" / "output" */
    const bp_io *io;   /* the plan's inputs or outputs */
    uint32_t nio;      /* entries in io */
    int64_t *bound;    /* per io entry: its binding index, or -1 */
} bind_ctx;

/* The checks shared by inputs and outputs. */
static braid_status check_binding(const bind_ctx *b, size_t i, const char *name,
                                  const void *data, size_t bytes) {
    char buf[256], type[128];
    if (!name)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: %s binding %zu has a NULL name", b->where,
                                 b->kind, i);
    int64_t k = find_io(b->io, b->nio, name);
    if (k < 0)
        return bg_set_last_error(BRAID_ERR_NOT_FOUND,
                                 "%s: the plan has no %s named \"%s\" "
                                 "(its %ss: %s)",
                                 b->where, b->kind, name, b->kind,
                                 io_names(b->io, b->nio, buf, sizeof buf));
    if (b->bound[k] >= 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: %s \"%s\" is bound twice "
                                 "(bindings %lld and %zu)",
                                 b->where, b->kind, name,
                                 (long long)b->bound[k], i);
    const bg_node *n = bg_node_at(b->p->res.graph, b->io[k].node);
    if (bytes != b->io[k].bytes)
        return bg_set_last_error(BRAID_ERR_SHAPE,
                                 "%s: %s \"%s\" is bound to %zu bytes, "
                                 "expected %llu (%s)",
                                 b->where, b->kind, name, bytes,
                                 (unsigned long long)b->io[k].bytes,
                                 bg_type_str(n, type, sizeof type));
    if (!data && bytes > 0)
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT, "%s: %s \"%s\" (%s) has NULL data",
            b->where, b->kind, name, bg_type_str(n, type, sizeof type));
    b->bound[k] = (int64_t)i;
    return BRAID_OK;
}

/* Points each input node at the caller's data, or at an aligned copy when
 * the data is not aligned to its element size. */
static braid_status bind_inputs(braid_exec *e, const char *where,
                                const braid_input_binding *in, size_t nin) {
    const bp_plan *p = e->plan;
    for (uint32_t k = 0; k < p->res.ninputs; k++)
        e->in_binding[k] = -1;
    bind_ctx b = {
        p, where, "input", p->res.inputs, p->res.ninputs, e->in_binding};
    for (size_t i = 0; i < nin; i++) {
        braid_status s =
            check_binding(&b, i, in[i].name, in[i].data, in[i].bytes);
        if (s != BRAID_OK) return s;
    }
    for (uint32_t k = 0; k < p->res.ninputs; k++) {
        char type[128];
        const bp_io *io = &p->res.inputs[k];
        const bg_node *n = bg_node_at(p->res.graph, io->node);
        if (e->in_binding[k] < 0)
            return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                     "%s: input \"%s\" (%s) is not bound",
                                     where, io->name,
                                     bg_type_str(n, type, sizeof type));
        const braid_input_binding *bi = &in[e->in_binding[k]];
        size_t align = braid_dtype_size(n->dtype);
        /* device memory is only ever read by copies (cuda_run.c refuses
           CPU readers), which need no alignment: never staged on the host */
        if ((uintptr_t)bi->data % align == 0 ||
            (e->cuda && bi->bytes > 0 &&
             br_cuda_pointer_device(bi->data) >= 0)) {
            e->ptr[io->node] = (void *)(uintptr_t)bi->data;
            continue;
        }
        if (!e->staging[k] && !(e->staging[k] = aligned_buffer(io->bytes)))
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "%s: out of memory copying misaligned "
                                     "input \"%s\" (%llu bytes)",
                                     where, io->name,
                                     (unsigned long long)io->bytes);
        memcpy(e->staging[k], bi->data, io->bytes);
        e->ptr[io->node] = e->staging[k];
    }
    return BRAID_OK;
}

static bool overlaps(const void *a, size_t na, const void *b, size_t nb) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na > 0 && nb > 0 && x < y + nb && y < x + na;
}

/* An output may be computed in the caller's buffer when the node has a
 * buffer of its own, no earlier binding took it, the memory is aligned and
 * it overlaps nothing else the run reads or writes; a caller's device
 * buffer only when a D2H copy writes it and no CPU node reads it (a CPU
 * kernel must never write or read device memory). */
static bool can_write_in_place(const braid_exec *e,
                               const braid_input_binding *in, size_t nin,
                               const braid_output_binding *out, size_t nout,
                               size_t j) {
    const bp_plan *p = e->plan;
    uint32_t id = e->outs[j].node;
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (p->res.info[id].place.storage != BP_STORAGE_ARENA ||
        /* a GPU constant's, a variable's bytes persist across runs (a
         * noop concat, whose inputs were computed into its bytes, is the
         * chunked pipeline's output: written in place as before) */
        (p->res.info[id].noop &&
         (n->op == BRAID_OP_CONSTANT || n->op == BRAID_OP_VARIABLE)) ||
        e->ptr[id] != e->home[id] || out[j].bytes == 0 ||
        (uintptr_t)out[j].data % braid_dtype_size(n->dtype) != 0)
        return false;
    for (size_t i = 0; i < nin; i++)
        if (overlaps(out[j].data, out[j].bytes, in[i].data, in[i].bytes))
            return false;
    for (size_t i = 0; i < nout; i++)
        if (i != j &&
            overlaps(out[j].data, out[j].bytes, out[i].data, out[i].bytes))
            return false;
    return !e->cuda || br_cuda_pointer_device(out[j].data) < 0 ||
           br_cuda_device_output_in_place(e->cuda, id);
}

/* Checks the output bindings and records them in e->outs (the caller's
 * array may be gone by braid_wait). */
static braid_status bind_outputs(braid_exec *e, const char *where,
                                 const braid_input_binding *in, size_t nin,
                                 const braid_output_binding *out, size_t nout) {
    const bp_plan *p = e->plan;
    for (uint32_t k = 0; k < p->res.noutputs; k++)
        e->out_binding[k] = -1;
    bind_ctx b = {
        p, where, "output", p->res.outputs, p->res.noutputs, e->out_binding};
    for (size_t j = 0; j < nout; j++) {
        braid_status s =
            check_binding(&b, j, out[j].name, out[j].data, out[j].bytes);
        if (s != BRAID_OK) return s;
    }
    if (nout > e->outs_cap) {
        br_out_rec *f = realloc(e->outs, nout * sizeof *f);
        if (!f)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "%s: out of memory", where);
        e->outs = f;
        e->outs_cap = nout;
    }
    e->nouts = nout;
    for (size_t j = 0; j < nout; j++) {
        int64_t k = find_io(p->res.outputs, p->res.noutputs, out[j].name);
        e->outs[j] = (br_out_rec){out[j].data, out[j].bytes,
                                  p->res.outputs[k].node, false};
    }
    for (size_t j = 0; j < nout; j++) {
        e->outs[j].in_place = can_write_in_place(e, in, nin, out, nout, j);
        if (e->outs[j].in_place) e->ptr[e->outs[j].node] = out[j].data;
    }
    return BRAID_OK;
}

/* ---- running ------------------------------------------------------------- */

/* Views share their base's bytes; bases precede views in the schedule, so
 * one pass in order resolves chains of views. Done after binding, since a
 * base may be a caller's buffer. */
static void resolve_views(braid_exec *e) {
    const bp_plan *p = e->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        const bp_tensor_place *pl = &p->res.info[id].place;
        if (pl->storage == BP_STORAGE_VIEW)
            e->ptr[id] = (char *)e->ptr[pl->base] + pl->offset;
    }
}

static braid_status run_node(braid_exec *e, br_kernel_args *a, uint32_t id) {
    const bp_plan *p = e->plan;
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->op == BRAID_OP_INPUT || n->op == BRAID_OP_CONSTANT ||
        p->res.info[id].noop)
        return BRAID_OK;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        e->args[k] = e->ptr[n->inputs[k]];
        e->sargs[k] = bp_layout_of(p, n->inputs[k]);
    }
    a->out_strides = bp_layout_of(p, id);
    a->derived = e->derived ? e->derived[id] : NULL;
    a->id = id;
    a->node = n;
    a->out = e->ptr[id];
    a->program = node_program(p, id);
    if (!e->profiling) return br_cpu_run(a);
    int64_t t0 = br_prof_now_ns();
    braid_status s = br_cpu_run(a);
    int64_t t1 = br_prof_now_ns();
    uint32_t q = p->res.info[id].queue;
    br_prof_span(e->prof, id, q < p->res.nqueues ? q : 0, t0, t1, true);
    br_prof_take_workers(e->prof, e->pool, id);
    return s;
}

/* The dispatcher's (and the emulator's) callback for one node computed on
 * the host (ctx is the executor). */
static braid_status run_host_node(void *ctx, uint32_t id) {
    braid_exec *e = ctx;
    return run_node(e, &e->run.kargs, id);
}

/* Starts the run of the bound schedule. *started false: nothing ran and
 * the status is an argument error (a binding the CUDA backend refuses);
 * true: the run is under way and its status so far is returned (only a
 * CUDA run finishes later, in finish_run). */
static braid_status start_schedule(braid_exec *e, const braid_input_binding *in,
                                   size_t nin, const braid_output_binding *out,
                                   size_t nout, bool *started) {
    const bp_plan *p = e->plan;
    e->run.kargs = (br_kernel_args){.g = p->res.graph,
                                    .in = e->args,
                                    .in_strides = e->sargs,
                                    .pool = e->pool,
                                    .scratch = e->scratch,
                                    .scratch_bytes = e->scratch_bytes,
                                    .check = &e->check};
    resolve_views(e);
    if (e->profiling) {
        br_prof_run_begin(e->prof);
        br_prof_take_workers(NULL, e->pool, BG_NONE); /* stale shares */
        braid_status s = br_prof_cuda_begin(e->prof, e->cuda);
        if (s != BRAID_OK) {
            *started = false;
            return s;
        }
    }
    br_dispatch d = {&e->sched, NULL, NULL, run_host_node, e, e->cpu_done};
    if (e->emulate) {
        br_emu_begin(e->emu);
        d.ops = br_emu_ops();
        d.queues = e->emu;
    } else if (e->cuda) { /* checks the bindings, decides graph replay */
        e->run.cargs =
            (br_cuda_run_args){.ptr = e->ptr,
                               .in = in,
                               .nin = nin,
                               .out = out,
                               .nout = nout,
                               .pool = e->pool,
                               .prof = e->profiling ? e->prof : NULL};
        braid_status s = br_cuda_run_start(e->cuda, &e->run.cargs, started);
        if (!*started) return s;
        if (s != BRAID_OK) return s;
        d.ops = br_cuda_ops();
        d.queues = e->cuda;
    }
    *started = true;
    return br_dispatch_run(&d);
}

/* memmove, or cudaMemcpy (cudaMemcpyDefault) when either side is a
 * caller's device memory, which the host must never dereference;
 * overlapping device ranges go through a host buffer (cudaMemcpy does not
 * allow overlap). Only executors with a CUDA backend look at pointers. */
static braid_status copy_out(const braid_exec *e, void *dst, const void *src,
                             size_t n) {
    if (dst == src) return BRAID_OK;
    if (!e->cuda || (br_cuda_pointer_device(dst) < 0 &&
                     br_cuda_pointer_device(src) < 0)) {
        memmove(dst, src, n);
        return BRAID_OK;
    }
    if (!overlaps(dst, n, src, n)) return br_cuda_memcpy(dst, src, n);
    void *tmp = malloc(n);
    if (!tmp)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_wait: out of memory copying an "
                                 "output (%zu bytes)",
                                 n);
    braid_status s = br_cuda_memcpy(tmp, src, n);
    if (s == BRAID_OK) s = br_cuda_memcpy(dst, tmp, n);
    free(tmp);
    return s;
}

/* Copies what was not computed in place. Outputs that are graph inputs
 * read the caller's memory, which another output binding may overwrite
 * (the caller may reuse an input buffer for an output), so they go first. */
static braid_status finish_outputs(braid_exec *e) {
    const bp_plan *p = e->plan;
    braid_status s = BRAID_OK;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t j = 0; s == BRAID_OK && j < e->nouts; j++) {
            const br_out_rec *o = &e->outs[j];
            bool from_input =
                p->res.info[o->node].place.storage == BP_STORAGE_INPUT;
            if (o->in_place || o->bytes == 0 || from_input != !pass) continue;
            s = copy_out(e, o->data, e->ptr[o->node], o->bytes);
        }
    }
    return s;
}

/* An output showing a variable (or a view of one) is its value before the
 * run's assigns, like every read of it (docs/training.md): copied out
 * before the run starts, and not again when it ends. */
static braid_status variable_outputs(braid_exec *e) {
    const bp_plan *p = e->plan;
    braid_status s = BRAID_OK;
    for (size_t j = 0; s == BRAID_OK && j < e->nouts; j++) {
        br_out_rec *o = &e->outs[j];
        const bp_tensor_place *pl = &p->res.info[o->node].place;
        uint32_t root = pl->storage == BP_STORAGE_VIEW ? pl->base : o->node;
        if (p->res.graph->nodes[root].op != BRAID_OP_VARIABLE || o->in_place)
            continue;
        uint64_t off = pl->storage == BP_STORAGE_VIEW ? pl->offset : 0;
        if (o->bytes) s = copy_out(e, o->data, (char *)e->home[root] + off, o->bytes);
        o->in_place = true;
    }
    return s;
}

static void reset_pointers(braid_exec *e) {
    const bp_plan *p = e->plan;
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        e->ptr[p->res.schedule[i]] = e->home[p->res.schedule[i]];
}

static braid_status check_run_args(const braid_exec *e, const char *where,
                                   const braid_input_binding *in, size_t nin,
                                   const braid_output_binding *out,
                                   size_t nout) {
    if (!e)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: exec is NULL",
                                 where);
    if (!in && nin > 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: inputs is NULL but ninputs is %zu", where,
                                 nin);
    if (!out && nout > 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: outputs is NULL but noutputs is %zu",
                                 where, nout);
    return BRAID_OK;
}

/* Takes the executor for one call; false (with a message) when another
 * thread is inside it. */
bool br_exec_enter(braid_exec *e, const char *where) {
    if (!atomic_flag_test_and_set(&e->busy)) return true;
    bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                      "%s: the executor is in use by another thread (one "
                      "call at a time)",
                      where);
    return false;
}

/* braid_run_async, with where naming the public call for messages. A run
 * that could not start (bad arguments) leaves nothing pending. */
static braid_status run_async(braid_exec *e, const char *where,
                              const braid_input_binding *in, size_t nin,
                              const braid_output_binding *out, size_t nout) {
    braid_status s = check_run_args(e, where, in, nin, out, nout);
    if (s != BRAID_OK) return s;
    if (!br_exec_enter(e, where)) return BRAID_ERR_INVALID_ARGUMENT;
    if (e->run.pending) {
        atomic_flag_clear(&e->busy);
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: a run started by braid_run_async is "
                                 "still outstanding on this executor (call "
                                 "braid_wait first)",
                                 where);
    }
    bool started = false;
    s = bind_inputs(e, where, in, nin);
    if (s == BRAID_OK) s = bind_outputs(e, where, in, nin, out, nout);
    if (s == BRAID_OK) s = variable_outputs(e);
    if (s == BRAID_OK) s = start_schedule(e, in, nin, out, nout, &started);
    if (started) { /* braid_wait reports the run's status */
        e->run.pending = true;
        e->run.status = s;
        if (s != BRAID_OK)
            snprintf(e->run.error, sizeof e->run.error, "%s",
                     braid_last_error());
        s = BRAID_OK;
    } else {
        reset_pointers(e);
    }
    atomic_flag_clear(&e->busy);
    return s;
}

/* Completes the pending run: waits for the GPUs, copies outputs out. */
static braid_status finish_run(braid_exec *e) {
    braid_status st = e->run.status;
    braid_status s = st;
    if (e->cuda)
        s = br_cuda_run_finish(e->cuda, st);
    else if (e->emu && s == BRAID_OK) /* the emulated queues' last work */
        s = br_emu_finish(e->emu);
    /* the CPU kernels' record, read once every kernel is done */
    braid_status c = br_run_check_take(e->plan, &e->check);
    if (s == BRAID_OK) s = c;
    if (e->profiling && s == BRAID_OK)
        s = br_prof_cuda_collect(e->prof, e->cuda);
    if (e->profiling) br_prof_run_end(e->prof, s == BRAID_OK);
    if (s == BRAID_OK) s = finish_outputs(e);
    reset_pointers(e);
    e->run.pending = false;
    if (st != BRAID_OK) /* the message may come from another thread */
        bg_set_last_error(st, "%s", e->run.error);
    return s;
}

braid_status braid_run_async(braid_exec *e, const braid_input_binding *inputs,
                             size_t ninputs,
                             const braid_output_binding *outputs,
                             size_t noutputs) {
    return run_async(e, "braid_run_async", inputs, ninputs, outputs, noutputs);
}

braid_status braid_wait(braid_exec *e) {
    if (!e)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_wait: exec is NULL");
    if (!br_exec_enter(e, "braid_wait")) return BRAID_ERR_INVALID_ARGUMENT;
    braid_status s = e->run.pending ? finish_run(e) : BRAID_OK;
    atomic_flag_clear(&e->busy);
    return s;
}

braid_status braid_run(braid_exec *e, const braid_input_binding *inputs,
                       size_t ninputs, const braid_output_binding *outputs,
                       size_t noutputs) {
    braid_status s =
        run_async(e, "braid_run", inputs, ninputs, outputs, noutputs);
    return s == BRAID_OK ? braid_wait(e) : s;
}

br_cuda *br_exec_cuda(const braid_exec *e) {
    return e ? e->cuda : NULL;
}
