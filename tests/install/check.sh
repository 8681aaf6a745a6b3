#!/bin/sh
# Installs the braid build in $1 into a temporary prefix, then builds a
# separate project against it: through find_package(braid) (also with no
# CUDA toolkit, shared library only) and through pkg-config (braid.pc: with
# LD_LIBRARY_PATH, with the rpath variable, statically with --static). Every
# program must run and print "consumer ok".
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
# the rpath variable: the program finds libbraid.so.0 with no
# LD_LIBRARY_PATH (a prefix outside the loader's search path)
PKG_CONFIG_PATH=$pcpath cc -o "$tmp/pc_rpath" "$src/consumer.c" \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --cflags --libs braid) \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --variable=rpath braid)
env -u LD_LIBRARY_PATH "$tmp/pc_rpath"
# a static link from pkg-config --static alone (the CUDA libraries of a
# CUDA build included): libbraid.a first, the rest from the .pc file
PKG_CONFIG_PATH=$pcpath cc -o "$tmp/pc_static" "$src/consumer.c" \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --cflags braid) \
    "$(dirname "$libdir")/libbraid.a" \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --static --libs braid | sed 's/-lbraid\b//')
env -u LD_LIBRARY_PATH "$tmp/pc_static"
# find_package(braid) for the shared library as on a machine with no CUDA
# toolkit (find_package(CUDAToolkit) disabled: it finds none)
cmake -S "$src/shared_only" -B "$tmp/shared_only" \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
cmake --build "$tmp/shared_only" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$tmp/shared_only/consumer_shared"
# the README's C example builds as the README says and prints its result
awk '/^```c$/ {on = 1; next} /^```$/ {if (on) exit} on' \
    "$src/../../README.md" > "$tmp/readme.c"
PKG_CONFIG_PATH=$pcpath cc -o "$tmp/readme" "$tmp/readme.c" \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --cflags --libs braid) \
    $(PKG_CONFIG_PATH=$pcpath pkg-config --variable=rpath braid)
"$tmp/readme" | grep '^y\[0\]\[0\.\.2\] = '
