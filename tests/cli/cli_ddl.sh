#!/usr/bin/env bash
# cli_ddl.sh - add-family, drop-table and truncate through the real `mrtx`
# binary: the schema and data they leave, a live writer and crashed writers
# across a drop (their rows in other tables all or nothing), read-only and
# bad input.  On LMDB, and on RADOS with MRTX_TEST_STORE=rados.
#
# usage: cli_ddl.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=ddl
. "$(dirname "$0")/../support/clilib.sh"
# Writers are stopped between the steps of the two-phase protocol and their
# locks inspected: every mrtx here commits with it (DESIGN §5.2; LMDB's
# one-phase commits, §5.3, are tested in test_txn and cli_chaos).
export MRTX_TWO_PHASE=1


S=$(store s)
expect_rc 0 "create-table t" "$MRTX" create-table "$S" t f
expect_rc 0 "create-table u" "$MRTX" create-table "$S" u f
expect_rc 0 "put t r1" "$MRTX" put "$S" t r1 f:q 1
expect_rc 0 "put t r2" "$MRTX" put "$S" t r2 f:q 2

# ---------------------------------------------------------------- add-family
expect_rc 0 "add-family t g" "$MRTX" add-family "$S" t g
expect_rc 0 "put into the new family" "$MRTX" put "$S" t r1 g:x new
expect_out "new" "get from the new family" "$MRTX" get "$S" t r1 g:x
"$MRTX" describe "$S" t --json >"$TMP/d" 2>&1
grep -q '"families":\["f","g"\]' "$TMP/d" && ok || bad "describe after add-family: $(cat "$TMP/d")"
expect_err 1 'already has family' "add-family of an existing family" "$MRTX" add-family "$S" t g
expect_err 1 "no table 'nosuch'" "add-family on a missing table" \
	"$MRTX" add-family "$S" nosuch g
expect_err 2 'usage' "add-family without FAMILY" "$MRTX" add-family "$S" t

# ------------------------------------------------------------------ truncate
expect_rc 0 "truncate t" "$MRTX" truncate "$S" t
expect_out "" "truncate: no row left" "$MRTX" scan "$S" t
expect_out "$(printf 't\nu')" "truncate: the table stays" "$MRTX" tables "$S"
expect_rc 0 "truncate: the families stay" "$MRTX" put "$S" t r9 g:x 9
expect_out "r9 g:x 9" "truncate: writable again" "$MRTX" scan "$S" t

# ---------------------------------------------------------------- drop-table
expect_rc 0 "drop-table t" "$MRTX" drop-table "$S" t
expect_out "u" "drop: the name is gone" "$MRTX" tables "$S"
expect_err 1 "no table 't'" "drop: a read names the table" "$MRTX" get "$S" t r9 g:x
expect_err 1 "no table 't'" "drop: twice" "$MRTX" drop-table "$S" t
expect_rc 0 "drop: the name can be created anew" "$MRTX" create-table "$S" t h
expect_out "" "drop: the new table is empty" "$MRTX" scan "$S" t

# a live writer across a drop: rows in t and u, held after its prewrite;
# the drop rolls it back, its commit fails, u never sees its row
expect_rc 0 "put t a (old)" "$MRTX" put "$S" t a h:q old
MRTX_FAILPOINTS="commit.after_prewrite=wait:$TMP/go" "$MRTX" txn "$S" \
	<<<$'put t a h:q new\nput u a f:q new' >/dev/null 2>"$TMP/live.err" &
bg=$!
while [ "$("$MRTX" locks "$S" --json 2>/dev/null)" == "[]" ]; do
	kill -0 $bg 2>/dev/null || { bad "live writer ended before its locks were seen"; break; }
	sleep 0.02
done
expect_rc 0 "drop-table under a live writer" "$MRTX" drop-table "$S" t
touch "$TMP/go"
wait $bg
rc=$?
[ $rc -eq 1 ] && ok || bad "live writer across a drop: exit $rc, want 1 ($(cat "$TMP/live.err"))"
expect_out "" "live writer: nothing of it in u" "$MRTX" scan "$S" u
expect_out "[]" "live writer: no lock left" "$MRTX" locks "$S" --json

# crashed writers: committed (primary in t, crashed after the commit point)
# is rolled forward by the drop, so its row in u appears; not committed
# (crashed after the prewrite) leaves nothing in u
expect_rc 0 "create-table t (again)" "$MRTX" create-table "$S" t f
MRTX_FAILPOINTS=commit.after_point=exit "$MRTX" txn "$S" \
	<<<$'put t c f:q 1\nput u c f:q committed' >/dev/null 2>&1
