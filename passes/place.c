/* passes/place.c — gives every node a device (info.device).
 *
 * Rules, strongest first (docs/placement.md explains them with a worked
 * example):
 *   1. With only the cpu listed everything runs on the cpu, and GPU hints
 *      are ignored: a graph written for a GPU still runs on a host without
 *      one.
 *   2. A hint ("cpu", "cuda:N") wins; a hint naming a device the plan does
 *      not list is BRAID_ERR_DEVICE.
 *   3. Inputs and constants are host memory (the caller's buffers, the
 *      plan's bytes): they stay on the cpu, hint or not, and copies move
 *      them.
 *   4. A single-input shape op (reshape, permute, slice) goes with its
 *      input: it moves with it wherever that goes.
 *   5. Generators (fill, iota, random_*) go where their consumers are, so
 *      data made for a GPU is made on that GPU and never crosses PCIe.
 *   6. Everything else: the cost model. In id (topological) order each node
 *      takes the device minimising its compute time there plus the copies
 *      its choice implies (inputs living elsewhere, an output returned to
 *      the host); then generators pick the device their consumers favour;
 *      then refinement sweeps try moving every generator and cost-model
 *      node (with the shape ops that follow it) to every device and keep a
 *      move when the plan's total modelled time drops. The cost of a move
 *      is computed exactly: compute times plus one copy per (tensor,
 *      destination), as the copies pass will insert them. */
#include "graph/attention.h"
#include "graph/collective.h"
#include "graph/window.h"
#include "passes/collectives.h"
#include "passes/passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Device slot values besides real indices into plan->devices. */
#define DEV_UNSET 0xFFu /* not decided yet */
#define DEV_FLOAT 0xFEu /* a generator (chain) waiting for its consumers */

/* Largest number of refinement sweeps; each accepted move lowers the total
 * cost, so sweeps stop on their own long before this on real graphs. */
#define MAX_SWEEPS 8

/* How a node is placed. */
typedef enum place_role {
    ROLE_FIXED = 0, /* hinted, or host data (input, constant) */
    ROLE_FOLLOW,    /* single-input shape op: the device of its input */
    ROLE_GEN,       /* generator: with its consumers */
    ROLE_MODEL      /* the cost model decides */
} place_role;

typedef struct place_ctx {
    bp_plan *plan;                 /* the plan being placed */
    const braid_graph *g;          /* plan->graph */
    uint32_t n;                    /* nodes */
    uint32_t ndev;                 /* plan->ndevices */
    uint32_t host;                 /* index of the cpu in
                                      plan->devices */
    const bp_device_profile *prof; /* devs.profile */
    uint8_t *dev;                  /* per node: device index, or
                                      DEV_UNSET / DEV_FLOAT */
    uint8_t *role;                 /* per node: a role */
    bool *output;                  /* per node: a graph output */
    uint32_t *cstart;              /* consumers of node i are
                                      cons[cstart[i]..cstart[i+1]) */
    uint32_t *cons;                /* consumer ids (one per edge) */
    uint32_t *group;               /* members of the group being
                                      costed (root first) */
    uint32_t ngroup;               /* entries in group */
    uint32_t *in_group;            /* == group_epoch: member */
    uint32_t group_epoch;          /* current group's stamp */
    uint32_t *seen;                /* == seen_epoch: input already
                                      costed in this evaluation */
    uint32_t seen_epoch;           /* current evaluation's stamp */
    uint32_t *on;                  /* on[i * ndev + d]: input
                                      edges into node i from nodes
                                      placed on device d */
    uint32_t *ext;                 /* the group's inputs from
                                      outside it (one evaluation) */
    uint32_t *own;                 /* per node in ext: the group's
                                      edges into it from members
                                      on the device costed */
    bool prefer_gpu;               /* devs.prefer_gpu: the cpu
                                      only when no GPU can */
} place_ctx;

/* ---- the cost model ------------------------------------------------------ */

/* x / rate seconds; a zero or missing rate means "cannot" (infinite), and
 * no work takes no time whatever the rate. */
static double seconds(double x, double rate) {
    if (!(x > 0)) return 0;
    if (!(rate > 0)) return INFINITY;
    return x / rate;
}

