/* codegen/source.c — which nodes get kernels, programs for single nodes,
 * program validation (bp_program_check), and module assembly (bc_kernel_source,
 * bc_plan_source).
 *
 * A module is the prelude, graph/rng.c when a random generator needs it,
 * then one block per kernel: a marker line naming the node (bc_compile
 * quotes it in compile errors), the device functions, the kernel(s). */
#include "codegen/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages
 * ------------------------------------------------------------------ */

const char *bc_node_desc(const bp_plan *p, uint32_t id, char *buf,
                         size_t size) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    if (n->name)
        snprintf(buf, size, "%%%u (%s \"%s\")", (unsigned)id,
                 bg_op(n->op)->name, n->name);
    else
        snprintf(buf, size, "%%%u (%s)", (unsigned)id, bg_op(n->op)->name);
    return buf;
}

braid_status bc_fail(const bp_plan *p, uint32_t id, braid_status s,
                     const char *fmt, ...) {
    char what[BG_ERROR_MAX], desc[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bg_set_last_error(s, "codegen: node %s: %s",
                             bc_node_desc(p, id, desc, sizeof desc), what);
}

/* The node's description for a // comment: it holds a name the user
 * chose, so line breaks and backslashes (line splices) become spaces. */
static const char *comment_desc(const bp_plan *p, uint32_t id, char *buf,
                                size_t size) {
    bc_node_desc(p, id, buf, size);
    for (char *s = buf; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\\') *s = ' ';
    return buf;
}

void bc_emit_marker(bc_buf *b, const bp_plan *p, uint32_t id) {
    char desc[160];
    bc_buf_printf(b, "// @braid node %s\n",
                  comment_desc(p, id, desc, sizeof desc));
}

void bc_emit_signature(bc_buf *b, const bp_plan *p, uint32_t id,
                       const char *entry, unsigned threads,
                       const char *extra_decl) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    bc_buf_printf(b,
                  "extern \"C\" __global__ void __launch_bounds__(%u) %s(\n"
                  "    %s *out",
                  threads, entry, bc_stype(n->dtype));
    for (uint32_t k = 0; k < n->ninputs; k++)
        bc_buf_printf(b, ", const %s *in%u",
                      bc_stype(bg_node_at(p->res.graph, n->inputs[k])->dtype),
                      (unsigned)k);
    if (extra_decl) bc_buf_printf(b, ", %s", extra_decl);
    bc_buf_puts(b, ") {\n");
    for (uint32_t k = 0; k < n->ninputs; k++)
        bc_buf_printf(b, "    (void)in%u;\n", (unsigned)k);
}

/* ---- classification
 * --------------------------------------------------------------- */

/* A concat whose every non-empty input was computed in place in its
 * buffer does no work (the memory pass marks it noop too). */
static bool concat_in_place(const bp_plan *p, uint32_t id) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    for (uint32_t k = 0; k < n->ninputs; k++) {
        uint32_t x = n->inputs[k];
        const bp_tensor_place *pl = &p->res.info[x].place;
        if (bg_numel(bg_node_at(p->res.graph, x)) > 0 &&
            !(pl->storage == BP_STORAGE_VIEW && pl->base == id))
            return false;
    }
    return true;
}

bc_node_class bc_classify(const bp_plan *p, uint32_t id) {
    if (!p || id >= p->res.graph->nnodes || id >= p->res.ninfo ||
        p->res.info[id].device.kind != BP_DEVICE_CUDA)
        return BC_NODE_HOST;
    const bg_node *n = bg_node_at(p->res.graph, id);
    braid_op_kind kind = bg_op(n->op)->kind;
    if (n->op == BRAID_OP_INPUT || n->op == BRAID_OP_CONSTANT)
        return BC_NODE_DATA;
    if (kind == BRAID_KIND_COPY) return BC_NODE_COPY;
    if (kind == BRAID_KIND_COLLECTIVE) return BC_NODE_COLLECTIVE;
    if (p->res.info[id].noop ||
        (n->op == BRAID_OP_CONCAT && concat_in_place(p, id)))
        return BC_NODE_VIEW;
    if (kind == BRAID_KIND_MATMUL) return BC_NODE_MATMUL;
    if (kind == BRAID_KIND_FUSED) {
        uint32_t pi = p->res.info[id].program;
        if (pi < p->res.nprograms &&
            p->res.programs[pi].kind == BP_PROGRAM_MATMUL)
            return BC_NODE_MATMUL_EPILOGUE;
    }
    return BC_NODE_KERNEL;
}

