#!/bin/bash
# tools/gpu-models.sh — the full-size models of issue 14 on the GPU machine:
# GPT-2 small (b1, 128 tokens) and ResNet-18 (b8), each from both PyTorch
# exporters, made by tests/models/export_models.py (random weights, PyTorch's
# outputs stored beside them).
#
# Run from the repository root there, e.g. with the device tool:
#   run(command="tools/gpu-models.sh", carry=[".devdeps"], timeout_s=600)
#
# Steps (MODELS_STEPS, comma-separated; default all but skel):
#   check    braid imports, compiles for cuda:0 (timed, cold kernel cache for
#            the first model), runs on the stored input; compared with
#            PyTorch's stored output (rtol 1e-3, atol 1e-4; 1e-2 with TF32)
#   bench    braid's latency, inputs and outputs on the GPU (--no-transfers),
#            fp32 and --tf32
#   torch    bench/models_torch.py in the same run: eager, torch.compile,
#            reduce-overhead, TF32 off and on (MODELS_TORCH_ARGS: its args)
#   profile  braid run --profile of the _ts models: the per-op table
#   planload GPT-2 compiled to a plan file with the GPU hidden (as on the
#            GPU-less build machine), then `braid run` of the file in a
#            fresh process: load, first run, the process's wall time, the
#            output against PyTorch's; and bench/plan_first_result's steps
#            (load, executor, first run; context cold and made beforehand)
#   skel     each model without its large float weights (initializers of
#            4096 elements or more lose their data; name, dims and type stay)
#            as <stem>.skel.onnx in $OUT/skel.tgz, for timing on a machine
#            without PyTorch (bench/fill_skeleton.py puts weights back)
# MODELS_ONLY=regex limits the model stems; MODELS_DURATION (default 3)
# is the seconds per benchmark. Builds braid into build-models (kept on a
# warm machine; MODELS_BUILD=DIR: another build folder, configured there
# already or here with the tests off); models in DIR/models. Logs in $OUT/models-logs.tgz
# (else build-models/logs), the summary in $OUT/models.txt.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=$(realpath -m "${MODELS_BUILD:-$ROOT/build-models}")
LOGS=$BUILD/logs
SUMMARY=${OUT:-$BUILD}/models.txt
mkdir -p "$LOGS" "$BUILD/models"
D=$ROOT/.devdeps/usr
export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$D/lib/x86_64-linux-gnu/pkgconfig CMAKE_PREFIX_PATH=$D
export PATH=/usr/local/cuda/bin:$PATH CUDAToolkit_ROOT=/usr/local/cuda
export PYTHONUNBUFFERED=1
STEPS=${MODELS_STEPS:-check,bench,torch,profile,planload}
DUR=${MODELS_DURATION:-3}
step() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
finish() { [ -n "${OUT:-}" ] && tar -czf "$OUT/models-logs.tgz" -C "$BUILD" logs; }
trap finish EXIT
exec > >(tee "$SUMMARY") 2>&1
echo "== gpu-models $(date -u '+%Y-%m-%d %H:%M:%S UTC') commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (+ local changes)') steps $STEPS"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

