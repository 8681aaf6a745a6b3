/* runtime/cpu/cpu_kernels_elementwise.c — unary, binary, comparison, where, cast.
 *
 * Every op is one n-d walk (runtime/cpu/cpu_kernels.c) whose runs go to a typed
 * inner loop chosen once per node: f32 in float, f64 in double, i32 through
 * uint32 so overflow wraps, f16/bf16 staged through f32 in blocks. The
 * inner loops special-case unit and zero strides so the common contiguous
 * and scalar-broadcast cases vectorise. */
#include "graph/scalar.h"
#include "runtime/cpu/cpu_ew.h"
#include "runtime/cpu/cpu_kernels.h"

#include <stdatomic.h>
#include <string.h>

/* A run: n outputs at o, inputs at a/b/c stepping sa/sb/sc elements. */
typedef struct ew_ctx ew_ctx;
typedef void (*ew_fn)(const ew_ctx *c, int64_t n, void *o, const void *a,
                      int64_t sa, const void *b, int64_t sb);

struct ew_ctx {
    braid_op op;       /* the node's op */
    braid_dtype t;     /* dtype of the (value) inputs */
    ew_fn fn;          /* typed inner loop */
    char *out;         /* output base */
    size_t osz;        /* output element size */
    const char *in[3]; /* input bases */
    size_t isz[3];     /* input element sizes */
};

/* The typed loops are built per ISA (BR_CLONES): GPT-2's GELU chain runs
 * 16 lanes at a time on AVX-512 instead of SSE's 4. Each exported loop
 * calls a static multiversioned one: clang dispatches a multiversioned
 * function only where every declaration carries the attribute. */

/* ---- unary --------------------------------------------------------------- */

#define LOOP1(T, EXPR)                                                         \
    for (int64_t i = 0; i < n; i++) {                                          \
        T x = a[i];                                                            \
        o[i] = (EXPR);                                                         \
    }                                                                          \
    break

/* The rules of graph/scalar.h, one case per row of its lists; T is the
 * element type the enclosing function declares. */
#define UNARY_CASE(id, rule, cf, cd)                                           \
    case BRAID_OP_##id:                                                        \
        LOOP1(T, rule(T, x));
#define UNARY_I32_CASE(id, rule, ci)                                           \
    case BRAID_OP_##id:                                                        \
        LOOP1(T, rule(x));

/* One typed function of a list's ops: T is its element type. */
#define UNARY_FN(name, TT, LIST, CASE)                                         \
    BR_CLONES static void name##_isa(braid_op op, int64_t n, TT *restrict o,   \
                                     const TT *restrict a) {                   \
        typedef TT T;                                                          \
        switch (op) {                                                          \
            LIST(CASE)                                                         \
        default:                                                               \
            break;                                                             \
        }                                                                      \
    }                                                                          \
    void name(braid_op op, int64_t n, TT *restrict o, const TT *restrict a) {  \
        name##_isa(op, n, o, a);                                               \
    }

UNARY_FN(br_ew_unary_f32, float, BG_UNARY_OPS, UNARY_CASE)
UNARY_FN(br_ew_unary_f64, double, BG_UNARY_OPS, UNARY_CASE)
/* i32 through uint32: -INT32_MIN and INT32_MIN² wrap instead of being UB. */
UNARY_FN(br_ew_unary_i32, int32_t, BG_UNARY_I32_OPS, UNARY_I32_CASE)

/* Calls fn_f32, fn_f64 or fn_i32 by the dtype t and returns true; falls
 * through for other dtypes. */
#define EW_DISPATCH(fn, ...)                                                   \
    switch (t) {                                                               \
    case BRAID_F32:                                                            \
        fn##_f32(op, n, o, __VA_ARGS__);                                       \
        return true;                                                           \
    case BRAID_F64:                                                            \
        fn##_f64(op, n, o, __VA_ARGS__);                                       \
        return true;                                                           \
    case BRAID_I32:                                                            \
        fn##_i32(op, n, o, __VA_ARGS__);                                       \
        return true;                                                           \
    default:                                                                   \
        break;                                                                 \
    }

