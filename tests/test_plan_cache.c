/* tests/test_plan_cache.c — plans per input shape (braid_plan_cache_*,
 * runtime/plan_cache.c): a serving loop asking for several batch sizes
 * gets, per size, an executor whose results match the reference evaluator
 * on fresh random inputs; a size asked for again reuses the executor and
 * plan without calling the builder or compiling; past the capacity the
 * least recently used size is dropped and rebuilt on demand; bad
 * arguments and a failing builder are refused with a message. */
#include <criterion/criterion.h>
#include <string.h>

#include "braid/braid.h"
#include "tests/support/support.h"

/* The builder's record of its calls. */
typedef struct calls {
    int n;        /* graphs built */
    int64_t last; /* batch of the last one */
} calls;

/* y = tanh(x @ w + b) * 0.5 + x @ w, x [batch, 16], w and b constants. */
static braid_graph *mlp(void *user, const int64_t *key, uint32_t nkey) {
    calls *c = user;
    if (nkey != 1 || key[0] <= 0) return NULL;
    c->n++;
    c->last = key[0];
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {key[0], 16}, wd[2] = {16, 8}, bd[1] = {8};
    float w[128], b[8];
    for (int i = 0; i < 128; i++)
        w[i] = 0.05f * (float)((i * 7) % 11) - 0.25f;
    for (int i = 0; i < 8; i++)
        b[i] = 0.1f * (float)i - 0.3f;
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, xd);
    braid_tensor m =
        braid_matmul(g, x, braid_constant(g, BRAID_F32, 2, wd, w), 0);
    braid_tensor h =
        braid_tanh(g, braid_add(g, m, braid_constant(g, BRAID_F32, 1, bd, b)));
    braid_tensor half = braid_fill(g, BRAID_F32, 0, NULL, 0.5);
    braid_output(g, "y", braid_add(g, braid_mul(g, h, half), m));
    return g;
}

/* Runs e on fresh random inputs and compares with the reference on the
 * plan's own graph. */
static void check_run(braid_exec *e, const braid_plan *p, uint64_t seed) {
    const braid_graph *g = braid_plan_graph(p);
    ts_io *io = ts_io_new(g, seed);
    cr_assert_not_null(io);
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "reference: %s", braid_last_error());
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "run: %s", braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "seed %llu: %s",
              (unsigned long long)seed, msg);
    ts_io_free(io);
}

static braid_plan_cache *new_cache(calls *c, uint32_t capacity) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    o.num_threads = 2;
    braid_plan_cache *pc = NULL;
    cr_assert_eq(braid_plan_cache_new(mlp, c, &o, capacity, &pc), BRAID_OK,
                 "%s", braid_last_error());
    return pc;
}

/* The batch dimension of the plan's input x. */
static int64_t batch_of(const braid_plan *p) {
    const braid_graph *g = braid_plan_graph(p);
    const char *name = NULL;
    braid_tensor x;
    cr_assert_eq(braid_graph_input(g, 0, &name, &x), BRAID_OK);
    cr_assert_str_eq(name, "x");
    int64_t dims[BRAID_MAX_RANK];
    int rank = 0;
    cr_assert_eq(braid_tensor_info(g, x, NULL, &rank, dims), BRAID_OK);
    return dims[0];
}

Test(plan_cache, sizes_compile_once_and_match_the_reference) {
    calls c = {0, 0};
    braid_plan_cache *pc = new_cache(&c, 8);
    const int64_t sizes[] = {1, 4, 7, 4, 1, 16, 7, 4};
    braid_exec *first[17] = {0};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        braid_exec *e = NULL;
        const braid_plan *p = NULL;
        int before = c.n;
        cr_assert_eq(braid_plan_cache_get(pc, &sizes[i], 1, &e, &p), BRAID_OK,
                     "%s", braid_last_error());
        cr_assert_eq(batch_of(p), sizes[i]);
        if (first[sizes[i]]) { /* seen before: same executor, no build */
            cr_assert_eq(e, first[sizes[i]], "batch %lld: a new executor",
                         (long long)sizes[i]);
            cr_assert_eq(c.n, before, "batch %lld built again",
                         (long long)sizes[i]);
        } else {
            cr_assert_eq(c.n, before + 1);
            cr_assert_eq(c.last, sizes[i]);
            first[sizes[i]] = e;
        }
        check_run(e, p, 100 + i);
    }
    uint64_t hits = 0, misses = 0;
    uint32_t plans = 0;
    braid_plan_cache_stats(pc, &hits, &misses, &plans);
    cr_assert_eq(misses, 4);
    cr_assert_eq(hits, 4);
    cr_assert_eq(plans, 4);
    braid_plan_cache_free(pc);
}

Test(plan_cache, least_recently_used_size_is_dropped) {
    calls c = {0, 0};
    braid_plan_cache *pc = new_cache(&c, 2);
    const int64_t order[] = {2, 3, 2, 5, 2, 3};
    const int builds[] = {1, 2, 2, 3, 3, 4}; /* 3 was dropped for 5 */
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        braid_exec *e = NULL;
        const braid_plan *p = NULL;
        cr_assert_eq(braid_plan_cache_get(pc, &order[i], 1, &e, &p), BRAID_OK,
                     "%s", braid_last_error());
        cr_assert_eq(c.n, builds[i], "request %zu (batch %lld): %d builds", i,
                     (long long)order[i], c.n);
        check_run(e, p, 200 + i);
    }
    uint32_t plans = 0;
    braid_plan_cache_stats(pc, NULL, NULL, &plans);
    cr_assert_eq(plans, 2);
    braid_plan_cache_free(pc);
}

Test(plan_cache, bad_arguments_refused) {
    calls c = {0, 0};
    braid_plan_cache *pc = NULL;
    cr_assert_eq(braid_plan_cache_new(NULL, &c, NULL, 4, &pc),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "build is NULL"));
    cr_assert_eq(braid_plan_cache_new(mlp, &c, NULL, 0, &pc),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "capacity"));
    pc = new_cache(&c, 2);
    braid_exec *e = NULL;
    int64_t bad = -3, key[BRAID_CACHE_KEY_MAX + 1] = {0};
    cr_assert_eq(braid_plan_cache_get(pc, &bad, 1, &e, NULL),
                 BRAID_ERR_INVALID_ARGUMENT); /* the builder says no */
    cr_assert(strstr(braid_last_error(), "builder returned no graph"), "%s",
              braid_last_error());
    cr_assert_null(e);
    cr_assert_eq(
        braid_plan_cache_get(pc, key, BRAID_CACHE_KEY_MAX + 1, &e, NULL),
        BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_plan_cache_get(pc, key, 1, NULL, NULL),
                 BRAID_ERR_INVALID_ARGUMENT);
    uint64_t misses = 0;
    uint32_t plans = 9;
    braid_plan_cache_stats(pc, NULL, &misses, &plans);
    cr_assert_eq(plans, 0);
    braid_plan_cache_free(pc);
    braid_plan_cache_free(NULL);
}
