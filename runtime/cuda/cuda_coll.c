/* runtime/cuda/cuda_coll.c — collective members on GPUs, through NCCL.
 *
 * A group whose k members are all in this plan (a local group placement
 * lowered to the rank form: one member per GPU) runs on communicators
 * made once per executor with ncclCommInitAll over the members' devices in
 * rank order; a member alone in its group is one rank of a multi-process
 * job and runs on the communicator braid_exec_set_comm gave. A group is
 * issued at once (cuda_run.c waits until every member is ready): first
 * each member's stream waits for its events, then one ncclGroupStart, the
 * k NCCL calls on the members' comm streams, ncclGroupEnd, and only then
 * each member's event records — NCCL enqueues the work at ncclGroupEnd, so
 * a record issued before it would not cover the collective. Since every
 * member is issued by the one thread, in one group, a single-process group
 * cannot wait for a member that is never issued. */
#define _POSIX_C_SOURCE 200809L
#include "graph/graph.h"
#include "runtime/cuda/cuda_impl.h"

#ifdef BRAID_HAVE_CUDA

#include "graph/collective.h"
#include "runtime/cuda/nccl.h"

#include <stdlib.h>
#include <string.h>

static const char *const WHERE = "braid_run";

static const bg_node *node_at(const br_cuda *c, uint32_t id) {
    return bg_node_at(c->plan->res.graph, id);
}

/* Members of group grp among the GPU nodes: their count, and in
 * ids[rank] (BG_NONE when absent) when ids is given. */
static uint32_t members(const br_cuda *c, uint64_t grp, uint32_t *ids,
                        int64_t k) {
    uint32_t count = 0;
    for (int64_t r = 0; ids && r < k; r++) ids[r] = BG_NONE;
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        const bg_node *n = node_at(c, id);
        if (c->node[id].kind != BR_NODE_COLL || bg_coll_group(n) != grp)
            continue;
        count++;
        if (ids && bg_coll_rank(n) < k) ids[bg_coll_rank(n)] = id;
    }
    return count;
}

/* A communicator set for devs[0..k) (ncclCommInitAll), shared by groups
 * over the same devices in the same order; comms receives it. */
static braid_status comm_set(br_cuda *c, const int *devs, int64_t k,
                             uint32_t first, void **comms) {
    /* an earlier group over the same devices: reuse its set */
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (!c->coll.member[id]) continue;
        const bg_node *n = node_at(c, id);
        if (bg_coll_size(n) != k || bg_coll_rank(n) != 0) continue;
        uint32_t got[BG_COLL_MAX_LOCAL];
        members(c, bg_coll_group(n), got, k);
        bool same = true;
        for (int64_t r = 0; r < k && same; r++)
            same = got[r] != BG_NONE && c->node[got[r]].dev == devs[r];
        if (!same) continue;
        for (int64_t r = 0; r < k; r++)
            comms[r] = c->coll.member[got[r]];
        return BRAID_OK;
    }
    const br_nccl_api *a = br_nccl_load("braid_exec_new");
    if (!a) {
        const bg_node *n = node_at(c, first);
        char why[600];
        snprintf(why, sizeof why, "%s", braid_last_error());
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "braid_exec_new: node %u (%s, group %llu) "
                                 "needs NCCL: %s",
                                 first, bg_op(n->op)->name,
                                 (unsigned long long)bg_coll_group(n), why);
    }
    void **grown =
        realloc(c->coll.comms, (c->coll.ncomms + (size_t)k) * sizeof *grown);
    if (!grown)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    c->coll.comms = grown;
    br_nccl_comm made[BG_COLL_MAX_LOCAL];
    braid_status s = br_nccl_check(
        a, "braid_exec_new", "ncclCommInitAll",
        a->CommInitAll(made, (int)k, devs));
    if (s != BRAID_OK) return s;
    for (int64_t r = 0; r < k; r++) {
        c->coll.comms[c->coll.ncomms++] = made[r];
        comms[r] = made[r];
    }
    c->cur_dev = -1; /* NCCL changes the current device */
    br_cuda_logf(c, "nccl: %s, communicators over %lld GPUs (cuda:%d first)",
                 a->path, (long long)k, devs[0]);
    return BRAID_OK;
}

