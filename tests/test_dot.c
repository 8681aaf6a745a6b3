/* tests/test_dot.c — the DOT views (braid_graph_to_dot, braid_plan_to_dot)
 * and the plan summary: output read back with libcgraph and compared with
 * the graph / plan it came from. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <cgraph.h>
#include <inttypes.h>
#include <pthread.h>

#include "passes/plan.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

/* ---- helpers ------------------------------------------------------------- */

/* The DOT text of g / p as a malloc'd string; asserts success. */
static char *graph_dot(const braid_graph *g) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    braid_status s = braid_graph_to_dot(g, f);
    fclose(f);
    cr_assert_eq(s, BRAID_OK, "braid_graph_to_dot: %s", braid_last_error());
    return buf;
}

static char *plan_dot(const braid_plan *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    braid_status s = braid_plan_to_dot(p, f);
    fclose(f);
    cr_assert_eq(s, BRAID_OK, "braid_plan_to_dot: %s", braid_last_error());
    return buf;
}

/* Parses DOT text with libcgraph; asserts it parses. */
static Agraph_t *parse(const char *text) {
    Agraph_t *g = agmemread(text);
    cr_assert(g, "libcgraph cannot read the DOT output:\n%s", text);
    return g;
}

/* Attribute value ("" when unset). */
static const char *attr(void *obj, const char *name) {
    char *v = agget(obj, (char *)name);
    return v ? v : "";
}

/* The node called "<prefix><id>"; asserts it exists. */
static Agnode_t *node(Agraph_t *g, const char *prefix, uint32_t id) {
    char name[32];
    snprintf(name, sizeof name, "%s%" PRIu32, prefix, id);
    Agnode_t *n = agnode(g, name, 0);
    cr_assert(n, "no node %s", name);
    return n;
}

static bool has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return true;
    return false;
}

/* Nodes of g whose attribute `name` has word `value` in it. */
static int count_nodes(Agraph_t *g, const char *name, const char *value) {
    int count = 0;
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
        count += has_word(attr(n, name), value);
    return count;
}

static int count_edges(Agraph_t *g, const char *name, const char *value) {
    int count = 0;
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
        for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e))
            count += has_word(attr(e, name), value);
    return count;
}

/* An edge t → h whose `name` attribute has word value; NULL if none. */
static Agedge_t *find_edge(Agraph_t *g, Agnode_t *t, Agnode_t *h,
                           const char *name, const char *value) {
    for (Agedge_t *e = agfstout(g, t); e; e = agnxtout(g, e))
        if (aghead(e) == h && has_word(attr(e, name), value)) return e;
    return NULL;
}

static int count_clusters(Agraph_t *g) {
    int count = 0;
    for (Agraph_t *s = agfstsubg(g); s; s = agnxtsubg(s))
        count += strncmp(agnameof(s), "cluster", 7) == 0;
    return count;
}

static Agraph_t *cluster_labelled(Agraph_t *g, const char *label) {
    for (Agraph_t *s = agfstsubg(g); s; s = agnxtsubg(s))
        if (!strcmp(attr(s, "label"), label)) return s;
    return NULL;
}

/* Every .graph file of examples/graphs, bench/ and bench/graphs/ (those
 * that exist), NULL-terminated. */
static char **example_graphs(void) {
    static const char *const dirs[] = {BRAID_SOURCE_DIR "/examples/graphs",
                                       BRAID_SOURCE_DIR "/bench",
                                       BRAID_SOURCE_DIR "/bench/graphs"};
    char **list = calloc(256, sizeof *list);
    size_t n = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        DIR *dir = opendir(dirs[d]);
        for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
            size_t len = strlen(e->d_name);
            if (len > 6 && !strcmp(e->d_name + len - 6, ".graph") && n < 255)
                list[n++] = tf_path(dirs[d], e->d_name);
        }
        if (dir) closedir(dir);
    }
    cr_assert_geq(n, 4, "expected the example graphs");
    return list;
}

static void free_list(char **list) {
    for (size_t i = 0; list[i]; i++)
        free(list[i]);
    free(list);
}

static braid_plan *compile(const braid_graph *g, const char *devices) {
    braid_compile_options o = ts_compile_options(devices, 0);
    return ts_compile_ok(g, &o);
}