static double node_bytes(const place_ctx *c, uint32_t id) {
    return (double)bg_nbytes(bg_node_at(c->g, id));
}

static double input_bytes(const place_ctx *c, const bg_node *n) {
    double b = 0;
    for (uint32_t k = 0; k < n->ninputs; k++)
        b += node_bytes(c, n->inputs[k]);
    return b;
}

/* The roofline of a node: the larger of its arithmetic and its memory
 * traffic, each at the device's rate. */
static double roofline(double flops, double flop_rate, double bytes,
                       const bp_device_profile *p) {
    double a = seconds(flops, flop_rate),
           m = seconds(bytes, p->mem_bytes_per_s);
    return a > m ? a : m;
}

/* Contraction length of a matmul node (its first input's K axis). */
static double matmul_k(const place_ctx *c, const bg_node *n) {
    const bg_node *a = bg_node_at(c->g, n->inputs[0]);
    int axis = (n->attr.flags & BRAID_TRANSPOSE_A) ? a->rank - 2 : a->rank - 1;
    return (double)a->dims[axis];
}

static double source_time(const bg_node *n, double out,
                          const bp_device_profile *p) {
    double numel = (double)bg_numel(n);
    switch (n->op) {
    case BRAID_OP_RANDOM_UNIFORM:
    case BRAID_OP_RANDOM_NORMAL:
        return roofline(numel * bg_op(n->op)->flops, p->elementwise_flops, out,
                        p);
    case BRAID_OP_FILL:
    case BRAID_OP_IOTA:
        return seconds(out, p->mem_bytes_per_s);
    default: /* input, constant: the bytes already exist */
        return 0;
    }
}

/* Modelled time of node id on device d, launch included. A reshape is a
 * view and costs nothing anywhere. */
static double node_time(const place_ctx *c, uint32_t id, uint32_t d) {
    const bg_node *n = bg_node_at(c->g, id);
    const bp_device_profile *p = &c->prof[d];
    double out = node_bytes(c, id), in = input_bytes(c, n);
    double numel = (double)bg_numel(n), t;
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_SOURCE:
        if (n->op == BRAID_OP_INPUT || n->op == BRAID_OP_CONSTANT) return 0;
        t = source_time(n, out, p);
        break;
    case BRAID_KIND_ELEMENTWISE:
    case BRAID_KIND_ROW: /* softmax: its flops per element, like these */
        t = roofline(numel * bg_op(n->op)->flops, p->elementwise_flops,
                     in + out, p);
        break;
    case BRAID_KIND_REDUCE:
    case BRAID_KIND_AXIS: /* argmax, topk, cumsum: per input element too */
        t = roofline((double)bg_numel(bg_node_at(c->g, n->inputs[0])) *
                         bg_op(n->op)->flops,
                     p->elementwise_flops, in + out, p);
        break;
    case BRAID_KIND_WINDOW: /* pooling: flops per tap */
        t = roofline(numel * bg_window_volume(n) * bg_op(n->op)->flops,
                     p->elementwise_flops, in + out, p);
        break;
    case BRAID_KIND_MATMUL:
        t = roofline(bg_op(n->op)->flops * numel * matmul_k(c, n),
                     p->flops[n->dtype], in + out, p);
        break;
    case BRAID_KIND_SHAPE:
        if (n->op == BRAID_OP_RESHAPE) return 0;
        t = seconds(2.0 * out, p->mem_bytes_per_s);
        break;
    case BRAID_KIND_INDEX: /* gather reads only the rows it picks (and its
                              indices); scatter copies the data too */
        t = seconds(n->op == BRAID_OP_GATHER
                        ? 2.0 * out + node_bytes(c, n->inputs[1])
                        : in + out,
                    p->mem_bytes_per_s);
        break;
    case BRAID_KIND_ATTENTION: { /* its two products' multiply-adds */
        bg_attn_geom ag;
        double macs = bg_attn_geom_of(c->g, n, &ag) ? bg_attn_macs(&ag) : 0;
        t = roofline(bg_op(n->op)->flops * macs, p->flops[n->dtype], in + out,
                     p);
        break;
    }
    case BRAID_KIND_CONV: { /* conv ops: their multiply-adds, like matmul */
        bg_conv_geom cg;
        double macs = bg_conv_geom_of(c->g, n, &cg) ? bg_conv_macs(&cg) : 0;
        t = roofline(bg_op(n->op)->flops * macs, p->flops[n->dtype], in + out,
                     p);
        break;
    }
    default: /* broadcast_to, and compiler nodes if any: memory traffic */
        t = seconds(in + out, p->mem_bytes_per_s);
        break;
    }
    return p->launch_s + t;
}

