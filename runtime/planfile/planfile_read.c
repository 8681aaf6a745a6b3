/* runtime/planfile/planfile_read.c — braid_plan_load[_memory]: the container of a
 * plan file (header, section table, checksums), the META, CONSTANTS and
 * KERNELS sections, the final checks and the placement step
 * (docs/plan-format.md). Graphs are read in planfile_read_graph.c, PLAN and
 * MEMORY in planfile_read_plan.c. */
#define _DEFAULT_SOURCE /* clock_gettime, madvise */
#include "runtime/planfile/planfile_read.h"

#include "passes/passes.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void braid_load_options_init(braid_load_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->cpu_fallback = false;
    o->num_threads = -1;
}

/* ---- helpers shared with the section readers ---------------------------------- */

br_pf_rd br_pf_reader(const br_pf_load *L, uint32_t type) {
    br_pf_rd r = {.p = L->sec[type].p,
                  .size = L->sec[type].size,
                  .section = br_pf_section_name(type),
                  .prefix = L->prefix,
                  .newer_minor = L->newer_minor,
                  .status = BRAID_OK};
    return r;
}

braid_status br_pf_section_fail(const br_pf_load *L, uint32_t type,
                                braid_status s, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bg_set_last_error(s, "%s: section %s, %s", L->prefix,
                             br_pf_section_name(type), what);
}

