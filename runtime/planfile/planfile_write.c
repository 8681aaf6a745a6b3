/* runtime/planfile/planfile_write.c — braid_plan_save[_memory]: a plan as a
 * plan file (docs/plan-format.md). The writer is deterministic: the same plan
 * gives the same bytes. */
#include "runtime/planfile/planfile.h"

#include "graph/outfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- constant blobs: identical bytes stored once ---------------------------- */

typedef struct blob {
    const void *data; /* the bytes (owned by a graph of the plan) */
    uint64_t size;    /* their count */
    uint32_t crc;     /* their CRC-32C, to compare cheaply first */
} blob;

typedef struct blobs {
    blob *b;     /* entries; owned */
    uint32_t n;  /* used */
    uint32_t cap; /* allocated */
} blobs;

/* Index of the blob with these bytes, added when new; NONE when out of
 * memory. */
static uint32_t blob_index(blobs *bs, const void *data, uint64_t size) {
    /* the same bytes (the two graphs of a plan share them): no CRC pass */
    for (uint32_t i = 0; i < bs->n; i++)
        if (bs->b[i].data == data && bs->b[i].size == size) return i;
    uint32_t crc = br_pf_crc32c(0, data, (size_t)size);
    for (uint32_t i = 0; i < bs->n; i++)
        if (bs->b[i].size == size && bs->b[i].crc == crc &&
            memcmp(bs->b[i].data, data, (size_t)size) == 0)
            return i;
    if (bs->n == bs->cap) {
        uint32_t cap = bs->cap ? 2 * bs->cap : 16;
        blob *nb = realloc(bs->b, cap * sizeof *nb);
        if (!nb) return BR_PF_NONE;
        bs->b = nb;
        bs->cap = cap;
    }
    bs->b[bs->n] = (blob){data, size, crc};
    return bs->n++;
}

/* The blob of node n (NONE when it has no bytes). */
static uint32_t node_blob(blobs *bs, const bg_node *n, bool *oom) {
    if ((n->op != BRAID_OP_CONSTANT && n->op != BRAID_OP_VARIABLE) ||
        !n->attr.data || bg_nbytes(n) == 0)
        return BR_PF_NONE;
    uint32_t i = blob_index(bs, n->attr.data, bg_nbytes(n));
    if (i == BR_PF_NONE) *oom = true;
    return i;
}

/* ---- sections ------------------------------------------------------------------ */

static void put_node(br_pf_buf *b, const bg_node *n, uint32_t blob) {
    br_pf_str(b, br_pf_op_name(n->op));
    br_pf_str(b, braid_dtype_name(n->dtype));
    br_pf_u32(b, n->rank);
    for (int i = 0; i < n->rank; i++) br_pf_i64(b, n->dims[i]);
    br_pf_u32(b, n->ninputs);
    for (uint32_t i = 0; i < n->ninputs; i++) br_pf_u32(b, n->inputs[i]);
    const bg_attrs *a = &n->attr;
    br_pf_f64(b, a->value[0]);
    br_pf_f64(b, a->value[1]);
    br_pf_u64(b, a->seed);
    br_pf_i32(b, a->axis);
    /* a variable's flags field holds its initializer (plan-format.md) */
    br_pf_u32(b, n->op == BRAID_OP_VARIABLE ? br_pf_init_code(a->init)
                                             : a->flags);
    br_pf_u32(b, a->axes);
    br_pf_put(b, a->perm, BRAID_MAX_RANK);
    for (int i = 0; i < BRAID_MAX_RANK; i++) br_pf_i64(b, a->start[i]);
    for (int i = 0; i < BRAID_MAX_RANK; i++) br_pf_i64(b, a->step[i]);
    br_pf_u32(b, blob);
    br_pf_str(b, n->name);
    br_pf_str(b, n->device);
}

