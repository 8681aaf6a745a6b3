/* tools/cli_dot.c — `braid dot`: a graph (or, with --plan, its compiled
 * plan) as Graphviz DOT, or rendered to SVG / PNG by Graphviz's `dot`
 * program. A plan file gives its embedded graph, or with --plan the plan
 * it stores. Output goes through graph/outfile.h: a temporary file
 * renamed into place (a failure never leaves half a file), or a device or
 * FIFO written in place. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include "graph/outfile.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What the output file name asks for. */
typedef enum dot_format { DOT_TEXT, DOT_SVG, DOT_PNG } dot_format;

/* The command line. */
typedef struct dot_args {
    const char *file;        /* the .graph or plan file */
    const char *out;         /* -o OUT, or NULL for stdout */
    bool plan;               /* --plan */
    cli_compile_flags flags; /* compile flags (only with --plan) */
    dot_format format;       /* from OUT's extension */
} dot_args;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

static int parse(int argc, char **argv, dot_args *a) {
    const cli_extra_option extra[] = {{"--plan", &a->plan, NULL},
                                      {"-o", NULL, &a->out},
                                      {"--output", NULL, &a->out}};
    int rc =
        cli_parse_command("dot", argc, argv, extra,
                          sizeof extra / sizeof extra[0], &a->file, &a->flags);
    if (rc != CLI_EXIT_OK) return rc;
    if (a->flags.given && !a->plan)
        return cli_usage_error("dot: compile options (--devices, "
                               "--dump-after, --no-<pass>, --streams, "
                               "--chunks) need --plan");
    if (!a->out || ends_with(a->out, ".dot") || ends_with(a->out, ".gv"))
        a->format = DOT_TEXT;
    else if (ends_with(a->out, ".svg"))
        a->format = DOT_SVG;
    else if (ends_with(a->out, ".png"))
        a->format = DOT_PNG;
    else
        return cli_usage_error("dot: cannot tell the format of '%s' (use "
                               "a .dot, .gv, .svg or .png name)",
                               a->out);
    return CLI_EXIT_OK;
}

/* The path of Graphviz's `dot` program on $PATH (malloc'd), or NULL. */
static char *find_dot(void) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        /* Empty entries (the current directory) are skipped on purpose: a
         * stray ./dot should not run. */
        char *cand = len ? malloc(len + 5) : NULL;
        if (cand) {
            memcpy(cand, path, len);
            memcpy(cand + len, "/dot", 5);
            struct stat st;
            if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
                access(cand, X_OK) == 0)
                return cand;
            free(cand);
        }
        if (!end) break;
        path = end + 1;
    }
    return NULL;
}

/* Writes the DOT text of the graph or plan to f. */
static bool write_dot(const braid_graph *g, const braid_plan *p, FILE *f) {
    braid_status s = p ? braid_plan_to_dot(p, f) : braid_graph_to_dot(g, f);
    if (s != BRAID_OK) return cli_err("dot: %s", braid_last_error());
    return true;
}

/* Runs `dot -T<fmt>` reading in and writing out (file descriptors); true
 * when it exits 0. No file name reaches dot's command line, so an output
 * named like an option (-Kfoo.svg) cannot be taken for one. */
static bool render(const char *dot, dot_format format, int in, int out,
                   const char *name) {
    const char *type = format == DOT_SVG ? "-Tsvg" : "-Tpng";
    char *argv[] = {(char *)dot, (char *)type, NULL};
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return cli_err("cannot run %s: out of memory", dot);
    int rc = posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
    pid_t pid;
    if (rc == 0) rc = posix_spawn(&pid, dot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return cli_err("cannot run %s: %s", dot, strerror(rc));
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) return cli_err("waiting for %s failed", dot);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return true;
    if (WIFEXITED(ws))
        return cli_err("%s failed (exit status %d) rendering %s", dot,
                       WEXITSTATUS(ws), name);
    return cli_err("%s was killed by signal %d rendering %s", dot, WTERMSIG(ws),
                   name);
}

/* Renders the DOT text of g or p into out through an anonymous temporary
 * file (tmpfile: no name to clash or leave behind). */
static bool render_to(const dot_args *a, const char *dot, const braid_graph *g,
                      const braid_plan *p, FILE *out) {
    FILE *text = tmpfile();
    if (!text)
        return cli_err("cannot create a temporary file: %s", strerror(errno));
    bool ok = write_dot(g, p, text);
    if (ok && (fflush(text) != 0 || fseek(text, 0, SEEK_SET) != 0))
        ok = cli_err("writing a temporary file failed: %s", strerror(errno));
    ok = ok && fflush(out) == 0 &&
         render(dot, a->format, fileno(text), fileno(out), a->out);
    fclose(text);
    return ok;
}

/* Writes the DOT text, or the image dot renders of it, to a->out through
 * graph/outfile.h (atomic replacement; in place for a device or FIFO). */
static bool write_file(const dot_args *a, const char *dot, const braid_graph *g,
                       const braid_plan *p) {
    bg_outfile o;
    if (bg_outfile_open(&o, a->out, "dot", 0) != BRAID_OK)
        return cli_err("%s", braid_last_error());
    bool ok = a->format == DOT_TEXT ? write_dot(g, p, o.f)
                                    : render_to(a, dot, g, p, o.f);
    if (!ok) {
        bg_outfile_abort(&o);
        return false;
    }
    if (bg_outfile_commit(&o, "dot") != BRAID_OK)
        return cli_err("%s", braid_last_error());
    return true;
}

int cli_dot(int argc, char **argv) {
    dot_args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc < 0) cli_print_help(stdout);
    if (rc != CLI_EXIT_OK) return rc < 0 ? CLI_EXIT_OK : rc;
    if (a.out && cli_same_file(a.out, a.file))
        return cli_fail("dot: refusing to overwrite the graph file %s with "
                        "the output",
                        a.file);
    char *dot = NULL;
    if (a.format != DOT_TEXT && !(dot = find_dot()))
        return cli_fail("dot: cannot render %s: Graphviz's 'dot' program is "
                        "not installed (not found on PATH); install Graphviz "
                        "or write DOT text with -o FILE.dot",
                        a.out);
    braid_graph *g = NULL;
    braid_plan *p = NULL;
    if (a.plan || cli_is_plan_file(a.file))
        p = cli_compile_file(a.file, &a.flags, &g);
    else
        g = cli_load_graph(a.file);
    bool ok = p || (g && !a.plan);
    if (ok && !a.plan) { /* a plan file's graph view */
        braid_plan_free(p);
        p = NULL;
    }
    if (ok && a.out) {
        ok = write_file(&a, dot, g, p);
        if (ok) /* as compile does: say what was written */
            printf("wrote %s: the %s of %s\n", a.out, p ? "plan" : "graph",
                   a.file);
    } else if (ok) {
        ok = write_dot(g, p, stdout);
    }
    free(dot);
    braid_plan_free(p);
    braid_graph_free(g);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
