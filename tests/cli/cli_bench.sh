#!/usr/bin/env bash
# cli_bench.sh - `mrtx bench --quick` runs its verifiable workloads
# (interactive, multi_row) on every side, the RocksDB baseline included
# when the tool was built with it, and reports each side in --json.  The
# bench checks every side's store itself (balances' sum, whole 4-row
# groups) and exits non-zero when one is wrong; what it measures is not
# checked here: timing belongs to the benchmark.
#
# usage: cli_bench.sh PATH-TO-mrtx    (run by ctest with MRTX_TEST_ROCKSDB=1
#                                     when the tool has the RocksDB baseline)
set -u
NAME=bench
. "$(dirname "$0")/../support/clilib.sh"
ROCKS=${MRTX_TEST_ROCKSDB:-0}

# the JSON's RocksDB keys, for workloads that must have them (ROCKS=1) or
# must not (ROCKS=0)
rocks_keys() { # DESC VERIFIED FILE
	pyjson "$1: rocksdb_baseline says $ROCKS" "d['rocksdb_baseline'] == bool($ROCKS)" <"$3"
	if [ "$ROCKS" = 1 ]; then
		pyjson "$1: both RocksDB sides ran and were checked" "all(
			w['verified'] == '$2' and w['rocksdb_threads'] == 8 and
			w['rocksdb_pessimistic_ops_per_s'] > 0 and w['rocksdb_optimistic_ops_per_s'] > 0 and
			w['rocksdb_pessimistic_retries_per_txn'] >= 0 and
			w['rocksdb_optimistic_retries_per_txn'] >= 0 and
			w['rocksdb_ops_per_s'] == max(w['rocksdb_pessimistic_ops_per_s'],
			                              w['rocksdb_optimistic_ops_per_s']) and
			w['rocksdb_variant'] == ('pessimistic' if w['rocksdb_pessimistic_ops_per_s'] >=
			                         w['rocksdb_optimistic_ops_per_s'] else 'optimistic') and
			abs(w['rocksdb_ratio'] - w['mrtx_ops_per_s'] / w['rocksdb_ops_per_s']) <=
				0.002 * max(1, w['rocksdb_ratio'])
			for w in d['workloads'])" <"$3"
	else
		pyjson "$1: no RocksDB side" "all(w['rocksdb_ratio'] is None and
			'rocksdb_ops_per_s' not in w for w in d['workloads'])" <"$3"
	fi
}

# interactive: transfers on every side, nosync then sync, balances checked
# after every phase
"$MRTX" bench "$TMP/b1" --quick --only interactive --json >"$TMP/j1" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "bench --only interactive: exit $rc: $(cat "$TMP/err")"
pyjson "interactive: nosync and sync" \
	"[(w['name'], w['durability']) for w in d['workloads']] ==
	 [('interactive', 'nosync'), ('interactive', 'sync')]" <"$TMP/j1"
rocks_keys interactive balance_sum "$TMP/j1"

# multi_row: 4-row groups on every side, checked whole at the end
"$MRTX" bench "$TMP/b2" --quick --only multi_row --json >"$TMP/j2" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "bench --only multi_row: exit $rc: $(cat "$TMP/err")"
rocks_keys multi_row row_groups "$TMP/j2"

# transfers, audit, scan: threads of one process on every side, every
# phase's balances checked and every audit's sum; each row names its
# RocksDB target (null: reported only)
"$MRTX" bench "$TMP/b3" --quick --only transfers --json >"$TMP/j3" 2>"$TMP/err" &&
"$MRTX" bench "$TMP/b3" --quick --only audit --json >"$TMP/j4" 2>>"$TMP/err" &&
"$MRTX" bench "$TMP/b3" --quick --only scan --json >"$TMP/j5" 2>>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "bench --only transfers/audit/scan: exit $rc: $(cat "$TMP/err")"
"$PY" -c '
import json, sys
rows = [w for f in sys.argv[1:] for w in json.load(open(f))["workloads"]]
print(json.dumps({"workloads": rows}))' "$TMP/j3" "$TMP/j4" "$TMP/j5" >"$TMP/j6"
pyjson "transfers, audit, scan: their rows" \
	"[(w['name'], w['durability'], w['threads']) for w in d['workloads']] ==
	 [('transfers', 'nosync', 8), ('transfers', 'sync', 8), ('transfers', 'nometasync', 8),
	  ('audit_writes', 'nosync', 7), ('audit_scans', 'nosync', 1),
	  ('audit_writes', 'sync', 7), ('audit_scans', 'sync', 1),
	  ('scan', 'nosync', 1), ('scan_writing', 'nosync', 1)] and
	 all(w['verified'] == 'balance_sum' and w['mrtx_ops_per_s'] > 0 for w in d['workloads'])" \
	<"$TMP/j6"
if [ "$ROCKS" = 1 ]; then
	pyjson "transfers, audit, scan: RocksDB sides and targets" "all(
		w['rocksdb_pessimistic_ops_per_s'] > 0 and w['rocksdb_optimistic_ops_per_s'] > 0 and
		w['rocksdb_threads'] == {'transfers': 8, 'audit_writes': 8, 'audit_scans': 8,
		                         'scan': 1, 'scan_writing': 2}[w['name']] and
		(w['rocksdb_target'], w['durability']) in
			[(None, 'nosync'), (None, 'sync'), (None, 'nometasync'), (1.2, 'sync'),
			 (1.0, 'sync'), (1.5, 'sync'),
			 (1.0, 'nosync')] and
		(w['rocksdb_met'] is None) == (w['rocksdb_target'] is None) and
		(w['rocksdb_met'] is None or w['rocksdb_met'] ==
			(w['mrtx_ops_per_s'] / w['rocksdb_ops_per_s'] >= w['rocksdb_target']))
		for w in d['workloads'])" <"$TMP/j6"
else
	pyjson "transfers, audit, scan: no RocksDB side" "all(w['rocksdb_ratio'] is None
		for w in d['workloads'])" <"$TMP/j6"
fi

# the text report names the RocksDB sides, or says the baseline is absent;
# a RocksDB store of an earlier run in the same DIR is replaced, not reused
"$MRTX" bench "$TMP/b2" --quick --only multi_row >"$TMP/t2" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "bench --only multi_row again in its DIR: exit $rc: $(cat "$TMP/err")"
if [ "$ROCKS" = 1 ]; then
	re='^multi_row sync rocksdb \(8 threads in one process\): pessimistic TransactionDB'
	re+=' [0-9]+ txn/s.*OptimisticTransactionDB [0-9]+ txn/s'
	grep -qE "$re" "$TMP/t2" && ok || bad "text report lacks the RocksDB line: $(cat "$TMP/t2")"
else
	grep -q '^rocksdb: baseline absent' "$TMP/t2" && ok ||
		bad "text report does not say RocksDB is absent: $(cat "$TMP/t2")"
fi
head -1 "$TMP/t2" | grep -q 'rocksdb ops/s' && ok || bad "text header lacks rocksdb ops/s"

finish
