/* passes/dot_plan.c — the DOT view of a compiled plan (braid_plan_to_dot):
 * devices as fill colours with a legend, queues as clusters, copy nodes as
 * cds shapes, fused nodes as records listing their program, every node's
 * memory place, events as dashed edges. See braid.h for the contract. */
#define _POSIX_C_SOURCE 200809L

#include "passes/dot.h"
#include "graph/window.h"
#include "passes/layout.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The view being built. */
typedef struct plan_dot {
    const bp_plan *p;    /* the plan drawn */
    Agraph_t *g;         /* the root graph */
    Agraph_t **clusters; /* per queue: its cluster, NULL when it runs
                            nothing */
    Agnode_t **nodes;    /* per node id */
    bp_dot_outs outs;    /* the outputs each node feeds */
    bp_text t;           /* label scratch */
} plan_dot;

/* ---- names --------------------------------------------------------------- */

/* "cpu", "cuda:0 compute 1", "cuda:0 h2d" (copy queues show their index
 * only when a device has several of a kind). */
static const char *queue_label(const bp_queue *q, char *buf, size_t size) {
    char dev[32];
    bp_device_str(q->device, dev, sizeof dev);
    const char *kind = "?";
    switch (q->kind) {
    case BP_QUEUE_CPU:
        snprintf(buf, size, "%s", dev);
        return buf;
    case BP_QUEUE_COMPUTE:
        snprintf(buf, size, "%s compute %" PRIu32, dev, q->index);
        return buf;
    case BP_QUEUE_H2D:
        kind = "h2d";
        break;
    case BP_QUEUE_D2H:
        kind = "d2h";
        break;
    case BP_QUEUE_D2D:
        kind = "d2d";
        break;
    case BP_QUEUE_COMM:
        kind = "comm";
        break;
    }
    if (q->index)
        snprintf(buf, size, "%s %s %" PRIu32, dev, kind, q->index);
    else
        snprintf(buf, size, "%s %s", dev, kind);
    return buf;
}

/* "h2d", "d2h", "d2d" for a copy from device `from` to `to`. */
static const char *copy_direction(bp_device from, bp_device to) {
    if (from.kind == BP_DEVICE_CPU && to.kind == BP_DEVICE_CUDA) return "h2d";
    if (from.kind == BP_DEVICE_CUDA && to.kind == BP_DEVICE_CPU) return "d2h";
    if (from.kind == BP_DEVICE_CUDA && to.kind == BP_DEVICE_CUDA) return "d2d";
    return "h2h";
}

/* Name of a program instruction's op. */
static const char *instr_name(braid_op op) {
    if (op == BP_INSTR_LOAD) return "load";
    if (op == BP_INSTR_CONST) return "const";
    if (op == BP_INSTR_GATHER) return "gather";
    if (op == BP_INSTR_STORE) return "store";
    if ((unsigned)op < (unsigned)BRAID_OP_COUNT_) return bg_op(op)->name;
    return "?";
}

/* ---- labels -------------------------------------------------------------- */

/* "arena 0 @ 4096, 1.00 MiB" / "input buffer, ..." / "view of %3 @ 0, ...":
 * where node id's output lives. */
static void put_place(plan_dot *d, uint32_t id) {
    const bp_tensor_place *pl = &d->p->res.info[id].place;
    bp_text *t = &d->t;
    switch (pl->storage) {
    case BP_STORAGE_ARENA:
        if (pl->arena < d->p->res.narenas)
            bp_text_printf(t, "arena %" PRIu32 " @ %" PRIu64, pl->arena,
                           pl->offset);
        else
            bp_text_printf(t, "arena ? @ %" PRIu64, pl->offset);
        break;
    case BP_STORAGE_INPUT:
        bp_text_printf(t, "input buffer");
        break;
    case BP_STORAGE_CONSTANT:
        bp_text_printf(t, "constant data");
        break;
    case BP_STORAGE_VIEW: {
        const int64_t *s = bp_layout_of(d->p, id);
        bp_text_printf(t, "%sview of %%%" PRIu32 " @ %" PRIu64,
                       s ? "strided " : "", pl->base, pl->offset);
        for (int a = 0; s && a < d->p->res.graph->nodes[id].rank; a++)
            bp_text_printf(t, "%s%" PRId64 "%s", a ? "," : " [", s[a],
                           a + 1 == d->p->res.graph->nodes[id].rank ? "]"
                                                                    : "");
        break;
    }
    default:
        bp_text_printf(t, "no storage");
        break;
    }
    char size[32];
    bp_text_printf(t, ", %s", bp_dot_bytes(pl->bytes, size, sizeof size));
}

