#!/usr/bin/env bash
# cli_crashsim.sh - short `mrtx crashsim` sweeps (about a minute):
#   - sync and nometasync: every crash state of a small recorded workload
#     (2 writers x 9 transactions) explored, 0 violations, exit 0;
#   - the checks can fail: on the sync trace, the broken variants (commit
#     point's meta page without its sync; data syncs skipped) must report
#     violations and exit 1, and a nosync store must show the damage LMDB
#     documents for MDB_NOSYNC (not only lost commits);
#   - the printed reproduction command reproduces the first violation;
#   - usage errors exit 2, a file that is not a trace exits 1.
# Usage: bash tests/cli/cli_crashsim.sh path/to/mrtx
set -u
MRTX=${1:?usage: cli_crashsim.sh path/to/mrtx}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-cli-crashsim-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
SMALL="--writers 2 --txns 9"

ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }

# field FILE EXPR: evaluate a Python expression on the JSON object j
field() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" \
		2>/dev/null
}

# expect NAME WANT_RC CONDITION ARGS...: run crashsim --json, check exit
# status and a Python condition on the JSON object j
expect() {
	local name=$1 want=$2 cond=$3 rc
	shift 3
	"$MRTX" crashsim "$@" --json >"$TMP/$name.json" 2>"$TMP/$name.err"
	rc=$?
	if [ "$rc" -eq "$want" ] && [ "$(field "$TMP/$name.json" "$cond")" = True ]; then
		ok "crashsim $name: exit $rc, $(field "$TMP/$name.json" 'j["states"]') states, violations $(field "$TMP/$name.json" 'j["violations"]')"
	else
		bad "crashsim $name ($*): exit $rc (want $want), condition $cond"
		cat "$TMP/$name.json" "$TMP/$name.err"
	fi
}

CORRUPT='sum(j["violations"].get(k, 0) for k in ("open", "open_modified", "crash", "hang", "recover", "check", "read", "total", "partial"))'

# 2 writers x 9 transactions; writer 0 is SIGKILLed after the commit point of
# its 5th (the first transfer past the middle): 4 + 9 acknowledged
# (LMDB commits each transaction in one write: a smaller trace than the
# two-phase protocol's, which the --unbatched run records)
expect sync 0 'j["exhaustive"] and j["states"] >= 100 and j["violations"] == {} and j["commits_acknowledged"] == 13' \
	"$TMP/sync" --durability sync $SMALL --states 4000
expect nometasync 0 'j["exhaustive"] and j["states"] >= 100 and j["violations"] == {}' \
	"$TMP/nometasync" --durability nometasync $SMALL --states 4000
expect unbatched 0 'j["states"] >= 200 and j["violations"] == {} and j["commits_acknowledged"] == 13' \
	"$TMP/unbatched" --durability sync --unbatched $SMALL --states 400 --seed 2
# the same sync trace, as a library that skipped a sync would have left it
expect broken-data 1 "$CORRUPT >= 1" \
	"$TMP/sync" --trace "$TMP/sync/trace" --durability sync --broken data --states 400 --seed 3
# LMDB: "MDB_NOSYNC ... can corrupt the database on an OS crash": reported, exit 0
expect nosync 0 "$CORRUPT >= 1 and j[\"violations\"].get(\"lost_commit\", 0) >= 1" \
	"$TMP/nosync" --durability nosync $SMALL --states 400 --seed 3

# broken meta, in text: exit 1 with lost commits (every state explored), and
# the report's reproduction command finds the same violation again
"$MRTX" crashsim "$TMP/sync" --trace "$TMP/sync/trace" --broken meta --states 4000 \
	>"$TMP/text.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "(every state;" "$TMP/text.out" &&
   grep -q "^  lost_commit " "$TMP/text.out"; then
	ok "crashsim broken-meta: exit 1, $(grep '^  lost_commit' "$TMP/text.out" | tr -s ' ')"
else
	bad "crashsim broken-meta: exit $rc"
	cat "$TMP/text.out"
fi
repro=$(sed -n 's/^reproduce: mrtx //p' "$TMP/text.out")
kind=$(sed -n 's/^first violation: .* torn): \([a-z_]*\):.*/\1/p' "$TMP/text.out")
if [ -n "$repro" ] && [ -n "$kind" ]; then
	# shellcheck disable=SC2086
	"$MRTX" $repro >"$TMP/repro.out" 2>&1
	rc=$?
	state=$(echo "$repro" | sed -n 's/.*--only \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 1 ] && grep -q "^  $kind " "$TMP/repro.out" &&
	   grep -q "^states explored: 1 " "$TMP/repro.out" && [ -f "$TMP/sync/state-$state/data.mdb" ]; then
		ok "reproduce: state $state alone gives $kind again, image kept"
	else
		bad "reproduce: '$repro' exit $rc"
		cat "$TMP/text.out" "$TMP/repro.out"
	fi
else
	bad "no reproduction line in the text report"
	cat "$TMP/text.out"
fi

# usage errors
for args in "" "$TMP/u --durability fast" "$TMP/u --broken sometimes" "$TMP/u --states 0" \
	"$TMP/u --writers 65"; do
	# shellcheck disable=SC2086
	"$MRTX" crashsim $args >/dev/null 2>"$TMP/usage.err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q "^mrtx: crashsim: " "$TMP/usage.err"; then
		ok "usage error exits 2: crashsim $args"
	else
		bad "crashsim $args: exit $rc, want 2"
		cat "$TMP/usage.err"
	fi
done
echo "not a trace" >"$TMP/junk"
"$MRTX" crashsim "$TMP/j" --trace "$TMP/junk" >/dev/null 2>"$TMP/junk.err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "malformed trace" "$TMP/junk.err"; then
	ok "a file that is not a trace: exit 1, $(cat "$TMP/junk.err")"
else
	bad "junk trace: exit $rc"
	cat "$TMP/junk.err"
fi
"$MRTX" crashsim --help | grep -q "^usage: mrtx crashsim DIR" && ok "--help" || bad "--help"

echo "crashsim: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
