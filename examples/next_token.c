/* examples/next_token.c — a GPT-2-style language model from ONNX: the
 * arg-max next token at every position of a prompt.
 *
 *   next_token MODEL.onnx IDS          (IDS: int64 token ids, [T] or [1,T],
 *                                       as .npy or ONNX TensorProto .pb)
 *   next_token MODEL.onnx ID ID ...    (the ids on the command line)
 *
 * The model takes "input_ids" int64 [1,T] and gives logits f32 [1,T,V]
 * as its first output (tests/models' GPT-2 exports). The import binds
 * input_ids to [1,T], so a model exported with a symbolic sequence length
 * compiles for this prompt; one with a fixed length must be given exactly
 * that many ids. braid keeps int64 at the graph's boundary (its i64 dtype)
 * and checks, when the plan runs, that each id fits the i32 it computes
 * with. The plan is compiled for the best device present (the CPU when
 * there is no GPU) and run once; then, for each position t, the token the
 * model finds most likely to follow ids[0..t] — the last line is the
 * prediction for the whole prompt. There is no tokenizer here: ids in,
 * ids out.
 *
 * With no arguments it runs the tiny GPT-2 of tests/models/tiny on its
 * stored 16 ids; run it from the repository root. Every failure (a missing
 * file, a wrong shape, an import error) prints braid's message and exits
 * 1 — as does a braid built without ONNX import. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid/braid.h"
#include "braid/onnx.h"

#include "tensor_file.h"

#define TINY "tests/models/tiny/"
#define DEFAULT_MODEL TINY "tiny_gpt2_b1_s16_dynamo.onnx"
#define DEFAULT_IDS TINY "tiny_gpt2_b1_s16_dynamo/test_data_set_0/input_0.pb"
#define INPUT "input_ids"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what) {
    fprintf(stderr, "next_token: %s: %s\n", what, braid_last_error());
    return 1;
}

static int usage(FILE *to, int rc) {
    fprintf(to, "usage: next_token MODEL.onnx IDS.npy|IDS.pb\n"
                "       next_token MODEL.onnx ID ID ...\n"
                "  no arguments: the tiny GPT-2 of tests/models/tiny\n");
    return rc;
}

static bool is_number(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* The ids as int64 [1,T] from the command line (n of them). */
static bool ids_from_args(char **arg, int n, ex_tensor *ids) {
    int64_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return false;
    for (int k = 0; k < n; k++) {
        errno = 0;
        v[k] = strtoll(arg[k], NULL, 10);
        if (errno) {
            fprintf(stderr, "next_token: id '%s' is out of range\n", arg[k]);
            free(v);
            return false;
        }
    }
    *ids = (ex_tensor){BRAID_I64, 2, {1, n}, n, v};
    return true;
}

/* The ids from a file: int64 (or int32, widened) [T] or [1,T]. */
static bool ids_from_file(const char *path, ex_tensor *ids) {
    if (!ex_read_tensor("next_token", path, ids)) return false;
    bool shape = ids->numel > 0 &&
                 (ids->rank == 1 || (ids->rank == 2 && ids->dims[0] == 1));
    if (!shape || (ids->dtype != BRAID_I64 && ids->dtype != BRAID_I32)) {
        char got[160];
        ex_type_str(ids->dtype, ids->rank, ids->dims, got, sizeof got);
        fprintf(stderr,
                "next_token: %s holds %s; expected int64 token ids "
                "[T] or [1,T]\n",
                path, got);
        free(ids->data);
        return false;
    }
    int64_t *v = ids->data;
    if (ids->dtype == BRAID_I32) { /* widened: the model takes int64 */
        const int32_t *narrow = ids->data;
        v = malloc((size_t)ids->numel * sizeof *v);
        for (int64_t k = 0; v && k < ids->numel; k++)
            v[k] = narrow[k];
        free(ids->data);
        if (!v) return false;
    }
    *ids = (ex_tensor){BRAID_I64, 2, {1, ids->numel}, ids->numel, v};
    return true;
}

static braid_graph *import(const char *path, int64_t t) {
    char shapes[64];
    snprintf(shapes, sizeof shapes, INPUT "=1x%lld", (long long)t);
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.shapes = shapes;
    braid_graph *g = NULL;
    if (braid_onnx_import(path, &o, &g) != BRAID_OK) fail("import");
    return g;
}