/* The output names node id feeds, one line each; true when any. */
static bool put_outputs(plan_dot *d, uint32_t id, bool record) {
    bool any = false;
    for (uint32_t i = d->outs.head[id]; i != BG_NONE; i = d->outs.next[i]) {
        bp_text_printf(&d->t, "%soutput \"", record ? "|" : "\\n");
        bp_text_user(&d->t, d->p->res.outputs[i].name, record);
        bp_text_printf(&d->t, "\"");
        any = true;
    }
    return any;
}

/* First line: "%id op", the step in the schedule, chunk marker. */
static void put_head(plan_dot *d, uint32_t id, const char *op) {
    const bp_node_info *in = &d->p->res.info[id];
    bp_text_printf(&d->t, "%%%" PRIu32 " %s", id, op);
    if (d->p->res.schedule && d->p->res.nschedule == d->p->res.graph->nnodes)
        bp_text_printf(&d->t, " (step %" PRIu32 ")", in->order);
    if (in->chunk) bp_text_printf(&d->t, " [chunk]");
}

/* Ordinary nodes (and copies): lines separated by \n. */
static bool plain_label(plan_dot *d, uint32_t id) {
    const bg_node *n = bg_node_at(d->p->res.graph, id);
    char type[160], size[32];
    bp_text *t = &d->t;
    if (n->op == BRAID_OP_COPY && n->ninputs == 1 && n->inputs[0] < id) {
        bp_device from = d->p->res.info[n->inputs[0]].device;
        bp_device to = d->p->res.info[id].device;
        char a[32], b[32], op[16];
        snprintf(op, sizeof op, "copy %s", copy_direction(from, to));
        put_head(d, id, op);
        bp_text_printf(t, "\\n%s -> %s, %s", bp_device_str(from, a, sizeof a),
                       bp_device_str(to, b, sizeof b),
                       bp_dot_bytes(bg_nbytes(n), size, sizeof size));
    } else {
        put_head(d, id, bg_op(n->op)->name);
    }
    bp_text_printf(t, "\\n%s", bg_type_str(n, type, sizeof type));
    if (n->name) {
        bp_text_printf(t, "\\n\"");
        bp_text_user(t, n->name, false);
        bp_text_printf(t, "\"");
    }
    bp_text_printf(t, "\\n");
    put_place(d, id);
    return put_outputs(d, id, false);
}

/* What a reduction or matmul instruction takes from its program: reduced
 * axes, transposes. */
static void put_instr_attrs(bp_text *t, const bp_program *prog, braid_op op) {
    braid_op_kind kind = bg_op(op)->kind;
    if (kind == BRAID_KIND_REDUCE) {
        bp_text_printf(t, " axes=[");
        const char *sep = "";
        for (int a = 0; a < 8; a++)
            if (prog->axes & (1u << a)) {
                bp_text_printf(t, "%s%d", sep, a);
                sep = ",";
            }
        bp_text_printf(t, "]%s",
                       (prog->flags & BG_KEEPDIMS) ? " keepdims" : "");
    } else if (kind == BRAID_KIND_MATMUL) {
        if (prog->flags & BRAID_TRANSPOSE_A) bp_text_printf(t, " transpose_a");
        if (prog->flags & BRAID_TRANSPOSE_B) bp_text_printf(t, " transpose_b");
    } else if (kind == BRAID_KIND_WINDOW || kind == BRAID_KIND_CONV) {
        static const char *const par[5] = {"kernel", "strides", "dilations",
                                           "pads_begin", "pads_end"};
        for (int q = 0; q < 5; q++) {
            bp_text_printf(t, " %s=[", par[q]);
            for (int i = 0; i + 2 < prog->rank && i < 3; i++)
                bp_text_printf(t, "%s%lld", i ? "," : "",
                               (long long)prog->window[q][i]);
            bp_text_printf(t, "]");
        }
        if (prog->flags & BG_POOL_CEIL) bp_text_printf(t, " ceil_mode");
        if (prog->flags & BG_POOL_COUNT_PAD)
            bp_text_printf(t, " count_include_pad");
        if (prog->flags & BG_POOL_CHANNELS_LAST)
            bp_text_printf(t, " channels_last");
    }
}