const char *br_pf_cstr(br_pf_load *L, const char *s, uint32_t n) {
    memcpy(L->name, s, n); /* n ≤ BR_PF_MAX_STRING: checked by the reader */
    L->name[n] = '\0';
    return L->name;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static braid_status header_fail(const br_pf_load *L, braid_status s,
                                const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static braid_status header_fail(const br_pf_load *L, braid_status s,
                                const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bg_set_last_error(s, "%s: header: %s", L->prefix, what);
}

static braid_status table_fail(const br_pf_load *L, uint32_t i,
                               const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static braid_status table_fail(const br_pf_load *L, uint32_t i,
                               const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bg_set_last_error(BRAID_ERR_PARSE, "%s: section table[%u]: %s",
                             L->prefix, (unsigned)i, what);
}

/* ---- header and section table ---------------------------------------------------- */

static bool host_little_endian(void) {
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static braid_status read_header(br_pf_load *L, const unsigned char *d,
                                size_t size, uint32_t *hsize, uint32_t *count) {
    if (size < BR_PLANFILE_MAGIC_LEN ||
        memcmp(d, BR_PLANFILE_MAGIC, BR_PLANFILE_MAGIC_LEN) != 0)
        return header_fail(L, BRAID_ERR_PARSE,
                           "magic: not a plan file (it does not start with "
                           "%s)",
                           BR_PLANFILE_MAGIC);
    if (size < BR_PF_HEADER_SIZE)
        return header_fail(L, BRAID_ERR_PARSE,
                           "truncated: %zu bytes, a header has %u", size,
                           BR_PF_HEADER_SIZE);
    uint32_t major = (uint32_t)le(d + 8, 2), minor = (uint32_t)le(d + 10, 2);
    uint32_t order = (uint32_t)le(d + 12, 4);
    if (order == 0x04030201u || !host_little_endian())
        return header_fail(L, BRAID_ERR_UNSUPPORTED,
                           "byte_order: %s (plan files are little-endian)",
                           order == 0x04030201u
                               ? "the file is big-endian"
                               : "this host is big-endian");
    if (order != BR_PF_BYTE_ORDER)
        return header_fail(L, BRAID_ERR_PARSE,
                           "byte_order: 0x%08x (expected 0x%08x)", order,
                           BR_PF_BYTE_ORDER);
    if (major > BR_PF_MAJOR)
        return header_fail(L, BRAID_ERR_UNSUPPORTED,
                           "version: %u.%u was written by a newer braid (this "
                           "one reads %d.x)",
                           major, minor, BR_PF_MAJOR);
    if (major < BR_PF_MAJOR)
        return header_fail(L, BRAID_ERR_PARSE, "version: %u.%u is unknown",
                           major, minor);
    L->newer_minor = minor > BR_PF_MINOR;
    L->minor = minor;
    *hsize = (uint32_t)le(d + 16, 4);
    *count = (uint32_t)le(d + 20, 4);
    uint64_t fsize = le(d + 24, 8);
    if (fsize != size)
        return header_fail(L, BRAID_ERR_PARSE,
                           "file_size: %llu, but the file has %zu bytes%s",
                           (unsigned long long)fsize, size,
                           fsize > size ? " (truncated?)" : "");
    if (*hsize < BR_PF_HEADER_SIZE || *hsize % 8 != 0 || *hsize > size ||
        (*hsize != BR_PF_HEADER_SIZE && !L->newer_minor))
        return header_fail(L, BRAID_ERR_PARSE, "header_size: %u", *hsize);
    if (*count < 1 || *count > BR_PF_MAX_SECTIONS ||
        (uint64_t)*count * BR_PF_ENTRY_SIZE > size - *hsize)
        return header_fail(L, BRAID_ERR_PARSE,
                           "section_count: %u (1..%u, the table inside the "
                           "file)",
                           *count, BR_PF_MAX_SECTIONS);
    uint32_t crc = br_pf_crc32c(0, d, 60);
    crc = br_pf_crc32c(crc, d + *hsize, (size_t)*count * BR_PF_ENTRY_SIZE);
    if (crc != (uint32_t)le(d + 60, 4))
        return header_fail(L, BRAID_ERR_PARSE,
                           "header_crc: 0x%08x, computed 0x%08x (the header "
                           "or section table is corrupt)",
                           (uint32_t)le(d + 60, 4), crc);
    return BRAID_OK;
}

/* One table entry: bounds, alignment, type, checksum. */
static braid_status read_entry(br_pf_load *L, const unsigned char *d,
                               size_t size, uint64_t table_end, uint32_t i,
                               uint64_t *off, uint64_t *len) {
    const unsigned char *e =
        d + (uint64_t)le(d + 16, 4) + (uint64_t)i * BR_PF_ENTRY_SIZE;
    uint32_t type = (uint32_t)le(e, 4), flags = (uint32_t)le(e + 4, 4);
    *off = le(e + 8, 8);
    *len = le(e + 16, 8);
    bool known = type >= 1 && type < BR_PF_SECTION_COUNT_;
    if (*off % BR_PF_ALIGN != 0 || *off < table_end || *off > size ||
        *len > size - *off)
        return table_fail(L, i,
                          "section %s (type %u) at offset %llu, %llu bytes: "
                          "not 64-byte aligned after the table inside the "
                          "file (%zu bytes)",
                          br_pf_section_name(type), type,
                          (unsigned long long)*off, (unsigned long long)*len,
                          size);
    if (!known && (flags & BR_PF_REQUIRED))
        return bg_set_last_error(
            BRAID_ERR_UNSUPPORTED,
            "%s: section table[%u]: unknown required section type %u "
            "(written by a newer braid?)",
            L->prefix, (unsigned)i, type);
    uint32_t crc = br_pf_crc32c_pool(0, d + *off, (size_t)*len, L->pool);
    if (crc != (uint32_t)le(e + 24, 4))
        return table_fail(L, i,
                          "section %s checksum 0x%08x, computed 0x%08x (the "
                          "section is corrupt)",
                          br_pf_section_name(type), (uint32_t)le(e + 24, 4),
                          crc);
    if (!known) return BRAID_OK; /* optional and unknown: skipped */
    if (L->sec[type].present)
        return table_fail(L, i, "section %s listed twice",
                          br_pf_section_name(type));
    L->sec[type] = (br_pf_sec){d + *off, *len, true};
    return BRAID_OK;
}

static braid_status read_table(br_pf_load *L, const unsigned char *d,
                               size_t size) {
    uint32_t hsize = 0, count = 0;
    braid_status s = read_header(L, d, size, &hsize, &count);
    if (s != BRAID_OK) return s;
    uint64_t table_end = hsize + (uint64_t)count * BR_PF_ENTRY_SIZE;
    uint64_t off[BR_PF_MAX_SECTIONS], len[BR_PF_MAX_SECTIONS];
    for (uint32_t i = 0; i < count; i++)
        if ((s = read_entry(L, d, size, table_end, i, &off[i], &len[i])) !=
            BRAID_OK)
            return s;
    for (uint32_t i = 0; i < count; i++) /* no two sections share bytes */
        for (uint32_t j = 0; j < count; j++)
            if (i != j && len[i] && len[j] && off[i] <= off[j] &&
                off[j] - off[i] < len[i])
                return table_fail(L, j, "section overlaps the one of entry %u",
                                  (unsigned)i);
    for (uint32_t t = 1; t < BR_PF_SECTION_COUNT_; t++)
        if (!L->sec[t].present && t != BR_PF_TUNING) /* TUNING: optional */
            return bg_set_last_error(BRAID_ERR_PARSE,
                                     "%s: section table: section %s is "
                                     "missing",
                                     L->prefix, br_pf_section_name(t));
    L->file_size = size;
    return BRAID_OK;
}

/* ---- META ------------------------------------------------------------------------ */

static bool printable(const char *s, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F) return false;
    return true;
}

/* An option string: owned copy (or NULL when absent), printable. */
static bool opt_string(br_pf_load *L, br_pf_rd *r, const char *field,
                       char **out) {
    const char *s;
    uint32_t n;
    if (!br_pf_get_str(r, field, true, BR_PF_MAX_STRING, &s, &n)) return false;
    if (!s) return true;
    if (!printable(s, n))
        return br_pf_fail(r, field, "has control characters"), false;
    if (!(*out = malloc((size_t)n + 1)))
        return br_pf_fail(r, field, "out of memory"), false;
    memcpy(*out, br_pf_cstr(L, s, n), (size_t)n + 1);
    return true;
}

static bool ms(br_pf_rd *r, const char *field, double *v) {
    if (!br_pf_get_f64(r, field, v)) return false;
    if (!isfinite(*v) || *v < 0)
        return br_pf_fail(r, field, "%g (expected finite, >= 0)", *v), false;
    return true;
}

static braid_status read_meta(br_pf_load *L) {
    bp_plan *p = L->plan;
    br_pf_rd r = br_pf_reader(L, BR_PF_META);
    braid_compile_options *o = &p->in.opts;
    braid_compile_report *rep = &p->report;
    const char *ver;
    uint32_t vlen;
    bool tf32 = false;
    if (!br_pf_get_str(&r, "braid_version", false,
                       sizeof p->prov.braid_version - 1, &ver, &vlen))
        return r.status;
    if (!printable(ver, vlen))
        return br_pf_fail(&r, "braid_version", "has control characters");
    memcpy(p->prov.braid_version, ver, vlen);
    p->prov.braid_version[vlen] = '\0';
    bool ok = br_pf_get_i32(&r, "nvrtc_version", &p->prov.nvrtc_version) &&
              br_pf_get_i64(&r, "created", &p->prov.created) &&
              opt_string(L, &r, "devices", &p->in.devices_text) &&
              br_pf_get_i32(&r, "num_threads", &o->num_threads);
    uint32_t disabled = 0;
    ok = ok && br_pf_get_u32(&r, "disable_passes", &disabled) &&
         br_pf_get_i32(&r, "max_streams", &o->max_streams) &&
         br_pf_get_i32(&r, "chunks", &o->chunks) &&
         br_pf_get_bool(&r, "allow_tf32", &tf32) &&
         opt_string(L, &r, "archs", &p->in.archs_text) &&
         br_pf_get_u32(&r, "report.kernels", &rep->kernels) &&
         br_pf_get_u32(&r, "report.archs", &rep->archs) &&
         br_pf_get_u32(&r, "report.modules_compiled", &rep->modules_compiled) &&
         br_pf_get_u32(&r, "report.modules_cached", &rep->modules_cached) &&
         ms(&r, "report.nvrtc_ms", &rep->nvrtc_ms) &&
         ms(&r, "report.kernels_ms", &rep->kernels_ms);
    if (!ok) return r.status;
    o->disable_passes = disabled;
    o->allow_tf32 = tf32;
    o->devices = p->in.devices_text;
    o->archs = p->in.archs_text;
    /* the same limits braid_compile applies, each named on its own */
    if (p->prov.nvrtc_version < 0)
        return br_pf_fail(&r, "nvrtc_version", "%d is negative",
                          p->prov.nvrtc_version);
    if (o->num_threads < 0 || o->num_threads > BRAID_MAX_THREADS)
        return br_pf_fail(&r, "num_threads", "%d is out of range 0..%d",
                          o->num_threads, BRAID_MAX_THREADS);
    if (o->max_streams < 0 || o->max_streams > BRAID_MAX_STREAMS)
        return br_pf_fail(&r, "max_streams", "%d is out of range 0..%d",
                          o->max_streams, BRAID_MAX_STREAMS);
    if (o->chunks < 0 || o->chunks > BRAID_MAX_CHUNKS)
        return br_pf_fail(&r, "chunks", "%d is out of range 0..%d", o->chunks,
                          BRAID_MAX_CHUNKS);
    if (disabled & ~0xFu)
        return br_pf_fail(&r, "disable_passes", "0x%x has unknown bits",
                          disabled);
    bp_device devs[BP_MAX_DEVICES];
    uint32_t nd;
    if (o->devices && bp_parse_devices(o->devices, devs, &nd) != BRAID_OK)
        return br_pf_fail(&r, "devices", "%s", braid_last_error());
    br_pf_end(&r);
    return r.status;
}

/* ---- CONSTANTS ----------------------------------------------------------------- */

static braid_status read_constants(br_pf_load *L) {
    br_pf_rd r = br_pf_reader(L, BR_PF_CONSTANTS);
    uint32_t n, reserved;
    if (!br_pf_get_count(&r, "nblobs", 16, &n) ||
        !br_pf_get_u32(&r, "reserved", &reserved))
        return r.status;
    if (reserved != 0 && !L->newer_minor)
        return br_pf_fail(&r, "reserved", "%u (expected 0)", reserved);
    L->blob = calloc(n ? n : 1, sizeof *L->blob);
    L->blob_size = calloc(n ? n : 1, sizeof *L->blob_size);
    if (!L->blob || !L->blob_size)
        return br_pf_fail(&r, "blobs", "out of memory");
    L->nblobs = n;
    uint64_t table_end = 8 + 16 * (uint64_t)n;
    r.array = "blobs";
    for (uint32_t i = 0; i < n; i++) {
        r.index = i;
        uint64_t off, size;
        if (!br_pf_get_u64(&r, "offset", &off) ||
            !br_pf_get_u64(&r, "size", &size))
            return r.status;
        if (off % BR_PF_ALIGN != 0 || off < table_end || off > r.size ||
            size > r.size - off)
            return br_pf_fail(&r, NULL,
                              "offset %llu, size %llu: not 64-byte aligned "
                              "data inside the section (%llu bytes)",
                              (unsigned long long)off,
                              (unsigned long long)size,
                              (unsigned long long)r.size);
        L->blob[i] = r.p + off;
        L->blob_size[i] = size;
    }
    return BRAID_OK; /* the rest of the section is the blobs' bytes */
}

/* ---- KERNELS ---------------------------------------------------------------------- */

/* A byte string of the section, copied (malloc'd); n bytes. */
static bool take_bytes(br_pf_rd *r, const char *field, uint64_t n,
                       void **out) {
    if (n > br_pf_left(r))
        return br_pf_fail(r, field, "%llu bytes, the section has %llu left",
                          (unsigned long long)n,
                          (unsigned long long)br_pf_left(r)),
               false;
    if (!(*out = malloc(n ? (size_t)n : 1)))
        return br_pf_fail(r, field, "out of memory"), false;
    memcpy(*out, r->p + r->pos, (size_t)n);
    r->pos += n;
    return true;
}

static bool read_binary(br_pf_rd *r, bp_kernel_binary *b, int prev_sm) {
    uint64_t cs, ps;
    if (!br_pf_get_i32(r, "sm", &b->sm)) return false;
    if (b->sm < 10 || b->sm > 1000 || b->sm <= prev_sm)
        return br_pf_fail(r, "sm", "%d (10..1000, ascending)", b->sm), false;
    if (!br_pf_get_u64(r, "cubin_size", &cs) ||
        (cs && !take_bytes(r, "cubin", cs, &b->cubin)))
        return false;
    b->cubin_size = (size_t)cs;
    if (!br_pf_get_u64(r, "ptx_size", &ps)) return false;
    if (ps && !take_bytes(r, "ptx", ps, (void **)&b->ptx)) return false;
    b->ptx_size = (size_t)ps;
    if (ps && (b->ptx[ps - 1] != '\0' || memchr(b->ptx, 0, ps - 1)))
        return br_pf_fail(r, "ptx", "must end with its only NUL byte"), false;
    if (!cs && !ps)
        return br_pf_fail(r, NULL, "neither CUBIN nor PTX"), false;
    return true;
}

static braid_status read_kernels(br_pf_load *L) {
    bp_kernels *k = &L->plan->kernels;
    br_pf_rd r = br_pf_reader(L, BR_PF_KERNELS);
    uint64_t len;
    if (!br_pf_get_u64(&r, "source", &len)) return r.status;
    if (len != BR_PF_ABSENT64) {
        if (len == 0)
            return br_pf_fail(&r, "source", "empty (absent is 2^64-1)");
        void *src;
        if (!take_bytes(&r, "source", len, &src)) return r.status;
        k->source = src;
        if (memchr(k->source, 0, (size_t)len))
            return br_pf_fail(&r, "source", "contains a NUL byte");
        char *z = realloc(k->source, (size_t)len + 1);
        if (!z) return br_pf_fail(&r, "source", "out of memory");
        z[len] = '\0';
        k->source = z;
        k->source_len = (size_t)len;
    }
    uint32_t nbin;
    if (!br_pf_get_u32(&r, "nkernels", &k->nkernels) ||
        !br_pf_get_count(&r, "nbin", 20, &nbin))
        return r.status;
    if (nbin > 64 || (!k->source && (nbin || k->nkernels)))
        return br_pf_fail(&r, "nbin", "%u binaries, %u kernels%s", nbin,
                          k->nkernels,
                          k->source ? " (at most 64 binaries)"
                                    : " without source");
    k->bin = calloc(nbin ? nbin : 1, sizeof *k->bin);
    if (!k->bin) return br_pf_fail(&r, "bin", "out of memory");
    r.array = "bin";
    for (uint32_t i = 0; i < nbin; i++) {
        r.index = i;
        k->nbin = i + 1;
        if (!read_binary(&r, &k->bin[i], i ? k->bin[i - 1].sm : 0))
            return r.status;
    }
    br_pf_end(&r);
    return r.status;
}

/* ---- TUNING (optional)
 * --------------------------------------------------------- */

/* Most cuDNN algorithm number a record may name (cuDNN 9 has 8 forward
 * and 6 backward-data algorithms; the executor asks cuDNN anyway). */
#define TUNE_MAX_ALGO 63
/* Most workspace a record may name (the executor's own limit is lower,
 * and it asks cuDNN for the real size). */
#define TUNE_MAX_WORKSPACE ((uint64_t)1 << 40)

static bool read_choice(br_pf_load *L, br_pf_rd *r, bp_conv_choice *c) {
    const braid_graph *g = L->plan->res.graph;
    const char *dev;
    uint32_t len;
    memset(c, 0, sizeof *c);
    if (!br_pf_get_u32(r, "node", &c->node) ||
        !br_pf_get_str(r, "device", false, BP_TUNE_DEVICE_MAX - 1, &dev,
                       &len) ||
        !br_pf_get_i32(r, "cc", &c->cc) ||
        !br_pf_get_i32(r, "cudnn", &c->cudnn) ||
        !br_pf_get_i32(r, "algo", &c->algo) ||
        !br_pf_get_i32(r, "math", &c->math) ||
        !br_pf_get_u64(r, "workspace", &c->workspace))
        return false;
    if (c->node >= g->nnodes ||
        bg_op(g->nodes[c->node].op)->kind != BRAID_KIND_CONV ||
        L->plan->res.info[c->node].device.kind != BP_DEVICE_CUDA)
        return br_pf_fail(r, "node", "%u is not a conv node on a GPU", c->node),
               false;
    if (len == 0 || !printable(dev, len))
        return br_pf_fail(r, "device", "empty or not printable"), false;
    memcpy(c->device, dev, len);
    if (c->cc < 10 || c->cc > 1000)
        return br_pf_fail(r, "cc", "%d (10 .. 1000)", (int)c->cc), false;
    if (c->cudnn < 0)
        return br_pf_fail(r, "cudnn", "%d (≥ 0)", (int)c->cudnn), false;
    if (c->algo < -1 || c->algo > TUNE_MAX_ALGO)
        return br_pf_fail(r, "algo", "%d (-1 .. %d)", (int)c->algo,
                          TUNE_MAX_ALGO),
               false;
    if (c->math < 0 || c->math > 3)
        return br_pf_fail(r, "math", "%d (0 .. 3)", (int)c->math), false;
    if (c->workspace > TUNE_MAX_WORKSPACE)
        return br_pf_fail(r, "workspace", "%llu bytes (at most 2^40)",
                          (unsigned long long)c->workspace),
               false;
    return true;
}

/* The executors' conv choices (docs/plan-format.md, TUNING): after the
 * plan graph and its per-node info, which the records refer to. */
static braid_status read_tuning(br_pf_load *L) {
    if (!L->sec[BR_PF_TUNING].present) return BRAID_OK;
    br_pf_rd r = br_pf_reader(L, BR_PF_TUNING);
    uint32_t n;
    /* node, device (its length), cc, cudnn, algo, math, workspace */
    if (!br_pf_get_count(&r, "nrecords", 4 + 4 + 16 + 8, &n)) return r.status;
    r.array = "records";
    bp_conv_choice prev, c;
    for (uint32_t i = 0; i < n; i++) {
        r.index = i;
        if (!read_choice(L, &r, &c)) return r.status;
        if (i > 0 && bp_tuning_cmp(&prev, &c) >= 0)
            return br_pf_fail(&r, NULL,
                              "out of order or repeated (records "
                              "are sorted by node, device, cc, cudnn)");
        if (!bp_tuning_note(L->plan, &c))
            return br_pf_fail(&r, NULL, "out of memory");
        prev = c;
    }
    br_pf_end(&r);
    return r.status;
}

/* ---- the whole load ------------------------------------------------------------- */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool same_tensor_type(const bg_node *a, const bg_node *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* The plan binds inputs and outputs by the user's names: both graphs have
 * the same inputs (in id order) and outputs (in order), of equal types. */
static braid_status check_io_match(const br_pf_load *L) {
    const braid_graph *u = L->plan->prov.source, *w = L->plan->res.graph;
    uint32_t i = 0, j = 0;
    for (;; i++, j++) {
        while (i < u->nnodes && u->nodes[i].op != BRAID_OP_INPUT) i++;
        while (j < w->nnodes && w->nodes[j].op != BRAID_OP_INPUT) j++;
        if (i == u->nnodes || j == w->nnodes) break;
        if (strcmp(u->nodes[i].name, w->nodes[j].name) != 0 ||
            !same_tensor_type(&u->nodes[i], &w->nodes[j]))
            return br_pf_section_fail(
                L, BR_PF_PLAN_GRAPH, BRAID_ERR_PARSE,
                "nodes[%u]: input \"%s\" does not match input node %u "
                "\"%s\" of GRAPH",
                j, w->nodes[j].name, i, u->nodes[i].name);
    }
    if (i != u->nnodes || j != w->nnodes)
        return br_pf_section_fail(L, BR_PF_PLAN_GRAPH, BRAID_ERR_PARSE,
                                  "inputs: not the inputs of GRAPH");
    if (u->noutputs != w->noutputs)
        return br_pf_section_fail(L, BR_PF_PLAN_GRAPH, BRAID_ERR_PARSE,
                                  "noutputs: %u, GRAPH has %u", w->noutputs,
                                  u->noutputs);
    for (uint32_t k = 0; k < u->noutputs; k++)
        if (strcmp(u->outputs[k].name, w->outputs[k].name) != 0 ||
            !same_tensor_type(&u->nodes[u->outputs[k].node],
                              &w->nodes[w->outputs[k].node]))
            return br_pf_section_fail(L, BR_PF_PLAN_GRAPH, BRAID_ERR_PARSE,
                                      "outputs[%u]: \"%s\" does not match "
                                      "output \"%s\" of GRAPH",
                                      k, w->outputs[k].name,
                                      u->outputs[k].name);
    return BRAID_OK;
}

static braid_status read_sections(br_pf_load *L) {
    bp_plan *p = L->plan;
    braid_status s = read_meta(L);
    if (s == BRAID_OK) s = read_constants(L);
    if (s == BRAID_OK) s = br_pf_read_graph(L, BR_PF_GRAPH, &p->prov.source);
    if (s == BRAID_OK && !(p->res.graph = braid_graph_new(NULL)))
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "%s: out of memory",
                              L->prefix);
    if (s == BRAID_OK) s = br_pf_read_graph(L, BR_PF_PLAN_GRAPH, NULL);
    if (s == BRAID_OK) s = check_io_match(L);
    if (s == BRAID_OK) s = br_pf_read_plan(L);
    if (s == BRAID_OK) s = br_pf_read_memory(L);
    if (s == BRAID_OK) s = read_kernels(L);
    if (s == BRAID_OK) s = read_tuning(L);
    if (s == BRAID_OK && bp_verify_plan(p) != BRAID_OK)
        s = br_pf_section_fail(L, BR_PF_PLAN, BRAID_ERR_PARSE,
                               "plan check: %s", braid_last_error());
    return s;
}

/* ---- threads for large files ------------------------------------------------
 * Reading a file of hundreds of megabytes and checking its sections' CRCs
 * is memory-bound work one core does at a few GB/s; files from
 * LOAD_THREADED bytes up are read and checked on up to LOAD_THREADS
 * threads. */

#define LOAD_THREADED ((size_t)64 << 20)
#define LOAD_THREADS 8

static br_pool *load_pool(size_t size) {
    if (size < LOAD_THREADED) return NULL;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores < 1 ? 1 : cores > LOAD_THREADS ? LOAD_THREADS : (int)cores;
    return n > 1 ? br_pool_new(n) : NULL; /* NULL (no memory): one thread */
}

/* ---- the bytes constants borrow ---------------------------------------------------
 * A loaded plan's constants point into one buffer that the graphs share by
 * reference counting (bg_shared): the whole file as braid_plan_load read it,
 * or a copy of the CONSTANTS section when the bytes are the caller's
 * (braid_plan_load_memory: they may be freed after the load). */

typedef struct image {
    bg_shared sh;          /* first: the graphs hold references to it */
    unsigned char *bytes;  /* aligned_alloc'd (64 bytes) */
} image;

static void image_destroy(bg_shared *s) {
    free(((image *)s)->bytes);
    free(s);
}

/* A holder (one reference) of n uninitialised bytes, 64-byte aligned.
 * Images this large are read into 2 MiB-aligned memory that the kernel is
 * asked to back with huge pages: reading GPT-2 small's 623 MB plan into
 * 4 KiB pages took 160k page faults, each zeroing its page. */
#define IMAGE_HUGE ((size_t)64 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static image *image_new(size_t n) {
    image *im = malloc(sizeof *im);
    size_t align = n >= IMAGE_HUGE ? HUGE_PAGE : 64;
    size_t cap = (n + align - 1) / align * align;
    if (!im || n > SIZE_MAX - HUGE_PAGE ||
        !(im->bytes = aligned_alloc(align, cap ? cap : align))) {
        free(im);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE) /* advice only: 4 KiB pages work too */
        (void)madvise(im->bytes, cap, MADV_HUGEPAGE);
#endif
    im->sh.refs = 1;
    im->sh.destroy = image_destroy;
    return im;
}

/* L's image: a reference to `given` (which holds the whole file), or a copy
 * of the CONSTANTS section the graphs' constants can borrow from. The
 * whole file is kept only where the constants are most of it: a plan whose
 * bulk is elsewhere (CUBINs, a large graph) copies its few constant bytes
 * rather than keep the file alive. */
static braid_status take_image(br_pf_load *L, bg_shared *given) {
    br_pf_sec *c = &L->sec[BR_PF_CONSTANTS];
    if (given && c->size >= L->file_size / 2) {
        bg_shared_ref(given);
        L->image = given;
        return BRAID_OK;
    }
    image *im = image_new((size_t)c->size);
    if (!im)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "%s: out of memory (%llu bytes of constants)",
                                 L->prefix, (unsigned long long)c->size);
    memcpy(im->bytes, c->p, (size_t)c->size);
    c->p = im->bytes;
    L->image = &im->sh;
    return BRAID_OK;
}

/* br_planfile_load, the bytes held by `held` (NULL: the caller's, copied
 * as needed). */
static braid_status load_held(const void *data, size_t size,
                              const braid_load_options *opts,
                              const char *prefix, bg_shared *held,
                              br_pool *pool, braid_plan **plan) {
    double t0 = now_ms();
    if (!plan)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_load: plan is NULL");
    *plan = NULL;
    if (!data && size)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_load: data is NULL");
    if (opts &&
        (opts->num_threads < -1 || opts->num_threads > BRAID_MAX_THREADS))
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_load: num_threads is %d "
                                 "(expected -1, 0 or up to %d)",
                                 opts->num_threads, BRAID_MAX_THREADS);
    br_pf_load L;
    memset(&L, 0, sizeof L);
    L.prefix = prefix;
    br_pool *own = pool ? NULL : load_pool(size);
    L.pool = pool ? pool : own;
    L.name = malloc(BR_PF_MAX_STRING + 1);
    L.plan = bp_calloc(1, sizeof *L.plan, "plan");
    braid_status s = L.name && L.plan
                         ? BRAID_OK
                         : bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                             "%s: out of memory", prefix);
    if (s == BRAID_OK) s = read_table(&L, data, size);
    if (s == BRAID_OK) s = take_image(&L, held);
    br_pool_free(own);
    L.pool = NULL;
    if (s == BRAID_OK) s = read_sections(&L);
    bg_shared_unref(L.image); /* the graphs' constants hold their own */
    free(L.name);
    free(L.ids);
    free(L.blob);
    free(L.blob_size);
    if (s != BRAID_OK) {
        braid_plan_free(L.plan);
        return s;
    }
    bp_plan *p = L.plan;
    if (opts && opts->num_threads >= 0)
        p->in.opts.num_threads = opts->num_threads;
    p->prov.loaded = true;
    p->report.loaded = true;
    p->report.npasses = 0;
    p->report.total_ms = now_ms() - t0;
    *plan = p;
    return BRAID_OK;
}

