#!/bin/sh
# Installs the Debian packages braid needs to build and test, if any are
# missing. Run by `make demo` / `make test`; safe to run again (does nothing
# when everything is present). The CUDA toolkit is not a Debian package here:
# braid uses it when /usr/local/cuda (or nvcc on PATH) exists and builds
# CPU-only otherwise.
set -eu

missing=""
need() { # need PACKAGE CHECK-COMMAND...
    pkg=$1; shift
    if ! "$@" >/dev/null 2>&1; then missing="$missing $pkg"; fi
}
# Debian's numpy lives with Debian's python, whatever python3 is first on PATH.
debian_numpy() { /usr/bin/python3 -c 'import numpy'; }
has_pc() { command -v pkg-config >/dev/null && pkg-config --exists "$1"; }

need cmake            command -v cmake
need pkg-config       command -v pkg-config
need build-essential  command -v cc
need make             command -v make
need libopenblas-dev  has_pc openblas
need libcriterion-dev has_pc criterion
need libgraphviz-dev  has_pc libcgraph
need nettle-dev       has_pc nettle
need graphviz         command -v dot
need python3-numpy    debian_numpy
# ONNX import (docs/onnx.md): protoc-c generates the reader from onnx.proto
need protobuf-c-compiler command -v protoc-c
need libprotobuf-c-dev   has_pc libprotobuf-c

# onnx.proto (the ONNX reader is generated from it) and the conformance
# suite (tools/onnx-conformance.sh) come from the pip onnx package.
onnx_pip() {
    python3 -c 'import onnx, numpy' >/dev/null 2>&1 && return 0
    echo "braid: installing the python onnx package (pip install onnx numpy)"
    python3 -m pip install -q onnx numpy ||
        echo "braid: pip install onnx failed: ONNX import is left out of the build" >&2
}

if [ -z "$missing" ]; then onnx_pip; exit 0; fi

echo "braid: missing Debian packages:$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "braid: not root, so not installing them. As root, run:" >&2
    echo "    apt-get update && apt-get install -y$missing" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null; then
    echo "braid: no apt-get on this machine; install the equivalents of:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
onnx_pip
