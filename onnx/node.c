/* onnx/node.c — what an op mapping sees of its node: inputs as tensors or
 * static values, attributes, outputs, and the error it fails with. */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

braid_status ox_node_fail(ox_node *n, braid_status s, const char *fmt, ...) {
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *np = n->np;
    const char *name = np->name && *np->name ? np->name
                       : np->n_output && np->output[0] ? np->output[0]
                                                       : "";
    return ox_fail(n->im, s, "node \"%s\" (%s, opset %d): %s%s", name,
                   np->op_type ? np->op_type : "?", n->im->opset,
                   s == BRAID_ERR_UNSUPPORTED ? "unsupported: " : "", why);
}

bool ox_has(const ox_node *n, int k) {
    return k >= 0 && k < n->nin && n->in[k] != NULL;
}

int ox_in_elem(const ox_node *n, int k) {
    return ox_has(n, k) ? n->in[k]->elem : 0;
}

braid_tensor ox_in(ox_node *n, int k) {
    if (!ox_has(n, k)) {
        ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "input %d is missing", k);
        return BRAID_NONE;
    }
    ox_value *v = n->in[k];
    if (n->folding || !braid_tensor_valid(v->t)) {
        braid_tensor t = ox_constant(n->im, n->g, v->name, v->elem, v->rank,
                                     v->dims, v->sv);
        if (!n->folding) {
            v->t = t;
            if (braid_tensor_valid(t)) braid_set_name(n->g, t, v->name);
        }
        return t;
    }
    return v->t;
}

const double *ox_static(ox_node *n, int k, int64_t *numel) {
    if (!ox_has(n, k)) {
        ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "input %d is missing", k);
        return NULL;
    }
    ox_value *v = n->in[k];
    if (!v->sv) {
        ox_node_fail(n, BRAID_ERR_UNSUPPORTED,
                     "input %d (\"%s\") must be known at import time (a "
                     "constant, or computed from constants and static "
                     "shapes)", k, v->name);
        return NULL;
    }
    *numel = ox_numel(v->rank, v->dims);
    return v->sv;
}

static int64_t to_i64(double d) {
    if (!(d == d)) return 0;
    if (d >= 9.2233720368547758e18) return INT64_MAX;
    if (d <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)d;
}

bool ox_static_ints(ox_node *n, int k, int64_t *out, int max, int *count) {
    int64_t m;
    const double *v = ox_static(n, k, &m);
    if (!v) return false;
    if (m > max) {
        ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "input %d has %lld values; at "
                     "most %d are supported", k, (long long)m, max);
        return false;
    }
    for (int64_t i = 0; i < m; i++) out[i] = to_i64(v[i]);
    *count = (int)m;
    return true;
}

const Onnx__AttributeProto *ox_attr(const ox_node *n, const char *name) {
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->np->attribute[i];
        if (a->name && !strcmp(a->name, name)) return a;
    }
    return NULL;
}

int64_t ox_attr_int(const ox_node *n, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

double ox_attr_float(const ox_node *n, const char *name, double dflt) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

const char *ox_attr_str(const ox_node *n, const char *name, char *buf,
                        size_t size, const char *dflt) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a || !a->has_s) {
        snprintf(buf, size, "%s", dflt);
        return buf;
    }
    size_t len = a->s.len < size - 1 ? a->s.len : size - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

bool ox_attr_ints(ox_node *n, const char *name, int64_t *out, int max,
                  int *count) {
    const Onnx__AttributeProto *a = ox_attr(n, name);
    *count = -1;
    if (!a) return true;
    if (a->n_ints > (size_t)max) {
        ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "attribute %s has %zu values; "
                     "at most %d are supported", name, a->n_ints, max);
        return false;
    }
    for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
    *count = (int)a->n_ints;
    return true;
}

bool ox_axes(ox_node *n, const char *name, int k, int64_t *out, int *count) {
    if (!ox_attr_ints(n, name, out, BRAID_MAX_RANK, count)) return false;
    if (*count >= 0 || k < 0 || !ox_has(n, k)) return true;
    return ox_static_ints(n, k, out, BRAID_MAX_RANK, count);
}

void ox_out(ox_node *n, int k, braid_tensor t, int elem) {
    if (k >= n->nout) return;
    n->out[k] = t;
    n->out_elem[k] = elem;
}

braid_status ox_out_static(ox_node *n, int k, int elem, int rank,
                           const int64_t *dims, const double *v) {
    if (k >= n->nout) return BRAID_OK;
    int64_t m = ox_numel(rank, dims);
    double *c = malloc((size_t)m * sizeof *c + 1);
    if (!c) return ox_node_fail(n, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    if (m) memcpy(c, v, (size_t)m * sizeof *c);
    free(n->out_sv[k]);
    n->out_sv[k] = c;
    n->out_elem[k] = elem;
    n->out_rank[k] = rank;
    if (rank) memcpy(n->out_dims[k], dims, (size_t)rank * sizeof *dims);
    return BRAID_OK;
}

int ox_rank(const ox_node *n, braid_tensor t, int64_t *dims) {
    int rank = 0;
    int64_t d[BRAID_MAX_RANK];
    if (braid_tensor_info(n->g, t, NULL, &rank, dims ? dims : d) != BRAID_OK)
        return 0;
    return rank;
}

braid_dtype ox_tdtype(const ox_node *n, braid_tensor t) {
    braid_dtype d = BRAID_F32;
    braid_tensor_info(n->g, t, &d, NULL, NULL);
    return d;
}

braid_tensor ox_scalar(ox_node *n, braid_dtype t, double v) {
    return braid_fill(n->g, t, 0, NULL, v);
}

bool ox_axis(ox_node *n, int64_t axis, int rank, int *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1)) {
        ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "axis %lld is out of "
                     "range for rank %d", (long long)axis, rank);
        return false;
    }
    *out = (int)a;
    return true;
}
