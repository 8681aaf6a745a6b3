/* tests/support/op_cases.c — shapes, ranges and the run-and-compare step of
 * the single-op differential tests. */
#include "tests/support/op_cases.h"

#include <criterion/criterion.h>

#include "graph/graph.h"
#include "graph/window.h"

#include <math.h>
#include <stdio.h>

ts_shape ts_random_shape(uint64_t *st, int min_rank, int max_rank,
                         int max_dim) {
    ts_shape s = {0, {0}};
    s.rank = ts_rand_int(st, min_rank, max_rank);
    for (int k = 0; k < s.rank; k++)
        s.dims[k] = ts_rand_int(st, 1, max_dim);
    return s;
}

ts_shape ts_scalar_shape(void) {
    ts_shape s = {0, {0}};
    return s;
}

void ts_shape_pair(uint64_t *st, int variant, ts_shape *a, ts_shape *b) {
    *a = ts_random_shape(st, 1, 4, 5);
    *b = *a;
    switch (variant % 8) {
    case 0: /* equal */
        break;
    case 1: /* tensor with scalar */
        *b = ts_scalar_shape();
        break;
    case 2:
        *a = ts_scalar_shape();
        break;
    case 3: /* size-1 dims on both sides: [d0,1,d2] with [1,d1,1] */
        *a = ts_random_shape(st, 3, 3, 5);
        *b = *a;
        a->dims[1] = 1;
        b->dims[0] = b->dims[2] = 1;
        break;
    case 4: /* rank mismatch: b is a suffix of a */
        *a = ts_random_shape(st, 3, 4, 4);
        b->rank = ts_rand_int(st, 1, 2);
        for (int k = 0; k < b->rank; k++)
            b->dims[k] = a->dims[a->rank - b->rank + k];
        break;
    case 5:
        *a = ts_scalar_shape();
        *b = ts_scalar_shape();
        break;
    case 6: /* some of b's dims are 1 */
        for (int k = 0; k < b->rank; k++)
            if (ts_rand_int(st, 0, 1)) b->dims[k] = 1;
        break;
    default: /* empty: a [0, d], b [d] */
        a->rank = 2;
        a->dims[0] = 0;
        a->dims[1] = ts_rand_int(st, 1, 5);
        b->rank = 1;
        b->dims[0] = a->dims[1];
        break;
    }
}

const char *ts_shape_str(const ts_shape *s, char *buf, size_t n) {
    return bg_shape_str(s->rank, s->dims, buf, n);
}

braid_tensor ts_shape_input(braid_graph *g, const char *name, braid_dtype dt,
                            const ts_shape *s) {
    return braid_input(g, name, dt, s->rank, s->dims);
}

void ts_fill_input(ts_io *io, uint32_t i, braid_dtype dt, ts_range r,
                   uint64_t seed) {
    int64_t n = (int64_t)(io->in[i].bytes / braid_dtype_size(dt));
    void *data = (void *)io->in[i].data;
    ts_fill_random(dt, data, n, seed * 31 + i, r.lo, r.hi);
    for (int64_t k = 0; k < n; k++) {
        double v = bg_load(dt, data, k);
        if (r.flip && (k & 1)) v = -v;
        if (r.ints) v = round(v);
        bg_store(dt, data, k, v);
    }
}

bool ts_check_graph(braid_graph *g, braid_tensor y, const ts_range *ranges,
                    uint64_t seed, char *msg, size_t msgsize) {
    if (!braid_tensor_valid(y) || braid_output(g, "y", y) != BRAID_OK) {
        snprintf(msg, msgsize, "builder: %s", braid_graph_error(g));
        return false;
    }
    ts_io *io = ts_io_new(g, seed);
    if (!io) {
        snprintf(msg, msgsize, "ts_io_new: out of memory");
        return false;
    }
    for (uint32_t i = 0; ranges && i < io->ninputs; i++) {
        const char *name;
        braid_tensor t;
        braid_dtype dt = BRAID_F32;
        braid_graph_input(g, i, &name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        ts_fill_input(io, i, dt, ranges[i], seed);
    }
    braid_status s = ts_run_both(g, io);
    bool ok = s == BRAID_OK;
    if (!ok)
        snprintf(msg, msgsize, "%s: %s", braid_status_name(s),
                 braid_last_error());
    else
        ok = ts_io_compare(io, msg, msgsize);
    ts_io_free(io);
    return ok;
}

braid_tensor ts_pool_channels_last(braid_graph *g, braid_tensor x,
                                   const braid_pool_params *pp, bool max) {
    int rank = 0;
    int64_t dims[BRAID_MAX_RANK];
    braid_dtype dt;
    braid_tensor_info(g, x, &dt, &rank, dims);
    /* the attributes as the builder packs them, with the flag */
    braid_graph *s = braid_graph_new(NULL);
    braid_tensor sx = braid_input(s, "x", dt, rank, dims);
    braid_tensor sy =
        max ? braid_max_pool(s, sx, pp) : braid_avg_pool(s, sx, pp);
    cr_assert(braid_tensor_valid(sy), "%s", braid_graph_error(s));
    bg_attrs a = bg_node_at(s, sy.id)->attr;
    braid_graph_free(s);
    a.flags |= BG_POOL_CHANNELS_LAST;
    int last[5], first[5];
    last[0] = first[0] = 0;
    for (int i = 1; i < rank; i++) {
        last[i] = i + 1 < rank ? i + 1 : 1;
        first[i] = i == 1 ? rank - 1 : i - 1;
    }
    uint32_t in = braid_permute(g, x, last).id;
    braid_tensor y = {bg_build(g, max ? BRAID_OP_MAX_POOL : BRAID_OP_AVG_POOL,
                               &in, 1, dt, 0, NULL, &a, NULL)};
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
    return braid_permute(g, y, first);
}