/* ---- programs
 * ------------------------------------------------------------------------ */

const bg_node *bc_input(const bc_node *c, uint32_t k) {
    return bg_node_at(c->plan->res.graph, c->n->inputs[k]);
}

/* A single elementwise, broadcast, reduce or row node as a program (a row
 * node's is one load of its input). */
static void single_program(bc_node *c) {
    const bg_node *n = c->n;
    bp_program *pr = &c->own;
    memset(pr, 0, sizeof *pr);
    pr->instr = c->instr;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        c->instr[k] = (bp_instr){.op = BP_INSTR_LOAD,
                                 .dtype = bc_input(c, k)->dtype,
                                 .input = k,
                                 .source = BG_NONE};
    }
    braid_op_kind kind = bg_op(n->op)->kind;
    pr->ninstr = n->ninputs;
    /* broadcast_to is its load; a row op's program is its input x, the
     * value its kernel (bc_gen_softmax) normalises */
    if (kind != BRAID_KIND_BROADCAST && kind != BRAID_KIND_ROW) {
        bp_instr *op = &c->instr[n->ninputs];
        *op = (bp_instr){.op = n->op, .dtype = n->dtype, .source = c->id};
        for (uint32_t k = 0; k < n->ninputs && k < 3; k++)
            op->arg[k] = k;
        pr->ninstr++;
    }
    const bg_node *space = kind == BRAID_KIND_REDUCE ? bc_input(c, 0) : n;
    pr->kind =
        kind == BRAID_KIND_REDUCE ? BP_PROGRAM_REDUCE : BP_PROGRAM_ELEMENTWISE;
    pr->rank = space->rank;
    memcpy(pr->dims, space->dims, sizeof pr->dims);
    if (kind == BRAID_KIND_REDUCE) {
        pr->axes = n->attr.axes;
        pr->flags = n->attr.flags & BG_KEEPDIMS;
    }
    c->prog = pr;
}

/* An assign that copies (its value could not be computed in place,
 * passes/memory_state.c): one load of its value (input 1), stored into
 * the variable's bytes; the ordering inputs 2... are not read. */
static void assign_program(bc_node *c) {
    bp_program *pr = &c->own;
    memset(pr, 0, sizeof *pr);
    pr->instr = c->instr;
    c->instr[0] = (bp_instr){.op = BP_INSTR_LOAD,
                             .dtype = bc_input(c, 1)->dtype,
                             .input = 1,
                             .source = BG_NONE};
    pr->ninstr = 1;
    pr->kind = BP_PROGRAM_ELEMENTWISE;
    pr->rank = c->n->rank;
    memcpy(pr->dims, c->n->dims, sizeof pr->dims);
    c->prog = pr;
}

/* The program rules are the IR's (bp_program_check); codegen adds only
 * its own limit, kernel parameters (bc_node_init). */
static braid_status check_program(const bc_node *c) {
    char why[256];
    if (bp_program_check(c->prog, c->plan->res.graph, c->id, why, sizeof why))
        return BRAID_OK;
    return bc_fail(c->plan, c->id, BRAID_ERR_INTERNAL, "program: %s", why);
}

