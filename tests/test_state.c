/* tests/test_state.c — variables, assign, host access, checkpoints
 * (docs/training.md).
 *
 *   - an SGD-like update w ← w − lr·x over several runs on fresh random
 *     inputs and shapes: the variable after each run, and an output that
 *     reads w (the value before the run's assign, even when the reading
 *     node was built after the assign), against a float64 host model and
 *     against braid_reference_run_state, within 1e-5 (f32);
 *   - initializers (fill, uniform, normal, data) read back as the
 *     generators' bits;
 *   - host read/write by name; checkpoints: save → perturb → load restores
 *     the bytes; a file missing a variable, with a wrong shape, an extra
 *     tensor or a corrupt header is refused naming it, changing nothing;
 *   - builder errors: assign to a non-variable, a type mismatch, two
 *     assigns, an assign used as an operand, duplicate names. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "tests/support/support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "passes/plan.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* w (uniform init) updated by w − lr·x; outputs y = sum(w·x) and
 * z = w·2 built after the assign. */
static braid_graph *sgd_graph(int64_t r, int64_t c, double lr) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {r, c};
    braid_tensor w =
        braid_variable(g, "w", BRAID_F32, 2, d, braid_init_uniform(7, -1, 1));
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, d);
    braid_tensor lrt = braid_fill(g, BRAID_F32, 0, NULL, lr);
    braid_assign(g, w, braid_sub(g, w, braid_mul(g, lrt, x)));
    int axes[2] = {0, 1};
    braid_output(g, "y", braid_sum(g, braid_mul(g, w, x), 2, axes, false));
    braid_output(g, "z", braid_mul(g, w, braid_fill(g, BRAID_F32, 0, NULL, 2)));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static braid_exec *compile_exec(braid_graph *g, braid_plan **p) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    cr_assert_eq(braid_compile(g, &o, p), BRAID_OK, "%s", braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

Test(state, sgd_runs_match_model_and_reference) {
    uint64_t rng = 42;
    for (int trial = 0; trial < 4; trial++) {
        int64_t r = ts_rand_int(&rng, 1, 9), c = ts_rand_int(&rng, 1, 33);
        int64_t n = r * c;
        double lr = 0.25;
        braid_graph *g = sgd_graph(r, c, lr);
        braid_plan *p;
        braid_exec *e = compile_exec(g, &p);
        float *w = malloc(n * 4), *x = malloc(n * 4), *z = malloc(n * 4);
        float *rw = malloc(n * 4), *rz = malloc(n * 4), *w0 = malloc(n * 4);
        double *model = malloc(n * sizeof *model);
        const bg_node *wn = &g->nodes[0];
        for (int64_t i = 0; i < n; i++)
            model[i] = (float)bg_variable_init_at(wn, i);
        memcpy(rw, (float[]){0}, 0);
        for (int64_t i = 0; i < n; i++)
            rw[i] = (float)model[i];
        for (int run = 0; run < 3; run++) {
            ts_fill_random(BRAID_F32, x, n, rng + run, -1, 1);
            float y = 0, ry = 0;
            braid_input_binding in = {"x", x, n * 4};
            braid_output_binding out[2] = {{"y", &y, 4}, {"z", z, n * 4}};
            cr_assert_eq(braid_run(e, &in, 1, out, 2), BRAID_OK, "%s",
                         braid_last_error());
            memcpy(w0, rw, n * 4);
            braid_input_binding vin = {"w", w0, n * 4};
            braid_output_binding vout = {"w", rw, n * 4};
            braid_output_binding rout[2] = {{"y", &ry, 4}, {"z", rz, n * 4}};
            cr_assert_eq(braid_reference_run_state(g, &in, 1, rout, 2, &vin, 1,
                                                   &vout, 1),
                         BRAID_OK, "%s", braid_last_error());
            double my = 0;
            for (int64_t i = 0; i < n; i++) {
                my += model[i] * x[i];
                cr_assert_float_eq(z[i], 2 * model[i], 1e-5, "z[%lld]",
                                   (long long)i);
                cr_assert_float_eq(rz[i], 2 * model[i], 1e-5);
                model[i] = (float)(model[i] - (float)(lr * x[i]));
            }
            cr_assert_float_eq(y, my, 1e-4 * (1 + fabs(my)), "y %g vs %g", y,
                               my);
            cr_assert_float_eq(ry, my, 1e-4 * (1 + fabs(my)));
            cr_assert_eq(braid_exec_variable_read(e, "w", w, n * 4), BRAID_OK);
            for (int64_t i = 0; i < n; i++) {
                cr_assert_float_eq(w[i], model[i], 1e-5, "run %d w[%lld]", run,
                                   (long long)i);
                cr_assert_float_eq(rw[i], model[i], 1e-5);
            }
        }
        free(w), free(x), free(z), free(rw), free(rz), free(w0), free(model);
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

Test(state, initializers_and_host_access) {
    braid_graph *g = braid_graph_new(NULL);
    float data[6] = {1, 2, 3, 4, 5, 6};
    braid_tensor v[4] = {
        braid_variable(g, "a", BRAID_F32, 2, DIMS(2, 3), braid_init_fill(1.5)),
        braid_variable(g, "b", BRAID_F32, 2, DIMS(2, 3),
                       braid_init_uniform(3, -2, 2)),
        braid_variable(g, "c", BRAID_F32, 2, DIMS(2, 3),
                       braid_init_normal(4, 1, 0.5)),
        braid_variable(g, "d", BRAID_F32, 2, DIMS(2, 3),
                       braid_init_data(data))};
    braid_tensor ref[3] = {
        braid_fill(g, BRAID_F32, 2, DIMS(2, 3), 1.5),
        braid_random_uniform(g, BRAID_F32, 2, DIMS(2, 3), 3, -2, 2),
        braid_random_normal(g, BRAID_F32, 2, DIMS(2, 3), 4, 1, 0.5)};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "o%d", i);
        braid_output(g, name,
                     braid_add(g, v[i], braid_fill(g, BRAID_F32, 0, NULL, 0)));
    }
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        braid_output(g, name, ref[i]);
    }
    braid_plan *p;
    braid_exec *e = compile_exec(g, &p);
    cr_assert_eq(braid_exec_variable_count(e), 4);
    float got[6], want[6];
    const char *names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        braid_output_binding o = {name, want, sizeof want};
        cr_assert_eq(braid_run(e, NULL, 0, &o, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_exec_variable_read(e, names[i], got, sizeof got),
                     BRAID_OK);
        cr_assert_eq(memcmp(got, want, sizeof got), 0, "initializer %s",
                     names[i]);
    }
    cr_assert_eq(braid_exec_variable_read(e, "d", got, sizeof got), BRAID_OK);
    cr_assert_eq(memcmp(got, data, sizeof got), 0);
    /* a write is seen by the next run */
    float nw[6] = {-1, -2, -3, -4, -5, -6}, o0[6];
    cr_assert_eq(braid_exec_variable_write(e, "a", nw, sizeof nw), BRAID_OK);
    braid_output_binding o = {"o0", o0, sizeof o0};
    cr_assert_eq(braid_run(e, NULL, 0, &o, 1), BRAID_OK);
    cr_assert_eq(memcmp(o0, nw, sizeof nw), 0);
    /* errors name the variable */
    cr_assert_eq(braid_exec_variable_read(e, "nope", got, sizeof got),
                 BRAID_ERR_NOT_FOUND);
    cr_assert(strstr(braid_last_error(), "nope"));
    cr_assert_eq(braid_exec_variable_read(e, "a", got, 4), BRAID_ERR_SHAPE);
    cr_assert(strstr(braid_last_error(), "\"a\""));
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A graph with variables w1 [r,c] and w2 [c] (and an assign to w1). */
static braid_graph *ckpt_graph(int64_t r, int64_t c) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor w1 = braid_variable(g, "w1", BRAID_F32, 2, DIMS(r, c),
                                     braid_init_normal(1, 0, 1));
    braid_tensor w2 = braid_variable(g, "w2", BRAID_F64, 1, DIMS(c),
                                     braid_init_uniform(2, 0, 1));
    braid_assign(g, w1, braid_add(g, w1, braid_cast(g, w2, BRAID_F32)));
    braid_output(g, "y", braid_mul(g, w1, w1));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

Test(state, checkpoint_round_trip_and_errors) {
    char path[64], bad[64];
    snprintf(path, sizeof path, "/tmp/braid_ckpt_%d.safetensors",
             (int)getpid());
    snprintf(bad, sizeof bad, "/tmp/braid_ckpt_bad_%d.safetensors",
             (int)getpid());
    braid_graph *g = ckpt_graph(3, 5);
    braid_plan *p;
    braid_exec *e = compile_exec(g, &p);
    float y[15], before[15], after[15];
    braid_output_binding o = {"y", y, sizeof y};
    cr_assert_eq(braid_run(e, NULL, 0, &o, 1), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_exec_variable_read(e, "w1", before, sizeof before),
                 BRAID_OK);
    cr_assert_eq(braid_exec_save(e, path), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_run(e, NULL, 0, &o, 1), BRAID_OK);
    cr_assert_eq(braid_exec_variable_read(e, "w1", after, sizeof after),
                 BRAID_OK);
    cr_assert_neq(memcmp(before, after, sizeof after), 0);
    cr_assert_eq(braid_exec_load(e, path), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_variable_read(e, "w1", after, sizeof after),
                 BRAID_OK);
    cr_assert_eq(memcmp(before, after, sizeof after), 0);
    /* the file is what numpy/safetensors readers expect */
    FILE *f = fopen(path, "rb");
    unsigned char hdr[8];
    cr_assert_eq(fread(hdr, 1, 8, f), 8);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++)
        hl |= (uint64_t)hdr[i] << (8 * i);
    char *json = calloc(1, hl + 1);
    cr_assert_eq(fread(json, 1, hl, f), hl);
    fclose(f);
    cr_assert_eq(hl % 8, 0);
    cr_assert(strstr(json, "\"w1\":{\"dtype\":\"F32\",\"shape\":[3,5],\"data_"
                           "offsets\":[0,60]}"),
              "%s", json);
    cr_assert(strstr(json, "\"w2\":{\"dtype\":\"F64\",\"shape\":[5],\"data_"
                           "offsets\":[60,100]}"),
              "%s", json);
    free(json);
    /* a plan with other shapes refuses the file, naming the variable */
    braid_graph *g2 = ckpt_graph(3, 4);
    braid_plan *p2;
    braid_exec *e2 = compile_exec(g2, &p2);
    cr_assert_eq(braid_exec_load(e2, path), BRAID_ERR_SHAPE);
    cr_assert(strstr(braid_last_error(), "w1"), "%s", braid_last_error());
    /* a file missing a variable, or holding an extra one */
    braid_graph *g3 = braid_graph_new(NULL);
    braid_tensor a =
        braid_variable(g3, "w1", BRAID_F32, 2, DIMS(3, 5), braid_init_fill(0));
    braid_output(g3, "y", braid_neg(g3, a));
    braid_plan *p3;
    braid_exec *e3 = compile_exec(g3, &p3);
    cr_assert_eq(braid_exec_load(e3, path), BRAID_ERR_NOT_FOUND);
    cr_assert(strstr(braid_last_error(), "w2"), "%s", braid_last_error());
    cr_assert_eq(braid_exec_save(e3, bad), BRAID_OK);
    cr_assert_eq(braid_exec_load(e, bad), BRAID_ERR_NOT_FOUND);
    cr_assert(strstr(braid_last_error(), "w2"), "%s", braid_last_error());
    /* corrupt: truncated, and a header length past the end */
    f = fopen(bad, "wb");
    fwrite("\xff\xff\xff\x7f\0\0\0\0{}", 1, 10, f);
    fclose(f);
    cr_assert_eq(braid_exec_load(e, bad), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), bad), "%s", braid_last_error());
    f = fopen(bad, "wb");
    fwrite("\x10\0\0\0\0\0\0\0{\"w1\":{\"dtype\"", 1, 22, f);
    fclose(f);
    cr_assert_eq(braid_exec_load(e, bad), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert_eq(braid_exec_variable_read(e, "w1", after, sizeof after),
                 BRAID_OK);
    cr_assert_eq(memcmp(before, after, sizeof after), 0, "nothing changed");
    unlink(path);
    unlink(bad);
    braid_exec_free(e), braid_exec_free(e2), braid_exec_free(e3);
    braid_plan_free(p), braid_plan_free(p2), braid_plan_free(p3);
    braid_graph_free(g), braid_graph_free(g2), braid_graph_free(g3);
}

