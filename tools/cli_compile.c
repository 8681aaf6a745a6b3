/* tools/cli_compile.c — the compile flags run, info, dot and compile share
 * (--devices, --dump-after, --no-<pass>, --streams, --chunks, --arch), the
 * command line parser of info, dot and compile, and opening a file: a
 * .graph file is loaded and compiled, a plan file (recognised by its magic
 * bytes, whatever its name) is loaded. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include "codegen/codegen.h"
#include "runtime/planfile/planfile.h"

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
    {"--no-strided", BRAID_PASS_STRIDED},
    {"--no-channels-last", BRAID_PASS_CHANNELS_LAST},
};

/* Compile flags that take a value. */
static const char *const valued[] = {
    "--devices", "--dump-after",   "--streams", "--chunks",         "--arch",
    "--shards",  "--shard-inputs", "--device",  "--fold-generators"};

void cli_print_compile_help(FILE *out) {
    fputs("compile options (compile, run, info, dot --plan):\n"
          "  --devices LIST            devices to compile for, e.g. cpu or "
          "cpu,cuda:0\n"
          "                            (default: every device found; a GPU "
          "this machine\n"
          "                            lacks still compiles, but the plan "
          "cannot run).\n"
          "                            With the cpu listed, a cost model "
          "places each node\n"
          "                            (small graphs stay on the cpu: see "
          "info --verbose);\n"
          "                            without it (--devices cuda:0) "
          "everything a GPU can\n"
          "                            run runs there. Device hints in the "
          ".graph file\n"
          "                            (device=\"cuda:0\" on a node) "
          "always win\n"
          "  --dump-after PASS         print the IR to stderr after PASS "
          "(verify, simplify,\n"
          "                            place, copies, channels_last, fuse, "
          "chunk,\n"
          "                            streams, schedule, memory, "
          "verify_plan)\n"
          "  --no-simplify, --no-fuse, --no-chunk, --no-reuse, --no-strided,\n"
          "  --no-channels-last        turn an optional pass off\n"
          "  --streams N               compute streams per GPU, 1..64 "
          "(default 4)\n"
          "  --chunks N                pipeline chunks: 0 cost model "
          "(default), 1 never,\n"
          "                            N up to 1024\n"
          "  --arch LIST               GPU architectures to build the "
          "kernels for ahead of\n"
          "                            time, e.g. sm_90,sm_80, or none "
          "(default: the GPUs\n"
          "                            found, else sm_90)\n"
          "  --device N                run on GPU N: the same as --devices "
          "cuda:N\n"
          "  --tf32                    f32 matmuls on a GPU may use TF32 "
          "tensor cores\n"
          "                            (~1e-3 relative error; "
          "allow_tf32)\n"
          "  --shards N                replicate the graph over the first N "
          "GPUs listed,\n"
          "                            splitting inputs along dim 0 "
          "(docs/multi-gpu.md)\n"
          "  --shard-inputs LIST       the inputs to split (default: every "
          "input whose\n"
          "                            dim 0 divides by N)\n"
          "  --fold-generators SIZE    make random/iota nodes of at most "
          "SIZE bytes (4M,\n"
          "                            512K) constants at compile time: "
          "runs stop\n"
          "                            regenerating weights; the plan grows "
          "by them\n"
          "  --shape NAME=DIMS         an ONNX model's input shape, e.g. "
          "input_ids=1x128\n"
          "                            (binds its symbolic dims; "
          "repeatable)\n"
          "  --const NAME=FILE         freeze an ONNX model's input NAME to "
          "the tensor in\n"
          "                            FILE (.npy or .pb) at import: for "
          "inputs that carry\n"
          "                            shapes (Reshape's shape, Slice's "
          "starts, ...)\n"
          "  --cpu-fallback            a plan file for a GPU this machine "
          "lacks: run its\n"
          "                            graph compiled again for the cpu "
          "instead of failing\n",
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

/* "4194304", "4M", "512K", "1G" (binary units) into *out; > 0. */
static bool parse_size(const char *s, size_t *out) {
    if (!s || *s < '0' || *s > '9') return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = !*end                                    ? 0
                : !strcmp(end, "K") || !strcmp(end, "k") ? 10
                : !strcmp(end, "M") || !strcmp(end, "m") ? 20
                : !strcmp(end, "G") || !strcmp(end, "g") ? 30
                                                         : -1;
    if (errno || shift < 0 || v == 0 || v > (SIZE_MAX >> shift)) return false;
    *out = (size_t)(v << shift);
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
    } else if (!strcmp(name, "--arch")) {
        int sm[32];
        uint32_t n = 0;
        if (bc_parse_archs(value, sm, 32, &n) != BRAID_OK) {
            const char *msg = braid_last_error();
            const char *why = strstr(msg, "is not a CUDA architecture");
            if (why) /* "sm_200 is not a CUDA architecture (known: ...)" */
                return cli_usage_error("--arch %s: %s", value,
                                       strstr(msg, "\": ") + 3);
            return cli_usage_error("--arch expects a list like sm_90,sm_80, "
                                   "or none, got '%s'",
                                   value);
        }
        f->archs = value;
    } else if (!strcmp(name, "--shards")) {
        if (!parse_range(value, 1, 64, &f->shards))
            return cli_usage_error("--shards expects 1..64, got '%s'", value);
    } else if (!strcmp(name, "--shard-inputs")) {
        if (!*value)
            return cli_usage_error("--shard-inputs expects a list of input "
                                   "names, e.g. x,labels");
        f->shard_inputs = value;
    } else if (!strcmp(name, "--fold-generators")) {
        if (!parse_size(value, &f->fold))
            return cli_usage_error("--fold-generators expects a size in "
                                   "bytes, e.g. 4194304, 4M or 512K, got "
                                   "'%s'",
                                   value);
    } else if (!strcmp(name, "--device")) {
        if (!parse_range(value, 0, 63, &f->device))
            return cli_usage_error("--device expects a GPU index 0..63, got "
                                   "'%s'",
                                   value);
        snprintf(f->device_list, sizeof f->device_list, "cuda:%d", f->device);
    } else if (!parse_range(value, 0, 1024, &f->chunks)) {
        return cli_usage_error("--chunks expects 0..1024, got '%s'", value);
    }
    return CLI_EXIT_OK;
}

/* --device N is --devices cuda:N: both at once is a usage error. */
static int check_device_flags(const cli_compile_flags *f) {
    if (f->devices && f->device_list[0])
        return cli_usage_error("--device %d and --devices %s: give one "
                               "(--device N means --devices cuda:N)",
                               f->device, f->devices);
    return CLI_EXIT_OK;
}

bool cli_compile_flag(cli_compile_flags *f, int argc, char **argv, int *i,
                      int *rc) {
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    *rc = CLI_EXIT_OK;
    if (len == strlen("--cpu-fallback") && !strncmp(arg, "--cpu-fallback", len)) {
        if (eq) *rc = cli_usage_error("--cpu-fallback takes no value");
        f->cpu_fallback = true;
        return true;
    }
    if (len == strlen("--shape") && !strncmp(arg, "--shape", len)) {
        /* an import option (ONNX models), not a compile one: not `given` */
        const char *value = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        if (!value || !cli_onnx_add_shape(value))
            *rc = cli_usage_error("--shape expects NAME=DIMS, e.g. "
                                  "input_ids=1x128");
        return true;
    }
    if (len == strlen("--const") && !strncmp(arg, "--const", len)) {
        const char *value = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        if (!value || !strchr(value, '='))
            *rc = cli_usage_error("--const expects NAME=FILE (.npy or .pb)");
        else if (!cli_onnx_add_const(value))
            *rc = CLI_EXIT_FAIL;
        return true;
    }
    if (len == strlen("--tf32") && !strncmp(arg, "--tf32", len)) {
        if (eq) *rc = cli_usage_error("--tf32 takes no value");
        f->tf32 = f->given = true;
        return true;
    }
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
        if (*rc == CLI_EXIT_OK) *rc = check_device_flags(f);
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
    o->archs = f->archs;
    o->allow_tf32 = f->tf32;
    o->fold_generators = f->fold;
    o->shards = f->shards;
    o->shard_inputs = f->shard_inputs;
    if (f->device_list[0]) o->devices = f->device_list;
}

size_t cli_compile_flag_names(const char **names, size_t max) {
    size_t n = 0;
    for (size_t k = 0; k < sizeof no_pass / sizeof no_pass[0] && n < max; k++)
        names[n++] = no_pass[k].name;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0] && n < max; k++)
        names[n++] = valued[k];
    if (n < max) names[n++] = "--cpu-fallback";
    if (n < max) names[n++] = "--tf32";
    return n;
}

