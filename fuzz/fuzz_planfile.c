/* fuzz/fuzz_planfile.c — libFuzzer target for the plan-file reader.
 *
 * Any input must load or fail cleanly (ASan/UBSan catch the rest). Because
 * the checksums reject nearly every mutation, most inputs are re-sealed
 * first (br_planfile_reseal recomputes the CRCs), so that libFuzzer
 * exercises the field validation; the last byte of the input chooses
 * (0x00..0xEF: re-seal, else load as is). A failure must carry a message
 * naming the header, the section table or a section. A plan that loads
 * must save again to a file that loads, and must run (emulated, so GPU
 * plans run too). Seed it with plan files (make fuzz writes them with
 * fuzz_planfile -write_seeds=DIR, from examples/graphs; GPU plans with
 * conv nodes carry tuning records):
 *   ./fuzz_planfile -max_total_time=30 corpus_plans/ */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "runtime/planfile/planfile.h"
#include "runtime/runtime.h"

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_planfile: %s\n%s\n", what, detail ? detail : "");
    abort();
}

/* Runs p on zero-filled inputs (emulated), when its memory is modest. */
static void run(const braid_plan *p) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->res.narenas; i++)
        total += p->res.arenas[i].bytes;
    for (uint32_t i = 0; i < p->res.ninputs; i++)
        total += p->res.inputs[i].bytes;
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        total += p->res.outputs[i].bytes;
    if (total > ((uint64_t)16 << 20)) return;
    braid_input_binding *in = calloc(p->res.ninputs + 1, sizeof *in);
    braid_output_binding *out = calloc(p->res.noutputs + 1, sizeof *out);
    bool ok = in && out;
    for (uint32_t i = 0; ok && i < p->res.ninputs; i++) {
        in[i].name = p->res.inputs[i].name;
        in[i].bytes = p->res.inputs[i].bytes;
        ok = (in[i].data = calloc(1, in[i].bytes + 1)) != NULL;
    }
    for (uint32_t i = 0; ok && i < p->res.noutputs; i++) {
        out[i].name = p->res.outputs[i].name;
        out[i].bytes = p->res.outputs[i].bytes;
        ok = (out[i].data = malloc(out[i].bytes + 1)) != NULL;
    }
    braid_exec *e = NULL;
    if (ok && br_exec_new_emulated(p, 1, &e) == BRAID_OK) {
        if (braid_run(e, in, p->res.ninputs, out, p->res.noutputs) != BRAID_OK)
            fail("a loaded plan fails to run", braid_last_error());
        braid_exec_free(e);
    }
    for (uint32_t i = 0; in && i < p->res.ninputs; i++)
        free((void *)in[i].data);
    for (uint32_t i = 0; out && i < p->res.noutputs; i++)
        free(out[i].data);
    free(in);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    bool reseal = data[size - 1] < 0xF0;
    size--;
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (reseal) br_planfile_reseal(copy, size);
    braid_plan *p = NULL;
    braid_load_options o;
    braid_load_options_init(&o);
    o.num_threads = 1; /* a file may ask for up to 1024 threads */
    braid_status s = br_planfile_load(copy, size, &o, "plan file", &p);
    free(copy);
    if (s != BRAID_OK) {
        const char *m = braid_last_error();
        if (p) fail("a failed load returned a plan", m);
        if (s == BRAID_ERR_OUT_OF_MEMORY) return 0;
        if ((s != BRAID_ERR_PARSE && s != BRAID_ERR_UNSUPPORTED) ||
            strncmp(m, "plan file: ", 11) != 0 ||
            (!strstr(m, ": header: ") && !strstr(m, ": section ")))
            fail("an error without the documented shape", m);
        return 0;
    }
    void *again = NULL;
    size_t n = 0;
    if (braid_plan_save_memory(p, &again, &n) != BRAID_OK)
        fail("a loaded plan does not save", braid_last_error());
    braid_plan *q = NULL;
    if (br_planfile_load(again, n, NULL, "plan file", &q) != BRAID_OK)
        fail("a saved loaded plan does not load", braid_last_error());
    braid_plan_free(q);
    free(again);
    run(p);
    braid_plan_free(p);
    return 0;
}

/* ---- seed corpus ------------------------------------------------------------
 * With -write_seeds=DIR (before libFuzzer parses its flags, via
 * LLVMFuzzerInitialize) the target compiles every .graph file in
 * examples/graphs for "cpu" and for "cpu,cuda:0" (and those with convolutions
 * for "cuda:0", with tuning records) and writes the plan files, each followed
 * by one byte 0x00 (re-seal), into DIR, then exits. */

int LLVMFuzzerInitialize(int *argc, char ***argv);

static void write_seed(const braid_graph *g, const char *devices,
                       const char *dir, const char *name, const char *kind) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    o.num_threads = 1;
    braid_plan *p = NULL;
    void *bytes = NULL;
    size_t n = 0;
    if (braid_compile(g, &o, &p) != BRAID_OK)
        fail("cannot make a seed", braid_last_error());
    /* GPU conv nodes get tuning records, as an executor notes them, so
     * the TUNING section is fuzzed too */
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (p->res.graph->nodes[id].op != BRAID_OP_CONV ||
            p->res.info[id].device.kind != BP_DEVICE_CUDA)
            continue;
        bp_conv_choice c = {.node = id,
                            .cc = 90,
                            .cudnn = 91400,
                            .algo = (int32_t)(id % 8),
                            .math = 3,
                            .workspace = 4096};
        snprintf(c.device, sizeof c.device, "NVIDIA H200");
        bp_conv_choice k = c;
        snprintf(k.device, sizeof k.device, "NVIDIA H100 80GB HBM3");
        k.algo = -1;
        if (!bp_tuning_note(p, &c) || !bp_tuning_note(p, &k))
            fail("cannot make a seed", "out of memory");
    }
    if (braid_plan_save_memory(p, &bytes, &n) != BRAID_OK)
        fail("cannot make a seed", braid_last_error());
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s.plan", dir, name, kind);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fputc(0, f) == EOF ||
        fclose(f) != 0)
        fail("cannot write a seed", path);
    free(bytes);
    braid_plan_free(p);
}

static void write_seeds(const char *graphs, const char *dir) {
    DIR *d = opendir(graphs);
    if (!d) fail("cannot open the graphs folder", graphs);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".graph") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", graphs, e->d_name);
        braid_graph *g = braid_graph_load(path, NULL);
        if (!g || braid_graph_status(g) != BRAID_OK)
            fail("cannot load a graph", path);
        write_seed(g, "cpu", dir, e->d_name, "cpu");
        write_seed(g, "cpu,cuda:0", dir, e->d_name, "gpu");
        bool conv = false; /* all on the GPU: its convs get records */
        for (uint32_t id = 0; id < g->nnodes; id++)
            conv |= g->nodes[id].op == BRAID_OP_CONV;
        if (conv) write_seed(g, "cuda:0", dir, e->d_name, "cuda");
        braid_graph_free(g);
    }
    closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *graphs = NULL, *dir = NULL;
    for (int i = 1; i < *argc; i++) {
        if (strncmp((*argv)[i], "-write_seeds=", 13) == 0)
            dir = (*argv)[i] + 13;
        if (strncmp((*argv)[i], "-graphs=", 8) == 0) graphs = (*argv)[i] + 8;
    }
    if (dir) {
        write_seeds(graphs ? graphs : "examples/graphs", dir);
        exit(0);
    }
    return 0;
}
