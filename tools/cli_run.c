/* tools/cli_run.c — `braid run`: compile a .graph file, run it on random or
 * given inputs, print output statistics and timings, optionally write the
 * outputs as .npy files and compare them with the reference evaluator.
 * --profile / --trace FILE.json run once unprofiled to warm up, then
 * profile --runs N runs (default: --repeat) and print the profiler's table
 * and the compile report / write the last run's timeline
 * (docs/profiler.md). */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include "braid/onnx.h"
#include "runtime/npy/npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One --input NAME=FILE option. */
typedef struct run_input_arg {
    char *name;       /* graph input name (points into argv, split at '=') */
    const char *path; /* .npy file */
    bool used;        /* matched a graph input */
} run_input_arg;

/* The parsed command line. */
typedef struct run_options {
    const char *file;          /* the .graph file */
    uint64_t seed;             /* --seed */
    run_input_arg *inputs;     /* --input options, ninputs of them */
    int ninputs;               /* number of --input options */
    const char *output_dir;    /* --output-dir or NULL */
    const char *save_plan;     /* --save-plan FILE.plan or NULL */
    bool check;                /* --check */
    cli_compile_flags compile; /* --devices, --dump-after, --no-<pass>, ... */
    int threads;               /* --threads (0: one per core) */
    int repeat;                /* --repeat (≥ 1) */
    bool profile;              /* --profile: print the profiler's table */
    const char *trace;         /* --trace FILE.json, or NULL */
    int runs;                  /* --runs (profiled runs; 0: --repeat) */
    bool verbose;              /* --verbose: where each node runs, why */
    cli_bench_options bench;   /* --warmup, --iterations, --duration, ... */
} run_options;

/* One graph tensor bound to a host buffer. */
typedef struct run_tensor {
    const char *name;             /* graph input/output name */
    braid_dtype dtype;            /* element type */
    int rank;                     /* number of dims */
    int64_t dims[BRAID_MAX_RANK]; /* shape */
    int64_t numel;                /* elements */
    size_t bytes;                 /* numel × dtype size */
    void *data;                   /* host buffer (malloc'd) */
    void *ref;                    /* reference result (outputs, --check) */
    char *path;                   /* output file (--output-dir) or NULL */
} run_tensor;

/* Everything one `braid run` holds, freed by run_free. */
typedef struct run_state {
    run_options opt;    /* command line */
    braid_graph *graph; /* the loaded graph */
    run_tensor *in;     /* one per graph input */
    uint32_t nin;       /* graph inputs */
    run_tensor *out;    /* one per graph output */
    uint32_t nout;      /* graph outputs */
    braid_plan *plan;   /* compiled or loaded plan */
    bool loaded;        /* plan loaded from a plan file as it is */
    double open_ms;     /* braid_compile, or reading + loading the plan */
    braid_exec *exec;   /* its executor */
    FILE *json;         /* --json: the real stdout (everything else goes
                           to stderr), or NULL */
} run_state;

/* ---- command line -------------------------------------------------------- */

/* Parses a decimal integer in [lo, hi] filling the whole string. */
static bool parse_int(const char *s, long long lo, long long hi,
                      long long *out) {
    if (!s || !*s || (s[0] == '-' && lo >= 0)) return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || s[0] < '0' || s[0] > '9') return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

/* Records one --input NAME=FILE. */
static int add_input_arg(run_options *o, char *arg) {
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return cli_usage_error("--input expects NAME=FILE.npy, got '%s'", arg);
    *eq = '\0';
    for (int k = 0; k < o->ninputs; k++)
        if (!strcmp(o->inputs[k].name, arg))
            return cli_usage_error("--input %s given twice", arg);
    o->inputs[o->ninputs++] = (run_input_arg){arg, eq + 1, false};
    return CLI_EXIT_OK;
}

