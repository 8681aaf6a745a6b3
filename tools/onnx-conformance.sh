#!/bin/sh
# tools/onnx-conformance.sh [--braid PATH] [--devices cpu|cuda:0] [--jobs N]
#                           [--timeout S] [--filter REGEX] [--floor N|auto]
#                           [--keep DIR] [--quiet]
# ONNX's backend node tests, regenerated from the installed onnx package,
# run one by one through `braid run` and compared at their tolerances
# (tools/onnx_conformance.py does the work; docs/onnx.md has the counts).
# Prints passed / wrong / unsupported / error / crash / hang per op and a
# last line "N passed, N failed". Exits 1 when braid crashes or hangs on a
# test, or when fewer than the floor pass: --floor auto reads it from
# tests/onnx-conformance-floor (the CI test, ctest's onnx_conformance).
# Forcing the GPU: --devices cuda:0 (on the GPU machine).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
braid=${BRAID:-$here/../build/braid}
args=""
while [ $# -gt 0 ]; do
    case $1 in
    --braid) braid=$2; shift 2 ;;
    --braid=*) braid=${1#--braid=}; shift ;;
    --floor|--floor=*)
        v=${1#--floor}; v=${v#=}
        if [ -z "$v" ]; then v=$2; shift; fi
        shift
        [ "$v" = auto ] && v=$(cat "$here/../tests/onnx-conformance-floor")
        args="$args --floor $v" ;;
    *) args="$args $1"; shift ;;
    esac
done
if ! python3 -c 'import onnx, numpy' 2>/dev/null; then
    echo "onnx-conformance: needs python3 with onnx and numpy (pip install onnx numpy)" >&2
    exit 1
fi
# shellcheck disable=SC2086
exec python3 "$here/onnx_conformance.py" --braid "$braid" $args