/* ---- graph view ---------------------------------------------------------- */

/* Node and edge counts, labels, input and output marks of one graph. */
static void check_graph_view(const braid_graph *g, const char *what) {
    char *text = graph_dot(g);
    Agraph_t *ag = parse(text);
    cr_assert_eq((uint32_t)agnnodes(ag), g->nnodes, "%s", what);
    uint32_t nedges = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = bg_node_at(g, id);
        nedges += n->ninputs;
        char head[64];
        snprintf(head, sizeof head, "%%%u %s\\n", (unsigned)id,
                 bg_op(n->op)->name);
        Agnode_t *an = node(ag, "n", id);
        cr_assert(!strncmp(attr(an, "label"), head, strlen(head)),
                  "%s: node %u label '%s'", what, (unsigned)id,
                  attr(an, "label"));
        if (n->op == BRAID_OP_INPUT)
            cr_assert_str_eq(attr(an, "shape"), "invhouse");
        for (uint32_t k = 0; k < n->ninputs; k++)
            cr_assert(agedge(ag, node(ag, "n", n->inputs[k]), an, NULL, 0),
                      "%s: no edge into %u", what, (unsigned)id);
    }
    cr_assert_eq((uint32_t)agnedges(ag), nedges, "%s", what);
    for (uint32_t i = 0; i < g->noutputs; i++) {
        Agnode_t *an = node(ag, "n", g->outputs[i].node);
        cr_assert_str_eq(attr(an, "peripheries"), "2", "%s", what);
        char mark[160];
        snprintf(mark, sizeof mark, "output \"%s\"", g->outputs[i].name);
        cr_assert(strstr(attr(an, "label"), mark), "%s: %s", what, mark);
    }
    agclose(ag);
    free(text);
}

Test(dot, graph_view_of_every_example_graph) {
    char **files = example_graphs();
    for (size_t i = 0; files[i]; i++) {
        braid_graph *g = braid_graph_load(files[i], NULL);
        cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s: %s", files[i],
                     braid_graph_error(g));
        check_graph_view(g, files[i]);
        braid_graph_free(g);
    }
    free_list(files);
}

Test(dot, graph_view_of_random_graphs) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.device_hints = true;
    o.mixed_dtypes = true;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        braid_graph *g = ts_random_graph(seed, &o);
        char what[32];
        snprintf(what, sizeof what, "random graph %llu",
                 (unsigned long long)seed);
        check_graph_view(g, what);
        braid_graph_free(g);
    }
}

/* Names with quotes, backslashes, record syntax and UTF-8 survive. */
Test(dot, graph_view_escapes_user_text) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t dims[1] = {4};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, dims);
    braid_tensor y = braid_exp(g, x);
    cr_assert_eq(braid_set_name(g, y, "a\"b\\n{c}|<d> \xc3\xa9t\xc3\xa9"),
                 BRAID_OK);
    cr_assert_eq(braid_set_device(g, y, "cuda:0"), BRAID_OK);
    cr_assert_eq(braid_output(g, "o\"ut\\", y), BRAID_OK);
    char *text = graph_dot(g);
    Agraph_t *ag = parse(text);
    const char *label = attr(node(ag, "n", 1), "label");
    /* The backslash is doubled so Graphviz does not read "\n" as a line
     * break; the quote comes back as written. */
    cr_assert(strstr(label, "a\"b\\\\n{c}|<d> \xc3\xa9t\xc3\xa9"), "%s", label);
    cr_assert(strstr(label, "device=cuda:0"), "%s", label);
    cr_assert(strstr(label, "output \"o\"ut\\\\\""), "%s", label);
    agclose(ag);
    free(text);
    braid_graph_free(g);
}

Test(dot, graph_view_errors) {
    cr_assert_eq(braid_graph_to_dot(NULL, stdout), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "braid_graph_to_dot"));
    braid_graph *g = braid_graph_new(NULL);
    int64_t dims[1] = {4};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, dims);
    cr_assert_eq(braid_graph_to_dot(g, NULL), BRAID_ERR_INVALID_ARGUMENT);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        cr_assert_eq(braid_graph_to_dot(g, full), BRAID_ERR_IO);
        cr_assert(strstr(braid_last_error(), "writing the DOT output failed"),
                  "%s", braid_last_error());
        fclose(full);
    }
    braid_matmul(g, x, x, 0); /* rank 1: records an error on g */
    cr_assert_neq(braid_graph_to_dot(g, stdout), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "has an error"), "%s",
              braid_last_error());
    braid_graph_free(g);
}

