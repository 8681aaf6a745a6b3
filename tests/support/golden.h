/* tests/support/golden.h — the harness the golden-file and text-format
 * suites share: whole-file reading, golden comparison (with
 * BRAID_UPDATE_GOLDEN=1 regeneration), case directives, parsing, loading
 * and compiling with asserted success, and --dump-after capture.
 *
 * What each golden file holds (the summary a test prints) stays in its
 * test; only the plumbing is here. Failures are Criterion assertions. */
#ifndef BRAID_TESTS_GOLDEN_H
#define BRAID_TESTS_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "braid/braid.h"

/* ---- whole files --------------------------------------------------------- */

/* All of f from its start (the current position where f cannot seek) in a
 * malloc'd, NUL-terminated buffer; *len (may be NULL) gets its size.
 * Asserts on out of memory and read errors. */
char *ts_read_stream_len(FILE *f, size_t *len);
char *ts_read_stream(FILE *f);

/* The file at path in a malloc'd, NUL-terminated buffer (*len, may be NULL,
 * gets its size); NULL when it cannot be opened. */
char *ts_read_file_len(const char *path, size_t *len);
char *ts_read_file(const char *path);

/* ts_read_file, asserting that the file can be read. */
char *ts_read_file_ok(const char *path);

/* ---- golden files -------------------------------------------------------- */

/* "<dir>/<name><ext>" in a malloc'd string (dir may end in '/'). */
char *ts_golden_path(const char *dir, const char *name, const char *ext);

/* True when BRAID_UPDATE_GOLDEN=1: golden files are rewritten, not
 * compared. */
bool ts_update_golden(void);

/* Compares got with <dir>/<name>.expected and fails with a line diff
 * (- expected, + got) when they differ; with BRAID_UPDATE_GOLDEN=1 writes
 * got there instead. */
void ts_check_golden(const char *dir, const char *name, const char *got);

/* The rest of the first line of text that starts with key (e.g.
 * "# devices:"), blanks trimmed, into buf. False, buf untouched, when no
 * line starts with key. */
bool ts_directive(const char *text, const char *key, char *buf, size_t size);

/* Reads <dir>/<name>.graph (asserting it exists) and parses it (asserting
 * success). *text, when text is not NULL, gets the file's text for its
 * directive comments (caller frees). */
braid_graph *ts_golden_graph(const char *dir, const char *name, char **text);

/* ---- graphs and plans with asserted success ------------------------------ */

/* Parses text (what: the file name in error messages, NULL for
 * "<input>"); asserts the graph parsed. */
braid_graph *ts_parse_ok(const char *text, const char *what);

/* braid_graph_load(path), asserting the graph loaded. */
braid_graph *ts_load_ok(const char *path);

/* Options from braid_compile_options_init with devices and disable_passes
 * set. */
braid_compile_options ts_compile_options(const char *devices,
                                         unsigned disable_passes);

/* braid_compile(g, o), asserting success; returns the plan. */
braid_plan *ts_compile_ok(const braid_graph *g, const braid_compile_options *o);

/* Runs p (natively, or emulated under interleaving seeds 1..nseeds) on
 * inputs filled from seed and asserts the reference evaluator's values on
 * g (the tolerances of ts_io_compare). */
void ts_check_plan(const braid_graph *g, const braid_plan *p, int nseeds,
                   uint64_t seed);

/* Applies a golden case's "# devices: LIST" and "# options: streams=N
 * chunks=N fuse simplify" comment lines to o (fuse and simplify turn those
 * passes back on). The device list is copied into devices (size bytes,
 * "cpu,cuda:0" without the line), which o then points to. */
void ts_case_options(const char *text, braid_compile_options *o, char *devices,
                     size_t size);

/* Writes what a golden case prints after the pass dump (NULL: nothing). */
typedef void (*ts_dump_tail)(FILE *f, const braid_plan *p);

/* Compiles g with o.dump_after = pass and returns what the dump printed
 * (captured from stderr), followed by what tail writes; asserts success. */
char *ts_dump_after(const braid_graph *g, braid_compile_options o,
                    const char *pass, ts_dump_tail tail);

/* The dump golden case <dir>/<name>: the .graph file compiled with base
 * and its ts_case_options, dumped after pass (plus tail), checked against
 * <name>.expected with ts_check_golden. */
void ts_check_dump_case(const char *dir, const char *name,
                        const braid_compile_options *base, const char *pass,
                        ts_dump_tail tail);

#endif /* BRAID_TESTS_GOLDEN_H */
