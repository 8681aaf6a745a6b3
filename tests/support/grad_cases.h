/* tests/support/grad_cases.h — gradient cases for braid_grad's suites
 * (tests/test_grad*.c on the reference and the CPU, tests/test_cuda_grad.c
 * on a GPU): one small random graph per differentiable op, the gradient
 * graph built on it, and the checks (central finite differences on the
 * reference evaluator in float64; an executor against the reference). */
#ifndef BRAID_TESTS_GRAD_CASES_H
#define BRAID_TESTS_GRAD_CASES_H

#include "tests/support/op_cases.h"

#define TS_GRAD_MAX_INPUTS 8

/* One case: graph g whose inputs x0, x1, ... (float, or a bool condition)
 * feed the op under test, output y; then loss = Σ y·w (w a random
 * constant, so every output element matters differently), marked as
 * output "loss", and the gradient of the loss with respect to every float
 * input i marked as output "g<i>". */
typedef struct ts_grad_case {
    braid_graph *g;                     /* owned */
    braid_tensor y, loss;               /* the op's result, the loss */
    uint32_t ninputs;                   /* graph inputs */
    ts_range range[TS_GRAD_MAX_INPUTS]; /* how to fill each input */
    double fd_step;                     /* finite-difference step */
    double fd_tol;                      /* |analytic - fd| ≤ tol·(1+|fd|) */
    char what[160];                     /* "matmul ta f64 ..." */
} ts_grad_case;

/* Number of case kinds; kind k tests op ts_grad_case_op(k) (COUNT_ for a
 * composite such as layer_norm). */
int ts_grad_case_kinds(void);
braid_op ts_grad_case_op(int kind);
/* Builds case `kind` in float dtype dt with random shapes from seed, and
 * its gradient graph. False with the graph's message in c->what when the
 * builder or braid_grad failed. */
bool ts_grad_case_build(int kind, braid_dtype dt, uint64_t seed,
                        ts_grad_case *c);
void ts_grad_case_free(ts_grad_case *c);

/* Adds loss = Σ y·w and the gradient outputs "g<i>" to g (float inputs
 * only); BRAID_OK or braid_grad's status. */
braid_status ts_grad_attach(braid_graph *g, braid_tensor y, uint64_t seed,
                            braid_tensor *loss);

/* Inputs filled for case c (ranges), outputs allocated. */
ts_io *ts_grad_io(const ts_grad_case *c, uint64_t seed);

/* Runs the reference on io (into io->ref) and compares every gradient
 * output with central differences of the loss (step h) on the reference.
 * Elements where differences at h and 10·h disagree by more than tol
 * (a kink or a jump within reach) are skipped when skip_kinks, and
 * counted in *skipped (may be NULL). False with a message on a mismatch. */
bool ts_grad_check_fd(const braid_graph *g, ts_io *io, double h, double tol,
                      bool skip_kinks, int *checked, int *skipped, char *msg,
                      size_t msgsize);

/* Compares io->out (an executor's) with io->ref (the reference's) output
 * by output: |x - r| ≤ tol·(1 + max|r| of that output). */
bool ts_grad_compare(const ts_io *io, double tol, char *msg, size_t msgsize);

/* The graph with every f32 in it made f64 (rebuilt node by node, same ids,
 * constants converted): the random graphs' gradients are checked in
 * float64. NULL when out of memory; else the new graph, whose status
 * tells whether every node was rebuilt. */
braid_graph *ts_graph_to_f64(const braid_graph *g);

#endif /* BRAID_TESTS_GRAD_CASES_H */