/* Time to move `bytes` from device a to device b as one copy node: the
 * copy's launch on the GPU side plus the bytes at the link's rate (a GPU
 * to GPU copy runs at the slower of the two PCIe directions). */
static double transfer_time(const place_ctx *c, double bytes, uint32_t a,
                            uint32_t b) {
    if (a == b) return 0;
    const bp_device_profile *pa = &c->prof[a], *pb = &c->prof[b];
    bool a_cpu = c->plan->in.devs.devices[a].kind == BP_DEVICE_CPU;
    bool b_cpu = c->plan->in.devs.devices[b].kind == BP_DEVICE_CPU;
    if (a_cpu) return pb->launch_s + seconds(bytes, pb->h2d_bytes_per_s);
    if (b_cpu) return pa->launch_s + seconds(bytes, pa->d2h_bytes_per_s);
    double rate = pa->d2h_bytes_per_s < pb->h2d_bytes_per_s
                      ? pa->d2h_bytes_per_s
                      : pb->h2d_bytes_per_s;
    return pb->launch_s + seconds(bytes, rate);
}

/* ---- groups: a node and the shape ops that follow it --------------------- */

/* Collects root and, transitively, its ROLE_FOLLOW consumers into
 * c->group (a follower has one input, so it belongs to exactly one group). */
static void build_group(place_ctx *c, uint32_t root) {
    c->group_epoch++;
    c->ngroup = 0;
    c->group[c->ngroup++] = root;
    c->in_group[root] = c->group_epoch;
    for (uint32_t k = 0; k < c->ngroup; k++) {
        uint32_t m = c->group[k];
        for (uint32_t e = c->cstart[m]; e < c->cstart[m + 1]; e++) {
            uint32_t u = c->cons[e];
            if (c->role[u] != ROLE_FOLLOW || c->in_group[u] == c->group_epoch)
                continue;
            c->in_group[u] = c->group_epoch;
            c->group[c->ngroup++] = u;
        }
    }
}

static bool member(const place_ctx *c, uint32_t id) {
    return c->in_group[id] == c->group_epoch;
}

/* Compute time of a floating generator chain (a generator and the shape
 * ops following it) if made on device d: during the first sweep, a node
 * reading one pays for making it, since the generator will go where its
 * consumers are. */
static double float_chain_time(const place_ctx *c, uint32_t id, uint32_t d) {
    double t = 0;
    for (;;) {
        t += node_time(c, id, d);
        if (c->role[id] != ROLE_FOLLOW) return t;
        id = bg_node_at(c->g, id)->inputs[0];
    }
}

/* Whether tensor i already reaches device d without the current group:
 * it lives there, a consumer outside the group there reads it (its copy is
 * shared), or it is an output and d is the host (the output's copy is
 * shared). own: the group's own edges into i counted under d. */
static bool reaches(const place_ctx *c, uint32_t i, uint32_t d, uint32_t own) {
    if (c->dev[i] == d) return true;
    if (d == c->host && c->output[i]) return true;
    return c->on[(size_t)i * c->ndev + d] > own;
}

/* Lists the group's inputs from outside it in c->ext (returns how many),
 * with c->own[i] = the group's edges into i from members placed on d. */
static uint32_t external_inputs(place_ctx *c, uint32_t d) {
    uint32_t next = 0;
    c->seen_epoch++;
    for (uint32_t k = 0; k < c->ngroup; k++) {
        uint32_t m = c->group[k];
        const bg_node *n = bg_node_at(c->g, m);
        for (uint32_t j = 0; j < n->ninputs; j++) {
            uint32_t i = n->inputs[j];
            if (member(c, i)) continue;
            if (c->seen[i] != c->seen_epoch) {
                c->seen[i] = c->seen_epoch;
                c->own[i] = 0;
                c->ext[next++] = i;
            }
            c->own[i] += c->dev[m] == d;
        }
    }
    return next;
}