braid_status bc_node_init(bc_node *c, const bp_plan *p, uint32_t id) {
    memset(c, 0, sizeof *c);
    c->plan = p;
    c->id = id;
    c->n = bg_node_at(p->res.graph, id);
    if (c->n->ninputs > BC_MAX_PARAMS)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%u inputs are more than a kernel may take (%d)",
                       (unsigned)c->n->ninputs, BC_MAX_PARAMS);
    braid_op_kind kind = bg_op(c->n->op)->kind;
    if (kind == BRAID_KIND_FUSED) {
        uint32_t pi = p->res.info[id].program;
        if (pi >= p->res.nprograms)
            return bc_fail(p, id, BRAID_ERR_INTERNAL,
                           "fused node without a program");
        c->prog = &p->res.programs[pi];
    } else if (kind == BRAID_KIND_ELEMENTWISE || kind == BRAID_KIND_BROADCAST ||
               kind == BRAID_KIND_REDUCE || kind == BRAID_KIND_ROW) {
        if (c->n->ninputs + 1 > BC_SINGLE_INSTR || c->n->ninputs == 0)
            return bc_fail(p, id, BRAID_ERR_INTERNAL, "bad input count");
        single_program(c);
    } else if (kind == BRAID_KIND_STATE) {
        assign_program(c);
    } else {
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "no program form for this op");
    }
    braid_status s = check_program(c);
    if (s != BRAID_OK) return s;
    c->numel = 1;
    for (int d = 0; d < c->prog->rank; d++)
        c->numel *= c->prog->dims[d];
    int64_t big = c->numel > bg_numel(c->n) ? c->numel : bg_numel(c->n);
    for (uint32_t k = 0; k < c->n->ninputs; k++) { /* a strided view's reach */
        const bg_node *x = bc_input(c, k);
        const int64_t *s = bp_layout_of(p, c->n->inputs[k]);
        int64_t last = 0;
        for (int d = 0; s && d < x->rank; d++)
            if (x->dims[d] > 1) last += (x->dims[d] - 1) * s[d];
        if (last + 1 > big) big = last + 1;
    }
    c->idx64 = big >= ((int64_t)1 << 32) - ((int64_t)1 << 16);
    c->idx = c->idx64 ? "unsigned long long" : "unsigned";
    snprintf(c->entry, sizeof c->entry, "%s", BC_ENTRY);
    return BRAID_OK;
}

/* ---- generation
 * ---------------------------------------------------------------------- */

/* Appends node id's kernel text to b and fills *k. */
static braid_status gen_node(const bp_plan *p, uint32_t id, bc_buf *b,
                             bc_kernel *k, bool *rng) {
    memset(k, 0, sizeof *k);
    k->node = id;
    k->mm_instr = BG_NONE;
    const bg_node *n = bg_node_at(p->res.graph, id);
    k->nparams = 1 + n->ninputs;
    braid_op_kind kind = bg_op(n->op)->kind;
    braid_status s;
    bc_node *c = NULL;
    if (kind == BRAID_KIND_SOURCE) {
        s = bc_gen_source(p, id, b, k, rng);
    } else if (kind == BRAID_KIND_CONV) { /* conv ops */
        s = bc_gen_conv(p, id, b, k);
    } else if (kind == BRAID_KIND_SHAPE) {
        if (n->ninputs > BC_MAX_PARAMS)
            return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                           "%u inputs are more than a kernel may take (%d)",
                           (unsigned)n->ninputs, BC_MAX_PARAMS);
        s = bc_gen_gather(p, id, b, k);
    } else if (kind == BRAID_KIND_INDEX) {
        s = bc_gen_index(p, id, b, k);
    } else if (kind == BRAID_KIND_WINDOW) {
        s = n->op == BRAID_OP_RESIZE ? bc_gen_resize(p, id, b, k)
                                     : bc_gen_pool(p, id, b, k);
    } else if (kind == BRAID_KIND_AXIS) {
        s = bc_gen_axis(p, id, b, k);
    } else if (kind == BRAID_KIND_ATTENTION) {
        s = bc_gen_attention(p, id, b, k);
    } else if (n->op == BRAID_OP_LAYER_NORM) {
        s = bc_gen_layer_norm(p, id, b, k);
    } else if (n->op == BRAID_OP_CAST && bg_node_run_check(p->res.graph, id)) {
        s = bc_gen_checked_cast(p, id, b, k);
    } else {
        c = malloc(sizeof *c);
        if (!c)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "codegen: out of memory");
        s = bc_node_init(c, p, id);
        if (s == BRAID_OK) {
            if (c->prog->kind == BP_PROGRAM_REDUCE)
                s = bc_gen_reduce(c, b, k);
            else if (c->prog->kind == BP_PROGRAM_POOL)
                s = bc_gen_pool_program(c, b, k);
            else if (c->prog->kind == BP_PROGRAM_MATMUL)
                s = bc_gen_epilogue(c, b, k);
            else if (c->prog->kind == BP_PROGRAM_CONV)
                s = bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                            "a conv program runs on the cpu only (the fuse "
                            "pass makes them for cpu convolutions)");
            else if (n->op == BRAID_OP_SOFTMAX)
                s = bc_gen_softmax(c, b, k);
            else
                s = bc_gen_elementwise(c, b, k);
        }
        free(c);
    }
    if (s == BRAID_OK && k->extra != BC_EXTRA_NONE) k->nparams++;
    if (s == BRAID_OK && k->run_check) k->nparams++;
    return s;
}

