/* passes/channels_last.c — GPU convolutions in channels-last layout, and
 * the elementwise work, pools and pooling reductions around them with them
 * (docs/architecture.md, the pass table).
 *
 * cuDNN's tensor-core convolutions (TF32, f16, bf16) work on NHWC tiles:
 * given NCHW tensors they transpose on the way in and out, or pick slower
 * kernels. On the H200, PyTorch's own ResNet-18 convolutions at batch 8
 * with TF32 took 0.551 ms in NCHW and 0.331 ms channels last; braid's
 * whole ResNet-18 went from 0.626 to 0.456 ms with this pass
 * (bench/RESULTS.md). This pass rewrites each qualifying 2-D GPU conv into
 * graph/conv.c's channels-last form — x [N, H, W, C], w [OC, KH, KW, C/G],
 * y [N, H', W', OC] — and grows a region around them:
 *
 *   region  the qualifying convs, then (in topological order) every GPU
 *           elementwise node of rank 4 one of whose operands is in the
 *           region, every region operand having the node's own shape, and
 *           every GPU max_pool, avg_pool (channels last too) and
 *           reduction with keepdims (a global average pool: its axes
 *           renumbered) of a region node;
 *   inside  each node keeps its op and computes the same values, its dims
 *           permuted [0, 2, 3, 1]; a region operand is read as it is;
 *   edges   an operand from outside becomes NHWC through a permute, or a
 *           reshape when that moves no element (a per-channel [C, 1, 1]
 *           bias becomes [1, 1, 1, C]); a conv's constant weights are
 *           transposed once, here, into a new constant (the old one dies
 *           unless something else reads it); a use outside the region (or
 *           a graph output) reads a permute [0, 3, 1, 2] back (a reshape
 *           when no element moves). One per tensor and direction, however
 *           many readers.
 *
 * So a chain conv → add → relu → max_pool → conv → ... → global average
 * pool stays NHWC end to end and pays a transpose only where it meets
 * channels-first work (for ResNet-18 the input alone). The values are the
 * same as the NCHW plan's up to the convolution algorithm cuDNN picks (a
 * different summation order); the reference evaluator gives the same bits
 * for both forms.
 *
 * A conv qualifies when it is on a GPU, has 2 spatial axes, constant
 * weights, and a dtype whose tensor-core path wants NHWC: f16 or bf16
 * always, f32 only with allow_tf32 (without TF32, cuDNN's f32 FMA kernels
 * gain nothing from it). $BRAID_CONV_LAYOUT=nchw turns the pass off,
 * =nhwc also takes f32 convs without TF32 (for measurements);
 * BRAID_PASS_CHANNELS_LAST in disable_passes turns it off too. */
#define _POSIX_C_SOURCE 200809L
#include "graph/window.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* NCHW → NHWC and back. */
static const uint8_t TO_NHWC[4] = {0, 2, 3, 1};
static const uint8_t TO_NCHW[4] = {0, 3, 1, 2};

typedef struct cl_state {
    bp_plan *plan;
    uint32_t n;       /* nodes before the pass added any */
    bool *in_region;  /* per node below n */
    uint32_t *nhwc;   /* per node below n: its NHWC operand form made here
                         (BG_NONE: none yet) */
    uint32_t *nchw;   /* per region node: the permute back (BG_NONE) */
    uint32_t *weight; /* per node below n: the KRSC constant made from it */
} cl_state;

static braid_status oom(void) {
    return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                             "compile: channels_last: out of memory");
}

static const bg_node *node(const cl_state *s, uint32_t id) {
    return &s->plan->res.graph->nodes[id];
}

static bool on_gpu(const cl_state *s, uint32_t id) {
    return s->plan->res.info[id].device.kind == BP_DEVICE_CUDA;
}

static bool same_device(const cl_state *s, uint32_t a, uint32_t b) {
    return bp_device_equal(s->plan->res.info[a].device,
                           s->plan->res.info[b].device);
}

/* The layout setting: 0 from the dtype and TF32, 'c' NCHW (off), 'l' NHWC
 * for every float dtype. */
static int layout_setting(void) {
    const char *e = getenv("BRAID_CONV_LAYOUT");
    if (!e || !*e) return 0;
    if (strcmp(e, "nchw") == 0) return 'c';
    if (strcmp(e, "nhwc") == 0) return 'l';
    return -1;
}

