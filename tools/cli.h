/* tools/cli.h — shared pieces of the braid command-line tool (prefix cli_).
 *
 * braid.c holds main, help, version and check; cli_run.c the run command;
 * cli_info.c the info command; cli_dot.c the dot command; cli_plan.c the
 * compile command (plan files) and plan provenance; cli_compile.c the
 * compile flags those share and opening a .graph or plan file; cli_data.c
 * the data helpers (random inputs, statistics, comparison with the
 * reference, files). docs/cli.md describes the behaviour. */
#ifndef BRAID_TOOLS_CLI_H
#define BRAID_TOOLS_CLI_H

#include "braid/braid.h"

/* Exit statuses (documented in docs/cli.md). */
#define CLI_EXIT_OK 0    /* success */
#define CLI_EXIT_FAIL 1  /* parse/verify/compile/run failure, check failed */
#define CLI_EXIT_USAGE 2 /* bad command line */

/* Prints the full help text. */
void cli_print_help(FILE *out);
/* Prints "braid: <message>" and a hint to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "braid: <message>" to stderr; returns CLI_EXIT_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Same, returning false (for bool helpers). */
bool cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* msg with braid_cuda_status()'s text in it replaced by "no NVIDIA driver
 * is installed ..." when CUDA's error 35 means exactly that (no
 * /proc/driver/nvidia): into buf, or msg itself when nothing changes. */
const char *cli_cuda_text(const char *msg, char *buf, size_t size);

/* Loads and verifies a .graph file. On failure prints the graph's message
 * (it starts with "file:line:col: " for parse errors) and returns NULL. */
braid_graph *cli_load_graph(const char *path);

/* `braid run ARGS...` (args exclude "run"). Returns an exit status. */
int cli_run(int argc, char **argv);
/* `braid info ARGS...`: the compiled plan's summary, as text or JSON. */
int cli_info(int argc, char **argv);
/* `braid dot ARGS...`: the graph or plan as DOT, SVG or PNG. */
int cli_dot(int argc, char **argv);
/* `braid compile ARGS...`: compile a graph and save the plan file. */
int cli_compile_cmd(int argc, char **argv);

/* ---- compile flags shared by run, info and dot (cli_compile.c) ---------- */

/* What the compile flags asked for; all zero means the defaults. */
typedef struct cli_compile_flags {
    const char *devices;    /* --devices LIST, or NULL (detect) */
    const char *dump_after; /* --dump-after PASS, or NULL */
    unsigned disable;       /* BRAID_PASS_* bits from --no-<pass> */
    int streams;            /* --streams N, or 0 (the default) */
    int chunks;             /* --chunks N, or 0 (the cost model) */
    const char *archs;      /* --arch LIST ("sm_90,sm_80", "none"), or
                               NULL (the GPUs present, else sm_90) */
    bool tf32;              /* --tf32: allow_tf32 */
    size_t fold;            /* --fold-generators BYTES (0: off) */
    int shards;             /* --shards N (0: off) */
    const char *shard_inputs; /* --shard-inputs LIST, or NULL */
    int device;               /* --device N (when device_list is set) */
    char device_list[16];     /* "cuda:N" for --device N, else empty: the
                                 plan's devices (GPU preferred) */
    bool given;             /* any compile flag appeared */
    bool cpu_fallback;      /* --cpu-fallback: a plan file for a GPU this
                               machine lacks runs its graph compiled again
                               for the cpu (a load option: not counted in
                               `given`) */
} cli_compile_flags;

/* Prints the compile flags' help lines. */
void cli_print_compile_help(FILE *out);
/* When argv[*i] is a compile flag ("--name", "--name=value" or "--name"
 * followed by its value, which *i then skips), applies it to f, sets *rc
 * to CLI_EXIT_OK or a usage-error status (message printed) and returns
 * true. Returns false for any other argument. */
bool cli_compile_flag(cli_compile_flags *f, int argc, char **argv, int *i,
                      int *rc);
/* braid_compile options from f (num_threads 0: one per core). */
void cli_compile_options(const cli_compile_flags *f, braid_compile_options *o);

