/* runtime/emulate.c — device queues emulated on the host, for tests
 * (br_exec_new_emulated): the CI implementation of dispatch.h's queue
 * interface, beside the CUDA backend's.
 *
 * An issued node is only appended to its queue; nothing runs until the
 * emulator takes a step: it picks a queue at random (from a seeded
 * generator) and runs its head if every device node the head waits for
 * through an event has run. Steps happen whenever the dispatcher issues
 * work or is about to run a CPU node, as many as the run's pace draws
 * (each run draws one: lazy, none until the host waits; a few at a time;
 * eager, every ready node at once), and as many as needed when the host
 * waits for a node or the run ends. So
 * device nodes interleave with each other and with CPU nodes in any order
 * that queue order, events and the dispatcher's own host order allow: a
 * missing event or an unsafe buffer reuse shows up as wrong results, as it
 * would on a GPU, under the very dispatcher a GPU runs. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/dispatch.h"

#include <stdlib.h>
#include <string.h>

struct br_emu {
    const bp_plan *p;  /* the plan; not owned */
    const br_sched *s; /* its schedule; not owned */
    uint64_t rng;      /* generator state */
    uint32_t pace;     /* this run's: 0 lazy (queues move only when the
                          host waits), 1 and 2 a few steps at a time,
                          3 eager (every ready node runs at once) */
    br_cpu_fn run_dev; /* computes a device node on the host */
    void *ctx;         /* passed to run_dev */
    uint32_t nq;       /* queues (plan->nqueues, at least 1) */
    uint32_t *qstart;  /* per queue: its first slot in fifo (nq + 1) */
    uint32_t *head;    /* per queue: next slot to run */
    uint32_t *tail;    /* per queue: next slot to fill */
    uint32_t *fifo;    /* issued node ids, per queue in issue order */
    bool *done;        /* per node: has run this run */
};

/* splitmix64 */
static uint64_t next_random(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static uint32_t queue_of(const br_emu *m, uint32_t id) {
    uint32_t q = m->p->res.info[id].queue;
    return q < m->nq ? q : 0;
}

br_emu *br_emu_new(const bp_plan *p, const br_sched *sched, uint64_t seed,
                   br_cpu_fn run_dev, void *ctx) {
    br_emu *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    *m = (br_emu){.p = p,
                  .s = sched,
                  .rng = seed,
                  .run_dev = run_dev,
                  .ctx = ctx,
                  .nq = p->res.nqueues ? p->res.nqueues : 1};
    m->qstart = calloc(m->nq + 1, sizeof *m->qstart);
    m->head = calloc(m->nq, sizeof *m->head);
    m->tail = calloc(m->nq, sizeof *m->tail);
    m->fifo = calloc(sched->ndev + 1, sizeof *m->fifo);
    m->done = calloc(sched->n + 1, sizeof *m->done);
    if (!m->qstart || !m->head || !m->tail || !m->fifo || !m->done) {
        br_emu_free(m);
        return NULL;
    }
    for (uint32_t i = 0; i < sched->ndev; i++)
        m->qstart[queue_of(m, sched->dev_list[i]) + 1]++;
    for (uint32_t q = 0; q < m->nq; q++)
        m->qstart[q + 1] += m->qstart[q];
    return m;
}

void br_emu_free(br_emu *m) {
    if (!m) return;
    free(m->qstart);
    free(m->head);
    free(m->tail);
    free(m->fifo);
    free(m->done);
    free(m);
}

void br_emu_begin(br_emu *m) {
    memcpy(m->head, m->qstart, m->nq * sizeof *m->head);
    memcpy(m->tail, m->qstart, m->nq * sizeof *m->tail);
    memset(m->done, 0, m->s->n * sizeof *m->done);
    m->pace = (uint32_t)(next_random(&m->rng) % 4);
}

/* Every device node id waits for through an event has run (CPU producers
 * have: the dispatcher issues a node only after them). */
static bool ready(const br_emu *m, uint32_t id) {
    const br_sched *s = m->s;
    for (uint32_t k = s->wstart[id]; k < s->wstart[id + 1]; k++) {
        uint32_t a = m->p->res.events[s->waits[k]].after;
        if (s->on_dev[a] && !m->done[a]) return false;
    }
    return true;
}

/* Runs the head of a queue chosen at random among those that can
 * proceed; false when none can. */
static bool step(br_emu *m) {
    uint32_t start = (uint32_t)(next_random(&m->rng) % m->nq);
    for (uint32_t k = 0; k < m->nq; k++) {
        uint32_t q = (start + k) % m->nq;
        if (m->head[q] == m->tail[q] || !ready(m, m->fifo[m->head[q]]))
            continue;
        uint32_t id = m->fifo[m->head[q]++];
        /* device nodes have no run errors: checked casts, the only
         * kernels that report one, are placed on the cpu (passes/place.c)
         * and refused on a device by the plan verifier */
        (void)m->run_dev(m->ctx, id);
        m->done[id] = true;
        return true;
    }
    return false;
}

/* Some steps, as many as this run's pace draws. */
static void wander(br_emu *m) {
    uint64_t n = m->pace == 3   ? UINT64_MAX
                 : m->pace == 0 ? 0
                                : next_random(&m->rng) % (2 * m->pace + 1);
    while (n-- > 0 && step(m)) {
    }
}

static uint32_t emu_span(void *q, uint32_t i) {
    (void)q;
    (void)i;
    return 1;
}

static braid_status emu_issue(void *q, const uint32_t *ids, uint32_t n) {
    br_emu *m = q;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = queue_of(m, ids[i]);
        if (m->tail[k] >= m->qstart[k + 1])
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "emulation: node %u issued twice", ids[i]);
        m->fifo[m->tail[k]++] = ids[i];
    }
    wander(m);
    return BRAID_OK;
}

static braid_status emu_host_wait(void *q, uint32_t producer, uint32_t ev,
                                  uint32_t consumer) {
    br_emu *m = q;
    (void)ev;
    while (!m->done[producer])
        if (!step(m))
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "emulation: cpu node %u waits for node "
                                     "%u, which no queue can reach (the "
                                     "plan's events form a cycle)",
                                     consumer, producer);
    return BRAID_OK;
}

static void emu_host_turn(void *q) {
    wander(q);
}

const br_queue_ops *br_emu_ops(void) {
    static const br_queue_ops ops = {emu_span, emu_issue, emu_host_wait,
                                     emu_host_turn};
    return &ops;
}

braid_status br_emu_finish(br_emu *m) {
    for (;;) {
        bool left = false;
        for (uint32_t q = 0; q < m->nq && !left; q++)
            left = m->head[q] != m->tail[q];
        if (!left) return BRAID_OK;
        if (!step(m))
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "emulation: no queue can proceed (the "
                                     "plan's events form a cycle)");
    }
}
