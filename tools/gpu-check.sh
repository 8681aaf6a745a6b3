#!/bin/bash
# tools/gpu-check.sh — build braid and run every test, the GPU suites
# included, on the GPU machine; prints a summary table last.
#
# Run from the repository root on the GPU machine (see ../shared/DEVICE.md):
#
#   here, once:   tools/device-deps.sh                  # makes .devdeps/
#   there:        tools/gpu-check.sh                    # carry .devdeps
#
# e.g. with the device tool: run(command="tools/gpu-check.sh",
# carry=[".devdeps"], timeout_s=600).
#
# Steps (each logged to a file under $OUT when set, else build-gpu/logs):
#   1. environment: GPU (nvidia-smi), toolkit, compilers
#   2. configure (BRAID_CUDA=ON: the toolkit must be found) and build with
#      -j16 into build-gpu (warnings reported, not fatal: gcc 13 there)
#   3. the whole ctest suite except the GPU suites (ctest -j16)
#   4. the GPU suites tests/test_cuda_*, one binary at a time, each test in
#      parallel (Criterion --jobs 16), with a time limit each
#   5. compute-sanitizer (slow: last), every run a process of its own, all
#      started together and collected into one row each: memcheck over
#      every GPU suite (test_cuda_errors with --report-api-errors no: it
#      makes cudaMalloc fail on purpose, an API error memcheck would
#      count), racecheck and synccheck over every suite that runs several
#      streams at once (MULTI_STREAM below). The suites see
#      BRAID_TEST_SANITIZER=1 and use smaller data and fewer repetitions
#      there, and skip timing and overlap assertions
# and finally a table: step/test, result, counts, seconds. The exit status
# is 0 only when everything passed.
#
# Environment: GPU_CHECK_SKIP_CTEST=1 skips step 3, GPU_CHECK_SKIP_SANITIZER=1
# step 5; GPU_CHECK_ONLY=<regex> runs only the GPU suites matching it (in
# steps 4 and 5); GPU_CHECK_SAN_JOBS=<n> (default 2) Criterion jobs per
# sanitizer process;
# GPU_CHECK_BUDGET=<seconds> (default 540) is the time after which the
# remaining steps are skipped (rows say so), so the summary always prints
# within one 10-minute device call.
set -u
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-540}
left() { echo $((BUDGET - ($(date +%s) - START))); }
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=$ROOT/build-gpu
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS" "$BUILD"
SUMMARY=$LOGS/summary.txt
: >"$SUMMARY"
export NCCL_NVLS_ENABLE=0

# ---- environment ---------------------------------------------------------------
D=$ROOT/.devdeps/usr
if [ ! -d "$D" ]; then
    echo "gpu-check: $ROOT/.devdeps is missing: run tools/device-deps.sh" \
         "on the build machine and carry .devdeps along" >&2
    exit 2
fi
export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$D/lib/x86_64-linux-gnu/pkgconfig
export CMAKE_PREFIX_PATH=$D
export PATH=/usr/local/cuda/bin:$PATH
export CUDAToolkit_ROOT=/usr/local/cuda
# a fresh kernel cache inside the build folder: the first compile of every
# kernel is part of what is tested
export XDG_CACHE_HOME=$BUILD/cache
rm -rf "$XDG_CACHE_HOME"
JOBS=16

