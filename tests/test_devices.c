/* tests/test_devices.c — devices have one owner: a device name means the
 * same thing to the builder's hints, the text format, the compile options
 * and the command line (graph/device.c); braid_compile describes the
 * devices once (runtime/compile.c) and the passes and codegen read that
 * description, so a plan for GPUs this machine lacks compiles all the
 * same. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/devices.h"
#include "support/cli.h"
#include "tmpfiles.h"

/* Every name, and whether it is one. */
static const struct {
    const char *name;
    bool valid;
} names[] = {
    {"cpu", true},      {"cuda:0", true},    {"cuda:9", true},
    {"cuda:10", true},  {"cuda:63", true},   {"cuda:64", false},
    {"cuda:99", false}, {"cuda:100", false}, {"cuda:9999", false},
    {"cuda:-1", false}, {"cuda:+1", false},  {"cuda:0001", false},
    {"cuda:01", false}, {"cuda:00", false},  {"cuda:", false},
    {"cuda", false},    {"CPU", false},      {"Cuda:0", false},
    {"gpu:0", false},   {"cuda:1x", false},  {"cuda:0x1", false},
    {"cuda: 1", false}, {"cuda:1:0", false}, {"cp", false},
    {"cpu0", false},    {"", false},         {"cuda:4294967296", false},
};
#define NNAMES (sizeof names / sizeof *names)

/* A graph whose y may carry the hint `hint` (NULL: none). */
static braid_graph *small_graph(const char *hint, braid_status *hint_status) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[1] = {256};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, d);
    braid_tensor y = braid_exp(g, x);
    *hint_status = hint ? braid_set_device(g, y, hint) : BRAID_OK;
    braid_output(g, "y", y);
    return g;
}

static braid_status compile_for(const char *devices, braid_plan **p) {
    braid_status hs;
    braid_graph *g = small_graph(NULL, &hs);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    braid_status s = braid_compile(g, &o, p);
    braid_graph_free(g);
    return s;
}

Test(devices, one_parser_for_every_name) {
    for (size_t i = 0; i < NNAMES; i++) {
        const char *n = names[i].name;
        int cuda = -7;
        cr_expect_eq(bg_device_parse(n, strlen(n), &cuda), names[i].valid,
                     "bg_device_parse(\"%s\")", n);
        if (names[i].valid)
            cr_expect_eq(cuda, strcmp(n, "cpu") ? atoi(n + 5) : BG_DEVICE_CPU,
                         "\"%s\" gave %d", n, cuda);
        bp_device d;
        cr_expect_eq(bp_device_parse(n, strlen(n), &d), names[i].valid, "%s",
                     n);
    }
}

Test(devices, builder_hint_agrees) {
    for (size_t i = 0; i < NNAMES; i++) {
        braid_status hs;
        braid_graph *g = small_graph(names[i].name, &hs);
        cr_expect_eq(hs == BRAID_OK, names[i].valid,
                     "braid_set_device(\"%s\"): %s", names[i].name,
                     braid_last_error());
        if (!names[i].valid)
            cr_expect(strstr(braid_graph_error(g), "0 <= N < 64"), "%s",
                      braid_graph_error(g));
        braid_graph_free(g);
    }
}

Test(devices, text_format_agrees) {
    for (size_t i = 0; i < NNAMES; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "braid-graph 1\n%%x = input f32[8] name=\"x\"\n"
                 "%%y = exp %%x device=\"%s\" : f32[8]\noutput \"y\" = %%y\n",
                 names[i].name);
        braid_graph *g = braid_graph_parse(text, strlen(text), "t.graph", NULL);
        bool ok = g && braid_graph_status(g) == BRAID_OK;
        cr_expect_eq(ok, names[i].valid, "device=\"%s\": %s", names[i].name,
                     g ? braid_graph_error(g) : braid_last_error());
        braid_graph_free(g);
    }
}

Test(devices, compile_options_agree) {
    for (size_t i = 0; i < NNAMES; i++) {
        braid_plan *p = NULL;
        braid_status s = compile_for(names[i].name, &p);
        cr_expect_eq(s == BRAID_OK, names[i].valid, "devices \"%s\": %s",
                     names[i].name, braid_last_error());
        if (s != BRAID_OK) {
            cr_expect_eq(s, BRAID_ERR_INVALID_ARGUMENT);
            cr_expect_null(p);
        } else if (strcmp(names[i].name, "cpu") != 0) {
            /* the plan lists exactly the cpu and the GPU named */
            braid_plan_summary sum;
            cr_assert_eq(braid_plan_summary_get(p, &sum), BRAID_OK);
            cr_expect_eq(sum.devices, 2);
            braid_plan_device_info di;
            cr_assert_eq(braid_plan_device_get(p, 1, &di), BRAID_OK);
            cr_expect_str_eq(di.name, names[i].name);
        }
        braid_plan_free(p);
    }
}

/* A list trims spaces around each name, not inside one; a single name (a
 * hint) has none. */
