/* codegen/aot.c — ahead-of-time kernels: after the passes, braid_compile
 * generates the plan's kernel module once (bc_plan_source), keeps its text
 * in the plan, and compiles it with NVRTC for each GPU architecture the
 * options name, so that an executor (or a plan file loaded elsewhere)
 * loads a stored CUBIN or PTX instead of running NVRTC.
 *
 * Architectures: those of the plan's device description
 * (bp_plan_devices(p)->archs), which braid_compile (runtime/compile.c)
 * filled from opts.archs ("sm_90,sm_80", bc_parse_archs) or from the GPUs
 * present; this file never asks CUDA what exists. */
#define _POSIX_C_SOURCE 200809L
#include "codegen/codegen.h"
#include "passes/passes.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Size of the message buffer for NVRTC errors. */
#define AOT_ERR_MAX 8192

#ifdef BRAID_HAVE_CUDA
#define HAVE_NVRTC true
#else
#define HAVE_NVRTC false
#endif

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* ---- parsing "sm_90,sm_80" --------------------------------------------------
 */

static braid_status bad_archs(const char *text) {
    return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                             "braid_compile: archs \"%.100s\": expected a "
                             "list like sm_90,sm_80, or none",
                             text ? text : "(null)");
}

/* One entry [s, s+len) without surrounding spaces: "sm_90", "sm90" or
 * "90" (two or three digits, major ≥ 1). */
static bool parse_one(const char *s, size_t len, int *sm) {
    if (len >= 3 && (s[0] == 's' || s[0] == 'S') &&
        (s[1] == 'm' || s[1] == 'M')) {
        s += 2, len -= 2;
        if (len && s[0] == '_') s++, len--;
    }
    if (len < 2 || len > 3) return false;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 10) return false; /* "05": no major version */
    *sm = v;
    return true;
}

static bool is_none(const char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "none", 4) != 0) return false;
    s += 4;
    while (*s == ' ' || *s == '\t')
        s++;
    return *s == '\0';
}

/* Compute capabilities NVIDIA has shipped (Tesla to Blackwell). A number
 * outside this list is a typo (sm_200, sm_91), refused rather than handed
 * to NVRTC, which would quietly build PTX for its newest architecture.
 * Extend the list when NVIDIA adds an architecture. */
static const int known_sm[] = {10, 11, 12, 13,  20,  21,  30,  32,  35, 37, 50,
                               52, 53, 60, 61,  62,  70,  72,  75,  80, 86, 87,
                               88, 89, 90, 100, 101, 103, 110, 120, 121};

static bool known_arch(int sm) {
    for (size_t i = 0; i < sizeof known_sm / sizeof known_sm[0]; i++)
        if (known_sm[i] == sm) return true;
    return false;
}

static braid_status unknown_arch(const char *text, int sm) {
    char list[256];
    int n = 0;
    for (size_t i = 0; i < sizeof known_sm / sizeof known_sm[0]; i++)
        if (known_sm[i] >= 50) /* the ones NVRTC still builds for */
            n += snprintf(list + n, sizeof list - (size_t)n, "%ssm_%d",
                          n ? ", " : "", known_sm[i]);
    return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                             "braid_compile: archs \"%.100s\": sm_%d is not "
                             "a CUDA architecture (known: %s)",
                             text, sm, list);
}

bool bc_archs_add(int *sm, uint32_t max, uint32_t *n, int v) {
    uint32_t i = 0;
    while (i < *n && sm[i] < v)
        i++;
    if (i < *n && sm[i] == v) return true;
    if (*n == max) return false;
    memmove(sm + i + 1, sm + i, (*n - i) * sizeof *sm);
    sm[i] = v;
    (*n)++;
    return true;
}

braid_status bc_parse_archs(const char *text, int *sm, uint32_t max,
                            uint32_t *n) {
    if (!text || !sm || !n) return bad_archs(text);
    *n = 0;
    if (is_none(text)) return BRAID_OK;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        int v = 0;
        if (!parse_one(p, len, &v)) return bad_archs(text);
        if (!known_arch(v)) return unknown_arch(text, v);
        if (!bc_archs_add(sm, max, n, v))
            return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                     "braid_compile: archs \"%.100s\": more "
                                     "than %u architectures",
                                     text, (unsigned)max);
        if (!end) break;
        p = end + 1;
    }
    return BRAID_OK;
}

static bool has_generated_kernels(const bp_plan *p) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        bc_node_class k = bc_classify(p, id);
        if (k == BC_NODE_KERNEL || k == BC_NODE_MATMUL_EPILOGUE) return true;
    }
    return false;
}

/* ---- compiling
 * ---------------------------------------------------------------- */

#ifdef BRAID_HAVE_CUDA

