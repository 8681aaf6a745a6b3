/* passes/fuse_program.c — a fuse group (passes/fuse.c) as a fused node.
 *
 * The program lists the group's work in ascending node id (a topological
 * order). Values from outside the group become LOADs of the fused node's
 * inputs (each outside node once), except fills and constants whose
 * elements are all equal, which become CONSTs. broadcast_to members emit
 * nothing: loads broadcast against the iteration space by themselves, so a
 * broadcast_to is its operand's value. MATMUL programs start with
 * LOAD 0, LOAD 1, MATMUL(0, 1): the operands read whole as matrices; CONV
 * programs with LOAD 0, LOAD 1, [LOAD 2,] CONV (x, w, the bias). A
 * member stored into its variable (passes/fuse.c) is followed by its
 * STORE, the variable an input of the fused node, and its assign takes
 * the fused node as its value (its bytes then hold what the STORE wrote:
 * the assign does no work, passes/memory_views.c). */
#include "passes/fuse.h"
#include "graph/window.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Most entries of a program under construction: 4 instructions per member
 * plus 4, plus its stores (at most one per member); never more inputs or
 * outside values than instructions. */
#define BUILD_CAP (5 * BP_FUSE_MAX_MEMBERS + 4)

/* A program under construction, in arrays of BUILD_CAP entries on the
 * stack (one allocation per group, the finished instructions, instead of
 * four). */
typedef struct prog_build {
    bp_plan *plan;       /* the plan */
    bp_instr instr[BUILD_CAP]; /* instructions so far */
    uint32_t ninstr;     /* entries used */
    uint32_t inputs[BUILD_CAP];    /* the fused node's inputs (node ids) */
    uint32_t ninputs;              /* entries used */
    uint32_t ext[BUILD_CAP];       /* outside nodes already emitted, with */
    uint32_t ext_instr[BUILD_CAP]; /* their instruction */
    uint32_t next;                 /* entries used in ext */
    const bool *member;  /* per node id below n: in the group */
    uint32_t *vmap;      /* per member: its instruction (the pass's
                            scratch, one entry per node id below n) */
    uint32_t n;          /* nodes when the pass started */
    const uint32_t *assign_of; /* per node below n: the assign taking it as
                                  its value, or BG_NONE */
    bool failed;         /* out of memory adding a node */
} prog_build;

static braid_status oom(uint32_t id) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "fuse: out of memory building the fused node "
                             "for node %u",
                             (unsigned)id);
}

static void build_init(prog_build *b, bp_plan *plan,
                       const bp_fuse_scratch *sc) {
    b->plan = plan;
    b->ninstr = b->ninputs = b->next = 0;
    b->member = sc->member;
    b->vmap = sc->vmap;
    b->n = sc->n;
    b->assign_of = sc->assign_of;
    b->failed = false;
}

static uint32_t emit(prog_build *b, bp_instr in) {
    assert(b->ninstr < BUILD_CAP); /* see BUILD_CAP */
    b->instr[b->ninstr] = in;
    return b->ninstr++;
}

static uint32_t add_input(prog_build *b, uint32_t id) {
    for (uint32_t i = 0; i < b->ninputs; i++)
        if (b->inputs[i] == id) return i;
    b->inputs[b->ninputs] = id;
    return b->ninputs++;
}

/* The value every element of node id has, rounded to its dtype, when it
 * is a fill or a constant whose elements are all bitwise equal. */
static bool uniform_value(const bg_node *nd, double *value) {
    uint64_t cell = 0;
    if (nd->op == BRAID_OP_FILL) {
        bg_store(nd->dtype, &cell, 0, nd->attr.value[0]);
        *value = bg_load(nd->dtype, &cell, 0);
        return true;
    }
    if (nd->op != BRAID_OP_CONSTANT || !nd->attr.data) return false;
    int64_t numel = bg_numel(nd);
    size_t esz = braid_dtype_size(nd->dtype);
    const unsigned char *d = nd->attr.data;
    if (numel < 1) return false;
    for (int64_t i = 1; i < numel; i++)
        if (memcmp(d, d + (size_t)i * esz, esz) != 0) return false;
    *value = bg_load(nd->dtype, d, 0);
    return true;
}