/* Cost of the group's inputs from outside it on device d. */
static double inputs_cost(place_ctx *c, uint32_t d) {
    double t = 0;
    uint32_t next = external_inputs(c, d);
    for (uint32_t k = 0; k < next; k++) {
        uint32_t i = c->ext[k];
        if (c->dev[i] == DEV_FLOAT)
            t += float_chain_time(c, i, d);
        else if (c->dev[i] < c->ndev && !reaches(c, i, d, c->own[i]))
            t += transfer_time(c, node_bytes(c, i), c->dev[i], d);
    }
    return t;
}

/* Cost of copying each member's result, made on d, to every other device
 * that reads it: consumers outside the group (placed ones) and the host
 * when it is an output. One copy per (tensor, destination). */
static double outputs_cost(const place_ctx *c, uint32_t d) {
    double t = 0;
    for (uint32_t k = 0; k < c->ngroup; k++) {
        uint32_t m = c->group[k];
        uint64_t dest = c->output[m] ? (uint64_t)1 << c->host : 0;
        for (uint32_t e = c->cstart[m]; e < c->cstart[m + 1]; e++) {
            uint32_t u = c->cons[e];
            if (!member(c, u) && c->dev[u] < c->ndev)
                dest |= (uint64_t)1 << c->dev[u];
        }
        dest &= ~((uint64_t)1 << d);
        for (uint32_t x = 0; dest; x++, dest >>= 1)
            if (dest & 1) t += transfer_time(c, node_bytes(c, m), d, x);
    }
    return t;
}

/* Everything that changes when the current group runs on d. The
 * difference between two devices is exactly the difference in the plan's
 * total modelled time (compute + one copy per (tensor, destination)). */
static double group_cost(place_ctx *c, uint32_t d) {
    double t = 0;
    for (uint32_t k = 0; k < c->ngroup; k++)
        t += node_time(c, c->group[k], d);
    return t + inputs_cost(c, d) + outputs_cost(c, d);
}

/* The cheapest device for the current group; ties go to the cpu, then to
 * the device listed first. With prefer_gpu the cpu is chosen only when no
 * GPU can run the group at all (infinite cost). *best_cost receives its
 * cost. */
static uint32_t cheapest(place_ctx *c, double *best_cost) {
    uint32_t best = c->host;
    *best_cost = group_cost(c, c->host);
    double host_cost = *best_cost;
    if (c->prefer_gpu) *best_cost = INFINITY;
    for (uint32_t d = 0; d < c->ndev; d++) {
        if (d == c->host) continue;
        double t = group_cost(c, d);
        if (t < *best_cost) {
            *best_cost = t;
            best = d;
        }
    }
    if (best == c->host) *best_cost = host_cost;
    return best;
}

/* Sets node id's device (or DEV_*), keeping c->on up to date. */
static void set_dev(place_ctx *c, uint32_t id, uint32_t d) {
    const bg_node *n = bg_node_at(c->g, id);
    uint32_t old = c->dev[id];
    for (uint32_t k = 0; k < n->ninputs; k++) {
        size_t i = (size_t)n->inputs[k] * c->ndev;
        if (old < c->ndev) c->on[i + old]--;
        if (d < c->ndev) c->on[i + d]++;
    }
    c->dev[id] = (uint8_t)d;
}

static void assign_group(place_ctx *c, uint32_t d) {
    for (uint32_t k = 0; k < c->ngroup; k++)
        set_dev(c, c->group[k], d);
}

/* ---- roles and hints ----------------------------------------------------- */

/* Index of `name` in the plan's devices, or -1 (also for malformed names,
 * which the builder already refuses). */
static int device_index(const bp_plan *plan, const char *name) {
    bp_device d;
    if (!name || !bp_device_parse(name, strlen(name), &d)) return -1;
    for (uint32_t i = 0; i < plan->in.devs.ndevices; i++)
        if (bp_device_equal(plan->in.devs.devices[i], d)) return (int)i;
    return -1;
}