braid_status br_planfile_load(const void *data, size_t size,
                              const braid_load_options *opts,
                              const char *prefix, braid_plan **plan) {
    return load_held(data, size, opts, prefix, NULL, NULL, plan);
}

/* ---- placement: GPUs the machine lacks ---------------------------------------- */

/* Whether plan device d runs anything: a scheduled node or a non-empty
 * arena of its own. A plan compiled for "cpu,cuda:0" whose nodes all went
 * to the cpu needs no GPU (the executor creates no CUDA state for it). */
static bool device_used(const bp_plan *p, uint32_t d) {
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        if (bp_device_equal(p->res.info[p->res.schedule[i]].device,
                            p->in.devs.devices[d]))
            return true;
    for (uint32_t a = 0; a < p->res.narenas; a++)
        if (p->res.arenas[a].bytes > 0 &&
            bp_device_equal(p->res.arenas[a].device, p->in.devs.devices[d]))
            return true;
    return false;
}

/* The first device of p that runs something and this machine lacks, or
 * -1. */
static int missing_gpu(const bp_plan *p) {
    int count = -1; /* probed only when a GPU is used (probing is slow) */
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++) {
        if (p->in.devs.devices[i].kind != BP_DEVICE_CUDA || !device_used(p, i))
            continue;
        if (count < 0) count = braid_cuda_device_count();
        if (p->in.devs.devices[i].index >= count) return (int)i;
    }
    return -1;
}

