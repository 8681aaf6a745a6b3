/* codegen/gather.c — shape ops (permute, slice, broadcast_to, reshape,
 * concat) as one strided gather kernel, and the generators (fill, iota,
 * random_uniform, random_normal).
 *
 * A block covers 4 × 256 consecutive output elements, thread t doing
 * elements t, t + 256, t + 512, t + 768 of it, so every access of a warp
 * is to consecutive addresses of the output. Shape ops copy elements
 * without converting them (bit-exact for every dtype); the offset into the
 * input is a sum of constant-divisor terms (bc_terms) plus a constant
 * start. Generators round their double value with graph/dtype.c's bg_store
 * rules; random values come from graph/rng.c's own functions. */
#include "codegen/internal.h"

#include <stdio.h>
#include <string.h>

#define PER_THREAD 4

/* Writes a double expression v converted to t's storage by bg_store's
 * rules (f16/bf16 via f32, i32 truncating and saturating, bool != 0). */
static void emit_store_double(bc_buf *b, braid_dtype t, const char *v) {
    switch (t) {
    case BRAID_F64:
        bc_buf_printf(b, "(%s)", v);
        return;
    case BRAID_F16:
        bc_buf_printf(b, "bc_f2h((float)(%s))", v);
        return;
    case BRAID_BF16:
        bc_buf_printf(b, "bc_f2b((float)(%s))", v);
        return;
    case BRAID_I32:
        bc_buf_printf(b, "bc_d2i(%s)", v);
        return;
    case BRAID_I64:
        bc_buf_printf(b, "bc_d2l(%s)", v);
        return;
    case BRAID_BOOL:
        bc_buf_printf(b, "(unsigned char)((%s) != 0)", v);
        return;
    default:
        bc_buf_printf(b, "(float)(%s)", v);
        return;
    }
}

static void set_1d_launch(bc_kernel *k, const char *entry, int64_t numel,
                          int64_t per_thread) {
    int64_t blocks = bc_cdiv(numel, (int64_t)BC_BLOCK * per_thread);
    k->nlaunch = numel > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", entry);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = BC_BLOCK;
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
}

static const char *idx_type(int64_t numel) {
    return numel < ((int64_t)1 << 32) - ((int64_t)1 << 16)
               ? "unsigned"
               : "unsigned long long";
}

/* The loop over this thread's PER_THREAD elements; the body follows.
 * Cheap bodies are unrolled; costly ones (the generators) are not, which
 * keeps the module small and NVRTC fast. */
static void emit_loop_head(bc_buf *b, const char *ix, int64_t numel,
                           bool unroll) {
    bc_buf_printf(b,
                  "    const %s n = %lld;\n"
                  "    const %s first = (%s)blockIdx.x * %d + threadIdx.x;\n"
                  "#pragma unroll %s\n"
                  "    for (int j = 0; j < %d; j++) {\n"
                  "        const %s i = first + (%s)j * %d;\n"
                  "        if (i >= n) return;\n",
                  ix, (long long)numel, ix, ix, BC_BLOCK * PER_THREAD,
                  unroll ? "" : "1", PER_THREAD, ix, ix, BC_BLOCK);
}

static braid_status too_big(const bp_plan *p, uint32_t id, int64_t numel) {
    if (bc_cdiv(numel, (int64_t)BC_BLOCK * PER_THREAD) <=
        (int64_t)BC_GRID_X_MAX)
        return BRAID_OK;
    return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                   "%lld elements are too many for one launch",
                   (long long)numel);
}

/* ---- shape ops
 * --------------------------------------------------------------------- */

/* Per output dim, the input's element stride, and the constant start. */
static void gather_strides(const bg_node *n, const bg_node *x, int64_t *st,
                           int64_t *start) {
    int64_t xs[BRAID_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->dims[d];
    }
    *start = 0;
    switch (n->op) {
    case BRAID_OP_PERMUTE:
        for (int d = 0; d < n->rank; d++)
            st[d] = xs[n->attr.perm[d]];
        return;
    case BRAID_OP_SLICE:
        for (int d = 0; d < n->rank; d++) {
            st[d] = xs[d] * n->attr.step[d];
            *start += n->attr.start[d] * xs[d];
        }
        return;
    case BRAID_OP_BROADCAST_TO:
        bc_broadcast_strides(n->rank, n->dims, x->rank, x->dims, st);
        return;
    default: /* reshape: the same elements in the same order */
        s = 1;
        for (int d = n->rank - 1; d >= 0; d--) {
            st[d] = s;
            s *= n->dims[d];
        }
        return;
    }
}

