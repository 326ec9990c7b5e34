#!/usr/bin/env bash
# cli_fulldisk.sh - a full disk under the real `mrtx` binary: an LMDB store
# on a 2 MiB tmpfs, filled up.
#   - `mrtx load` reports exactly which batches landed: "batches 1-K (rows
#     1-R, lines 5-L) committed; batch K+1 (rows .., lines ..) not written:
#     .. No space left on device", never "may or may not"; the store then
#     holds rows 1-R and no other;
#   - one `mrtx shell` (one handle): a write that does not fit fails with
#     the errno's words and the store's path, writes nothing and gets no
#     --map-size hint (the map is not what is full); reads and the commit of
#     a read-only transaction go on; once space is freed (another file on
#     the tmpfs removed) the same handle commits again, and the cell is
#     there for the next process; `mrtx check --strict` passes.
# Nothing waits on time: the shell is driven line by line through a
# coprocess, each step read back before the next.
#
# usage: cli_fulldisk.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
#
# Needs to mount a tmpfs (root): exits 77 (skipped) with a message when it
# cannot.  The mount is made in a private mount namespace when unshare(1)
# can make one (it then dies with the test, however the test ends), and is
# unmounted on every exit path.  LMDB only.
set -u
if [ -z "${MRTX_FULLDISK_NS:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
	unshare -m --propagation private true 2>/dev/null; then
	MRTX_FULLDISK_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
NAME=fulldisk
. "$(dirname "$0")/../support/clilib.sh"
case $MRTX in /*) ;; *) MRTX=$PWD/$MRTX ;; esac
unset MRTX_MAP_SIZE MRTX_READ_ONLY MRTX_FAILPOINTS MRTX_TWO_PHASE MRTX_HISTORY
export HOME=$TMP/home
mkdir -p "$HOME"

if [ "$RADOS" = 1 ]; then
	echo "SKIP: a full disk is an LMDB matter" >&2
	exit 77
fi
MNT=$TMP/mnt
mkdir "$MNT"
if ! mount -t tmpfs -o size=2m tmpfs "$MNT" 2>"$TMP/mount.err"; then
	echo "SKIP: cannot mount a 2 MiB tmpfs ($(head -c 200 "$TMP/mount.err"));" \
		"run as root to test a full disk" >&2
	exit 77
fi
SHELL_PID=
cleanup() {
	if [ -n "$SHELL_PID" ]; then
		kill "$SHELL_PID" 2>/dev/null
		wait "$SHELL_PID" 2>/dev/null
	fi
	umount "$MNT" 2>/dev/null || umount -l "$MNT"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

S=$MNT/s
expect_rc 0 "create-table" "$MRTX" create-table "$S" t f
# what the shell prints to end each step (upto, below)
expect_rc 0 "put the mark" "$MRTX" put "$S" t mark f:q @mark@
# room the shell's write gets once this is removed
head -c 393216 /dev/zero >"$MNT/filler"

# ------------------------------------------------------------------ load
# 20000 rows of 200 bytes (4 MiB): far more than fits
awk 'BEGIN {
	print "mrtx-dump 1"; print "table t"; print "family f"; print "cells"
	v = sprintf("%200s", ""); gsub(/ /, "v", v)
	for (i = 1; i <= 20000; i++) printf "r%06d f:q %s\n", i, v
	print "end 20000"
}' >"$TMP/big.dump"
"$MRTX" load "$S" t "$TMP/big.dump" --batch 500 >"$TMP/out" 2>"$TMP/err"
rc=$?
msg=$(cat "$TMP/err")
[ "$rc" = 1 ] && ok || bad "load onto a full disk: exit $rc, want 1"
[ ! -s "$TMP/out" ] && ok || bad "load onto a full disk printed: $(head -c 200 "$TMP/out")"
re='^mrtx: load: batches 1-([0-9]+) \(rows 1-([0-9]+), lines 5-([0-9]+)\) committed; batch ([0-9]+) \(rows ([0-9]+)-([0-9]+), lines ([0-9]+)-([0-9]+)\) not written: store [^ ]*/mnt/s: commit: No space left on device'
if [[ $msg =~ $re ]]; then
	ok
	K=${BASH_REMATCH[1]} R=${BASH_REMATCH[2]}
	[ "$R" = $((K * 500)) ] && [ "${BASH_REMATCH[3]}" = $((R + 4)) ] &&
		[ "${BASH_REMATCH[4]}" = $((K + 1)) ] && [ "${BASH_REMATCH[5]}" = $((R + 1)) ] &&
		[ "${BASH_REMATCH[6]}" = $((R + 500)) ] && [ "${BASH_REMATCH[7]}" = $((R + 5)) ] &&
		[ "${BASH_REMATCH[8]}" = $((R + 504)) ] && ok ||
		bad "load's batch, row and line numbers do not add up: $msg"
else
	K=0 R=0
	bad "load onto a full disk: not the report of what landed: $msg"
fi
grep -q "may or may not" <<<"$msg" && bad "load: a failed write is reported unsure: $msg" || ok
[ "$(wc -l <"$TMP/err")" = 1 ] && ok || bad "load: more than one line: $msg"
# exactly the committed rows are in
expect_out $((R + 1)) "the store holds the committed rows (and the mark)" \
	"$MRTX" scan "$S" t --count
last=$(printf 'r%06d' "$R") next=$(printf 'r%06d' $((R + 1)))
expect_rc 0 "the last committed row is in" "$MRTX" get "$S" t "$last" f:q
expect_rc 1 "the first row not written is not" "$MRTX" get "$S" t "$next" f:q

# ----------------------------------------------------------------- shell
# One handle through every step: say LINE sends a line; upto reads the
# shell's output (stdout and stderr) up to the "@mark@" that `get t mark
# f:q` prints, into $got.  (The shell answers every line in order; the read
# timeout only keeps a broken shell from hanging the test.)
coproc SH { exec "$MRTX" shell "$S" 2>&1; }
SHELL_PID=$SH_PID
say() { printf '%s\n' "$1" >&"${SH[1]}"; }
upto() {
	local line
	say 'get t mark f:q'
	got=
	while IFS= read -r -t 300 line <&"${SH[0]}"; do
		[ "$line" = "@mark@" ] && return 0
		got+=$line$'\n'
	done
	bad "the shell ended or stopped answering; its output: ${got:0:300}"
	exit 1
}
big=$(head -c 300000 /dev/zero | tr '\0' b)
vals=$(printf '%200s' '' | tr ' ' v)

# a write that does not fit: the errno's words, the store, nothing written
say "put t big f:q $big"
upto
grep -q "^mrtx: shell: line 1: put: store [^ ]*/mnt/s: commit: No space left on device" <<<"$got" &&
	ok || bad "a write onto the full disk: $got"
grep -q "(nothing written)" <<<"$got" && ok || bad "the failed write says nothing was written: $got"
grep -q -- "--map-size" <<<"$got" && bad "a full disk gets the map's hint: $got" || ok
say 'get t big f:q'
upto
[ "$got" = "(not found)"$'\n' ] && ok || bad "the failed write left something: $got"

# reads go on, and a read-only transaction commits
say "get t $last f:q"
upto
[ "$got" = "$vals"$'\n' ] && ok || bad "a read after the failed write: $got"
say begin
say 'get t r000001 f:q'
say "scan t $last"
say commit
upto
[ "$got" = "$vals"$'\n'"$last f:q $vals"$'\n' ] && ok ||
	bad "a read-only transaction after the failed write: $got"

# space freed: the same handle commits again
rm "$MNT/filler"
say "put t big f:q $big"
upto
[ -z "$got" ] && ok || bad "the write once space was freed: $got"
say 'get t big f:q'
upto
[ "$got" = "$big"$'\n' ] && ok || bad "the cell written once space was freed: ${got:0:100}"
say quit
wait "$SHELL_PID"
rc=$?
SHELL_PID=
[ "$rc" = 1 ] && ok || bad "the shell's exit status: $rc, want 1 (a command failed)"

expect_out "$big" "the next process reads the cell" "$MRTX" get "$S" t big f:q
expect_rc 0 "check --strict after the full disk" "$MRTX" check "$S" --strict
expect_out $((R + 2)) "the rows: the mark, the load's and the shell's" \
	"$MRTX" scan "$S" t --count
finish
