/* runtime/planfile/planfile_read_graph.c — the GRAPH and PLAN_GRAPH sections of a
 * plan file (docs/plan-format.md): every node is rebuilt with the graph
 * builder (bg_build), which re-checks it as if a user had built it, and its
 * inferred type is compared with the stored one. Compiler nodes (copy,
 * fused), which the builder refuses, are checked here and appended with
 * bp_plan_add_node; fused nodes' programs are checked with PLAN. */
#include "runtime/planfile/planfile_read.h"

#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The smallest node record: rank 0, no inputs, absent strings. */
#define MIN_NODE (4 + 4 + 4 + 4 + 16 + 8 + 4 + 4 + 4 + 8 + 64 + 64 + 4 + 4 + 4)

uint64_t br_pf_node_bytes(braid_dtype t, int rank, const int64_t *dims) {
    int64_t numel;
    if (!bg_shape_fits(rank, dims, braid_dtype_size(t), &numel))
        return UINT64_MAX;
    return (uint64_t)numel * braid_dtype_size(t);
}

const char *br_pf_type_str(braid_dtype t, int rank, const int64_t *dims,
                           char *buf, size_t size) {
    char shape[160];
    bg_shape_str(rank, dims, shape, sizeof shape);
    snprintf(buf, size, "%s%s", braid_dtype_name(t), shape);
    return buf;
}

/* A node as stored, before it is built. */
typedef struct rec {
    braid_op op;                 /* its op */
    braid_dtype dtype;           /* stored dtype */
    uint32_t rank;               /* stored rank */
    int64_t dims[BRAID_MAX_RANK]; /* stored dims */
    uint32_t ninputs;            /* inputs (in L->ids) */
    bg_attrs attr;               /* attributes (data set from the blob) */
    uint32_t blob;               /* CONSTANTS index or NONE */
    const char *name, *device;   /* strings in the file, or NULL */
    uint32_t name_len, device_len; /* their lengths */
} rec;

static bool grow_ids(br_pf_load *L, uint32_t n) {
    if (n <= L->ids_cap) return true;
    uint32_t *ids = realloc(L->ids, (size_t)n * sizeof *ids);
    if (!ids) return false;
    L->ids = ids;
    L->ids_cap = n;
    return true;
}

static bool read_type(br_pf_rd *r, rec *x, bool plan_graph) {
    braid_op op;
    braid_dtype dt;
    if (!br_pf_get_op(r, "op", false, &op) ||
        !br_pf_get_dtype(r, "dtype", &dt) ||
        !br_pf_get_u32(r, "rank", &x->rank))
        return false;
    braid_op_kind kind = bg_op(op)->kind;
    if (!plan_graph && (kind == BRAID_KIND_COPY || kind == BRAID_KIND_FUSED))
        return br_pf_fail(r, "op", "'%s' is made by the compiler and cannot "
                                   "be in the user's graph",
                          bg_op(op)->name),
               false;
    if (x->rank > BRAID_MAX_RANK)
        return br_pf_fail(r, "rank", "rank %u (at most %d)", x->rank,
                          BRAID_MAX_RANK),
               false;
    x->op = op;
    x->dtype = dt;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (!br_pf_get_i64(r, "dims", &x->dims[i])) return false;
        if (x->dims[i] < 0 || x->dims[i] > BG_MAX_BYTES)
            return br_pf_fail(r, "dims", "dim %u is %lld (expected 0..2^50)",
                              i, (long long)x->dims[i]),
                   false;
    }
    if (br_pf_node_bytes(x->dtype, (int)x->rank, x->dims) == UINT64_MAX)
        return br_pf_fail(r, "dims", "the tensor is larger than 2^50 bytes"),
               false;
    return true;
}

