/* runtime/cuda/nccl.c — loading NCCL at run time and the multi-process
 * communicator API (braid_comm_*). runtime/cuda/nccl.h says where NCCL is
 * looked for. Builds without CUDA too: braid_comm_init_rank then refuses
 * (it needs cudaSetDevice). */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/nccl.h"

#include "graph/graph.h"
#include "runtime/cuda/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BRAID_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static br_nccl_api api;
static char load_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* dlsym into a function pointer (POSIX guarantees the conversion). */
#define LOOKUP(lib, field, name, ok)                                       \
    do {                                                                   \
        void *sym_ = dlsym(lib, name);                                     \
        if (!sym_) ok = false;                                             \
        memcpy(&api.field, &sym_, sizeof sym_);                            \
    } while (0)

/* BRAID_NCCL_LIBRARY names the one library to load: when it cannot be
 * loaded, NCCL is unavailable (with a message naming it) rather than
 * quietly replaced by whatever NCCL the system has. */
static void load_once(void) {
    const char *env = getenv("BRAID_NCCL_LIBRARY");
    bool chosen = env && env[0];
    const char *names[] = {chosen ? env : "libnccl.so.2", "libnccl.so"};
    size_t nnames = chosen ? 1 : 2;
    void *lib = NULL;
    const char *tried = "";
    for (size_t i = 0; i < nnames && !lib; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        tried = names[i];
        if (lib) snprintf(api.path, sizeof api.path, "%s", names[i]);
    }
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error,
                 "%s%s%sdlopen(\"%s\") failed: %s",
                 chosen ? "BRAID_NCCL_LIBRARY=" : "", chosen ? env : "",
                 chosen ? ": " : "", tried, why ? why : "?");
        return;
    }
    bool ok = true;
    LOOKUP(lib, GetVersion, "ncclGetVersion", ok);
    LOOKUP(lib, GetUniqueId, "ncclGetUniqueId", ok);
    LOOKUP(lib, CommInitRank, "ncclCommInitRank", ok);
    LOOKUP(lib, CommInitAll, "ncclCommInitAll", ok);
    LOOKUP(lib, CommDestroy, "ncclCommDestroy", ok);
    LOOKUP(lib, GetErrorString, "ncclGetErrorString", ok);
    LOOKUP(lib, AllReduce, "ncclAllReduce", ok);
    LOOKUP(lib, AllGather, "ncclAllGather", ok);
    LOOKUP(lib, Broadcast, "ncclBroadcast", ok);
    LOOKUP(lib, ReduceScatter, "ncclReduceScatter", ok);
    LOOKUP(lib, GroupStart, "ncclGroupStart", ok);
    LOOKUP(lib, GroupEnd, "ncclGroupEnd", ok);
    if (ok && api.GetVersion(&api.version) != 0) ok = false;
    if (!ok) {
        snprintf(load_error, sizeof load_error,
                 "%s lacks an NCCL entry point braid needs (NCCL >= 2.10 "
                 "expected)",
                 api.path);
        memset(&api, 0, sizeof api);
        dlclose(lib);
        return;
    }
    /* lib stays loaded for the life of the process */
}

const br_nccl_api *br_nccl_load(const char *who) {
    pthread_once(&once, load_once);
    if (api.AllReduce) return &api;
    bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                      "%s: NCCL is not available: %s (set BRAID_NCCL_LIBRARY "
                      "to the path of libnccl.so.2, e.g. the one in PyTorch's "
                      "nvidia/nccl/lib)",
                      who, load_error[0] ? load_error : "not loaded");
    return NULL;
}

braid_status br_nccl_check(const br_nccl_api *a, const char *who,
                           const char *call, br_nccl_result r) {
    if (r == 0) return BRAID_OK;
    const char *msg = a && a->GetErrorString ? a->GetErrorString(r) : "?";
    return bg_set_last_error(BRAID_ERR_DEVICE, "%s: %s failed: %s (NCCL error "
                                               "%d)",
                             who, call, msg ? msg : "?", r);
}

int br_nccl_dtype(braid_dtype t) {
    switch (t) {
    case BRAID_F16: return BR_NCCL_FLOAT16;
    case BRAID_BF16: return BR_NCCL_BFLOAT16;
    case BRAID_F64: return BR_NCCL_FLOAT64;
    case BRAID_I32: return BR_NCCL_INT32;
    case BRAID_BOOL: return BR_NCCL_UINT8;
    case BRAID_I64: return BR_NCCL_INT64;
    default: return BR_NCCL_FLOAT32;
    }
}

