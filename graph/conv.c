/* graph/conv.c — the conv ops (conv, conv_transpose): their type rule, their
 * geometry, their float64 meaning and their public builders.
 *
 * The attributes live in bg_attrs fields other ops use too (graph.h, "conv
 * ops", says which); this file is the one reader and writer of that
 * packing. Every executor computes what bg_eval_conv computes: ONNX Conv and
 * ConvTranspose, channels first. */
#include "graph/eval.h"
#include "graph/internal.h"

#include <string.h>

/* Attribute bounds: far beyond any real network, small enough that every
 * product below stays far from int64's range. */
#define CONV_MAX_STEP ((int64_t)1 << 20) /* strides, dilations */
#define CONV_MAX_PAD ((int64_t)1 << 30)

/* ---- geometry --------------------------------------------------------------
 */

/* The geometry from the operands and attributes, unchecked. */
static void geom_fill(braid_op op, const bg_node *x, const bg_node *w,
                      uint32_t nin, const bg_attrs *a, bg_conv_geom *c) {
    memset(c, 0, sizeof *c);
    c->transpose = op == BRAID_OP_CONV_TRANSPOSE;
    c->bias = nin == 3;
    c->channels_last = !c->transpose && (a->flags & BG_CONV_CHANNELS_LAST);
    c->nspatial = x->rank - 2;
    int sp0 = c->channels_last ? 1 : 2; /* the first spatial axis */
    c->N = x->dims[0];
    c->C = x->dims[c->channels_last ? x->rank - 1 : 1];
    c->G = a->axis;
    c->OC = c->transpose ? w->dims[1] * c->G : w->dims[0];
    for (int i = 0; i < BG_CONV_MAX_SPATIAL; i++) {
        bool sp = i < c->nspatial;
        c->in[i] = sp ? x->dims[sp0 + i] : 1;
        c->k[i] = sp ? w->dims[sp0 + i] : 1;
        c->stride[i] = sp ? a->step[i] : 1;
        c->dil[i] = sp ? a->step[3 + i] : 1;
        c->pb[i] = sp ? a->start[i] : 0;
        c->pe[i] = sp ? a->start[3 + i] : 0;
    }
}

/* The output extent of spatial axis i; < 1 when the attributes allow none
 * (every term is bounded by CONV_MAX_* and 2^50, so nothing overflows). */
static int64_t geom_out(const bg_conv_geom *c, int i) {
    int64_t span = (c->k[i] - 1) * c->dil[i] + 1;
    if (c->transpose)
        return c->stride[i] * (c->in[i] - 1) + span - c->pb[i] - c->pe[i];
    int64_t room = c->in[i] + c->pb[i] + c->pe[i] - span;
    return room < 0 ? 0 : room / c->stride[i] + 1;
}

double bg_conv_macs(const bg_conv_geom *c) {
    double m =
        (double)c->N * (double)c->OC * (double)(c->C / (c->G ? c->G : 1));
    for (int i = 0; i < BG_CONV_MAX_SPATIAL; i++)
        m *= (double)c->k[i] * (double)(c->transpose ? c->in[i] : c->out[i]);
    return m;
}

/* ---- the type rule ----------------------------------------------------------
 */

static braid_status conv_fail(braid_graph *g, const char *op,
                              const char *what) {
    return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT, "%s: %s", op, what);
}

/* The operands' types, for a message (formatted only when one is made:
 * the rule runs for every conv built and loaded). */
typedef struct conv_types {
    char x[160], w[160], b[160];
} conv_types;

static const conv_types *types_of(const bg_node *x, const bg_node *w,
                                  const bg_node *b, conv_types *t) {
    bg_type_str(x, t->x, sizeof t->x);
    bg_type_str(w, t->w, sizeof t->w);
    t->b[0] = '\0';
    if (b) bg_type_str(b, t->b, sizeof t->b);
    return t;
}

