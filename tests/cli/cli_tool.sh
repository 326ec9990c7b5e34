#!/usr/bin/env bash
# cli_tool.sh - drive the real `mrtx` binary: data commands, escapes, usage
# errors, and a scripted crash at each commit failpoint followed by
# inspection (locks, lock, check), a dry-run recovery that must change
# nothing, and a real recovery whose outcome must match the failpoint.
#
# usage: cli_tool.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
#
# With MRTX_TEST_STORE=rados and MRTX_TEST_RADOS_CONF (tests/rados/rados_suite.sh
# sets both) every store is a RADOS store rados://mrtx/cli<pid>-<name>, and
# the checks about LMDB files and directories are skipped.
set -u
NAME=cli
. "$(dirname "$0")/../support/clilib.sh"
# Writers are stopped between the steps of the two-phase protocol and their
# locks inspected: every mrtx here commits with it (DESIGN §5.2; LMDB's
# one-phase commits, §5.3, are tested in test_txn and cli_chaos).
export MRTX_TWO_PHASE=1


# wait_locks STORE PID: until STORE shows a lock (PID, the writer, must not
# have ended first: then its failpoint never held it)
wait_locks() {
	while [ "$("$MRTX" locks "$1" --json 2>/dev/null)" == "[]" ]; do
		kill -0 "$2" 2>/dev/null || { bad "writer $2 ended before its locks were seen"; return; }
		sleep 0.02
	done
}

# ------------------------------------------------------------ basics
expect_rc 0 "--version" "$MRTX" --version
expect_rc 0 "--help" "$MRTX" --help
for c in create-table put get del scan txn locks lock recover check stats; do
	expect_rc 0 "$c --help" "$MRTX" "$c" --help
done

S=$(store basic)
expect_rc 0 "create-table" "$MRTX" create-table "$S" acct bal meta
expect_rc 0 "create-table idempotent" "$MRTX" create-table "$S" acct bal meta
expect_rc 1 "create-table other families" "$MRTX" create-table "$S" acct bal
expect_rc 0 "put" "$MRTX" put "$S" acct alice bal:x 100
expect_out "100" "get" "$MRTX" get "$S" acct alice bal:x
expect_rc 0 "put negative value after --" "$MRTX" put "$S" acct alice bal:y -- -5
expect_out "-5" "get negative" "$MRTX" get "$S" acct alice bal:y
expect_rc 0 "put value starting with -" "$MRTX" put "$S" acct alice bal:z -7
expect_out "-7" "get -7" "$MRTX" get "$S" acct alice bal:z
expect_rc 1 "get missing cell" "$MRTX" get "$S" acct bob bal:x
grep -q '^mrtx: get: ' "$TMP/err" && ok || bad "get missing: message format"
expect_rc 0 "del" "$MRTX" del "$S" acct alice bal:z
expect_rc 1 "get deleted" "$MRTX" get "$S" acct alice bal:z
expect_rc 1 "put no table" "$MRTX" put "$S" nosuch r f:q v
grep -q '^mrtx: put: ' "$TMP/err" && ok || bad "put no table: message format"
expect_rc 1 "put no family" "$MRTX" put "$S" acct r nofam:q v
expect_rc 1 "missing store" "$MRTX" get "$TMP/nostore" acct alice bal:x
[ ! -e "$TMP/nostore" ] && ok || bad "a read must not create a store"
for r in r1 r2 r3 r4; do "$MRTX" put "$S" acct "$r" meta:n "v$r" || bad "put $r"; done
expect_out $'r2 meta:n vr2\nr3 meta:n vr3' "scan range" "$MRTX" scan "$S" acct --start r2 --end r4
expect_out $'r4 meta:n vr4\nr3 meta:n vr3' "scan reverse limit" "$MRTX" scan "$S" acct --reverse --limit 2
expect_out $'r2 meta:n vr2\nr3 meta:n vr3' "scan --limit 0: no limit" "$MRTX" scan "$S" acct --start r2 --end r4 \
	--limit 0
expect_out "" "scan empty range" "$MRTX" scan "$S" acct --start s

# ------------------------------------------------------------ escapes
# a row with NUL, 0xff, a backslash and a space; a qualifier and value with bytes
expect_rc 0 "put escaped" "$MRTX" put "$S" acct 'k\x00\xff\\ z' 'bal:q\x01' 'v\x00\x7f\\'
expect_out 'v\x00\x7f\\' "get escaped" "$MRTX" get "$S" acct 'k\x00\xff\\ z' 'bal:q\x01'
expect_out 'k\x00\xff\\\x20z bal:q\x01 v\x00\x7f\\' "scan escaped" \
	"$MRTX" scan "$S" acct --start 'k' --end 'l'
