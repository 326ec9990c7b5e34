#!/usr/bin/env bash
# rados_suite.sh BUILD_DIR - run the RADOS tests against a throw-away cluster.
#
# Starts a cluster (scripts/rados-cluster.sh, cephx on, memstore) in a temp
# directory, runs the tests labelled `rados` with
#   MRTX_TEST_RADOS_CONF=<dir>/ceph.conf   the cluster (tests skip without it)
#   MRTX_TEST_RADOS_KILL=1                 tests may kill and restart OSDs
#   MRTX_SRC=<source tree>                 where scripts/rados-cluster.sh is
# and stops the cluster by its pid files however the run ends (trap).  The temp
# directory (logs) is removed on success and kept on failure.  Registered as
# the CTest test `rados_suite`, so the plain `ctest` runs the RADOS tests with
# a cluster; `ctest -L '^rados$'` alone runs them without one (they skip).
#
# MRTX_TEST_STORE (default rados) is passed through to the tests, whose
# stores tests/support/testutil.c then makes as rados://mrtx/<unique>?conf=... ;
# RADOS_SUITE_LABELS (default '^(rados|store)$') picks what runs: the RADOS
# tests and the backend-neutral protocol suite, on one cluster.
#
# Env: MON_PORT/PORT_MIN/PORT_MAX (default: the first of 41789, 41689, ...
# whose mon port is free, with the 200 ports above it), OBJECTSTORE,
# RADOS_SUITE_CEPHX (1), RADOS_SUITE_BENCH (1), RADOS_SUITE_CHAOS (1), RADOS_SUITE_NETDELAY (1:
# a second cluster behind rados-cluster.sh's --rtt-ms delay line, run only while the suite
# has used under 2700 s, so that its start, bench (at most 300 s) and stop end before the
# CTest TIMEOUT of 3600 s), RADOS_SUITE_TIMEOUT (2400 s for the inner ctest, which takes
# 200-600 s on the machines seen so far, two tests at a time, under ASan as well; the
# suite ends under the CTest TIMEOUT, so the trap runs),
# RADOS_SUITE_TESTS (a ctest -R regex: only those of the labelled tests, e.g.
# '^test_(ts|heartbeat)$' for a TSan build),
# RADOS_SUITE_JOBS (2: how many of the tests run at once on the one cluster;
# each has its own store, and test_radosconn, which kills an OSD and changes
# the pool's min_size, runs alone: RUN_SERIAL).
# Exit 77 (skipped) when ceph-mon/ceph-osd are missing.
set -uo pipefail