/* Applies option `name` with its value (NULL for flags). */
static int apply_option(run_options *o, const char *name, char *value) {
    long long v = 0;
    if (!strcmp(name, "--seed")) {
        if (!parse_u64(value, &o->seed))
            return cli_usage_error("--seed expects an integer >= 0, got '%s'",
                                   value);
    } else if (!strcmp(name, "--threads")) {
        if (!parse_int(value, 0, 4096, &v))
            return cli_usage_error("--threads expects 0..4096, got '%s'",
                                   value);
        o->threads = (int)v;
    } else if (!strcmp(name, "--repeat")) {
        if (!parse_int(value, 1, 1000000, &v))
            return cli_usage_error("--repeat expects 1..1000000, got '%s'",
                                   value);
        o->repeat = (int)v;
    } else if (!strcmp(name, "--runs")) {
        if (!parse_int(value, 1, 1000000, &v))
            return cli_usage_error("--runs expects 1..1000000, got '%s'",
                                   value);
        o->runs = (int)v;
    } else if (!strcmp(name, "--trace")) {
        if (!*value) return cli_usage_error("--trace expects a FILE.json");
        o->trace = value;
    } else if (!strcmp(name, "--input")) {
        return add_input_arg(o, value);
    } else if (!strcmp(name, "--output-dir")) {
        if (!*value) return cli_usage_error("--output-dir expects a directory");
        o->output_dir = value;
    } else if (!strcmp(name, "--save-plan")) {
        if (!*value) return cli_usage_error("--save-plan expects a FILE.plan");
        o->save_plan = value;
    } else {
        return cli_bench_option(&o->bench, name, value);
    }
    return CLI_EXIT_OK;
}

/* run's own options that take a value, then its flags (for "did you
 * mean"); the benchmark's are in cli_bench.c. */
static const char *const valued_names[] = {
    "--seed",       "--input",    "--output-dir",  "--threads",
    "--repeat",     "--runs",     "--trace",       "--warmup",
    "--iterations", "--duration", "--cuda-graphs", "--save-plan"};
static const char *const flag_names[] = {"--check", "--profile", "--verbose",
                                         "--no-transfers", "--json"};

static bool option_takes_value(const char *name) {
    for (size_t k = 0; k < sizeof valued_names / sizeof valued_names[0]; k++)
        if (!strcmp(name, valued_names[k])) return true;
    return false;
}

static int unknown_run_option(const char *arg) {
    const char *names[64];
    size_t n = cli_compile_flag_names(names, 40);
    for (size_t k = 0; k < sizeof valued_names / sizeof valued_names[0]; k++)
        names[n++] = valued_names[k];
    for (size_t k = 0; k < sizeof flag_names / sizeof flag_names[0]; k++)
        names[n++] = flag_names[k];
    names[n++] = "--help";
    return cli_unknown_option("run", arg, names, n);
}

/* A flag of run's (no value); false when arg is none. */
static bool run_flag(run_options *o, const char *arg, int *rc) {
    bool *flag = !strcmp(arg, "--check")          ? &o->check
                 : !strcmp(arg, "--profile")      ? &o->profile
                 : !strcmp(arg, "--verbose")      ? &o->verbose
                 : !strcmp(arg, "-v")             ? &o->verbose
                 : !strcmp(arg, "--no-transfers") ? &o->bench.no_transfers
                 : !strcmp(arg, "--json")         ? &o->bench.json
                                                  : NULL;
    if (flag) {
        *flag = true;
        return true;
    }
    size_t len = strcspn(arg, "=");
    for (size_t k = 0; arg[len] && k < sizeof flag_names / sizeof *flag_names;
         k++)
        if (strlen(flag_names[k]) == len && !strncmp(arg, flag_names[k], len)) {
            *rc = cli_usage_error("%s takes no value", flag_names[k]);
            return true;
        }
    return false;
}

/* Parses argv into o; o->inputs must have room for argc entries. Returns
 * CLI_EXIT_OK, or an exit status to return (help: -1 then exit 0). */
