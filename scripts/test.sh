#!/usr/bin/env bash
# Configure, build (warnings are errors) and run every test through CTest.
#   scripts/test.sh [--quick] [CMAKE-ARGS...]
# Extra CMake arguments pass through, e.g.
#   scripts/test.sh -DCMAKE_BUILD_TYPE=Debug -DMRTX_SANITIZE=address,undefined
# Tests run in parallel, one per core: each test's processes, cluster and
# stores are its own (the two that install into a prefix take turns:
# RESOURCE_LOCK in tests/CMakeLists.txt).
# --quick runs only the quick tier (ctest -L quick): every layer, in under
# a minute.  CTEST_ARGS adds ctest arguments, e.g.
# CTEST_ARGS="-L storage" (one layer) or CTEST_ARGS="-L slow".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
tier=()
if [ "${1:-}" = --quick ]; then
	shift
	tier=(-L quick)
fi
cmake -S . -B "$BUILD" -DMRTX_WERROR=ON "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "${tier[@]}" ${CTEST_ARGS:-}
