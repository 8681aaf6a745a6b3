/* runtime/cpu/cpu_kernels.c — CPU kernel dispatch, n-d iteration, conversions. */
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/collective_host.h"
#include "runtime/cpu/cpu_fused.h"

#include <stdlib.h>
#include <string.h>

bool br_cpu_avx512f(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    static int state; /* 0: not yet known, 1: yes, 2: no */
    int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
    if (!s) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("avx512f") ? 1 : 2;
        __atomic_store_n(&state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
#else
    return false;
#endif
}

bool br_env_is(const char *name, const char *value, int *state) {
    int s = __atomic_load_n(state, __ATOMIC_RELAXED);
    if (!s) {
        const char *env = getenv(name);
        s = env && strcmp(env, value) == 0 ? 1 : 2;
        __atomic_store_n(state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

/* ---- dispatch ------------------------------------------------------------ */

void *br_cpu_derive(const braid_graph *g, uint32_t id, const void *const *in,
                    const bp_program *program, br_pool *pool) {
    const bg_node *n = bg_node_at(g, id);
    if (bg_op(n->op)->kind == BRAID_KIND_CONV)
        return br_conv_derive(g, id, in, pool);
    if (n->op == BRAID_OP_MATMUL)
        return br_matmul_derive(g, n, n->attr.flags, in, pool);
    if (program && program->kind == BP_PROGRAM_MATMUL)
        return br_matmul_derive(g, n, program->flags, in, pool);
    bg_node cv; /* a CONV program's conv: its inputs are the node's first */
    if (program && program->kind == BP_PROGRAM_CONV &&
        bp_program_conv_node(program, g, id, &cv))
        return br_conv_derive_node(g, &cv, in, pool);
    return NULL;
}

braid_status br_cpu_prepare(const braid_graph *g, uint32_t id,
                            size_t *scratch) {
    const bg_node *n = bg_node_at(g, id);
    switch (bg_op(n->op)->kind) {
    case BRAID_KIND_SOURCE:
        if (n->op != BRAID_OP_IOTA || n->rank == 0 ||
            (n->attr.axis >= 0 && n->attr.axis < n->rank))
            return BRAID_OK;
        return bg_set_last_error(BRAID_ERR_INTERNAL,
                                 "braid_exec_new: node %u: iota axis %d out "
                                 "of range for rank %d",
                                 id, (int)n->attr.axis, (int)n->rank);
    case BRAID_KIND_BROADCAST:
    case BRAID_KIND_SHAPE:
    case BRAID_KIND_COPY:
        return br_shape_prepare(g, id);
    case BRAID_KIND_ELEMENTWISE:
        return br_elementwise_prepare(g, id, scratch);
    case BRAID_KIND_REDUCE:
        return br_reduce_prepare(g, id, scratch);
    case BRAID_KIND_ROW:
        return n->op == BRAID_OP_LAYER_NORM ? br_layer_norm_prepare(g, id)
                                            : br_softmax_prepare(g, id);
    case BRAID_KIND_MATMUL:
        return br_matmul_prepare(g, id, scratch);
    case BRAID_KIND_FUSED:
        return br_fused_prepare(g, id, scratch);
    case BRAID_KIND_COLLECTIVE:
        return br_coll_check_local(g, id, "braid_exec_new");
    case BRAID_KIND_STATE: /* assign: copies its value (input 1) */
        return BRAID_OK;
    case BRAID_KIND_INDEX:
        return br_index_prepare(g, id);
    case BRAID_KIND_CONV: /* conv ops */
        return br_conv_prepare(g, id, scratch);
    case BRAID_KIND_WINDOW:
        return n->op == BRAID_OP_RESIZE ? br_resize_prepare(g, id, scratch)
                                        : br_pool_prepare(g, id);
    case BRAID_KIND_AXIS:
        return br_axis_prepare(g, id, scratch);
    case BRAID_KIND_ATTENTION:
        return br_attention_prepare(g, id, scratch);
    case BRAID_KIND_COUNT_:
        break;
    }
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: op %s has no CPU "
                             "kernel",
                             id, bg_op(n->op)->name);
}

braid_status br_cpu_run(const br_kernel_args *a) {
    switch (bg_op(a->node->op)->kind) {
    case BRAID_KIND_SOURCE:
        br_source_run(a);
        return BRAID_OK;
    case BRAID_KIND_ELEMENTWISE:
        if (a->node->op == BRAID_OP_CAST) return br_cast_run(a);
        br_elementwise_run(a);
        return BRAID_OK;
    case BRAID_KIND_REDUCE:
        br_reduce_run(a);
        return BRAID_OK;
    case BRAID_KIND_ROW:
        if (a->node->op == BRAID_OP_LAYER_NORM)
            br_layer_norm_run(a);
        else
            br_softmax_run(a);
        return BRAID_OK;
    case BRAID_KIND_MATMUL:
        br_matmul_run(a);
        return BRAID_OK;
    case BRAID_KIND_BROADCAST:
    case BRAID_KIND_SHAPE:
    case BRAID_KIND_COPY:
        br_shape_run(a);
        return BRAID_OK;
    case BRAID_KIND_FUSED:
        br_fused_run(a);
        return BRAID_OK;
    case BRAID_KIND_COLLECTIVE:
        br_coll_cpu_run(a->g, a->id, a->in, a->out);
        return BRAID_OK;
    case BRAID_KIND_STATE: /* assign: the variable's bytes are a->out */
        memmove(a->out, a->in[1], bg_nbytes(a->node));
        return BRAID_OK;
    case BRAID_KIND_INDEX: /* failures go to the run check record */
        br_index_run(a);
        return BRAID_OK;
    case BRAID_KIND_CONV: /* conv ops */
        br_conv_run(a);
        return BRAID_OK;
    case BRAID_KIND_WINDOW:
        if (a->node->op == BRAID_OP_RESIZE)
            br_resize_run(a);
        else
            br_pool_run(a);
        return BRAID_OK;
    case BRAID_KIND_AXIS:
        br_axis_run(a);
        return BRAID_OK;
    case BRAID_KIND_ATTENTION:
        br_attention_run(a);
        return BRAID_OK;
    case BRAID_KIND_COUNT_:
        break;
    }
    return BRAID_OK;
}

/* ---- n-d iteration ------------------------------------------------------- */

typedef struct wave {
    br_slot_fn fn;
    void *ctx;
    int64_t ntasks;
    int64_t next; /* the next task not taken (atomic) */
} wave;

/* Workers [b, e): worker j takes the next task not taken, runs it in slot
 * j, and goes on until none is left. */
static void wave_workers(void *ctx, int64_t b, int64_t e) {
    wave *w = ctx;
    for (int64_t j = b; j < e; j++)
        for (;;) {
            int64_t t = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
            if (t >= w->ntasks) break;
            w->fn(w->ctx, t, j);
        }
}

/* One pass over the pool, not a wave per `slots` tasks: a barrier per wave
 * cost ResNet's stem (261 blocks on 2 threads) a wake-up and the slower
 * task's wait 131 times. Each slot is used by one worker at a time, and a
 * task's result does not depend on its slot, so the bits stay the same. */
void br_waves(br_pool *pool, int64_t ntasks, int64_t slots, br_slot_fn fn,
              void *ctx) {
    wave w = {fn, ctx, ntasks, 0};
    if (slots > ntasks) slots = ntasks;
    if (slots < 1) return;
    br_parallel_for(pool, slots, 1, wave_workers, &w);
}

void br_dense_strides(int rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void br_nd_init(br_nd *it, int rank, const int64_t *dims) {
    memset(it, 0, sizeof *it);
    it->rank = rank > 0 ? rank : 1;
    it->numel = 1;
    for (int i = 0; i < rank; i++) {
        it->dims[i] = dims[i];
        it->numel *= dims[i];
    }
    if (rank == 0) it->dims[0] = 1;
}

void br_nd_add_broadcast(br_nd *it, int rank, const int64_t *dims) {
    int64_t strides[BRAID_MAX_RANK];
    br_dense_strides(rank, dims, strides);
    int64_t *st = it->st[it->nin++];
    for (int i = 0; i < it->rank; i++) {
        int j = i - (it->rank - rank);
        st[i] = (j < 0 || dims[j] == 1) ? 0 : strides[j];
    }
}

void br_nd_add_strided(br_nd *it, const int64_t *strides) {
    int64_t *st = it->st[it->nin++];
    for (int i = 0; i < it->rank; i++)
        st[i] = strides[i];
}

/* Merges dim i into the kept dim p before it when every input steps over
 * the pair as over one longer dim. */
static bool mergeable(const br_nd *it, int p, int i, const int64_t *dims) {
    for (int k = 0; k < it->nin; k++)
        if (it->st[k][p] != it->st[k][i] * dims[i]) return false;
    return true;
}

void br_nd_collapse(br_nd *it) {
    br_nd out = *it;
    out.rank = 0;
    for (int i = 0; i < it->rank; i++) {
        if (it->dims[i] == 1)
            continue; /* size-1 dims contribute nothing to addressing */
        int p = out.rank - 1;
        if (p >= 0 && mergeable(&out, p, i, it->dims)) {
            out.dims[p] *= it->dims[i];
            for (int k = 0; k < it->nin; k++)
                out.st[k][p] = it->st[k][i];
            continue;
        }
        out.dims[out.rank] = it->dims[i];
        for (int k = 0; k < it->nin; k++)
            out.st[k][out.rank] = it->st[k][i];
        out.rank++;
    }
    if (out.rank == 0) {
        out.rank = 1;
        out.dims[0] = 1;
        for (int k = 0; k < it->nin; k++)
            out.st[k][0] = 0;
    }
    *it = out;
}

void br_nd_walk(const br_nd *it, int64_t begin, int64_t end, br_nd_seg_fn seg,
                void *ctx) {
    if (begin >= end) return;
    const int r = it->rank, nin = it->nin;
    int64_t idx[BRAID_MAX_RANK], off[BR_ND_MAX_IN] = {0}, step[BR_ND_MAX_IN];
    int64_t rem = begin;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = rem % it->dims[d];
        rem /= it->dims[d];
        for (int k = 0; k < nin; k++)
            off[k] += idx[d] * it->st[k][d];
    }
    for (int k = 0; k < nin; k++)
        step[k] = it->st[k][r - 1];
    for (int64_t o = begin;;) {
        int64_t n = it->dims[r - 1] - idx[r - 1];
        if (n > end - o) n = end - o;
        seg(ctx, o, n, off, step);
        o += n;
        if (o >= end) return;
        /* The run reached the end of the innermost dim: carry. */
        for (int k = 0; k < nin; k++)
            off[k] += step[k] * n;
        idx[r - 1] += n;
        for (int d = r - 1; d > 0 && idx[d] == it->dims[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < nin; k++)
                off[k] += it->st[k][d - 1] - it->st[k][d] * it->dims[d];
        }
    }
}

typedef struct nd_job {
    const br_nd *it;  /* the iteration */
    br_nd_seg_fn seg; /* per run */
    void *ctx;        /* its context */
} nd_job;

static void nd_range(void *ctx, int64_t b, int64_t e) {
    const nd_job *j = ctx;
    br_nd_walk(j->it, b, e, j->seg, j->ctx);
}

void br_nd_parallel(br_pool *pool, const br_nd *it, br_nd_seg_fn seg,
                    void *ctx) {
    nd_job j = {it, seg, ctx};
    br_parallel_for(pool, it->numel, BR_GRAIN, nd_range, &j);
}

/* ---- conversions --------------------------------------------------------- */

static inline int32_t sat_i32(double x) {
    if (x != x) return 0;
    if (x >= 2147483647.0) return INT32_MAX;
    if (x <= -2147483648.0) return INT32_MIN;
    return (int32_t)x;
}

static inline int64_t sat_i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

void br_load_f32(braid_dtype t, const void *src, int64_t step, int64_t n,
                 float *dst) {
    switch (t) {
    case BRAID_F32: {
        const float *s = src;
        if (step == 1)
            memcpy(dst, s, (size_t)n * sizeof *s);
        else
            for (int64_t i = 0; i < n; i++)
                dst[i] = s[i * step];
        return;
    }
    case BRAID_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = bg_f16_to_f32(((const uint16_t *)src)[i * step]);
        return;
    case BRAID_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = bg_bf16_to_f32(((const uint16_t *)src)[i * step]);
        return;
    case BRAID_F64:
        for (int64_t i = 0; i < n; i++)
            dst[i] = (float)((const double *)src)[i * step];
        return;
    case BRAID_I32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = (float)((const int32_t *)src)[i * step];
        return;
    case BRAID_BOOL:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)src)[i * step] != 0;
        return;
    case BRAID_I64: /* through double, as bg_load reads it */
        for (int64_t i = 0; i < n; i++)
            dst[i] = (float)(double)((const int64_t *)src)[i * step];
        return;
    case BRAID_DTYPE_COUNT_:
        break;
    }
}

void br_load_f64(braid_dtype t, const void *src, int64_t step, int64_t n,
                 double *dst) {
    switch (t) {
    case BRAID_F64: {
        const double *s = src;
        if (step == 1)
            memcpy(dst, s, (size_t)n * sizeof *s);
        else
            for (int64_t i = 0; i < n; i++)
                dst[i] = s[i * step];
        return;
    }
    case BRAID_F32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const float *)src)[i * step];
        return;
    case BRAID_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = bg_f16_to_f32(((const uint16_t *)src)[i * step]);
        return;
    case BRAID_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = bg_bf16_to_f32(((const uint16_t *)src)[i * step]);
        return;
    case BRAID_I32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const int32_t *)src)[i * step];
        return;
    case BRAID_BOOL:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)src)[i * step] != 0;
        return;
    case BRAID_I64:
        for (int64_t i = 0; i < n; i++)
            dst[i] = (double)((const int64_t *)src)[i * step];
        return;
    case BRAID_DTYPE_COUNT_:
        break;
    }
}