/* One program instruction: "t3 = mul t1, t2". */
static void put_instr(plan_dot *d, const bp_program *prog, const bg_node *n,
                      const bp_instr *in, uint32_t k) {
    bp_text *t = &d->t;
    if (in->op == BP_INSTR_STORE) { /* "store t2 to in3 (%7)": no value */
        bp_text_printf(t, "store t%" PRIu32 " to in%" PRIu32, in->arg[0],
                       in->input);
        if (in->input < n->ninputs)
            bp_text_printf(t, " (%%%" PRIu32 ")", n->inputs[in->input]);
        bp_text_printf(t, "\\l");
        return;
    }
    bp_text_printf(t, "t%" PRIu32 " = ", k);
    if (in->op == BP_INSTR_LOAD) {
        bp_text_printf(t, "in%" PRIu32, in->input);
        if (in->input < n->ninputs)
            bp_text_printf(t, " (%%%" PRIu32 ")", n->inputs[in->input]);
    } else if (in->op == BP_INSTR_CONST) {
        bp_text_printf(t, "%.9g", in->value);
    } else if (in->op == BP_INSTR_GATHER) {
        bp_text_printf(t, "gather in%" PRIu32, in->input);
        if (in->input < n->ninputs)
            bp_text_printf(t, " (%%%" PRIu32 ")", n->inputs[in->input]);
        bp_text_printf(t, " at t%" PRIu32 " axis=%" PRIu32, in->arg[0],
                       in->axis);
    } else {
        int arity = 1;
        if ((unsigned)in->op < (unsigned)BRAID_OP_COUNT_)
            arity = bp_instr_arity(in); /* a conv's: 2 or 3 */
        if (arity < 1 || arity > 3) arity = 1;
        bp_text_printf(t, "%s", instr_name(in->op));
        for (int a = 0; a < arity; a++)
            bp_text_printf(t, "%s t%" PRIu32, a ? "," : "", in->arg[a]);
        if (in->op == BRAID_OP_CAST)
            bp_text_printf(t, " to %s", braid_dtype_name(in->dtype));
        if ((unsigned)in->op < (unsigned)BRAID_OP_COUNT_)
            put_instr_attrs(t, prog, in->op);
    }
    bp_text_printf(t, "\\l");
}

/* Fused nodes: a record "{head|instructions|place|outputs}". */
static bool fused_label(plan_dot *d, uint32_t id) {
    const bg_node *n = bg_node_at(d->p->res.graph, id);
    uint32_t pi = d->p->res.info[id].program;
    const bp_program *prog =
        pi < d->p->res.nprograms ? &d->p->res.programs[pi] : NULL;
    char type[160];
    bp_text *t = &d->t;
    char op[32];
    snprintf(op, sizeof op, "fused %s",
             prog ? bp_program_kind_name(prog->kind) : "");
    bp_text_printf(t, "{");
    put_head(d, id, op);
    bp_text_printf(t, "\\n%s", bg_type_str(n, type, sizeof type));
    if (n->name) {
        bp_text_printf(t, "\\n\"");
        bp_text_user(t, n->name, true);
        bp_text_printf(t, "\"");
    }
    bp_text_printf(t, "|");
    for (uint32_t k = 0; prog && prog->instr && k < prog->ninstr; k++)
        put_instr(d, prog, n, &prog->instr[k], k);
    if (!prog) bp_text_printf(t, "(no program)");
    bp_text_printf(t, "|");
    put_place(d, id);
    bool out = put_outputs(d, id, true);
    bp_text_printf(t, "}");
    return out;
}

/* ---- nodes, clusters, edges ---------------------------------------------- */

/* The class attribute: what the node is, for tools reading the DOT. */
static void node_class(const bg_node *n, const bp_node_info *in, bool output,
                       char *buf, size_t size) {
    const char *what = n->op == BRAID_OP_COPY    ? "copy"
                       : n->op == BRAID_OP_FUSED ? "fused"
                       : n->op == BRAID_OP_INPUT ? "input"
                                                 : "node";
    snprintf(buf, size, "%s%s%s", what, in->chunk ? " chunk" : "",
             output ? " output" : "");
}

