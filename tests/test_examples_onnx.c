/* tests/test_examples_onnx.c — the ONNX example programs (examples/classify.c,
 * examples/next_token.c) on the tiny models of tests/models/tiny: the
 * classes, probabilities and tokens they print against PyTorch's stored
 * outputs (output_0.pb, decoded and ranked here, not by the programs), and
 * their failures (exit 1 with a message, never a crash). Without ONNX
 * import both must say so and exit 1. */
#define _POSIX_C_SOURCE 200809L
#include "tests/onnx_support.h"

#include "runtime/npy/npy.h"
#include "tests/support/cli.h"

#include <unistd.h>

TestSuite(examples_onnx, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown,
          .timeout = 300);

#define TINY BRAID_SOURCE_DIR "/tests/models/tiny/"

/* Runs examples/<prog> with args (NULL-terminated) from the repository
 * root, where its defaults are found. */
static ts_cli_result run_example(const char *prog, const char *const *args) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", BRAID_EXAMPLES_DIR, prog);
    cr_assert_eq(access(path, X_OK), 0, "%s not built", path);
    cr_assert_eq(chdir(BRAID_SOURCE_DIR), 0); /* each test is a process */
    ts_cli_result r = ts_run_cli(path, ts_tmpdir, NULL, args);
    cr_log_info("%s:\nstdout:\n%s\nstderr:\n%s", prog, r.out, r.err);
    return r;
}

/* Expects exit 1 and needle in stderr. */
static void expect_failure(const char *prog, const char *const *args,
                           const char *needle) {
    ts_cli_result r = run_example(prog, args);
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, needle), "'%s' missing from stderr:\n%s", needle,
              r.err);
    ts_cli_result_free(&r);
}

#ifdef BRAID_NO_ONNX
OS_STUB_TEST(examples_onnx)

Test(examples_onnx, programs_say_onnx_is_missing) {
    const char *const none[] = {NULL};
    expect_failure("classify", none, "without ONNX");
    expect_failure("next_token", none, "without ONNX");
}
#else

static os_tensor read_pb(const char *stem, const char *file) {
    char path[1024];
    snprintf(path, sizeof path, TINY "%s/test_data_set_0/%s", stem, file);
    os_tensor t = {0};
    cr_assert(os_read_pb(path, &t), "%s: %s", path, braid_last_error());
    return t;
}

/* The device line: which device ran, said either way. */
static void expect_device_line(const char *out) {
    const char *want = braid_cuda_device_count() > 0
                           ? "devices: cpu,cuda:0"
                           : "no GPU: braid_cuda_status() says";
    cr_assert(strstr(out, want), "'%s' missing:\n%s", want, out);
}

/* ---- classify ------------------------------------------------------------ */

#define NCLASS 10 /* the tiny CNN's classes */
#define NIMG 2

/* Checks classify's top-5 lines against the stored logits of stem: the
 * class printed at rank r must have the r-th highest softmax probability
 * (within 1e-3: a near-tie may come in either order) and the printed
 * probability must be its own. names: the expected labels, or NULL. */
static void check_top5(const char *out, const char *stem,
                       const char *const *names) {
    os_tensor want = read_pb(stem, "output_0.pb");
    cr_assert(want.dtype == BRAID_F32 && want.rank == 2 &&
              want.dims[0] == NIMG && want.dims[1] == NCLASS);
    const float *logits = want.data;
    int seen[NIMG] = {0}, img = -1;
    for (const char *line = out; line; line = strchr(line, '\n')) {
        line += *line == '\n';
        int r;
        long long c;
        double p;
        char label[64] = "";
        if (sscanf(line, "image %d: top 5 of 10 classes", &img) == 1) continue;
        if (sscanf(line, " #%d class %lld p %lf %63s", &r, &c, &p, label) < 3)
            continue;
        cr_assert(img >= 0 && img < NIMG && c >= 0 && c < NCLASS && r >= 1 &&
                      r <= 5,
                  "%s", line);
        cr_assert_eq(r, ++seen[img], "ranks out of order:\n%s", out);
        /* softmax of the stored logits, and the r-th largest */
        const float *s = logits + img * NCLASS;
        double prob[NCLASS], sorted[NCLASS], hi = s[0], sum = 0;
        for (int k = 0; k < NCLASS; k++)
            hi = s[k] > hi ? s[k] : hi;
        for (int k = 0; k < NCLASS; k++)
            sum += prob[k] = exp(s[k] - hi);
        for (int k = 0; k < NCLASS; k++)
            sorted[k] = prob[k] /= sum;
        for (int a = 0; a < NCLASS; a++) /* descending */
            for (int b = a + 1; b < NCLASS; b++)
                if (sorted[b] > sorted[a]) {
                    double t = sorted[a];
                    sorted[a] = sorted[b], sorted[b] = t;
                }
        cr_assert(fabs(prob[c] - sorted[r - 1]) <= 1e-3,
                  "image %d rank %d: class %lld has p %.4f; PyTorch's rank %d "
                  "has %.4f",
                  img, r, c, prob[c], r, sorted[r - 1]);
        cr_assert(fabs(p - prob[c]) <= 1e-3,
                  "image %d class %lld: printed p "
                  "%.4f, PyTorch's %.4f",
                  img, c, p, prob[c]);
        if (names)
            cr_assert_str_eq(label, names[c], "image %d class %lld", img, c);
    }
    for (int i = 0; i < NIMG; i++)
        cr_assert_eq(seen[i], 5, "image %d: %d ranks printed:\n%s", i, seen[i],
                     out);
    free(want.data);
}

