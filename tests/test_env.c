/* tests/test_env.c — environment variables braid reads: a BRAID_DUMP
 * meant for another program is ignored (with a warning), never a failed
 * compile, while braid's own syntax naming no pass is still an error; a
 * BRAID_NCCL_LIBRARY that cannot be loaded makes NCCL unavailable with a
 * message naming it, instead of the system's NCCL standing in. Each
 * Criterion test runs in its own process, so the environment and the
 * once-only NCCL load start fresh. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "runtime/cuda/nccl.h"
#include "tests/support/support.h"

static braid_status compile_small(void) {
    braid_graph *g = ts_tiny_graph();
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    braid_plan_free(p);
    braid_graph_free(g);
    return s;
}

Test(env, foreign_braid_dump_ignored) {
    const char *values[] = {"1", "yes", "/tmp/dumps", "before:fuse"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        cr_assert_eq(setenv("BRAID_DUMP", values[i], 1), 0);
        braid_status s = compile_small();
        cr_assert_eq(s, BRAID_OK, "BRAID_DUMP=%s: %s", values[i],
                     braid_last_error());
    }
}

Test(env, braid_dump_unknown_pass_still_an_error) {
    cr_assert_eq(setenv("BRAID_DUMP", "after:nosuchpass", 1), 0);
    cr_assert_eq(compile_small(), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "nosuchpass"), "%s",
              braid_last_error());
}

Test(env, bad_nccl_library_named_not_replaced) {
    const char *bad = "/nonexistent/braid-test/libnccl.so.2";
    cr_assert_eq(setenv("BRAID_NCCL_LIBRARY", bad, 1), 0);
    const br_nccl_api *api = br_nccl_load("test");
    cr_assert_null(api, "NCCL loaded although BRAID_NCCL_LIBRARY names a "
                        "missing file");
    const char *m = braid_last_error();
    cr_assert(strstr(m, "BRAID_NCCL_LIBRARY") && strstr(m, bad), "%s", m);
}
