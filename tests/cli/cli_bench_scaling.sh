#!/usr/bin/env bash
# cli_bench_scaling.sh - `mrtx bench --only scaling` runs both sweeps on
# every side, the RocksDB ones included when the tool was built with them,
# and reports every side and point in --json.  Two points of each sweep
# and short rounds only (--quick --points 2): the bench checks every
# side's store itself (balances' sum after every round, every row's last
# write at the end of a point) and exits non-zero when one is wrong; what
# it measures is not checked here.
#
# usage: cli_bench_scaling.sh PATH-TO-mrtx   (run by ctest with
#                                           MRTX_TEST_ROCKSDB=1 when the
#                                           tool has the RocksDB baseline)
set -u
NAME=bench-scaling
. "$(dirname "$0")/../support/clilib.sh"
ROCKS=${MRTX_TEST_ROCKSDB:-0}

"$MRTX" bench "$TMP/s1" --only scaling --quick --points 2 --json >"$TMP/j1" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "bench --only scaling: exit $rc: $(cat "$TMP/err")"
pyjson "scaling: sync, threads 1 and 2, rows 1 and 2" "
	[(p['durability'], p['threads']) for p in d['scaling']['threads']] ==
		[('sync', 1), ('sync', 2)] and
	[(p['durability'], p['threads'], p['rows']) for p in d['scaling']['rows']] ==
		[('sync', 1, 1), ('sync', 1, 2)]" <"$TMP/j1"
pyjson "scaling: rocksdb_baseline says $ROCKS" \
	"d['scaling']['rocksdb_baseline'] == bool($ROCKS)" <"$TMP/j1"
sides="['mrtx', 'lmdb']"
absent="['rocksdb_pessimistic', 'rocksdb_optimistic']"
if [ "$ROCKS" = 1 ]; then
	sides="['mrtx', 'lmdb', 'rocksdb_pessimistic', 'rocksdb_optimistic']"
	absent="[]"
fi
pyjson "scaling: every side's rate at every point" "all(
	p[s + '_txn_per_s'] > 0 for k in ('threads', 'rows') for p in d['scaling'][k]
	for s in $sides)" <"$TMP/j1"
pyjson "scaling: rows/s is txn/s times the rows" "all(
	abs(p[s + '_rows_per_s'] - p[s + '_txn_per_s'] * p['rows']) <=
		0.01 * p[s + '_rows_per_s'] + 0.1
	for p in d['scaling']['rows'] for s in $sides)" <"$TMP/j1"
pyjson "scaling: absent sides are null" "all(
	p[s + '_txn_per_s'] is None and p[s + '_retries_per_txn'] is None
	for k in ('threads', 'rows') for p in d['scaling'][k] for s in $absent)" <"$TMP/j1"
if [ "$ROCKS" = 1 ]; then
	pyjson "scaling: RocksDB retries counted" "all(
		p[s + '_retries_per_txn'] >= 0 for k in ('threads', 'rows')
		for p in d['scaling'][k] for s in ('rocksdb_pessimistic', 'rocksdb_optimistic'))" \
		<"$TMP/j1"
fi

# the text report: one point of each sweep, nosync, both checks named
"$MRTX" bench "$TMP/s2" --only scaling --quick --points 1 --durability nosync \
	>"$TMP/t2" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "bench --only scaling --durability nosync: exit $rc: $(cat "$TMP/err")"
grep -q '^scaling nosync, threads:' "$TMP/t2" && grep -q '^scaling nosync, rows:' "$TMP/t2" &&
	ok || bad "text report lacks a sweep: $(cat "$TMP/t2")"
[ "$(grep -c '^checked: ' "$TMP/t2")" = 2 ] && ok || bad "text report lacks its checks"
if [ "$ROCKS" = 1 ]; then
	grep -q '^rocksdb: baseline absent' "$TMP/t2" && bad "RocksDB said absent" || ok
else
	grep -q '^rocksdb: baseline absent' "$TMP/t2" && ok || bad "RocksDB not said absent"
fi

# scaling's options belong to it; a durability it does not know is a usage error
expect_err 2 'options of --only scaling' "--points without scaling" "$MRTX" bench "$TMP/s3" --points 2
expect_err 2 'not sync, nosync or both' "--durability bad" \
	"$MRTX" bench "$TMP/s3" --only scaling --durability fast
expect_err 2 "--points '0': expected a number of points, 1 or more" "--points 0" \
	"$MRTX" bench "$TMP/s3" --only scaling --points 0

finish
