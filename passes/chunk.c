/* passes/chunk.c — splitting copy → elementwise → copy chains into slices
 * that pipeline over the copy and compute streams.
 *
 * A chain is a connected set R of GPU nodes on one device, each elementwise
 * (or FUSED with an ELEMENTWISE program) with one output shape S (rank ≥ 1,
 * leading dim L), such that:
 *   - every input of a member is a member, an H2D copy of a host tensor of
 *     shape S all of whose consumers are members, or a tensor on the same
 *     GPU that is constant along axis 0 (rank below S's, or leading dim 1:
 *     scalars, biases), which every chunk then shares;
 *   - every consumer of a member is a member or a D2H copy to the host, and
 *     no member is a graph output;
 *   - R reads at least one H2D copy and feeds at least one D2H copy.
 * It becomes N chunks along axis 0 (chunk k: rows [s_k, s_{k+1}), starts
 * rounded to a 256-byte granule when the rows allow): per chunk a host
 * slice of each host tensor (a view once the memory pass runs), an H2D copy
 * of it, the members on the slice (fused members get a copy of their
 * program with the iteration space's leading dim set to the chunk's rows),
 * and a D2H copy of each member that had one. One concat along axis 0 on
 * the host per D2H copy replaces the original copy's uses. New nodes are
 * marked info.chunk; the streams pass rotates them over compute streams.
 *
 * N: settings.chunks when ≥ 2 (chains with L < N are left alone); 1 never
 * chunks; 0 asks the cost model (ck_cost_model): it estimates sequential
 * time h + c + o against the pipelined time of N ∈ {2, 4, 8, 16} chunks,
 * (h + c + o)/N + (N − 1)·max stage, every stage paying its launches per
 * chunk, and chunks when the best N saves more than 10% and the chain moves
 * at least 16 MiB. docs/streams.md has a worked example. */
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* Chains moving fewer bytes than this are never chunked by the model. */
#define CK_MIN_BYTES ((uint64_t)16 << 20)
/* The model chunks only when it saves more than this fraction. */
#define CK_MIN_GAIN 0.10
/* Chunk starts are rounded down to rows of this many bytes when possible. */
#define CK_GRANULE 256

/* One chain found (indices into the working arrays of ck_state). */
typedef struct ck_chain {
    uint32_t root;      /* union-find root naming the component */
    int32_t gpu;        /* plan->devices index */
    uint32_t nmembers;  /* members, in id order, at members[first..] */
    uint32_t first;     /* start in ck_state.members */
    uint32_t nh2d;      /* chunked H2D copies feeding it */
    uint32_t nd2h;      /* D2H copies it feeds */
    uint64_t h2d_bytes; /* bytes of those H2D copies */
    uint64_t d2h_bytes; /* bytes of those D2H copies */
    double compute_s;   /* estimated GPU seconds of all members */
} ck_chain;

/* Working state of the pass. */
typedef struct ck_state {
    bp_plan *plan;      /* the plan */
    uint32_t n;         /* nodes before rewriting */
    uint32_t *cstart;   /* consumer lists (CSR, may repeat a consumer) */
    uint32_t *cons;     /* consumers */
    uint32_t *parent;   /* union-find over candidates; BG_NONE otherwise */
    uint32_t *members;  /* candidates grouped by component, id order */
    uint32_t *map;      /* rewriting: old id → this chunk's new id */
    bool *is_output;    /* per node: a graph output */
} ck_state;

/* ---- candidates ----------------------------------------------------------- */

static int32_t gpu_index(const bp_plan *p, bp_device d) {
    if (d.kind != BP_DEVICE_CUDA) return -1;
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return (int32_t)i;
    return -1;
}

/* An elementwise GPU node, or a FUSED one whose ELEMENTWISE program
 * iterates over exactly its output shape. Not a run-checked one (the
 * range-checked cast), nor a program with a gather: their run errors name
 * an element of the whole output or indices, which a chunk's slice would
 * misnumber (and a gather's data rows are not sliced with its rows). */