Test(devices, lists_trim_around_names) {
    braid_status hs;
    braid_graph_free(small_graph(" cpu", &hs));
    cr_expect_eq(hs, BRAID_ERR_INVALID_ARGUMENT);
    braid_graph_free(small_graph("cuda:1\t", &hs));
    cr_expect_eq(hs, BRAID_ERR_INVALID_ARGUMENT);
    braid_plan *p = NULL;
    cr_assert_eq(compile_for(" cuda:1 ,\tcpu ", &p), BRAID_OK, "%s",
                 braid_last_error());
    const bp_device_desc *d = bp_plan_devices(p);
    cr_expect_eq(d->ndevices, 2);
    cr_expect_eq(d->devices[0].kind, BP_DEVICE_CPU);
    cr_expect(bp_device_equal(d->devices[1], (bp_device){BP_DEVICE_CUDA, 1}));
    braid_plan_free(p);
    const char *bad[] = {"cpu,,cuda:0", "cpu,cuda:0,cuda:0", "cpu,cuda:64",
                         "cpu, cuda :0", ","};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(compile_for(bad[i], &p), BRAID_ERR_INVALID_ARGUMENT, "%s",
                     bad[i]);
        cr_expect(strstr(braid_last_error(), bad[i]), "%s names \"%s\"",
                  braid_last_error(), bad[i]);
    }
}

TestSuite(devices_cli, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

Test(devices_cli, devices_flag_agrees) {
    char *graph = tf_path(ts_tmpdir, "g.graph");
    char *out = tf_path(ts_tmpdir, "g.plan");
    cr_assert(tf_write_str(graph, "braid-graph 1\n%x = input f32[8] "
                                  "name=\"x\"\n%y = exp %x : f32[8]\n"
                                  "output \"y\" = %y\n"));
    for (size_t i = 0; i < NNAMES; i++) {
        if (!names[i].name[0]) continue; /* an empty value is a usage error */
        ts_cli_result r = ts_run_cli(
            BRAID_CLI_PATH, ts_tmpdir, NULL,
            (const char *const[]){"compile", graph, "-o", out, "--devices",
                                  names[i].name, "--arch", "none", NULL});
        cr_expect_eq(r.status == 0, names[i].valid,
                     "--devices \"%s\": exit %d\n%s", names[i].name, r.status,
                     r.err);
        ts_cli_result_free(&r);
    }
    free(graph);
    free(out);
}

/* ---- one probe, one description ------------------------------------------ */

Test(devices, probe_once) {
    const br_devices *a = br_devices_probe(), *b = br_devices_probe();
    cr_expect_eq(a, b);
    cr_expect_eq(braid_cuda_device_count(), a->ngpus);
    cr_expect_str_eq(braid_cuda_status(), a->status);
    cr_expect(a->ngpus >= 0 && a->ngpus <= BG_MAX_CUDA_DEVICES);
    for (int i = 0; i < a->ngpus; i++)
        cr_expect_gt(a->gpu[i].sm, 0, "cuda:%d", i);
}

/* GPUs listed explicitly need not exist: the plan uses them, and its
 * kernels are built for the archs the description names (the GPUs present
 * when archs is NULL, else sm_90), not for what the passes could probe. */
Test(devices, explicit_list_without_gpus) {
    braid_status hs;
    braid_graph *g = small_graph("cuda:3", &hs);
    cr_assert_eq(hs, BRAID_OK);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:3";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    const bp_device_desc *d = bp_plan_devices(p);
    cr_expect_eq(d->ndevices, 2);
    cr_expect(bp_device_equal(d->devices[1], (bp_device){BP_DEVICE_CUDA, 3}));
    cr_expect(d->archs_detected);
    cr_assert_geq(d->narchs, 1);
    if (br_devices_probe()->ngpus == 0) cr_expect_eq(d->archs[0], 90);
    const bp_result *r = bp_plan_result(p);
    uint32_t on_gpu = 0;
    for (uint32_t id = 0; id < r->graph->nnodes; id++)
        on_gpu += r->info[id].device.kind == BP_DEVICE_CUDA;
    cr_expect_geq(on_gpu, 2, "exp and its input's copy run on cuda:3");
    braid_plan_free(p);

    o.archs = "sm_80, sm_75";
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    d = bp_plan_devices(p);
    cr_expect_not(d->archs_detected);
    cr_expect_eq(d->narchs, 2);
    cr_expect_eq(d->archs[0], 75);
    cr_expect_eq(d->archs[1], 80);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The pipeline compiles for the description it is handed: four GPUs said
 * to be present become four devices, with the options' profiles. */
Test(devices, pipeline_reads_the_description) {
    braid_status hs;
    braid_graph *g = small_graph("cuda:2", &hs);
    braid_compile_options o;
    braid_compile_options_init(&o);
    braid_device_profile gpu = bp_default_profile(BP_DEVICE_CUDA);
    gpu.launch_s = 1e-3;
    o.cuda_profile = &gpu;
    bp_device_desc d;
    cr_assert_eq(bp_device_desc_init(&d, &o, 4), BRAID_OK);
    cr_expect_eq(d.ndevices, 5);
    cr_expect_eq(d.narchs, 0);
    braid_plan *p = NULL;
    cr_assert_eq(bp_compile_check(g, &o, &p), BRAID_OK);
    cr_assert_eq(bp_compile(g, &o, &d, &p), BRAID_OK, "%s", braid_last_error());
    const bp_device_desc *pd = bp_plan_devices(p);
    cr_expect_eq(pd->ndevices, 5);
    for (uint32_t i = 1; i < 5; i++) {
        cr_expect(bp_device_equal(pd->devices[i],
                                  (bp_device){BP_DEVICE_CUDA, (int)i - 1}));
        cr_expect_eq(pd->profile[i].launch_s, 1e-3);
    }
    cr_expect_eq(pd->profile[0].launch_s,
                 bp_default_profile(BP_DEVICE_CPU).launch_s);
    braid_plan_free(p);

    gpu.mem_bytes_per_s = -1;
    cr_expect_eq(bp_device_desc_init(&d, &o, 1), BRAID_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(braid_last_error(), "cuda:0 profile has mem_bytes_per_s"),
              "%s", braid_last_error());
    braid_graph_free(g);
}
