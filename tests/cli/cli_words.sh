#!/usr/bin/env bash
# cli_words.sh - what the tool says on bad input: every error exits non-zero
# with a message on stderr (nothing on stdout), no message names a library
# function ("mrtx_begin_at: ...") or repeats its prefix ("commit: commit:"),
# and the messages that say what to do do say it: a future --at, a
# collected snapshot or dropped version, a live lock met by recover or a
# read, a full map, a read-only store, a failed check --strict, a family
# policy that cannot hold, the options of chaos, crashsim, bench and sim,
# and the habits of the HBase shell and sqlite3 (commas between words, the
# store before the subcommand, list and count).
#
#   usage: cli_words.sh PATH/TO/mrtx
set -uo pipefail
NAME=words
# shellcheck source=../support/clilib.sh
source "$(dirname "$0")/../support/clilib.sh"

# words CMD...: CMD fails (non-zero), prints nothing on stdout, and its
# stderr is a message of the tool's own words
words() {
	local rc
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		bad "$*: exit 0, want a failure"
		return
	fi
	[ -s "$TMP/err" ] && ok || bad "$*: exit $rc with nothing on stderr"
	[ ! -s "$TMP/out" ] && ok || bad "$*: a failure printed on stdout: $(head -c 200 "$TMP/out")"
	# a library name: mrtx_ and a lower-case word (MRTX_MAP_SIZE and
	# ~/.mrtx_history are the user's)
	if grep -E 'mrtx_[a-z]' "$TMP/err" | grep -vqE '\.mrtx_history'; then
		bad "$*: names a library function: $(head -c 300 "$TMP/err")"
	else
		ok
	fi
	# a prefix said twice: "X: X: "
	if grep -qE '(^|: )([^: ][^:]*): \2: ' "$TMP/err"; then
		bad "$*: repeats a prefix: $(head -c 300 "$TMP/err")"
	else
		ok
	fi
	grep -qE '^(mrtx|usage: mrtx)' "$TMP/err" && ok ||
		bad "$*: message does not start with mrtx: $(head -c 200 "$TMP/err")"
	[ -n "${WORDS_SHOW:-}" ] && { echo "\$ ${*#"$MRTX" }"; sed 's/^/    /' "$TMP/err"; }
}

S=$(store s)
"$MRTX" create-table "$S" t f g:3 >/dev/null || bad "create-table"
"$MRTX" put "$S" t r1 f:a hello >/dev/null || bad "put"
"$MRTX" put "$S" t r1 g:v 1 >/dev/null || bad "put g"
Q=$(store missing)