braid_status br_cuda_coll_init(br_cuda *c) {
    const bp_plan *p = c->plan;
    c->coll.member =
        calloc(p->res.ninfo ? p->res.ninfo : 1, sizeof *c->coll.member);
    if (!c->coll.member)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_exec_new: out of memory");
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        const bg_node *n = node_at(c, id);
        if (c->node[id].kind != BR_NODE_COLL || c->coll.member[id]) continue;
        int64_t k = bg_coll_size(n);
        if (n->ninputs != 1 || (k > BG_COLL_MAX_LOCAL &&
                                members(c, bg_coll_group(n), NULL, 0) > 1))
            return bg_set_last_error(BRAID_ERR_INTERNAL,
                                     "braid_exec_new: collective node %u is "
                                     "not in the rank form",
                                     id);
        uint32_t count = members(c, bg_coll_group(n), NULL, 0);
        if (count == 1 && k > 1) continue; /* multi-process: at run time */
        uint32_t ids[BG_COLL_MAX_LOCAL];
        int devs[BG_COLL_MAX_LOCAL];
        if (count != k || k > BG_COLL_MAX_LOCAL ||
            members(c, bg_coll_group(n), ids, k) != count)
            return bg_set_last_error(
                BRAID_ERR_INTERNAL,
                "braid_exec_new: collective group %llu has %u of its %lld "
                "members on GPUs",
                (unsigned long long)bg_coll_group(n), count, (long long)k);
        for (int64_t r = 0; r < k; r++) {
            if (ids[r] == BG_NONE)
                return bg_set_last_error(BRAID_ERR_INTERNAL,
                                         "braid_exec_new: collective group "
                                         "%llu lacks rank %lld",
                                         (unsigned long long)bg_coll_group(n),
                                         (long long)r);
            devs[r] = c->node[ids[r]].dev;
        }
        if (c->dry) continue;
        void *comms[BG_COLL_MAX_LOCAL];
        braid_status s = comm_set(c, devs, k, id, comms);
        if (s != BRAID_OK) return s;
        for (int64_t r = 0; r < k; r++)
            c->coll.member[ids[r]] = comms[r];
    }
    return BRAID_OK;
}

void br_cuda_coll_free(br_cuda *c) {
    if (!c->coll.ncomms) return;
    const br_nccl_api *a = br_nccl_load("braid_exec_free");
    for (uint32_t i = 0; a && i < c->coll.ncomms; i++)
        a->CommDestroy((br_nccl_comm)c->coll.comms[i]);
    c->coll.ncomms = 0;
}

uint32_t br_cuda_coll_span(const br_cuda *c, uint32_t gi) {
    uint32_t id = c->sched->dev_list[gi];
    if (c->node[id].kind != BR_NODE_COLL) return 0;
    uint64_t grp = bg_coll_group(node_at(c, id));
    uint32_t m = 1;
    while (gi + m < c->sched->ndev) {
        uint32_t next = c->sched->dev_list[gi + m];
        if (c->node[next].kind != BR_NODE_COLL ||
            bg_coll_group(node_at(c, next)) != grp)
            break;
        m++;
    }
    return m;
}

/* ---- issuing ----------------------------------------------------------- */

/* The communicator member id runs on: its group's, or the process's
 * (checked against the node). */
static braid_status comm_of(br_cuda *c, uint32_t id, br_nccl_comm *out) {
    const bg_node *n = node_at(c, id);
    if (c->coll.member[id]) {
        *out = (br_nccl_comm)c->coll.member[id];
        return BRAID_OK;
    }
    const braid_comm *m = c->coll.comm;
    if (!m)
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT,
            "braid_run: node %u (%s, rank %d of %lld) is one rank of a "
            "multi-process collective: give the executor a communicator "
            "first (braid_comm_init_rank, braid_exec_set_comm)",
            id, bg_op(n->op)->name, bg_coll_rank(n),
            (long long)bg_coll_size(n));
    if (m->nranks != bg_coll_size(n) || m->rank != bg_coll_rank(n) ||
        m->device != c->node[id].dev)
        return bg_set_last_error(
            BRAID_ERR_INVALID_ARGUMENT,
            "braid_run: node %u (%s) is rank %d of %lld on cuda:%d but the "
            "communicator is rank %d of %d on cuda:%d",
            id, bg_op(n->op)->name, bg_coll_rank(n),
            (long long)bg_coll_size(n), c->node[id].dev, m->rank, m->nranks,
            m->device);
    *out = m->comm;
    return BRAID_OK;
}

/* The NCCL call of member id (nothing for an empty tensor: every rank has
 * the same shape, so every rank skips it). */