bool br_ew_unary(braid_dtype t, braid_op op, int64_t n, void *o,
                 const void *a) {
    EW_DISPATCH(br_ew_unary, a)
    return false;
}

static void ew_unary(const ew_ctx *c, int64_t n, void *o, const void *a,
                     int64_t sa, const void *b, int64_t sb);

/* A unary input read through a stride (a strided view, docs/memory.md):
 * gathered a block at a time, then the contiguous kernel. */
static void ew_unary_strided(const ew_ctx *c, int64_t n, void *o,
                             const void *a, int64_t sa) {
    size_t es = braid_dtype_size(c->t);
    _Alignas(16) unsigned char buf[BR_BLOCK * sizeof(double)];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        for (int64_t j = 0; j < m; j++)
            memcpy(buf + (size_t)j * es,
                   (const char *)a + (size_t)((i + j) * sa) * es, es);
        ew_unary(c, m, (char *)o + (size_t)i * c->osz, buf, 1, NULL, 0);
    }
}

/* A unary input has the output's shape: contiguous unless it is a strided
 * view. */
static void ew_unary(const ew_ctx *c, int64_t n, void *o, const void *a,
                     int64_t sa, const void *b, int64_t sb) {
    (void)b, (void)sb;
    if (sa != 1) {
        ew_unary_strided(c, n, o, a, sa);
        return;
    }
    if (br_ew_unary(c->t, c->op, n, o, a)) return;
    float x[BR_BLOCK], y[BR_BLOCK]; /* f16 / bf16 staged through f32 */
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_load_f32(c->t, (const char *)a + i * 2, 1, m, x);
        br_ew_unary_f32(c->op, m, y, x);
        br_store_f32(c->t, (char *)o + i * 2, m, y);
    }
}

/* ---- binary arithmetic and comparisons ----------------------------------- */

/* One loop per stride pattern: both contiguous, a scalar, b scalar, any. */
#define LOOP2(T, EXPR)                                                         \
    if (sa == 1 && sb == 1) {                                                  \
        for (int64_t i = 0; i < n; i++) {                                      \
            T x = a[i], y = b[i];                                              \
            o[i] = (EXPR);                                                     \
        }                                                                      \
    } else if (sa == 0 && sb == 1) {                                           \
        const T x = a[0];                                                      \
        for (int64_t i = 0; i < n; i++) {                                      \
            T y = b[i];                                                        \
            o[i] = (EXPR);                                                     \
        }                                                                      \
    } else if (sa == 1 && sb == 0) {                                           \
        const T y = b[0];                                                      \
        for (int64_t i = 0; i < n; i++) {                                      \
            T x = a[i];                                                        \
            o[i] = (EXPR);                                                     \
        }                                                                      \
    } else {                                                                   \
        for (int64_t i = 0; i < n; i++) {                                      \
            T x = a[i * sa], y = b[i * sb];                                    \
            o[i] = (EXPR);                                                     \
        }                                                                      \
    }                                                                          \
    break

#define BINARY_CASE(id, rule, cf, cd)                                          \
    case BRAID_OP_##id:                                                        \
        LOOP2(T, rule(T, x, y));
#define BINARY_I32_CASE(id, rule, ci)                                          \
    case BRAID_OP_##id:                                                        \
        LOOP2(T, rule(x, y));
#define COMPARE_CASE(id, cmp)                                                  \
    case BRAID_OP_##id:                                                        \
        LOOP2(T, x cmp y);

/* pow by one exponent of 2 or 3 for every element (GPT-2's tanh GELU
 * cubes its input): x·x or x·x·x in a loop that vectorises, where a pow
 * call per element cost 2.6x the whole GELU chain on the CPU. x·x is pow's
 * correctly rounded value; x·x·x rounds twice (within 1.5 ulp, where
 * glibc's powf and CUDA's are within 1-2) and keeps pow's signs, signed
 * zeros, infinities and NaNs. A statement that returns when it applies. */