/* p compiled again from its user's graph for the cpu, options as stored. */
static braid_status recompile_for_cpu(bp_plan *p, const braid_load_options *o,
                                      double t0, braid_plan **out) {
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = "cpu";
    co.archs = "none";
    co.num_threads =
        o->num_threads >= 0 ? o->num_threads : p->in.opts.num_threads;
    co.disable_passes = p->in.opts.disable_passes;
    co.max_streams = p->in.opts.max_streams;
    co.chunks = p->in.opts.chunks;
    co.allow_tf32 = p->in.opts.allow_tf32;
    co.cpu_profile = &p->in.devs.profile[0]; /* device 0 is the cpu */
    braid_plan *q = NULL;
    braid_status s = braid_compile(p->prov.source, &co, &q);
    if (s != BRAID_OK) return s;
    /* provenance of the file (loaded stays true); q keeps its own source */
    braid_graph *source = q->prov.source;
    q->prov = p->prov;
    q->prov.source = source;
    q->report.loaded = false; /* passes ran: see br_planfile_was_replaced */
    q->report.total_ms = now_ms() - t0;
    *out = q;
    return BRAID_OK;
}

static braid_status load_and_place(const void *data, size_t size,
                                   const braid_load_options *opts,
                                   const char *prefix, bg_shared *held,
                                   br_pool *pool, braid_plan **plan) {
    double t0 = now_ms();
    braid_load_options defaults;
    braid_load_options_init(&defaults);
    if (!opts) opts = &defaults;
    braid_status s = load_held(data, size, opts, prefix, held, pool, plan);
    if (s != BRAID_OK) return s;
    bp_plan *p = *plan;
    int d = missing_gpu(p);
    if (d < 0) return BRAID_OK;
    *plan = NULL;
    if (opts->cpu_fallback) {
        s = recompile_for_cpu(p, opts, t0, plan);
    } else {
        char dev[32], why[300];
        int count = braid_cuda_device_count();
        if (count == 0)
            snprintf(why, sizeof why, "no usable GPU (%s)",
                     braid_cuda_status());
        else
            snprintf(why, sizeof why, "only %d usable GPU%s", count,
                     count == 1 ? "" : "s");
        s = bg_set_last_error(
            BRAID_ERR_DEVICE,
            "%s: the plan runs on %s, but this machine has "
            "%s; load it with cpu_fallback to run it on "
            "the CPU instead",
            prefix, bp_device_str(p->in.devs.devices[d], dev, sizeof dev), why);
    }
    braid_plan_free(p);
    return s;
}