static bool is_candidate(const ck_state *st, uint32_t id) {
    const bp_plan *p = st->plan;
    const bg_node *n = &p->res.graph->nodes[id];
    if (gpu_index(p, p->res.info[id].device) < 0 || p->res.info[id].chunk ||
        n->rank == 0 || bg_numel(n) == 0 || st->is_output[id] ||
        bp_node_run_check(p, id))
        return false;
    braid_op_kind kind = bg_op(n->op)->kind;
    if (kind == BRAID_KIND_ELEMENTWISE) return true;
    if (kind != BRAID_KIND_FUSED || p->res.info[id].program >= p->res.nprograms)
        return false;
    const bp_program *prog = &p->res.programs[p->res.info[id].program];
    /* a side store writes its whole variable, which a chunk would not */
    if (prog->kind != BP_PROGRAM_ELEMENTWISE || prog->rank != n->rank ||
        bp_program_has_store(prog))
        return false;
    for (int i = 0; i < n->rank; i++)
        if (prog->dims[i] != n->dims[i]) return false;
    return true;
}

/* A copy from the host onto GPU node id's device. */
static bool is_h2d(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    return n->op == BRAID_OP_COPY && n->ninputs == 1 &&
           p->res.info[n->inputs[0]].device.kind == BP_DEVICE_CPU &&
           gpu_index(p, p->res.info[id].device) >= 0;
}

/* A copy from a GPU to the host. */
static bool is_d2h(const bp_plan *p, uint32_t id) {
    const bg_node *n = &p->res.graph->nodes[id];
    return n->op == BRAID_OP_COPY && n->ninputs == 1 &&
           p->res.info[id].device.kind == BP_DEVICE_CPU &&
           p->res.info[n->inputs[0]].device.kind == BP_DEVICE_CUDA;
}

static uint32_t find(uint32_t *parent, uint32_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Joins candidates linked by an edge on one device with one shape. */
static void build_components(ck_state *st) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    for (uint32_t id = 0; id < st->n; id++)
        st->parent[id] = is_candidate(st, id) ? id : BG_NONE;
    for (uint32_t id = 0; id < st->n; id++) {
        if (st->parent[id] == BG_NONE) continue;
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t u = n->inputs[k];
            if (st->parent[u] == BG_NONE ||
                !bp_device_equal(p->res.info[u].device,
                                 p->res.info[id].device) ||
                !bg_same_shape(&g->nodes[u], n))
                continue;
            uint32_t a = find(st->parent, u), b = find(st->parent, id);
            if (a != b) st->parent[a > b ? a : b] = a > b ? b : a;
        }
    }
}

/* ---- validation ------------------------------------------------------------ */

static bool in_chain(ck_state *st, uint32_t root, uint32_t id) {
    return st->parent[id] != BG_NONE && find(st->parent, id) == root;
}

/* A GPU tensor on member's device that is the same for every chunk. */
static bool is_shared(const bp_plan *p, uint32_t u, uint32_t member) {
    const bg_node *x = &p->res.graph->nodes[u],
                  *m = &p->res.graph->nodes[member];
    if (!bp_device_equal(p->res.info[u].device, p->res.info[member].device))
        return false;
    return x->rank < m->rank || (x->rank == m->rank && x->dims[0] == 1);
}

/* Estimated GPU seconds of one member: its traffic at memory bandwidth or
 * its operations at the elementwise rate, whichever is slower. */
static double member_seconds(const bp_plan *p, uint32_t id,
                             const bp_device_profile *pr) {
    const bg_node *n = &p->res.graph->nodes[id];
    double bytes = (double)bg_nbytes(n), ops = 1;
    for (uint32_t k = 0; k < n->ninputs; k++)
        bytes += (double)bg_nbytes(&p->res.graph->nodes[n->inputs[k]]);
    if (n->op == BRAID_OP_FUSED) {
        const bp_program *prog = &p->res.programs[p->res.info[id].program];
        ops = 0;
        for (uint32_t i = 0; i < prog->ninstr; i++)
            ops += prog->instr[i].op != BP_INSTR_LOAD &&
                   prog->instr[i].op != BP_INSTR_CONST;
    }
    double t_mem = pr->mem_bytes_per_s > 0 ? bytes / pr->mem_bytes_per_s : 0;
    double t_ops = pr->elementwise_flops > 0
                       ? ops * (double)bg_numel(n) / pr->elementwise_flops
                       : 0;
    return t_mem > t_ops ? t_mem : t_ops;
}

