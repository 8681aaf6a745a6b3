/* runtime/cuda/cuda_conv.c — the conv ops on a GPU through cuDNN.
 *
 * Every conv node on a GPU has braid's own kernel in the plan's module
 * (codegen/conv.c), so the node always runs. At executor creation this
 * file moves each conv node it can to cuDNN (loaded at run time,
 * runtime/cuda/cudnn.h): descriptors made once, the algorithm chosen once
 * by cudnnFind* (timed runs of every algorithm; cached per process for the
 * same geometry, dtype and math mode, so later executors and plans pay
 * nothing), the workspace of each compute stream sized to the largest its
 * nodes need and allocated then. A run is cudnnConvolutionForward (conv)
 * or cudnnConvolutionBackwardData (conv_transpose: the gradient of a conv
 * with respect to its input is exactly ONNX's ConvTranspose) plus
 * cudnnAddTensor for the bias.
 *
 * A node stays on braid's kernel, with one line in the executor log
 * saying why, when cuDNN cannot be loaded, when BRAID_CONV=braid asks for
 * it (the fallback, selectable for a measurement), or when cuDNN cannot
 * express the node: pads that differ at the two ends (beyond what a
 * conv_transpose's output_padding explains) or extents past int.
 *
 * f32 without the plan's allow_tf32 uses CUDNN_FMA_MATH (no TF32, like
 * PyTorch with allow_tf32 off); with it, the default math. f16/bf16
 * accumulate in float on tensor cores, f64 in double. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/cuda/cuda_impl.h"
#include "runtime/cuda/cudnn.h"

#ifdef BRAID_HAVE_CUDA

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const WHERE = "braid_exec_new";
/* Largest workspace an algorithm may ask for. */
#define CONV_WS_MAX ((size_t)1 << 30)
#define CACHE_MAX 512

/* ---- the per-process algorithm cache ------------------------------------- */

/* What decides an algorithm: the device and every descriptor field. */
typedef struct conv_key {
    int dev, transpose, dtype, math, nd, groups;
    int channels_last; /* x, y and w with the channel axis innermost */
    int x[5], w[5], pad[3], stride[3], dil[3];
} conv_key;

