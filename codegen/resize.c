/* codegen/resize.c — the resize op (graph/resize.c): one thread per
 * output element. The taps and weights of every output position along the
 * three trailing axes are tables made on the host by bg_resize_taps (the
 * one statement of resize's coordinate rules) and baked into the module as
 * __device__ arrays (weights as double bit patterns), so the kernel
 * restates no formula and computes exactly what the reference computes:
 * the weighted taps summed in double in the same order, rounded once to
 * the dtype (f16/bf16 through f32, as bg_store does). A table holds
 * out[0] + out[1] + out[2] entries; resizes with more than
 * BC_RESIZE_TABLE_MAX are refused with a message (the module text would
 * grow past what NVRTC compiles quickly). */
#include "codegen/internal.h"
#include "graph/window.h"

#include <stdio.h>
#include <string.h>

#define BC_RESIZE_TABLE_MAX 32768

/* The tables: KNAME_ix (input indices) and KNAME_w (weight bits), two
 * entries per output position, the axes one after another. */
static void emit_tables(bc_buf *b, const bg_resize *r) {
    int64_t idx[2];
    double w[2];
    for (int t = 0; t < 2; t++) {
        bc_buf_printf(b, "static __device__ const %s %s_%s[] = {",
                      t ? "unsigned long long" : "long long", BC_ENTRY,
                      t ? "w" : "ix");
        int col = 0;
        for (int a = 0; a < 3; a++)
            for (int64_t o = 0; o < r->out[a]; o++) {
                bg_resize_taps(r, a, o, idx, w);
                for (int k = 0; k < 2; k++) {
                    uint64_t u;
                    memcpy(&u, &w[k], sizeof u);
                    bc_buf_puts(b, col++ % 8 ? " " : "\n    ");
                    if (t)
                        bc_buf_printf(b, "0x%016llxULL,", (unsigned long long)u);
                    else
                        bc_buf_printf(b, "%lldLL,", (long long)idx[k]);
                }
            }
        bc_buf_puts(b, "\n};\n");
    }
}

static void emit_body(bc_buf *b, const bg_resize *r, braid_dtype t,
                      int taps) {
    int64_t o0 = 0, o1 = r->out[0], o2 = r->out[0] + r->out[1];
    bc_buf_printf(b,
                  "    const long long t0 = 2 * (%lldLL + o0), t1 = 2 * "
                  "(%lldLL + o1), t2 = 2 * (%lldLL + o2);\n"
                  "    double acc = 0;\n",
                  (long long)o0, (long long)o1, (long long)o2);
    bc_buf_printf(b,
                  "    #pragma unroll\n"
                  "    for (int a = 0; a < %d; a++)\n"
                  "    #pragma unroll\n"
                  "    for (int c = 0; c < %d; c++)\n"
                  "    #pragma unroll\n"
                  "    for (int d = 0; d < %d; d++) {\n"
                  "        const long long at = ((plane * %lldLL + "
                  "%s_ix[t0 + a]) * %lldLL + %s_ix[t1 + c]) * %lldLL + "
                  "%s_ix[t2 + d];\n"
                  "        const double v = (double)",
                  taps, taps, taps, (long long)r->in[0], BC_ENTRY,
                  (long long)r->in[1], BC_ENTRY, (long long)r->in[2],
                  BC_ENTRY);
    bc_emit_from_storage(b, t, "in0[at]");
    bc_buf_printf(b,
                  ";\n"
                  "        acc += __longlong_as_double(%s_w[t0 + a]) * "
                  "__longlong_as_double(%s_w[t1 + c]) * "
                  "__longlong_as_double(%s_w[t2 + d]) * v;\n"
                  "    }\n"
                  "    out[i] = ",
                  BC_ENTRY, BC_ENTRY, BC_ENTRY);
    bc_emit_to_storage(b, t, t == BRAID_F64 ? "acc" : "(float)acc");
    bc_buf_puts(b, ";\n}\n\n");
}

braid_status bc_gen_resize(const bp_plan *p, uint32_t id, bc_buf *b,
                           bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    const bg_node *x = bg_node_at(p->res.graph, n->inputs[0]);
    int64_t numel = bg_numel(n);
    if (x->rank != n->rank || x->dtype != n->dtype ||
        !braid_dtype_is_float(n->dtype))
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "a resize of a %s value",
                       braid_dtype_name(x->dtype));
    bg_resize r;
    bg_resize_get(n, x, &r);
    if (r.out[0] + r.out[1] + r.out[2] > BC_RESIZE_TABLE_MAX)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "resize to %lld x %lld x %lld: the GPU kernel's tap "
                       "tables hold at most %d positions (place the node on "
                       "the CPU)",
                       (long long)r.out[0], (long long)r.out[1],
                       (long long)r.out[2], BC_RESIZE_TABLE_MAX);
    braid_status s = bc_window_launch(p, id, numel, k);
    if (s != BRAID_OK) return s;
    k->kind = BC_KERNEL_RESIZE;
    emit_tables(b, &r);
    bc_emit_window_head(b, p, id, numel, r.out, 1);
    bool linear = BG_RESIZE_MODE(r.flags) == BRAID_RESIZE_LINEAR;
    emit_body(b, &r, n->dtype, linear ? 2 : 1);
    return BRAID_OK;
}