braid_status braid_plan_load_memory(const void *data, size_t size,
                                    const braid_load_options *opts,
                                    braid_plan **plan) {
    return load_and_place(data, size, opts, "plan file", NULL, NULL, plan);
}

/* Parallel reads of a regular file: chunk k is pread into its place by
 * whichever thread takes it. A read error or a file shorter than its fstat
 * size (shrunk since) is recorded: the lowest short offset is where the
 * bytes end. */
#define READ_CHUNK ((size_t)8 << 20)

typedef struct read_job {
    int fd;
    unsigned char *bytes;
    size_t size;
    _Atomic size_t end; /* the lowest offset a chunk stopped short at */
    _Atomic int err;    /* the first errno, or 0 */
} read_job;

static void read_chunks(void *ctx, int64_t begin, int64_t end) {
    read_job *j = ctx;
    for (int64_t k = begin; k < end; k++) {
        size_t off = (size_t)k * READ_CHUNK;
        size_t stop = j->size - off < READ_CHUNK ? j->size : off + READ_CHUNK;
        while (off < stop) {
            ssize_t got = pread(j->fd, j->bytes + off, stop - off, (off_t)off);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                int none = 0;
                if (got < 0)
                    atomic_compare_exchange_strong(&j->err, &none, errno);
                size_t cur = atomic_load(&j->end);
                while (off < cur &&
                       !atomic_compare_exchange_weak(&j->end, &cur, off)) {
                }
                break;
            }
            off += (size_t)got;
        }
    }
}

