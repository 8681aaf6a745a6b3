/* runtime/devices.c — the device probe (runtime/devices.h) and the public
 * calls that report it. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/devices.h"

#include <pthread.h>
#include <stdio.h>

#ifdef BRAID_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static br_devices found; /* set once, by probe */

#ifdef BRAID_HAVE_CUDA
/* Compute capability, name and memory of GPU d; what CUDA will not say
 * stays 0 / "" (an executor reports the error when it needs the GPU). */
static void probe_gpu(int d, br_gpu_info *g) {
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    g->sm = prop.major * 10 + prop.minor;
    snprintf(g->name, sizeof g->name, "%s", prop.name);
    g->memory = (uint64_t)prop.totalGlobalMem;
}

static void probe(void) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        snprintf(found.status, sizeof found.status,
                 "no CUDA device: cudaGetDeviceCount: %s (error %d)",
                 cudaGetErrorString(err), (int)err);
        (void)cudaGetLastError();
        return;
    }
    if (n <= 0) {
        snprintf(found.status, sizeof found.status,
                 "no CUDA device: cudaGetDeviceCount found none");
        return;
    }
    /* device names stop at cuda:63 (graph/device.c) */
    found.ngpus = n < BG_MAX_CUDA_DEVICES ? n : BG_MAX_CUDA_DEVICES;
    for (int d = 0; d < found.ngpus; d++)
        probe_gpu(d, &found.gpu[d]);
    snprintf(found.status, sizeof found.status, "%d CUDA device%s", n,
             n == 1 ? "" : "s");
}
#else
static void probe(void) {
    snprintf(found.status, sizeof found.status, "built without CUDA");
}
#endif

const br_devices *br_devices_probe(void) {
    pthread_once(&probe_once, probe);
    return &found;
}

int braid_cuda_device_count(void) {
    return br_devices_probe()->ngpus;
}

const char *braid_cuda_status(void) {
    return br_devices_probe()->status;
}
