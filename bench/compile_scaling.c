/* bench/compile_scaling.c — how compile and plan-file load grow with the
 * graph (issue 17): the shapes of bench/scaling_graphs.h at node counts
 * from 1k to 500k, each measured in a fresh child process so that its
 * peak memory (getrusage ru_maxrss) is its own.
 *
 * Per (shape, nodes) it prints the time of every pass (the compile
 * report, passes/report.c), braid_compile in all, braid_plan_save_memory,
 * braid_plan_load_memory, the plan file's size and the peak resident
 * memory, the memory pass's reuse events and the plan's span (the most
 * nodes on one chain of queue order and events, with and without the
 * reuse events: what sharing bytes across streams costs in overlap), and
 * one "RESULT compile_scaling_<shape> ..." line. Times are the
 * best of --reps compiles and loads: wall and process CPU time (CPU time
 * is what the check uses; it moves least when other processes share the
 * cores), and the part of that CPU time spent in the kernel ("sys": page
 * faults, mostly zeroing fresh memory, which grows faster than the graph
 * once its arrays outgrow what the C library keeps for reuse).
 *
 * usage: compile_scaling [--shapes wide,chain,outputs,random]
 *          [--sizes 1000,3000,...] [--devices cpu] [--reps R]
 *          [--timeout S] [--check N] [--max-ratio X] [--rounds K]
 *   --devices: with a GPU listed ("cpu,cuda:0"), every node but the
 *     inputs is hinted to cuda:0 (copies, streams, events and the
 *     happens-before reuse rules come into play) and no kernels are built
 *     (archs "none": NVRTC is not what is measured); runs without a GPU.
 *   --check N: for every shape, compile and load at N and 10·N nodes and
 *     fail (exit 1) when 10·N costs more than --max-ratio (default 30)
 *     times N in process CPU time (the best of at least 3), for the
 *     compile and for the load. n log n gives about 12×; a quadratic part
 *     that matters at 10·N gives up to 100×. The ratios of the passes that
 *     take ≥ 10% of the 10·N compile are printed too, for information
 *     only: the report times passes by the wall clock, which other
 *     processes on the machine inflate. This is the CI entry (ctest
 *     compile_scaling_check).
 *   --rounds K (with --check): K children at N and K at 10·N, alternated
 *     (N, 10·N, N, 10·N, ...), each point's best over all of them: on a
 *     shared machine a slow phase then falls on both sizes alike instead
 *     of on one (default 1).
 * Exit status 1 on an error, a timeout (--timeout seconds per child,
 * default 600) or a failed check. */
#define _DEFAULT_SOURCE /* wait4 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/scaling_graphs.h"
#include "runtime/planfile/planfile.h"

#define MAX_SIZES 32
#define MAX_PASSES BRAID_REPORT_MAX_PASSES

typedef struct opts {
    bool shape[SG_NSHAPES];   /* shapes to run */
    uint32_t size[MAX_SIZES]; /* node counts */
    int nsizes;
    const char *devices; /* compile for these devices */
    int reps;            /* compiles and loads per point (best kept) */
    int timeout;         /* seconds per child */
    uint32_t check;      /* --check N, or 0 */
    double max_ratio;    /* --max-ratio */
    int rounds;          /* --rounds: the check's N and 10·N children,
                            alternated */
} opts;

/* What a child measures, sent to the parent through a pipe. */
typedef struct point {
    uint32_t nodes, plan_nodes;      /* user graph, compiled plan */
    double build_s;                  /* building the graph */
    double compile_s, compile_cpu_s; /* best braid_compile */
    double compile_sys_s;            /* its CPU time in the kernel (page
                                        faults: fresh memory) */
    double save_s;                   /* braid_plan_save_memory */
    double load_s, load_cpu_s;       /* best braid_plan_load_memory */
    double load_sys_s;               /* its CPU time in the kernel */
    uint64_t file_bytes;             /* plan file size */
    double arena_ratio;              /* arenas / their lower bound */
    uint32_t span, span_data;        /* longest chain of nodes through
                                        queue order and events, with the
                                        reuse events and without them */
    uint32_t reuse_events;           /* the memory pass's events */
    long maxrss_kib;                 /* peak resident memory */
    uint32_t npasses;
    char pass_name[MAX_PASSES][16];
    double pass_s[MAX_PASSES]; /* from the best compile's report */
} point;

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time this process has spent in the kernel. */
static double sys_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "ERROR compile_scaling: %s: %s\n", what,
            braid_last_error());
    exit(1);
}

