#!/bin/bash
# bench/gpu.sh — braid's benchmarks and the PyTorch equivalents in one run
# on the GPU machine, then the table of ANCHORS.md's targets.
#
# Run from the repository root there, e.g. with the device tool:
#   run(command="bench/gpu.sh", carry=[".devdeps", ".anchors"], timeout_s=600)
# `bench/gpu.sh train` runs only the training steps of issue 15 (builds
# the two programs, runs them and bench/train_step_torch.py for each, and
# prints both ratios): the full run may leave too little time for them.
# Steps: configure + build braid (Release, BRAID_CUDA=ON, no tests) into
# build-bench; run every bench program (each with a time limit; logs in
# $OUT/bench/<program>.log); run torch_anchors.py (../shared/bench/ or
# .anchors/) with ANCHORS_DIR=$OUT/bench; run bench/train_step_torch.py
# for each training step (the MLP's, then the GPT-2 block's: PyTorch's
# side, BENCH_TRAIN_TIMEOUT default 150 s each) and print braid's step
# time against it; print the table (bench/table.py),
# also written to $OUT/bench/table.md. Never stops at a failing program.
# BENCH_TORCH_TIMEOUT (default 240 s) limits the PyTorch script; when the
# full script does not finish, its --quick mode runs instead (no
# torch.compile, MLP or softmax figures).
set -u
START=$(date +%s)
MODE=${1:-all}
case $MODE in all | train) ;; *) echo "usage: bench/gpu.sh [train]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=${BENCH_BUILD:-$ROOT/build-bench} # BENCH_BUILD: another build folder
LOGS=${OUT:-$BUILD}/bench
mkdir -p "$LOGS"
export NCCL_NVLS_ENABLE=0
D=$ROOT/.devdeps/usr
if [ -d "$D" ]; then
    export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PKG_CONFIG_PATH=$D/lib/x86_64-linux-gnu/pkgconfig
    export CMAKE_PREFIX_PATH=$D
else
    echo "gpu.sh: no .devdeps (libcgraph): carry .devdeps along (../shared/tools/device-deps.sh)" >&2
fi
export PATH=/usr/local/cuda/bin:$PATH CUDAToolkit_ROOT=/usr/local/cuda
export XDG_CACHE_HOME=$BUILD/cache # braid's kernel cache, fresh each run
rm -rf "$XDG_CACHE_HOME"

{
    echo "== bench/gpu.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC') commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>&1
    echo "cores: $(nproc)"
} | tee "$LOGS/env.txt"

echo "== build (log: build.log)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
t0=$(date +%s)
{ cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DBRAID_CUDA=ON -DBRAID_TESTS=OFF \
      -DBRAID_WERROR=OFF -DCMAKE_BUILD_TYPE=Release &&
  if [ "$MODE" = train ]; then
      cmake --build "$BUILD" -j "$(nproc)" --target bench_gpu_train_step bench_gpu_train_gpt2
  else cmake --build "$BUILD" -j "$(nproc)"; fi; } >"$LOGS/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc -ne 0 ] && tail -30 "$LOGS/build.log"

