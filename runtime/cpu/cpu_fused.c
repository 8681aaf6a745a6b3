/* runtime/cpu/cpu_fused.c — the fused-node interpreter: set-up, the tile
 * evaluator, ELEMENTWISE and MATMUL programs, and the entry points
 * (runtime/cpu/cpu_fused.h describes the design). */
#include "runtime/cpu/cpu_fused.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* ---- the tile space ------------------------------------------------------ */

/* Input k's element strides over the iteration space (NumPy broadcasting,
 * aligned right; 0 along broadcast dims), permuted into space order. */
static void broadcast_strides(const bg_node *x, const bp_program *p,
                              const int *perm, int64_t *st) {
    int64_t dense[BRAID_MAX_RANK], it[BRAID_MAX_RANK];
    br_dense_strides(x->rank, x->dims, dense);
    for (int i = 0; i < p->rank; i++) {
        int j = i - (p->rank - x->rank);
        it[i] = (j < 0 || x->dims[j] == 1) ? 0 : dense[j];
    }
    for (int i = 0; i < p->rank; i++)
        st[i] = it[perm ? perm[i] : i];
}

/* Each GATHER instruction's geometry (bp_program_check has checked it). */
static void init_gathers(br_fz *z, const br_kernel_args *a) {
    const bp_program *p = z->prog;
    for (uint32_t i = z->first; i <= z->last; i++) {
        const bp_instr *in = &p->instr[i];
        if (in->op != BP_INSTR_GATHER) continue;
        const bg_node *x = bg_node_at(a->g, a->node->inputs[in->input]);
        br_fz_gat *gt = &z->gat[i];
        int trail = x->rank - (int)in->axis - 1;
        gt->bound = x->dims[in->axis];
        gt->inner = gt->nidx = 1;
        for (int d = (int)in->axis + 1; d < x->rank; d++)
            gt->inner *= x->dims[d];
        for (int d = (int)in->axis; d < p->rank - trail; d++)
            gt->nidx *= p->dims[d];
        /* before collapse(): the strides are per space dim */
        const bp_instr *ix = &p->instr[in->arg[0]];
        gt->rows = ix->op == BP_INSTR_LOAD;
        for (int d = p->rank - trail; gt->rows && d < p->rank; d++)
            gt->rows = z->in[ix->input].st[d] == 0 || p->dims[d] == 1;
    }
}

static void init_space(br_fz *z, const br_kernel_args *a, const int *perm) {
    const bp_program *p = z->prog;
    const bg_node *n = a->node;
    z->rank = p->rank;
    z->numel = 1;
    for (int i = 0; i < p->rank; i++) {
        z->dims[i] = p->dims[perm ? perm[i] : i];
        z->numel *= z->dims[i];
    }
    bool head = p->kind == BP_PROGRAM_MATMUL || p->kind == BP_PROGRAM_CONV;
    z->ninputs = n->ninputs + head;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = bg_node_at(a->g, n->inputs[k]);
        br_fz_input *in = &z->in[k];
        memset(in, 0, sizeof *in);
        in->base = a->in[k];
        in->t = x->dtype;
        if (x->rank <= p->rank) broadcast_strides(x, p, perm, in->st);
    }
    if (head) { /* the matmul's or the conv's result, in a->out */
        br_fz_input *in = &z->in[n->ninputs];
        memset(in, 0, sizeof *in);
        in->base = a->out;
        in->t = n->dtype;
        int64_t dense[BRAID_MAX_RANK];
        br_dense_strides(p->rank, p->dims, dense);
        for (int i = 0; i < p->rank; i++)
            in->st[i] = dense[perm ? perm[i] : i];
    }
}

/* The input a LOAD (or a MATMUL program's MATMUL, a CONV program's CONV)
 * instruction reads, or
 * NULL for computing instructions. */
static const br_fz_input *load_input(const br_fz *z, uint32_t i) {
    const bp_instr *in = &z->prog->instr[i];
    if (in->op == BP_INSTR_LOAD) return &z->in[in->input];
    if (in->op == BRAID_OP_MATMUL || in->op == BRAID_OP_CONV)
        return &z->in[z->ninputs - 1];
    return NULL;
}

