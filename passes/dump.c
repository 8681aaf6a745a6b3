/* passes/dump.c — the plan's IR as text, for BRAID_DUMP=after:<pass>.
 *
 * The graph part is exactly the .graph text format (graph/text_print.c);
 * each node line gets a trailing comment with what passes decided so far:
 * device, queue, place and, for fused nodes, the program's member ops.
 * Between passes ids are topological, so line order is id order. */
#include "passes/passes.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void put_program(const bp_plan *p, const bp_program *prog, FILE *out) {
    fprintf(out, " %s{", bp_program_kind_name(prog->kind));
    int first = 1;
    for (uint32_t i = 0; i < prog->ninstr; i++) {
        braid_op op = prog->instr[i].op;
        if (op == BP_INSTR_LOAD || op == BP_INSTR_CONST) continue;
        fprintf(out, "%s%s", first ? "" : ",",
                op == BP_INSTR_GATHER  ? "gather"
                : op == BP_INSTR_STORE ? "store"
                                       : bg_op(op)->name);
        first = 0;
    }
    (void)p;
    fputc('}', out);
}

static void put_annotation(const bp_plan *p, uint32_t id, FILE *out) {
    const bp_node_info *in = &p->res.info[id];
    char buf[64];
    fprintf(out, "  # %s", bp_device_str(in->device, buf, sizeof buf));
    if (in->queue < p->res.nqueues)
        fprintf(out, " q=%s", bp_queue_str(p, in->queue, buf, sizeof buf));
    const bp_tensor_place *pl = &in->place;
    if (pl->storage == BP_STORAGE_ARENA)
        fprintf(out, " arena%" PRIu32 "+%" PRIu64 "/%" PRIu64, pl->arena,
                pl->offset, pl->bytes);
    else if (pl->storage == BP_STORAGE_VIEW)
        fprintf(out, " %sview(%%%" PRIu32 "+%" PRIu64 ")",
                pl->layout ? "strided " : "", pl->base, pl->offset);
    if (in->program < p->res.nprograms)
        put_program(p, &p->res.programs[in->program], out);
    if (in->chunk) fputs(" chunk", out);
}

/* Node id of a line "%<id> = ...", or BG_NONE for other lines. */
static uint32_t line_node(const char *line, size_t len) {
    if (len < 2 || line[0] != '%') return BG_NONE;
    uint32_t id = 0;
    size_t i = 1;
    for (; i < len && line[i] >= '0' && line[i] <= '9'; i++)
        id = id * 10 + (uint32_t)(line[i] - '0');
    return i > 1 && i < len && line[i] == ' ' ? id : BG_NONE;
}

void bp_plan_dump(const bp_plan *p, const char *after_pass, FILE *out) {
    fprintf(out, "# braid IR after pass \"%s\"\n", after_pass);
    char *text = NULL;
    size_t len = 0;
    if (braid_graph_print(p->res.graph, &text, &len) != BRAID_OK) {
        fprintf(out, "# (cannot print: %s)\n", braid_last_error());
        return;
    }
    for (const char *line = text; line < text + len;) {
        const char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        fwrite(line, 1, n, out);
        uint32_t id = line_node(line, n);
        if (id < p->res.ninfo) put_annotation(p, id, out);
        fputc('\n', out);
        line += n + (nl != NULL);
    }
    free(text);
}