#define POW_SMALL(T)                                                           \
    if (op == BRAID_OP_POW && sb == 0 && (b[0] == (T)2 || b[0] == (T)3)) {     \
        if (b[0] == (T)2)                                                      \
            for (int64_t i = 0; i < n; i++) {                                  \
                T x = a[i * sa];                                               \
                o[i] = x * x;                                                  \
            }                                                                  \
        else                                                                   \
            for (int64_t i = 0; i < n; i++) {                                  \
                T x = a[i * sa];                                               \
                o[i] = x * x * x;                                              \
            }                                                                  \
        return;                                                                \
    }
#define NO_FAST_PATH(T)

#define BINARY_FN(name, TT, LIST, CASE, FAST)                                  \
    BR_CLONES static void name##_isa(braid_op op, int64_t n, TT *restrict o,   \
                                     const TT *restrict a, int64_t sa,         \
                                     const TT *restrict b, int64_t sb) {       \
        typedef TT T;                                                          \
        FAST(T)                                                                \
        switch (op) {                                                          \
            LIST(CASE)                                                         \
        default:                                                               \
            break;                                                             \
        }                                                                      \
    }                                                                          \
    void name(braid_op op, int64_t n, TT *restrict o, const TT *restrict a,    \
              int64_t sa, const TT *restrict b, int64_t sb) {                  \
        name##_isa(op, n, o, a, sa, b, sb);                                    \
    }

BINARY_FN(br_ew_binary_f32, float, BG_BINARY_OPS, BINARY_CASE, POW_SMALL)
BINARY_FN(br_ew_binary_f64, double, BG_BINARY_OPS, BINARY_CASE, POW_SMALL)
BINARY_FN(br_ew_binary_i32, int32_t, BG_BINARY_I32_OPS, BINARY_I32_CASE,
          NO_FAST_PATH)

/* One comparison function per stored type P, comparing as type TT. */
#define COMPARE_FN(name, P, TT)                                                \
    void name(braid_op op, int64_t n, uint8_t *restrict o,                     \
              const P *restrict a, int64_t sa, const P *restrict b,            \
              int64_t sb) {                                                    \
        typedef TT T;                                                          \
        switch (op) {                                                          \
            BG_COMPARE_OPS(COMPARE_CASE)                                       \
        default:                                                               \
            break;                                                             \
        }                                                                      \
    }

COMPARE_FN(br_ew_compare_f32, float, float)
COMPARE_FN(br_ew_compare_f64, double, double)
COMPARE_FN(br_ew_compare_i32, int32_t, int32_t)
/* i64 takes eq/ne only (the builder's rule); exact in int64. */
COMPARE_FN(br_ew_compare_i64, int64_t, int64_t)
/* Bools compare as 0/1 whatever nonzero byte the caller stored. */
COMPARE_FN(br_ew_compare_bool, uint8_t, bool)

bool br_ew_binary(braid_dtype t, braid_op op, int64_t n, void *o, const void *a,
                  int64_t sa, const void *b, int64_t sb) {
    EW_DISPATCH(br_ew_binary, a, sa, b, sb)
    return false;
}

bool br_ew_compare(braid_dtype t, braid_op op, int64_t n, uint8_t *o,
                   const void *a, int64_t sa, const void *b, int64_t sb) {
    EW_DISPATCH(br_ew_compare, a, sa, b, sb)
    if (t == BRAID_I64) {
        br_ew_compare_i64(op, n, o, a, sa, b, sb);
        return true;
    }
    if (t != BRAID_BOOL) return false;
    br_ew_compare_bool(op, n, o, a, sa, b, sb);
    return true;
}

static void ew_binary(const ew_ctx *c, int64_t n, void *o, const void *a,
                      int64_t sa, const void *b, int64_t sb) {
    if (br_ew_binary(c->t, c->op, n, o, a, sa, b, sb)) return;
    float x[BR_BLOCK], y[BR_BLOCK], z[BR_BLOCK];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_load_f32(c->t, (const char *)a + i * sa * 2, sa, m, x);
        br_load_f32(c->t, (const char *)b + i * sb * 2, sb, m, y);
        br_ew_binary_f32(c->op, m, z, x, 1, y, 1);
        br_store_f32(c->t, (char *)o + i * 2, m, z);
    }
}

