/* onnx/import.c — braid_onnx_import: the model's bytes → protobuf-c (with
 * initializer payloads kept in place, wire.c) → values → nodes mapped in
 * order through the op table, folding every node whose inputs are all
 * static with graph/eval.c (the reference semantics) → outputs. */
#define _DEFAULT_SOURCE
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* protobuf-c recurses once per nested message: a hostile file nesting
 * graphs in attributes a million deep would overflow the stack. */
#define OX_MAX_DEPTH 64

/* ---- unpacking with the weights left in place ------------------------------ */

typedef struct ox_parsed {
    Onnx__ModelProto *model;
    ox_span *inits;   /* initializer TensorProto messages */
    size_t ninits;
} ox_parsed;

static braid_status parse_model(ox_import *im, const uint8_t *buf, size_t len,
                                ox_parsed *out) {
    char err[256];
    size_t nouter, ngraph, ng;
    ox_span *graph = NULL;
    uint8_t *strip = NULL;
    if (!ox_wire_split(buf, len, 7, NULL, &nouter, &graph, &ng, err,
                       sizeof err))
        return ox_fail(im, BRAID_ERR_PARSE, "not an ONNX model: %s", err);
    if (ng != 1) {
        free(graph);
        return ox_fail(im, BRAID_ERR_PARSE, "not an ONNX model: %zu graph "
                       "fields (expected 1)", ng);
    }
    ox_span g = graph[0];
    free(graph);
    if (!ox_wire_split(g.p, g.n, 5, NULL, &ngraph, &out->inits, &out->ninits,
                       err, sizeof err))
        return ox_fail(im, BRAID_ERR_PARSE, "graph: %s", err);
    strip = malloc(nouter + ngraph + 16);
    if (!strip) return ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    size_t k, d, tmp;
    ox_span *none;
    ox_wire_split(buf, len, 7, strip, &k, &none, &tmp, err, sizeof err);
    free(none);
    k += ox_wire_put_header(strip + k, 7, ngraph);
    ox_wire_split(g.p, g.n, 5, strip + k, &d, &none, &tmp, err, sizeof err);
    free(none);
    k += d;
    if (!ox_wire_depth_ok(strip, k, &onnx__model_proto__descriptor,
                          OX_MAX_DEPTH)) {
        free(strip);
        return ox_fail(im, BRAID_ERR_PARSE, "messages nest more than %d deep",
                       OX_MAX_DEPTH);
    }
    out->model = onnx__model_proto__unpack(NULL, k, strip);
    free(strip);
    if (!out->model || !out->model->graph)
        return ox_fail(im, BRAID_ERR_PARSE, "not an ONNX model: protobuf-c "
                       "could not decode it");
    return BRAID_OK;
}

