/* graph/text_lex.c — tokens of the .graph text format.
 *
 * The lexer reads a byte range that need not be NUL-terminated, never looks
 * past its end, and does O(1) work per byte. It knows nothing about ops:
 * the parser decides what a token means where it appears. */
#include "graph/text.h"

#include <stdio.h>
#include <string.h>

void bg_lex_init(bg_lexer *lx, const char *src, size_t len) {
    memset(lx, 0, sizeof *lx);
    lx->src = src;
    lx->len = len;
    lx->line = 1;
}

static bool is_alpha(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
static bool is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}
static bool is_label_char(unsigned char c) {
    return is_alpha(c) || is_digit(c) || c == '.';
}
static bool is_ident_char(unsigned char c) {
    return is_label_char(c) || c == '-';
}
static bool is_number_char(unsigned char c) {
    return is_label_char(c) || c == '+' || c == '-';
}
static bool is_hex(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static size_t col_at(const bg_lexer *lx, size_t pos) {
    return pos - lx->line_start + 1;
}

/* An error token at byte pos of the current line. */
static bg_token lex_error(bg_lexer *lx, size_t pos, const char *msg,
                          unsigned char c) {
    snprintf(lx->error, sizeof lx->error, msg, c);
    lx->err_line = lx->line;
    lx->err_col = col_at(lx, pos);
    bg_token t = {BG_TOK_ERROR, lx->src + pos, 0, lx->line, col_at(lx, pos)};
    lx->pos = lx->len; /* nothing after an error is read */
    return t;
}

/* Skips blanks and comments; stops at '\n', end, or a token. Returns false
 * (with *bad set) on a NUL byte inside a comment. */
static bool skip_blanks(bg_lexer *lx, size_t *bad) {
    while (lx->pos < lx->len) {
        char c = lx->src[lx->pos];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
            lx->pos++;
        } else if (c == '#') {
            const char *s = lx->src + lx->pos;
            const char *nl = memchr(s, '\n', lx->len - lx->pos);
            size_t n = nl ? (size_t)(nl - s) : lx->len - lx->pos;
            const char *nul = memchr(s, '\0', n);
            if (nul) {
                *bad = (size_t)(nul - lx->src);
                return false;
            }
            lx->pos += n;
        } else {
            break;
        }
    }
    return true;
}

/* A "..." string starting at the opening quote q. The token's text is the
 * raw inside; escapes are validated here so errors point at them. */
static bg_token lex_string(bg_lexer *lx, size_t q, bg_tok_kind kind,
                           size_t tok_start) {
    size_t i = q + 1;
    while (i < lx->len) {
        unsigned char c = (unsigned char)lx->src[i];
        if (c == '"') {
            bg_token t = {kind, lx->src + q + 1, i - q - 1, lx->line,
                          col_at(lx, tok_start)};
            lx->pos = i + 1;
            return t;
        }
        if (c == '\n' || c == '\0') break;
        if (c == '\\') {
            if (i + 1 >= lx->len) break;
            unsigned char e = (unsigned char)lx->src[i + 1];
            if (e == 'x') {
                if (i + 3 >= lx->len ||
                    !is_hex((unsigned char)lx->src[i + 2]) ||
                    !is_hex((unsigned char)lx->src[i + 3]))
                    return lex_error(lx, i, "bad \\x escape in string", 0);
                if (lx->src[i + 2] == '0' && lx->src[i + 3] == '0')
                    return lex_error(lx, i, "NUL (\\x00) in string", 0);
                i += 4;
                continue;
            }
            if (e != '"' && e != '\\' && e != 'n' && e != 't' && e != 'r')
                return lex_error(lx, i, "unknown escape '\\%c' in string", e);
            i += 2;
            continue;
        }
        i++;
    }
    if (i < lx->len && lx->src[i] == '\0')
        return lex_error(lx, i, "NUL byte in string", 0);
    return lex_error(lx, tok_start, "unterminated string", 0);
}

