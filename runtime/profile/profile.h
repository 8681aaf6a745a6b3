/* runtime/profile/profile.h — the profiler's internals (prefix br_prof_, br_pool_).
 *
 * An executor with profiling on (braid_exec_set_profiling) owns one
 * br_prof. A run records spans into it: one per node that did work on
 * the node's own track (its queue), timed with CLOCK_MONOTONIC around CPU
 * nodes (runtime/exec.c) and with a CUDA event pair around GPU nodes on
 * their streams (runtime/profile/profile_cuda.c, recorded by runtime/cuda/cuda_run.c),
 * plus one per parallel-for job share of each pool worker thread
 * (runtime/cpu/threadpool.c) on that worker's track. When the run completes
 * (braid_wait) the node spans are folded into per-node aggregates; the
 * spans of the last run stay for the timeline (braid_profile_write_trace).
 *
 * All times are nanoseconds of CLOCK_MONOTONIC; GPU spans are placed on
 * that clock through one base event per GPU recorded at run start, whose
 * host time is noted once the GPU reached it.
 *
 * Tracks: index q < plan->nqueues is queue q ("cpu", "cuda:0 compute 1",
 * "cuda:0 h2d", ...); the next ones are the pool's worker threads
 * ("cpu worker 1" ...). The thread that calls braid_run is the "cpu"
 * track itself, so its share of a parallel-for has no track of its own. */
#ifndef BRAID_RUNTIME_PROFILE_H
#define BRAID_RUNTIME_PROFILE_H

#include "runtime/cuda/cuda.h"
#include "runtime/runtime.h"

typedef struct br_prof br_prof;

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t br_prof_now_ns(void);

/* A profiler for plan p, whose executor's pool has nworkers worker threads
 * besides the caller. NULL *out and BRAID_ERR_OUT_OF_MEMORY on failure. */
braid_status br_prof_new(const bp_plan *p, int nworkers, br_prof **out);
/* Frees pf (NULL is fine). GPU events must have been released with
 * br_prof_cuda_free first. */
void br_prof_free(br_prof *pf);
/* Forgets every aggregate and the last run's timeline. */
void br_prof_reset(br_prof *pf);

/* Starts a run: notes its start time and clears the spans of the last. */
void br_prof_run_begin(br_prof *pf);
/* Records that node ran on track from t0 to t1 (ns). primary: the node's
 * own span (counted in its aggregates); false: a worker's share. Spans
 * that cannot be stored (out of memory) are dropped and counted. */
void br_prof_span(br_prof *pf, uint32_t node, uint32_t track, int64_t t0,
                  int64_t t1, bool primary);
/* Ends a run: its wall time is now minus its start; when ok, its primary
 * spans are added to the aggregates and the run is counted. */
void br_prof_run_end(br_prof *pf, bool ok);
/* Track of pool worker w (1 ... nworkers). */
uint32_t br_prof_worker_track(const br_prof *pf, int w);

/* The public snapshot (braid_exec_profile). */
braid_status br_prof_snapshot(const br_prof *pf, braid_profile **out);

/* GPU state (runtime/profile/profile_cuda.c) kept by pf; NULL when none. */
void **br_prof_gpu_slot(br_prof *pf);

/* ---- the executor's side (runtime/exec.c) --------------------------------- */

/* ---- pool workers (runtime/cpu/threadpool.c) -------------------------------- */

/* Turns recording of the workers' parallel-for shares on or off (only
 * between jobs). BRAID_ERR_OUT_OF_MEMORY when the buffers cannot be
 * allocated (recording stays off). */
braid_status br_pool_trace(br_pool *p, bool on);
/* Receives one worker's share of one job: worker w (1 ...) ran chunks
 * from begin to end (ns). */
typedef void (*br_pool_span_fn)(void *ctx, int w, int64_t begin, int64_t end);
/* Hands every share recorded since the last drain to fn (when not NULL)
 * and forgets them. Call from the thread that runs parallel-fors, between
 * them. */
void br_pool_trace_drain(br_pool *p, br_pool_span_fn fn, void *ctx);

/* Drains p's worker shares into pf as spans of node (pf NULL: discards). */
void br_prof_take_workers(br_prof *pf, br_pool *p, uint32_t node);

/* ---- GPU nodes (runtime/profile/profile_cuda.c) ----------------------------------- */

/* Creates, once, a CUDA event pair per GPU node that does work and a base
 * event per GPU. Every failure names the node and the call. */
braid_status br_prof_cuda_init(br_prof *pf, br_cuda *c);
/* Destroys them (NULL pf or c, or none created: nothing). */
void br_prof_cuda_free(br_prof *pf, br_cuda *c);
/* Run start: records each GPU's base event and notes its host time. */
braid_status br_prof_cuda_begin(br_prof *pf, br_cuda *c);
/* Records node id's start (end false) or end event on its stream. */
braid_status br_prof_cuda_mark(br_prof *pf, br_cuda *c, uint32_t id,
                               bool end);
/* After every stream finished: turns the recorded event pairs into spans. */
braid_status br_prof_cuda_collect(br_prof *pf, br_cuda *c);

#endif /* BRAID_RUNTIME_PROFILE_H */
