/* graph/text_num.c — numbers and base64 for the .graph text format.
 *
 * The C library does the hard part (correctly rounded strtod/strtof and
 * printf), but it follows LC_NUMERIC; these wrappers make the format
 * independent of the locale and strict about syntax (no hex floats, no
 * "infinity", no leading blanks) so the grammar in docs/graph-format.md is
 * the whole truth. */
#include "graph/text.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- formatting ---------------------------------------------------------- */

/* printf may write the locale's decimal separator (e.g. ","): turn it back
 * into '.'. Only touches localeconv() when something other than the C
 * characters appears. */
static void fix_decimal_point(char *buf) {
    if (strspn(buf, "0123456789+-.eE") == strlen(buf)) return;
    const char *dp = localeconv()->decimal_point;
    size_t dl = dp ? strlen(dp) : 0;
    char *at = dl ? strstr(buf, dp) : NULL;
    if (!at) return;
    *at = '.';
    memmove(at + 1, at + dl, strlen(at + dl) + 1);
}

/* NaN and infinities, which printf spells differently per C library.
 * Returns true when v was one of them. */
static bool format_special(double v, char buf[BG_TEXT_NUMBUF]) {
    if (isnan(v)) {
        strcpy(buf, signbit(v) ? "-nan" : "nan");
        return true;
    }
    if (isinf(v)) {
        strcpy(buf, v < 0 ? "-inf" : "inf");
        return true;
    }
    return false;
}

void bg_text_format_f64(double v, char buf[BG_TEXT_NUMBUF]) {
    if (format_special(v, buf)) return;
    /* 17 significant digits always identify a double; fewer usually do and
     * read better ("0.1" rather than "0.10000000000000001"). */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, BG_TEXT_NUMBUF, "%.*g", prec, v);
        fix_decimal_point(buf);
        double back;
        if (bg_text_parse_f64(buf, strlen(buf), &back) == BG_NUM_OK &&
            memcmp(&back, &v, sizeof v) == 0)
            return;
    }
}

void bg_text_format_f32(float v, char buf[BG_TEXT_NUMBUF]) {
    if (format_special(v, buf)) return;
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, BG_TEXT_NUMBUF, "%.*g", prec, (double)v);
        fix_decimal_point(buf);
        float back;
        if (bg_text_parse_f32(buf, strlen(buf), &back) == BG_NUM_OK &&
            memcmp(&back, &v, sizeof v) == 0)
            return;
    }
}

/* ---- parsing ------------------------------------------------------------- */

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Length of a run of digits at s[i..len). */
static size_t digits_at(const char *s, size_t i, size_t len) {
    size_t n = 0;
    while (i + n < len && is_digit(s[i + n]))
        n++;
    return n;
}

/* True when s[0..len) is [+-]?(D+(.D*)?|.D+)([eE][+-]?D+)? */
static bool is_decimal(const char *s, size_t len) {
    size_t i = (len > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    size_t whole = digits_at(s, i, len);
    i += whole;
    size_t frac = 0;
    if (i < len && s[i] == '.') {
        frac = digits_at(s, i + 1, len);
        i += 1 + frac;
    }
    if (whole + frac == 0) return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        size_t ex = digits_at(s, i, len);
        if (ex == 0) return false;
        i += ex;
    }
    return i == len;
}

/* Recognises [+-]?(nan|inf); sets *out. */
static bool parse_special(const char *s, size_t len, double *out) {
    bool neg = len > 0 && s[0] == '-';
    size_t i = (len > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (len - i != 3) return false;
    if (memcmp(s + i, "nan", 3) == 0)
        *out = neg ? -(double)NAN : (double)NAN;
    else if (memcmp(s + i, "inf", 3) == 0)
        *out = neg ? -(double)INFINITY : (double)INFINITY;
    else
        return false;
    return true;
}

/* Copies s into buf as a NUL-terminated string the C library can read in
 * the current locale (the '.' replaced by the locale's separator when that
 * differs). Returns false when it does not fit. */
static bool locale_copy(const char *s, size_t len, char *buf, size_t size,
                        bool localize) {
    const char *dp = localize ? localeconv()->decimal_point : ".";
    size_t dl = (dp && *dp) ? strlen(dp) : 1;
    if (!dp || !*dp) dp = ".";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        const char *piece = s[i] == '.' ? dp : &s[i];
        size_t pl = s[i] == '.' ? dl : 1;
        if (o + pl >= size) return false;
        memcpy(buf + o, piece, pl);
        o += pl;
    }
    buf[o] = '\0';
    return true;
}

/* strtod or strtof over a validated decimal; retries with the locale's
 * separator when the C library stopped at the '.'. */
