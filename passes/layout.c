/* passes/layout.c — strided views: layouts through view ops, and what a
 * matmul (or attention) can read or write in place (passes/layout.h). */
#include "passes/layout.h"

#include "graph/attention.h"

#include <limits.h>

void bp_layout_dense(int rank, const int64_t *dims, int64_t *stride) {
    int64_t s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        stride[a] = s;
        s *= dims[a] > 0 ? dims[a] : 1;
    }
}

bool bp_layout_is_dense(int rank, const int64_t *dims, const int64_t *stride) {
    int64_t s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        if (dims[a] > 1 && stride[a] != s) return false;
        s *= dims[a] > 0 ? dims[a] : 1;
    }
    return true;
}

const int64_t *bp_layout_of(const bp_plan *p, uint32_t id) {
    const bp_tensor_place *pl = &p->res.info[id].place;
    if (pl->storage != BP_STORAGE_VIEW || pl->layout == 0 ||
        pl->layout > p->res.nlayouts)
        return NULL;
    return p->res.layouts[pl->layout - 1].stride;
}

void bp_layout_strides(const bp_plan *p, uint32_t id, int64_t *stride) {
    const bg_node *n = &p->res.graph->nodes[id];
    const int64_t *s = bp_layout_of(p, id);
    for (int a = 0; s && a < n->rank; a++) stride[a] = s[a];
    if (!s) bp_layout_dense(n->rank, n->dims, stride);
}

/* A reshape keeps a strided layout when every run of input axes that
 * becomes a run of output axes (equal products) is contiguous in memory;
 * the output axes of a run then step through it in C order. */
static bool through_reshape(const bg_node *n, const bg_node *x,
                            const int64_t *xs, int64_t *s) {
    int64_t d[BRAID_MAX_RANK], st[BRAID_MAX_RANK];
    int m = 0, i = 0, j = 0;
    for (int a = 0; a < x->rank; a++)
        if (x->dims[a] != 1) {
            d[m] = x->dims[a];
            st[m++] = xs[a];
        }
    while (j < n->rank) {
        if (i == m || n->dims[j] == 1) { /* an axis of length 1 */
            s[j++] = 0;
            continue;
        }
        int i0 = i, j0 = j;
        int64_t pi = d[i], pj = n->dims[j];
        while (pi != pj) {
            if (pi < pj) {
                if (++i >= m) return false;
                pi *= d[i];
            } else {
                if (++j >= n->rank) return false;
                pj *= n->dims[j];
            }
        }
        for (int k = i0; k < i; k++)
            if (st[k] != st[k + 1] * d[k + 1]) return false;
        int64_t step = st[i];
        for (int k = j; k >= j0; k--) {
            s[k] = n->dims[k] == 1 ? 0 : step;
            step *= n->dims[k];
        }
        i++;
        j++;
    }
    return i == m;
}

static bool through_slice(const bg_node *n, const bg_node *x,
                          const int64_t *xs, int64_t *off, int64_t *s) {
    if (n->rank != x->rank) return false;
    for (int a = 0; a < n->rank; a++) {
        int64_t start = n->attr.start[a], step = n->attr.step[a];
        if (!bg_slice_fits(x->dims[a], start, step, n->dims[a]) ||
            (n->dims[a] > 1 && step < 0))
            return false;
        *off += start * xs[a];
        s[a] = n->dims[a] > 1 ? xs[a] * step : 0;
    }
    return true;
}

bool bp_layout_through(const bg_node *n, const bg_node *x, const int64_t *xs,
                       int64_t *off, int64_t *s) {
    if (n->ninputs != 1 || n->dtype != x->dtype) return false;
    if (bg_numel(n) == 0) return false;
    switch (n->op) {
    case BRAID_OP_RESHAPE:
        return bg_numel(n) == bg_numel(x) && through_reshape(n, x, xs, s);
    case BRAID_OP_SLICE:
        return through_slice(n, x, xs, off, s);
    case BRAID_OP_PERMUTE:
        if (n->rank != x->rank) return false;
        for (int i = 0; i < n->rank; i++) {
            if (n->attr.perm[i] >= x->rank) return false;
            s[i] = n->dims[i] == 1 ? 0 : xs[n->attr.perm[i]];
        }
        return true;
    case BRAID_OP_BROADCAST_TO:
        if (n->rank < x->rank) return false;
        for (int i = 0; i < n->rank; i++) {
            int j = i - (n->rank - x->rank);
            s[i] = j < 0 || x->dims[j] == 1 || n->dims[i] == 1 ? 0 : xs[j];
        }
        return true;
    default:
        return false;
    }
}