static int parse_args(int argc, char **argv, run_options *o) {
    bool only_files = false;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        int rc = CLI_EXIT_OK;
        if (only_files || arg[0] != '-' || !arg[1]) {
            if (o->file)
                return cli_usage_error("run: expects one FILE.graph, got "
                                       "'%s' and '%s'",
                                       o->file, arg);
            o->file = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_files = true;
        } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            return -1;
        } else if (run_flag(o, arg, &rc)) {
            if (rc != CLI_EXIT_OK) return rc;
        } else if (cli_compile_flag(&o->compile, argc, argv, &i, &rc)) {
            if (rc != CLI_EXIT_OK) return rc;
        } else {
            char *eq = strchr(arg, '=');
            if (eq) *eq = '\0';
            if (!option_takes_value(arg)) {
                if (eq) *eq = '=';
                return unknown_run_option(arg);
            }
            char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) return cli_usage_error("%s expects a value", arg);
            rc = apply_option(o, arg, value);
            if (rc != CLI_EXIT_OK) return rc;
        }
    }
    if (!o->file) return cli_usage_error("run: missing FILE.graph");
    if (o->runs && !o->profile && !o->trace)
        return cli_usage_error("--runs counts profiled runs: give --profile "
                               "or --trace too (or use --repeat)");
    int rc = cli_bench_check(&o->bench, o->repeat > 0, o->profile || o->trace);
    if (o->repeat == 0) o->repeat = 1;
    return rc;
}

/* ---- inputs and outputs -------------------------------------------------- */

/* Fills t's type from graph tensor id and allocates t->data. */
static bool bind_tensor(const braid_graph *g, braid_tensor id, const char *name,
                        run_tensor *t) {
    t->name = name;
    braid_tensor_info(g, id, &t->dtype, &t->rank, t->dims);
    t->numel = braid_tensor_numel(g, id);
    t->bytes = (size_t)t->numel * braid_dtype_size(t->dtype);
    t->data = malloc(t->bytes ? t->bytes : 1);
    if (!t->data) cli_fail("out of memory for %s (%zu bytes)", name, t->bytes);
    return t->data != NULL;
}

static void type_str(braid_dtype dtype, int rank, const int64_t *dims,
                     char *buf, size_t size) {
    int n = snprintf(buf, size, "%s[", braid_dtype_name(dtype));
    for (int k = 0; k < rank && n > 0 && (size_t)n < size; k++)
        n += snprintf(buf + n, size - (size_t)n, "%s%lld", k ? "," : "",
                      (long long)dims[k]);
    if (n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "]");
}

/* Reads the .npy file for input t; its dtype and shape must match exactly. */
static bool load_input(run_tensor *t, const char *path) {
    br_npy_array a;
    if (!cli_read_tensor(path, t->dtype, &a)) {
        cli_fail("input '%s': could not be read", t->name);
        return false;
    }
    bool same = a.dtype == t->dtype && a.rank == t->rank &&
                memcmp(a.dims, t->dims, sizeof(int64_t) * (size_t)t->rank) == 0;
    if (!same) {
        char want[160], got[160];
        type_str(t->dtype, t->rank, t->dims, want, sizeof want);
        type_str(a.dtype, a.rank, a.dims, got, sizeof got);
        cli_fail("input '%s': %s holds %s but the graph expects %s", t->name,
                 path, got, want);
    } else {
        memcpy(t->data, a.data, t->bytes);
    }
    br_npy_array_free(&a);
    return same;
}

/* "--input q: the graph has no input of that name; its inputs: x f32[..]"
 * (as braid_run's message lists them). */
static bool no_such_input(const run_state *st, const char *name) {
    fprintf(stderr,
            "braid: --input %s: the graph has no input of that name; "
            "its inputs: ",
            name);
    for (uint32_t i = 0; i < st->nin; i++) {
        char type[160];
        const run_tensor *t = &st->in[i];
        type_str(t->dtype, t->rank, t->dims, type, sizeof type);
        fprintf(stderr, "%s%s %s", i ? ", " : "", t->name, type);
    }
    fprintf(stderr, "%s\n", st->nin ? "" : "none");
    return false;
}

/* Whether --input NAME names graph input `name`: the same, or an ONNX
 * input name braid spells differently (braid_onnx_input_name). */
static bool same_input_name(const char *given, const char *name) {
    char buf[256];
    if (!strcmp(given, name)) return true;
    return braid_onnx_input_name(given, buf, sizeof buf) < sizeof buf &&
           !strcmp(buf, name);
}

