/* tools/cli_data.c — data helpers of the braid tool: random inputs,
 * statistics, comparison with the reference evaluator, files and clocks. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include "graph/graph.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* FNV-1a of the input's name, so each input gets its own stream and adding
 * an input does not change the data of the others. */
static uint64_t name_hash(const char *name) {
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3u;
    return h;
}

void cli_fill_random(braid_dtype t, void *buf, int64_t n, uint64_t seed,
                     const char *name) {
    uint64_t key = seed ^ name_hash(name);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (bg_dtype_is_int(t)) {
            v = floor(bg_random_uniform_at(key, i, -100.0, 101.0));
            v = v > 100.0 ? 100.0 : v;
        } else if (t == BRAID_BOOL) {
            v = bg_random_uniform_at(key, i, 0.0, 1.0) < 0.5 ? 0.0 : 1.0;
        } else {
            v = bg_random_uniform_at(key, i, -1.0, 1.0);
        }
        bg_store(t, buf, i, v);
    }
}

/* The mean of the finite values among n (finite of them, none larger than
 * big in magnitude): a compensated (Neumaier) sum, so [1, 2, 1e38, -1e38]
 * gives 0.75 rather than 0, of values scaled by 1/finite first when their
 * sum could overflow (f64 near DBL_MAX). */
static double finite_mean(braid_dtype t, const void *buf, int64_t n,
                          int64_t finite, double big) {
    double scale = big > DBL_MAX / (double)finite ? 1.0 / (double)finite : 1.0;
    cli_sum acc = {0.0, 0.0};
    for (int64_t i = 0; i < n; i++) {
        double v = bg_load(t, buf, i) * scale;
        if (isfinite(v)) cli_sum_add(&acc, v);
    }
    double sum = cli_sum_value(&acc);
    return scale == 1.0 ? sum / (double)finite : sum;
}

void cli_print_stats(FILE *out, braid_dtype t, const void *buf, int64_t n) {
    if (n == 0) {
        fputs("empty", out);
        return;
    }
    if (t == BRAID_BOOL) {
        int64_t ones = 0;
        for (int64_t i = 0; i < n; i++)
            ones += bg_load(t, buf, i) != 0.0;
        fprintf(out, "true %lld of %lld", (long long)ones, (long long)n);
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    int64_t nan = 0, inf = 0, finite = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = bg_load(t, buf, i);
        if (isnan(v)) {
            nan++;
        } else if (isinf(v)) {
            inf++;
        } else {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            finite++;
        }
    }
    if (finite)
        fprintf(out, "min %.6g max %.6g mean %.6g", lo, hi,
                finite_mean(t, buf, n, finite, fmax(fabs(lo), fabs(hi))));
    else
        fputs("no finite values", out);
    if (nan) fprintf(out, ", %lld NaN", (long long)nan);
    if (inf) fprintf(out, ", %lld inf", (long long)inf);
}

void cli_tolerance(braid_dtype t, int64_t acc, double *atol, double *rtol) {
    switch (t) {
    case BRAID_F64:
        *atol = *rtol = 1e-9;
        break;
    case BRAID_F32:
        *atol = *rtol = 1e-4;
        break;
    case BRAID_F16:
        *atol = *rtol = 1e-2;
        break;
    case BRAID_BF16:
        *atol = *rtol = 5e-2;
        break;
    default:
        *atol = *rtol = 0.0;
        return; /* integers and bool: exact */
    }
    /* Rounding errors of a sum of acc terms grow like √acc (random-walk
     * rounding); the base tolerances are meant for acc ≤ 256. */
    if (acc > 256) *atol *= sqrt((double)acc / 256.0);
}

/* Elements folded into one output element by node n (matmul K, or the
 * product of the reduced input dims), 0 for other ops. */
