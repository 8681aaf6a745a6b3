/* bench/gemm_libs/gemm_libs.c — f32 GEMM of GPT-2 small's and ResNet-18's
 * shapes through the CPU GEMM libraries Debian offers, side by side in one
 * process: OpenBLAS (cblas_sgemm; its core type is fixed at load, so
 * bench/gemm_libs/run.sh runs this once per OPENBLAS_CORETYPE), BLIS
 * (bli_sgemm, pthread flavour), oneDNN (dnnl_sgemm, and a matmul primitive
 * whose constant B is reordered once into the layout it picks).
 *
 * Not built by CMake (it links libraries braid may not have): run.sh
 * compiles it. usage: gemm_libs [--threads 1,2] [--time S] [--only SUBSTR]
 * Prints one line per (shape, library, threads): median ms of the runs in
 * S seconds (at least 3) and of the fastest, GFLOP/s of the fastest, the
 * median process CPU time per run, and the largest difference from
 * OpenBLAS's single-thread result. */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_BLIS
#include <blis.h>
#endif
#ifdef HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif

#include "../conv_shapes.h"

extern void openblas_set_num_threads(int);
extern char *openblas_get_corename(void);

typedef struct shape {
    char name[48];
    int batch;  /* independent products, run one after another */
    int M, N, K;
    int tb;     /* B stored [N, K] */
} shape;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill(float *x, size_t n, unsigned long long s) {
    for (size_t i = 0; i < n; i++) {
        unsigned long long z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
}

enum { L_OPENBLAS, L_BLIS, L_DNNL_SGEMM, L_DNNL_PACKED, L_COUNT };
static const char *lib_name[L_COUNT] = {"openblas", "blis", "dnnl_sgemm",
                                        "dnnl_matmul_packed"};

typedef struct job {
    const shape *s;
    const float *a, *b;
    float *c;
#ifdef HAVE_DNNL
    dnnl_engine_t eng;
    dnnl_stream_t str;
    dnnl_primitive_t prim;
    dnnl_memory_t msrc, mwei, mdst;
    void *packed;
#endif
} job;

static void run_once(int lib, job *j) {
    const shape *s = j->s;
    int M = s->M, N = s->N, K = s->K;
    size_t sa = (size_t)M * K, sb = (size_t)K * N, sc = (size_t)M * N;
    for (int i = 0; i < s->batch; i++) {
        const float *A = j->a + i * sa, *B = j->b + i * sb;
        float *C = j->c + i * sc;
        switch (lib) {
        case L_OPENBLAS:
            cblas_sgemm(CblasRowMajor, CblasNoTrans,
                        s->tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, K,
                        B, s->tb ? K : N, 0.0f, C, N);
            break;
#ifdef HAVE_BLIS
        case L_BLIS: {
            float one = 1.0f, zero = 0.0f;
            /* row-major: row stride = leading dim, column stride 1 */
            bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one,
                      (float *)A, K, 1, (float *)B, s->tb ? 1 : N, s->tb ? K : 1,
                      &zero, C, N, 1);
            break;
        }
#endif
#ifdef HAVE_DNNL
        case L_DNNL_SGEMM:
            /* dnnl_sgemm is row-major */
            dnnl_sgemm('N', s->tb ? 'T' : 'N', M, N, K, 1.0f, A, K, B,
                       s->tb ? K : N, 0.0f, C, N);
            break;
        case L_DNNL_PACKED: {
            dnnl_memory_set_data_handle(j->msrc, (void *)A);
            dnnl_memory_set_data_handle(j->mdst, C);
            dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, j->msrc},
                                       {DNNL_ARG_WEIGHTS, j->mwei},
                                       {DNNL_ARG_DST, j->mdst}};
            dnnl_primitive_execute(j->prim, j->str, 3, args);
            dnnl_stream_wait(j->str);
            break;
        }
#endif
        default:
            break;
        }
    }
}