static braid_status call(br_cuda *c, const br_nccl_api *a, uint32_t id) {
    const bg_node *n = node_at(c, id);
    br_nccl_comm comm;
    braid_status s = comm_of(c, id, &comm);
    if (s != BRAID_OK) return s;
    const void *send = c->run.args->ptr[n->inputs[0]];
    void *recv = c->run.args->ptr[id];
    size_t out = (size_t)bg_numel(n),
           in = (size_t)bg_numel(node_at(c, n->inputs[0]));
    br_nccl_stream st = (br_nccl_stream)br_cuda_stream(c, c->node[id].queue);
    int dt = br_nccl_dtype(n->dtype), op = br_nccl_op(bg_coll_reduce(n));
    br_nccl_result r = 0;
    const char *name = "?";
    if (out == 0 || in == 0) return BRAID_OK;
    switch (n->op) {
    case BRAID_OP_ALL_REDUCE:
        name = "ncclAllReduce";
        r = a->AllReduce(send, recv, out, dt, op, comm, st);
        break;
    case BRAID_OP_ALL_GATHER:
        name = "ncclAllGather";
        r = a->AllGather(send, recv, in, dt, comm, st);
        break;
    case BRAID_OP_BROADCAST:
        name = "ncclBroadcast";
        r = a->Broadcast(send, recv, out, dt, bg_coll_root(n), comm, st);
        break;
    default:
        name = "ncclReduceScatter";
        r = a->ReduceScatter(send, recv, out, dt, op, comm, st);
        break;
    }
    if (r == 0) return BRAID_OK;
    char who[96];
    snprintf(who, sizeof who, "braid_run: node %u (%s) on cuda:%d", id,
             bg_op(n->op)->name, c->node[id].dev);
    return br_nccl_check(a, who, name, r);
}

static braid_status waits(br_cuda *c, uint32_t id) {
    braid_status r = BRAID_OK;
    if (c->copy.npend > 0) r = br_cuda_flush(c, c->node[id].queue, BG_NONE);
    return r == BRAID_OK ? br_cuda_wait_events(c, id) : r;
}

braid_status br_cuda_coll_issue(br_cuda *c, const uint32_t *ids, uint32_t m) {
    const br_nccl_api *a = br_nccl_load(WHERE);
    if (!a) return BRAID_ERR_UNSUPPORTED;
    braid_status r = BRAID_OK;
    for (uint32_t i = 0; r == BRAID_OK && i < m; i++) r = waits(c, ids[i]);
    if (r != BRAID_OK) return r;
    /* every member's communicator is checked before NCCL is entered, so
       a refused member never leaves the others waiting */
    for (uint32_t i = 0; r == BRAID_OK && i < m; i++) {
        br_nccl_comm comm;
        r = comm_of(c, ids[i], &comm);
    }
    if (r != BRAID_OK) return r;
    r = br_nccl_check(a, WHERE, "ncclGroupStart", a->GroupStart());
    if (r != BRAID_OK) return r;
    for (uint32_t i = 0; r == BRAID_OK && i < m; i++) {
        r = br_cuda_use(c, WHERE, ids[i], c->node[ids[i]].dev);
        if (r == BRAID_OK) r = call(c, a, ids[i]);
    }
    braid_status end =
        br_nccl_check(a, WHERE, "ncclGroupEnd", a->GroupEnd());
    c->cur_dev = -1; /* NCCL may change the current device */
    if (r == BRAID_OK) r = end;
    for (uint32_t i = 0; r == BRAID_OK && i < m; i++) r = br_cuda_record_events(c, ids[i]);
    return r;
}

/* ---- the public call ------------------------------------------------------ */

braid_status braid_exec_set_comm(braid_exec *e, braid_comm *comm) {
    br_cuda *c = br_exec_cuda(e);
    if (!c)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_set_comm: the executor runs "
                                 "nothing on a GPU, so it has no use for a "
                                 "communicator");
    if (c->run.args)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_exec_set_comm: a run is outstanding "
                                 "(braid_wait first)");
    c->coll.comm = comm;
    return BRAID_OK;
}

#else /* !BRAID_HAVE_CUDA */

braid_status braid_exec_set_comm(braid_exec *e, braid_comm *comm) {
    (void)e;
    (void)comm;
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_exec_set_comm: built without CUDA");
}

#endif /* BRAID_HAVE_CUDA */