static bool read_inputs(br_pf_load *L, br_pf_rd *r, rec *x, uint32_t id) {
    if (!br_pf_get_count(r, "ninputs", 4, &x->ninputs)) return false;
    int arity = bg_op(x->op)->arity;
    bool ok = arity >= 0 ? x->ninputs == (uint32_t)arity
                         : x->ninputs >= 1 || x->op == BRAID_OP_FUSED;
    if (!ok)
        return br_pf_fail(r, "ninputs", "%u inputs for %s (expected %s%d)",
                          x->ninputs, bg_op(x->op)->name,
                          arity >= 0 ? "" : "at least ", arity >= 0 ? arity : 1),
               false;
    if (!grow_ids(L, x->ninputs))
        return br_pf_fail(r, "inputs", "out of memory"), false;
    for (uint32_t k = 0; k < x->ninputs; k++) {
        if (!br_pf_get_u32(r, "inputs", &L->ids[k])) return false;
        if (L->ids[k] >= id)
            return br_pf_fail(r, "inputs",
                              "input %u is node %u, not an earlier node", k,
                              L->ids[k]),
                   false;
    }
    return true;
}

static bool read_attrs(br_pf_rd *r, bg_attrs *a) {
    memset(a, 0, sizeof *a);
    uint32_t axes, flags;
    bool ok = br_pf_get_f64(r, "value", &a->value[0]) &&
              br_pf_get_f64(r, "value", &a->value[1]) &&
              br_pf_get_u64(r, "seed", &a->seed) &&
              br_pf_get_i32(r, "axis", &a->axis) &&
              br_pf_get_u32(r, "flags", &flags) &&
              br_pf_get_u32(r, "axes", &axes);
    for (int i = 0; ok && i < BRAID_MAX_RANK; i++)
        ok = br_pf_get_u8(r, "perm", &a->perm[i]);
    for (int i = 0; ok && i < BRAID_MAX_RANK; i++)
        ok = br_pf_get_i64(r, "start", &a->start[i]);
    for (int i = 0; ok && i < BRAID_MAX_RANK; i++)
        ok = br_pf_get_i64(r, "step", &a->step[i]);
    if (!ok) return false;
    if (axes > 0xFF)
        return br_pf_fail(r, "axes", "mask 0x%x has bits beyond 8 axes", axes),
               false;
    a->axes = (uint8_t)axes;
    a->flags = flags;
    return true;
}

/* The constant's bytes from its blob (size checked). */
static bool read_blob(br_pf_load *L, br_pf_rd *r, rec *x) {
    if (!br_pf_get_u32(r, "blob", &x->blob)) return false;
    uint64_t bytes = br_pf_node_bytes(x->dtype, (int)x->rank, x->dims);
    if (x->op == BRAID_OP_VARIABLE) { /* flags: its initializer */
        if (!br_pf_init_op(x->attr.flags, &x->attr.init))
            return br_pf_fail(r, "flags", "variable initializer code %u "
                                          "(expected 0..3)",
                              x->attr.flags),
                   false;
        x->attr.flags = 0;
    }
    bool wants = (x->op == BRAID_OP_CONSTANT ||
                  (x->op == BRAID_OP_VARIABLE &&
                   x->attr.init == BRAID_OP_CONSTANT)) &&
                 bytes > 0;
    if (!wants)
        return x->blob == BR_PF_NONE ||
               (br_pf_fail(r, "blob", "blob %u for a node without constant "
                                      "data (expected NONE)",
                           x->blob),
                false);
    if (x->blob >= L->nblobs)
        return br_pf_fail(r, "blob", "blob %u out of range (CONSTANTS has %u)",
                          x->blob, L->nblobs),
               false;
    if (L->blob_size[x->blob] != bytes)
        return br_pf_fail(r, "blob", "blob %u has %llu bytes, the constant "
                                     "needs %llu",
                          x->blob, (unsigned long long)L->blob_size[x->blob],
                          (unsigned long long)bytes),
               false;
    x->attr.data = (void *)L->blob[x->blob]; /* borrowed, not copied */
    return true;
}

static bool read_rec(br_pf_load *L, br_pf_rd *r, rec *x, uint32_t id,
                     bool plan_graph) {
    return read_type(r, x, plan_graph) && read_inputs(L, r, x, id) &&
           read_attrs(r, &x->attr) && read_blob(L, r, x) &&
           br_pf_get_str(r, "name", true, BR_PF_MAX_STRING, &x->name,
                         &x->name_len) &&
           br_pf_get_str(r, "device", true, BR_PF_MAX_STRING, &x->device,
                         &x->device_len);
}

