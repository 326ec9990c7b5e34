#!/usr/bin/env bash
# cli_alter.sh - alter: a family's VERSIONS, MIN_VERSIONS and TTL changed
# on an existing table (describe shows it, reads follow it, what is not
# given stays), bad input, --drop refused, create-table's FAMILY:0
# refused; on RADOS alter says it is not supported.  Then dump and load
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
expect_err 1 "removing a family is not supported.*drop or truncate the table" \
	"alter --drop" "$MRTX" alter "$S" t g --drop
expect_err 1 "no table 'none'" "alter a missing table" "$MRTX" alter "$S" none f --versions 2

if [ "$RADOS" = 1 ]; then
	expect_err 1 "not supported on a RADOS store" "alter on RADOS" \
		"$MRTX" alter "$S" t f --versions 1
else
	expect_err 1 "table 't' has no family 'zz'" "alter a missing family" \
		"$MRTX" alter "$S" t zz --versions 2
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
fi

finish