/* Merges neighbouring dims that every used input walks as one longer dim
 * and drops size-1 dims, so runs along the innermost dim are as long as
 * possible. Flat positions are unchanged. */
static void collapse(br_fz *z) {
    int r = 0;
    for (int i = 0; i < z->rank; i++) {
        if (z->dims[i] == 1) continue;
        bool merge = r > 0;
        for (uint32_t k = 0; merge && k < z->ninputs; k++)
            merge = !z->in[k].used ||
                    z->in[k].st[r - 1] == z->in[k].st[i] * z->dims[i];
        if (merge) {
            z->dims[r - 1] *= z->dims[i];
        } else {
            z->dims[r] = z->dims[i];
            r++;
        }
        for (uint32_t k = 0; k < z->ninputs; k++)
            z->in[k].st[r - 1] = z->in[k].st[i];
    }
    if (r == 0) {
        z->dims[0] = 1;
        for (uint32_t k = 0; k < z->ninputs; k++)
            z->in[k].st[0] = 0;
        r = 1;
    }
    z->rank = r;
    int64_t dense[BRAID_MAX_RANK];
    br_dense_strides(r, z->dims, dense);
    for (uint32_t k = 0; k < z->ninputs; k++) {
        br_fz_input *in = &z->in[k];
        in->dense = in->scalar = true;
        for (int d = 0; d < r; d++) {
            in->dense &= in->st[d] == dense[d] || z->dims[d] == 1;
            in->scalar &= in->st[d] == 0;
        }
    }
}

/* ---- values -------------------------------------------------------------- */

static bool rounds(const bp_instr *in) {
    if (in->dtype != BRAID_F16 && in->dtype != BRAID_BF16) return false;
    braid_op op = in->op;
    return op != BP_INSTR_LOAD && op != BP_INSTR_CONST && op != BRAID_OP_CAST &&
           op != BRAID_OP_WHERE && op != BRAID_OP_MATMUL &&
           op != BRAID_OP_CONV &&
           op != BP_INSTR_GATHER; /* data values: already of the dtype */
}

static br_fz_cell const_cell(br_fz_ct ct, double v) {
    br_fz_cell c;
    memset(&c, 0, sizeof c);
    switch (ct) {
    case BR_FZ_F32:
        c.f = (float)v;
        break;
    case BR_FZ_F64:
        c.d = v;
        break;
    case BR_FZ_I32: /* the pass rounded v to i32: integral and in range */
        c.i = v != v ? 0 : (int32_t)v;
        break;
    case BR_FZ_BOOL:
        c.b = v != 0;
        break;
    }
    return c;
}

/* Compute type, rounding and source of each evaluated instruction; the
 * uniform ones computed now. */
static void classify(br_fz *z) {
    br_fz_ref refs[BR_FZ_MAX_INSTR];
    for (uint32_t i = z->first; i <= z->last; i++) {
        const bp_instr *in = &z->prog->instr[i];
        br_fz_val *v = &z->v[i];
        v->ct = (uint8_t)br_fz_ct_of(in->dtype);
        v->round = rounds(in);
        v->slot = 0;
        refs[i] = (br_fz_ref){&z->u[i], 0};
        const br_fz_input *src = load_input(z, i);
        if (in->op == BP_INSTR_STORE) {
            v->how = BR_FZ_UNIFORM; /* no value: done after the tile */
        } else if (in->op == BP_INSTR_CONST) {
            v->how = BR_FZ_UNIFORM;
            z->u[i] = const_cell(v->ct, in->value);
        } else if (src && src->scalar) {
            v->how = BR_FZ_UNIFORM;
            z->u[i] = br_fz_load_one(src->t, src->base, v->ct);
        } else if (src) {
            v->how = src->dense && src->t == br_fz_storage(v->ct) ? BR_FZ_DIRECT
                                                                  : BR_FZ_SLOT;
        } else if (in->op == BP_INSTR_GATHER) {
            v->how = BR_FZ_SLOT; /* varies with the position, whatever its
                                    indices do */
        } else {
            v->how = BR_FZ_UNIFORM;
            for (int k = 0; k < bp_instr_arity(in); k++)
                if (z->v[in->arg[k]].how != BR_FZ_UNIFORM) v->how = BR_FZ_SLOT;
            if (v->how == BR_FZ_UNIFORM) br_fz_exec(z, i, 1, &z->u[i], refs);
        }
    }
}