/* The instruction holding the value of node id, emitting a LOAD or CONST
 * the first time an outside node is read. */
static uint32_t operand(prog_build *b, uint32_t id) {
    if (id < b->n && b->member[id]) return b->vmap[id];
    for (uint32_t i = 0; i < b->next; i++)
        if (b->ext[i] == id) return b->ext_instr[i];
    const bg_node *nd = bg_node_at(b->plan->res.graph, id);
    bp_instr in = {.dtype = nd->dtype, .source = BG_NONE};
    in.arg[0] = in.arg[1] = in.arg[2] = BG_NONE;
    in.input = BG_NONE;
    if (uniform_value(nd, &in.value)) {
        in.op = BP_INSTR_CONST;
        in.source = b->plan->res.info[id].origin;
    } else {
        in.op = BP_INSTR_LOAD;
        in.input = add_input(b, id);
    }
    uint32_t k = emit(b, in);
    b->ext[b->next] = id;
    b->ext_instr[b->next++] = k;
    return k;
}

/* The node a gather's GATHER instruction loads its indices from: the
 * indices themselves, or (when the data has dims after the axis, which
 * end the space) a reshape of them with that many trailing 1s, so the
 * load broadcasts against the space like any other (a view: no work).
 * BG_NONE when out of memory. */
static uint32_t gather_indices(prog_build *b, uint32_t gid) {
    bp_plan *plan = b->plan;
    const bg_node *nd = bg_node_at(plan->res.graph, gid);
    uint32_t ix = nd->inputs[1];
    const bg_node *x = bg_node_at(plan->res.graph, nd->inputs[0]);
    const bg_node *in = bg_node_at(plan->res.graph, ix);
    int trail = x->rank - nd->attr.axis - 1;
    if (trail == 0 || (ix < b->n && b->member[ix])) return ix;
    int64_t dims[BRAID_MAX_RANK];
    int rank = in->rank + trail;
    for (int d = 0; d < rank; d++)
        dims[d] = d < in->rank ? in->dims[d] : 1;
    uint32_t r = bp_plan_add_node(plan, BRAID_OP_RESHAPE, &ix, 1, in->dtype,
                                  rank, dims, NULL);
    if (r == BG_NONE) return BG_NONE;
    plan->res.info[r].device = plan->res.info[gid].device;
    /* the indices' view: it comes from them, not from the gather (whose
     * origin now names the fused node's instruction) */
    plan->res.info[r].origin = plan->res.info[ix].origin;
    return r;
}

/* GATHER of member gather gid: its data an input, its indices (reshaped
 * to broadcast) an operand. */
static uint32_t compute_gather(prog_build *b, uint32_t gid) {
    uint32_t ix = gather_indices(b, gid);
    if (ix == BG_NONE) {
        b->failed = true;
        ix = bg_node_at(b->plan->res.graph, gid)->inputs[1];
    }
    const bg_node *nd = bg_node_at(b->plan->res.graph, gid);
    bp_instr in = {.op = BP_INSTR_GATHER,
                   .dtype = nd->dtype,
                   .arg = {operand(b, ix), BG_NONE, BG_NONE},
                   .axis = (uint32_t)nd->attr.axis,
                   .source = b->plan->res.info[gid].origin};
    in.input = add_input(b, bg_node_at(b->plan->res.graph, gid)->inputs[0]);
    return emit(b, in);
}

/* The instruction computing member or extra node id from its operands. */
static uint32_t compute(prog_build *b, uint32_t id) {
    const bg_node *nd = bg_node_at(b->plan->res.graph, id);
    if (nd->op == BRAID_OP_GATHER) return compute_gather(b, id);
    uint32_t arg[3] = {BG_NONE, BG_NONE, BG_NONE};
    for (uint32_t k = 0; k < nd->ninputs && k < 3; k++)
        arg[k] = operand(b, nd->inputs[k]);
    if (nd->op == BRAID_OP_BROADCAST_TO) return arg[0];
    bp_instr in = {.op = nd->op,
                   .dtype = nd->dtype,
                   .input = BG_NONE,
                   .source = b->plan->res.info[id].origin};
    memcpy(in.arg, arg, sizeof arg);
    return emit(b, in);
}

