/* runtime/planfile/planfile_common.c — what the plan-file writer and reader share:
 * CRC-32C, the write buffer, the bounds-checked read cursor, re-sealing. */
#include "runtime/planfile/planfile.h"

#include "runtime/runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *br_pf_op_name(braid_op op) {
    if (op == BP_INSTR_LOAD) return "load";
    if (op == BP_INSTR_CONST) return "const";
    if (op == BP_INSTR_GATHER) return "gather";
    if (op == BP_INSTR_STORE) return "store";
    return (unsigned)op < BRAID_OP_COUNT_ ? bg_op(op)->name : "?";
}

const char *br_pf_section_name(uint32_t type) {
    static const char *const names[] = {"?",          "META",    "GRAPH",
                                        "PLAN_GRAPH", "PLAN",    "MEMORY",
                                        "CONSTANTS",  "KERNELS", "TUNING"};
    return type < BR_PF_SECTION_COUNT_ ? names[type] : "?";
}

/* ---- CRC-32C -------------------------------------------------------------------
 * Two implementations of the same function: the SSE4.2 `crc32` instruction
 * (x86-64, chosen at run time when the CPU has it: ~9 GB/s here, so checking a
 * GPT-2-sized CONSTANTS section costs tens of milliseconds) and a portable
 * slicing-by-8 table walk (~1.8 GB/s) for other CPUs. Both compute CRC-32C
 * with the reflected polynomial 0x82F63B78; tests/test_planfile.c checks
 * that they agree.
 *
 * Portable path: table[0] is the classic byte-at-a-time table of the
 * reflected polynomial; table[k][b] is the CRC of byte b followed by k zero
 * bytes, so eight table lookups advance the CRC over eight input bytes at
 * once. */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++) {
            uint32_t prev = crc_table[k - 1][b];
            crc_table[k][b] = (prev >> 8) ^ crc_table[0][prev & 0xFF];
        }
}

/* a * b modulo the CRC polynomial, both reflected (bit 31 holds the
 * coefficient of x^0, bit 0 that of x^31). */
static uint32_t gf_mul(uint32_t a, uint32_t b) {
    uint32_t prod = 0;
    for (int k = 0; k < 32; k++) { /* b holds the input b times x^k */
        prod ^= b & (0u - ((a >> (31 - k)) & 1u));
        b = (b >> 1) ^ (0x82F63B78u & (0u - (b & 1u)));
    }
    return prod;
}

/* x^(8n) modulo the polynomial, by squaring: what a CRC register is
 * multiplied by when n more bytes pass through it (the register is linear
 * in its start value: R(r, B) = r * x^(8|B|) ^ R(0, B)). */
static uint32_t xpow8(uint64_t n) {
    uint32_t x = 1u << 30;                 /* x^1 */
    uint32_t pw = 1u << 31;                /* x^0 */
    for (uint64_t e = 8 * n; e; e >>= 1) { /* exponent bits from the lowest */
        if (e & 1) pw = gf_mul(pw, x);
        x = gf_mul(x, x);
    }
    return pw;
}