/* Slots: a value takes a free slot when computed and gives it back after
 * its last use. The result takes its slot before its operands give theirs
 * back, so no instruction writes over its own operand. */
static void assign_slots(br_fz *z) {
    uint32_t last_use[BR_FZ_MAX_INSTR], free_list[BR_FZ_MAX_INSTR];
    uint32_t nfree = 0;
    z->nslots = 0;
    for (uint32_t i = z->first; i <= z->last; i++)
        last_use[i] = 0;
    for (uint32_t i = z->first; i <= z->last; i++) {
        const bp_instr *in = &z->prog->instr[i];
        for (int k = 0; k < bp_instr_arity(in) && i > z->first; k++)
            last_use[in->arg[k]] = i;
    }
    last_use[z->last] = UINT32_MAX;
    /* a stored value is read after the whole tile (output_tiles) */
    for (uint32_t i = z->first; i <= z->last; i++)
        if (z->prog->instr[i].op == BP_INSTR_STORE)
            last_use[z->prog->instr[i].arg[0]] = UINT32_MAX;
    for (uint32_t i = z->first; i <= z->last; i++) {
        const bp_instr *in = &z->prog->instr[i];
        if (z->v[i].how == BR_FZ_SLOT)
            z->v[i].slot = (uint16_t)(nfree ? free_list[--nfree] : z->nslots++);
        for (int k = 0; k < bp_instr_arity(in) && i > z->first; k++) {
            uint32_t j = in->arg[k];
            bool first_mention = true;
            for (int q = 0; q < k; q++)
                first_mention &= in->arg[q] != j;
            if (first_mention && last_use[j] == i && z->v[j].how == BR_FZ_SLOT)
                free_list[nfree++] = z->v[j].slot;
        }
    }
}

/* The largest power-of-two tile (≤ max_tile) whose slots fit the per-thread
 * buffer. */
static void size_tiles(br_fz *z, int64_t max_tile) {
    size_t esz = 1;
    for (uint32_t i = z->first; i <= z->last; i++)
        if (z->v[i].how == BR_FZ_SLOT && br_fz_size(z->v[i].ct) > esz)
            esz = br_fz_size(z->v[i].ct);
    int64_t tile = BR_FZ_TILE_MAX;
    while (tile > max_tile && tile > BR_FZ_TILE_MIN)
        tile /= 2;
    for (;;) {
        z->slot_bytes = ((size_t)tile * esz + 63) & ~(size_t)63;
        if (tile <= BR_FZ_TILE_MIN ||
            z->nslots * z->slot_bytes <= BR_FZ_TILE_BYTES)
            break;
        tile /= 2;
    }
    assert(z->nslots * z->slot_bytes <= BR_FZ_TILE_BYTES);
    z->tile = tile;
}

static bool overlaps(const void *a, size_t na, const void *b, size_t nb) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na > 0 && nb > 0 && x < y + nb && y < x + na;
}

/* The output may take the last instruction's results directly unless an
 * input shares its memory (the memory pass may compute in place). */
static bool output_alone(const br_fz *z, const br_kernel_args *a) {
    size_t bytes = bg_nbytes(a->node);
    for (uint32_t k = 0; k < a->node->ninputs; k++)
        if (overlaps(a->out, bytes, a->in[k],
                     bg_nbytes(bg_node_at(a->g, a->node->inputs[k]))))
            return false;
    return z->prog->kind == BP_PROGRAM_ELEMENTWISE;
}

