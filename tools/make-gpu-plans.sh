#!/bin/sh
# tools/make-gpu-plans.sh — on the build machine (no GPU), compile example
# graphs into plan files for cpu,cuda:0 with sm_90 kernels, into gpu-plans/
# (ignored by git, carried to the GPU machine), where tools/gpu-check.sh
# runs each and checks that its kernels come from the stored CUBIN without
# NVRTC. usage: tools/make-gpu-plans.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=$root/gpu-plans
mkdir -p "$out"
rm -f "$out"/*.plan
for g in "$root"/examples/graphs/*.graph; do
    name=$(basename "$g" .graph)
    line=$("$build/braid" compile "$g" -o "$out/$name.plan" \
        --devices cpu,cuda:0 --arch sm_90)
    echo "$line"
    # the cost model keeps small graphs on the CPU: nothing to prove there
    case "$line" in *"no GPU kernels"*) rm -f "$out/$name.plan" ;; esac
done
ls -l "$out"