BUILD=${1:?usage: rados_suite.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CLUSTER=$SRC/scripts/rados-cluster.sh

for t in ceph-mon ceph-osd ceph rados ceph-authtool monmaptool; do
	command -v "$t" >/dev/null || { echo "rados_suite: $t not installed: skipped"; exit 77; }
done
if [ -n "${MRTX_IN_RADOS_SUITE:-}" ]; then
	echo "rados_suite: already inside a RADOS suite: skipped"; exit 77
fi

jobs=${RADOS_SUITE_JOBS:-2}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
	echo "rados_suite: RADOS_SUITE_JOBS must be a number of tests >= 1: $jobs"; exit 2
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [ -z "${MON_PORT:-}" ]; then
	for p in 41789 41689 41589 41489 41389 41289; do
		if port_free "$p"; then MON_PORT=$p; break; fi
	done
	[ -n "${MON_PORT:-}" ] || { echo "rados_suite: no free monitor port"; exit 1; }
	PORT_MIN=${PORT_MIN:-$((MON_PORT + 11))}
	PORT_MAX=${PORT_MAX:-$((MON_PORT + 210))}
fi
export MON_PORT PORT_MIN=${PORT_MIN:-41800} PORT_MAX=${PORT_MAX:-41999}

DIR=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-rados-suite.XXXXXX")
ok=0
finish() {
	bash "$CLUSTER" stop "$DIR" || true
	if [ -d "$DIR/rtt" ]; then MON_PORT=$((MON_PORT + 1)) bash "$CLUSTER" stop "$DIR/rtt" || true; fi
	if [ "$ok" = 1 ]; then
		rm -rf "$DIR" 2>/dev/null || { sleep 1; rm -rf "$DIR"; } ||
			echo "rados_suite: could not remove $DIR"
	else
		echo "rados_suite: cluster state and logs kept in $DIR"
	fi
}
trap finish EXIT
trap 'exit 1' INT TERM HUP

cephx=()
[ "${RADOS_SUITE_CEPHX:-1}" = 1 ] && cephx=(--cephx)
t0=$(date +%s%3N)
bash "$CLUSTER" start "$DIR" "${cephx[@]}" || { echo "rados_suite: cluster start failed"; exit 1; }
echo "rados_suite: cluster up in $(( $(date +%s%3N) - t0 )) ms (mon 127.0.0.1:$MON_PORT)"

only=()
[ -n "${RADOS_SUITE_TESTS:-}" ] && only=(-R "$RADOS_SUITE_TESTS")
MRTX_IN_RADOS_SUITE=1 MRTX_TEST_RADOS_CONF=$DIR/ceph.conf MRTX_TEST_RADOS_KILL=1 MRTX_SRC=$SRC \
	MRTX_TEST_STORE=${MRTX_TEST_STORE:-rados} timeout "${RADOS_SUITE_TIMEOUT:-2400}" \
	ctest --test-dir "$BUILD" -L "${RADOS_SUITE_LABELS:-^(rados|store)\$}" "${only[@]}" \
	-j"$jobs" --output-on-failure --no-tests=error
rc=$?

# mrtx bench on RADOS, short: the three commit workloads and the seven
# latency sizes are reported, and every object the run created is removed
# at the end.
MRTX=$BUILD/mrtx
if [ "$rc" = 0 ] && [ -x "$MRTX" ] && [ "${RADOS_SUITE_BENCH:-1}" = 1 ]; then
	out=$DIR/bench.json
	bstore="rados://mrtx/bench-$$?conf=$DIR/ceph.conf"
	if ! timeout 300 "$MRTX" bench "$bstore" --quick --json >"$out" 2>"$DIR/bench.err"; then
		echo "rados_suite: mrtx bench FAILED:"; cat "$DIR/bench.err"; rc=1
	elif [ "$(grep -o '"name": "single_row"\|"name": "multi_row"\|"name": "one_tablet"' \
	          "$out" | wc -l)" != 3 ] ||
	     [ "$(grep -o '"rows": [0-9]*' "$out" | tr -d '\n')" != \
	       '"rows": 1"rows": 2"rows": 4"rows": 8"rows": 16"rows": 32"rows": 64' ] ||
	     [ "$(grep -o '"mrtx_round_trips": [0-9.]*' "$out" | wc -l)" != 7 ]; then
		echo "rados_suite: mrtx bench printed an incomplete report:"; cat "$out"; rc=1
	elif ! objs=$(timeout 60 rados -c "$DIR/ceph.conf" -p mrtx ls); then
		echo "rados_suite: cannot list pool mrtx after mrtx bench"; rc=1
	elif left=$(grep -c "^bench-$$-b" <<<"$objs"); then
		echo "rados_suite: mrtx bench left $left objects behind"; rc=1
	else
		echo "rados_suite: mrtx bench --quick on RADOS:"; sed 's/^/  /' "$out"
	fi
fi

# mrtx chaos on RADOS while an OSD is SIGKILLed and restarted mid-run: bank
# (batched) and append (unbatched), each with 0 anomalies and every lock
# settled by recovery.  The store's tablet bound is tiny (split_rows=2), so
# tablets split online during the run whatever the machine's speed: bank's
# first transfers write more than two rows a table, and append's first
# window of keys does (a larger bound for append waited for its key window
# to slide, which takes as many transactions as a slow machine may not
# commit in the run's seconds); the objects left in the pool show it (a
# split makes two tablet objects with new seqs).
if [ "$rc" = 0 ] && [ -x "$MRTX" ] && [ "${RADOS_SUITE_CHAOS:-1}" = 1 ]; then
	for spec in "bank:2:" "append:2:--unbatched"; do
		w=${spec%%:*}; u=${spec#*:}; bound=${u%%:*}; u=${u#*:}
		store="rados://mrtx/chaos-$w-$$?conf=$DIR/ceph.conf&split_rows=$bound"
		log=$DIR/chaos-$w.out
		# the run's end is the suite's, by events: the OSD goes down once
		# the writers have 20 commits in their histories, comes back 3 s
		# later, and once they have committed 200 more the run is ended
		# (SIGTERM: chaos then stops, recovers and checks as at its end);
		# --seconds is only a ceiling, reached only if they never do
		TMPDIR=$DIR "$MRTX" chaos "$store" --workload "$w" --seconds 900 --writers 3 $u \
			>"$log" 2>&1 &
		cpid=$!
		hist=$DIR/mrtx-chaos-mrtx-chaos-$w-$$
		commits() { cat "$hist"/h-*.log 2>/dev/null | grep -c '^O'; }
		until [ "$(commits)" -ge 20 ] || ! kill -0 "$cpid" 2>/dev/null; do
			sleep 0.1
		done
		bash "$CLUSTER" kill-osd 1 "$DIR" || rc=1
		sleep 3
		bash "$CLUSTER" restart-osd 1 "$DIR" || rc=1
		back=$(commits)
		until [ "$(commits)" -ge $((back + 200)) ] || ! kill -0 "$cpid" 2>/dev/null; do
			sleep 0.1
		done
		if kill -TERM "$cpid" 2>/dev/null; then
			echo "rados_suite: chaos $w: osd.1 killed after 20 commits, back after $back," \
				"the run ended after $(commits)"
		else
			echo "rados_suite: chaos $w ended by itself (after $(commits) commits)"; rc=1
		fi
		if ! wait "$cpid"; then
			echo "rados_suite: chaos $w $u FAILED:"; cat "$log"; rc=1
		elif ! objs=$(timeout 60 rados -c "$DIR/ceph.conf" -p mrtx ls); then
			echo "rados_suite: cannot list pool mrtx after chaos $w"; rc=1
		else
			tab=$(grep -E "^chaos-$w-$$\.[0-9a-f]+\.[0-9a-f]+\$" <<<"$objs" | sort)
			ntab=$(grep -c . <<<"$tab")
			nids=$(sed -E 's/^.*\.([0-9a-f]+)\.[0-9a-f]+$/\1/' <<<"$tab" | sort -u | grep -c .)
			echo "rados_suite: chaos $w $u with osd.1 killed and restarted:"
			grep -E 'transactions:|kills:|anomalies:|recovery:' "$log" | sed 's/^/  /'
			echo "  tablets: $ntab tablet objects for $nids tables ($((ntab - nids)) made by splits)"
			if [ "$ntab" -le "$nids" ]; then
				echo "rados_suite: chaos $w: no tablet split during the run"; rc=1
			fi
		fi
	done
fi
# A second cluster behind the delay line (rados-cluster.sh --rtt-ms=20: its
# own network namespace, every round trip from here 20 ms longer): mrtx
# bench's commit latencies come back in round trips, none shorter than the
# line's delay (a lower bound, whatever the machine's speed), and the stop
# removes the namespace.  Skipped, saying why, without root or /dev/net/tun.
if [ "$rc" = 0 ] && [ -x "$MRTX" ] && [ "${RADOS_SUITE_NETDELAY:-1}" = 1 ]; then
	nd=$DIR/rtt
	ns=mrtx-net-$((MON_PORT + 1))
	probe=mrtx-probe-$$
	if [ "$(id -u)" != 0 ] || [ ! -w /dev/net/tun ] || ! command -v ip >/dev/null ||
	   ! { ip netns add "$probe" 2>/dev/null && ip netns del "$probe"; }; then
		echo "rados_suite: the cluster behind a delay line skipped: needs root, ip(8)," \
		     "/dev/net/tun and the right to make a network namespace"
	elif [ "$SECONDS" -ge 2700 ]; then
		echo "rados_suite: the cluster behind a delay line skipped: ${SECONDS}s used of the" \
		     "3600 s the suite has"
	elif ! MON_PORT=$((MON_PORT + 1)) NETDELAY=$BUILD/mrtx-netdelay \
	     bash "$CLUSTER" start "$nd" --rtt-ms=20; then
		echo "rados_suite: cluster start with --rtt-ms=20 FAILED"; rc=1
	else
		out=$nd/latency.json
		if ! timeout 300 "$MRTX" bench "rados://mrtx/rtt-$$?conf=$nd/ceph.conf" --only latency \
		     --quick --json >"$out" 2>"$nd/bench.err"; then
			echo "rados_suite: mrtx bench --only latency behind the delay line FAILED:"
			cat "$nd/bench.err"; rc=1
		elif ! python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["latency_by_rows"]
assert [r["rows"] for r in rows] == [1, 2, 4, 8, 16, 32, 64], rows
short = [r for r in rows if r["baseline_median_ms"] < 20 or r["mrtx_median_ms"] < 20]
assert not short, "latencies under the line's 20 ms: %s" % short
print("rados_suite: behind a 20 ms round trip, commit latency in round trips of a raw write:")
for r in rows:
    print("  %2d rows: mrtx %6.1f ms %5.2f rt, raw %6.1f ms" % (r["rows"], r["mrtx_median_ms"],
          r["mrtx_round_trips"], r["baseline_median_ms"]))
PY
		then
			echo "rados_suite: mrtx bench behind the delay line:"; cat "$out"; rc=1
		fi
		MON_PORT=$((MON_PORT + 1)) bash "$CLUSTER" stop "$nd" || rc=1
		if ip netns list | grep -qw "$ns"; then
			echo "rados_suite: network namespace $ns outlived the cluster's stop"; rc=1
		fi
	fi
fi
bash "$CLUSTER" status "$DIR" || true
[ "$rc" = 0 ] && ok=1
exit "$rc"
