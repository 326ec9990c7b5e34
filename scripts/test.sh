#!/usr/bin/env bash
# Configure, build (warnings are errors) and run every test through CTest,
# under AddressSanitizer and UndefinedBehaviorSanitizer: a Debug build with
# -DMRTX_SANITIZE=address,undefined in build-asan/ (BUILD_DIR overrides).
#   scripts/test.sh [--quick] [CMAKE-ARGS...]
# Extra CMake arguments pass through after those and win over them, e.g.
#   BUILD_DIR=build bash scripts/test.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMRTX_SANITIZE=
# for a plain optimised build.
# Tests run in parallel, one per core: each test's processes, cluster and
# stores are its own (the two that install into a prefix take turns:
# RESOURCE_LOCK in tests/CMakeLists.txt).  rados_suite, one of them, starts
# its own loopback clusters and runs the RADOS tests on them.
# --quick runs only the quick tier (ctest -L quick): every layer, in about a
# minute.  CTEST_ARGS adds ctest arguments, e.g.
# CTEST_ARGS="-L storage" (one layer) or CTEST_ARGS="-L slow".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-asan}
tier=()
if [ "${1:-}" = --quick ]; then
	shift
	tier=(-L quick)
fi
cmake -S . -B "$BUILD" -DMRTX_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
	-DMRTX_SANITIZE=address,undefined "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "${tier[@]}" ${CTEST_ARGS:-}
