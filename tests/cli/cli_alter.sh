#!/usr/bin/env bash
# cli_alter.sh - alter: a family's VERSIONS, MIN_VERSIONS and TTL changed
# on an existing table (describe shows it, reads follow it, what is not
# given stays), bad input, --drop refused, create-table's FAMILY:0
# refused; on RADOS --drop says it is not supported.  Then dump and load
# keep each family's policy and, with --versions, every version.
#
# usage: cli_alter.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=alter
. "$(dirname "$0")/../support/clilib.sh"
unset MRTX_FAILPOINTS MRTX_HISTORY

S=$(store s)
"$MRTX" create-table "$S" t f:3 g >/dev/null || { echo "FAIL: create-table" >&2; exit 1; }
put() { "$MRTX" put "$S" t "$@" >/dev/null || bad "put $*"; }
pol() { "$MRTX" describe "$S" t | grep "^family: *$1 "; }
nver() { "$MRTX" get "$S" t r f:q --versions 10 2>/dev/null | wc -l; }

# ------------------------------------------------------------ create-table
expect_err 2 "family 'h': VERSIONS is 0; a family keeps at least one version" \
	"create-table FAMILY:0" "$MRTX" create-table "$S" u h:0
expect_err 2 "family 'h': VERSIONS is 0" "create-table FAMILY:0:0:5" \
	"$MRTX" create-table "$S" u h:0:0:5

# ------------------------------------------------------------ bad input
expect_err 2 "nothing to change" "alter without a change" "$MRTX" alter "$S" t f
expect_err 2 "expected STORE, TABLE and FAMILY" "alter without a family" "$MRTX" alter "$S" t
expect_err 2 "--versions 0: a family keeps at least one version" "alter --versions 0" \
	"$MRTX" alter "$S" t f --versions 0
expect_err 2 "--versions: 'x' is not a non-negative integer" "alter --versions x" \
	"$MRTX" alter "$S" t f --versions x
expect_err 2 "--ttl: '5w' is not a duration" "alter --ttl 5w" "$MRTX" alter "$S" t f --ttl 5w
expect_err 2 "--drop takes no other option" "alter --drop --versions" \
	"$MRTX" alter "$S" t f --drop --versions 2
expect_err 1 "no table 'none'" "alter a missing table" "$MRTX" alter "$S" none f --versions 2

expect_err 1 "table 't' has no family 'zz'" "alter a missing family" \
	"$MRTX" alter "$S" t zz --versions 2
if [ "$RADOS" = 1 ]; then
	expect_err 1 "dropping a family is not supported on a RADOS store" \
		"alter --drop on RADOS" "$MRTX" alter "$S" t g --drop
