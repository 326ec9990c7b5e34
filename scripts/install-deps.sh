#!/usr/bin/env bash
# Install the Debian packages mrtx needs to build, test and fuzz (libedit-dev: the
# line editing of `mrtx shell`; libsqlite3-dev, librocksdb-dev: the SQLite and
# RocksDB baselines of `mrtx bench`;
# ceph-*: the RADOS backend and the throw-away test cluster of scripts/rados-cluster.sh;
# iproute2: that cluster's network namespace behind a delay line, --rtt-ms).
set -euo pipefail
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config clang libclang-rt-14-dev \
  liblmdb-dev lmdb-utils libbsd-dev libssl-dev libcmocka-dev libedit-dev libsqlite3-dev librocksdb-dev \
  python3 iproute2 \
  ceph-mon ceph-osd ceph-common librados-dev >/dev/null
