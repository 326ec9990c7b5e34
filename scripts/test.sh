#!/usr/bin/env bash
# Configure, build (warnings are errors) and run every test through CTest.
#   scripts/test.sh [--quick] [CMAKE-ARGS...]
# Extra CMake arguments pass through, e.g.
#   scripts/test.sh -DCMAKE_BUILD_TYPE=Debug -DMRTX_SANITIZE=address,undefined
# --quick runs only the quick tier (ctest -L quick, in parallel): every
# layer, in under a minute.  CTEST_ARGS adds ctest arguments, e.g.
# CTEST_ARGS="-L storage" (one layer) or CTEST_ARGS="-L slow".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
tier=()
if [ "${1:-}" = --quick ]; then
	shift
	tier=(-L quick -j"$(nproc)")
fi
cmake -S . -B "$BUILD" -DMRTX_WERROR=ON "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure "${tier[@]}" ${CTEST_ARGS:-}