/* Unknown option arg of cmd: a usage error suggesting the nearest of the
 * compile flags, the command's own options and --help. */
static int unknown_option(const char *cmd, const char *arg,
                          const cli_extra_option *extra, size_t nextra) {
    const char *names[64];
    size_t n = cli_compile_flag_names(names, 48);
    for (size_t k = 0; k < nextra && n < 63; k++)
        names[n++] = extra[k].name;
    names[n++] = "--help";
    return cli_unknown_option(cmd, arg, names, n);
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
                return cli_usage_error("%s: expects one FILE, got '%s' "
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
            return unknown_option(cmd, arg, extra, nextra);
        }
    }
    if (!*file)
        return cli_usage_error("%s: missing FILE.graph or FILE.plan", cmd);
    return CLI_EXIT_OK;
}

bool cli_is_plan_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[BR_PLANFILE_MAGIC_LEN];
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == sizeof magic &&
           memcmp(magic, BR_PLANFILE_MAGIC, BR_PLANFILE_MAGIC_LEN) == 0;
}

/* Reads the whole file (malloc'd into *data). */
static bool read_file(const char *path, unsigned char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return cli_err("%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        unsigned char *more =
            cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!more) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (!buf) return cli_err("%s: out of memory reading the file", path);
    if (bad) {
        free(buf);
        return cli_err("%s: reading failed", path);
    }
    *data = buf;
    *size = len;
    return true;
}