/* Checks the inputs and consumers of every member; fills the counts. */
static bool validate(ck_state *st, ck_chain *c) {
    const bp_plan *p = st->plan;
    const braid_graph *g = p->res.graph;
    const bp_device_profile *pr = &p->in.devs.profile[c->gpu];
    for (uint32_t i = 0; i < c->nmembers; i++) {
        uint32_t id = st->members[c->first + i];
        const bg_node *n = &g->nodes[id];
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t u = n->inputs[k];
            if (in_chain(st, c->root, u)) continue;
            if (is_h2d(p, u) && bg_same_shape(&g->nodes[u], n) &&
                !st->is_output[u]) {
                for (uint32_t j = st->cstart[u]; j < st->cstart[u + 1]; j++)
                    if (!in_chain(st, c->root, st->cons[j])) return false;
                continue;
            }
            if (!is_shared(p, u, id)) return false;
        }
        for (uint32_t j = st->cstart[id]; j < st->cstart[id + 1]; j++) {
            uint32_t v = st->cons[j];
            if (in_chain(st, c->root, v)) continue;
            if (!is_d2h(p, v)) return false;
        }
        c->compute_s += member_seconds(p, id, pr) + pr->launch_s;
    }
    return true;
}

/* The distinct H2D copies a chain reads, in order of first use, into out;
 * returns their number. st->map[u] == root marks u as seen meanwhile. */
static uint32_t chain_h2d(ck_state *st, const ck_chain *c, uint32_t *out) {
    const braid_graph *g = st->plan->res.graph;
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nmembers; i++) {
        const bg_node *nd = &g->nodes[st->members[c->first + i]];
        for (uint32_t k = 0; k < nd->ninputs; k++) {
            uint32_t u = nd->inputs[k];
            if (in_chain(st, c->root, u) || !is_h2d(st->plan, u) ||
                !bg_same_shape(&g->nodes[u], nd) || st->map[u] == c->root)
                continue;
            st->map[u] = c->root;
            out[n++] = u;
        }
    }
    for (uint32_t i = 0; i < n; i++) st->map[out[i]] = BG_NONE;
    return n;
}

/* The D2H copies a chain feeds, in member order, into out; returns their
 * number. */
static uint32_t chain_d2h(ck_state *st, const ck_chain *c, uint32_t *out) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nmembers; i++) {
        uint32_t id = st->members[c->first + i];
        for (uint32_t j = st->cstart[id]; j < st->cstart[id + 1]; j++) {
            uint32_t v = st->cons[j];
            if (in_chain(st, c->root, v) || st->map[v] == c->root) continue;
            st->map[v] = c->root;
            out[n++] = v;
        }
    }
    for (uint32_t i = 0; i < n; i++) st->map[out[i]] = BG_NONE;
    return n;
}

/* ---- the cost model ----------------------------------------------------------- */

/* Pipelined seconds of n chunks; stage seconds of the whole chain in h, c,
 * o and per-chunk launch seconds in lh, lc, lo. */
static double pipelined(double n, double h, double c, double o, double lh,
                        double lc, double lo) {
    double sh = h / n + lh, sc = c / n + lc, so = o / n + lo;
    double mx = sh > sc ? sh : sc;
    if (so > mx) mx = so;
    return sh + sc + so + (n - 1) * mx;
}

