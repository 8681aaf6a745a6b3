/* passes/passes.h — the compiler's passes (prefix bp_).
 *
 * Every pass has one signature, braid_status bp_<name>(bp_plan *plan): it
 * reads and rewrites the plan (passes/plan.h) and nothing else, and on
 * failure leaves a message naming itself and the node for braid_last_error().
 * The pipeline is the list in passes/pipeline.c; each pass lives in
 * passes/<name>.c. A pass that rewrites the graph ends with
 * bp_plan_compact(), so the next pass again sees topological ids, only live
 * nodes and one info entry per node. */
#ifndef BRAID_PASSES_PASSES_H
#define BRAID_PASSES_PASSES_H

#include "passes/plan.h"

typedef braid_status (*bp_pass_fn)(bp_plan *plan);

/* ---- the passes, in pipeline order ---------------------------------------- */

/* Shapes and dtypes re-inferred for every node and compared with the stored
 * ones; ids topological; attributes and outputs in range. */
braid_status bp_verify(bp_plan *plan);
/* Dead nodes dropped, common subexpressions merged, small constant
 * subgraphs folded, algebraic identities (x*1, x+0, x-0, x/1, double
 * transpose/permute, reshape of reshape, cast to the same dtype, ...)
 * applied. Never changes results beyond the rounding the reference does. */
braid_status bp_simplify(bp_plan *plan);
/* Batch sharding (opts.shards > 1, docs/multi-gpu.md): the graph is
 * replicated over the first `shards` GPUs listed (each replica hinted to
 * its GPU), the inputs named in opts.shard_inputs are split along dim 0
 * by slice nodes, and every output depending on them is the concat of its
 * replicas along dim 0 on the cpu. Outputs that lose the batch dim are
 * BRAID_ERR_INVALID_ARGUMENT naming the node; too few GPUs likewise. */
braid_status bp_shard(bp_plan *plan);
/* Every node gets info.device: hints win; generators go with their
 * consumers; otherwise the cost model (devs.profile) picks, counting the
 * copies a choice implies. With only the cpu listed everything is cpu. */
braid_status bp_place(bp_plan *plan);
/* One BRAID_OP_COPY node per (tensor, destination device) whose consumers
 * run elsewhere; consumers read the copy. Copy nodes' info.device is the
 * destination. */
braid_status bp_copies(bp_plan *plan);
/* Qualifying GPU convolutions (2-D, constant weights, f16/bf16, or f32
 * with allow_tf32) in channels-last form, with the rank-4 elementwise work
 * around them; permutes only where the region meets other work
 * (passes/channels_last.c). */
braid_status bp_channels_last(bp_plan *plan);
/* Connected elementwise/broadcast/cast subgraphs on one device become one
 * BRAID_OP_FUSED node with a program (plan->res.programs); elementwise
 * producers fuse into a reduction; matmul + bias + activation becomes a MATMUL
 * program. Never across devices, never duplicating expensive work. */
braid_status bp_fuse(bp_plan *plan);
/* Splits a large H2D copy → elementwise/fused → D2H copy chain along its
 * leading axis into N slices (slice → copy → fused → copy per slice, one
 * concat at the end, all marked info.chunk) when the cost model predicts a
 * gain or settings.chunks asks. Results are unchanged. */
braid_status bp_chunk(bp_plan *plan);
/* Queues: the CPU queue, and per GPU one H2D, one D2H, one D2D stream and up
 * to settings.max_streams compute streams (independent branches and chunks
 * spread over them). An event for every cross-queue data edge, none within
 * a queue. */
braid_status bp_streams(bp_plan *plan);
/* Orders every assign after the other nodes reading its variable's bytes,
 * as extra inputs of the assign (passes/state.c, docs/training.md). */
braid_status bp_state(bp_plan *plan);
/* plan->res.schedule: one global issue order, topological, consistent with
 * every queue's order, preferring orders that start transfers early and end
 * lifetimes soon; info.order set. */
braid_status bp_schedule(bp_plan *plan);
/* Places every tensor: inputs and constants in place, views where legal
 * (reshape, contiguous slice, concat into which inputs are written), others
 * at offsets in one arena per device plus a pinned staging arena when host
 * and device copy. A buffer is reused only when every use of its previous
 * tensor happens-before the new producer (same queue earlier, or through
 * events; the pass adds a reuse event or refuses the reuse). Elementwise
 * ops may write in place over a dead input. Fills arena sizes and lower
 * bounds. */
braid_status bp_memory(bp_plan *plan);
/* The independent checker, callable after any pass: every node's inputs
 * come earlier in the schedule; every tensor has a place on a listed
 * device; every cross-queue edge has an event and no event joins one queue;
 * no two tensors whose lifetimes may overlap (under happens-before, not
 * just schedule order) share arena bytes; outputs are scheduled. */
braid_status bp_verify_plan(bp_plan *plan);

/* ---- plan helpers (passes/plan.c, passes/plan_edit.c) ------------------------ */

/* Whether plan node id's kernel takes the run check record: a node
 * bg_node_run_check names (gather, scatter, a range-checked cast), or a
 * fused node whose program holds a GATHER (docs/fusion.md, rule 13). */
bool bp_node_run_check(const bp_plan *p, uint32_t id);

/* ---- compiling (passes/pipeline.c) and devices (passes/devices.c) -------- */

/* braid_compile's argument checks (NULL plan or graph, a graph with an
 * error or no outputs, option ranges); sets *plan NULL first. */
