/* passes/shard.c — batch sharding (docs/multi-gpu.md, "Batch sharding").
 *
 * With settings shards = K > 1 the graph is replicated over the first K
 * GPUs of the plan's device list before placement:
 *   - every input named in shard_inputs (all inputs whose dim 0 divides by
 *     K when the list is NULL) is split along dim 0 into K equal row
 *     blocks by slice nodes on the cpu (views: the copies read the blocks);
 *   - every computing node is built K times, replica r hinted to GPU r
 *     (a "cpu" hint is kept: that replica runs on the cpu); inputs and
 *     constants are shared (the copies pass brings them to each GPU, a
 *     constant once at executor creation);
 *   - each output whose value has the batch as dim 0 is the concat of its
 *     replicas along dim 0 on the cpu; an output that does not depend on a
 *     split input is replica 0's (the other replicas then die).
 *
 * A value is BATCHED when replica r holds exactly rows block r of the
 * unsharded value (its dim 0 is the split batch dim), PLAIN when every
 * replica holds the whole unsharded value, and LOST when it depends on a
 * split input but no longer has the batch as dim 0 (a reduction over dim
 * 0, a matmul contracting over it, a permute moving it, ...): replicas
 * then hold partial or rearranged values, so an output that is LOST is
 * refused with BRAID_ERR_INVALID_ARGUMENT naming the node that lost it.
 * A PLAIN operand that meets a BATCHED one row by row (same rank, dim 0
 * not broadcast) is sliced to the replica's row block, which is exact:
 * row i of such a result reads only row i of each operand. */
#include "graph/window.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

typedef enum sh_class {
    SH_PLAIN = 0, /* every replica holds the whole value */
    SH_BATCHED,   /* replica r holds rows block r */
    SH_LOST       /* depends on a split input, batch no longer dim 0 */
} sh_class;

/* Why a node lost the batch dim (for the error message). */
static const char *const lost_reason[] = {
    "",
    "reduces over the split dim 0, so each GPU would hold a partial result",
    "moves the split dim 0 away from the leading axis",
    "slices along the split dim 0",
    "concatenates along the split dim 0",
    "reshapes to a leading dim that does not divide by the shard count",
    ("contracts over (or transposes) the split dim of a matmul operand, so "
     "each GPU would hold a partial product"),
};

enum {
    LOST_NONE = 0,
    LOST_REDUCE,
    LOST_MOVED,
    LOST_SLICE,
    LOST_CONCAT,
    LOST_RESHAPE,
    LOST_CONTRACT
};

typedef struct sh_ctx {
    bp_plan *plan;     /* the plan being rewritten */
    uint32_t n0;       /* nodes before the pass (the unsharded graph) */
    uint32_t k;        /* shards */
    bp_device gpu[BP_MAX_DEVICES]; /* replica r runs on gpu[r] */
    uint8_t *cls;      /* per original node: sh_class */
    bool *split;       /* per original node: a split input */
    uint8_t *reason;   /* per original node: LOST_* when it lost the batch
                          dim itself */
    uint32_t *lost_at; /* per LOST node: the node that lost the batch dim */
    uint8_t *rowwise;  /* per original node: bit j set when PLAIN input j
                          is sliced to the replica's rows (inputs ≥ 8 are
                          variadic concats: see need_rows()) */
    uint32_t *rep;     /* rep[id * k + r]: node id of replica r */
    uint32_t *rows;    /* rows[id * k + r]: rows block r of PLAIN id */
    uint32_t *outnode; /* per original node: its output node, or BG_NONE */
} sh_ctx;

static const bg_node *node(const sh_ctx *c, uint32_t id) {
    return &c->plan->res.graph->nodes[id];
}

/* "%5 (sum "loss")" of an original node, into buf. */
static const char *describe(const sh_ctx *c, uint32_t id, char *buf,
                            size_t size) {
    const bg_node *n = node(c, id);
    uint32_t origin = c->plan->res.info[id].origin;
    snprintf(buf, size, "%%%u (%s%s%s%s)",
             (unsigned)(origin != BG_NONE ? origin : id), bg_op(n->op)->name,
             n->name ? " \"" : "", n->name ? n->name : "",
             n->name ? "\"" : "");
    return buf;
}