MRTX_FAILPOINTS=commit.after_prewrite=exit "$MRTX" txn "$S" \
	<<<$'put t d f:q 1\nput u d f:q never' >/dev/null 2>&1
[ "$("$MRTX" locks "$S" --json)" != "[]" ] && ok || bad "crashed writers left no lock"
expect_rc 0 "drop-table after crashed writers" "$MRTX" drop-table "$S" t
expect_out "c f:q committed" "crashed writers: u holds exactly the committed row" \
	"$MRTX" scan "$S" u
expect_out "[]" "crashed writers: no lock left" "$MRTX" locks "$S" --json
expect_rc 0 "check --strict after the drops" "$MRTX" check --strict "$S"

# a drop cut short after its freeze (in the settling of a crashed writer's
# locks): describe says so, and so do the writes it refuses, until a drop
# run again finishes it
expect_rc 0 "create-table t (a third time)" "$MRTX" create-table "$S" t f
MRTX_FAILPOINTS=commit.after_prewrite=exit "$MRTX" txn "$S" \
	<<<$'put t e f:q 1\nput u e f:q never' >/dev/null 2>&1
MRTX_FAILPOINTS=recover.after_abort=exit expect_rc 99 "drop-table cut short" \
	"$MRTX" drop-table "$S" t
"$MRTX" describe "$S" t | grep -q '^state: *frozen by a drop or truncate' && ok ||
	bad "describe of a frozen table: $("$MRTX" describe "$S" t 2>&1)"
"$MRTX" describe "$S" t --json | grep -q '"held":"frozen"' && ok ||
	bad "describe --json of a frozen table: $("$MRTX" describe "$S" t --json 2>&1)"
"$MRTX" describe "$S" u | grep -q '^state:' && bad "describe of a live table has a state" ||
	ok
"$MRTX" describe "$S" u --json | grep -q '"held":null' && ok ||
	bad "describe --json of a live table: $("$MRTX" describe "$S" u --json 2>&1)"
"$MRTX" stats "$S" | grep -q '^  t (f):.*; frozen by an unfinished drop or truncate' && ok ||
	bad "stats of a frozen table: $("$MRTX" stats "$S" 2>&1)"
"$MRTX" stats "$S" --json | grep -q '"held":"frozen"' && ok ||
	bad "stats --json of a frozen table: $("$MRTX" stats "$S" --json 2>&1)"
"$MRTX" check "$S" | grep -q '^table t is frozen by a drop or truncate' && ok ||
	bad "check of a frozen table: $("$MRTX" check "$S" 2>&1)"
"$MRTX" check "$S" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["held"] == [{"table": "t", "state": "frozen"}] and d["ok"] else 1)' && ok ||
	bad "check --json of a frozen table: $("$MRTX" check "$S" --json 2>&1)"
expect_err 1 "table 't' is frozen by a drop or truncate" "put into a frozen table" \
	"$MRTX" put "$S" t x f:q 1
expect_rc 0 "drop-table again finishes it" "$MRTX" drop-table "$S" t
expect_out "[]" "the finished drop: no lock left" "$MRTX" locks "$S" --json
"$MRTX" check "$S" --json | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["held"] == [] else 1)' && ok ||
	bad "check --json after the drop: $("$MRTX" check "$S" --json 2>&1)"

# --------------------------------------------------------- refusals, usage
expect_err 1 'read-only' "drop-table --read-only" "$MRTX" --read-only drop-table "$S" u
expect_err 1 'read-only' "truncate --read-only" "$MRTX" --read-only truncate "$S" u
expect_err 1 'read-only' "add-family --read-only" "$MRTX" --read-only add-family "$S" u z
expect_out "c f:q committed" "read-only refusals changed nothing" "$MRTX" scan "$S" u
expect_err 2 'usage' "drop-table without TABLE" "$MRTX" drop-table "$S"
expect_err 2 'usage' "truncate with two tables" "$MRTX" truncate "$S" u v
expect_err 1 'no such store' "drop-table on a missing store" "$MRTX" drop-table "$TMP/none" u
[ ! -e "$TMP/none" ] && ok || bad "drop-table created a store"
expect_err 1 'not a directory' "truncate on a file" "$MRTX" truncate "$TMP/err" u
"$MRTX" drop-table --help | grep -q 'Transactional' && ok || bad "drop-table --help"
finish
