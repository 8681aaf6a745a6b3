/* tools/cli_place.c — where each node went and why (braid info --verbose,
 * compile/run --verbose), from the decisions the place pass recorded
 * (braid_plan_placement_get), and the note printed when a listed GPU got
 * no work. docs/cli.md shows the output. */
#define _POSIX_C_SOURCE 200809L

#include "tools/cli.h"

#include <math.h>
#include <string.h>

/* "1.23 ms", "45.6 us", "inf" (a device that cannot run the node). */
static const char *seconds_str(double s, char *buf, size_t size) {
    if (!isfinite(s))
        snprintf(buf, size, "cannot");
    else if (s >= 1e-3)
        snprintf(buf, size, "%.3g ms", s * 1e3);
    else
        snprintf(buf, size, "%.3g us", s * 1e6);
    return buf;
}

/* Name of plan device d ("cpu"), or "?". */
static const char *device_name(const braid_plan *plan, uint32_t d,
                               braid_plan_device_info *tmp) {
    return braid_plan_device_get(plan, d, tmp) == BRAID_OK ? tmp->name : "?";
}

static void print_one(FILE *out, const braid_plan *plan,
                      const braid_node_placement *pl) {
    char id[16] = "new";
    if (pl->node != BRAID_INVALID_ID) snprintf(id, sizeof id, "%%%u", pl->node);
    char what[96];
    snprintf(what, sizeof what, "%s %s%s%s", id, pl->op, pl->name ? " " : "",
             pl->name ? pl->name : "");
    fprintf(out, "  %-28s %-8s %s", what, pl->device, pl->why);
    for (uint32_t d = 0; d < pl->ndevices; d++) {
        char c[32], t[32];
        braid_plan_device_info tmp;
        fprintf(out, "%s %s %s", d ? "," : ";", device_name(plan, d, &tmp),
                seconds_str(pl->cost_s[d], c, sizeof c));
        if (pl->transfer_s[d] > 0)
            fprintf(out, " (copies %s)",
                    seconds_str(pl->transfer_s[d], t, sizeof t));
    }
    fputc('\n', out);
}

void cli_print_placement(FILE *out, const braid_plan *plan) {
    uint32_t n = braid_plan_placement_count(plan);
    if (n == 0) {
        fprintf(out, "placement: not recorded (a plan loaded from a file; "
                     "give a compile option, e.g. --devices, to compile its "
                     "graph again)\n");
        return;
    }
    fprintf(out, "placement (node, device, why; for cost-model choices the "
                 "modelled time on each device, copies included):\n");
    for (uint32_t i = 0; i < n; i++) {
        braid_node_placement pl;
        if (braid_plan_placement_get(plan, i, &pl) == BRAID_OK)
            print_one(out, plan, &pl);
    }
}

/* `, "key": {"cpu": 1.5e-06, "cuda:0": null}` (null: cannot run there). */
static void print_seconds_json(FILE *out, const braid_plan *plan,
                               const char *key, const double *s, uint32_t n) {
    fprintf(out, ", \"%s\": {", key);
    for (uint32_t d = 0; d < n; d++) {
        braid_plan_device_info tmp;
        fprintf(out, "%s\"%s\": ", d ? ", " : "", device_name(plan, d, &tmp));
        if (isfinite(s[d]))
            fprintf(out, "%.9g", s[d]);
        else
            fprintf(out, "null");
    }
    fprintf(out, "}");
}

void cli_print_placement_json(FILE *out, const braid_plan *plan) {
    uint32_t n = braid_plan_placement_count(plan);
    fprintf(out, "  \"placement\": [");
    for (uint32_t i = 0; i < n; i++) {
        braid_node_placement pl;
        if (braid_plan_placement_get(plan, i, &pl) != BRAID_OK) continue;
        fprintf(out, "%s\n    {\"node\": ", i ? "," : "");
        if (pl.node == BRAID_INVALID_ID)
            fprintf(out, "null");
        else
            fprintf(out, "%u", pl.node);
        fprintf(out, ", \"op\": \"%s\", \"name\": ", pl.op);
        cli_json_string(out, pl.name);
        fprintf(out, ", \"device\": \"%s\", \"reason\": \"%s\"", pl.device,
                pl.why);
        if (pl.ndevices) {
            print_seconds_json(out, plan, "cost_s", pl.cost_s, pl.ndevices);
            print_seconds_json(out, plan, "copies_s", pl.transfer_s,
                               pl.ndevices);
        }
        fprintf(out, "}");
    }
    fprintf(out, "%s],\n", n ? "\n  " : "");
}

/* GPUs listed that run nothing, with the cost model's reason. */
void cli_print_placement_note(FILE *out, const braid_plan *plan) {
    braid_plan_summary s;
    if (braid_plan_summary_get(plan, &s) != BRAID_OK) return;
    for (uint32_t i = 0; i < s.devices; i++) {
        braid_plan_device_info d;
        if (braid_plan_device_get(plan, i, &d) != BRAID_OK ||
            !strcmp(d.name, "cpu") || d.nodes > 0)
            continue;
        fprintf(out,
                "note: nothing runs on %s: the cost model found the cpu "
                "cheaper for every node (--verbose shows each node's "
                "modelled time per device). To run on the GPU anyway, use "
                "--devices %s (no cpu in the list: everything a GPU can "
                "run goes there) or a device hint (device=\"%s\" on a "
                "node of the .graph file).\n",
                d.name, d.name, d.name);
    }
}