row=$("$MRTX" scan "$S" acct --start k --end l | cut -d' ' -f1)
expect_out 'v\x00\x7f\\' "row from scan output round-trips" "$MRTX" get "$S" acct "$row" 'bal:q\x01'
expect_out 'v\x00\x7f\\' "uppercase hex escapes" "$MRTX" get "$S" acct 'k\x00\xFF\\\x20z' 'bal:q\x01'
"$MRTX" locks "$S" --json | pyjson "locks --json on a quiet store is []" 'd == []'

# ------------------------------------------------------------ usage errors
expect_rc 2 "no subcommand" "$MRTX"
expect_rc 2 "unknown subcommand" "$MRTX" frobnicate "$S"
expect_rc 2 "put too few" "$MRTX" put "$S" acct
expect_rc 2 "get too many" "$MRTX" get "$S" acct r bal:x extra
expect_rc 2 "bad escape" "$MRTX" get "$S" acct 'a\x4' bal:x
expect_rc 2 "bad escape kind" "$MRTX" get "$S" acct 'a\n' bal:x
expect_rc 2 "column without colon" "$MRTX" get "$S" acct r balx
expect_rc 2 "unknown option" "$MRTX" scan "$S" acct --bogus
expect_rc 2 "bad limit" "$MRTX" scan "$S" acct --limit ten
expect_rc 2 "option missing value" "$MRTX" scan "$S" acct --limit
expect_rc 2 "locks bad state" "$MRTX" locks "$S" --state STABLE
expect_rc 2 "lock missing row" "$MRTX" lock "$S" acct
expect_rc 1 "locks of a missing table" "$MRTX" locks "$S" --table nosuch --json
expect_rc 2 "recover extra arg" "$MRTX" recover "$S" extra
expect_rc 2 "check no store" "$MRTX" check
expect_rc 2 "create-table no family" "$MRTX" create-table "$S" t2
grep -q '^mrtx: create-table: ' "$TMP/err" && ok || bad "usage message format"

# ------------------------------------------------------------ txn scripts
out=$(printf '%s\n' '# a comment' '' 'put acct t1 bal:x "two words"' 'get acct t1 bal:x' \
	'get acct nope bal:x' 'put acct "t\x202" bal:x "q\x22"' 'scan acct t u' | "$MRTX" txn "$S")
rc=$?
want=$'two words\n(not found)\nt\\x202 bal:x q"\nt1 bal:x two words'
[ $rc -eq 0 ] && [ "$out" == "$want" ] && ok || bad "txn script: exit $rc, output '$out'"
expect_out 'q"' "txn committed value" "$MRTX" get "$S" acct 't 2' bal:x
printf 'put acct ab bal:x 1\nabort\nput acct ac bal:x 1\n' >"$TMP/s.txt"
expect_rc 0 "txn abort" "$MRTX" txn "$S" "$TMP/s.txt"
expect_rc 1 "txn abort wrote nothing" "$MRTX" get "$S" acct ab bal:x
expect_rc 1 "txn abort stops reading" "$MRTX" get "$S" acct ac bal:x
printf 'put acct ad bal:x 1\nfrob acct\n' >"$TMP/s.txt"
expect_rc 2 "txn syntax error" "$MRTX" txn "$S" "$TMP/s.txt"
grep -q '^mrtx: txn: line 2: ' "$TMP/err" && ok || bad "txn syntax error names the line"
expect_rc 1 "txn syntax error wrote nothing" "$MRTX" get "$S" acct ad bal:x
printf 'put acct ae bal:x 1\nput nosuch r f:q v\n' >"$TMP/s.txt"
expect_rc 1 "txn failed op" "$MRTX" txn "$S" "$TMP/s.txt"
expect_rc 1 "txn failed op wrote nothing" "$MRTX" get "$S" acct ae bal:x
expect_rc 1 "txn missing file" "$MRTX" txn "$S" "$TMP/none.txt"
expect_rc 2 "txn unterminated quote" "$MRTX" txn "$S" <<<'put acct r bal:x "abc'

# ------------------------------------------------------------ stats, check
if [ "$RADOS" = 1 ]; then
	"$MRTX" stats "$S" --json | pyjson "stats --json" \
		'len(d["tables"]) == 1 and d["tables"][0]["name"] == "acct" and d["cells"] >= 8 and d["locks"]["PREWRITTEN"] == 0 and d["store"] == "rados" and "map_size" not in d'
