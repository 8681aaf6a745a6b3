/* runtime/cpu/cpu_ew.h — the typed elementwise loops (prefix br_ew_).
 *
 * Defined in runtime/cpu/cpu_kernels_elementwise.c (compiled with -O3 so the
 * loops vectorise) and shared by the unfused elementwise kernels and the
 * fused-tile interpreter (runtime/cpu/cpu_fused*.c), so both compute every op
 * with the same code and give the same bits. Each call computes n outputs
 * o[0..n) of one op:
 *   - f32 ops in float, f64 in double, i32 through uint32 (wrapping);
 *     f16/bf16 callers widen to f32 first and round the results;
 *   - operands step by sa/sb elements (1 contiguous, 0 a broadcast scalar,
 *     anything else strided); unary operands are contiguous;
 *   - o never overlaps an operand (the pointers are restrict); operands may
 *     overlap each other.
 * Ops outside what the builder accepts for the type leave o untouched. */
#ifndef BRAID_RUNTIME_CPU_EW_H
#define BRAID_RUNTIME_CPU_EW_H

#include "braid/braid.h"

#include <stdint.h>

/* The ops of graph/scalar.h's BG_UNARY_OPS (i32: BG_UNARY_I32_OPS), by
 * its rules. */
void br_ew_unary_f32(braid_op op, int64_t n, float *restrict o,
                     const float *restrict a);
void br_ew_unary_f64(braid_op op, int64_t n, double *restrict o,
                     const double *restrict a);
void br_ew_unary_i32(braid_op op, int64_t n, int32_t *restrict o,
                     const int32_t *restrict a);

/* The ops of BG_BINARY_OPS (i32: BG_BINARY_I32_OPS). */
void br_ew_binary_f32(braid_op op, int64_t n, float *restrict o,
                      const float *restrict a, int64_t sa,
                      const float *restrict b, int64_t sb);
void br_ew_binary_f64(braid_op op, int64_t n, double *restrict o,
                      const double *restrict a, int64_t sa,
                      const double *restrict b, int64_t sb);
void br_ew_binary_i32(braid_op op, int64_t n, int32_t *restrict o,
                      const int32_t *restrict a, int64_t sa,
                      const int32_t *restrict b, int64_t sb);

/* The ops of BG_COMPARE_OPS into bytes 0/1 (bool operands compare as
 * 0/1). */
void br_ew_compare_f32(braid_op op, int64_t n, uint8_t *restrict o,
                       const float *restrict a, int64_t sa,
                       const float *restrict b, int64_t sb);
void br_ew_compare_f64(braid_op op, int64_t n, uint8_t *restrict o,
                       const double *restrict a, int64_t sa,
                       const double *restrict b, int64_t sb);
void br_ew_compare_i32(braid_op op, int64_t n, uint8_t *restrict o,
                       const int32_t *restrict a, int64_t sa,
                       const int32_t *restrict b, int64_t sb);
void br_ew_compare_bool(braid_op op, int64_t n, uint8_t *restrict o,
                        const uint8_t *restrict a, int64_t sa,
                        const uint8_t *restrict b, int64_t sb);

/* The typed functions above chosen by the operands' dtype t (f32, f64,
 * i32; compare: bool too); false, computing nothing, for other dtypes
 * (f16 / bf16 callers stage through f32 themselves). */
bool br_ew_unary(braid_dtype t, braid_op op, int64_t n, void *o, const void *a);
bool br_ew_binary(braid_dtype t, braid_op op, int64_t n, void *o, const void *a,
                  int64_t sa, const void *b, int64_t sb);
bool br_ew_compare(braid_dtype t, braid_op op, int64_t n, uint8_t *o,
                   const void *a, int64_t sa, const void *b, int64_t sb);

/* o[i] = cond[i·sc] ? a[i·sa] : b[i·sb] over elements of esize bytes
 * (1, 2, 4 or 8): a byte copy, exact for every dtype. */
void br_ew_where(size_t esize, int64_t n, void *out,
                 const uint8_t *restrict cond, int64_t sc, const void *a,
                 int64_t sa, const void *b, int64_t sb);

#endif /* BRAID_RUNTIME_CPU_EW_H */