static bg_num_status parse_decimal(const char *s, size_t len, bool single,
                                   double *out) {
    if (len > BG_TEXT_NUMBER_MAX) return BG_NUM_TOO_LONG;
    if (!is_decimal(s, len)) return BG_NUM_SYNTAX;
    char buf[BG_TEXT_NUMBER_MAX * 4 + 8];
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!locale_copy(s, len, buf, sizeof buf, attempt == 1))
            return BG_NUM_TOO_LONG;
        char *end = NULL;
        errno = 0;
        double v = single ? (double)strtof(buf, &end) : strtod(buf, &end);
        if (end && *end == '\0') {
            if (isinf(v)) return BG_NUM_RANGE;
            *out = v;
            return BG_NUM_OK;
        }
    }
    return BG_NUM_SYNTAX;
}

bg_num_status bg_text_parse_f64(const char *s, size_t len, double *out) {
    if (parse_special(s, len, out)) return BG_NUM_OK;
    return parse_decimal(s, len, false, out);
}

bg_num_status bg_text_parse_f32(const char *s, size_t len, float *out) {
    double v;
    if (parse_special(s, len, &v)) {
        *out = (float)v;
        return BG_NUM_OK;
    }
    bg_num_status st = parse_decimal(s, len, true, &v);
    if (st == BG_NUM_OK) *out = (float)v; /* exact: strtof already rounded */
    return st;
}

bg_num_status bg_text_parse_u64(const char *s, size_t len, uint64_t *out) {
    size_t i = (len > 0 && s[0] == '+') ? 1 : 0;
    if (len > BG_TEXT_NUMBER_MAX) return BG_NUM_TOO_LONG;
    if (i == len || digits_at(s, i, len) != len - i) return BG_NUM_SYNTAX;
    uint64_t v = 0;
    for (; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return BG_NUM_RANGE;
        v = v * 10 + d;
    }
    *out = v;
    return BG_NUM_OK;
}

bg_num_status bg_text_parse_i64(const char *s, size_t len, int64_t *out) {
    bool neg = len > 0 && s[0] == '-';
    size_t skip = neg ? 1 : 0;
    if (len > 1 + skip && s[skip] == '+') return BG_NUM_SYNTAX; /* "-+5" */
    uint64_t mag;
    bg_num_status st = bg_text_parse_u64(s + skip, len - skip, &mag);
    if (st != BG_NUM_OK) return st;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return BG_NUM_RANGE;
    /* -(2^63) has no positive twin: build it without signed overflow. */
    *out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag)
               : (int64_t)mag;
    return BG_NUM_OK;
}

/* ---- base64 -------------------------------------------------------------- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t bg_base64_encoded_len(size_t n) {
    return (n + 2) / 3 * 4;
}

void bg_base64_encode(const unsigned char *in, size_t n, char *out) {
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w =
            (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64_alphabet[w >> 18];
        out[o++] = b64_alphabet[(w >> 12) & 63];
        out[o++] = b64_alphabet[(w >> 6) & 63];
        out[o++] = b64_alphabet[w & 63];
    }
    if (i < n) {
        uint32_t w = (uint32_t)in[i] << 16;
        if (i + 1 < n) w |= (uint32_t)in[i + 1] << 8;
        out[o++] = b64_alphabet[w >> 18];
        out[o++] = b64_alphabet[(w >> 12) & 63];
        out[o++] = i + 1 < n ? b64_alphabet[(w >> 6) & 63] : '=';
        out[o++] = '=';
    }
}

/* Value of a base64 digit, or -1. */
static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

size_t bg_base64_decoded_len(const char *in, size_t len) {
    if (len % 4 != 0) return SIZE_MAX;
    size_t n = len / 4 * 3;
    if (len > 0 && in[len - 1] == '=') {
        n--;
        if (in[len - 2] == '=') n--;
    }
    return n;
}

bool bg_base64_decode(const char *in, size_t len, unsigned char *out,
                      size_t *bad) {
    if (len % 4 != 0) {
        *bad = len;
        return false;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        bool last = i + 4 == len;
        /* '=' may only fill the last one or two places of the last group. */
        int pad = 0;
        if (last && in[i + 3] == '=') pad = in[i + 2] == '=' ? 2 : 1;
        uint32_t w = 0;
        for (int k = 0; k < 4; k++) {
            int v = k >= 4 - pad ? 0 : b64_value((unsigned char)in[i + k]);
            if (v < 0) {
                *bad = i + (size_t)k;
                return false;
            }
            w = w << 6 | (uint32_t)v;
        }
        /* Bits below the last byte must be zero so each byte string has
         * exactly one spelling (keeps the text canonical). */
        if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff))) {
            *bad = i + 3 - (size_t)pad;
            return false;
        }
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2) out[o++] = (unsigned char)(w >> 8);
        if (pad < 1) out[o++] = (unsigned char)w;
    }
    return true;
}
