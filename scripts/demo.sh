#!/usr/bin/env bash
# Set up from nothing and run the demo: install packages, configure, build,
# then run real multi-row, multi-table transactions on a fresh LMDB store.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
rm -rf demo-store
./build/mrtx-demo demo-store 250
echo "--- the same store through the mrtx tool ---"
./build/mrtx scan demo-store checking || true
./build/mrtx stats demo-store || true
