#!/bin/bash
# tools/gpu-multi.sh — build braid and run the several-GPU tests on a
# machine with two GPUs (docs/multi-gpu.md); prints a summary last.
#
#   run(command="tools/gpu-multi.sh", carry=[".devdeps"],
#       kind="nvidia-h200-x2", timeout_s=600)
#
# Steps: environment (nvidia-smi topology, where NCCL is), configure and
# build into build-gpu-multi (-j one per core), then tests/test_collectives,
# tests/test_shard and tests/test_cuda_multi with a time limit each (NCCL
# calls hang when a rank is missing: the limits turn a hang into a failed
# row), then bench/multi_gpu (peer copy, all_reduce bus bandwidth, sharded
# MLP speedup) and bench/multi_gpu_torch.py (torch.distributed's
# all_reduce), each under a time limit; last a summary table and the
# benchmarks' RESULT lines. NCCL is PyTorch's libnccl.so.2 unless
# BRAID_NCCL_LIBRARY is already set. NCCL_NVLS_ENABLE=0 is set for
# everything (NVLink multicast stays off). Everything fits in
# GPU_MULTI_BUDGET seconds (default 520): a step's limit is cut to what is
# left, and steps with under 20 s left are skipped (their rows say so).
set -u
START=$(date +%s)
BUDGET=${GPU_MULTI_BUDGET:-520}
left() { echo $((BUDGET - ($(date +%s) - START))); }
limit() { local l=$(left); [ "$1" -lt "$l" ] && l=$1; echo "$l"; }
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=$ROOT/build-gpu-multi # not build-gpu: gpu-check.sh configures that with Ninja
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS" "$BUILD"
SUMMARY=$LOGS/multi-summary.txt
: >"$SUMMARY"
export NCCL_NVLS_ENABLE=0
D=$ROOT/.devdeps/usr
if [ -d "$D" ]; then
    export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PKG_CONFIG_PATH=$D/lib/x86_64-linux-gnu/pkgconfig
    export CMAKE_PREFIX_PATH=$D
    export LDFLAGS="-Wl,-rpath-link,$D/lib/x86_64-linux-gnu"
fi
row() { printf '%-34s %-6s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY"; }

# ---- environment ------------------------------------------------------------
{
    nvidia-smi -L
    nvidia-smi topo -m
} >"$LOGS/multi-env.txt" 2>&1
if [ -z "${BRAID_NCCL_LIBRARY:-}" ]; then
    T=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__path__[0] if hasattr(nvidia.nccl, "__path__") else nvidia.nccl.__file__))' 2>/dev/null)
    for c in "$T/nccl/lib/libnccl.so.2" \
             $(python3 - <<'PY' 2>/dev/null
import glob, os, site
for d in site.getsitepackages():
    for f in glob.glob(os.path.join(d, "nvidia", "nccl", "lib", "libnccl.so*")):
        print(f)
PY
) /usr/local/cuda/lib/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2; do
        if [ -f "$c" ]; then export BRAID_NCCL_LIBRARY=$c; break; fi
    done
fi
echo "NCCL: ${BRAID_NCCL_LIBRARY:-not found (libnccl.so.2 from the loader path)}" | tee -a "$LOGS/multi-env.txt"

# ---- build --------------------------------------------------------------------
T0=$(date +%s)
if cmake -S "$ROOT" -B "$BUILD" -DBRAID_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >"$LOGS/multi-configure.txt" 2>&1 &&
   cmake --build "$BUILD" -j"$(nproc)" >"$LOGS/multi-build.txt" 2>&1; then
    row "build" "ok" "$(( $(date +%s) - T0 )) s"
else
    row "build" "FAIL" "see multi-build.txt"
    cat "$SUMMARY"
    exit 1
fi

