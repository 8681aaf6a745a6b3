/* passes/collectives.c — what the compiler does for collective groups
 * (graph/collective.h, docs/multi-gpu.md):
 *   liveness   a group is kept whole: when one member is needed, every
 *              member is (NCCL hangs when a rank is missing), and a
 *              rank-form member (one rank of a multi-process job) is
 *              always kept, needed or not, since the other processes
 *              wait for it;
 *   placement  after bp_place's decisions: a local group whose k members
 *              sit on k distinct GPUs is lowered to the rank form (each
 *              member reads only its own input; NCCL moves the rest); any
 *              other local group runs on the cpu (its members then read
 *              every rank's input, copies bring them), unless a member
 *              was hinted to a GPU, which is an error; a rank-form member
 *              must be on a GPU;
 *   schedule   members of a group are issued back to back (the executor
 *              issues them in one ncclGroupStart/End) and groups in
 *              increasing group id, so every rank, and every process,
 *              issues them in the same order. */
#include "graph/collective.h"
#include "passes/collectives.h"

#include <stdlib.h>
#include <string.h>

/* ---- groups ---------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The distinct group ids of g's collectives (those with want(live[id]) when
 * live is given), sorted, in a malloc'ed array; *n their count. NULL with
 * *n 0 when there are none; NULL with *n 1 when out of memory. */
static uint64_t *group_ids(const braid_graph *g, const bool *live,
                           uint32_t *n) {
    uint32_t count = 0;
    for (uint32_t id = 0; id < g->nnodes; id++)
        count += bg_is_collective(&g->nodes[id]) && (!live || live[id]);
    *n = 0;
    if (!count) return NULL;
    uint64_t *ids = malloc(count * sizeof *ids);
    if (!ids) {
        *n = 1;
        return NULL;
    }
    uint32_t k = 0;
    for (uint32_t id = 0; id < g->nnodes; id++)
        if (bg_is_collective(&g->nodes[id]) && (!live || live[id]))
            ids[k++] = bg_coll_group(&g->nodes[id]);
    qsort(ids, count, sizeof *ids, cmp_u64);
    uint32_t u = 0;
    for (uint32_t i = 0; i < count; i++)
        if (i == 0 || ids[i] != ids[u - 1]) ids[u++] = ids[i];
    *n = u;
    return ids;
}

static bool has_group(const uint64_t *ids, uint32_t n, uint64_t grp) {
    return n && bsearch(&grp, ids, n, sizeof *ids, cmp_u64) != NULL;
}

/* ---- liveness -------------------------------------------------------------- */

uint32_t bp_coll_revive(const braid_graph *g, const bool *live,
                        uint32_t *stack) {
    uint32_t n = 0, pushed = 0;
    uint64_t *ids = group_ids(g, live, &n);
    if (!ids && n) return 0; /* out of memory: groups stay as they are */
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *x = &g->nodes[id];
        if (live[id] || !bg_is_collective(x)) continue;
        if (!bg_coll_local(x) || has_group(ids, n, bg_coll_group(x)))
            stack[pushed++] = id;
    }
    free(ids);
    return pushed;
}

/* ---- placement --------------------------------------------------------------- */

static const char *dev_str(bp_device d, char *buf, size_t size) {
    return bp_device_str(d, buf, size);
}

/* Replaces member id's inputs by its own input alone (the rank form). */
static braid_status lower_member(bp_plan *plan, uint32_t id) {
    braid_graph *g = plan->res.graph;
    bg_node *n = &g->nodes[id];
    uint32_t own = bg_coll_own(n);
    uint32_t *in = bg_alloc(g, sizeof *in);
    if (!in)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "place: out of memory");
    in[0] = own;
    bg_free(g, n->inputs, (size_t)n->ninputs * sizeof *n->inputs);
    n->inputs = in;
    n->ninputs = 1;
    return BRAID_OK;
}

static uint32_t origin_of(const bp_plan *plan, uint32_t id) {
    uint32_t o = plan->res.info[id].origin;
    return o != BG_NONE ? o : id;
}