/* Nodes the plan runs on GPUs. */
static uint32_t gpu_nodes(const braid_plan *plan) {
    braid_plan_summary s;
    uint32_t n = 0;
    if (braid_plan_summary_get(plan, &s) != BRAID_OK) return 0;
    for (uint32_t i = 0; i < s.devices; i++) {
        braid_plan_device_info d;
        if (braid_plan_device_get(plan, i, &d) == BRAID_OK &&
            strcmp(d.name, "cpu") != 0)
            n += d.nodes;
    }
    return n;
}

/* --arch builds kernels for GPU nodes only: say so when there are none,
 * rather than dropping the flag in silence. */
static void warn_unused_arch(const cli_compile_flags *f,
                             const braid_plan *plan) {
    if (!f->archs || !strcmp(f->archs, "none") || gpu_nodes(plan) > 0) return;
    fprintf(stderr,
            "braid: warning: --arch %s has no effect: the plan runs nothing "
            "on a GPU (%s); list a GPU with --devices (e.g. --devices "
            "cuda:0) to build kernels\n",
            f->archs,
            f->devices ? "see braid info --verbose for why"
                       : "no --devices given and no usable GPU found");
}

static bool compile_graph(const char *path, const cli_compile_flags *f,
                          int threads, cli_input *in) {
    braid_compile_options co;
    cli_compile_options(f, &co);
    co.num_threads = threads < 0 ? 0 : threads;
    double t0 = cli_now();
    if (braid_compile(in->graph, &co, &in->plan) != BRAID_OK)
        return cli_err("%s: compile failed: %s", path, braid_last_error());
    in->ms = (cli_now() - t0) * 1e3;
    warn_unused_arch(f, in->plan);
    return true;
}