braid_status bp_compile_check(const braid_graph *g,
                              const braid_compile_options *opts,
                              braid_plan **plan);
/* The pipeline on g (checked by bp_compile_check) for the devices devs:
 * a plan without kernels (bc_aot_build adds them) in *out, or NULL and a
 * message. */
braid_status bp_compile(const braid_graph *g, const braid_compile_options *opts,
                        const bp_device_desc *devs, bp_plan **out);

/* Parses a devices string ("cpu", "cpu,cuda:0", spaces around names
 * allowed; each name as bg_device_parse accepts it) into out
 * (BP_MAX_DEVICES entries), the cpu first (added when absent). NULL text,
 * unknown names, empty entries and repeats are BRAID_ERR_INVALID_ARGUMENT. */
braid_status bp_parse_devices(const char *text, bp_device *out, uint32_t *n);
/* The description of o's devices: o->devices parsed when set, else the cpu
 * and cuda:0 .. cuda:gpus_present-1 (the caller probed them); each with
 * the options' profile for its kind or the default, checked (finite,
 * ≥ 0); prefer_gpu set when o->devices names GPUs but no "cpu". Archs
 * are left empty for the caller. o may be NULL. */
braid_status bp_device_desc_init(bp_device_desc *d,
                                 const braid_compile_options *o,
                                 int gpus_present);
/* True when d lists a GPU. */
bool bp_device_desc_has_gpu(const bp_device_desc *d);

/* A plan for g before any pass ran: options and settings filled, the
 * devices copied from devs, the graph cloned, io tables and info entries
 * made (origin = id). On failure *out may hold a partial plan for
 * braid_plan_free. g must have status OK. */
braid_status bp_plan_new(const braid_graph *g,
                         const braid_compile_options *opts,
                         const bp_device_desc *devs, bp_plan **out);

/* Zeroed memory for plan data; NULL (with a message for braid_last_error)
 * when out of memory or when n × size overflows. */
void *bp_calloc(size_t n, size_t size, const char *what);
/* Room for one more entry of size bytes in *arr, which holds n entries in
 * *cap allocated ones: doubles *cap when full (so n appends cost O(n) in
 * all, not the O(n²) of growing by one). A *cap below n means exactly n
 * are allocated. False (the error set, naming what, and *arr untouched)
 * when out of memory. */
bool bp_grow(void **arr, uint32_t n, uint32_t *cap, size_t size,
             const char *what);

/* Appends a node to the plan's graph without the user-facing checks (for
 * copy, fused and chunking nodes; inputs must exist), with a default info
 * entry (device of the first input, program BG_NONE, origin BG_NONE).
 * attr.data is not copied: a pass that makes a constant attaches bytes it
 * allocated with bg_alloc on plan->res.graph (the graph then owns them).
 * Returns the id or BG_NONE when out of memory (message set). */
uint32_t bp_plan_add_node(bp_plan *plan, braid_op op, const uint32_t *inputs,
                          uint32_t ninputs, braid_dtype dtype, int rank,
                          const int64_t *dims, const bg_attrs *attr);
/* Extends info to one entry per graph node (defaults for nodes made with
 * bg_build on plan->res.graph). */
braid_status bp_plan_sync_info(bp_plan *plan);
/* Makes room in info for n entries in all (a reader that knows the count:
 * the plan file's loader), so that syncing up to n moves it no more. */
braid_status bp_plan_reserve_info(bp_plan *plan, uint32_t n);
/* Frees what k owns and zeroes it (zeroed is fine). */
void bp_kernels_free(bp_kernels *k);
/* Appends a program; returns its index or BG_NONE (out of memory). The
 * plan takes ownership of prog->instr. */
uint32_t bp_plan_add_program(bp_plan *plan, bp_program *prog);
/* Makes every use of node `from` (inputs of other nodes, outputs) read
 * node `to` instead. */
void bp_plan_replace_uses(bp_plan *plan, uint32_t from, uint32_t to);
/* The same for many nodes in one sweep over the graph: every use of a node
 * id below n with rep[id] != BG_NONE reads rep[id] instead (one level: a
 * replacement is not itself replaced), except in rep[id] itself. */
void bp_plan_replace_map(bp_plan *plan, const uint32_t *rep, uint32_t n);
/* Whether assign node a's value is a fused node whose program stores into
 * a's variable (BP_INSTR_STORE): the variable's new bytes are written by
 * that kernel, and the assign itself does no work. */
bool bp_assign_stored(const bp_plan *plan, uint32_t a);
/* Restores the invariants: drops nodes no output needs, renumbers the rest
 * topologically (stable: earlier ids first where the edges allow), remaps
 * info, programs' instr.source stays an origin id, the io tables. */
braid_status bp_plan_compact(bp_plan *plan);

/* Prints the plan's IR in the text format with plan annotations (device,
 * queue, place) to out: what BRAID_DUMP=after:<pass> shows. */
void bp_plan_dump(const bp_plan *plan, const char *after_pass, FILE *out);

/* "cpu" or "cuda:0/compute1": the queue q of p ("-" when out of range). */
const char *bp_queue_str(const bp_plan *p, uint32_t q, char *buf, size_t size);

/* Default cost profile of a device kind (documented in docs/placement.md). */
bp_device_profile bp_default_profile(bp_device_kind kind);

#endif /* BRAID_PASSES_PASSES_H */
