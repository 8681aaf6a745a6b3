/* tests/test_cli_info.c — `braid info`, `braid dot` and the compile flags
 * shared by run/info/dot, run as a program (BRAID_CLI_PATH) in a temporary
 * directory. JSON output is checked by a small recursive-descent parser. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <cgraph.h>
#include <ctype.h>

#include "support/cli.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

extern char **environ;

#define EX(name) BRAID_SOURCE_DIR "/examples/graphs/" name

/* ---- running the tool ---------------------------------------------------- */

/* Runs BRAID_CLI_PATH with args (NULL-terminated) and environment env
 * (NULL: ours), capturing stdout and stderr through files in ts_tmpdir. */
static ts_cli_result run_env(char *const *env, const char *const *args) {
    return ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, env, args);
}

#define CLI(...) run_env(NULL, (const char *const[]){__VA_ARGS__, NULL})

/* A graph whose hints put work on cuda:0: copies, streams, events. */
static char *gpu_graph(void) {
    static const char text[] = "braid-graph 1\n"
                               "%x = input f32[4096] name=\"x\"\n"
                               "%y = input f32[4096] name=\"y\"\n"
                               "%a = mul %x, %y device=\"cuda:0\" : f32[4096]\n"
                               "%b = exp %a device=\"cuda:0\" : f32[4096]\n"
                               "%c = tanh %a device=\"cuda:0\" : f32[4096]\n"
                               "%d = add %b, %c device=\"cuda:0\" : f32[4096]\n"
                               "%e = relu %d device=\"cpu\" : f32[4096]\n"
                               "output \"out\" = %e\n";
    char *path = tf_path(ts_tmpdir, "gpu.graph");
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- a JSON checker ------------------------------------------------------ */

/* Recursive descent over RFC 8259 JSON; validates and nothing more. */

typedef struct json_in {
    const char *p; /* next character */
    int depth;     /* nesting, bounded */
} json_in;

static bool json_value(json_in *in);

static void json_ws(json_in *in) {
    while (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r')
        in->p++;
}

static bool json_lit(json_in *in, const char *word) {
    size_t n = strlen(word);
    if (strncmp(in->p, word, n)) return false;
    in->p += n;
    return true;
}

static bool json_string(json_in *in) {
    if (*in->p++ != '"') return false;
    for (;;) {
        unsigned char c = (unsigned char)*in->p++;
        if (c == '"') return true;
        if (c < 0x20) return false; /* includes the NUL: unterminated */
        if (c != '\\') continue;
        c = (unsigned char)*in->p++;
        if (c == 'u') {
            for (int k = 0; k < 4; k++)
                if (!isxdigit((unsigned char)*in->p++)) return false;
        } else if (!strchr("\"\\/bfnrt", c) || !c) {
            return false;
        }
    }
}

static bool json_digits(json_in *in) {
    if (!isdigit((unsigned char)*in->p)) return false;
    while (isdigit((unsigned char)*in->p))
        in->p++;
    return true;
}

static bool json_number(json_in *in) {
    if (*in->p == '-') in->p++;
    if (*in->p == '0')
        in->p++;
    else if (!json_digits(in))
        return false;
    if (*in->p == '.') {
        in->p++;
        if (!json_digits(in)) return false;
    }
    if (*in->p == 'e' || *in->p == 'E') {
        in->p++;
        if (*in->p == '+' || *in->p == '-') in->p++;
        if (!json_digits(in)) return false;
    }
    return true;
}

/* "[" value ("," value)* "]" or "{" string ":" value (...)* "}". */
static bool json_container(json_in *in, char close, bool object) {
    in->p++;
    json_ws(in);
    if (*in->p == close) {
        in->p++;
        return true;
    }
    for (;;) {
        json_ws(in);
        if (object) {
            if (!json_string(in)) return false;
            json_ws(in);
            if (*in->p++ != ':') return false;
        }
        if (!json_value(in)) return false;
        json_ws(in);
        char c = *in->p++;
        if (c == close) return true;
        if (c != ',') return false;
    }
}

static bool json_value(json_in *in) {
    json_ws(in);
    if (++in->depth > 64) return false;
    bool ok;
    switch (*in->p) {
    case '{':
        ok = json_container(in, '}', true);
        break;
    case '[':
        ok = json_container(in, ']', false);
        break;
    case '"':
        ok = json_string(in);
        break;
    case 't':
        ok = json_lit(in, "true");
        break;
    case 'f':
        ok = json_lit(in, "false");
        break;
    case 'n':
        ok = json_lit(in, "null");
        break;
    default:
        ok = json_number(in);
    }
    in->depth--;
    return ok;
}

/* True when text is exactly one JSON object (surrounding space allowed). */
static bool json_valid_object(const char *text) {
    json_in in = {text, 0};
    json_ws(&in);
    if (*in.p != '{' || !json_value(&in)) return false;
    json_ws(&in);
    return *in.p == '\0';
}

Test(json_checker, accepts_and_rejects) {
    cr_assert(json_valid_object("{}"));
    cr_assert(
        json_valid_object(" {\"a\": [1, -2.5e3, true, null, \"x\\u00e9\"],"
                          " \"b\": {\"c\": 0}}\n"));
    cr_assert(!json_valid_object("{\"a\": 1,}"));
    cr_assert(!json_valid_object("{\"a\" 1}"));
    cr_assert(!json_valid_object("{\"a\": 01}"));
    cr_assert(!json_valid_object("{\"a\": \"x}"));
    cr_assert(!json_valid_object("{\"a\": 1} x"));
    cr_assert(!json_valid_object("[1]"));
    cr_assert(!json_valid_object("{\"a\": nul}"));
}

/* The unsigned integer after "key": in text (from `from`), or -1. */
static long long json_uint(const char *text, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(text, pat);
    if (!p) return -1;
    return strtoll(p + strlen(pat), NULL, 10);
}

/* ---- braid info ---------------------------------------------------------- */

TestSuite(cli_info, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

Test(cli_info, text_summary) {
    ts_cli_result r = CLI("info", EX("mlp.graph"), "--devices", "cpu");
    TS_EXPECT_STATUS(r, 0);
    static const char *const want[] = {"graph: ",
                                       "devices: cpu (",
                                       "nodes: ",
                                       "fused kernel",
                                       "cop",
                                       "queues: ",
                                       "events: ",
                                       "memory: ",
                                       "arena 0: cpu device",
                                       "lower bound",
                                       "ratio "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r.out, want[i]), "no '%s' in:\n%s", want[i], r.out);
    cr_assert_str_empty(r.err);
    ts_cli_result_free(&r);
}

/* JSON parses, holds the memory table, and agrees with the library's own
 * summary of the same compile. */
static void check_json(const char *graph, const char *devices) {
    ts_cli_result r = CLI("info", graph, "--devices", devices, "--json",
                          "--arch=none");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(json_valid_object(r.out), "not JSON:\n%s", r.out);
    braid_graph *g = ts_load_ok(graph);
    braid_compile_options o = ts_compile_options(devices, 0);
    braid_plan *p = ts_compile_ok(g, &o);
    braid_plan_summary s;
    cr_assert_eq(braid_plan_summary_get(p, &s), BRAID_OK);
    cr_assert_eq(json_uint(r.out, "nodes"), s.nodes, "%s", r.out);
    cr_assert_eq(json_uint(r.out, "fused_kernels"), s.fused_kernels);
    cr_assert_eq(json_uint(r.out, "copies"), s.copies);
    cr_assert_eq(json_uint(r.out, "queues"), s.queues);
    cr_assert_eq(json_uint(r.out, "events"), s.events);
    const char *mem = strstr(r.out, "\"memory\": [");
    cr_assert(mem, "%s", r.out);
    uint32_t narenas = 0;
    for (const char *e = strstr(mem, "{\"arena\": "); e;
         e = strstr(e + 1, "{\"arena\": ")) {
        braid_plan_arena_info a;
        cr_assert_eq(braid_plan_arena_get(p, narenas, &a), BRAID_OK);
        long long bytes = json_uint(e, "arena_bytes");
        long long lb = json_uint(e, "lower_bound_bytes");
        char dev[64];
        snprintf(dev, sizeof dev, "\"device\": \"%s\"", a.device);
        cr_assert(strstr(e, dev) && strstr(e, dev) < strstr(e, "}"));
        cr_assert_eq(bytes, (long long)a.bytes);
        cr_assert_eq(lb, (long long)a.lower_bound_bytes);
        cr_assert_geq(bytes, lb, "%s (%s): arena below its lower bound", graph,
                      devices);
        narenas++;
    }
    cr_assert_eq(narenas, s.arenas);
    cr_assert_geq(narenas, 1);
    braid_plan_free(p);
    braid_graph_free(g);
    ts_cli_result_free(&r);
}

Test(cli_info, json_for_every_example_graph) {
    static const char *const graphs[] = {
        EX("mlp.graph"), EX("attention_block.graph"),
        EX("elementwise_chain.graph"), EX("softmax_layernorm.graph")};
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        check_json(graphs[i], "cpu");
        check_json(graphs[i], "cpu,cuda:0");
    }
}

Test(cli_info, json_of_a_gpu_plan) {
    char *g = gpu_graph();
    check_json(g, "cpu,cuda:0");
    ts_cli_result r = CLI("info", g, "--devices=cpu,cuda:0", "--json",
                          "--arch=none");
    TS_EXPECT_STATUS(r, 0);
    cr_assert_geq(json_uint(r.out, "copies"), 3, "%s", r.out);
    cr_assert_geq(json_uint(r.out, "events"), 1, "%s", r.out);
    cr_assert(strstr(r.out, "\"device\": \"cuda:0\""), "%s", r.out);
    ts_cli_result_free(&r);
    free(g);
}

Test(cli_info, compile_flags_change_the_plan) {
    /* The elementwise chain is one fused kernel unless fusion is off. */
    ts_cli_result on = CLI("info", EX("elementwise_chain.graph"), "--devices",
                           "cpu", "--json");
    ts_cli_result off =
        CLI("info", EX("elementwise_chain.graph"), "--devices", "cpu", "--json",
            "--no-fuse", "--no-simplify", "--no-chunk", "--no-reuse",
            "--streams", "2", "--chunks=1");
    TS_EXPECT_STATUS(on, 0);
    TS_EXPECT_STATUS(off, 0);
    cr_assert_eq(json_uint(off.out, "fused_kernels"), 0, "%s", off.out);
    cr_assert_geq(json_uint(on.out, "nodes"), 1);
    ts_cli_result_free(&on);
    ts_cli_result_free(&off);
}

Test(cli_info, dump_after_prints_the_ir) {
    ts_cli_result r = CLI("info", EX("elementwise_chain.graph"), "--devices",
                          "cpu", "--dump-after", "fuse");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.err, "after pass \"fuse\""), "stderr:\n%s", r.err);
    cr_assert(strstr(r.err, "braid-graph 1"), "stderr:\n%s", r.err);
    cr_assert(strstr(r.out, "nodes: "));
    ts_cli_result_free(&r);
    r = CLI("info", EX("mlp.graph"), "--dump-after=nope");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "nope"), "%s", r.err);
    ts_cli_result_free(&r);
}