# ---- tests ----------------------------------------------------------------------
status=0
for spec in test_collectives:60 test_shard:60 test_cuda_multi:200; do
    t=${spec%%:*}
    if [ "$(left)" -lt 20 ]; then row "$t" "SKIP" "time budget spent"; status=1; continue; fi
    T0=$(date +%s)
    timeout "$(limit "${spec##*:}")" "$BUILD/tests/$t" --jobs 1 --verbose >"$LOGS/multi-$t.txt" 2>&1
    rc=$?
    line=$(grep -a "Synthesis" "$LOGS/multi-$t.txt" | tail -1)
    skips=$(grep -ac '^\[SKIP\]' "$LOGS/multi-$t.txt")
    if [ $rc -eq 0 ]; then r=ok; else r="FAIL"; status=1; fi
    [ $rc -eq 124 ] && r="HANG"
    [ "$skips" -gt 0 ] && line="$line | skipped $skips"
    row "$t" "$r" "${line#*Synthesis: } ($(( $(date +%s) - T0 )) s)"
    grep -a -B2 -A6 "Assertion\|FAIL\|CRASH" "$LOGS/multi-$t.txt" | head -40
done

# ---- benchmarks ------------------------------------------------------------------
# bench/multi_gpu prints RESULT lines; a bench that times out or fails is a
# failed row, its RESULT lines so far still count
bench() { # label, limit, command...
    local label=$1 lim=$2 T0 rc
    shift 2
    if [ "$(left)" -lt 20 ]; then row "$label" "SKIP" "time budget spent"; status=1; return; fi
    T0=$(date +%s)
    timeout "$(limit "$lim")" "$@" >"$LOGS/multi-$label.txt" 2>&1
    rc=$?
    grep -a '^RESULT' "$LOGS/multi-$label.txt" >>"$LOGS/multi-results.txt"
    if [ $rc -eq 0 ] && ! grep -aq '^RESULT error' "$LOGS/multi-$label.txt"; then
        r=ok
    else
        r=FAIL; status=1
    fi
    [ $rc -eq 124 ] && r="TIMEOUT"
    row "$label" "$r" "rc $rc ($(( $(date +%s) - T0 )) s)"
    [ $r = ok ] || tail -20 "$LOGS/multi-$label.txt"
}
: >"$LOGS/multi-results.txt"
bench bench_multi_gpu 200 "$BUILD/bench/multi_gpu"
bench bench_multi_gpu_torch 120 python3 "$ROOT/bench/multi_gpu_torch.py"

# ---- summary ---------------------------------------------------------------------
echo
echo "================ gpu-multi summary ($(( $(date +%s) - START )) s) ================"
head -2 "$LOGS/multi-env.txt" | sed 's/^/  /'
cat "$SUMMARY"
echo
echo "benchmark results (docs/multi-gpu.md, What is measured):"
sed 's/^/  /' "$LOGS/multi-results.txt"
# the headline figures side by side
awk '
  /^RESULT peer_copy/    { for (i = 3; i <= NF; i++) { split($i, kv, "="); pc[kv[1]] = kv[2] } }
  /^RESULT all_reduce/   { for (i = 3; i <= NF; i++) { split($i, kv, "="); ar[kv[1]] = kv[2] } }
  /^RESULT torch_allreduce/ { for (i = 3; i <= NF; i++) { split($i, kv, "="); tr[kv[1]] = kv[2] } }
  /^RESULT sharded_mlp/  { for (i = 3; i <= NF; i++) { split($i, kv, "="); sm[kv[1]] = kv[2] } }
  END {
    printf "\n  %-34s %12s %12s %12s\n", "measure", "braid", "direct", "torch"
    printf "  %-34s %12s %12s %12s\n", "peer copy 1 GiB (GB/s)", pc["braid_gbps"], pc["direct_gbps"], "-"
    printf "  %-34s %12s %12s %12s\n", "all_reduce 256 MiB busbw (GB/s)", ar["braid_busbw_gbps"], ar["nccl_busbw_gbps"], tr["busbw_gbps"]
    printf "  %-34s %12s %12s %12s\n", "sharded MLP 2 GPUs / 1 GPU", sm["speedup"], "(>= 1.8)", "-"
  }' "$LOGS/multi-results.txt"
echo
if [ $status -eq 0 ]; then echo "RESULT: ALL PASSED"; else echo "RESULT: FAILURES (see the rows above)"; fi
exit $status