static void put_graph(br_pf_buf *b, const braid_graph *g, blobs *bs,
                      bool *oom) {
    br_pf_u32(b, g->nnodes);
    br_pf_u32(b, g->noutputs);
    for (uint32_t i = 0; i < g->nnodes; i++)
        put_node(b, &g->nodes[i], node_blob(bs, &g->nodes[i], oom));
    for (uint32_t i = 0; i < g->noutputs; i++) {
        br_pf_str(b, g->outputs[i].name);
        br_pf_u32(b, g->outputs[i].node);
    }
}

static void put_meta(br_pf_buf *b, const bp_plan *p) {
    const braid_compile_options *o = &p->in.opts;
    br_pf_str(b, p->prov.braid_version);
    br_pf_i32(b, p->prov.nvrtc_version);
    br_pf_i64(b, p->prov.created);
    br_pf_str(b, o->devices);
    br_pf_i32(b, o->num_threads);
    br_pf_u32(b, o->disable_passes);
    br_pf_i32(b, o->max_streams);
    br_pf_i32(b, o->chunks);
    br_pf_u8(b, o->allow_tf32 ? 1 : 0);
    br_pf_str(b, o->archs);
    const braid_compile_report *r = &p->report;
    br_pf_u32(b, r->kernels);
    br_pf_u32(b, r->archs);
    br_pf_u32(b, r->modules_compiled);
    br_pf_u32(b, r->modules_cached);
    br_pf_f64(b, r->nvrtc_ms);
    br_pf_f64(b, r->kernels_ms);
}

/* Index of device d in p->devices (the plan checker guarantees it is
 * listed; NONE otherwise, which the reader refuses). */
static uint32_t device_index(const bp_plan *p, bp_device d) {
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        if (bp_device_equal(p->in.devs.devices[i], d)) return i;
    return BR_PF_NONE;
}

static void put_profile(br_pf_buf *b, const bp_device_profile *pr) {
    br_pf_u32(b, BRAID_DTYPE_COUNT_); /* by name: the dtype list may grow */
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++) {
        br_pf_str(b, braid_dtype_name((braid_dtype)t));
        br_pf_f64(b, pr->flops[t]);
    }
    br_pf_f64(b, pr->elementwise_flops);
    br_pf_f64(b, pr->mem_bytes_per_s);
    br_pf_f64(b, pr->h2d_bytes_per_s);
    br_pf_f64(b, pr->d2h_bytes_per_s);
    br_pf_f64(b, pr->launch_s);
}

static void put_program(br_pf_buf *b, const bp_program *pr) {
    br_pf_u32(b, (uint32_t)pr->kind);
    br_pf_u32(b, pr->rank);
    for (int i = 0; i < pr->rank; i++) br_pf_i64(b, pr->dims[i]);
    br_pf_u32(b, pr->axes);
    br_pf_u32(b, pr->flags);
    if (pr->kind == BP_PROGRAM_POOL || pr->kind == BP_PROGRAM_CONV)
        for (int q = 0; q < 5; q++)
            for (int i = 0; i < 3; i++) br_pf_i64(b, pr->window[q][i]);
    br_pf_u32(b, pr->ninstr);
    for (uint32_t k = 0; k < pr->ninstr; k++) {
        const bp_instr *in = &pr->instr[k];
        br_pf_str(b, br_pf_op_name(in->op));
        br_pf_str(b, braid_dtype_name(in->dtype));
        for (int j = 0; j < 3; j++) br_pf_u32(b, in->arg[j]);
        br_pf_u32(b, in->input);
        br_pf_f64(b, in->value);
        br_pf_u32(b, in->source);
        if (in->op == BP_INSTR_GATHER) br_pf_u32(b, in->axis);
    }
}

static void put_io(br_pf_buf *b, const bp_io *io, uint32_t n) {
    br_pf_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        br_pf_str(b, io[i].name);
        br_pf_u32(b, io[i].node);
        br_pf_u64(b, io[i].bytes);
    }
}

