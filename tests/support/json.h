/* tests/support/json.h — a small strict JSON (RFC 8259) parser for tests
 * that check files braid writes (profiler traces, `braid info --json`).
 *
 * Strict: one value surrounded only by JSON whitespace; no trailing commas,
 * comments, single quotes, leading zeros, NaN or Infinity; strings must be
 * valid UTF-8 without raw control characters, escapes must be the JSON
 * ones, and \u escapes must pair their surrogates. Nesting is limited to
 * 256 levels. */
#ifndef BRAID_TESTS_SUPPORT_JSON_H
#define BRAID_TESTS_SUPPORT_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum ts_json_kind {
    TS_JSON_NULL,
    TS_JSON_BOOL,
    TS_JSON_NUMBER,
    TS_JSON_STRING,
    TS_JSON_ARRAY,
    TS_JSON_OBJECT
} ts_json_kind;

/* A parsed value. */
typedef struct ts_json {
    ts_json_kind kind;      /* which of the fields below mean something */
    bool boolean;           /* BOOL */
    double number;          /* NUMBER */
    char *string;           /* STRING: decoded UTF-8, NUL-terminated (an
                               escaped NUL ends it early); owned */
    struct ts_json *items;  /* ARRAY: elements; OBJECT: values; owned */
    char **keys;            /* OBJECT: keys, decoded; owned */
    size_t n;               /* entries in items (and keys) */
} ts_json;

/* Parses len bytes of text. NULL on error, with "offset N: why" in err. */
ts_json *ts_json_parse(const char *text, size_t len, char *err,
                       size_t errsize);
void ts_json_free(ts_json *v); /* NULL is fine */

/* The value of key in object v (the first one), or NULL. */
const ts_json *ts_json_get(const ts_json *v, const char *key);

#endif /* BRAID_TESTS_SUPPORT_JSON_H */