void br_store_f32(braid_dtype t, void *dst, int64_t n, const float *src) {
    switch (t) {
    case BRAID_F32:
        memcpy(dst, src, (size_t)n * sizeof *src);
        return;
    case BRAID_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = bg_f32_to_f16(src[i]);
        return;
    case BRAID_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = bg_f32_to_bf16(src[i]);
        return;
    case BRAID_F64:
        for (int64_t i = 0; i < n; i++)
            ((double *)dst)[i] = src[i];
        return;
    case BRAID_I32:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)dst)[i] = sat_i32(src[i]);
        return;
    case BRAID_BOOL:
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = src[i] != 0;
        return;
    case BRAID_I64:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)dst)[i] = sat_i64(src[i]);
        return;
    case BRAID_DTYPE_COUNT_:
        break;
    }
}

void br_store_f64(braid_dtype t, void *dst, int64_t n, const double *src) {
    switch (t) {
    case BRAID_F64:
        memcpy(dst, src, (size_t)n * sizeof *src);
        return;
    case BRAID_F32:
        for (int64_t i = 0; i < n; i++)
            ((float *)dst)[i] = (float)src[i];
        return;
    case BRAID_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = bg_f32_to_f16((float)src[i]);
        return;
    case BRAID_BF16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = bg_f32_to_bf16((float)src[i]);
        return;
    case BRAID_I32:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)dst)[i] = sat_i32(src[i]);
        return;
    case BRAID_BOOL:
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = src[i] != 0;
        return;
    case BRAID_I64:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)dst)[i] = sat_i64(src[i]);
        return;
    case BRAID_DTYPE_COUNT_:
        break;
    }
}