/* ---- a hand-made cpu,cuda:0 plan ----------------------------------------- */

/* %0 x input (cpu) -> %1 h2d copy -> %2 fused exp*2 (compute 0)
 *                                -> %3 relu (compute 1)
 * %2, %3 -> %4 add (compute 0) -> %5 reshape (view of %4)
 *        -> %6 d2h copy (chunk) = output "y"
 *
 * Built field by field so the view is tested independently of the passes. */

static bp_plan *hand_plan(void) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d1[1] = {256}, d2[2] = {16, 16};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, d1);
    braid_tensor c = braid_neg(g, x);
    braid_tensor f = braid_exp(g, c);
    braid_tensor r = braid_relu(g, c);
    braid_tensor s = braid_add(g, f, r);
    braid_tensor v = braid_reshape(g, s, 2, d2);
    braid_tensor o = braid_neg(g, v);
    cr_assert_eq(braid_output(g, "y", o), BRAID_OK);
    cr_assert_eq(braid_set_name(g, f, "f{1}|<p>"), BRAID_OK);
    g->nodes[c.id].op = BRAID_OP_COPY;
    g->nodes[f.id].op = BRAID_OP_FUSED;
    g->nodes[o.id].op = BRAID_OP_COPY;

    bp_plan *p = calloc(1, sizeof *p);
    bp_device cpu = {BP_DEVICE_CPU, 0}, gpu = {BP_DEVICE_CUDA, 0};
    p->res.graph = g;
    p->in.devs.ndevices = 2;
    p->in.devs.devices[0] = cpu;
    p->in.devs.devices[1] = gpu;
    p->res.nqueues = 6;
    p->res.queues = calloc(6, sizeof *p->res.queues);
    p->res.queues[0] = (bp_queue){.kind = BP_QUEUE_CPU, .device = cpu};
    p->res.queues[1] = (bp_queue){.kind = BP_QUEUE_COMPUTE, .device = gpu};
    p->res.queues[2] =
        (bp_queue){.kind = BP_QUEUE_COMPUTE, .device = gpu, .index = 1};
    p->res.queues[3] = (bp_queue){.kind = BP_QUEUE_H2D, .device = gpu};
    p->res.queues[4] = (bp_queue){.kind = BP_QUEUE_D2H, .device = gpu};
    p->res.queues[5] =
        (bp_queue){.kind = BP_QUEUE_D2D, .device = gpu}; /* runs nothing */

    p->res.ninfo = 7;
    p->res.info = calloc(7, sizeof *p->res.info);
    static const struct {
        int gpu;
        uint32_t queue, storage, arena, base;
        uint64_t offset;
    } rows[7] = {
        {0, 0, BP_STORAGE_INPUT, 0, 0, 0},
        {1, 3, BP_STORAGE_ARENA, 2, 0, 0},
        {1, 1, BP_STORAGE_ARENA, 2, 0, 1024},
        {1, 2, BP_STORAGE_ARENA, 2, 0, 2048},
        {1, 1, BP_STORAGE_ARENA, 2, 0, 4096},
        {1, 1, BP_STORAGE_VIEW, 0, 4, 0},
        {0, 4, BP_STORAGE_ARENA, 1, 0, 0},
    };
    p->res.nschedule = 7;
    p->res.schedule = calloc(7, sizeof *p->res.schedule);
    for (uint32_t id = 0; id < 7; id++) {
        bp_node_info *in = &p->res.info[id];
        in->device = rows[id].gpu ? gpu : cpu;
        in->queue = rows[id].queue;
        in->program = id == f.id ? 0 : BG_NONE;
        in->order = id;
        in->origin = id;
        in->place = (bp_tensor_place){.storage = (bp_storage)rows[id].storage,
                                      .arena = rows[id].arena,
                                      .base = rows[id].base,
                                      .offset = rows[id].offset,
                                      .bytes = 1024};
        p->res.schedule[id] = id;
    }
    p->res.info[o.id].chunk = true;

    p->res.nevents = 5;
    p->res.events = calloc(5, sizeof *p->res.events);
    p->res.events[0] = (bp_event){.after = 1, .before = 2};
    p->res.events[1] = (bp_event){.after = 1, .before = 3};
    p->res.events[2] = (bp_event){.after = 3, .before = 4};
    p->res.events[3] = (bp_event){.after = 5, .before = 6};
    p->res.events[4] = (bp_event){.after = 2, .before = 6, .reuse = true};

    p->res.narenas = 3;
    p->res.arenas = calloc(3, sizeof *p->res.arenas);
    p->res.arenas[0] = (bp_arena){.kind = BP_ARENA_DEVICE, .device = cpu};
    p->res.arenas[1] = (bp_arena){.kind = BP_ARENA_PINNED,
                                  .device = cpu,
                                  .bytes = 1024,
                                  .lower_bound = 1024};
    p->res.arenas[2] = (bp_arena){.kind = BP_ARENA_DEVICE,
                                  .device = gpu,
                                  .bytes = 8192,
                                  .lower_bound = 5120};

    /* exp(in0) * 2 */
    p->res.nprograms = 1;
    p->res.programs = calloc(1, sizeof *p->res.programs);
    bp_program *prog = &p->res.programs[0];
    prog->kind = BP_PROGRAM_ELEMENTWISE;
    prog->ninstr = 4;
    prog->instr = calloc(4, sizeof *prog->instr);
    prog->instr[0] = (bp_instr){.op = BP_INSTR_LOAD, .source = BG_NONE};
    prog->instr[1] = (bp_instr){.op = BRAID_OP_EXP, .arg = {0}, .source = 2};
    prog->instr[2] =
        (bp_instr){.op = BP_INSTR_CONST, .value = 2.0, .source = BG_NONE};
    prog->instr[3] = (bp_instr){.op = BRAID_OP_MUL, .arg = {1, 2}, .source = 2};
    prog->rank = 1;
    prog->dims[0] = 256;

    p->res.noutputs = 1;
    p->res.outputs = calloc(1, sizeof *p->res.outputs);
    p->res.outputs[0] =
        (bp_io){.name = g->outputs[0].name, .node = o.id, .bytes = 1024};
    p->res.ninputs = 1;
    p->res.inputs = calloc(1, sizeof *p->res.inputs);
    p->res.inputs[0] =
        (bp_io){.name = g->nodes[0].name, .node = 0, .bytes = 1024};
    return p;
}