static int64_t node_accumulation(const braid_graph *g, const bg_node *n) {
    if (n->op == BRAID_OP_MATMUL) {
        const bg_node *a = bg_node_at(g, n->inputs[0]);
        bool ta = (n->attr.flags & BRAID_TRANSPOSE_A) != 0;
        return a->dims[a->rank - (ta ? 2 : 1)];
    }
    if (bg_op(n->op)->kind != BRAID_KIND_REDUCE) return 0;
    const bg_node *x = bg_node_at(g, n->inputs[0]);
    int64_t acc = 1;
    for (int k = 0; k < x->rank; k++)
        if (n->attr.axes & (1u << k))
            acc = acc > BG_MAX_BYTES / (x->dims[k] + 1) ? BG_MAX_BYTES
                                                        : acc * x->dims[k];
    return acc;
}

int64_t cli_longest_accumulation(const braid_graph *g) {
    int64_t best = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        int64_t acc = node_accumulation(g, bg_node_at(g, id));
        best = acc > best ? acc : best;
    }
    return best;
}

/* Folds one element pair into r. */
static void compare_one(cli_compare_result *r, int64_t i, double x,
                        double ref) {
    bool ok;
    if (isnan(ref) || isnan(x)) {
        ok = isnan(ref) && isnan(x);
    } else if (isinf(ref) || isinf(x)) {
        ok = x == ref;
    } else {
        double err = fabs(x - ref);
        r->max_abs = err > r->max_abs ? err : r->max_abs;
        if (fabs(ref) > r->atol && err / fabs(ref) > r->max_rel)
            r->max_rel = err / fabs(ref);
        ok = err <= r->atol + r->rtol * fabs(ref);
    }
    if (ok) return;
    if (r->nbad++ == 0) {
        r->first_bad = i;
        r->bad_got = x;
        r->bad_ref = ref;
    }
}

void cli_compare(braid_dtype t, const void *got, const void *ref, int64_t n,
                 cli_compare_result *r) {
    r->max_abs = r->max_rel = 0.0;
    r->nbad = 0;
    r->first_bad = -1;
    r->bad_got = r->bad_ref = 0.0;
    for (int64_t i = 0; i < n; i++)
        compare_one(r, i, bg_load(t, got, i), bg_load(t, ref, i));
}

bool cli_make_dirs(const char *dir) {
    size_t len = strlen(dir);
    char *path = malloc(len + 1);
    if (!path) {
        cli_fail("out of memory");
        return false;
    }
    memcpy(path, dir, len + 1);
    bool ok = true;
    /* Create each prefix ending before a '/', then the whole path. */
    for (size_t k = 1; ok && k <= len; k++) {
        if (k < len && path[k] != '/') continue;
        char saved = path[k];
        path[k] = '\0';
        struct stat st;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            cli_fail("cannot create directory '%s': %s", path, strerror(errno));
            ok = false;
        } else if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
            cli_fail("'%s' exists and is not a directory", path);
            ok = false;
        }
        path[k] = saved;
    }
    free(path);
    return ok;
}

bool cli_same_file(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return true;
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

bool cli_safe_file_name(const char *name) {
    size_t len = strlen(name);
    if (len == 0 || len > 200 || !strcmp(name, ".") || !strcmp(name, ".."))
        return false;
    for (size_t k = 0; k < len; k++) {
        char c = name[k];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) return false;
    }
    return true;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* True when s is well-formed UTF-8 (JSON text must be). */
static bool utf8_ok(const unsigned char *s) {
    while (*s) {
        unsigned c = *s++;
        int more = c < 0x80    ? 0
                   : c >= 0xf0 ? 3
                   : c >= 0xe0 ? 2
                   : c >= 0xc2 ? 1
                               : -1;
        if (more < 0 || c > 0xf4) return false;
        for (int k = 0; k < more; k++, s++)
            if ((*s & 0xc0) != 0x80) return false;
    }
    return true;
}

/* A JSON string: quotes, backslashes and control bytes escaped; bytes of
 * a string that is not UTF-8 read as Latin-1. */
void cli_json_string(FILE *out, const char *str) {
    if (!str) {
        fputs("null", out);
        return;
    }
    const unsigned char *s = (const unsigned char *)str;
    bool utf8 = utf8_ok(s);
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if (*s < 0x20 || *s == 0x7f || (*s >= 0x80 && !utf8))
            fprintf(out, "\\u%04x", *s);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}