Test(cli_info, bad_devices_fail_with_a_message) {
    ts_cli_result r = CLI("info", EX("mlp.graph"), "--devices", "gpu:0");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "gpu:0"), "%s", r.err);
    cr_assert_str_empty(r.out);
    ts_cli_result_free(&r);
    r = CLI("dot", EX("mlp.graph"), "--plan", "--devices", "cpu,cpu");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "twice"), "%s", r.err);
    ts_cli_result_free(&r);
}

Test(cli_info, missing_or_bad_graph_fails) {
    ts_cli_result r = CLI("info", "no-such-file.graph");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "no-such-file.graph"), "%s", r.err);
    ts_cli_result_free(&r);
}

Test(cli_info, usage_errors_exit_2) {
    static const char *const cases[][6] = {
        {"info", NULL},
        {"info", EX("mlp.graph"), EX("mlp.graph"), NULL},
        {"info", EX("mlp.graph"), "--bogus", NULL},
        {"info", EX("mlp.graph"), "--json=yes", NULL},
        {"info", EX("mlp.graph"), "--streams", "0", NULL},
        {"info", EX("mlp.graph"), "--streams", "x", NULL},
        {"info", EX("mlp.graph"), "--chunks", "2000", NULL},
        {"info", EX("mlp.graph"), "--devices", NULL},
        {"info", EX("mlp.graph"), "--no-fuse=1", NULL},
        {"info", EX("mlp.graph"), "--dump-after=", NULL},
        {"dot", NULL},
        {"dot", EX("mlp.graph"), "--devices", "cpu", NULL},
        {"dot", EX("mlp.graph"), "-o", NULL},
        {"dot", EX("mlp.graph"), "-o", "out.txt", NULL},
        {"dot", EX("mlp.graph"), "--json", NULL},
        {"run", EX("mlp.graph"), "--streams", "65", NULL},
        {"run", EX("mlp.graph"), "--no-reuse=x", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *c = cases[i];
        ts_cli_result r = run_env(NULL, c);
        cr_assert_eq(r.status, 2, "case %zu (%s %s %s): exit %d\n%s", i, c[0],
                     c[1] ? c[1] : "", c[1] && c[2] ? c[2] : "", r.status,
                     r.err);
        cr_assert(strstr(r.err, "braid: ") && strstr(r.err, "--help"),
                  "case %zu: %s", i, r.err);
        ts_cli_result_free(&r);
    }
}

Test(cli_info, help_lists_the_commands) {
    ts_cli_result r = CLI("--help");
    TS_EXPECT_STATUS(r, 0);
    static const char *const want[] = {"info FILE", "dot FILE",     "--json",
                                       "--plan",    "--dump-after", "--no-fuse",
                                       "--streams", "--chunks"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r.out, want[i]), "no '%s' in help", want[i]);
    ts_cli_result_free(&r);
    r = CLI("info", "--help");
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
}