static void hand_plan_free(bp_plan *p) {
    free(p->res.programs[0].instr);
    free(p->res.programs);
    free(p->res.queues);
    free(p->res.info);
    free(p->res.schedule);
    free(p->res.events);
    free(p->res.arenas);
    free(p->res.inputs);
    free(p->res.outputs);
    braid_graph_free(p->res.graph);
    free(p);
}

Test(dot, plan_view_of_a_hand_made_plan) {
    bp_plan *p = hand_plan();
    char *text = plan_dot(p);
    Agraph_t *g = parse(text);
    cr_assert_null(strstr(text, "<cluster"));
    /* 7 plan nodes and the 2 legend entries. */
    cr_assert_eq(agnnodes(g), 9);
    cr_assert_str_eq(attr(node(g, "legend", 0), "label"), "cpu");
    cr_assert_str_eq(attr(node(g, "legend", 1), "label"), "cuda:0");
    /* A cluster per queue that runs something, plus the legend. */
    cr_assert_eq(count_clusters(g), 6);
    static const char *const queues[] = {"cpu", "cuda:0 compute 0",
                                         "cuda:0 compute 1", "cuda:0 h2d",
                                         "cuda:0 d2h"};
    for (size_t i = 0; i < 5; i++)
        cr_assert(cluster_labelled(g, queues[i]), "no cluster %s", queues[i]);
    cr_assert_null(cluster_labelled(g, "cuda:0 d2d"));
    Agraph_t *c0 = cluster_labelled(g, "cuda:0 compute 0");
    cr_assert_eq(agnnodes(c0), 3); /* %2 %4 %5 */
    cr_assert(agnode(c0, "n4", 0));

    /* Devices as colours: each node is filled like its device's legend. */
    const char *cpu = attr(node(g, "legend", 0), "fillcolor");
    const char *gpu = attr(node(g, "legend", 1), "fillcolor");
    cr_assert_str_neq(cpu, gpu);
    cr_assert_str_eq(attr(node(g, "n", 0), "fillcolor"), cpu);
    cr_assert_str_eq(attr(node(g, "n", 4), "fillcolor"), gpu);

    /* Copies: cds, direction and bytes. */
    cr_assert_eq(count_nodes(g, "shape", "cds"), 2);
    const char *h2d = attr(node(g, "n", 1), "label");
    cr_assert_str_eq(attr(node(g, "n", 1), "shape"), "cds");
    cr_assert(strstr(h2d, "copy h2d") && strstr(h2d, "cpu -> cuda:0, 1.00 KiB"),
              "%s", h2d);
    const char *d2h = attr(node(g, "n", 6), "label");
    cr_assert(strstr(d2h, "copy d2h") && strstr(d2h, "cuda:0 -> cpu"), "%s",
              d2h);

    /* The fused node lists its program; its name's {}|<> are escaped. */
    Agnode_t *fused = node(g, "n", 2);
    const char *fl = attr(fused, "label");
    cr_assert_str_eq(attr(fused, "shape"), "record");
    cr_assert(has_word(attr(fused, "class"), "fused"));
    cr_assert(strstr(fl, "t0 = in0 (%1)") && strstr(fl, "t1 = exp t0") &&
                  strstr(fl, "t2 = 2") && strstr(fl, "t3 = mul t1, t2") &&
                  strstr(fl, "%2 fused elementwise (step 2)") &&
                  strstr(fl, "f\\{1\\}\\|\\<p\\>"),
              "%s", fl);

    /* Places. */
    cr_assert(strstr(attr(node(g, "n", 0), "label"), "input buffer"));
    cr_assert(
        strstr(attr(node(g, "n", 4), "label"), "arena 2 @ 4096, 1.00 KiB"));
    cr_assert(strstr(attr(node(g, "n", 5), "label"), "view of %4 @ 0"));
    cr_assert(strstr(attr(node(g, "n", 6), "label"), "arena 1 @ 0"));

    /* Chunk and output marks. */
    Agnode_t *last = node(g, "n", 6);
    cr_assert(has_word(attr(last, "class"), "chunk"));
    cr_assert(has_word(attr(last, "class"), "output"));
    cr_assert(strstr(attr(last, "label"), "[chunk]"));
    cr_assert(strstr(attr(last, "label"), "output \"y\""));
    cr_assert_str_eq(attr(last, "style"), "filled,bold");
    cr_assert_str_eq(attr(last, "peripheries"), "2");

    /* 7 data edges and one separate reuse edge; 4 events ride on data
     * edges (dashed), the reuse event is dotted. */
    cr_assert_eq(agnedges(g), 8);
    cr_assert_eq(count_edges(g, "style", "dashed"), 4);
    cr_assert_eq(count_edges(g, "style", "dotted"), 1);
    for (uint32_t i = 0; i < p->res.nevents; i++) {
        const bp_event *ev = &p->res.events[i];
        Agedge_t *e =
            find_edge(g, node(g, "n", ev->after), node(g, "n", ev->before),
                      "style", ev->reuse ? "dotted" : "dashed");
        cr_assert(e, "event %u has no edge", (unsigned)i);
        if (ev->reuse) cr_assert_str_eq(attr(e, "label"), "reuse");
    }
    const char *title = attr(g, "label");
    cr_assert(strstr(title, "arena 2: cuda:0 device, 8.00 KiB (lower bound "
                            "5.00 KiB)"),
              "%s", title);
    agclose(g);
    free(text);
    hand_plan_free(p);
}