static const char *node_shape(const bg_node *n) {
    if (n->op == BRAID_OP_COPY) return "cds";
    if (n->op == BRAID_OP_FUSED) return "record";
    if (n->op == BRAID_OP_INPUT) return "invhouse";
    if (n->op == BRAID_OP_VARIABLE) return "cylinder"; /* persistent bytes */
    if (bg_op(n->op)->kind == BRAID_KIND_SOURCE) return "ellipse";
    return "box";
}

static bool plan_node(plan_dot *d, uint32_t id) {
    const bp_plan *p = d->p;
    const bg_node *n = bg_node_at(p->res.graph, id);
    const bp_node_info *in = &p->res.info[id];
    Agraph_t *parent = in->queue < p->res.nqueues && d->clusters[in->queue]
                           ? d->clusters[in->queue]
                           : d->g;
    Agnode_t *an = d->nodes[id] = bp_dot_node(parent, "n", id);
    if (!an) return false;
    bp_text_reset(&d->t);
    bool output =
        n->op == BRAID_OP_FUSED ? fused_label(d, id) : plain_label(d, id);
    char cls[64];
    node_class(n, in, output, cls, sizeof cls);
    bool ok = bp_dot_set(an, "label", bp_text_str(&d->t)) &&
              bp_dot_set(an, "shape", node_shape(n)) &&
              bp_dot_set(an, "fillcolor", bp_dot_colour(in->device)) &&
              bp_dot_set(an, "class", cls);
    if (ok && in->chunk) ok = bp_dot_set(an, "style", "filled,bold");
    if (ok && output) ok = bp_dot_set(an, "peripheries", "2");
    return ok;
}

/* One cluster per queue that runs at least one node. */
static bool make_clusters(plan_dot *d) {
    const bp_plan *p = d->p;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        uint32_t q = p->res.info[id].queue;
        if (q >= p->res.nqueues || d->clusters[q]) continue;
        char name[32], label[64];
        snprintf(name, sizeof name, "cluster_q%" PRIu32, q);
        Agraph_t *sub = d->clusters[q] = agsubg(d->g, name, 1);
        if (!sub) return false;
        queue_label(&p->res.queues[q], label, sizeof label);
        if (!bp_dot_set(sub, "label", label) ||
            !bp_dot_set(sub, "style", "rounded") ||
            !bp_dot_set(sub, "color", "#606060") ||
            !bp_dot_set(sub, "class", "queue"))
            return false;
    }
    return true;
}

/* The devices' colours, as a cluster of one node per device. */
static bool make_legend(plan_dot *d) {
    Agraph_t *sub = agsubg(d->g, "cluster_legend", 1);
    if (!sub || !bp_dot_set(sub, "label", "devices") ||
        !bp_dot_set(sub, "style", "dashed") ||
        !bp_dot_set(sub, "class", "legend"))
        return false;
    for (uint32_t i = 0; i < d->p->in.devs.ndevices; i++) {
        char name[32];
        Agnode_t *n = bp_dot_node(sub, "legend", i);
        bp_device_str(d->p->in.devs.devices[i], name, sizeof name);
        if (!n || !bp_dot_set(n, "label", name) ||
            !bp_dot_set(n, "fillcolor",
                        bp_dot_colour(d->p->in.devs.devices[i])) ||
            !bp_dot_set(n, "class", "legend"))
            return false;
    }
    return true;
}

static bool data_edges(plan_dot *d, uint32_t id) {
    const bg_node *n = bg_node_at(d->p->res.graph, id);
    for (uint32_t k = 0; k < n->ninputs; k++) {
        if (n->inputs[k] >= id) continue; /* not topological: skip */
        Agedge_t *e = bp_dot_edge(d->g, d->nodes[n->inputs[k]], d->nodes[id]);
        if (!e || !bp_dot_set(e, "class", "data")) return false;
    }
    return true;
}

/* The data edge after → before, if the graph has one. */
static Agedge_t *data_edge(plan_dot *d, uint32_t after, uint32_t before) {
    const bg_node *n = bg_node_at(d->p->res.graph, before);
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (n->inputs[k] == after)
            return agedge(d->g, d->nodes[after], d->nodes[before], NULL, 0);
    return NULL;
}