static struct {
    pthread_mutex_t lock;
    conv_key key[CACHE_MAX];
    int algo[CACHE_MAX];
    int math[CACHE_MAX]; /* the math type it runs with */
    size_t ws[CACHE_MAX];
    int n;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool cache_get(const conv_key *k, int *algo, int *math, size_t *ws) {
    bool hit = false;
    pthread_mutex_lock(&cache.lock);
    for (int i = 0; i < cache.n && !hit; i++)
        if (memcmp(&cache.key[i], k, sizeof *k) == 0) {
            *algo = cache.algo[i];
            *math = cache.math[i];
            *ws = cache.ws[i];
            hit = true;
        }
    pthread_mutex_unlock(&cache.lock);
    return hit;
}

static void cache_put(const conv_key *k, int algo, int math, size_t ws) {
    pthread_mutex_lock(&cache.lock);
    if (cache.n < CACHE_MAX) {
        cache.key[cache.n] = *k;
        cache.algo[cache.n] = algo;
        cache.math[cache.n] = math;
        cache.ws[cache.n++] = ws;
    }
    pthread_mutex_unlock(&cache.lock);
}

/* ---- descriptors ------------------------------------------------------------
 */

static int cudnn_dtype(braid_dtype t) {
    return t == BRAID_F64    ? BR_CUDNN_DATA_DOUBLE
           : t == BRAID_F16  ? BR_CUDNN_DATA_HALF
           : t == BRAID_BF16 ? BR_CUDNN_DATA_BFLOAT16
                             : BR_CUDNN_DATA_FLOAT;
}

/* The key of node n, or false (with *why) when cuDNN cannot express it.
 * cuDNN takes at least 2 spatial axes: a 1-D conv is a 2-D one whose
 * second axis has extent 1 (graph/conv.c's geometry pads with those). */
static bool make_key(const br_cuda *c, const bg_conv_geom *g, braid_dtype t,
                     int dev, conv_key *k, const char **why) {
    memset(k, 0, sizeof *k);
    int nsp = g->nspatial < 2 ? 2 : g->nspatial;
    k->dev = dev;
    k->transpose = g->transpose;
    k->channels_last = g->channels_last;
    k->dtype = cudnn_dtype(t);
    k->math = t == BRAID_F32
                  ? (c->allow_tf32 ? BR_CUDNN_DEFAULT_MATH : BR_CUDNN_FMA_MATH)
              : t == BRAID_F64 ? BR_CUDNN_DEFAULT_MATH
                               : BR_CUDNN_TENSOR_OP_MATH;
    k->nd = 2 + nsp;
    k->groups = (int)g->G;
    int64_t v[] = {g->N, g->C, g->OC, g->G};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (v[i] > INT_MAX) return *why = "extents past int", false;
    /* x: the op's input; for conv_transpose cuDNN's dy */
    k->x[0] = (int)g->N;
    k->x[1] = (int)g->C;
    k->w[0] = (int)(g->transpose ? g->C : g->OC);
    k->w[1] = (int)(g->transpose ? g->OC / g->G : g->C / g->G);
    for (int i = 0; i < nsp; i++) {
        if (g->in[i] > INT_MAX || g->out[i] > INT_MAX || g->k[i] > INT_MAX ||
            g->pb[i] > INT_MAX)
            return *why = "extents past int", false;
        int64_t extra = g->pb[i] - g->pe[i]; /* conv_transpose: its
                                                output_padding */
        if (g->transpose ? extra < 0 || extra >= g->stride[i] : extra != 0)
            return *why = "pads differ at the two ends", false;
        k->x[2 + i] = (int)g->in[i];
        k->w[2 + i] = (int)g->k[i];
        k->pad[i] = (int)g->pb[i];
        k->stride[i] = (int)g->stride[i];
        k->dil[i] = (int)g->dil[i];
    }
    return true;
}

/* Dense strides of dims[0..nd) (cuDNN's order: N, C, spatial...), C
 * order or, channels last, with C innermost (N, spatial..., C in memory). */
static void dense(const int *dims, int nd, bool channels_last, int *strides) {
    int s = 1;
    if (channels_last) {
        strides[1] = s;
        s *= dims[1];
    }
    for (int i = nd - 1; i >= 0; i--) {
        if (channels_last && i == 1) continue;
        strides[i] = s;
        s *= dims[i];
    }
}

static braid_status dnn(const br_cuda *c, uint32_t id, const char *call,
                        br_cudnn_status st) {
    if (st == 0) return BRAID_OK;
    const bg_node *n = bg_node_at(c->plan->res.graph, id);
    return bg_set_last_error(BRAID_ERR_DEVICE,
                             "%s: node %u (%s): %s failed: %s (cuDNN status "
                             "%d)",
                             c->run.args ? "braid_run" : WHERE, id,
                             bg_op(n->op)->name, call,
                             c->conv.api->GetErrorString(st), st);
}

/* The tensor descriptor of dims (dense, channels last or not). */
static braid_status tensor(const br_cuda *c, uint32_t id, int dtype, int nd,
                           const int *dims, bool channels_last,
                           br_cudnn_desc *d) {
    const br_cudnn_api *a = c->conv.api;
    int st[5];
    dense(dims, nd, channels_last, st);
    braid_status s =
        dnn(c, id, "cudnnCreateTensorDescriptor", a->CreateTensorDescriptor(d));
    return s != BRAID_OK
               ? s
               : dnn(c, id, "cudnnSetTensorNdDescriptor",
                     a->SetTensorNdDescriptor(*d, dtype, nd, dims, st));
}

/* Descriptors of node cv from its key; y's dims are the node's. */
static braid_status describe(const br_cuda *c, br_conv *cv, const conv_key *k,
                             const bg_node *n) {
    const br_cudnn_api *a = c->conv.api;
    uint32_t id = cv->node;
    int y[5] = {0}, b[5] = {1, 0, 1, 1, 1};
    bool cl = k->channels_last;
    int sp0 = cl ? 1 : 2; /* the node's first spatial axis */
    y[0] = k->x[0];
    y[1] = (int)n->dims[cl ? n->rank - 1 : 1];
    b[1] = y[1];
    for (int j = 0; j + 2 < k->nd; j++) /* spatial axis j (a 1-D conv: 2) */
        y[2 + j] = j < n->rank - 2 ? (int)n->dims[sp0 + j] : 1;
    int compute = k->dtype == BR_CUDNN_DATA_DOUBLE ? BR_CUDNN_DATA_DOUBLE
                                                   : BR_CUDNN_DATA_FLOAT;
    braid_status s = tensor(c, id, k->dtype, k->nd, k->x, cl, &cv->x);
    if (s == BRAID_OK) s = tensor(c, id, k->dtype, k->nd, y, cl, &cv->y);
    if (s == BRAID_OK && cv->bias) /* [1, C, 1...]: the same either way */
        s = tensor(c, id, k->dtype, k->nd, b, false, &cv->b);
    if (s == BRAID_OK)
        s = dnn(c, id, "cudnnCreateFilterDescriptor",
                a->CreateFilterDescriptor(&cv->w));
    if (s == BRAID_OK)
        s = dnn(c, id, "cudnnSetFilterNdDescriptor",
                a->SetFilterNdDescriptor(cv->w, k->dtype,
                                         cl ? BR_CUDNN_TENSOR_NHWC
                                            : BR_CUDNN_TENSOR_NCHW,
                                         k->nd, k->w));
    if (s == BRAID_OK)
        s = dnn(c, id, "cudnnCreateConvolutionDescriptor",
                a->CreateConvolutionDescriptor(&cv->conv));
    if (s == BRAID_OK)
        s = dnn(c, id, "cudnnSetConvolutionNdDescriptor",
                a->SetConvolutionNdDescriptor(
                    cv->conv, k->nd - 2, k->pad, k->stride, k->dil,
                    BR_CUDNN_CROSS_CORRELATION, compute));
    if (s == BRAID_OK)
        s = dnn(c, id, "cudnnSetConvolutionGroupCount",
                a->SetConvolutionGroupCount(cv->conv, k->groups));
    cv->math = k->math;
    if (s == BRAID_OK)
        s = dnn(c, id, "cudnnSetConvolutionMathType",
                a->SetConvolutionMathType(cv->conv, k->math));
    return s;
}

/* Sets the descriptor's math type to math (when it changes). */
static br_cudnn_status set_math(const br_cuda *c, br_conv *cv, int math) {
    if (cv->math == math) return 0;
    br_cudnn_status st = c->conv.api->SetConvolutionMathType(cv->conv, math);
    if (st == 0) cv->math = math;
    return st;
}

/* ---- choosing the algorithm ----------------------------------------------
 *
 * cudnnFind* times every algorithm once, and one timing of a 30-100 us
 * convolution is noisy: on an H100 it ranked an algorithm first for
 * ResNet-18's 1x1 stride-2 256->512 convolution that ran 1.7x slower than
 * braid's own direct kernel. So the usable candidates within
 * REFINE_WITHIN of Find's best are timed again here, together with braid's
 * own kernel for the node, as CUDA-graph replays (refine()) on buffers of
 * the node's sizes (the bias add included), and the lowest median wins;
 * when braid's kernel wins the node stays on it. When those buffers cannot
 * be had, Find's ranking stands. The choice is cached per process like
 * Find's (BRAID_KERNEL_ALGO: braid's kernel). */

/* Candidates timed again: at most REFINE_MAX, within REFINE_WITHIN of the
 * best time Find measured. Find's own ranking of 10-100 us convolutions is
 * noisy enough that its fourth choice was PyTorch's (l1_3x3_64 on the
 * H200: braid's kept choice 0.094 ms per replay, PyTorch's 0.068), so every
 * usable algorithm within 4x is timed (the legacy API has 8 forward
 * algorithms; ~5 ms per candidate, once per geometry and process). */
#define REFINE_MAX 8
#define REFINE_WITHIN 4.0f
#define REFINE_RUNS 7
/* Runs per captured graph, and untimed replays of each graph first (the
 * GPU's clocks rise, caches fill). */
#define REFINE_REPS 5
#define REFINE_WARM 3
/* The cached "algorithm" meaning braid's own kernel. */
#define BRAID_KERNEL_ALGO (-1)

typedef struct conv_bufs {
    void *x, *w, *y, *b, *ws;
} conv_bufs;

static void bufs_free(conv_bufs *b) {
    cudaFree(b->x);
    cudaFree(b->w);
    cudaFree(b->y);
    cudaFree(b->b);
    cudaFree(b->ws);
    memset(b, 0, sizeof *b);
}

/* Zeroed device buffers for one run of node n's convolution (operands,
 * output, bias when it has one) and a workspace of ws bytes; false
 * (nothing held, the CUDA error cleared) when memory is short. Zeros:
 * timing must not run on whatever bytes were there (NaN patterns,
 * denormals). */
static bool bufs_alloc(const br_cuda *c, const bg_node *n, size_t ws,
                       conv_bufs *b) {
    const braid_graph *g = c->plan->res.graph;
    size_t es = braid_dtype_size(n->dtype), sz[4] = {0, 0, 0, 0};
    void **p[4] = {&b->x, &b->w, &b->b, &b->y};
    for (uint32_t i = 0; i < n->ninputs && i < 3; i++)
        sz[i] = (size_t)bg_numel(bg_node_at(g, n->inputs[i])) * es;
    sz[3] = (size_t)bg_numel(n) * es;
    memset(b, 0, sizeof *b);
    bool ok = true;
    for (int i = 0; ok && i < 4; i++)
        if (i != 2 || n->ninputs > 2)
            ok = cudaMalloc(p[i], sz[i] ? sz[i] : 1) == cudaSuccess &&
                 cudaMemsetAsync(*p[i], 0, sz[i], 0) == cudaSuccess;
    ok = ok && (!ws || cudaMalloc(&b->ws, ws) == cudaSuccess) &&
         cudaStreamSynchronize(0) == cudaSuccess;
    if (!ok) {
        bufs_free(b);
        (void)cudaGetLastError();
    }
    return ok;
}

/* One run of node cv's convolution with algorithm algo on handle h's
 * stream: x and w in, y out, bias added when the node has one; workspace
 * ws of ws_bytes. On failure *call names the cuDNN call that failed. Both
 * braid_run and the algorithm timing (refine) run through here. */
static br_cudnn_status conv_call(const br_cuda *c, const br_conv *cv,
                                 br_cudnn_handle h, int algo, const void *x,
                                 const void *w, const void *bias, void *y,
                                 void *ws, size_t ws_bytes, const char **call) {
    const br_cudnn_api *a = c->conv.api;
    float one_f = 1, zero_f = 0;
    double one_d = 1, zero_d = 0;
    const void *one = cv->f64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = cv->f64 ? (const void *)&zero_d : (const void *)&zero_f;
    *call = cv->transpose ? "cudnnConvolutionBackwardData"
                          : "cudnnConvolutionForward";
    br_cudnn_status st =
        cv->transpose
            ? a->ConvolutionBackwardData(h, one, cv->w, w, cv->x, x, cv->conv,
                                         algo, ws, ws_bytes, zero, cv->y, y)
            : a->ConvolutionForward(h, one, cv->x, x, cv->w, w, cv->conv, algo,
                                    ws, ws_bytes, zero, cv->y, y);
    if (st == 0 && cv->bias) {
        *call = "cudnnAddTensor";
        st = a->AddTensor(h, one, cv->b, bias, one, cv->y, y);
    }
    return st;
}

/* One run of cuDNN algorithm algo on b. */
static bool run_algo(const br_cuda *c, const br_conv *cv, br_cudnn_handle h,
                     int algo, size_t ws, const conv_bufs *b) {
    const char *call;
    return conv_call(c, cv, h, algo, b->x, b->w, b->b, b->y, b->ws, ws,
                     &call) == 0;
}

/* One run of braid's own kernel for the node on b, through the executor's
 * launch path with a run-argument table that points at b. */
static bool run_braid(br_cuda *c, const br_conv *cv, void **ptr,
                      cudaStream_t st) {
    br_cuda_run_args args = {.ptr = ptr};
    c->run.args = &args;
    braid_status s = br_cuda_launch(c, cv->node, st);
    c->run.args = NULL;
    return s == BRAID_OK;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* One candidate (i < n: cuDNN's cand[i], i == n: braid's kernel) run
 * REFINE_REPS times, captured on stream st into *exec. */
static bool capture(br_cuda *c, br_conv *cv, br_cudnn_handle h,
                    const br_cudnn_perf *cand, int n, int i, void **ptr,
                    const conv_bufs *b, cudaStream_t st,
                    cudaGraphExec_t *exec) {
    cudaGraph_t graph = NULL;
    *exec = NULL;
    if (i < n && set_math(c, cv, cand[i].math_type) != 0) return false;
    if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) !=
        cudaSuccess)
        return false;
    bool ok = true;
    for (int k = 0; ok && k < REFINE_REPS; k++)
        ok = i < n ? run_algo(c, cv, h, cand[i].algo, cand[i].memory, b)
                   : run_braid(c, cv, ptr, st);
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    ok = ok && e == cudaSuccess && graph &&
         cudaGraphInstantiate(exec, graph, 0) == cudaSuccess;
    if (graph) cudaGraphDestroy(graph);
    return ok;
}