/* Whether conv node id qualifies (see the top of the file). */
static bool qualifies(const cl_state *s, uint32_t id, int setting) {
    const bg_node *c = node(s, id);
    if (c->op != BRAID_OP_CONV || c->rank != 4 || !on_gpu(s, id) ||
        (c->attr.flags & BG_CONV_CHANNELS_LAST))
        return false;
    uint32_t wid = c->inputs[1];
    if (node(s, wid)->op == BRAID_OP_COPY) wid = node(s, wid)->inputs[0];
    const bg_node *w = node(s, wid);
    if (w->op != BRAID_OP_CONSTANT || !w->attr.data) return false;
    switch (c->dtype) {
    case BRAID_F16:
    case BRAID_BF16:
        return true;
    case BRAID_F32:
        return setting == 'l' || s->plan->in.opts.allow_tf32;
    default:
        return setting == 'l' && c->dtype == BRAID_F64;
    }
}

/* Whether node id joins the region: a GPU elementwise node of rank 4 one
 * of whose operands is in the region, every region operand of the node's
 * shape; or, on a GPU, a pool or a reduction with keepdims of a region
 * node (the pool then channels last too, the reduction's axes
 * renumbered). */
static bool joins(const cl_state *s, uint32_t id) {
    const bg_node *e = node(s, id);
    braid_op_kind k = bg_op(e->op)->kind;
    if (e->rank != 4 || !on_gpu(s, id) ||
        bg_node_run_check(s->plan->res.graph, id))
        return false;
    if (k == BRAID_KIND_REDUCE || e->op == BRAID_OP_MAX_POOL ||
        e->op == BRAID_OP_AVG_POOL)
        return (k != BRAID_KIND_REDUCE || (e->attr.flags & BG_KEEPDIMS)) &&
               e->ninputs == 1 && s->in_region[e->inputs[0]] &&
               same_device(s, e->inputs[0], id);
    if (k != BRAID_KIND_ELEMENTWISE) return false;
    bool any = false;
    for (uint32_t k = 0; k < e->ninputs; k++) {
        uint32_t in = e->inputs[k];
        if (!s->in_region[in]) continue;
        if (!bg_same_shape(node(s, in), e) || !same_device(s, in, id))
            return false;
        any = true;
    }
    return any;
}

/* A node the pass made (BG_NONE passes through) gets the device and
 * origin of the one it stands for. */
static uint32_t like(cl_state *s, uint32_t id, uint32_t from) {
    if (id != BG_NONE) {
        s->plan->res.info[id].device = s->plan->res.info[from].device;
        s->plan->res.info[id].origin = s->plan->res.info[from].origin;
    }
    return id;
}

/* Appends a view-like node (permute or reshape) of x, like x. */
static uint32_t add_shape_node(cl_state *s, braid_op op, uint32_t x,
                               const int64_t *dims, const uint8_t *perm) {
    bg_attrs a;
    memset(&a, 0, sizeof a);
    if (perm) memcpy(a.perm, perm, 4);
    const bg_node *xn = node(s, x);
    return like(s, bp_plan_add_node(s->plan, op, &x, 1, xn->dtype, 4, dims, &a),
                x);
}

/* d permuted by perm into t; whether the axes longer than 1 keep their
 * order (then a reshape moves no element and does the same). */
static bool permuted(const int64_t *d, const uint8_t *perm, int64_t *t) {
    int last = -1;
    bool in_order = true;
    for (int i = 0; i < 4; i++) {
        t[i] = d[perm[i]];
        if (t[i] == 1) continue;
        in_order &= perm[i] > last;
        last = perm[i];
    }
    return in_order;
}

/* Rank-4 x permuted by perm: a reshape when no element moves. */
static uint32_t permute_node(cl_state *s, uint32_t x, const uint8_t *perm) {
    int64_t t[4];
    return permuted(node(s, x)->dims, perm, t)
               ? add_shape_node(s, BRAID_OP_RESHAPE, x, t, NULL)
               : add_shape_node(s, BRAID_OP_PERMUTE, x, t, perm);
}

/* x (outside the region, NumPy-broadcastable to a rank-4 NCHW shape) as
 * an operand of a region node: its NHWC form. A scalar stays itself;
 * lower ranks are viewed at rank 4 first. */