static void ew_compare(const ew_ctx *c, int64_t n, void *o, const void *a,
                       int64_t sa, const void *b, int64_t sb) {
    if (br_ew_compare(c->t, c->op, n, o, a, sa, b, sb)) return;
    /* f16 / bf16 → f32 is exact, so comparing in f32 compares the stored
     * values. */
    float x[BR_BLOCK], y[BR_BLOCK];
    for (int64_t i = 0; i < n; i += BR_BLOCK) {
        int64_t m = n - i < BR_BLOCK ? n - i : BR_BLOCK;
        br_load_f32(c->t, (const char *)a + i * sa * 2, sa, m, x);
        br_load_f32(c->t, (const char *)b + i * sb * 2, sb, m, y);
        br_ew_compare_f32(c->op, m, (uint8_t *)o + i, x, 1, y, 1);
    }
}

/* ---- where --------------------------------------------------------------- */

#define WHERE_LOOP(T)                                                          \
    do {                                                                       \
        T *restrict o = out;                                                   \
        const T *restrict a = a_, *restrict b = b_;                            \
        if (sc == 1 && sa == 1 && sb == 1)                                     \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = cond[i] ? a[i] : b[i];                                  \
        else                                                                   \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = cond[i * sc] ? a[i * sa] : b[i * sb];                   \
    } while (0)

/* Selection copies bytes, so it is exact for every dtype. */
void br_ew_where(size_t esize, int64_t n, void *out,
                 const uint8_t *restrict cond, int64_t sc, const void *a_,
                 int64_t sa, const void *b_, int64_t sb) {
    switch (esize) {
    case 1:
        WHERE_LOOP(uint8_t);
        break;
    case 2:
        WHERE_LOOP(uint16_t);
        break;
    case 4:
        WHERE_LOOP(uint32_t);
        break;
    default:
        WHERE_LOOP(uint64_t);
        break;
    }
}

/* ---- the walk ------------------------------------------------------------ */

static void seg_two(void *ctx, int64_t o, int64_t n, const int64_t *off,
                    const int64_t *step) {
    const ew_ctx *c = ctx;
    const char *b = c->in[1] ? c->in[1] + off[1] * c->isz[1] : NULL;
    c->fn(c, n, c->out + o * c->osz, c->in[0] + off[0] * c->isz[0], step[0], b,
          c->in[1] ? step[1] : 0);
}

static void seg_where(void *ctx, int64_t o, int64_t n, const int64_t *off,
                      const int64_t *step) {
    const ew_ctx *c = ctx;
    br_ew_where(c->osz, n, c->out + o * c->osz,
                (const uint8_t *)c->in[0] + off[0], step[0],
                c->in[1] + off[1] * c->isz[1], step[1],
                c->in[2] + off[2] * c->isz[2], step[2]);
}

void br_elementwise_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    ew_ctx c = {.op = n->op, .out = a->out, .osz = braid_dtype_size(n->dtype)};
    br_nd it;
    br_nd_init(&it, n->rank, n->dims);
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *in = bg_node_at(a->g, n->inputs[k]);
        c.in[k] = a->in[k];
        c.isz[k] = braid_dtype_size(in->dtype);
        if (a->in_strides && a->in_strides[k]) /* a strided view */
            br_nd_add_strided(&it, a->in_strides[k]);
        else
            br_nd_add_broadcast(&it, in->rank, in->dims);
    }
    c.t = bg_node_at(a->g, n->inputs[n->ninputs - 1])->dtype;
    br_nd_collapse(&it);
    if (n->op == BRAID_OP_WHERE) {
        br_nd_parallel(a->pool, &it, seg_where, &c);
        return;
    }
    c.fn = n->ninputs == 1           ? ew_unary
           : bg_op_is_compare(n->op) ? ew_compare
                                     : ew_binary;
    br_nd_parallel(a->pool, &it, seg_two, &c);
}

