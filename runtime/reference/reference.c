/* runtime/reference/reference.c — braid_reference_run: bindings, scheduling,
 * memory, threads (the loops themselves split in reference_par.c) and progress.
 *
 * Evaluates, in id order (a topological order), every node that a requested
 * output depends on. Each node's values live in a malloc'ed array of double
 * that is freed as soon as its last consumer has run (use counts), so peak
 * memory follows the graph's live set rather than its size. */
#include "graph/eval.h"
#include "runtime/reference/reference.h"
#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

/* Total work (element operations) below which no thread pool is started:
 * small graphs, the tests' usual, stay on the calling thread. */
#define BR_REF_POOL_WORK 4e6

/* Largest value array the reference will try to allocate. Far beyond any
 * machine braid runs on; refusing up front keeps "out of memory" a clean
 * status even under allocators that abort on absurd requests. */
#define BR_REF_MAX_BYTES ((int64_t)1 << 40)

/* State of one braid_reference_run call. */
typedef struct br_ref_run {
    const braid_graph *g; /* the graph being evaluated */
    uint32_t n;           /* g->nnodes */
    const void **data;    /* per node: the bound buffer of an input node */
    bool *needed;         /* per node: some requested output depends on it */
    uint32_t *uses;       /* per node: consumers (and output bindings) left */
    double **vals;        /* per node: its values while live, else NULL */
    uint32_t *out_node;   /* per output binding: the node it reads */
    br_pool *pool;        /* threads for large nodes, or NULL */
    const braid_reference_options *opts; /* threads, progress */
    double work, done; /* estimated work of the needed nodes, and of
                          those evaluated so far (progress) */
} br_ref_run;

static void run_free(br_ref_run *r) {
    if (r->vals)
        for (uint32_t i = 0; i < r->n; i++)
            free(r->vals[i]);
    free(r->vals);
    free(r->data);
    free(r->needed);
    free(r->uses);
    free(r->out_node);
    br_pool_free(r->pool);
}

static braid_status oom(const char *what) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "reference: out of memory (%s)", what);
}

static braid_status run_alloc(br_ref_run *r, size_t noutputs) {
    r->data = calloc(r->n ? r->n : 1, sizeof *r->data);
    r->needed = calloc(r->n ? r->n : 1, sizeof *r->needed);
    r->uses = calloc(r->n ? r->n : 1, sizeof *r->uses);
    r->vals = calloc(r->n ? r->n : 1, sizeof *r->vals);
    r->out_node = calloc(noutputs ? noutputs : 1, sizeof *r->out_node);
    if (!r->data || !r->needed || !r->uses || !r->vals || !r->out_node)
        return oom("bookkeeping");
    return BRAID_OK;
}

/* Size and data checks shared by input and output bindings of node n;
 * kind is "input" or "output". */
static braid_status check_binding(const bg_node *n, const char *kind,
                                  const char *name, const void *data,
                                  size_t bytes) {
    char type[96];
    size_t want = bg_nbytes(n);
    if (bytes != want)
        return bg_set_last_error(
            BRAID_ERR_SHAPE, "%s '%s': expected %zu bytes (%s), got %zu", kind,
            name, want, bg_type_str(n, type, sizeof type), bytes);
    if (!data && bytes > 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s '%s': data is NULL", kind, name);
    return BRAID_OK;
}

/* Id of the input node called name, or BG_NONE. */
static uint32_t find_input(const braid_graph *g, const char *name) {
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const bg_node *n = bg_node_at(g, i);
        if (n->op == BRAID_OP_INPUT && n->name && strcmp(n->name, name) == 0)
            return i;
    }
    return BG_NONE;
}

/* Id of the node behind the output called name, or BG_NONE. */
static uint32_t find_output(const braid_graph *g, const char *name) {
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].name && strcmp(g->outputs[i].name, name) == 0)
            return g->outputs[i].node;
    return BG_NONE;
}

/* Resolves every input binding into r->data, then insists every graph input
 * is bound (braid_run's rule, even for inputs no requested output needs). */
