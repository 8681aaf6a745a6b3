#!/bin/bash
# tools/gpu-multi.sh — build braid and run the several-GPU tests on a
# machine with two GPUs (docs/multi-gpu.md); prints a summary last.
#
#   run(command="tools/gpu-multi.sh", carry=[".devdeps"],
#       kind="nvidia-h200-x2", timeout_s=600)
#
# Steps: environment (nvidia-smi topology, where NCCL is), configure and
# build into build-gpu, then tests/test_cuda_multi and tests/
# test_collectives with a time limit each (NCCL calls hang when a rank is
# missing: the limits turn a hang into a failed row). NCCL is PyTorch's
# libnccl.so.2 unless BRAID_NCCL_LIBRARY is already set.
# NCCL_NVLS_ENABLE=0 is set for everything (NVLink multicast stays off).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=$ROOT/build-gpu
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
   cmake --build "$BUILD" -j16 >"$LOGS/multi-build.txt" 2>&1; then
    row "build" "ok" "$(( $(date +%s) - T0 )) s"
else
    row "build" "FAIL" "see multi-build.txt"
    cat "$SUMMARY"
    exit 1
fi

# ---- tests ----------------------------------------------------------------------
status=0
for t in test_collectives test_cuda_multi; do
    T0=$(date +%s)
    timeout 240 "$BUILD/tests/$t" --jobs 1 --verbose >"$LOGS/multi-$t.txt" 2>&1
    rc=$?
    line=$(grep -a "Synthesis" "$LOGS/multi-$t.txt" | tail -1)
    if [ $rc -eq 0 ]; then r=ok; else r="FAIL"; status=1; fi
    [ $rc -eq 124 ] && r="HANG"
    row "$t" "$r" "${line#*Synthesis: } ($(( $(date +%s) - T0 )) s)"
    grep -a -B2 -A6 "Assertion\|FAIL\|CRASH" "$LOGS/multi-$t.txt" | head -40
done
echo
cat "$SUMMARY"
exit $status
