/* runtime/cpu/cpu_sgemm.c — braid's own f32 GEMM against a packed B
 * (x86-64 with AVX-512F).
 *
 * Most of a transformer's CPU time is products of activations [M, K] with
 * constant weights [K, N]. OpenBLAS packs the weights again on every call
 * (and braid's pool splits each product into blocks of columns, each its
 * own call, each packing its A again); on AVX-512 cores its 0.3.21 kernels
 * reach about 60 % of the FMA peak on GPT-2's shapes. Here constant
 * weights are packed once, when the executor is made (br_cpu_derive; a B
 * that is not a constant is packed per run, a block of panels at a time in
 * the scratch, with the same result), into panels of
 * SG_NR columns: panel j holds columns [j·SG_NR, +SG_NR) as K rows of SG_NR
 * contiguous floats, zero-padded past N, stored K block by K block (all
 * panels' first SG_KC rows, then the next rows) so that one K block's
 * products stream through B in order. A product then runs a 12 × 32
 * register-blocked micro-kernel (24 accumulators) that broadcasts A
 * straight from its rows — no packing of A — and loads each B row of the
 * panel as two vectors; a last tile of at most 4 or 8 rows runs a 4- or
 * 8-row version of it.
 *
 * Loops, outermost first: blocks of SG_MC rows of A (they stay in L2), K
 * in blocks of SG_KC (a panel's block, 48 KiB, stays in L1 across the row
 * tiles), panels, row tiles of SG_MR; when C outgrows L2 and a row block's
 * A for all of K fits it, panels before K blocks instead (run_task), so C
 * is not written out and read back once per K block. The pool splits (row
 * block, group of panels) tasks. Every output element is the sum over k in
 * order, K block by K block, so the result is the same bits for any thread
 * count, split or loop order. While a panel's row tiles run, the next
 * block is prefetched, two lines with each step of k of each tile: GPT-2's
 * lm_head streams 154 MB of weights.
 *
 * The packed copy doubles the weights' memory (GPT-2 small: ~650 MB with
 * lm_head);
 * BRAID_CPU_GEMM=openblas keeps every product in OpenBLAS (and no copy). */
#include "runtime/cpu/cpu_kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_X86 1
#include <immintrin.h>
#endif

#define SG_MR 12          /* rows of a micro-tile */
#define SG_NR BR_SGEMM_NR /* columns of a panel: two AVX-512 vectors */
#define SG_KC 384         /* K per block */
#define SG_MC 240 /* rows of A per block (20 tiles, 360 KiB at SG_KC) */
/* run_task goes panel by panel (each panel's K blocks in a row) when C is
 * over SG_PANEL_C bytes and a row block's A, every K block of it, at most
 * SG_PANEL_A. */
#define SG_PANEL_C ((size_t)4 << 20)
#define SG_PANEL_A ((size_t)512 << 10)

/* br_sgemm_pack makes the header, then the panels SG_HEADER bytes in (64-byte
 * aligned): one allocation, so the executor frees it with free(). */
#define SG_HEADER 64
_Static_assert(sizeof(br_sgemm_packed) <= SG_HEADER, "header room");

bool br_sgemm_enabled(void) {
#ifdef SG_X86
    static int openblas;
    return !br_env_is("BRAID_CPU_GEMM", "openblas", &openblas) &&
           br_cpu_avx512f();
#else
    return false;
#endif
}

/* Where row k of panel j starts in a packed operand of K rows and `panels`
 * panels: K blocks of SG_KC rows one after another, each holding every
 * panel's rows of that block in turn, so the products of one K block read
 * their panels as one sequential stream. */
static size_t panel_row(int K, int panels, int j, int k) {
    int pc = k / SG_KC * SG_KC;
    int kc = K - pc < SG_KC ? K - pc : SG_KC;
    return ((size_t)pc * (size_t)panels + (size_t)j * (size_t)kc +
            (size_t)(k - pc)) *
           SG_NR;
}