# ------------------------------------------------------------ every subcommand, bad input
words "$MRTX"
words "$MRTX" bogus "$S"
words "$MRTX" --map-size abc stats "$S"
words "$MRTX" --map-size 0 stats "$S"
words "$MRTX" stats "$Q"
words "$MRTX" get "$Q" t r1 f:a
words "$MRTX" create-table "$S"
words "$MRTX" create-table "$S" t2 'f:x'
words "$MRTX" create-table "$S" t2 'f:1:2:x'
words "$MRTX" create-table "$S" t2 'a b'
words "$MRTX" create-table "$S" t h
words "$MRTX" put "$S" t r1 f:a
words "$MRTX" put "$S" t r1 fa v
words "$MRTX" put "$S" nosuch r1 f:a v
words "$MRTX" put "$S" t r1 x:a v
words "$MRTX" put "$S" t r1 f:a --file "$TMP/nofile"
words "$MRTX" put "$S" t '\xZZ' f:a v
words "$MRTX" put "$S" t abc f:a v --key u64
words "$MRTX" put "$S" t 1 f:a v --key zz
words "$MRTX" get "$S" t r1 f:zz
words "$MRTX" get "$S" t r1 x:a
words "$MRTX" get "$S" nosuch r1 f:a
words "$MRTX" get "$S" t nosuch
words "$MRTX" get "$S" t r1 --raw
words "$MRTX" get "$S" t r1 f:a --versions 0
words "$MRTX" get "$S" t r1 f:a --versions x
words "$MRTX" get "$S" t r1 f:a --at 0
words "$MRTX" get "$S" t r1 f:a --at abc
words "$MRTX" get "$S" t r1 f:a --at 18446744073709551616
words "$MRTX" get "$S" t r1 f:a --at 18446744073709551615
words "$MRTX" get "$S" t r1 f:a --bogus
words "$MRTX" del "$S" t r1 x:a
words "$MRTX" del "$S" nosuch r1 f:a
words "$MRTX" delrow "$S" nosuch r
words "$MRTX" delrow "$S" t
words "$MRTX" scan "$S" nosuch
words "$MRTX" scan "$S" t --limit -1
words "$MRTX" scan "$S" t --limit abc
words "$MRTX" scan "$S" t --family x
words "$MRTX" scan "$S" t --columns x
words "$MRTX" scan "$S" t --bogus
words "$MRTX" scan "$S" t --at 18446744073709551615
words "$MRTX" scan "$S" t --prefix a --start b
words "$MRTX" scan "$S" t --versions 0
words "$MRTX" incr "$S" t r1 f:a
words "$MRTX" incr "$S" t r1 f:n 1x
words "$MRTX" incr "$S" t r1 x:n
words "$MRTX" append "$S" t r1 f:a
words "$MRTX" append "$S" nosuch r1 f:a x
words "$MRTX" check-and-put "$S" t r1 f:a nope new
words "$MRTX" check-and-put "$S" t r1 f:a
words "$MRTX" lock "$S" t zz
words "$MRTX" lock "$S" nosuch r1
words "$MRTX" locks "$S" --state FOO
words "$MRTX" locks "$S" --table nosuch
words "$MRTX" recover "$S" --bogus
words "$MRTX" recover
words "$MRTX" check "$S" --strict --deep
words "$MRTX" describe "$S" nosuch
words "$MRTX" tables "$S" extra
words "$MRTX" add-family "$S" t f
words "$MRTX" add-family "$S" t 'a b'
words "$MRTX" add-family "$S" nosuch f
words "$MRTX" drop-table "$S" nosuch
words "$MRTX" truncate "$S" nosuch
words "$MRTX" dump "$S" nosuch
words "$MRTX" dump "$S" t "$TMP/nodir/x"
words "$MRTX" load "$S" t "$TMP/nofile"
words "$MRTX" load "$S" t --batch x
words "$MRTX" backup "$S" "$S"
words "$MRTX" backup "$Q" "$TMP/bk"
words "$MRTX" upgrade "$Q"
words "$MRTX" gc "$S" --keep abc
words "$MRTX" gc "$S" --keep -5
words "$MRTX" txn "$S" "$TMP/nofile"
words "$MRTX" shell
for line in 'bogus' 'get' 'get nosuch r f:a' 'get t r x:a' 'put t r f:a' "put t r 'f:a" \
	'scan t --limit x' 'scan t --limit -1' 'scan nosuch' 'incr t r1 f:a' 'incr t r f:n 1x' \
	'check t r1 g:v ~ 1' 'check-and-put t r1 f:a nope new' 'delrow' 'append t r f:a'; do
	words "$MRTX" txn "$S" <<<"$line"
	words "$MRTX" shell "$S" <<<"$line"
done
words "$MRTX" shell "$S" <<<$'begin\nput t r f:a v\nbegin'
words "$MRTX" shell "$S" <<<$'commit'

# the suites and the benchmark refuse bad options before they start, naming
# the option and what it takes (exit 2)
H=$TMP/harness
for args in "chaos" "chaos $H --writers 0" "chaos $H --seconds" "chaos $H --kills 0" \
	"chaos $H --kills" "chaos $H --workload x" \
	"chaos $H --bogus" "chaos $H extra" "crashsim $H --states 0" "crashsim $H --only x" \
	"crashsim $H --writers 65" "crashsim $H --durability x" "bench" "bench $H --points 0" \
	"bench $H --bogus" "bench $H --only" "bench $H --only x" "bench $H --durability sync"; do
	# shellcheck disable=SC2086
	words "$MRTX" $args
	grep -qE "^mrtx: (chaos|crashsim|bench): .*(--|DIR|STORE|workload|option)" \
		"$TMP/err" && ok || bad "$args: $(head -c 300 "$TMP/err")"
done
if "$MRTX" sim --help >/dev/null 2>&1; then
	for args in "--clients 0" "--faults x=1" "--break x" "--workload x" "--seeds 5-1" \
		"--bogus" "--txns"; do
		# shellcheck disable=SC2086
		words "$MRTX" sim $args
		grep -qE "^mrtx-sim: .*(expected|needs a value|is not an option)" "$TMP/err" && ok ||
			bad "sim $args: $(head -c 300 "$TMP/err")"
	done
fi
[ -e "$H" ] && bad "a refused harness run made $H" || ok

