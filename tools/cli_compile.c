/* tools/cli_compile.c — the compile flags run, info and dot share
 * (--devices, --dump-after, --no-<pass>, --streams, --chunks), the command
 * line parser of info and dot, and loading + compiling a graph file. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The --no-<pass> flags and the braid_compile_options bit each sets. */
static const struct {
    const char *name; /* the flag */
    unsigned bit;     /* BRAID_PASS_* */
} no_pass[] = {
    {"--no-simplify", BRAID_PASS_SIMPLIFY},
    {"--no-fuse", BRAID_PASS_FUSE},
    {"--no-chunk", BRAID_PASS_CHUNK},
    {"--no-reuse", BRAID_PASS_REUSE},
};

/* Compile flags that take a value. */
static const char *const valued[] = {"--devices", "--dump-after", "--streams",
                                     "--chunks"};

void cli_print_compile_help(FILE *out) {
    fputs("compile options (run, info, dot --plan):\n"
          "  --devices LIST            devices to compile for, e.g. cpu or "
          "cpu,cuda:0\n"
          "                            (default: every device found; a GPU "
          "this machine\n"
          "                            lacks still compiles, but the plan "
          "cannot run)\n"
          "  --dump-after PASS         print the IR to stderr after PASS "
          "(verify, simplify,\n"
          "                            place, copies, fuse, chunk, streams, "
          "schedule,\n"
          "                            memory, verify_plan)\n"
          "  --no-simplify, --no-fuse, --no-chunk, --no-reuse\n"
          "                            turn an optional pass off\n"
          "  --streams N               compute streams per GPU, 1..64 "
          "(default 4)\n"
          "  --chunks N                pipeline chunks: 0 cost model "
          "(default), 1 never,\n"
          "                            N up to 1024\n",
          out);
}

/* Parses a decimal integer in [lo, hi] filling the whole string. */
static bool parse_range(const char *s, long lo, long hi, int *out) {
    if (!s || !*s || (*s == '-' && lo >= 0)) return false;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* Applies valued flag `name` (known to be one of `valued`). */
static int apply_valued(cli_compile_flags *f, const char *name,
                        const char *value) {
    if (!strcmp(name, "--devices")) {
        if (!*value)
            return cli_usage_error("--devices expects a list, e.g. cpu or "
                                   "cpu,cuda:0");
        f->devices = value;
    } else if (!strcmp(name, "--dump-after")) {
        if (!*value)
            return cli_usage_error("--dump-after expects a pass name, e.g. "
                                   "fuse");
        f->dump_after = value;
    } else if (!strcmp(name, "--streams")) {
        if (!parse_range(value, 1, 64, &f->streams))
            return cli_usage_error("--streams expects 1..64, got '%s'", value);
    } else if (!parse_range(value, 0, 1024, &f->chunks)) {
        return cli_usage_error("--chunks expects 0..1024, got '%s'", value);
    }
    return CLI_EXIT_OK;
}

bool cli_compile_flag(cli_compile_flags *f, int argc, char **argv, int *i,
                      int *rc) {
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    *rc = CLI_EXIT_OK;
    for (size_t k = 0; k < sizeof no_pass / sizeof no_pass[0]; k++) {
        if (strlen(no_pass[k].name) != len ||
            strncmp(arg, no_pass[k].name, len))
            continue;
        if (eq) *rc = cli_usage_error("%s takes no value", no_pass[k].name);
        f->disable |= no_pass[k].bit;
        f->given = true;
        return true;
    }
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
        if (strlen(valued[k]) != len || strncmp(arg, valued[k], len)) continue;
        const char *value = eq ? eq + 1 : NULL;
        if (!value && *i + 1 < argc) value = argv[++*i];
        *rc = value ? apply_valued(f, valued[k], value)
                    : cli_usage_error("%s expects a value", valued[k]);
        f->given = true;
        return true;
    }
    return false;
}

void cli_compile_options(const cli_compile_flags *f, braid_compile_options *o) {
    braid_compile_options_init(o);
    o->devices = f->devices;
    o->dump_after = f->dump_after;
    o->disable_passes = f->disable;
    o->max_streams = f->streams;
    o->chunks = f->chunks;
}

/* Applies one of the command's own options, or returns false. */
static bool extra_option(const cli_extra_option *extra, size_t nextra, int argc,
                         char **argv, int *i, int *rc) {
    const char *arg = argv[*i];
    const char *eq = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (size_t k = 0; k < nextra; k++) {
        const cli_extra_option *x = &extra[k];
        if (strlen(x->name) != len || strncmp(arg, x->name, len)) continue;
        *rc = CLI_EXIT_OK;
        if (x->flag) {
            if (eq) *rc = cli_usage_error("%s takes no value", x->name);
            *x->flag = true;
            return true;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value && *i + 1 < argc) value = argv[++*i];
        if (!value || !*value)
            *rc = cli_usage_error("%s expects a value", x->name);
        else
            *x->value = value;
        return true;
    }
    return false;
}

int cli_parse_command(const char *cmd, int argc, char **argv,
                      const cli_extra_option *extra, size_t nextra,
                      const char **file, cli_compile_flags *f) {
    bool only_files = false;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        int rc = CLI_EXIT_OK;
        if (only_files || arg[0] != '-' || !arg[1]) {
            if (*file)
                return cli_usage_error("%s: expects one FILE.graph, got '%s' "
                                       "and '%s'",
                                       cmd, *file, arg);
            *file = arg;
        } else if (!strcmp(arg, "--")) {
            only_files = true;
        } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            return -1;
        } else if (cli_compile_flag(f, argc, argv, &i, &rc) ||
                   extra_option(extra, nextra, argc, argv, &i, &rc)) {
            if (rc != CLI_EXIT_OK) return rc;
        } else {
            return cli_usage_error("%s: unknown option '%s'", cmd, arg);
        }
    }
    if (!*file) return cli_usage_error("%s: missing FILE.graph", cmd);
    return CLI_EXIT_OK;
}

braid_plan *cli_compile_file(const char *path, const cli_compile_flags *f,
                             braid_graph **graph) {
    *graph = cli_load_graph(path);
    if (!*graph) return NULL;
    braid_compile_options co;
    cli_compile_options(f, &co);
    braid_plan *plan = NULL;
    if (braid_compile(*graph, &co, &plan) != BRAID_OK) {
        cli_fail("%s: compile failed: %s", path, braid_last_error());
        braid_graph_free(*graph);
        *graph = NULL;
        return NULL;
    }
    return plan;
}