static void emit_concat_body(bc_buf *b, const bp_plan *p, uint32_t id,
                             const char *ix) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    int axis = n->attr.axis;
    int64_t inner = 1;
    for (int d = axis + 1; d < n->rank; d++)
        inner *= n->dims[d];
    int64_t row = n->dims[axis] * inner, at = 0;
    bc_buf_printf(b,
                  "        const %s o = i / (%s)%lld, rem = i %% (%s)%lld;\n"
                  "        (void)o;\n        ",
                  ix, ix, (long long)(row > 0 ? row : 1), ix,
                  (long long)(row > 0 ? row : 1));
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[k]);
        int64_t part = x->dims[axis] * inner;
        const bp_tensor_place *pl = &p->res.info[n->inputs[k]].place;
        bool in_place = pl->storage == BP_STORAGE_VIEW && pl->base == id;
        if (part > 0) {
            bc_buf_printf(b, "if (rem < (%s)%lld) {\n", ix,
                          (long long)(at + part));
            if (!in_place)
                bc_buf_printf(b,
                              "            out[i] = in%u[o * (%s)%lld + "
                              "(rem - (%s)%lld)];\n",
                              (unsigned)k, ix, (long long)part, ix,
                              (long long)at);
            bc_buf_puts(b, "        } else ");
        }
        at += part;
    }
    bc_buf_puts(b, "{\n        }\n");
}

braid_status bc_gen_gather(const bp_plan *p, uint32_t id, bc_buf *b,
                           bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    int64_t numel = bg_numel(n);
    braid_status s = too_big(p, id, numel);
    if (s != BRAID_OK) return s;
    int64_t biggest = numel; /* offsets address the inputs too */
    for (uint32_t j = 0; j < n->ninputs; j++) {
        int64_t xn = bg_numel(bg_node_at(p->res.graph, n->inputs[j]));
        if (xn > biggest) biggest = xn;
    }
    const char *ix = idx_type(biggest);
    k->kind = BC_KERNEL_GATHER;
    char entry[BC_NAME_MAX];
    snprintf(entry, sizeof entry, "%s", BC_ENTRY);
    bc_emit_signature(b, p, id, entry, BC_BLOCK, NULL);
    emit_loop_head(b, ix, numel, true);
    if (n->op == BRAID_OP_CONCAT) {
        if (n->attr.axis < 0 || n->attr.axis >= n->rank)
            return bc_fail(p, id, BRAID_ERR_INTERNAL,
                           "concat axis %d out of range", (int)n->attr.axis);
        emit_concat_body(b, p, id, ix);
    } else {
        const bg_node *x = bg_node_at(p->res.graph, n->inputs[0]);
        int64_t st[BRAID_MAX_RANK], start;
        bc_term t[BRAID_MAX_RANK];
        gather_strides(n, x, st, &start);
        int nt = bc_terms(n->rank, n->dims, st, t);
        bc_buf_printf(b, "        out[i] = in0[(%s)%lld + ", ix,
                      (long long)start);
        bc_emit_terms(b, t, nt, "i", ix);
        bc_buf_puts(b, "];\n");
    }
    bc_buf_puts(b, "    }\n}\n\n");
    set_1d_launch(k, entry, numel, PER_THREAD);
    return BRAID_OK;
}

/* ---- generators
 * -------------------------------------------------------------------- */