size_t br_sgemm_panel_row(int K, int panels, int j, int k) {
    return panel_row(K, panels, j, k);
}

void br_sgemm_zero_padding(float *data, int K, int N, int k0, int k1) {
    int panels = (N + SG_NR - 1) / SG_NR, used = N - (panels - 1) * SG_NR;
    if (N <= 0 || used == SG_NR) return;
    for (int k = k0; k < k1; k++)
        memset(data + panel_row(K, panels, panels - 1, k) + used, 0,
               (size_t)(SG_NR - used) * sizeof(float));
}

size_t br_sgemm_apack_floats(int M, int K) {
    return (size_t)((M + SG_MR - 1) / SG_MR) * SG_MR * (size_t)K;
}

size_t br_sgemm_apack_at(int K, int i, int k) {
    return ((size_t)(i / SG_MR) * (size_t)K + (size_t)k) * SG_MR +
           (size_t)(i % SG_MR);
}

typedef struct pack_job {
    const float *B;
    int K, N, ldb;
    bool tb;
    int panels; /* of the whole packed operand */
    float *dst;
} pack_job;

/* Panels [b, e) of the packed operand. */
static void pack_range(void *ctx, int64_t b, int64_t e) {
    const pack_job *j = ctx;
    for (int64_t p = b; p < e; p++) {
        int n0 = (int)p * SG_NR;
        int w = j->N - n0 < SG_NR ? j->N - n0 : SG_NR;
        for (int k = 0; k < j->K; k++) {
            float *row = j->dst + panel_row(j->K, j->panels, (int)p, k);
            if (j->tb)
                for (int c = 0; c < w; c++)
                    row[c] = j->B[(size_t)(n0 + c) * (size_t)j->ldb + k];
            else
                memcpy(row, j->B + (size_t)k * (size_t)j->ldb + n0,
                       (size_t)w * sizeof(float));
            for (int c = w; c < SG_NR; c++)
                row[c] = 0.0f;
        }
    }
}

/* Most bytes br_sgemm_pack_scratch asks for (whole panels, at least one). */
#define SG_PACK_MAX ((size_t)8 << 20)

size_t br_sgemm_pack_scratch(int64_t K, int64_t N) {
    if (K <= 0 || N <= 0) return 0;
    size_t panel = (size_t)K * SG_NR * sizeof(float);
    size_t panels = (size_t)((N + SG_NR - 1) / SG_NR);
    size_t fit = SG_PACK_MAX / panel;
    if (fit < 1) fit = 1;
    return (fit < panels ? fit : panels) * panel;
}

void br_sgemm_pack_into(const float *B, int K, int ldb, bool tb, int n0,
                        int ncols, float *dst, br_pool *pool,
                        br_sgemm_packed *view) {
    /* columns [n0, n0 + ncols) of op(B) are those of the operand starting
     * at column n0 (row n0 when transposed) */
    const float *b0 = B + (size_t)n0 * (tb ? (size_t)ldb : 1);
    int panels = (ncols + SG_NR - 1) / SG_NR;
    pack_job j = {b0, K, ncols, ldb, tb, panels, dst};
    br_parallel_for(pool, panels, 1 + (int64_t)BR_GRAIN / K, pack_range, &j);
    view->K = K;
    view->N = ncols;
    view->panels = panels;
    view->data = dst;
}

br_sgemm_packed *br_sgemm_pack(const float *B, int K, int N, int ldb, bool tb,
                               br_pool *pool) {
    if (!br_sgemm_enabled() || K <= 0 || N <= 0) return NULL;
    int panels = (N + SG_NR - 1) / SG_NR;
    size_t bytes =
        SG_HEADER + (size_t)panels * (size_t)K * SG_NR * sizeof(float);
    br_sgemm_packed *p = aligned_alloc(64, br_lines(bytes));
    if (!p) return NULL;
    /* huge pages where the kernel gives them: packing GPT-2's 650 MB into
     * 4 KiB pages spent most of its time faulting and zeroing them */
    bg_huge_advise(p, bytes);
    br_sgemm_pack_into(B, K, ldb, tb, 0, N, (float *)((char *)p + SG_HEADER),
                       pool, p);
    return p;
}

