/* codegen/nvrtc.c — bc_compile: CUDA C → CUBIN + PTX through NVRTC, behind
 * the caches of codegen/cache.c, with compile errors traced back to the
 * node whose generated line failed.
 *
 * Options are fixed: --fmad=false (no contraction of a*b+c, so floating
 * point rounds as gcc's -std=c11 build of the CPU code does; the random
 * generators need it to give the CPU's bits, and elementwise kernels are
 * memory-bound anyway), -default-device (graph/rng.c's functions, which
 * carry no __device__, become device functions) and -std=c++17 (if
 * constexpr in the prelude). An architecture NVRTC does not know (a GPU
 * newer than the toolkit) is compiled to PTX for the newest virtual
 * architecture it does know, for the driver to JIT; the CUBIN is then
 * missing. */
#define _POSIX_C_SOURCE 200809L
#include "codegen/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BRAID_HAVE_CUDA
#include <nvrtc.h>
#endif

/* Leaves msg for braid_last_error and in err. */
static braid_status report(braid_status s, char *err, size_t errsize,
                           const char *msg) {
    if (err && errsize) snprintf(err, errsize, "%s", msg);
    return bg_set_last_error(s, "%s", msg);
}

#ifndef BRAID_HAVE_CUDA

int bc_nvrtc_version(void) {
    return 0;
}

braid_status bc_compile(const char *source, const char *name, int sm,
                        bc_binary *out, char *err, size_t errsize) {
    (void)source, (void)name, (void)sm;
    if (out) memset(out, 0, sizeof *out);
    return report(BRAID_ERR_UNSUPPORTED, err, errsize,
                  "bc_compile: this build of braid has no CUDA toolkit "
                  "(NVRTC)");
}

#else

static const char *const fixed_options[] = {"--fmad=false", "-default-device",
                                            "-std=c++17"};
#define NFIXED (sizeof fixed_options / sizeof fixed_options[0])

int bc_nvrtc_version(void) {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 0;
    return major * 1000 + minor * 10;
}

/* "--gpu-architecture=sm_90", or compute_<newest> when NVRTC does not
 * know sm; false (with a message) when sm is older than NVRTC supports. */
static bool arch_option(int sm, char *buf, size_t size, bool *real, char *why,
                        size_t whysize) {
    int n = 0;
    int archs[128];
    *real = false;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 128 ||
        nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS) {
        snprintf(buf, size, "--gpu-architecture=sm_%d", sm); /* let it try */
        *real = true;
        return true;
    }
    int newest = 0;
    for (int i = 0; i < n; i++) {
        if (archs[i] == sm) *real = true;
        if (archs[i] > newest) newest = archs[i];
    }
    if (*real) {
        snprintf(buf, size, "--gpu-architecture=sm_%d", sm);
        return true;
    }
    if (sm > newest) {
        snprintf(buf, size, "--gpu-architecture=compute_%d", newest);
        return true;
    }
    snprintf(why, whysize,
             "bc_compile: NVRTC %d.%d cannot compile for sm_%d (oldest it "
             "supports: sm_%d)",
             bc_nvrtc_version() / 1000, bc_nvrtc_version() % 1000 / 10, sm,
             archs[0]);
    return false;
}

/* The cache key: every input of the compilation. */
static bool make_key(const char *source, const char *arch, bc_key *key) {
    char head[512];
    int n = snprintf(head, sizeof head, "braid-kernel-cache %u\nnvrtc %d\n%s\n",
                     BC_CACHE_VERSION, bc_nvrtc_version(), arch);
    for (size_t i = 0; i < NFIXED && n > 0 && (size_t)n < sizeof head; i++)
        n += snprintf(head + n, sizeof head - (size_t)n, "%s\n",
                      fixed_options[i]);
    size_t slen = strlen(source);
    char *all = malloc((size_t)n + slen + 1);
    if (!all) return false;
    memcpy(all, head, (size_t)n);
    memcpy(all + n, source, slen + 1);
    bc_sha256(all, (size_t)n + slen, key->b);
    free(all);
    return true;
}

/* ---- compile errors
 * ------------------------------------------------------------ */

/* The first "<name>(<line>): ...error..." line of log: its line number and
 * the text after "): ". */