static braid_status load_initializer(ox_import *im, ox_span span, size_t i) {
    char err[256], what[64];
    snprintf(what, sizeof what, "initializer %zu", i);
    size_t len, nraw;
    ox_span *raw = NULL;
    if (!ox_wire_split(span.p, span.n, 9, NULL, &len, &raw, &nraw, err,
                       sizeof err))
        return ox_fail(im, BRAID_ERR_PARSE, "%s: %s", what, err);
    uint8_t *strip = malloc(len + 1);
    if (!strip) {
        free(raw);
        return ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(raw);
    ox_wire_split(span.p, span.n, 9, strip, &len, &raw, &nraw, err,
                  sizeof err);
    Onnx__TensorProto *tp = NULL;
    if (ox_wire_depth_ok(strip, len, &onnx__tensor_proto__descriptor,
                         OX_MAX_DEPTH))
        tp = onnx__tensor_proto__unpack(NULL, len, strip);
    free(strip);
    braid_status s;
    if (!tp || nraw > 1) {
        s = ox_fail(im, BRAID_ERR_PARSE, "%s: malformed TensorProto", what);
    } else {
        const char *name = tp->name && *tp->name ? tp->name : what;
        ox_value *v = ox_add(im, name);
        s = v ? ox_load_tensor(im, tp, nraw ? &raw[0] : NULL, name, v)
              : im->status;
    }
    free(raw);
    if (tp) onnx__tensor_proto__free_unpacked(tp, NULL);
    return s;
}

/* ---- graph inputs -------------------------------------------------------------- */

/* The binding "name=AxB" for input name in shapes, parsed into dims;
 * -1 when absent, -2 when malformed. */
static int find_binding(const char *shapes, const char *name, int64_t *dims) {
    size_t nl = strlen(name);
    for (const char *p = shapes; p && *p;) {
        const char *end = p + strcspn(p, ";,");
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (eq && (size_t)(eq - p) == nl && !memcmp(p, name, nl)) {
            int rank = 0;
            const char *q = eq + 1;
            while (q < end) {
                char *stop;
                if (rank == BRAID_MAX_RANK || *q < '0' || *q > '9') return -2;
                dims[rank++] = strtoll(q, &stop, 10);
                q = stop;
                if (q < end && *q != 'x' && *q != 'X') return -2;
                if (q < end) q++;
            }
            return rank;
        }
        p = *end ? end + 1 : end;
    }
    return -1;
}

static const braid_onnx_constant *find_constant(const ox_import *im,
                                                const char *name);

static braid_status input_shape(ox_import *im, const char *shapes,
                                const Onnx__ValueInfoProto *vi, ox_value *v) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !tp->tensor_type)
        return ox_fail(im, BRAID_ERR_UNSUPPORTED, "input \"%s\": unsupported: "
                       "only tensor inputs are supported", v->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    v->elem = tt->has_elem_type ? tt->elem_type : 0;
    int64_t bound[BRAID_MAX_RANK];
    int nb = find_binding(shapes, v->name, bound);
    const braid_onnx_constant *c = find_constant(im, v->name);
    if (nb == -1 && c && c->rank >= 0 && c->rank <= BRAID_MAX_RANK) {
        nb = c->rank; /* a frozen input binds its own shape */
        memcpy(bound, c->dims, (size_t)nb * sizeof *bound);
    }
    if (nb == -2)
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "shape binding for "
                       "\"%s\" is malformed (expected NAME=D0xD1x...)",
                       v->name);
    if (!tt->shape) {
        if (nb < 0)
            return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "input \"%s\" has "
                           "no shape; bind one (e.g. %s=1x128)", v->name,
                           v->name);
        v->rank = nb;
        memcpy(v->dims, bound, sizeof bound);
        return BRAID_OK;
    }
    if (tt->shape->n_dim > BRAID_MAX_RANK)
        return ox_fail(im, BRAID_ERR_UNSUPPORTED, "input \"%s\" has rank %zu",
                       v->name, tt->shape->n_dim);
    v->rank = (int)tt->shape->n_dim;
    if (nb >= 0 && nb != v->rank)
        return ox_fail(im, BRAID_ERR_SHAPE, "input \"%s\" has rank %d; the "
                       "binding gives %d dims", v->name, v->rank, nb);
    for (int i = 0; i < v->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        bool fixed =
            d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (fixed && nb >= 0 && bound[i] != d->dim_value)
            return ox_fail(im, BRAID_ERR_SHAPE, "input \"%s\" dim %d is %lld "
                           "in the model; the binding gives %lld", v->name, i,
                           (long long)d->dim_value, (long long)bound[i]);
        if (!fixed && nb < 0)
            return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "input \"%s\" dim "
                           "%d (%s) is not fixed; bind it (e.g. --shape "
                           "%s=...)", v->name, i,
                           d->value_case ==
                                   ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                               ? d->dim_param : "unnamed",
                           v->name);
        v->dims[i] = fixed ? d->dim_value : bound[i];
    }
    return BRAID_OK;
}