/* Binds every graph input: from its --input file or random. */
static bool prepare_inputs(run_state *st) {
    st->nin = braid_graph_input_count(st->graph);
    st->in = calloc(st->nin ? st->nin : 1, sizeof *st->in);
    if (!st->in) return cli_err("out of memory");
    for (uint32_t i = 0; i < st->nin; i++) {
        const char *name = NULL;
        braid_tensor id = BRAID_NONE;
        braid_graph_input(st->graph, i, &name, &id);
        run_tensor *t = &st->in[i];
        if (!bind_tensor(st->graph, id, name, t)) return false;
        run_input_arg *arg = NULL;
        for (int k = 0; k < st->opt.ninputs; k++)
            if (same_input_name(st->opt.inputs[k].name, name))
                arg = &st->opt.inputs[k];
        if (arg) {
            arg->used = true;
            if (!load_input(t, arg->path)) return false;
        } else {
            cli_fill_random(t->dtype, t->data, t->numel, st->opt.seed, name);
        }
    }
    for (int k = 0; k < st->opt.ninputs; k++)
        if (!st->opt.inputs[k].used)
            return no_such_input(st, st->opt.inputs[k].name);
    return true;
}

/* Chooses DIR/<name>.npy for output t and refuses paths that are --input
 * files. */
static bool output_path(run_state *st, run_tensor *t) {
    char file[201];
    size_t flen = strlen(t->name);
    for (size_t k = 0; k < flen && k < 200; k++) {
        char c = t->name[k];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        file[k] = ok ? c : '_';
    }
    file[flen < 200 ? flen : 200] = '\0';
    if (!cli_safe_file_name(file) || flen > 200)
        return cli_err("output '%s': the name cannot be used as a file name "
                       "(\".\", \"..\" or over 200 characters)",
                       t->name);
    /* "out/" and "out" give out/y.npy, not out//y.npy */
    size_t dlen = strlen(st->opt.output_dir);
    while (dlen > 1 && st->opt.output_dir[dlen - 1] == '/')
        dlen--;
    size_t len = dlen + strlen(file) + 6;
    t->path = malloc(len);
    if (!t->path) return cli_err("out of memory");
    snprintf(t->path, len, "%.*s%s%s.npy", (int)dlen, st->opt.output_dir,
             st->opt.output_dir[dlen - 1] == '/' ? "" : "/", file);
    for (int k = 0; k < st->opt.ninputs; k++)
        if (cli_same_file(t->path, st->opt.inputs[k].path))
            return cli_err("refusing to overwrite input file %s with output "
                           "'%s'",
                           st->opt.inputs[k].path, t->name);
    return true;
}

static bool prepare_outputs(run_state *st) {
    st->nout = braid_graph_output_count(st->graph);
    if (st->nout == 0)
        return cli_err("%s: the graph has no outputs", st->opt.file);
    st->out = calloc(st->nout, sizeof *st->out);
    if (!st->out) return cli_err("out of memory");
    if (st->opt.output_dir && !cli_make_dirs(st->opt.output_dir)) return false;
    for (uint32_t i = 0; i < st->nout; i++) {
        const char *name = NULL;
        braid_tensor id = BRAID_NONE;
        braid_graph_output(st->graph, i, &name, &id);
        run_tensor *t = &st->out[i];
        if (!bind_tensor(st->graph, id, name, t)) return false;
        if (st->opt.output_dir && !output_path(st, t)) return false;
        if (st->opt.check && !(t->ref = malloc(t->bytes ? t->bytes : 1)))
            return cli_err("out of memory");
    }
    return true;
}

/* ---- compile, run, report ------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Binding arrays for braid_run / braid_reference_run; ref picks the
 * reference buffers for outputs. Caller frees both. */
static bool make_bindings(const run_state *st, bool ref,
                          braid_input_binding **in,
                          braid_output_binding **out) {
    *in = calloc(st->nin ? st->nin : 1, sizeof **in);
    *out = calloc(st->nout, sizeof **out);
    if (!*in || !*out) return cli_err("out of memory");
    for (uint32_t i = 0; i < st->nin; i++)
        (*in)[i] = (braid_input_binding){st->in[i].name, st->in[i].data,
                                         st->in[i].bytes};
    for (uint32_t i = 0; i < st->nout; i++)
        (*out)[i] = (braid_output_binding){
            st->out[i].name, ref ? st->out[i].ref : st->out[i].data,
            st->out[i].bytes};
    return true;
}

