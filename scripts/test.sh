#!/usr/bin/env bash
# Configure, build (warnings are errors) and run every test through CTest.
# Extra CMake arguments pass through, e.g.
#   scripts/test.sh -DCMAKE_BUILD_TYPE=Debug -DMRTX_SANITIZE=address,undefined
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DMRTX_WERROR=ON "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure ${CTEST_ARGS:-}