static void put_plan(br_pf_buf *b, const bp_plan *p) {
    br_pf_u32(b, p->in.devs.ndevices);
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++) {
        br_pf_u32(b, (uint32_t)p->in.devs.devices[i].kind);
        br_pf_i32(b, p->in.devs.devices[i].index);
    }
    br_pf_u32(b, p->in.settings.disabled);
    br_pf_u32(b, p->in.settings.max_streams);
    br_pf_u32(b, p->in.settings.chunks);
    for (uint32_t i = 0; i < p->in.devs.ndevices; i++)
        put_profile(b, &p->in.devs.profile[i]);
    br_pf_u32(b, p->res.ninfo);
    for (uint32_t i = 0; i < p->res.ninfo; i++) {
        const bp_node_info *in = &p->res.info[i];
        br_pf_u32(b, device_index(p, in->device));
        br_pf_u32(b, in->queue);
        br_pf_u32(b, in->program);
        br_pf_u32(b, in->order);
        br_pf_u32(b, in->origin);
        br_pf_u8(b, in->chunk ? 1 : 0);
        br_pf_u8(b, in->noop ? 1 : 0);
    }
    br_pf_u32(b, p->res.nschedule);
    for (uint32_t i = 0; i < p->res.nschedule; i++)
        br_pf_u32(b, p->res.schedule[i]);
    br_pf_u32(b, p->res.nqueues);
    for (uint32_t i = 0; i < p->res.nqueues; i++) {
        br_pf_u32(b, (uint32_t)p->res.queues[i].kind);
        br_pf_u32(b, device_index(p, p->res.queues[i].device));
        br_pf_u32(b, p->res.queues[i].index);
    }
    br_pf_u32(b, p->res.nevents);
    for (uint32_t i = 0; i < p->res.nevents; i++) {
        br_pf_u32(b, p->res.events[i].after);
        br_pf_u32(b, p->res.events[i].before);
        br_pf_u8(b, p->res.events[i].reuse ? 1 : 0);
    }
    br_pf_u32(b, p->res.nprograms);
    for (uint32_t i = 0; i < p->res.nprograms; i++)
        put_program(b, &p->res.programs[i]);
    put_io(b, p->res.inputs, p->res.ninputs);
    put_io(b, p->res.outputs, p->res.noutputs);
}

static void put_memory(br_pf_buf *b, const bp_plan *p) {
    br_pf_u32(b, p->res.narenas);
    for (uint32_t i = 0; i < p->res.narenas; i++) {
        const bp_arena *a = &p->res.arenas[i];
        br_pf_u32(b, (uint32_t)a->kind);
        br_pf_u32(b, device_index(p, a->device));
        br_pf_u64(b, a->bytes);
        br_pf_u64(b, a->lower_bound);
    }
    br_pf_u32(b, p->res.ninfo);
    for (uint32_t i = 0; i < p->res.ninfo; i++) {
        const bp_tensor_place *pl = &p->res.info[i].place;
        br_pf_u32(b, (uint32_t)pl->storage);
        br_pf_u32(b, pl->arena);
        br_pf_u32(b, pl->base);
        br_pf_u64(b, pl->offset);
        br_pf_u64(b, pl->bytes);
    }
    br_pf_u32(b, p->res.nlayouts); /* since 1.1 */
    for (uint32_t k = 0; k < p->res.nlayouts; k++) {
        const bp_layout *l = &p->res.layouts[k];
        br_pf_u32(b, l->node);
        for (int a = 0; a < p->res.graph->nodes[l->node].rank; a++)
            br_pf_i64(b, l->stride[a]);
    }
}

/* The CONSTANTS section's head (count and blob table) into b; the blobs'
 * bytes are not copied into any buffer: the file's pieces point at them
 * (below). Returns the section's size. */