#ifdef HAVE_DNNL
#define DN(x)                                                                  \
    do {                                                                       \
        dnnl_status_t st_ = (x);                                               \
        if (st_ != dnnl_success) {                                             \
            fprintf(stderr, "dnnl: %s: %d\n", #x, (int)st_);                   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* Matmul primitive for one product with B constant: B reordered once into
 * the layout the primitive asks for (format_tag_any). */
static void dnnl_setup(job *j) {
    const shape *s = j->s;
    dnnl_dims_t sd = {s->M, s->K}, wd = {s->K, s->N}, dd = {s->M, s->N};
    dnnl_memory_desc_t src, wany, wplain, dst;
    DN(dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&wplain, 2, wd, dnnl_f32,
                                    s->tb ? dnnl_ba : dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &src, &wany, NULL, &dst));
    dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_desc_create(&pd, &md, NULL, j->eng, NULL));
    const dnnl_memory_desc_t *wpk =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    size_t bytes = dnnl_memory_desc_get_size(wpk);
    j->packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    dnnl_memory_t mplain;
    DN(dnnl_memory_create(&mplain, &wplain, j->eng, (void *)j->b));
    DN(dnnl_memory_create(&j->mwei, wpk, j->eng, j->packed));
    dnnl_primitive_desc_t rpd;
    DN(dnnl_reorder_primitive_desc_create(&rpd, &wplain, j->eng, wpk, j->eng,
                                          NULL));
    dnnl_primitive_t r;
    DN(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, mplain}, {DNNL_ARG_TO, j->mwei}};
    DN(dnnl_primitive_execute(r, j->str, 2, ra));
    DN(dnnl_stream_wait(j->str));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(mplain);
    DN(dnnl_memory_create(&j->msrc, &src, j->eng, (void *)j->a));
    DN(dnnl_memory_create(&j->mdst, &dst, j->eng, j->c));
    DN(dnnl_primitive_create(&j->prim, pd));
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    static int said;
    if (!said++) printf("# dnnl matmul impl: %s, packed B %zu bytes\n", impl, bytes);
    dnnl_primitive_desc_destroy(pd);
}

static void dnnl_teardown(job *j) {
    dnnl_primitive_destroy(j->prim);
    dnnl_memory_destroy(j->msrc);
    dnnl_memory_destroy(j->mdst);
    dnnl_memory_destroy(j->mwei);
    free(j->packed);
}
#endif

static void set_threads(int n) {
    openblas_set_num_threads(n);
#ifdef HAVE_BLIS
    bli_thread_set_num_threads(n);
#endif
#ifdef HAVE_DNNL
    omp_set_num_threads(n);
#endif
}

int main(int argc, char **argv) {
    int threads[4] = {1, 2}, nthreads = 2;
    double tmin = 0.4;
    const char *only = NULL, *libs = "openblas,blis,dnnl_sgemm,dnnl_matmul_packed";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) {
            nthreads = sscanf(argv[i + 1], "%d,%d,%d,%d", &threads[0],
                              &threads[1], &threads[2], &threads[3]);
        } else if (!strcmp(argv[i], "--time")) {
            tmin = atof(argv[i + 1]);
        } else if (!strcmp(argv[i], "--only")) {
            only = argv[i + 1];
        } else if (!strcmp(argv[i], "--libs")) {
            libs = argv[i + 1];
        }
    }
    shape sh[64];
    int ns = 0;
    /* GPT-2 small, batch 1, 128 tokens */
    sh[ns++] = (shape){"gpt2_qkv_128x768x2304", 1, 128, 2304, 768, 0};
    sh[ns++] = (shape){"gpt2_proj_128x768x768", 1, 128, 768, 768, 0};
    sh[ns++] = (shape){"gpt2_fc_128x768x3072", 1, 128, 3072, 768, 0};
    sh[ns++] = (shape){"gpt2_fcproj_128x3072x768", 1, 128, 768, 3072, 0};
    sh[ns++] = (shape){"gpt2_lmhead_128x768x50257_Bt", 1, 128, 50257, 768, 1};
    sh[ns++] = (shape){"gpt2_qk_12x128x64x128_Bt", 12, 128, 128, 64, 1};
    sh[ns++] = (shape){"gpt2_av_12x128x128x64", 12, 128, 64, 128, 0};
    /* ResNet-18 at batch 8: one im2col GEMM per image, w [OC, C·k²] ·
     * col [C·k², HWout]; B (col) changes per image, A (w) is constant:
     * the packed variant is not meaningful here (it packs B) */
    for (size_t i = 0; i < BN_RESNET18_NCONV; i++) {
        const bn_conv_shape *c = &bn_resnet18_convs[i];
        int ho = (c->HW + 2 * c->pad - c->k) / c->stride + 1;
        shape s = {"", 8, c->OC, ho * ho, c->C * c->k * c->k, 0};
        snprintf(s.name, sizeof s.name, "rn18_%s_x%d", c->name, c->count);
        sh[ns++] = s;
    }
    printf("# openblas core %s\n", openblas_get_corename());
