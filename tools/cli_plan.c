/* tools/cli_plan.c — `braid compile`: compile a .graph file (or the graph a
 * plan file embeds) and save the plan file, with one summary line; and the
 * provenance of a loaded plan file that `braid info` prints (braid and
 * NVRTC versions, creation time, the kernels it stores per GPU
 * architecture). See docs/cli.md and docs/plan-format.md. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* "1.50 MiB" (binary units) into buf. */
static const char *size_str(uint64_t bytes, char *buf, size_t size) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, size, "%.1f %s", v, unit[u]);
    return buf;
}

/* "sm_80, sm_90" (the stored architectures) into buf; "" when none. */
static const char *archs_str(const braid_plan *p, uint32_t narchs, char *buf,
                             size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    braid_plan_arch_info a;
    for (uint32_t i = 0; i < narchs && n + 16 < size; i++)
        if (braid_plan_arch_get(p, i, &a) == BRAID_OK)
            n += (size_t)snprintf(buf + n, size - n, "%ssm_%d", i ? ", " : "",
                                  a.sm);
    return buf;
}

/* ---- braid compile --------------------------------------------------------
 */

/* FILE.graph → FILE.plan (any other name gets ".plan" appended). */
static char *default_output(const char *in) {
    size_t n = strlen(in);
    const char *exts[] = {".graph", ".onnx"};
    for (size_t k = 0; k < 2; k++) {
        size_t e = strlen(exts[k]);
        if (n > e && strcmp(in + n - e, exts[k]) == 0) n -= e;
    }
    char *out = malloc(n + 6);
    if (out) {
        memcpy(out, in, n);
        memcpy(out + n, ".plan", 6);
    }
    return out;
}

/* The summary line, e.g.
 * "wrote mlp.plan: 13 nodes, 4 kernels for sm_80, sm_90, 81234 bytes
 *  (79.3 KiB); compile 812.4 ms, save 0.3 ms". */
static void print_summary(const char *out, const cli_input *in, uint64_t bytes,
                          double save_ms) {
    const braid_plan *p = in->plan;
    braid_plan_summary s;
    braid_plan_provenance pv;
    memset(&s, 0, sizeof s);
    memset(&pv, 0, sizeof pv);
    braid_plan_summary_get(p, &s);
    braid_plan_provenance_get(p, &pv);
    char archs[256], human[32];
    printf("wrote %s: %" PRIu32 " node%s, ", out, s.nodes,
           s.nodes == 1 ? "" : "s");
    uint32_t nk = pv.kernels;
    if (!pv.source_bytes)
        printf("no GPU kernels");
    else if (pv.archs == 0)
        printf("%" PRIu32 " GPU kernel%s (source only)", nk,
               nk == 1 ? "" : "s");
    else
        printf("%" PRIu32 " GPU kernel%s for %s", nk, nk == 1 ? "" : "s",
               archs_str(p, pv.archs, archs, sizeof archs));
    printf(", %" PRIu64 " bytes (%s); compile %.1f ms, save %.1f ms\n", bytes,
           size_str(bytes, human, sizeof human), in->ms, save_ms);
}

static bool print_report(const braid_plan *p) {
    braid_compile_report r;
    if (braid_plan_compile_report(p, &r) != BRAID_OK ||
        braid_compile_report_print(&r, stdout) != BRAID_OK)
        return cli_err("compile: --report: %s", braid_last_error());
    return true;
}

static int compile_usage(int rc) {
    if (rc < 0) cli_print_help(stdout);
    return rc < 0 ? CLI_EXIT_OK : rc;
}

int cli_compile_cmd(int argc, char **argv) {
    const char *file = NULL, *out = NULL;
    bool report = false, verbose = false;
    cli_compile_flags flags = {0};
    const cli_extra_option extra[] = {{"-o", NULL, &out},
                                      {"--output", NULL, &out},
                                      {"--report", &report, NULL},
                                      {"--verbose", &verbose, NULL},
                                      {"-v", &verbose, NULL}};
    int rc = cli_parse_command("compile", argc, argv, extra,
                               sizeof extra / sizeof extra[0], &file, &flags);
    if (rc != CLI_EXIT_OK) return compile_usage(rc);
    char *owned = out ? NULL : default_output(file);
    if (!out && !owned) return cli_fail("out of memory");
    if (!out) out = owned;
    if (cli_same_file(out, file)) {
        free(owned);
        return cli_fail("compile: refusing to overwrite the input file %s "
                        "with the plan (choose another name with -o)",
                        file);
    }
    /* A plan file as input: its graph is compiled again, flags or not. */
    flags.given = true;
    cli_input in;
    bool ok = cli_open_file(file, &flags, -1, false, &in);
    double t0 = cli_now();
    if (ok && braid_plan_save(in.plan, out) != BRAID_OK)
        ok = cli_err("compile: %s", braid_last_error());
    double save_ms = (cli_now() - t0) * 1e3;
    struct stat st;
    if (ok && stat(out, &st) != 0)
        ok = cli_err("compile: %s: %s", out, strerror(errno));
    if (ok) print_summary(out, &in, (uint64_t)st.st_size, save_ms);
    if (ok) cli_print_placement_note(stdout, in.plan);
    if (ok && verbose) cli_print_placement(stdout, in.plan);
    if (ok && report) ok = print_report(in.plan);
    if (ok && (fflush(stdout) != 0 || ferror(stdout)))
        ok = cli_err("compile: writing the output failed");
    cli_input_free(&in);
    free(owned);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ---- provenance (braid info) -----------------------------------------------
 */

/* "2026-11-22 01:20:00 UTC" into buf ("unknown" for 0). */
static const char *time_str(int64_t t, char *buf, size_t size) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) ||
        !strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, size, "unknown");
    return buf;
}