# ------------------------------------------------------------ the messages that say what to do
# a timestamp later than every commit: says so, names the newest commit,
# and what to do (exit 1, the library's MRTX_EINVAL)
newest=$("$MRTX" get "$S" t r1 g:v --versions 1 | cut -d' ' -f1)
future=$((newest + 1000000))
bound=$newest
if [ "$RADOS" = 1 ]; then
	# the oracle's value bounds a past snapshot there, and snapshots
	# take timestamps from it too: it runs ahead of the newest commit
	future=$((newest + 1000000000000))
	bound='[0-9]+'
fi
expect_err 1 "is later than the store's newest commit \(timestamp $bound\).*at or below $bound, or read the store as it is now" \
	"--at in the future" "$MRTX" get "$S" t r1 f:a --at "$future"
expect_err 1 "later than the store's newest commit" "scan --at in the future" \
	"$MRTX" scan "$S" t --at "$future"
expect_out "hello" "--at the newest commit" "$MRTX" get "$S" t r1 f:a --at "$newest"
expect_err 2 "'0' is not a commit timestamp" "--at 0" "$MRTX" get "$S" t r1 f:a --at 0
# below the collection safe point: says what was collected and what to do
"$MRTX" put "$S" t r2 f:a x >/dev/null
"$MRTX" gc "$S" >/dev/null || bad "gc"
expect_err 1 "below the store's collection safe point [0-9]+: .*give a timestamp at or above" \
	"--at below gc's safe point" "$MRTX" get "$S" t r1 f:a --at 1
# a version the family's policy dropped: what to do instead
V=$(store versions)
"$MRTX" create-table "$V" t f >/dev/null
"$MRTX" put "$V" t r f:a one >/dev/null
t1=$("$MRTX" get "$V" t r f:a --versions 1 | cut -d' ' -f1)
"$MRTX" put "$V" t r f:a two >/dev/null
expect_err 1 "(were collected \(its family keeps 1 version\)|is no longer kept by its family's policy \(1 version, TTL 0 ms\)): read at a later timestamp, or keep more versions \(get --versions N" \
	"--at a dropped version" "$MRTX" get "$V" t r f:a --at "$t1"

# recover meets a live transaction: calls it live, not stale, and says
# what --force does
L=$(store live)
"$MRTX" create-table "$L" acct bal >/dev/null
MRTX_FAILPOINTS="commit.after_prewrite=wait:$TMP/go.live" "$MRTX" --two-phase txn "$L" \
	<<<$'put acct a bal:x 1\nput acct b bal:x 2' >/dev/null 2>&1 &
bg=$!
while [ "$("$MRTX" locks "$L" --json 2>/dev/null)" == "[]" ]; do
	kill -0 "$bg" 2>/dev/null || { bad "live: writer ended before its locks were seen"; break; }
	sleep 0.02
done
"$MRTX" recover "$L" >"$TMP/rec" 2>&1
grep -qi 'stale' "$TMP/rec" && bad "recover calls a live lock stale: $(cat "$TMP/rec")" || ok
grep -qE '^1 transactions skipped as live \(owner alive, lock not expired; --force settles them too\)$' \
	"$TMP/rec" && ok || bad "recover: live line: $(cat "$TMP/rec")"
grep -qE '^2 unsettled locks met' "$TMP/rec" && ok || bad "recover: locks line: $(cat "$TMP/rec")"
# a read of a row the live writer holds names the row and what to do
# (RADOS: a reader at a snapshot pushes the writer past it and reads on)
if [ "$RADOS" = 0 ]; then
	words "$MRTX" get "$L" acct a bal:x
	grep -qF "table 'acct': row 'a' is held by a live transaction whose commit is under way; retry later" \
		"$TMP/err" && ok || bad "live: get: $(cat "$TMP/err")"
fi
touch "$TMP/go.live"
wait "$bg" && ok || bad "live: writer failed"

# a full map names the global option; a read-only open says why
if [ "$RADOS" = 0 ]; then
	F=$TMP/full
	"$MRTX" --map-size 1M create-table "$F" t f >/dev/null
	head -c 3000000 /dev/zero >"$TMP/big"
	words "$MRTX" --map-size 1M put "$F" t r f:a --file "$TMP/big"
	grep -qE 'is full .*--map-size SIZE' "$TMP/err" && ok || bad "full map: $(cat "$TMP/err")"
fi
words "$MRTX" --read-only put "$S" t r f:a v
grep -qE 'read-only \(it was opened with --read-only or MRTX_READ_ONLY=1' "$TMP/err" && ok ||
	bad "read-only: $(cat "$TMP/err")"
