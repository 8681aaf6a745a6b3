/* tests/planfile_support.h — helpers of the plan-file suites
 * (test_planfile*.c): compile, save to memory, load, run, compare.
 * Static functions: each including test file gets its own copy. */
#ifndef BRAID_TESTS_PLANFILE_SUPPORT_H
#define BRAID_TESTS_PLANFILE_SUPPORT_H

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/planfile/planfile.h"
#include "runtime/runtime.h"
#include "support/support.h"

/* g compiled for devices (archs "none"), asserting success. */
static inline braid_plan *pf_compile(const braid_graph *g,
                                     const char *devices) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    o.num_threads = 2;
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    cr_assert_eq(s, BRAID_OK, "compile for %s: %s", devices,
                 braid_last_error());
    return p;
}

/* The plan file of p, asserting success. */
static inline unsigned char *pf_save(const braid_plan *p, size_t *size) {
    void *data = NULL;
    braid_status s = braid_plan_save_memory(p, &data, size);
    cr_assert_eq(s, BRAID_OK, "save: %s", braid_last_error());
    cr_assert(data && *size > 0);
    return data;
}

/* Loads without the device check (GPU plans on this machine too). */
static inline braid_plan *pf_load(const void *data, size_t size) {
    braid_plan *p = NULL;
    braid_status s = br_planfile_load(data, size, NULL, "plan file", &p);
    cr_assert_eq(s, BRAID_OK, "load: %s", braid_last_error());
    cr_assert(p);
    return p;
}

/* What a print function writes, as a malloc'd string. */
static inline char *pf_text(const braid_plan *p, bool dump) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    if (dump)
        bp_plan_dump(p, "load", f);
    else
        cr_assert_eq(braid_plan_print(p, f), BRAID_OK);
    fclose(f);
    return buf;
}

/* Runs p on io's inputs into io->out: the CPU executor, or (emulate) the
 * emulated one with seed. */
static inline braid_status pf_run(const braid_plan *p, ts_io *io,
                                  bool emulate, uint64_t seed) {
    braid_exec *e = NULL;
    braid_status s = emulate ? br_exec_new_emulated(p, seed, &e)
                             : braid_exec_new(p, &e);
    if (s != BRAID_OK) return s;
    s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    braid_exec_free(e);
    return s;
}

/* Outputs of a and b equal bit for bit. */
static inline bool pf_same_outputs(const ts_io *a, const ts_io *b) {
    for (uint32_t i = 0; i < a->noutputs; i++)
        if (a->out[i].bytes != b->out[i].bytes ||
            memcmp(a->out[i].data, b->out[i].data, a->out[i].bytes) != 0)
            return false;
    return true;
}

/* An error of the loader has the documented shape:
 * "plan file...: header: ..." or "plan file...: section ...". */
static inline void pf_assert_error_shape(braid_status s, const char *what) {
    const char *m = braid_last_error();
    cr_assert(s == BRAID_ERR_PARSE || s == BRAID_ERR_UNSUPPORTED,
              "%s: status %s: %s", what, braid_status_name(s), m);
    cr_assert(strncmp(m, "plan file", 9) == 0, "%s: message \"%s\"", what, m);
    cr_assert(strstr(m, ": header: ") || strstr(m, ": section "),
              "%s: message \"%s\" names no header field or section", what, m);
}

#endif /* BRAID_TESTS_PLANFILE_SUPPORT_H */