/* ---- which inputs are split ------------------------------------------------ */

static braid_status check_split_input(sh_ctx *c, uint32_t id) {
    const bg_node *n = node(c, id);
    if (n->rank == 0 || n->dims[0] % (int64_t)c->k != 0)
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT,
            "shard: input \"%s\" cannot be split %u ways along dim 0: %s "
            "(dim 0 must divide by shards)",
            n->name, (unsigned)c->k,
            n->rank == 0 ? "it is a scalar" : "its dim 0 does not divide");
    c->split[id] = true;
    return BRAID_OK;
}

/* Marks one name of the comma list (len bytes at s, trimmed). */
static braid_status split_named(sh_ctx *c, const char *s, size_t len) {
    while (len > 0 && (*s == ' ' || *s == '\t')) s++, len--;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    if (len == 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "shard: shard_inputs \"%s\" has an empty "
                                 "entry",
                                 c->plan->in.opts.shard_inputs);
    char *name = malloc(len + 1);
    if (!name)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "shard: out of memory");
    memcpy(name, s, len);
    name[len] = '\0';
    uint32_t id = bg_find_input(c->plan->res.graph, name);
    braid_status st = BRAID_OK;
    if (id == BG_NONE || id >= c->n0)
        st = bg_set_last_error(BRAID_ERR_NOT_FOUND,
                               "shard: shard_inputs names \"%s\", which is "
                               "not an input of the graph",
                               name);
    else
        st = check_split_input(c, id);
    free(name);
    return st;
}

static braid_status choose_inputs(sh_ctx *c) {
    const char *list = c->plan->in.opts.shard_inputs;
    uint32_t nsplit = 0;
    if (list) {
        for (const char *p = list;;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            braid_status s = split_named(c, p, len);
            if (s != BRAID_OK) return s;
            if (!e) break;
            p = e + 1;
        }
    } else {
        for (uint32_t id = 0; id < c->n0; id++) {
            const bg_node *n = node(c, id);
            if (n->op == BRAID_OP_INPUT && n->rank > 0 &&
                n->dims[0] % (int64_t)c->k == 0)
                c->split[id] = true;
        }
    }
    for (uint32_t id = 0; id < c->n0; id++) nsplit += c->split[id];
    if (nsplit == 0)
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT,
            "shard: shards is %u but no input is split (%s)", (unsigned)c->k,
            list ? "shard_inputs is empty"
                 : "shard_inputs is NULL and no input's dim 0 divides by "
                   "shards");
    return BRAID_OK;
}

/* ---- classification --------------------------------------------------------- */

static void lose(sh_ctx *c, uint32_t id, int reason) {
    c->cls[id] = SH_LOST;
    c->reason[id] = (uint8_t)reason;
    c->lost_at[id] = id;
}

/* Operands of an op whose result has the batch as dim 0 (rank out_rank):
 * a BATCHED operand must have that rank (its dim 0 is the result's); a
 * PLAIN one of that rank whose dim 0 is not broadcast is sliced to the
 * replica's rows. False (the node lost the batch dim) otherwise. */
static bool rowwise_operands(sh_ctx *c, uint32_t id, int out_rank) {
    const bg_node *n = node(c, id);
    for (uint32_t j = 0; j < n->ninputs; j++) {
        const bg_node *x = node(c, n->inputs[j]);
        if (c->cls[n->inputs[j]] == SH_BATCHED) {
            if (x->rank != out_rank) return false;
        } else if (x->rank == out_rank && x->dims[0] != 1 && j < 8) {
            c->rowwise[id] |= (uint8_t)(1u << j);
        }
    }
    return true;
}

