/* tests/support/grad_check.c — the checks of the gradient suites: the loss
 * and gradient outputs, central finite differences on the reference
 * evaluator, executor-versus-reference comparison, f32 → f64 graphs. */
#include "tests/support/grad_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

braid_status ts_grad_attach(braid_graph *g, braid_tensor y, uint64_t seed,
                            braid_tensor *loss) {
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    braid_tensor_info(g, y, &dt, &rank, dims);
    int64_t n = braid_tensor_numel(g, y);
    void *w = malloc((size_t)(n > 0 ? n : 1) * braid_dtype_size(dt));
    if (w == NULL) return BRAID_ERR_OUT_OF_MEMORY;
    ts_fill_random(dt, w, n, seed ^ 0xA5A5u, -1, 1);
    braid_tensor wt = braid_constant(g, dt, rank, dims, w);
    free(w);
    *loss = braid_sum(g, braid_mul(g, y, wt), 0, NULL, false);
    braid_status s = braid_output(g, "loss", *loss);
    uint32_t nin = braid_graph_input_count(g), n_wrt = 0;
    braid_tensor wrt[64], grads[64];
    uint32_t idx[64];
    for (uint32_t i = 0; s == BRAID_OK && i < nin && n_wrt < 64; i++) {
        const char *name;
        braid_tensor t;
        braid_graph_input(g, i, &name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        if (!braid_dtype_is_float(dt)) continue;
        idx[n_wrt] = i;
        wrt[n_wrt++] = t;
    }
    if (s == BRAID_OK) s = braid_grad(g, *loss, n_wrt, wrt, grads);
    for (uint32_t k = 0; s == BRAID_OK && k < n_wrt; k++) {
        char name[16];
        snprintf(name, sizeof name, "g%u", (unsigned)idx[k]);
        s = braid_output(g, name, grads[k]);
    }
    return s;
}

static int io_output(const ts_io *io, const char *name) {
    for (uint32_t o = 0; o < io->noutputs; o++)
        if (strcmp(io->ref[o].name, name) == 0) return (int)o;
    return -1;
}

/* The loss at the current inputs, from the reference. */
static double loss_at(const braid_graph *g, ts_io *io, int lo) {
    braid_reference_options ro;
    braid_reference_options_init(&ro);
    ro.num_threads = 1;
    braid_status s =
        braid_reference_run_with(g, io->in, io->ninputs, &io->ref[lo], 1, &ro);
    if (s != BRAID_OK) return NAN;
    return bg_load(io->out_dtype[lo], io->ref[lo].data, 0);
}

/* Central difference of the loss in element e of input i, step h. */
static double central(const braid_graph *g, ts_io *io, int lo, uint32_t i,
                      braid_dtype dt, int64_t e, double h) {
    void *x = (void *)io->in[i].data;
    double v = bg_load(dt, x, e);
    bg_store(dt, x, e, v + h);
    double up = bg_load(dt, x, e) - v, lp = loss_at(g, io, lo);
    bg_store(dt, x, e, v - h);
    double dn = v - bg_load(dt, x, e), lm = loss_at(g, io, lo);
    bg_store(dt, x, e, v);
    return (lp - lm) / (up + dn); /* the steps as stored, after rounding */
}

/* Checks one input's gradient output against central differences. */
static bool fd_input(const braid_graph *g, ts_io *io, int lo, uint32_t i,
                     int go, double h, double tol, bool skip_kinks,
                     int *checked, int *skipped, char *msg, size_t msgsize) {
    braid_tensor t;
    const char *name;
    braid_dtype dt;
    braid_graph_input(g, i, &name, &t);
    braid_tensor_info(g, t, &dt, NULL, NULL);
    int64_t n = braid_tensor_numel(g, t);
    for (int64_t e = 0; e < n; e++) {
        double fd = central(g, io, lo, i, dt, e, h);
        double an = bg_load(io->out_dtype[go], io->ref[go].data, e);
        if (skip_kinks) {
            double fd10 = central(g, io, lo, i, dt, e, 10 * h);
            if (!(fabs(fd - fd10) <= tol * (1 + fabs(fd)))) {
                if (skipped) (*skipped)++;
                continue;
            }
        }
        if (checked) (*checked)++;
        if (fabs(an - fd) <= tol * (1 + fabs(fd))) continue;
        snprintf(msg, msgsize,
                 "input %s element %lld: gradient %.10g, central difference "
                 "%.10g (step %g)",
                 name, (long long)e, an, fd, h);
        return false;
    }
    return true;
}

bool ts_grad_check_fd(const braid_graph *g, ts_io *io, double h, double tol,
                      bool skip_kinks, int *checked, int *skipped, char *msg,
                      size_t msgsize) {
    braid_status s =
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs);
    if (s != BRAID_OK) {
        snprintf(msg, msgsize, "reference: %s", braid_last_error());
        return false;
    }
    int lo = io_output(io, "loss");
    if (lo < 0) {
        snprintf(msg, msgsize, "no output \"loss\"");
        return false;
    }
    for (uint32_t i = 0; i < io->ninputs; i++) {
        char name[16];
        snprintf(name, sizeof name, "g%u", (unsigned)i);
        int go = io_output(io, name);
        if (go >= 0 && !fd_input(g, io, lo, i, go, h, tol, skip_kinks, checked,
                                 skipped, msg, msgsize))
            return false;
    }
    return true;
}