/* One option of a command besides the compile flags: a flag (flag set) or
 * an option with a value (value set; "--name=value" also accepted for
 * names starting with "--"). */
typedef struct cli_extra_option {
    const char *name;   /* "--json", "-o" */
    bool *flag;         /* set to true when present, or NULL */
    const char **value; /* receives the value, or NULL */
} cli_extra_option;

/* Parses `braid <cmd> FILE [options]`: exactly one FILE ("--" ends the
 * options), compile flags into f, extra options. Returns CLI_EXIT_OK, a
 * usage-error status (message printed), or -1 for --help / -h. */
int cli_parse_command(const char *cmd, int argc, char **argv,
                      const cli_extra_option *extra, size_t nextra,
                      const char **file, cli_compile_flags *f);
/* What cli_open_file made of a .graph or plan file. */
typedef struct cli_input {
    braid_plan *plan;   /* the plan: compiled, or loaded from the file;
                           owned (cli_input_free) */
    braid_graph *graph; /* the graph: the .graph file's, or a clone of the
                           plan file's embedded graph (braid_plan_graph);
                           owned */
    bool plan_file;     /* the file is a plan file (by its magic bytes,
                           whatever its name) */
    bool recompiled;    /* a plan file whose graph was compiled again
                           because compile flags were given */
    size_t file_bytes;  /* size of the plan file (plan files only) */
    double ms;          /* wall time of braid_compile, or of reading and
                           loading the plan file */
} cli_input;

/* True when path starts with the plan-file magic "BRAIDPLN" (false also
 * when it cannot be read: the caller's open then reports why). */
bool cli_is_plan_file(const char *path);

/* Opens path, a .graph file or a plan file (told apart by the magic):
 *   - a .graph file is loaded, verified and compiled with f;
 *   - a plan file is loaded as it is when f has no compile flag (given
 *     false); with compile flags its embedded graph is compiled again with
 *     them, which is said on stderr.
 * threads sets the CPU worker threads (0: one per core; -1: the default,
 * for a plan file the number it stores). check_devices: load a plan file
 * with braid_plan_load's device check (a plan for a GPU this machine lacks
 * fails, as running it would); false loads it anyway (info, dot).
 * On failure prints why and returns false with *in zeroed. */
bool cli_open_file(const char *path, const cli_compile_flags *f, int threads,
                   bool check_devices, cli_input *in);
void cli_input_free(cli_input *in);

/* With $BRAID_LOG set (non-empty, not "0"): prints to stderr how many
 * kernel modules NVRTC compiled in this process and how many the kernel
 * caches served ("braid: nvrtc: 0 compilations, 0 cache hits"); the CUDA
 * executor prints where its kernels came from in the same mode ("braid:
 * kernels: 37 for sm_90 (stored cubin, 0.2 ms)"). */
void cli_log_nvrtc(void);

/* cli_open_file(path, f, -1, false, ...) for info and dot: returns the plan
 * and sets *graph (the caller frees both), or prints why and returns NULL
 * (*graph NULL too). */
braid_plan *cli_compile_file(const char *path, const cli_compile_flags *f,
                             braid_graph **graph);

/* ---- ONNX models (cli_onnx.c) ------------------------------------------- */

/* Records one --shape NAME=DxD... binding for the ONNX imports of this
 * process; false when malformed. */
bool cli_onnx_add_shape(const char *binding);
/* Records one --const NAME=FILE (.npy or .pb): ONNX graph input NAME is
 * frozen to the file's tensor at import; false (message printed) on error. */
bool cli_onnx_add_const(const char *binding);
/* Whether path is an ONNX model: its name ends in .onnx, or its first
 * bytes open a ModelProto (braid_onnx_is_model) and not a plan file. */
bool cli_is_onnx_file(const char *path);
/* Imports the ONNX model at path with the --shape bindings; prints why and
 * returns NULL on failure. */
braid_graph *cli_onnx_load(const char *path);
/* Reads an input tensor from a .npy file or an ONNX TensorProto .pb (told
 * apart by content) into *a (br_npy_array_free it); prints why and returns
 * false on failure. */
struct br_npy_array;
bool cli_read_tensor(const char *path, braid_dtype expect,
                     struct br_npy_array *a);