/* Loads plan file path; with compile flags, compiles its graph again. */
static bool open_plan(const char *path, const cli_compile_flags *f, int threads,
                      bool check_devices, cli_input *in) {
    unsigned char *data = NULL;
    size_t size = 0;
    double t0 = cli_now();
    if (!read_file(path, &data, &size)) return false;
    braid_load_options lo;
    braid_load_options_init(&lo);
    lo.num_threads = threads;
    /* With compile flags the stored plan is only a carrier of its graph,
     * which is compiled again below: its devices need not be here, and
     * --cpu-fallback has nothing to fall back from. */
    if (f->given) check_devices = false;
    lo.cpu_fallback = f->cpu_fallback && !f->given;
    braid_status s;
    if (check_devices) {
        s = braid_plan_load_memory(data, size, &lo, &in->plan);
    } else { /* info and dot describe a GPU plan on any machine */
        size_t len = strlen(path) + 16;
        char *prefix = malloc(len);
        if (prefix) snprintf(prefix, len, "plan file %s", path);
        s = br_planfile_load(data, size, &lo, prefix ? prefix : "plan file",
                             &in->plan);
        free(prefix);
    }
    free(data);
    in->ms = (cli_now() - t0) * 1e3;
    in->plan_file = true;
    in->file_bytes = size;
    if (s != BRAID_OK) {
        in->plan = NULL;
        char buf[1024];
        const char *msg = cli_cuda_text(braid_last_error(), buf, sizeof buf);
        const char *hint = s == BRAID_ERR_DEVICE
                               ? " (--cpu-fallback does that here)"
                               : "";
        if (strstr(msg, path)) return cli_err("%s%s", msg, hint);
        return cli_err("%s: %s%s", path, msg, hint);
    }
    char buf[512];
    if (br_planfile_was_replaced(in->plan))
        fprintf(stderr,
                "braid: %s: no usable GPU here (%s): running the plan's "
                "graph compiled again for the cpu (--cpu-fallback)\n",
                path, cli_cuda_text(braid_cuda_status(), buf, sizeof buf));
    const braid_graph *g = braid_plan_graph(in->plan);
    in->graph = g ? bg_graph_clone(g) : NULL;
    if (!in->graph) return cli_err("%s: out of memory copying the graph", path);
    if (!f->given) return true;
    fprintf(stderr,
            "braid: %s is a plan file: compiling its graph again with the "
            "given compile options\n",
            path);
    braid_plan_free(in->plan);
    in->plan = NULL;
    in->recompiled = true;
    return compile_graph(path, f, threads, in);
}

bool cli_open_file(const char *path, const cli_compile_flags *f, int threads,
                   bool check_devices, cli_input *in) {
    memset(in, 0, sizeof *in);
    bool ok;
    if (cli_is_plan_file(path)) {
        ok = open_plan(path, f, threads, check_devices, in);
    } else {
        in->graph = cli_load_graph(path);
        ok = in->graph && compile_graph(path, f, threads, in);
    }
    if (!ok) cli_input_free(in);
    return ok;
}

void cli_input_free(cli_input *in) {
    if (!in) return;
    braid_plan_free(in->plan);
    braid_graph_free(in->graph);
    memset(in, 0, sizeof *in);
}

braid_plan *cli_compile_file(const char *path, const cli_compile_flags *f,
                             braid_graph **graph) {
    cli_input in;
    *graph = NULL;
    if (!cli_open_file(path, f, -1, false, &in)) return NULL;
    *graph = in.graph;
    return in.plan;
}

void cli_log_nvrtc(void) {
    const char *env = getenv("BRAID_LOG");
    if (!env || !*env || !strcmp(env, "0")) return;
    bc_stats st;
    bc_stats_get(&st);
    fprintf(stderr,
            "braid: nvrtc: %llu compilation%s, %llu cache hit%s (%llu memory, "
            "%llu disk)\n",
            (unsigned long long)st.compiles, st.compiles == 1 ? "" : "s",
            (unsigned long long)(st.memory_hits + st.disk_hits),
            st.memory_hits + st.disk_hits == 1 ? "" : "s",
            (unsigned long long)st.memory_hits,
            (unsigned long long)st.disk_hits);
}