else
	"$MRTX" stats "$S" --json | pyjson "stats --json" \
		'len(d["tables"]) == 1 and d["tables"][0]["name"] == "acct" and d["cells"] >= 8 and d["locks"]["PREWRITTEN"] == 0 and d["store"] == "lmdb" and d["map_size"] > 0 and d["max_readers"] > 0'
fi
expect_rc 0 "stats text" "$MRTX" stats "$S"
expect_rc 0 "check healthy" "$MRTX" check --strict "$S"
"$MRTX" check "$S" --json | pyjson "check --json ok" 'd["ok"] and d["issues"] == [] and d["corrupt"] == 0'

# ------------------------------------------------------------ crash at each commit step
# A 4-row txn over 2 tables (primary acct/a; secondaries acct/b, acct/c, log/l)
# that also reads acct/r, killed (_exit 99) at each commit failpoint.
txn_script='get acct r bal:x
get acct a bal:x
put acct a bal:x 10
put acct b bal:x 20
put acct c bal:x 30
put log l m:q hello'

# keys of a lock listing that must survive a dry run unchanged
summary='sorted((l["table"], l["row"], l["state"], l["txn"], l["role"]) for l in d)'

for fp in commit.after_prewrite commit.after_validate commit.after_point commit.after_secondaries; do
	S=$(store "$fp")
	"$MRTX" create-table "$S" acct bal >/dev/null && "$MRTX" create-table "$S" log m ||
		bad "$fp: setup"
	printf 'put acct a bal:x 1\nput acct b bal:x 2\nput acct r bal:x 7\n' | "$MRTX" txn "$S" ||
		bad "$fp: setup txn"
	out=$(MRTX_FAILPOINTS="$fp=exit" "$MRTX" txn "$S" <<<"$txn_script" 2>"$TMP/err")
	rc=$?
	[ $rc -eq 99 ] && ok || bad "$fp: txn exit $rc, want 99"
	[ "$out" == $'7\n1' ] && ok || bad "$fp: reads before the crash: '$out'"

	case $fp in
	commit.after_prewrite | commit.after_validate) pstate=PREWRITTEN sstate=PREWRITTEN n=4 fwd=0 ;;
	commit.after_point) pstate=COMMITTED sstate=PREWRITTEN n=4 fwd=1 ;;
	commit.after_secondaries) pstate=COMMITTED sstate=none n=1 fwd=1 ;;
	esac
	"$MRTX" locks "$S" --json >"$TMP/before.json" || bad "$fp: locks --json"
	pyjson "$fp: locks --json states and roles" "
len(d) == $n and len(set(l['txn'] for l in d)) == 1
and all(l['owner_alive'] is False and isinstance(l['owner_pid'], int) for l in d)
and [(l['table'], l['row'], l['state'], l['secondaries']) for l in d if l['role'] == 'primary']
    == [('acct', 'a', '$pstate', 3)]
and all(l['state'] == '$sstate' and l['primary'] == {'table': 'acct', 'row': 'a'}
        for l in d if l['role'] == 'secondary')
and sorted((l['table'], l['row']) for l in d if l['role'] == 'secondary')
    == ([] if $n == 1 else [('acct', 'b'), ('acct', 'c'), ('log', 'l')])" <"$TMP/before.json"
	"$MRTX" locks "$S" --json --state COMMITTED | pyjson "$fp: --state filter" \
		"all(l['state'] == 'COMMITTED' for l in d) and len(d) == (1 if '$pstate' == 'COMMITTED' else 0)"
	"$MRTX" locks "$S" --json --table log | pyjson "$fp: --table filter" \
		"len(d) == ($n > 1) and all(l['table'] == 'log' for l in d)"
	expect_rc 0 "$fp: locks text" "$MRTX" locks "$S"
	"$MRTX" lock "$S" acct a --json | pyjson "$fp: lock of the primary" \
		"d['state'] == '$pstate' and d['role'] == 'primary' and len(d['secondary_rows']) == 3 and d['prev']['unread'] is False"
	if [ "$n" -gt 1 ]; then
		# log/l was written blind: its prewrite did not read the lock it replaced
		"$MRTX" lock "$S" log l --json | pyjson "$fp: lock of a secondary shows its redo" \
			"d['state'] == 'PREWRITTEN' and d['prev']['unread'] is True and d['prev']['txn'] == '0' * 32 and d['redo'] == [{'kind': 'put', 'family': 'm', 'qualifier': 'q', 'value': 'hello'}]"
	fi
	expect_rc 0 "$fp: lock text" "$MRTX" lock "$S" acct a
	expect_rc 1 "$fp: lock of a never-written row" "$MRTX" lock "$S" acct zzz

	# pending recovery is consistent (exit 0) but not tidy (--strict fails)
	expect_rc 0 "$fp: check before recover" "$MRTX" check "$S"
	expect_rc 1 "$fp: check --strict before recover" "$MRTX" check --strict "$S"
	"$MRTX" check "$S" --json | pyjson "$fp: check --json reports the stale txn" \
		"d['ok'] and d['corrupt'] == 0 and d['resolvable'] == 1 and d['issues'][0]['kind'] == 'stale'"

	"$MRTX" recover "$S" --dry-run --json | pyjson "$fp: dry run decisions" \
		"d['dry_run'] and d['rolled_forward'] == $fwd and d['rolled_back'] == 1 - $fwd and d['errors'] == 0"
	"$MRTX" locks "$S" --json | "$PY" -c "import json,sys
