#!/usr/bin/env bash
# cli_index.sh - `mrtx index create|list|scan|drop` through the real `mrtx`
# binary: entries kept by every writing subcommand, scans by value and
# range, writes into an index table refused, a drop (and one stopped half
# way by a failpoint, finished by index drop or by drop-table), bad input.
# With MRTX_TEST_STORE=rados the drop says tables cannot be dropped there.
#
# usage: cli_index.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=index
. "$(dirname "$0")/../support/clilib.sh"

S=$(store s)
expect_rc 0 "create-table users" "$MRTX" create-table "$S" users p x
expect_rc 0 "put u1 email" "$MRTX" put "$S" users u1 p:email ann@x
expect_rc 0 "put u1 name" "$MRTX" put "$S" users u1 p:name Ann
expect_rc 0 "put u2 email" "$MRTX" put "$S" users u2 p:email 'bob x@y'

# ------------------------------------------------------------------ create
expect_rc 0 "index create (backfills)" \
	"$MRTX" index create "$S" by_email users p:email users_by_email --cluster p:name
expect_rc 0 "index create again: same spec" \
	"$MRTX" index create "$S" by_email users p:email users_by_email --cluster p:name
expect_err 1 "exists with another spec" "index create: another spec under the name" \
	"$MRTX" index create "$S" by_email users p:name users_by_email
expect_err 1 "no table 'nosuch'" "index create: no source table" \
	"$MRTX" index create "$S" by_x nosuch p:email by_x_t
expect_err 2 "FAMILY:QUALIFIER" "index create: --cluster without a colon" \
	"$MRTX" index create "$S" by_x users p:email by_x_t --cluster name
expect_err 2 "expected STORE NAME TABLE" "index create: too few arguments" \
	"$MRTX" index create "$S" by_x users p:email
expect_out "by_email users p:email users_by_email p:name" "index list" "$MRTX" index list "$S"
"$MRTX" index list "$S" --json | pyjson "index list --json" \
	'd["name"] == "by_email" and d["column"] == "p:email" and d["cluster"] == ["p:name"]'
expect_out "by_email" "describe names the index it holds" \
	sh -c "'$MRTX' describe '$S' users_by_email | sed -n 's/^index of: *\([^ ]*\).*/\1/p'"

# -------------------------------------------------------------------- scan
expect_out "$(printf 'ann@x u1 p:name Ann\nbob\\x20x@y u2')" "index scan" \
	"$MRTX" index scan "$S" by_email
expect_out "bob\\x20x@y u2" "index scan --value (escaped)" \
	"$MRTX" index scan "$S" by_email --value 'bob\x20x@y'
expect_out "" "index scan --value: none" "$MRTX" index scan "$S" by_email --value nobody
expect_out "ann@x u1 p:name Ann" "index scan --start --end" \
	"$MRTX" index scan "$S" by_email --start a --end b
expect_out "bob\\x20x@y u2" "index scan --reverse --limit" \
	"$MRTX" index scan "$S" by_email --reverse --limit 1
"$MRTX" index scan "$S" by_email --value ann@x --json | pyjson "index scan --json" \
	'd["row"] == "u1" and d["cells"] == [{"column": "p:name", "value": "Ann"}]'
expect_err 2 "excludes" "index scan: --value with --start" \
	"$MRTX" index scan "$S" by_email --value a --start b
expect_err 1 "no index 'nosuch'" "index scan: unknown index" "$MRTX" index scan "$S" nosuch

# writers maintain it: put, del, delrow, txn, load
expect_rc 0 "put u3" "$MRTX" put "$S" users u3 p:email cy@x
expect_rc 0 "put u1 new email" "$MRTX" put "$S" users u1 p:email ann@z
expect_rc 0 "delrow u2" "$MRTX" delrow "$S" users u2
printf 'put users u4 p:email dee@x\nput users u4 p:name Dee\n' >"$TMP/script"
expect_rc 0 "txn script" "$MRTX" txn "$S" "$TMP/script"
expect_out "$(printf 'ann@z u1 p:name Ann\ncy@x u3\ndee@x u4 p:name Dee')" \
	"index scan after writes" "$MRTX" index scan "$S" by_email

# ---------------------------------------------------- the index table is closed
for c in "put $S users_by_email k i:r v" "del $S users_by_email k i:r" \
	"delrow $S users_by_email k" "incr $S users_by_email k i:n" \
	"append $S users_by_email k i:r v" "check-and-put $S users_by_email k i:r --absent v"; do
	# shellcheck disable=SC2086
	expect_err 1 "index table of index 'by_email'" "refused: ${c%% *}" "$MRTX" $c