/* Whether PLAIN input j of original node id is sliced to the rows. A concat
 * along an axis other than 0 has every input of the result's rank with the
 * result's dim 0, so all its PLAIN inputs are. */
static bool need_rows(const sh_ctx *c, uint32_t id, uint32_t j) {
    const bg_node *n = node(c, id);
    if (c->cls[id] != SH_BATCHED || c->cls[n->inputs[j]] != SH_PLAIN)
        return false;
    if (n->op == BRAID_OP_CONCAT) return true;
    return j < 8 && (c->rowwise[id] >> j & 1u);
}

static void classify_matmul(sh_ctx *c, uint32_t id) {
    const bg_node *n = node(c, id);
    const bg_node *a = node(c, n->inputs[0]);
    bool ab = c->cls[n->inputs[0]] == SH_BATCHED,
         bb = c->cls[n->inputs[1]] == SH_BATCHED;
    if (n->rank == 2) { /* rows of a, no transpose: rows of the result */
        if (ab && !bb && a->rank == 2 && !(n->attr.flags & BRAID_TRANSPOSE_A))
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_CONTRACT);
        return;
    }
    if (rowwise_operands(c, id, n->rank))
        c->cls[id] = SH_BATCHED;
    else
        lose(c, id, LOST_MOVED);
}

/* A shape op or broadcast_to with a BATCHED input. */
static void classify_shape(sh_ctx *c, uint32_t id) {
    const bg_node *n = node(c, id);
    const bg_node *x = node(c, n->inputs[0]);
    switch (n->op) {
    case BRAID_OP_RESHAPE:
        if (n->rank > 0 && n->dims[0] % (int64_t)c->k == 0)
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_RESHAPE);
        break;
    case BRAID_OP_PERMUTE:
        if (n->attr.perm[0] == 0)
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_MOVED);
        break;
    case BRAID_OP_SLICE:
        if (n->attr.start[0] == 0 && n->attr.step[0] == 1 &&
            n->dims[0] == x->dims[0])
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_SLICE);
        break;
    case BRAID_OP_CONCAT:
        if (n->attr.axis == 0)
            lose(c, id, LOST_CONCAT);
        else
            c->cls[id] = SH_BATCHED; /* every input has the result's rank */
        break;
    default: /* broadcast_to: the batch stays dim 0 only at equal rank */
        if (x->rank == n->rank && x->dims[0] == n->dims[0])
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_MOVED);
        break;
    }
}

/* One computing node whose inputs are classified. */
static void classify_node(sh_ctx *c, uint32_t id) {
    const bg_node *n = node(c, id);
    bool batched = false;
    for (uint32_t j = 0; j < n->ninputs; j++) {
        uint32_t x = n->inputs[j];
        if (c->cls[x] == SH_LOST) { /* partial values stay partial */
            c->cls[id] = SH_LOST;
            c->lost_at[id] = c->lost_at[x];
            return;
        }
        batched |= c->cls[x] == SH_BATCHED;
    }
    c->cls[id] = SH_PLAIN;
    if (!batched) return;
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_ELEMENTWISE:
        if (rowwise_operands(c, id, n->rank))
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_MOVED);
        break;
    case BRAID_KIND_REDUCE:
        if (n->attr.axes & 1u)
            lose(c, id, LOST_REDUCE);
        else
            c->cls[id] = SH_BATCHED;
        break;
    case BRAID_KIND_WINDOW: /* pooling, resize: planes split on axis 0 */
        if (bg_window_batched(n, node(c, n->inputs[0])))
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_REDUCE);
        break;
    case BRAID_KIND_AXIS: /* lines along attr.axis: split unless it is 0 */
        if (n->attr.axis == 0)
            lose(c, id, LOST_REDUCE);
        else
            c->cls[id] = SH_BATCHED;
        break;
    case BRAID_KIND_ROW: /* over the last axis: rows split along axis 0
                            (layer_norm's gamma and beta rows whole) */
        if (n->rank < 2)
            lose(c, id, LOST_REDUCE);
        else if (n->ninputs > 1 && (c->cls[n->inputs[1]] == SH_BATCHED ||
                                    c->cls[n->inputs[2]] == SH_BATCHED))
            lose(c, id, LOST_MOVED);
        else
            c->cls[id] = SH_BATCHED;
        break;
    case BRAID_KIND_MATMUL:
        classify_matmul(c, id);
        break;
    case BRAID_KIND_ATTENTION: /* not split (yet): a broadcast mask's
                                  batch axis would need its own rule */
        lose(c, id, LOST_MOVED);
        break;
    case BRAID_KIND_INDEX: /* gather, scatter: indices may point anywhere */
        lose(c, id, LOST_MOVED);
        break;
    case BRAID_KIND_CONV: /* conv ops: images split along axis 0 when only
                             x is batched (weights and bias whole) */
        if (c->cls[n->inputs[0]] == SH_BATCHED &&
            c->cls[n->inputs[1]] != SH_BATCHED &&
            (n->ninputs < 3 || c->cls[n->inputs[2]] != SH_BATCHED))
            c->cls[id] = SH_BATCHED;
        else
            lose(c, id, LOST_MOVED);
        break;
    default:
        classify_shape(c, id);
        break;
    }
}

