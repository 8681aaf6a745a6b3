/* codegen/text.c — the text buffer, C types of dtypes, literals and the
 * index arithmetic (flat index → operand offset) every emitter shares. */
#include "codegen/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffer ------------------------------------------------------------
 */

static bool reserve(bc_buf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void bc_buf_puts(bc_buf *b, const char *s) {
    size_t n = strlen(s);
    if (!reserve(b, n)) return;
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

void bc_buf_printf(bc_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        bc_buf_puts(b, small);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void bc_buf_free(bc_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- types ------------------------------------------------------------------
 */

const char *bc_ctype(braid_dtype t) {
    switch (t) {
    case BRAID_F64:
        return "double";
    case BRAID_I32:
        return "int";
    case BRAID_I64:
        return "long long";
    case BRAID_BOOL:
        return "bool";
    default:
        return "float";
    }
}

const char *bc_stype(braid_dtype t) {
    switch (t) {
    case BRAID_F16:
    case BRAID_BF16:
        return "unsigned short";
    case BRAID_F64:
        return "double";
    case BRAID_I32:
        return "int";
    case BRAID_I64:
        return "long long";
    case BRAID_BOOL:
        return "unsigned char";
    default:
        return "float";
    }
}

/* printf format turning storage expression %s of dtype t into its
 * compute type. */
static const char *from_storage_format(braid_dtype t) {
    switch (t) {
    case BRAID_F16: return "bc_h2f(%s)";
    case BRAID_BF16: return "bc_b2f(%s)";
    case BRAID_BOOL: return "(%s != 0)";
    default: return "%s";
    }
}

void bc_emit_from_storage(bc_buf *b, braid_dtype t, const char *e) {
    bc_buf_printf(b, from_storage_format(t), e);
}

void bc_from_storage_str(braid_dtype t, const char *e, char *out,
                         size_t size) {
    snprintf(out, size, from_storage_format(t), e);
}

void bc_emit_to_storage(bc_buf *b, braid_dtype t, const char *e) {
    switch (t) {
    case BRAID_F16:
        bc_buf_printf(b, "bc_f2h(%s)", e);
        return;
    case BRAID_BF16:
        bc_buf_printf(b, "bc_f2b(%s)", e);
        return;
    case BRAID_BOOL:
        bc_buf_printf(b, "(unsigned char)((%s) ? 1 : 0)", e);
        return;
    default:
        bc_buf_printf(b, "%s", e);
        return;
    }
}

/* Floats as bit patterns: exact, and NaN / inf / -0 need no spelling. The
 * value is already rounded to t (bp_instr.value, attributes rounded by the
 * caller); f16 / bf16 are computed in float, so their value is the f32
 * holding them. */
void bc_emit_literal(bc_buf *b, braid_dtype t, double v) {
    switch (t) {
    case BRAID_F64: {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        bc_buf_printf(b, "__longlong_as_double(0x%016llxLL)",
                      (unsigned long long)u);
        return;
    }
    case BRAID_I32: {
        int32_t x = v != v               ? 0
                    : v >= 2147483647.0  ? INT32_MAX
                    : v <= -2147483648.0 ? INT32_MIN
                                         : (int32_t)v;
        bc_buf_printf(b, "(int)0x%08xu", (unsigned)(uint32_t)x);
        return;
    }
    case BRAID_I64: { /* saturated as bg_store does */
        int64_t x;
        bg_store(BRAID_I64, &x, 0, v);
        bc_buf_printf(b, "(long long)0x%016llxULL",
                      (unsigned long long)(uint64_t)x);
        return;
    }
    case BRAID_BOOL:
        bc_buf_puts(b, v != 0 ? "true" : "false");
        return;
    default: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        bc_buf_printf(b, "__int_as_float(0x%08x)", (unsigned)u);
        return;
    }
    }
}

/* ---- index arithmetic
 * ----------------------------------------------------------- */

void bc_broadcast_strides(int rank, const int64_t *dims, int irank,
                          const int64_t *idims, int64_t *strides) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int j = d - (rank - irank);
        if (j < 0 || idims[j] == 1) {
            strides[d] = 0;
        } else {
            strides[d] = s;
            s *= idims[j];
        }
    }
    (void)dims;
}

/* From the innermost dim outwards: a dim of size 1 changes nothing; a dim
 * the operand does not step along (stride 0) ends the current run; a dim
 * the operand steps along extends the last term when that term is the
 * dim just inside and the operand is contiguous across both. */
int bc_terms(int rank, const int64_t *dims, const int64_t *strides,
             bc_term *out) {
    int n = 0;
    int64_t div = 1;
    bool adjacent = false; /* last term ends at the dim just inside */
    for (int d = rank - 1; d >= 0; d--) {
        if (dims[d] == 1) continue;
        if (strides[d] == 0) {
            adjacent = false;
        } else if (adjacent &&
                   strides[d] == out[n - 1].stride * out[n - 1].mod) {
            out[n - 1].mod *= dims[d];
        } else {
            out[n++] = (bc_term){div, dims[d], strides[d]};
            adjacent = true;
        }
        div *= dims[d];
    }
    /* The outermost term's quotient is already below its extent. */
    if (n > 0 && out[n - 1].div * out[n - 1].mod == div) out[n - 1].mod = 0;
    return n;
}

void bc_emit_terms(bc_buf *b, const bc_term *t, int n, const char *ix,
                   const char *idx_type) {
    if (n == 0) {
        bc_buf_puts(b, "0");
        return;
    }
    bc_buf_puts(b, "(");
    for (int k = 0; k < n; k++) {
        if (k) bc_buf_puts(b, " + ");
        bc_buf_puts(b, "(");
        if (t[k].div > 1 && t[k].mod)
            bc_buf_printf(b, "(%s / (%s)%lld) %% (%s)%lld", ix, idx_type,
                          (long long)t[k].div, idx_type, (long long)t[k].mod);
        else if (t[k].div > 1)
            bc_buf_printf(b, "%s / (%s)%lld", ix, idx_type,
                          (long long)t[k].div);
        else if (t[k].mod)
            bc_buf_printf(b, "%s %% (%s)%lld", ix, idx_type,
                          (long long)t[k].mod);
        else
            bc_buf_printf(b, "%s", ix);
        bc_buf_puts(b, ")");
        if (t[k].stride != 1)
            bc_buf_printf(b, " * (%s)%lld", idx_type, (long long)t[k].stride);
    }
    bc_buf_puts(b, ")");
}