Test(dot, hand_made_plan_summary) {
    bp_plan *p = hand_plan();
    braid_plan_summary s;
    cr_assert_eq(braid_plan_summary_get(p, &s), BRAID_OK);
    cr_assert_eq(s.devices, 2);
    cr_assert_eq(s.nodes, 7);
    cr_assert_eq(s.fused_kernels, 1);
    cr_assert_eq(s.copies, 2);
    cr_assert_eq(s.copy_bytes, 2048);
    cr_assert_eq(s.chunk_nodes, 1);
    cr_assert_eq(s.queues, 6);
    cr_assert_eq(s.events, 5);
    cr_assert_eq(s.reuse_events, 1);
    cr_assert_eq(s.arenas, 3);
    cr_assert_eq(s.arena_bytes, 9216);
    cr_assert_eq(s.lower_bound_bytes, 6144);
    braid_plan_device_info d;
    cr_assert_eq(braid_plan_device_get(p, 0, &d), BRAID_OK);
    cr_assert_str_eq(d.name, "cpu");
    cr_assert_eq(d.nodes, 2);
    cr_assert_eq(d.queues, 1);
    cr_assert_eq(braid_plan_device_get(p, 1, &d), BRAID_OK);
    cr_assert_str_eq(d.name, "cuda:0");
    cr_assert_eq(d.nodes, 5);
    cr_assert_eq(d.queues, 5);
    cr_assert_eq(braid_plan_device_get(p, 2, &d), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "out of range"));
    braid_plan_arena_info a;
    cr_assert_eq(braid_plan_arena_get(p, 1, &a), BRAID_OK);
    cr_assert_str_eq(a.device, "cpu");
    cr_assert_eq(a.kind, BRAID_ARENA_PINNED);
    cr_assert_eq(a.bytes, 1024);
    cr_assert_eq(a.lower_bound_bytes, 1024);
    cr_assert_eq(braid_plan_arena_get(p, 2, &a), BRAID_OK);
    cr_assert_str_eq(a.device, "cuda:0");
    cr_assert_eq(a.kind, BRAID_ARENA_DEVICE);
    cr_assert_eq(a.lower_bound_bytes, 5120);
    cr_assert_eq(braid_plan_arena_get(p, 3, &a), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_summary_get(NULL, &s), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_summary_get(p, NULL), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_device_get(p, 0, NULL), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_arena_get(NULL, 0, &a), BRAID_ERR_INVALID_ARGUMENT);
    hand_plan_free(p);
}