/* Operand ranks, dtypes and channel counts. */
static braid_status check_operands(braid_graph *g, const char *op,
                                   const bg_node *x, const bg_node *w,
                                   const bg_node *b, const bg_attrs *a,
                                   bool tr) {
    conv_types ty;
    const char *tx = ty.x, *tw = ty.w, *tb = ty.b;
    char m[600];
    if (!braid_dtype_is_float(x->dtype) || w->dtype != x->dtype ||
        (b && b->dtype != x->dtype)) {
        types_of(x, w, b, &ty);
        snprintf(m, sizeof m,
                 "operands x %s, w %s%s%s; expected one float dtype", tx, tw,
                 b ? ", bias " : "", b ? tb : "");
        return bg_fail(g, BRAID_ERR_DTYPE, "%s: %s", op, m);
    }
    if (x->rank < 3 || x->rank > 2 + BG_CONV_MAX_SPATIAL ||
        w->rank != x->rank) {
        types_of(x, w, b, &ty);
        snprintf(m, sizeof m,
                 "x %s, w %s; expected x [N, C, 1 to 3 spatial dims] and w "
                 "of the same rank (channels last: x [N, spatial..., C])",
                 tx, tw);
        return conv_fail(g, op, m);
    }
    bool cl = a->flags & BG_CONV_CHANNELS_LAST;
    if ((a->flags & ~BG_CONV_CHANNELS_LAST) || (tr && cl)) {
        snprintf(m, sizeof m,
                 "flags 0x%x; expected none, or channels_last on conv",
                 (unsigned)a->flags);
        return conv_fail(g, op, m);
    }
    int64_t G = a->axis, C = x->dims[cl ? x->rank - 1 : 1];
    if (G < 1) {
        snprintf(m, sizeof m, "groups %lld; expected >= 1", (long long)G);
        return conv_fail(g, op, m);
    }
    int64_t wc = tr ? w->dims[0] : w->dims[cl ? w->rank - 1 : 1] * G;
    int64_t oc = tr ? w->dims[1] * G : w->dims[0];
    if (C % G != 0 || oc % G != 0 || wc != C) {
        types_of(x, w, b, &ty);
        snprintf(m, sizeof m,
                 "x %s, w %s, groups %lld; expected C divisible by groups "
                 "and w [%s]",
                 tx, tw, (long long)G,
                 tr   ? "C, OC/groups, kernel..."
                 : cl ? "OC, kernel..., C/groups"
                      : "OC, C/groups, kernel...");
        return conv_fail(g, op, m);
    }
    if (b && (b->rank != 1 || b->dims[0] != oc)) {
        types_of(x, w, b, &ty);
        snprintf(m, sizeof m,
                 "bias %s; expected [%lld] (one per output "
                 "channel)",
                 tb, (long long)oc);
        return conv_fail(g, op, m);
    }
    return BRAID_OK;
}

/* Strides, dilations and pads of the s spatial axes, and zeros past them. */
static braid_status check_attrs(braid_graph *g, const char *op, int s,
                                const bg_attrs *a, bool tr) {
    char m[200];
    for (int i = 0; i < BG_CONV_MAX_SPATIAL; i++) {
        int64_t st = a->step[i], d = a->step[3 + i];
        int64_t pb = a->start[i], pe = a->start[3 + i];
        if (i >= s) {
            if (st || d || pb || pe)
                return conv_fail(g, op, "attributes past the spatial axes");
            continue;
        }
        int64_t lo_end = tr ? 1 - (st > d ? st : d) : 0;
        if (st < 1 || st > CONV_MAX_STEP || d < 1 || d > CONV_MAX_STEP)
            snprintf(m, sizeof m,
                     "spatial axis %d: stride %lld, dilation %lld; expected "
                     "1..2^20",
                     i, (long long)st, (long long)d);
        else if (pb < 0 || pb > CONV_MAX_PAD || pe < lo_end ||
                 pe > CONV_MAX_PAD)
            snprintf(m, sizeof m,
                     "spatial axis %d: pads %lld, %lld; expected 0..2^30%s", i,
                     (long long)pb, (long long)pe,
                     tr ? " (the end pad less output_padding, which must be "
                          "below max(stride, dilation))"
                        : "");
        else
            continue;
        return conv_fail(g, op, m);
    }
    return BRAID_OK;
}

