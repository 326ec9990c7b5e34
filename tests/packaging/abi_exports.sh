#!/usr/bin/env bash
# abi_exports.sh - the shared library exports exactly the functions that
# include/mrtx.h declares: none missing (a public function the version
# script hid), none extra (an internal helper leaking into the ABI).
#
#   usage: abi_exports.sh PATH/TO/libmrtx.so PATH/TO/mrtx.h
set -euo pipefail
lib=${1:?usage: abi_exports.sh LIB HEADER}
hdr=${2:?usage: abi_exports.sh LIB HEADER}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# defined dynamic symbols, without version suffix and the version node itself
nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
	grep -v '^MRTX_[0-9]*$' | sort -u >"$tmp/exported"
# function names declared in the header: code lines (not comment lines)
# where an mrtx_ name is followed by "(", i.e. a declaration
grep -vE '^[[:space:]]*(\*|/\*|//)' "$hdr" |
	grep -oE '\bmrtx_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u >"$tmp/declared"

fail=0
if [ ! -s "$tmp/declared" ]; then
	echo "no function declarations found in $hdr"
	exit 1
fi
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
if [ -n "$extra" ]; then
	echo "exported but not declared in $(basename "$hdr"):"
	echo "$extra" | sed 's/^/  /'
	fail=1
fi
if [ -n "$missing" ]; then
	echo "declared in $(basename "$hdr") but not exported:"
	echo "$missing" | sed 's/^/  /'
	fail=1
fi
echo "$(wc -l <"$tmp/exported") symbols exported, $(wc -l <"$tmp/declared") declared"
exit $fail
