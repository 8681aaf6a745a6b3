/* tests/test_cpu_sgemm.c — braid's own f32 GEMM against packed constant
 * weights (runtime/cpu/cpu_sgemm.c).
 *
 * Directly: products of every edge the packing and the micro-kernel have
 * (rows not a multiple of the 12-row tile, columns not a multiple of the
 * 32-column panel, K across several 384-deep blocks, more rows than one
 * 240-row block, leading dimensions wider than the matrix, B transposed, a
 * C larger than L2 that runs panel by panel)
 * against a double-precision sum, with the f32 error bound of a K-term dot
 * product, and bit for bit the same on 1 and 3 threads and with A packed
 * in row tiles (br_sgemm_run_pa, alone or as a batch of products), and with a
 * bias, a residual add and a relu applied as rows are stored the bits of
 * applying them after (br_sgemm_run_ep, streamed or not). Through the executor:
 * a Linear layer's matmul (plain, fused with its bias and GELU, batched A
 * against one B, B transposed) with constant weights takes the packed path (the
 * executor holds the derived panels), matches the reference evaluator on fresh
 * random inputs, and gives the same bits as the same graph with the weights
 * bound as an input (packed per run). On a CPU without AVX-512F the GEMM is off
 * (OpenBLAS does every product) and these tests say so. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/exec_impl.h"
#include "support/support.h"

#define SKIP_WITHOUT_GEMM()                                                    \
    do {                                                                       \
        if (!br_sgemm_enabled())                                               \
            cr_skip_test("no AVX-512F here (or BRAID_CPU_GEMM=openblas): "     \
                         "OpenBLAS runs every product");                       \
    } while (0)

static float *random_floats(size_t n, uint64_t seed) {
    float *x = malloc(n * sizeof *x);
    cr_assert(x);
    ts_fill_random(BRAID_F32, x, (int64_t)n, seed, -1.0, 1.0);
    return x;
}

typedef struct shape {
    int M, N, K;
    bool tb;
    int pad; /* extra columns of lda, ldb and ldc */
} shape;

