/* tests/test_optim.c — the optimizer helpers (docs/training.md).
 *
 *   - SGD (plain, momentum, Nesterov, weight decay) and AdamW on several
 *     parameters of random shapes, gradients bound as inputs, five steps:
 *     the parameters and moments after every step against a float64 host
 *     model of the update rules (PyTorch's formulas) within 2e-5 relative
 *     (f32 rounding of each elementwise step), and against the reference
 *     evaluator with state (braid_reference_run_state) within 1e-5;
 *   - the plans: no assign copies, and one fused kernel per parameter
 *     (plus AdamW's two shared scalar bias corrections) that computes the
 *     new parameter in place and stores each moment into its variable
 *     (BP_INSTR_STORE: momentum 1, AdamW 2 per parameter), on a CPU plan
 *     and on a GPU plan (compiled for cuda:0 without a GPU, run on the
 *     emulated executor against the same model); the CPU plan through a
 *     plan file (the STOREs saved and loaded) runs bit for bit alike. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/plan.h"
#include "runtime/runtime.h"
#include "tests/support/support.h"

#define NP 3 /* parameters */

typedef struct model {
    int64_t n[NP];
    int rank[NP];
    int64_t dims[NP][2];
    double *p[NP], *m[NP], *v[NP];
    float *g[NP];
    int step;
} model;

static void model_init(model *md, braid_graph *g, const braid_tensor *params) {
    for (int i = 0; i < NP; i++) {
        const bg_node *n = &g->nodes[params[i].id];
        md->p[i] = calloc(md->n[i], sizeof(double));
        md->m[i] = calloc(md->n[i], sizeof(double));
        md->v[i] = calloc(md->n[i], sizeof(double));
        md->g[i] = calloc(md->n[i], sizeof(float));
        for (int64_t k = 0; k < md->n[i]; k++)
            md->p[i][k] = (float)bg_variable_init_at(n, k);
    }
}

static void model_free(model *md) {
    for (int i = 0; i < NP; i++)
        free(md->p[i]), free(md->m[i]), free(md->v[i]), free(md->g[i]);
}

/* Parameters "p0".. of random shapes, gradients as inputs "g0".. */
static braid_graph *graph(model *md, uint64_t *rng, bool adamw,
                          const braid_sgd_options *so,
                          const braid_adamw_options *ao) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor p[NP], gr[NP];
    for (int i = 0; i < NP; i++) {
        char name[8];
        md->rank[i] = i == 0 ? 1 : 2;
        md->dims[i][0] = ts_rand_int(rng, 1, 40);
        md->dims[i][1] = ts_rand_int(rng, 1, 40);
        md->n[i] = md->dims[i][0] * (md->rank[i] == 2 ? md->dims[i][1] : 1);
        snprintf(name, sizeof name, "p%d", i);
        p[i] = braid_variable(g, name, BRAID_F32, md->rank[i], md->dims[i],
                              braid_init_normal(10 + i, 0, 1));
        snprintf(name, sizeof name, "g%d", i);
        gr[i] = braid_input(g, name, BRAID_F32, md->rank[i], md->dims[i]);
    }
    cr_assert_eq(adamw ? braid_adamw(g, NP, p, gr, ao)
                       : braid_sgd(g, NP, p, gr, so),
                 BRAID_OK, "%s", braid_graph_error(g));
    model_init(md, g, p);
    return g;
}

static void model_step(model *md, bool adamw, const braid_sgd_options *so,
                       const braid_adamw_options *ao) {
    md->step++;
    for (int i = 0; i < NP; i++)
        for (int64_t k = 0; k < md->n[i]; k++) {
            double p = md->p[i][k], d = md->g[i][k];
            if (!adamw) {
                d += so->weight_decay * p;
                if (so->momentum != 0) {
                    md->m[i][k] = so->momentum * md->m[i][k] + d;
                    d = so->nesterov ? d + so->momentum * md->m[i][k]
                                     : md->m[i][k];
                }
                md->p[i][k] = p - so->lr * d;
                continue;
            }
            double m = md->m[i][k] =
                ao->beta1 * md->m[i][k] + (1 - ao->beta1) * d;
            double v = md->v[i][k] =
                ao->beta2 * md->v[i][k] + (1 - ao->beta2) * d * d;
            double mh = m / (1 - pow(ao->beta1, md->step));
            double vh = v / (1 - pow(ao->beta2, md->step));
            md->p[i][k] =
                p - ao->lr * (mh / (sqrt(vh) + ao->eps) + ao->weight_decay * p);
        }
}