static braid_status classify(sh_ctx *c) {
    for (uint32_t id = 0; id < c->n0; id++) {
        const bg_node *n = node(c, id);
        braid_op_kind kind = bg_op(n->op)->kind;
        char buf[160];
        if (kind == BRAID_KIND_COLLECTIVE || kind == BRAID_KIND_COPY ||
            kind == BRAID_KIND_FUSED || kind == BRAID_KIND_STATE ||
            n->op == BRAID_OP_VARIABLE) /* replicas of state: not built */
            return bg_set_last_error(
                BRAID_ERR_UNSUPPORTED,
                "shard: node %s: a graph with %s nodes cannot be sharded "
                "(sharding builds its own replicas)",
                describe(c, id, buf, sizeof buf), bg_op(n->op)->name);
        if (kind == BRAID_KIND_SOURCE)
            c->cls[id] = c->split[id] ? SH_BATCHED : SH_PLAIN;
        else
            classify_node(c, id);
    }
    const braid_graph *g = c->plan->res.graph;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t id = g->outputs[i].node;
        if (c->cls[id] != SH_LOST) continue;
        char buf[160];
        uint32_t at = c->lost_at[id];
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT,
            "shard: output \"%s\" depends on a split input but has no batch "
            "dim 0 to gather along: node %s %s (sharding needs every output "
            "that depends on a split input to keep the batch as dim 0; "
            "compute it outside the sharded graph or do not split its "
            "inputs)",
            g->outputs[i].name, describe(c, at, buf, sizeof buf),
            lost_reason[c->reason[at]]);
    }
    return BRAID_OK;
}

/* ---- building the replicas ----------------------------------------------------- */

/* A compiler node like original node `like` (its dtype, rank, name and
 * origin) with dim 0 set to rows. */
static uint32_t add_like(sh_ctx *c, braid_op op, const uint32_t *in,
                         uint32_t nin, uint32_t like, int64_t rows,
                         const bg_attrs *attr) {
    const bg_node *l = node(c, like);
    int64_t dims[BRAID_MAX_RANK];
    memcpy(dims, l->dims, sizeof dims);
    if (l->rank > 0) dims[0] = rows;
    braid_dtype dt = l->dtype;
    int rank = l->rank;
    uint32_t origin = c->plan->res.info[like].origin;
    uint32_t id = bp_plan_add_node(c->plan, op, in, nin, dt, rank, dims, attr);
    if (id != BG_NONE) c->plan->res.info[id].origin = origin;
    return id;
}

/* Rows block r of original node x (split input or PLAIN value src), made
 * once per (x, r). */
