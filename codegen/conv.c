/* codegen/conv.c — braid's own kernel for the conv ops (conv,
 * conv_transpose): the GPU fallback when cuDNN cannot be loaded, or when
 * BRAID_CONV=braid asks for it (runtime/cuda/cuda_conv.c decides).
 *
 * One thread per output element computes graph/conv.c's sum directly:
 * over the group's input channels and the kernel taps that land inside
 * the input, with every extent, stride, dilation and pad a literal so
 * NVRTC unrolls the tap loops. Consecutive threads walk the innermost
 * output axis, so a warp shares its weights (broadcast loads) and reads
 * neighbouring inputs. f16/bf16 accumulate in float, f64 in double. It is
 * correct for every shape bg_build accepts; it is not meant to compete
 * with cuDNN's tiled implicit GEMMs. */
#include "codegen/internal.h"

#include <string.h>

/* The loops over the group's channels and the kernel taps, accumulating
 * into acc. conv reads x at o·stride - pad + k·dilation; conv_transpose
 * at (o + pad - k·dilation) / stride where that divides exactly. Channels
 * last, one channel's values are C (x) or C/G (w) elements apart. */
static void emit_taps(bc_buf *b, const bg_conv_geom *c, braid_dtype t) {
    int64_t Cg = c->C / c->G, OCg = c->OC / c->G;
    int64_t kv = c->k[0] * c->k[1] * c->k[2];
    int64_t iv = c->in[0] * c->in[1] * c->in[2];
    bc_buf_printf(b,
                  "    const long long g0 = (oc / %lldLL) * %lldLL;\n"
                  "    for (long long ci = 0; ci < %lldLL; ci++) {\n",
                  (long long)OCg, (long long)Cg, (long long)Cg);
    const char *st = bc_stype(t);
    if (c->channels_last) /* x [N, in..., C], w [OC, k..., C/G] */
        bc_buf_printf(b,
                      "        const %s *xc = in0 + bb * %lldLL + g0 + ci;\n"
                      "        const %s *wc = in1 + oc * %lldLL + ci;\n",
                      st, (long long)(iv * c->C), st, (long long)(kv * Cg));
    else if (c->transpose) /* x [N, C, in...], w [C, OC/G, k...] */
        bc_buf_printf(b,
                      "        const %s *xc = in0 + (bb * %lldLL + g0 + ci) * "
                      "%lldLL;\n"
                      "        const %s *wc = in1 + ((g0 + ci) * %lldLL + oc "
                      "%% %lldLL) * %lldLL;\n",
                      st, (long long)c->C, (long long)iv, st, (long long)OCg,
                      (long long)OCg, (long long)kv);
    else /* x [N, C, in...], w [OC, C/G, k...] */
        bc_buf_printf(b,
                      "        const %s *xc = in0 + (bb * %lldLL + g0 + ci) * "
                      "%lldLL;\n"
                      "        const %s *wc = in1 + (oc * %lldLL + ci) * "
                      "%lldLL;\n",
                      st, (long long)c->C, (long long)iv, st, (long long)Cg,
                      (long long)kv);
    for (int i = 0; i < 3; i++) {
        const char *ind = i == 0   ? "        "
                          : i == 1 ? "            "
                                   : "                ";
        bc_buf_printf(b,
                      "%s#pragma unroll\n%sfor (int k%d = 0; k%d < %lld; "
                      "k%d++) {\n",
                      ind, ind, i, i, (long long)c->k[i], i);
        if (c->transpose)
            bc_buf_printf(b,
                          "%s    const long long t%d = o%d + %lldLL - "
                          "(long long)k%d * %lldLL;\n"
                          "%s    if (t%d < 0 || t%d %% %lldLL != 0) "
                          "continue;\n"
                          "%s    const long long p%d = t%d / %lldLL;\n"
                          "%s    if (p%d >= %lldLL) continue;\n",
                          ind, i, i, (long long)c->pb[i], i,
                          (long long)c->dil[i], ind, i, i,
                          (long long)c->stride[i], ind, i, i,
                          (long long)c->stride[i], ind, i, (long long)c->in[i]);
        else
            bc_buf_printf(b,
                          "%s    const long long p%d = o%d * %lldLL - %lldLL "
                          "+ (long long)k%d * %lldLL;\n"
                          "%s    if (p%d < 0 || p%d >= %lldLL) continue;\n",
                          ind, i, i, (long long)c->stride[i],
                          (long long)c->pb[i], i, (long long)c->dil[i], ind, i,
                          i, (long long)c->in[i]);
    }
    char xs[96], ws[96];
    bc_from_storage_str(t, "xc[((p0 * %lldLL + p1) * %lldLL + p2) * %lldLL]",
                        xs, sizeof xs);
    bc_from_storage_str(t, "wc[((k0 * %lld + k1) * %lld + k2) * %lld]", ws,
                        sizeof ws);
    char line[400];
    snprintf(line, sizeof line, "                    acc += %s * %s;\n", xs,
             ws);
    bool cl = c->channels_last;
    bc_buf_printf(b, line, (long long)c->in[1], (long long)c->in[2],
                  (long long)(cl ? c->C : 1), (long long)c->k[1],
                  (long long)c->k[2], (long long)(cl ? Cg : 1));
    bc_buf_puts(b, "                }\n            }\n        }\n    }\n");
}

