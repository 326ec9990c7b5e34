#!/usr/bin/env bash
# Install the Debian packages mrtx needs to build, test and fuzz.
set -euo pipefail
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config clang libclang-rt-14-dev \
  liblmdb-dev lmdb-utils libbsd-dev libssl-dev libcmocka-dev python3 >/dev/null