static bool same_type(const bg_node *n, const rec *x) {
    if (n->dtype != x->dtype || n->rank != x->rank) return false;
    for (uint32_t i = 0; i < x->rank; i++)
        if (n->dims[i] != x->dims[i]) return false;
    return true;
}

/* Attributes bit for bit (constant data aside). */
static bool same_attrs(const bg_attrs *a, const bg_attrs *b) {
    return memcmp(a->value, b->value, sizeof a->value) == 0 &&
           a->seed == b->seed && a->axis == b->axis && a->flags == b->flags &&
           a->init == b->init &&
           a->axes == b->axes &&
           memcmp(a->perm, b->perm, sizeof a->perm) == 0 &&
           memcmp(a->start, b->start, sizeof a->start) == 0 &&
           memcmp(a->step, b->step, sizeof a->step) == 0;
}

/* The graph refused something: its message, in the file's terms. */
static bool graph_fail(br_pf_rd *r, const braid_graph *g, const char *field) {
    br_pf_fail(r, field, "%s", g->error[0] ? g->error : "out of memory");
    return false;
}

/* A compiler node: copy (its input's type) or fused (checked with its
 * program later). */
static bool add_compiler_node(br_pf_load *L, br_pf_rd *r, const rec *x,
                              uint32_t id) {
    braid_graph *g = L->plan->res.graph;
    if (x->op == BRAID_OP_COPY && !same_type(&g->nodes[L->ids[0]], x)) {
        char want[200], have[200];
        const bg_node *in = &g->nodes[L->ids[0]];
        return br_pf_fail(r, NULL,
                          "copy of %s stored as %s (a copy has its input's "
                          "type)",
                          bg_type_str(in, want, sizeof want),
                          br_pf_type_str(x->dtype, (int)x->rank, x->dims, have,
                                         sizeof have)),
               false;
    }
    uint32_t got = bp_plan_add_node(L->plan, x->op, L->ids, x->ninputs,
                                    x->dtype, (int)x->rank, x->dims, NULL);
    if (got != id) return br_pf_fail(r, NULL, "out of memory"), false;
    return true;
}

/* Builds node id from x; names and hints as braid_set_name/_device do. */
static bool build_node(br_pf_load *L, br_pf_rd *r, braid_graph *g,
                       const rec *x, uint32_t id, bool plan_graph) {
    braid_op_kind kind = bg_op(x->op)->kind;
    static const bg_attrs zero;
    if (kind == BRAID_KIND_COPY || kind == BRAID_KIND_FUSED) {
        if (!same_attrs(&x->attr, &zero))
            return br_pf_fail(r, NULL, "a compiler node with attributes"),
                   false;
        if (!add_compiler_node(L, r, x, id)) return false;
    } else {
        const char *iname = NULL;
        if (x->op == BRAID_OP_INPUT || x->op == BRAID_OP_VARIABLE) {
            if (!x->name)
                return br_pf_fail(r, "name", "an input or variable needs a "
                                             "name"),
                       false;
            iname = br_pf_cstr(L, x->name, x->name_len);
        }
        /* constants borrow their bytes from the loaded CONSTANTS section
         * (shared by both graphs, freed with the last of them) */
        uint32_t got =
            bg_build_shared(g, x->op, L->ids, x->ninputs, x->dtype,
                            (int)x->rank, x->dims, &x->attr, iname, L->image);
        if (got == BG_NONE) return graph_fail(r, g, NULL);
        if (got != id) return br_pf_fail(r, NULL, "built as node %u", got), false;
        if (!same_type(&g->nodes[id], x)) {
            char want[200], have[200];
            return br_pf_fail(r, NULL, "stored as %s but the builder infers %s",
                              br_pf_type_str(x->dtype, (int)x->rank, x->dims,
                                             have, sizeof have),
                              bg_type_str(&g->nodes[id], want, sizeof want)),
                   false;
        }
        /* The user's graph was built by bg_build, which zeroes what an op
         * does not use; the working graph may hold compiler-made nodes
         * that keep such fields (chunking's slices): kept as stored, since
         * only fields the builder checked are ever read. */
        if (!plan_graph && !same_attrs(&g->nodes[id].attr, &x->attr))
            return br_pf_fail(r, NULL, "attributes are not what the builder "
                                       "makes of them (fields %s does not "
                                       "use must be 0)",
                              bg_op(x->op)->name),
                   false;
        if (plan_graph) { /* keep them, so that a re-save is identical */
            void *data = g->nodes[id].attr.data;
            g->nodes[id].attr = x->attr;
            g->nodes[id].attr.data = data;
        }
        if (plan_graph && bp_plan_sync_info(L->plan) != BRAID_OK)
            return br_pf_fail(r, NULL, "out of memory"), false;
    }
    braid_tensor t = {id};
    if (x->name && x->op != BRAID_OP_INPUT &&
        braid_set_name(g, t, br_pf_cstr(L, x->name, x->name_len)) != BRAID_OK)
        return graph_fail(r, g, "name");
    if (x->device &&
        braid_set_device(g, t, br_pf_cstr(L, x->device, x->device_len)) !=
            BRAID_OK)
        return graph_fail(r, g, "device");
    return true;
}