/* run takes the same compile flags. */
Test(cli_info, run_accepts_compile_flags) {
    ts_cli_result r = CLI("run", EX("elementwise_chain.graph"), "--devices",
                          "cpu", "--no-fuse", "--no-simplify", "--streams", "2",
                          "--chunks", "1", "--check");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "check out:"), "%s", r.out);
    ts_cli_result_free(&r);
}

/* ---- braid dot ----------------------------------------------------------- */

TestSuite(cli_dot, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

/* Reads a DOT file back with libcgraph's agread. */
static Agraph_t *read_dot(const char *path) {
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s was not written", path);
    Agraph_t *g = agread(f, NULL);
    fclose(f);
    cr_assert(g, "libcgraph cannot read %s", path);
    return g;
}

static int clusters(Agraph_t *g) {
    int n = 0;
    for (Agraph_t *s = agfstsubg(g); s; s = agnxtsubg(s))
        n += strncmp(agnameof(s), "cluster", 7) == 0;
    return n;
}

Test(cli_dot, graph_to_dot_file) {
    char *out = tf_path(ts_tmpdir, "g.dot");
    ts_cli_result r = CLI("dot", EX("softmax_layernorm.graph"), "-o", out);
    TS_EXPECT_STATUS(r, 0);
    Agraph_t *g = read_dot(out);
    braid_graph *bg = braid_graph_load(EX("softmax_layernorm.graph"), NULL);
    cr_assert_eq((uint32_t)agnnodes(g), braid_graph_node_count(bg));
    agclose(g);
    braid_graph_free(bg);
    ts_cli_result_free(&r);
    free(out);
}

Test(cli_dot, plan_to_dot_file) {
    char *graph = gpu_graph();
    char *out = tf_path(ts_tmpdir, "p.gv");
    ts_cli_result r =
        CLI("dot", graph, "--plan", "--devices", "cpu,cuda:0",
            "--arch=none", "--output", out);
    TS_EXPECT_STATUS(r, 0);
    Agraph_t *g = read_dot(out);
    /* The legend and at least the cpu queue, an h2d, a compute and a d2h
     * stream. */
    cr_assert_geq(clusters(g), 5);
    int cds = 0;
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        char *shape = agget(n, "shape");
        cds += shape && !strcmp(shape, "cds");
    }
    cr_assert_geq(cds, 3);
    agclose(g);
    ts_cli_result_free(&r);
    free(out);
    free(graph);
}

