/* onnx/wire.c — the small protobuf reader the importer needs besides
 * protobuf-c.
 *
 * Why it exists: protobuf-c's unpack copies every bytes field, so a model's
 * weights (TensorProto.raw_data) would live twice (the file and the copy)
 * before braid's constants copy them a third time. The importer instead
 * splits the outer messages (ModelProto → GraphProto → initializers →
 * raw_data) at the wire level: protobuf-c unpacks everything else, and each
 * raw_data payload is read in place from the mapped file. This reader only
 * frames fields; it never interprets them. It is fuzzed (fuzz/fuzz_onnx.c).
 */
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ox_cursor {
    const uint8_t *p, *end;
} ox_cursor;

static bool get_varint(ox_cursor *c, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) return false;
        uint8_t b = *c->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false; /* more than 10 bytes */
}

/* One field: its number, wire type, and for wire type 2 its payload; the
 * cursor ends after the field. */
typedef struct ox_field {
    uint32_t num;
    int wt;
    ox_span payload;
} ox_field;

static const char *next_field(ox_cursor *c, ox_field *f) {
    uint64_t key, v;
    if (!get_varint(c, &key)) return "a field key runs past the end";
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) return "field number 0";
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    size_t left = (size_t)(c->end - c->p);
    switch (f->wt) {
    case 0:
        return get_varint(c, &v) ? NULL : "a varint runs past the end";
    case 1:
        if (left < 8) return "a fixed64 runs past the end";
        c->p += 8;
        return NULL;
    case 5:
        if (left < 4) return "a fixed32 runs past the end";
        c->p += 4;
        return NULL;
    case 2:
        if (!get_varint(c, &v)) return "a length runs past the end";
        if (v > (uint64_t)(c->end - c->p)) return "a length runs past the end";
        f->payload = (ox_span){c->p, (size_t)v};
        c->p += v;
        return NULL;
    default:
        return "a group or an unknown wire type";
    }
}

bool ox_wire_split(const uint8_t *buf, size_t len, uint32_t skip, uint8_t *out,
                   size_t *outlen, ox_span **spans, size_t *nspans, char *err,
                   size_t errsize) {
    ox_cursor c = {buf, buf + len};
    size_t cap = 0, n = 0, o = 0;
    ox_span *s = NULL;
    while (c.p < c.end) {
        const uint8_t *start = c.p;
        ox_field f;
        const char *why = next_field(&c, &f);
        if (why) {
            snprintf(err, errsize, "malformed protobuf at byte %zu: %s",
                     (size_t)(start - buf), why);
            free(s);
            return false;
        }
        if (f.num == skip && f.wt == 2) {
            if (n == cap) {
                size_t ncap = cap ? 2 * cap : 8;
                ox_span *ns = realloc(s, ncap * sizeof *ns);
                if (!ns) {
                    snprintf(err, errsize, "out of memory");
                    free(s);
                    return false;
                }
                s = ns;
                cap = ncap;
            }
            s[n++] = f.payload;
        } else {
            if (out) memcpy(out + o, start, (size_t)(c.p - start));
            o += (size_t)(c.p - start);
        }
    }
    *outlen = o;
    *spans = s;
    *nspans = n;
    return true;
}

bool ox_wire_depth_ok(const uint8_t *buf, size_t len,
                      const ProtobufCMessageDescriptor *desc, int max_depth) {
    if (max_depth <= 0) return false;
    ox_cursor c = {buf, buf + len};
    while (c.p < c.end) {
        ox_field f;
        if (next_field(&c, &f)) return true; /* unpack reports it */
        if (f.wt != 2) continue;
        const ProtobufCFieldDescriptor *fd =
            protobuf_c_message_descriptor_get_field(desc, f.num);
        if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE) continue;
        if (!ox_wire_depth_ok(f.payload.p, f.payload.n, fd->descriptor,
                              max_depth - 1))
            return false;
    }
    return true;
}

size_t ox_wire_put_header(uint8_t *out, uint32_t f, uint64_t n) {
    size_t k = 0;
    uint64_t key = ((uint64_t)f << 3) | 2;
    for (uint64_t v = key;; v >>= 7) {
        out[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f) break;
    }
    for (uint64_t v = n;; v >>= 7) {
        out[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f) break;
    }
    return k;
}