/* Kernel sizes and the output extents. */
static braid_status check_extents(braid_graph *g, const char *op,
                                  bg_conv_geom *c) {
    char m[240];
    for (int i = 0; i < c->nspatial; i++) {
        if (c->k[i] < 1 || c->k[i] > ((int64_t)1 << 30)) {
            snprintf(m, sizeof m,
                     "kernel size %lld on spatial axis %d; "
                     "expected 1..2^30",
                     (long long)c->k[i], i);
            return conv_fail(g, op, m);
        }
        c->out[i] = geom_out(c, i);
        if (c->out[i] < 1) {
            snprintf(m, sizeof m,
                     "spatial axis %d: input %lld, kernel %lld, dilation "
                     "%lld, stride %lld, pads %lld, %lld leave no output",
                     i, (long long)c->in[i], (long long)c->k[i],
                     (long long)c->dil[i], (long long)c->stride[i],
                     (long long)c->pb[i], (long long)c->pe[i]);
            return conv_fail(g, op, m);
        }
    }
    return BRAID_OK;
}

braid_status bg_conv_infer(braid_graph *g, braid_op op, const uint32_t *in,
                           uint32_t nin, const bg_attrs *a, bg_node *out) {
    const char *name = bg_op(op)->name;
    if (nin != 2 && nin != 3)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: got %u inputs; expected x, w and an optional "
                       "bias",
                       name, (unsigned)nin);
    const bg_node *x = bg_node_at(g, in[0]), *w = bg_node_at(g, in[1]);
    const bg_node *b = nin == 3 ? bg_node_at(g, in[2]) : NULL;
    bool tr = op == BRAID_OP_CONV_TRANSPOSE;
    braid_status s = check_operands(g, name, x, w, b, a, tr);
    if (s == BRAID_OK) s = check_attrs(g, name, x->rank - 2, a, tr);
    bg_conv_geom c;
    if (s == BRAID_OK) {
        geom_fill(op, x, w, nin, a, &c);
        s = check_extents(g, name, &c);
    }
    if (s != BRAID_OK) return s;
    memset(&out->attr, 0, sizeof out->attr);
    out->attr.axis = a->axis;
    out->attr.flags = a->flags & BG_CONV_CHANNELS_LAST;
    memcpy(out->attr.start, a->start, 6 * sizeof *a->start);
    memcpy(out->attr.step, a->step, 6 * sizeof *a->step);
    out->dtype = x->dtype;
    out->rank = x->rank;
    int sp0 = c.channels_last ? 1 : 2;
    out->dims[0] = c.N;
    out->dims[c.channels_last ? out->rank - 1 : 1] = c.OC;
    for (int i = 0; i < c.nspatial; i++)
        out->dims[sp0 + i] = c.out[i];
    return BRAID_OK;
}

bool bg_conv_geom_of(const braid_graph *g, const bg_node *n, bg_conv_geom *c) {
    if (bg_op(n->op) == NULL || bg_op(n->op)->kind != BRAID_KIND_CONV ||
        (n->ninputs != 2 && n->ninputs != 3))
        return false;
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    const bg_node *w = bg_node_at(g, n->inputs[1]);
    if (x->rank < 3 || x->rank > 2 + BG_CONV_MAX_SPATIAL ||
        w->rank != x->rank || n->rank != x->rank || n->attr.axis < 1)
        return false;
    if ((n->attr.flags & ~BG_CONV_CHANNELS_LAST) ||
        (n->op == BRAID_OP_CONV_TRANSPOSE && n->attr.flags))
        return false;
    geom_fill(n->op, x, w, n->ninputs, &n->attr, c);
    int ca = c->channels_last ? n->rank - 1 : 1, sp0 = c->channels_last ? 1 : 2;
    if (c->C % c->G != 0 || c->OC % c->G != 0 || c->OC != n->dims[ca] ||
        c->N != n->dims[0] ||
        (c->transpose ? w->dims[0] != c->C : w->dims[ca] * c->G != c->C))
        return false;
    for (int i = 0; i < BG_CONV_MAX_SPATIAL; i++) {
        if (c->stride[i] < 1 || c->dil[i] < 1 || c->k[i] < 1 ||
            c->stride[i] > CONV_MAX_STEP || c->dil[i] > CONV_MAX_STEP ||
            c->pb[i] < 0 || c->pb[i] > CONV_MAX_PAD ||
            c->pe[i] < -CONV_MAX_STEP || c->pe[i] > CONV_MAX_PAD ||
            c->k[i] > ((int64_t)1 << 30))
            return false;
        c->out[i] = geom_out(c, i);
        if (c->out[i] != (i < c->nspatial ? n->dims[sp0 + i] : 1)) return false;
    }
    if (c->bias) {
        const bg_node *b = bg_node_at(g, n->inputs[2]);
        if (b->rank != 1 || b->dims[0] != c->OC) return false;
    }
    return true;
}

