/* runtime/devices.h — the devices this process has (prefix br_).
 *
 * The one place braid asks CUDA what exists: the count, each GPU's compute
 * capability, name and memory, probed once per process and kept. Everything
 * else reads this: braid_compile (runtime/compile.c) turns it into the
 * device description the passes and codegen/aot.c read, executors check a
 * plan's GPUs against it, braid_cuda_device_count/braid_cuda_status report
 * it. Passes and codegen never call CUDA to learn about devices. */
#ifndef BRAID_RUNTIME_DEVICES_H
#define BRAID_RUNTIME_DEVICES_H

#include "graph/graph.h"

/* One GPU as CUDA describes it. */
typedef struct br_gpu_info {
    int sm;          /* compute capability, 10·major + minor (90); 0 when
                        CUDA would not say */
    char name[256];  /* "NVIDIA H100 80GB HBM3"; "" when unknown */
    uint64_t memory; /* total device memory in bytes; 0 when unknown */
} br_gpu_info;

/* What the probe found. */
typedef struct br_devices {
    int ngpus;                            /* usable CUDA devices (≤ 64) */
    br_gpu_info gpu[BG_MAX_CUDA_DEVICES]; /* cuda:0 .. cuda:ngpus-1 */
    char status[256];                     /* why there are none, or how
                                             many (braid_cuda_status) */
} br_devices;

/* The devices of this process: probed on the first call (thread-safe,
 * pthread_once: asking CUDA initialises its runtime, which is slow and
 * must not race), the same answer after. Never NULL. Without a driver,
 * cudaGetDeviceCount fails (error 35): that is the normal answer on a
 * machine without a GPU, reported as ngpus 0 with the reason. */
const br_devices *br_devices_probe(void);

#endif /* BRAID_RUNTIME_DEVICES_H */
