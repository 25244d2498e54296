#!/bin/sh
# Configure and build clgrad into BUILD_DIR (default: build). Extra arguments go to cmake.
set -eu
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
