/* onnx/fuse_attention.c — scaled dot-product attention as PyTorch exports
 * it (both the TorchScript and the dynamo exporter), recognised at the
 * MatMul that multiplies by V and built as one attention op:
 *
 *   MatMul(Where(IsNaN(P), 0, P), V)      P = Softmax(X, axis -1)
 *   X = Add(MatMul(Q', K'), mask) or X = MatMul(Q', K')
 *   Q' = Mul(Q, cq) or Q (Div by a constant too), K' likewise
 *
 * Q [B,H,S,D], K [B,H,D,T], V [B,H,T,D]; cq, ck static scalars. The
 * softmax form without the Where is taken only without a mask (no row can
 * be fully masked then). Every intermediate (Q', K', the scores, X, P, the
 * IsNaN, the Where) must have no other consumer in the ONNX graph and not
 * be a graph output; else the graph is left as it is. The result is
 * permute(attention(q, k, v, mask, cq·ck), [0,2,1,3]) as the MatMul's
 * [B,H,S,D]; q, k, v are Q, K, V taken back through their permutes and
 * reshapes to the sequence-major tensors the projections produced when
 * the index arithmetic allows (ox_seq_major), else permuted. cq·ck is one
 * scale applied to the scores, so results round differently from the
 * unfused graph (q and k each rounded after their multiply): within the
 * ONNX tolerances (docs/onnx.md). */
#include "onnx/onnx_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- producers and uses of ONNX values --------------------------------------
 */

typedef struct ox_use {
    const char *name; /* a value produced by a node (borrowed) */
    uint32_t node;    /* its producer's index in the graph */
    uint32_t uses;    /* node inputs naming it, + 1 when a graph output */
} ox_use;

struct ox_uses {
    ox_use *slot; /* open addressing by name; name NULL: empty */
    uint32_t n;   /* power of two */
};

static uint32_t hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static ox_use *lookup(const struct ox_uses *u, const char *name, bool add) {
    if (!u || !name || !*name) return NULL;
    for (uint32_t i = hash(name) & (u->n - 1);; i = (i + 1) & (u->n - 1)) {
        ox_use *e = &u->slot[i];
        if (!e->name) {
            if (!add) return NULL;
            e->name = name;
            return e;
        }
        if (!strcmp(e->name, name)) return e;
    }
}

/* The table of the graph's values: built once, on the first candidate. */
static struct ox_uses *uses_of(ox_import *im) {
    if (im->uses || !im->graph) return im->uses;
    const Onnx__GraphProto *gp = im->graph;
    size_t outs = 0;
    for (size_t i = 0; i < gp->n_node; i++)
        outs += gp->node[i]->n_output;
    uint32_t n = 16;
    while (n < 2 * outs + 16)
        n *= 2;
    struct ox_uses *u = calloc(1, sizeof *u);
    if (u) u->slot = calloc(n, sizeof *u->slot);
    if (!u || !u->slot) {
        free(u);
        return NULL; /* no fusion, no error: the graph stays as it is */
    }
    u->n = n;
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_output; k++) {
            ox_use *e = lookup(u, gp->node[i]->output[k], true);
            if (e) e->node = (uint32_t)i;
        }
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) {
            ox_use *e = lookup(u, gp->node[i]->input[k], false);
            if (e) e->uses++;
        }
    for (size_t i = 0; i < gp->n_output; i++) {
        ox_use *e = lookup(u, gp->output[i]->name, false);
        if (e) e->uses++;
    }
    im->uses = u;
    return u;
}

void ox_uses_free(ox_import *im) {
    if (im->uses) free(im->uses->slot);
    free(im->uses);
    im->uses = NULL;
}

/* The node producing name when it is of type op and name has exactly
 * `uses` consumers; else NULL. */
static const Onnx__NodeProto *producer(ox_import *im, const char *name,
                                       const char *op, uint32_t uses) {
    ox_use *e = lookup(uses_of(im), name, false);
    if (!e || e->uses != uses) return NULL;
    const Onnx__NodeProto *np = im->graph->node[e->node];
    return np->op_type && !strcmp(np->op_type, op) ? np : NULL;
}

/* A static scalar (one element) value's number, into *v. */
static bool static_scalar(ox_import *im, const char *name, double *v) {
    ox_value *x = ox_find(im, name ? name : "");
    if (!x || !x->sv || ox_numel(x->rank, x->dims) != 1) return false;
    *v = x->sv[0];
    return true;
}

