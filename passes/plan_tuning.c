/* passes/plan_tuning.c — the plan's tuning records (passes/plan.h,
 * bp_tuning): what executors chose for its conv nodes per GPU model and
 * cuDNN version. Executors made from one plan (const to them) may note
 * choices from several threads at once, so every access takes one
 * process-wide lock; the records are few (one per conv node and GPU
 * model) and touched only at executor creation and plan save. */
#include "passes/passes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t tune_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_key(const bp_conv_choice *a, uint32_t node,
                     const char *device, int32_t cc, int32_t cudnn) {
    return a->node == node && a->cc == cc && a->cudnn == cudnn &&
           strncmp(a->device, device, BP_TUNE_DEVICE_MAX) == 0;
}

bool bp_tuning_find(const bp_plan *p, uint32_t node, const char *device,
                    int32_t cc, int32_t cudnn, bp_conv_choice *out) {
    bool hit = false;
    pthread_mutex_lock(&tune_lock);
    const bp_tuning *t = &p->tune;
    for (uint32_t i = 0; i < t->nconv && !hit; i++)
        if (same_key(&t->conv[i], node, device, cc, cudnn)) {
            *out = t->conv[i];
            hit = true;
        }
    pthread_mutex_unlock(&tune_lock);
    return hit;
}

bool bp_tuning_note(const bp_plan *cp, const bp_conv_choice *c) {
    /* the records are the part of a plan executors write (plan.h) */
    bp_tuning *t = (bp_tuning *)&cp->tune;
    bool ok = true;
    pthread_mutex_lock(&tune_lock);
    uint32_t i = 0;
    while (i < t->nconv &&
           !same_key(&t->conv[i], c->node, c->device, c->cc, c->cudnn))
        i++;
    if (i == t->nconv) {
        ok = bp_grow((void **)&t->conv, t->nconv, &t->cap, sizeof *t->conv,
                     "a tuning record");
        if (ok) t->nconv++;
    }
    if (ok) {
        t->conv[i] = *c;
        t->conv[i].device[BP_TUNE_DEVICE_MAX - 1] = '\0';
    }
    pthread_mutex_unlock(&tune_lock);
    return ok;
}

int bp_tuning_cmp(const bp_conv_choice *x, const bp_conv_choice *y) {
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    int d = strncmp(x->device, y->device, BP_TUNE_DEVICE_MAX);
    if (d != 0) return d;
    if (x->cc != y->cc) return x->cc < y->cc ? -1 : 1;
    return (x->cudnn > y->cudnn) - (x->cudnn < y->cudnn);
}

static int by_key(const void *a, const void *b) {
    return bp_tuning_cmp(a, b);
}

bool bp_tuning_snapshot(const bp_plan *p, bp_conv_choice **out, uint32_t *n) {
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&tune_lock);
    uint32_t m = p->tune.nconv;
    bp_conv_choice *c = m ? malloc(m * sizeof *c) : NULL;
    if (c) memcpy(c, p->tune.conv, m * sizeof *c);
    pthread_mutex_unlock(&tune_lock);
    if (m && !c) return false;
    if (c) qsort(c, m, sizeof *c, by_key);
    *out = c;
    *n = m;
    return true;
}

void bp_tuning_free(bp_tuning *t) {
    free(t->conv);
    memset(t, 0, sizeof *t);
}
