#!/bin/sh
# Installs the braid build in $1 into a temporary prefix, then builds a
# separate project against it twice: through find_package(braid) and through
# pkg-config (braid.pc). Both programs must run and print "consumer ok".
set -eu
build=$1; src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"
libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)
# braid.pc requires libcgraph: keep the caller's search path behind ours
# (a libcgraph outside the system folders, as on the GPU machine)
pcpath=$libdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
PKG_CONFIG_PATH=$pcpath cc -o "$tmp/pc_consumer" "$src/consumer.c" \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --cflags --libs braid)
LD_LIBRARY_PATH="$(dirname "$libdir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$tmp/pc_consumer"
