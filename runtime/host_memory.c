/* runtime/host_memory.c — braid_host_alloc / braid_host_free: host
 * buffers that GPU copies read and write at full speed; braid_device_alloc
 * / braid_device_free / braid_memcpy: device buffers for device-pointer
 * bindings.
 *
 * With a usable GPU the bytes are page-locked (cudaHostAlloc, portable to
 * every GPU), so a plan's copy nodes recognise them and DMA straight from
 * them instead of staging through braid's own pinned buffers; without one
 * they are ordinary 64-byte aligned memory. A 64-byte header before the
 * caller's bytes records which, so freeing needs no CUDA call for plain
 * memory and never guesses. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/cuda/cuda.h"

#define HEADER 64 /* keeps the caller's bytes 64-byte aligned */
#define MAGIC_PINNED 0x70696e6e65644252ull /* "BRpinned" */
#define MAGIC_PLAIN 0x6e69616c70704252ull  /* "BRplain" */

void *braid_host_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - HEADER) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_host_alloc: %zu bytes is too large", bytes);
        return NULL;
    }
    uint64_t magic = MAGIC_PLAIN;
    unsigned char *base = NULL;
#ifdef BRAID_HAVE_CUDA
    if (braid_cuda_device_count() > 0) {
        base = br_cuda_pinned_alloc(bytes + HEADER);
        if (base) magic = MAGIC_PINNED;
    }
#endif
    if (!base) {
        void *p = NULL;
        if (posix_memalign(&p, HEADER, bytes + HEADER) != 0) p = NULL;
        base = p;
    }
    if (!base) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_host_alloc: out of memory for %zu bytes",
                          bytes);
        return NULL;
    }
    memcpy(base, &magic, sizeof magic);
    return base + HEADER;
}

void braid_host_free(void *ptr) {
    if (!ptr) return;
    unsigned char *base = (unsigned char *)ptr - HEADER;
    uint64_t magic;
    memcpy(&magic, base, sizeof magic);
#ifdef BRAID_HAVE_CUDA
    if (magic == MAGIC_PINNED) {
        br_cuda_pinned_free(base);
        return;
    }
#endif
    free(base);
}

void *braid_device_alloc(int device, size_t bytes) {
    int n = braid_cuda_device_count();
    if (device < 0 || device >= n) {
        bg_set_last_error(BRAID_ERR_DEVICE,
                          "braid_device_alloc: no CUDA device %d (%s)", device,
                          braid_cuda_status());
        return NULL;
    }
    void *p = br_cuda_device_alloc(device, bytes);
    if (!p)
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "braid_device_alloc: out of memory for %zu bytes "
                          "on cuda:%d",
                          bytes, device);
    return p;
}

void braid_device_free(void *ptr) {
    br_cuda_device_free(ptr);
}

braid_status braid_memcpy(void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return BRAID_OK;
    if (!dst || !src)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_memcpy: %s is NULL",
                                 !dst ? "dst" : "src");
#ifdef BRAID_HAVE_CUDA
    if (braid_cuda_device_count() > 0) return br_cuda_memcpy(dst, src, bytes);
#endif
    memcpy(dst, src, bytes);
    return BRAID_OK;
}