static braid_status bind_inputs(br_ref_run *r, const braid_input_binding *in,
                                size_t nin) {
    bool *bound = calloc(r->n ? r->n : 1, sizeof *bound);
    if (!bound) return oom("bookkeeping");
    braid_status s = BRAID_OK;
    for (size_t i = 0; i < nin && s == BRAID_OK; i++) {
        uint32_t id;
        if (!in[i].name)
            s = bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                  "input binding %zu has no name", i);
        else if ((id = find_input(r->g, in[i].name)) == BG_NONE)
            s = bg_set_last_error(BRAID_ERR_NOT_FOUND, "unknown input '%s'",
                                  in[i].name);
        else if (bound[id])
            s = bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                  "input '%s' is bound twice", in[i].name);
        else if ((s = check_binding(bg_node_at(r->g, id), "input", in[i].name,
                                    in[i].data, in[i].bytes)) == BRAID_OK) {
            bound[id] = true;
            r->data[id] = in[i].data;
        }
    }
    for (uint32_t id = 0; id < r->n && s == BRAID_OK; id++) {
        const bg_node *n = bg_node_at(r->g, id);
        if (n->op == BRAID_OP_INPUT && !bound[id])
            s = bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                  "input '%s' is not bound",
                                  n->name ? n->name : "?");
    }
    free(bound);
    return s;
}

/* Resolves every output binding to its node in r->out_node; an output may
 * be requested once per call (braid_run's rule). */
static braid_status bind_outputs(br_ref_run *r, const braid_output_binding *out,
                                 size_t nout) {
    for (size_t i = 0; i < nout; i++) {
        uint32_t id;
        if (!out[i].name)
            return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                     "output binding %zu has no name", i);
        if ((id = find_output(r->g, out[i].name)) == BG_NONE || id >= r->n)
            return bg_set_last_error(BRAID_ERR_NOT_FOUND, "unknown output '%s'",
                                     out[i].name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(out[j].name, out[i].name) == 0)
                return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                         "output '%s' is bound twice",
                                         out[i].name);
        braid_status s = check_binding(bg_node_at(r->g, id), "output",
                                       out[i].name, out[i].data, out[i].bytes);
        if (s != BRAID_OK) return s;
        r->out_node[i] = id;
    }
    return BRAID_OK;
}

/* Marks what the requested outputs depend on and counts, per node, the
 * consumers that will read it (an operand used twice counts twice) plus the
 * output bindings that will copy it out. */
static braid_status plan_uses(br_ref_run *r, size_t nout) {
    for (size_t i = 0; i < nout; i++) {
        r->needed[r->out_node[i]] = true;
        r->uses[r->out_node[i]]++;
    }
    for (uint32_t id = r->n; id-- > 0;) {
        if (!r->needed[id]) continue;
        braid_status s = br_ref_check(r->g, id);
        if (s != BRAID_OK) return s;
        const bg_node *n = bg_node_at(r->g, id);
        for (uint32_t k = 0; k < n->ninputs; k++) {
            r->needed[n->inputs[k]] = true;
            r->uses[n->inputs[k]]++;
        }
    }
    return BRAID_OK;
}

static void release(br_ref_run *r, uint32_t id) {
    if (--r->uses[id] == 0) {
        free(r->vals[id]);
        r->vals[id] = NULL;
    }
}

/* Evaluates node id into a fresh array, then drops operands no longer
 * needed. */
static braid_status eval_node(br_ref_run *r, uint32_t id) {
    const bg_node *n = bg_node_at(r->g, id);
    int64_t numel = bg_numel(n);
    if (numel < 0 || numel > BR_REF_MAX_BYTES / (int64_t)sizeof(double)) {
        char type[96];
        return bg_set_last_error(
            BRAID_ERR_OUT_OF_MEMORY,
            "reference: node %u (%s) is too large to evaluate (%s)", id,
            bg_op(n->op)->name, bg_type_str(n, type, sizeof type));
    }
    r->vals[id] =
        malloc(numel > 0 ? (size_t)numel * sizeof(double) : sizeof(double));
    if (!r->vals[id]) return oom(bg_op(n->op)->name);
    const double *in[3];
    const double **ins = in;
    if (n->ninputs > 3) {
        ins = malloc(n->ninputs * sizeof *ins);
        if (!ins) return oom("operand list");
    }
    for (uint32_t k = 0; k < n->ninputs; k++)
        ins[k] = r->vals[n->inputs[k]];
    braid_status s =
        bg_eval_cast_check(r->g, id, n->ninputs ? ins[0] : NULL);
    if (s != BRAID_OK) {
        if (ins != in) free(ins);
        return s;
    }
    br_ref_eval(r->g, id, ins, r->vals[id], r->data[id], r->pool);
    if (ins != in) free(ins);
    for (uint32_t k = 0; k < n->ninputs; k++)
        release(r, n->inputs[k]);
    return BRAID_OK;
}