static void compile_best(const braid_graph *g, const opts *o, point *pt,
                         braid_plan **keep) {
    braid_compile_options co;
    braid_compile_options_init(&co);
    co.devices = o->devices;
    co.archs = "none";
    for (int r = 0; r < o->reps; r++) {
        braid_plan *p = NULL;
        double w = wall_now(), c = cpu_now(), k = sys_now();
        if (braid_compile(g, &co, &p) != BRAID_OK) die("braid_compile");
        c = cpu_now() - c, w = wall_now() - w, k = sys_now() - k;
        if (r == 0 || c < pt->compile_cpu_s) {
            pt->compile_sys_s = k;
            braid_compile_report rep;
            braid_plan_compile_report(p, &rep);
            pt->compile_cpu_s = c, pt->compile_s = w;
            pt->npasses = rep.npasses < MAX_PASSES ? rep.npasses : MAX_PASSES;
            for (uint32_t i = 0; i < pt->npasses; i++) {
                snprintf(pt->pass_name[i], sizeof pt->pass_name[i], "%s",
                         rep.pass_name[i]);
                pt->pass_s[i] = rep.pass_ms[i] * 1e-3;
            }
        }
        if (*keep) braid_plan_free(*keep);
        *keep = p;
    }
}

static void load_best(const void *data, size_t size, const opts *o, point *pt) {
    for (int r = 0; r < o->reps; r++) {
        braid_plan *p = NULL;
        double w = wall_now(), c = cpu_now(), k = sys_now();
        if (br_planfile_load(data, size, NULL, "plan", &p) != BRAID_OK)
            die("loading the plan file");
        c = cpu_now() - c, w = wall_now() - w, k = sys_now() - k;
        if (r == 0 || c < pt->load_cpu_s)
            pt->load_cpu_s = c, pt->load_s = w, pt->load_sys_s = k;
        braid_plan_free(p);
    }
}

/* The most nodes on one chain of queue order and events (with the memory
 * pass's reuse events or without): what the plan must run one after
 * another however many streams it has. The schedule lists every event's
 * source before its waiter, so one pass in schedule order does. */
static uint32_t plan_span(const bp_plan *p, bool reuse) {
    uint32_t n = p->res.graph->nnodes, best = 0;
    uint32_t *depth = calloc(n ? n : 1, sizeof *depth);
    uint32_t *last = calloc(p->res.nqueues + 1, sizeof *last);
    uint32_t *estart = calloc((size_t)n + 1, sizeof *estart);
    uint32_t *esrc = calloc(p->res.nevents + 1, sizeof *esrc);
    if (!depth || !last || !estart || !esrc) die("out of memory");
    for (uint32_t k = 0; k < p->res.nevents; k++)
        if (reuse || !p->res.events[k].reuse)
            estart[p->res.events[k].before + 1]++;
    for (uint32_t i = 0; i < n; i++) estart[i + 1] += estart[i];
    for (uint32_t k = 0; k < p->res.nevents; k++)
        if (reuse || !p->res.events[k].reuse) {
            uint32_t b = p->res.events[k].before;
            esrc[estart[b]++] = p->res.events[k].after;
        }
    for (uint32_t i = n; i > 0; i--) estart[i] = estart[i - 1];
    estart[0] = 0;
    for (uint32_t i = 0; i < p->res.nschedule; i++) {
        uint32_t id = p->res.schedule[i], q = p->res.info[id].queue;
        if (q > p->res.nqueues) q = p->res.nqueues;
        uint32_t d = last[q];
        for (uint32_t k = estart[id]; k < estart[id + 1]; k++)
            if (depth[esrc[k]] > d) d = depth[esrc[k]];
        depth[id] = last[q] = d + 1;
        if (d + 1 > best) best = d + 1;
    }
    free(depth);
    free(last);
    free(estart);
    free(esrc);
    return best;
}