/* `braid import MODEL.onnx [-o FILE.graph]`. */
int cli_import(int argc, char **argv);

/* ---- plan files (cli_plan.c) -------------------------------------------- */

/* Where a loaded plan came from, as text: braid and NVRTC versions, when
 * it was compiled, its stored kernels per architecture (CUBIN and PTX
 * bytes) and the load time. Nothing for a plan that was compiled here. */
void cli_print_provenance(FILE *out, const cli_input *in);
/* The same as a JSON member list (each line `  "key": value,`), or nothing
 * for a plan compiled here. */
void cli_print_provenance_json(FILE *out, const cli_input *in);

/* ---- data helpers (cli_data.c) ------------------------------------------ */

/* Fills n elements of dtype t for the graph input called name: floats
 * uniform in [-1, 1], i32 in [-100, 100], bool 0/1. Element i depends only
 * on (seed, name, i). */
void cli_fill_random(braid_dtype t, void *buf, int64_t n, uint64_t seed,
                     const char *name);

/* Prints min / max / mean (floats, i32) or the count of true (bool) of n
 * elements, with NaN / infinity counts when there are any. */
void cli_print_stats(FILE *out, braid_dtype t, const void *buf, int64_t n);

/* Comparison of one output with the reference. */
typedef struct cli_compare_result {
    double atol;       /* absolute tolerance used */
    double rtol;       /* relative tolerance used */
    double max_abs;    /* largest |got - ref| over finite pairs */
    double max_rel;    /* largest |got - ref| / |ref| where |ref| > atol */
    int64_t nbad;      /* elements outside atol + rtol·|ref| */
    int64_t first_bad; /* index of the first of them, -1 when none */
    double bad_got;    /* value at first_bad */
    double bad_ref;    /* reference value at first_bad */
} cli_compare_result;

/* The tolerance for dtype t in a graph whose longest accumulation (matmul
 * K or reduced elements) is acc: float atol grows by √(acc/256) beyond 256. */
void cli_tolerance(braid_dtype t, int64_t acc, double *atol, double *rtol);
/* The longest accumulation in g: the largest matmul K, or the largest
 * number of elements folded into one output of a reduction. 0 if none. */
int64_t cli_longest_accumulation(const braid_graph *g);
/* Compares n elements of got with ref: NaN matches NaN, infinities match
 * equal infinities, finite values pass when |got - ref| ≤ atol + rtol·|ref|.
 * r->atol and r->rtol must be set; the rest is filled in. */
void cli_compare(braid_dtype t, const void *got, const void *ref, int64_t n,
                 cli_compare_result *r);

/* Creates dir and its missing parents (like mkdir -p). On failure prints a
 * message and returns false. */
bool cli_make_dirs(const char *dir);
/* True when a and b name the same existing file (same device and inode), or
 * are the same string. */
bool cli_same_file(const char *a, const char *b);
/* True when name can be used as a file name as it is: non-empty, not "." or
 * "..", only [A-Za-z0-9_.-], at most 200 bytes. */
bool cli_safe_file_name(const char *name);

/* A JSON string to out (escaped; "null" for NULL; bytes of a string that
 * is not UTF-8 read as Latin-1). */
void cli_json_string(FILE *out, const char *s);

/* ---- benchmark mode of run (cli_bench.c) -------------------------------- */

/* The benchmark options of `braid run`. */
typedef struct cli_bench_options {
    int warmup;        /* --warmup N runs; -1 not given (default 3) */
    long iterations;   /* --iterations N; 0 not given (default 10) */
    double duration;   /* --duration S seconds; 0 not given */
    bool no_transfers; /* --no-transfers: inputs/outputs on the GPU */
    bool json;         /* --json: the results as one JSON object */
    int cuda_graphs;   /* --cuda-graphs: -1 default, 0 off, 1 on */
    bool on;           /* benchmark mode (set by cli_bench_check) */
} cli_bench_options;

/* The bindings a benchmark runs with. */
typedef struct cli_bench_bindings {
    braid_input_binding *in; /* nin of them */
    uint32_t nin;
    braid_output_binding *out; /* nout of them */
    uint32_t nout;
    void **host_in; /* --no-transfers: the host buffers the device copies
                       replaced (cli_bench_from_device restores them) */
    void **host_out;
    int device; /* GPU of the device copies; -1 none */
} cli_bench_bindings;