static const braid_onnx_constant *find_constant(const ox_import *im,
                                                const char *name) {
    for (size_t i = 0; im->opts && i < im->opts->nconstants; i++)
        if (im->opts->constants[i].name &&
            !strcmp(im->opts->constants[i].name, name))
            return &im->opts->constants[i];
    return NULL;
}

/* Input v becomes static values (or a constant, when large) from c. */
static braid_status freeze_input(ox_import *im, const braid_onnx_constant *c,
                                 ox_value *v) {
    bool same = (c->dtype == ox_dtype(v->elem) ||
                 (c->dtype == BRAID_I64 && v->elem == OX_ELEM_INT64)) &&
                c->rank == v->rank &&
                (c->data || !ox_numel(v->rank, v->dims));
    for (int i = 0; same && i < c->rank; i++) same = c->dims[i] == v->dims[i];
    if (!same)
        return ox_fail(im, BRAID_ERR_SHAPE, "constant for input \"%s\" does "
                       "not match its type (%s, rank %d)", v->name,
                       ox_elem_name(v->elem), v->rank);
    int64_t n = ox_numel(v->rank, v->dims);
    if (n > OX_STATIC_MAX) {
        v->t = braid_constant(im->g, c->dtype, c->rank, c->dims, c->data);
        if (c->dtype == BRAID_I64) v->t = braid_cast(im->g, v->t, BRAID_I32);
        braid_set_name(im->g, v->t, v->name);
        return BRAID_OK;
    }
    if (!(v->sv = malloc((size_t)n * sizeof *v->sv + 1)))
        return ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n; i++) v->sv[i] = bg_load(c->dtype, c->data, i);
    return BRAID_OK;
}

static braid_status add_input(ox_import *im, const char *shapes,
                              const Onnx__ValueInfoProto *vi) {
    if (!vi->name || !*vi->name)
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "a graph input has no "
                       "name");
    if (ox_find(im, vi->name)) return BRAID_OK; /* an initializer (IR < 4) */
    ox_value *v = ox_add(im, vi->name);
    if (!v) return im->status;
    braid_status s = input_shape(im, shapes, vi, v);
    if (s != BRAID_OK) return s;
    braid_dtype t = ox_dtype(v->elem);
    if (t == BRAID_DTYPE_COUNT_)
        return ox_fail(im, BRAID_ERR_UNSUPPORTED, "input \"%s\": unsupported: "
                       "element type %s", v->name, ox_elem_name(v->elem));
    const braid_onnx_constant *c = find_constant(im, v->name);
    if (c) return freeze_input(im, c, v);
    char name[256];
    if (braid_onnx_input_name(vi->name, name, sizeof name) >= sizeof name)
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "input name \"%.40s...\" "
                       "is too long", vi->name);
    /* int64 is stored as i64 at the boundary and narrowed to i32 inside,
     * by a cast that checks the range at run time (docs/onnx.md) */
    bool wide = v->elem == OX_ELEM_INT64;
    v->t = braid_input(im->g, name, wide ? BRAID_I64 : t, v->rank, v->dims);
    if (wide && braid_tensor_valid(v->t)) v->t = braid_cast(im->g, v->t, t);
    if (!braid_tensor_valid(v->t))
        return ox_fail(im, braid_graph_status(im->g), "input \"%s\": %s",
                       v->name, braid_graph_error(im->g));
    return BRAID_OK;
}

/* ---- nodes ---------------------------------------------------------------------- */

braid_status ox_run_node(ox_import *im, const Onnx__NodeProto *np);

static braid_status add_outputs(ox_import *im, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name;
        ox_value *v = ox_find(im, name ? name : "");
        if (!v || v->elem < 0)
            return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "graph output \"%s\" "
                           "is not computed by the graph", name ? name : "");
        braid_tensor t = v->t;
        if (v->sv) /* static: int64 kept exact, as i64 */
            t = ox_constant_as(im, im->g, name, v->elem,
                               v->elem == OX_ELEM_INT64 ? BRAID_I64
                                                        : ox_dtype(v->elem),
                               v->rank, v->dims, v->sv);
        else if (v->elem == OX_ELEM_INT64)
            t = braid_cast(im->g, t, BRAID_I64); /* int64 out */
        if (im->status != BRAID_OK) return im->status;
        if (braid_output(im->g, name, t) != BRAID_OK)
            return ox_fail(im, braid_graph_status(im->g), "graph output "
                           "\"%s\": %s", name, braid_graph_error(im->g));
    }
    return BRAID_OK;
}