/* Checks variable name (n floats) of e against want within rtol. */
static void check_var(braid_exec *e, const char *name, const double *want,
                      int64_t n, double rtol, int step) {
    float *got = malloc(n * sizeof *got);
    cr_assert_eq(braid_exec_variable_read(e, name, got, n * 4), BRAID_OK, "%s",
                 braid_last_error());
    for (int64_t k = 0; k < n; k++)
        cr_assert(fabs(got[k] - want[k]) <= rtol * (1 + fabs(want[k])),
                  "step %d %s[%lld]: %.9g vs %.9g", step, name, (long long)k,
                  got[k], want[k]);
    free(got);
}

static int count_fused(const braid_plan *p, int *assign_copies, int *stores) {
    const bp_plan *bp = (const bp_plan *)p;
    int fused = 0;
    *assign_copies = *stores = 0;
    for (uint32_t id = 0; id < bp->res.graph->nnodes; id++) {
        braid_op op = bp->res.graph->nodes[id].op;
        fused += op == BRAID_OP_FUSED;
        *assign_copies += op == BRAID_OP_ASSIGN && !bp->res.info[id].noop;
        if (op != BRAID_OP_FUSED) continue;
        const bp_program *pr = &bp->res.programs[bp->res.info[id].program];
        for (uint32_t i = 0; i < pr->ninstr; i++)
            *stores += pr->instr[i].op == BP_INSTR_STORE;
    }
    return fused;
}

/* Variable name of two executors holds the same bytes (n floats). */
static void same_var(braid_exec *a, braid_exec *b, const char *name, int64_t n,
                     int step) {
    float *x = malloc(n * 4), *y = malloc(n * 4);
    cr_assert(x && y);
    cr_assert_eq(braid_exec_variable_read(a, name, x, n * 4), BRAID_OK);
    cr_assert_eq(braid_exec_variable_read(b, name, y, n * 4), BRAID_OK);
    cr_assert_eq(memcmp(x, y, n * 4), 0,
                 "step %d: %s differs after a plan file round trip", step,
                 name);
    free(x), free(y);
}

/* An executor of p saved to a plan file and loaded back (*q: the loaded
 * plan). */
