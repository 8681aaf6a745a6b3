/* tests/support/conv_cases.c — random convolution cases
 * (tests/support/conv_cases.h). */
#include "tests/support/conv_cases.h"

#include <criterion/criterion.h>
#include <stdio.h>

#include "graph/graph.h"

const char *ts_conv_case_str(const ts_conv_case *c, char *buf, size_t n) {
    snprintf(buf, n,
             "%s s=%d N=%lld G=%lld Cg=%lld OCg=%lld in=%lld,%lld,%lld "
             "k=%lld,%lld,%lld st=%lld,%lld,%lld d=%lld,%lld,%lld "
             "pads=%lld,%lld,%lld|%lld,%lld,%lld op=%lld,%lld,%lld bias=%d",
             c->transpose ? "conv_transpose" : "conv", c->s, (long long)c->N,
             (long long)c->G, (long long)c->Cg, (long long)c->OCg,
             (long long)c->in[0], (long long)c->in[1], (long long)c->in[2],
             (long long)c->k[0], (long long)c->k[1], (long long)c->k[2],
             (long long)c->p.strides[0], (long long)c->p.strides[1],
             (long long)c->p.strides[2], (long long)c->p.dilations[0],
             (long long)c->p.dilations[1], (long long)c->p.dilations[2],
             (long long)c->p.pads[0], (long long)c->p.pads[1],
             (long long)c->p.pads[2], (long long)c->p.pads[c->s],
             (long long)c->p.pads[c->s + 1], (long long)c->p.pads[c->s + 2],
             (long long)c->p.output_padding[0],
             (long long)c->p.output_padding[1],
             (long long)c->p.output_padding[2], (int)c->bias);
    return buf;
}

/* A random valid case; 3-D cases stay small (the reference is naive). */
ts_conv_case ts_conv_random_case(uint64_t *st, bool transpose) {
    ts_conv_case c = {0};
    c.transpose = transpose;
    c.s = ts_rand_int(st, 1, 3);
    c.N = ts_rand_int(st, 1, 2);
    c.G = ts_rand_int(st, 1, 3);
    c.Cg = ts_rand_int(st, 1, 3);
    c.OCg = ts_rand_int(st, 1, 3);
    if (ts_rand_int(st, 0, 4) == 0) c.Cg = c.OCg = 1, c.G = 4; /* depthwise */
    c.bias = ts_rand_int(st, 0, 1);
    int maxk = c.s == 3 ? 2 : 3, maxin = c.s == 1 ? 9 : c.s == 2 ? 6 : 4;
    for (int i = 0; i < c.s; i++) {
        int64_t k = ts_rand_int(st, 1, maxk), d = ts_rand_int(st, 1, 2);
        int64_t s = ts_rand_int(st, 1, 3), span = (k - 1) * d + 1;
        int64_t pb = ts_rand_int(st, 0, 2), pe = ts_rand_int(st, 0, 2);
        c.k[i] = k;
        c.p.strides[i] = s;
        c.p.dilations[i] = d;
        if (transpose) {
            int64_t in = ts_rand_int(st, 1, maxin - 1);
            int64_t op = ts_rand_int(st, 0, (int)((s > d ? s : d) - 1));
            if (s * (in - 1) + span + op - pb - pe < 1) pb = pe = 0;
            c.in[i] = in;
            c.p.output_padding[i] = op;
        } else {
            if (pb >= span)
                pb = span - 1; /* pads past the kernel: legal but
                                  dull; keep a few */
            int64_t lo = span - pb - pe;
            c.in[i] = (lo < 1 ? 1 : lo) + ts_rand_int(st, 0, maxin - 1);
        }
        c.p.pads[i] = pb;
        c.p.pads[c.s + i] = pe;
    }
    c.p.groups = c.G;
    return c;
}

/* The case as a graph: inputs x, w[, b], output y. */
braid_graph *ts_conv_case_graph(const ts_conv_case *c, braid_dtype dt) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[5] = {c->N, c->G * c->Cg}, wd[5];
    wd[0] = c->transpose ? c->G * c->Cg : c->G * c->OCg;
    wd[1] = c->transpose ? c->OCg : c->Cg;
    for (int i = 0; i < c->s; i++) {
        xd[2 + i] = c->in[i];
        wd[2 + i] = c->k[i];
    }
    braid_tensor x = braid_input(g, "x", dt, 2 + c->s, xd);
    braid_tensor w = braid_input(g, "w", dt, 2 + c->s, wd);
    int64_t oc = c->G * c->OCg;
    braid_tensor b = c->bias ? braid_input(g, "b", dt, 1, &oc) : BRAID_NONE;
    braid_tensor y = c->transpose ? braid_conv_transpose(g, x, w, b, &c->p)
                                  : braid_conv(g, x, w, b, &c->p);
    braid_output(g, "y", y);
    char buf[400];
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s: %s",
                 ts_conv_case_str(c, buf, sizeof buf), braid_graph_error(g));
    return g;
}

braid_graph *ts_conv_case_graph_channels_last(const ts_conv_case *c,
                                              braid_dtype dt) {
    cr_assert(!c->transpose, "channels last is a conv form");
    /* the attributes as braid_conv packs them, with the flag */
    braid_graph *plain = ts_conv_case_graph(c, dt);
    const bg_node *pc = bg_node_at(plain, plain->nnodes - 1);
    cr_assert_eq(pc->op, BRAID_OP_CONV);
    bg_attrs a = pc->attr;
    a.flags |= BG_CONV_CHANNELS_LAST;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor in[3];
    for (uint32_t i = 0; i < pc->ninputs; i++) {
        const bg_node *n = bg_node_at(plain, pc->inputs[i]);
        in[i] = braid_input(g, n->name, dt, n->rank, n->dims);
    }
    braid_graph_free(plain);
    int rank = 2 + c->s, last[5], first[5];
    last[0] = first[0] = 0;
    for (int i = 1; i < rank; i++) {
        last[i] = i + 1 < rank ? i + 1 : 1;   /* [0, 2, .., rank-1, 1] */
        first[i] = i == 1 ? rank - 1 : i - 1; /* [0, rank-1, 1, ..] */
    }
    uint32_t ops[3] = {braid_permute(g, in[0], last).id,
                       braid_permute(g, in[1], last).id,
                       c->bias ? in[2].id : BRAID_INVALID_ID};
    braid_tensor y = {bg_build(g, BRAID_OP_CONV, ops, c->bias ? 3 : 2, dt, 0,
                               NULL, &a, NULL)};
    braid_output(g, "y", braid_permute(g, y, first));
    char buf[400];
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s: %s",
                 ts_conv_case_str(c, buf, sizeof buf), braid_graph_error(g));
    return g;
}
