/* onnx/ops_einsum.c — Einsum's common forms: one or two operands, each
 * label at most once per operand, no ellipsis. Two operands become one
 * batched matmul: labels only one side has that the output drops are
 * summed first, then each side is permuted to [batch, own, contracted]
 * (resp. [batch, contracted, own]) and reshaped to rank 3. */
#include "onnx/onnx_internal.h"

#include <string.h>

typedef struct es_term {
    char lab[BRAID_MAX_RANK + 1]; /* labels, NUL-terminated */
    int n;
} es_term;

/* Parses "ij,jk->ik"; false when outside the supported forms. */
static bool parse(const char *eq, es_term *in, int *nin, es_term *out) {
    int k = 0;
    memset(in, 0, 2 * sizeof *in);
    memset(out, 0, sizeof *out);
    const char *p = eq;
    es_term *t = &in[0];
    bool arrow = false;
    for (; *p; p++) {
        char c = *p;
        if (c == ' ') continue;
        if (c == ',') {
            if (arrow || ++k > 1) return false;
            t = &in[k];
        } else if (c == '-' && p[1] == '>') {
            if (arrow) return false;
            arrow = true;
            t = out;
            p++;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            if (t->n == BRAID_MAX_RANK || strchr(t->lab, c)) return false;
            t->lab[t->n++] = c;
        } else {
            return false; /* ellipsis or junk */
        }
    }
    *nin = k + 1;
    if (!arrow) { /* implicit output: labels seen once, sorted */
        for (char c = 'A'; c <= 'z'; c++) {
            int seen = (strchr(in[0].lab, c) != NULL) +
                       (*nin > 1 && strchr(in[1].lab, c) != NULL);
            if (seen == 1 && c != '\0' && ((c >= 'a' && c <= 'z') ||
                                          (c >= 'A' && c <= 'Z')))
                out->lab[out->n++] = c;
        }
    }
    for (int i = 0; i < out->n; i++)
        if (!strchr(in[0].lab, out->lab[i]) &&
            !(*nin > 1 && strchr(in[1].lab, out->lab[i])))
            return false;
    return true;
}

/* Sums x over its labels that neither `other` nor `out` has. */
static braid_tensor sum_private(ox_node *n, braid_tensor x, es_term *t,
                                const char *other, const es_term *out) {
    int axes[BRAID_MAX_RANK], na = 0;
    es_term kept = {{0}, 0};
    for (int i = 0; i < t->n; i++) {
        char c = t->lab[i];
        if (!strchr(other, c) && !strchr(out->lab, c)) axes[na++] = i;
        else kept.lab[kept.n++] = c;
    }
    if (!na) return x;
    *t = kept;
    return braid_sum(n->g, x, na, axes, false);
}

/* x (labels t) permuted to the label order `order`. */
static braid_tensor to_order(ox_node *n, braid_tensor x, const es_term *t,
                             const char *order) {
    int perm[BRAID_MAX_RANK];
    bool id = true;
    for (int i = 0; i < t->n; i++) {
        perm[i] = (int)(strchr(t->lab, order[i]) - t->lab);
        id = id && perm[i] == i;
    }
    return id ? x : braid_permute(n->g, x, perm);
}

static int64_t dim_of(const es_term *t, const int64_t *d, char c) {
    return d[strchr(t->lab, c) - t->lab];
}

