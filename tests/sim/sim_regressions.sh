#!/usr/bin/env bash
# sim_regressions.sh - every seed on which the simulator once found a
# defect, with the options it was found with; each must now pass.  A new
# defect found by `mrtx sim` gets its fix and a line here.
set -uo pipefail
SIM=${1:?usage: sim_regressions.sh PATH/TO/mrtx-sim}
fail=0
while read -r why opts; do
	[ -z "$why" ] && continue
	# shellcheck disable=SC2086 # the options are words
	if out=$("$SIM" $opts --quiet 2>&1); then
		echo "ok: $why ($opts)"
	else
		echo "FAIL: $why: mrtx-sim $opts"; echo "$out" | tail -n 3; fail=1
	fi
done <<'SEEDS'
read-past-stale-secondary --workload append --seed 1634
read-past-stale-secondary --workload append --accounts 4 --seed 113
one-phase-read-half --seed 6
read-only-stale-beside-current --workload index --seed 93
delete-without-its-index-entry --workload index --seed 428
two-orphans-under-each-other --workload ddl --seed 736
create-dropped-before-it-returned --workload ddl --seed 1062
gc-meets-dropped-table --workload reindex --seed 12
gc-meets-truncated-table --workload reindex --seed 20
table-list-meets-drop --workload reindex --seed 45
declaration-on-frozen-index-table --workload reindex --seed 22
declaration-on-closed-index-table --workload reindex --seed 54
declaration-beside-its-table-drop --workload reindex --seed 99
index-gen-read-failed-as-no-table --workload reindex --seed 381
split-of-a-dropped-table --workload reindex --seed 507
declaration-repeated-after-failed-spread --workload reindex --seed 934
two-declarations-over-a-leftover-table --workload reindex --seed 535
primary-behind-a-closed-table --threads --workload reindex --seed 47
backfill-snapshot-overtaken --threads --workload reindex --seed 225
spread-meets-a-dropped-table --threads --workload reindex --seed 387
SEEDS
exit "$fail"
