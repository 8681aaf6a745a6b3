/* onnx/names.c — the parts of braid/onnx.h that need no protobuf: the
 * options, telling an ONNX file by its first bytes, input names. Built
 * with or without ONNX support. */
#include "braid/onnx.h"

#include <string.h>

void braid_onnx_options_init(braid_onnx_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

bool braid_onnx_is_model(const void *head, size_t n) {
    const uint8_t *p = head;
    /* ModelProto's first field: ir_version (1, varint), producer_name (2),
     * or graph (7), as every exporter writes them. */
    return n >= 2 && (p[0] == 0x08 || p[0] == 0x12 || p[0] == 0x3a);
}

size_t braid_onnx_input_name(const char *onnx_name, char *buf, size_t size) {
    size_t k = 0;
    const char *s = onnx_name ? onnx_name : "";
    bool lead = !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
                  *s == '_');
    if (lead) {
        if (size > 1) buf[0] = '_';
        k = 1;
    }
    for (; *s; s++, k++) {
        char c = *s;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.';
        if (k + 1 < size) buf[k] = ok ? c : '_';
    }
    if (size) buf[k < size ? k : size - 1] = '\0';
    return k;
}
