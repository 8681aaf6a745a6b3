/* codegen/cast.c — the range-checked cast (bg_cast_checked: i64 to a
 * narrower integer dtype) as a kernel of its own, flagged run_check.
 *
 * Launch 1: each thread converts PER_THREAD elements, a block apart (a
 * warp reads consecutive i64s). A value is compared with the target's range
 * as a 64-bit integer, never through double; one that does not fit writes
 * 0 and calls the prelude's bc_check_first, which claims the run check
 * record for this node (BC_CHECK_CAST_PENDING) and keeps the lowest failing
 * element, so the report names the first in C order, as the CPU kernel's
 * does, whatever the threads' order.
 * Launch 2 ("_final", one warp, one thread working): when the record is this
 * node's pending claim, reads that element's value from the input (intact:
 * the output never shares its bytes, a different dtype, and
 * passes/verify_plan.c checks it) and writes the final record
 * BC_CHECK_CAST: value, element, target dtype — what the CPU kernel records,
 * so br_run_check_take says the same words for both.
 * Never part of a fused program: passes/fuse.c leaves nodes with an i64
 * operand, and every run-checked node, alone. */
#include "codegen/internal.h"

#include <stdio.h>

#define PER_THREAD 4
#define FINAL_THREADS 32

braid_status bc_gen_checked_cast(const bp_plan *p, uint32_t id, bc_buf *b,
                                 bc_kernel *k) {
    const braid_graph *g = p->res.graph;
    const bg_node *n = bg_node_at(g, id);
    if (!bg_node_run_check(g, id) || n->op != BRAID_OP_CAST)
        return bc_fail(p, id, BRAID_ERR_INTERNAL, "not a range-checked cast");
    int64_t numel = bg_numel(n), lo, hi;
    bg_int_range(n->dtype, &lo, &hi);
    int64_t blocks = bc_cdiv(numel, (int64_t)BC_BLOCK * PER_THREAD);
    if (blocks > (int64_t)BC_GRID_X_MAX)
        return bc_fail(p, id, BRAID_ERR_UNSUPPORTED,
                       "%lld elements are too many for one launch",
                       (long long)numel);
    k->kind = BC_KERNEL_ELEMENTWISE;
    k->run_check = true;
    const char *st = bc_stype(n->dtype);

    char entry[BC_NAME_MAX + 8];
    snprintf(entry, sizeof entry, "%s", BC_ENTRY);
    bc_emit_signature(b, p, id, entry, BC_BLOCK, "bc_check *chk");
    bc_buf_printf(b,
                  "    const long long first = (long long)blockIdx.x * %d + "
                  "threadIdx.x;\n"
                  "#pragma unroll\n"
                  "    for (int j = 0; j < %d; j++) {\n"
                  "        const long long i = first + (long long)j * %d;\n"
                  "        if (i >= %lldLL) break;\n"
                  "        const long long v = in0[i];\n"
                  /* lo - 1 + 1: INT32_MIN is no literal of its own */
                  "        if (v < (%lldLL - 1) || v > %lldLL) {\n"
                  "            out[i] = (%s)0;\n"
                  "            bc_check_first(chk, %uu, %uu, i);\n"
                  "        } else {\n"
                  "            out[i] = (%s)v;\n"
                  "        }\n"
                  "    }\n"
                  "}\n\n",
                  BC_BLOCK * PER_THREAD, PER_THREAD, BC_BLOCK,
                  (long long)numel, (long long)lo + 1, (long long)hi, st,
                  (unsigned)BC_CHECK_CAST_PENDING, (unsigned)id, st);

    snprintf(entry, sizeof entry, "%s_final", BC_ENTRY);
    bc_emit_signature(b, p, id, entry, FINAL_THREADS, "bc_check *chk");
    bc_buf_printf(b,
                  "    (void)out;\n"
                  "    if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
                  "    const unsigned long long me =\n"
                  "        %uull | ((unsigned long long)%uu << 32);\n"
                  "    if (*(volatile unsigned long long *)chk != me) "
                  "return;\n"
                  "    const long long i = 0x7fffffffffffffffLL - chk->c;\n"
                  "    if (i < 0 || i >= %lldLL) return;\n"
                  "    chk->a = in0[i];\n"
                  "    chk->b = i;\n"
                  "    chk->c = %dLL;\n"
                  "    chk->kind = %uu;\n"
                  "}\n",
                  (unsigned)BC_CHECK_CAST_PENDING, (unsigned)id,
                  (long long)numel, (int)n->dtype, (unsigned)BC_CHECK_CAST);

    k->nlaunch = numel > 0 ? 2 : 0;
    snprintf(k->launch[0].entry, BC_NAME_MAX, "%s", BC_ENTRY);
    k->launch[0].grid[0] = (uint32_t)(blocks > 0 ? blocks : 1);
    k->launch[0].block[0] = BC_BLOCK;
    snprintf(k->launch[1].entry, BC_NAME_MAX, "%s_final", BC_ENTRY);
    k->launch[1].grid[0] = 1;
    k->launch[1].block[0] = FINAL_THREADS;
    for (int l = 0; l < 2; l++) {
        k->launch[l].grid[1] = k->launch[l].grid[2] = 1;
        k->launch[l].block[1] = k->launch[l].block[2] = 1;
    }
    return BRAID_OK;
}
