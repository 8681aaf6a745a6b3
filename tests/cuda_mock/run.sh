#!/bin/bash
# tests/cuda_mock/run.sh — runs the GPU suites (tests/test_cuda_*.c) on a
# machine without a GPU, against tests/cuda_mock/cudart_mock.c and
# cublaslt_mock.c, a host emulation of the CUDA runtime, cuBLAS and
# cuBLASLt (lazy streams run in a random order that honours only events,
# kernels computed by the CPU executor's kernels, naive gemm with the
# cuBLASLt epilogues). A development check of the CUDA backend's
# dispatcher, events, staging, deferral, graphs and bindings; it says
# nothing about the generated kernels (NVRTC still compiles them). ctest
# runs six of these suites against the mock on every build with the CUDA
# toolkit (mock_test_cuda_*, CMakeLists.txt's BRAID_MOCK_SUITES); this
# script runs all of them, under several seeds.
#
# Usage: tests/cuda_mock/run.sh [SUITE_REGEX] [SEEDS]
#   e.g. tests/cuda_mock/run.sh 'graph|copies' 3
# Builds in $MOCK_BUILD (default build-mock), links each suite's objects
# with the mock instead of libcudart/libcublas, runs it once per seed.
# MOCK_SANITIZE=1 builds everything with ASan + UBSan (use another
# MOCK_BUILD).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${MOCK_BUILD:-$ROOT/build-mock}
ONLY=${1:-.}
SEEDS=${2:-2}
SAN=()
FSAN=""
if [ "${MOCK_SANITIZE:-0}" = 1 ]; then
    SAN=(-DBRAID_SANITIZE=ON)
    FSAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
fi
cmake -S "$ROOT" -B "$B" -DBRAID_CUDA=ON -DBRAID_WERROR=ON "${SAN[@]}" >/dev/null
suites=$(cd "$ROOT/tests" && ls test_cuda_*.c | sed 's/\.c$//' | grep -E "$ONLY")
cmake --build "$B" -j "$(nproc)" --target braid_obj braid_test_support $suites >/dev/null
M=$B/mock
mkdir -p "$M"
CFLAGS="-std=c11 -g -O1 -Wall -Wextra -Werror $FSAN -I$ROOT -I$ROOT/include -I/usr/local/cuda/include"
gcc $CFLAGS -c "$ROOT/tests/cuda_mock/cudart_mock.c" -o "$M/cudart_mock.o"
gcc $CFLAGS -c "$ROOT/tests/cuda_mock/cublaslt_mock.c" -o "$M/cublaslt_mock.o"
gcc $CFLAGS -DBRAID_HAVE_CUDA=1 -DBRAID_CUDA_MOCK -c "$ROOT/runtime/cuda/cuda_kernels.c" \
    -o "$M/cuda_kernels.o"
objs=$(find "$B/CMakeFiles/braid_obj.dir" -name '*.o' ! -name 'cuda_kernels.c.o')
rc=0
for t in $suites; do
    tobj=$(find "$B/CMakeFiles/$t.dir" -name '*.o')
    gcc $FSAN -o "$M/$t" $tobj "$M/cuda_kernels.o" "$M/cudart_mock.o" \
        "$M/cublaslt_mock.o" $objs \
        "$B/libbraid_test_support.a" -L/usr/local/cuda/lib64 -lnvrtc \
        -Wl,-rpath,/usr/local/cuda/lib64 \
        $(pkg-config --libs criterion openblas libcgraph nettle) \
        $(pkg-config --libs libprotobuf-c 2>/dev/null) -lpthread -lm
    for seed in $(seq 1 "$SEEDS"); do
        if MOCK_SEED=$seed "$M/$t" --jobs 2 >"$M/$t.$seed.log" 2>&1; then
            echo "mock $t seed $seed: $(grep -o 'Tested.*' "$M/$t.$seed.log" | tail -1)"
        else
            rc=1
            echo "mock $t seed $seed: FAILED"
            grep -vE '^\[(RUN |PASS)\]' "$M/$t.$seed.log" | head -40
        fi
    done
done
exit $rc