/* The model's N for chain c (1: leave it alone). */
static uint32_t ck_cost_model(const bp_plan *p, const ck_chain *c, int64_t rows) {
    const bp_device_profile *pr = &p->in.devs.profile[c->gpu];
    if (c->h2d_bytes + c->d2h_bytes < CK_MIN_BYTES) return 1;
    double h = pr->h2d_bytes_per_s > 0 ? (double)c->h2d_bytes / pr->h2d_bytes_per_s : 0;
    double o = pr->d2h_bytes_per_s > 0 ? (double)c->d2h_bytes / pr->d2h_bytes_per_s : 0;
    double launch = pr->launch_s > 0 ? pr->launch_s : 0;
    double lh = launch * c->nh2d, lo = launch * c->nd2h;
    double cmp = c->compute_s - launch * c->nmembers; /* launches apart */
    double lc = launch * c->nmembers;
    double seq = pipelined(1, h, cmp, o, lh, lc, lo);
    static const uint32_t choices[] = {2, 4, 8, 16};
    uint32_t best = 1;
    double best_t = seq;
    for (size_t i = 0; i < sizeof choices / sizeof *choices; i++) {
        if ((int64_t)choices[i] > rows) break;
        double t = pipelined(choices[i], h, cmp, o, lh, lc, lo);
        if (t < best_t) {
            best_t = t;
            best = choices[i];
        }
    }
    return seq - best_t > CK_MIN_GAIN * seq ? best : 1;
}

/* ---- rewriting ----------------------------------------------------------------- */

/* First row of chunk k of n over rows, rounded down to the granule when
 * every chunk keeps at least one granule. */
static int64_t chunk_start(int64_t rows, int64_t row_bytes, uint32_t k,
                           uint32_t n) {
    int64_t s = rows * (int64_t)k / (int64_t)n;
    int64_t gr = 1;
    while ((gr * row_bytes) % CK_GRANULE != 0 && gr < CK_GRANULE) gr *= 2;
    if (rows / (int64_t)n >= gr) s = s / gr * gr;
    return s;
}

/* A program like prog (copied) over `rows` leading rows; BG_NONE when out
 * of memory. */
static uint32_t chunk_program(bp_plan *p, uint32_t prog_index, int64_t rows) {
    bp_program np = p->res.programs[prog_index];
    np.instr = malloc((np.ninstr ? np.ninstr : 1) * sizeof *np.instr);
    if (!np.instr) {
        bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                          "chunk: out of memory for a program");
        return BG_NONE;
    }
    memcpy(np.instr, p->res.programs[prog_index].instr,
           np.ninstr * sizeof *np.instr);
    np.dims[0] = rows;
    uint32_t idx = bp_plan_add_program(p, &np);
    if (idx == BG_NONE) free(np.instr);
    return idx;
}

/* Appends a node on dev marked as a chunk node; BG_NONE when out of
 * memory. */
static uint32_t add_chunk_node(bp_plan *p, braid_op op, const uint32_t *in,
                               uint32_t nin, const bg_node *like, int64_t rows,
                               const bg_attrs *attr, bp_device dev,
                               uint32_t origin) {
    int64_t dims[BRAID_MAX_RANK];
    memcpy(dims, like->dims, sizeof dims);
    dims[0] = rows;
    braid_dtype dt = like->dtype;
    int rank = like->rank;
    uint32_t id = bp_plan_add_node(p, op, in, nin, dt, rank, dims, attr);
    if (id == BG_NONE) return BG_NONE;
    p->res.info[id].device = dev;
    p->res.info[id].chunk = true;
    p->res.info[id].origin = origin;
    return id;
}

/* Chunk k (rows [start, start + rows)): slices, H2D copies, members, D2H
 * copies; d2h_out[j] receives the new copy of d2h[j]. */