bool bp_layout_matrix(int64_t rows, int64_t cols, int64_t sr, int64_t sc,
                      int64_t *ld, bool *flip) {
    if ((cols <= 1 || sc == 1) && (rows <= 1 || sr >= cols)) {
        *flip = false;
        *ld = rows <= 1 ? cols : sr;
    } else if ((rows <= 1 || sr == 1) && (cols <= 1 || sc >= rows)) {
        *flip = true;
        *ld = cols <= 1 ? rows : sc;
    } else {
        return false;
    }
    if (*ld < 1) *ld = 1;
    return true;
}

bool bp_layout_gemm_ok(int rank, const int64_t *dims, const int64_t *s,
                       bool out) {
    int64_t ld;
    bool flip;
    if (rank < 2) return false;
    for (int a = 0; a < rank; a++)
        if (s[a] < 0) return false;
    return bp_layout_matrix(dims[rank - 2], dims[rank - 1], s[rank - 2],
                            s[rank - 1], &ld, &flip) &&
           ld <= INT_MAX && !(out && flip);
}

/* Fused node u's program is a MATMUL whose operands are its inputs 0 and
 * 1, and nothing else loads x. */
static bool program_reads_ok(const bp_plan *p, uint32_t u, uint32_t x) {
    const bg_node *n = &p->res.graph->nodes[u];
    uint32_t pi = p->res.info[u].program;
    if (pi >= p->res.nprograms) return false;
    const bp_program *pr = &p->res.programs[pi];
    const bp_instr *in = pr->instr;
    if (pr->kind != BP_PROGRAM_MATMUL || pr->ninstr < 3 ||
        in[2].op != BRAID_OP_MATMUL || in[0].op != BP_INSTR_LOAD ||
        in[1].op != BP_INSTR_LOAD || in[0].input != 0 || in[1].input != 1 ||
        n->ninputs < 2)
        return false;
    for (uint32_t k = 2; k < n->ninputs; k++)
        if (n->inputs[k] == x) return false;
    for (uint32_t i = 3; i < pr->ninstr; i++)
        if (in[i].op == BP_INSTR_LOAD && in[i].input < 2 &&
            n->inputs[in[i].input] == x)
            return false;
    return true;
}

/* An attention node reading x only as q, k or v (not as its mask), whose
 * head dim is contiguous: its kernels walk rows through strides
 * (graph/attention.h). */
static bool attention_reads_ok(const bg_node *n, uint32_t x, const int64_t *s) {
    if (n->ninputs < 3 || (n->ninputs > 3 && n->inputs[3] == x)) return false;
    bool operand = false;
    for (int k = 0; k < 3; k++)
        operand = operand || n->inputs[k] == x;
    return operand && bg_attn_strides_ok(n->dims[3], s);
}

/* An unfused elementwise node (not a cast: same-dtype casts are memcpy)
 * reading x whole, at its own shape: its kernels walk x through strides. */
static bool elementwise_reads_ok(const bg_node *n, const bg_node *x,
                                 const int64_t *s) {
    if (bg_op(n->op)->kind != BRAID_KIND_ELEMENTWISE ||
        n->op == BRAID_OP_CAST || n->rank != x->rank)
        return false;
    for (int a = 0; a < n->rank; a++)
        if (n->dims[a] != x->dims[a] || s[a] < 0) return false;
    return true;
}

bool bp_layout_read_ok(const bp_plan *p, uint32_t u, uint32_t x,
                       const int64_t *s) {
    const bg_node *n = &p->res.graph->nodes[u];
    const bg_node *xn = &p->res.graph->nodes[x];
    if (!bp_device_equal(p->res.info[u].device, p->res.info[x].device))
        return false;
    if (elementwise_reads_ok(n, xn, s)) return true;
    if (n->op == BRAID_OP_ATTENTION) return attention_reads_ok(n, x, s);
    if (!bp_layout_gemm_ok(xn->rank, xn->dims, s, false)) return false;
    if (n->op == BRAID_OP_MATMUL) return n->ninputs == 2;
    return n->op == BRAID_OP_FUSED && program_reads_ok(p, u, x);
}

void bp_layout_gemm_operand(int rank, const int64_t *dims, const int64_t *s,
                            bool t, int nb, const int64_t *bdims,
                            bp_gemm_operand *o) {
    int64_t dense[BRAID_MAX_RANK];
    bool flip = false;
    if (!bp_layout_matrix(dims[rank - 2], dims[rank - 1], s[rank - 2],
                          s[rank - 1], &o->ld, &flip)) {
        bp_layout_dense(rank, dims, dense); /* never for a checked plan */
        s = dense;
        bp_layout_matrix(dims[rank - 2], dims[rank - 1], s[rank - 2],
                         s[rank - 1], &o->ld, &flip);
    }
    o->trans = t != flip;
    for (int i = 0; i < nb; i++) {
        int j = i - (nb - (rank - 2));
        o->batch[i] = j < 0 || dims[j] == 1 || bdims[i] == 1 ? 0 : s[j];
    }
}
