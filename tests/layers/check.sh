#!/bin/sh
# tests/layers/check.sh SRC_DIR — the layering rules of docs/architecture.md,
# checked on the sources (a ctest, "layers"):
#   - each layer includes only itself and the layers to its left
#     (braid/ <- graph/ <- passes/ <- codegen/ <- runtime/; onnx/, the
#     ONNX importer, is a front end right of graph/ and includes only
#     braid/ and graph/);
#   - passes/ and codegen/ never call CUDA nor ask the runtime what devices
#     exist (runtime/compile.c hands them a device description);
#   - tools/ and bench/ do not read plan internals (passes/), except
#     bench/bench.h's kernel runner, which launches a plan's generated
#     kernels by hand and reads the pass results through bp_plan_result.
# Prints every violation as file:line: text and exits 1 when there is one.
set -u
cd "${1:?usage: check.sh SRC_DIR}" || exit 2
bad=0
found=$(mktemp) || exit 2
trap 'rm -f "$found"' EXIT
report() { # $1: what is wrong; stdin: grep -n output (runs in a subshell)
    while IFS= read -r line; do
        echo "$line  <- $1" | tee -a "$found"
    done
}
includes_outside() { # $1 folder, $2 allowed folders as a regex
    grep -nE '#include *"[a-z_]+/' "$1"/*.c "$1"/*.h 2>/dev/null |
        grep -vE "#include *\"($2)/" |
        report "$1/ may include only $2"
}
includes_outside graph 'braid|graph'
includes_outside passes 'braid|graph|passes'
includes_outside codegen 'braid|graph|passes|codegen'
includes_outside onnx 'braid|graph|onnx'
# nothing left of onnx/ (graph, passes, codegen) may depend on it
grep -nE '#include *"onnx/' graph/*.[ch] passes/*.[ch] codegen/*.[ch] 2>/dev/null |
    report "graph/, passes/ and codegen/ must not include onnx/"
# CUDA runtime/driver calls, CUDA headers, the runtime's device queries.
grep -nE '\bcu(da)?[A-Z][A-Za-z0-9_]*[[:space:]]*\(|#include *<(cuda|cuda_runtime[a-z_]*|cublas[A-Za-z_]*)\.h>|braid_cuda_(device_count|status)' \
    passes/*.c passes/*.h codegen/*.c codegen/*.h |
    report "passes/ and codegen/ must not call CUDA or probe devices"
grep -nE '#include *"passes/' tools/*.c tools/*.h bench/*.c bench/*.h 2>/dev/null |
    grep -v '^bench/bench\.h:' |
    report "tools/ and bench/ use the public API, not plan internals"
if [ -s "$found" ]; then bad=1; else echo "layers: ok"; fi
exit "$bad"
