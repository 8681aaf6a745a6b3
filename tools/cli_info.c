/* tools/cli_info.c — `braid info`: compile a .graph file (or load a plan
 * file) and print the plan's summary (devices, nodes, fused kernels,
 * copies, queues, events, arenas with their lower bounds; for a plan file
 * also where it came from) as text or as one JSON object. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Everything printed, gathered once. */
typedef struct info_data {
    const char *file;             /* the .graph or plan file */
    const braid_graph *graph;     /* as loaded */
    const cli_input *in;          /* what opening the file gave */
    braid_plan_summary s;         /* the plan's counts */
    braid_plan_device_info *dev;  /* s.devices entries */
    braid_plan_arena_info *arena; /* s.arenas entries */
    uint32_t streams;             /* queues on GPUs */
    bool verbose;                 /* --verbose: the placement table */
} info_data;

static bool gather(const braid_plan *plan, info_data *d) {
    if (braid_plan_summary_get(plan, &d->s) != BRAID_OK)
        return cli_err("%s", braid_last_error());
    d->dev = calloc(d->s.devices ? d->s.devices : 1, sizeof *d->dev);
    d->arena = calloc(d->s.arenas ? d->s.arenas : 1, sizeof *d->arena);
    if (!d->dev || !d->arena) return cli_err("out of memory");
    for (uint32_t i = 0; i < d->s.devices; i++) {
        if (braid_plan_device_get(plan, i, &d->dev[i]) != BRAID_OK)
            return cli_err("%s", braid_last_error());
        if (strcmp(d->dev[i].name, "cpu") != 0) d->streams += d->dev[i].queues;
    }
    for (uint32_t i = 0; i < d->s.arenas; i++)
        if (braid_plan_arena_get(plan, i, &d->arena[i]) != BRAID_OK)
            return cli_err("%s", braid_last_error());
    return true;
}

/* "1.50 MiB" (binary units) into buf. */
static const char *human(uint64_t bytes, char *buf, size_t size) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, size, "%.2f %s", v, unit[u]);
    return buf;
}

static const char *plural(uint64_t n) {
    return n == 1 ? "" : "s";
}

/* ---- text ---------------------------------------------------------------- */

static void print_arena(uint32_t i, const braid_plan_arena_info *a) {
    char size[32], lb[32];
    printf("  arena %" PRIu32 ": %s %s, %" PRIu64 " bytes (%s), lower bound "
           "%" PRIu64 " bytes (%s)",
           i, a->device, a->kind == BRAID_ARENA_PINNED ? "pinned" : "device",
           a->bytes, human(a->bytes, size, sizeof size), a->lower_bound_bytes,
           human(a->lower_bound_bytes, lb, sizeof lb));
    if (a->lower_bound_bytes)
        printf(", ratio %.3f\n",
               (double)a->bytes / (double)a->lower_bound_bytes);
    else
        printf("\n");
}

static void print_text(const info_data *d) {
    const braid_plan_summary *s = &d->s;
    char size[32];
    printf("graph: %s (%" PRIu32 " node%s)\n", d->file,
           braid_graph_node_count(d->graph),
           plural(braid_graph_node_count(d->graph)));
    printf("devices:");
    for (uint32_t i = 0; i < s->devices; i++)
        printf("%s %s (%" PRIu32 " node%s, %" PRIu32 " queue%s)", i ? "," : "",
               d->dev[i].name, d->dev[i].nodes, plural(d->dev[i].nodes),
               d->dev[i].queues, plural(d->dev[i].queues));
    printf("\nnodes: %" PRIu32 " (%" PRIu32 " fused kernel%s, %" PRIu32
           " cop%s moving %s per run, %" PRIu32 " chunk node%s)\n",
           s->nodes, s->fused_kernels, plural(s->fused_kernels), s->copies,
           s->copies == 1 ? "y" : "ies",
           human(s->copy_bytes, size, sizeof size), s->chunk_nodes,
           plural(s->chunk_nodes));
    printf("queues: %" PRIu32 " (%" PRIu32 " GPU stream%s)\n", s->queues,
           d->streams, plural(d->streams));
    printf("events: %" PRIu32 " (%" PRIu32 " for memory reuse)\n", s->events,
           s->reuse_events);
    printf("memory: %" PRIu32 " arena%s, %" PRIu64 " bytes (%s), lower bound "
           "%" PRIu64 " bytes\n",
           s->arenas, plural(s->arenas), s->arena_bytes,
           human(s->arena_bytes, size, sizeof size), s->lower_bound_bytes);
    for (uint32_t i = 0; i < s->arenas; i++)
        print_arena(i, &d->arena[i]);
    cli_print_provenance(stdout, d->in);
    cli_print_placement_note(stdout, d->in->plan);
    if (d->verbose) cli_print_placement(stdout, d->in->plan);
}

