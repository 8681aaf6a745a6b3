/* runtime/dispatch.c — the dispatcher every executor runs (see dispatch.h):
 * the schedule's tables, and one run's walk over them. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/dispatch.h"

#include <stdlib.h>
#include <string.h>

/* ---- the tables -----------------------------------------------------------
 */

bool br_node_on_device_queue(const bp_plan *p, uint32_t id) {
    uint32_t q = p->res.info[id].queue;
    return q < p->res.nqueues && p->res.queues[q].kind != BP_QUEUE_CPU;
}

static void *zalloc(size_t n, size_t size) {
    return calloc(n ? n : 1, size);
}

static braid_status split_schedule(const bp_plan *p, br_sched *s) {
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (id >= s->n)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "braid_exec_new: scheduled node %u of a "
                                     "%u-node plan",
                                     id, s->n);
        s->on_dev[id] = br_node_on_device_queue(p, id);
        if (s->on_dev[id])
            s->dev_list[s->ndev++] = id;
        else
            s->cpu_list[s->ncpu++] = id;
    }
    return BRAID_OK;
}

/* waits[wstart[id] ..] lists the events node id waits for, recs[...] the
 * ones it records, each in event order. */
static braid_status event_lists(const bp_plan *p, br_sched *s) {
    for (uint32_t k = 0; k < p->res.nevents; k++) {
        const bp_event *ev = &p->res.events[k];
        if (ev->after >= s->n || ev->before >= s->n)
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "braid_exec_new: event %u joins node %u "
                                     "and node %u of a %u-node plan",
                                     k, ev->after, ev->before, s->n);
        s->wstart[ev->before + 1]++;
        s->rstart[ev->after + 1]++;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        s->wstart[i + 1] += s->wstart[i];
        s->rstart[i + 1] += s->rstart[i];
    }
    uint32_t *wfill = zalloc(s->n, sizeof *wfill);
    uint32_t *rfill = zalloc(s->n, sizeof *rfill);
    braid_status st = BRAID_OK;
    if (!wfill || !rfill)
        st = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                               "braid_exec_new: out of memory");
    for (uint32_t k = 0; st == BRAID_OK && k < p->res.nevents; k++) {
        uint32_t a = p->res.events[k].after, b = p->res.events[k].before;
        s->waits[s->wstart[b] + wfill[b]++] = k;
        s->recs[s->rstart[a] + rfill[a]++] = k;
    }
    free(wfill);
    free(rfill);
    return st;
}

braid_status br_sched_build(const bp_plan *p, br_sched *s) {
    memset(s, 0, sizeof *s);
    s->plan = p;
    s->n = p->res.ninfo;
    s->on_dev = zalloc(s->n, sizeof *s->on_dev);
    s->dev_list = zalloc(p->res.nschedule, sizeof *s->dev_list);
    s->cpu_list = zalloc(p->res.nschedule, sizeof *s->cpu_list);
    s->wstart = zalloc(s->n + 1, sizeof *s->wstart);
    s->rstart = zalloc(s->n + 1, sizeof *s->rstart);
    s->waits = zalloc(p->res.nevents, sizeof *s->waits);
    s->recs = zalloc(p->res.nevents, sizeof *s->recs);
    if (!s->on_dev || !s->dev_list || !s->cpu_list || !s->wstart ||
        !s->rstart || !s->waits || !s->recs)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory for the "
                                 "schedule's tables (%u nodes)",
                                 s->n);
    braid_status st = split_schedule(p, s);
    return st == BRAID_OK ? event_lists(p, s) : st;
}

void br_sched_free(br_sched *s) {
    free(s->on_dev);
    free(s->dev_list);
    free(s->cpu_list);
    free(s->wstart);
    free(s->rstart);
    free(s->waits);
    free(s->recs);
    memset(s, 0, sizeof *s);
}

/* ---- a run ------------------------------------------------------------------
 */

/* Every CPU producer of device node id has run. */
static bool dev_ready(const br_dispatch *d, const bp_plan *p, uint32_t id) {
    const br_sched *s = d->sched;
    for (uint32_t k = s->wstart[id]; k < s->wstart[id + 1]; k++) {
        uint32_t a = p->res.events[s->waits[k]].after;
        if (!s->on_dev[a] && !d->cpu_done[a]) return false;
    }
    return true;
}

/* Issues device nodes from *gi on while they are ready. *ok counts the
 * members of the group at *gi known ready (readiness only grows during a
 * run), so a large group (a CUDA graph replay) is not rescanned after
 * every CPU node. */
static braid_status issue_ready(const br_dispatch *d, const bp_plan *p,
                                uint32_t *gi, uint32_t *ok) {
    const br_sched *s = d->sched;
    while (*gi < s->ndev) {
        uint32_t m = d->ops->span(d->queues, *gi);
        if (m == 0 || m > s->ndev - *gi) m = 1;
        while (*ok < m && dev_ready(d, p, s->dev_list[*gi + *ok]))
            (*ok)++;
        if (*ok < m) return BRAID_OK; /* waits for a CPU node */
        braid_status r = d->ops->issue(d->queues, &s->dev_list[*gi], m);
        if (r != BRAID_OK) return r;
        *gi += m;
        *ok = 0;
    }
    return BRAID_OK;
}

/* Waits for CPU node id's device producers, then computes it. */
static braid_status run_cpu(const br_dispatch *d, const bp_plan *p,
                            uint32_t id) {
    const br_sched *s = d->sched;
    if (d->ops && d->ops->host_turn) d->ops->host_turn(d->queues);
    for (uint32_t k = s->wstart[id]; k < s->wstart[id + 1]; k++) {
        uint32_t ev = s->waits[k], a = p->res.events[ev].after;
        if (!s->on_dev[a]) continue; /* a CPU producer: it has run */
        braid_status r = d->ops->host_wait(d->queues, a, ev, id);
        if (r != BRAID_OK) return r;
    }
    braid_status r = d->run_cpu(d->cpu_ctx, id);
    d->cpu_done[id] = true;
    return r;
}

braid_status br_dispatch_run(const br_dispatch *d) {
    const br_sched *s = d->sched;
    const bp_plan *p = s->plan;
    uint32_t gi = 0, ci = 0, ok = 0;
    memset(d->cpu_done, 0, s->n * sizeof *d->cpu_done);
    if (s->ndev > 0 && !d->ops)
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_run: node %u is on a device queue "
                                 "but the executor has no device backend",
                                 s->dev_list[0]);
    braid_status r = BRAID_OK;
    while (r == BRAID_OK && (gi < s->ndev || ci < s->ncpu)) {
        r = issue_ready(d, p, &gi, &ok);
        if (r != BRAID_OK) break;
        if (ci < s->ncpu)
            r = run_cpu(d, p, s->cpu_list[ci++]);
        else if (gi < s->ndev)
            r = bg_set_last_error(BRAID_ERR_INTERNAL,
                                  "braid_run: node %u waits for a CPU node "
                                  "that never runs",
                                  s->dev_list[gi]);
    }
    return r;
}
