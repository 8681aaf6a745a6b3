/* runtime/profile/profile_print.c — braid_profile_print: the aggregate table of
 * `braid run --profile`, per node then per op kind, sorted by total time.
 *
 * Columns (docs/profiler.md): count, total, min, max, avg (ms), device,
 * track, bytes read + written per run, and the achieved rate of one
 * average run: GFLOP/s for nodes that compute, GB/s for the others. The
 * name and op columns are fixed width (names longer than 24 bytes are cut)
 * so the numbers sit at fixed offsets. */
#include "runtime/profile/profile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One row of the per-op table. */
typedef struct op_row {
    char op[24];       /* op kind */
    uint64_t count;    /* node executions */
    double total;      /* ms */
    double min, max;   /* ms, per execution */
    double bytes;      /* bytes moved, over all executions */
    double flops;      /* flops, over all executions */
} op_row;

/* "12.3 GFLOP/s", "4.56 GB/s" or "-" for one execution of ms moving bytes
 * and computing flops. */
static const char *rate(double ms, double bytes, double flops, char *buf,
                        size_t size) {
    if (ms <= 0 || (bytes <= 0 && flops <= 0))
        snprintf(buf, size, "-");
    else if (flops > 0)
        snprintf(buf, size, "%.2f GFLOP/s", flops / (ms * 1e6));
    else
        snprintf(buf, size, "%.2f GB/s", bytes / (ms * 1e6));
    return buf;
}

static int by_total(const void *a, const void *b) {
    const op_row *x = a, *y = b;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return strcmp(x->op, y->op);
}

/* The nodes grouped by op kind, by total time descending. */
static op_row *op_rows(const braid_profile *p, uint32_t *nrows) {
    op_row *rows = calloc(p->nnodes ? p->nnodes : 1, sizeof *rows);
    *nrows = 0;
    if (!rows) return NULL;
    for (uint32_t i = 0; i < p->nnodes; i++) {
        const braid_profile_node *n = &p->nodes[i];
        op_row *r = NULL;
        for (uint32_t k = 0; k < *nrows && !r; k++)
            if (strcmp(rows[k].op, n->op) == 0) r = &rows[k];
        if (!r) {
            r = &rows[(*nrows)++];
            memcpy(r->op, n->op, sizeof r->op);
            r->op[sizeof r->op - 1] = '\0';
            r->min = n->min_ms;
            r->max = n->max_ms;
        }
        r->count += n->count;
        r->total += n->total_ms;
        if (n->min_ms < r->min) r->min = n->min_ms;
        if (n->max_ms > r->max) r->max = n->max_ms;
        r->bytes += (double)n->bytes * (double)n->count;
        r->flops += n->flops * (double)n->count;
    }
    qsort(rows, *nrows, sizeof *rows, by_total);
    return rows;
}

static const char *track_of(const braid_profile *p, uint32_t t) {
    return t < p->ntracks ? p->tracks[t].name : "?";
}

static void print_nodes(const braid_profile *p, FILE *out) {
    fprintf(out,
            "%-24s %-14s %8s %11s %10s %10s %10s  %-8s %-18s %12s  %s\n",
            "node", "op", "count", "total ms", "min ms", "max ms", "avg ms",
            "device", "track", "bytes", "rate");
    double total = 0;
    for (uint32_t i = 0; i < p->nnodes; i++) {
        const braid_profile_node *n = &p->nodes[i];
        double avg = n->count ? n->total_ms / (double)n->count : 0;
        char r[32];
        fprintf(out,
                "%-24.24s %-14.14s %8" PRIu64
                " %11.4f %10.4f %10.4f %10.4f  %-8s %-18.18s %12" PRIu64
                "  %s\n",
                n->name, n->op, n->count, n->total_ms, n->min_ms, n->max_ms,
                avg, n->device, track_of(p, n->track), n->bytes,
                rate(avg, (double)n->bytes, n->flops, r, sizeof r));
        total += n->total_ms;
    }
    fprintf(out, "%-24s %-14s %8s %11.4f\n", "total", "", "", total);
}

static braid_status print_ops(const braid_profile *p, FILE *out) {
    uint32_t nrows = 0;
    op_row *rows = op_rows(p, &nrows);
    if (!rows)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY,
                                 "braid_profile_print: out of memory");
    fprintf(out, "%-24s %8s %11s %10s %10s %10s %14s  %s\n", "op", "count",
            "total ms", "min ms", "max ms", "avg ms", "bytes/run", "rate");
    for (uint32_t i = 0; i < nrows; i++) {
        const op_row *o = &rows[i];
        double avg = o->count ? o->total / (double)o->count : 0;
        double per = o->count ? 1.0 / (double)o->count : 0;
        char r[32];
        fprintf(out, "%-24.24s %8" PRIu64 " %11.4f %10.4f %10.4f %10.4f %14.0f"
                     "  %s\n",
                o->op, o->count, o->total, o->min, o->max, avg,
                o->bytes * per,
                rate(avg, o->bytes * per, o->flops * per, r, sizeof r));
    }
    free(rows);
    return BRAID_OK;
}

braid_status braid_profile_print(const braid_profile *p, FILE *out) {
    if (!p || !out)
        return bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT,
                                 "braid_profile_print: %s is NULL",
                                 p ? "out" : "profile");
    fprintf(out,
            "profile: %" PRIu64 " run%s; last run: wall %.3f ms, busy %.3f "
            "ms, overlap %.2f\n",
            p->runs, p->runs == 1 ? "" : "s", p->wall_ms, p->busy_ms,
            p->overlap);
    fputs("\nper node (sorted by total time):\n", out);
    print_nodes(p, out);
    fputs("\nper op kind (sorted by total time):\n", out);
    braid_status s = print_ops(p, out);
    if (s == BRAID_OK && ferror(out))
        s = bg_set_last_error(BRAID_ERR_IO,
                              "braid_profile_print: writing failed");
    return s;
}
