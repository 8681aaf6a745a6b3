/* graph/attention.c — the attention op's type rule, geometry, float64
 * meaning and builder (graph/attention.h). */
#include "graph/attention.h"

#include "graph/eval.h"
#include "graph/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const attn_operand[4] = {"q", "k", "v", "mask"};

/* The mask's strides over [B,H,S,T] when its shape broadcasts there. */
static bool mask_strides(const bg_node *m, const int64_t want[4],
                         int64_t st[4]) {
    if (m->rank > 4) return false;
    int64_t s = 1;
    for (int i = 3; i >= 0; i--) {
        int mi = m->rank - 4 + i;
        int64_t d = mi >= 0 ? m->dims[mi] : 1;
        if (d != 1 && d != want[i]) return false;
        st[i] = d == 1 ? 0 : s;
        s *= d;
    }
    return true;
}

/* Set in *bad by geom_of when the operand's dtype is what is wrong. */
#define ATTN_BAD_DTYPE 0x100u

/* Geometry of operands in[0..nin) (no attribute checks); false with the
 * offending operand in *bad (| ATTN_BAD_DTYPE for a dtype failure). */
static bool geom_of(const braid_graph *g, const uint32_t *in, uint32_t nin,
                    bg_attn_geom *a, uint32_t *bad) {
    memset(a, 0, sizeof *a);
    *bad = 0;
    if (nin != 3 && nin != 4) return false;
    const bg_node *q = bg_node_at(g, in[0]);
    for (uint32_t i = 0; i < nin; i++) {
        const bg_node *x = bg_node_at(g, in[i]);
        *bad = i;
        if (x->dtype != q->dtype || !braid_dtype_is_float(x->dtype)) {
            *bad |= ATTN_BAD_DTYPE;
            return false;
        }
        if (i < 3 && x->rank != 4) return false;
    }
    const bg_node *k = bg_node_at(g, in[1]), *v = bg_node_at(g, in[2]);
    a->B = q->dims[0], a->S = q->dims[1], a->H = q->dims[2], a->D = q->dims[3];
    a->T = k->dims[1];
    *bad = 0;
    if (a->D > BG_ATTN_MAX_D) return false;
    *bad = 1;
    if (k->dims[0] != a->B || k->dims[2] != a->H || k->dims[3] != a->D)
        return false;
    *bad = 2;
    if (memcmp(v->dims, k->dims, sizeof v->dims[0] * 4) != 0) return false;
    a->has_mask = nin == 4;
    for (int x = 0; x < 3; x++) { /* dense */
        int64_t rows = x == 0 ? a->S : a->T;
        a->st[x][2] = a->D;
        a->st[x][1] = a->H * a->D;
        a->st[x][0] = rows * a->H * a->D;
    }
    *bad = 3;
    int64_t want[4] = {a->B, a->H, a->S, a->T};
    return !a->has_mask || mask_strides(bg_node_at(g, in[3]), want, a->mst);
}

bool bg_attn_geom_of(const braid_graph *g, const bg_node *n, bg_attn_geom *a) {
    uint32_t bad;
    if (n->op != BRAID_OP_ATTENTION ||
        !geom_of(g, n->inputs, n->ninputs, a, &bad))
        return false;
    const bg_node *q = bg_node_at(g, n->inputs[0]);
    a->scale = n->attr.value[0];
    a->causal = (n->attr.flags & BRAID_ATTENTION_CAUSAL) != 0;
    return n->dtype == q->dtype && n->rank == 4 &&
           memcmp(n->dims, q->dims, sizeof n->dims[0] * 4) == 0 &&
           isfinite(a->scale) && (n->attr.flags & ~BRAID_ATTENTION_CAUSAL) == 0;
}

braid_status bg_infer_attention(braid_graph *g, const uint32_t *in,
                                uint32_t nin, const bg_attrs *a, bg_node *out) {
    bg_attn_geom geo;
    uint32_t bad;
    char t[4][BG_ERROR_MAX / 8];
    if (nin != 3 && nin != 4)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "attention: %u operands; expected q, k, v and an "
                       "optional mask",
                       (unsigned)nin);
    if (!geom_of(g, in, nin, &geo, &bad)) {
        for (uint32_t i = 0; i < nin; i++)
            bg_type_str(bg_node_at(g, in[i]), t[i], sizeof t[i]);
        bool dtype = (bad & ATTN_BAD_DTYPE) != 0;
        bad &= ~ATTN_BAD_DTYPE;
        return bg_fail(g, dtype ? BRAID_ERR_DTYPE : BRAID_ERR_SHAPE,
                       "attention: %s %s (q %s, k %s, v %s%s%s); expected "
                       "float q [B,S,H,D], k and v [B,T,H,D] with D <= %d, "
                       "a mask broadcastable to [B,H,S,T], one dtype",
                       attn_operand[bad], t[bad], t[0], t[1], t[2],
                       nin == 4 ? ", mask " : "", nin == 4 ? t[3] : "",
                       BG_ATTN_MAX_D);
    }
    if (!isfinite(a->value[0]) || (a->flags & ~BRAID_ATTENTION_CAUSAL) != 0)
        return bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                       "attention: scale %g, flags 0x%x; expected a finite "
                       "scale and flags of BRAID_ATTENTION_CAUSAL",
                       a->value[0], (unsigned)a->flags);
    const bg_node *q = bg_node_at(g, in[0]);
    out->dtype = q->dtype;
    out->rank = 4;
    memcpy(out->dims, q->dims, sizeof out->dims);
    out->attr.value[0] = a->value[0];
    out->attr.flags = a->flags;
    return BRAID_OK;
}