/* Index in cand (n of them) of the candidate with the lowest median time,
 * n when braid's kernel beat them all; 0 when timing is not possible.
 * Each candidate is REFINE_REPS back-to-back runs captured in a CUDA
 * graph, as braid replays a plan: timing calls one by one between events
 * would count cuDNN's host-side work per call (tens of microseconds in
 * cuDNN 9's legacy API) as GPU time, and for 15-50 us convolutions rank
 * by it. The graphs are replayed REFINE_WARM times, then REFINE_RUNS times
 * each, interleaved. */
static int refine(br_cuda *c, br_conv *cv, br_cudnn_handle h,
                  const br_cudnn_perf *cand, int n) {
    size_t ws = 0;
    for (int i = 0; i < n; i++)
        if (cand[i].memory > ws) ws = cand[i].memory;
    const braid_graph *g = c->plan->res.graph;
    const bg_node *node = bg_node_at(g, cv->node);
    conv_bufs b;
    void **ptr = calloc(g->nnodes ? g->nnodes : 1, sizeof *ptr);
    if (!ptr) return 0;
    if (!bufs_alloc(c, node, ws, &b)) {
        free(ptr);
        return 0;
    }
    ptr[cv->node] = b.y;
    ptr[node->inputs[0]] = b.x;
    ptr[node->inputs[1]] = b.w;
    if (node->ninputs > 2) ptr[node->inputs[2]] = b.b;
    int m = n + 1; /* the last: braid's kernel */
    cudaStream_t st = br_cuda_stream(c, c->node[cv->node].queue);
    cudaEvent_t ev[2] = {0, 0};
    cudaGraphExec_t exec[REFINE_MAX + 1] = {0};
    float t[REFINE_MAX + 1][REFINE_RUNS];
    bool ok =
        cudaEventCreateWithFlags(&ev[0], cudaEventDefault) == cudaSuccess &&
        cudaEventCreateWithFlags(&ev[1], cudaEventDefault) == cudaSuccess;
    for (int i = 0; ok && i < m; i++)
        ok = capture(c, cv, h, cand, n, i, ptr, &b, st, &exec[i]);
    for (int r = -REFINE_WARM; ok && r < REFINE_RUNS; r++)
        for (int i = 0; ok && i < m; i++) {
            float ms = 0;
            ok = cudaEventRecord(ev[0], st) == cudaSuccess &&
                 cudaGraphLaunch(exec[i], st) == cudaSuccess &&
                 cudaEventRecord(ev[1], st) == cudaSuccess &&
                 cudaEventSynchronize(ev[1]) == cudaSuccess &&
                 cudaEventElapsedTime(&ms, ev[0], ev[1]) == cudaSuccess;
            if (r >= 0) t[i][r] = ms / REFINE_REPS;
        }
    int best = 0;
    float best_t = 0;
    for (int i = 0; ok && i < m; i++) {
        qsort(t[i], REFINE_RUNS, sizeof t[i][0], cmp_float);
        float med = t[i][REFINE_RUNS / 2];
        if (i == 0 || med < best_t) best = i, best_t = med;
    }
    if (ok)
        br_cuda_logf(c, "conv node %u: timed %d cuDNN candidates and braid's "
                        "kernel: fastest %s (median %.4f ms)",
                     cv->node, n, best < n ? "cuDNN" : "braid's kernel",
                     (double)best_t);
    cudaStreamSynchronize(st);
    for (int i = 0; i < m; i++)
        if (exec[i]) cudaGraphExecDestroy(exec[i]);
    if (ev[0]) cudaEventDestroy(ev[0]);
    if (ev[1]) cudaEventDestroy(ev[1]);
    bufs_free(&b);
    free(ptr);
    (void)cudaGetLastError(); /* a failed timing leaves Find's choice */
    return ok ? best : 0;
}