static braid_status emit_chunk(ck_state *st, const ck_chain *c,
                               const uint32_t *h2d, const uint32_t *d2h,
                               int64_t start, int64_t rows, uint32_t *d2h_out,
                               uint32_t *progs) {
    bp_plan *p = st->plan;
    bp_device cpu = {BP_DEVICE_CPU, 0}, gpu = p->in.devs.devices[c->gpu];
    for (uint32_t j = 0; j < c->nh2d; j++) {
        uint32_t x = p->res.graph->nodes[h2d[j]].inputs[0];
        bg_attrs a = {0};
        a.start[0] = start;
        for (int i = 0; i < BRAID_MAX_RANK; i++) a.step[i] = 1;
        bg_node like = p->res.graph->nodes[x];
        uint32_t sl = add_chunk_node(p, BRAID_OP_SLICE, &x, 1, &like, rows, &a,
                                     cpu, BG_NONE);
        if (sl == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        uint32_t cp = add_chunk_node(p, BRAID_OP_COPY, &sl, 1, &like, rows,
                                     NULL, gpu, p->res.info[h2d[j]].origin);
        if (cp == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        st->map[h2d[j]] = cp;
    }
    uint32_t nbuf = 0;
    uint32_t buf[64];
    for (uint32_t i = 0; i < c->nmembers; i++) {
        uint32_t id = st->members[c->first + i];
        bg_node like = p->res.graph->nodes[id];
        uint32_t *in =
            like.ninputs <= 64 ? buf : malloc(like.ninputs * sizeof *in);
        if (!in)
            return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                     "chunk: out of memory");
        for (uint32_t k = 0; k < like.ninputs; k++) {
            uint32_t u = like.inputs[k];
            in[k] = st->map[u] != BG_NONE ? st->map[u] : u;
        }
        uint32_t nid = add_chunk_node(p, like.op, in, like.ninputs, &like, rows,
                                      &like.attr, gpu, p->res.info[id].origin);
        if (in != buf) free(in);
        if (nid == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        if (like.op == BRAID_OP_FUSED) p->res.info[nid].program = progs[nbuf++];
        st->map[id] = nid;
    }
    for (uint32_t j = 0; j < c->nd2h; j++) {
        bg_node like = p->res.graph->nodes[d2h[j]];
        uint32_t src = st->map[like.inputs[0]];
        uint32_t cp = add_chunk_node(p, BRAID_OP_COPY, &src, 1, &like, rows,
                                     NULL, cpu, p->res.info[d2h[j]].origin);
        if (cp == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        d2h_out[(size_t)j] = cp;
    }
    for (uint32_t j = 0; j < c->nh2d; j++) st->map[h2d[j]] = BG_NONE;
    for (uint32_t i = 0; i < c->nmembers; i++)
        st->map[st->members[c->first + i]] = BG_NONE;
    return BRAID_OK;
}

/* The programs of chunk k's fused members: shared with an earlier chunk
 * of the same rows, else new copies. progs is nchunks × nfused. */
static braid_status chunk_programs(ck_state *st, const ck_chain *c,
                                   uint32_t nfused, const int64_t *rows,
                                   uint32_t k, uint32_t *progs) {
    bp_plan *p = st->plan;
    for (uint32_t e = 0; e < k; e++) {
        if (rows[e] != rows[k]) continue;
        memcpy(&progs[(size_t)k * nfused], &progs[(size_t)e * nfused],
               nfused * sizeof *progs);
        return BRAID_OK;
    }
    uint32_t f = 0;
    for (uint32_t i = 0; i < c->nmembers; i++) {
        uint32_t id = st->members[c->first + i];
        if (p->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        uint32_t idx = chunk_program(p, p->res.info[id].program, rows[k]);
        if (idx == BG_NONE) return BRAID_ERR_OUT_OF_MEMORY;
        progs[(size_t)k * nfused + f++] = idx;
    }
    return BRAID_OK;
}

/* Makes the consumers of D2H copy `from` (all original nodes, listed in
 * st->cons) and the outputs read `to`; like bp_plan_replace_uses without
 * a scan of the whole graph per copy. */
static void replace_d2h(ck_state *st, uint32_t from, uint32_t to) {
    braid_graph *g = st->plan->res.graph;
    for (uint32_t j = st->cstart[from]; j < st->cstart[from + 1]; j++) {
        bg_node *v = &g->nodes[st->cons[j]];
        for (uint32_t k = 0; k < v->ninputs; k++)
            if (v->inputs[k] == from) v->inputs[k] = to;
    }
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i].node == from) g->outputs[i].node = to;
}

/* One concat on the host per D2H copy, replacing the copy's uses. outs is
 * nchunks × nd2h new copies. */
static braid_status emit_concats(ck_state *st, const ck_chain *c,
                                 const uint32_t *d2h, const uint32_t *outs,
                                 uint32_t nchunks) {
    bp_plan *p = st->plan;
    bp_device cpu = {BP_DEVICE_CPU, 0};
    uint32_t *in = malloc(nchunks * sizeof *in);
    if (!in)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "chunk: out of memory");
    for (uint32_t j = 0; j < c->nd2h; j++) {
        for (uint32_t k = 0; k < nchunks; k++)
            in[k] = outs[(size_t)k * c->nd2h + j];
        bg_node like = p->res.graph->nodes[d2h[j]];
        bg_attrs a = {0};
        a.axis = 0;
        uint32_t cc =
            add_chunk_node(p, BRAID_OP_CONCAT, in, nchunks, &like, like.dims[0],
                           &a, cpu, p->res.info[d2h[j]].origin);
        if (cc == BG_NONE) {
            free(in);
            return BRAID_ERR_OUT_OF_MEMORY;
        }
        replace_d2h(st, d2h[j], cc);
    }
    free(in);
    return BRAID_OK;
}

/* Rewrites chain c into nchunks chunks. */
static braid_status rewrite(ck_state *st, const ck_chain *c,
                            const uint32_t *h2d, const uint32_t *d2h,
                            uint32_t nchunks) {
    bp_plan *p = st->plan;
    const bg_node *x = &p->res.graph->nodes[h2d[0]];
    int64_t total = x->dims[0];
    int64_t row_bytes = (int64_t)(bg_nbytes(x) / (uint64_t)total);
    uint32_t nfused = 0;
    for (uint32_t i = 0; i < c->nmembers; i++)
        nfused +=
            p->res.graph->nodes[st->members[c->first + i]].op == BRAID_OP_FUSED;
    int64_t *rows = malloc(nchunks * sizeof *rows);
    uint32_t *outs = malloc((size_t)nchunks * c->nd2h * sizeof *outs);
    uint32_t *progs = malloc(((size_t)nchunks * nfused + 1) * sizeof *progs);
    braid_status s = BRAID_OK;
    if (!rows || !outs || !progs)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "chunk: out of memory");
    for (uint32_t k = 0; s == BRAID_OK && k < nchunks; k++) {
        int64_t start = chunk_start(total, row_bytes, k, nchunks);
        int64_t end = k + 1 < nchunks
                          ? chunk_start(total, row_bytes, k + 1, nchunks)
                          : total;
        rows[k] = end - start;
        s = chunk_programs(st, c, nfused, rows, k, progs);
        if (s == BRAID_OK)
            s = emit_chunk(st, c, h2d, d2h, start, rows[k],
                           &outs[(size_t)k * c->nd2h],
                           &progs[(size_t)k * nfused]);
    }
    if (s == BRAID_OK) s = emit_concats(st, c, d2h, outs, nchunks);
    free(rows);
    free(outs);
    free(progs);
    return s;
}

