/* passes/profile.c — the default device cost profiles of the placement
 * pass.
 *
 * The numbers are sustained rates, not datasheet peaks: the cost model only
 * compares devices, so what matters is that each rate is what braid can
 * expect to reach. docs/placement.md lists every figure with its source
 * (mostly measurements in the project's ANCHORS.md, taken on the GPU
 * machine: 16 CPU cores, one H100/H200 on PCIe Gen5). A caller who knows
 * better passes braid_compile_options.cpu_profile / cuda_profile. */
#include "passes/passes.h"

/* The host: a 16-core server CPU running OpenBLAS and braid's tile
 * interpreter. Matmul is the measured seed-001 figure (10 × 2000³ f32
 * products in 1.06 s ≈ 0.15 TFLOP/s); f64 runs at half the f32 rate;
 * f16/bf16 have no fast CPU GEMM: converting both operands and the result
 * around an sgemm leaves about a third of the f32 rate. i32 and bool have
 * no matmul (zero). */
static bp_device_profile cpu_profile(void) {
    bp_device_profile p = {{0}, 0, 0, 0, 0, 0};
    p.flops[BRAID_F32] = 1.5e11;
    p.flops[BRAID_F64] = 0.75e11;
    p.flops[BRAID_F16] = 0.5e11;
    p.flops[BRAID_BF16] = 0.5e11;
    p.elementwise_flops = 5e10; /* 16 cores × a few GFLOP/s of libm-heavy
                                   scalar-ish code */
    p.mem_bytes_per_s = 50e9;   /* read + write; memcpy reached 34–39 GB/s
                                   copied (≈ 70 GB/s of traffic) */
    p.h2d_bytes_per_s = 0;      /* the host does not copy to itself */
    p.d2h_bytes_per_s = 0;
    p.launch_s = 2e-6; /* dispatching a node to the thread pool */
    return p;
}

/* An H100/H200-class GPU. Matmul: sgemm 10000³ without TF32 measured
 * 48.7 TFLOP/s; FP64 tensor cores are about as fast; f16/bf16 tensor-core
 * GEMMs sustain several hundred TFLOP/s (400 is conservative). Memory: the
 * H100's device-to-device copy rate (read + write), the lower of the two
 * GPUs. PCIe: pinned copies measured 55 GB/s each way; 50 leaves room for
 * the pageable-input staging path. */
static bp_device_profile cuda_profile(void) {
    bp_device_profile p = {{0}, 0, 0, 0, 0, 0};
    p.flops[BRAID_F32] = 50e12;
    p.flops[BRAID_F64] = 50e12;
    p.flops[BRAID_F16] = 400e12;
    p.flops[BRAID_BF16] = 400e12;
    p.elementwise_flops = 2e12;
    p.mem_bytes_per_s = 3.0e12;
    p.h2d_bytes_per_s = 50e9;
    p.d2h_bytes_per_s = 50e9;
    p.launch_s = 5e-6; /* between a CUDA-graph replay (2.3 µs) and an eager
                          launch with its host overhead */
    return p;
}

bp_device_profile bp_default_profile(bp_device_kind kind) {
    return kind == BP_DEVICE_CUDA ? cuda_profile() : cpu_profile();
}
