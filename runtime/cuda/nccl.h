/* runtime/cuda/nccl.h — NCCL, loaded at run time (prefix br_nccl_).
 *
 * braid neither includes nor links NCCL: br_nccl_load() dlopens it (the
 * file named by $BRAID_NCCL_LIBRARY and nothing else when that is set,
 * else "libnccl.so.2", else "libnccl.so", searched the usual way:
 * LD_LIBRARY_PATH, the rpath, the system's library cache) and looks up the few
 * calls braid makes. The declarations below follow NCCL's documented C API
 * (types are ABI-stable since NCCL 2.0; bf16 and avg need NCCL ≥ 2.10). */
#ifndef BRAID_RUNTIME_NCCL_H
#define BRAID_RUNTIME_NCCL_H

#include "braid/braid.h"

#include <stddef.h>

typedef struct br_nccl_comm_s *br_nccl_comm; /* ncclComm_t */
typedef struct br_nccl_id {
    char internal[BRAID_COMM_ID_BYTES]; /* ncclUniqueId: opaque bytes */
} br_nccl_id;
typedef int br_nccl_result; /* ncclResult_t; 0 is success */
typedef void *br_nccl_stream; /* cudaStream_t */

/* ncclDataType_t and ncclRedOp_t values braid uses. */
enum {
    BR_NCCL_UINT8 = 1,
    BR_NCCL_INT32 = 2,
    BR_NCCL_INT64 = 4,
    BR_NCCL_FLOAT16 = 6,
    BR_NCCL_FLOAT32 = 7,
    BR_NCCL_FLOAT64 = 8,
    BR_NCCL_BFLOAT16 = 9
};
enum { BR_NCCL_SUM = 0, BR_NCCL_MAX = 2, BR_NCCL_MIN = 3, BR_NCCL_AVG = 4 };

/* The loaded entry points (NULL until br_nccl_load succeeded). */
typedef struct br_nccl_api {
    br_nccl_result (*GetVersion)(int *version);
    br_nccl_result (*GetUniqueId)(br_nccl_id *id);
    br_nccl_result (*CommInitRank)(br_nccl_comm *comm, int nranks,
                                   br_nccl_id id, int rank);
    br_nccl_result (*CommInitAll)(br_nccl_comm *comms, int ndev,
                                  const int *devlist);
    br_nccl_result (*CommDestroy)(br_nccl_comm comm);
    const char *(*GetErrorString)(br_nccl_result r);
    br_nccl_result (*AllReduce)(const void *send, void *recv, size_t count,
                                int dtype, int op, br_nccl_comm comm,
                                br_nccl_stream s);
    br_nccl_result (*AllGather)(const void *send, void *recv,
                                size_t sendcount, int dtype,
                                br_nccl_comm comm, br_nccl_stream s);
    br_nccl_result (*Broadcast)(const void *send, void *recv, size_t count,
                                int dtype, int root, br_nccl_comm comm,
                                br_nccl_stream s);
    br_nccl_result (*ReduceScatter)(const void *send, void *recv,
                                    size_t recvcount, int dtype, int op,
                                    br_nccl_comm comm, br_nccl_stream s);
    br_nccl_result (*GroupStart)(void);
    br_nccl_result (*GroupEnd)(void);
    int version; /* ncclGetVersion's answer, e.g. 22703 */
    char path[256]; /* the library loaded */
} br_nccl_api;

/* Loads NCCL once (thread-safe); the API or NULL with BRAID_ERR_UNSUPPORTED
 * "<who>: NCCL is not available: <why> (set BRAID_NCCL_LIBRARY to
 * libnccl.so.2)" left for braid_last_error(). */
const br_nccl_api *br_nccl_load(const char *who);

/* "<who>: <call> failed: <NCCL's message> (NCCL error r)" as
 * BRAID_ERR_DEVICE; BRAID_OK for r == 0. */
braid_status br_nccl_check(const br_nccl_api *api, const char *who,
                           const char *call, br_nccl_result r);

/* NCCL's dtype for a braid dtype (bool moves as uint8). */
int br_nccl_dtype(braid_dtype t);
/* NCCL's reduction op for a braid reduction. */
int br_nccl_op(braid_reduce_kind k);

/* A communicator made by braid_comm_init_rank. */
struct braid_comm {
    br_nccl_comm comm; /* the NCCL communicator */
    int nranks;        /* ranks in the job */
    int rank;          /* this process's rank */
    int device;        /* the CUDA device it was created on */
};

/* Hex text (2 × BRAID_COMM_ID_BYTES digits) → id; false when malformed. */
bool br_nccl_id_from_hex(const char *hex, br_nccl_id *id);
void br_nccl_id_to_hex(const br_nccl_id *id, char *hex);

#endif /* BRAID_RUNTIME_NCCL_H */