bool bg_attn_strides_ok(int64_t d, const int64_t *s) {
    for (int i = 0; i < 4; i++)
        if (s[i] < 0) return false;
    return s[3] == 1 || d <= 1;
}

bool bg_attn_set_strides(bg_attn_geom *a, int x, const int64_t *s) {
    if (x < 0 || x > 2 || !bg_attn_strides_ok(a->D, s)) return false;
    for (int i = 0; i < 3; i++)
        a->st[x][i] = s[i];
    return true;
}

double bg_attn_macs(const bg_attn_geom *a) {
    return 2.0 * (double)a->B * (double)a->H * (double)a->S * (double)a->T *
           (double)a->D;
}

/* One output row (b, i, h) in double: scores into s[T]. */
static void eval_row(const bg_attn_geom *a, const double *const *in, double *o,
                     double *s, int64_t b, int64_t i, int64_t h) {
    const double *q = in[0] + bg_attn_in_at(a, 0, b, i, h);
    double m = -INFINITY;
    for (int64_t j = 0; j < a->T; j++) {
        const double *k = in[1] + bg_attn_in_at(a, 1, b, j, h);
        double d = 0;
        for (int64_t c = 0; c < a->D; c++)
            d += q[c] * k[c];
        d *= a->scale;
        if (a->has_mask) d += in[3][bg_attn_mask_at(a, b, h, i, j)];
        if (a->causal && j > i) d = -INFINITY;
        s[j] = d;
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    for (int64_t c = 0; c < a->D; c++)
        o[c] = 0;
    if (m == -INFINITY) return; /* fully masked (or T = 0): 0 */
    double l = 0;
    for (int64_t j = 0; j < a->T; j++) {
        double p = exp(s[j] - m);
        const double *v = in[2] + bg_attn_in_at(a, 2, b, j, h);
        l += p;
        for (int64_t c = 0; c < a->D; c++)
            o[c] += p * v[c];
    }
    for (int64_t c = 0; c < a->D; c++)
        o[c] /= l;
}

void bg_eval_attention(const braid_graph *g, const bg_node *n,
                       const double *const *in, double *out, int64_t lo,
                       int64_t hi) {
    bg_attn_geom a;
    if (!bg_attn_geom_of(g, n, &a) || a.D == 0) return;
    double *s = malloc(sizeof *s * (size_t)(a.T > 0 ? a.T : 1));
    if (s == NULL) { /* the reference has no error path here: NaN rows */
        for (int64_t e = lo; e < hi; e++)
            out[e] = NAN;
        return;
    }
    for (int64_t r = (lo + a.D - 1) / a.D; r * a.D < hi; r++) {
        int64_t h = r % a.H, i = r / a.H % a.S, b = r / a.H / a.S;
        double *o = out + r * a.D;
        eval_row(&a, in, o, s, b, i, h);
        for (int64_t c = 0; c < a.D; c++)
            o[c] = bg_round(n->dtype, o[c]);
    }
    free(s);
}

braid_tensor braid_attention(braid_graph *g, braid_tensor q, braid_tensor k,
                             braid_tensor v, braid_tensor mask, double scale,
                             unsigned flags) {
    braid_tensor ops[4] = {q, k, v, mask};
    uint32_t in[4];
    uint32_t nin = braid_tensor_valid(mask) ? 4 : 3;
    for (uint32_t i = 0; i < nin; i++) {
        if (bb_peek(g, ops[i], "attention") == NULL) return BRAID_NONE;
        in[i] = ops[i].id;
    }
    if (!bb_ready(g, "attention")) return BRAID_NONE;
    bg_attrs a = {0};
    a.value[0] = scale;
    a.flags = flags;
    return bb_tensor(
        bg_build(g, BRAID_OP_ATTENTION, in, nin, BRAID_F32, 0, NULL, &a, NULL));
}