/* Whether member id of group g is stored into a variable: passes/fuse.c
 * let a member other than the root keep an assign as its one outside use
 * only in ELEMENTWISE groups. */
static bool stored(const prog_build *b, const bp_fuse_group *g, uint32_t id) {
    return g->kind == BP_PROGRAM_ELEMENTWISE && id != g->out &&
           b->assign_of[id] != BG_NONE;
}

/* The STORE of member id into the variable its assign writes. */
static void store(prog_build *b, uint32_t id) {
    const braid_graph *gr = b->plan->res.graph;
    uint32_t a = b->assign_of[id];
    bp_instr in = {.op = BP_INSTR_STORE,
                   .dtype = bg_node_at(gr, id)->dtype,
                   .arg = {b->vmap[id], BG_NONE, BG_NONE},
                   .source = b->plan->res.info[a].origin};
    in.input = add_input(b, bg_node_at(gr, a)->inputs[0]);
    emit(b, in);
}

/* A MATMUL or CONV program's head: LOAD k of the heavy node's operand k
 * (its input k, read whole) for its first n operands — the matmul's two
 * (twice the same node for x·x), the conv's x, w and bias when it has one
 * — then the node's op over them. */
static void head(prog_build *b, uint32_t id, uint32_t n) {
    const bg_node *nd = bg_node_at(b->plan->res.graph, id);
    bp_instr in = {.op = nd->op,
                   .dtype = nd->dtype,
                   .arg = {BG_NONE, BG_NONE, BG_NONE},
                   .input = BG_NONE,
                   .source = b->plan->res.info[id].origin};
    for (uint32_t k = 0; k < n && k < 3; k++) {
        uint32_t src = nd->inputs[k];
        b->inputs[b->ninputs++] = src;
        bp_instr ld = {.op = BP_INSTR_LOAD,
                       .dtype = bg_node_at(b->plan->res.graph, src)->dtype,
                       .arg = {BG_NONE, BG_NONE, BG_NONE},
                       .input = k,
                       .source = BG_NONE};
        in.arg[k] = emit(b, ld);
    }
    b->vmap[id] = emit(b, in);
}

/* The program of group g (instructions in b), its iteration space and
 * attributes. */
static void fill_program(prog_build *b, const bp_fuse_group *g,
                         const uint32_t *members) {
    const braid_graph *gr = b->plan->res.graph;
    if (g->kind == BP_PROGRAM_MATMUL) head(b, g->root, 2);
    if (g->kind == BP_PROGRAM_CONV)
        head(b, g->root, bg_node_at(gr, g->root)->ninputs);
    for (uint32_t i = 0; i < g->nmembers; i++) {
        uint32_t id = members[g->first + i];
        b->vmap[id] = compute(b, id);
        if (stored(b, g, id)) store(b, id);
    }
    if (g->kind == BP_PROGRAM_REDUCE || g->kind == BP_PROGRAM_POOL) {
        const bg_node *r = bg_node_at(gr, g->out);
        bp_instr in = {.op = r->op,
                       .dtype = r->dtype,
                       .arg = {b->vmap[g->root], BG_NONE, BG_NONE},
                       .input = BG_NONE,
                       .source = b->plan->res.info[g->out].origin};
        emit(b, in);
    }
}

/* Appends the fused node for g with program prog, carrying g->out's name,
 * device and origin, and notes it as g->out's replacement in rep. */
