/* runtime/profile/profile_trace.c — braid_profile_write_trace: the last run's
 * timeline as Chrome trace-event JSON (the "JSON Object Format" that
 * Perfetto and chrome://tracing load).
 *
 * One process ("braid"); one thread per track that has spans, named after
 * the track ("cuda:0 h2d", "cpu worker 2") and sorted in track order; one
 * complete event ("ph":"X") per span, named after its node, with ts and
 * dur in microseconds from the start of the run and the node's id, op,
 * device and bytes in args. otherData carries the wall, busy and overlap
 * figures. The file is written through graph/outfile.h (a temporary
 * renamed over path, or in place for a device or FIFO). */
#include "runtime/profile/profile.h"

#include "graph/outfile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Length of the UTF-8 sequence starting at s (n bytes left), or 0 when it
 * is not valid UTF-8 (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3Fu);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* s as a JSON string: quotes, backslashes and control characters escaped,
 * invalid UTF-8 bytes replaced by U+FFFD. */
static void json_string(FILE *f, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t len = utf8_len(u + i, n - i);
        if (len == 0) {
            fputs("\\ufffd", f);
            i++;
        } else if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            i++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            fwrite(u + i, 1, len, f);
            i += len;
        }
    }
    fputc('"', f);
}

/* Per node id up to the largest in p: its entry in p->nodes + 1, or 0.
 * *n receives the entries. NULL when out of memory. */
static uint32_t *node_index(const braid_profile *p, uint32_t *n) {
    uint32_t most = 0;
    for (uint32_t i = 0; i < p->nnodes; i++)
        if (p->nodes[i].node >= most) most = p->nodes[i].node + 1;
    for (uint32_t i = 0; i < p->nspans; i++)
        if (p->spans[i].node >= most) most = p->spans[i].node + 1;
    uint32_t *index = calloc(most ? most : 1, sizeof *index);
    for (uint32_t i = 0; index && i < p->nnodes; i++)
        index[p->nodes[i].node] = i + 1;
    *n = most;
    return index;
}

static void write_tracks(const braid_profile *p, FILE *f, bool *used) {
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"braid\"}}",
          f);
    for (uint32_t t = 0; t < p->ntracks; t++) {
        if (!used[t]) continue;
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
                   "\"tid\":%" PRIu32 ",\"args\":{\"name\":",
                t + 1);
        json_string(f, p->tracks[t].name);
        fprintf(f, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\","
                   "\"pid\":1,\"tid\":%" PRIu32 ",\"args\":{\"sort_index\":"
                   "%" PRIu32 "}}",
                t + 1, t);
    }
}

static void write_spans(const braid_profile *p, const uint32_t *index,
                        FILE *f) {
    for (uint32_t i = 0; i < p->nspans; i++) {
        const braid_profile_span *s = &p->spans[i];
        if (s->track >= p->ntracks) continue;
        const braid_profile_node *n =
            index[s->node] ? &p->nodes[index[s->node] - 1] : NULL;
        char id[16];
        snprintf(id, sizeof id, "%%%" PRIu32, s->node);
        fputs(",\n{\"name\":", f);
        json_string(f, n ? n->name : id);
        fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%" PRIu32
                   ",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"node\":%" PRIu32,
                s->track < p->ntracks && strncmp(p->tracks[s->track].name,
                                                 "cpu worker", 10) == 0
                    ? "worker"
                    : "node",
                s->track + 1, s->start_ms * 1e3,
                (s->end_ms - s->start_ms) * 1e3, s->node);
        if (n) {
            fputs(",\"op\":", f);
            json_string(f, n->op);
            fputs(",\"device\":", f);
            json_string(f, n->device);
            fprintf(f, ",\"bytes\":%" PRIu64, n->bytes);
        }
        fputs("}}", f);
    }
}

static braid_status write_all(const braid_profile *p, FILE *f) {
    uint32_t nindex = 0;
    uint32_t *index = node_index(p, &nindex);
    bool *used = calloc(p->ntracks ? p->ntracks : 1, sizeof *used);
    if (!used || !index) {
        free(used);
        free(index);
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_profile_write_trace: out of memory");
    }
    for (uint32_t i = 0; i < p->nspans; i++)
        if (p->spans[i].track < p->ntracks) used[p->spans[i].track] = true;
    fputs("{\"traceEvents\":[\n", f);
    write_tracks(p, f, used);
    write_spans(p, index, f);
    fprintf(f,
            "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"runs\":"
            "%" PRIu64 ",\"wall_ms\":%.6f,\"busy_ms\":%.6f,\"overlap\":%.4f}}"
            "\n",
            p->runs, p->wall_ms, p->busy_ms, p->overlap);
    free(used);
    free(index);
    return BRAID_OK;
}

braid_status braid_profile_write_trace(const braid_profile *p,
                                       const char *path) {
    const char *who = "braid_profile_write_trace";
    if (!p)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: profile is NULL", who);
    bg_outfile o;
    braid_status s = bg_outfile_open(&o, path, who, 0);
    if (s != BRAID_OK) return s;
    if ((s = write_all(p, o.f)) != BRAID_OK) {
        bg_outfile_abort(&o);
        return s;
    }
    return bg_outfile_commit(&o, who);
}