Test(state, builder_errors) {
    struct {
        int which;
        const char *msg;
    } cases[] = {{0, "not a variable"},
                 {1, "value is"},
                 {2, "already assigned"},
                 {3, "is an assign"},
                 {4, "duplicate variable"}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor v =
            braid_variable(g, "v", BRAID_F32, 1, DIMS(4), braid_init_fill(0));
        braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
        switch (cases[k].which) {
        case 0:
            braid_assign(g, x, v);
            break;
        case 1:
            braid_assign(g, v, braid_input(g, "y", BRAID_F32, 1, DIMS(5)));
            break;
        case 2:
            braid_assign(g, v, x), braid_assign(g, v, x);
            break;
        case 3:
            braid_neg(g, braid_assign(g, v, x));
            break;
        default:
            braid_variable(g, "v", BRAID_F32, 1, DIMS(4), braid_init_fill(0));
        }
        cr_assert_neq(braid_graph_status(g), BRAID_OK, "case %zu", k);
        cr_assert(strstr(braid_graph_error(g), cases[k].msg), "case %zu: %s", k,
                  braid_graph_error(g));
        braid_graph_free(g);
    }
}

/* Every initializer kind and an in-place and a copying assign. */
static braid_graph *all_kinds_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    float data[4] = {1, -2, 3.5f, -0.25f};
    braid_tensor a =
        braid_variable(g, "a", BRAID_F32, 1, DIMS(4), braid_init_data(data));
    braid_tensor b =
        braid_variable(g, "b", BRAID_F32, 1, DIMS(4), braid_init_fill(0.5));
    braid_tensor c = braid_variable(g, "c", BRAID_F32, 1, DIMS(4),
                                    braid_init_uniform(9, -1, 3));
    braid_tensor d = braid_variable(g, "d", BRAID_F32, 1, DIMS(4),
                                    braid_init_normal(8, 2, 0.5));
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    braid_assign(g, a, braid_add(g, braid_mul(g, a, x), b)); /* fused */
    braid_assign(g, c, braid_sub(g, c, d));                  /* one op */
    braid_output(g, "y", braid_add(g, braid_add(g, a, b), braid_add(g, c, d)));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* Two runs of e; y of each and the variables after. */