fi
# (both backends)
{
	expect_err 1 "MIN_VERSIONS 5 is above VERSIONS 3" "alter --min-versions above" \
		"$MRTX" alter "$S" t f --min-versions 5

	# ---------------------------------------------------- alter
	for i in 1 2 3 4; do put r f:q "v$i"; done
	[ "$(nver)" -eq 3 ] && ok || bad "3 versions kept before alter: $(nver)"
	expect_rc 0 "alter --versions 1" "$MRTX" alter "$S" t f --versions 1
	[[ "$(pol f)" == *"VERSIONS=1 MIN_VERSIONS=0 TTL=FOREVER" ]] && ok ||
		bad "describe after --versions 1: $(pol f)"
	[ "$(nver)" -eq 1 ] && ok || bad "1 version shown after alter: $(nver)"
	expect_out "v4" "get after alter" "$MRTX" get "$S" t r f:q
	expect_rc 0 "alter --ttl 2h --min-versions 1 --versions 5" \
		"$MRTX" alter "$S" t f --ttl 2h --min-versions 1 --versions 5
	[[ "$(pol f)" == *"VERSIONS=5 MIN_VERSIONS=1 TTL=7200000ms" ]] && ok ||
		bad "describe after --ttl 2h: $(pol f)"
	# what is not given stays
	expect_rc 0 "alter --ttl FOREVER" "$MRTX" alter "$S" t f --ttl FOREVER
	[[ "$(pol f)" == *"VERSIONS=5 MIN_VERSIONS=1 TTL=FOREVER" ]] && ok ||
		bad "describe after --ttl FOREVER: $(pol f)"
	expect_rc 0 "alter --ttl 90s" "$MRTX" alter "$S" t g --ttl 90s
	[[ "$(pol g)" == *"VERSIONS=1 MIN_VERSIONS=0 TTL=90000ms" ]] && ok ||
		bad "describe g after --ttl 90s: $(pol g)"
	"$MRTX" describe "$S" t --json | pyjson "describe --json after alter" \
		"d['policies'] == [{'name':'f','versions':5,'min_versions':1,'ttl_ms':0},
		                   {'name':'g','versions':1,'min_versions':0,'ttl_ms':90000}]"
	# the write after shrinking collected; growing shows what was left
	# and what is written from then on
	for i in 5 6 7 8 9 10; do put r f:q "v$i"; done
	[ "$(nver)" -eq 5 ] && ok || bad "5 versions after growing: $(nver)"
	expect_rc 0 "gc" "$MRTX" gc "$S"
}
if [ "$RADOS" = 0 ]; then
	# ---------------------------------------------------- alter --drop
	put r g:x gone
	put r2 g:y gone
	expect_rc 0 "alter --drop" "$MRTX" alter "$S" t g --drop
	expect_out "families: f" "describe after --drop" \
		bash -c "\"\$1\" describe \"\$2\" t | grep '^families:'" _ "$MRTX" "$S"
	expect_err 1 "table 't' has no family 'g'" "get a dropped family" \
		"$MRTX" get "$S" t r g:x
	"$MRTX" scan "$S" t | grep -q ' g:' && bad "scan shows a dropped family's cells" || ok
	expect_err 1 "is the last one of table 't': drop the table instead" \
		"alter --drop the last family" "$MRTX" alter "$S" t f --drop
	expect_rc 0 "add-family of a dropped name" "$MRTX" add-family "$S" t g
	expect_err 1 "not found" "the family added again is empty" "$MRTX" get "$S" t r g:x
	expect_rc 0 "check after --drop" "$MRTX" check "$S" --strict
	expect_rc 0 "check --deep after --drop" "$MRTX" check "$S" --deep
fi

# ------------------------------------------------------------ dump and load
D=$(store d)
"$MRTX" create-table "$D" p f:3:1:86400000 g:2 >/dev/null || bad "create-table p"
for i in 1 2 3 4; do "$MRTX" put "$D" p r f:q "v$i" >/dev/null || bad "put p"; done
"$MRTX" put "$D" p r g:x 'a b' >/dev/null || bad "put p g"
"$MRTX" put "$D" p r2 f:q w >/dev/null || bad "put p r2"
expect_rc 0 "dump a table with policies" "$MRTX" dump "$D" p "$TMP/p.dump"
head -4 "$TMP/p.dump" | tr '\n' '|' | grep -qx 'mrtx-dump 2|table p|family f 3:1:86400000|family g 2:0:0|' &&
	ok || bad "dump header with policies: $(head -4 "$TMP/p.dump")"
grep -c '^r' "$TMP/p.dump" | grep -qx 3 && ok || bad "dump without --versions: newest only"
expect_rc 0 "load a dump with policies" "$MRTX" load "$D" p2 "$TMP/p.dump"
"$MRTX" describe "$D" p2 --json | pyjson "load keeps the policies" \
	"d['policies'] == [{'name':'f','versions':3,'min_versions':1,'ttl_ms':86400000},
	                   {'name':'g','versions':2,'min_versions':0,'ttl_ms':0}]"
# a table whose families keep one version: version 1, as before
"$MRTX" create-table "$D" one f >/dev/null && "$MRTX" put "$D" one r f:q 1 >/dev/null
expect_rc 0 "dump a one-version table" "$MRTX" dump "$D" one "$TMP/one.dump"
head -3 "$TMP/one.dump" | tr '\n' '|' | grep -qx 'mrtx-dump 1|table one|family f|' && ok ||
	bad "a one-version table dumps as version 1: $(head -3 "$TMP/one.dump")"
# CRLF line ends load
sed 's/$/\r/' "$TMP/p.dump" >"$TMP/crlf.dump"
expect_rc 0 "load a dump with CRLF line ends" "$MRTX" load "$D" p3 "$TMP/crlf.dump"
expect_out "v4" "the CRLF dump's value" "$MRTX" get "$D" p3 r f:q
expect_out "a b" "the CRLF dump's escaped value" "$MRTX" get "$D" p3 r g:x
# bad headers
printf 'mrtx-dump 1\ntable p\nfamily f 3:0:0\ncells\nend 0\n' >"$TMP/bad1.dump"
expect_err 1 "line 3: a family's policy in a version 1 dump" "v1 dump with a policy" \
	"$MRTX" load "$D" p4 "$TMP/bad1.dump"