static uint32_t nhwc_operand(cl_state *s, uint32_t x) {
    if (s->nhwc[x] != BG_NONE) return s->nhwc[x];
    const bg_node *xn = node(s, x);
    if (xn->rank == 0) return x;
    int64_t d[4];
    int pad = 4 - xn->rank;
    for (int i = 0; i < 4; i++)
        d[i] = i < pad ? 1 : xn->dims[i - pad];
    uint32_t v = pad ? add_shape_node(s, BRAID_OP_RESHAPE, x, d, NULL) : x;
    uint32_t id = v == BG_NONE ? BG_NONE : permute_node(s, v, TO_NHWC);
    if (id != BG_NONE) s->nhwc[x] = id;
    return id;
}

/* [K, C, RS] → [K, RS, C] in elements of T (dst written in order; one
 * k's C·RS source elements stay in cache). */
#define KRSC_LOOP(T)                                                           \
    do {                                                                       \
        const T *s_ = src;                                                     \
        T *d_ = dst;                                                           \
        for (int64_t k = 0; k < K; k++, s_ += C * RS, d_ += C * RS)            \
            for (int64_t rs = 0; rs < RS; rs++)                                \
                for (int64_t c = 0; c < C; c++)                                \
                    d_[rs * C + c] = s_[c * RS + rs];                          \
    } while (0)

static void krsc_bytes(const void *src, void *dst, int64_t K, int64_t C,
                       int64_t RS, size_t es) {
    if (es == 8)
        KRSC_LOOP(uint64_t);
    else if (es == 4)
        KRSC_LOOP(uint32_t);
    else if (es == 2)
        KRSC_LOOP(uint16_t);
    else
        KRSC_LOOP(uint8_t);
}

/* Constant weights w [OC, C/G, KH, KW] as a new constant [OC, KH, KW, C/G]
 * on w's device. The bytes go into a shared holder like an importer's
 * (bg_constant_shared), so a plan file stores them once. */
static uint32_t krsc_constant(cl_state *s, uint32_t w) {
    const bg_node *wn = node(s, w);
    size_t es = braid_dtype_size(wn->dtype);
    int64_t K = wn->dims[0], C = wn->dims[1], R = wn->dims[2], S = wn->dims[3];
    void *data = NULL;
    bg_shared *h = bg_shared_copy(NULL, (size_t)bg_numel(wn) * es, &data);
    if (!h) return oom(), BG_NONE;
    krsc_bytes(wn->attr.data, data, K, C, R * S, es);
    bg_attrs a;
    memset(&a, 0, sizeof a);
    a.data = data;
    int64_t dims[4] = {K, R, S, C};
    braid_graph *g = s->plan->res.graph;
    uint32_t id = bg_build_shared(g, BRAID_OP_CONSTANT, NULL, 0, wn->dtype, 4,
                                  dims, &a, NULL, h);
    bg_shared_unref(h); /* the node holds its own reference */
    if (id == BG_NONE)
        return bg_set_last_error(g->status ? g->status : BRAID_ERR_INTERNAL,
                                 "compile: channels_last: node %u: %s",
                                 (unsigned)w, g->error),
               BG_NONE;
    if (bp_plan_sync_info(s->plan) != BRAID_OK) return BG_NONE;
    return like(s, id, w);
}

/* A conv's weights w — a constant, or the copy of one to the conv's GPU —
 * as KRSC: a new constant, and a new copy of it when w was a copy. */
static uint32_t krsc_weight(cl_state *s, uint32_t w) {
    if (s->weight[w] != BG_NONE) return s->weight[w];
    const bg_node *wn = node(s, w);
    uint32_t id;
    if (wn->op == BRAID_OP_COPY) {
        uint32_t k = krsc_constant(s, wn->inputs[0]);
        if (k == BG_NONE) return BG_NONE;
        wn = node(s, w);
        id = like(s,
                  bp_plan_add_node(s->plan, BRAID_OP_COPY, &k, 1, wn->dtype, 4,
                                   node(s, k)->dims, &wn->attr),
                  w);
    } else {
        id = krsc_constant(s, w);
    }
    if (id != BG_NONE) s->weight[w] = id;
    return id;
}

/* The region node r's operands rewired to NHWC forms, its dims permuted
 * (and, for a conv, its flag set). */