/* The child's work: one (shape, n) point. */
static void measure(sg_shape shape, uint32_t n, const opts *o, point *pt) {
    memset(pt, 0, sizeof *pt);
    double t0 = wall_now();
    braid_graph *g = sg_build(shape, n);
    if (!g) die("out of memory building the graph");
    if (braid_graph_status(g) != BRAID_OK) {
        fprintf(stderr, "ERROR compile_scaling: %s\n", braid_graph_error(g));
        exit(1);
    }
    if (strstr(o->devices, "cuda"))
        for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
            braid_set_device(g, (braid_tensor){id}, "cuda:0"); /* inputs
                                                                  refuse */
    pt->build_s = wall_now() - t0;
    pt->nodes = braid_graph_node_count(g);
    braid_plan *p = NULL;
    compile_best(g, o, pt, &p);
    braid_plan_summary sum;
    if (braid_plan_summary_get(p, &sum) == BRAID_OK) {
        pt->plan_nodes = sum.nodes;
        pt->arena_ratio =
            sum.lower_bound_bytes
                ? (double)sum.arena_bytes / (double)sum.lower_bound_bytes
                : 1.0;
    }
    pt->span = plan_span(p, true);
    pt->span_data = plan_span(p, false);
    for (uint32_t k = 0; k < p->res.nevents; k++)
        pt->reuse_events += p->res.events[k].reuse;
    void *data = NULL;
    size_t size = 0;
    t0 = wall_now();
    if (braid_plan_save_memory(p, &data, &size) != BRAID_OK)
        die("braid_plan_save_memory");
    pt->save_s = wall_now() - t0;
    pt->file_bytes = size;
    braid_plan_free(p);
    load_best(data, size, o, pt);
    free(data);
    braid_graph_free(g);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    pt->maxrss_kib = ru.ru_maxrss;
}

/* Runs measure() in a child; false on its failure or timeout. */
static bool run_point(sg_shape shape, uint32_t n, const opts *o, point *pt) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        close(fd[0]);
        alarm((unsigned)o->timeout);
        measure(shape, n, o, pt);
        ssize_t w = write(fd[1], pt, sizeof *pt);
        _exit(w == (ssize_t)sizeof *pt ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], pt, sizeof *pt);
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        printf("%s n=%u: TIMEOUT after %d s\n", sg_names[shape], n, o->timeout);
    return got == (ssize_t)sizeof *pt && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void print_point(sg_shape shape, const point *pt) {
    printf("%-8s nodes=%-7u plan_nodes=%-7u compile %8.3f s (cpu %8.3f, "
           "sys %.3f)  load %8.4f s (cpu %8.4f, sys %.4f)  save %7.4f s  "
           "file %9.1f KiB  peak %8.1f MiB  arena/bound %.3f\n",
           sg_names[shape], pt->nodes, pt->plan_nodes, pt->compile_s,
           pt->compile_cpu_s, pt->compile_sys_s, pt->load_s, pt->load_cpu_s,
           pt->load_sys_s, pt->save_s, (double)pt->file_bytes / 1024,
           (double)pt->maxrss_kib / 1024, pt->arena_ratio);
    printf("         reuse events %u, span %u nodes (%u without them)\n",
           pt->reuse_events, pt->span, pt->span_data);
    printf("         passes:");
    for (uint32_t i = 0; i < pt->npasses; i++)
        printf(" %s=%.4f", pt->pass_name[i], pt->pass_s[i]);
    printf("\n");
    printf("RESULT compile_scaling_%s nodes=%u plan_nodes=%u compile_s=%.4f "
           "compile_cpu_s=%.4f compile_sys_s=%.4f load_s=%.5f "
           "load_cpu_s=%.5f load_sys_s=%.5f save_s=%.5f "
           "file_bytes=%llu peak_mib=%.1f arena_ratio=%.4f reuse_events=%u "
           "span=%u span_without_reuse=%u\n",
           sg_names[shape], pt->nodes, pt->plan_nodes, pt->compile_s,
           pt->compile_cpu_s, pt->compile_sys_s, pt->load_s, pt->load_cpu_s,
           pt->load_sys_s, pt->save_s, (unsigned long long)pt->file_bytes,
           (double)pt->maxrss_kib / 1024, pt->arena_ratio, pt->reuse_events,
           pt->span, pt->span_data);
}

/* One ratio of the check; false when above the bound (bound 0: only
 * printed). */
static bool ratio_ok(const char *shape, const char *what, double small,
                     double big, double bound) {
    double r = big / (small > 1e-6 ? small : 1e-6);
    bool ok = bound <= 0 || r <= bound;
    printf("CHECK %-8s %-12s %9.4f s -> %9.4f s: %6.1fx %s\n", shape, what,
           small, big, r,
           bound <= 0 ? "(wall clock, not checked)"
           : ok       ? "ok"
                      : "TOO STEEP");
    return ok;
}

/* Compile and load at 10·N against N (CPU time); the passes that take at
 * least a tenth of the larger compile printed beside them. */
static bool check_shape(sg_shape shape, const point *a, const point *b,
                        double bound) {
    const char *s = sg_names[shape];
    bool ok = ratio_ok(s, "compile", a->compile_cpu_s, b->compile_cpu_s, bound);
    ok &= ratio_ok(s, "load", a->load_cpu_s, b->load_cpu_s, bound);
    for (uint32_t i = 0; i < b->npasses && i < a->npasses; i++)
        if (b->pass_s[i] >= 0.1 * b->compile_s)
            ratio_ok(s, b->pass_name[i], a->pass_s[i], b->pass_s[i], 0);
    return ok;
}

