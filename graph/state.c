/* graph/state.c — variables and assign: state that lives across runs.
 *
 * A variable is a source node with a name and an initializer; its value
 * lives in executor-owned bytes that survive runs. assign(var, value)
 * writes value into those bytes. Ordering (docs/training.md): every read
 * of a variable in a run sees its value from before the run's assigns;
 * the compiler enforces it by ordering each assign after every other
 * reader of its variable (passes/state.c). This file owns the builder's
 * checks, the initial values (one definition for every executor and the
 * reference evaluator) and the public builders. */
#include "graph/internal.h"

#include <math.h>
#include <string.h>

static bool init_known(braid_op op) {
    return op == BRAID_OP_CONSTANT || op == BRAID_OP_FILL ||
           op == BRAID_OP_RANDOM_UNIFORM || op == BRAID_OP_RANDOM_NORMAL;
}

static braid_status check_init(braid_graph *g, const bg_attrs *a,
                               const bg_node *out, const char *name) {
    double x = a->value[0], y = a->value[1];
    if (!init_known(a->init))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "variable \"%s\": initializer op %d; expected "
                       "constant, fill, random_uniform or random_normal",
                       name, (int)a->init);
    if (a->init == BRAID_OP_CONSTANT && a->data == NULL && bg_numel(out) > 0)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "variable \"%s\": constant initializer with NULL "
                       "data",
                       name);
    bool random =
        a->init == BRAID_OP_RANDOM_UNIFORM || a->init == BRAID_OP_RANDOM_NORMAL;
    if (random && !bg_op_accepts(a->init, out->dtype))
        return bg_fail(g, BRAID_ERR_DTYPE,
                       "variable \"%s\": a random initializer needs a float "
                       "dtype, not %s",
                       name, braid_dtype_name(out->dtype));
    if (a->init == BRAID_OP_RANDOM_UNIFORM &&
        (!isfinite(x) || !isfinite(y) || x > y || !isfinite(y - x)))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "variable \"%s\": uniform low %g, high %g; expected "
                       "finite low <= high",
                       name, x, y);
    if (a->init == BRAID_OP_RANDOM_NORMAL &&
        (!isfinite(x) || !isfinite(y) || y < 0))
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "variable \"%s\": normal mean %g, stddev %g; "
                       "expected finite mean and stddev >= 0",
                       name, x, y);
    return BRAID_OK;
}

bool bg_has_assign(const braid_graph *g) {
    for (uint32_t id = 0; g && id < g->nnodes; id++)
        if (g->nodes[id].op == BRAID_OP_ASSIGN) return true;
    return false;
}

uint32_t bg_find_variable(const braid_graph *g, const char *name) {
    for (uint32_t id = 0; g && name && id < g->nnodes; id++)
        if (g->nodes[id].op == BRAID_OP_VARIABLE && g->nodes[id].name &&
            strcmp(g->nodes[id].name, name) == 0)
            return id;
    return BG_NONE;
}

braid_status bg_check_variable(braid_graph *g, const bg_attrs *a,
                               const char *name, bg_node *out) {
    if (!bg_check_ident(g, "variable", name)) return g->status;
    if (bg_find_variable(g, name) != BG_NONE)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "variable: duplicate variable name \"%s\"", name);
    braid_status s = check_init(g, a, out, name);
    if (s != BRAID_OK) return s;
    out->attr.init = a->init;
    out->attr.seed = a->seed;
    out->attr.value[0] = a->value[0];
    out->attr.value[1] = a->value[1];
    return BRAID_OK; /* constant data is copied when the node is appended */
}

/* The assign of variable var already in g, or BG_NONE. */
static uint32_t assign_of(const braid_graph *g, uint32_t var) {
    for (uint32_t id = var + 1; id < g->nnodes; id++)
        if (g->nodes[id].op == BRAID_OP_ASSIGN && g->nodes[id].inputs[0] == var)
            return id;
    return BG_NONE;
}

