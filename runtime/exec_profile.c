/* runtime/exec_profile.c — the profiler's calls on an executor
 * (braid_exec_set_profiling, braid_exec_profile, braid_exec_profile_reset;
 * docs/profiler.md). They run between runs only: a run outstanding from
 * braid_run_async must be waited for first. The figures themselves are
 * gathered by runtime/profile*.c. */
#include "runtime/exec_impl.h"

/* Takes e for a profiler call between runs. */
static braid_status enter_idle(braid_exec *e, const char *where) {
    if (!e)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: exec is NULL",
                                 where);
    if (!br_exec_enter(e, where)) return BRAID_ERR_INVALID_ARGUMENT;
    if (!e->run.pending) return BRAID_OK;
    atomic_flag_clear(&e->busy);
    return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                             "%s: a run started by braid_run_async is still "
                             "outstanding (call braid_wait first)",
                             where);
}

braid_status braid_exec_set_profiling(braid_exec *e, bool on) {
    const char *where = "braid_exec_set_profiling";
    braid_status s = enter_idle(e, where);
    if (s != BRAID_OK) return s;
    if (on && !e->prof)
        s = br_prof_new(e->plan, br_pool_threads(e->pool) - 1, &e->prof);
    if (s == BRAID_OK && on) s = br_prof_cuda_init(e->prof, e->cuda);
    if (s == BRAID_OK) s = br_pool_trace(e->pool, on);
    if (s == BRAID_OK) e->profiling = on;
    atomic_flag_clear(&e->busy);
    return s;
}

braid_status braid_exec_profile(braid_exec *e, braid_profile **out) {
    const char *where = "braid_exec_profile";
    if (!out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: out is NULL",
                                 where);
    *out = NULL;
    braid_status s = enter_idle(e, where);
    if (s != BRAID_OK) return s;
    s = e->prof ? br_prof_snapshot(e->prof, out)
                : bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                    "%s: profiling was never turned on for "
                                    "this executor (braid_exec_set_profiling)",
                                    where);
    atomic_flag_clear(&e->busy);
    return s;
}

braid_status braid_exec_profile_reset(braid_exec *e) {
    braid_status s = enter_idle(e, "braid_exec_profile_reset");
    if (s != BRAID_OK) return s;
    if (e->prof) br_prof_reset(e->prof);
    atomic_flag_clear(&e->busy);
    return BRAID_OK;
}
