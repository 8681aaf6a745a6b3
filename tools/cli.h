/* tools/cli.h — shared pieces of the braid command-line tool (prefix cli_).
 *
 * braid.c holds main, help, version and check; cli_run.c the run command;
 * cli_data.c the data helpers (random inputs, statistics, comparison with
 * the reference, files). docs/cli.md describes the behaviour. */
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

/* Loads and verifies a .graph file. On failure prints the graph's message
 * (it starts with "file:line:col: " for parse errors) and returns NULL. */
braid_graph *cli_load_graph(const char *path);

/* `braid run ARGS...` (args exclude "run"). Returns an exit status. */
int cli_run(int argc, char **argv);

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

/* Monotonic clock in seconds. */
double cli_now(void);

#endif /* BRAID_TOOLS_CLI_H */
