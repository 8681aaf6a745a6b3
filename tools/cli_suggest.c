/* tools/cli_suggest.c — "did you mean" for unknown options and commands:
 * the known name nearest by edit distance (bg_edit_distance, shared with the
 * parser's "unknown op"), when it is near enough to be a typo rather than
 * another word. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include "graph/graph.h"

#include <limits.h>
#include <string.h>

const char *cli_nearest(const char *word, const char *const *known, size_t n) {
    const char *best = NULL;
    int best_d = INT_MAX;
    size_t len = strcspn(word, "="); /* "--name=value": the name only */
    for (size_t k = 0; k < n; k++) {
        int d = bg_edit_distance(word, len, known[k], strlen(known[k]));
        if (d < best_d) best_d = d, best = known[k];
    }
    /* a third of the name may be wrong, at least two characters */
    int limit = len / 3 > 2 ? (int)(len / 3) : 2;
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
