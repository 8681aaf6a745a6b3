/* passes/dot.c — DOT views through libcgraph: the public entry points
 * (braid_graph_to_dot, braid_plan_to_dot), the graph view, and the helpers
 * passes/dot_plan.c shares (passes/dot.h). */
#define _POSIX_C_SOURCE 200809L

#include "graph/index.h"
#include "graph/window.h"
#include "passes/dot.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* libcgraph keeps global state (string dictionaries, error level) that is
 * not thread-safe; every use of it in braid is under this lock. */
static pthread_mutex_t dot_lock = PTHREAD_MUTEX_INITIALIZER;

/* A new root digraph called name, with braid's ID discipline. */
static Agraph_t *open_graph(const char *name) {
    return agopen((char *)name, Agdirected, bp_dot_disc());
}

/* ---- label text ---------------------------------------------------------- */

/* Makes room for n more bytes plus the NUL. */
static bool text_reserve(bp_text *t, size_t n) {
    if (t->failed) return false;
    if (t->len + n + 1 <= t->cap) return true;
    size_t cap = t->cap ? t->cap : 128;
    while (cap < t->len + n + 1) {
        if (cap > SIZE_MAX / 2) {
            t->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *s = realloc(t->s, cap);
    if (!s) {
        t->failed = true;
        return false;
    }
    t->s = s;
    t->cap = cap;
    return true;
}

void bp_text_printf(bp_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if (!text_reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* True when s is well-formed UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF): Graphviz then shows it as written. */
static bool valid_utf8(const unsigned char *s) {
    while (*s) {
        unsigned c = *s++;
        if (c < 0x80) continue;
        int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
        if (more < 0 || c > 0xf4) return false;
        uint32_t cp = c & (0x3fu >> more);
        for (int k = 0; k < more; k++, s++) {
            if ((*s & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (*s & 0x3fu);
        }
        if ((more == 2 && cp < 0x800) || (more == 3 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return false;
    }
    return true;
}

void bp_text_user(bp_text *t, const char *s, bool record) {
    if (!s) return;
    bool utf8 = valid_utf8((const unsigned char *)s);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool special = c == '\\' || (record && strchr("{}|<>", c) != NULL);
        bool shown = c >= 0x20 && c != 0x7f && (c < 0x80 || utf8);
        if (!text_reserve(t, 2)) return;
        if (special) t->s[t->len++] = '\\';
        t->s[t->len++] = shown ? (char)c : '?';
        t->s[t->len] = '\0';
    }
}

const char *bp_text_str(const bp_text *t) {
    if (t->failed) return NULL;
    return t->s ? t->s : "";
}

void bp_text_reset(bp_text *t) {
    t->len = 0;
    if (t->s) t->s[0] = '\0';
}

void bp_text_free(bp_text *t) {
    free(t->s);
    *t = (bp_text){0};
}

/* ---- libcgraph helpers --------------------------------------------------- */

bool bp_dot_set(void *obj, const char *name, const char *value) {
    if (!value) return false;
    /* libcgraph's API predates const; it copies both strings. */
    return agsafeset(obj, (char *)name, (char *)value, "") == 0;
}

Agnode_t *bp_dot_node(Agraph_t *parent, const char *prefix, uint32_t id) {
    char name[48];
    snprintf(name, sizeof name, "%s%" PRIu32, prefix, id);
    return agnode(parent, name, 1);
}

Agedge_t *bp_dot_edge(Agraph_t *g, Agnode_t *t, Agnode_t *h) {
    if (!t || !h) return NULL;
    return agedge(g, t, h, NULL, 1);
}

const char *bp_dot_colour(bp_device d) {
    static const char *const cuda[8] = {"#c9ecc9", "#ffd9a8", "#f4c9f0",
                                        "#fff2a8", "#d6cff5", "#bfeeea",
                                        "#f6cfc4", "#dcdcdc"};
    if (d.kind == BP_DEVICE_CPU) return "#cfe0ff";
    return cuda[(uint32_t)d.index % 8u];
}

const char *bp_dot_bytes(uint64_t bytes, char *buf, size_t size) {
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.2f %s", v, unit[u]);
    return buf;
}

/* Declares every attribute the views set, with Graphviz's own defaults,
 * so objects that do not set one write nothing for it. */
static bool declare_attrs(Agraph_t *g) {
    static const char *const node[][2] = {
        {"label", "\\N"},       {"shape", "box"},          {"style", "filled"},
        {"fillcolor", "white"}, {"color", "black"},        {"peripheries", "1"},
        {"class", ""},          {"fontname", "Helvetica"}, {"fontsize", "10"}};
    static const char *const edge[][2] = {
        {"label", ""},    {"style", "solid"},     {"color", "black"},
        {"class", ""},    {"constraint", "true"}, {"fontname", "Helvetica"},
        {"fontsize", "9"}};
    static const char *const graph[][2] = {{"label", ""},
                                           {"style", ""},
                                           {"color", "black"},
                                           {"fillcolor", ""},
                                           {"class", ""}};
    bool ok = true;
    for (size_t i = 0; i < sizeof node / sizeof node[0]; i++)
        ok = ok &&
             agattr(g, AGNODE, (char *)node[i][0], (char *)node[i][1]) != NULL;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        ok = ok &&
             agattr(g, AGEDGE, (char *)edge[i][0], (char *)edge[i][1]) != NULL;
    for (size_t i = 0; i < sizeof graph / sizeof graph[0]; i++)
        ok = ok && agattr(g, AGRAPH, (char *)graph[i][0],
                          (char *)graph[i][1]) != NULL;
    return ok;
}

/* Writes g to out and closes it. */
static braid_status write_graph(Agraph_t *g, FILE *out, const char *fn) {
    errno = 0;
    int rc = agwrite(g, out);
    int err = errno;
    agclose(g);
    if (rc != 0 || fflush(out) != 0 || ferror(out)) {
        if (!err) err = errno;
        return bg_set_last_error(BRAID_ERR_IO,
                                 "%s: writing the DOT output "
                                 "failed%s%s",
                                 fn, err ? ": " : "", err ? strerror(err) : "");
    }
    return BRAID_OK;
}

/* ---- graph view ---------------------------------------------------------- */

/* Fill colour for a placement hint: the device's colour when the hint names
 * one ("cpu", "cuda:N"), white otherwise. */
static const char *hint_colour(const char *hint) {
    bp_device d;
    if (!hint || !bp_device_parse(hint, strlen(hint), &d)) return "white";
    return bp_dot_colour(d);
}

/* Appends "[0,2]" listing the set bits of an axes mask. */
static void put_axes(bp_text *t, uint8_t axes) {
    bp_text_printf(t, "\\naxes=[");
    const char *sep = "";
    for (int k = 0; k < 8; k++)
        if (axes & (1u << k)) {
            bp_text_printf(t, "%s%d", sep, k);
            sep = ",";
        }
    bp_text_printf(t, "]");
}

/* Pools: "k3x3 s2x2 p1,1,1,1" (stride and dilation when not all 1, then
 * ceil / count_pad when set); resize: its mode and coordinate
 * transformation. */
static void put_window_attrs(bp_text *t, const bg_node *n) {
    unsigned f = n->attr.flags;
    if (n->op == BRAID_OP_RESIZE) {
        bp_text_printf(t, "\\n%s %s", bg_resize_name(0, BG_RESIZE_MODE(f)),
                       bg_resize_name(1, BG_RESIZE_COORD(f)));
        return;
    }
    static const char *const lead[5] = {"\\nk", " s", " d", " p", ","};
    int k = n->rank - 2;
    for (int q = 0; q < 5; q++) {
        bool ones = true;
        for (int i = 0; i < k; i++)
            ones &= bg_window_param(&n->attr, q, i) == 1;
        if ((q == 1 || q == 2) && ones) continue; /* the default 1 */
        bp_text_printf(t, "%s", lead[q]);
        for (int i = 0; i < k; i++)
            bp_text_printf(t, "%s%lld", i ? (q >= 3 ? "," : "x") : "",
                           (long long)bg_window_param(&n->attr, q, i));
    }
    if (f & BG_POOL_CEIL) bp_text_printf(t, " ceil");
    if (f & BG_POOL_COUNT_PAD) bp_text_printf(t, " count_pad");
    if (f & BG_POOL_CHANNELS_LAST) bp_text_printf(t, " channels_last");
}

/* One line of the attributes that matter for reading the graph, if the op
 * has any. */
static void put_attrs(bp_text *t, const bg_node *n) {
    const bg_attrs *a = &n->attr;
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_REDUCE:
        put_axes(t, a->axes);
        bp_text_printf(t, "%s", (a->flags & BG_KEEPDIMS) ? " keepdims" : "");
        return;
    case BRAID_KIND_WINDOW:
        put_window_attrs(t, n);
        return;
    case BRAID_KIND_MATMUL:
        if (a->flags & (BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B))
            bp_text_printf(t, "\\n%s%s",
                           (a->flags & BRAID_TRANSPOSE_A) ? "transpose_a " : "",
                           (a->flags & BRAID_TRANSPOSE_B) ? "transpose_b" : "");
        return;
    case BRAID_KIND_INDEX: /* gather, scatter: the form, axis, reduction */
        bp_text_printf(t, "\\n%s %s=%d", bg_index_mode_name(bg_index_mode_of(a)),
                       bg_index_mode_of(a) == BG_INDEX_ND ? "batch_dims"
                                                          : "axis",
                       (int)a->axis);
        if (n->op == BRAID_OP_SCATTER)
            bp_text_printf(t, " %s", bg_scatter_red_name(bg_scatter_red_of(a)));
        return;
    case BRAID_KIND_CONV: /* conv ops: stride, dilation, pads per axis */
        bp_text_printf(t, "\\nstride=%lld,%lld,%lld dil=%lld,%lld,%lld",
                       (long long)a->step[0], (long long)a->step[1],
                       (long long)a->step[2], (long long)a->step[3],
                       (long long)a->step[4], (long long)a->step[5]);
        bp_text_printf(t, "\\npads=%lld,%lld,%lld,%lld,%lld,%lld groups=%d",
                       (long long)a->start[0], (long long)a->start[1],
                       (long long)a->start[2], (long long)a->start[3],
                       (long long)a->start[4], (long long)a->start[5],
                       (int)a->axis);
        if (a->flags & BG_CONV_CHANNELS_LAST)
            bp_text_printf(t, " channels_last");
        return;
    case BRAID_KIND_ATTENTION:
        bp_text_printf(t, "\\nscale=%g%s", a->value[0],
                       (a->flags & BRAID_ATTENTION_CAUSAL) ? " causal" : "");
        return;
    case BRAID_KIND_AXIS: /* argmax, argmin, topk_*, cumsum */
        bp_text_printf(t, "\\naxis=%d", (int)a->axis);
        if (n->op == BRAID_OP_TOPK_VALUES || n->op == BRAID_OP_TOPK_INDICES)
            bp_text_printf(t, " k=%" PRIu64 "%s", a->seed,
                           (a->flags & BG_SMALLEST) ? " smallest" : "");
        bp_text_printf(t, "%s%s%s%s",
                       (a->flags & BG_KEEPDIMS) ? " keepdims" : "",
                       (a->flags & BG_SELECT_LAST) ? " select_last" : "",
                       (a->flags & BG_EXCLUSIVE) ? " exclusive" : "",
                       (a->flags & BG_REVERSE) ? " reverse" : "");
        return;
    default:
        break;
    }
    if (n->op == BRAID_OP_FILL)
        bp_text_printf(t, "\\nvalue=%.9g", a->value[0]);
    else if (n->op == BRAID_OP_IOTA || n->op == BRAID_OP_CONCAT)
        bp_text_printf(t, "\\naxis=%d", (int)a->axis);
    else if (n->op == BRAID_OP_RANDOM_UNIFORM ||
             n->op == BRAID_OP_RANDOM_NORMAL)
        bp_text_printf(t, "\\nseed=%" PRIu64, a->seed);
    else if (n->op == BRAID_OP_VARIABLE) /* state across runs */
        bp_text_printf(t, "\\ninit=%s", bg_op(a->init)->name);
}

bool bp_dot_outs_init(bp_dot_outs *o, uint32_t nnodes, uint32_t nout,
                      uint32_t (*node_of)(const void *outs, uint32_t i),
                      const void *outs) {
    o->head = malloc((nnodes ? nnodes : 1) * sizeof *o->head);
    o->next = malloc((nout ? nout : 1) * sizeof *o->next);
    if (!o->head || !o->next) return false;
    for (uint32_t id = 0; id < nnodes; id++)
        o->head[id] = BG_NONE;
    for (uint32_t i = nout; i-- > 0;) { /* pushed in front: first stays first */
        uint32_t id = node_of(outs, i);
        o->next[i] = id < nnodes ? o->head[id] : BG_NONE;
        if (id < nnodes) o->head[id] = i;
    }
    return true;
}

void bp_dot_outs_free(bp_dot_outs *o) {
    free(o->head);
    free(o->next);
    o->head = o->next = NULL;
}

static uint32_t graph_output_node(const void *outs, uint32_t i) {
    return ((const braid_graph *)outs)->outputs[i].node;
}

/* The label of graph node id: "%id op", type, attributes, name, hint and
 * the outputs it feeds. Sets *is_output. */
static void graph_label(bp_text *t, const braid_graph *g, uint32_t id,
                        const bp_dot_outs *outs, bool *is_output) {
    const bg_node *n = bg_node_at(g, id);
    char type[160];
    bp_text_printf(t, "%%%" PRIu32 " %s\\n%s", id, bg_op(n->op)->name,
                   bg_type_str(n, type, sizeof type));
    put_attrs(t, n);
    if (n->name) {
        bp_text_printf(t, "\\n\"");
        bp_text_user(t, n->name, false);
        bp_text_printf(t, "\"");
    }
    if (n->device) {
        bp_text_printf(t, "\\ndevice=");
        bp_text_user(t, n->device, false);
    }
    *is_output = false;
    for (uint32_t i = outs->head[id]; i != BG_NONE; i = outs->next[i]) {
        bp_text_printf(t, "\\noutput \"");
        bp_text_user(t, g->outputs[i].name, false);
        bp_text_printf(t, "\"");
        *is_output = true;
    }
}

static bool graph_node(Agraph_t *ag, const braid_graph *g, uint32_t id,
                       Agnode_t **nodes, const bp_dot_outs *outs, bp_text *t) {
    const bg_node *n = bg_node_at(g, id);
    Agnode_t *an = nodes[id] = bp_dot_node(ag, "n", id);
    if (!an) return false;
    bool is_output = false;
    bp_text_reset(t);
    graph_label(t, g, id, outs, &is_output);
    bool source = bg_op(n->op)->kind == BRAID_KIND_SOURCE;
    const char *shape = n->op == BRAID_OP_INPUT      ? "invhouse"
                        : n->op == BRAID_OP_VARIABLE ? "cylinder"
                        : source                     ? "ellipse"
                                                     : "box";
    bool ok = bp_dot_set(an, "label", bp_text_str(t)) &&
              bp_dot_set(an, "shape", shape) &&
              bp_dot_set(an, "fillcolor", hint_colour(n->device)) &&
              bp_dot_set(an, "class",
                         n->op == BRAID_OP_INPUT ? "input"
                         : is_output             ? "output"
                                                 : "node");
    if (ok && is_output) ok = bp_dot_set(an, "peripheries", "2");
    for (uint32_t k = 0; ok && k < n->ninputs; k++) {
        Agedge_t *e = bp_dot_edge(ag, nodes[n->inputs[k]], an);
        char idx[16];
        snprintf(idx, sizeof idx, "%" PRIu32, k);
        ok = e && (n->ninputs < 2 || bp_dot_set(e, "label", idx));
    }
    return ok;
}

static bool build_graph(Agraph_t *ag, const braid_graph *g) {
    Agnode_t **nodes = calloc(g->nnodes ? g->nnodes : 1, sizeof *nodes);
    bp_text t = {0};
    bp_dot_outs outs = {0};
    bool ok = nodes != NULL && bp_dot_outs_init(&outs, g->nnodes, g->noutputs,
                                                graph_output_node, g);
    for (uint32_t id = 0; ok && id < g->nnodes; id++)
        ok = graph_node(ag, g, id, nodes, &outs, &t);
    bp_dot_outs_free(&outs);
    uint32_t nin = 0;
    for (uint32_t id = 0; id < g->nnodes; id++)
        nin += g->nodes[id].op == BRAID_OP_INPUT;
    bp_text_reset(&t);
    bp_text_printf(&t,
                   "braid graph: %" PRIu32 " node%s, %" PRIu32
                   " input%s, %" PRIu32 " output%s",
                   g->nnodes, g->nnodes == 1 ? "" : "s", nin,
                   nin == 1 ? "" : "s", g->noutputs,
                   g->noutputs == 1 ? "" : "s");
    ok = ok && bp_dot_set(ag, "label", bp_text_str(&t)) &&
         bp_dot_set(ag, "labelloc", "t") &&
         bp_dot_set(ag, "fontname", "Helvetica");
    bp_text_free(&t);
    free(nodes);
    return ok;
}

/* ---- public entry points ------------------------------------------------- */

braid_status braid_graph_to_dot(const braid_graph *g, FILE *out) {
    static const char fn[] = "braid_graph_to_dot";
    if (!g || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: %s is NULL",
                                 fn, !g ? "graph" : "out");
    if (g->status != BRAID_OK)
        return bg_set_last_error(g->status, "%s: the graph has an error: %s",
                                 fn, g->error);
    pthread_mutex_lock(&dot_lock);
    braid_status s = BRAID_OK;
    Agraph_t *ag = open_graph("braid_graph");
    if (!ag || !declare_attrs(ag) || !build_graph(ag, g)) {
        if (ag) agclose(ag);
        s = bg_set_last_error(
            BRAID_ERR_OUT_OF_MEMORY,
            "%s: out of memory building the DOT graph (%" PRIu32 " nodes)", fn,
            g->nnodes);
    } else {
        s = write_graph(ag, out, fn);
    }
    pthread_mutex_unlock(&dot_lock);
    return s;
}

/* The checks a plan must pass before its fields are trusted as indices:
 * braid_compile's plans always do; this keeps a stray or half-built plan
 * from crashing the exporter. */
static braid_status check_plan(const bp_plan *p, const char *fn) {
    if (!p->res.graph ||
        (p->res.graph->nnodes &&
         (!p->res.info || p->res.ninfo < p->res.graph->nnodes)))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: the plan has no compiled graph", fn);
    if ((p->res.nqueues && !p->res.queues) ||
        (p->res.nevents && !p->res.events) ||
        (p->res.narenas && !p->res.arenas) ||
        (p->res.nprograms && !p->res.programs) ||
        p->in.devs.ndevices > BP_MAX_DEVICES)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: the plan's tables are inconsistent", fn);
    return BRAID_OK;
}

braid_status braid_plan_to_dot(const braid_plan *p, FILE *out) {
    static const char fn[] = "braid_plan_to_dot";
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: %s is NULL",
                                 fn, !p ? "plan" : "out");
    braid_status s = check_plan(p, fn);
    if (s != BRAID_OK) return s;
    pthread_mutex_lock(&dot_lock);
    Agraph_t *ag = open_graph("braid_plan");
    if (!ag || !declare_attrs(ag) || !bp_dot_build_plan(p, ag)) {
        if (ag) agclose(ag);
        s = bg_set_last_error(
            BRAID_ERR_OUT_OF_MEMORY,
            "%s: out of memory building the DOT graph (%" PRIu32 " nodes)", fn,
            p->res.graph->nnodes);
    } else {
        s = write_graph(ag, out, fn);
    }
    pthread_mutex_unlock(&dot_lock);
    return s;
}