void br_fz_setup(br_fz *z, const br_kernel_args *a, uint32_t first,
                 uint32_t last, const int *perm, int64_t max_tile) {
    assert(a->program->ninstr <= BR_FZ_MAX_INSTR &&
           a->node->ninputs <= BR_FZ_MAX_INSTR && last < a->program->ninstr);
    z->prog = a->program;
    z->first = first;
    z->last = last;
    z->out = a->out;
    z->out_t = a->node->dtype;
    z->check = a->check;
    z->id = a->id;
    init_space(z, a, perm);
    init_gathers(z, a);
    for (uint32_t i = first; i <= last; i++) {
        const br_fz_input *in = load_input(z, i);
        if (in) z->in[in - z->in].used = true;
    }
    collapse(z);
    classify(z);
    assign_slots(z);
    size_tiles(z, max_tile);
    z->out_direct = output_alone(z, a);
    z->stores = bp_program_has_store(z->prog);
}

/* ---- evaluation ------------------------------------------------------------
 */

br_fz_ref br_fz_eval(const br_fz *z, br_fz_mem *mem, int64_t s, int64_t m,
                     void *dst) {
    br_fz_ref *refs = mem->refs;
    for (uint32_t i = z->first; i <= z->last; i++) {
        const br_fz_val *v = &z->v[i];
        if (z->prog->instr[i].op == BP_INSTR_STORE) continue; /* no value */
        if (v->how == BR_FZ_UNIFORM) {
            refs[i] = (br_fz_ref){&z->u[i], 0};
            continue;
        }
        const br_fz_input *in = load_input(z, i);
        if (v->how == BR_FZ_DIRECT) {
            refs[i] = (br_fz_ref){in->base + s * (int64_t)br_fz_size(v->ct), 1};
            continue;
        }
        void *o = mem->slots + v->slot * z->slot_bytes;
        if (in) {
            br_fz_gather(z, in, (br_fz_ct)v->ct, s, m, o);
        } else if (z->prog->instr[i].op == BP_INSTR_GATHER) {
            if (i == z->last && dst) o = dst;
            br_fz_gather_rows(z, i, s, m, o, refs);
        } else {
            if (i == z->last && dst) o = dst;
            br_fz_exec(z, i, m, o, refs);
        }
        refs[i] = (br_fz_ref){o, 1};
    }
    return refs[z->last];
}

/* ---- ELEMENTWISE and MATMUL programs ----------------------------------------
 */

/* The STOREs of positions [s, s + m) (passes/program.h), after the whole
 * tile is evaluated: every read of those positions, in place or not, has
 * happened. The target is a variable input, its bytes the executor's and
 * writable (inputs are passed as const for the loads). */
static void store_tile(const br_fz *z, const br_fz_mem *mem, int64_t s,
                       int64_t m) {
    for (uint32_t i = z->first; i <= z->last; i++) {
        const bp_instr *in = &z->prog->instr[i];
        if (in->op != BP_INSTR_STORE) continue;
        const br_fz_input *x = &z->in[in->input];
        char *dst = (char *)x->base + s * (int64_t)braid_dtype_size(x->t);
        br_fz_store(x->t, (br_fz_ct)z->v[in->arg[0]].ct, mem->refs[in->arg[0]],
                    m, dst);
    }
}

/* Tiles [tb, te) of the output: evaluate, store. */
static void output_tiles(void *ctx, int64_t tb, int64_t te) {
    const br_fz *z = ctx;
    br_fz_mem mem;
    br_fz_ct ct = (br_fz_ct)z->v[z->last].ct;
    size_t osz = braid_dtype_size(z->out_t);
    bool direct = z->out_direct && br_fz_storage(ct) == z->out_t;
    for (int64_t t = tb; t < te; t++) {
        int64_t s = t * z->tile;
        int64_t m = z->numel - s < z->tile ? z->numel - s : z->tile;
        void *dst = z->out + s * (int64_t)osz;
        br_fz_ref r = br_fz_eval(z, &mem, s, m, direct ? dst : NULL);
        if (z->stores) store_tile(z, &mem, s, m);
        br_fz_store(z->out_t, ct, r, m, dst);
    }
}

static void run_output_tiles(const br_kernel_args *a, br_fz *z) {
    int64_t ntiles = (z->numel + z->tile - 1) / z->tile;
    br_parallel_for(a->pool, ntiles, (BR_GRAIN + z->tile - 1) / z->tile,
                    output_tiles, z);
}