/* ---- the pass ------------------------------------------------------------------- */

/* Consumer lists (CSR; a node reading u twice appears twice) and the
 * output flags. */
static void build_consumers(ck_state *st) {
    const braid_graph *g = st->plan->res.graph;
    for (uint32_t v = 0; v < st->n; v++)
        for (uint32_t k = 0; k < g->nodes[v].ninputs; k++)
            st->cstart[g->nodes[v].inputs[k] + 1]++;
    for (uint32_t v = 0; v < st->n; v++) st->cstart[v + 1] += st->cstart[v];
    for (uint32_t v = 0; v < st->n; v++) st->map[v] = st->cstart[v];
    for (uint32_t v = 0; v < st->n; v++)
        for (uint32_t k = 0; k < g->nodes[v].ninputs; k++)
            st->cons[st->map[g->nodes[v].inputs[k]]++] = v;
    for (uint32_t v = 0; v < st->n; v++) st->map[v] = BG_NONE;
    for (uint32_t i = 0; i < g->noutputs; i++)
        st->is_output[g->outputs[i].node] = true;
}

/* Groups candidates by component (id order inside each) and returns the
 * components as chains in chains[] (at most n). */
static uint32_t group(ck_state *st, ck_chain *chains, uint32_t *count) {
    const bp_plan *p = st->plan;
    uint32_t nchains = 0;
    for (uint32_t id = 0; id < st->n; id++) count[id] = 0;
    for (uint32_t id = 0; id < st->n; id++)
        if (st->parent[id] != BG_NONE) count[find(st->parent, id)]++;
    uint32_t at = 0;
    for (uint32_t id = 0; id < st->n; id++) {
        if (st->parent[id] != id) continue;
        ck_chain c = {0};
        c.root = id;
        c.gpu = gpu_index(p, p->res.info[id].device);
        c.first = at;
        at += count[id];
        count[id] = c.first; /* becomes the fill cursor */
        chains[nchains++] = c;
    }
    for (uint32_t id = 0; id < st->n; id++)
        if (st->parent[id] != BG_NONE) {
            uint32_t r = find(st->parent, id);
            st->members[count[r]++] = id;
        }
    for (uint32_t i = 0; i < nchains; i++)
        chains[i].nmembers = count[chains[i].root] - chains[i].first;
    return nchains;
}