#ifdef HAVE_BLIS
    printf("# blis arch %s\n", bli_arch_string(bli_arch_query_id()));
#endif
#ifdef HAVE_DNNL
    dnnl_engine_t eng;
    dnnl_stream_t str;
    DN(dnnl_engine_create(&eng, dnnl_cpu, 0));
    DN(dnnl_stream_create(&str, eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("# dnnl %d.%d.%d cpu_runtime %u isa %d\n", v->major, v->minor,
           v->patch, v->cpu_runtime, (int)dnnl_get_effective_cpu_isa());
#endif
    for (int si = 0; si < ns; si++) {
        shape *s = &sh[si];
        if (only && !strstr(s->name, only)) continue;
        size_t na = (size_t)s->batch * s->M * s->K,
               nb = (size_t)s->batch * s->K * s->N,
               nc = (size_t)s->batch * s->M * s->N;
        float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4),
              *ref = malloc(nc * 4);
        fill(a, na, 1 + si);
        fill(b, nb, 100 + si);
        job j = {.s = s, .a = a, .b = b, .c = ref};
        set_threads(1);
        run_once(L_OPENBLAS, &j);
        j.c = c;
        double gflop = 2.0 * s->batch * (double)s->M * s->N * s->K / 1e9;
        for (int ti = 0; ti < nthreads; ti++) {
            set_threads(threads[ti]);
            for (int lib = 0; lib < L_COUNT; lib++) {
                if (!strstr(libs, lib_name[lib])) continue;
#ifndef HAVE_BLIS
                if (lib == L_BLIS) continue;
#endif
#ifndef HAVE_DNNL
                if (lib == L_DNNL_SGEMM || lib == L_DNNL_PACKED) continue;
#else
                j.eng = eng;
                j.str = str;
                /* packed B: per-product primitive; batched shapes have a
                 * different B per product, so only batch-1 shapes */
                if (lib == L_DNNL_PACKED && s->batch != 1) continue;
                if (lib == L_DNNL_PACKED) dnnl_setup(&j);
#endif
                memset(c, 0, nc * 4);
                run_once(lib, &j); /* warm-up */
                double ts[1000], cs[1000];
                int n = 0;
                double t_end = now_s() + tmin;
                while (n < 1000 && (n < 3 || now_s() < t_end)) {
                    double t0 = now_s(), c0 = cpu_s();
                    run_once(lib, &j);
                    cs[n] = (cpu_s() - c0) * 1e3;
                    ts[n++] = (now_s() - t0) * 1e3;
                }
                qsort(ts, (size_t)n, sizeof ts[0], cmp_double);
                qsort(cs, (size_t)n, sizeof cs[0], cmp_double);
                double worst = 0;
                for (size_t i = 0; i < nc; i++) {
                    double d = fabs((double)c[i] - ref[i]);
                    if (!(d <= worst)) worst = d;
                }
                printf("%-34s %-18s t=%d  %9.3f ms  (min %9.3f)  %6.1f GFLOP/s  "
                       "n=%3d  cpu %9.3f ms  maxdiff %.1e\n",
                       s->name, lib_name[lib], threads[ti], ts[n / 2], ts[0],
                       gflop / (ts[0] / 1e3), n, cs[n / 2], worst);
                fflush(stdout);
#ifdef HAVE_DNNL
                if (lib == L_DNNL_PACKED) dnnl_teardown(&j);
#endif
            }
        }
        free(a), free(b), free(c), free(ref);
    }
    return 0;
}