ROWS=() # "name<TAB>result<TAB>detail<TAB>seconds"
row() { ROWS+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"); }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

{
    echo "== gpu-check $(date -u '+%Y-%m-%d %H:%M:%S UTC') commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    gcc --version | head -1
    cmake --version | head -1
    echo "cores: $(nproc)"
} 2>&1 | tee "$LOGS/env.txt"

# ---- configure and build --------------------------------------------------------------
t0=$(now)
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
{
    cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DBRAID_CUDA=ON -DBRAID_WERROR=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$BUILD" -j "$JOBS"
} >"$LOGS/build.log" 2>&1
build_rc=$?
t1=$(now)
warnings=$(grep -c "warning:" "$LOGS/build.log")
if [ $build_rc -ne 0 ]; then
    row "build" "FAIL" "rc $build_rc, see build.log" "$(secs "$t0" "$t1")"
    echo "gpu-check: build failed; last lines of build.log:"
    tail -40 "$LOGS/build.log"
else
    row "build" "ok" "$warnings compiler warnings" "$(secs "$t0" "$t1")"
    grep "braid: CUDA backend" "$LOGS/build.log"
fi

# ---- the whole suite but the GPU tests -------------------------------------------------
all_ok=$build_rc
if [ $build_rc -eq 0 ] && [ "${GPU_CHECK_SKIP_CTEST:-0}" != 1 ]; then
    t0=$(now)
    (cd "$BUILD" && timeout 200 ctest -j "$JOBS" -E '^test_cuda_' \
        --output-on-failure --timeout 180) >"$LOGS/ctest.log" 2>&1
    rc=$?
    t1=$(now)
    line=$(grep -E "tests passed|tests failed" "$LOGS/ctest.log" | tail -1)
    failed=$(sed -n '/The following tests FAILED/,$p' "$LOGS/ctest.log" |
             grep -oE 'test_[a-z_0-9]+|install_consumer' | sort -u | tr '\n' ' ')
    row "ctest (all but test_cuda_*)" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
        "${line:-no summary}${failed:+; failed: $failed}" "$(secs "$t0" "$t1")"
    [ $rc -ne 0 ] && all_ok=1
fi

# ---- GPU suites ---------------------------------------------------------------------------
# Criterion prints "[====] Synthesis: Tested: T | Passing: P | Failing: F |
# Crashing: C"; skipped tests are not counted there, so count [SKIP] lines.
run_suite() { # name, timeout, row label ("": name), suite args, command prefix...
    local name=$1 limit=$2 label=${3:-$1} extra=$4
    shift 4
    if [ "$(left)" -lt 20 ]; then
        row "$label" "SKIP" "time budget spent" "0"
        all_ok=1
        return
    fi
    [ "$limit" -gt "$(left)" ] && limit=$(left)
    local bin=$BUILD/tests/$name log=$LOGS/gpu-tests.log
    local out=$BUILD/$(echo "$label" | tr -c 'A-Za-z0-9_\n' '_').out
    echo "==================== $label: $* $name $extra" >>"$log"
    local t0 t1 rc
    t0=$(now)
    # shellcheck disable=SC2086 # extra holds separate arguments
    timeout "$limit" "$@" "$bin" --jobs "$JOBS" --verbose $extra >"$out" 2>&1
    rc=$?
    t1=$(now)
    suite_row "$label" "$out" "$rc" "$t0" "$t1"
}

# One row from a suite's output file: label, output, exit status, start,
# end. Appends the output (less passing tests) to gpu-tests.log.
suite_row() {
    local label=$1 out=$2 rc=$3 t0=$4 t1=$5 log=$LOGS/gpu-tests.log
    # failures and logs in full, passing tests as one line each
    grep -vE '^\[(RUN |PASS)\]' "$out" >>"$log"
    local syn skips result detail san
    syn=$(grep -oE 'Tested: [0-9]+ \| Passing: [0-9]+ \| Failing: [0-9]+ \| Crashing: [0-9]+' \
          "$out" | tail -1)
    # tests left out by --filter say "Test is disabled": not skips
    skips=$(grep '^\[SKIP\]' "$out" | grep -vc 'Test is disabled')
    # compute-sanitizer's own verdict ("ERROR SUMMARY: 0 errors",
    # "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
    san=$(grep -oE '(ERROR|RACECHECK) SUMMARY: .*' "$out" | sort -u |
          tr '\n' ';' | sed 's/;$//; s/;/; /g')
    if [ $rc -eq 124 ]; then
        result=TIMEOUT
    elif [ $rc -ne 0 ]; then
        result=FAIL
    elif [ -n "$syn" ] && echo "$syn" | grep -q 'Tested: 0 '; then
        result=SKIP # every test skipped: the first reason goes in details
        syn="$syn | $(grep -m1 '^\[SKIP\]' "$out" | cut -d: -f4- | cut -c1-90)"
    else
        result=ok
    fi
    detail="${syn:-no synthesis (rc $rc)}"
    [ "$skips" -gt 0 ] && detail="$detail | skipped $skips"
    [ -n "$san" ] && detail="$detail | $san"
    row "$label" "$result" "$detail" "$(secs "$t0" "$t1")"
    # a whole suite skipped on a GPU machine is a failure, except the
    # multi-GPU suites on a machine with one GPU (tools/gpu-multi.sh)
    if [ "$result" = SKIP ] && echo "$detail" | grep -q "needs 2 GPUs"; then
        return
    fi
    [ "$result" = ok ] || all_ok=1
}

# ---- compute-sanitizer ---------------------------------------------------------------------
# The suites whose plans run several streams at once (compute streams,
# chunked copy pipelines, CUDA graphs of several streams, two executors
# side by side): racecheck and synccheck run over these.
MULTI_STREAM="test_cuda_dags test_cuda_profile test_cuda_copies test_cuda_graph test_cuda_stress"

# Starts one sanitizer run in the background: label, suite, tool, extra
# sanitizer arguments... Its output goes to $BUILD/san_<label>.out, its
# status and times to the same name with .rc.
san_start() {
    local label=$1 name=$2 tool=$3
    shift 3
    local out=$BUILD/san_$(echo "$label" | tr -c 'A-Za-z0-9_\n' '_').out
    SAN_LABELS+=("$label"$'\t'"$out")
    (
        t0=$(now)
        BRAID_TEST_SANITIZER=1 timeout "$SAN_LIMIT" compute-sanitizer \
            --error-exitcode 3 --print-limit 20 --tool "$tool" "$@" \
            "$BUILD/tests/$name" --jobs "${GPU_CHECK_SAN_JOBS:-2}" --verbose \
            >"$out" 2>&1
        echo "$? $t0 $(now)" >"$out.rc"
    ) &
}

# memcheck over every suite in $1, racecheck and synccheck over those of
# them in MULTI_STREAM, all at once (the GPU and 16 cores have room; each
# run is slow mostly in the sanitizer's own host work), within what is
# left of the budget less a minute for the steps after.
run_sanitizers() {
    SAN_LABELS=()
    NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    SAN_LIMIT=$(($(left) - 60))
    [ "$SAN_LIMIT" -gt 300 ] && SAN_LIMIT=300
    if [ "$SAN_LIMIT" -lt 30 ]; then
        row "compute-sanitizer" "SKIP" "time budget spent" "0"
        all_ok=1
        return
    fi
    local name
    for name in $1; do
        [ -x "$BUILD/tests/$name" ] || continue
        [ -n "${GPU_CHECK_ONLY:-}" ] && ! echo "$name" | grep -qE "$GPU_CHECK_ONLY" && continue
        # on one GPU the two-GPU suite skips, but under the sanitizer its
        # two-process test waits for a peer that never comes (60 s, then
        # SIGALRM): the two-GPU machine runs it (tools/gpu-multi.sh)
        [ "$name" = test_cuda_multi ] && [ "$NGPUS" -lt 2 ] && continue
        if [ "$name" = test_cuda_errors ]; then
            san_start "$name (memcheck, no API errors)" "$name" memcheck \
                --report-api-errors no
        else
            san_start "$name (memcheck)" "$name" memcheck
        fi
        case " $MULTI_STREAM " in *" $name "*) ;; *) continue ;; esac
        san_start "$name (racecheck)" "$name" racecheck
        san_start "$name (synccheck)" "$name" synccheck
    done
    wait
    local entry label out rc t0 t1
    for entry in "${SAN_LABELS[@]}"; do
        IFS=$'\t' read -r label out <<<"$entry"
        read -r rc t0 t1 <"$out.rc" 2>/dev/null || { rc=1 t0=0 t1=0; }
        echo "==================== $label" >>"$LOGS/gpu-tests.log"
        suite_row "$label" "$out" "$rc" "$t0" "$t1"
    done
}