static void write_output(br_ref_run *r, const braid_output_binding *b,
                         uint32_t id) {
    const bg_node *n = bg_node_at(r->g, id);
    int64_t numel = bg_numel(n);
    for (int64_t i = 0; i < numel; i++)
        bg_store(n->dtype, b->data, i, r->vals[id][i]);
}

void braid_reference_options_init(braid_reference_options *o) {
    if (o) *o = (braid_reference_options){0, NULL, NULL};
}

/* The pool: for num_threads > 1, or by default (0) for a run whose needed
 * nodes total enough work (else none: starting threads would cost more
 * than it saves). Out of memory for it is no error: the caller's thread
 * does the work. */
static void start_pool(br_ref_run *r) {
    for (uint32_t id = 0; id < r->n; id++)
        if (r->needed[id]) r->work += br_ref_work(r->g, id) + 1;
    int threads = r->opts->num_threads;
    if (threads > 1 || (threads <= 0 && r->work >= BR_REF_POOL_WORK))
        r->pool = br_pool_new(threads > 0 ? threads : 0);
}

static braid_status eval_all(br_ref_run *r) {
    braid_status s = BRAID_OK;
    for (uint32_t id = 0; id < r->n && s == BRAID_OK; id++) {
        if (!r->needed[id]) continue;
        s = eval_node(r, id);
        r->done += br_ref_work(r->g, id) + 1;
        if (s == BRAID_OK && r->opts->progress)
            r->opts->progress(r->opts->progress_ctx,
                              r->done < r->work ? r->done / r->work : 1.0);
    }
    return s;
}

braid_status braid_reference_run(const braid_graph *g,
                                 const braid_input_binding *inputs,
                                 size_t ninputs,
                                 const braid_output_binding *outputs,
                                 size_t noutputs) {
    return braid_reference_run_with(g, inputs, ninputs, outputs, noutputs,
                                    NULL);
}

braid_status braid_reference_run_with(const braid_graph *g,
                                      const braid_input_binding *inputs,
                                      size_t ninputs,
                                      const braid_output_binding *outputs,
                                      size_t noutputs,
                                      const braid_reference_options *opts) {
    braid_reference_options defaults;
    braid_reference_options_init(&defaults);
    if (!g)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_reference_run: graph is NULL");
    if (g->status != BRAID_OK)
        return bg_set_last_error(g->status, "%s", g->error);
    if ((ninputs > 0 && !inputs) || (noutputs > 0 && !outputs))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_reference_run: %s is NULL",
                                 ninputs > 0 && !inputs ? "inputs" : "outputs");
    br_ref_run r = {.g = g, .n = g->nnodes, .opts = opts ? opts : &defaults};
    braid_status s = run_alloc(&r, noutputs);
    if (s == BRAID_OK) s = bind_inputs(&r, inputs, ninputs);
    if (s == BRAID_OK) s = bind_outputs(&r, outputs, noutputs);
    if (s == BRAID_OK) s = plan_uses(&r, noutputs);
    if (s == BRAID_OK) start_pool(&r);
    if (s == BRAID_OK) s = eval_all(&r);
    /* Outputs are written only once everything is computed, so an output
     * buffer that aliases an input buffer cannot corrupt a later read. */
    for (size_t i = 0; i < noutputs && s == BRAID_OK; i++) {
        write_output(&r, &outputs[i], r.out_node[i]);
        release(&r, r.out_node[i]);
    }
    run_free(&r);
    return s;
}