uint32_t br_pf_crc32c_sw(uint32_t crc, const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                           (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
            crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
            crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
            crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BR_PF_CRC_HW 1

/* ---- three streams at once
 * The crc32 instruction takes 3 cycles but can start one per cycle, so one
 * dependency chain runs at a third of its speed. Long buffers are cut into
 * rounds of three STRIPE-byte stripes whose CRC registers advance
 * independently, then are combined: the register after stripe A then B is
 * shift(A, |B|) ^ B, where shift(r, m) multiplies r by x^(8m) modulo the
 * polynomial (the register is linear in its start value). Registers here
 * are reflected: bit 31 holds the coefficient of x^0, bit 0 that of x^31. */

#define STRIPE 8192u

/* x^(8 * STRIPE) and x^(16 * STRIPE) modulo the polynomial. */
static uint32_t shift1, shift2;
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void shift_init(void) {
    shift1 = xpow8(STRIPE);
    shift2 = gf_mul(shift1, shift1);
}

/* The crc32 instruction: 8 bytes per step, unaligned loads through memcpy
 * (one mov), the tail a byte at a time. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_sse42(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t c = (uint32_t)~crc;
    if (n >= 3 * STRIPE) {
        pthread_once(&shift_once, shift_init);
        while (n >= 3 * STRIPE) {
            uint64_t a = c, b = 0, d = 0;
            const unsigned char *pa = p, *pb = p + STRIPE, *pd = p + 2 * STRIPE;
            for (size_t i = 0; i < STRIPE; i += 8) {
                uint64_t wa, wb, wd;
                memcpy(&wa, pa + i, 8);
                memcpy(&wb, pb + i, 8);
                memcpy(&wd, pd + i, 8);
                a = __builtin_ia32_crc32di(a, wa);
                b = __builtin_ia32_crc32di(b, wb);
                d = __builtin_ia32_crc32di(d, wd);
            }
            c = gf_mul((uint32_t)a, shift2) ^ gf_mul((uint32_t)b, shift1) ^
                (uint32_t)d;
            p += 3 * STRIPE;
            n -= 3 * STRIPE;
        }
    }
    while (n >= 32) { /* unrolled: the loop overhead, not the CRC, is what
                         costs at these speeds */
        uint64_t w[4];
        memcpy(w, p, sizeof w);
        c = __builtin_ia32_crc32di(c, w[0]);
        c = __builtin_ia32_crc32di(c, w[1]);
        c = __builtin_ia32_crc32di(c, w[2]);
        c = __builtin_ia32_crc32di(c, w[3]);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}

static bool crc_hw;
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

static void hw_init(void) {
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2") != 0;
}
#else
#define BR_PF_CRC_HW 0
#endif

bool br_pf_crc32c_hw_available(void) {
#if BR_PF_CRC_HW
    pthread_once(&hw_once, hw_init);
    return crc_hw;
#else
    return false;
#endif
}

uint32_t br_pf_crc32c_hw(uint32_t crc, const void *data, size_t n) {
#if BR_PF_CRC_HW
    if (br_pf_crc32c_hw_available()) return crc32c_sse42(crc, data, n);
#endif
    return br_pf_crc32c_sw(crc, data, n);
}

uint32_t br_pf_crc32c(uint32_t crc, const void *data, size_t n) {
    return br_pf_crc32c_hw(crc, data, n);
}

/* ---- CRC-32C on several threads
 * The buffer is cut into PAR_CHUNK-byte pieces whose registers R(0, piece)
 * are computed independently, then folded in order:
 * R(r, A B) = R(r, A) * x^(8|B|) ^ R(0, B). A GPT-2-sized CONSTANTS section
 * (623 MB) takes ~70 ms on one core at the crc32 instruction's speed. */

#define PAR_CHUNK ((size_t)4 << 20)

typedef struct crc_job {
    const unsigned char *p;
    size_t n;
    uint32_t *reg; /* per piece: R(0, piece) */
} crc_job;

static void crc_pieces(void *ctx, int64_t begin, int64_t end) {
    const crc_job *j = ctx;
    for (int64_t k = begin; k < end; k++) {
        size_t off = (size_t)k * PAR_CHUNK;
        size_t len = j->n - off < PAR_CHUNK ? j->n - off : PAR_CHUNK;
        /* R(0, D) = ~crc32c(~0, D): the function inverts on entry and exit */
        j->reg[k] = ~br_pf_crc32c(0xFFFFFFFFu, j->p + off, len);
    }
}

uint32_t br_pf_crc32c_pool(uint32_t crc, const void *data, size_t n,
                           br_pool *pool) {
    size_t pieces = (n + PAR_CHUNK - 1) / PAR_CHUNK;
    uint32_t *reg = pool && pieces > 1 ? malloc(pieces * sizeof *reg) : NULL;
    if (!reg) return br_pf_crc32c(crc, data, n);
    crc_job j = {data, n, reg};
    br_parallel_for(pool, (int64_t)pieces, 1, crc_pieces, &j);
    uint32_t full = xpow8(PAR_CHUNK), c = ~crc;
    for (size_t k = 0; k < pieces; k++) {
        size_t len =
            n - k * PAR_CHUNK < PAR_CHUNK ? n - k * PAR_CHUNK : PAR_CHUNK;
        c = gf_mul(c, len == PAR_CHUNK ? full : xpow8(len)) ^ reg[k];
    }
    free(reg);
    return ~c;
}

/* ---- the write buffer -------------------------------------------------------- */

void br_pf_put(br_pf_buf *b, const void *p, size_t n) {
    if (b->failed || n == 0) return;
    if (n > SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* Little-endian bytes of v, whatever the host order. */
static void le_bytes(unsigned char *out, uint64_t v, int n) {
    for (int i = 0; i < n; i++) out[i] = (unsigned char)(v >> (8 * i));
}

static void put_le(br_pf_buf *b, uint64_t v, int n) {
    unsigned char t[8];
    le_bytes(t, v, n);
    br_pf_put(b, t, (size_t)n);
}

void br_pf_u8(br_pf_buf *b, uint8_t v) { put_le(b, v, 1); }
void br_pf_u16(br_pf_buf *b, uint16_t v) { put_le(b, v, 2); }
void br_pf_u32(br_pf_buf *b, uint32_t v) { put_le(b, v, 4); }
void br_pf_u64(br_pf_buf *b, uint64_t v) { put_le(b, v, 8); }
void br_pf_i32(br_pf_buf *b, int32_t v) { put_le(b, (uint32_t)v, 4); }
void br_pf_i64(br_pf_buf *b, int64_t v) { put_le(b, (uint64_t)v, 8); }

void br_pf_f64(br_pf_buf *b, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(b, bits, 8);
}

void br_pf_str(br_pf_buf *b, const char *s) {
    if (!s) {
        br_pf_u32(b, BR_PF_ABSENT32);
        return;
    }
    size_t n = strlen(s);
    br_pf_u32(b, (uint32_t)n);
    br_pf_put(b, s, n);
}

void br_pf_patch_u32(br_pf_buf *b, size_t at, uint32_t v) {
    if (!b->failed && at + 4 <= b->len) le_bytes(b->data + at, v, 4);
}

void br_pf_patch_u64(br_pf_buf *b, size_t at, uint64_t v) {
    if (!b->failed && at + 8 <= b->len) le_bytes(b->data + at, v, 8);
}

/* ---- the read cursor ------------------------------------------------------------ */

braid_status br_pf_fail(br_pf_rd *r, const char *field, const char *fmt, ...) {
    if (r->status != BRAID_OK) return r->status;
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char where[160] = "";
    if (r->array && field)
        snprintf(where, sizeof where, "%s[%u].%s: ", r->array,
                 (unsigned)r->index, field);
    else if (r->array)
        snprintf(where, sizeof where, "%s[%u]: ", r->array,
                 (unsigned)r->index);
    else if (field)
        snprintf(where, sizeof where, "%s: ", field);
    r->status = bg_set_last_error(BRAID_ERR_PARSE, "%s: section %s, %s%s",
                                  r->prefix, r->section, where, what);
    return r->status;
}

static uint64_t get_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* n bytes at the cursor, or NULL with a truncation error. */
static const unsigned char *take(br_pf_rd *r, const char *field, uint64_t n) {
    if (r->status != BRAID_OK) return NULL;
    if (n > r->size - r->pos) {
        br_pf_fail(r, field,
                   "truncated: needs %llu bytes at offset %llu, the section "
                   "has %llu",
                   (unsigned long long)n, (unsigned long long)r->pos,
                   (unsigned long long)r->size);
        return NULL;
    }
    const unsigned char *p = r->p + r->pos;
    r->pos += n;
    return p;
}

bool br_pf_get_u8(br_pf_rd *r, const char *field, uint8_t *v) {
    const unsigned char *p = take(r, field, 1);
    if (p) *v = p[0];
    return p != NULL;
}

/* The reader refuses big-endian hosts before any section is read (see
 * read_header), so fields are plain copies here. */
bool br_pf_get_u32(br_pf_rd *r, const char *field, uint32_t *v) {
    const unsigned char *p = take(r, field, 4);
    if (p) memcpy(v, p, 4);
    return p != NULL;
}

bool br_pf_get_u64(br_pf_rd *r, const char *field, uint64_t *v) {
    const unsigned char *p = take(r, field, 8);
    if (p) memcpy(v, p, 8);
    return p != NULL;
}

bool br_pf_get_i32(br_pf_rd *r, const char *field, int32_t *v) {
    uint32_t u;
    if (!br_pf_get_u32(r, field, &u)) return false;
    *v = (int32_t)u; /* two's complement, implementation-defined but gcc/clang */
    return true;
}

bool br_pf_get_i64(br_pf_rd *r, const char *field, int64_t *v) {
    uint64_t u;
    if (!br_pf_get_u64(r, field, &u)) return false;
    *v = (int64_t)u;
    return true;
}

bool br_pf_get_f64(br_pf_rd *r, const char *field, double *v) {
    uint64_t u;
    if (!br_pf_get_u64(r, field, &u)) return false;
    memcpy(v, &u, sizeof *v);
    return true;
}

bool br_pf_get_bool(br_pf_rd *r, const char *field, bool *v) {
    uint8_t u;
    if (!br_pf_get_u8(r, field, &u)) return false;
    if (u > 1) {
        br_pf_fail(r, field, "%u is not a boolean (0 or 1)", (unsigned)u);
        return false;
    }
    *v = u == 1;
    return true;
}

bool br_pf_get_str(br_pf_rd *r, const char *field, bool optional, size_t max,
                   const char **s, uint32_t *len) {
    uint32_t n;
    *s = NULL;
    *len = 0;
    if (!br_pf_get_u32(r, field, &n)) return false;
    if (n == BR_PF_ABSENT32) {
        if (optional) return true;
        br_pf_fail(r, field, "missing (a string is required here)");
        return false;
    }
    if (n > max) {
        br_pf_fail(r, field, "string of %u bytes (at most %zu allowed)",
                   (unsigned)n, max);
        return false;
    }
    const unsigned char *p = take(r, field, n);
    if (!p) return false;
    if (memchr(p, 0, n)) {
        br_pf_fail(r, field, "string contains a NUL byte");
        return false;
    }
    *s = (const char *)p;
    *len = n;
    return true;
}

bool br_pf_get_op(br_pf_rd *r, const char *field, bool instr, braid_op *op) {
    const char *s;
    uint32_t n;
    if (!br_pf_get_str(r, field, false, 64, &s, &n)) return false;
    if (instr && n == 4 && memcmp(s, "load", 4) == 0) {
        *op = BP_INSTR_LOAD;
        return true;
    }
    if (instr && n == 5 && memcmp(s, "const", 5) == 0) {
        *op = BP_INSTR_CONST;
        return true;
    }
    /* the graph op gather is never an instruction: in a program the name
     * is the GATHER instruction's */
    if (instr && n == 6 && memcmp(s, "gather", 6) == 0) {
        *op = BP_INSTR_GATHER;
        return true;
    }
    /* nor is there a graph op store */
    if (instr && n == 5 && memcmp(s, "store", 5) == 0) {
        *op = BP_INSTR_STORE;
        return true;
    }
    braid_op o = bg_op_lookup(s, n);
    if (o == BRAID_OP_COUNT_) {
        br_pf_fail(r, field, "unknown op \"%.*s\" (written by a newer braid?)",
                   (int)n, s);
        return false;
    }
    *op = o;
    return true;
}

bool br_pf_get_dtype(br_pf_rd *r, const char *field, braid_dtype *t) {
    const char *s;
    uint32_t n;
    if (!br_pf_get_str(r, field, false, 16, &s, &n)) return false;
    braid_dtype d = bg_dtype_lookup(s, n);
    if (d == BRAID_DTYPE_COUNT_) {
        br_pf_fail(r, field, "unknown dtype \"%.*s\"", (int)n, s);
        return false;
    }
    *t = d;
    return true;
}

bool br_pf_get_count(br_pf_rd *r, const char *field, uint64_t min_record,
                     uint32_t *count) {
    if (!br_pf_get_u32(r, field, count)) return false;
    uint64_t left = br_pf_left(r);
    if (min_record && *count > left / min_record) {
        br_pf_fail(r, field,
                   "count %u needs at least %llu bytes, the section has %llu "
                   "left",
                   (unsigned)*count,
                   (unsigned long long)((uint64_t)*count * min_record),
                   (unsigned long long)left);
        return false;
    }
    return true;
}

bool br_pf_end(br_pf_rd *r) {
    if (r->status != BRAID_OK) return false;
    r->array = NULL;
    if (r->pos != r->size && !r->newer_minor) {
        br_pf_fail(r, NULL, "%llu unexpected bytes after the last field",
                   (unsigned long long)(r->size - r->pos));
        return false;
    }
    return true;
}

/* ---- re-sealing (tests, fuzzing) -------------------------------------------- */

void br_planfile_reseal(unsigned char *data, size_t size) {
    if (!data || size < BR_PF_HEADER_SIZE) return;
    uint64_t hsize = get_le(data + 16, 4), count = get_le(data + 20, 4);
    if (hsize < BR_PF_HEADER_SIZE || count > BR_PF_MAX_SECTIONS ||
        hsize > size || count * BR_PF_ENTRY_SIZE > size - hsize)
        return;
    unsigned char *table = data + hsize;
    for (uint64_t i = 0; i < count; i++) {
        unsigned char *e = table + i * BR_PF_ENTRY_SIZE;
        uint64_t off = get_le(e + 8, 8), n = get_le(e + 16, 8);
        if (off <= size && n <= size - off)
            le_bytes(e + 24, br_pf_crc32c(0, data + off, (size_t)n), 4);
    }
    uint32_t crc = br_pf_crc32c(0, data, 60);
    crc = br_pf_crc32c(crc, table, (size_t)(count * BR_PF_ENTRY_SIZE));
    le_bytes(data + 60, crc, 4);
}

bool br_planfile_was_replaced(const braid_plan *p) {
    return p && p->prov.loaded && !p->report.loaded;
}

static const braid_op init_ops[4] = {BRAID_OP_CONSTANT, BRAID_OP_FILL,
                                     BRAID_OP_RANDOM_UNIFORM,
                                     BRAID_OP_RANDOM_NORMAL};

uint32_t br_pf_init_code(braid_op init) {
    for (uint32_t i = 0; i < 4; i++)
        if (init_ops[i] == init) return i;
    return 4;
}

bool br_pf_init_op(uint32_t code, braid_op *init) {
    if (code >= 4) return false;
    *init = init_ops[code];
    return true;
}