static void read_opset(ox_import *im, const Onnx__ModelProto *m) {
    im->opset = 1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if ((!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) &&
            o->has_version)
            im->opset = (int)o->version;
    }
}

static braid_status import_graph(ox_import *im, const ox_parsed *p,
                                 const char *shapes) {
    const Onnx__GraphProto *gp = p->model->graph;
    im->graph = gp;
    read_opset(im, p->model);
    for (size_t i = 0; i < p->ninits; i++)
        if (load_initializer(im, p->inits[i], i) != BRAID_OK) return im->status;
    for (size_t i = 0; i < gp->n_input; i++)
        if (add_input(im, shapes, gp->input[i]) != BRAID_OK) return im->status;
    if (!gp->n_output)
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "the graph has no "
                       "outputs");
    for (size_t i = 0; i < gp->n_node; i++)
        if (ox_run_node(im, gp->node[i]) != BRAID_OK) return im->status;
    return add_outputs(im, gp);
}

static braid_status import_bytes(const uint8_t *buf, size_t len,
                                 const braid_onnx_options *o, const char *file,
                                 const char *dir, bool mapped,
                                 braid_graph **out) {
    ox_import im = {.file = file, .base_dir = dir, .opts = o,
                    .status = BRAID_OK};
    if (mapped) {
        im.map = buf;
        im.map_len = len;
    }
    ox_parsed p = {0};
    im.g = braid_graph_new(o ? o->graph : NULL);
    if (!im.g) ox_fail(&im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    else if (parse_model(&im, buf, len, &p) == BRAID_OK)
        import_graph(&im, &p, o ? o->shapes : NULL);
    if (im.status == BRAID_OK && braid_graph_status(im.g) != BRAID_OK)
        ox_fail(&im, braid_graph_status(im.g), "%s", braid_graph_error(im.g));
    ox_values_free(&im);
    ox_uses_free(&im);
    free(p.inits);
    if (p.model) onnx__model_proto__free_unpacked(p.model, NULL);
    if (im.status != BRAID_OK) {
        braid_graph_free(im.g);
        bg_set_last_error(im.status, "%s", im.err);
        return im.status;
    }
    *out = im.g;
    return BRAID_OK;
}

braid_status braid_onnx_import_memory(const void *data, size_t size,
                                      const braid_onnx_options *opts,
                                      braid_graph **out) {
    if (!out || (!data && size))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_onnx_import_memory: NULL argument");
    *out = NULL;
    const char *file = opts && opts->filename ? opts->filename : "model";
    return import_bytes(data ? data : (const void *)"", size, opts, file,
                        opts ? opts->base_dir : NULL, false, out);
}

braid_status braid_onnx_import(const char *path, const braid_onnx_options *opts,
                               braid_graph **out) {
    if (!out || !path)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_onnx_import: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        return bg_set_last_error(BRAID_ERR_IO, "%s: %s", path,
                                 fd < 0 ? strerror(errno) : "not a file");
    }
    size_t len = (size_t)st.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (map == MAP_FAILED)
        return bg_set_last_error(BRAID_ERR_IO, "%s: %s", path, strerror(errno));
    char *copy = strdup(path);
    const char *dir = opts && opts->base_dir ? opts->base_dir
                      : copy                  ? dirname(copy)
                                              : ".";
    braid_status s = import_bytes(map ? map : (void *)"", len, opts, path, dir,
                                  map != NULL, out);
    free(copy);
    if (map) munmap(map, len);
    return s;
}
