/* runtime/cpu/threadpool.c — a persistent pthread pool with a parallel-for.
 *
 * Workers sleep on a condition variable between jobs. A job is one
 * parallel-for: the caller publishes (fn, ctx, n, chunk), wakes the workers,
 * claims chunks itself from a shared atomic counter, and waits until every
 * worker has left the job so ctx (usually on the caller's stack) can go.
 *
 * While profiling (br_pool_trace), each worker notes its share of a job,
 * from its first chunk's start to its last chunk's end, in its own buffer;
 * the caller reads the buffers between jobs (br_pool_trace_drain), after
 * the job's hand-back under the mutex has made the writes visible. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/profile/profile.h"
#include "runtime/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* Shares of jobs one worker ran since the last drain. */
#define BR_TRACE_MAX 64
typedef struct br_trace_buf {
    int64_t begin[BR_TRACE_MAX]; /* first chunk's start (ns) */
    int64_t end[BR_TRACE_MAX];   /* last chunk's end (ns) */
    uint32_t n;                  /* entries used (when full, the last one
                                    grows to cover later shares) */
} br_trace_buf;

/* What a worker thread is told at start. */
typedef struct br_worker_arg {
    struct br_pool *pool; /* its pool */
    int index;            /* 1 ... nworkers */
} br_worker_arg;

struct br_pool {
    int nthreads;        /* threads per job, the caller included */
    int nworkers;        /* started worker threads (nthreads - 1 or fewer) */
    pthread_t *workers;  /* their handles */
    pthread_mutex_t mu;  /* guards everything below but next */
    pthread_cond_t wake; /* a new job (or stop) was published */
    pthread_cond_t idle; /* the last worker left the current job */
    uint64_t generation; /* bumped for every job */
    int busy;            /* workers still inside the current job */
    bool stop;           /* workers exit */
    bool in_job;         /* a parallel-for is running (nested calls run
                            inline) */
    br_range_fn fn;      /* the current job */
    void *ctx;           /* its context */
    int64_t n;           /* its range [0, n) */
    int64_t chunk;       /* indices claimed at a time */
    atomic_int_fast64_t next; /* first unclaimed index */
    br_worker_arg *args;      /* per worker: its start argument */
    br_trace_buf *trace;      /* per worker (index 1 ...; 0 unused) while
                                 profiling, else NULL */
    br_trace_buf *job_trace;  /* trace as the current job was published */
};

/* Notes worker w's share of a job (buffer full: the last share grows). */
static void note_share(br_trace_buf *t, int64_t begin, int64_t end) {
    if (t->n < BR_TRACE_MAX) {
        t->begin[t->n] = begin;
        t->end[t->n++] = end;
    } else {
        t->end[BR_TRACE_MAX - 1] = end;
    }
}

/* Claims and runs chunks until none are left. trace: this worker's buffer
 * when profiling, else NULL (then the loop is the plain one). */
static void run_chunks(br_pool *p, br_range_fn fn, void *ctx, int64_t n,
                       int64_t chunk, br_trace_buf *trace) {
    int64_t first = 0;
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, chunk);
        if (b >= n) break;
        if (trace && !first) first = br_prof_now_ns();
        fn(ctx, b, n - b < chunk ? n : b + chunk);
    }
    if (trace && first) note_share(trace, first, br_prof_now_ns());
}

static void *worker_main(void *arg) {
    br_worker_arg *wa = arg;
    br_pool *p = wa->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        br_range_fn fn = p->fn;
        void *ctx = p->ctx;
        int64_t n = p->n, chunk = p->chunk;
        br_trace_buf *trace = p->job_trace ? &p->job_trace[wa->index] : NULL;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p, fn, ctx, n, chunk, trace);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

br_pool *br_pool_new(int nthreads) {
    br_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nthreads = nthreads > 0 ? nthreads : online_cores();
    atomic_init(&p->next, 0);
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0 ||
        pthread_cond_init(&p->idle, NULL) != 0) {
        /* Destroying an uninitialised condvar is undefined: keep it simple
         * and leak nothing but what was set up. */
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    if (p->nthreads > 1) {
        p->workers = calloc((size_t)p->nthreads - 1, sizeof *p->workers);
        p->args = calloc((size_t)p->nthreads - 1, sizeof *p->args);
        if (!p->workers || !p->args) {
            br_pool_free(p);
            return NULL;
        }
    }
    for (int i = 0; i < p->nthreads - 1; i++) {
        p->args[i] = (br_worker_arg){p, i + 1};
        if (pthread_create(&p->workers[i], NULL, worker_main, &p->args[i]) !=
            0)
            break; /* run with the workers we have */
        p->nworkers++;
    }
    p->nthreads = p->nworkers + 1;
    return p;
}

void br_pool_free(br_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p->args);
    free(p->trace);
    free(p);
}

braid_status br_pool_trace(br_pool *p, bool on) {
    if (!p) return BRAID_OK;
    if (!on) {
        free(p->trace);
        p->trace = NULL;
        return BRAID_OK;
    }
    if (p->trace) return BRAID_OK;
    p->trace = calloc((size_t)p->nworkers + 1, sizeof *p->trace);
    if (!p->trace)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_set_profiling: out of memory "
                                 "for the workers' timings");
    return BRAID_OK;
}

void br_pool_trace_drain(br_pool *p, br_pool_span_fn fn, void *ctx) {
    if (!p || !p->trace) return;
    for (int w = 1; w <= p->nworkers; w++) {
        br_trace_buf *t = &p->trace[w];
        for (uint32_t k = 0; fn && k < t->n; k++)
            fn(ctx, w, t->begin[k], t->end[k]);
        t->n = 0;
    }
}

int br_pool_threads(const br_pool *p) {
    return p ? p->nthreads : 1;
}

void br_parallel_for(br_pool *p, int64_t n, int64_t grain, br_range_fn fn,
                     void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!p || p->nworkers == 0 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (p->in_job) { /* called from inside a job: no nesting */
        pthread_mutex_unlock(&p->mu);
        fn(ctx, 0, n);
        return;
    }
    /* About four chunks per thread balance uneven chunks without making
     * the shared counter hot. */
    int64_t chunk = n / ((int64_t)p->nthreads * 4);
    if (chunk < grain) chunk = grain;
    p->in_job = true;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    p->job_trace = p->trace;
    atomic_store(&p->next, 0);
    p->busy = p->nworkers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_chunks(p, fn, ctx, n, chunk, NULL); /* the caller: its own track */

    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    p->in_job = false;
    pthread_mutex_unlock(&p->mu);
}
