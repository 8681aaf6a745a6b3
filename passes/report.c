/* passes/report.c — the compile report: braid_plan_compile_report and
 * braid_compile_report_print (what `braid compile --report` and
 * `braid run --profile` show). passes/pipeline.c times the passes and the
 * whole compile; codegen/aot.c fills the kernel fields; a plan file's
 * loader sets loaded and total_ms. */
#include "passes/passes.h"

#include <inttypes.h>
#include <stdio.h>

braid_status braid_plan_compile_report(const braid_plan *p,
                                       braid_compile_report *out) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_compile_report: %s is NULL",
                                 p ? "out" : "plan");
    *out = p->report;
    if (out->npasses > BRAID_REPORT_MAX_PASSES)
        out->npasses = BRAID_REPORT_MAX_PASSES;
    return BRAID_OK;
}

static void print_kernels(const braid_compile_report *r, FILE *out) {
    if (r->kernels == 0 && r->modules_compiled == 0 &&
        r->modules_cached == 0) {
        fputs("  kernels: none generated\n", out);
        return;
    }
    fprintf(out,
            "  kernels: %" PRIu32 " kernel%s for %" PRIu32
            " architecture%s: %" PRIu32 " module%s compiled by NVRTC "
            "(%.3f ms), %" PRIu32 " from the cache; %.3f ms in all\n",
            r->kernels, r->kernels == 1 ? "" : "s", r->archs,
            r->archs == 1 ? "" : "s", r->modules_compiled,
            r->modules_compiled == 1 ? "" : "s", r->nvrtc_ms,
            r->modules_cached, r->kernels_ms);
}

braid_status braid_compile_report_print(const braid_compile_report *r,
                                        FILE *out) {
    if (!r || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile_report_print: %s is NULL",
                                 r ? "out" : "report");
    if (r->loaded) {
        fprintf(out, "compile report: loaded from a plan file in %.3f ms "
                     "(no pass ran)\n",
                r->total_ms);
    } else {
        double passes = 0;
        uint32_t n = r->npasses < BRAID_REPORT_MAX_PASSES
                         ? r->npasses
                         : BRAID_REPORT_MAX_PASSES;
        fprintf(out, "compile report: %.3f ms in all\n", r->total_ms);
        for (uint32_t i = 0; i < n; i++) {
            fprintf(out, "  pass %-12s %10.3f ms\n",
                    r->pass_name[i] ? r->pass_name[i] : "?", r->pass_ms[i]);
            passes += r->pass_ms[i];
        }
        fprintf(out, "  passes in all     %10.3f ms\n", passes);
        if (r->folded_bytes)
            fprintf(out,
                    "  generators folded into constants: %" PRIu64
                    " bytes (in the plan, and in a plan file)\n",
                    r->folded_bytes);
    }
    print_kernels(r, out);
    if (ferror(out))
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_compile_report_print: writing "
                                 "failed");
    return BRAID_OK;
}