static braid_status convert(cl_state *s, uint32_t r) {
    bg_node *rn = &s->plan->res.graph->nodes[r];
    bool conv = rn->op == BRAID_OP_CONV;
    for (uint32_t k = 0; k < rn->ninputs; k++) {
        uint32_t in = rn->inputs[k], to;
        if (conv && k == 2) continue; /* the bias [OC] */
        if (s->in_region[in]) continue;
        to = conv && k == 1 ? krsc_weight(s, in) : nhwc_operand(s, in);
        if (to == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY; /* message set */
        rn = &s->plan->res.graph->nodes[r]; /* the array may have moved */
        rn->inputs[k] = to;
    }
    int64_t d[4];
    for (int i = 0; i < 4; i++)
        d[i] = rn->dims[TO_NHWC[i]];
    memcpy(rn->dims, d, sizeof d);
    if (conv) rn->attr.flags |= BG_CONV_CHANNELS_LAST;
    if (rn->op == BRAID_OP_MAX_POOL || rn->op == BRAID_OP_AVG_POOL)
        rn->attr.flags |= BG_POOL_CHANNELS_LAST;
    if (bg_op(rn->op)->kind == BRAID_KIND_REDUCE) { /* axis TO_NHWC[i] → i */
        uint8_t axes = 0;
        for (int i = 0; i < 4; i++)
            if (rn->attr.axes & (1u << TO_NHWC[i])) axes |= (uint8_t)(1u << i);
        rn->attr.axes = axes;
    }
    return BRAID_OK;
}

/* The permute back to NCHW of region node r (a reshape when no element
 * moves, as for a pooled [N, 1, 1, C]), made once. */
static uint32_t nchw_of(cl_state *s, uint32_t r) {
    if (s->nchw[r] == BG_NONE) s->nchw[r] = permute_node(s, r, TO_NCHW);
    return s->nchw[r];
}

/* Every use of a region node outside the region, and every graph output
 * that is one, reads its permute back. */
static braid_status rewire_exits(cl_state *s) {
    braid_graph *g = s->plan->res.graph;
    /* nodes the pass made read no region node, or are the permutes back */
    for (uint32_t id = 0; id < s->n; id++) {
        if (s->in_region[id]) continue;
        for (uint32_t k = 0; k < g->nodes[id].ninputs; k++) {
            uint32_t in = g->nodes[id].inputs[k];
            if (in >= s->n || !s->in_region[in]) continue;
            uint32_t b = nchw_of(s, in);
            if (b == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
            g->nodes[id].inputs[k] = b;
        }
    }
    for (uint32_t i = 0; i < g->noutputs; i++) {
        uint32_t o = g->outputs[i].node;
        if (o >= s->n || !s->in_region[o]) continue;
        uint32_t b = nchw_of(s, o);
        if (b == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        g->outputs[i].node = b;
    }
    return BRAID_OK;
}

static void state_free(cl_state *s) {
    free(s->in_region);
    free(s->nhwc);
    free(s->nchw);
    free(s->weight);
}

braid_status bp_channels_last(bp_plan *plan) {
    int setting = layout_setting();
    if (setting < 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_compile: BRAID_CONV_LAYOUT=\"%s\"; "
                                 "expected nchw or nhwc (or unset)",
                                 getenv("BRAID_CONV_LAYOUT"));
    if (setting == 'c') return BRAID_OK;
    cl_state s = {plan, plan->res.graph->nnodes, NULL, NULL, NULL, NULL};
    size_t m = s.n ? s.n : 1;
    s.in_region = calloc(m, sizeof *s.in_region);
    s.nhwc = malloc(m * sizeof *s.nhwc);
    s.nchw = malloc(m * sizeof *s.nchw);
    s.weight = malloc(m * sizeof *s.weight);
    if (!s.in_region || !s.nhwc || !s.nchw || !s.weight) {
        state_free(&s);
        return oom();
    }
    uint32_t convs = 0;
    for (uint32_t id = 0; id < s.n; id++) {
        s.nhwc[id] = s.nchw[id] = s.weight[id] = BG_NONE;
        s.in_region[id] = qualifies(&s, id, setting);
        convs += s.in_region[id];
        if (!s.in_region[id] && convs) s.in_region[id] = joins(&s, id);
    }
    braid_status st = BRAID_OK;
    for (uint32_t id = 0; convs && st == BRAID_OK && id < s.n; id++)
        if (s.in_region[id]) st = convert(&s, id);
    if (convs && st == BRAID_OK) st = rewire_exits(&s);
    state_free(&s);
    if (convs && st == BRAID_OK) st = bp_plan_compact(plan);
    return st;
}
