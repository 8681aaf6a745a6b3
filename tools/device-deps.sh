#!/bin/bash
# tools/device-deps.sh — the Debian libraries the GPU machine lacks, unpacked
# into .devdeps/ (git ignores it) so a device run can carry them:
# ../shared/tools/device-deps.sh brings Criterion and Graphviz's cgraph; this
# adds nettle (SHA-256 for the kernel cache: libnettle only, not hogweed or
# gmp, which would shadow the compiler's own), whose headers the GPU machine's
# image does not have; and protobuf-c for the ONNX importer (libprotobuf-c
# at run time, its headers and protoc-c with the C++ protobuf libraries it
# runs on, at build time: CMake finds protoc-c in .devdeps/usr/bin through
# CMAKE_PREFIX_PATH). Run from the repository root, then carry .devdeps.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
shared=../shared/tools/device-deps.sh
[ -x "$shared" ] || shared=$(dirname "$(git rev-parse --git-common-dir)")/../shared/tools/device-deps.sh
bash "$shared" .devdeps
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get download -qq nettle-dev libnettle8 libprotobuf-c1 \
    libprotobuf-c-dev protobuf-c-compiler libprotoc32 libprotobuf32 2>/dev/null )
for f in "$tmp"/*.deb; do dpkg -x "$f" .devdeps; done
find .devdeps -xtype l -delete
find .devdeps -name '*.pc' -exec sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../../..|' {} +
du -sh .devdeps