/* The model must take the ids as its input "input_ids", int64 [1,T]. */
static bool has_ids_input(const braid_graph *g, const char *name, int64_t t) {
    for (uint32_t i = 0; i < braid_graph_input_count(g); i++) {
        const char *n;
        braid_tensor x;
        braid_dtype dt;
        int rank;
        int64_t dims[BRAID_MAX_RANK];
        braid_graph_input(g, i, &n, &x);
        braid_tensor_info(g, x, &dt, &rank, dims);
        if (strcmp(n, name)) continue;
        if (dt == BRAID_I64 && rank == 2 && dims[0] == 1 && dims[1] == t)
            return true;
        char got[160];
        ex_type_str(dt, rank, dims, got, sizeof got);
        fprintf(stderr,
                "next_token: input \"%s\" is %s; expected int64 "
                "[1,%lld]\n",
                name, got, (long long)t);
        return false;
    }
    fprintf(stderr, "next_token: the model has no input \"" INPUT "\"\n");
    return false;
}

/* The logits output: the first, f32 [1,T,V]; *vocab gets V. */
static bool find_logits(const braid_graph *g, int64_t t, const char **name,
                        int64_t *vocab) {
    braid_tensor o;
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    if (braid_graph_output_count(g) < 1 ||
        braid_graph_output(g, 0, name, &o) != BRAID_OK ||
        braid_tensor_info(g, o, &dt, &rank, dims) != BRAID_OK) {
        fprintf(stderr, "next_token: the model has no output\n");
        return false;
    }
    if (dt != BRAID_F32 || rank != 3 || dims[0] != 1 || dims[1] != t) {
        char got[160];
        ex_type_str(dt, rank, dims, got, sizeof got);
        fprintf(stderr,
                "next_token: output \"%s\" is %s; expected logits "
                "f32 [1,%lld,vocabulary]\n",
                *name, got, (long long)t);
        return false;
    }
    *vocab = dims[2];
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

/* One line per position: its id, the arg-max next id and its logit. */
static void print_next(const int64_t *ids, const float *logits, int64_t t,
                       int64_t vocab) {
    printf("position  token  next  logit\n");
    int64_t best = 0;
    for (int64_t i = 0; i < t; i++) {
        const float *row = logits + i * vocab;
        best = 0;
        for (int64_t k = 1; k < vocab; k++)
            if (row[k] > row[best]) best = k;
        printf("%8lld  %5lld  %4lld  %.4f\n", (long long)i, (long long)ids[i],
               (long long)best, row[best]);
    }
    printf("next token after the prompt: %lld\n", (long long)best);
}

static int predict(const braid_graph *g, const ex_tensor *ids) {
    const char *out;
    int64_t t = ids->numel, vocab;
    char in[64];
    braid_onnx_input_name(INPUT, in, sizeof in);
    if (!has_ids_input(g, in, t) || !find_logits(g, t, &out, &vocab)) return 1;
    printf("model: %lld ids in, logits over %lld tokens out, %u nodes\n",
           (long long)t, (long long)vocab, braid_graph_node_count(g));
    braid_plan *plan = NULL;
    braid_exec *e = compile(g, &plan);
    float *logits = malloc((size_t)(t * vocab) * sizeof *logits);
    int rc = e && logits ? 0 : 1;
    if (e && !logits) fprintf(stderr, "next_token: out of memory\n");
    if (!rc) {
        braid_input_binding ib = {in, ids->data, (size_t)t * sizeof(int64_t)};
        braid_output_binding ob = {out, logits,
                                   (size_t)(t * vocab) * sizeof *logits};
        double t0 = now_s();
        rc = braid_run(e, &ib, 1, &ob, 1) != BRAID_OK ? fail("run") : 0;
        if (!rc) printf("run: %.1f ms\n\n", (now_s() - t0) * 1e3);
    }
    if (!rc) print_next(ids->data, logits, t, vocab);
    free(logits);
    braid_exec_free(e);
    braid_plan_free(plan);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
        return usage(stdout, 0);
    if (argc == 2 || (argc > 1 && argv[1][0] == '-')) return usage(stderr, 1);
    const char *model = argc > 1 ? argv[1] : DEFAULT_MODEL;
    if (argc == 1)
        printf("no arguments: the tiny GPT-2 and its stored 16 ids from "
               "tests/models/tiny (run from the repository root)\n");
    printf("next_token: %s\n", model);
    ex_tensor ids;
    bool listed = argc > 3 || (argc == 3 && is_number(argv[2]));
    if (listed) {
        for (int k = 2; k < argc; k++)
            if (!is_number(argv[k])) {
                fprintf(stderr, "next_token: '%s' is not a token id\n",
                        argv[k]);
                return 1;
            }
        if (!ids_from_args(argv + 2, argc - 2, &ids)) return 1;
    } else if (!ids_from_file(argc > 1 ? argv[2] : DEFAULT_IDS, &ids)) {
        return 1;
    }
    braid_graph *g = import(model, ids.numel);
    int rc = g ? predict(g, &ids) : 1;
    braid_graph_free(g);
    free(ids.data);
    return rc;
}
