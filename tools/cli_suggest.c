/* tools/cli_suggest.c — "did you mean" for unknown options and commands:
 * the known name nearest by edit distance, when it is near enough to be a
 * typo rather than another word. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <string.h>

/* Levenshtein distance of a and b (each cut at 63 bytes: option names are
 * short, and a longer argument is no typo of one). */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strnlen(a, 63), lb = strnlen(b, 63);
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_nearest(const char *word, const char *const *known, size_t n) {
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    /* "--name=value": compare the name only */
    char name[64];
    size_t len = strcspn(word, "=");
    if (len >= sizeof name) return NULL;
    memcpy(name, word, len);
    name[len] = '\0';
    for (size_t k = 0; k < n; k++) {
        size_t d = edit_distance(name, known[k]);
        if (d < best_d) best_d = d, best = known[k];
    }
    /* a third of the name may be wrong, at least two characters */
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    return best_d <= limit ? best : NULL;
}

int cli_unknown_option(const char *cmd, const char *arg,
                       const char *const *known, size_t n) {
    const char *near = cli_nearest(arg, known, n);
    if (near)
        return cli_usage_error("%s: unknown option '%s' (did you mean %s?)",
                               cmd, arg, near);
    return cli_usage_error("%s: unknown option '%s'", cmd, arg);
}