static uint64_t put_constants_head(br_pf_buf *b, const blobs *bs) {
    br_pf_u32(b, bs->n);
    br_pf_u32(b, 0);
    uint64_t at = 8 + 16 * (uint64_t)bs->n;
    for (uint32_t i = 0; i < bs->n; i++) {
        at = (at + BR_PF_ALIGN - 1) / BR_PF_ALIGN * BR_PF_ALIGN;
        br_pf_u64(b, at);
        br_pf_u64(b, bs->b[i].size);
        at += bs->b[i].size;
    }
    return at;
}

static void put_kernels(br_pf_buf *b, const bp_kernels *k) {
    if (k->source) {
        br_pf_u64(b, k->source_len);
        br_pf_put(b, k->source, k->source_len);
    } else {
        br_pf_u64(b, BR_PF_ABSENT64);
    }
    br_pf_u32(b, k->nkernels);
    br_pf_u32(b, k->nbin);
    for (uint32_t i = 0; i < k->nbin; i++) {
        const bp_kernel_binary *kb = &k->bin[i];
        br_pf_i32(b, kb->sm);
        uint64_t cs = kb->cubin ? kb->cubin_size : 0;
        br_pf_u64(b, cs);
        br_pf_put(b, kb->cubin, (size_t)cs);
        uint64_t ps = kb->ptx ? kb->ptx_size : 0;
        br_pf_u64(b, ps);
        br_pf_put(b, kb->ptx, (size_t)ps);
    }
}

/* ---- the container ----------------------------------------------------------------
 * The file is a list of pieces: the header and table, each section's bytes
 * (buffers the writer filled), zero padding, and the constants' bytes where
 * the plan's graphs hold them. Writing a file writes the pieces in order;
 * saving to memory copies them once into a buffer of the file's exact size.
 * So GPT-2 small's 622 MB of weights are read twice (a CRC to find equal
 * constants, the section CRC) and written once, never gathered into an
 * intermediate buffer. */

/* The seven required sections, and TUNING when the plan has records. */
#define NSECTIONS 8

typedef struct piece {
    const void *p; /* bytes, or NULL for n zero bytes */
    size_t n;
} piece;

typedef struct pieces {
    piece *v;     /* owned */
    size_t n, cap;
    uint64_t len; /* bytes so far */
    bool failed;  /* out of memory */
} pieces;

static void add(pieces *l, const void *p, size_t n) {
    if (l->failed || n == 0) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        piece *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (piece){p, n};
    l->len += n;
}

/* Zero bytes up to a multiple of BR_PF_ALIGN. */
static void add_pad(pieces *l) {
    uint64_t r = l->len % BR_PF_ALIGN;
    if (r) add(l, NULL, (size_t)(BR_PF_ALIGN - r));
}

static const unsigned char zeros[BR_PF_ALIGN];

/* CRC of the CONSTANTS section: its head, then each blob after its
 * padding, as add_constants lays them out. */
static uint32_t constants_crc(const br_pf_buf *head, const blobs *bs) {
    uint32_t crc = br_pf_crc32c(0, head->data, head->len);
    uint64_t at = head->len;
    for (uint32_t i = 0; i < bs->n; i++) {
        uint64_t r = at % BR_PF_ALIGN;
        if (r) crc = br_pf_crc32c(crc, zeros, (size_t)(BR_PF_ALIGN - r));
        at = (at + BR_PF_ALIGN - 1) / BR_PF_ALIGN * BR_PF_ALIGN;
        crc = br_pf_crc32c(crc, bs->b[i].data, (size_t)bs->b[i].size);
        at += bs->b[i].size;
    }
    return crc;
}

static void add_constants(pieces *l, const br_pf_buf *head, const blobs *bs) {
    add(l, head->data, head->len);
    for (uint32_t i = 0; i < bs->n; i++) {
        add_pad(l); /* the section starts aligned, so offsets match */
        add(l, bs->b[i].data, (size_t)bs->b[i].size);
    }
}

/* Header and table into out: nsec sections of the types, sizes and CRCs
 * given, every one required but TUNING. */