/* One local group: members[r] is rank r's node (BG_NONE: missing). */
static braid_status place_group(bp_plan *plan, const uint32_t *members,
                                int64_t k) {
    braid_graph *g = plan->res.graph;
    char a[32], b[32];
    bool gpus = true, hinted = false;
    for (int64_t r = 0; r < k; r++) {
        if (members[r] == BG_NONE)
            return bg_set_last_error(
                BRAID_ERR_INTERNAL,
                "place: collective group %llu lacks rank %lld",
                (unsigned long long)bg_coll_group(&g->nodes[members[0]]),
                (long long)r);
        bp_device d = plan->res.info[members[r]].device;
        hinted |= g->nodes[members[r]].device != NULL;
        if (d.kind != BP_DEVICE_CUDA) gpus = false;
        for (int64_t j = 0; gpus && j < r; j++)
            if (bp_device_equal(plan->res.info[members[j]].device, d)) {
                if (hinted && plan->in.devs.ndevices > 1)
                    return bg_set_last_error(
                        BRAID_ERR_DEVICE,
                        "place: node %%%u (%s rank %lld) and node %%%u (rank "
                        "%lld) are both on %s: the members of a collective "
                        "group need distinct GPUs",
                        origin_of(plan, members[r]),
                        bg_op(g->nodes[members[r]].op)->name, (long long)r,
                        origin_of(plan, members[j]), (long long)j,
                        dev_str(d, a, sizeof a));
                gpus = false;
            }
    }
    if (gpus && k > 1) {
        for (int64_t r = 0; r < k; r++) {
            braid_status s = lower_member(plan, members[r]);
            if (s != BRAID_OK) return s;
        }
        return BRAID_OK;
    }
    for (int64_t r = 0; r < k; r++) {
        bp_device d = plan->res.info[members[r]].device;
        if (d.kind == BP_DEVICE_CUDA && g->nodes[members[r]].device &&
            plan->in.devs.ndevices > 1)
            return bg_set_last_error(
                BRAID_ERR_DEVICE,
                "place: node %%%u (%s rank %lld) is hinted to %s but its "
                "group's %lld members are not on %lld distinct GPUs (rank 0 "
                "on %s): hint every member to its own GPU, or none",
                origin_of(plan, members[r]),
                bg_op(g->nodes[members[r]].op)->name, (long long)r,
                dev_str(d, a, sizeof a), (long long)k, (long long)k,
                dev_str(plan->res.info[members[0]].device, b, sizeof b));
        plan->res.info[members[r]].device = (bp_device){BP_DEVICE_CPU, 0};
    }
    return BRAID_OK;
}

braid_status bp_coll_place(bp_plan *plan) {
    const braid_graph *g = plan->res.graph;
    uint32_t ngroups = 0;
    uint64_t *ids = group_ids(g, NULL, &ngroups);
    if (!ids)
        return ngroups ? bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                           "place: out of memory")
                       : BRAID_OK;
    uint32_t members[BG_COLL_MAX_LOCAL];
    braid_status s = BRAID_OK;
    char a[32];
    for (uint32_t gi = 0; s == BRAID_OK && gi < ngroups; gi++) {
        int64_t k = 0;
        bool local = false;
        for (uint32_t r = 0; r < BG_COLL_MAX_LOCAL; r++) members[r] = BG_NONE;
        for (uint32_t id = 0; s == BRAID_OK && id < g->nnodes; id++) {
            const bg_node *n = &g->nodes[id];
            if (!bg_is_collective(n) || bg_coll_group(n) != ids[gi]) continue;
            if (!bg_coll_local(n) || bg_coll_size(n) > BG_COLL_MAX_LOCAL) {
                if (plan->res.info[id].device.kind != BP_DEVICE_CUDA)
                    s = bg_set_last_error(
                        BRAID_ERR_DEVICE,
                        "place: node %%%u (%s, rank %d of %lld) is one rank "
                        "of a multi-process collective and must run on a GPU "
                        "(it is on %s: compile for \"cpu,cuda:N\")",
                        origin_of(plan, id), bg_op(n->op)->name,
                        bg_coll_rank(n), (long long)bg_coll_size(n),
                        dev_str(plan->res.info[id].device, a, sizeof a));
                continue;
            }
            local = true;
            k = bg_coll_size(n);
            if (members[bg_coll_rank(n)] != BG_NONE)
                s = bg_set_last_error(
                    BRAID_ERR_INVALID_ARGUMENT,
                    "place: collective group %llu has two members of rank %d "
                    "(nodes %%%u and %%%u)",
                    (unsigned long long)ids[gi], bg_coll_rank(n),
                    origin_of(plan, members[bg_coll_rank(n)]),
                    origin_of(plan, id));
            members[bg_coll_rank(n)] = id;
        }
        if (s == BRAID_OK && local) s = place_group(plan, members, k);
    }
    free(ids);
    return s;
}