/* fill: the value stored once by bg_store, written VEC at a time. */
static void emit_fill(bc_buf *b, const bg_node *n, const char *ix,
                      int64_t numel, int vec) {
    unsigned char raw[8] = {0};
    bg_store(n->dtype, raw, 0, n->attr.value[0]);
    uint64_t bits = 0;
    memcpy(&bits, raw, braid_dtype_size(n->dtype));
    const char *st = bc_stype(n->dtype);
    bc_buf_printf(b,
                  "    const %s n = %lld;\n"
                  "    const %s base = ((%s)blockIdx.x * %d + "
                  "threadIdx.x) * %d;\n"
                  "    if (base >= n) return;\n"
                  "    %s v;\n    const bc_u64 bits = 0x%llxull;\n"
                  "    memcpy(&v, &bits, sizeof v);\n"
                  "    if (base + %d <= n && bc_al16(out)) {\n"
                  "        %s r[%d];\n#pragma unroll\n"
                  "        for (int j = 0; j < %d; j++) r[j] = v;\n"
                  "        bc_vstore(out + base, r);\n"
                  "        return;\n    }\n"
                  "    for (%s i = base; i < n && i < base + %d; i++) "
                  "out[i] = v;\n",
                  ix, (long long)numel, ix, ix, BC_BLOCK, vec, st,
                  (unsigned long long)bits, vec, st, vec, vec, ix, vec);
}

static void emit_iota(bc_buf *b, const bg_node *n, const char *ix,
                      int64_t numel) {
    int64_t inner = 1, dim = 1;
    if (n->rank > 0) {
        for (int d = n->attr.axis + 1; d < n->rank; d++)
            inner *= n->dims[d];
        dim = n->dims[n->attr.axis];
    }
    emit_loop_head(b, ix, numel, true);
    bc_buf_printf(b,
                  "        const double v = (double)((i / (%s)%lld) %% "
                  "(%s)%lld);\n        out[i] = ",
                  ix, (long long)inner, ix, (long long)(dim > 0 ? dim : 1));
    emit_store_double(b, n->dtype, "v");
    bc_buf_puts(b, ";\n    }\n");
}

static void emit_random(bc_buf *b, const bg_node *n, const char *ix,
                        int64_t numel) {
    uint64_t a, c;
    memcpy(&a, &n->attr.value[0], sizeof a);
    memcpy(&c, &n->attr.value[1], sizeof c);
    emit_loop_head(b, ix, numel, false);
    bc_buf_printf(b,
                  "        const double v = bc_%s(0x%llxull, "
                  "(long long)i, __longlong_as_double(0x%016llxLL), "
                  "__longlong_as_double(0x%016llxLL));\n        out[i] = ",
                  n->op == BRAID_OP_RANDOM_UNIFORM ? "uniform" : "normal",
                  (unsigned long long)n->attr.seed, (unsigned long long)a,
                  (unsigned long long)c);
    emit_store_double(b, n->dtype, "v");
    bc_buf_puts(b, ";\n    }\n");
}

braid_status bc_gen_source(const bp_plan *p, uint32_t id, bc_buf *b,
                           bc_kernel *k, bool *rng) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    int64_t numel = bg_numel(n);
    braid_status s = too_big(p, id, numel);
    if (s != BRAID_OK) return s;
    bool random =
        n->op == BRAID_OP_RANDOM_UNIFORM || n->op == BRAID_OP_RANDOM_NORMAL;
    if (random && !bc_have_rng())
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "random generators need graph/rng.c embedded, which "
                       "this build (without the CUDA toolkit) lacks");
    if (n->op == BRAID_OP_IOTA && n->rank > 0 &&
        (n->attr.axis < 0 || n->attr.axis >= n->rank))
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "iota axis %d out of range",
                       (int)n->attr.axis);
    const char *ix = idx_type(numel);
    k->kind = BC_KERNEL_SOURCE;
    char entry[BC_NAME_MAX];
    snprintf(entry, sizeof entry, "%s", BC_ENTRY);
    bc_emit_signature(b, p, id, entry, BC_BLOCK, NULL);
    int vec = (int)(16 / braid_dtype_size(n->dtype));
    if (vec > 8) vec = 8;
    if (n->op == BRAID_OP_FILL) {
        emit_fill(b, n, ix, numel, vec);
        set_1d_launch(k, entry, numel, vec);
    } else if (n->op == BRAID_OP_IOTA) {
        emit_iota(b, n, ix, numel);
        set_1d_launch(k, entry, numel, PER_THREAD);
    } else if (random) {
        emit_random(b, n, ix, numel);
        set_1d_launch(k, entry, numel, PER_THREAD);
        *rng = true;
    } else {
        return bc_fail(p, id, BRAID_ERR_INTERNAL,
                       "%s is not a generator codegen knows",
                       bg_op(n->op)->name);
    }
    bc_buf_puts(b, "}\n\n");
    return BRAID_OK;
}