#ifdef SG_X86

/* The micro-kernel for R rows (12 for whole tiles; 8 and 4 for a last
 * tile of fewer rows, which would otherwise cost a whole tile: ResNet's
 * 64-channel products ran 15 % slower for their last 4 rows). Every
 * element is the same sum over k in order whatever R. */
#define SG_MICRO(NAME, R, AT)                                                  \
    __attribute__((target("avx512f"))) static void NAME(                       \
        int kc, const float *a, size_t lda, const float *bp, float *c,         \
        size_t ldc, unsigned how, const sg_epi *e, int mrows, int ncols,       \
        const char *pf, int npf) {                                             \
        (void)lda; /* the packed versions' offsets do not use it */            \
        __m512 acc[R][2];                                                      \
        for (int i = 0; i < R; i++)                                            \
            acc[i][0] = acc[i][1] = _mm512_setzero_ps();                       \
        int k = 0;                                                             \
        for (; k < kc && 2 * k < npf; k++) { /* two lines of pf a step */      \
            _mm_prefetch(pf + 128 * k, _MM_HINT_T1);                           \
            _mm_prefetch(pf + 128 * k + 64, _MM_HINT_T1);                      \
            SG_STEP(R, AT);                                                    \
        }                                                                      \
        _Pragma("GCC unroll 4") for (; k < kc; k++)                            \
            SG_STEP(R, AT);                                                    \
        for (int l = 2 * k; l < npf; l++) /* more lines than 2 per step */     \
            _mm_prefetch(pf + 64 * l, _MM_HINT_T1);                            \
        store_tile(acc, c, ldc, how, e, mrows, ncols);                         \
    }

/* One k of a micro-kernel: B's row k (two vectors) times A's column k,
 * broadcast, into the R × 2 accumulators. */
#define SG_STEP(R, AT)                                                         \
    do {                                                                       \
        __m512 b0 = _mm512_load_ps(bp + (size_t)k * SG_NR);                    \
        __m512 b1 = _mm512_load_ps(bp + (size_t)k * SG_NR + 16);               \
        _Pragma("GCC unroll 12") for (int i = 0; i < R; i++) {                 \
            __m512 av = _mm512_set1_ps(a[AT]);                                 \
            acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);                    \
            acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);                    \
        }                                                                      \
    } while (0)

/* How a tile is stored (store_tile's `how`): SG_FIRST, the first K block
 * (stored, not added to C's partial sums); SG_STREAM, the one K block of
 * a product whose C is not read again soon (its full, aligned rows are
 * written with streaming stores, no read for ownership: see
 * br_sgemm_ep). */
#define SG_FIRST 1u
#define SG_STREAM 2u

/* A tile's part of the epilogue (br_sgemm_ep), given only with its last
 * K block: bias at its first row, res at its first element. */
typedef struct sg_epi {
    const float *bias;
    const float *res;
    size_t ldr;
    bool res_first, relu;
} sg_epi;

/* Rows [0, mrows) of the tile's sums into C (row stride ldc), its first
 * ncols columns: stored, or added to C's partial sums unless SG_FIRST;
 * then, with e (the last K block), the epilogue: the operations an
 * unfused pass after the product would make, in the same order: the same
 * bits. */