d=json.load(sys.stdin); b=json.load(open('$TMP/before.json'))
sys.exit(0 if $summary == (lambda d: $summary)(b) else 1)" && ok || bad "$fp: --dry-run changed locks"

	"$MRTX" recover "$S" --json | pyjson "$fp: recover" \
		"not d['dry_run'] and d['rolled_forward'] == $fwd and d['rolled_back'] == 1 - $fwd and d['skipped_live'] == 0 and d['errors'] == 0"
	"$MRTX" locks "$S" --json | pyjson "$fp: no lock after recover" 'd == []'
	if [ $fwd -eq 1 ]; then
		expect_out $'a bal:x 10\nb bal:x 20\nc bal:x 30\nr bal:x 7' "$fp: rolled forward" "$MRTX" scan "$S" acct
		expect_out "hello" "$fp: rolled forward (log)" "$MRTX" get "$S" log l m:q
	else
		expect_out $'a bal:x 1\nb bal:x 2\nr bal:x 7' "$fp: rolled back" "$MRTX" scan "$S" acct
		expect_out "" "$fp: rolled back (log)" "$MRTX" scan "$S" log
	fi
	expect_rc 0 "$fp: check --strict after recover" "$MRTX" check --strict "$S"
	"$MRTX" recover "$S" --json | pyjson "$fp: second recover is a no-op" \
		"d['rolled_forward'] == 0 and d['rolled_back'] == 0 and d['locks_seen'] == 0"
done

# ------------------------------------------------------------ a live txn is skipped
S=$(store live)
"$MRTX" create-table "$S" acct bal >/dev/null
# hold the txn PREWRITTEN (wait failpoint: alive, heartbeat running, until
# $TMP/go.live exists): a live writer, however slow this machine is
MRTX_FAILPOINTS="commit.after_prewrite=wait:$TMP/go.live" "$MRTX" txn "$S" <<<$'put acct a bal:x 1\nput acct b bal:x 2' &
bg=$!
wait_locks "$S" $bg
"$MRTX" locks "$S" --json | pyjson "live: owner alive" "len(d) == 2 and all(l['owner_alive'] and not l['stale'] for l in d)"
"$MRTX" recover "$S" --json | pyjson "live: recover skips a live txn" \
	"d['skipped_live'] == 1 and d['rolled_forward'] == 0 and d['rolled_back'] == 0"
expect_rc 0 "live: check --strict passes with a txn in flight" "$MRTX" check --strict "$S"
touch "$TMP/go.live"
wait $bg && ok || bad "live: writer failed"
"$MRTX" locks "$S" --json | pyjson "live: writer finished cleanly" 'd == []'
expect_out "2" "live: value" "$MRTX" get "$S" acct b bal:x

# ------------------------------------------------------------ wrong store paths
# (LMDB only: paths that are files, empty or missing directories)
if [ "$RADOS" = 0 ]; then
# a regular file: every subcommand says so (and leaves it alone)
F=$TMP/plainfile
echo data >"$F"
for args in "create-table $F t f" "put $F t r f:q v" "get $F t r f:q" "del $F t r f:q" \
	"scan $F t" "txn $F /dev/null" "locks $F" "lock $F t r" "recover $F" \
	"recover $F --dry-run" "check $F" "stats $F" "chaos $F --seconds 1" \
	"bench $F --quick --only calls"; do
	# shellcheck disable=SC2086
	"$MRTX" $args >/dev/null 2>"$TMP/err"
	rc=$?
	[ $rc -ne 0 ] && grep -q 'is not a directory' "$TMP/err" && ok ||
		bad "regular file: '$args': exit $rc, $(cat "$TMP/err")"