static braid_status two(ox_node *n, braid_tensor a, braid_tensor b,
                        es_term *ta, es_term *tb, const es_term *to) {
    braid_graph *g = n->g;
    a = sum_private(n, a, ta, tb->lab, to);
    b = sum_private(n, b, tb, ta->lab, to);
    int64_t da[BRAID_MAX_RANK], db[BRAID_MAX_RANK];
    ox_rank(n, a, da);
    ox_rank(n, b, db);
    char batch[9] = "", own_a[9] = "", own_b[9] = "", con[9] = "";
    int nb = 0, na = 0, nbo = 0, nc = 0;
    int64_t pb = 1, pa = 1, pbo = 1, pc = 1;
    for (int i = 0; i < ta->n; i++) {
        char c = ta->lab[i];
        bool inb = strchr(tb->lab, c), ino = strchr(to->lab, c);
        if (inb && dim_of(ta, da, c) != dim_of(tb, db, c))
            return ox_node_fail(n, BRAID_ERR_SHAPE, "label %c: %lld vs %lld",
                                c, (long long)dim_of(ta, da, c),
                                (long long)dim_of(tb, db, c));
        if (inb && ino) batch[nb++] = c, pb *= da[i];
        else if (inb) con[nc++] = c, pc *= da[i];
        else own_a[na++] = c, pa *= da[i];
    }
    for (int i = 0; i < tb->n; i++)
        if (!strchr(ta->lab, tb->lab[i])) own_b[nbo++] = tb->lab[i], pbo *= db[i];
    /* each holds three of the 8-label strings above: sized for the worst
     * case the compiler sees (a's labels fill oa exactly once in truth) */
    char oa[3 * 8 + 1], ob[3 * 8 + 1], res[3 * 8 + 1];
    snprintf(oa, sizeof oa, "%s%s%s", batch, own_a, con);
    snprintf(ob, sizeof ob, "%s%s%s", batch, con, own_b);
    int rr = snprintf(res, sizeof res, "%s%s%s", batch, own_a, own_b);
    if (rr > BRAID_MAX_RANK)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "result rank %d", rr);
    a = braid_reshape(g, to_order(n, a, ta, oa), 3, (int64_t[]){pb, pa, pc});
    b = braid_reshape(g, to_order(n, b, tb, ob), 3, (int64_t[]){pb, pc, pbo});
    braid_tensor m = braid_matmul(g, a, b, 0);
    int64_t rd[BRAID_MAX_RANK];
    es_term tr = {{0}, rr};
    memcpy(tr.lab, res, (size_t)rr);
    for (int i = 0; i < rr; i++) {
        char c = res[i];
        rd[i] = strchr(ta->lab, c) ? dim_of(ta, da, c) : dim_of(tb, db, c);
    }
    m = braid_reshape(g, m, rr, rd);
    ox_out(n, 0, to_order(n, m, &tr, to->lab), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_einsum(ox_node *n) {
    char eq[128];
    ox_attr_str(n, "equation", eq, sizeof eq, "");
    es_term in[2], out;
    int nin;
    if (!parse(eq, in, &nin, &out) || nin != n->nin)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "equation \"%s\" (braid "
                            "maps one or two operands, each label once per "
                            "operand, no ellipsis)", eq);
    braid_tensor a = ox_in(n, 0);
    braid_dtype t = ox_tdtype(n, a);
    if (ox_rank(n, a, NULL) != in[0].n)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "operand 0 has rank %d for "
                            "\"%s\"", ox_rank(n, a, NULL), in[0].lab);
    if (nin == 1) {
        a = sum_private(n, a, &in[0], "", &out);
        ox_out(n, 0, to_order(n, a, &in[0], out.lab), ox_in_elem(n, 0));
        return BRAID_OK;
    }
    braid_tensor b = ox_in(n, 1);
    if (ox_rank(n, b, NULL) != in[1].n)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "operand 1 has rank %d for "
                            "\"%s\"", ox_rank(n, b, NULL), in[1].lab);
    if (braid_dtype_is_float(t)) return two(n, a, b, &in[0], &in[1], &out);
    /* integers through f64 (exact for i32 products of moderate size) */
    braid_status s = two(n, braid_cast(n->g, a, BRAID_F64),
                         braid_cast(n->g, b, BRAID_F64), &in[0], &in[1], &out);
    if (s == BRAID_OK) n->out[0] = braid_cast(n->g, n->out[0], t);
    return s;
}

const ox_op ox_ops_einsum[] = {
    {"Einsum", 12, map_einsum, 0},
    {NULL, 0, NULL, 0},
};
