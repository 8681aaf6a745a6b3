/* runtime/exec_state.c — an executor's variables: first values, host
 * access by name, checkpoints (docs/training.md).
 *
 * A variable's bytes are its node's arena bytes (the memory pass keeps
 * them for the executor's whole life and never lets another tensor share
 * them), so reading or writing one is a copy from or to e->home[id], with
 * cudaMemcpy where the variable lives on a GPU. */
#include "runtime/checkpoint/safetensors.h"
#include "runtime/exec_impl.h"

#include <stdlib.h>
#include <string.h>

/* The plan's variable called name, or BG_NONE (with a message). */
static uint32_t find(const braid_exec *e, const char *name, const char *who) {
    uint32_t id = bg_find_variable(e->plan->res.graph, name);
    if (id == BG_NONE)
        bg_set_last_error(BRAID_ERR_NOT_FOUND,
                          "%s: the plan has no variable \"%s\" (a variable "
                          "no output or assign needs is dropped)",
                          who, name ? name : "(null)");
    return id;
}

static bool on_gpu(const braid_exec *e, uint32_t id) {
    return e->cuda && e->plan->res.info[id].device.kind == BP_DEVICE_CUDA;
}

/* Copies bytes between the caller's host buffer and variable id. */
static braid_status copy_var(braid_exec *e, uint32_t id, void *host,
                             bool to_host, size_t bytes) {
    void *dev = e->home[id];
    if (bytes == 0) return BRAID_OK;
    if (on_gpu(e, id))
        return to_host ? br_cuda_memcpy(host, dev, bytes)
                       : br_cuda_memcpy(dev, host, bytes);
    if (to_host)
        memcpy(host, dev, bytes);
    else
        memcpy(dev, host, bytes);
    return BRAID_OK;
}

braid_status br_exec_init_variables(braid_exec *e) {
    const braid_graph *g = e->plan->res.graph;
    braid_status s = BRAID_OK;
    for (uint32_t id = 0; id < g->nnodes && s == BRAID_OK; id++) {
        const bg_node *n = &g->nodes[id];
        if (n->op != BRAID_OP_VARIABLE || !on_gpu(e, id) || !bg_nbytes(n))
            continue; /* host variables were initialised in place */
        void *tmp = malloc(bg_nbytes(n));
        if (!tmp)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "braid_exec_new: out of memory for "
                                     "variable \"%s\"",
                                     n->name);
        bg_variable_init(n, tmp);
        s = copy_var(e, id, tmp, false, bg_nbytes(n));
        free(tmp);
    }
    return s;
}

/* Checks the executor, name and size for variable access. */
static braid_status access_check(braid_exec *e, const char *name,
                                 const void *data, size_t bytes,
                                 const char *who, uint32_t *id) {
    if (!e || !name)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: %s is NULL",
                                 who, e ? "name" : "executor");
    if ((*id = find(e, name, who)) == BG_NONE) return BRAID_ERR_NOT_FOUND;
    const bg_node *n = bg_node_at(e->plan->res.graph, *id);
    char type[96];
    if (bytes != bg_nbytes(n))
        return bg_set_last_error(BRAID_ERR_SHAPE,
                                 "%s: variable \"%s\" is %s (%zu bytes); got "
                                 "%zu bytes",
                                 who, name, bg_type_str(n, type, sizeof type),
                                 bg_nbytes(n), bytes);
    if (!data && bytes)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: data is NULL",
                                 who);
    if (e->run.pending)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: a run is outstanding (braid_wait "
                                 "first)",
                                 who);
    return BRAID_OK;
}

static braid_status access(braid_exec *e, const char *name, void *data,
                           size_t bytes, bool read, const char *who) {
    uint32_t id = BG_NONE;
    braid_status s = access_check(e, name, data, bytes, who, &id);
    if (s != BRAID_OK) return s;
    if (!br_exec_enter(e, who)) return BRAID_ERR_INVALID_ARGUMENT;
    s = copy_var(e, id, data, read, bytes);
    atomic_flag_clear(&e->busy);
    return s;
}

