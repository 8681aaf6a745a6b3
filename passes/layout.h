/* passes/layout.h — strided views (prefix bp_layout_): one owner for how a
 * chain of slice / permute / reshape / broadcast_to lays a tensor's
 * elements over another's bytes, and for when a matmul can read (or write)
 * such a layout through BLAS leading dimensions and batch strides.
 *
 * The memory pass decides strided views with these rules
 * (passes/memory_views.c), the plan verifier re-derives them, and the CPU
 * and CUDA matmuls turn a layout into lda/ldb/ldc and batch strides (the
 * attention kernels into row strides).
 * docs/memory.md, "Strided views". */
#ifndef BRAID_PASSES_LAYOUT_H
#define BRAID_PASSES_LAYOUT_H

#include "passes/plan.h"

/* Dense C-order element strides of (rank, dims). */
void bp_layout_dense(int rank, const int64_t *dims, int64_t *stride);
/* stride equals the dense strides along every axis longer than 1 (the
 * elements are one contiguous range in C order). */
bool bp_layout_is_dense(int rank, const int64_t *dims, const int64_t *stride);
/* Node id's stored strides when it is a strided view, else NULL. */
const int64_t *bp_layout_of(const bp_plan *p, uint32_t id);
/* Node id's element strides from its data pointer: its layout's, else
 * dense. */
void bp_layout_strides(const bp_plan *p, uint32_t id, int64_t *stride);

/* View op n (reshape, slice, permute, broadcast_to) of x, whose elements
 * lie at element offset *off with strides xs: n's strides into s and *off
 * moved to n's first element. False when n's elements are no strided
 * layout of x's bytes (a reshape merging axes that are not adjacent in
 * memory, a backwards slice) or n is no such op. Every stride is ≥ 0. */
bool bp_layout_through(const bg_node *n, const bg_node *x, const int64_t *xs,
                       int64_t *off, int64_t *s);

/* A rows × cols matrix at strides (sr, sc) as a row-major BLAS matrix:
 * leading dimension *ld and *flip when it is stored transposed (a
 * row-major cols × rows matrix). False when neither axis is contiguous. */
bool bp_layout_matrix(int64_t rows, int64_t cols, int64_t sr, int64_t sc,
                      int64_t *ld, bool *flip);
/* A tensor (rank, dims) at strides s is a matmul operand BLAS reads in
 * place (out: the result BLAS writes, which cannot be transposed):
 * rank ≥ 2, a matrix bp_layout_matrix takes, ld < 2^31. */
bool bp_layout_gemm_ok(int rank, const int64_t *dims, const int64_t *s,
                       bool out);
/* Node u can read node x at strides s in place: u is an unfused
 * elementwise node (not a cast) of x's shape, whose kernels walk each
 * input through strides; or u reads x only as operands of its matmul (a
 * matmul node, or the matmul of a fused MATMUL program: its inputs 0 and
 * 1, loaded by nothing else) and x at s is an operand bp_layout_gemm_ok
 * takes; or u is an attention node reading x as q, k or v (not its mask)
 * with a contiguous head dim (bg_attn_strides_ok). */
bool bp_layout_read_ok(const bp_plan *p, uint32_t u, uint32_t x,
                       const int64_t *s);

/* One matmul operand (or the result) as BLAS sees it. */
typedef struct bp_gemm_operand {
    bool trans;                     /* op(X) = Xᵀ of the stored matrix */
    int64_t ld;                     /* stored row-major leading dim (≥ 1) */
    int64_t batch[BRAID_MAX_RANK];  /* element stride per batch dim of the
                                       result (0: broadcast) */
} bp_gemm_operand;

/* Operand x of shape (rank, dims) at strides s, transposed by its
 * BRAID_TRANSPOSE_* flag t, against the result's nb batch dims bdims
 * (aligned right, NumPy broadcasting). */
void bp_layout_gemm_operand(int rank, const int64_t *dims, const int64_t *s,
                            bool t, int nb, const int64_t *bdims,
                            bp_gemm_operand *o);

#endif /* BRAID_PASSES_LAYOUT_H */
