/* tools/braid.c — the braid command-line tool: dispatch, help, version and
 * check. The run, info, dot and compile commands live in cli_run.c,
 * cli_info.c, cli_dot.c and cli_plan.c. See docs/cli.md. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void cli_print_help(FILE *out) {
    fputs(
        "usage: braid <command> [arguments]\n"
        "\n"
        "commands:\n"
        "  check FILE.graph          parse and verify a graph; list its inputs "
        "and outputs\n"
        "  compile FILE.graph [-o FILE.plan] [--report] [options]\n"
        "                            compile a graph ahead of time (kernels "
        "included) and\n"
        "                            save the plan file\n"
        "  run FILE [options]        compile a graph (or load a plan file) "
        "and run it on\n"
        "                            random or given inputs\n"
        "  info FILE [options]       compile a graph (or load a plan file); "
        "print the plan's\n"
        "                            devices, nodes, fused kernels, copies, "
        "streams, events\n"
        "                            and memory (and a plan file's "
        "provenance)\n"
        "  dot FILE [options]        draw the graph (or its plan) as DOT, SVG "
        "or PNG\n"
        "  import MODEL.onnx [-o FILE.graph] [--shape NAME=DIMS]...\n"
        "                            import an ONNX model and write it in "
        "braid's text\n"
        "                            format (docs/onnx.md)\n"
        "  version                   print braid's version and the CUDA "
        "devices found\n"
        "  help                      print this help (also --help, -h)\n"
        "\n"
        "FILE is a .graph file, an ONNX model or a plan file (made by braid "
        "compile;\n"
        "recognised by its contents, whatever its name). Compile options "
        "given with a\n"
        "plan file compile its embedded graph again.\n"
        "\n"
        "compile options:\n"
        "  -o, --output FILE.plan    the plan file to write (default: "
        "FILE.graph or\n"
        "                            FILE.onnx with .plan)\n"
        "  --report                  also print where compiling spent its "
        "time\n"
        "\n"
        "run options:\n"
        "  --seed N                  seed of the random inputs (default 0)\n"
        "  --input NAME=FILE         bind graph input NAME to a .npy file or "
        "an ONNX\n"
        "                            TensorProto .pb (repeatable);\n"
        "                            inputs not given are random: floats in "
        "[-1,1],\n"
        "                            i32 in [-100,100], bool 0/1\n"
        "  --output-dir DIR          write each output to DIR/<name>.npy "
        "(DIR is created;\n"
        "                            characters outside [A-Za-z0-9._-] "
        "become '_')\n"
        "  --save-plan FILE.plan     after the runs, save the plan with what "
        "its executor\n"
        "                            chose (cuDNN algorithms: a later run of "
        "FILE.plan on\n"
        "                            the same GPU model times nothing)\n"
        "  --check                   also run the reference evaluator and "
        "compare\n"
        "  --threads N               CPU worker threads (default 0: one per "
        "core)\n"
        "  --repeat N                run N times, report first and median "
        "time (default 1)\n"
        "  --profile                 after one warm-up run, profile the runs "
        "and print\n"
        "                            the compile report, the per-node and "
        "per-op table\n"
        "                            and the overlap figure\n"
        "  --trace FILE.json         write the last profiled run's timeline "
        "(Chrome trace\n"
        "                            JSON: Perfetto, chrome://tracing)\n"
        "  --runs N                  runs profiled with --profile/--trace "
        "(default --repeat)\n"
        "  -v, --verbose             print where each node runs and why "
        "(also compile, info)\n"
        "\n"
        "info options:\n"
        "  --json                    print one JSON object instead of text\n"
        "  -v, --verbose             also list every node's device, the "
        "reason (hint,\n"
        "                            cost model, ...) and its modelled time "
        "per device\n"
        "\n"
        "dot options:\n"
        "  -o, --output OUT          write OUT.dot (or .gv), or render "
        "OUT.svg / OUT.png\n"
        "                            with Graphviz's dot program (default: "
        "DOT on stdout)\n"
        "  --plan                    draw the compiled plan instead of the "
        "graph\n"
        "\n",
        out);
    cli_print_compile_help(out);
    fputs("\n"
          "Options may also be written --name=value.\n"
          "\n"
          "exit status: 0 success; 1 parse, verify, compile or run failure, "
          "--check\n"
          "over tolerance, or an output that cannot be written; 2 usage "
          "error.\n",
          out);
}

static void cli_vprint(const char *fmt, va_list ap) {
    fputs("braid: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cli_vprint(fmt, ap);
    va_end(ap);
    fputs("Try 'braid --help'.\n", stderr);
    return CLI_EXIT_USAGE;
}

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cli_vprint(fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

bool cli_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cli_vprint(fmt, ap);
    va_end(ap);
    return false;
}

/* Model formats people try first, which braid does not read (yet). */
static const char *foreign_format(const char *path) {
    static const struct {
        const char *ext, *name;
    } formats[] = {{".pb", "TensorFlow"},
                   {".tflite", "TensorFlow Lite"},
                   {".pt", "PyTorch"},
                   {".pth", "PyTorch"},
                   {".safetensors", "safetensors"},
                   {".gguf", "GGUF"},
                   {".engine", "TensorRT"}};
    size_t len = strlen(path);
    for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
        size_t n = strlen(formats[k].ext);
        if (len > n && !strcasecmp(path + len - n, formats[k].ext))
            return formats[k].name;
    }
    return NULL;
}