/* Graphviz itself lays the hand-made plan out without complaint (record
 * labels well formed), when its dot program is installed. */
Test(dot, hand_made_plan_renders) {
    if (system("command -v dot > /dev/null 2>&1") != 0) {
        cr_log_info("Graphviz dot not installed: skipped");
        return;
    }
    char *dir = tf_mkdtemp();
    char *in = tf_path(dir, "p.dot"), *out = tf_path(dir, "p.svg");
    char *err = tf_path(dir, "err.txt");
    bp_plan *p = hand_plan();
    FILE *f = fopen(in, "w");
    cr_assert_eq(braid_plan_to_dot(p, f), BRAID_OK);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "dot -Tsvg -o '%s' '%s' 2> '%s'", out, in, err);
    cr_assert_eq(system(cmd), 0);
    char *msgs = ts_read_file(err);
    cr_assert(msgs && !strstr(msgs, "rror"), "dot said: %s", msgs);
    char *svg = ts_read_file(out);
    cr_assert(svg && strstr(svg, "<svg") && strstr(svg, "class=\"node copy\""));
    free(msgs);
    free(svg);
    hand_plan_free(p);
    free(in);
    free(out);
    free(err);
    tf_rmtree(dir);
    free(dir);
}

Test(dot, plan_view_errors) {
    cr_assert_eq(braid_plan_to_dot(NULL, stdout), BRAID_ERR_INVALID_ARGUMENT);
    bp_plan *p = hand_plan();
    cr_assert_eq(braid_plan_to_dot(p, NULL), BRAID_ERR_INVALID_ARGUMENT);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        cr_assert_eq(braid_plan_to_dot(p, full), BRAID_ERR_IO);
        cr_assert(strstr(braid_last_error(), "braid_plan_to_dot"));
        fclose(full);
    }
    /* A plan whose tables do not match its graph is refused, not read. */
    bp_node_info *info = p->res.info;
    p->res.info = NULL;
    cr_assert_eq(braid_plan_to_dot(p, stdout), BRAID_ERR_INVALID_ARGUMENT);
    p->res.info = info;
    p->res.ninfo = 3;
    cr_assert_eq(braid_plan_to_dot(p, stdout), BRAID_ERR_INVALID_ARGUMENT);
    p->res.ninfo = 7;
    /* Out-of-range indices inside the tables are shown, not followed. */
    p->res.info[4].place.arena = 99;
    p->res.info[2].program = 42;
    p->res.info[3].queue = 77;
    p->res.events[0].after = 1000;
    char *text = plan_dot(p);
    Agraph_t *g = parse(text);
    cr_assert(strstr(attr(node(g, "n", 4), "label"), "arena ? @ 4096"));
    cr_assert(strstr(attr(node(g, "n", 2), "label"), "(no program)"));
    agclose(g);
    free(text);
    hand_plan_free(p);
}