static braid_status add_fused(prog_build *b, const bp_fuse_group *g,
                              bp_program *prog, uint32_t *rep) {
    bp_plan *plan = b->plan;
    braid_graph *gr = plan->res.graph;
    const bg_node *out = bg_node_at(gr, g->out);
    int64_t dims[BRAID_MAX_RANK];
    memcpy(dims, out->dims, sizeof dims);
    uint32_t id = bp_plan_add_node(plan, BRAID_OP_FUSED, b->inputs, b->ninputs,
                                   out->dtype, out->rank, dims, NULL);
    if (id == BG_NONE) return oom(g->out);
    prog->instr = malloc(b->ninstr * sizeof *prog->instr);
    if (!prog->instr) return oom(g->out);
    memcpy(prog->instr, b->instr, b->ninstr * sizeof *prog->instr);
    uint32_t pi = bp_plan_add_program(plan, prog);
    if (pi == BG_NONE) {
        free(prog->instr);
        return oom(g->out);
    }
    out = bg_node_at(gr, g->out); /* the node array may have moved */
    if (out->name) {
        gr->nodes[id].name = bg_strdup(gr, out->name);
        if (!gr->nodes[id].name) return oom(g->out);
    }
    plan->res.info[id].device = plan->res.info[g->out].device;
    plan->res.info[id].program = pi;
    plan->res.info[id].origin = plan->res.info[g->out].origin;
    rep[g->out] = id;
    return BRAID_OK;
}

/* Stored members: their assigns take the fused node (bp_plan_replace_map
 * rewires every use; the assign is their only one outside the group). */
static void note_stores(const prog_build *b, const bp_fuse_group *g,
                        const uint32_t *members, uint32_t *rep) {
    for (uint32_t i = 0; i < g->nmembers; i++) {
        uint32_t id = members[g->first + i];
        if (stored(b, g, id)) rep[id] = rep[g->out];
    }
}

braid_status bp_fuse_build(bp_plan *plan, const bp_fuse_group *g,
                           const uint32_t *members, bp_fuse_scratch *sc) {
    if (g->nmembers > BP_FUSE_MAX_MEMBERS)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "fuse: group of node %u has %u members, "
                                 "more than %d",
                                 (unsigned)g->out, (unsigned)g->nmembers,
                                 BP_FUSE_MAX_MEMBERS);
    prog_build b;
    bool *member = sc->member;
    build_init(&b, plan, sc);
    for (uint32_t i = 0; i < g->nmembers; i++)
        member[members[g->first + i]] = true;
    if (g->kind == BP_PROGRAM_MATMUL || g->kind == BP_PROGRAM_CONV)
        member[g->root] = true;
    fill_program(&b, g, members);
    const bg_node *space = bg_node_at(plan->res.graph, g->root);
    bp_program prog = {.kind = g->kind,
                       .ninstr = b.ninstr,
                       .instr = NULL, /* add_fused copies b.instr */
                       .rank = space->rank};
    memcpy(prog.dims, space->dims, sizeof prog.dims);
    const bg_node *out = bg_node_at(plan->res.graph, g->out);
    if (g->kind == BP_PROGRAM_REDUCE) {
        prog.axes = out->attr.axes;
        prog.flags = out->attr.flags & BG_KEEPDIMS;
    } else if (g->kind == BP_PROGRAM_POOL) {
        prog.flags = out->attr.flags;
        for (int q = 0; q < 5; q++)
            for (int i = 0; i + 2 < out->rank; i++)
                prog.window[q][i] = bg_window_param(&out->attr, q, i);
    } else if (g->kind == BP_PROGRAM_MATMUL) {
        prog.flags =
            space->attr.flags & (BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B);
    } else if (g->kind == BP_PROGRAM_CONV) {
        bg_conv_geom geo; /* the fuse pass took it well-formed */
        if (bg_conv_geom_of(plan->res.graph, space, &geo))
            for (int i = 0; i < geo.nspatial; i++) {
                prog.window[0][i] = geo.k[i];
                prog.window[1][i] = geo.stride[i];
                prog.window[2][i] = geo.dil[i];
                prog.window[3][i] = geo.pb[i];
                prog.window[4][i] = geo.pe[i];
            }
    }
    braid_status s = b.failed ? oom(g->out) : add_fused(&b, g, &prog, sc->rep);
    if (s == BRAID_OK) note_stores(&b, g, members, sc->rep);
    for (uint32_t i = 0; i < g->nmembers; i++)
        member[members[g->first + i]] = false;
    if (g->kind == BP_PROGRAM_MATMUL || g->kind == BP_PROGRAM_CONV)
        member[g->root] = false;
    return s;
}