static void check_shape(const shape *s, uint64_t seed, br_pool *three) {
    int lda = s->K + s->pad, ldc = s->N + s->pad;
    int brows = s->tb ? s->N : s->K, bcols = s->tb ? s->K : s->N;
    int ldb = bcols + s->pad;
    float *A = random_floats((size_t)s->M * lda, seed);
    float *B = random_floats((size_t)brows * ldb, seed + 1);
    float *C1 = malloc((size_t)s->M * ldc * sizeof(float));
    float *C3 = malloc((size_t)s->M * ldc * sizeof(float));
    cr_assert(C1 && C3);
    /* The padding columns of C must survive: a sentinel there. */
    for (size_t i = 0; i < (size_t)s->M * ldc; i++)
        C1[i] = C3[i] = 7.0f;
    br_sgemm_packed *P = br_sgemm_pack(B, s->K, s->N, ldb, s->tb, three);
    cr_assert(P, "pack %dx%d failed", s->K, s->N);
    br_sgemm_run(NULL, s->M, A, lda, P, C1, ldc);
    br_sgemm_run(three, s->M, A, lda, P, C3, ldc);
    cr_assert(memcmp(C1, C3, (size_t)s->M * ldc * sizeof(float)) == 0,
              "M=%d N=%d K=%d: 1 and 3 threads differ", s->M, s->N, s->K);
    /* A packed in row tiles (br_sgemm_run_pa, the Winograd products):
     * the same bits, the padding of C untouched too */
    float *Ap = calloc(br_sgemm_apack_floats(s->M, s->K), sizeof(float));
    cr_assert(Ap);
    for (int i = 0; i < s->M; i++)
        for (int k = 0; k < s->K; k++)
            Ap[br_sgemm_apack_at(s->K, i, k)] = A[(size_t)i * lda + k];
    for (size_t i = 0; i < (size_t)s->M * ldc; i++)
        C3[i] = 7.0f;
    br_sgemm_run_pa(three, s->M, Ap, P, C3, ldc);
    cr_assert(memcmp(C1, C3, (size_t)s->M * ldc * sizeof(float)) == 0,
              "M=%d N=%d K=%d: packed A differs", s->M, s->N, s->K);
    /* as a batch of three (br_sgemm_run_pa_batch): A packed, then A
     * negated, then A again, each product the bits of its own */
    size_t ap = br_sgemm_apack_floats(s->M, s->K), cn = (size_t)s->M * ldc;
    float *Ab = malloc(3 * ap * sizeof(float));
    float *Cb = malloc(3 * cn * sizeof(float));
    cr_assert(Ab && Cb);
    for (size_t i = 0; i < ap; i++)
        Ab[i] = Ab[2 * ap + i] = Ap[i], Ab[ap + i] = -Ap[i];
    br_sgemm_packed Pb[3] = {*P, *P, *P};
    br_sgemm_run_pa_batch(three, 3, s->M, Ab, ap, Pb, Cb, cn, ldc);
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < s->M; i++)
            for (int j = 0; j < s->N; j++) {
                float want = C1[(size_t)i * ldc + j], got;
                got = Cb[b * cn + (size_t)i * ldc + j];
                cr_assert(b == 1 ? got == -want
                                 : memcmp(&got, &want, sizeof got) == 0,
                          "M=%d N=%d K=%d: batch item %d C[%d][%d] = %.9g, "
                          "want %s%.9g",
                          s->M, s->N, s->K, b, i, j, got, b == 1 ? "-" : "",
                          want);
            }
    free(Ab);
    free(Cb);
    free(Ap);
    /* the epilogue as rows are stored (br_sgemm_run_ep, the convolutions'
     * bias, residual add and relu, streamed or not): the bits of doing
     * each after the product */
    float *bias = random_floats((size_t)s->M, seed + 2);
    float *R = random_floats((size_t)s->M * ldc, seed + 3);
    for (int v = 0; v < 3; v++) {
        for (size_t i = 0; i < (size_t)s->M * ldc; i++)
            C3[i] = 7.0f;
        br_sgemm_ep ep = {.bias = v != 1 ? bias : NULL,
                          .res = v != 0 ? R : NULL,
                          .ldr = (size_t)ldc,
                          .res_first = v == 2,
                          .relu = v != 0,
                          .stream = seed % 2 == 0};
        br_sgemm_run_ep(three, s->M, A, lda, P, C3, ldc, &ep);
        for (int i = 0; i < s->M; i++)
            for (int j = 0; j < ldc; j++) {
                size_t at = (size_t)i * ldc + j;
                float want = C1[at];
                if (j < s->N) {
                    if (ep.bias) want = want + bias[i];
                    if (ep.res)
                        want = ep.res_first ? R[at] + want : want + R[at];
                    if (ep.relu) want = want < 0 ? 0.0f : want;
                } else {
                    want = 7.0f;
                }
                cr_assert(memcmp(&want, &C3[at], sizeof want) == 0,
                          "M=%d N=%d K=%d: epilogue %d: C[%d][%d] = %.9g, "
                          "want %.9g",
                          s->M, s->N, s->K, v, i, j, C3[at], want);
            }
    }
    free(bias);
    free(R);
    for (int i = 0; i < s->M; i++) {
        for (int j = 0; j < ldc; j++) {
            float got = C1[(size_t)i * ldc + j];
            if (j >= s->N) {
                cr_assert_eq(got, 7.0f,
                             "M=%d N=%d K=%d: padding (%d, %d) "
                             "written",
                             s->M, s->N, s->K, i, j);
                continue;
            }
            double sum = 0, mag = 0;
            for (int k = 0; k < s->K; k++) {
                double b =
                    s->tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                double p = (double)A[(size_t)i * lda + k] * b;
                sum += p;
                mag += fabs(p);
            }
            /* f32 rounding of a K-term sum: each partial sum once */
            double tol = 1e-30 + (s->K + 2) * 6e-8 * mag;
            cr_assert(fabs(got - sum) <= tol,
                      "M=%d N=%d K=%d tb=%d: C[%d][%d] = %.9g, want %.9g "
                      "(tolerance %.3g)",
                      s->M, s->N, s->K, s->tb, i, j, got, sum, tol);
        }
    }
    free(P);
    free(A);
    free(B);
    free(C1);
    free(C3);
}

Test(cpu_sgemm, products_match_double_sums_on_every_edge) {
    SKIP_WITHOUT_GEMM();
    static const shape shapes[] = {
        {1, 1, 1, false, 0},
        {12, 32, 384, false, 0},
        {13, 33, 385, false, 3},
        {11, 31, 7, true, 0},
        {128, 100, 800, false, 0},
        {250, 70, 96, true, 5},
        {5, 200, 1000, true, 1},
        {487, 64, 33, false, 0},
        {24, 1, 64, false, 2},
        {1, 129, 12, true, 0},
        /* last tiles of 4 rows (ResNet's 64 channels), 6 and 9 rows: the
         * 4-, 8- and 12-row kernels */
        {64, 45, 147, false, 0},
        {30, 33, 20, true, 1},
        {9, 64, 500, false, 0},
        /* C of 4.2 MB, two K blocks: run panel by panel (each panel's K
         * blocks in a row: SG_PANEL_C), with a tail of 9 rows */
        {21, 50000, 420, false, 0},
    };
    br_pool *three = br_pool_new(3);
    cr_assert(three);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        check_shape(&shapes[i], 100 + 7 * i, three);
    br_pool_free(three);
}

/* ---- through the executor ------------------------------------------------ */