t0=$(date +%s)
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
{ { [ -f "$BUILD/CMakeCache.txt" ] ||
    cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DBRAID_CUDA=ON -DBRAID_ONNX=ON \
      -DBRAID_TESTS=OFF -DBRAID_WERROR=OFF -DCMAKE_BUILD_TYPE=Release; } &&
  cmake --build "$BUILD" -j "$(nproc)" --target braid_cli bench_plan_first_result; } >"$LOGS/build.log" 2>&1 ||
    { tail -30 "$LOGS/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
BRAID=$BUILD/braid
export XDG_CACHE_HOME=$BUILD/cache # a cold kernel cache for the first compile
rm -rf "$XDG_CACHE_HOME"

M=$BUILD/models
if [ ! -f "$M/resnet18_b8_ts.onnx" ] || [ ! -f "$M/gpt2_b1_s128_ts.onnx" ]; then
    t0=$(date +%s)
    python3 tests/models/export_models.py "$M" >"$LOGS/export.log" 2>&1 ||
        { tail -30 "$LOGS/export.log"; exit 1; }
    echo "export: $(( $(date +%s) - t0 )) s"
fi
STEMS=()
for f in "$M"/*.onnx; do
    s=$(basename "$f" .onnx)
    [ -n "${MODELS_ONLY:-}" ] && ! echo "$s" | grep -qE "$MODELS_ONLY" && continue
    STEMS+=("$s")
done
input_of() { case $1 in gpt2*) echo input_ids ;; *) echo input ;; esac; }

# NPY vs the stored output .pb: max abs / rel error, failures at rtol 1e-3 + atol
cmp_py='
import sys, numpy as np, onnx
from onnx import numpy_helper
got = np.load(sys.argv[1]).astype(np.float64)
t = onnx.TensorProto(); t.ParseFromString(open(sys.argv[2], "rb").read())
ref = numpy_helper.to_array(t).astype(np.float64)
atol = float(sys.argv[3])
err = np.abs(got - ref)
bad = int((err > atol + 1e-3 * np.abs(ref)).sum())
rel = (err / np.maximum(np.abs(ref), 1e-30))[np.abs(ref) > 1e-3].max()
print(f"max abs {err.max():.3g}, max rel (|ref| > 1e-3) {rel:.3g}; over rtol 1e-3 + atol {atol:g}: {bad} of {ref.size}", "ok" if bad == 0 else "FAIL")
'
if step check || step bench; then
    for stem in "${STEMS[@]}"; do
        f=$M/$stem.onnx ds=$M/$stem/test_data_set_0 in=$(input_of "$stem")
        for tf in "" "--tf32"; do
            tag=$stem${tf:+_tf32}
            if step check; then
                o=$BUILD/out/$tag
                rm -rf "$o"
                "$BRAID" run "$f" --devices cuda:0 $tf --input "$in=$ds/input_0.pb" \
                    --output-dir "$o" >"$LOGS/run_$tag.log" 2>&1
                rc=$?
                c=$(grep -m1 '^compile' "$LOGS/run_$tag.log")
                atol=1e-4; [ -n "$tf" ] && atol=1e-2
                if [ $rc -eq 0 ]; then
                    v=$(python3 -c "$cmp_py" "$o/logits.npy" "$ds/output_0.pb" $atol 2>&1)
                else
                    v="braid run failed (rc $rc): $(tail -3 "$LOGS/run_$tag.log")"
                fi
                echo "check $stem${tf:+ tf32}: $c; $v"
            fi
            if step bench; then
                b=$("$BRAID" run "$f" --devices cuda:0 $tf --no-transfers --warmup 20 \
                      --duration "$DUR" 2>"$LOGS/bench_$tag.log" |
                    grep -E '^latency|^split' | tr '\n' ' ')
                [ -n "$b" ] || b="FAILED: $(tail -2 "$LOGS/bench_$tag.log")"
                echo "bench $stem${tf:+ tf32}: $b"
            fi
        done
    done
fi

if step planload; then
    for stem in "${STEMS[@]}"; do
        case $stem in gpt2*_ts) ;; *) continue ;; esac
        ds=$M/$stem/test_data_set_0
        # compiled with the GPU hidden, as on the GPU-less build machine
        CUDA_VISIBLE_DEVICES= "$BRAID" compile "$M/$stem.onnx" --devices cuda:0 \
            -o "$BUILD/$stem.plan" --report >"$LOGS/compile_$stem.log" 2>&1
        echo "compile $stem: $(grep -m1 '^wrote' "$LOGS/compile_$stem.log")"
        grep -E '^compile report|^  pass (simplify|memory|fuse)|passes in all|kernels:' \
            "$LOGS/compile_$stem.log"
        t0=$(date +%s.%N)
        "$BRAID" run "$BUILD/$stem.plan" --input "input_ids=$ds/input_0.pb" \
            --output-dir "$BUILD/out/plan_$stem" >"$LOGS/planrun_$stem.log" 2>&1
        t1=$(date +%s.%N)
        echo "plan file $stem: $(grep -E '^(load|run):' "$LOGS/planrun_$stem.log" | tr '\n' ' ')" \
             "process wall $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}') s;" \
             "$(python3 -c "$cmp_py" "$BUILD/out/plan_$stem/logits.npy" "$ds/output_0.pb" 1e-4 2>&1)"
        # load → executor → first result, step by step, in fresh processes:
        # the CUDA context made by the steps, then made beforehand
        for w in "" --warm-context; do
            r=$("$BUILD/bench/plan_first_result" "$BUILD/$stem.plan" $w --runs 5 \
                  2>&1 | tee "$LOGS/first_result_$stem$w.log" | grep '^RESULT')
            echo "first result $stem${w:+ ($w)}: ${r:-FAILED: $(tail -2 "$LOGS/first_result_$stem$w.log")}"
        done
    done
fi

if step torch; then
    timeout 300 python3 bench/models_torch.py ${MODELS_TORCH_ARGS:-} >"$LOGS/torch.log" 2>&1
    grep RESULT "$LOGS/torch.log" || tail -20 "$LOGS/torch.log"
fi

if step profile; then
    for stem in "${STEMS[@]}"; do
        case $stem in *_ts) ;; *) continue ;; esac
        in=$(input_of "$stem")
        "$BRAID" run "$M/$stem.onnx" --devices cuda:0 --input "$in=$M/$stem/test_data_set_0/input_0.pb" \
            --profile --runs 20 --trace "$LOGS/trace_$stem.json" >"$LOGS/profile_$stem.txt" 2>&1
        echo "== profile $stem (the per-op table's top; in full: profile_$stem.txt)"
        grep -A14 'per op kind' "$LOGS/profile_$stem.txt" | head -16
        grep overlap "$LOGS/profile_$stem.txt" | tail -1
    done
fi

if step skel && [ -n "${OUT:-}" ]; then
    mkdir -p "$BUILD/skel"
    for stem in "${STEMS[@]}"; do
        python3 - "$M/$stem.onnx" "$BUILD/skel/$stem.skel.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
n = 0
for t in m.graph.initializer:
    size = 1
    for d in t.dims: size *= d
    if t.data_type == onnx.TensorProto.FLOAT and size >= 4096:
        t.ClearField("raw_data"); t.ClearField("float_data")
        t.ClearField("external_data"); t.data_location = onnx.TensorProto.DEFAULT
        n += 1
onnx.save(m, sys.argv[2])
print(f"skeleton {sys.argv[2]}: {n} initializers stripped")
PY
    done
    tar -czf "$OUT/skel.tgz" -C "$BUILD" skel && ls -la "$OUT/skel.tgz"
fi
