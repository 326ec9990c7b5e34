#!/usr/bin/env bash
# man_limits.sh - the limits mrtx(3) and the header's own comment state are
# the header's constants: the longest row, the key overhead a cell's older
# version adds, the qualifier that always fits beside a 256-byte row, the
# longest value, name, and the most families and tables.
#
#   usage: man_limits.sh PATH/TO/mrtx.h PATH/TO/mrtx.3
set -uo pipefail
HDR=${1:?usage: man_limits.sh PATH/TO/mrtx.h PATH/TO/mrtx.3}
MAN=${2:?usage: man_limits.sh PATH/TO/mrtx.h PATH/TO/mrtx.3}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# the value of a #define of plain unsigned numbers (and one product)
const() {
	local v
	v=$(sed -n "s/^#define $1 (\{0,1\}\([0-9u *]*\))\{0,1\}.*/\1/p" "$HDR" | tr -d 'u ')
	[ -n "$v" ] || { echo "FAIL: $1 not found in $HDR"; exit 1; }
	echo $((v))
}
key=$(const MRTX_MAX_KEY)
row=$(const MRTX_MAX_ROW)
value=$(const MRTX_MAX_VALUE)
name=$(const MRTX_MAX_NAME)
fams=$(const MRTX_MAX_FAMILIES)
tables=$(const MRTX_MAX_TABLES)
over=$((key - row))               # what a cell's older version adds to the key
qual256=$((key - 256 - over))     # the qualifier that always fits a 256-byte row
mib=$((value / 1048576))

# mrtx(3)'s LIMITS section, rendered, on one line
limits=$(groff -man -Tutf8 -rHY=0 -dAD=l -rLL=400n "$MAN" 2>/dev/null |
	sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g; s/‐/-/g; s/−/-/g' |
	sed -n '/^LIMITS/,/^[A-Z]/p' | tr -s ' \n' ' ')
[ -n "$limits" ] || { echo "FAIL: mrtx.3 has no LIMITS section"; exit 1; }
has() { # what, text
	grep -qF -- "$2" <<<"$limits" && ok || bad "mrtx.3 LIMITS: $1: no \"$2\" in: $limits"
}
has "longest row" "1 to $row bytes"
has "key limit" "$key-byte key"
has "key overhead" "+ $over +"
has "qualifier beside a 256-byte row" "up to $qual256 bytes"
has "longest value" "at most $mib MiB"
has "name length" "1 to $name"
has "families" "at most $fams families"
has "tables" "at most $tables tables"

# the header's comment states the same numbers
hdrtext=$(sed -n '/Limits (enforced/,/^ \*\/$/p' "$HDR" | tr -s ' \n*' ' ')
hhas() {
	grep -qF -- "$2" <<<"$hdrtext" && ok || bad "mrtx.h limits comment: $1: no \"$2\""
}
hhas "key overhead" "+ $over +"
hhas "qualifier beside a 256-byte row" "$qual256 bytes"
hhas "key limit" "($key,"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