bool ts_grad_compare(const ts_io *io, double tol, char *msg, size_t msgsize) {
    for (uint32_t o = 0; o < io->noutputs; o++) {
        braid_dtype dt = io->out_dtype[o];
        int64_t n = io->out_numel[o];
        double scale = 0;
        for (int64_t e = 0; e < n; e++) {
            double r = fabs(bg_load(dt, io->ref[o].data, e));
            if (isfinite(r) && r > scale) scale = r;
        }
        for (int64_t e = 0; e < n; e++) {
            double x = bg_load(dt, io->out[o].data, e);
            double r = bg_load(dt, io->ref[o].data, e);
            if ((isnan(x) && isnan(r)) || x == r) continue;
            if (fabs(x - r) <= tol * (1 + scale)) continue;
            snprintf(msg, msgsize,
                     "output %s element %lld: %.10g, reference %.10g "
                     "(tolerance %g·(1 + %g))",
                     io->ref[o].name, (long long)e, x, r, tol, scale);
            return false;
        }
    }
    return true;
}

/* Node n of a graph rebuilt into h with f32 made f64 (constant bytes
 * converted); the ids stay the same. */
static uint32_t retype_node(braid_graph *h, const bg_node *n) {
    braid_dtype dt = n->dtype == BRAID_F32 ? BRAID_F64 : n->dtype;
    bg_attrs a = n->attr;
    double *wide = NULL;
    if (n->op == BRAID_OP_CONSTANT && n->dtype == BRAID_F32) {
        int64_t k = bg_numel(n);
        wide = malloc((size_t)(k > 0 ? k : 1) * sizeof *wide);
        if (wide == NULL) return BG_NONE;
        for (int64_t i = 0; i < k; i++)
            wide[i] = bg_load(BRAID_F32, n->attr.data, i);
        a.data = wide;
    }
    uint32_t id = bg_build(h, n->op, n->inputs, n->ninputs, dt, n->rank,
                           n->dims, &a, n->name);
    free(wide);
    return id;
}

braid_graph *ts_graph_to_f64(const braid_graph *g) {
    braid_graph *h = braid_graph_new(NULL);
    for (uint32_t id = 0; h && id < g->nnodes; id++)
        if (retype_node(h, bg_node_at(g, id)) != id) break;
    for (uint32_t o = 0; h && o < g->noutputs; o++)
        braid_output(h, g->outputs[o].name, (braid_tensor){g->outputs[o].node});
    return h;
}
