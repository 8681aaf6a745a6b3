/* tests/support/edge_tables.h — the edge values docs/ops.md ("More
 * elementwise ops") defines for the elemwise helper's ops, as literal
 * tables shared by the CPU suite (tests/test_ops_edges.c) and the GPU
 * suite (tests/test_cuda_dtypes.c): mod and fmod signs, zero divisors,
 * infinities and INT32_MIN % -1; shifts by counts outside [0, 32); sign of
 * ±0 and NaN; round's ties to even. Header-only: static tables. */
#ifndef BRAID_TESTS_EDGE_TABLES_H
#define BRAID_TESTS_EDGE_TABLES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "braid/braid.h"

#define TS_EDGE_MAX 16

/* One table: y[i] = op(x[i][, z[i]]) == want[i] (bit for bit; NaN by
 * class), for every dtype in the mask. */
typedef struct ts_edge_table {
    braid_op op;
    unsigned dtypes; /* bit 1u << dtype */
    int n;           /* elements */
    bool binary;     /* z is read */
    double x[TS_EDGE_MAX], z[TS_EDGE_MAX], want[TS_EDGE_MAX];
} ts_edge_table;

#define TS_EDGE_FLOATS 0xfu /* f32, f16, bf16, f64 */
#define TS_EDGE_I32 (1u << BRAID_I32)
#define TS_EDGE_MIN ((double)INT32_MIN)

static const ts_edge_table ts_edge_tables[] = {
    {BRAID_OP_MOD, TS_EDGE_FLOATS, 13, true,
     {5, -5, 5, -5, 4, -4, 4, 5, INFINITY, 5, -5, NAN, 5.5},
     {3, 3, -3, -3, 2, 2, -2, 0, 3, INFINITY, INFINITY, 1, 2},
     {2, 1, -1, -2, 0.0, 0.0, -0.0, NAN, NAN, 5, INFINITY, NAN, 1.5}},
    {BRAID_OP_FMOD, TS_EDGE_FLOATS, 13, true,
     {5, -5, 5, -5, 4, -4, 4, 5, INFINITY, 5, -5, NAN, 5.5},
     {3, 3, -3, -3, 2, 2, -2, 0, 3, INFINITY, INFINITY, 1, 2},
     {2, -2, 2, -2, 0.0, -0.0, 0.0, NAN, NAN, 5, -5, NAN, 1.5}},
    {BRAID_OP_MOD, TS_EDGE_I32, 10, true,
     {7, -7, 7, -7, 5, TS_EDGE_MIN, TS_EDGE_MIN, INT32_MAX, 0, -6},
     {3, 3, -3, -3, 0, -1, 3, -2, -4, 3},
     {1, 2, -2, -1, 0, 0, 1, -1, 0, 0}},
    {BRAID_OP_FMOD, TS_EDGE_I32, 10, true,
     {7, -7, 7, -7, 5, TS_EDGE_MIN, TS_EDGE_MIN, INT32_MAX, 0, -6},
     {3, 3, -3, -3, 0, -1, 3, -2, -4, 3},
     {1, -1, 1, -1, 0, 0, -2, 1, 0, 0}},
    {BRAID_OP_SHIFT_LEFT, TS_EDGE_I32, 10, true,
     {1, 1, 3, -8, -8, 8, TS_EDGE_MIN, -1, 5, 0x40000000},
     {31, 32, -1, 1, 40, 40, 31, 0, 2, 1},
     {TS_EDGE_MIN, 0, 0, -16, 0, 0, 0, -1, 20, TS_EDGE_MIN}},
    {BRAID_OP_SHIFT_RIGHT, TS_EDGE_I32, 10, true,
     {1, 1, 3, -8, -8, 8, TS_EDGE_MIN, -1, 5, 0x40000000},
     {31, 32, -1, 1, 40, 40, 31, 0, 2, 1},
     {0, 0, 0, -4, -1, 0, -1, -1, 1, 0x20000000}},
    {BRAID_OP_BITWISE_AND, TS_EDGE_I32, 4, true,
     {-1, 0x0f0f, TS_EDGE_MIN, 6}, {0x0f0f, 0x00ff, -1, 3},
     {0x0f0f, 0x000f, TS_EDGE_MIN, 2}},
    {BRAID_OP_BITWISE_OR, TS_EDGE_I32, 4, true,
     {-1, 0x0f0f, TS_EDGE_MIN, 6}, {0x0f0f, 0x00ff, -1, 3},
     {-1, 0x0fff, -1, 7}},
    {BRAID_OP_BITWISE_XOR, TS_EDGE_I32, 4, true,
     {-1, 0x0f0f, TS_EDGE_MIN, 6}, {0x0f0f, 0x00ff, -1, 3},
     {-0x0f10, 0x0ff0, INT32_MAX, 5}},
    {BRAID_OP_BITWISE_NOT, TS_EDGE_I32, 4, false,
     {-1, 0x0f0f, TS_EDGE_MIN, 6}, {0}, {0, -0x0f10, INT32_MAX, -7}},
    {BRAID_OP_SIGN, TS_EDGE_FLOATS, 8, false,
     {-0.0, 0.0, NAN, -3, 2, INFINITY, -INFINITY, 1e-3}, {0},
     {-0.0, 0.0, NAN, -1, 1, 1, -1, 1}},
    {BRAID_OP_ROUND, TS_EDGE_FLOATS, 8, false,
     {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -0.0, NAN}, {0},
     {0.0, 2, 2, -0.0, -2, 2, -0.0, NAN}},
    {BRAID_OP_SIGN, TS_EDGE_I32, 5, false, {TS_EDGE_MIN, -5, 0, 7, INT32_MAX},
     {0}, {-1, -1, 0, 1, 1}},
    /* domain edges of the inverse functions (f64: exact constants) */
    {BRAID_OP_ATANH, 1u << BRAID_F64, 5, false, {1, -1, 1.5, 0.0, -0.0}, {0},
     {INFINITY, -INFINITY, NAN, 0.0, -0.0}},
    {BRAID_OP_ACOSH, 1u << BRAID_F64, 5, false, {1, -1, 0.5, 0.0, -0.0}, {0},
     {0.0, NAN, NAN, NAN, NAN}},
};

#define TS_EDGE_COUNT ((int)(sizeof ts_edge_tables / sizeof ts_edge_tables[0]))

/* Same value: NaN by class, zeros by sign. */
static inline bool ts_edge_same(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

#endif /* BRAID_TESTS_EDGE_TABLES_H */