printf 'mrtx-dump 3\ntable p\n' >"$TMP/bad3.dump"
expect_err 1 "dump format version 3; this mrtx reads versions 1 to 2" "dump version 3" \
	"$MRTX" load "$D" p4 "$TMP/bad3.dump"
printf 'mrtx-dump 2\ntable p\nfamily f 0:0:0\ncells\nend 0\n' >"$TMP/bad0.dump"
expect_err 1 "line 3: a family's policy needs VERSIONS at least 1" "policy 0:0:0" \
	"$MRTX" load "$D" p4 "$TMP/bad0.dump"

{
	expect_rc 0 "dump --versions" "$MRTX" dump "$D" p "$TMP/pv.dump" --versions
	sed -n 5p "$TMP/pv.dump" | grep -qx versions && ok || bad "dump --versions: 'versions' line"
	grep -cE '^r f:q [0-9]+ v[234]$' "$TMP/pv.dump" | grep -qx 3 && ok ||
		bad "dump --versions: 3 versions of r f:q: $(cat "$TMP/pv.dump")"
	expect_out "5 versions of 3 cells in 2 rows restored into pv" "load a dump with versions" \
		"$MRTX" load "$D" pv "$TMP/pv.dump"
	"$MRTX" get "$D" p r f:q --versions 5 >"$TMP/a" && "$MRTX" get "$D" pv r f:q --versions 5 >"$TMP/b"
	same_file "versions and timestamps restored" "$TMP/a" "$TMP/b"
	"$MRTX" dump "$D" pv "$TMP/pv2.dump" --versions && sed 's/^table pv$/table p/' "$TMP/pv2.dump" >"$TMP/pv3.dump"
	same_file "dump --versions, load, dump round-trips" "$TMP/pv.dump" "$TMP/pv3.dump"
	# run again (as after a load cut short): what an earlier run restored
	# is skipped; a cell changed since is not
	expect_out "5 versions of 3 cells in 2 rows restored into pv (3 of the cells by an earlier run)" \
		"load a versions dump twice" "$MRTX" load "$D" pv "$TMP/pv.dump"
	"$MRTX" get "$D" pv r f:q --versions 5 >"$TMP/b"
	same_file "the second load changed nothing" "$TMP/a" "$TMP/b"
	expect_rc 0 "a put after the load" "$MRTX" put "$D" pv r f:q v9
	expect_err 1 "line 7: .*already has versions.*nothing was written" \
		"load a versions dump over a changed cell" "$MRTX" load "$D" pv "$TMP/pv.dump"
	# versions long past the family's TTL (timestamps of 1970): the cell
	# reads as none after the first load, and the second skips it all the
	# same
	printf 'mrtx-dump 2\ntable p\nfamily f 3:0:3600000\nversions\ncells\nr f:q 2000 new\nr f:q 1000 old\nend 2\n' >"$TMP/ttl.dump"
	expect_out "2 versions of 1 cells in 1 rows restored into pttl" \
		"load versions past the TTL" "$MRTX" load "$D" pttl "$TMP/ttl.dump"
	expect_out "2 versions of 1 cells in 1 rows restored into pttl (1 of the cells by an earlier run)" \
		"load versions past the TTL again" "$MRTX" load "$D" pttl "$TMP/ttl.dump"
	# the CRLF form of a versions dump
	sed 's/$/\r/' "$TMP/pv.dump" >"$TMP/pvcrlf.dump"
	expect_rc 0 "load a versions dump with CRLF" "$MRTX" load "$D" pvc "$TMP/pvcrlf.dump"
	# versions out of order
	printf 'mrtx-dump 2\ntable p\nfamily f 3:0:0\nversions\ncells\nr f:q 5 a\nr f:q 7 b\nend 2\n' >"$TMP/ord.dump"
	expect_err 1 "line 7: a version at timestamp 7 after one at 5" "versions out of order" \
		"$MRTX" load "$D" ord "$TMP/ord.dump"
	printf 'mrtx-dump 2\ntable p\nfamily f 3:0:0\nversions\ncells\nr f:q a\nend 1\n' >"$TMP/nots.dump"
	expect_err 1 "line 6: a cell line of a dump with versions is ROW FAMILY:QUALIFIER TS VALUE" \
		"a versions dump's cell line without TS" "$MRTX" load "$D" ord "$TMP/nots.dump"
}

finish