braid_status braid_exec_variable_read(braid_exec *e, const char *name,
                                      void *data, size_t bytes) {
    return access(e, name, data, bytes, true, "braid_exec_variable_read");
}

braid_status braid_exec_variable_write(braid_exec *e, const char *name,
                                       const void *data, size_t bytes) {
    return access(e, name, (void *)data, bytes, false,
                  "braid_exec_variable_write");
}

/* ---- listing ------------------------------------------------------------ */

/* Node id of variable i in graph order, or BG_NONE. */
static uint32_t nth(const braid_exec *e, uint32_t i) {
    const braid_graph *g = e->plan->res.graph;
    for (uint32_t id = 0; id < g->nnodes; id++)
        if (g->nodes[id].op == BRAID_OP_VARIABLE && i-- == 0) return id;
    return BG_NONE;
}

uint32_t braid_exec_variable_count(const braid_exec *e) {
    uint32_t c = 0;
    for (uint32_t id = 0; e && id < e->plan->res.graph->nnodes; id++)
        c += e->plan->res.graph->nodes[id].op == BRAID_OP_VARIABLE;
    return c;
}

braid_status braid_exec_variable_info(const braid_exec *e, uint32_t i,
                                      const char **name, braid_dtype *dtype,
                                      int *rank, int64_t *dims) {
    uint32_t id = e ? nth(e, i) : BG_NONE;
    if (id == BG_NONE)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_variable_info: no variable %u",
                                 (unsigned)i);
    const bg_node *n = bg_node_at(e->plan->res.graph, id);
    if (name) *name = n->name;
    if (dtype) *dtype = n->dtype;
    if (rank) *rank = n->rank;
    if (dims) memcpy(dims, n->dims, (size_t)n->rank * sizeof *dims);
    return BRAID_OK;
}

/* ---- checkpoints ----------------------------------------------------------
 */

/* The executor's variables as safetensors entries; data filled when
 * with_data (host copies, freed by br_st_free). */
static braid_status collect(braid_exec *e, br_st_file *f, bool with_data) {
    uint32_t count = braid_exec_variable_count(e);
    f->t = calloc(count ? count : 1, sizeof *f->t);
    if (!f->t)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "checkpoint: out of memory");
    f->owns_data = true;
    braid_status s = BRAID_OK;
    for (uint32_t i = 0; i < count && s == BRAID_OK; i++) {
        const bg_node *n = bg_node_at(e->plan->res.graph, nth(e, i));
        br_st_tensor *t = &f->t[f->n++];
        t->name = n->name;
        t->dtype = n->dtype;
        t->rank = n->rank;
        memcpy(t->dims, n->dims, sizeof t->dims);
        t->bytes = bg_nbytes(n);
        if (!with_data) continue;
        void *data = malloc(t->bytes ? t->bytes : 1);
        if (!(t->data = data))
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "checkpoint: out of memory");
        s = copy_var(e, nth(e, i), data, true, t->bytes);
    }
    return s;
}

braid_status braid_exec_save(braid_exec *e, const char *path) {
    if (!e || !path)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_save: %s is NULL",
                                 e ? "path" : "executor");
    if (e->run.pending)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_save: a run is outstanding");
    br_st_file f = {0};
    braid_status s = collect(e, &f, true);
    if (s == BRAID_OK) s = br_st_write(path, &f);
    br_st_free(&f);
    return s;
}

braid_status braid_exec_load(braid_exec *e, const char *path) {
    if (!e || !path)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_load: %s is NULL",
                                 e ? "path" : "executor");
    if (e->run.pending)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_load: a run is outstanding");
    br_st_file want = {0}, got = {0};
    braid_status s = collect(e, &want, false);
    if (s == BRAID_OK) s = br_st_read(path, &got);
    if (s == BRAID_OK) s = br_st_match(path, &want, &got);
    for (uint32_t i = 0; i < want.n && s == BRAID_OK; i++) {
        const br_st_tensor *t = br_st_find(&got, want.t[i].name);
        s = copy_var(e, nth(e, i), (void *)t->data, false, t->bytes);
    }
    want.owns_data = false;
    br_st_free(&want);
    br_st_free(&got);
    return s;
}