__attribute__((target("avx512f"))) static inline void
store_tile(__m512 (*acc)[2], float *c, size_t ldc, unsigned how,
           const sg_epi *e, int mrows, int ncols) {
    __mmask16 m0 = ncols >= 16 ? 0xffff : (__mmask16)((1u << ncols) - 1);
    __mmask16 m1 = ncols >= 32   ? 0xffff
                   : ncols <= 16 ? 0
                                 : (__mmask16)((1u << (ncols - 16)) - 1);
    bool stream = (how & SG_STREAM) && ncols == SG_NR;
    for (int i = 0; i < mrows; i++) {
        float *cr = c + (size_t)i * ldc;
        __m512 c0 = acc[i][0], c1 = acc[i][1];
        if (!(how & SG_FIRST)) {
            c0 = _mm512_add_ps(c0, _mm512_maskz_loadu_ps(m0, cr));
            c1 = _mm512_add_ps(c1, _mm512_maskz_loadu_ps(m1, cr + 16));
        }
        if (e && e->bias) {
            __m512 b = _mm512_set1_ps(e->bias[i]);
            c0 = _mm512_add_ps(c0, b);
            c1 = _mm512_add_ps(c1, b);
        }
        if (e) {
            const float *rr = e->res ? e->res + (size_t)i * e->ldr : NULL;
            c0 = br_epilogue16(c0, rr, m0, e->res_first, e->relu);
            c1 = br_epilogue16(c1, rr ? rr + 16 : NULL, m1, e->res_first,
                               e->relu);
        }
        if (stream && ((uintptr_t)cr & 63) == 0) {
            _mm512_stream_ps(cr, c0);
            _mm512_stream_ps(cr + 16, c1);
        } else {
            _mm512_mask_storeu_ps(cr, m0, c0);
            _mm512_mask_storeu_ps(cr + 16, m1, c1);
        }
    }
}

/* C[0..mrows, 0..ncols) (row stride ldc) = (first ? 0 : C) + A · Bp over kc
 * values of k: A's entry (i, k) at a[i·lda + k] (R rows readable, mrows ≤
 * R), or in the packed versions (micro*p, A packed in row tiles; lda
 * unused) at a[k·SG_MR + i]; bp a panel's block (kc rows of SG_NR).
 * Prefetches npf lines from pf, two with each step of k (a burst of them
 * at the start filled the core's line buffers and stalled the tile: a
 * tenth of GPT-2's kernel time). The offsets are constants of each version:
 * the packed ones with a run-time stride spilled a register per k. */
#define SG_ROWS_AT ((size_t)i * lda + (size_t)k)
#define SG_PACKED_AT ((size_t)k * SG_MR + (size_t)i)
SG_MICRO(micro12, 12, SG_ROWS_AT)
SG_MICRO(micro8, 8, SG_ROWS_AT)
SG_MICRO(micro4, 4, SG_ROWS_AT)
SG_MICRO(micro12p, 12, SG_PACKED_AT)
SG_MICRO(micro8p, 8, SG_PACKED_AT)
SG_MICRO(micro4p, 4, SG_PACKED_AT)

typedef void (*micro_fn)(int kc, const float *a, size_t lda, const float *bp,
                         float *c, size_t ldc, unsigned how, const sg_epi *e,
                         int mrows, int ncols, const char *pf, int npf);

/* The narrowest micro-kernel for a tile of `rows` rows (≤ SG_MR). */
static micro_fn pick_micro(bool apacked, int rows) {
    if (apacked) return rows <= 4 ? micro4p : rows <= 8 ? micro8p : micro12p;
    return rows <= 4 ? micro4 : rows <= 8 ? micro8 : micro12;
}

typedef struct run_job {
    int M, N, K, lda, ldc;
    bool apacked; /* A packed in row tiles (br_sgemm_run_pa), lda unused */
    const float *A;
    const br_sgemm_packed *B; /* count of them (a batch), the same shape */
    float *C;
    int64_t count;         /* products in the batch */
    size_t a_step, c_step; /* floats from one product's A, C to the next */
    br_sgemm_ep ep;        /* what happens as C is stored (all 0: nothing) */
    bool panel_major;      /* run_task: each panel's K blocks in a row */
    int64_t mblocks;   /* row blocks of SG_MC */
    int64_t per_group; /* panels per task */
} run_job;