/* Events: a data edge that an event synchronises is drawn dashed red
 * (class "data event"); an event with no data edge under it gets its own
 * dashed red edge (class "event") that does not constrain the layout;
 * reuse events are dotted orange edges labelled "reuse" (class
 * "reuse-event"). */
static bool event_edges(plan_dot *d) {
    const bp_plan *p = d->p;
    for (uint32_t i = 0; i < p->res.nevents; i++) {
        const bp_event *ev = &p->res.events[i];
        if (ev->after >= p->res.graph->nnodes ||
            ev->before >= p->res.graph->nnodes)
            continue;
        Agedge_t *e = ev->reuse ? NULL : data_edge(d, ev->after, ev->before);
        bool ok = true;
        if (e) {
            ok = bp_dot_set(e, "class", "data event");
        } else {
            e = bp_dot_edge(d->g, d->nodes[ev->after], d->nodes[ev->before]);
            ok = e && bp_dot_set(e, "constraint", "false") &&
                 bp_dot_set(e, "class", ev->reuse ? "reuse-event" : "event");
        }
        ok = ok && bp_dot_set(e, "style", ev->reuse ? "dotted" : "dashed") &&
             bp_dot_set(e, "color", ev->reuse ? "darkorange" : "red");
        if (ok && ev->reuse) ok = bp_dot_set(e, "label", "reuse");
        if (!ok) return false;
    }
    return true;
}

/* The root label: devices, counts, and one line per arena. */
static bool title(plan_dot *d) {
    const bp_plan *p = d->p;
    braid_plan_summary s;
    braid_plan_summary_get(p, &s);
    bp_text *t = &d->t;
    bp_text_reset(t);
    bp_text_printf(t, "braid plan for ");
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++) {
        char dev[32];
        bp_text_printf(t, "%s%s", i ? "," : "",
                       bp_device_str(p->in.devs.devices[i], dev, sizeof dev));
    }
    bp_text_printf(t,
                   ": %" PRIu32 " node%s, %" PRIu32 " fused, %" PRIu32
                   " cop%s, %" PRIu32 " queue%s, %" PRIu32 " event%s\\n",
                   s.nodes, s.nodes == 1 ? "" : "s", s.fused_kernels, s.copies,
                   s.copies == 1 ? "y" : "ies", s.queues,
                   s.queues == 1 ? "" : "s", s.events,
                   s.events == 1 ? "" : "s");
    for (uint32_t i = 0; i < p->res.narenas; i++) {
        const bp_arena *a = &p->res.arenas[i];
        char dev[32], size[32], lb[32];
        bp_text_printf(t, "arena %" PRIu32 ": %s %s, %s (lower bound %s)\\l", i,
                       bp_device_str(a->device, dev, sizeof dev),
                       a->kind == BP_ARENA_PINNED ? "pinned" : "device",
                       bp_dot_bytes(a->bytes, size, sizeof size),
                       bp_dot_bytes(a->lower_bound, lb, sizeof lb));
    }
    /* Set last: a graph attribute set on the root becomes the default of
     * subgraphs created after it. */
    return bp_dot_set(d->g, "label", bp_text_str(t)) &&
           bp_dot_set(d->g, "labelloc", "t") &&
           bp_dot_set(d->g, "fontname", "Helvetica");
}

static uint32_t plan_output_node(const void *outs, uint32_t i) {
    return ((const bp_plan *)outs)->res.outputs[i].node;
}

bool bp_dot_build_plan(const bp_plan *p, Agraph_t *g) {
    plan_dot d = {.p = p, .g = g};
    uint32_t n = p->res.graph->nnodes;
    d.clusters =
        calloc(p->res.nqueues ? p->res.nqueues : 1, sizeof *d.clusters);
    d.nodes = calloc(n ? n : 1, sizeof *d.nodes);
    bool ok =
        d.clusters && d.nodes &&
        bp_dot_outs_init(&d.outs, n, p->res.noutputs, plan_output_node, p) &&
        make_legend(&d) && make_clusters(&d);
    for (uint32_t id = 0; ok && id < n; id++)
        ok = plan_node(&d, id);
    for (uint32_t id = 0; ok && id < n; id++)
        ok = data_edges(&d, id);
    ok = ok && event_edges(&d) && title(&d);
    bp_text_free(&d.t);
    bp_dot_outs_free(&d.outs);
    free(d.clusters);
    free(d.nodes);
    return ok;
}
