/* runtime/devices.c — how many CUDA devices this process can use, and why
 * there are none when there are none.
 *
 * The answer is computed once per process (pthread_once): asking the CUDA
 * runtime initialises it, which is slow and must not race. Without a
 * driver, cudaGetDeviceCount fails with error 35; that is the normal answer
 * on a machine without a GPU, not an error of braid's. */
#define _POSIX_C_SOURCE 200809L
#include "braid/braid.h"

#include <pthread.h>
#include <stdio.h>

#ifdef BRAID_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static int cuda_count;        /* usable devices, set once */
static char cuda_reason[256]; /* braid_cuda_status's text, set once */

#ifdef BRAID_HAVE_CUDA
static void cuda_probe(void) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        snprintf(cuda_reason, sizeof cuda_reason,
                 "no CUDA device: cudaGetDeviceCount: %s (error %d)",
                 cudaGetErrorString(err), (int)err);
        cuda_count = 0;
        return;
    }
    cuda_count = n > 0 ? n : 0;
    if (n <= 0)
        snprintf(cuda_reason, sizeof cuda_reason,
                 "no CUDA device: cudaGetDeviceCount found none");
    else
        snprintf(cuda_reason, sizeof cuda_reason, "%d CUDA device%s", n,
                 n == 1 ? "" : "s");
}
#else
static void cuda_probe(void) {
    cuda_count = 0;
    snprintf(cuda_reason, sizeof cuda_reason, "built without CUDA");
}
#endif

int braid_cuda_device_count(void) {
    pthread_once(&cuda_once, cuda_probe);
    return cuda_count;
}

const char *braid_cuda_status(void) {
    pthread_once(&cuda_once, cuda_probe);
    return cuda_reason;
}