/* ---- JSON ---------------------------------------------------------------- */

static void print_json_lists(const info_data *d) {
    printf("  \"devices\": [");
    for (uint32_t i = 0; i < d->s.devices; i++) {
        printf("%s\n    {\"name\": ", i ? "," : "");
        cli_json_string(stdout, d->dev[i].name);
        printf(", \"nodes\": %" PRIu32 ", \"queues\": %" PRIu32 "}",
               d->dev[i].nodes, d->dev[i].queues);
    }
    printf("%s],\n  \"memory\": [", d->s.devices ? "\n  " : "");
    for (uint32_t i = 0; i < d->s.arenas; i++) {
        const braid_plan_arena_info *a = &d->arena[i];
        printf("%s\n    {\"arena\": %" PRIu32 ", \"device\": ", i ? "," : "",
               i);
        cli_json_string(stdout, a->device);
        printf(", \"kind\": \"%s\", \"arena_bytes\": %" PRIu64
               ", \"lower_bound_bytes\": %" PRIu64 ", \"ratio\": ",
               a->kind == BRAID_ARENA_PINNED ? "pinned" : "device", a->bytes,
               a->lower_bound_bytes);
        if (a->lower_bound_bytes)
            printf("%.6f}", (double)a->bytes / (double)a->lower_bound_bytes);
        else
            printf("null}");
    }
    printf("%s]\n", d->s.arenas ? "\n  " : "");
}

static void print_json(const info_data *d) {
    const braid_plan_summary *s = &d->s;
    printf("{\n  \"file\": ");
    cli_json_string(stdout, d->file);
    printf(",\n  \"graph_nodes\": %" PRIu32 ",\n",
           braid_graph_node_count(d->graph));
    printf("  \"nodes\": %" PRIu32 ",\n  \"fused_kernels\": %" PRIu32
           ",\n  \"copies\": %" PRIu32 ",\n  \"copy_bytes\": %" PRIu64
           ",\n  \"chunk_nodes\": %" PRIu32 ",\n",
           s->nodes, s->fused_kernels, s->copies, s->copy_bytes,
           s->chunk_nodes);
    printf("  \"queues\": %" PRIu32 ",\n  \"streams\": %" PRIu32
           ",\n  \"events\": %" PRIu32 ",\n  \"reuse_events\": %" PRIu32 ",\n",
           s->queues, d->streams, s->events, s->reuse_events);
    printf("  \"arena_bytes\": %" PRIu64 ",\n  \"lower_bound_bytes\": %" PRIu64
           ",\n",
           s->arena_bytes, s->lower_bound_bytes);
    cli_print_provenance_json(stdout, d->in);
    if (d->verbose) cli_print_placement_json(stdout, d->in->plan);
    print_json_lists(d);
    printf("}\n");
}

/* ---- the command --------------------------------------------------------- */

int cli_info(int argc, char **argv) {
    const char *file = NULL;
    bool json = false, verbose = false;
    cli_compile_flags flags = {0};
    const cli_extra_option extra[] = {{"--json", &json, NULL},
                                      {"--verbose", &verbose, NULL},
                                      {"-v", &verbose, NULL}};
    int rc = cli_parse_command("info", argc, argv, extra, 3, &file, &flags);
    if (rc < 0) cli_print_help(stdout);
    if (rc != CLI_EXIT_OK) return rc < 0 ? CLI_EXIT_OK : rc;
    cli_input in;
    bool opened = cli_open_file(file, &flags, -1, false, &in);
    info_data d = {
        .file = file, .graph = in.graph, .in = &in, .verbose = verbose};
    bool ok = opened && gather(in.plan, &d);
    if (ok && json)
        print_json(&d);
    else if (ok)
        print_text(&d);
    if (ok && (fflush(stdout) != 0 || ferror(stdout)))
        ok = cli_err("info: writing the output failed");
    free(d.dev);
    free(d.arena);
    cli_input_free(&in);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