static bool read_outputs(br_pf_load *L, br_pf_rd *r, braid_graph *g,
                         uint32_t noutputs) {
    r->array = "outputs";
    for (uint32_t i = 0; i < noutputs; i++) {
        r->index = i;
        const char *name;
        uint32_t len, node;
        if (!br_pf_get_str(r, "name", false, BR_PF_MAX_STRING, &name, &len) ||
            !br_pf_get_u32(r, "node", &node))
            return false;
        if (node >= g->nnodes)
            return br_pf_fail(r, "node", "node %u out of range (the graph has "
                                         "%u nodes)",
                              node, g->nnodes),
                   false;
        if (braid_output(g, br_pf_cstr(L, name, len), (braid_tensor){node}) !=
            BRAID_OK)
            return graph_fail(r, g, "name");
    }
    return true;
}

braid_status br_pf_read_graph(br_pf_load *L, uint32_t type, braid_graph **out) {
    bool plan_graph = type == BR_PF_PLAN_GRAPH;
    br_pf_rd r = br_pf_reader(L, type);
    braid_graph *g = plan_graph ? L->plan->res.graph : braid_graph_new(NULL);
    if (!g)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "%s: out of memory", L->prefix);
    if (!plan_graph) *out = g;
    uint32_t nnodes, noutputs;
    if (!br_pf_get_count(&r, "nnodes", MIN_NODE, &nnodes) ||
        !br_pf_get_u32(&r, "noutputs", &noutputs))
        return r.status;
    if (nnodes == 0)
        return br_pf_fail(&r, "nnodes", "a graph needs at least one node");
    if (noutputs > br_pf_left(&r) / 8 + 1)
        return br_pf_fail(&r, "noutputs", "count %u cannot fit in the section",
                          noutputs);
    /* The count is bounded by the section's size (MIN_NODE bytes a node):
     * the node array is made once, not doubled and copied as it fills. */
    if (g->nnodes == 0 && !bg_reserve_nodes(g, nnodes))
        return br_pf_fail(&r, "nnodes", "%s", g->error);
    if (plan_graph && bp_plan_reserve_info(L->plan, nnodes) != BRAID_OK)
        return br_pf_fail(&r, "nnodes", "out of memory");
    r.array = "nodes";
    for (uint32_t id = 0; id < nnodes; id++) {
        r.index = id;
        rec x;
        memset(&x, 0, sizeof x);
        if (!read_rec(L, &r, &x, id, plan_graph) ||
            !build_node(L, &r, g, &x, id, plan_graph))
            return r.status;
    }
    if (noutputs == 0 && !bg_has_assign(g))
        return br_pf_fail(&r, "noutputs", "a graph needs an output or an "
                                          "assign");
    if (!read_outputs(L, &r, g, noutputs) || !br_pf_end(&r)) return r.status;
    if (g->status != BRAID_OK)
        return br_pf_fail(&r, NULL, "%s", g->error);
    return BRAID_OK;
}