done
printf 'put users u9 p:email e@x\nput users_by_email k i:r v\n' >"$TMP/script"
expect_err 1 "index table of index 'by_email'" "refused: txn script" "$MRTX" txn "$S" "$TMP/script"
expect_err 1 "not found" "refused txn: nothing of it written" "$MRTX" get "$S" users u9
printf 'put users_by_email k i:r v\nbegin\ndel users_by_email k i:r\nrollback\n' >"$TMP/shell"
"$MRTX" shell "$S" <"$TMP/shell" >"$TMP/out" 2>"$TMP/err"
[ "$(grep -c "index table of index 'by_email'" "$TMP/err")" -eq 2 ] && ok ||
	bad "refused: shell writes, in and out of a transaction: $(cat "$TMP/err")"
"$MRTX" dump "$S" users_by_email >"$TMP/dump" || bad "dump of the index table"
expect_err 1 "index table of index 'by_email'" "refused: load" \
	"$MRTX" load "$S" users_by_email "$TMP/dump"
expect_err 1 "used by index 'by_email'" "drop-table of the source refused" \
	"$MRTX" drop-table "$S" users

# -------------------------------------------------------------------- drop
expect_rc 0 "index drop" "$MRTX" index drop "$S" by_email
expect_out "" "index drop: no index left" "$MRTX" index list "$S"
expect_out "users" "index drop: the index table is gone" "$MRTX" tables "$S"
expect_err 1 "no index 'by_email'" "index drop: twice" "$MRTX" index drop "$S" by_email
expect_err 1 "no index 'by_email'" "index scan after the drop" \
	"$MRTX" index scan "$S" by_email
expect_rc 0 "put after the drop" "$MRTX" put "$S" users u5 p:email eve@x
expect_out "users" "the put made no index table" "$MRTX" tables "$S"

# stopped between its steps: the table stays, unmaintained, until a re-run
expect_rc 0 "index create again" \
	"$MRTX" index create "$S" by_email users p:email users_by_email
expect_out "eve@x u5" "index create again: backfilled" \
	"$MRTX" index scan "$S" by_email --value eve@x
MRTX_FAILPOINTS=index.after_retire=exit expect_rc 99 "index drop stopped half way" \
	"$MRTX" index drop "$S" by_email
expect_out "" "half way: no index" "$MRTX" index list "$S"
expect_out "$(printf 'users\nusers_by_email')" "half way: the table stays" "$MRTX" tables "$S"
n=$("$MRTX" scan "$S" users_by_email --count)
expect_rc 0 "half way: writes go on" "$MRTX" put "$S" users u6 p:email fay@x
expect_out "$n" "half way: the table is not maintained" \
	"$MRTX" scan "$S" users_by_email --count
expect_rc 0 "half way: put into the old index table is allowed" \
	"$MRTX" put "$S" users_by_email k i:r v
expect_rc 0 "index drop again finishes it" "$MRTX" index drop "$S" by_email
expect_out "users" "finished: the table is gone" "$MRTX" tables "$S"
expect_err 1 "no index 'by_email'" "finished: nothing left" "$MRTX" index drop "$S" by_email

# the same, finished by drop-table
expect_rc 0 "index create a third time" \
	"$MRTX" index create "$S" by_email users p:email users_by_email
MRTX_FAILPOINTS=index.after_retire=exit expect_rc 99 "index drop stopped again" \
	"$MRTX" index drop "$S" by_email
expect_rc 0 "drop-table finishes it" "$MRTX" drop-table "$S" users_by_email
expect_err 1 "no index 'by_email'" "drop-table took the record" \
	"$MRTX" index drop "$S" by_email

# stopped after retiring: the table cannot be truncated; stopped after
# dropping the table: a user's table of the name is not the drop's to take
expect_rc 0 "index create a fourth time" \
	"$MRTX" index create "$S" by_email users p:email users_by_email
MRTX_FAILPOINTS=index.after_retire=exit expect_rc 99 "index drop stopped a third time" \
	"$MRTX" index drop "$S" by_email
expect_err 1 "whose drop stopped before dropping it" "truncate of a half-dropped index table" \
	"$MRTX" truncate "$S" users_by_email
MRTX_FAILPOINTS=ddl.after_clear=exit expect_rc 99 "index drop stopped after the table's drop" \
	"$MRTX" index drop "$S" by_email
expect_out "users" "after the table's drop: the table is gone" "$MRTX" tables "$S"
expect_rc 0 "a user's table of the name" "$MRTX" create-table "$S" users_by_email i
expect_rc 0 "a user's row in it" "$MRTX" put "$S" users_by_email mine i:q kept
expect_rc 0 "index drop again removes only the record" "$MRTX" index drop "$S" by_email
expect_out "kept" "the user's table stays" "$MRTX" get "$S" users_by_email mine i:q
expect_rc 0 "drop-table of the user's table" "$MRTX" drop-table "$S" users_by_email

# the source table can go now
expect_rc 0 "drop-table of the source" "$MRTX" drop-table "$S" users
expect_out "" "no table left" "$MRTX" tables "$S"

expect_err 2 "expected create, list, scan or drop" "index without a command" "$MRTX" index
expect_err 2 "unknown index command 'frob'" "index frob" "$MRTX" index frob "$S"
expect_err 2 "for index scan" "index list --limit" "$MRTX" index list "$S" --limit 3
finish
