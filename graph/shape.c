/* graph/shape.c — element counts, type strings and NumPy broadcasting. */
#include "graph/graph.h"

#include <stdio.h>

bool bg_shape_fits(int rank, const int64_t *dims, size_t elem_size,
                   int64_t *numel) {
    if (rank < 0 || rank > BRAID_MAX_RANK || (rank > 0 && !dims) ||
        elem_size == 0 || elem_size > (size_t)BG_MAX_BYTES)
        return false;
    int64_t extent = (int64_t)elem_size, count = 1;
    for (int i = 0; i < rank; i++) {
        int64_t d = dims[i];
        if (d < 0 || d > BG_MAX_BYTES) return false;
        /* extent ≤ 2^50 and d ≤ 2^50: the division keeps it exact */
        if (d > 1 && extent > BG_MAX_BYTES / d) return false;
        extent *= d > 1 ? d : 1;
        count *= d; /* ≤ extent: cannot overflow */
    }
    if (numel) *numel = count;
    return true;
}

int64_t bg_numel(const bg_node *n) {
    int64_t count = 1;
    for (int i = 0; i < n->rank; i++)
        count *= n->dims[i];
    return count;
}

size_t bg_nbytes(const bg_node *n) {
    return (size_t)bg_numel(n) * braid_dtype_size(n->dtype);
}

/* Truncates silently: the strings only feed messages. */
const char *bg_shape_str(int rank, const int64_t *dims, char *buf,
                         size_t size) {
    if (buf == NULL || size == 0) return "";
    size_t used = 0;
    buf[0] = '\0';
    int w = snprintf(buf, size, "[");
    for (int i = 0; w >= 0 && i < rank && dims; i++) {
        used += (size_t)w;
        if (used >= size) return buf;
        w = snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                     (long long)dims[i]);
    }
    if (w >= 0 && (used += (size_t)w) < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

const char *bg_type_str(const bg_node *n, char *buf, size_t size) {
    if (buf == NULL || size == 0) return "";
    int w = snprintf(buf, size, "%s", braid_dtype_name(n->dtype));
    if (w >= 0 && (size_t)w < size)
        bg_shape_str(n->rank, n->dims, buf + w, size - (size_t)w);
    return buf;
}

/* out may be a or b: the result is built in a temporary first. On failure
 * out and rout are left unchanged. */
bool bg_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b,
                         int *rout, int64_t *out) {
    int r = ra > rb ? ra : rb;
    int64_t tmp[BRAID_MAX_RANK];
    if (r > BRAID_MAX_RANK) return false;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1;
        int64_t db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        tmp[i] = da == 1 ? db : da;
    }
    for (int i = 0; i < r; i++)
        out[i] = tmp[i];
    *rout = r;
    return true;
}

/* Python's clamp of one bound: negative counts from the end, then into
 * [lo, lo + dim] (dim ≤ 2^50, so adding it never overflows). */
static int64_t slice_clamp(int64_t v, int64_t dim, int64_t lo) {
    if (v < 0) v = v < -dim ? -dim - 1 : v + dim;
    return v < lo ? lo : v > lo + dim ? lo + dim : v;
}

bool bg_slice_bounds(int64_t dim, int64_t start, int64_t stop, int64_t step,
                     int64_t *first, int64_t *count) {
    if (step == 0 || step == INT64_MIN) return false;
    int64_t lo = step > 0 ? 0 : -1;
    int64_t a = slice_clamp(start, dim, lo), b = slice_clamp(stop, dim, lo);
    if (step > 0)
        *count = b > a ? (b - a - 1) / step + 1 : 0;
    else
        *count = a > b ? (a - b - 1) / -step + 1 : 0;
    *first = *count > 0 ? a : 0;
    return true;
}

bool bg_slice_fits(int64_t dim, int64_t start, int64_t step, int64_t count) {
    if (count < 0 || step == 0 || step == INT64_MIN) return false;
    if (count == 0) return start >= 0 && start <= dim;
    if (start < 0 || start >= dim) return false;
    /* the last element, start + (count - 1) * step, inside [0, dim) */
    return step > 0 ? count - 1 <= (dim - 1 - start) / step
                    : count - 1 <= start / -step;
}