braid_status bc_gen_conv(const bp_plan *p, uint32_t id, bc_buf *b,
                         bc_kernel *k) {
    const bg_node *n = bg_node_at(p->res.graph, id);
    bg_conv_geom c;
    if (!bg_conv_geom_of(p->res.graph, n, &c))
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "malformed convolution");
    int64_t numel = bg_numel(n);
    if (bc_cdiv(numel, BC_BLOCK) > (int64_t)BC_GRID_X_MAX)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%lld outputs are too many for one launch",
                       (long long)numel);
    braid_dtype t = n->dtype;
    const char *acc = t == BRAID_F64 ? "double" : "float";
    k->kind = BC_KERNEL_CONV;
    bc_emit_signature(b, p, id, BC_ENTRY, BC_BLOCK, NULL);
    int64_t ov = c.out[0] * c.out[1] * c.out[2];
    /* the flat output index i = ((bb · OC + oc) · ov + sp), channels last
     * ((bb · ov + sp) · OC + oc) */
    int64_t inner = c.channels_last ? c.OC : ov;
    int64_t outer = c.channels_last ? ov : c.OC;
    bc_buf_printf(b,
                  "    const long long i = (long long)blockIdx.x * %d + "
                  "threadIdx.x;\n"
                  "    if (i >= %lldLL) return;\n"
                  "    const long long %s = i %% %lldLL, %s = i / %lldLL %% "
                  "%lldLL, bb = i / %lldLL / %lldLL;\n"
                  "    const long long o0 = sp / %lldLL, o1 = sp / %lldLL %% "
                  "%lldLL, o2 = sp %% %lldLL;\n"
                  "    (void)o0; (void)o1; (void)o2;\n"
                  "    %s acc = 0;\n",
                  BC_BLOCK, (long long)numel, c.channels_last ? "oc" : "sp",
                  (long long)inner, c.channels_last ? "sp" : "oc",
                  (long long)inner, (long long)outer, (long long)inner,
                  (long long)outer, (long long)(c.out[1] * c.out[2]),
                  (long long)c.out[2], (long long)c.out[1], (long long)c.out[2],
                  acc);
    emit_taps(b, &c, t);
    if (c.bias) {
        char bs[64];
        bc_from_storage_str(t, "in2[oc]", bs, sizeof bs);
        bc_buf_printf(b, "    acc += %s;\n", bs);
    }
    bc_buf_puts(b, "    out[i] = ");
    bc_emit_to_storage(b, t, "acc");
    bc_buf_puts(b, ";\n}\n\n");
    k->nlaunch = numel > 0 ? 1 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", BC_ENTRY);
    int64_t blocks = bc_cdiv(numel, BC_BLOCK);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].grid[1] = k->launch[0].grid[2] = 1;
    k->launch[0].block[0] = BC_BLOCK;
    k->launch[0].block[1] = k->launch[0].block[2] = 1;
    return BRAID_OK;
}