/* No arguments: the tiny CNN (dynamo export) and its stored images. */
Test(examples_onnx, classify_defaults_match_pytorch) {
    const char *const none[] = {NULL};
    ts_cli_result r = run_example("classify", none);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "no arguments: the tiny CNN"), "%s", r.out);
    expect_device_line(r.out);
    check_top5(r.out, "tiny_resnet_b2_dynamo", NULL);
    ts_cli_result_free(&r);
}

/* The images of stem as a .npy in the test's folder, batch n (the stored
 * images repeated or cut). */
static char *images_npy(const char *stem, int64_t n) {
    os_tensor x = read_pb(stem, "input_0.pb");
    cr_assert(x.dtype == BRAID_F32 && x.rank == 4 && x.dims[0] == NIMG);
    size_t one = x.bytes / NIMG;
    unsigned char *data = malloc(one * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        memcpy(data + one * (size_t)i,
               (unsigned char *)x.data + one * (size_t)(i % NIMG), one);
    int64_t dims[4] = {n, x.dims[1], x.dims[2], x.dims[3]};
    char *path = tf_path(ts_tmpdir, "images.npy");
    cr_assert_eq(br_npy_write(path, BRAID_F32, 4, dims, data), BRAID_OK, "%s",
                 braid_last_error());
    free(data);
    free(x.data);
    return path;
}

/* A model path, a .npy batch and a labels file: each class's line names
 * its label. */
Test(examples_onnx, classify_npy_with_labels_matches_pytorch) {
    static const char *const names[NCLASS] = {
        "airplane", "automobile", "bird",  "cat",  "deer",
        "dog",      "frog",       "horse", "ship", "truck"};
    char *images = images_npy("tiny_resnet_b2_ts", NIMG);
    char *labels = tf_path(ts_tmpdir, "labels.txt");
    FILE *f = fopen(labels, "w");
    cr_assert(f);
    for (int k = 0; k < NCLASS; k++)
        fprintf(f, "%s\r\n", names[k]);
    fclose(f);
    const char *const args[] = {TINY "tiny_resnet_b2_ts.onnx", images, labels,
                                NULL};
    ts_cli_result r = run_example("classify", args);
    TS_EXPECT_STATUS(r, 0);
    check_top5(r.out, "tiny_resnet_b2_ts", names);
    ts_cli_result_free(&r);
    free(images);
    free(labels);
}

Test(examples_onnx, classify_missing_files_fail_with_a_message) {
    const char *const model[] = {"no/such/model.onnx",
                                 TINY "tiny_resnet_b2_ts/test_data_set_0/"
                                      "input_0.pb",
                                 NULL};
    expect_failure("classify", model, "no/such/model.onnx");
    const char *const images[] = {TINY "tiny_resnet_b2_ts.onnx",
                                  "no/such/images.npy", NULL};
    expect_failure("classify", images, "no/such/images.npy: cannot open");
    const char *const labels[] = {TINY "tiny_resnet_b2_ts.onnx",
                                  TINY "tiny_resnet_b2_ts/test_data_set_0/"
                                       "input_0.pb",
                                  "no/such/labels.txt", NULL};
    expect_failure("classify", labels, "no/such/labels.txt");
}

/* The model's batch is fixed at 2: three images are refused at import,
 * naming the input; logits are not images. */
Test(examples_onnx, classify_wrong_shapes_fail_with_a_message) {
    char *images = images_npy("tiny_resnet_b2_ts", 3);
    const char *const three[] = {TINY "tiny_resnet_b2_ts.onnx", images, NULL};
    expect_failure("classify", three,
                   "input \"input\" dim 0 is 2 in the model; the binding "
                   "gives 3");
    const char *const logits[] = {TINY "tiny_resnet_b2_ts.onnx",
                                  TINY "tiny_resnet_b2_ts/test_data_set_0/"
                                       "output_0.pb",
                                  NULL};
    expect_failure("classify", logits,
                   "holds f32[2,10]; expected f32 [N,C,H,W]");
    free(images);
}

/* ---- next_token ---------------------------------------------------------- */

#define SEQ 16    /* the tiny GPT-2's positions */
#define VOCAB 512 /* and its vocabulary */

/* Checks next_token's table against the stored logits of stem: each
 * printed next token's stored logit is the row's maximum (within 1e-3, so
 * a near-tie may go either way), as is the printed logit. */
static void check_next(const char *out, const char *stem) {
    os_tensor ids = read_pb(stem, "input_0.pb"),
              want = read_pb(stem, "output_0.pb");
    cr_assert(ids.dtype == BRAID_I64 && ids.rank == 2 && ids.dims[1] == SEQ);
    cr_assert(want.dtype == BRAID_F32 && want.rank == 3 &&
              want.dims[1] == SEQ && want.dims[2] == VOCAB);
    const char *table = strstr(out, "position  token  next  logit\n");
    cr_assert(table, "%s", out);
    const char *line = strchr(table, '\n') + 1;
    long long last = -1;
    for (int i = 0; i < SEQ; i++, line = strchr(line, '\n') + 1) {
        long long pos, tok, next;
        double logit;
        cr_assert_eq(
            sscanf(line, "%lld %lld %lld %lf", &pos, &tok, &next, &logit), 4,
            "line %d:\n%s", i, out);
        cr_assert_eq(pos, i);
        cr_assert_eq(tok, ((const int64_t *)ids.data)[i]);
        cr_assert(next >= 0 && next < VOCAB);
        const float *row = (const float *)want.data + i * VOCAB;
        float hi = row[0];
        for (int k = 1; k < VOCAB; k++)
            hi = row[k] > hi ? row[k] : hi;
        cr_assert(row[next] >= hi - 1e-3,
                  "position %d: token %lld has logit "
                  "%g; PyTorch's arg-max has %g",
                  i, next, row[next], hi);
        cr_assert(fabs(logit - hi) <= 1e-3,
                  "position %d: printed %g, "
                  "PyTorch's max %g",
                  i, logit, hi);
        last = next;
    }
    char tail[64];
    snprintf(tail, sizeof tail, "next token after the prompt: %lld\n", last);
    cr_assert(strstr(out, tail), "'%s' missing:\n%s", tail, out);
    free(ids.data);
    free(want.data);
}

Test(examples_onnx, next_token_defaults_match_pytorch) {
    const char *const none[] = {NULL};
    ts_cli_result r = run_example("next_token", none);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "no arguments: the tiny GPT-2"), "%s", r.out);
    expect_device_line(r.out);
    check_next(r.out, "tiny_gpt2_b1_s16_dynamo");
    ts_cli_result_free(&r);
}

