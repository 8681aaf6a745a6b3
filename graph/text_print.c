/* graph/text_print.c — writes a graph in the .graph text format
 * (docs/graph-format.md).
 *
 * The text is handed to the caller, who frees it with free(), so this file
 * (unlike the rest of graph/) grows its buffer with plain malloc/realloc.
 * The output is canonical: labels are %<id>, attributes come in a fixed
 * order, and every number reads back to the same bits, so
 * print(parse(print(g))) == print(g). */
#define _POSIX_C_SOURCE 200809L /* fsync, getpid */
#include "graph/index.h"
#include "graph/text.h"

#include "graph/outfile.h"
#include "graph/window.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Constants with at most this many elements are written as a value list,
 * larger ones as base64. */
#define BG_TEXT_LIST_MAX 64

/* A growing output buffer; after an allocation failure every append is a
 * no-op and oom stays set. */
typedef struct pbuf {
    char *data; /* malloc'd, NUL-terminated once finished */
    size_t len; /* bytes written */
    size_t cap; /* bytes allocated */
    bool oom;   /* an allocation failed */
} pbuf;

/* Makes room for n more bytes plus a NUL. */
static bool reserve(pbuf *b, size_t n) {
    if (b->oom) return false;
    if (n < b->cap - b->len) return true;
    if (n > SIZE_MAX / 2 - b->len - 1) {
        b->oom = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= n)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

static void put(pbuf *b, const char *s, size_t n) {
    if (reserve(b, n)) {
        memcpy(b->data + b->len, s, n);
        b->len += n;
    }
}

static void puts_(pbuf *b, const char *s) {
    put(b, s, strlen(s));
}

static void putf(pbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(pbuf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A quoted string: \" \\ and control characters escaped, other bytes
 * (UTF-8 included) as they are. */
static void put_string(pbuf *b, const char *s) {
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            put(b, e, 2);
        } else if (*p == '\n') {
            put(b, "\\n", 2);
        } else if (*p == '\t') {
            put(b, "\\t", 2);
        } else if (*p == '\r') {
            put(b, "\\r", 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            putf(b, "\\x%02x", *p);
        } else {
            put(b, (const char *)p, 1);
        }
    }
    put(b, "\"", 1);
}

static void put_f64(pbuf *b, double v) {
    char num[BG_TEXT_NUMBUF];
    bg_text_format_f64(v, num);
    puts_(b, num);
}

/* "[a,b,c]" of int64 values. */
static void put_int_list(pbuf *b, int n, const int64_t *v) {
    put(b, "[", 1);
    for (int i = 0; i < n; i++)
        putf(b, "%s%lld", i ? "," : "", (long long)v[i]);
    put(b, "]", 1);
}

/* "f32[2,3]" */
static void put_type(pbuf *b, const bg_node *n) {
    puts_(b, braid_dtype_name(n->dtype));
    put_int_list(b, n->rank, n->dims);
}

/* ---- constants ----------------------------------------------------------- */

/* NaN bit patterns the parser produces for "nan" / "-nan" per dtype. */
static bool canonical_nan(braid_dtype t, const unsigned char *p) {
    uint64_t u64;
    uint32_t u32;
    uint16_t u16;
    switch (t) {
    case BRAID_F64:
        memcpy(&u64, p, 8);
        return (u64 & ~(UINT64_C(1) << 63)) == UINT64_C(0x7ff8000000000000);
    case BRAID_F32:
        memcpy(&u32, p, 4);
        return (u32 & 0x7fffffffu) == 0x7fc00000u;
    case BRAID_F16:
        memcpy(&u16, p, 2);
        return (u16 & 0x7fffu) == 0x7e00u;
    case BRAID_BF16:
        memcpy(&u16, p, 2);
        return (u16 & 0x7fffu) == 0x7fc0u;
    default:
        return true;
    }
}

/* True when every element reads back from its decimal spelling to the same
 * bytes: all but NaNs with payloads and bool bytes other than 0/1. */
static bool list_exact(const bg_node *n) {
    const unsigned char *d = n->attr.data;
    size_t es = braid_dtype_size(n->dtype);
    int64_t count = bg_numel(n);
    for (int64_t i = 0; i < count; i++) {
        const unsigned char *p = d + (size_t)i * es;
        if (n->dtype == BRAID_BOOL) {
            if (*p > 1) return false;
        } else if (braid_dtype_is_float(n->dtype) &&
                   isnan(bg_load(n->dtype, d, i)) &&
                   !canonical_nan(n->dtype, p)) {
            return false;
        }
    }
    return true;
}

static void put_element(pbuf *b, braid_dtype t, const unsigned char *p) {
    char num[BG_TEXT_NUMBUF];
    uint16_t h;
    float f;
    double v;
    int32_t i;
    switch (t) {
    case BRAID_F32:
        memcpy(&f, p, 4);
        bg_text_format_f32(f, num);
        break;
    case BRAID_F16:
        memcpy(&h, p, 2);
        bg_text_format_f32(bg_f16_to_f32(h), num);
        break;
    case BRAID_BF16:
        memcpy(&h, p, 2);
        bg_text_format_f32(bg_bf16_to_f32(h), num);
        break;
    case BRAID_F64:
        memcpy(&v, p, 8);
        bg_text_format_f64(v, num);
        break;
    case BRAID_I32:
        memcpy(&i, p, 4);
        snprintf(num, sizeof num, "%ld", (long)i);
        break;
    case BRAID_I64:
        snprintf(num, sizeof num, "%lld", (long long)bg_load_int(t, p, 0));
        break;
    default:
        strcpy(num, *p ? "true" : "false");
        break;
    }
    puts_(b, num);
}

static void put_constant_data(pbuf *b, const bg_node *n) {
    const unsigned char *d = n->attr.data;
    int64_t count = bg_numel(n);
    size_t bytes = bg_nbytes(n);
    if (count <= BG_TEXT_LIST_MAX && list_exact(n)) {
        size_t es = braid_dtype_size(n->dtype);
        put(b, "[", 1);
        for (int64_t i = 0; i < count; i++) {
            if (i) put(b, ", ", 2);
            put_element(b, n->dtype, d + (size_t)i * es);
        }
        put(b, "]", 1);
        return;
    }
    size_t enc = bg_base64_encoded_len(bytes);
    put(b, "base64\"", 7);
    if (reserve(b, enc)) {
        bg_base64_encode(d, bytes, b->data + b->len);
        b->len += enc;
    }
    put(b, "\"", 1);
}

/* ---- nodes --------------------------------------------------------------- */

/* The attributes of a source op, after its type. */
static void put_source_attrs(pbuf *b, const bg_node *n) {
    const bg_attrs *a = &n->attr;
    switch (n->op) {
    case BRAID_OP_CONSTANT:
        put(b, " ", 1);
        put_constant_data(b, n);
        break;
    case BRAID_OP_FILL:
        puts_(b, " value=");
        put_f64(b, a->value[0]);
        break;
    case BRAID_OP_IOTA:
        putf(b, " axis=%ld", (long)a->axis);
        break;
    case BRAID_OP_VARIABLE: /* its initializer: data, value or generator */
        if (a->init == BRAID_OP_CONSTANT) {
            put(b, " ", 1);
            put_constant_data(b, n);
        } else if (a->init == BRAID_OP_FILL) {
            puts_(b, " value=");
            put_f64(b, a->value[0]);
        } else {
            bg_node gen = *n;
            gen.op = a->init;
            put_source_attrs(b, &gen);
        }
        break;
    case BRAID_OP_RANDOM_UNIFORM:
    case BRAID_OP_RANDOM_NORMAL: {
        bool u = n->op == BRAID_OP_RANDOM_UNIFORM;
        putf(b, " seed=%llu %s=", (unsigned long long)a->seed,
             u ? "low" : "mean");
        put_f64(b, a->value[0]);
        puts_(b, u ? " high=" : " stddev=");
        put_f64(b, a->value[1]);
        break;
    }
    default:
        break;
    }
}

/* "[i,j,...]" of the reduced axes of a rank-`rank` input. */
static void put_axes(pbuf *b, unsigned axes, int rank) {
    int64_t list[BRAID_MAX_RANK];
    int k = 0;
    for (int i = 0; i < rank && i < BRAID_MAX_RANK; i++)
        if (axes & (1u << i)) list[k++] = i;
    put_int_list(b, k, list);
}

/* slice start/stop/step; stop is the index one past the last element
 * taken in the step's direction (start when nothing is taken), which reads
 * back to the same node. A negative step through element 0 stops "at -1",
 * which Python's rules read as dim - 1: it is written -dim - 1 instead. */
static void put_slice(pbuf *b, const bg_node *n, const bg_node *x, int rank) {
    int64_t stop[BRAID_MAX_RANK], step[BRAID_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        uint64_t count = (uint64_t)n->dims[i];
        step[i] = n->attr.step[i];
        int64_t dir = step[i] > 0 ? 1 : -1;
        stop[i] = count == 0 ? n->attr.start[i]
                             : (int64_t)((uint64_t)n->attr.start[i] +
                                         (count - 1) * (uint64_t)step[i] +
                                         (uint64_t)dir);
        if (stop[i] < 0) stop[i] = -x->dims[i] - 1;
    }
    puts_(b, " start=");
    put_int_list(b, rank, n->attr.start);
    puts_(b, " stop=");
    put_int_list(b, rank, stop);
    puts_(b, " step=");
    put_int_list(b, rank, step);
}

/* Pooling, with ONNX's attribute names and pads layout (every low pad,
 * then every high pad); the defaults (stride and dilation 1) are written
 * too, so a line says everything. */
static void put_window(pbuf *b, const bg_node *n) {
    static const char *const key[4] = {" kernel_shape=", " strides=",
                                       " dilations=", " pads="};
    int k = n->rank - 2;
    int64_t v[2 * 3];
    for (int q = 0; q < 4; q++) {
        for (int i = 0; i < k; i++) {
            v[i] = bg_window_param(&n->attr, q, i);
            if (q == 3) v[k + i] = bg_window_param(&n->attr, 4, i);
        }
        puts_(b, key[q]);
        put_int_list(b, q == 3 ? 2 * k : k, v);
    }
    if (n->attr.flags & BG_POOL_CEIL) puts_(b, " ceil_mode");
    if (n->attr.flags & BG_POOL_COUNT_PAD) puts_(b, " count_include_pad");
    if (n->attr.flags & BG_POOL_CHANNELS_LAST) puts_(b, " channels_last");
}

/* resize: the output shape, a scale per axis (1 for the leading ones),
 * and every enum by name. */
static void put_resize(pbuf *b, const bg_node *n) {
    puts_(b, " shape=");
    put_int_list(b, n->rank, n->dims);
    puts_(b, " scales=[");
    for (int ax = 0; ax < n->rank; ax++) {
        if (ax) puts_(b, ",");
        int slot = ax - (n->rank - 3);
        put_f64(b, slot >= 0 ? bg_resize_scale(&n->attr, slot) : 1);
    }
    unsigned f = n->attr.flags;
    putf(b, "] mode=%s coordinate_transformation_mode=%s nearest_mode=%s",
         bg_resize_name(0, BG_RESIZE_MODE(f)),
         bg_resize_name(1, BG_RESIZE_COORD(f)),
         bg_resize_name(2, BG_RESIZE_NEAREST(f)));
}

/* group, rank, [ranks when not one per operand,] reduce / root. */
static void put_collective_attrs(pbuf *b, const bg_node *n) {
    const bg_attrs *a = &n->attr;
    putf(b, " group=%llu rank=%ld", (unsigned long long)a->seed,
         (long)a->axis);
    if (a->start[0] != (int64_t)n->ninputs)
        putf(b, " ranks=%lld", (long long)a->start[0]);
    if (n->op == BRAID_OP_BROADCAST)
        putf(b, " root=%lld", (long long)a->start[1]);
    if (n->op == BRAID_OP_ALL_REDUCE || n->op == BRAID_OP_REDUCE_SCATTER)
        putf(b, " reduce=%s", braid_reduce_name((braid_reduce_kind)a->flags));
}

/* gather / scatter: the form, then its axis or batch_dims, the reduction. */
static void put_index_attrs(pbuf *b, const bg_node *n) {
    bg_index_mode m = bg_index_mode_of(&n->attr);
    putf(b, " form=%s", bg_index_mode_name(m));
    if (m != BG_INDEX_ND)
        putf(b, " axis=%ld", (long)n->attr.axis);
    else if (n->op == BRAID_OP_GATHER)
        putf(b, " batch_dims=%ld", (long)n->attr.axis);
    if (n->op == BRAID_OP_SCATTER)
        putf(b, " reduction=%s",
             bg_scatter_red_name(bg_scatter_red_of(&n->attr)));
}

/* conv ops: every attribute, in ONNX's terms; a negative end pad of a
 * conv_transpose (output_padding folded in, graph.h) reads back as end pad
 * 0 plus output_padding. */
static void put_conv_attrs(pbuf *b, const bg_node *n, int s) {
    const bg_attrs *a = &n->attr;
    int64_t pads[2 * BG_CONV_MAX_SPATIAL], outpad[BG_CONV_MAX_SPATIAL];
    bool any_outpad = false;
    if (s < 1 || s > BG_CONV_MAX_SPATIAL) return; /* bg_build refuses it */
    for (int i = 0; i < s; i++) {
        int64_t pe = a->start[3 + i];
        pads[i] = a->start[i];
        pads[s + i] = pe < 0 ? 0 : pe;
        outpad[i] = pe < 0 ? -pe : 0;
        any_outpad |= pe < 0;
    }
    puts_(b, " strides=");
    put_int_list(b, s, a->step);
    puts_(b, " dilations=");
    put_int_list(b, s, a->step + 3);
    puts_(b, " pads=");
    put_int_list(b, 2 * s, pads);
    putf(b, " groups=%ld", (long)a->axis);
    if (any_outpad) {
        puts_(b, " output_padding=");
        put_int_list(b, s, outpad);
    }
    if (a->flags & BG_CONV_CHANNELS_LAST) puts_(b, " channels_last");
}

/* axis, k (topk) and the flags of an axis op (graph/axis.h). */
static void put_axis_attrs(pbuf *b, const bg_node *n) {
    const bg_attrs *a = &n->attr;
    putf(b, " axis=%ld", (long)a->axis);
    if (n->op == BRAID_OP_TOPK_VALUES || n->op == BRAID_OP_TOPK_INDICES)
        putf(b, " k=%llu", (unsigned long long)a->seed);
    if (a->flags & BG_KEEPDIMS) puts_(b, " keepdims");
    if (a->flags & BG_SELECT_LAST) puts_(b, " select_last");
    if (a->flags & BG_SMALLEST) puts_(b, " smallest");
    if (a->flags & BG_EXCLUSIVE) puts_(b, " exclusive");
    if (a->flags & BG_REVERSE) puts_(b, " reverse");
}

/* The attributes of a non-source op, after its operands. */
static void put_op_attrs(pbuf *b, const braid_graph *g, const bg_node *n) {
    const bg_attrs *a = &n->attr;
    int in_rank = n->ninputs ? g->nodes[n->inputs[0]].rank : 0;
    int64_t perm[BRAID_MAX_RANK];
    switch (bg_op(n->op)->kind == BRAID_KIND_REDUCE ? BRAID_OP_SUM : n->op) {
    case BRAID_OP_CAST:
        putf(b, " to=%s", braid_dtype_name(n->dtype));
        break;
    case BRAID_OP_MATMUL:
        if (a->flags & BRAID_TRANSPOSE_A) puts_(b, " transpose_a");
        if (a->flags & BRAID_TRANSPOSE_B) puts_(b, " transpose_b");
        break;
    case BRAID_OP_SUM:
        puts_(b, " axes=");
        put_axes(b, a->axes, in_rank);
        if (a->flags & BG_KEEPDIMS) puts_(b, " keepdims");
        break;
    case BRAID_OP_RESHAPE:
    case BRAID_OP_BROADCAST_TO:
        puts_(b, " shape=");
        put_int_list(b, n->rank, n->dims);
        break;
    case BRAID_OP_PERMUTE:
        for (int i = 0; i < n->rank; i++)
            perm[i] = a->perm[i];
        puts_(b, " perm=");
        put_int_list(b, n->rank, perm);
        break;
    case BRAID_OP_SLICE:
        put_slice(b, n, &g->nodes[n->inputs[0]], in_rank);
        break;
    case BRAID_OP_MAX_POOL:
    case BRAID_OP_AVG_POOL:
        put_window(b, n);
        break;
    case BRAID_OP_RESIZE:
        put_resize(b, n);
        break;
    case BRAID_OP_CONCAT:
        putf(b, " axis=%ld", (long)a->axis);
        break;
    case BRAID_OP_LAYER_NORM:
        puts_(b, " eps=");
        put_f64(b, a->value[0]);
        break;
    case BRAID_OP_ATTENTION:
        puts_(b, " scale=");
        put_f64(b, a->value[0]);
        if (a->flags & BRAID_ATTENTION_CAUSAL) puts_(b, " causal");
        break;
    case BRAID_OP_ALL_REDUCE:
    case BRAID_OP_ALL_GATHER:
    case BRAID_OP_BROADCAST:
    case BRAID_OP_REDUCE_SCATTER:
        put_collective_attrs(b, n);
        break;
    case BRAID_OP_GATHER:
    case BRAID_OP_SCATTER:
        put_index_attrs(b, n);
        break;
    case BRAID_OP_CONV: /* conv ops */
    case BRAID_OP_CONV_TRANSPOSE:
        put_conv_attrs(b, n, in_rank - 2);
        break;
    case BRAID_OP_ARGMAX: /* axis ops */
    case BRAID_OP_ARGMIN:
    case BRAID_OP_TOPK_VALUES:
    case BRAID_OP_TOPK_INDICES:
    case BRAID_OP_CUMSUM:
        put_axis_attrs(b, n);
        break;
    default:
        break;
    }
}

static void put_node(pbuf *b, const braid_graph *g, uint32_t id) {
    const bg_node *n = &g->nodes[id];
    const bg_op_info *info = bg_op(n->op);
    putf(b, "%%%lu = %s", (unsigned long)id, info->name);
    bool source = info->kind == BRAID_KIND_SOURCE;
    if (source) {
        put(b, " ", 1);
        put_type(b, n);
        put_source_attrs(b, n);
    } else {
        for (uint32_t i = 0; i < n->ninputs; i++)
            putf(b, "%s%%%lu", i ? ", " : " ", (unsigned long)n->inputs[i]);
        put_op_attrs(b, g, n);
    }
    if (n->name) {
        puts_(b, " name=");
        put_string(b, n->name);
    }
    if (n->device) {
        puts_(b, " device=");
        put_string(b, n->device);
    }
    if (!source) {
        puts_(b, " : ");
        put_type(b, n);
    }
    put(b, "\n", 1);
}

/* ---- public entry points ------------------------------------------------- */

braid_status braid_graph_print(const braid_graph *g, char **text, size_t *len) {
    if (text) *text = NULL;
    if (len) *len = 0;
    if (g == NULL || text == NULL)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_graph_print: %s is NULL",
                                 g ? "text" : "graph");
    if (g->status != BRAID_OK)
        return bg_set_last_error(g->status,
                                 "braid_graph_print: the graph has an error: "
                                 "%s",
                                 g->error);
    pbuf b = {0};
    puts_(&b, "braid-graph 1\n");
    for (uint32_t id = 0; id < g->nnodes; id++)
        put_node(&b, g, id);
    for (uint32_t i = 0; i < g->noutputs; i++) {
        puts_(&b, "output ");
        put_string(&b, g->outputs[i].name);
        putf(&b, " = %%%lu\n", (unsigned long)g->outputs[i].node);
    }
    if (!reserve(&b, 0)) {
        free(b.data);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_graph_print: out of memory");
    }
    b.data[b.len] = '\0';
    *text = b.data;
    if (len) *len = b.len;
    return BRAID_OK;
}

braid_status braid_graph_write_file(const braid_graph *g, const char *path) {
    if (path == NULL || path[0] == '\0')
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_graph_write_file: path is %s",
                                 path ? "empty" : "NULL");
    char *text;
    size_t len;
    braid_status s = braid_graph_print(g, &text, &len);
    if (s != BRAID_OK) return s;
    bg_outfile o;
    s = bg_outfile_open(&o, path, "braid_graph_write_file", 0);
    if (s == BRAID_OK) {
        bg_outfile_write(&o, text, len);
        s = bg_outfile_commit(&o, "braid_graph_write_file");
    }
    free(text);
    return s;
}