/* Compiles the .graph file, or loads the plan file (cli_open_file). */
static bool open_input(run_state *st) {
    cli_input in;
    if (!cli_open_file(st->opt.file, &st->opt.compile, st->opt.threads, true,
                       &in))
        return false;
    st->graph = in.graph; /* run_free frees both */
    st->plan = in.plan;
    st->loaded = in.plan_file && !in.recompiled;
    st->open_ms = in.ms;
    return true;
}

static bool compile_plan(run_state *st) {
    char buf[1024];
    cli_bench_apply_env(&st->opt.bench);
    if (braid_exec_new(st->plan, &st->exec) != BRAID_OK)
        return cli_err("cannot create an executor: %s",
                       cli_cuda_text(braid_last_error(), buf, sizeof buf));
    printf("%s: %.3f ms\n", st->loaded ? "load" : "compile", st->open_ms);
    cli_print_placement_note(stdout, st->plan);
    if (st->opt.verbose) cli_print_placement(stdout, st->plan);
    cli_log_nvrtc();
    return true;
}

/* The profiler's figures after the profiled runs: the table (--profile),
 * the timeline (--trace), the overlap line. */
static bool report_profile(const run_state *st) {
    braid_profile *pr = NULL;
    if (braid_exec_profile(st->exec, &pr) != BRAID_OK)
        return cli_err("profile: %s", braid_last_error());
    bool ok = true;
    if (st->opt.profile) {
        braid_compile_report cr;
        putchar('\n');
        if (braid_plan_compile_report(st->plan, &cr) == BRAID_OK)
            braid_compile_report_print(&cr, stdout);
        putchar('\n');
        braid_profile_print(pr, stdout);
        putchar('\n');
    }
    if (st->opt.trace) {
        if (braid_profile_write_trace(pr, st->opt.trace) != BRAID_OK)
            ok = cli_err("--trace: %s", braid_last_error());
        else
            printf("wrote trace %s (%u span%s on %u track%s)\n", st->opt.trace,
                   pr->nspans, pr->nspans == 1 ? "" : "s", pr->ntracks,
                   pr->ntracks == 1 ? "" : "s");
    }
    printf("overlap: %.2f (busy %.3f ms over %.3f ms wall)\n", pr->overlap,
           pr->busy_ms, pr->wall_ms);
    braid_profile_free(pr);
    return ok;
}

/* With --profile or --trace: one run unprofiled (warm-up: caches, first
 * touches, cuBLAS heuristics), then profiling on. */
static bool start_profiling(run_state *st, const braid_input_binding *in,
                            const braid_output_binding *out) {
    if (!st->opt.profile && !st->opt.trace) return true;
    if (braid_run(st->exec, in, st->nin, out, st->nout) != BRAID_OK)
        return cli_err("warm-up run failed: %s", braid_last_error());
    if (braid_exec_set_profiling(st->exec, true) != BRAID_OK)
        return cli_err("cannot profile: %s", braid_last_error());
    return true;
}

/* The benchmark (cli_bench.c): the outputs of its last run stay in the
 * host buffers for printing, writing and --check. */
static bool bench_plan(run_state *st) {
    cli_bench_bindings bb = {.nin = st->nin, .nout = st->nout, .device = -1};
    bool ok = make_bindings(st, false, &bb.in, &bb.out);
    if (ok && st->opt.bench.no_transfers)
        ok = cli_bench_to_device(st->plan, &bb);
    cli_bench_result r;
    bool ran = ok && cli_bench_run(st->exec, &bb, &st->opt.bench, &r);
    r.device = bb.device;
    if (bb.in && !cli_bench_from_device(&bb, ran)) ran = false;
    if (ran && st->opt.bench.json)
        cli_bench_print_json(st->json, st->opt.file, &st->opt.bench, &r);
    else if (ran)
        cli_bench_print(stdout, &st->opt.bench, &r);
    free(bb.in);
    free(bb.out);
    return ran;
}

/* Runs the plan opt.repeat times (--runs when profiling); prints the first
 * and the median time. */