braid_graph *cli_load_graph(const char *path) {
    const char *foreign = foreign_format(path);
    if (foreign) {
        cli_fail("%s: %s files are not supported: braid reads its text "
                 "format (.graph, docs/graph-format.md) and plan files made "
                 "by braid compile",
                 path, foreign);
        return NULL;
    }
    if (cli_is_onnx_file(path)) return cli_onnx_load(path);
    braid_graph *g = braid_graph_load(path, NULL);
    if (!g) {
        cli_fail("%s: out of memory", path);
        return NULL;
    }
    if (braid_graph_status(g) != BRAID_OK) {
        /* Parse errors already read "file:line:col: ..."; print them as
         * they are so editors can jump to the spot. */
        const char *msg = braid_graph_error(g);
        if (strncmp(msg, path, strlen(path)) == 0)
            fprintf(stderr, "%s\n", msg);
        else
            fprintf(stderr, "%s: %s\n", path, msg);
        braid_graph_free(g);
        return NULL;
    }
    return g;
}

/* Prints "name f32[2,3]" for tensor t. */
static void print_tensor(FILE *out, const braid_graph *g, const char *name,
                         braid_tensor t) {
    braid_dtype dtype = BRAID_F32;
    int rank = 0;
    int64_t dims[BRAID_MAX_RANK] = {0};
    braid_tensor_info(g, t, &dtype, &rank, dims);
    fprintf(out, "%s %s[", name, braid_dtype_name(dtype));
    for (int k = 0; k < rank; k++)
        fprintf(out, "%s%lld", k ? "," : "", (long long)dims[k]);
    fputc(']', out);
}

static int cmd_check(int argc, char **argv) {
    if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        cli_print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (argc == 0) return cli_usage_error("check: missing FILE.graph");
    if (argc > 1) return cli_usage_error("check: expects one FILE.graph");
    if (argv[0][0] == '-')
        return cli_usage_error("check: unknown option '%s'", argv[0]);
    braid_graph *g = cli_load_graph(argv[0]);
    if (!g) return CLI_EXIT_FAIL;
    uint32_t nin = braid_graph_input_count(g);
    uint32_t nout = braid_graph_output_count(g);
    printf("ok: %u nodes, inputs: ", braid_graph_node_count(g));
    for (uint32_t i = 0; i < nin; i++) {
        const char *name = "";
        braid_tensor t = BRAID_NONE;
        braid_graph_input(g, i, &name, &t);
        printf("%s", i ? ", " : "");
        print_tensor(stdout, g, name, t);
    }
    printf("%s; outputs: ", nin ? "" : "none");
    for (uint32_t i = 0; i < nout; i++) {
        const char *name = "";
        braid_tensor t = BRAID_NONE;
        braid_graph_output(g, i, &name, &t);
        printf("%s", i ? ", " : "");
        print_tensor(stdout, g, name, t);
    }
    printf("%s\n", nout ? "" : "none");
    braid_graph_free(g);
    return CLI_EXIT_OK;
}

/* True when CUDA's answer is error 35 ("driver version is insufficient")
 * and the machine has no NVIDIA kernel driver at all: the CUDA runtime
 * says the same in both cases, and "insufficient" misleads the owner of a
 * machine without a GPU. */
static bool no_driver(void) {
    return braid_cuda_device_count() == 0 &&
           strstr(braid_cuda_status(), "(error 35)") &&
           access("/proc/driver/nvidia/version", F_OK) != 0;
}

const char *cli_cuda_text(const char *msg, char *buf, size_t size) {
    const char *status = braid_cuda_status();
    const char *at = msg ? strstr(msg, status) : NULL;
    if (!at || !no_driver()) return msg;
    snprintf(buf, size,
             "%.*sno NVIDIA driver is installed (CUDA reports "
             "error 35)%s",
             (int)(at - msg), msg, at + strlen(status));
    return buf;
}

static int cmd_version(int argc, char **argv) {
    (void)argv;
    if (argc != 0) return cli_usage_error("version: takes no arguments");
    printf("braid %s\n", braid_version());
    int n = braid_cuda_device_count();
    char buf[512];
    const char *status = cli_cuda_text(braid_cuda_status(), buf, sizeof buf);
    if (n > 0)
        printf("cuda: %d device%s: %s\n", n, n == 1 ? "" : "s", status);
    else
        printf("cuda: no usable device (%s); braid runs on the CPU\n",
               status && *status ? status : "unknown reason");
    if (n > 0) /* conv ops: cuDNN, else braid's own kernels */
        printf("cudnn: %s%s\n", braid_cudnn_status(),
               braid_cudnn_version() ? ""
                                     : " (braid's own convolution kernels "
                                       "run instead)");
    return CLI_EXIT_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) return cli_usage_error("missing command");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        cli_print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version"))
        return cmd_version(argc - 2, argv + 2);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cli_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "info")) return cli_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "dot")) return cli_dot(argc - 2, argv + 2);
    if (!strcmp(cmd, "compile")) return cli_compile_cmd(argc - 2, argv + 2);
    if (!strcmp(cmd, "import")) return cli_import(argc - 2, argv + 2);
    if (cmd[0] == '-') return cli_usage_error("unknown option '%s'", cmd);
    return cli_usage_error("unknown command '%s'", cmd);
}