# program, time limit (s): the GPU ones first, the host-heavy ones last
PROGS="arena:60 compile_time:60 gpu_chain:90 gpu_softmax:90 gpu_gather:60 gpu_tiny:60 gpu_matmul:120 gpu_mlp:90 gpu_train_step:120 gpu_train_gpt2:120 gpu_copies:120 gpu_seed001:120 plan_load:90"
[ "$MODE" = train ] && PROGS="gpu_train_step:120 gpu_train_gpt2:120"
declare -A STATUS
for pl in $PROGS; do
    p=${pl%%:*} lim=${pl##*:}
    bin=$BUILD/bench/$p
    if [ ! -x "$bin" ]; then
        STATUS[$p]="not built"
        echo "== $p: not built" | tee "$LOGS/$p.log"
        continue
    fi
    t0=$(date +%s)
    timeout "$lim" "$bin" >"$LOGS/$p.log" 2>&1
    rc=$?
    STATUS[$p]="rc $rc, $(( $(date +%s) - t0 )) s"
    [ $rc -eq 124 ] && STATUS[$p]="TIMEOUT after $lim s"
    echo "== $p: ${STATUS[$p]}"
    grep -E '^(RESULT|SKIP|ERROR)' "$LOGS/$p.log" | sed 's/^/   /'
done

echo "== PyTorch (torch_anchors.py; log: torch.log)"
TA=../shared/bench/torch_anchors.py
[ -f "$TA" ] || TA=.anchors/torch_anchors.py
rm -f "$LOGS/torch_anchors.json"
left=$(( 500 - ($(date +%s) - START) ))
lim=${BENCH_TORCH_TIMEOUT:-240}
[ $lim -gt $left ] && lim=$left
if [ "$MODE" = train ]; then
    echo "skipped (bench/gpu.sh train)"
elif [ -f "$TA" ] && [ "$lim" -gt 30 ]; then
    ANCHORS_DIR=$LOGS timeout "$lim" python3 "$TA" >"$LOGS/torch.log" 2>&1
    echo "torch_anchors.py: rc $? (limit $lim s)"
    left=$(( 520 - ($(date +%s) - START) ))
    if [ ! -f "$LOGS/torch_anchors.json" ] && [ "$left" -gt 40 ]; then
        echo "full run gave no JSON: --quick (limit $left s)"
        ANCHORS_DIR=$LOGS timeout "$left" python3 "$TA" --quick >>"$LOGS/torch.log" 2>&1
    fi
else
    echo "torch_anchors.py not found or no time left ($lim s)"
fi

# The training steps (issue 15): torch.compile of forward, backward and
# AdamW (bench/train_step_torch.py --only mlp / gpt2) against
# bench/gpu_train_step and bench/gpu_train_gpt2, same run.
# train_ratio WHICH BRAID_PROGRAM BRAID_WORKLOAD TORCH_WORKLOAD LABEL
train_ratio() {
    local log=$LOGS/torch_train_$1.log left lim
    echo "== PyTorch $5 (train_step_torch.py --only $1; log: torch_train_$1.log)"
    left=$(( 590 - ($(date +%s) - START) ))
    lim=${BENCH_TRAIN_TIMEOUT:-150}
    [ $lim -gt $left ] && lim=$left
    if [ "$lim" -le 20 ]; then
        echo "no time left for it: run bench/gpu.sh train"
        return
    fi
    timeout "$lim" python3 bench/train_step_torch.py --only "$1" >"$log" 2>&1
    echo "train_step_torch.py --only $1: rc $? (limit $lim s)"
    grep -h '^RESULT' "$LOGS/$2.log" "$log" 2>/dev/null |
        awk -v bw="$3" -v tw="$4" -v what="$5" '
             $1=="RESULT"&&$2==bw{for(i=3;i<=NF;i++){split($i,a,"=");if(a[1]=="braid_ms")b=a[2]}}
             $1=="RESULT"&&$2==tw{for(i=3;i<=NF;i++){split($i,a,"=");if(a[1]=="compile_ms")t=a[2]}}
             END{if(b!=""&&t!=""&&t+0>0)printf "%s: braid %.3f ms, torch.compile %.3f ms: %.3fx (target <= 1.0)\n",what,b,t,b/t;
                 else print what ": no comparison (see the logs)"}'
}
train_ratio mlp gpu_train_step train_step torch_train_step "training step (MLP)"
train_ratio gpt2 gpu_train_gpt2 train_gpt2 torch_train_gpt2 "training step (GPT-2 block)"
if [ "$MODE" = train ]; then
    for pl in $PROGS; do echo "  ${pl%%:*}: ${STATUS[${pl%%:*}]}"; done
    echo "total $(( $(date +%s) - START )) s; logs in $LOGS"
    exit 0
fi

echo
echo "================================ braid vs PyTorch ================================"
head -2 "$LOGS/env.txt"
python3 bench/table.py "$LOGS" "$LOGS/torch_anchors.json" | tee "$LOGS/table.md"

# the conv ops: every ResNet-18 convolution shape against PyTorch's cuDNN
left=$(( 590 - ($(date +%s) - START) ))
if [ "$left" -gt 120 ]; then
    GPU_CONV_REBUILD=0 BENCH_BUILD=$BUILD timeout "$left" bench/gpu_conv.sh
else
    echo "conv: no time left ($left s): run bench/gpu_conv.sh alone"
fi
echo
for pl in $PROGS; do echo "  ${pl%%:*}: ${STATUS[${pl%%:*}]}"; done
echo "total $(( $(date +%s) - START )) s; logs in $LOGS"
