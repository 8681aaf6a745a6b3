/* graph/text.h — pieces shared by the .graph printer and parser (private to
 * graph/text_*.c; the format itself is specified in docs/graph-format.md). */
#ifndef BRAID_GRAPH_TEXT_H
#define BRAID_GRAPH_TEXT_H

#include "graph/graph.h"

/* Longest number token the parser accepts; longer ones are an error rather
 * than a large copy (the printer never writes more than 24 characters). */
#define BG_TEXT_NUMBER_MAX 400

/* Room for any number the printer formats, NUL included. */
#define BG_TEXT_NUMBUF 48

/* ---- numbers (graph/text_num.c) -------------------------------------------
 * Formatting is independent of the C locale: the decimal separator is always
 * '.'. Floats are written with the fewest digits that read back to the same
 * bits, NaN as "nan" / "-nan", infinities as "inf" / "-inf". */

void bg_text_format_f64(double v, char buf[BG_TEXT_NUMBUF]);
void bg_text_format_f32(float v, char buf[BG_TEXT_NUMBUF]);

/* Parse results: OK, or why not. */
typedef enum bg_num_status {
    BG_NUM_OK,
    BG_NUM_SYNTAX,  /* not a number of the requested kind */
    BG_NUM_RANGE,   /* a number, but too large for the target */
    BG_NUM_TOO_LONG /* more than BG_TEXT_NUMBER_MAX characters */
} bg_num_status;

/* Decimal or exponent notation, [+-]nan, [+-]inf. Overflow to infinity of a
 * finite literal is BG_NUM_RANGE; underflow to a subnormal or zero is fine. */
bg_num_status bg_text_parse_f64(const char *s, size_t len, double *out);
bg_num_status bg_text_parse_f32(const char *s, size_t len, float *out);
/* [+-]digits, within int64. */
bg_num_status bg_text_parse_i64(const char *s, size_t len, int64_t *out);
/* digits (an optional leading '+'), within uint64. */
bg_num_status bg_text_parse_u64(const char *s, size_t len, uint64_t *out);

/* ---- base64 (graph/text_num.c), RFC 4648 alphabet with '=' padding ------- */

/* Characters needed to encode n bytes (no NUL). */
size_t bg_base64_encoded_len(size_t n);
/* Writes bg_base64_encoded_len(n) characters to out. */
void bg_base64_encode(const unsigned char *in, size_t n, char *out);
/* Bytes that len characters decode to when well formed (used to check the
 * size before allocating); SIZE_MAX when len is not a multiple of 4. */
size_t bg_base64_decoded_len(const char *in, size_t len);
/* Decodes len characters into out (bg_base64_decoded_len bytes). Returns
 * true, or false with *bad set to the index of the first invalid character
 * (or len when the padding is wrong). */
bool bg_base64_decode(const char *in, size_t len, unsigned char *out,
                      size_t *bad);

/* ---- lexer (graph/text_lex.c) -------------------------------------------- */

typedef enum bg_tok_kind {
    BG_TOK_EOF,
    BG_TOK_NEWLINE,
    BG_TOK_IDENT,  /* [A-Za-z_][A-Za-z0-9_.-]* */
    BG_TOK_LABEL,  /* %[A-Za-z0-9_.]+ ; text excludes the '%' */
    BG_TOK_NUMBER, /* starts with [0-9+-.], runs over [A-Za-z0-9_.+-] */
    BG_TOK_STRING, /* "..." ; text is the raw inside, escapes undecoded */
    BG_TOK_BASE64, /* base64"..." ; text is the inside */
    BG_TOK_LBRACK,
    BG_TOK_RBRACK,
    BG_TOK_COMMA,
    BG_TOK_EQUALS,
    BG_TOK_COLON,
    BG_TOK_ERROR /* lexer error: message in bg_lexer.error */
} bg_tok_kind;

typedef struct bg_token {
    bg_tok_kind kind; /* what it is */
    const char *text; /* its characters in the source (see kinds above) */
    size_t len;       /* number of characters at text */
    size_t line;      /* 1-based line of its first character */
    size_t col;       /* 1-based byte column of its first character */
} bg_token;

typedef struct bg_lexer {
    const char *src;   /* the text (not NUL-terminated) */
    size_t len;        /* its length */
    size_t pos;        /* next unread byte */
    size_t line;       /* current line, 1-based */
    size_t line_start; /* offset of the current line's first byte */
    char error[96];    /* message of the last BG_TOK_ERROR */
    size_t err_line;   /* where that error is (may be inside the token) */
    size_t err_col;    /* its column */
} bg_lexer;

void bg_lex_init(bg_lexer *lx, const char *src, size_t len);
/* The next token. Comments and blanks (space, tab, CR, VT, FF) are skipped;
 * each '\n' is a BG_TOK_NEWLINE. */
bg_token bg_lex_next(bg_lexer *lx);

/* Decodes a BG_TOK_STRING's raw text (escapes \" \\ \n \t \r \xHH; the
 * lexer already validated them) into out, which must hold raw_len + 1
 * bytes; returns the decoded length. \x00 was rejected by the lexer. */
size_t bg_text_unescape(const char *raw, size_t raw_len, char *out);

#endif /* BRAID_GRAPH_TEXT_H */