static bool run_plan(run_state *st) {
    if (st->opt.bench.on) return bench_plan(st);
    braid_input_binding *in = NULL;
    braid_output_binding *out = NULL;
    bool profiling = st->opt.profile || st->opt.trace;
    if (profiling && st->opt.runs) st->opt.repeat = st->opt.runs;
    double *times = calloc((size_t)st->opt.repeat, sizeof *times);
    bool ok = times && make_bindings(st, false, &in, &out);
    ok = ok && start_profiling(st, in, out);
    for (int r = 0; ok && r < st->opt.repeat; r++) {
        double t0 = cli_now();
        if (braid_run(st->exec, in, st->nin, out, st->nout) != BRAID_OK) {
            cli_fail("run failed: %s", braid_last_error());
            ok = false;
        }
        times[r] = cli_now() - t0;
    }
    if (ok && st->opt.repeat == 1) {
        printf("run: %.3f ms\n", times[0] * 1e3);
    } else if (ok) {
        double first = times[0];
        qsort(times, (size_t)st->opt.repeat, sizeof *times, cmp_double);
        printf("run: first %.3f ms, median %.3f ms over %d runs%s\n",
               first * 1e3, times[st->opt.repeat / 2] * 1e3, st->opt.repeat,
               profiling ? " (profiled, after one warm-up run)" : "");
    }
    if (ok && profiling) ok = report_profile(st);
    free(times);
    free(in);
    free(out);
    return ok;
}

static void print_outputs(const run_state *st) {
    for (uint32_t i = 0; i < st->nout; i++) {
        const run_tensor *t = &st->out[i];
        char type[160];
        type_str(t->dtype, t->rank, t->dims, type, sizeof type);
        printf("output %s %s: ", t->name, type);
        cli_print_stats(stdout, t->dtype, t->data, t->numel);
        putchar('\n');
    }
}

static bool write_outputs(const run_state *st) {
    for (uint32_t i = 0; st->opt.output_dir && i < st->nout; i++) {
        const run_tensor *t = &st->out[i];
        if (br_npy_write(t->path, t->dtype, t->rank, t->dims, t->data) !=
            BRAID_OK)
            return cli_err("output '%s': %s", t->name, braid_last_error());
        printf("wrote %s\n", t->path);
    }
    return true;
}

/* Progress of the reference evaluator on a terminal: "--check: 42%",
 * rewritten in place at most every 0.2 s. */
typedef struct check_progress {
    double last;  /* when it was last printed */
    bool printed; /* something to erase at the end */
} check_progress;

static void show_progress(void *ctx, double done) {
    check_progress *p = ctx;
    double now = cli_now();
    if (now - p->last < 0.2 || done >= 1.0) return;
    p->last = now;
    p->printed = true;
    fprintf(stderr, "\rbraid: --check: reference evaluator %3.0f%%",
            done * 100);
    fflush(stderr);
}

/* Runs the reference evaluator (on every core, with progress on a
 * terminal) and says how long it took. */
static bool run_reference(const run_state *st, braid_input_binding *in,
                          braid_output_binding *out) {
    check_progress prog = {cli_now(), false};
    braid_reference_options ro;
    braid_reference_options_init(&ro);
    if (isatty(STDERR_FILENO)) {
        ro.progress = show_progress;
        ro.progress_ctx = &prog;
    }
    double t0 = cli_now();
    braid_status s =
        braid_reference_run_with(st->graph, in, st->nin, out, st->nout, &ro);
    if (prog.printed) fprintf(stderr, "\r%50s\r", "");
    if (s != BRAID_OK)
        return cli_err("reference run failed: %s", braid_last_error());
    printf("check: reference evaluator %.3f s\n", cli_now() - t0);
    return true;
}

/* Runs the reference evaluator and compares every output. Returns false on
 * a failure or when any output is over tolerance. */
static bool check_outputs(const run_state *st) {
    braid_input_binding *in = NULL;
    braid_output_binding *out = NULL;
    bool ok = make_bindings(st, true, &in, &out) && run_reference(st, in, out);
    free(in);
    free(out);
    if (!ok) return false;
    int64_t acc = cli_longest_accumulation(st->graph);
    int nfail = 0;
    for (uint32_t i = 0; i < st->nout; i++) {
        const run_tensor *t = &st->out[i];
        cli_compare_result r;
        cli_tolerance(t->dtype, acc, &r.atol, &r.rtol);
        cli_compare(t->dtype, t->data, t->ref, t->numel, &r);
        printf("check %s: max abs err %.3g, max rel err %.3g (tolerance "
               "atol %.3g + rtol %.3g*|ref|): %s\n",
               t->name, r.max_abs, r.max_rel, r.atol, r.rtol,
               r.nbad ? "FAIL" : "ok");
        if (r.nbad) {
            printf("  %lld elements over tolerance; first at flat index "
                   "%lld: got %.9g, reference %.9g\n",
                   (long long)r.nbad, (long long)r.first_bad, r.bad_got,
                   r.bad_ref);
            nfail++;
        }
    }
    if (nfail)
        cli_fail("check failed: %d output%s over tolerance", nfail,
                 nfail == 1 ? "" : "s");
    return nfail == 0;
}

