#!/usr/bin/env bash
# cli_timerange.sh - scan --time-range (HBase's TIMERANGE) and --versions,
# one-shot and in txn scripts and the shell, and the one-shot form of a
# script's check (mrtx check STORE TABLE ROW F:Q OP N), through the real
# `mrtx` binary.  Timestamps are read back from scan --versions, never
# guessed from the clock.
#
# usage: cli_timerange.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=timerange
. "$(dirname "$0")/../support/clilib.sh"
unset MRTX_FAILPOINTS MRTX_HISTORY
export HOME=$TMP

S=$(store s)
expect_rc 0 "create-table t (5 versions)" "$MRTX" create-table "$S" t f:5 g
for v in 1 2 3 4; do expect_rc 0 "put v$v" "$MRTX" put "$S" t r f:a "v$v"; done
expect_rc 0 "put r2" "$MRTX" put "$S" t r2 f:b x
expect_rc 0 "put r3" "$MRTX" put "$S" t r3 g:c y
"$MRTX" scan "$S" t --versions 10 >"$TMP/all" || bad "scan --versions 10"
mapfile -t T < <(awk '{print $3}' "$TMP/all" | sort -n) # the six commit timestamps
[ "${#T[@]}" -eq 6 ] && ok || bad "six versions: $(cat "$TMP/all")"
end=$((T[5] + 1))

# ---------------------------------------------------------------- one-shot
expect_out "r f:a ${T[2]} v3" "time-range: the newest version in range" \
	"$MRTX" scan "$S" t --time-range "${T[1]}" "${T[3]}"
expect_out "$(printf 'r f:a %s v3\nr f:a %s v2' "${T[2]}" "${T[1]}")" \
	"time-range with --versions: every version in range" \
	"$MRTX" scan "$S" t --time-range "${T[1]}" "${T[3]}" --versions 5
expect_out "$(printf 'r f:a %s v4\nr2 f:b %s x\nr3 g:c %s y' "${T[3]}" "${T[4]}" "${T[5]}")" \
	"time-range over everything: the newest of each cell" \
	"$MRTX" scan "$S" t --time-range 0 "$end"
expect_out "r f:a ${T[0]} v1" "time-range: END excluded" \
	"$MRTX" scan "$S" t --time-range 0 "${T[1]}"
expect_out "" "time-range before every write" "$MRTX" scan "$S" t --time-range 0 "${T[0]}"
expect_out "r2 f:b ${T[4]} x" "time-range: a row limit counts rows with a version in range" \
	"$MRTX" scan "$S" t --time-range "${T[4]}" "$end" --limit 1
expect_out "2" "time-range --count" "$MRTX" scan "$S" t --time-range "${T[1]}" "${T[3]}" \
	--versions 3 --count
"$MRTX" scan "$S" t --time-range "${T[5]}" "$end" --json | pyjson "time-range --json has ts" \
	"d['row'] == 'r3' and d['ts'] == ${T[5]} and d['value'] == 'y'"
expect_out "r f:a ${T[1]} v2" "time-range with --at" \
	"$MRTX" scan "$S" t --at "${T[1]}" --time-range 0 "$end"
expect_out "r3 g:c ${T[5]} y" "time-range with --family" \
	"$MRTX" scan "$S" t --family g --time-range 0 "$end"
expect_out "$(printf 'r f:a %s v4\nr f:a %s v3' "${T[3]}" "${T[2]}")" "--versions 2" \
	"$MRTX" scan "$S" t --versions 2 --prefix r --limit 1
expect_err 2 "END \\(5\\) must be above START \\(9\\)" "time-range END below START" \
	"$MRTX" scan "$S" t --time-range 9 5
expect_err 2 "needs START and END" "time-range without END" "$MRTX" scan "$S" t --time-range 9
expect_err 2 "expected a commit timestamp" "time-range with a word" \
	"$MRTX" scan "$S" t --time-range 0 later

# ---------------------------------------------------------- scripts, shell
printf 'scan t --time-range %s %s --versions 5\nscan t r2 --versions 2\n' "${T[1]}" "${T[3]}" \
	>"$TMP/script"
expect_out "$(printf 'r f:a %s v3\nr f:a %s v2\nr2 f:b %s x\nr3 g:c %s y' "${T[2]}" "${T[1]}" \
	"${T[4]}" "${T[5]}")" "txn: scan --time-range and --versions" "$MRTX" txn "$S" "$TMP/script"
printf 'put t r f:a mine\nscan t r r2 --time-range 0 %s\n' "$end" >"$TMP/script"
expect_out "r f:a ${T[3]} v4" "txn: the script's own write has no timestamp yet" \
	"$MRTX" txn "$S" "$TMP/script"
printf 'scan t --time-range 5\n' >"$TMP/script"
expect_err 2 "line 1: scan: --time-range needs START and END" "txn: a bad time range" \
	"$MRTX" txn "$S" "$TMP/script"
printf 'scan t --versions 0\n' >"$TMP/script"
expect_err 2 "scan --versions: 1 to 4294967295" "txn: --versions 0" \
	"$MRTX" txn "$S" "$TMP/script"
printf 'scan t r3 --time-range %s %s\n' "${T[5]}" "$end" | "$MRTX" shell "$S" >"$TMP/sh" 2>&1
grep -q "^r3 g:c ${T[5]} y" "$TMP/sh" && ok || bad "shell: scan --time-range: $(cat "$TMP/sh")"

# ---------------------------------------------------------- one-shot check
expect_rc 0 "put a counter" "$MRTX" put "$S" t alice g:bal 15
expect_rc 0 "check >= holds: exit 0" "$MRTX" check "$S" t alice g:bal '>=' 10
expect_err 3 "t/alice g:bal is 15, not >= 20" "check >= fails: exit 3" \
	"$MRTX" check "$S" t alice g:bal '>=' 20
for t in '== 15' '!= 3' '< 16' '<= 15' '> -1'; do
	# shellcheck disable=SC2086
	expect_rc 0 "check $t" "$MRTX" check "$S" t alice g:bal $t
done
expect_rc 0 "check a missing cell counts as 0" "$MRTX" check "$S" t bob g:bal '==' 0
expect_rc 0 "check absent" "$MRTX" check "$S" t bob g:bal absent
expect_rc 0 "check present" "$MRTX" check "$S" t alice g:bal present
expect_err 3 "holds '15', not absent" "check absent fails" "$MRTX" check "$S" t alice g:bal absent
expect_err 3 "is missing, not present" "check present fails" \
	"$MRTX" check "$S" t bob g:bal present
expect_rc 0 "put --key" "$MRTX" put "$S" t 'carol,7' g:bal 9 --key str,u32
expect_rc 0 "check --key" "$MRTX" check "$S" t 'carol,7' g:bal '==' 9 --key str,u32
expect_err 1 "not a decimal integer" "check of a cell that is no counter" \
	"$MRTX" check "$S" t r f:a '>' 1
expect_err 2 "unknown test '=~'" "check with an unknown test" \
	"$MRTX" check "$S" t alice g:bal '=~' 1
expect_err 2 ">= needs a number" "check without its number" "$MRTX" check "$S" t alice g:bal '>='
expect_err 2 "or STORE TABLE ROW FAMILY:QUALIFIER OP NUMBER" "check with half a cell" \
	"$MRTX" check "$S" t alice
expect_rc 0 "check STORE alone still verifies the locks" "$MRTX" check "$S"
grep -q "corrupt" "$TMP/out" && ok || bad "check STORE: $(cat "$TMP/out")"
finish