/* y = act(a · W (+ bias)) with W constant: a [batch.., M, K] input. */
static braid_graph *linear_graph(int rank, const int64_t *adims, int64_t N,
                                 bool tb, bool epilogue, uint64_t seed,
                                 bool w_input, float **wdata) {
    int64_t K = adims[rank - 1];
    int64_t wd[2] = {tb ? N : K, tb ? K : N}, bd[1] = {N};
    *wdata = random_floats((size_t)(K * N), seed);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, rank, adims);
    braid_tensor w = w_input ? braid_input(g, "w", BRAID_F32, 2, wd)
                             : braid_constant(g, BRAID_F32, 2, wd, *wdata);
    braid_tensor y = braid_matmul(g, a, w, tb ? BRAID_TRANSPOSE_B : 0);
    if (epilogue)
        y = braid_gelu(
            g, braid_add(g, y, braid_input(g, "bias", BRAID_F32, 1, bd)));
    braid_output(g, "y", y);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* Compiles g for the CPU on `threads` threads, asserts that the executor
 * packed `want` products' weights, runs it on io's inputs into io->out. */
static void run_packed(const braid_graph *g, int threads, int want, ts_io *io) {
    braid_plan *p;
    braid_exec *e;
    ts_cpu_exec(g, threads, &p, &e);
    int packed = 0;
    for (uint32_t id = 0; e->derived && id < p->res.ninfo; id++)
        packed += e->derived[id] != NULL;
    cr_assert_eq(packed, want,
                 "the executor packed %d products' weights, not %d", packed,
                 want);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
}

Test(cpu_sgemm, constant_weights_through_the_executor) {
    SKIP_WITHOUT_GEMM();
    static const struct {
        int rank;
        int64_t a[3];
        int64_t N;
        bool tb, epilogue;
    } cases[] = {
        {2, {128, 768}, 300, false, true},     /* GPT-2's fused Linear */
        {3, {1, 128, 200}, 1000, true, false}, /* lm_head: W transposed */
        {3, {3, 17, 50}, 45, false, true},     /* batch dims against one W */
        {2, {1, 640}, 33, true, true},         /* one row */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float *w = NULL, *w2 = NULL;
        braid_graph *g =
            linear_graph(cases[i].rank, cases[i].a, cases[i].N, cases[i].tb,
                         cases[i].epilogue, 300 + i, false, &w);
        braid_graph *gi =
            linear_graph(cases[i].rank, cases[i].a, cases[i].N, cases[i].tb,
                         cases[i].epilogue, 300 + i, true, &w2);
        for (int threads = 1; threads <= 3; threads += 2) {
            ts_io *io = ts_io_new(g, 500 + 10 * i + (uint64_t)threads);
            run_packed(g, threads, 1, io);
            cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->ref,
                                             io->noutputs),
                         BRAID_OK, "%s", braid_last_error());
            char msg[256];
            cr_assert(ts_io_compare(io, msg, sizeof msg),
                      "case %zu, %d threads: %s", i, threads, msg);
            /* the weights as an input ("w"), the same values: same bits */
            ts_io *in = ts_io_new(gi, 500 + 10 * i + (uint64_t)threads);
            for (uint32_t k = 0; k < in->ninputs; k++) {
                const char *name = in->in[k].name;
                for (uint32_t q = 0; q < io->ninputs; q++)
                    if (strcmp(io->in[q].name, name) == 0)
                        memcpy((void *)in->in[k].data, io->in[q].data,
                               in->in[k].bytes);
                if (strcmp(name, "w") == 0)
                    memcpy((void *)in->in[k].data, w, in->in[k].bytes);
            }
            run_packed(gi, threads, 0, in);
            cr_assert(
                memcmp(in->out[0].data, io->out[0].data, io->out[0].bytes) == 0,
                "case %zu, %d threads: weights as an input changed the "
                "bits",
                i, threads);
            ts_io_free(in);
            ts_io_free(io);
        }
        braid_graph_free(g);
        braid_graph_free(gi);
        free(w);
        free(w2);
    }
}

/* Where the packed path does not apply, the executor packs nothing: B an
 * input, or A transposed. */
Test(cpu_sgemm, nothing_packed_when_it_does_not_apply) {
    SKIP_WITHOUT_GEMM();
    int64_t ad[2] = {64, 32}, wd[2] = {32, 48}, td[2] = {64, 48};
    float *w = random_floats(64 * 48, 9);
    for (int form = 0; form < 2; form++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor a = braid_input(g, "a", BRAID_F32, 2, ad);
        braid_tensor y =
            form == 0 /* a [64, 32] · w [32, 48], w an input */
                ? braid_matmul(g, a, braid_input(g, "w", BRAID_F32, 2, wd), 0)
                /* aᵀ [32, 64] · w [64, 48], w constant */
                : braid_matmul(g, a, braid_constant(g, BRAID_F32, 2, td, w),
                               BRAID_TRANSPOSE_A);
        braid_output(g, "y", y);
        cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s",
                     braid_graph_error(g));
        braid_plan *p;
        braid_exec *e;
        ts_cpu_exec(g, 0, &p, &e);
        for (uint32_t id = 0; e->derived && id < p->res.ninfo; id++)
            cr_assert_null(e->derived[id], "form %d: node %u packed", form, id);
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    free(w);
}