static void two_runs(braid_exec *e, float y[2][4], float vars[4][4]) {
    float x[4] = {0.5f, 2, -1, 3};
    braid_input_binding in = {"x", x, sizeof x};
    for (int r = 0; r < 2; r++) {
        braid_output_binding o = {"y", y[r], sizeof y[r]};
        cr_assert_eq(braid_run(e, &in, 1, &o, 1), BRAID_OK, "%s",
                     braid_last_error());
    }
    const char *names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(braid_exec_variable_read(e, names[i], vars[i], 16),
                     BRAID_OK);
}

Test(state, text_and_plan_file_round_trips) {
    braid_graph *g = all_kinds_graph();
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    cr_assert(strstr(text, "variable f32[4] value=0.5 name=\"b\""), "%s", text);
    cr_assert(strstr(text, "variable f32[4] seed=9 low=-1 high=3 name=\"c\""),
              "%s", text);
    cr_assert(strstr(text, "= assign %"), "%s", text);
    braid_graph *back = braid_graph_parse(text, len, "vars.graph", NULL);
    cr_assert(back && braid_graph_status(back) == BRAID_OK, "%s",
              back ? braid_graph_error(back) : braid_last_error());
    cr_assert(bg_graph_equal(g, back), "%s", text);
    free(text);
    /* hand-written: an initializer is required, and only one */
    const char *bad[] = {
        "braid-graph 1\n%v = variable f32[2] name=\"v\"\noutput \"y\" = %v\n",
        "braid-graph 1\n%v = variable f32[2] value=1 seed=2 mean=0 stddev=1 "
        "name=\"v\"\noutput \"y\" = %v\n",
        "braid-graph 1\n%v = variable f32[2] [1, 2] value=1 name=\"v\"\noutput "
        "\"y\" = %v\n"};
    for (size_t i = 0; i < 3; i++) {
        braid_graph *h =
            braid_graph_parse(bad[i], strlen(bad[i]), "bad.graph", NULL);
        cr_assert(!h || braid_graph_status(h) != BRAID_OK, "case %zu parsed",
                  i);
        cr_assert(strstr(h ? braid_graph_error(h) : braid_last_error(),
                         "initializer"),
                  "case %zu: %s", i,
                  h ? braid_graph_error(h) : braid_last_error());
        braid_graph_free(h);
    }
    /* plan file: the loaded plan's executor starts from the same values
     * and runs the same updates */
    braid_plan *p, *q;
    braid_exec *e = compile_exec(g, &p), *f;
    void *bytes;
    size_t size;
    cr_assert_eq(braid_plan_save_memory(p, &bytes, &size), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_plan_load_memory(bytes, size, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    free(bytes);
    cr_assert_eq(braid_exec_new(q, &f), BRAID_OK, "%s", braid_last_error());
    float y1[2][4], y2[2][4], v1[4][4], v2[4][4];
    two_runs(e, y1, v1);
    two_runs(f, y2, v2);
    cr_assert_eq(memcmp(y1, y2, sizeof y1), 0);
    cr_assert_eq(memcmp(v1, v2, sizeof v1), 0);
    /* and against the reference, twice with state carried */
    float st[4][4], y[4], x[4] = {0.5f, 2, -1, 3};
    const char *names[4] = {"a", "b", "c", "d"};
    braid_input_binding in = {"x", x, sizeof x};
    for (int r = 0; r < 2; r++) {
        braid_input_binding vin[4];
        braid_output_binding vout[4];
        float old[4][4];
        memcpy(old, st, sizeof st);
        for (int i = 0; i < 4; i++) {
            vin[i] = (braid_input_binding){names[i], old[i], 16};
            vout[i] = (braid_output_binding){names[i], st[i], 16};
        }
        braid_output_binding o = {"y", y, sizeof y};
        cr_assert_eq(braid_reference_run_state(g, &in, 1, &o, 1, vin, r ? 4 : 0,
                                               vout, 4),
                     BRAID_OK, "%s", braid_last_error());
        for (int k = 0; k < 4; k++)
            cr_assert_float_eq(y[k], y1[r][k], 1e-5, "run %d y[%d]", r, k);
    }
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            cr_assert_float_eq(st[i][k], v1[i][k], 1e-5, "%s[%d]", names[i], k);
    braid_exec_free(e), braid_exec_free(f);
    braid_plan_free(p), braid_plan_free(q);
    braid_graph_free(g), braid_graph_free(back);
}

/* An output showing the variable itself (and one showing a view of it) is
 * its value before the run's assign, also when the update runs in place. */
Test(state, output_of_an_assigned_variable_is_the_old_value) {
    for (int fused = 0; fused < 2; fused++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor w =
            braid_variable(g, "w", BRAID_F32, 1, DIMS(6), braid_init_fill(1));
        braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1);
        braid_tensor nw = braid_add(g, w, one);
        if (fused) nw = braid_mul(g, nw, braid_fill(g, BRAID_F32, 0, NULL, 2));
        braid_assign(g, w, nw);
        braid_output(g, "w", w);
        braid_output(g, "r", braid_reshape(g, w, 2, DIMS(2, 3)));
        braid_plan *p;
        braid_exec *e = compile_exec(g, &p);
        float want = 1;
        for (int r = 0; r < 3; r++) {
            float out[6], view[6], now[6];
            braid_output_binding o[2] = {{"w", out, sizeof out},
                                         {"r", view, sizeof view}};
            cr_assert_eq(braid_run(e, NULL, 0, o, 2), BRAID_OK, "%s",
                         braid_last_error());
            cr_assert_eq(braid_exec_variable_read(e, "w", now, sizeof now),
                         BRAID_OK);
            float next = fused ? (want + 1) * 2 : want + 1;
            for (int k = 0; k < 6; k++) {
                cr_assert_eq(out[k], want, "fused %d run %d", fused, r);
                cr_assert_eq(view[k], want, "fused %d run %d", fused, r);
                cr_assert_eq(now[k], next, "fused %d run %d", fused, r);
            }
            want = next;
        }
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* Side stores (passes/fuse.c): m ← 0.9·m + g and w ← w − 0.1·m' fuse into
 * one kernel storing m' into m only when nothing else reads m. Read by
 * another node (the sum of 2·m) or shown as an output, m gets its own
 * kernel again. Every case: four runs on fresh random g against a float64
 * model, m' and w each run, the readers seeing m from before the run. */
static int stores_in(const braid_plan *p) {
    const bp_plan *bp = (const bp_plan *)p;
    int n = 0;
    for (uint32_t id = 0; id < bp->res.graph->nnodes; id++) {
        if (bp->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        const bp_program *pr = &bp->res.programs[bp->res.info[id].program];
        for (uint32_t i = 0; i < pr->ninstr; i++)
            n += pr->instr[i].op == BP_INSTR_STORE;
    }
    return n;
}

Test(state, moment_stored_only_when_only_its_update_reads_it) {
    for (int reader = 0; reader < 3; reader++) { /* none, a sum, an output */
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor w = braid_variable(g, "w", BRAID_F32, 1, DIMS(37),
                                        braid_init_uniform(5, -1, 1));
        braid_tensor m = braid_variable(g, "m", BRAID_F32, 1, DIMS(37),
                                        braid_init_uniform(6, -1, 1));
        braid_tensor x = braid_input(g, "g", BRAID_F32, 1, DIMS(37));
        braid_tensor m1 = braid_add(
            g, braid_mul(g, braid_fill(g, BRAID_F32, 0, NULL, 0.9), m), x);
        braid_assign(g, m, m1);
        braid_assign(
            g, w,
            braid_sub(
                g, w,
                braid_mul(g, braid_fill(g, BRAID_F32, 0, NULL, 0.1), m1)));
        int axes[1] = {0};
        if (reader == 1)
            braid_output(
                g, "s",
                braid_sum(g,
                          braid_mul(g, m, braid_fill(g, BRAID_F32, 0, NULL, 2)),
                          1, axes, false));
        if (reader == 2) braid_output(g, "m", m);
        braid_plan *p;
        braid_exec *e = compile_exec(g, &p);
        cr_assert_eq(stores_in(p), reader == 0 ? 1 : 0, "reader %d", reader);
        double wm[37], mm[37];
        float f[37];
        cr_assert_eq(braid_exec_variable_read(e, "w", f, sizeof f), BRAID_OK);
        for (int k = 0; k < 37; k++)
            wm[k] = f[k];
        cr_assert_eq(braid_exec_variable_read(e, "m", f, sizeof f), BRAID_OK);
        for (int k = 0; k < 37; k++)
            mm[k] = f[k];
        for (int r = 0; r < 4; r++) {
            float gx[37], out[37], s = 0;
            ts_fill_random(BRAID_F32, gx, 37, 100 + 10 * reader + r, -1, 1);
            braid_input_binding in = {"g", gx, sizeof gx};
            braid_output_binding o =
                reader == 1 ? (braid_output_binding){"s", &s, 4}
                            : (braid_output_binding){"m", out, sizeof out};
            cr_assert_eq(braid_run(e, &in, 1, &o, reader ? 1 : 0), BRAID_OK,
                         "%s", braid_last_error());
            double sum = 0;
            for (int k = 0; k < 37; k++) {
                sum += 2 * mm[k];
                if (reader == 2)
                    cr_assert(fabs(out[k] - mm[k]) <= 1e-5 * (1 + fabs(mm[k])),
                              "run %d: output m[%d] %.9g, old value %.9g", r, k,
                              out[k], mm[k]);
                mm[k] = 0.9 * mm[k] + gx[k];
                wm[k] -= 0.1 * mm[k];
            }
            if (reader == 1)
                cr_assert(fabs(s - sum) <= 1e-4 * (1 + fabs(sum)),
                          "run %d: sum %.9g, want %.9g", r, s, sum);
            cr_assert_eq(braid_exec_variable_read(e, "m", f, sizeof f),
                         BRAID_OK);
            for (int k = 0; k < 37; k++)
                cr_assert(fabs(f[k] - mm[k]) <= 1e-5 * (1 + fabs(mm[k])),
                          "reader %d run %d: m[%d] %.9g, want %.9g", reader, r,
                          k, f[k], mm[k]);
            cr_assert_eq(braid_exec_variable_read(e, "w", f, sizeof f),
                         BRAID_OK);
            for (int k = 0; k < 37; k++)
                cr_assert(fabs(f[k] - wm[k]) <= 1e-5 * (1 + fabs(wm[k])),
                          "reader %d run %d: w[%d] %.9g, want %.9g", reader, r,
                          k, f[k], wm[k]);
        }
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}