Test(cli_dot, dot_on_stdout) {
    ts_cli_result r = CLI("dot", EX("mlp.graph"), "--plan", "--devices", "cpu");
    TS_EXPECT_STATUS(r, 0);
    Agraph_t *g = agmemread(r.out);
    cr_assert(g, "%s", r.out);
    cr_assert_geq(clusters(g), 2);
    agclose(g);
    ts_cli_result_free(&r);
}

/* The output file begins with the format's signature. */
static void check_rendered(const char *name, const char *magic) {
    char *out = tf_path(ts_tmpdir, name);
    ts_cli_result r = CLI("dot", EX("attention_block.graph"), "--plan",
                          "--devices", "cpu,cuda:0", "--arch=none", "-o", out);
    TS_EXPECT_STATUS(r, 0);
    size_t len = 0;
    char *data = ts_read_file_len(out, &len);
    cr_assert(data && len > strlen(magic), "%s not written", out);
    cr_assert(strstr(data, magic) != NULL ||
                  !memcmp(data, magic, strlen(magic)),
              "%s does not look right", name);
    /* Nothing left behind but the output. */
    DIR *d = opendir(ts_tmpdir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        files += e->d_name[0] != '.';
    closedir(d);
    cr_assert_eq(files, 1, "temporary files left in %s", ts_tmpdir);
    unlink(out);
    free(data);
    ts_cli_result_free(&r);
    free(out);
}

Test(cli_dot, renders_svg_and_png) {
    if (system("command -v dot > /dev/null 2>&1") != 0) {
        cr_log_info("Graphviz dot not installed: skipped");
        return;
    }
    check_rendered("plan.svg", "<svg");
    check_rendered("plan.png", "\x89PNG");
}

/* Our environment with PATH replaced by path (the strings are borrowed
 * from environ and path); free the array only. */
static char **env_with_path(char *path) {
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    cr_assert(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PATH=", 5) != 0) env[k++] = environ[i];
    env[k] = path;
    return env;
}

Test(cli_dot, missing_dot_program_is_a_clear_error) {
    char *empty = tf_path(ts_tmpdir, "empty");
    cr_assert_eq(mkdir(empty, 0755), 0);
    char path[600];
    snprintf(path, sizeof path, "PATH=%s", empty);
    char **env = env_with_path(path);
    char *out = tf_path(ts_tmpdir, "x.svg");
    ts_cli_result r = run_env(
        env, (const char *const[]){"dot", EX("mlp.graph"), "-o", out, NULL});
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "Graphviz") && strstr(r.err, "not installed"), "%s",
              r.err);
    cr_assert_neq(access(out, F_OK), 0, "%s was created", out);
    ts_cli_result_free(&r);
    /* DOT text needs no dot program. */
    char *text = tf_path(ts_tmpdir, "x.dot");
    r = run_env(
        env, (const char *const[]){"dot", EX("mlp.graph"), "-o", text, NULL});
    TS_EXPECT_STATUS(r, 0);
    cr_assert_eq(access(text, F_OK), 0);
    ts_cli_result_free(&r);
    free(text);
    free(out);
    free(empty);
    free(env);
}

