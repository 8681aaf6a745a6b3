/* runtime/planfile/planfile_read.h — state shared by the files of the plan-file
 * reader (planfile_read*.c); see docs/plan-format.md. */
#ifndef BRAID_RUNTIME_PLANFILE_READ_H
#define BRAID_RUNTIME_PLANFILE_READ_H

#include "runtime/planfile/planfile.h"

/* One section found in the table. */
typedef struct br_pf_sec {
    const unsigned char *p; /* its bytes inside the file */
    uint64_t size;          /* their count */
    bool present;           /* listed in the table */
} br_pf_sec;

/* What the reader knows while it rebuilds a plan. */
typedef struct br_pf_load {
    const char *prefix;     /* "plan file" or "plan file <path>" */
    uint64_t file_size;     /* bytes of the whole file */
    bool newer_minor;       /* the file's minor is newer than ours */
    uint32_t minor;         /* the file's minor version */
    br_pf_sec sec[BR_PF_SECTION_COUNT_]; /* by type */
    uint32_t nblobs;        /* CONSTANTS entries */
    const unsigned char **blob; /* per blob: its bytes in the file; owned */
    uint64_t *blob_size;    /* per blob: its size; owned */
    bg_shared *image;       /* holds the CONSTANTS section's bytes: the
                               graphs' constants borrow from it; one
                               reference owned by the load */
    char *name;             /* scratch for NUL-terminating strings; owned */
    uint32_t *ids;          /* scratch for a node's inputs; owned */
    uint32_t ids_cap;       /* entries allocated in ids */
    bp_plan *plan;          /* the plan being rebuilt; owned until done */
    br_pool *pool;          /* threads checking large sections, or NULL */
} br_pf_load;

/* A cursor over section type (present: checked by the caller). */
br_pf_rd br_pf_reader(const br_pf_load *L, uint32_t type);

/* Records an error in r's style (sets braid_last_error) without a cursor
 * field: "<prefix>: section S, <what>". */
braid_status br_pf_section_fail(const br_pf_load *L, uint32_t type,
                                braid_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A NUL-terminated copy of the n bytes at s, in L's scratch buffer. */
const char *br_pf_cstr(br_pf_load *L, const char *s, uint32_t n);

/* GRAPH → *out (a new graph), PLAN_GRAPH → L->plan->graph. */
braid_status br_pf_read_graph(br_pf_load *L, uint32_t type, braid_graph **out);
/* PLAN and MEMORY into L->plan (after both graphs). */
braid_status br_pf_read_plan(br_pf_load *L);
braid_status br_pf_read_memory(br_pf_load *L);

/* bytes of a node; UINT64_MAX when its shape breaks the size rule
 * (bg_shape_fits). */
uint64_t br_pf_node_bytes(braid_dtype t, int rank, const int64_t *dims);

/* "f32[2,3]" of a stored type into buf. */
const char *br_pf_type_str(braid_dtype t, int rank, const int64_t *dims,
                           char *buf, size_t size);

#endif /* BRAID_RUNTIME_PLANFILE_READ_H */