words "$MRTX" --read-only txn "$S" <<<'put t r f:a v'
grep -qE 'line 1: put: store .* is open read-only' "$TMP/err" && ok || bad "read-only txn: $(cat "$TMP/err")"
# a txn scan --limit that is not a count says what a count is
words "$MRTX" txn "$S" <<<'scan t --limit -1'
grep -qF "is not a count of rows (a decimal number, 0 or more; 0 is no limit)" "$TMP/err" && ok ||
	bad "txn scan --limit: $(cat "$TMP/err")"

# a row without a lock record, an unknown script command: named
words "$MRTX" lock "$S" t zz
grep -qF "t/zz has no lock record: the row was never written" "$TMP/err" && ok ||
	bad "lock: $(cat "$TMP/err")"
words "$MRTX" txn "$S" <<<'bogus t r'
grep -qF "line 1: unknown command 'bogus'" "$TMP/err" && ok || bad "txn: $(cat "$TMP/err")"
# a table made again with other families: where to see them
words "$MRTX" create-table "$S" t h
grep -qF "exists with different families (mrtx describe STORE TABLE shows them" "$TMP/err" && ok ||
	bad "create-table: $(cat "$TMP/err")"

# the habits of other shells get a pointer to what does it here
words "$MRTX" shell "$S" <<<"get 't', 'r1'"
grep -qF "(words are separated by blanks, not commas" "$TMP/err" && ok || bad "commas: $(cat "$TMP/err")"
words "$MRTX" shell "$S" <<<'list'
grep -qF "unknown command 'list' (\`mrtx tables STORE\` lists the tables)" "$TMP/err" && ok ||
	bad "list: $(cat "$TMP/err")"
words "$MRTX" "$S" get t r1
grep -qF "the subcommand comes first, then the store (mrtx get $S ..." "$TMP/err" && ok ||
	bad "store first: $(cat "$TMP/err")"
words "$MRTX" get "$S" t r1 f
grep -qF "column 'f' is not FAMILY:QUALIFIER (f: is that family with the empty qualifier)" \
	"$TMP/err" && ok || bad "column: $(cat "$TMP/err")"

# a family policy that cannot hold names the family and the rule
words "$MRTX" create-table "$S" t5 'f:2:3'
grep -qF "family 'f': MIN 3 is above VERSIONS 2" "$TMP/err" && ok || bad "MIN > VERSIONS: $(cat "$TMP/err")"
words "$MRTX" create-table "$S" t5 'f:0'
grep -qF "family 'f': VERSIONS is 0; a family keeps at least one version" "$TMP/err" && ok || bad "VERSIONS 0: $(cat "$TMP/err")"
words "$MRTX" put "$S" t '' f:a v
grep -qF "a row key is empty (a row is 1 to 495 bytes)" "$TMP/err" && ok || bad "empty row: $(cat "$TMP/err")"
words "$MRTX" dump "$S" t "$TMP/nodir/t.dump"
grep -qF "cannot write $TMP/nodir/t.dump (a dump goes to a temporary file beside it first)" \
	"$TMP/err" && ok || bad "dump: $(cat "$TMP/err")"

# a crashed two-phase commit: the PREWRITTEN secondary's age is unknown
# (its timestamp is provisional), not decades since the epoch
C=$(store crashed)
"$MRTX" create-table "$C" t f >/dev/null
printf 'put t a f:x 1\nput t b f:x 2\n' |
	MRTX_FAILPOINTS=commit.after_point=exit "$MRTX" --two-phase txn "$C" >/dev/null 2>&1
"$MRTX" locks "$C" >"$TMP/locks" 2>&1
grep -qE '^t +b +PREWRITTEN .* 0 +- ' "$TMP/locks" && ok || bad "locks: age of PREWRITTEN: $(cat "$TMP/locks")"
"$MRTX" locks "$C" --json | pyjson "locks --json: age_ms null while PREWRITTEN" \
	"all((l['age_ms'] is None) == (l['state'] == 'PREWRITTEN') for l in d) and len(d) == 2"
"$MRTX" check --strict "$C" >/dev/null 2>"$TMP/err"
grep -qF "1 resolvable findings (--strict): locks of crashed writers, which \`mrtx recover $C\` settles" \
	"$TMP/err" && ok || bad "check --strict: $(cat "$TMP/err")"
"$MRTX" recover "$C" >/dev/null 2>&1

finish