static braid_status bad_hint(const place_ctx *c, uint32_t id) {
    const bg_node *n = bg_node_at(c->g, id);
    char list[BP_MAX_DEVICES * 10] = "", buf[32];
    for (uint32_t i = 0; i < c->ndev; i++) {
        if (i) strcat(list, ",");
        strcat(list,
               bp_device_str(c->plan->in.devs.devices[i], buf, sizeof buf));
    }
    uint32_t origin = c->plan->res.info[id].origin;
    return bg_set_last_error(
        BRAID_ERR_DEVICE,
        "place: node %%%u (%s%s%s%s) has device hint \"%s\", which is not "
        "among the plan's devices (%s)",
        (unsigned)(origin != BG_NONE ? origin : id), bg_op(n->op)->name,
        n->name ? " \"" : "", n->name ? n->name : "", n->name ? "\"" : "",
        n->device, list);
}

static bool is_host_data(braid_op op) {
    return op == BRAID_OP_INPUT || op == BRAID_OP_CONSTANT;
}

/* Roles, hinted devices and host data; checks every hint. */
static braid_status assign_roles(place_ctx *c) {
    for (uint32_t id = 0; id < c->n; id++) {
        const bg_node *n = bg_node_at(c->g, id);
        braid_op_kind kind = bg_op(n->op)->kind;
        int hint = -1;
        if (n->device && (hint = device_index(c->plan, n->device)) < 0)
            return bad_hint(c, id);
        c->dev[id] = DEV_UNSET;
        if (is_host_data(n->op)) {
            c->role[id] = ROLE_FIXED;
            set_dev(c, id, c->host);
        } else if (kind == BRAID_KIND_STATE) {
            /* an assign writes its variable's bytes: where they are */
            c->role[id] = ROLE_FOLLOW;
        } else if (hint >= 0) {
            c->role[id] = ROLE_FIXED;
            set_dev(c, id, (uint32_t)hint);
        } else if (bg_is_collective(n)) {
            /* with its own input, decided in greedy() */
            c->role[id] = ROLE_FIXED;
        } else if (kind == BRAID_KIND_SHAPE && n->ninputs == 1) {
            c->role[id] = ROLE_FOLLOW;
        } else if (kind == BRAID_KIND_SOURCE) {
            c->role[id] = ROLE_GEN;
        } else {
            c->role[id] = ROLE_MODEL;
        }
    }
    return BRAID_OK;
}

/* ---- the three phases ---------------------------------------------------- */

/* Topological sweep: followers copy their input's device (or float with
 * it), generators float, cost-model nodes take their cheapest device
 * given what is placed so far. */
static void greedy(place_ctx *c) {
    for (uint32_t id = 0; id < c->n; id++) {
        double t;
        switch ((place_role)c->role[id]) {
        case ROLE_FIXED:
            if (c->dev[id] == DEV_UNSET) { /* an unhinted collective */
                const bg_node *n = bg_node_at(c->g, id);
                uint32_t own = bg_coll_own(n), d = c->host;
                if (c->dev[own] < c->ndev) d = c->dev[own];
                /* one rank of several processes: the first GPU listed */
                for (uint32_t k = 0; !bg_coll_local(n) && k < c->ndev; k++)
                    if (c->plan->in.devs.devices[k].kind == BP_DEVICE_CUDA) {
                        d = k;
                        break;
                    }
                set_dev(c, id, d);
            }
            break;
        case ROLE_FOLLOW:
            set_dev(c, id, c->dev[bg_node_at(c->g, id)->inputs[0]]);
            break;
        case ROLE_GEN:
            set_dev(c, id, DEV_FLOAT);
            break;
        case ROLE_MODEL:
            build_group(c, id);
            set_dev(c, id, cheapest(c, &t));
            break;
        }
    }
}

/* Every generator chain goes to the device its (now placed) consumers
 * make cheapest: usually theirs. */
static void place_generators(place_ctx *c) {
    for (uint32_t id = 0; id < c->n; id++) {
        if (c->role[id] != ROLE_GEN) continue;
        double t;
        build_group(c, id);
        assign_group(c, cheapest(c, &t));
    }
}

/* Moves single groups while the total modelled time drops. Returns the
 * number of moves made. */
