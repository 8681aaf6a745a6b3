/* runtime/cuda/cuda_pool.c — plan-independent CUDA resources, pooled per
 * process and reused across executors.
 *
 * Streams, events, cuBLAS and cuBLASLt handles (each with its device
 * workspace) and pinned staging buffers do not depend on the plan, yet
 * creating them is most of what an executor costs once the CUDA context is
 * up (a cuBLAS handle and its workspace alone take milliseconds). So an
 * executor takes them from this pool when it is created and gives them
 * back when it is freed; only what the pool lacks is created.
 *
 * Contract: a resource given back is idle (the executor synchronised its
 * streams before freeing) and carries no executor state that the next
 * taker does not set again (a cuBLAS handle's stream and math mode are
 * set by every taker; an event may be in the recorded-and-complete state,
 * which every use tolerates). One lock guards the pool: executors are
 * created and freed from any thread.
 *
 * Loaded modules are shared rather than handed over: the module for one
 * (architecture, generated source) pair is loaded once per process
 * (cudaLibraryLoadData loads into every context, and its kernels are
 * read-only), counted by the executors using it, and kept loaded when the
 * count drops to zero, so the next executor of the plan loads nothing.
 *
 * Lifetime: pooled resources and idle modules live until the process
 * exits (the driver reclaims them) or braid_cuda_release_cached()
 * destroys them; the pool's own lists stay reachable from static
 * pointers, so leak checkers see no leak. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static br_res *pooled;      /* the idle resources */
static size_t npooled, cap; /* entries used / allocated in pooled */
static br_res_stats stats;  /* counters since the process started */

/* A loaded module and the executors using it. */
typedef struct br_module {
    int sm;            /* architecture it was loaded for */
    char *text;        /* the generated source it came from (owned) */
    size_t len;        /* bytes in text */
    cudaLibrary_t lib; /* the loaded module */
    uint32_t refs;     /* executors using it */
} br_module;

static br_module *modules;    /* every module loaded through the cache */
static size_t nmodules, mcap; /* entries used / allocated */

/* Index of the entry to hand out for (kind, dev, bytes), or -1. Pinned
 * buffers: the smallest that is large enough and no more than 4× too big
 * (so a small executor does not hold a huge buffer). */
static long find(br_res_kind kind, int dev, size_t bytes) {
    long best = -1;
    for (size_t i = 0; i < npooled; i++) {
        const br_res *r = &pooled[i];
        if (r->kind != kind || r->dev != dev) continue;
        if (kind != BR_RES_PINNED) return (long)i;
        if (r->bytes < bytes || r->bytes / 4 > bytes) continue;
        if (best < 0 || r->bytes < pooled[best].bytes) best = (long)i;
    }
    return best;
}

bool br_res_take(br_res_kind kind, int dev, size_t bytes, br_res *out) {
    pthread_mutex_lock(&lock);
    long i = find(kind, dev, bytes);
    if (i >= 0) {
        *out = pooled[i];
        pooled[i] = pooled[--npooled];
        stats.reused[kind]++;
    }
    pthread_mutex_unlock(&lock);
    return i >= 0;
}

void br_res_destroy(const br_res *r) {
    if (r->dev >= 0) cudaSetDevice(r->dev);
    switch (r->obj ? r->kind : BR_RES_KINDS) {
    case BR_RES_STREAM:
        cudaStreamDestroy((cudaStream_t)r->obj);
        break;
    case BR_RES_EVENT:
        cudaEventDestroy((cudaEvent_t)r->obj);
        break;
    case BR_RES_BLAS:
        cublasDestroy((cublasHandle_t)r->obj);
        break;
    case BR_RES_LT:
        cublasLtDestroy((cublasLtHandle_t)r->obj);
        break;
    case BR_RES_PINNED:
        cudaFreeHost(r->obj);
        break;
    default:
        break;
    }
    if (r->ws) cudaFree(r->ws);
    (void)cudaGetLastError();
}