/* ---- choices kept in the plan (passes/plan.h, bp_conv_choice) --------- */

/* GPU dev's model name and compute capability (asked once per device). */
static bool device_model(int dev, char *name, int32_t *cc) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        bool known;
        char name[BP_TUNE_DEVICE_MAX];
        int32_t cc;
    } seen[64];
    if (dev < 0 || dev >= 64) return false;
    pthread_mutex_lock(&lock);
    bool ok = seen[dev].known;
    if (!ok) {
        struct cudaDeviceProp pr;
        if (cudaGetDeviceProperties(&pr, dev) == cudaSuccess) {
            size_t n = strnlen(pr.name, sizeof pr.name);
            if (n >= BP_TUNE_DEVICE_MAX) n = BP_TUNE_DEVICE_MAX - 1;
            memcpy(seen[dev].name, pr.name, n);
            seen[dev].name[n] = '\0';
            seen[dev].cc = pr.major * 10 + pr.minor;
            seen[dev].known = ok = true;
        } else {
            (void)cudaGetLastError();
        }
    }
    if (ok) {
        memcpy(name, seen[dev].name, BP_TUNE_DEVICE_MAX);
        *cc = seen[dev].cc;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

/* The plan's record key for node cv on k's device into r (algorithm
 * fields zero); false when the device cannot be named. */
static bool choice_key(const br_cuda *c, const br_conv *cv, const conv_key *k,
                       bp_conv_choice *r) {
    memset(r, 0, sizeof *r);
    r->node = cv->node;
    r->cudnn = (int32_t)c->conv.api->version;
    return device_model(k->dev, r->device, &r->cc);
}

/* Whether the plan's record r can run node cv as it says: braid's kernel,
 * or a cuDNN algorithm that accepts the descriptors with the record's math
 * type and a workspace within the limit (cuDNN's own answer, not the
 * file's). Sets cv's algorithm, workspace and math on success. */
static bool take_record(br_cuda *c, br_conv *cv, const conv_key *k,
                        br_cudnn_handle h, const bp_conv_choice *r,
                        const char **why) {
    if (r->algo == BRAID_KERNEL_ALGO) {
        cv->algo = BRAID_KERNEL_ALGO;
        cv->ws = 0;
        return true;
    }
    bool math_ok = r->math == BR_CUDNN_DEFAULT_MATH ||
                   r->math == BR_CUDNN_TENSOR_OP_MATH ||
                   r->math == BR_CUDNN_FMA_MATH;
    if (!math_ok || r->algo < 0 ||
        (k->math == BR_CUDNN_FMA_MATH && r->math != BR_CUDNN_FMA_MATH))
        return *why = "its math type is not this plan's", false;
    if (set_math(c, cv, r->math) != 0)
        return *why = "cuDNN refused its math type", false;
    const br_cudnn_api *a = c->conv.api;
    size_t ws = 0;
    br_cudnn_status st =
        k->transpose ? a->GetConvolutionBackwardDataWorkspaceSize(
                           h, cv->w, cv->x, cv->conv, cv->y, r->algo, &ws)
                     : a->GetConvolutionForwardWorkspaceSize(
                           h, cv->x, cv->w, cv->conv, cv->y, r->algo, &ws);
    if (st != 0 || ws > CONV_WS_MAX) {
        (void)cudaGetLastError();
        return *why = "cuDNN does not take its algorithm here", false;
    }
    cv->algo = r->algo;
    cv->ws = ws;
    return true;
}

/* The fastest usable algorithm by the per-process cache, else cudnnFind*
 * and refine() (succeeded within the workspace limit and the math mode
 * asked for — FMA: no tensor ops); *braid true when braid's own kernel
 * was faster still. */
static braid_status choose_timed(br_cuda *c, br_conv *cv, const conv_key *k,
                                 br_cudnn_handle h, bool *braid) {
    *braid = false;
    int math = k->math;
    if (cache_get(k, &cv->algo, &math, &cv->ws)) {
        *braid = cv->algo == BRAID_KERNEL_ALGO;
        return *braid ? BRAID_OK
                      : dnn(c, cv->node, "cudnnSetConvolutionMathType",
                            set_math(c, cv, math));
    }
    const br_cudnn_api *a = c->conv.api;
    br_cudnn_perf perf[16];
    int got = 0;
    br_cudnn_status st =
        k->transpose
            ? a->FindConvolutionBackwardDataAlgorithm(h, cv->w, cv->x, cv->conv,
                                                      cv->y, 16, &got, perf)
            : a->FindConvolutionForwardAlgorithm(h, cv->x, cv->w, cv->conv,
                                                 cv->y, 16, &got, perf);
    braid_status s = dnn(c, cv->node,
                         k->transpose ? "cudnnFindConvolutionBackwardData"
                                        "Algorithm"
                                      : "cudnnFindConvolutionForwardAlgorithm",
                         st);
    if (s != BRAID_OK) return s;
    br_cudnn_perf cand[REFINE_MAX];
    int n = 0;
    for (int i = 0; i < got && n < REFINE_MAX; i++) { /* fastest first */
        if (perf[i].status != 0 || perf[i].memory > CONV_WS_MAX) continue;
        if (k->math == BR_CUDNN_FMA_MATH &&
            perf[i].math_type != BR_CUDNN_FMA_MATH &&
            perf[i].math_type != BR_CUDNN_DEFAULT_MATH)
            continue;
        if (n > 0 && !(perf[i].time <= REFINE_WITHIN * cand[0].time)) break;
        cand[n] = perf[i];
        /* it runs with the math type Find timed it with (with TF32 allowed
         * a tensor-core algorithm is reported under TENSOR_OP_MATH, and
         * the descriptor must say so for the run to be that algorithm, as
         * PyTorch sets it); f32 without TF32 keeps FMA whatever Find says */
        if (k->math == BR_CUDNN_FMA_MATH) cand[n].math_type = BR_CUDNN_FMA_MATH;
        n++;
    }
    if (n == 0)
        return bg_set_last_error(BRAID_ERR_UNSUPPORTED,
                                 "%s: node %u: cuDNN found no usable algorithm",
                                 WHERE, cv->node);
    int best = refine(c, cv, h, cand, n);
    *braid = best == n;
    cv->algo = *braid ? BRAID_KERNEL_ALGO : cand[best].algo;
    cv->ws = *braid ? 0 : cand[best].memory;
    math = *braid ? k->math : cand[best].math_type;
    s = *braid ? BRAID_OK
               : dnn(c, cv->node, "cudnnSetConvolutionMathType",
                     set_math(c, cv, math));
    if (s == BRAID_OK) cache_put(k, cv->algo, math, cv->ws);
    return s;
}

/* The fastest usable algorithm (succeeded within the workspace limit and
 * the math mode asked for — FMA: no tensor ops): the plan's record for
 * this GPU model and cuDNN version when it has one cuDNN accepts (plan
 * files carry them), else the per-process cache, else cudnnFind* and
 * refine(); *braid true when braid's own kernel was faster still. The
 * choice is noted in the plan (braid_plan_save keeps it). */
static braid_status choose(br_cuda *c, br_conv *cv, const conv_key *k,
                           br_cudnn_handle h, bool *braid) {
    bp_conv_choice key, rec;
    bool named = choice_key(c, cv, k, &key);
    if (named && bp_tuning_find(c->plan, cv->node, key.device, key.cc,
                                key.cudnn, &rec)) {
        const char *why = "";
        if (take_record(c, cv, k, h, &rec, &why)) {
            *braid = cv->algo == BRAID_KERNEL_ALGO;
            br_cuda_logf(c,
                         "conv node %u: %s from the plan's tuning record "
                         "(%s, cuDNN %d): nothing timed",
                         cv->node,
                         *braid ? "braid's kernel" : "cuDNN's algorithm",
                         key.device, (int)key.cudnn);
            cache_put(k, cv->algo, *braid ? k->math : rec.math, cv->ws);
            return BRAID_OK;
        }
        br_cuda_logf(c,
                     "conv node %u: the plan's tuning record (algorithm "
                     "%d) not used: %s; choosing again",
                     cv->node, (int)rec.algo, why);
    }
    braid_status s = choose_timed(c, cv, k, h, braid);
    if (s == BRAID_OK && named) {
        key.algo = cv->algo;
        key.math = *braid ? k->math : cv->math;
        key.workspace = cv->ws;
        if (!bp_tuning_note(c->plan, &key))
            br_cuda_logf(c,
                         "conv node %u: out of memory keeping the choice "
                         "in the plan",
                         cv->node);
    }
    return s;
}

static void destroy(const br_cudnn_api *a, br_conv *cv) {
    if (cv->x) a->DestroyTensorDescriptor(cv->x);
    if (cv->y) a->DestroyTensorDescriptor(cv->y);
    if (cv->b) a->DestroyTensorDescriptor(cv->b);
    if (cv->w) a->DestroyFilterDescriptor(cv->w);
    if (cv->conv) a->DestroyConvolutionDescriptor(cv->conv);
    memset(cv, 0, sizeof *cv);
}

/* The cuDNN handle of queue q, made on first use, bound to its stream. */
static braid_status handle_of(br_cuda *c, uint32_t q, uint32_t id,
                              br_cudnn_handle *h) {
    if (!c->conv.handle[q]) {
        braid_status s =
            dnn(c, id, "cudnnCreate", c->conv.api->Create(&c->conv.handle[q]));
        if (s != BRAID_OK) return s;
    }
    *h = c->conv.handle[q];
    return dnn(c, id, "cudnnSetStream",
               c->conv.api->SetStream(*h, br_cuda_stream(c, q)));
}

/* Moves conv node id to cuDNN; *moved false (and a log line) when it
 * stays on braid's kernel. */
static braid_status adopt(br_cuda *c, uint32_t id, br_conv *cv, bool *moved) {
    const bg_node *n = bg_node_at(c->plan->res.graph, id);
    br_cnode *cn = &c->node[id];
    bg_conv_geom g;
    conv_key k;
    const char *why = "malformed";
    *moved = false;
    if (!bg_conv_geom_of(c->plan->res.graph, n, &g) ||
        !make_key(c, &g, n->dtype, cn->dev, &k, &why)) {
        br_cuda_logf(c, "conv node %u: braid's kernel (cuDNN: %s)", id, why);
        return BRAID_OK;
    }
    memset(cv, 0, sizeof *cv);
    cv->node = id;
    cv->bias = g.bias;
    cv->transpose = g.transpose;
    cv->f64 = n->dtype == BRAID_F64;
    br_cudnn_handle h;
    braid_status s = br_cuda_use(c, WHERE, id, cn->dev);
    if (s != BRAID_OK) return s;
    s = handle_of(c, cn->queue, id, &h);
    bool braid = false;
    if (s == BRAID_OK) s = describe(c, cv, &k, n);
    if (s == BRAID_OK) s = choose(c, cv, &k, h, &braid);
    if (s != BRAID_OK || braid) { /* braid's kernel runs it */
        br_cuda_logf(c, "conv node %u: braid's kernel (%s)", id,
                     s != BRAID_OK ? braid_last_error()
                                   : "faster than cuDNN's algorithms here");
        destroy(c->conv.api, cv);
        (void)cudaGetLastError();
        return BRAID_OK;
    }
    if (cv->ws > c->conv.ws_bytes[cn->queue])
        c->conv.ws_bytes[cn->queue] = cv->ws;
    br_cuda_logf(c,
                 "conv node %u: cuDNN algorithm %d, math type %d, workspace "
                 "%zu bytes",
                 id, cv->algo, cv->math, cv->ws);
    *moved = true;
    return BRAID_OK;
}

static braid_status alloc_tables(br_cuda *c) {
    const bp_plan *p = c->plan;
    c->conv.index =
        malloc((p->res.ninfo ? p->res.ninfo : 1) * sizeof *c->conv.index);
    c->conv.handle = calloc(p->res.nqueues + 1, sizeof *c->conv.handle);
    c->conv.ws = calloc(p->res.nqueues + 1, sizeof *c->conv.ws);
    c->conv.ws_bytes = calloc(p->res.nqueues + 1, sizeof *c->conv.ws_bytes);
    c->conv.nodes = calloc(c->sched->ndev + 1, sizeof *c->conv.nodes);
    if (!c->conv.index || !c->conv.handle || !c->conv.ws || !c->conv.ws_bytes ||
        !c->conv.nodes)
        return bg_set_last_error(BRAID_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                 WHERE);
    for (uint32_t i = 0; i < p->res.ninfo; i++)
        c->conv.index[i] = BG_NONE;
    return BRAID_OK;
}

/* Whether any GPU node is a conv op (run by its kernel so far). */
static bool has_conv(const br_cuda *c) {
    for (uint32_t i = 0; i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (c->node[id].kind == BR_NODE_KERNEL &&
            bg_op(bg_node_at(c->plan->res.graph, id)->op)->kind ==
                BRAID_KIND_CONV)
            return true;
    }
    return false;
}

braid_status br_cuda_conv_prepare(br_cuda *c) {
    if (c->dry || !has_conv(c)) return BRAID_OK;
    const char *env = getenv("BRAID_CONV");
    if (env && strcmp(env, "braid") == 0) {
        br_cuda_logf(c, "conv: braid's kernels (BRAID_CONV=braid)");
        return BRAID_OK;
    }
    if (!(c->conv.api = br_cudnn_load())) {
        br_cuda_logf(c, "conv: braid's kernels (cuDNN not available: %s)",
                     br_cudnn_why());
        return BRAID_OK;
    }
    braid_status s = alloc_tables(c);
    for (uint32_t i = 0; s == BRAID_OK && i < c->sched->ndev; i++) {
        uint32_t id = c->sched->dev_list[i];
        if (c->node[id].kind != BR_NODE_KERNEL ||
            bg_op(bg_node_at(c->plan->res.graph, id)->op)->kind !=
                BRAID_KIND_CONV)
            continue;
        bool moved = false;
        s = adopt(c, id, &c->conv.nodes[c->conv.n], &moved);
        if (s == BRAID_OK && moved) {
            c->conv.index[id] = c->conv.n++;
            c->node[id].kind = BR_NODE_CONV;
        }
    }
    for (uint32_t q = 0; s == BRAID_OK && q < c->plan->res.nqueues; q++) {
        if (!c->conv.ws_bytes[q]) continue;
        s = br_cuda_use(c, WHERE, BG_NONE, c->plan->res.queues[q].device.index);
        if (s == BRAID_OK)
            s = br_cu(c, WHERE, BG_NONE, "cudaMalloc (cuDNN workspace)",
                      cudaMalloc(&c->conv.ws[q], c->conv.ws_bytes[q]));
    }
    if (s == BRAID_OK && c->conv.n)
        br_cuda_logf(c, "conv: %u nodes on %s", c->conv.n,
                     braid_cudnn_status());
    return s;
}

braid_status br_cuda_conv_run(br_cuda *c, uint32_t id, cudaStream_t stream) {
    const br_conv *cv = &c->conv.nodes[c->conv.index[id]];
    uint32_t q = c->node[id].queue;
    br_cudnn_handle h = c->conv.handle[q];
    const bg_node *n = bg_node_at(c->plan->res.graph, id);
    void *const *ptr = c->run.args->ptr;
    braid_status s =
        dnn(c, id, "cudnnSetStream", c->conv.api->SetStream(h, stream));
    if (s != BRAID_OK) return s;
    const char *call;
    br_cudnn_status st =
        conv_call(c, cv, h, cv->algo, ptr[n->inputs[0]], ptr[n->inputs[1]],
                  cv->bias ? ptr[n->inputs[2]] : NULL, ptr[id], c->conv.ws[q],
                  cv->ws, &call);
    return dnn(c, id, call, st);
}

void br_cuda_conv_free(br_cuda *c) {
    const br_cudnn_api *a = c->conv.api;
    for (uint32_t i = 0; a && i < c->conv.n; i++)
        destroy(a, &c->conv.nodes[i]);
    for (uint32_t q = 0; c->conv.handle && q < c->plan->res.nqueues; q++) {
        if (c->conv.handle[q]) a->Destroy(c->conv.handle[q]);
        if (c->conv.ws[q]) cudaFree(c->conv.ws[q]);
    }
    free(c->conv.index);
    free(c->conv.handle);
    free(c->conv.ws);
    free(c->conv.ws_bytes);
    free(c->conv.nodes);
    memset(&c->conv, 0, sizeof c->conv);
}

#endif /* BRAID_HAVE_CUDA */
