/* onnx/values.c — the importer's table of ONNX values by name, ONNX
 * element types, and static values made constants. */
#define _DEFAULT_SOURCE
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

braid_status ox_fail(ox_import *im, braid_status s, const char *fmt, ...) {
    if (im->status != BRAID_OK) return im->status;
    int k = snprintf(im->err, sizeof im->err, "%s: ", im->file);
    if (k < 0 || (size_t)k >= sizeof im->err) k = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->err + k, sizeof im->err - (size_t)k, fmt, ap);
    va_end(ap);
    im->status = s;
    return s;
}

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

ox_value *ox_find(ox_import *im, const char *name) {
    if (!im->nslots || !name) return NULL;
    uint32_t mask = im->nslots - 1;
    for (uint32_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        uint32_t s = im->slot[i];
        if (!s) return NULL;
        if (!strcmp(im->vals[s - 1].name, name)) return &im->vals[s - 1];
    }
}

static bool rehash(ox_import *im) {
    uint32_t n = im->nslots ? 2 * im->nslots : 64;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (!slot) return false;
    for (uint32_t v = 0; v < im->nvals; v++) {
        uint32_t i = hash_name(im->vals[v].name) & (n - 1);
        while (slot[i]) i = (i + 1) & (n - 1);
        slot[i] = v + 1;
    }
    free(im->slot);
    im->slot = slot;
    im->nslots = n;
    return true;
}

ox_value *ox_add(ox_import *im, const char *name) {
    if (ox_find(im, name)) {
        ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                "tensor name \"%s\" is defined twice", name);
        return NULL;
    }
    if (im->nvals == im->cap) {
        uint32_t cap = im->cap ? 2 * im->cap : 64;
        ox_value *v = realloc(im->vals, cap * sizeof *v);
        if (!v) goto oom;
        im->vals = v;
        im->cap = cap;
    }
    if ((uint64_t)(im->nvals + 1) * 2 > im->nslots && !rehash(im)) goto oom;
    ox_value *v = &im->vals[im->nvals];
    memset(v, 0, sizeof *v);
    v->t = BRAID_NONE;
    if (!(v->name = strdup(name))) goto oom;
    uint32_t mask = im->nslots - 1;
    uint32_t i = hash_name(name) & mask;
    while (im->slot[i]) i = (i + 1) & mask;
    im->slot[i] = ++im->nvals;
    return v;
oom:
    ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
}

void ox_values_free(ox_import *im) {
    for (uint32_t i = 0; i < im->nvals; i++) {
        free(im->vals[i].name);
        free(im->vals[i].sv);
    }
    free(im->vals);
    free(im->slot);
    im->vals = NULL;
    im->slot = NULL;
    im->nvals = im->cap = im->nslots = 0;
}

/* ONNX's TensorProto.DataType numbers. */
static const struct {
    const char *name;
    braid_dtype dtype;
} elems[] = {
    [1] = {"float", BRAID_F32},       [2] = {"uint8", BRAID_I32},
    [3] = {"int8", BRAID_I32},        [4] = {"uint16", BRAID_I32},
    [5] = {"int16", BRAID_I32},       [6] = {"int32", BRAID_I32},
    [7] = {"int64", BRAID_I32},       [8] = {"string", BRAID_DTYPE_COUNT_},
    [9] = {"bool", BRAID_BOOL},       [10] = {"float16", BRAID_F16},
    [11] = {"double", BRAID_F64},     [12] = {"uint32", BRAID_I32},
    [13] = {"uint64", BRAID_I32},     [14] = {"complex64", BRAID_DTYPE_COUNT_},
    [15] = {"complex128", BRAID_DTYPE_COUNT_},
    [16] = {"bfloat16", BRAID_BF16},
};
#define NELEMS ((int)(sizeof elems / sizeof elems[0]))

braid_dtype ox_dtype(int elem) {
    return elem > 0 && elem < NELEMS ? elems[elem].dtype : BRAID_DTYPE_COUNT_;
}

const char *ox_elem_name(int elem) {
    if (elem > 0 && elem < NELEMS && elems[elem].name) return elems[elem].name;
    return elem >= 17 && elem <= 28 ? "float8/4-bit/6-bit" : "undefined";
}

bool ox_elem_is_int(int elem) {
    return ox_dtype(elem) == BRAID_I32;
}

int64_t ox_numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

braid_tensor ox_constant(ox_import *im, braid_graph *g, const char *what,
                         int elem, int rank, const int64_t *dims,
                         const double *sv) {
    return ox_constant_as(im, g, what, elem, ox_dtype(elem), rank, dims, sv);
}

braid_tensor ox_constant_as(ox_import *im, braid_graph *g, const char *what,
                            int elem, braid_dtype t, int rank,
                            const int64_t *dims, const double *sv) {
    if (t == BRAID_DTYPE_COUNT_) {
        ox_fail(im, BRAID_ERR_UNSUPPORTED, "%s: element type %s is not "
                "supported", what, ox_elem_name(elem));
        return BRAID_NONE;
    }
    int64_t n = ox_numel(rank, dims);
    void *buf = malloc(n ? (size_t)n * braid_dtype_size(t) : 1);
    if (!buf) {
        ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        return BRAID_NONE;
    }
    for (int64_t i = 0; i < n; i++) {
        if (t == BRAID_I32 && !(sv[i] >= INT32_MIN && sv[i] <= INT32_MAX)) {
            ox_fail(im, BRAID_ERR_UNSUPPORTED,
                    "%s (%s): value %.17g at element %lld does not fit "
                    "braid's i32",
                    what, ox_elem_name(elem), sv[i], (long long)i);
            free(buf);
            return BRAID_NONE;
        }
        bg_store(t, buf, i, sv[i]);
    }
    /* in a holder braid_compile shares (graph/graph.h, bg_shared) */
    braid_tensor c = bg_constant_shared(g, t, rank, dims, buf);
    free(buf);
    return c;
}