/* The progress line, only on a terminal (it is rewritten in place). */
static void progress(bool tty, uint32_t nkernels, int sm, uint32_t i,
                     uint32_t n) {
    if (!tty) return;
    fprintf(stderr, "\rbraid: compiling %u kernel%s for sm_%d (%u/%u)...",
            (unsigned)nkernels, nkernels == 1 ? "" : "s", sm, (unsigned)i + 1,
            (unsigned)n);
    fflush(stderr);
}

static void progress_clear(bool tty) {
    if (!tty) return;
    fprintf(stderr, "\r%72s\r", "");
    fflush(stderr);
}

/* Compiles the plan's source for sm into slot b of p->kernels.bin. A GPU
 * of the machine that NVRTC cannot build for (too old) is skipped
 * (*skipped): an executor for it reports that itself. */
static braid_status compile_arch(bp_plan *p, int sm, bool detected,
                                 bp_kernel_binary *b, bool *skipped) {
    char *err = malloc(AOT_ERR_MAX);
    bc_binary bin;
    double t0 = now_ms();
    braid_status s = bc_compile(p->kernels.source, "kernel.cu", sm, &bin, err,
                                err ? AOT_ERR_MAX : 0);
    double ms = now_ms() - t0;
    *skipped = false;
    if (s == BRAID_ERR_UNSUPPORTED && detected) {
        *skipped = true;
        free(err);
        return BRAID_OK;
    }
    if (s != BRAID_OK) {
        s = bg_set_last_error(s,
                              "braid_compile: compiling the plan's %u "
                              "kernels for sm_%d: %s",
                              (unsigned)p->kernels.nkernels, sm,
                              err ? err : "");
        free(err);
        return s;
    }
    free(err);
    if (bin.cached) {
        p->report.modules_cached++;
    } else {
        p->report.modules_compiled++;
        p->report.nvrtc_ms += ms;
    }
    /* bc_binary's buffers are malloc'd: the plan takes them over. */
    *b = (bp_kernel_binary){sm, bin.cubin, bin.cubin_size, bin.ptx,
                            bin.ptx_size};
    return BRAID_OK;
}

static braid_status compile_all(bp_plan *p, const int *sm, uint32_t n,
                                bool detected) {
    bp_kernels *k = &p->kernels;
    p->prov.nvrtc_version = bc_nvrtc_version();
    if (n == 0) return BRAID_OK;
    k->bin = calloc(n, sizeof *k->bin);
    if (!k->bin)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_compile: out of memory for %u "
                                 "kernel binaries",
                                 (unsigned)n);
    bool tty = isatty(STDERR_FILENO) == 1;
    braid_status s = BRAID_OK;
    for (uint32_t i = 0; s == BRAID_OK && i < n; i++) {
        bool skipped = false;
        progress(tty, k->nkernels, sm[i], i, n);
        s = compile_arch(p, sm[i], detected, &k->bin[k->nbin], &skipped);
        if (s == BRAID_OK && !skipped) k->nbin++;
    }
    progress_clear(tty);
    p->report.archs = k->nbin;
    return s;
}

#endif /* BRAID_HAVE_CUDA */

braid_status bc_aot_build(bp_plan *p) {
    if (!p)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "bc_aot_build: NULL plan");
    double t0 = now_ms();
    const bp_device_desc *d = bp_plan_devices(p);
    const int *sm = d->archs;
    uint32_t n = d->narchs;
    bool detected = d->archs_detected;
    p->report.kernels = p->report.archs = 0;
    p->report.modules_compiled = p->report.modules_cached = 0;
    p->report.nvrtc_ms = p->report.kernels_ms = 0;
    if (!has_generated_kernels(p)) return BRAID_OK;
    bc_source src;
    braid_status s = bc_plan_source(p, &src);
    if (s == BRAID_ERR_UNSUPPORTED && (n == 0 || detected || !HAVE_NVRTC))
        return BRAID_OK; /* what codegen cannot do (a CPU-only build has no
                            random generators' source) fails where the
                            kernels are needed, as before: at executor
                            creation. Only archs asked for by name fail
                            the compile. */
    if (s != BRAID_OK) return s;
    bp_kernels_free(&p->kernels);
    p->kernels.source = src.text; /* taken over */
    p->kernels.source_len = src.len;
    p->kernels.nkernels = src.nkernels;
    src.text = NULL;
    bc_source_free(&src);
    p->report.kernels = p->kernels.nkernels;
#ifdef BRAID_HAVE_CUDA
    s = compile_all(p, sm, n, detected);
#else
    (void)sm, (void)detected; /* no NVRTC: the source is all a plan can
                                 carry */
#endif
    p->report.kernels_ms = now_ms() - t0;
    return s;
}