static void run_elementwise(const br_kernel_args *a) {
    if (bg_numel(a->node) == 0) return;
    br_fz *z = a->scratch;
    br_fz_setup(z, a, 0, a->program->ninstr - 1, NULL, BR_FZ_TILE_MAX);
    run_output_tiles(a, z);
}

/* The matmul by the unfused kernel (OpenBLAS) into the output, then the
 * epilogue in place, tile by tile: each tile reads its matmul values before
 * its result is stored over them. */
static void run_matmul(const br_kernel_args *a) {
    const bp_program *p = a->program;
    bg_node mm = *a->node;
    mm.op = BRAID_OP_MATMUL;
    mm.ninputs = 2;
    mm.attr.flags = p->flags;
    br_kernel_args b = *a;
    b.node = &mm;
    b.program = NULL;
    br_matmul_run(&b);
    if (bg_numel(a->node) == 0 || p->ninstr <= 3) return;
    br_fz *z = a->scratch; /* the matmul is done with the scratch */
    br_fz_setup(z, a, 2, p->ninstr - 1, NULL, BR_FZ_TILE_MAX);
    run_output_tiles(a, z);
}

/* A CONV program's epilogue when the conv kernels apply it as they store
 * (br_conv_ep): relu, add(conv, r) or add(r, conv) of an f32 input r of
 * the space's shape, or that add then relu. False for any other. */
static bool conv_epilogue(const br_kernel_args *a, uint32_t at,
                          br_conv_ep *ep) {
    const bp_program *p = a->program;
    const bp_instr *in = p->instr;
    uint32_t i = at + 1, v = at; /* the next instruction, the value so far */
    memset(ep, 0, sizeof *ep);
    if (in[at].dtype != BRAID_F32) return false;
    if (i + 1 < p->ninstr && in[i].op == BP_INSTR_LOAD &&
        in[i + 1].op == BRAID_OP_ADD && in[i + 1].dtype == BRAID_F32) {
        const bp_instr *ld = &in[i], *add = &in[i + 1];
        const bg_node *r = bg_node_at(a->g, a->node->inputs[ld->input]);
        bool first = add->arg[0] == i && add->arg[1] == at;
        if (!(first || (add->arg[0] == at && add->arg[1] == i)) ||
            r->dtype != BRAID_F32 || r->rank != p->rank ||
            memcmp(r->dims, p->dims, (size_t)p->rank * sizeof *p->dims))
            return false;
        ep->res = a->in[ld->input];
        ep->res_first = first;
        v = i + 1;
        i += 2;
    }
    if (i < p->ninstr && in[i].op == BRAID_OP_RELU && in[i].arg[0] == v &&
        in[i].dtype == BRAID_F32) {
        ep->relu = true;
        v = i++;
    }
    return i == p->ninstr && v + 1 == p->ninstr;
}

/* A CONV program: its conv by the conv kernels (bp_program_conv_node) into
 * the output, the epilogue applied as they store when it is one they
 * take (conv_epilogue); any other epilogue in place after, tile by tile,
 * as a MATMUL program's. */
static void run_conv(const br_kernel_args *a) {
    const bp_program *p = a->program;
    bg_node cv;
    if (!bp_program_conv_node(p, a->g, a->id, &cv)) return; /* checked */
    br_kernel_args b = *a;
    b.node = &cv;
    b.program = NULL;
    uint32_t at = bp_program_conv_at(p);
    br_conv_ep ep;
    if (conv_epilogue(a, at, &ep)) {
        br_conv_run_ep(&b, &ep);
        return;
    }
    br_conv_run(&b);
    if (bg_numel(a->node) == 0 || p->ninstr <= at + 1) return;
    br_fz *z = a->scratch; /* the conv is done with the scratch */
    br_fz_setup(z, a, at, p->ninstr - 1, NULL, BR_FZ_TILE_MAX);
    run_output_tiles(a, z);
}

/* ---- entry points
 * ------------------------------------------------------------ */