int br_nccl_op(braid_reduce_kind k) {
    switch (k) {
    case BRAID_REDUCE_MAX: return BR_NCCL_MAX;
    case BRAID_REDUCE_MIN: return BR_NCCL_MIN;
    case BRAID_REDUCE_AVG: return BR_NCCL_AVG;
    default: return BR_NCCL_SUM;
    }
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

bool br_nccl_id_from_hex(const char *hex, br_nccl_id *id) {
    if (!hex) return false;
    while (*hex == ' ' || *hex == '\t') hex++;
    for (int i = 0; i < BRAID_COMM_ID_BYTES; i++) {
        int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        id->internal[i] = (char)(hi * 16 + lo);
    }
    char end = hex[2 * BRAID_COMM_ID_BYTES];
    return end == '\0' || end == '\n' || end == '\r' || end == ' ';
}

void br_nccl_id_to_hex(const br_nccl_id *id, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < BRAID_COMM_ID_BYTES; i++) {
        unsigned char b = (unsigned char)id->internal[i];
        hex[2 * i] = digits[b >> 4];
        hex[2 * i + 1] = digits[b & 15];
    }
    hex[2 * BRAID_COMM_ID_BYTES] = '\0';
}

/* ---- the public communicator API ----------------------------------------- */

braid_status braid_comm_unique_id(char *hex, size_t size) {
    if (!hex || size < BRAID_COMM_ID_HEX)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_comm_unique_id: hex needs %d bytes",
                                 BRAID_COMM_ID_HEX);
    const br_nccl_api *a = br_nccl_load("braid_comm_unique_id");
    if (!a) return BRAID_ERR_UNSUPPORTED;
    br_nccl_id id;
    braid_status s = br_nccl_check(a, "braid_comm_unique_id",
                                   "ncclGetUniqueId", a->GetUniqueId(&id));
    if (s == BRAID_OK) br_nccl_id_to_hex(&id, hex);
    return s;
}

/* The id's hex text: hex, else $BRAID_NCCL_ID, else the first line of the
 * file $BRAID_NCCL_ID_FILE names. */
static braid_status id_text(const char *hex, char *buf, size_t size,
                            const char **out) {
    if (hex) {
        *out = hex;
        return BRAID_OK;
    }
    const char *env = getenv("BRAID_NCCL_ID");
    if (env && env[0]) {
        *out = env;
        return BRAID_OK;
    }
    const char *path = getenv("BRAID_NCCL_ID_FILE");
    if (!path || !path[0])
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_comm_init_rank: no id given (pass "
                                 "hex, or set BRAID_NCCL_ID or "
                                 "BRAID_NCCL_ID_FILE)");
    FILE *f = fopen(path, "r");
    if (!f)
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_comm_init_rank: cannot open "
                                 "BRAID_NCCL_ID_FILE \"%s\"",
                                 path);
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (!ok)
        return bg_set_last_error(BRAID_ERR_IO,
                                 "braid_comm_init_rank: \"%s\" is empty",
                                 path);
    *out = buf;
    return BRAID_OK;
}

braid_status braid_comm_init_rank(int nranks, int rank, int device,
                                  const char *hex, braid_comm **comm) {
    if (!comm)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_comm_init_rank: comm is NULL");
    *comm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks || device < 0)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_comm_init_rank: rank %d of %d on "
                                 "cuda:%d is out of range",
                                 rank, nranks, device);
    char buf[BRAID_COMM_ID_HEX + 8];
    const char *text = NULL;
    braid_status s = id_text(hex, buf, sizeof buf, &text);
    if (s != BRAID_OK) return s;
    br_nccl_id id;
    if (!br_nccl_id_from_hex(text, &id))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_comm_init_rank: the id is not %d hex "
                                 "digits (braid_comm_unique_id makes one)",
                                 2 * BRAID_COMM_ID_BYTES);
#ifdef BRAID_HAVE_CUDA
    const br_nccl_api *a = br_nccl_load("braid_comm_init_rank");
    if (!a) return BRAID_ERR_UNSUPPORTED;
    int ndev = braid_cuda_device_count();
    if (device >= ndev)
        return bg_set_last_error(BRAID_ERR_DEVICE,
                                 "braid_comm_init_rank: cuda:%d requested but "
                                 "%d CUDA device%s present",
                                 device, ndev, ndev == 1 ? "" : "s");
    cudaError_t err = cudaSetDevice(device);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return bg_set_last_error(BRAID_ERR_DEVICE,
                                 "braid_comm_init_rank: cudaSetDevice(%d) "
                                 "failed: %s",
                                 device, cudaGetErrorString(err));
    }
    braid_comm *c = calloc(1, sizeof *c);
    if (!c)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_comm_init_rank: out of memory");
    s = br_nccl_check(a, "braid_comm_init_rank", "ncclCommInitRank",
                      a->CommInitRank(&c->comm, nranks, id, rank));
    if (s != BRAID_OK) {
        free(c);
        return s;
    }
    c->nranks = nranks;
    c->rank = rank;
    c->device = device;
    *comm = c;
    return BRAID_OK;
#else
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid_comm_init_rank: built without CUDA");
#endif
}

void braid_comm_free(braid_comm *comm) {
    if (!comm) return;
    const br_nccl_api *a = br_nccl_load("braid_comm_free");
    if (a && comm->comm) a->CommDestroy(comm->comm);
    free(comm);
}