static uint32_t rows_of(sh_ctx *c, uint32_t x, uint32_t r, uint32_t src) {
    uint32_t *slot = &c->rows[(size_t)x * c->k + r];
    if (*slot != BG_NONE) return *slot;
    int64_t rows = node(c, x)->dims[0] / (int64_t)c->k;
    bg_attrs a = {0};
    a.start[0] = rows * (int64_t)r;
    for (int i = 0; i < BRAID_MAX_RANK; i++) a.step[i] = 1;
    *slot = add_like(c, BRAID_OP_SLICE, &src, 1, x, rows, &a);
    return *slot;
}

/* Sets the replica's device hint: a "cpu" hint stays, else GPU r. */
static braid_status set_hint(sh_ctx *c, uint32_t id, const char *orig,
                             uint32_t r) {
    braid_graph *g = c->plan->res.graph;
    char buf[BRAID_DEVICE_NAME_MAX];
    const char *dev = orig && strcmp(orig, "cpu") == 0
                          ? "cpu"
                          : bp_device_str(c->gpu[r], buf, sizeof buf);
    char *d = bg_strdup(g, dev);
    if (!d)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "shard: out of memory");
    g->nodes[id].device = d;
    return BRAID_OK;
}

/* Replica r of computing node id. */
static braid_status replicate(sh_ctx *c, uint32_t id, uint32_t r,
                              uint32_t *in) {
    uint32_t nin = node(c, id)->ninputs;
    for (uint32_t j = 0; j < nin; j++) {
        /* rows_of may move the node array: look the node up each time */
        uint32_t x = node(c, id)->inputs[j];
        in[j] = c->rep[(size_t)x * c->k + r];
        if (need_rows(c, id, j)) in[j] = rows_of(c, x, r, in[j]);
        if (in[j] == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
    }
    const bg_node *n = node(c, id);
    int64_t rows = n->rank ? n->dims[0] : 0;
    if (c->cls[id] == SH_BATCHED) rows /= (int64_t)c->k;
    bg_attrs attr = n->attr;
    uint32_t rid = add_like(c, n->op, in, nin, id, rows, &attr);
    if (rid == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
    braid_graph *g = c->plan->res.graph;
    const bg_node *o = &g->nodes[id];
    if (o->name && !(g->nodes[rid].name = bg_strdup(g, o->name)))
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "shard: out of memory");
    c->rep[(size_t)id * c->k + r] = rid;
    return set_hint(c, rid, g->nodes[id].device, r);
}

static braid_status build_replicas(sh_ctx *c) {
    uint32_t maxin = 1;
    for (uint32_t id = 0; id < c->n0; id++)
        if (node(c, id)->ninputs > maxin) maxin = node(c, id)->ninputs;
    uint32_t *in = malloc(maxin * sizeof *in);
    if (!in)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "shard: out of memory");
    braid_status s = BRAID_OK;
    for (uint32_t id = 0; s == BRAID_OK && id < c->n0; id++) {
        braid_op op = node(c, id)->op;
        for (uint32_t r = 0; s == BRAID_OK && r < c->k; r++) {
            uint32_t *slot = &c->rep[(size_t)id * c->k + r];
            if (c->cls[id] == SH_LOST) continue; /* no output needs it */
            if (op == BRAID_OP_CONSTANT || (op == BRAID_OP_INPUT &&
                                            !c->split[id]))
                *slot = id; /* shared: copies bring it */
            else if (op == BRAID_OP_INPUT)
                *slot = rows_of(c, id, r, id) != BG_NONE
                            ? c->rows[(size_t)id * c->k + r]
                            : BG_NONE;
            else
                s = replicate(c, id, r, in);
            if (s == BRAID_OK && *slot == BG_NONE) s = BRAID_ERR_OUT_OF_MEMORY;
        }
    }
    free(in);
    return s;
}