/* ---- schedule ----------------------------------------------------------------- */

/* True when every input of node id has been emitted. */
static bool inputs_done(const braid_graph *g, uint32_t id, const bool *done) {
    const bg_node *n = &g->nodes[id];
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (!done[n->inputs[k]]) return false;
    return true;
}

braid_status bp_coll_schedule(bp_plan *plan) {
    const braid_graph *g = plan->res.graph;
    uint32_t ngroups = 0, n = plan->res.nschedule;
    uint64_t *ids = group_ids(g, NULL, &ngroups);
    if (!ids)
        return ngroups ? bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                           "schedule: out of memory")
                       : BRAID_OK;
    bool *done = calloc(g->nnodes ? g->nnodes : 1, sizeof *done);
    uint32_t *out = malloc((n ? n : 1) * sizeof *out);
    uint32_t *grp = malloc((n ? n : 1) * sizeof *grp);
    if (!done || !out || !grp) {
        free(ids);
        free(done);
        free(out);
        free(grp);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "schedule: out of memory");
    }
    uint32_t nout = 0, next = 0;
    braid_status s = BRAID_OK;
    while (s == BRAID_OK && nout < n) {
        uint32_t before = nout;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = plan->res.schedule[i];
            const bg_node *x = &g->nodes[id];
            if (done[id]) continue;
            if (!bg_is_collective(x)) {
                if (inputs_done(g, id, done)) {
                    done[id] = true;
                    out[nout++] = id;
                }
                continue;
            }
            if (next >= ngroups || bg_coll_group(x) != ids[next]) continue;
            /* the group: every member of it, ready? */
            uint32_t nm = 0;
            bool ready = true;
            for (uint32_t j = 0; j < n && ready; j++) {
                uint32_t m = plan->res.schedule[j];
                const bg_node *y = &g->nodes[m];
                if (!bg_is_collective(y) || bg_coll_group(y) != ids[next])
                    continue;
                ready = inputs_done(g, m, done);
                grp[nm++] = m;
            }
            if (!ready) continue;
            /* members in rank order */
            for (uint32_t a = 1; a < nm; a++)
                for (uint32_t b = a; b > 0 &&
                                     bg_coll_rank(&g->nodes[grp[b]]) <
                                         bg_coll_rank(&g->nodes[grp[b - 1]]);
                     b--) {
                    uint32_t t = grp[b];
                    grp[b] = grp[b - 1];
                    grp[b - 1] = t;
                }
            for (uint32_t a = 0; a < nm; a++) {
                done[grp[a]] = true;
                out[nout++] = grp[a];
            }
            next++;
        }
        if (nout == before)
            s = bg_set_last_error(
                BRAID_ERR_INVALID_ARGUMENT,
                "schedule: collective group %llu cannot be issued: it needs "
                "the result of a group with a larger id (groups are issued "
                "in increasing group id; build them in dependency order)",
                next < ngroups ? (unsigned long long)ids[next] : 0ull);
    }
    if (s == BRAID_OK) {
        memcpy(plan->res.schedule, out, n * sizeof *out);
        for (uint32_t i = 0; i < n; i++)
            plan->res.info[out[i]].order = i;
    }
    free(ids);
    free(done);
    free(out);
    free(grp);
    return s;
}
