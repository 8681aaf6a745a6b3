/* fuzz/fuzz_onnx.c — libFuzzer target for the ONNX importer: the wire
 * reader that keeps initializers in place (onnx/wire.c), protobuf-c's
 * unpack behind it, and the import of whatever decodes.
 *
 * Any input must import or fail cleanly (ASan/UBSan catch the rest); a
 * failure must carry a message naming the model ("f: "), and an imported
 * graph must be valid (status OK, printable). The input is also tried as a
 * TensorProto (braid_onnx_tensor_decode, the .pb test-data reader). Seed
 * it with the tiny models (tests/models/tiny, `make fuzz` does):
 *   ./fuzz_onnx -max_len=65536 corpus/ */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/onnx.h"

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_onnx: %s\n%s\n", what, detail ? detail : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    braid_onnx_options o;
    braid_onnx_options_init(&o);
    o.filename = "f";
    o.shapes = "input_ids=1x16;input=2x3x32x32;x=2x3";
    braid_graph *g = NULL;
    if (braid_onnx_import_memory(data, size, &o, &g) != BRAID_OK) {
        if (g) fail("a failed import returned a graph", NULL);
        if (strncmp(braid_last_error(), "f: ", 3) != 0)
            fail("error without the model's name", braid_last_error());
    } else {
        if (braid_graph_status(g) != BRAID_OK)
            fail("imported graph has an error", braid_graph_error(g));
        char *text = NULL;
        if (braid_graph_print(g, &text, NULL) != BRAID_OK)
            fail("print failed", braid_last_error());
        free(text);
        braid_graph_free(g);
    }
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    void *out = NULL;
    char *name = NULL;
    if (braid_onnx_tensor_decode(data, size, "t", &dt, &rank, dims, &out,
                                 &name) == BRAID_OK) {
        free(out);
        free(name);
    } else if (out || name) {
        fail("a failed decode returned data", NULL);
    }
    return 0;
}