/* The file's bytes, read whole into a holder: from a regular file with one
 * read() per chunk into a buffer of its size (a large one in parallel on
 * *pool, the threads load_pool makes for it, which the caller frees), from
 * anything else (a pipe) growing the buffer. The bytes are
 * braid's own memory, not a mapping of the file: a file truncated or
 * rewritten after the load cannot fault the caller (SIGBUS) or change a
 * loaded plan behind the checksums' back. */
static braid_status read_file(const char *path, br_pool **pool, image **out,
                              size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return bg_set_last_error(BRAID_ERR_IO, "plan file %s: cannot open: %s",
                                 path, strerror(errno));
    struct stat st;
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                   (uint64_t)st.st_size < SIZE_MAX / 2;
    size_t cap = regular ? (size_t)st.st_size : (size_t)1 << 16, n = 0;
    image *im = image_new(cap);
    braid_status s = BRAID_OK;
    *pool = regular ? load_pool(cap) : NULL; /* kept for the CRCs */
    if (im && *pool) {
        read_job j = {.fd = fd, .bytes = im->bytes, .size = cap};
        atomic_init(&j.end, cap);
        atomic_init(&j.err, 0);
        br_parallel_for(*pool, (int64_t)((cap + READ_CHUNK - 1) / READ_CHUNK),
                        1, read_chunks, &j);
        n = atomic_load(&j.end);
        if (atomic_load(&j.err))
            s = bg_set_last_error(BRAID_ERR_IO, "plan file %s: cannot read: %s",
                                  path, strerror(atomic_load(&j.err)));
        cap = n; /* done: the loop below returns at once */
    }
    for (; s == BRAID_OK;) {
        if (!im) {
            s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                  "plan file %s: out of memory (%zu bytes)",
                                  path, cap);
            break;
        }
        if (n == cap) {
            if (regular) break; /* all of it (a file grown since is cut) */
            image *bigger = cap < SIZE_MAX / 4 ? image_new(2 * cap) : NULL;
            if (bigger) memcpy(bigger->bytes, im->bytes, n);
            bg_shared_unref(&im->sh);
            im = bigger;
            cap *= 2;
            continue;
        }
        size_t want = cap - n < ((size_t)1 << 30) ? cap - n : (size_t)1 << 30;
        ssize_t got = read(fd, im->bytes + n, want);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            s = bg_set_last_error(BRAID_ERR_IO,
                                  "plan file %s: cannot read: %s", path,
                                  strerror(errno));
            break;
        }
        if (got == 0) break; /* the end (shrunk since fstat: the header's
                                file_size check reports it) */
        n += (size_t)got;
    }
    close(fd);
    if (s != BRAID_OK) {
        if (im) bg_shared_unref(&im->sh);
        return s;
    }
    *out = im;
    *len = n;
    return BRAID_OK;
}

braid_status braid_plan_load(const char *path, const braid_load_options *opts,
                             braid_plan **plan) {
    if (plan) *plan = NULL;
    if (!path || !plan)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_load: %s is NULL",
                                 !path ? "path" : "plan");
    image *im = NULL;
    size_t len = 0;
    br_pool *pool = NULL; /* a large file's threads, for the CRCs too */
    braid_status s = read_file(path, &pool, &im, &len);
    if (s != BRAID_OK) {
        br_pool_free(pool);
        return s;
    }
    size_t plen = strlen(path) + 16;
    char *prefix = malloc(plen);
    if (!prefix) {
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "plan file %s: out of memory", path);
    } else {
        snprintf(prefix, plen, "plan file %s", path);
        s = load_and_place(im->bytes, len, opts, prefix, &im->sh, pool, plan);
        free(prefix);
    }
    bg_shared_unref(&im->sh); /* the plan's constants keep what they use */
    br_pool_free(pool);
    return s;
}
