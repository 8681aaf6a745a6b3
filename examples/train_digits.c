/* examples/train_digits.c — train an MLP on the 8×8 digits with braid.
 *
 * The data: examples/data/digits/ (1437 training and 360 held-out images of
 * the UCI digits, CC BY 4.0; its README gives the provenance). The model:
 * 64 → 128 (relu) → 10, softmax cross-entropy, mini-batches of 64 drawn
 * from a fresh shuffle every epoch, AdamW. Everything lives in one graph
 * and one executor: the weights and AdamW's moments are variables that
 * stay in the executor between runs, and each braid_run is one training
 * step (forward, backward by braid_grad, AdamW update). Evaluation is a second
 * plan whose weights are copied over by name (braid_exec_variable_read /
 * _write).
 *
 * Run from the repository root with no arguments; the last line printed
 * is "test accuracy: 0.xxx". Optional: argv[1] names an SVG file for the
 * loss curve. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "runtime/npy/npy.h"

#define DATA "examples/data/digits/"
#define IN 64
#define HID 128
#define OUT 10
#define BATCH 64
#define EPOCHS 40
#define SEED 1

typedef struct dataset {
    float *x;   /* n × IN */
    int32_t *y; /* n labels */
    int64_t n;
} dataset;

static int fail(const char *what) {
    fprintf(stderr, "train_digits: %s: %s\n", what, braid_last_error());
    return 1;
}

static int load(const char *xs, const char *ys, dataset *d) {
    br_npy_array x, y;
    if (br_npy_read(xs, BRAID_F32, &x) != BRAID_OK) return fail(xs);
    if (br_npy_read(ys, BRAID_I32, &y) != BRAID_OK) return fail(ys);
    if (x.dtype != BRAID_F32 || x.rank != 2 || x.dims[1] != IN ||
        y.dtype != BRAID_I32 || y.rank != 1 || y.dims[0] != x.dims[0]) {
        fprintf(stderr, "train_digits: unexpected shapes in %s / %s\n", xs, ys);
        return 1;
    }
    d->x = x.data, d->y = y.data, d->n = x.dims[0];
    return 0;
}

/* The four parameters; their initializers (He for w1, Glorot-like w2). */
static void params(braid_graph *g, braid_tensor p[4]) {
    p[0] = braid_variable(g, "w1", BRAID_F32, 2, (int64_t[]){IN, HID},
                          braid_init_normal(SEED, 0, sqrt(2.0 / IN)));
    p[1] = braid_variable(g, "b1", BRAID_F32, 1, (int64_t[]){HID},
                          braid_init_fill(0));
    p[2] = braid_variable(g, "w2", BRAID_F32, 2, (int64_t[]){HID, OUT},
                          braid_init_normal(SEED + 1, 0, sqrt(1.0 / HID)));
    p[3] = braid_variable(g, "b2", BRAID_F32, 1, (int64_t[]){OUT},
                          braid_init_fill(0));
}

/* relu(x·w1 + b1) → pre (before relu), h; and logits h·w2 + b2. */
static braid_tensor forward(braid_graph *g, braid_tensor x,
                            const braid_tensor p[4], braid_tensor *pre,
                            braid_tensor *h) {
    *pre = braid_add(g, braid_matmul(g, x, p[0], 0), p[1]);
    *h = braid_relu(g, *pre);
    return braid_add(g, braid_matmul(g, *h, p[2], 0), p[3]);
}

/* One training step: loss as output "loss", gradients by braid_grad,
 * AdamW on every parameter. */
static braid_graph *train_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor p[4], pre, h, grads[4];
    params(g, p);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, (int64_t[]){BATCH, IN});
    braid_tensor t =
        braid_input(g, "onehot", BRAID_F32, 2, (int64_t[]){BATCH, OUT});
    braid_tensor logits = forward(g, x, p, &pre, &h);
    /* cross-entropy through log-softmax: logits − max − log Σ exp */
    int last[1] = {1}, all[2] = {0, 1};
    braid_tensor z =
        braid_sub(g, logits, braid_reduce_max(g, logits, 1, last, true));
    braid_tensor lse =
        braid_log(g, braid_sum(g, braid_exp(g, z), 1, last, true));
    braid_tensor ll =
        braid_sum(g, braid_mul(g, t, braid_sub(g, z, lse)), 2, all, false);
    braid_tensor loss =
        braid_mul(g, ll, braid_fill(g, BRAID_F32, 0, NULL, -1.0 / BATCH));
    braid_output(g, "loss", loss);
    braid_grad(g, loss, 4, p, grads);
    braid_adamw_options o;
    braid_adamw_options_init(&o);
    o.lr = 3e-3;
    o.weight_decay = 1e-4;
    braid_adamw(g, 4, p, grads, &o);
    return g;
}

/* Predicted class scores of n images. */
static braid_graph *eval_graph(int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor p[4], pre, h;
    params(g, p);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, (int64_t[]){n, IN});
    braid_output(g, "logits", forward(g, x, p, &pre, &h));
    return g;
}