/* "13.0" (NVRTC version 13000) into buf; "none" for 0. */
static const char *nvrtc_str(int v, char *buf, size_t size) {
    if (v <= 0)
        snprintf(buf, size, "none");
    else
        snprintf(buf, size, "%d.%d", v / 1000, v % 1000 / 10);
    return buf;
}

/* The braid version string with anything unprintable replaced. */
static void clean_version(const braid_plan_provenance *m, char *buf,
                          size_t size) {
    size_t n = 0;
    for (size_t i = 0;
         i < sizeof m->braid_version && m->braid_version[i] && n + 1 < size;
         i++) {
        char c = m->braid_version[i];
        buf[n++] = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? c : '?';
    }
    buf[n] = '\0';
}

void cli_print_provenance(FILE *out, const cli_input *in) {
    if (!in || !in->plan_file) return;
    char human[32], when[64], nv[16], ver[40];
    fprintf(out, "plan file: %" PRIu64 " bytes (%s), ",
            (uint64_t)in->file_bytes,
            size_str(in->file_bytes, human, sizeof human));
    if (in->recompiled) {
        fprintf(out,
                "compiled again from its graph (compile options given) "
                "in %.3f ms\n",
                in->ms);
        return;
    }
    braid_plan_provenance pv;
    if (braid_plan_provenance_get(in->plan, &pv) != BRAID_OK) return;
    clean_version(&pv, ver, sizeof ver);
    fprintf(out, "loaded in %.3f ms\n", in->ms);
    fprintf(out, "  compiled by braid %s, NVRTC %s, created %s\n", ver,
            nvrtc_str(pv.nvrtc_version, nv, sizeof nv),
            time_str(pv.created, when, sizeof when));
    if (!pv.source_bytes) {
        fprintf(out, "  kernels: none (no generated GPU kernel)\n");
        return;
    }
    fprintf(out, "  kernels: %" PRIu32 ", CUDA source %zu bytes (%s)%s\n",
            pv.kernels, pv.source_bytes,
            size_str(pv.source_bytes, human, sizeof human),
            pv.archs ? "" : ", no binaries (compiled when run)");
    braid_plan_arch_info a;
    for (uint32_t i = 0; i < pv.archs; i++) {
        if (braid_plan_arch_get(in->plan, i, &a) != BRAID_OK) continue;
        char c[32], x[32];
        fprintf(out, "    sm_%d: cubin %s, ptx %s\n", a.sm,
                a.cubin_bytes ? size_str(a.cubin_bytes, c, sizeof c) : "none",
                a.ptx_bytes ? size_str(a.ptx_bytes, x, sizeof x) : "none");
    }
}

void cli_print_provenance_json(FILE *out, const cli_input *in) {
    if (!in || !in->plan_file) return;
    braid_plan_provenance pv;
    if (braid_plan_provenance_get(in->plan, &pv) != BRAID_OK) return;
    char ver[40];
    clean_version(&pv, ver, sizeof ver);
    fprintf(out,
            "  \"plan_file\": {\"bytes\": %" PRIu64 ", \"load_ms\": %.3f, "
            "\"recompiled\": %s",
            (uint64_t)in->file_bytes, in->ms,
            in->recompiled ? "true" : "false");
    if (!in->recompiled) {
        fprintf(out,
                ", \"braid_version\": \"%s\", \"nvrtc_version\": %d, "
                "\"created\": %" PRId64 ", \"kernels\": %" PRIu32
                ", \"source_bytes\": %zu, \"archs\": [",
                ver, pv.nvrtc_version, pv.created, pv.kernels, pv.source_bytes);
        braid_plan_arch_info a;
        for (uint32_t i = 0; i < pv.archs; i++)
            if (braid_plan_arch_get(in->plan, i, &a) == BRAID_OK)
                fprintf(out,
                        "%s{\"sm\": %d, \"cubin_bytes\": %zu, "
                        "\"ptx_bytes\": %zu}",
                        i ? ", " : "", a.sm, a.cubin_bytes, a.ptx_bytes);
        fprintf(out, "]");
    }
    fprintf(out, "},\n");
}
