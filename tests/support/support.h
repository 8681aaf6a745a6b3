/* tests/support/support.h — helpers shared by braid's Criterion suites. */
#ifndef BRAID_TESTS_SUPPORT_H
#define BRAID_TESTS_SUPPORT_H

#include "braid/braid.h"
#include "graph/graph.h"

/* Deterministic test RNG (splitmix64). */
uint64_t ts_rand_u64(uint64_t *state);
double ts_rand_unit(uint64_t *state); /* [0, 1) */
int ts_rand_int(uint64_t *state, int lo, int hi); /* [lo, hi] */

/* Fills n elements of dtype t with random values from seed: floats in
 * [lo, hi], i32 integers in [lo, hi], bool 0/1. Never all zero. */
void ts_fill_random(braid_dtype t, void *buf, int64_t n, uint64_t seed,
                    double lo, double hi);

/* Options for random DAGs. */
typedef struct ts_graph_options {
    int max_nodes;        /* ops to add beyond the inputs (e.g. 12) */
    int max_rank;         /* ≤ BRAID_MAX_RANK (e.g. 4) */
    int64_t max_dim;      /* largest dim (e.g. 6) */
    bool mixed_dtypes;    /* also f16, bf16, f64, i32, bool where legal */
    bool device_hints;    /* random hints "cpu" / "cuda:0" */
    bool grad_ops_only;   /* only ops braid_grad has rules for (no
                             resize) */
} ts_graph_options;

void ts_graph_options_default(ts_graph_options *o);
/* A random valid graph (status OK, ≥ 1 output, every input named in0..inN)
 * mixing elementwise with broadcasting, reductions, matmul, shape ops,
 * generators and constants. Deterministic in seed. */
braid_graph *ts_random_graph(uint64_t seed, const ts_graph_options *o);

/* Buffers for every input and output of g: inputs filled by
 * ts_fill_random(seed + i) in ranges that keep every op well defined
 * (e.g. positive for log/sqrt is the graph's job, not the filler's). */
typedef struct ts_io {
    uint32_t ninputs, noutputs;
    braid_input_binding *in;
    braid_output_binding *out;      /* for the executor */
    braid_output_binding *ref;      /* for the reference evaluator */
    braid_dtype *out_dtype;
    int64_t *out_numel;
} ts_io;

ts_io *ts_io_new(const braid_graph *g, uint64_t seed);
void ts_io_free(ts_io *io);

/* Compares every output of io->out with io->ref: |x - r| ≤ atol + rtol·|r|
 * elementwise, NaNs equal when both NaN, infinities equal when equal. On
 * failure fills msg with the output name, index and both values. The
 * tolerances depend on the dtype (ts_tolerance). */
bool ts_io_compare(const ts_io *io, char *msg, size_t msgsize);
void ts_tolerance(braid_dtype t, double *atol, double *rtol);

/* Compile g for the CPU, run it on io's inputs into io->out, and run the
 * reference into io->ref. Returns the first failing status. */
braid_status ts_run_both(const braid_graph *g, ts_io *io);

/* Compiles g for the CPU alone with `threads` threads and makes its
 * executor into *p and *e; asserts both succeed. */
void ts_cpu_exec(const braid_graph *g, int threads, braid_plan **p,
                 braid_exec **e);

/* Marks y as output "y" of g and runs the reference on in[0..nin) into out
 * (bytes); asserts that y is valid and that both succeed. */
void ts_run_ref(braid_graph *g, braid_tensor y, const braid_input_binding *in,
                size_t nin, void *out, size_t bytes);

/* A tiny valid graph, parsed from text: y = x * x over f32[8] (input "x",
 * output "y"); asserts that parsing succeeded. For tests about files,
 * options and the environment, where the graph hardly matters. */
braid_graph *ts_tiny_graph(void);

/* g printed in the text format holds `word` (NULL: anything) and parses
 * back to an equal graph; asserts both. */
void ts_assert_text_round_trip(const braid_graph *g, const char *word);

/* Logs g in the text format (cr_log_info), for reproducing a failure by
 * hand. */
void ts_log_graph(const braid_graph *g);

#endif