/* Each output: the concat of its replicas on the cpu, or replica 0. */
static braid_status gather_outputs(sh_ctx *c) {
    braid_graph *g = c->plan->res.graph;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t id = g->outputs[i].node;
        if (c->cls[id] != SH_BATCHED) {
            g->outputs[i].node = c->rep[(size_t)id * c->k];
            continue;
        }
        if (c->outnode[id] == BG_NONE) {
            bg_attrs a = {0};
            a.axis = 0;
            uint32_t cc = add_like(c, BRAID_OP_CONCAT, &c->rep[(size_t)id * c->k],
                                   c->k, id, node(c, id)->dims[0], &a);
            if (cc == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
            braid_status s = set_hint(c, cc, "cpu", 0);
            if (s != BRAID_OK) return s;
            c->outnode[id] = cc;
        }
        g->outputs[i].node = c->outnode[id];
    }
    return BRAID_OK;
}

/* ---- the pass -------------------------------------------------------------------- */

static braid_status pick_gpus(sh_ctx *c) {
    const bp_plan *p = c->plan;
    uint32_t ngpu = 0;
    char list[BP_MAX_DEVICES * 10] = "", buf[32];
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++) {
        if (i) strcat(list, ",");
        strcat(list, bp_device_str(p->in.devs.devices[i], buf, sizeof buf));
        if (p->in.devs.devices[i].kind == BP_DEVICE_CUDA && ngpu < c->k)
            c->gpu[ngpu++] = p->in.devs.devices[i];
    }
    if (ngpu < c->k)
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT,
            "shard: shards is %u but the plan's devices (%s) list %u GPU%s "
            "(sharding runs one replica per GPU)",
            (unsigned)c->k, list, (unsigned)ngpu, ngpu == 1 ? "" : "s");
    return BRAID_OK;
}

static void ctx_free(sh_ctx *c) {
    free(c->cls);
    free(c->split);
    free(c->reason);
    free(c->lost_at);
    free(c->rowwise);
    free(c->rep);
    free(c->rows);
    free(c->outnode);
}

static braid_status ctx_alloc(sh_ctx *c) {
    size_t n = c->n0 ? c->n0 : 1, nk = n * c->k;
    c->cls = calloc(n, 1);
    c->split = calloc(n, sizeof *c->split);
    c->reason = calloc(n, 1);
    c->lost_at = malloc(n * sizeof *c->lost_at);
    c->rowwise = calloc(n, 1);
    c->rep = malloc(nk * sizeof *c->rep);
    c->rows = malloc(nk * sizeof *c->rows);
    c->outnode = malloc(n * sizeof *c->outnode);
    if (!c->cls || !c->split || !c->reason || !c->lost_at || !c->rowwise ||
        !c->rep || !c->rows || !c->outnode)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "shard: out of memory");
    for (size_t i = 0; i < nk; i++) c->rep[i] = c->rows[i] = BG_NONE;
    for (size_t i = 0; i < n; i++) c->lost_at[i] = c->outnode[i] = BG_NONE;
    return BRAID_OK;
}

static braid_status shard(bp_plan *plan) {
    sh_ctx c = {0};
    c.plan = plan;
    c.n0 = plan->res.graph->nnodes;
    c.k = (uint32_t)plan->in.opts.shards;
    braid_status s = pick_gpus(&c);
    if (s == BRAID_OK) s = ctx_alloc(&c);
    if (s == BRAID_OK) s = choose_inputs(&c);
    if (s == BRAID_OK) s = classify(&c);
    if (s == BRAID_OK) s = build_replicas(&c);
    if (s == BRAID_OK) s = gather_outputs(&c);
    if (s == BRAID_OK) s = bp_plan_compact(plan);
    ctx_free(&c);
    return s;
}

braid_status bp_shard(bp_plan *plan) {
    int k = plan->in.opts.shards;
    braid_status s = BRAID_OK;
    if (k < 0 || k > BP_MAX_DEVICES)
        s = bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                              "shard: shards is %d (expected 0 or 1 for "
                              "none, or 2..%d GPUs)",
                              k, BP_MAX_DEVICES);
    else if (k > 1)
        s = shard(plan);
    /* the caller's string: the plan must not keep it */
    plan->in.opts.shard_inputs = NULL;
    return s;
}