void br_res_give(const br_res *r) {
    if (!r->obj) return;
    pthread_mutex_lock(&lock);
    bool kept = false;
    if (npooled == cap) {
        size_t n = cap ? 2 * cap : 64;
        br_res *f = realloc(pooled, n * sizeof *f);
        if (f) {
            pooled = f;
            cap = n;
        }
    }
    if (npooled < cap) {
        pooled[npooled++] = *r;
        stats.returned[r->kind]++;
        kept = true;
    }
    pthread_mutex_unlock(&lock);
    if (!kept) br_res_destroy(r); /* out of host memory: not pooled */
}

void br_res_created(br_res_kind kind) {
    pthread_mutex_lock(&lock);
    stats.created[kind]++;
    pthread_mutex_unlock(&lock);
}

void br_cuda_res_stats(br_res_stats *out) {
    pthread_mutex_lock(&lock);
    *out = stats;
    out->pooled = npooled;
    for (size_t i = 0; i < nmodules; i++)
        out->pooled += modules[i].refs == 0;
    pthread_mutex_unlock(&lock);
}

bool br_module_take(int sm, const char *text, size_t len, cudaLibrary_t *lib) {
    bool found = false;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmodules && !found; i++) {
        br_module *m = &modules[i];
        if (m->sm != sm || m->len != len || memcmp(m->text, text, len) != 0)
            continue;
        m->refs++;
        *lib = m->lib;
        stats.reused[BR_RES_MODULE]++;
        found = true;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void br_module_keep(int sm, const char *text, size_t len, cudaLibrary_t lib) {
    char *copy = malloc(len ? len : 1);
    if (copy) memcpy(copy, text, len);
    pthread_mutex_lock(&lock);
    stats.created[BR_RES_MODULE]++;
    if (copy && nmodules == mcap) {
        size_t n = mcap ? 2 * mcap : 16;
        br_module *f = realloc(modules, n * sizeof *f);
        if (f) {
            modules = f;
            mcap = n;
        }
    }
    if (copy && nmodules < mcap) {
        modules[nmodules++] = (br_module){sm, copy, len, lib, 1};
        copy = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(copy); /* out of memory: not shared; br_module_give unloads it */
}

void br_module_give(cudaLibrary_t lib) {
    bool known = false;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmodules && !known; i++)
        if (modules[i].lib == lib) {
            modules[i].refs--;
            stats.returned[BR_RES_MODULE]++;
            known = true;
        }
    pthread_mutex_unlock(&lock);
    if (!known) cudaLibraryUnload(lib);
}

/* Takes the modules no executor uses out of the cache. */
static size_t idle_modules(br_module *out) {
    size_t n = 0, kept = 0;
    for (size_t i = 0; i < nmodules; i++)
        if (modules[i].refs == 0)
            out[n++] = modules[i];
        else
            modules[kept++] = modules[i];
    nmodules = kept;
    return n;
}

void braid_cuda_release_cached(void) {
    pthread_mutex_lock(&lock);
    br_res *all = pooled;
    size_t n = npooled, nidle = 0;
    pooled = NULL;
    npooled = cap = 0;
    br_module *idle = malloc((nmodules ? nmodules : 1) * sizeof *idle);
    if (idle) nidle = idle_modules(idle);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < nidle; i++) {
        cudaLibraryUnload(idle[i].lib);
        free(idle[i].text);
    }
    free(idle);
    for (size_t i = 0; i < n; i++)
        br_res_destroy(&all[i]);
    free(all);
}

#else /* !BRAID_HAVE_CUDA: nothing is ever pooled */

#include "runtime/cuda/cuda.h"

#include <string.h>

void br_cuda_res_stats(br_res_stats *out) {
    memset(out, 0, sizeof *out);
}

void braid_cuda_release_cached(void) {}

#endif /* BRAID_HAVE_CUDA */