static uint32_t refine(place_ctx *c) {
    uint32_t moves = 0;
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        uint32_t moved = 0;
        for (uint32_t id = 0; id < c->n; id++) {
            if (c->role[id] != ROLE_GEN && c->role[id] != ROLE_MODEL) continue;
            build_group(c, id);
            uint32_t cur = c->dev[id];
            double now = group_cost(c, cur), best_t;
            uint32_t best = cheapest(c, &best_t);
            /* a relative margin keeps rounding noise from flip-flopping */
            if (best != cur && best_t < now * (1 - 1e-9)) {
                assign_group(c, best);
                moved++;
            }
        }
        moves += moved;
        if (!moved) break;
    }
    return moves;
}

/* ---- the record (braid_plan_placement_get) ------------------------------- */

static bp_place_reason reason_of(const place_ctx *c, uint32_t id) {
    const bg_node *n = bg_node_at(c->g, id);
    switch ((place_role)c->role[id]) {
    case ROLE_FOLLOW:
        return BP_PLACE_FOLLOW;
    case ROLE_GEN:
        return BP_PLACE_GENERATOR;
    case ROLE_MODEL:
        return c->prefer_gpu ? BP_PLACE_PREFER_GPU : BP_PLACE_COST;
    default:
        if (is_host_data(n->op)) return BP_PLACE_HOST_DATA;
        return n->device ? BP_PLACE_HINT : BP_PLACE_COLLECTIVE;
    }
}

static braid_status alloc_record(bp_plan *plan, uint32_t n, uint32_t ndev) {
    bp_placement *r = &plan->placement;
    free(r->notes), free(r->cost), free(r->transfer);
    memset(r, 0, sizeof *r);
    r->notes = bp_calloc(n, sizeof *r->notes, "place: record");
    r->cost = bp_calloc((size_t)n * ndev, sizeof *r->cost, "place: record");
    r->transfer =
        bp_calloc((size_t)n * ndev, sizeof *r->transfer, "place: record");
    if (!r->notes || !r->cost || !r->transfer) return BRAID_ERR_OUT_OF_MEMORY;
    r->nnotes = n;
    r->ndevices = ndev;
    return BRAID_OK;
}

/* Records every node's device and why; for the groups the cost model (or
 * the generator rule) placed, the modelled cost of the group on every
 * device with the final placement of everything else. */
static braid_status record(place_ctx *c) {
    braid_status s = alloc_record(c->plan, c->n, c->ndev);
    if (s != BRAID_OK) return s;
    bp_placement *r = &c->plan->placement;
    for (uint32_t id = 0; id < c->n; id++) {
        bp_place_note *note = &r->notes[id];
        *note = (bp_place_note){
            id,         c->plan->res.info[id].origin, bg_node_at(c->g, id)->op,
            c->dev[id], (uint8_t)reason_of(c, id),    false};
        if (c->role[id] != ROLE_GEN && c->role[id] != ROLE_MODEL) continue;
        note->costed = true;
        build_group(c, id);
        for (uint32_t d = 0; d < c->ndev; d++) {
            size_t k = (size_t)id * c->ndev + d;
            r->cost[k] = group_cost(c, d);
            r->transfer[k] = inputs_cost(c, d) + outputs_cost(c, d);
        }
    }
    return BRAID_OK;
}

/* The plan lists the cpu alone: every node there, for that reason. */
static braid_status record_only_cpu(bp_plan *plan) {
    uint32_t n = plan->res.graph->nnodes;
    braid_status s = alloc_record(plan, n, 1);
    for (uint32_t id = 0; s == BRAID_OK && id < n; id++)
        plan->placement.notes[id] = (bp_place_note){
            id, plan->res.info[id].origin, bg_node_at(plan->res.graph, id)->op,
            0,  BP_PLACE_ONLY_DEVICE,      false};
    return s;
}

/* ---- setup --------------------------------------------------------------- */