/* ---- compiled plans ------------------------------------------------------ */

/* The plan view agrees with the plan: nodes, clusters, copies, fused
 * programs, places, events. */
static void check_plan_view(const bp_plan *p, const char *what) {
    char *text = plan_dot(p);
    Agraph_t *g = parse(text);
    /* Names are plain strings (never taken for HTML-like ones). */
    cr_assert_null(strstr(text, "<cluster"), "%s", what);
    cr_assert_null(strstr(text, "<n"), "%s", what);
    uint32_t n = p->res.graph->nnodes;
    cr_assert_eq((uint32_t)agnnodes(g), n + p->in.devs.ndevices, "%s", what);
    bool *used = calloc(p->res.nqueues + 1, sizeof *used);
    int nused = 0, ncopies = 0;
    for (uint32_t id = 0; id < n; id++) {
        const bg_node *bn = bg_node_at(p->res.graph, id);
        const bp_node_info *in = &p->res.info[id];
        Agnode_t *an = node(g, "n", id);
        const char *label = attr(an, "label");
        if (in->queue < p->res.nqueues && !used[in->queue]) {
            used[in->queue] = true;
            nused++;
        }
        if (bn->op == BRAID_OP_COPY) {
            ncopies++;
            cr_assert_str_eq(attr(an, "shape"), "cds", "%s", what);
        }
        if (in->place.storage == BP_STORAGE_ARENA) {
            char place[96];
            snprintf(place, sizeof place, "arena %u @ %llu",
                     (unsigned)in->place.arena,
                     (unsigned long long)in->place.offset);
            cr_assert(strstr(label, place), "%s: %%%u: %s lacks %s", what,
                      (unsigned)id, label, place);
        }
        if (bn->op == BRAID_OP_FUSED && in->program < p->res.nprograms) {
            const bp_program *prog = &p->res.programs[in->program];
            if (prog->kind == BP_PROGRAM_REDUCE)
                cr_assert(strstr(label, " axes=["), "%s: %s", what, label);
            for (uint32_t k = 0; k < prog->ninstr; k++) {
                braid_op op = prog->instr[k].op;
                if ((unsigned)op < BRAID_OP_COUNT_)
                    cr_assert(strstr(label, bg_op(op)->name), "%s: %s", what,
                              label);
            }
        }
    }
    cr_assert_eq(count_nodes(g, "shape", "cds"), ncopies, "%s", what);
    cr_assert_eq(count_clusters(g), nused + 1, "%s", what);
    for (uint32_t i = 0; i < p->res.nevents; i++) {
        const bp_event *ev = &p->res.events[i];
        cr_assert(find_edge(g, node(g, "n", ev->after),
                            node(g, "n", ev->before), "style",
                            ev->reuse ? "dotted" : "dashed"),
                  "%s: event %u", what, (unsigned)i);
    }
    free(used);
    agclose(g);
    free(text);
}

Test(dot, plan_view_of_every_example_graph) {
    char **files = example_graphs();
    static const char *const devices[] = {"cpu", "cpu,cuda:0"};
    for (size_t i = 0; files[i]; i++) {
        braid_graph *g = braid_graph_load(files[i], NULL);
        cr_assert_eq(braid_graph_status(g), BRAID_OK);
        for (size_t d = 0; d < 2; d++) {
            braid_plan *p = compile(g, devices[d]);
            char what[512];
            snprintf(what, sizeof what, "%s (%s)", files[i], devices[d]);
            check_plan_view(p, what);
            braid_plan_free(p);
        }
        braid_graph_free(g);
    }
    free_list(files);
}