static braid_exec *build(braid_graph *g, braid_plan **plan) {
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "train_digits: %s\n", braid_graph_error(g));
        return NULL;
    }
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_exec *e = NULL;
    if (braid_compile(g, &o, plan) != BRAID_OK ||
        braid_exec_new(*plan, &e) != BRAID_OK) {
        fail("compile");
        return NULL;
    }
    return e;
}

/* xorshift64*: the shuffles (any fixed generator would do). */
static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void shuffle(int64_t *idx, int64_t n, uint64_t *s) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next(s) % (uint64_t)(i + 1)), t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
}

/* One epoch of steps; returns the mean loss. */
static double epoch(braid_exec *e, const dataset *d, int64_t *idx,
                    uint64_t *s) {
    static float x[BATCH * IN], t[BATCH * OUT];
    shuffle(idx, d->n, s);
    double total = 0;
    int64_t steps = d->n / BATCH;
    for (int64_t b = 0; b < steps; b++) {
        memset(t, 0, sizeof t);
        for (int i = 0; i < BATCH; i++) {
            int64_t k = idx[b * BATCH + i];
            memcpy(x + i * IN, d->x + k * IN, IN * sizeof *x);
            t[i * OUT + d->y[k]] = 1;
        }
        float loss;
        braid_input_binding in[2] = {{"x", x, sizeof x},
                                     {"onehot", t, sizeof t}};
        braid_output_binding out = {"loss", &loss, sizeof loss};
        if (braid_run(e, in, 2, &out, 1) != BRAID_OK) return NAN;
        total += loss;
    }
    return total / (double)steps;
}

static int copy_weights(braid_exec *from, braid_exec *to) {
    static float buf[IN * HID];
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    size_t bytes[4] = {IN * HID * 4, HID * 4, HID * OUT * 4, OUT * 4};
    for (int i = 0; i < 4; i++)
        if (braid_exec_variable_read(from, names[i], buf, bytes[i]) !=
                BRAID_OK ||
            braid_exec_variable_write(to, names[i], buf, bytes[i]) != BRAID_OK)
            return fail(names[i]);
    return 0;
}

static double accuracy(braid_exec *e, const dataset *d) {
    float *logits = malloc((size_t)d->n * OUT * sizeof *logits);
    braid_input_binding in = {"x", d->x, (size_t)d->n * IN * sizeof *d->x};
    braid_output_binding out = {"logits", logits,
                                (size_t)d->n * OUT * sizeof *logits};
    int64_t right = 0;
    if (logits && braid_run(e, &in, 1, &out, 1) == BRAID_OK)
        for (int64_t i = 0; i < d->n; i++) {
            int best = 0;
            for (int k = 1; k < OUT; k++)
                if (logits[i * OUT + k] > logits[i * OUT + best]) best = k;
            right += best == d->y[i];
        }
    free(logits);
    return (double)right / (double)d->n;
}

/* The loss curve as a small SVG polyline. */
static void write_svg(const char *path, const double *loss, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    double hi = loss[0] > 0 ? loss[0] : 1;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"420\" "
            "height=\"240\"><rect width=\"420\" height=\"240\" fill=\"white\"/>"
            "<text x=\"10\" y=\"16\" font-size=\"12\">training loss per epoch "
            "(max %.3f)</text><polyline fill=\"none\" stroke=\"steelblue\" "
            "stroke-width=\"2\" points=\"",
            hi);
    for (int i = 0; i < n; i++)
        fprintf(f, "%.1f,%.1f ", 10 + 400.0 * i / (n > 1 ? n - 1 : 1),
                230 - 200.0 * loss[i] / hi);
    fprintf(f, "\"/></svg>\n");
    fclose(f);
}

int main(int argc, char **argv) {
    dataset tr, te;
    if (load(DATA "digits_train_x.npy", DATA "digits_train_y.npy", &tr) ||
        load(DATA "digits_test_x.npy", DATA "digits_test_y.npy", &te))
        return 1;
    braid_graph *tg = train_graph(), *eg = eval_graph(te.n);
    braid_plan *tp = NULL, *ep = NULL;
    braid_exec *train = build(tg, &tp), *eval = build(eg, &ep);
    if (!train || !eval) return 1;
    int64_t *idx = malloc((size_t)tr.n * sizeof *idx);
    for (int64_t i = 0; i < tr.n; i++)
        idx[i] = i;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    double curve[EPOCHS];
    for (int ep_i = 0; ep_i < EPOCHS; ep_i++) {
        curve[ep_i] = epoch(train, &tr, idx, &s);
        if (isnan(curve[ep_i])) return fail("training step");
        if (ep_i % 10 == 9)
            printf("epoch %d: loss %.4f\n", ep_i + 1, curve[ep_i]);
    }
    if (argc > 1) write_svg(argv[1], curve, EPOCHS);
    if (copy_weights(train, eval)) return 1;
    printf("test accuracy: %.3f\n", accuracy(eval, &te));
    braid_exec_free(train), braid_exec_free(eval);
    braid_plan_free(tp), braid_plan_free(ep);
    braid_graph_free(tg), braid_graph_free(eg);
    free(idx), free(tr.x), free(tr.y), free(te.x), free(te.y);
    return 0;
}
