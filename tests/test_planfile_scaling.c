/* tests/test_planfile_scaling.c — a plan file's size must not buy
 * quadratic work (issue 18 item 6). Loading runs the plan verifier; its
 * overlap check once tested every pair of tensors sharing bytes, so a long
 * chain whose tensors take turns in two slots (every other tensor at the
 * same offset) took minutes to load at 166k nodes. Here such plans — a
 * valid one, and the same with one tensor moved over its input's bytes at
 * the very end of the schedule, which a pairwise checker finds only after
 * all the other work — are loaded (or refused) at N and 10·N nodes, and
 * the larger may cost at most 30× the smaller in CPU time (n log n gives
 * about 12×, quadratic 100×). CPU time, best of three: other processes on
 * the machine do not inflate it. */
#define _POSIX_C_SOURCE 200809L

#include "planfile_support.h"

#include <time.h>

#include "bench/scaling_graphs.h"

#define SMALL 2000u
#define MAX_RATIO 30.0

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The chain's plan file (see bench/scaling_graphs.h) of about n nodes:
 * matmul, tanh in place, matmul, ... in two slots. With `clash`, the last
 * matmul's output is moved onto the bytes of its input, which it reads
 * while writing. */
static unsigned char *chain_file(uint32_t n, bool clash, size_t *size) {
    braid_graph *g = sg_chain(n);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p = pf_compile(g, "cpu");
    if (clash) {
        uint32_t last = p->res.schedule[p->res.nschedule - 1];
        while (p->res.graph->nodes[last].op != BRAID_OP_MATMUL)
            last--;
        uint32_t in = p->res.graph->nodes[last].inputs[0];
        cr_assert_eq(p->res.info[last].place.storage, BP_STORAGE_ARENA);
        cr_assert_eq(p->res.info[in].place.storage, BP_STORAGE_ARENA);
        cr_assert_neq(p->res.info[last].place.offset,
                      p->res.info[in].place.offset,
                      "the last matmul shares its input's bytes already");
        p->res.info[last].place.offset = p->res.info[in].place.offset;
    }
    unsigned char *d = pf_save(p, size);
    braid_plan_free(p);
    braid_graph_free(g);
    return d;
}

/* Best CPU time of three loads of d; *ok: whether it loaded. */
static double load_time(const unsigned char *d, size_t size, bool *ok) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        braid_plan *q = NULL;
        double t0 = cpu_now();
        braid_status s = br_planfile_load(d, size, NULL, "plan file", &q);
        double t = cpu_now() - t0;
        *ok = s == BRAID_OK;
        if (!*ok) {
            cr_assert_null(q);
            cr_assert(strstr(braid_last_error(), "overlap:"),
                      "refused for another reason: %s", braid_last_error());
        }
        braid_plan_free(q);
        if (t < best) best = t;
    }
    return best;
}

static void check_growth(bool clash) {
    size_t s1 = 0, s2 = 0;
    unsigned char *small = chain_file(SMALL, clash, &s1);
    unsigned char *large = chain_file(10 * SMALL, clash, &s2);
    bool ok1 = false, ok2 = false;
    double t1 = load_time(small, s1, &ok1), t2 = load_time(large, s2, &ok2);
    cr_assert_eq(ok1, !clash, "the %zu-byte file %s", s1,
                 ok1 ? "loaded" : "was refused");
    cr_assert_eq(ok2, !clash, "the %zu-byte file %s", s2,
                 ok2 ? "loaded" : "was refused");
    double ratio = t2 / (t1 > 1e-6 ? t1 : 1e-6);
    cr_log_info("%s: %zu bytes in %.4f s, %zu bytes in %.4f s: %.1fx",
                clash ? "refused" : "loaded", s1, t1, s2, t2, ratio);
    cr_assert_leq(ratio, MAX_RATIO,
                  "a %.1fx larger plan file took %.1fx as long to %s (%.4f s "
                  "-> %.4f s): super-linear",
                  (double)s2 / (double)s1, ratio, clash ? "refuse" : "load", t1,
                  t2);
    free(small);
    free(large);
}

Test(planfile_scaling, shared_slots_load_in_near_linear_time, .timeout = 240) {
    check_growth(false);
}

Test(planfile_scaling, late_overlap_refused_in_near_linear_time,
     .timeout = 240) {
    check_growth(true);
}