static braid_status build_consumers(place_ctx *c) {
    const braid_graph *g = c->g;
    for (uint32_t id = 0; id < c->n; id++) {
        const bg_node *n = bg_node_at(g, id);
        for (uint32_t k = 0; k < n->ninputs; k++)
            c->cstart[n->inputs[k] + 1]++;
    }
    for (uint32_t id = 0; id < c->n; id++)
        c->cstart[id + 1] += c->cstart[id];
    uint32_t *fill = calloc(c->n ? c->n : 1, sizeof *fill);
    c->cons = bp_calloc(c->cstart[c->n], sizeof *c->cons, "place: consumers");
    if (!fill || !c->cons) {
        free(fill);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "place: out of memory listing consumers");
    }
    for (uint32_t id = 0; id < c->n; id++) {
        const bg_node *n = bg_node_at(g, id);
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t i = n->inputs[k];
            c->cons[c->cstart[i] + fill[i]++] = id;
        }
    }
    free(fill);
    for (uint32_t i = 0; i < g->noutputs; i++)
        c->output[g->outputs[i].node] = true;
    return BRAID_OK;
}

static braid_status ctx_init(place_ctx *c, bp_plan *plan) {
    memset(c, 0, sizeof *c);
    c->plan = plan;
    c->g = plan->res.graph;
    c->n = plan->res.graph->nnodes;
    c->ndev = plan->in.devs.ndevices;
    c->prof = plan->in.devs.profile;
    size_t n = c->n;
    c->dev = bp_calloc(n, 1, "place: devices");
    c->role = bp_calloc(n, 1, "place: roles");
    c->output = bp_calloc(n, sizeof *c->output, "place: outputs");
    c->cstart = bp_calloc(n + 1, sizeof *c->cstart, "place: consumers");
    c->group = bp_calloc(n, sizeof *c->group, "place: group");
    c->in_group = bp_calloc(n, sizeof *c->in_group, "place: group");
    c->seen = bp_calloc(n, sizeof *c->seen, "place: inputs");
    c->ext = bp_calloc(n, sizeof *c->ext, "place: inputs");
    c->own = bp_calloc(n, sizeof *c->own, "place: inputs");
    c->on = bp_calloc(n, c->ndev * sizeof *c->on, "place: consumers");
    if (!c->dev || !c->role || !c->output || !c->cstart || !c->group ||
        !c->in_group || !c->seen || !c->ext || !c->own || !c->on)
        return BRAID_ERR_OUT_OF_MEMORY;
    return build_consumers(c);
}

static void ctx_free(place_ctx *c) {
    free(c->dev);
    free(c->role);
    free(c->output);
    free(c->cstart);
    free(c->cons);
    free(c->group);
    free(c->in_group);
    free(c->seen);
    free(c->ext);
    free(c->own);
    free(c->on);
}

/* Only the cpu: nothing to decide (and GPU hints cannot be honoured). */
static void all_cpu(bp_plan *plan) {
    for (uint32_t id = 0; id < plan->res.ninfo; id++)
        plan->res.info[id].device = (bp_device){BP_DEVICE_CPU, 0};
}

/* Index of the cpu in plan->devices, or BG_NONE. */
static uint32_t host_index(const bp_plan *plan) {
    for (uint32_t i = 0; i < plan->in.devs.ndevices; i++)
        if (plan->in.devs.devices[i].kind == BP_DEVICE_CPU) return i;
    return BG_NONE;
}

braid_status bp_place(bp_plan *plan) {
    braid_status s = bp_plan_sync_info(plan);
    if (s != BRAID_OK) return s;
    uint32_t host = host_index(plan);
    if (host == BG_NONE || plan->in.devs.ndevices > BP_MAX_DEVICES)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "place: the plan's devices must include the "
                                 "cpu (inputs and outputs live in host "
                                 "memory) and at most %d devices",
                                 BP_MAX_DEVICES);
    if (plan->in.devs.ndevices == 1 || plan->res.graph->nnodes == 0) {
        all_cpu(plan);
        s = record_only_cpu(plan);
        return s == BRAID_OK ? bp_coll_place(plan) : s;
    }
    place_ctx c;
    s = ctx_init(&c, plan);
    c.host = host;
    c.prefer_gpu = plan->in.devs.prefer_gpu;
    if (s == BRAID_OK) s = assign_roles(&c);
    if (s == BRAID_OK) {
        greedy(&c);
        place_generators(&c);
        refine(&c);
        for (uint32_t id = 0; id < c.n; id++)
            plan->res.info[id].device = plan->in.devs.devices[c.dev[id]];
        s = record(&c);
    }
    ctx_free(&c);
    return s == BRAID_OK ? bp_coll_place(plan) : s;
}
