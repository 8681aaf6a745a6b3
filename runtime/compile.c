/* runtime/compile.c — braid_compile: describe the devices, run the passes,
 * build the kernels.
 *
 * It sits at the top of runtime/ because it is the one step that needs
 * every layer: the devices present come from the probe (runtime/devices.c,
 * once per process) unless the options list them, the pipeline
 * (passes/pipeline.c) compiles for that description, and codegen/aot.c
 * builds kernels for the description's architectures. Passes and codegen
 * thus never ask CUDA what exists, and a list naming GPUs this machine
 * lacks compiles exactly as it would where they are. */
#define _POSIX_C_SOURCE 200809L
#include "codegen/codegen.h"
#include "passes/passes.h"
#include "runtime/devices.h"

#include <string.h>
#include <time.h>

/* Architecture built for when archs is NULL and no GPU is present (the CI
 * machine has the toolkit but no GPU: its plans still get a checked sm_90
 * build). */
#define DEFAULT_SM 90

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* The architectures to build kernels for: those opts.archs names, else
 * (for a plan that may use a GPU) those of the GPUs present, else sm_90.
 * A bad archs string is refused even for a plan without GPU kernels: the
 * same options must not fail only on some graphs. */
static braid_status describe_archs(const braid_compile_options *o,
                                   bp_device_desc *d) {
    if (o && o->archs)
        return bc_parse_archs(o->archs, d->archs, BP_MAX_ARCHS, &d->narchs);
    d->archs_detected = true;
    if (!bp_device_desc_has_gpu(d)) return BRAID_OK;
    const br_devices *found = br_devices_probe();
    for (int i = 0; i < found->ngpus; i++)
        if (found->gpu[i].sm > 0)
            bc_archs_add(d->archs, BP_MAX_ARCHS, &d->narchs, found->gpu[i].sm);
    if (d->narchs == 0) d->archs[d->narchs++] = DEFAULT_SM;
    return BRAID_OK;
}

/* The caller's device list, or the cpu and every GPU present. */
static braid_status describe_devices(const braid_compile_options *o,
                                     bp_device_desc *d) {
    int present = o && o->devices ? 0 : br_devices_probe()->ngpus;
    braid_status s = bp_device_desc_init(d, o, present);
    return s == BRAID_OK ? describe_archs(o, d) : s;
}

braid_status braid_compile(const braid_graph *g,
                           const braid_compile_options *opts,
                           braid_plan **plan) {
    double t0 = now_ms();
    braid_status s = bp_compile_check(g, opts, plan);
    if (s != BRAID_OK) return s;
    bp_device_desc devs;
    s = describe_devices(opts, &devs);
    bp_plan *p = NULL;
    if (s == BRAID_OK) s = bp_compile(g, opts, &devs, &p);
    if (s == BRAID_OK) s = bc_aot_build(p);
    if (s != BRAID_OK) {
        braid_plan_free(p);
        return s;
    }
    p->report.total_ms = now_ms() - t0;
    *plan = p;
    return BRAID_OK;
}