static void put_header(br_pf_buf *out, int nsec, const uint32_t *types,
                       const uint64_t *size, const uint32_t *crc) {
    static const char magic[] = BR_PLANFILE_MAGIC;
    br_pf_put(out, magic, BR_PLANFILE_MAGIC_LEN);
    br_pf_u16(out, BR_PF_MAJOR);
    br_pf_u16(out, BR_PF_MINOR);
    br_pf_u32(out, BR_PF_BYTE_ORDER);
    br_pf_u32(out, BR_PF_HEADER_SIZE);
    br_pf_u32(out, (uint32_t)nsec);
    br_pf_u64(out, 0); /* file size, patched below */
    br_pf_u32(out, 0); /* flags */
    br_pf_put(out, zeros, 28); /* reserved, then the CRC patched below */
    uint64_t at = BR_PF_HEADER_SIZE + (uint64_t)nsec * BR_PF_ENTRY_SIZE;
    for (int i = 0; i < nsec; i++) {
        at = (at + BR_PF_ALIGN - 1) / BR_PF_ALIGN * BR_PF_ALIGN;
        br_pf_u32(out, types[i]);
        br_pf_u32(out, types[i] == BR_PF_TUNING ? 0 : BR_PF_REQUIRED);
        br_pf_u64(out, at);
        br_pf_u64(out, size[i]);
        br_pf_u32(out, crc[i]);
        br_pf_u32(out, 0);
        at += size[i];
    }
    br_pf_patch_u64(out, 24, at);
    if (!out->failed) {
        uint32_t c = br_pf_crc32c(0, out->data, 60);
        c = br_pf_crc32c(c, out->data + BR_PF_HEADER_SIZE,
                         (size_t)nsec * BR_PF_ENTRY_SIZE);
        br_pf_patch_u32(out, 60, c);
    }
}

/* What a plan file is made of while it is written; freed by
 * file_free. */
typedef struct file {
    br_pf_buf sec[NSECTIONS]; /* section bytes (CONSTANTS: its head) */
    br_pf_buf head;           /* header and table */
    blobs bs;                 /* the constants' bytes, borrowed */
    pieces l;                 /* the file in order */
} file;

static void file_free(file *f) {
    for (int i = 0; i < NSECTIONS; i++) free(f->sec[i].data);
    free(f->head.data);
    free(f->bs.b);
    free(f->l.v);
}

/* TUNING: the plan's records, sorted (docs/plan-format.md). False when
 * out of memory. */
static bool put_tuning(br_pf_buf *b, const bp_plan *p, uint32_t *n) {
    bp_conv_choice *c;
    if (!bp_tuning_snapshot(p, &c, n)) return false;
    br_pf_u32(b, *n);
    for (uint32_t i = 0; i < *n; i++) {
        br_pf_u32(b, c[i].node);
        br_pf_str(b, c[i].device);
        br_pf_i32(b, c[i].cc);
        br_pf_i32(b, c[i].cudnn);
        br_pf_i32(b, c[i].algo);
        br_pf_i32(b, c[i].math);
        br_pf_u64(b, c[i].workspace);
    }
    free(c);
    return true;
}