/* Assembles prelude + rng + kernels into out->text. */
static braid_status assemble(bc_source *out, bc_buf *kernels, bool rng) {
    bc_buf all = {0};
    bc_emit_prelude(&all);
    if (rng) bc_emit_rng(&all);
    if (kernels->p) bc_buf_puts(&all, kernels->p);
    if (all.oom || kernels->oom) {
        bc_buf_free(&all);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "codegen: out of memory for the kernel "
                                 "source");
    }
    out->text = all.p;
    out->len = all.len;
    out->uses_rng = rng;
    return BRAID_OK;
}

/* Appends text with every BC_ENTRY replaced by name. */
static void put_named(bc_buf *b, const char *text, const char *name) {
    size_t n = strlen(BC_ENTRY);
    for (const char *s = text;;) {
        const char *e = strstr(s, BC_ENTRY);
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char chunk[256];
        while (len > 0) {
            size_t m = len < sizeof chunk - 1 ? len : sizeof chunk - 1;
            memcpy(chunk, s, m);
            chunk[m] = '\0';
            bc_buf_puts(b, chunk);
            s += m;
            len -= m;
        }
        if (!e) return;
        bc_buf_puts(b, name);
        s = e + n;
    }
}

/* Kernel texts already in the module, to share identical code (the same
 * layer repeated, the same op on the same shapes). */
typedef struct seen_text {
    char *text;      /* the kernel as generated (BC_ENTRY names); owned */
    uint32_t kernel; /* index of the kernel that owns the code */
} seen_text;

/* The texts seen, with a hash table over them (open addressing, at most
 * half full) so that each new kernel is compared only with texts of its
 * hash: a linear search made a plan of many kernels quadratic. */
typedef struct seen_set {
    seen_text *text; /* in the order seen */
    uint32_t n;      /* entries in text */
    uint32_t *slot;  /* index in text + 1, or 0 for an empty slot */
    uint32_t mask;   /* slots - 1 (a power of two ≥ 2 × capacity) */
} seen_set;

static uint32_t text_hash(const char *t) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 16777619u;
    return h;
}

/* The seen text equal to t, or NULL; *at receives the slot for it. */
static seen_text *seen_find(const seen_set *ss, const char *t, uint32_t *at) {
    uint32_t i = text_hash(t) & ss->mask;
    for (; ss->slot[i]; i = (i + 1) & ss->mask)
        if (strcmp(ss->text[ss->slot[i] - 1].text, t) == 0)
            return &ss->text[ss->slot[i] - 1];
    *at = i;
    return NULL;
}

/* Renames k's launch entries from BC_ENTRY to name (or to the entries of
 * the kernel sharing the code). */
static void name_launches(bc_kernel *k, const char *name) {
    size_t n = strlen(BC_ENTRY);
    for (uint32_t l = 0; l < BC_MAX_LAUNCHES; l++) {
        if (strncmp(k->launch[l].entry, BC_ENTRY, n) != 0) continue;
        char tail[BC_NAME_MAX];
        snprintf(tail, sizeof tail, "%s", k->launch[l].entry + n);
        snprintf(k->launch[l].entry, BC_NAME_MAX, "%.20s%.20s", name, tail);
    }
}

/* Generates node ids[i] into b, sharing code with an earlier kernel of
 * seen[] when the text is identical. */
