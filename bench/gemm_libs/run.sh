#!/bin/sh
# bench/gemm_libs/run.sh — builds gemm_libs.c against whichever of BLIS
# (libblis-pthread-dev) and oneDNN (libdnnl-dev) are installed, then runs
# it once per OpenBLAS core type (the default detection, then each
# OPENBLAS_CORETYPE given), followed by bench/gemm_libs/ort_gemm.py when
# onnxruntime is importable. usage: run.sh [--time S] [--only SUBSTR] ...
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${TMPDIR:-/tmp}/braid_gemm_libs
flags="" libs=""
blis=/usr/lib/x86_64-linux-gnu/blis-pthread
if [ -f /usr/include/x86_64-linux-gnu/blis-pthread/blis.h ]; then
    flags="$flags -DHAVE_BLIS -I/usr/include/x86_64-linux-gnu/blis-pthread"
    libs="$libs -L$blis -Wl,-rpath,$blis -lblis"
fi
if [ -f /usr/include/dnnl.h ]; then
    flags="$flags -DHAVE_DNNL -fopenmp"
    libs="$libs -ldnnl"
fi
# OpenBLAS first: its cblas_sgemm wins over BLIS's compatibility layer.
# shellcheck disable=SC2086
cc -O2 -std=c11 $flags $(pkg-config --cflags openblas) -o "$out" \
    "$here/gemm_libs.c" $(pkg-config --libs openblas) $libs -lm
echo "# $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$out" "$@"
for core in ${CORETYPES:-Haswell}; do
    OPENBLAS_CORETYPE=$core "$out" --libs openblas "$@"
done
if python3 -c 'import onnxruntime' 2>/dev/null; then
    python3 "$here/ort_gemm.py" "$@"
fi
echo "# end $(date -u '+%T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
