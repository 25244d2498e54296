#!/bin/sh
# Configure and build clgrad into BUILD_DIR (default: build). Extra arguments go to cmake.
# BUILD_TARGETS (space-separated) builds only those targets and what they need.
set -eu
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$dir" -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