/* Latency statistics (seconds) and the split (ms per run). */
typedef struct cli_bench_result {
    size_t runs;   /* timed runs */
    double wall_s; /* wall time of the timed runs */
    double min, median, mean, p90, p99, max;
    double throughput;                 /* runs per second */
    size_t split_runs;                 /* profiled runs behind the split */
    double h2d_ms, compute_ms, d2h_ms; /* busy time per run, summed over
                                          tracks */
    int device;                        /* GPU holding the inputs and outputs
                                          (--no-transfers), or -1 */
} cli_bench_result;

/* Applies --warmup/--iterations/--duration/--cuda-graphs with its value. */
int cli_bench_option(cli_bench_options *b, const char *name, const char *value);
/* After parsing: sets b->on and the defaults; refuses --iterations with
 * --duration, and benchmark options with --repeat or profiling. */
int cli_bench_check(cli_bench_options *b, bool repeat_given, bool profiling);
/* Before braid_exec_new: --cuda-graphs through $BRAID_CUDA_GRAPHS. */
void cli_bench_apply_env(const cli_bench_options *b);
/* Neumaier's compensated sum: add values one by one, read the total. The
 * one summation behind every mean the tool prints (cli_print_stats,
 * cli_mean). */
typedef struct cli_sum {
    double sum; /* running sum */
    double c;   /* the low-order bits it lost */
} cli_sum;
void cli_sum_add(cli_sum *s, double v);
double cli_sum_value(const cli_sum *s);
/* The mean of x[0..n) by a compensated sum of x[i]/n: exact to rounding,
 * never overflowing for finite values. 0 for n = 0. */
double cli_mean(const double *x, size_t n);
/* min, median, mean, p90, p99 (nearest rank), max of times[0..n). */
void cli_bench_stats(const double *times, size_t n, cli_bench_result *r);
/* Warm-up runs, timed runs, profiled runs for the split. */
bool cli_bench_run(braid_exec *e, const cli_bench_bindings *bb,
                   const cli_bench_options *b, cli_bench_result *r);
void cli_bench_print(FILE *out, const cli_bench_options *b,
                     const cli_bench_result *r);
void cli_bench_print_json(FILE *out, const char *file,
                          const cli_bench_options *b,
                          const cli_bench_result *r);
/* --no-transfers: device copies of the inputs (uploaded once) and device
 * outputs on the first GPU the plan uses; nothing (a note) for a plan
 * that runs only on the cpu. */
bool cli_bench_to_device(const braid_plan *plan, cli_bench_bindings *bb);
/* Undoes cli_bench_to_device, first copying the outputs back when
 * copy_back. */
bool cli_bench_from_device(cli_bench_bindings *bb, bool copy_back);

/* ---- did you mean (cli_suggest.c) --------------------------------------- */

/* The name in known[0..n) nearest to word (its part before '='), when
 * near enough to be a typo of it; else NULL. */
const char *cli_nearest(const char *word, const char *const *known, size_t n);
/* "braid: CMD: unknown option 'ARG' (did you mean --near?)" as a usage
 * error; returns CLI_EXIT_USAGE. */
int cli_unknown_option(const char *cmd, const char *arg,
                       const char *const *known, size_t n);
/* Up to max names of the compile flags into names; returns how many. */
size_t cli_compile_flag_names(const char **names, size_t max);

/* ---- placement (cli_place.c) -------------------------------------------- */

/* One line per node: its device, why, and for cost-model choices the
 * modelled time on each device (braid_plan_placement_get). */
void cli_print_placement(FILE *out, const braid_plan *plan);
/* The same as a JSON member `  "placement": [...],`. */
void cli_print_placement_json(FILE *out, const braid_plan *plan);
/* For each GPU the plan lists that runs nothing: a note saying why and how
 * to put work there. */
void cli_print_placement_note(FILE *out, const braid_plan *plan);

/* Monotonic clock in seconds. */
double cli_now(void);

#endif /* BRAID_TOOLS_CLI_H */
