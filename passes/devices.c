/* passes/devices.c — the device description a plan is compiled for
 * (bp_device_desc): the device list from the options, or the GPUs the
 * caller says are present, and the cost model's profile of each, checked.
 *
 * Passes never ask the runtime or CUDA what exists: braid_compile
 * (runtime/compile.c) probes once per process, or takes the caller's list,
 * and hands the description in. Names are parsed by graph/device.c, the one
 * parser every layer shares. */
#include "passes/passes.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *bp_device_str(bp_device d, char *buf, size_t size) {
    if (d.kind == BP_DEVICE_CPU)
        snprintf(buf, size, "cpu");
    else
        snprintf(buf, size, "cuda:%d", (int)d.index);
    return buf;
}

bool bp_device_parse(const char *s, size_t len, bp_device *d) {
    int cuda;
    if (!bg_device_parse(s, len, &cuda)) return false;
    *d = cuda == BG_DEVICE_CPU ? (bp_device){BP_DEVICE_CPU, 0}
                               : (bp_device){BP_DEVICE_CUDA, cuda};
    return true;
}

/* The host holds inputs and outputs, so "cpu" is always a device and comes
 * first: moved to the front when listed later, added when not listed. */
static braid_status cpu_first(bp_device *out, uint32_t *n, const char *text) {
    uint32_t k = 0;
    while (k < *n && out[k].kind != BP_DEVICE_CPU)
        k++;
    if (k == *n) {
        if (*n == BP_MAX_DEVICES)
            return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                     "braid_compile: more than %d devices in "
                                     "devices \"%s\" with the cpu",
                                     BP_MAX_DEVICES - 1, text);
        (*n)++;
    }
    for (; k > 0; k--)
        out[k] = out[k - 1];
    out[0] = (bp_device){BP_DEVICE_CPU, 0};
    return BRAID_OK;
}

/* Appends the name [s, s + len) (trimmed here) to out. */
static braid_status add_device(const char *s, size_t len, const char *text,
                               bp_device *out, uint32_t *n) {
    while (len > 0 && isspace((unsigned char)*s))
        s++, len--;
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    bp_device d;
    if (len == 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: empty device name in "
                                 "devices \"%s\" (expected a "
                                 "comma-separated list of cpu, cuda:N)",
                                 text);
    if (!bp_device_parse(s, len, &d))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: unknown device \"%.*s\" "
                                 "in devices \"%s\" (expected cpu or "
                                 "cuda:N with 0 <= N < %d)",
                                 (int)(len > 64 ? 64 : len), s, text,
                                 BG_MAX_CUDA_DEVICES);
    for (uint32_t i = 0; i < *n; i++)
        if (bp_device_equal(out[i], d))
            return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                     "braid_compile: device \"%.*s\" "
                                     "listed twice in devices \"%s\"",
                                     (int)len, s, text);
    if (*n == BP_MAX_DEVICES)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: more than %d devices in "
                                 "devices \"%s\"",
                                 BP_MAX_DEVICES, text);
    out[(*n)++] = d;
    return BRAID_OK;
}

braid_status bp_parse_devices(const char *text, bp_device *out, uint32_t *n) {
    *n = 0;
    if (!text)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: no devices list");
    for (const char *p = text;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        braid_status s = add_device(p, len, text, out, n);
        if (s != BRAID_OK) return s;
        if (!end) break;
        p = end + 1;
    }
    return cpu_first(out, n, text);
}

/* ---- cost profiles ------------------------------------------------------- */

static braid_status bad_rate(bp_device d, const char *field, double v) {
    char dev[32];
    return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                             "braid_compile: the %s profile has %s = %g "
                             "(expected a finite value >= 0)",
                             bp_device_str(d, dev, sizeof dev), field, v);
}

#define RATE_OK(v) (isfinite(v) && (v) >= 0)

/* Every rate finite and ≥ 0 (0: the device cannot do it). */
static braid_status check_profile(const braid_device_profile *pr, bp_device d) {
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++)
        if (!RATE_OK(pr->flops[t])) {
            char f[32];
            snprintf(f, sizeof f, "flops[%s]", braid_dtype_name(t));
            return bad_rate(d, f, pr->flops[t]);
        }
    if (!RATE_OK(pr->elementwise_flops))
        return bad_rate(d, "elementwise_flops", pr->elementwise_flops);
    if (!RATE_OK(pr->mem_bytes_per_s))
        return bad_rate(d, "mem_bytes_per_s", pr->mem_bytes_per_s);
    if (!RATE_OK(pr->h2d_bytes_per_s))
        return bad_rate(d, "h2d_bytes_per_s", pr->h2d_bytes_per_s);
    if (!RATE_OK(pr->d2h_bytes_per_s))
        return bad_rate(d, "d2h_bytes_per_s", pr->d2h_bytes_per_s);
    if (!RATE_OK(pr->launch_s)) return bad_rate(d, "launch_s", pr->launch_s);
    return BRAID_OK;
}

/* Whether the comma list names "cpu" (spaces around names allowed; the
 * list is already known to parse). */
static bool names_cpu(const char *list) {
    for (const char *p = list; p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!strncmp(p, "cpu", 3)) {
            const char *q = p + 3;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == ',' || !*q) return true;
        }
        p = strchr(p, ',');
        if (p) p++;
    }
    return false;
}

braid_status bp_device_desc_init(bp_device_desc *d,
                                 const braid_compile_options *o,
                                 int gpus_present) {
    memset(d, 0, sizeof *d);
    braid_status s = BRAID_OK;
    if (o && o->devices) {
        s = bp_parse_devices(o->devices, d->devices, &d->ndevices);
        /* "cuda:0" alone asks for the GPU: the cpu, added because it holds
         * the inputs and outputs, computes nothing a GPU can
         * (docs/placement.md) */
        d->prefer_gpu =
            s == BRAID_OK && d->ndevices > 1 && !names_cpu(o->devices);
    } else {
        d->devices[d->ndevices++] = (bp_device){BP_DEVICE_CPU, 0};
        for (int i = 0; i < gpus_present && i < BG_MAX_CUDA_DEVICES &&
                        d->ndevices < BP_MAX_DEVICES;
             i++)
            d->devices[d->ndevices++] = (bp_device){BP_DEVICE_CUDA, i};
    }
    for (uint32_t i = 0; s == BRAID_OK && i < d->ndevices; i++) {
        bp_device_kind k = d->devices[i].kind;
        const braid_device_profile *user = !o ? NULL
                                           : k == BP_DEVICE_CPU
                                               ? o->cpu_profile
                                               : o->cuda_profile;
        d->profile[i] = user ? *user : bp_default_profile(k);
        s = check_profile(&d->profile[i], d->devices[i]);
    }
    return s;
}

bool bp_device_desc_has_gpu(const bp_device_desc *d) {
    for (uint32_t i = 0; i < d->ndevices; i++)
        if (d->devices[i].kind == BP_DEVICE_CUDA) return true;
    return false;
}
