#!/bin/bash
# bench/gpu_conv.sh — the convolution benchmark alone on the GPU machine:
# builds bench/gpu_conv (into build-bench, reused when there), runs it and
# bench/conv_torch.py in the same run, prints bench/conv_table.py's table
# (also $OUT/bench/conv_table.md). bench/gpu.sh runs the same steps
# after its own programs when time is left.
#   run(command="bench/gpu_conv.sh", carry=[".devdeps"], timeout_s=400)
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=${BENCH_BUILD:-$ROOT/build-bench}
LOGS=${OUT:-$BUILD}/bench
mkdir -p "$LOGS"
D=$ROOT/.devdeps/usr
[ -d "$D" ] && export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    PKG_CONFIG_PATH=$D/lib/x86_64-linux-gnu/pkgconfig CMAKE_PREFIX_PATH=$D
export PATH=/usr/local/cuda/bin:$PATH CUDAToolkit_ROOT=/usr/local/cuda
if [ ! -x "$BUILD/bench/gpu_conv" ] || [ "${GPU_CONV_REBUILD:-1}" = 1 ]; then
    GEN=()
    command -v ninja >/dev/null && GEN=(-G Ninja)
    { cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DBRAID_CUDA=ON -DBRAID_TESTS=OFF \
          -DBRAID_WERROR=OFF -DCMAKE_BUILD_TYPE=Release &&
      cmake --build "$BUILD" -j "$(nproc)" --target bench_gpu_conv; } \
        >"$LOGS/conv_build.log" 2>&1 || { tail -30 "$LOGS/conv_build.log"; exit 1; }
fi
echo "== gpu_conv (log: gpu_conv.log)"
timeout 200 "$BUILD/bench/gpu_conv" >"$LOGS/gpu_conv.log" 2>&1
echo "gpu_conv rc=$?"
grep -E '^(cudnn|CONV|RESULT|SKIP|ERROR)' "$LOGS/gpu_conv.log"
echo "== PyTorch (conv_torch.py; log: conv_torch.log)"
ANCHORS_DIR=$LOGS timeout 150 python3 bench/conv_torch.py >"$LOGS/conv_torch.log" 2>&1
echo "conv_torch.py rc=$?"
tail -3 "$LOGS/conv_torch.log"
echo "== table"
python3 bench/conv_table.py "$LOGS/gpu_conv.log" "$LOGS/conv_torch.json" | tee "$LOGS/conv_table.md"
