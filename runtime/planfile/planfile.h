/* runtime/planfile/planfile.h — plan files (docs/plan-format.md), internal (br_pf_).
 *
 * The writer (planfile_write.c) serialises a compiled plan into the
 * versioned, checksummed container the spec describes; the reader
 * (planfile_read*.c) validates every field of such a container before it
 * uses it and rebuilds the plan. This header holds what both share: the
 * layout constants, the CRC, a growable byte buffer for writing and a
 * bounds-checked cursor for reading. */
#ifndef BRAID_RUNTIME_PLANFILE_H
#define BRAID_RUNTIME_PLANFILE_H

#include "passes/plan.h"
#include "runtime/runtime.h"

/* The first 8 bytes of every plan file (the CLI detects plan files by them). */
#define BR_PLANFILE_MAGIC "BRAIDPLN"
#define BR_PLANFILE_MAGIC_LEN 8

#define BR_PF_MAJOR 1
#define BR_PF_MINOR                                                            \
    2 /* 1.1: MEMORY ends with the strided views' layouts;                     \
         1.2: the optional TUNING section */
#define BR_PF_BYTE_ORDER 0x01020304u
#define BR_PF_HEADER_SIZE 64u
#define BR_PF_ENTRY_SIZE 32u
#define BR_PF_ALIGN 64u
#define BR_PF_MAX_SECTIONS 64u
#define BR_PF_NONE UINT32_MAX            /* BG_NONE in the file */
#define BR_PF_ABSENT32 UINT32_MAX        /* optional str: absent */
#define BR_PF_ABSENT64 UINT64_MAX        /* optional text: absent */
#define BR_PF_MAX_STRING 65536u          /* names, hints, option strings */
#define BR_PF_REQUIRED 1u                /* section flag bit 0 */

/* Section types, in the order the writer emits them. */
typedef enum br_pf_section {
    BR_PF_META = 1,
    BR_PF_GRAPH = 2,
    BR_PF_PLAN_GRAPH = 3,
    BR_PF_PLAN = 4,
    BR_PF_MEMORY = 5,
    BR_PF_CONSTANTS = 6,
    BR_PF_KERNELS = 7,
    BR_PF_TUNING = 8,        /* optional: executors' conv choices (bp_tuning) */
    BR_PF_SECTION_COUNT_ = 9 /* one past the last known type */
} br_pf_section;

/* "META", "GRAPH", ... ; "?" for unknown types. */
const char *br_pf_section_name(uint32_t type);
/* Ops and dtypes are stored by name, not by enum value, so a file stays
 * readable by a braid whose op or dtype lists have grown. The name of op
 * (a graph op's text name, "load" / "const" for program instructions). */
const char *br_pf_op_name(braid_op op);
/* A variable's initializer as stored in its node record's flags field:
 * 0 constant (its blob), 1 fill, 2 random_uniform, 3 random_normal
 * (docs/plan-format.md); br_pf_init_op is false for another code. */
uint32_t br_pf_init_code(braid_op init);
bool br_pf_init_op(uint32_t code, braid_op *init);

/* CRC-32C (Castagnoli, reflected 0x82F63B78) of n bytes, continuing from
 * crc (start with 0). */
uint32_t br_pf_crc32c(uint32_t crc, const void *data, size_t n);
/* The two implementations br_pf_crc32c chooses between (tests compare
 * them): the portable table walk, and the SSE4.2 crc32 instruction, which
 * is br_pf_crc32c_sw where br_pf_crc32c_hw_available() is false. */
uint32_t br_pf_crc32c_sw(uint32_t crc, const void *data, size_t n);
uint32_t br_pf_crc32c_hw(uint32_t crc, const void *data, size_t n);
bool br_pf_crc32c_hw_available(void);
/* br_pf_crc32c over n bytes split among pool's threads (the same value;
 * one thread when pool is NULL or n is small). */
uint32_t br_pf_crc32c_pool(uint32_t crc, const void *data, size_t n,
                           br_pool *pool);

/* ---- writing ------------------------------------------------------------ */

/* A growable byte buffer; `failed` is sticky (out of memory). */
typedef struct br_pf_buf {
    unsigned char *data; /* bytes written; owned (malloc) */
    size_t len;          /* bytes used */
    size_t cap;          /* bytes allocated */
    bool failed;         /* an allocation failed: the content is garbage */
} br_pf_buf;