/* Validates chain c and decides its chunk count (1: leave it). h2d and d2h
 * receive its copies. */
static uint32_t decide(ck_state *st, ck_chain *c, uint32_t *h2d,
                       uint32_t *d2h) {
    const bp_plan *p = st->plan;
    if (!validate(st, c)) return 1;
    c->nh2d = chain_h2d(st, c, h2d);
    c->nd2h = chain_d2h(st, c, d2h);
    if (c->nh2d == 0 || c->nd2h == 0) return 1;
    for (uint32_t j = 0; j < c->nh2d; j++)
        c->h2d_bytes += bg_nbytes(&p->res.graph->nodes[h2d[j]]);
    for (uint32_t j = 0; j < c->nd2h; j++)
        c->d2h_bytes += bg_nbytes(&p->res.graph->nodes[d2h[j]]);
    int64_t rows = p->res.graph->nodes[c->root].dims[0];
    uint32_t want = p->in.settings.chunks;
    if (want == 0) return ck_cost_model(p, c, rows);
    return (int64_t)want <= rows ? want : 1;
}

static void free_state(ck_state *st) {
    free(st->cstart);
    free(st->cons);
    free(st->parent);
    free(st->members);
    free(st->map);
    free(st->is_output);
}

braid_status bp_chunk(bp_plan *plan) {
    if (plan->in.settings.chunks == 1) return BRAID_OK;
    const braid_graph *g = plan->res.graph;
    ck_state st = {.plan = plan, .n = g->nnodes};
    size_t m = st.n ? st.n : 1, edges = 1;
    for (uint32_t id = 0; id < st.n; id++) edges += g->nodes[id].ninputs;
    st.cstart = calloc(m + 1, sizeof *st.cstart);
    st.cons = calloc(edges, sizeof *st.cons);
    st.parent = calloc(m, sizeof *st.parent);
    st.members = calloc(m, sizeof *st.members);
    st.map = calloc(m, sizeof *st.map);
    st.is_output = calloc(m, sizeof *st.is_output);
    ck_chain *chains = calloc(m, sizeof *chains);
    uint32_t *h2d = calloc(m, sizeof *h2d), *d2h = calloc(m, sizeof *d2h);
    braid_status s = BRAID_OK;
    if (!st.cstart || !st.cons || !st.parent || !st.members || !st.map ||
        !st.is_output || !chains || !h2d || !d2h)
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "chunk: out of memory (%u nodes)", st.n);
    bool changed = false;
    if (s == BRAID_OK) {
        build_consumers(&st);
        build_components(&st);
        uint32_t nchains = group(&st, chains, h2d); /* h2d as scratch */
        for (uint32_t i = 0; s == BRAID_OK && i < nchains; i++) {
            uint32_t n = decide(&st, &chains[i], h2d, d2h);
            if (n < 2) continue;
            s = rewrite(&st, &chains[i], h2d, d2h, n);
            changed = true;
        }
    }
    free_state(&st);
    free(chains);
    free(h2d);
    free(d2h);
    if (s == BRAID_OK && changed) s = bp_plan_compact(plan);
    return s;
}