done
[ "$(cat "$F")" == data ] && ok || bad "regular file was modified"
# admin (and data) commands never make a store in an empty or missing directory
mkdir "$TMP/empty"
for c in stats locks check recover "recover --dry-run" "lock @ t r" "get @ t r f:q" \
	"scan @ t" "txn @ /dev/null"; do
	for d in "$TMP/empty" "$TMP/missing"; do
		set -- $c
		if [ "${2:-}" == "@" ]; then args="$1 $d ${*:3}"; else args="$1 $d ${*:2}"; fi
		# shellcheck disable=SC2086
		"$MRTX" $args >/dev/null 2>"$TMP/err"
		rc=$?
		[ $rc -eq 1 ] && grep -qE "^mrtx: $1: .*(not an mrtx store|no such store)" \
			"$TMP/err" && ok || bad "'$args': exit $rc, $(cat "$TMP/err")"
	done
done
[ -z "$(ls -A "$TMP/empty")" ] && ok || bad "an admin command wrote into an empty directory"
[ ! -e "$TMP/missing" ] && ok || bad "an admin command created a missing directory"
fi
# bench --help names --only and every workload
"$MRTX" bench --help >"$TMP/out" 2>&1 || bad "bench --help failed"
for w in -- --only single_row multi_row interactive transfers audit scan get recover calls ts longscan; do
	[ "$w" == -- ] && continue
	grep -q -- "$w" "$TMP/out" && ok || bad "bench --help does not mention $w"
done
expect_rc 2 "bench unknown workload" "$MRTX" bench "$TMP/benchdir" --only nosuch
[ ! -e "$TMP/benchdir" ] && ok || bad "bench with a bad --only created its DIR"
# longscan runs and reports (what it measures is not checked: timing belongs
# to the benchmark)
"$MRTX" bench "$TMP/lsdir" --quick --only longscan --json >"$TMP/out" 2>&1 &&
	grep -q '"longscan": {"rows": 10000, "writers": 8' "$TMP/out" &&
	grep -q '"attempts": [1-9]' "$TMP/out" && ok ||
	bad "bench --only longscan: $(cat "$TMP/out")"

# ------------------------------------------------------------ bash completion
# completion: every subcommand of `mrtx --help` and every option of each
# subcommand's usage line is offered (tools/cli/mrtx.bash)
COMP=$(dirname "$0")/../../tools/cli/mrtx.bash
complete_words() { # words... (the last one is being completed)
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_mrtx; printf "%s\n" "${COMPREPLY[@]}"' _ "$COMP" "$@" 2>/dev/null
}
subs=$("$MRTX" --help | awk '/^  [a-z]/ {print $1}')
offered=$(complete_words mrtx "")
for s in $subs; do
	grep -qx -- "$s" <<<"$offered" && ok || bad "completion lacks subcommand $s"
	for o in $("$MRTX" "$s" --help | head -1 | grep -oE -- '--[a-z-]+'); do
		complete_words mrtx "$s" "--" | grep -qx -- "$o" && ok ||
			bad "completion lacks $s $o"
	done
done
[ "$(complete_words mrtx locks x --state C)" == COMMITTED ] && ok ||
	bad "completion of --state values"
[ "$(complete_words mrtx bench d --only mu)" == multi_row ] && ok ||
	bad "completion of --only workloads"

# --force treats the live writer as abandoned: rolled back, and the writer's
# own commit point then fails its condition (nothing half-committed)
S=$(store force)
"$MRTX" create-table "$S" acct bal >/dev/null
MRTX_FAILPOINTS="commit.after_prewrite=wait:$TMP/go.force" "$MRTX" txn "$S" \
	<<<$'put acct a bal:x 1\nput acct b bal:x 2' 2>"$TMP/force.err" &
bg=$!
wait_locks "$S" $bg
"$MRTX" recover "$S" --force --json | pyjson "force: live txn rolled back" \
	"d['rolled_back'] == 1 and d['skipped_live'] == 0"
touch "$TMP/go.force"
wait $bg
rc=$?
[ $rc -eq 1 ] && grep -q '^mrtx: txn: commit: ' "$TMP/force.err" && ok ||
	bad "force: writer exit $rc, want 1 with a commit message"
"$MRTX" locks "$S" --json | pyjson "force: no lock left" 'd == []'
expect_out "" "force: nothing written" "$MRTX" scan "$S" acct
expect_rc 0 "force: check --strict" "$MRTX" check --strict "$S"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