/* A run of characters accepted by ok, starting at lx->pos + skip. */
static size_t run_length(const bg_lexer *lx, size_t skip,
                         bool (*ok)(unsigned char)) {
    size_t i = lx->pos + skip;
    while (i < lx->len && ok((unsigned char)lx->src[i]))
        i++;
    return i - lx->pos;
}

static bg_token make(bg_lexer *lx, bg_tok_kind kind, size_t skip, size_t len) {
    bg_token t = {kind, lx->src + lx->pos + skip, len - skip, lx->line,
                  col_at(lx, lx->pos)};
    lx->pos += len;
    return t;
}

bg_token bg_lex_next(bg_lexer *lx) {
    size_t bad;
    if (!skip_blanks(lx, &bad))
        return lex_error(lx, bad, "NUL byte in comment", 0);
    if (lx->pos >= lx->len) {
        bg_token t = {BG_TOK_EOF, lx->src + lx->len, 0, lx->line,
                      col_at(lx, lx->len)};
        return t;
    }
    unsigned char c = (unsigned char)lx->src[lx->pos];
    if (c == '\n') {
        bg_token t = make(lx, BG_TOK_NEWLINE, 0, 1);
        lx->line++;
        lx->line_start = lx->pos;
        return t;
    }
    switch (c) {
    case '[':
        return make(lx, BG_TOK_LBRACK, 0, 1);
    case ']':
        return make(lx, BG_TOK_RBRACK, 0, 1);
    case ',':
        return make(lx, BG_TOK_COMMA, 0, 1);
    case '=':
        return make(lx, BG_TOK_EQUALS, 0, 1);
    case ':':
        return make(lx, BG_TOK_COLON, 0, 1);
    case '"':
        return lex_string(lx, lx->pos, BG_TOK_STRING, lx->pos);
    default:
        break;
    }
    if (c == '%') {
        size_t n = run_length(lx, 1, is_label_char);
        if (n == 1)
            return lex_error(lx, lx->pos, "expected a label name after '%c'",
                             '%');
        return make(lx, BG_TOK_LABEL, 1, n);
    }
    if (is_alpha(c)) {
        size_t n = run_length(lx, 0, is_ident_char);
        if (n == 6 && memcmp(lx->src + lx->pos, "base64", 6) == 0 &&
            lx->pos + 6 < lx->len && lx->src[lx->pos + 6] == '"')
            return lex_string(lx, lx->pos + 6, BG_TOK_BASE64, lx->pos);
        return make(lx, BG_TOK_IDENT, 0, n);
    }
    if (is_digit(c) || c == '+' || c == '-' || c == '.')
        return make(lx, BG_TOK_NUMBER, 0, run_length(lx, 0, is_number_char));
    if (c == '\0') return lex_error(lx, lx->pos, "NUL byte in input", 0);
    if (c < 0x20 || c >= 0x7f)
        return lex_error(lx, lx->pos, "unexpected byte 0x%02x", c);
    return lex_error(lx, lx->pos, "unexpected character '%c'", c);
}

size_t bg_text_unescape(const char *raw, size_t raw_len, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < raw_len; i++) {
        char c = raw[i];
        if (c != '\\' || i + 1 >= raw_len) {
            out[o++] = c;
            continue;
        }
        char e = raw[++i];
        if (e == 'n') {
            out[o++] = '\n';
        } else if (e == 't') {
            out[o++] = '\t';
        } else if (e == 'r') {
            out[o++] = '\r';
        } else if (e == 'x' && i + 2 < raw_len) {
            unsigned v = 0;
            for (int k = 1; k <= 2; k++) {
                char h = raw[i + (size_t)k];
                v = v * 16 + (unsigned)(h <= '9'   ? h - '0'
                                        : h <= 'F' ? h - 'A' + 10
                                                   : h - 'a' + 10);
            }
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = e; /* \" and \\ */
        }
    }
    out[o] = '\0';
    return o;
}
