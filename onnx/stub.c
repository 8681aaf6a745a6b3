/* onnx/stub.c — braid_onnx_* in a build without protobuf-c or onnx.proto
 * (CMake's BRAID_ONNX found them missing): every import says how to get
 * them; nothing else of onnx/ is compiled. */
#include "braid/onnx.h"
#include "graph/graph.h"

#include <string.h>

static braid_status missing(braid_graph **out) {
    if (out) *out = NULL;
    return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                             "braid was built without ONNX import: it needs "
                             "protoc-c, libprotobuf-c and onnx.proto at build "
                             "time (tools/install-deps.sh, docs/onnx.md)");
}

braid_status braid_onnx_import(const char *path, const braid_onnx_options *opts,
                               braid_graph **out) {
    (void)path, (void)opts;
    return missing(out);
}

braid_status braid_onnx_import_memory(const void *data, size_t size,
                                      const braid_onnx_options *opts,
                                      braid_graph **out) {
    (void)data, (void)size, (void)opts;
    return missing(out);
}

braid_status braid_onnx_tensor_decode(const void *bytes, size_t size,
                                      const char *name, braid_dtype *dtype,
                                      int *rank, int64_t *dims, void **data,
                                      char **tensor_name) {
    (void)bytes, (void)size, (void)name, (void)dtype, (void)rank, (void)dims;
    if (data) *data = NULL;
    if (tensor_name) *tensor_name = NULL;
    return missing(NULL);
}