/* Q' = Mul(Q, c) / Mul(c, Q) / Div(Q, c) with one consumer: Q and the
 * factor; otherwise Q' itself and 1. */
static const char *unscaled(ox_import *im, const char *name, double *f) {
    *f = 1;
    const Onnx__NodeProto *np = producer(im, name, "Mul", 1);
    if (!np) np = producer(im, name, "Div", 1);
    if (!np || np->n_input != 2) return name;
    bool div = !strcmp(np->op_type, "Div");
    double c;
    if (static_scalar(im, np->input[1], &c) && (!div || c != 0)) {
        *f = div ? 1 / c : c;
        return np->input[0];
    }
    if (!div && static_scalar(im, np->input[0], &c)) {
        *f = c;
        return np->input[1];
    }
    return name;
}

/* ---- back to the sequence-major tensors
 * --------------------------------------- */

/* A tensor as a view of a base node: the base's flat index space split
 * into atoms (size, stride), each dim of the tensor a run of consecutive
 * atoms (mixed radix, outer first). Permutes reorder the runs; reshapes
 * regroup the atom sequence, splitting an atom where a new boundary falls
 * inside it. */
#define OX_ATOMS 32
typedef struct ox_view {
    int natoms, rank;
    int64_t size[OX_ATOMS], stride[OX_ATOMS];
    int first[BRAID_MAX_RANK + 1]; /* dim d = atoms [first[d], first[d+1]) */
} ox_view;

static void view_base(ox_view *v, const bg_node *n) {
    int64_t s = 1;
    v->rank = n->rank;
    v->natoms = n->rank;
    for (int d = n->rank - 1; d >= 0; d--) {
        v->size[d] = n->dims[d];
        v->stride[d] = s;
        s *= n->dims[d];
        v->first[d] = d;
    }
    v->first[n->rank] = n->rank;
}

static void view_permute(ox_view *v, const uint8_t *perm) {
    ox_view o = *v;
    v->natoms = 0;
    for (int d = 0; d < o.rank; d++) {
        v->first[d] = v->natoms;
        for (int a = o.first[perm[d]]; a < o.first[perm[d] + 1]; a++) {
            v->size[v->natoms] = o.size[a];
            v->stride[v->natoms++] = o.stride[a];
        }
    }
    v->first[o.rank] = v->natoms;
}

static bool view_reshape(ox_view *v, int rank, const int64_t *dims) {
    ox_view o = *v;
    int a = 0;
    v->natoms = 0;
    v->rank = rank;
    for (int d = 0; d < rank; d++) {
        v->first[d] = v->natoms;
        int64_t need = dims[d];
        while (need > 1) {
            while (a < o.natoms && o.size[a] == 1)
                a++;
            if (a >= o.natoms || v->natoms >= OX_ATOMS) return false;
            if (o.size[a] <= need) {
                if (need % o.size[a]) return false;
                need /= o.size[a];
                v->size[v->natoms] = o.size[a];
                v->stride[v->natoms++] = o.stride[a++];
            } else { /* the outer part of atom a belongs to dim d */
                if (o.size[a] % need) return false;
                int64_t inner = o.size[a] / need;
                v->size[v->natoms] = need;
                v->stride[v->natoms++] = o.stride[a] * inner;
                o.size[a] = inner;
                need = 1;
            }
        }
    }
    v->first[rank] = v->natoms;
    return true;
}

/* Walks t back through permutes and reshapes (at most 16) to a base. */
static bool view_of(const braid_graph *g, uint32_t t, ox_view *v,
                    uint32_t *base, int depth) {
    const bg_node *n = bg_node_at(g, t);
    if (depth < 16 &&
        (n->op == BRAID_OP_PERMUTE || n->op == BRAID_OP_RESHAPE) &&
        view_of(g, n->inputs[0], v, base, depth + 1)) {
        if (n->op == BRAID_OP_PERMUTE) {
            view_permute(v, n->attr.perm);
            return true;
        }
        if (view_reshape(v, n->rank, n->dims)) return true;
    }
    view_base(v, n);
    *base = t;
    return true;
}

/* t ([B,H,S,D] for q and v, [B,H,D,T] for k: `perm` takes it to
 * [B,S,H,D] / [B,T,H,D]) as a sequence-major tensor: a reshape of the
 * base it views when that base holds exactly those elements in that
 * order, else a permute of t. */
