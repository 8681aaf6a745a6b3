/* onnx/load.c — tensors from a model: raw_data read in place from the
 * mapped file (wire.c split it off), typed fields from protobuf-c, and
 * external-data files, which must stay inside the model's folder.
 *
 * Memory: a large tensor is copied once, from the file's pages into the
 * graph's constant, and the pages it came from are then dropped from the
 * process (madvise), so importing a model peaks near one copy of its
 * weights rather than two (docs/onnx.md has the figures). */
#define _DEFAULT_SOURCE
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes per element of the types read from raw_data. */
static size_t raw_elem_size(int elem) {
    switch (elem) {
    case 1: case 6: case 12: return 4; /* float, int32, uint32 */
    case 2: case 3: case 9: return 1;  /* uint8, int8, bool */
    case 4: case 5: case 10: case 16: return 2;
    case 7: case 11: case 13: return 8;
    default: return 0;
    }
}

/* Element i of raw little-endian data of ONNX type elem, as a double. */
static double raw_load(int elem, const uint8_t *p, int64_t i) {
    switch (elem) {
    case 1: { float f; memcpy(&f, p + 4 * i, 4); return f; }
    case 2: return p[i];
    case 3: return (int8_t)p[i];
    case 4: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case 5: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case 6: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case 7: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    case 9: return p[i] != 0;
    case 10: { uint16_t v; memcpy(&v, p + 2 * i, 2); return bg_f16_to_f32(v); }
    case 11: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case 12: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case 13: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    default: { uint16_t v; memcpy(&v, p + 2 * i, 2); return bg_bf16_to_f32(v); }
    }
}

/* Element i of the typed field that holds elem's values. */
static double typed_load(const Onnx__TensorProto *tp, int elem, int64_t i) {
    switch (elem) {
    case 1: return tp->float_data[i];
    case 7: return (double)tp->int64_data[i];
    case 11: return tp->double_data[i];
    case 12: case 13: return (double)tp->uint64_data[i];
    case 10: return bg_f16_to_f32((uint16_t)tp->int32_data[i]);
    case 16: return bg_bf16_to_f32((uint16_t)tp->int32_data[i]);
    case 9: return tp->int32_data[i] != 0;
    default: return tp->int32_data[i];
    }
}

static size_t typed_count(const Onnx__TensorProto *tp, int elem) {
    switch (elem) {
    case 1: return tp->n_float_data;
    case 7: return tp->n_int64_data;
    case 11: return tp->n_double_data;
    case 12: case 13: return tp->n_uint64_data;
    default: return tp->n_int32_data;
    }
}

/* Drops the whole pages inside [p, p + n) of the mapped model from this
 * process's memory: they were copied and will not be read again. */
static void release_pages(const ox_import *im, const uint8_t *p, size_t n) {
    if (!im->map || p < im->map || p + n > im->map + im->map_len) return;
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)ps - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

/* ---- external data ---------------------------------------------------------- */

typedef struct ox_ext {
    void *map;     /* mapping of the region read */
    size_t len;    /* its length */
    const uint8_t *p; /* the tensor's bytes */
} ox_ext;

/* location must be a relative path inside base_dir once resolved (no
 * absolute paths, no "..", no symlink leaving the folder). */
static braid_status ext_open(ox_import *im, const char *what,
                             const char *location, int *fd) {
    if (!im->base_dir)
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: external data \"%s\" but no base folder (set "
                       "braid_onnx_options.base_dir)", what, location);
    if (location[0] == '/' || !strcmp(location, "..") ||
        !strncmp(location, "../", 3) || strstr(location, "/../") ||
        (strlen(location) >= 3 &&
         !strcmp(location + strlen(location) - 3, "/..")))
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: external data path \"%s\" leaves the model's "
                       "folder", what, location);
    char path[PATH_MAX], real[PATH_MAX], base[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", im->base_dir, location) >=
            (int)sizeof path ||
        !realpath(im->base_dir, base))
        return ox_fail(im, BRAID_ERR_IO, "%s: external data \"%s\": bad path",
                       what, location);
    if (!realpath(path, real))
        return ox_fail(im, BRAID_ERR_IO, "%s: external data \"%s\": %s", what,
                       location, strerror(errno));
    size_t nb = strlen(base);
    if (strncmp(real, base, nb) || (real[nb] != '/' && nb != 1))
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: external data \"%s\" resolves outside the "
                       "model's folder", what, location);
    *fd = open(real, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return ox_fail(im, BRAID_ERR_IO, "%s: external data \"%s\": %s", what,
                       location, strerror(errno));
    return BRAID_OK;
}