braid_status bg_check_assign(braid_graph *g, const uint32_t *in, uint32_t nin,
                             bg_node *out) {
    if (nin < 2)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "assign: got %u inputs; expected a variable and a "
                       "value",
                       (unsigned)nin);
    const bg_node *v = &g->nodes[in[0]], *x = &g->nodes[in[1]];
    char bv[64], bx[64];
    if (v->op != BRAID_OP_VARIABLE)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "assign: operand 0 (node %u, %s) is not a variable",
                       (unsigned)in[0], bg_op(v->op)->name);
    if (v->dtype != x->dtype || v->rank != x->rank ||
        memcmp(v->dims, x->dims, sizeof v->dims) != 0)
        return bg_fail(g, BRAID_ERR_SHAPE,
                       "assign: variable \"%s\" is %s but the value is %s",
                       v->name, bg_type_str(v, bv, sizeof bv),
                       bg_type_str(x, bx, sizeof bx));
    for (uint32_t k = 1; k < nin; k++)
        if (g->nodes[in[k]].op == BRAID_OP_ASSIGN)
            return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                           "assign: operand %u is an assign (an assign's "
                           "result is not a value)",
                           (unsigned)k);
    if (assign_of(g, in[0]) != BG_NONE)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "assign: variable \"%s\" is already assigned (one "
                       "assign per variable and graph)",
                       v->name);
    out->dtype = v->dtype;
    out->rank = v->rank;
    memcpy(out->dims, v->dims, sizeof out->dims);
    return BRAID_OK;
}

double bg_variable_init_at(const bg_node *n, int64_t i) {
    const bg_attrs *a = &n->attr;
    switch (a->init) {
    case BRAID_OP_CONSTANT:
        return bg_load(n->dtype, a->data, i);
    case BRAID_OP_RANDOM_UNIFORM:
        return bg_random_uniform_at(a->seed, i, a->value[0], a->value[1]);
    case BRAID_OP_RANDOM_NORMAL:
        return bg_random_normal_at(a->seed, i, a->value[0], a->value[1]);
    default: /* fill */
        return a->value[0];
    }
}

void bg_variable_init(const bg_node *n, void *dst) {
    int64_t numel = bg_numel(n);
    if (n->attr.init == BRAID_OP_CONSTANT) {
        if (numel > 0) memcpy(dst, n->attr.data, bg_nbytes(n));
        return;
    }
    for (int64_t i = 0; i < numel; i++)
        bg_store(n->dtype, dst, i, bg_variable_init_at(n, i));
}

/* ---- public builders ------------------------------------------------------
 */

braid_tensor braid_variable(braid_graph *g, const char *name, braid_dtype dtype,
                            int rank, const int64_t *dims, braid_init init) {
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                          "variable: graph is NULL");
        return BRAID_NONE;
    }
    bg_attrs a = {0};
    a.init = init.op;
    a.value[0] = init.a;
    a.value[1] = init.b;
    a.seed = init.seed;
    a.data = (void *)init.data; /* only read: bg_build copies it */
    braid_tensor t = {
        bg_build(g, BRAID_OP_VARIABLE, NULL, 0, dtype, rank, dims, &a, name)};
    return t;
}

braid_tensor braid_assign(braid_graph *g, braid_tensor var,
                          braid_tensor value) {
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "assign: graph is NULL");
        return BRAID_NONE;
    }
    uint32_t in[2] = {var.id, value.id};
    braid_tensor t = {
        bg_build(g, BRAID_OP_ASSIGN, in, 2, BRAID_F32, 0, NULL, NULL, NULL)};
    return t;
}

braid_init braid_init_fill(double value) {
    return (braid_init){.op = BRAID_OP_FILL, .a = value};
}

braid_init braid_init_uniform(uint64_t seed, double low, double high) {
    return (braid_init){
        .op = BRAID_OP_RANDOM_UNIFORM, .a = low, .b = high, .seed = seed};
}

braid_init braid_init_normal(uint64_t seed, double mean, double stddev) {
    return (braid_init){
        .op = BRAID_OP_RANDOM_NORMAL, .a = mean, .b = stddev, .seed = seed};
}

braid_init braid_init_data(const void *data) {
    return (braid_init){.op = BRAID_OP_CONSTANT, .data = data};
}
