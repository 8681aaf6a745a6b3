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

[ -z "$missing" ] && exit 0

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
