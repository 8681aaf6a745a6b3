/* runtime/threadpool.c — a persistent pthread pool with a parallel-for.
 *
 * Workers sleep on a condition variable between jobs. A job is one
 * parallel-for: the caller publishes (fn, ctx, n, chunk), wakes the workers,
 * claims chunks itself from a shared atomic counter, and waits until every
 * worker has left the job so ctx (usually on the caller's stack) can go. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

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
};

/* Claims and runs chunks until none are left. */
static void run_chunks(br_pool *p, br_range_fn fn, void *ctx, int64_t n,
                       int64_t chunk) {
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, chunk);
        if (b >= n) return;
        fn(ctx, b, n - b < chunk ? n : b + chunk);
    }
}

static void *worker_main(void *arg) {
    br_pool *p = arg;
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
        pthread_mutex_unlock(&p->mu);
        run_chunks(p, fn, ctx, n, chunk);
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
        if (!p->workers) {
            br_pool_free(p);
            return NULL;
        }
    }
    for (int i = 0; i < p->nthreads - 1; i++) {
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0)
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
    free(p);
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
    atomic_store(&p->next, 0);
    p->busy = p->nworkers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_chunks(p, fn, ctx, n, chunk);

    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    p->in_job = false;
    pthread_mutex_unlock(&p->mu);
}