static bool first_error(const char *log, const char *name, long *line,
                        const char **text, size_t *textlen) {
    size_t nl = strlen(name);
    for (const char *s = log; s && *s;) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > nl + 3 && strncmp(s, name, nl) == 0 && s[nl] == '(') {
            char *end = NULL;
            long l = strtol(s + nl + 1, &end, 10);
            const char *t =
                end && end[0] == ')' && end[1] == ':' ? end + 2 : NULL;
            while (t && *t == ' ')
                t++;
            if (t && t < s + len && strstr(t, "error") &&
                (size_t)(strstr(t, "error") - s) < len) {
                *line = l;
                *text = t;
                *textlen = len - (size_t)(t - s);
                return true;
            }
        }
        s = e ? e + 1 : NULL;
    }
    return false;
}

/* Line `line` (1-based) of source and the last "// @braid node " marker
 * at or above it. */
static void find_line(const char *source, long line, const char **code,
                      size_t *codelen, const char **marker, size_t *markerlen) {
    static const char tag[] = "// @braid node ";
    *code = *marker = NULL;
    *codelen = *markerlen = 0;
    const char *s = source;
    for (long l = 1; s && *s && l <= line; l++) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > sizeof tag - 1 && strncmp(s, tag, sizeof tag - 1) == 0) {
            *marker = s + sizeof tag - 1;
            *markerlen = len - (sizeof tag - 1);
        }
        if (l == line) {
            *code = s;
            *codelen = len;
        }
        s = e ? e + 1 : NULL;
    }
}

static braid_status compile_error(const char *source, const char *name,
                                  const char *log, char *err, size_t errsize) {
    size_t cap = strlen(log) + 2048;
    char *msg = malloc(cap);
    if (!msg)
        return report(BRAID_ERR_OUT_OF_MEMORY, err, errsize,
                      "bc_compile: out of memory formatting an error");
    long line = 0;
    const char *text = NULL, *code = NULL, *marker = NULL;
    size_t textlen = 0, codelen = 0, markerlen = 0;
    int n = 0;
    if (first_error(log, name, &line, &text, &textlen)) {
        find_line(source, line, &code, &codelen, &marker, &markerlen);
        if (marker)
            n = snprintf(msg, cap, "node %.*s: ",
                         (int)(markerlen < 200 ? markerlen : 200), marker);
        n += snprintf(msg + n, cap - (size_t)n, "%s:%ld: %.*s\n", name, line,
                      (int)(textlen < 400 ? textlen : 400), text);
        if (code)
            n += snprintf(msg + n, cap - (size_t)n, "%6ld | %.*s\n", line,
                          (int)(codelen < 300 ? codelen : 300), code);
    } else {
        n = snprintf(msg, cap, "%s: NVRTC compilation failed\n", name);
    }
    snprintf(msg + n, cap - (size_t)n, "NVRTC log:\n%s", log);
    braid_status s = report(BRAID_ERR_INTERNAL, err, errsize, msg);
    free(msg);
    return s;
}

static braid_status nvrtc_fail(nvrtcResult r, const char *what, char *err,
                               size_t errsize) {
    char msg[256];
    snprintf(msg, sizeof msg, "bc_compile: %s: %s", what,
             nvrtcGetErrorString(r));
    return report(r == NVRTC_ERROR_OUT_OF_MEMORY ? BRAID_ERR_OUT_OF_MEMORY
                                                 : BRAID_ERR_INTERNAL,
                  err, errsize, msg);
}

/* ---- compiling
 * ------------------------------------------------------------------- */

