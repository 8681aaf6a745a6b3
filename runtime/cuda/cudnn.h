/* runtime/cuda/cudnn.h — cuDNN, loaded at run time (prefix br_cudnn_), for
 * the conv ops on a GPU (runtime/cuda/cuda_conv.c).
 *
 * braid neither includes nor links cuDNN: br_cudnn_load() dlopens it (the
 * file named by $BRAID_CUDNN_LIBRARY and nothing else when that is set,
 * else "libcudnn.so.9", else "libcudnn.so") and looks up the few calls
 * braid makes. The declarations follow cuDNN's documented C API (the
 * legacy convolution API, present in cuDNN 8 and 9); handles and
 * descriptors are opaque pointers, enums plain ints with the documented
 * values below. Builds without CUDA too (streams are void *). */
#ifndef BRAID_RUNTIME_CUDNN_H
#define BRAID_RUNTIME_CUDNN_H

#include "braid/braid.h"

#include <stddef.h>

typedef void *br_cudnn_handle; /* cudnnHandle_t */
typedef void *br_cudnn_desc;   /* tensor, filter, convolution descriptors */
typedef int br_cudnn_status;   /* cudnnStatus_t; 0 is success */

/* cudnnDataType_t, cudnnTensorFormat_t, cudnnConvolutionMode_t,
 * cudnnMathType_t values braid uses. */
enum {
    BR_CUDNN_DATA_FLOAT = 0,
    BR_CUDNN_DATA_DOUBLE = 1,
    BR_CUDNN_DATA_HALF = 2,
    BR_CUDNN_DATA_BFLOAT16 = 9,
    BR_CUDNN_TENSOR_NCHW = 0,
    BR_CUDNN_TENSOR_NHWC = 1,       /* a filter's KRSC */
    BR_CUDNN_CROSS_CORRELATION = 1, /* ONNX's "convolution" */
    BR_CUDNN_DEFAULT_MATH = 0,
    BR_CUDNN_TENSOR_OP_MATH = 1,
    BR_CUDNN_FMA_MATH = 3 /* no tensor cores: f32 without TF32 */
};

/* cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t
 * (the same layout). */
typedef struct br_cudnn_perf {
    int algo;
    br_cudnn_status status;
    float time;    /* ms */
    size_t memory; /* workspace bytes */
    int determinism;
    int math_type;
    int reserved[3];
} br_cudnn_perf;

/* The loaded entry points (NULL until br_cudnn_load succeeded). */
typedef struct br_cudnn_api {
    size_t (*GetVersion)(void);
    const char *(*GetErrorString)(br_cudnn_status s);
    br_cudnn_status (*Create)(br_cudnn_handle *h);
    br_cudnn_status (*Destroy)(br_cudnn_handle h);
    br_cudnn_status (*SetStream)(br_cudnn_handle h, void *stream);
    br_cudnn_status (*CreateTensorDescriptor)(br_cudnn_desc *d);
    br_cudnn_status (*SetTensorNdDescriptor)(br_cudnn_desc d, int dtype,
                                             int nbdims, const int *dims,
                                             const int *strides);
    br_cudnn_status (*DestroyTensorDescriptor)(br_cudnn_desc d);
    br_cudnn_status (*CreateFilterDescriptor)(br_cudnn_desc *d);
    br_cudnn_status (*SetFilterNdDescriptor)(br_cudnn_desc d, int dtype,
                                             int format, int nbdims,
                                             const int *dims);
    br_cudnn_status (*DestroyFilterDescriptor)(br_cudnn_desc d);
    br_cudnn_status (*CreateConvolutionDescriptor)(br_cudnn_desc *d);
    br_cudnn_status (*SetConvolutionNdDescriptor)(br_cudnn_desc d, int n,
                                                  const int *pads,
                                                  const int *strides,
                                                  const int *dilations,
                                                  int mode, int compute);
    br_cudnn_status (*SetConvolutionGroupCount)(br_cudnn_desc d, int groups);
    br_cudnn_status (*SetConvolutionMathType)(br_cudnn_desc d, int math);
    br_cudnn_status (*DestroyConvolutionDescriptor)(br_cudnn_desc d);
    br_cudnn_status (*FindConvolutionForwardAlgorithm)(
        br_cudnn_handle h, br_cudnn_desc x, br_cudnn_desc w, br_cudnn_desc conv,
        br_cudnn_desc y, int requested, int *returned, br_cudnn_perf *perf);
    br_cudnn_status (*FindConvolutionBackwardDataAlgorithm)(
        br_cudnn_handle h, br_cudnn_desc w, br_cudnn_desc dy,
        br_cudnn_desc conv, br_cudnn_desc dx, int requested, int *returned,
        br_cudnn_perf *perf);
    br_cudnn_status (*GetConvolutionForwardWorkspaceSize)(
        br_cudnn_handle h, br_cudnn_desc x, br_cudnn_desc w, br_cudnn_desc conv,
        br_cudnn_desc y, int algo, size_t *bytes);
    br_cudnn_status (*GetConvolutionBackwardDataWorkspaceSize)(
        br_cudnn_handle h, br_cudnn_desc w, br_cudnn_desc dy,
        br_cudnn_desc conv, br_cudnn_desc dx, int algo, size_t *bytes);
    br_cudnn_status (*ConvolutionForward)(
        br_cudnn_handle h, const void *alpha, br_cudnn_desc xd, const void *x,
        br_cudnn_desc wd, const void *w, br_cudnn_desc conv, int algo, void *ws,
        size_t ws_bytes, const void *beta, br_cudnn_desc yd, void *y);
    br_cudnn_status (*ConvolutionBackwardData)(
        br_cudnn_handle h, const void *alpha, br_cudnn_desc wd, const void *w,
        br_cudnn_desc dyd, const void *dy, br_cudnn_desc conv, int algo,
        void *ws, size_t ws_bytes, const void *beta, br_cudnn_desc dxd,
        void *dx);
    br_cudnn_status (*AddTensor)(br_cudnn_handle h, const void *alpha,
                                 br_cudnn_desc ad, const void *a,
                                 const void *beta, br_cudnn_desc cd, void *c);
    size_t version; /* cudnnGetVersion's answer, e.g. 90100 */
    char path[256]; /* the library loaded */
} br_cudnn_api;

/* Loads cuDNN once (thread-safe); the API, or NULL with the reason in
 * br_cudnn_why(). */
const br_cudnn_api *br_cudnn_load(void);
/* Why the load failed ("" when it did not). */
const char *br_cudnn_why(void);

#endif /* BRAID_RUNTIME_CUDNN_H */