void br_fused_run(const br_kernel_args *a) {
    assert(a->program != NULL);
    if (!a->program) return;
    switch (a->program->kind) {
    case BP_PROGRAM_ELEMENTWISE:
        run_elementwise(a);
        return;
    case BP_PROGRAM_REDUCE:
        br_fz_run_reduce(a);
        return;
    case BP_PROGRAM_MATMUL:
        run_matmul(a);
        return;
    case BP_PROGRAM_POOL:
        br_fz_run_pool(a);
        return;
    case BP_PROGRAM_CONV:
        run_conv(a);
        return;
    }
}

static int64_t matrix_elems(const bg_node *x) {
    return x->rank >= 2 ? x->dims[x->rank - 1] * x->dims[x->rank - 2] : 0;
}

braid_status br_fused_prepare(const braid_graph *g, uint32_t id,
                              size_t *scratch) {
    const bg_node *n = bg_node_at(g, id);
    size_t need = sizeof(br_fz);
    /* Without the program, an f16/bf16 node whose first two inputs are
     * matrices may be a matmul: room to widen A, B and C to f32, as the
     * matmul kernel needs. */
    if ((n->dtype == BRAID_F16 || n->dtype == BRAID_BF16) && n->ninputs >= 2) {
        const bg_node *x = bg_node_at(g, n->inputs[0]);
        const bg_node *y = bg_node_at(g, n->inputs[1]);
        size_t mm =
            (size_t)(matrix_elems(x) + matrix_elems(y) + matrix_elems(n)) *
            sizeof(float);
        if (mm > need) need = mm;
    }
    /* An f32 one may be a matmul by braid's GEMM: room to pack B per run,
     * either way round (the program's transposes are not known here). */
    if (n->dtype == BRAID_F32 && n->ninputs >= 2 && br_sgemm_enabled()) {
        const bg_node *y = bg_node_at(g, n->inputs[1]);
        if (y->rank >= 2) {
            int64_t r = y->dims[y->rank - 2], c = y->dims[y->rank - 1];
            size_t a = br_sgemm_pack_scratch(r, c),
                   b = br_sgemm_pack_scratch(c, r);
            size_t mm = a > b ? a : b;
            if (mm > need) need = mm;
        }
    }
    if (need > *scratch) *scratch = need;
    return BRAID_OK;
}

/* The interpreter runs the programs the IR's checker accepts (it sizes its
 * tables by BP_PROGRAM_MAX_INSTR) with one limit of its own: a MATMUL
 * program's matmul is computed into the output (run_matmul), so it must
 * have the node's dtype. The GPU backend puts a matmul of another dtype
 * in scratch instead; the fuse pass never makes one. */
braid_status br_fused_check(const braid_graph *g, uint32_t id,
                            const bp_program *program) {
    char why[256];
    bool ok = bp_program_check(program, g, id, why, sizeof why);
    if (ok && program->kind == BP_PROGRAM_MATMUL &&
        program->instr[2].dtype != bg_node_at(g, id)->dtype) {
        snprintf(why, sizeof why,
                 "instruction 2: the matmul is %s, the "
                 "node %s (the cpu computes it in the "
                 "output)",
                 braid_dtype_name(program->instr[2].dtype),
                 braid_dtype_name(bg_node_at(g, id)->dtype));
        ok = false;
    }
    if (ok) return BRAID_OK;
    return bg_set_last_error(BRAID_ERR_INTERNAL,
                             "braid_exec_new: fused node %u: its program "
                             "cannot run on the cpu: %s",
                             (unsigned)id, why);
}

braid_status br_fused_scratch(const braid_graph *g, uint32_t id,
                              const bp_program *program, size_t *scratch) {
    if (program && program->kind == BP_PROGRAM_CONV) {
        bg_node cv; /* br_fused_check accepted it */
        if (!bp_program_conv_node(program, g, id, &cv))
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "braid_exec_new: fused node %u: its "
                                     "conv is malformed",
                                     (unsigned)id);
        return br_conv_prepare_node(g, &cv, id, scratch);
    }
    if (!program || program->kind != BP_PROGRAM_POOL) return BRAID_OK;
    size_t need = br_fz_pool_scratch(program, bg_node_at(g, id));
    if (need > *scratch) *scratch = need;
    return BRAID_OK;
}
