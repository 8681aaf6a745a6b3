/* examples/classify.c — image classification with an ONNX model.
 *
 *   classify [--input NAME] MODEL.onnx IMAGES [LABELS.txt]
 *
 * Imports MODEL with braid_onnx_import, binding the model's image input to
 * the shape of IMAGES (f32 [N,C,H,W], a .npy or an ONNX TensorProto .pb):
 * a model exported with a symbolic batch dim then compiles for exactly N
 * images, and a model with fixed dims must agree with them. NAME is that
 * input's ONNX name ("input" unless given: what torch.onnx.export calls it
 * in tests/models' exports and most torchvision ones). It compiles the
 * graph for the best device present (the CPU when there is no GPU), runs
 * it once and prints the five most likely classes of every image with
 * their softmax probabilities, named by LABELS (one label per line, line k
 * naming class k) when given.
 *
 * With no arguments it classifies the two images stored with the tiny CNN
 * of tests/models/tiny; run it from the repository root. Every failure
 * (a missing file, a wrong shape, an import error) prints braid's message
 * and exits 1 — as does a braid built without ONNX import. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"
#include "braid/onnx.h"

#include "tensor_file.h"

#define TINY "tests/models/tiny/"
#define DEFAULT_MODEL TINY "tiny_resnet_b2_dynamo.onnx"
#define DEFAULT_IMAGES TINY "tiny_resnet_b2_dynamo/test_data_set_0/input_0.pb"
#define TOP 5
#define MAX_LABEL 256 /* bytes kept of a label */

typedef struct labels {
    char (*text)[MAX_LABEL]; /* one per class, "" past the file's end */
    int64_t n;               /* lines read */
} labels;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what) {
    fprintf(stderr, "classify: %s: %s\n", what, braid_last_error());
    return 1;
}

static int usage(FILE *to, int rc) {
    fprintf(to, "usage: classify [--input NAME] MODEL.onnx IMAGES "
                "[LABELS.txt]\n"
                "  IMAGES: f32 [N,C,H,W] as .npy or ONNX TensorProto .pb;"
                " no arguments: the tiny CNN of tests/models/tiny\n");
    return rc;
}

/* Up to nclass lines of path (newline and a '\r' before it dropped). */
static bool read_labels(const char *path, int64_t nclass, labels *l) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "classify: %s: cannot open\n", path);
        return false;
    }
    l->text = calloc((size_t)nclass, sizeof *l->text);
    char *line = NULL;
    size_t cap = 0;
    for (l->n = 0; l->text && l->n < nclass && getline(&line, &cap, f) >= 0;
         l->n++) {
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(l->text[l->n], MAX_LABEL, "%.*s", MAX_LABEL - 1, line);
    }
    free(line);
    fclose(f);
    return l->text != NULL;
}

/* Imports the model with input name bound to the images' shape. */
static braid_graph *import(const char *path, const char *name,
                           const ex_tensor *x) {
    char shapes[512];
    int n = snprintf(shapes, sizeof shapes, "%s=", name);
    for (int k = 0; k < x->rank && n > 0 && (size_t)n < sizeof shapes; k++)
        n += snprintf(shapes + n, sizeof shapes - (size_t)n, "%s%lld",
                      k ? "x" : "", (long long)x->dims[k]);
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = shapes;
    braid_graph *g = NULL;
    braid_status s = braid_onnx_import(path, &o, &g);
    if (s != BRAID_OK) fail("import");
    /* a dim left unbound, or a binding the model disagrees with */
    if (s == BRAID_ERR_INVALID_ARGUMENT || s == BRAID_ERR_SHAPE)
        fprintf(stderr,
                "classify: (the images' shape was bound to the "
                "model's input \"%s\"; --input NAME names another)\n",
                name);
    return g;
}

/* The model must take one f32 input of the images' shape and give f32
 * scores [N, classes] as its first output. */
static bool check_model(const braid_graph *g, const ex_tensor *x,
                        const char **in, const char **out, int64_t *nclass) {
    braid_tensor ti, to;
    braid_dtype di, dout;
    int ri, ro;
    int64_t dims_i[BRAID_MAX_RANK], dims_o[BRAID_MAX_RANK];
    char want[160], got[160];
    if (braid_graph_input_count(g) != 1 || braid_graph_output_count(g) < 1) {
        fprintf(stderr,
                "classify: the model has %u inputs and %u outputs; "
                "an image classifier has one input\n",
                braid_graph_input_count(g), braid_graph_output_count(g));
        return false;
    }
    braid_graph_input(g, 0, in, &ti);
    braid_graph_output(g, 0, out, &to);
    braid_tensor_info(g, ti, &di, &ri, dims_i);
    braid_tensor_info(g, to, &dout, &ro, dims_o);
    if (di != BRAID_F32 || ri != x->rank ||
        memcmp(dims_i, x->dims, sizeof(int64_t) * (size_t)ri)) {
        ex_type_str(di, ri, dims_i, want, sizeof want);
        ex_type_str(x->dtype, x->rank, x->dims, got, sizeof got);
        fprintf(stderr,
                "classify: the model's input \"%s\" is %s; the "
                "images are %s\n",
                *in, want, got);
        return false;
    }
    if (dout != BRAID_F32 || ro != 2 || dims_o[0] != x->dims[0]) {
        ex_type_str(dout, ro, dims_o, got, sizeof got);
        fprintf(stderr,
                "classify: output \"%s\" is %s; expected f32 "
                "[%lld, classes]\n",
                *out, got, (long long)x->dims[0]);
        return false;
    }
    *nclass = dims_o[1];
    return true;
}

