#!/usr/bin/env bash
# cli_chaos.sh - `mrtx chaos` runs of both workloads, batched and unbatched,
# each until a fixed number of processes has been killed (`--kills`: each
# kill follows 1 to 8 of its victim's transactions, so a slow machine runs
# longer instead of testing less; about 25 s in all here): each must exit
# 0, report "ok": true (which a run without a commit is not) and have
# killed that many processes.
# Usage: bash tests/cli/cli_chaos.sh path/to/mrtx [kills-per-run]
# Checks I11, I18 (DESIGN §10).
set -u
MRTX=${1:?usage: cli_chaos.sh path/to/mrtx [kills-per-run]}
KILLS=${2:-150}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-cli-chaos-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0

run() {
	local name=$1; shift
	local out="$TMP/$name.json" rc k c
	"$MRTX" chaos "$TMP/$name" --kills "$KILLS" --json "$@" >"$out" 2>"$TMP/$name.err"
	rc=$?
	k=$(sed -n 's/.*"kills_total": \([0-9]*\).*/\1/p' "$out")
	c=$(sed -n 's/.*"committed": \([0-9]*\).*/\1/p' "$out")
	if [ "$rc" -eq 0 ] && grep -q '"ok": true' "$out" && [ "${k:-0}" -ge "$KILLS" ] &&
		[ "${c:-0}" -gt 0 ]; then
		pass=$((pass + 1))
		echo "ok   - chaos $name ($* ): $k kills, $c committed"
	else
		fail=$((fail + 1))
		echo "FAIL - chaos $name ($* ): exit $rc, ${k:-?} kills (want $KILLS)," \
			"${c:-?} committed (want some)"
		cat "$out" "$TMP/$name.err"
	fi
}

# batched: one-phase commits (DESIGN §5.3); --two-phase: the protocol of
# §5.2 on the same store; --unbatched: every row its own write (two-phase)
run bank --workload bank
run bank-two-phase --workload bank --two-phase
run bank-unbatched --workload bank --unbatched
run append --workload append
run append-two-phase --workload append --two-phase
run append-unbatched --workload append --unbatched

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