static braid_tensor seq_major(ox_node *n, braid_tensor t, const int *perm) {
    const braid_graph *g = n->g;
    const bg_node *x = bg_node_at(g, t.id);
    int64_t want[4], dims[4], st[4], s = 1;
    for (int d = 0; d < 4; d++)
        dims[d] = x->dims[perm[d]];
    for (int d = 3; d >= 0; d--) {
        want[perm[d]] = s; /* dense strides of the target, in t's order */
        s *= dims[d];
    }
    ox_view v;
    uint32_t base = BG_NONE;
    view_of(g, t.id, &v, &base, 0);
    bool ok = base != t.id && v.rank == 4 && bg_numel(bg_node_at(g, base)) == s;
    for (int d = 0; ok && d < 4; d++) {
        if (x->dims[d] == 1) continue;
        for (int a = v.first[d]; ok && a + 1 < v.first[d + 1]; a++)
            ok = v.stride[a] == v.size[a + 1] * v.stride[a + 1];
        st[d] = v.first[d + 1] > v.first[d] ? v.stride[v.first[d + 1] - 1] : 0;
        ok = ok && st[d] == want[d];
    }
    if (ok) return braid_reshape(n->g, (braid_tensor){base}, 4, dims);
    return braid_permute(n->g, t, perm);
}

/* ---- the match
 * ------------------------------------------------------------------ */

typedef struct ox_attn {
    const char *q, *k, *v, *mask; /* ONNX names (mask NULL: none) */
    double scale;
} ox_attn;

/* The Where(IsNaN(P), 0, P) or plain P feeding the MatMul: P's Softmax
 * input. */
static const char *softmax_input(ox_import *im, const char *a, bool *guarded) {
    const Onnx__NodeProto *w = producer(im, a, "Where", 1), *sm;
    double z;
    *guarded = w != NULL;
    if (w) {
        const Onnx__NodeProto *nan;
        if (w->n_input != 3 || !static_scalar(im, w->input[1], &z) || z != 0 ||
            !(nan = producer(im, w->input[0], "IsNaN", 1)) ||
            nan->n_input != 1 || strcmp(nan->input[0], w->input[2]))
            return NULL;
        sm = producer(im, w->input[2], "Softmax", 2);
    } else {
        sm = producer(im, a, "Softmax", 1);
    }
    if (!sm || sm->n_input != 1) return NULL;
    int64_t axis = -1;
    for (size_t i = 0; i < sm->n_attribute; i++)
        if (sm->attribute[i]->name && !strcmp(sm->attribute[i]->name, "axis"))
            axis = sm->attribute[i]->i;
    if (axis != -1 && axis != 3) return NULL;
    if (axis == -1 && im->opset < 13) {
        bool given = false; /* the default was 1 before opset 13 */
        for (size_t i = 0; i < sm->n_attribute; i++)
            given |= sm->attribute[i]->name &&
                     !strcmp(sm->attribute[i]->name, "axis");
        if (!given) return NULL;
    }
    return sm->input[0];
}

static bool match(ox_node *n, ox_attn *m) {
    ox_import *im = n->im;
    const Onnx__NodeProto *np = n->np;
    if (np->n_input != 2) return false;
    bool guarded;
    const char *x = softmax_input(im, np->input[0], &guarded);
    if (!x) return false;
    const Onnx__NodeProto *add = producer(im, x, "Add", 1), *mm = NULL;
    m->mask = NULL;
    if (add && add->n_input == 2) {
        for (int i = 0; i < 2 && !mm; i++)
            if ((mm = producer(im, add->input[i], "MatMul", 1)))
                m->mask = add->input[1 - i];
    } else {
        mm = producer(im, x, "MatMul", 1);
    }
    if (!mm || mm->n_input != 2 || (m->mask && !guarded)) return false;
    double fq, fk;
    m->q = unscaled(im, mm->input[0], &fq);
    m->k = unscaled(im, mm->input[1], &fk);
    m->v = np->input[1];
    m->scale = fq * fk;
    return isfinite(m->scale);
}

/* A tensor value of the main graph (a static one becomes a constant). */
static bool tensor_of(ox_node *n, const char *name, braid_tensor *t) {
    ox_value *v = ox_find(n->im, name);
    if (!v || v->elem < 0) return false;
    if (!braid_tensor_valid(v->t)) {
        if (!v->sv) return false;
        v->t =
            ox_constant(n->im, n->g, v->name, v->elem, v->rank, v->dims, v->sv);
        if (!braid_tensor_valid(v->t)) return false;
    }
    *t = v->t;
    return true;
}