/* Takes CUBIN (when real) and PTX out of a compiled program. */
static braid_status take_outputs(nvrtcProgram prog, bool real, int sm,
                                 bc_binary *out, char *err, size_t errsize) {
    size_t cubin_size = 0, ptx_size = 0;
    nvrtcResult r = NVRTC_SUCCESS;
    if (real) r = nvrtcGetCUBINSize(prog, &cubin_size);
    if (r == NVRTC_SUCCESS) r = nvrtcGetPTXSize(prog, &ptx_size);
    if (r != NVRTC_SUCCESS)
        return nvrtc_fail(r, "reading results", err, errsize);
    char *cubin = malloc(cubin_size ? cubin_size : 1);
    char *ptx = malloc(ptx_size + 1);
    if (!cubin || !ptx) {
        free(cubin);
        free(ptx);
        return report(BRAID_ERR_OUT_OF_MEMORY, err, errsize,
                      "bc_compile: out of memory for the compiled module");
    }
    if (real && cubin_size) r = nvrtcGetCUBIN(prog, cubin);
    if (r == NVRTC_SUCCESS) r = nvrtcGetPTX(prog, ptx);
    ptx[ptx_size] = '\0';
    braid_status s = BRAID_OK;
    if (r != NVRTC_SUCCESS)
        s = nvrtc_fail(r, "reading results", err, errsize);
    else if (!bc_binary_set(out, cubin, real ? cubin_size : 0, ptx,
                            strlen(ptx) + 1, sm))
        s = report(BRAID_ERR_OUT_OF_MEMORY, err, errsize,
                   "bc_compile: out of memory for the compiled module");
    free(cubin);
    free(ptx);
    return s;
}

static braid_status run_nvrtc(const char *source, const char *name,
                              const char *arch, bool real, int sm,
                              bc_binary *out, char *err, size_t errsize,
                              bc_stats *d) {
    nvrtcProgram prog;
    double t0 = bc_now();
    nvrtcResult r = nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return nvrtc_fail(r, "creating the program", err, errsize);
    const char *opts[NFIXED + 1];
    for (size_t i = 0; i < NFIXED; i++)
        opts[i] = fixed_options[i];
    opts[NFIXED] = arch;
    r = nvrtcCompileProgram(prog, (int)NFIXED + 1, opts);
    braid_status s = BRAID_OK;
    if (r == NVRTC_ERROR_COMPILATION) {
        size_t logsize = 0;
        char *log = NULL;
        if (nvrtcGetProgramLogSize(prog, &logsize) == NVRTC_SUCCESS &&
            (log = malloc(logsize + 1)) &&
            nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
            log[logsize] = '\0';
            s = compile_error(source, name, log, err, errsize);
        } else {
            s = compile_error(source, name, "(no log)", err, errsize);
        }
        free(log);
    } else if (r != NVRTC_SUCCESS) {
        s = nvrtc_fail(r, "compiling", err, errsize);
    } else {
        s = take_outputs(prog, real, sm, out, err, errsize);
    }
    nvrtcDestroyProgram(&prog);
    d->nvrtc_seconds += bc_now() - t0;
    if (s == BRAID_OK)
        d->compiles++;
    else
        d->failures++;
    return s;
}

braid_status bc_compile(const char *source, const char *name, int sm,
                        bc_binary *out, char *err, size_t errsize) {
    if (out) memset(out, 0, sizeof *out);
    if (err && errsize) err[0] = '\0';
    if (!source || !out || sm <= 0)
        return report(BRAID_ERR_INVALID_ARGUMENT, err, errsize,
                      "bc_compile: NULL source or output, or sm <= 0");
    if (!name || !*name) name = "kernel.cu";
    char arch[64], why[256];
    bool real;
    if (!arch_option(sm, arch, sizeof arch, &real, why, sizeof why))
        return report(BRAID_ERR_UNSUPPORTED, err, errsize, why);
    bc_key key;
    if (!make_key(source, arch, &key))
        return report(BRAID_ERR_OUT_OF_MEMORY, err, errsize,
                      "bc_compile: out of memory");
    if (bc_mem_lookup(&key, out)) {
        out->cached = true;
        return BRAID_OK;
    }
    bc_stats d = {0};
    char dir[1024];
    bool disk = bc_cache_dir(dir, sizeof dir);
    braid_status s = BRAID_OK;
    if (disk && bc_disk_lookup(dir, &key, sm, out, &d)) {
        out->cached = true;
    } else {
        s = run_nvrtc(source, name, arch, real, sm, out, err, errsize, &d);
        if (s == BRAID_OK && disk) bc_disk_store(dir, &key, sm, out, &d);
    }
    if (s == BRAID_OK) bc_mem_store(&key, out);
    bc_stats_add(&d);
    return s;
}

#endif /* BRAID_HAVE_CUDA */