static braid_status ext_map(ox_import *im, const Onnx__TensorProto *tp,
                            const char *what, size_t need, ox_ext *x) {
    const char *location = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value) continue;
        if (!strcmp(e->key, "location")) location = e->value;
        else if (!strcmp(e->key, "offset")) offset = strtoll(e->value, NULL, 10);
        else if (!strcmp(e->key, "length")) length = strtoll(e->value, NULL, 10);
    }
    if (!location || !*location)
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: external data without a location", what);
    if (offset < 0 || (length >= 0 && (uint64_t)length != need))
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: external data offset %lld / length %lld; the "
                       "tensor needs %zu bytes", what, (long long)offset,
                       (long long)length, need);
    int fd;
    braid_status s = ext_open(im, what, location, &fd);
    if (s != BRAID_OK) return s;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)offset > (uint64_t)st.st_size ||
        need > (uint64_t)st.st_size - (uint64_t)offset) {
        close(fd);
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT,
                       "%s: external data \"%s\" is shorter than offset %lld "
                       "+ %zu bytes", what, location, (long long)offset, need);
    }
    long ps = sysconf(_SC_PAGESIZE);
    off_t base = (off_t)(offset & ~(int64_t)(ps - 1));
    size_t skew = (size_t)(offset - base);
    x->len = need + skew;
    x->map = need ? mmap(NULL, x->len, PROT_READ, MAP_PRIVATE, fd, base)
                  : NULL;
    close(fd);
    if (x->map == MAP_FAILED)
        return ox_fail(im, BRAID_ERR_IO, "%s: mapping \"%s\": %s", what,
                       location, strerror(errno));
    x->p = need ? (const uint8_t *)x->map + skew : (const uint8_t *)"";
    return BRAID_OK;
}

/* ---- tensors ---------------------------------------------------------------- */

static braid_status check_dims(ox_import *im, const Onnx__TensorProto *tp,
                               const char *what, ox_value *v) {
    if (tp->n_dims > BRAID_MAX_RANK)
        return ox_fail(im, BRAID_ERR_UNSUPPORTED, "%s: rank %zu; braid "
                       "supports up to %d", what, tp->n_dims, BRAID_MAX_RANK);
    v->rank = (int)tp->n_dims;
    for (int i = 0; i < v->rank; i++) v->dims[i] = tp->dims[i];
    if (!bg_shape_fits(v->rank, v->dims, 8, NULL))
        return ox_fail(im, BRAID_ERR_SHAPE, "%s: dims are negative or too "
                       "large", what);
    return BRAID_OK;
}

/* The tensor as a constant of im->g: raw f32/f64/f16/bf16/i32/bool bytes in
 * place (one copy), anything else converted element by element. */
static braid_status to_constant(ox_import *im, const char *what, ox_value *v,
                                const uint8_t *raw, const Onnx__TensorProto *tp) {
    braid_dtype t = ox_dtype(v->elem);
    if (im->keep_int64 && v->elem == OX_ELEM_INT64) t = BRAID_I64;
    int64_t n = ox_numel(v->rank, v->dims);
    bool same = raw && raw_elem_size(v->elem) == braid_dtype_size(t) &&
                v->elem != 9 && v->elem != 12 && v->elem != 4 && v->elem != 2;
    if (same) {
        /* copied once, into a holder braid_compile shares rather than
         * copies again (graph/graph.h, bg_shared) */
        v->t = bg_constant_shared(im->g, t, v->rank, v->dims, raw);
    } else {
        double *sv = malloc((size_t)n * sizeof *sv + 1);
        if (!sv) return ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                what);
        for (int64_t i = 0; i < n; i++)
            sv[i] = raw ? raw_load(v->elem, raw, i) : typed_load(tp, v->elem, i);
        v->t = ox_constant_as(im, im->g, what, v->elem, t, v->rank, v->dims, sv);
        free(sv);
    }
    if (im->status != BRAID_OK) return im->status;
    if (braid_graph_status(im->g) != BRAID_OK)
        return ox_fail(im, braid_graph_status(im->g), "%s: %s", what,
                       braid_graph_error(im->g));
    braid_set_name(im->g, v->t, what);
    return BRAID_OK;
}