static braid_status add_kernel(const bp_plan *p, uint32_t id, bc_buf *b,
                               bc_source *out, seen_set *ss, bool *rng) {
    bc_kernel *k = &out->kernels[out->nkernels];
    bc_buf kb = {0};
    braid_status s = gen_node(p, id, &kb, k, rng);
    if (s == BRAID_OK && kb.oom)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "codegen: out of memory");
    if (s != BRAID_OK) {
        bc_buf_free(&kb);
        return s;
    }
    uint32_t at = 0;
    const seen_text *seen = seen_find(ss, kb.p, &at);
    if (seen) {
        const bc_kernel *same = &out->kernels[seen->kernel];
        for (uint32_t l = 0; l < BC_MAX_LAUNCHES; l++)
            memcpy(k->launch[l].entry, same->launch[l].entry, BC_NAME_MAX);
        char desc[160];
        bc_buf_printf(b, "// braid node %s runs %s\n\n",
                      comment_desc(p, id, desc, sizeof desc),
                      same->launch[0].entry);
        bc_buf_free(&kb);
        out->nkernels++;
        return BRAID_OK;
    }
    char name[24];
    snprintf(name, sizeof name, "k%u", (unsigned)id);
    name_launches(k, name);
    bc_emit_marker(b, p, id);
    put_named(b, kb.p, name);
    ss->text[ss->n] = (seen_text){kb.p, out->nkernels++}; /* keeps kb */
    ss->slot[at] = ++ss->n;
    return BRAID_OK;
}

static braid_status generate(const bp_plan *p, const uint32_t *ids, uint32_t n,
                             bc_source *out) {
    memset(out, 0, sizeof *out);
    out->kernels = calloc(n ? n : 1, sizeof *out->kernels);
    seen_set ss = {calloc(n ? n : 1, sizeof *ss.text), 0, NULL, 1};
    while (ss.mask < 2 * (uint64_t)n)
        ss.mask = 2 * ss.mask + 1;
    ss.slot = calloc((size_t)ss.mask + 1, sizeof *ss.slot);
    if (!out->kernels || !ss.text || !ss.slot) {
        free(ss.text);
        free(ss.slot);
        free(out->kernels);
        out->kernels = NULL;
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "codegen: out of memory");
    }
    bc_buf b = {0};
    bool rng = false;
    braid_status s = BRAID_OK;
    for (uint32_t i = 0; i < n && s == BRAID_OK; i++)
        s = add_kernel(p, ids[i], &b, out, &ss, &rng);
    if (s == BRAID_OK) s = assemble(out, &b, rng);
    bc_buf_free(&b);
    for (uint32_t i = 0; i < ss.n; i++)
        free(ss.text[i].text);
    free(ss.text);
    free(ss.slot);
    if (s != BRAID_OK) bc_source_free(out);
    return s;
}

static bool wants_kernel(bc_node_class k) {
    return k == BC_NODE_KERNEL || k == BC_NODE_MATMUL_EPILOGUE;
}

braid_status bc_kernel_source(const bp_plan *p, uint32_t node, bc_source *out) {
    if (!out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "bc_kernel_source: out is NULL");
    memset(out, 0, sizeof *out);
    if (!p || node >= p->res.graph->nnodes)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "bc_kernel_source: no node %u",
                                 (unsigned)node);
    if (!wants_kernel(bc_classify(p, node)))
        return bc_fail(p, node, BRAID_ERR_INVALID_ARGUMENT,
                       "needs no generated kernel (not on a GPU, or run by "
                       "cuBLAS / a copy / a view)");
    return generate(p, &node, 1, out);
}

braid_status bc_plan_source(const bp_plan *p, bc_source *out) {
    if (!out || !p)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "bc_plan_source: NULL argument");
    uint32_t n = p->res.graph->nnodes, m = 0;
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "codegen: out of memory");
    for (uint32_t id = 0; id < n; id++)
        if (wants_kernel(bc_classify(p, id))) ids[m++] = id;
    braid_status s = generate(p, ids, m, out);
    free(ids);
    return s;
}

const bc_kernel *bc_source_kernel(const bc_source *s, uint32_t node) {
    if (!s) return NULL;
    uint32_t lo = 0, hi = s->nkernels;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->kernels[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nkernels && s->kernels[lo].node == node ? &s->kernels[lo]
                                                           : NULL;
}

void bc_source_free(bc_source *s) {
    if (!s) return;
    free(s->text);
    free(s->kernels);
    memset(s, 0, sizeof *s);
}