/* Compiles for cuda:0 when a GPU is present, else for the CPU, and says
 * which; then makes the executor. */
static braid_exec *compile(const braid_graph *g, braid_plan **plan) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    if (braid_cuda_device_count() > 0) {
        o.devices = "cpu,cuda:0";
        printf("devices: cpu,cuda:0 (%s)\n", braid_cuda_status());
    } else {
        o.devices = "cpu";
        printf("no GPU: braid_cuda_status() says \"%s\"; running on the "
               "CPU\n",
               braid_cuda_status());
    }
    braid_exec *e = NULL;
    double t0 = now_s();
    if (braid_compile(g, &o, plan) != BRAID_OK) {
        fail("compile");
        return NULL;
    }
    printf("compile: %.1f ms\n", (now_s() - t0) * 1e3);
    if (braid_exec_new(*plan, &e) != BRAID_OK) fail("executor");
    return e;
}

/* Softmax of one image's scores into p (in doubles: exp of the max-shifted
 * scores, so large logits cannot overflow). */
static void softmax(const float *s, int64_t n, double *p) {
    double hi = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n; k++)
        hi = s[k] > hi ? s[k] : hi;
    for (int64_t k = 0; k < n; k++)
        sum += p[k] = exp((double)s[k] - hi);
    for (int64_t k = 0; k < n; k++)
        p[k] /= sum;
}

/* The TOP most likely classes of each of n images, most likely first. */
static void print_top(const float *scores, int64_t n, int64_t nclass,
                      const labels *l) {
    double *p = malloc((size_t)nclass * sizeof *p);
    int top = nclass < TOP ? (int)nclass : TOP;
    for (int64_t i = 0; p && i < n; i++) {
        softmax(scores + i * nclass, nclass, p);
        printf("image %lld: top %d of %lld classes\n", (long long)i, top,
               (long long)nclass);
        for (int r = 0; r < top; r++) {
            int64_t best = 0;
            for (int64_t k = 1; k < nclass; k++)
                if (p[k] > p[best]) best = k;
            printf("  #%d  class %-6lld p %.4f%s%s\n", r + 1, (long long)best,
                   p[best], l->n > best ? "  " : "",
                   l->n > best ? l->text[best] : "");
            p[best] = -1; /* taken */
        }
    }
    free(p);
}

/* Runs the model on the images and prints the classes. */
static int classify(const braid_graph *g, const ex_tensor *x,
                    const char *label_path) {
    const char *in, *out;
    int64_t nclass;
    if (!check_model(g, x, &in, &out, &nclass)) return 1;
    labels l = {NULL, 0};
    if (label_path && !read_labels(label_path, nclass, &l)) return 1;
    printf("model: input \"%s\" f32[%lld,%lld,%lld,%lld], output \"%s\": "
           "%lld classes, %u nodes\n",
           in, (long long)x->dims[0], (long long)x->dims[1],
           (long long)x->dims[2], (long long)x->dims[3], out, (long long)nclass,
           braid_graph_node_count(g));
    braid_plan *plan = NULL;
    braid_exec *e = compile(g, &plan);
    size_t nscores = (size_t)(x->dims[0] * nclass);
    float *scores = malloc(nscores * sizeof *scores);
    int rc = e && scores ? 0 : 1;
    if (e && !scores) fprintf(stderr, "classify: out of memory\n");
    if (!rc) {
        braid_input_binding ib = {in, x->data,
                                  (size_t)x->numel * sizeof(float)};
        braid_output_binding ob = {out, scores, nscores * sizeof *scores};
        double t0 = now_s();
        rc = braid_run(e, &ib, 1, &ob, 1) != BRAID_OK ? fail("run") : 0;
        if (!rc) printf("run: %.1f ms\n\n", (now_s() - t0) * 1e3);
    }
    if (!rc) print_top(scores, x->dims[0], nclass, &l);
    free(scores);
    free(l.text);
    braid_exec_free(e);
    braid_plan_free(plan);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
        return usage(stdout, 0);
    const char *name = "input";
    int a = 1;
    if (argc > 2 && !strcmp(argv[1], "--input")) name = argv[2], a = 3;
    int nargs = argc - a;
    if ((nargs != 0 && nargs != 2 && nargs != 3) ||
        (nargs > 0 && argv[a][0] == '-'))
        return usage(stderr, 1);
    const char *model = nargs ? argv[a] : DEFAULT_MODEL;
    const char *images = nargs ? argv[a + 1] : DEFAULT_IMAGES;
    const char *label_path = nargs == 3 ? argv[a + 2] : NULL;
    if (!nargs)
        printf("no arguments: the tiny CNN and its two stored images from "
               "tests/models/tiny (run from the repository root)\n");
    printf("classify: %s on %s\n", model, images);
    ex_tensor x;
    if (!ex_read_tensor("classify", images, &x)) return 1;
    if (x.dtype != BRAID_F32 || x.rank != 4) {
        char got[160];
        ex_type_str(x.dtype, x.rank, x.dims, got, sizeof got);
        fprintf(stderr, "classify: %s holds %s; expected f32 [N,C,H,W]\n",
                images, got);
        free(x.data);
        return 1;
    }
    braid_graph *g = import(model, name, &x);
    int rc = g ? classify(g, &x, label_path) : 1;
    braid_graph_free(g);
    free(x.data);
    return rc;
}