/* A row block's rows [m0, m1) of one product (one of r's batch): its
 * whole tiles end at full; rows [full, m1) go through tail, a zero-padded
 * copy of their K block (packed A has zero rows there already). */
typedef struct row_block {
    const float *A;
    float *C;
    int m0, m1, full, tiles;
    float *tail;
} row_block;

/* K block [pc, pc + kc) of rows [full, m1) into rb->tail, zeros after
 * (those rows' sums are not stored, but stay finite). */
static void fill_tail(const run_job *r, const row_block *rb, int pc, int kc) {
    if (rb->full == rb->m1 || r->apacked) return;
    size_t row = (size_t)kc * sizeof(float);
    for (int i = rb->full; i < rb->m1; i++)
        memcpy(rb->tail + (size_t)(i - rb->full) * (size_t)kc,
               rb->A + (size_t)i * (size_t)r->lda + pc, row);
    memset(rb->tail + (size_t)(rb->m1 - rb->full) * (size_t)kc, 0,
           (size_t)(SG_MR - (rb->m1 - rb->full)) * row);
}

/* Every row tile of panel j's K block [pc, pc + kc), while the block at
 * next (nlines 64-byte lines, or none) is prefetched, a slice per tile. */
__attribute__((target("avx512f"))) static void
panel_tiles(const run_job *r, const row_block *rb, const br_sgemm_packed *B,
            int j, int pc, int kc, const char *next, size_t nlines) {
    const float *bp = B->data + panel_row(r->K, B->panels, j, pc);
    int n0 = j * SG_NR;
    int ncols = r->N - n0 < SG_NR ? r->N - n0 : SG_NR;
    for (int t = 0; t < rb->tiles; t++) {
        int i0 = rb->m0 + t * SG_MR;
        size_t l0 = nlines * (size_t)t / (size_t)rb->tiles;
        size_t l1 = nlines * (size_t)(t + 1) / (size_t)rb->tiles;
        float *c = rb->C + (size_t)i0 * (size_t)r->ldc + n0;
        int rows = rb->m1 - i0 < SG_MR ? rb->m1 - i0 : SG_MR;
        /* this tile's A: its rows, the tail copy, or its packed tile (K
         * groups of SG_MR) from k = pc */
        const float *a = rb->A + (size_t)i0 * (size_t)r->lda + pc;
        size_t lda = (size_t)r->lda;
        if (r->apacked)
            a = rb->A + (size_t)(i0 / SG_MR) * SG_MR * (size_t)r->K +
                (size_t)pc * SG_MR;
        else if (i0 >= rb->full)
            a = rb->tail, lda = (size_t)kc;
        sg_epi te = {r->ep.bias ? r->ep.bias + i0 : NULL,
                     r->ep.res ? r->ep.res + (size_t)i0 * r->ep.ldr + (size_t)n0
                               : NULL,
                     r->ep.ldr, r->ep.res_first, r->ep.relu};
        bool epi = pc + kc == r->K && (te.bias || te.res || te.relu);
        unsigned how = (pc == 0 ? SG_FIRST : 0u) |
                       (r->ep.stream && kc == r->K ? SG_STREAM : 0u);
        pick_micro(r->apacked, rows)(
            kc, a, lda, bp, c, (size_t)r->ldc, how, epi ? &te : NULL, rows,
            ncols, next ? next + 64 * l0 : NULL, next ? (int)(l1 - l0) : 0);
    }
}

/* 64-byte lines of a panel's K block of kc rows. */
static size_t block_lines(int kc) {
    return (size_t)kc * SG_NR * sizeof(float) / 64;
}