static bool parse_shapes(const char *v, opts *o) {
    memset(o->shape, 0, sizeof o->shape);
    while (*v) {
        size_t len = strcspn(v, ",");
        sg_shape s = sg_find(v, len);
        if (s == SG_NSHAPES) return false;
        o->shape[s] = true;
        v += len + (v[len] == ',');
    }
    return true;
}

static bool parse_sizes(const char *v, opts *o) {
    o->nsizes = 0;
    while (*v && o->nsizes < MAX_SIZES) {
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        if (end == v || n < 16 || n > 50000000) return false;
        o->size[o->nsizes++] = (uint32_t)n;
        v = end + (*end == ',');
    }
    return o->nsizes > 0 && !*v;
}

static bool parse_args(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return false;
        bool ok = !strcmp(a, "--shapes")    ? parse_shapes(v, o)
                  : !strcmp(a, "--sizes")   ? parse_sizes(v, o)
                  : !strcmp(a, "--devices") ? (o->devices = v, true)
                  : !strcmp(a, "--reps")    ? (o->reps = atoi(v)) > 0
                  : !strcmp(a, "--timeout") ? (o->timeout = atoi(v)) > 0
                  : !strcmp(a, "--check") ? (o->check = (uint32_t)atoi(v)) >= 16
                  : !strcmp(a, "--max-ratio") ? (o->max_ratio = atof(v)) > 1
                  : !strcmp(a, "--rounds")    ? (o->rounds = atoi(v)) > 0
                                              : false;
        if (!ok) return false;
        i++;
    }
    return true;
}

/* Keeps in best the smaller times of next (the same shape and size). */
static void keep_best(point *best, const point *next) {
    if (next->compile_cpu_s < best->compile_cpu_s) {
        best->compile_cpu_s = next->compile_cpu_s;
        best->npasses = next->npasses;
        memcpy(best->pass_name, next->pass_name, sizeof best->pass_name);
        memcpy(best->pass_s, next->pass_s, sizeof best->pass_s);
    }
    if (next->compile_s < best->compile_s) best->compile_s = next->compile_s;
    if (next->load_cpu_s < best->load_cpu_s)
        best->load_cpu_s = next->load_cpu_s;
    if (next->load_s < best->load_s) best->load_s = next->load_s;
}

static int run_check(const opts *o) {
    bool ok = true;
    for (int s = 0; s < SG_NSHAPES; s++) {
        if (!o->shape[s]) continue;
        point a, b, x;
        bool ran = true;
        for (int r = 0; ran && r < o->rounds; r++) {
            ran = run_point((sg_shape)s, o->check, o, r ? &x : &a);
            if (ran && r) keep_best(&a, &x);
            ran = ran && run_point((sg_shape)s, 10 * o->check, o, r ? &x : &b);
            if (ran && r) keep_best(&b, &x);
        }
        if (!ran) {
            fprintf(stderr, "ERROR compile_scaling: %s failed\n", sg_names[s]);
            return 1;
        }
        print_point((sg_shape)s, &a);
        print_point((sg_shape)s, &b);
        ok &= check_shape((sg_shape)s, &a, &b, o->max_ratio);
    }
    printf("compile_scaling check (10x nodes costs at most %.0fx): %s\n",
           o->max_ratio, ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    opts o = {{true, true, true, true},
              {1000, 3000, 10000, 30000, 100000, 300000, 500000},
              7,
              "cpu",
              1,
              600,
              0,
              30,
              1};
    if (!parse_args(argc, argv, &o)) {
        fprintf(stderr,
                "usage: compile_scaling [--shapes wide,chain,outputs,random] "
                "[--sizes N,...] [--devices LIST] [--reps R] [--timeout S] "
                "[--check N] [--max-ratio X] [--rounds K]\n");
        return 2;
    }
    if (o.check) {
        if (o.reps < 3) o.reps = 3;
        return run_check(&o);
    }
    int status = 0;
    for (int s = 0; s < SG_NSHAPES; s++)
        for (int i = 0; o.shape[s] && i < o.nsizes; i++) {
            point pt;
            if (!run_point((sg_shape)s, o.size[i], &o, &pt)) {
                fprintf(stderr,
                        "ERROR compile_scaling: %s at %u nodes "
                        "failed\n",
                        sg_names[s], o.size[i]);
                status = 1;
                break; /* larger sizes of this shape would fail too */
            }
            print_point((sg_shape)s, &pt);
        }
    return status;
}