/* --save-plan: the plan as it ran, with what its executor chose (the
 * convolutions' tuning records: docs/plan-format.md, TUNING), so a later
 * `braid run FILE.plan` on the same GPU model times nothing again. */
static bool save_plan(const run_state *st) {
    if (!st->opt.save_plan) return true;
    if (braid_plan_save(st->plan, st->opt.save_plan) != BRAID_OK)
        return cli_err("%s", braid_last_error());
    printf("saved the plan to %s\n", st->opt.save_plan);
    return true;
}

static void run_free(run_state *st) {
    for (uint32_t i = 0; st->in && i < st->nin; i++)
        free(st->in[i].data);
    for (uint32_t i = 0; st->out && i < st->nout; i++) {
        free(st->out[i].data);
        free(st->out[i].ref);
        free(st->out[i].path);
    }
    free(st->in);
    free(st->out);
    braid_exec_free(st->exec);
    braid_plan_free(st->plan);
    braid_graph_free(st->graph);
    free(st->opt.inputs);
    if (st->json) fclose(st->json);
}

/* --json: stdout holds the JSON object alone; the lines run prints
 * otherwise (graph, inputs, compile, outputs, check) go to stderr. */
static bool json_stdout(run_state *st) {
    fflush(stdout);
    int fd = dup(STDOUT_FILENO);
    if (fd < 0 || !(st->json = fdopen(fd, "w")) ||
        dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        if (fd >= 0 && !st->json) close(fd);
        return cli_err("--json: cannot redirect stdout: %s", strerror(errno));
    }
    return true;
}

static void print_header(const run_state *st) {
    printf("graph: %s (%u nodes, %u input%s, %u output%s)\n", st->opt.file,
           braid_graph_node_count(st->graph), st->nin, st->nin == 1 ? "" : "s",
           st->nout, st->nout == 1 ? "" : "s");
    for (uint32_t i = 0; i < st->nin; i++) {
        char type[160];
        const run_tensor *t = &st->in[i];
        type_str(t->dtype, t->rank, t->dims, type, sizeof type);
        const char *from = NULL;
        for (int k = 0; k < st->opt.ninputs; k++)
            if (!strcmp(st->opt.inputs[k].name, t->name))
                from = st->opt.inputs[k].path;
        if (from)
            printf("input %s %s: from %s\n", t->name, type, from);
        else
            printf("input %s %s: random (seed %llu)\n", t->name, type,
                   (unsigned long long)st->opt.seed);
    }
}

int cli_run(int argc, char **argv) {
    run_state st;
    memset(&st, 0, sizeof st);
    st.opt.bench.warmup = -1;
    st.opt.bench.cuda_graphs = -1;
    st.opt.inputs = calloc((size_t)argc + 1, sizeof *st.opt.inputs);
    if (!st.opt.inputs) return cli_fail("out of memory");
    int rc = parse_args(argc, argv, &st.opt);
    if (rc != CLI_EXIT_OK) {
        free(st.opt.inputs);
        if (rc < 0) cli_print_help(stdout);
        return rc < 0 ? CLI_EXIT_OK : rc;
    }
    bool ok = !st.opt.bench.json || json_stdout(&st);
    ok = ok && open_input(&st) && prepare_inputs(&st) && prepare_outputs(&st);
    if (ok) print_header(&st);
    ok = ok && compile_plan(&st) && run_plan(&st);
    if (ok) print_outputs(&st);
    ok = ok && write_outputs(&st);
    if (ok && st.opt.check) ok = check_outputs(&st);
    ok = ok && save_plan(&st);
    run_free(&st);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
