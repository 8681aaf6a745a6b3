#!/bin/sh
# bench/run_cpu.sh — the CPU benchmarks in one go: the elementwise chain,
# braid (fused and unfused, bench/elementwise_chain.c) against NumPy op by
# op (bench/numpy_chain.py) on the same expression and size, with a table of
# the ratio braid / NumPy (speed: NumPy's time over braid's); then a matmul
# node against OpenBLAS's cblas_sgemm called directly (bench/cpu_matmul.c,
# MATMUL_N, default 2048).
#
# usage: bench/run_cpu.sh [BUILD_DIR] [--n N] [--runs R]
# BUILD_DIR defaults to build-bench, configured as a Release build here.
# ANCHORS.md's target: fused braid ≥ 2× NumPy's speed.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-bench"
case "${1:-}" in
    --*|'') ;;
    *) build=$1; shift ;;
esac
python=${PYTHON:-/usr/bin/python3}

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DBRAID_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bench_elementwise_chain bench_cpu_matmul -j2 >/dev/null

# Other work on the machine skews the figures (braid uses every core,
# NumPy one): the load average before and after is printed with them.
load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
echo "== braid (bench/elementwise_chain.c)"
braid_out=$("$build/bench/elementwise_chain" "$@")
echo "$braid_out"
echo "== NumPy (bench/numpy_chain.py)"
numpy_out=$("$python" "$root/bench/numpy_chain.py" "$@")
echo "$numpy_out"

# The key=value lines, last line of each program's output.
kv() { printf '%s\n' "$1" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p"; }
fused=$(kv "$braid_out" braid_fused_ms)
unfused=$(kv "$braid_out" braid_unfused_ms)
numpy=$(kv "$numpy_out" numpy_ms)
n=$(kv "$braid_out" n)

load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')

echo
echo "== elementwise chain, $n f32 elements, $(nproc) cores" \
     "(load average $load_before before, $load_after after)"
awk -v f="$fused" -v u="$unfused" -v p="$numpy" -v n="$n" 'BEGIN {
    gb = 16 * n / 1e9
    printf "| %-22s | %10s | %8s | %14s |\n", "implementation", "median ms", "GB/s", "speed vs NumPy"
    printf "|%s|%s|%s|%s|\n", "------------------------", "------------", "----------", "----------------"
    printf "| %-22s | %10.2f | %8.1f | %13.2fx |\n", "braid, fused", f, gb / (f / 1e3), p / f
    printf "| %-22s | %10.2f | %8.1f | %13.2fx |\n", "braid, fusion disabled", u, gb / (u / 1e3), p / u
    printf "| %-22s | %10.2f | %8.1f | %13.2fx |\n", "NumPy, op by op", p, gb / (p / 1e3), 1.0
    printf "\nbraid fused / NumPy speed ratio: %.2f (target >= 2)\n", p / f
}'

echo
echo "== matmul node vs cblas_sgemm (bench/cpu_matmul.c)"
"$build/bench/cpu_matmul" --n "${MATMUL_N:-2048}" --runs 7