/* The stored ids on the command line, and as an int64 .npy. */
Test(examples_onnx, next_token_ids_from_args_and_npy_match_pytorch) {
    os_tensor ids = read_pb("tiny_gpt2_b1_s16_ts", "input_0.pb");
    char text[SEQ][24];
    const char *args[SEQ + 2] = {TINY "tiny_gpt2_b1_s16_ts.onnx"};
    for (int i = 0; i < SEQ; i++) {
        snprintf(text[i], sizeof text[i], "%lld",
                 (long long)((const int64_t *)ids.data)[i]);
        args[i + 1] = text[i];
    }
    args[SEQ + 1] = NULL;
    ts_cli_result r = run_example("next_token", args);
    TS_EXPECT_STATUS(r, 0);
    check_next(r.out, "tiny_gpt2_b1_s16_ts");
    ts_cli_result_free(&r);

    char *npy = tf_path(ts_tmpdir, "ids.npy");
    cr_assert_eq(br_npy_write(npy, BRAID_I64, 1, (int64_t[]){SEQ}, ids.data),
                 BRAID_OK, "%s", braid_last_error());
    const char *const file[] = {TINY "tiny_gpt2_b1_s16_ts.onnx", npy, NULL};
    r = run_example("next_token", file);
    TS_EXPECT_STATUS(r, 0);
    check_next(r.out, "tiny_gpt2_b1_s16_ts");
    ts_cli_result_free(&r);
    free(npy);
    free(ids.data);
}

Test(examples_onnx, next_token_bad_input_fails_with_a_message) {
    const char *const model[] = {"no/such/gpt2.onnx", "1", "2", NULL};
    expect_failure("next_token", model, "no/such/gpt2.onnx");
    const char *const ids[] = {TINY "tiny_gpt2_b1_s16_ts.onnx",
                               "no/such/ids.npy", NULL};
    expect_failure("next_token", ids, "no/such/ids.npy: cannot open");
    /* the model's length is fixed at 16 */
    const char *const five[] = {
        TINY "tiny_gpt2_b1_s16_ts.onnx", "1", "2", "3", "4", "5", NULL};
    expect_failure("next_token", five,
                   "input \"input_ids\" dim 1 is 16 in the model; the binding "
                   "gives 5");
    /* an id past the vocabulary fails the run, naming the gather */
    const char *big[SEQ + 2] = {TINY "tiny_gpt2_b1_s16_ts.onnx"};
    for (int i = 0; i < SEQ; i++)
        big[i + 1] = i == 3 ? "100000" : "7";
    big[SEQ + 1] = NULL;
    expect_failure("next_token", big, "next_token: run: ");
    const char *const word[] = {TINY "tiny_gpt2_b1_s16_ts.onnx", "7", "the",
                                NULL};
    expect_failure("next_token", word, "'the' is not a token id");
}

#endif /* BRAID_NO_ONNX */
