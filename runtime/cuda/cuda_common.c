/* runtime/cuda/cuda_common.c — the parts of the CUDA backend every build has:
 * which plans need it, the "no GPU here" error, and, without the toolkit
 * (BRAID_HAVE_CUDA undefined), stubs of runtime/cuda/cuda.h that refuse with
 * BRAID_ERR_DEVICE "built without CUDA". */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda.h"

#include <stdio.h>
#include <string.h>

bool br_plan_uses_cuda(const bp_plan *p) {
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (p->res.info[id].device.kind != BP_DEVICE_CPU ||
            br_node_on_device_queue(p, id))
            return true;
    }
    return false;
}

/* The first scheduled node that needs a GPU, or BG_NONE. */
static uint32_t first_gpu_node(const bp_plan *p) {
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i];
        if (p->res.info[id].device.kind != BP_DEVICE_CPU ||
            br_node_on_device_queue(p, id))
            return id;
    }
    return BG_NONE;
}

braid_status br_cuda_no_device(const bp_plan *p, const char *why) {
    uint32_t id = first_gpu_node(p);
    if (id == BG_NONE)
        return bg_set_last_error(BRAID_ERR_DEVICE, "braid_exec_new: %s", why);
    bp_device d = p->res.info[id].device;
    if (d.kind == BP_DEVICE_CPU && p->res.info[id].queue < p->res.nqueues)
        d = p->res.queues[p->res.info[id].queue].device; /* a D2H copy */
    char use[160];
    return bg_set_last_error(BRAID_ERR_DEVICE,
                             "braid_exec_new: the plan runs %s: %s (compile "
                             "for \"cpu\" to run here)",
                             bp_device_use_str(p, d, use, sizeof use), why);
}

#ifdef BRAID_HAVE_CUDA

#include <cuda_runtime_api.h>

void *br_cuda_pinned_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

void br_cuda_pinned_free(void *p) {
    if (p) cudaFreeHost(p);
}

void *br_cuda_device_alloc(int dev, size_t bytes) {
    void *p = NULL;
    if (cudaSetDevice(dev) != cudaSuccess ||
        cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

void br_cuda_device_free(void *p) {
    if (p) cudaFree(p);
}

int br_cuda_pointer_device(const void *ptr) {
    struct cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    if (!ptr) return -1;
    if (cudaPointerGetAttributes(&at, ptr) != cudaSuccess) {
        (void)cudaGetLastError(); /* older drivers: unknown host memory */
        return -1;
    }
    bool dev = at.type == cudaMemoryTypeDevice ||
               at.type == cudaMemoryTypeManaged;
    return dev ? at.device : -1;
}

braid_status br_cuda_memcpy(void *dst, const void *src, size_t bytes) {
    cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    /* From pageable memory cudaMemcpy may return once the bytes are
     * staged, before the DMA lands; executors' streams do not wait for the
     * legacy default stream it used, so a run right after could read the
     * old bytes. Wait for it. */
    if (err == cudaSuccess) err = cudaStreamSynchronize(0);
    if (err == cudaSuccess) return BRAID_OK;
    (void)cudaGetLastError();
    return bg_set_last_error(BRAID_ERR_DEVICE,
                             "br_cuda_memcpy: cudaMemcpy "
                             "failed: %s",
                             cudaGetErrorString(err));
}

#else /* !BRAID_HAVE_CUDA: stubs */

braid_status br_cuda_check_plan(const bp_plan *p, int sm, char *report,
                                size_t size) {
    (void)p;
    (void)sm;
    if (report && size) report[0] = '\0';
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "br_cuda_check_plan: built without CUDA");
}

void *br_cuda_pinned_alloc(size_t bytes) {
    (void)bytes;
    return NULL;
}

void br_cuda_pinned_free(void *p) {
    (void)p;
}

void *br_cuda_device_alloc(int dev, size_t bytes) {
    (void)dev;
    (void)bytes;
    return NULL;
}

void br_cuda_device_free(void *p) {
    (void)p;
}

int br_cuda_pointer_device(const void *ptr) {
    (void)ptr;
    return -1;
}

bool br_cuda_device_output_in_place(const br_cuda *c, uint32_t id) {
    (void)c;
    (void)id;
    return false;
}

braid_status br_cuda_memcpy(void *dst, const void *src, size_t bytes) {
    (void)dst;
    (void)src;
    (void)bytes;
    return bg_set_last_error(BRAID_ERR_DEVICE, "br_cuda_memcpy: built "
                                               "without CUDA");
}

braid_status br_cuda_new(const bp_plan *p, const br_sched *sched, br_pool *pool,
                         br_cuda **out) {
    (void)sched;
    (void)pool;
    if (out) *out = NULL;
    return br_cuda_no_device(p, "built without CUDA");
}

void br_cuda_free(br_cuda *c) {
    (void)c;
}

void *br_cuda_arena(const br_cuda *c, uint32_t a) {
    (void)c;
    (void)a;
    return NULL;
}

void *br_cuda_home(const br_cuda *c, uint32_t id) {
    (void)c;
    (void)id;
    return NULL;
}

braid_status br_cuda_run_start(br_cuda *c, const br_cuda_run_args *a,
                               bool *started) {
    (void)c;
    (void)a;
    *started = false;
    return bg_set_last_error(BRAID_ERR_DEVICE, "braid_run: built without "
                                               "CUDA");
}

braid_status br_cuda_run_finish(br_cuda *c, braid_status st) {
    (void)c;
    return st;
}

const br_queue_ops *br_cuda_ops(void) {
    return NULL;
}

const char *br_cuda_log(const br_cuda *c) {
    (void)c;
    return "";
}

const char *br_cuda_created(const br_cuda *c) {
    (void)c;
    return "";
}

void br_cuda_set_graphs(br_cuda *c, bool on) {
    (void)c;
    (void)on;
}

bool br_cuda_last_run_used_graph(const br_cuda *c) {
    (void)c;
    return false;
}

#endif /* !BRAID_HAVE_CUDA */