/* Hints force work onto cuda:0, so the plan has copies, GPU streams and
 * events; the view shows each. */
Test(dot, plan_view_of_a_gpu_plan) {
    static const char text[] = "braid-graph 1\n"
                               "%x = input f32[1024] name=\"x\"\n"
                               "%y = input f32[1024] name=\"y\"\n"
                               "%a = mul %x, %y device=\"cuda:0\" : f32[1024]\n"
                               "%b = exp %a device=\"cuda:0\" : f32[1024]\n"
                               "%c = tanh %a device=\"cuda:0\" : f32[1024]\n"
                               "%d = add %b, %c device=\"cuda:0\" : f32[1024]\n"
                               "%e = relu %d device=\"cpu\" : f32[1024]\n"
                               "output \"out\" = %e\n";
    braid_graph *g = ts_parse_ok(text, "gpu.graph");
    braid_plan *p = compile(g, "cpu,cuda:0");
    check_plan_view(p, "gpu plan");
    braid_plan_summary s;
    cr_assert_eq(braid_plan_summary_get(p, &s), BRAID_OK);
    cr_assert_geq(s.copies, 3, "two inputs up, one result down");
    cr_assert_geq(s.events, 1);
    cr_assert_geq(s.queues, 3);
    char *dot = plan_dot(p);
    Agraph_t *ag = parse(dot);
    cr_assert_geq(count_nodes(ag, "shape", "cds"), 3);
    cr_assert_geq(count_edges(ag, "style", "dashed"), 1);
    cr_assert(cluster_labelled(ag, "cuda:0 h2d"));
    cr_assert(cluster_labelled(ag, "cuda:0 d2h"));
    agclose(ag);
    free(dot);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The summary agrees with the plan's own tables. */
Test(dot, summary_of_compiled_plans) {
    char **files = example_graphs();
    for (size_t i = 0; files[i]; i++) {
        braid_graph *g = braid_graph_load(files[i], NULL);
        braid_plan *p = compile(g, "cpu,cuda:0");
        braid_plan_summary s;
        cr_assert_eq(braid_plan_summary_get(p, &s), BRAID_OK);
        cr_assert_eq(s.nodes, p->res.graph->nnodes);
        cr_assert_eq(s.devices, 2);
        cr_assert_eq(s.queues, p->res.nqueues);
        cr_assert_eq(s.events, p->res.nevents);
        cr_assert_eq(s.arenas, p->res.narenas);
        uint32_t on_devices = 0, queues = 0;
        for (uint32_t d = 0; d < s.devices; d++) {
            braid_plan_device_info info;
            cr_assert_eq(braid_plan_device_get(p, d, &info), BRAID_OK);
            on_devices += info.nodes;
            queues += info.queues;
        }
        cr_assert_eq(on_devices, s.nodes, "%s", files[i]);
        cr_assert_eq(queues, s.queues, "%s", files[i]);
        uint64_t bytes = 0;
        for (uint32_t a = 0; a < s.arenas; a++) {
            braid_plan_arena_info info;
            cr_assert_eq(braid_plan_arena_get(p, a, &info), BRAID_OK);
            bytes += info.bytes;
        }
        cr_assert_eq(bytes, s.arena_bytes);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    free_list(files);
}

/* ---- threads ------------------------------------------------------------- */

static void *dot_worker(void *arg) {
    const bp_plan *p = arg;
    char *first = NULL;
    bool same = true;
    for (int i = 0; i < 20 && same; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f || braid_plan_to_dot(p, f) != BRAID_OK) same = false;
        if (f) fclose(f);
        if (!first) {
            first = buf;
        } else {
            same = same && buf && !strcmp(buf, first);
            free(buf);
        }
    }
    free(first);
    return same ? arg : NULL;
}

/* libcgraph is not thread-safe; braid serialises its use. */
Test(dot, concurrent_calls_give_identical_output) {
    bp_plan *p = hand_plan();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, dot_worker, p), 0);
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        cr_assert_eq(r, p, "thread %d saw a failure or different output", i);
    }
    hand_plan_free(p);
}
