#!/usr/bin/env bash
# sim_breaks.sh - the simulator can fail: with each protocol safeguard
# switched off (mrtx-sim --break NAME, storage/breaks.h) a short range of
# seeds of the workload that meets it most must report an anomaly (exit
# 1), and with none switched off the same range must not.
set -uo pipefail
SIM=${1:?usage: sim_breaks.sh PATH/TO/mrtx-sim}
SEEDS=${SIM_BREAK_SEEDS:-1-60}
fail=0
out=$("$SIM" --seeds "$SEEDS" --quiet 2>&1)
rc=$?
if [ "$rc" != 0 ]; then
	echo "FAIL: seeds $SEEDS with every safeguard: exit $rc"; echo "$out"; fail=1
fi
# (reads: the write skews and G2 cycles of list-append; point: the index
# workload's index entries; the rest: the bank)
for spec in reads:append ranges:bank primary:bank point:index snapshot:bank; do
	b=${spec%%:*} w=${spec#*:}
	# the commit point is the two-phase protocol's: commits whose rows
	# share a tablet would take one phase and never reach it
	tp=0
	[ "$b" = point ] && tp=1
	out=$(MRTX_TWO_PHASE=$tp "$SIM" --workload "$w" --seeds "$SEEDS" --quiet --break "$b" 2>&1)
	rc=$?
	line=$(grep '^anomalies:' <<<"$out")
	if [ "$rc" = 1 ] && grep -qE '^anomalies: [1-9]' <<<"$line"; then
		echo "ok: --break $b ($w): $line"
	else
		echo "FAIL: --break $b ($w) over seeds $SEEDS: exit $rc, ${line:-no summary}"; fail=1
	fi
done
exit "$fail"
