#!/usr/bin/env bash
# cli_chaos.sh - short `mrtx chaos` runs of both workloads, batched and
# unbatched (about 60 s in all, several hundred kills): each must exit 0 and
# report "ok": true, and together they must kill at least 300 processes.
# Usage: bash tests/cli/cli_chaos.sh path/to/mrtx [seconds-per-run]
set -u
MRTX=${1:?usage: cli_chaos.sh path/to/mrtx [seconds-per-run]}
SECS=${2:-15}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-cli-chaos-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0 kills=0

run() {
	local name=$1; shift
	local out="$TMP/$name.json" rc k
	"$MRTX" chaos "$TMP/$name" --seconds "$SECS" --json "$@" >"$out" 2>"$TMP/$name.err"
	rc=$?
	k=$(sed -n 's/.*"kills_total": \([0-9]*\).*/\1/p' "$out")
	kills=$((kills + ${k:-0}))
	if [ "$rc" -eq 0 ] && grep -q '"ok": true' "$out"; then
		pass=$((pass + 1))
		echo "ok   - chaos $name ($* ): ${k:-?} kills"
	else
		fail=$((fail + 1))
		echo "FAIL - chaos $name ($* ): exit $rc"
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

if [ "$kills" -ge 300 ]; then
	pass=$((pass + 1))
	echo "ok   - $kills kills in total (at least 300)"
else
	fail=$((fail + 1))
	echo "FAIL - only $kills kills in total (want at least 300)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