void br_pf_put(br_pf_buf *b, const void *p, size_t n);
void br_pf_u8(br_pf_buf *b, uint8_t v);
void br_pf_u16(br_pf_buf *b, uint16_t v);
void br_pf_u32(br_pf_buf *b, uint32_t v);
void br_pf_u64(br_pf_buf *b, uint64_t v);
void br_pf_i32(br_pf_buf *b, int32_t v);
void br_pf_i64(br_pf_buf *b, int64_t v);
void br_pf_f64(br_pf_buf *b, double v);
/* str: u32 length + bytes; NULL writes the absent marker. */
void br_pf_str(br_pf_buf *b, const char *s);

/* Patches a little-endian u32/u64 at offset at (already written). */
void br_pf_patch_u32(br_pf_buf *b, size_t at, uint32_t v);
void br_pf_patch_u64(br_pf_buf *b, size_t at, uint64_t v);

/* The whole file for p, in a malloc'd buffer (*out, *size). */
braid_status br_pf_write(const bp_plan *p, unsigned char **out, size_t *size);

/* ---- reading ------------------------------------------------------------- */

/* A cursor over one section. Errors are formatted only when they happen,
 * from the context the caller keeps up to date (array name and index). */
typedef struct br_pf_rd {
    const unsigned char *p; /* section start */
    uint64_t size;          /* section bytes */
    uint64_t pos;           /* next byte to read */
    const char *section;    /* "PLAN", ... for messages */
    const char *prefix;     /* "plan file" or "plan file <path>" */
    const char *array;      /* current record array ("events"), or NULL */
    uint32_t index;         /* current record index */
    bool newer_minor;       /* trailing bytes allowed (file minor > ours) */
    braid_status status;    /* first error, BRAID_OK while none */
} br_pf_rd;

/* Records the first error ("<prefix>: section S, array[i].field: ...");
 * field may be NULL. Returns the status. */
braid_status br_pf_fail(br_pf_rd *r, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Readers: false (error recorded, naming field) when the bytes are not
 * there. */
bool br_pf_get_u8(br_pf_rd *r, const char *field, uint8_t *v);
bool br_pf_get_u32(br_pf_rd *r, const char *field, uint32_t *v);
bool br_pf_get_u64(br_pf_rd *r, const char *field, uint64_t *v);
bool br_pf_get_i32(br_pf_rd *r, const char *field, int32_t *v);
bool br_pf_get_i64(br_pf_rd *r, const char *field, int64_t *v);
bool br_pf_get_f64(br_pf_rd *r, const char *field, double *v);
/* A bool stored as u8 0 or 1. */
bool br_pf_get_bool(br_pf_rd *r, const char *field, bool *v);
/* A str: *s points into the section (not NUL-terminated), *len its length;
 * *s NULL when absent (only if optional). NUL-free, ≤ max bytes. */
bool br_pf_get_str(br_pf_rd *r, const char *field, bool optional, size_t max,
                   const char **s, uint32_t *len);
/* An op stored by name: a graph op, or with instr also "load" / "const".
 * An unknown name fails naming it (a newer braid's op, or corruption). */
bool br_pf_get_op(br_pf_rd *r, const char *field, bool instr, braid_op *op);
/* A dtype stored by name ("f32"). */
bool br_pf_get_dtype(br_pf_rd *r, const char *field, braid_dtype *t);
/* A record count: count × min_record bytes must fit in what is left. */
bool br_pf_get_count(br_pf_rd *r, const char *field, uint64_t min_record,
                     uint32_t *count);
/* Bytes left in the section. */
static inline uint64_t br_pf_left(const br_pf_rd *r) {
    return r->size - r->pos;
}
/* At the end of a section: no trailing bytes unless the minor is newer. */
bool br_pf_end(br_pf_rd *r);

/* Loads without the device check (tests and the fuzzer load GPU plans on
 * machines without a GPU); braid_plan_load_memory is this plus the
 * placement step of docs/plan-format.md. prefix names the source in
 * messages. */
braid_status br_planfile_load(const void *data, size_t size,
                              const braid_load_options *opts,
                              const char *prefix, braid_plan **plan);

/* Recomputes every section's CRC and the header CRC of a plan file in
 * place, as far as its header and table can be read (tests and the fuzzer
 * mutate a file, then re-seal it so that field validation is exercised
 * rather than the checksums). Does nothing where the layout is unreadable. */
void br_planfile_reseal(unsigned char *data, size_t size);

/* True when p came from braid_plan_load with cpu_fallback and was compiled
 * again for the cpu (meta.loaded set, report.loaded false) instead of being
 * the file's plan. */
bool br_planfile_was_replaced(const braid_plan *p);

#endif /* BRAID_RUNTIME_PLANFILE_H */