/* Row block mb, panels [j0, j1) of the product C = A · B (one of r's
 * batch): every K block, panel and row tile. K blocks outermost, so that
 * one K block of the row block's A stays in L2 over the panels, unless
 * r->panel_major: then each panel's K blocks run in a row, so its tiles
 * of C stay in the caches between them (lm_head's 25.7 MB C otherwise
 * went out to memory and back once per K block). */
__attribute__((target("avx512f"))) static void
run_task(const run_job *r, const float *A, const br_sgemm_packed *B, float *C,
         int64_t mb, int j0, int j1) {
    float tail[SG_MR * SG_KC] __attribute__((aligned(64)));
    row_block rb = {.A = A, .C = C, .tail = tail};
    rb.m0 = (int)mb * SG_MC;
    rb.m1 = r->M - rb.m0 < SG_MC ? r->M : rb.m0 + SG_MC;
    rb.full = rb.m0 + (rb.m1 - rb.m0) / SG_MR * SG_MR; /* rows in whole tiles */
    rb.tiles = (rb.m1 - rb.m0 + SG_MR - 1) / SG_MR;
    if (!r->panel_major) {
        for (int pc = 0; pc < r->K; pc += SG_KC) {
            int kc = r->K - pc < SG_KC ? r->K - pc : SG_KC;
            fill_tail(r, &rb, pc, kc);
            for (int j = j0; j < j1; j++) { /* the next panel's block follows */
                const float *bp = B->data + panel_row(r->K, B->panels, j, pc);
                panel_tiles(r, &rb, B, j, pc, kc,
                            j + 1 < j1 ? (const char *)(bp + (size_t)kc * SG_NR)
                                       : NULL,
                            block_lines(kc));
            }
        }
        return;
    }
    for (int j = j0; j < j1; j++)
        for (int pc = 0; pc < r->K; pc += SG_KC) {
            int kc = r->K - pc < SG_KC ? r->K - pc : SG_KC;
            fill_tail(r, &rb, pc, kc);
            /* next: this panel's next K block, else the next panel's first */
            int nj = pc + kc < r->K ? j : j + 1,
                npc = pc + kc < r->K ? pc + kc : 0;
            int nkc = r->K - npc < SG_KC ? r->K - npc : SG_KC;
            const char *next =
                nj < j1 ? (const char *)(B->data +
                                         panel_row(r->K, B->panels, nj, npc))
                        : NULL;
            panel_tiles(r, &rb, B, j, pc, kc, next, block_lines(nkc));
        }
}

static void run_range(void *ctx, int64_t b, int64_t e) {
    const run_job *r = ctx;
    int64_t groups = (r->B->panels + r->per_group - 1) / r->per_group;
    int64_t per_item = r->mblocks * groups;
    for (int64_t t = b; t < e; t++) {
        int64_t item = t / per_item, mb = t % per_item / groups, g = t % groups;
        const br_sgemm_packed *B = r->B + item;
        int j0 = (int)(g * r->per_group);
        int j1 = (int)(j0 + r->per_group < B->panels ? j0 + r->per_group
                                                     : B->panels);
        run_task(r, r->A + (size_t)item * r->a_step, B,
                 r->C + (size_t)item * r->c_step, mb, j0, j1);
    }
}

/* Tasks per thread: enough that a thread slowed by other work does not
 * hold the rest up, few enough that each task's panels run in a row (the
 * next one prefetched). */
#define SG_TASKS_PER_THREAD 4

/* count products C_i = A_i · B[i] (A_i at A + i·a_step, C_i at C + i·c_step,
 * every B[i] of one shape) over the pool as one set of tasks. */