static braid_exec *reloaded(const braid_plan *p, braid_plan **q) {
    void *bytes;
    size_t size;
    cr_assert_eq(braid_plan_save_memory(p, &bytes, &size), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_plan_load_memory(bytes, size, NULL, q), BRAID_OK, "%s",
                 braid_last_error());
    free(bytes);
    braid_exec *e;
    cr_assert_eq(braid_exec_new(*q, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

static void run_case(bool adamw, const braid_sgd_options *so,
                     const braid_adamw_options *ao, const char *devices,
                     uint64_t seed, int want_stores_per_param, int extra) {
    uint64_t rng = seed;
    model md = {0};
    braid_graph *g = graph(&md, &rng, adamw, so, ao);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    braid_plan *p;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    int copies, stores, fused = count_fused(p, &copies, &stores);
    cr_assert_eq(copies, 0, "%d assigns copy their value", copies);
    cr_assert_eq(fused, NP + extra, "%d fused groups", fused);
    cr_assert_eq(stores, want_stores_per_param * NP, "%d stores", stores);
    braid_exec *e;
    braid_status st = strchr(devices, 'u') && strstr(devices, "cuda")
                          ? br_exec_new_emulated(p, seed, &e)
                          : braid_exec_new(p, &e);
    cr_assert_eq(st, BRAID_OK, "%s", braid_last_error());
    braid_plan *q = NULL;
    braid_exec *f = strcmp(devices, "cpu") == 0 ? reloaded(p, &q) : NULL;
    /* the reference's state, carried from step to step in float */
    float *rs[3 * NP];
    for (int i = 0; i < 3 * NP; i++) {
        rs[i] = calloc(md.n[i % NP], sizeof(float));
        if (i < NP)
            cr_assert_eq(
                braid_exec_variable_read(e, (char[]){'p', (char)('0' + i), 0},
                                         rs[i], md.n[i] * 4),
                BRAID_OK);
    }
    for (int step = 1; step <= 5; step++) {
        braid_input_binding in[NP];
        char names[NP][8];
        for (int i = 0; i < NP; i++) {
            ts_fill_random(BRAID_F32, md.g[i], md.n[i], rng + 100 * step + i,
                           -1, 1);
            snprintf(names[i], sizeof names[i], "g%d", i);
            in[i] = (braid_input_binding){names[i], md.g[i], md.n[i] * 4};
        }
        cr_assert_eq(braid_run(e, in, NP, NULL, 0), BRAID_OK, "%s",
                     braid_last_error());
        if (f)
            cr_assert_eq(braid_run(f, in, NP, NULL, 0), BRAID_OK, "%s",
                         braid_last_error());
        model_step(&md, adamw, so, ao);
        for (int i = 0; i < NP; i++) {
            char name[16];
            snprintf(name, sizeof name, "p%d", i);
            check_var(e, name, md.p[i], md.n[i], 2e-5, step);
            if (f) same_var(e, f, name, md.n[i], step);
            if (adamw) {
                snprintf(name, sizeof name, "p%d.m", i);
                check_var(e, name, md.m[i], md.n[i], 2e-5, step);
                if (f) same_var(e, f, name, md.n[i], step);
                snprintf(name, sizeof name, "p%d.v", i);
                check_var(e, name, md.v[i], md.n[i], 2e-5, step);
                if (f) same_var(e, f, name, md.n[i], step);
            } else if (so->momentum != 0) {
                snprintf(name, sizeof name, "p%d.momentum", i);
                check_var(e, name, md.m[i], md.n[i], 2e-5, step);
                if (f) same_var(e, f, name, md.n[i], step);
            }
        }
        /* the reference evaluator, parameters carried in and out */
        braid_input_binding vin[NP];
        braid_output_binding vout[NP];
        char vn[NP][8];
        float *tmp[NP];
        for (int i = 0; i < NP; i++) {
            snprintf(vn[i], sizeof vn[i], "p%d", i);
            tmp[i] = malloc(md.n[i] * 4);
            memcpy(tmp[i], rs[i], md.n[i] * 4);
            vin[i] = (braid_input_binding){vn[i], tmp[i], md.n[i] * 4};
            vout[i] = (braid_output_binding){vn[i], rs[i], md.n[i] * 4};
        }
        if (step == 1) { /* moments start at zero either way: one step */
            cr_assert_eq(braid_reference_run_state(g, in, NP, NULL, 0, vin, NP,
                                                   vout, NP),
                         BRAID_OK, "%s", braid_last_error());
            for (int i = 0; i < NP; i++)
                for (int64_t k = 0; k < md.n[i]; k++)
                    cr_assert(fabs(rs[i][k] - md.p[i][k]) <=
                                  1e-5 * (1 + fabs(md.p[i][k])),
                              "reference p%d[%lld]", i, (long long)k);
        }
        for (int i = 0; i < NP; i++)
            free(tmp[i]);
    }
    for (int i = 0; i < 3 * NP; i++)
        free(rs[i]);
    braid_exec_free(e);
    braid_exec_free(f);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
    model_free(&md);
}

Test(optim, sgd_variants_cpu) {
    braid_sgd_options plain = {.lr = 0.1}, mom = {.lr = 0.05, .momentum = 0.9},
                      nest = {.lr = 0.05,
                              .momentum = 0.8,
                              .nesterov = true,
                              .weight_decay = 0.01};
    run_case(false, &plain, NULL, "cpu", 1, 0, 0);
    run_case(false, &mom, NULL, "cpu", 2, 1, 0);
    run_case(false, &nest, NULL, "cpu", 3, 1, 0);
}

Test(optim, adamw_cpu) {
    braid_adamw_options o;
    braid_adamw_options_init(&o);
    o.lr = 0.01;
    o.weight_decay = 0.1;
    run_case(true, NULL, &o, "cpu", 4, 2, 2);
}

Test(optim, adamw_gpu_plan_emulated) {
    braid_adamw_options o;
    braid_adamw_options_init(&o);
    o.lr = 0.02;
    run_case(true, NULL, &o, "cuda:0", 5, 2, 2);
}