if [ $build_rc -eq 0 ]; then
    : >"$LOGS/gpu-tests.log"
    # most telling first, in case the time budget runs out
    order="test_cuda_errors test_cuda_plan test_cuda_ops test_cuda_structural"
    order="$order test_cuda_matmul test_cuda_copies test_cuda_graph"
    order="$order test_cuda_dags test_cuda_perf"
    for bin in "$BUILD"/tests/test_cuda_*; do
        case " $order " in *" $(basename "$bin") "*) ;; *) order="$order $(basename "$bin")" ;; esac
    done
    for name in $order; do
        [ -x "$BUILD/tests/$name" ] || continue
        [ -n "${GPU_CHECK_ONLY:-}" ] && ! echo "$name" | grep -qE "$GPU_CHECK_ONLY" && continue
        if [ "$name" = test_cuda_perf ]; then # timings: one test at a time
            JOBS=1 run_suite "$name" 300 "" ""
        else
            run_suite "$name" 300 "" ""
        fi
    done
    # performance figures the suites logged (cr_log_info lines with "perf:")
    grep -h '^\[----\] perf: ' "$BUILD"/test_cuda_*.out 2>/dev/null |
        sed 's/^\[----\] //' >"$LOGS/perf.txt"
    if [ "${GPU_CHECK_SKIP_SANITIZER:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
        run_sanitizers "$order"
    fi
fi

# ---- plan files compiled on the GPU-less build machine ------------------------------------
# tools/make-gpu-plans.sh (run on the build machine, output carried as
# gpu-plans/) compiles example graphs for cpu,cuda:0, sm_90. Each must load
# and run here, match the reference, and take its kernels from the stored
# CUBIN: an empty kernel cache, and NVRTC must not compile anything.
if [ $build_rc -eq 0 ] && [ -d "$ROOT/gpu-plans" ] && [ "$(left)" -gt 20 ]; then
    t0=$(now)
    n=0 bad=0
    : >"$LOGS/gpu-plans.log"
    for plan in "$ROOT"/gpu-plans/*.plan; do
        [ -f "$plan" ] || continue
        n=$((n + 1))
        empty=$(mktemp -d)
        out=$(BRAID_CACHE_DIR=$empty BRAID_LOG=1 timeout 60 \
              "$BUILD/braid" run "$plan" --check 2>&1)
        rc=$?
        echo "== $plan (rc $rc)" >>"$LOGS/gpu-plans.log"
        echo "$out" >>"$LOGS/gpu-plans.log"
        if [ $rc -ne 0 ] || ! echo "$out" | grep -q "stored cubin" ||
           ! echo "$out" | grep -q "nvrtc: 0 compilations" ||
           [ -n "$(ls -A "$empty")" ]; then
            bad=$((bad + 1))
            echo "   ^ FAILED: rc $rc, or no stored cubin, or NVRTC ran, or the cache was written" >>"$LOGS/gpu-plans.log"
        fi
        rm -rf "$empty"
    done
    t1=$(now)
    res=ok
    [ $bad -eq 0 ] && [ $n -gt 0 ] || { res=FAIL; all_ok=1; }
    row "plan files from the build machine" "$res" \
        "$((n - bad))/$n ran from stored CUBIN, NVRTC not called" "$(secs "$t0" "$t1")"
fi

# ---- the seed examples, full size -------------------------------------------------------------
if [ $build_rc -eq 0 ] && [ "${GPU_CHECK_SKIP_EXAMPLES:-0}" != 1 ]; then
    : >"$LOGS/examples.log"
    for ex in seed000_matmul_copy seed001_cpu_gpu_overlap seed002_stream_pipeline \
              seed003_async_timing seed004_placement mlp; do
        [ "$(left)" -gt 30 ] || { row "example $ex" "skipped" "time budget" 0; continue; }
        t0=$(now)
        echo "== $ex" >>"$LOGS/examples.log"
        timeout 120 "$BUILD/examples/$ex" >>"$LOGS/examples.log" 2>&1
        rc=$?
        t1=$(now)
        res=ok
        [ $rc -eq 0 ] || { res=FAIL; all_ok=1; }
        row "example $ex" "$res" "rc $rc, output in examples.log" "$(secs "$t0" "$t1")"
    done
fi

# ---- summary ---------------------------------------------------------------------------------
{
    echo
    echo "================================ gpu-check summary ================================"
    head -3 "$LOGS/env.txt"
    printf '%-46s %-8s %8s  %s\n' "step / test" "result" "seconds" "details"
    printf '%-46s %-8s %8s  %s\n' "-----------" "------" "-------" "-------"
    for r in "${ROWS[@]}"; do
        IFS=$'\t' read -r name result detail t <<<"$r"
        printf '%-46s %-8s %8s  %s\n' "$name" "$result" "$t" "$detail"
    done
    if [ -s "$LOGS/perf.txt" ]; then
        echo
        echo "performance (logged by the suites; compare ratios, not absolutes):"
        sed 's/^/  /' "$LOGS/perf.txt"
    fi
    echo
    echo "logs: $LOGS (env.txt build.log ctest.log gpu-tests.log perf.txt summary.txt)"
    if [ $all_ok -eq 0 ]; then
        echo "RESULT: ALL PASSED"
    else
        echo "RESULT: FAILURES (see the rows above; failing assertions are in gpu-tests.log)"
        # the first failing assertions, so the table's reader sees why
        grep -B1 -A3 -m 12 "Assertion Failed\|CRASH\|Timeout\|ERROR SUMMARY: [1-9]\|RACECHECK SUMMARY: [1-9]" \
            "$LOGS/gpu-tests.log" 2>/dev/null | head -60
    fi
} | tee -a "$SUMMARY"
exit $all_ok
