/* runtime/cuda/cudnn.c — loading cuDNN at run time (runtime/cuda/cudnn.h)
 * and braid_cudnn_version / braid_cudnn_status. Builds without CUDA too. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static br_cudnn_api api;
static char load_error[512];
static char status_text[700]; /* braid_cudnn_status once loaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* dlsym into a function pointer (POSIX guarantees the conversion). */
#define LOOKUP(lib, field, name, ok)                                           \
    do {                                                                       \
        void *sym_ = dlsym(lib, name);                                         \
        if (!sym_) ok = false;                                                 \
        memcpy(&api.field, &sym_, sizeof sym_);                                \
    } while (0)

static bool lookup_all(void *lib) {
    bool ok = true;
    LOOKUP(lib, GetVersion, "cudnnGetVersion", ok);
    LOOKUP(lib, GetErrorString, "cudnnGetErrorString", ok);
    LOOKUP(lib, Create, "cudnnCreate", ok);
    LOOKUP(lib, Destroy, "cudnnDestroy", ok);
    LOOKUP(lib, SetStream, "cudnnSetStream", ok);
    LOOKUP(lib, CreateTensorDescriptor, "cudnnCreateTensorDescriptor", ok);
    LOOKUP(lib, SetTensorNdDescriptor, "cudnnSetTensorNdDescriptor", ok);
    LOOKUP(lib, DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor", ok);
    LOOKUP(lib, CreateFilterDescriptor, "cudnnCreateFilterDescriptor", ok);
    LOOKUP(lib, SetFilterNdDescriptor, "cudnnSetFilterNdDescriptor", ok);
    LOOKUP(lib, DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor", ok);
    LOOKUP(lib, CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor",
           ok);
    LOOKUP(lib, SetConvolutionNdDescriptor, "cudnnSetConvolutionNdDescriptor",
           ok);
    LOOKUP(lib, SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount", ok);
    LOOKUP(lib, SetConvolutionMathType, "cudnnSetConvolutionMathType", ok);
    LOOKUP(lib, DestroyConvolutionDescriptor,
           "cudnnDestroyConvolutionDescriptor", ok);
    LOOKUP(lib, FindConvolutionForwardAlgorithm,
           "cudnnFindConvolutionForwardAlgorithm", ok);
    LOOKUP(lib, FindConvolutionBackwardDataAlgorithm,
           "cudnnFindConvolutionBackwardDataAlgorithm", ok);
    LOOKUP(lib, GetConvolutionForwardWorkspaceSize,
           "cudnnGetConvolutionForwardWorkspaceSize", ok);
    LOOKUP(lib, GetConvolutionBackwardDataWorkspaceSize,
           "cudnnGetConvolutionBackwardDataWorkspaceSize", ok);
    LOOKUP(lib, ConvolutionForward, "cudnnConvolutionForward", ok);
    LOOKUP(lib, ConvolutionBackwardData, "cudnnConvolutionBackwardData", ok);
    LOOKUP(lib, AddTensor, "cudnnAddTensor", ok);
    return ok;
}

/* BRAID_CUDNN_LIBRARY names the one library to load (br_dynlib_open). */
static void load_once(void) {
    static const char *const names[] = {"libcudnn.so.9", "libcudnn.so"};
    void *lib = br_dynlib_open("BRAID_CUDNN_LIBRARY", names, 2, api.path,
                               sizeof api.path, load_error, sizeof load_error);
    if (!lib) return;
    if (!lookup_all(lib) || (api.version = api.GetVersion()) < 8000) {
        snprintf(load_error, sizeof load_error,
                 "%s lacks a cuDNN entry point braid needs (cuDNN >= 8 "
                 "expected)",
                 api.path);
        memset(&api, 0, sizeof api);
        dlclose(lib);
        return;
    }
    /* cuDNN 9 counts major·10000 + minor·100 + patch, cuDNN 8 major·1000 */
    size_t v = api.version, nine = v >= 90000;
    snprintf(status_text, sizeof status_text, "cuDNN %zu.%zu.%zu (%s)",
             nine ? v / 10000 : v / 1000, nine ? v / 100 % 100 : v / 100 % 10,
             v % 100, api.path);
    /* lib stays loaded for the life of the process */
}

const br_cudnn_api *br_cudnn_load(void) {
    pthread_once(&once, load_once);
    return api.Create ? &api : NULL;
}

const char *br_cudnn_why(void) {
    pthread_once(&once, load_once);
    return load_error;
}

int braid_cudnn_version(void) {
    const br_cudnn_api *a = br_cudnn_load();
    return a ? (int)a->version : 0;
}

const char *braid_cudnn_status(void) {
    return br_cudnn_load() ? status_text : br_cudnn_why();
}
