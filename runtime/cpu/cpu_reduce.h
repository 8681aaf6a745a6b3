/* runtime/cpu/cpu_reduce.h — what the unfused reduce kernel
 * (cpu_kernels_reduce.c, which defines these) and the fused REDUCE programs
 * (cpu_fused_reduce.c) share (prefix br_red_). The meaning of each
 * reduction (identity, NaN rule, wrapping, empty and mean results) is
 * graph/scalar.h's; these are the CPU's ways of computing it. */
#ifndef BRAID_RUNTIME_CPU_REDUCE_H
#define BRAID_RUNTIME_CPU_REDUCE_H

#include "runtime/cpu/cpu_kernels.h"

/* A reduction's dims as alternating groups of kept and reduced axes (size-1
 * axes dropped, neighbours of one kind merged), outer to inner, with the
 * C-order strides of the innermost axis of each group. */
typedef struct br_red_groups {
    int64_t O, R; /* output elements, reduced elements per output */
    int nk, nr;   /* kept / reduced groups */
    int64_t kd[BRAID_MAX_RANK], ks[BRAID_MAX_RANK]; /* kept dims, strides */
    int64_t rd[BRAID_MAX_RANK], rs[BRAID_MAX_RANK]; /* reduced dims, strides */
    int last; /* kind of the innermost group: 0 kept, 1 reduced, -1 none */
} br_red_groups;

/* The groups of a dense tensor of shape (rank, dims) reduced over the axes
 * whose bits are set in axes. */
void br_red_groups_of(int rank, const int64_t *dims, unsigned axes,
                      br_red_groups *gr);

/* Offset of flat index i over the first n of (dims, strides). */
int64_t br_red_decode(int64_t i, int n, const int64_t *dims,
                      const int64_t *strides);

/* Sums in double with a fixed order that depends on n only (8 and 4
 * interleaved partial sums). */
double br_red_sum_f32(const float *x, int64_t n);
double br_red_sum_f64(const double *x, int64_t n);
/* An i32 sum modulo 2^32, as a uint32 residue (bg_reduce_finish wraps). */
double br_red_sum_i32(const int32_t *x, int64_t n);

/* Stores output element o (dtype t) of reduction op: bg_reduce_finish of
 * acc, the combination of count values. */
void br_red_store(braid_op op, braid_dtype t, void *out, int64_t o, double acc,
                  int64_t count);

#endif /* BRAID_RUNTIME_CPU_REDUCE_H */