Test(cli_dot, never_overwrites_the_graph_file) {
    /* A graph file whose name ends in .dot, given as its own output, also
     * through a symbolic link. */
    char *graph = tf_path(ts_tmpdir, "g.dot");
    char *link = tf_path(ts_tmpdir, "link.dot");
    size_t len = 0;
    char *text = ts_read_file_len(EX("mlp.graph"), &len);
    FILE *f = fopen(graph, "w");
    fwrite(text, 1, len, f);
    fclose(f);
    cr_assert_eq(symlink(graph, link), 0);
    const char *outs[] = {graph, link};
    for (int i = 0; i < 2; i++) {
        ts_cli_result r = CLI("dot", graph, "-o", outs[i]);
        TS_EXPECT_STATUS(r, 1);
        cr_assert(strstr(r.err, "refusing to overwrite"), "%s", r.err);
        ts_cli_result_free(&r);
        char *now = ts_read_file(graph);
        cr_assert_str_eq(now, text);
        free(now);
    }
    free(text);
    free(graph);
    free(link);
}

Test(cli_dot, unwritable_output_fails) {
    ts_cli_result r =
        CLI("dot", EX("mlp.graph"), "-o", "/nonexistent-dir/x.dot");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "/nonexistent-dir/x.dot"), "%s", r.err);
    ts_cli_result_free(&r);
}