static void run(br_pool *pool, int M, const float *A, int lda, bool apacked,
                const br_sgemm_packed *B, float *C, int ldc,
                const br_sgemm_ep *ep, int64_t count, size_t a_step,
                size_t c_step) {
    if (M <= 0 || count <= 0) return;
    run_job r = {.M = M,
                 .N = B->N,
                 .K = B->K,
                 .lda = lda,
                 .ldc = ldc,
                 .apacked = apacked,
                 .A = A,
                 .B = B,
                 .C = C,
                 .count = count,
                 .a_step = a_step,
                 .c_step = c_step,
                 .ep = ep ? *ep : (br_sgemm_ep){0}};
    r.mblocks = (M + SG_MC - 1) / SG_MC;
    /* Panel by panel when C outgrows L2 and the row block's A for every
     * K block still fits it (run_task). */
    int mc = M < SG_MC ? M : SG_MC;
    r.panel_major = B->K > SG_KC &&
                    (size_t)mc * (size_t)B->K * sizeof(float) <= SG_PANEL_A &&
                    (size_t)M * (size_t)B->N * sizeof(float) > SG_PANEL_C;
    /* Any split gives the same bits (each element's sum runs over k in
     * order), so the split may follow the thread count. */
    int64_t want = (int64_t)br_pool_threads(pool) * SG_TASKS_PER_THREAD;
    int64_t per_item = (want + count - 1) / count;
    int64_t groups_wanted = (per_item + r.mblocks - 1) / r.mblocks;
    r.per_group = (B->panels + groups_wanted - 1) / groups_wanted;
    if (r.per_group < 1) r.per_group = 1;
    int64_t groups = (B->panels + r.per_group - 1) / r.per_group;
    br_parallel_for(pool, count * r.mblocks * groups, 1, run_range, &r);
    if (r.ep.stream) _mm_sfence(); /* streamed stores seen before a reader */
}

void br_sgemm_run(br_pool *pool, int M, const float *A, int lda,
                  const br_sgemm_packed *B, float *C, int ldc) {
    run(pool, M, A, lda, false, B, C, ldc, NULL, 1, 0, 0);
}

void br_sgemm_run_ep(br_pool *pool, int M, const float *A, int lda,
                     const br_sgemm_packed *B, float *C, int ldc,
                     const br_sgemm_ep *ep) {
    run(pool, M, A, lda, false, B, C, ldc, ep, 1, 0, 0);
}

void br_sgemm_run_pa(br_pool *pool, int M, const float *Ap,
                     const br_sgemm_packed *B, float *C, int ldc) {
    run(pool, M, Ap, 0, true, B, C, ldc, NULL, 1, 0, 0);
}

void br_sgemm_run_pa_batch(br_pool *pool, int count, int M, const float *Ap,
                           size_t a_step, const br_sgemm_packed *B, float *C,
                           size_t c_step, int ldc) {
    run(pool, M, Ap, 0, true, B, C, ldc, NULL, count, a_step, c_step);
}

#else /* not x86-64: br_sgemm_enabled is false, nothing is packed */

void br_sgemm_run(br_pool *pool, int M, const float *A, int lda,
                  const br_sgemm_packed *B, float *C, int ldc) {
    (void)pool, (void)M, (void)A, (void)lda, (void)B, (void)C, (void)ldc;
}

void br_sgemm_run_ep(br_pool *pool, int M, const float *A, int lda,
                     const br_sgemm_packed *B, float *C, int ldc,
                     const br_sgemm_ep *ep) {
    (void)pool, (void)M, (void)A, (void)lda, (void)B, (void)C, (void)ldc;
    (void)ep;
}

void br_sgemm_run_pa(br_pool *pool, int M, const float *Ap,
                     const br_sgemm_packed *B, float *C, int ldc) {
    (void)pool, (void)M, (void)Ap, (void)B, (void)C, (void)ldc;
}

void br_sgemm_run_pa_batch(br_pool *pool, int count, int M, const float *Ap,
                           size_t a_step, const br_sgemm_packed *B, float *C,
                           size_t c_step, int ldc) {
    (void)pool, (void)count, (void)M, (void)Ap, (void)a_step, (void)B;
    (void)C, (void)c_step, (void)ldc;
}

#endif