void bg_conv_tap(const bg_conv_geom *c, int64_t k, int64_t *kk) {
    kk[0] = k / (c->k[1] * c->k[2]);
    kk[1] = k / c->k[2] % c->k[1];
    kk[2] = k % c->k[2];
}

/* ---- float64 meaning
 * ----------------------------------------------------------- */

/* Output element (batch b, channel oc, position o) of a conv: the sum over
 * the group's input channels and the kernel of x · w where the dilated
 * kernel, placed at o · stride - pad, meets the input. Channels last, a
 * channel's values are C (x) or C/G (w) elements apart. */
static double conv_at(const bg_conv_geom *c, const double *x, const double *w,
                      int64_t b, int64_t oc, const int64_t *o) {
    int64_t Cg = c->C / c->G, g0 = (oc / (c->OC / c->G)) * Cg;
    int64_t kv = c->k[0] * c->k[1] * c->k[2];
    int64_t iv = c->in[0] * c->in[1] * c->in[2];
    bool cl = c->channels_last;
    int64_t xstep = cl ? c->C : 1, wstep = cl ? Cg : 1; /* per tap */
    double sum = 0;
    for (int64_t ci = 0; ci < Cg; ci++) {
        const double *xc =
            cl ? x + b * iv * c->C + g0 + ci : x + (b * c->C + g0 + ci) * iv;
        const double *wc = cl ? w + oc * kv * Cg + ci : w + (oc * Cg + ci) * kv;
        for (int64_t k = 0; k < kv; k++) {
            int64_t kk[3];
            bg_conv_tap(c, k, kk);
            int64_t pos = 0;
            bool inside = true;
            for (int i = 0; i < 3 && inside; i++) {
                int64_t p = o[i] * c->stride[i] - c->pb[i] + kk[i] * c->dil[i];
                inside = p >= 0 && p < c->in[i];
                pos = pos * c->in[i] + p;
            }
            if (inside) sum += xc[pos * xstep] * wc[k * wstep];
        }
    }
    return sum;
}

/* The same for conv_transpose, as a gather: input position p reaches output
 * o through kernel tap k when p · stride + k · dilation = o + pad. */
static double conv_transpose_at(const bg_conv_geom *c, const double *x,
                                const double *w, int64_t b, int64_t oc,
                                const int64_t *o) {
    int64_t Cg = c->C / c->G, OCg = c->OC / c->G, g0 = (oc / OCg) * Cg;
    int64_t kv = c->k[0] * c->k[1] * c->k[2];
    int64_t iv = c->in[0] * c->in[1] * c->in[2];
    double sum = 0;
    for (int64_t ci = 0; ci < Cg; ci++) {
        const double *xc = x + (b * c->C + g0 + ci) * iv;
        const double *wc = w + ((g0 + ci) * OCg + oc % OCg) * kv;
        for (int64_t k = 0; k < kv; k++) {
            int64_t kk[3];
            bg_conv_tap(c, k, kk);
            int64_t pos = 0;
            bool inside = true;
            for (int i = 0; i < 3 && inside; i++) {
                int64_t t = o[i] + c->pb[i] - kk[i] * c->dil[i];
                inside = t >= 0 && t % c->stride[i] == 0 &&
                         t / c->stride[i] < c->in[i];
                pos = pos * c->in[i] + (inside ? t / c->stride[i] : 0);
            }
            if (inside) sum += xc[pos] * wc[k];
        }
    }
    return sum;
}

void bg_eval_conv(const braid_graph *g, const bg_node *n,
                  const double *const *in, double *out, int64_t lo,
                  int64_t hi) {
    bg_conv_geom c;
    if (!bg_conv_geom_of(g, n, &c)) return; /* bg_build made it: cannot be */
    int64_t ov = c.out[0] * c.out[1] * c.out[2];
    for (int64_t e = lo; e < hi; e++) {
        int64_t sp = e % ov, oc = e / ov % c.OC, b = e / ov / c.OC;
        if (c.channels_last) {
            oc = e % c.OC;
            sp = e / c.OC % ov;
            b = e / c.OC / ov;
        }
        int64_t o[3] = {sp / (c.out[1] * c.out[2]), sp / c.out[2] % c.out[1],
                        sp % c.out[2]};
        double v = c.transpose ? conv_transpose_at(&c, in[0], in[1], b, oc, o)
                               : conv_at(&c, in[0], in[1], b, oc, o);
        out[e] = c.bias ? v + in[2][oc] : v;
    }
}