static braid_status file_build(const bp_plan *p, file *f) {
    static const uint32_t types[NSECTIONS] = {
        BR_PF_META,   BR_PF_GRAPH,     BR_PF_PLAN_GRAPH, BR_PF_PLAN,
        BR_PF_MEMORY, BR_PF_CONSTANTS, BR_PF_KERNELS,    BR_PF_TUNING};
    enum { CONSTANTS = 5, TUNING = 7 };
    memset(f, 0, sizeof *f);
    bool oom = false;
    uint32_t nrec = 0;
    oom |= !put_tuning(&f->sec[TUNING], p, &nrec);
    int nsec = nrec > 0 ? NSECTIONS : NSECTIONS - 1;
    put_meta(&f->sec[0], p);
    put_graph(&f->sec[1], p->prov.source, &f->bs, &oom);
    put_graph(&f->sec[2], p->res.graph, &f->bs, &oom);
    put_plan(&f->sec[3], p);
    put_memory(&f->sec[4], p);
    uint64_t csize = put_constants_head(&f->sec[CONSTANTS], &f->bs);
    put_kernels(&f->sec[6], &p->kernels);
    uint64_t size[NSECTIONS];
    uint32_t crc[NSECTIONS];
    for (int i = 0; i < nsec; i++) {
        oom |= f->sec[i].failed;
        size[i] = i == CONSTANTS ? csize : f->sec[i].len;
        crc[i] = i == CONSTANTS
                     ? constants_crc(&f->sec[i], &f->bs)
                     : br_pf_crc32c(0, f->sec[i].data, f->sec[i].len);
    }
    put_header(&f->head, nsec, types, size, crc);
    add(&f->l, f->head.data, f->head.len);
    for (int i = 0; i < nsec; i++) {
        add_pad(&f->l);
        if (i == CONSTANTS)
            add_constants(&f->l, &f->sec[i], &f->bs);
        else
            add(&f->l, f->sec[i].data, f->sec[i].len);
    }
    if (oom || f->head.failed || f->l.failed || f->l.len > SIZE_MAX / 2)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_plan_save: out of memory");
    return BRAID_OK;
}

braid_status br_pf_write(const bp_plan *p, unsigned char **out, size_t *size) {
    file f;
    braid_status s = file_build(p, &f);
    unsigned char *d = NULL;
    if (s == BRAID_OK && !(d = malloc(f.l.len ? (size_t)f.l.len : 1)))
        s = bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                              "braid_plan_save: out of memory (%llu bytes)",
                              (unsigned long long)f.l.len);
    if (s == BRAID_OK) {
        size_t at = 0;
        for (size_t i = 0; i < f.l.n; i++) {
            if (f.l.v[i].p)
                memcpy(d + at, f.l.v[i].p, f.l.v[i].n);
            else
                memset(d + at, 0, f.l.v[i].n);
            at += f.l.v[i].n;
        }
        *out = d;
        *size = at;
    }
    file_free(&f);
    return s;
}

/* The saver's own sanity checks: a plan that went through braid_compile
 * or braid_plan_load. */
static braid_status check_plan(const braid_plan *p, const char *fn) {
    if (!p)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: plan is NULL",
                                 fn);
    if (!p->res.graph || !p->prov.source || !p->res.schedule ||
        !p->res.queues || p->res.ninfo != p->res.graph->nnodes)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "%s: the plan is not a compiled plan", fn);
    return BRAID_OK;
}

braid_status braid_plan_save_memory(const braid_plan *p, void **data,
                                    size_t *size) {
    if (!data || !size)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_save_memory: %s is NULL",
                                 !data ? "data" : "size");
    *data = NULL;
    *size = 0;
    braid_status s = check_plan(p, "braid_plan_save_memory");
    if (s != BRAID_OK) return s;
    unsigned char *bytes;
    s = br_pf_write(p, &bytes, size);
    if (s == BRAID_OK) *data = bytes;
    return s;
}

braid_status braid_plan_save(const braid_plan *p, const char *path) {
    if (!path || !*path)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_plan_save: path is %s",
                                 path ? "empty" : "NULL");
    braid_status s = check_plan(p, "braid_plan_save");
    if (s != BRAID_OK) return s;
    file f;
    if ((s = file_build(p, &f)) != BRAID_OK) {
        file_free(&f);
        return s;
    }
    bg_outfile o;
    if ((s = bg_outfile_open(&o, path, "braid_plan_save", 0)) == BRAID_OK) {
        for (size_t i = 0; i < f.l.n; i++) /* straight from the graphs */
            bg_outfile_write(&o, f.l.v[i].p ? f.l.v[i].p : zeros,
                             f.l.v[i].n);
        s = bg_outfile_commit(&o, "braid_plan_save");
    }
    file_free(&f);
    return s;
}