braid_status ox_load_tensor(ox_import *im, const Onnx__TensorProto *tp,
                            const ox_span *raw, const char *what, ox_value *v) {
    v->elem = tp->has_data_type ? tp->data_type : 0;
    braid_status s = check_dims(im, tp, what, v);
    if (s != BRAID_OK) return s;
    if (ox_dtype(v->elem) == BRAID_DTYPE_COUNT_ || !raw_elem_size(v->elem))
        return ox_fail(im, BRAID_ERR_UNSUPPORTED, "%s: element type %s is not "
                       "supported", what, ox_elem_name(v->elem));
    int64_t n = ox_numel(v->rank, v->dims);
    size_t need = (size_t)n * raw_elem_size(v->elem);
    const uint8_t *bytes = NULL;
    ox_ext ext = {0};
    if (tp->has_data_location &&
        tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if ((s = ext_map(im, tp, what, need, &ext)) != BRAID_OK) return s;
        bytes = ext.p;
    } else if (raw || tp->has_raw_data) {
        ox_span r = raw ? *raw : (ox_span){tp->raw_data.data, tp->raw_data.len};
        if (r.n != need)
            return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "%s: raw_data has "
                           "%zu bytes; %s%s needs %zu", what, r.n,
                           ox_elem_name(v->elem), "", need);
        bytes = r.p;
    } else if (typed_count(tp, v->elem) != (size_t)n) {
        return ox_fail(im, BRAID_ERR_INVALID_ARGUMENT, "%s: %zu values for "
                       "%lld elements", what, typed_count(tp, v->elem),
                       (long long)n);
    }
    if (n <= OX_STATIC_MAX) {
        v->sv = malloc((size_t)n * sizeof *v->sv + 1);
        if (!v->sv) s = ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        for (int64_t i = 0; v->sv && i < n; i++)
            v->sv[i] = bytes ? raw_load(v->elem, bytes, i)
                             : typed_load(tp, v->elem, i);
    } else {
        s = to_constant(im, what, v, bytes, tp);
        if (bytes && !ext.map) release_pages(im, bytes, need);
    }
    if (ext.map) munmap(ext.map, ext.len);
    return s;
}

/* ---- test-data tensors (braid_onnx_tensor_decode) ------------------------------ */

static braid_status decode_values(ox_import *im, const Onnx__TensorProto *tp,
                                  ox_value *v, braid_dtype *dtype, void **data) {
    braid_status s = ox_load_tensor(im, tp, NULL, im->file, v);
    if (s != BRAID_OK) return s;
    int64_t n = ox_numel(v->rank, v->dims);
    double *sv = v->sv;
    if (!sv) { /* large: read the constant the loader made back */
        const bg_node *c = bg_node_at(im->g, v->t.id);
        *dtype = c->dtype;
        size_t bytes = bg_nbytes(c);
        if (!(*data = malloc(bytes ? bytes : 1)))
            return ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (bytes) memcpy(*data, c->attr.data, bytes);
        return BRAID_OK;
    }
    braid_tensor t = ox_constant_as(im, im->g, im->file, v->elem,
                                    v->elem == OX_ELEM_INT64 ? BRAID_I64
                                                             : ox_dtype(v->elem),
                                    v->rank, v->dims, sv);
    if (!braid_tensor_valid(t)) return im->status ? im->status : BRAID_ERR_INTERNAL;
    const bg_node *c = bg_node_at(im->g, t.id);
    *dtype = c->dtype;
    size_t bytes = (size_t)n * braid_dtype_size(c->dtype);
    if (!(*data = malloc(bytes ? bytes : 1)))
        return ox_fail(im, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    if (bytes) memcpy(*data, c->attr.data, bytes);
    return BRAID_OK;
}

braid_status braid_onnx_tensor_decode(const void *bytes, size_t size,
                                      const char *name, braid_dtype *dtype,
                                      int *rank, int64_t *dims, void **data,
                                      char **tensor_name) {
    if (!dtype || !rank || !dims || !data || (!bytes && size))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_onnx_tensor_decode: NULL argument");
    *data = NULL;
    if (tensor_name) *tensor_name = NULL;
    ox_import im = {.file = name ? name : "tensor", .status = BRAID_OK,
                    .keep_int64 = true};
    Onnx__TensorProto *tp = NULL;
    if (ox_wire_depth_ok(bytes, size, &onnx__tensor_proto__descriptor, 16))
        tp = onnx__tensor_proto__unpack(NULL, size, bytes);
    if (!tp) return bg_set_last_error(BRAID_ERR_PARSE, "%s: not an ONNX "
                                      "TensorProto", im.file);
    ox_value v = {.t = BRAID_NONE};
    im.g = braid_graph_new(NULL);
    braid_status s = im.g ? decode_values(&im, tp, &v, dtype, data)
                          : BRAID_ERR_OUT_OF_MEMORY;
    if (s == BRAID_OK) {
        *rank = v.rank;
        memcpy(dims, v.dims, (size_t)v.rank * sizeof *dims);
        if (tensor_name &&
            !(*tensor_name = strdup(tp->name ? tp->name : "")))
            s = BRAID_ERR_OUT_OF_MEMORY;
    }
    if (s != BRAID_OK) {
        free(*data);
        *data = NULL;
        bg_set_last_error(s, "%s", im.status ? im.err : "out of memory");
    }
    free(v.sv);
    braid_graph_free(im.g);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return s;
}