void bg_conv_attrs(const bg_conv_geom *c, bg_attrs *a) {
    memset(a, 0, sizeof *a);
    a->axis = 1;
    for (int i = 0; i < c->nspatial && i < BG_CONV_MAX_SPATIAL; i++) {
        a->step[i] = c->stride[i];
        a->step[3 + i] = c->dil[i];
        a->start[i] = c->pb[i];
        a->start[3 + i] = c->pe[i];
    }
}

/* ---- builders
 * ------------------------------------------------------------------- */

/* The packed attributes of params for an x of spatial rank s; false with
 * the error recorded when output_padding is out of its range. */
static bool pack_params(braid_graph *g, braid_op op, int s,
                        const braid_conv_params *p, bg_attrs *a) {
    static const braid_conv_params defaults;
    if (p == NULL) p = &defaults;
    memset(a, 0, sizeof *a);
    a->axis = p->groups == 0                           ? 1
              : p->groups > INT32_MAX || p->groups < 0 ? -1
                                                       : (int32_t)p->groups;
    for (int i = 0; i < s; i++) {
        int64_t st = p->strides[i] ? p->strides[i] : 1;
        int64_t d = p->dilations[i] ? p->dilations[i] : 1;
        int64_t op_i = p->output_padding[i];
        if (op_i != 0 && (op != BRAID_OP_CONV_TRANSPOSE || op_i < 0 ||
                          op_i >= (st > d ? st : d))) {
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "%s: output_padding %lld on spatial axis %d; expected %s",
                    bg_op(op)->name, (long long)op_i, i,
                    op == BRAID_OP_CONV ? "0 (conv has none)"
                                        : "0 <= p < max(stride, dilation)");
            return false;
        }
        a->step[i] = st;
        a->step[3 + i] = d;
        a->start[i] = p->pads[i];
        /* pads are bounded by bg_build; this difference cannot overflow for
         * any pads it accepts, and one it refuses stays refused */
        a->start[3 + i] = p->pads[s + i] > INT64_MIN + op_i
                              ? p->pads[s + i] - op_i
                              : p->pads[s + i];
    }
    return true;
}

static braid_tensor build_conv(braid_graph *g, braid_op op, braid_tensor x,
                               braid_tensor w, braid_tensor bias,
                               const braid_conv_params *p) {
    const char *name = bg_op(op)->name;
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: graph is NULL",
                          name);
        return BRAID_NONE;
    }
    if (g->status != BRAID_OK) return BRAID_NONE;
    if (x.id >= g->nnodes) { /* bg_build names the bad operand */
        uint32_t in[2] = {x.id, w.id};
        return (braid_tensor){
            bg_build(g, op, in, 2, BRAID_F32, 0, NULL, NULL, NULL)};
    }
    int s = bg_node_at(g, x.id)->rank - 2;
    s = s < 0 ? 0 : s > BG_CONV_MAX_SPATIAL ? BG_CONV_MAX_SPATIAL : s;
    bg_attrs a;
    if (!pack_params(g, op, s, p, &a)) return BRAID_NONE;
    uint32_t in[3] = {x.id, w.id, bias.id};
    uint32_t nin = bias.id == BRAID_INVALID_ID ? 2 : 3;
    return (braid_tensor){
        bg_build(g, op, in, nin, BRAID_F32, 0, NULL, &a, NULL)};
}

braid_tensor braid_conv(braid_graph *g, braid_tensor x, braid_tensor w,
                        braid_tensor bias, const braid_conv_params *params) {
    return build_conv(g, BRAID_OP_CONV, x, w, bias, params);
}

braid_tensor braid_conv_transpose(braid_graph *g, braid_tensor x,
                                  braid_tensor w, braid_tensor bias,
                                  const braid_conv_params *params) {
    return build_conv(g, BRAID_OP_CONV_TRANSPOSE, x, w, bias, params);
}