/* Kernels exist for what the builder accepts; anything else (a corrupt
 * graph) is refused before it runs. */
braid_status br_elementwise_prepare(const braid_graph *g, uint32_t id,
                                    size_t *scratch) {
    (void)scratch;
    const bg_node *n = bg_node_at(g, id);
    braid_dtype t = bg_node_at(g, n->inputs[n->ninputs - 1])->dtype;
    /* where and cast take every dtype; the table's dtypes column says the
     * rest (compare ops: of their operands) */
    bool ok = n->op == BRAID_OP_WHERE || n->op == BRAID_OP_CAST ||
              bg_op_accepts(n->op, t);
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_new: node %u: no CPU kernel for %s "
                             "on %s",
                             id, bg_op(n->op)->name, braid_dtype_name(t));
}

/* ---- cast ---------------------------------------------------------------- */

typedef struct cast_ctx {
    braid_dtype from, to; /* dtypes */
    const char *in;       /* input base */
    char *out;            /* output base */
    _Atomic int64_t bad;  /* checked casts: first element that does not
                             fit (INT64_MAX: none) */
} cast_ctx;

/* Through double, which holds every dtype's values exactly (i64: up to
 * ±2^53), then stored by bg_store's rules: the same result as the reference
 * evaluator. */
static void cast_range(void *ctx, int64_t b, int64_t e) {
    cast_ctx *c = ctx;
    size_t is = braid_dtype_size(c->from), os = braid_dtype_size(c->to);
    double tmp[BR_BLOCK];
    for (int64_t i = b; i < e; i += BR_BLOCK) {
        int64_t m = e - i < BR_BLOCK ? e - i : BR_BLOCK;
        br_load_f64(c->from, c->in + i * is, 1, m, tmp);
        br_store_f64(c->to, c->out + i * os, m, tmp);
    }
}

/* A checked narrowing from i64 (bg_cast_checked): exact integers; the
 * first element out of the target's range is noted, never wrapped, and
 * written as 0 (what the GPU kernel writes), so later kernels of the run
 * read defined values. */
static void cast_checked_range(void *ctx, int64_t b, int64_t e) {
    cast_ctx *c = ctx;
    const int64_t *x = (const int64_t *)c->in;
    int64_t lo, hi;
    bg_int_range(c->to, &lo, &hi);
    for (int64_t i = b; i < e; i++) {
        if (x[i] < lo || x[i] > hi) {
            int64_t seen = atomic_load(&c->bad);
            while (i < seen && !atomic_compare_exchange_weak(&c->bad, &seen, i))
                ;
            bg_store_int(c->to, c->out, i, 0);
            continue;
        }
        bg_store_int(c->to, c->out, i, x[i]); /* exact: it fits */
    }
}

static void copy_range(void *ctx, int64_t b, int64_t e) {
    const cast_ctx *c = ctx;
    size_t s = braid_dtype_size(c->to);
    memcpy(c->out + b * s, c->in + b * s, (size_t)(e - b) * s);
}

braid_status br_cast_run(const br_kernel_args *a) {
    const bg_node *n = a->node;
    cast_ctx c = {bg_node_at(a->g, n->inputs[0])->dtype, n->dtype, a->in[0],
                  a->out, INT64_MAX};
    bool same = c.from == c.to && c.to != BRAID_BOOL; /* bools normalise */
    bool checked = bg_cast_checked(c.from, c.to);
    br_parallel_for(a->pool, bg_numel(n), BR_GRAIN,
                    same      ? copy_range
                    : checked ? cast_checked_range
                              : cast_range,
                    &c);
    int64_t bad = atomic_load(&c.bad);
    if (bad == INT64_MAX) return BRAID_OK;
    int64_t v = bg_load_int(c.from, a->in[0], bad);
    if (!a->check) return bg_cast_range_error(a->g, a->id, bad, v);
    /* the run's error once the run is done (br_run_check_take), in the
     * same words, as the GPU kernel's */
    br_run_check_record(a->check, a->id, BC_CHECK_CAST, v, bad,
                        (int64_t)c.to);
    return BRAID_OK;
}