/* Shapes the op takes, checked here so that a mismatch leaves the graph
 * unfused rather than failing the builder. */
static bool shapes_fit(ox_node *n, braid_tensor q, braid_tensor k,
                       braid_tensor v, braid_tensor mask) {
    const bg_node *Q = bg_node_at(n->g, q.id), *K = bg_node_at(n->g, k.id),
                  *V = bg_node_at(n->g, v.id);
    if (Q->rank != 4 || K->rank != 4 || V->rank != 4 ||
        !braid_dtype_is_float(Q->dtype) || K->dtype != Q->dtype ||
        V->dtype != Q->dtype || Q->dims[3] > 256)
        return false;
    int64_t B = Q->dims[0], H = Q->dims[1], S = Q->dims[2], D = Q->dims[3];
    int64_t T = K->dims[3];
    if (K->dims[0] != B || K->dims[1] != H || K->dims[2] != D ||
        V->dims[0] != B || V->dims[1] != H || V->dims[2] != T ||
        V->dims[3] != D)
        return false;
    if (!braid_tensor_valid(mask)) return true;
    const bg_node *M = bg_node_at(n->g, mask.id);
    int64_t want[4] = {B, H, S, T};
    if (M->dtype != Q->dtype || M->rank > 4) return false;
    for (int i = 0; i < M->rank; i++) {
        int64_t d = M->dims[i], w = want[4 - M->rank + i];
        if (d != 1 && d != w) return false;
    }
    return true;
}

/* A static mask that is exactly the causal one for S query rows of q:
 * [.., S, S] (every leading dim 1; k has S keys), 0 where key j <= query
 * i, -inf or at most -FLT_MAX past the diagonal (PyTorch's exporters fold
 * GPT-2's triangle to this: the TorchScript one with -inf, the dynamo one
 * with float32's lowest). The attention then takes the causal flag
 * instead, with the same probabilities: adding 0 changes no finite score;
 * past the diagonal -inf, or any score of magnitude below ~1e31 plus
 * -FLT_MAX, gives exp(...) = 0 exactly, as the flag does (the diagonal is
 * never masked, so a row's max is finite). No mask is read per score and
 * the blocks stop at their diagonal. */
static bool causal_mask(ox_node *n, const char *name, braid_tensor q,
                        braid_tensor k) {
    ox_value *x = ox_find(n->im, name);
    const bg_node *Q = bg_node_at(n->g, q.id), *K = bg_node_at(n->g, k.id);
    if (Q->rank != 4 || K->rank != 4 || K->dims[3] != Q->dims[2]) return false;
    int64_t S = Q->dims[2];
    if (!x || !x->sv || x->rank < 2 || x->dims[x->rank - 1] != S ||
        x->dims[x->rank - 2] != S)
        return false;
    for (int d = 0; d + 2 < x->rank; d++)
        if (x->dims[d] != 1) return false;
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) {
            double v = x->sv[i * S + j];
            if (j <= i ? v != 0 : !(v <= -FLT_MAX)) return false;
        }
    return true;
}

bool ox_try_attention(ox_node *n) {
    ox_attn m;
    if (n->folding || n->g != n->im->g || !match(n, &m)) return false;
    braid_tensor q, k, v, mask = BRAID_NONE;
    if (!tensor_of(n, m.q, &q) || !tensor_of(n, m.k, &k) ||
        !tensor_of(n, m.v, &v))
        return false;
    unsigned flags = 0;
    if (m.mask && causal_mask(n, m.mask, q, k))
        flags = BRAID_ATTENTION_CAUSAL;
    else if (m.mask && !tensor_of(n, m.mask, &mask))
        return false;
    if (!shapes_fit(n, q, k, v, mask)) return false;
    static const int qv_perm[4] = {0, 2, 1, 3}, k_perm[4] = {0, 3, 1, 2};
    braid_tensor a =
        braid_attention(n->g, seq_major(n, q, qv_perm), seq_major(n, k, k_perm),
                        seq_major(n, v, qv_perm), mask, m.scale, flags);
    ox_out(n, 0, braid_permute(n->g, a, qv_perm), ox_in_elem(n, 0));
    return true;
}
