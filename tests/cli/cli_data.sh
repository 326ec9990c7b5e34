#!/usr/bin/env bash
# cli_data.sh - schema and data management of the real `mrtx` binary:
# tables and describe, dump and load (any bytes round-trip, batches, every
# bad input named by its line), and backup of a live store (transactions
# abandoned or in flight settled in the copy, a writer process running
# throughout, refused destinations).
#
# usage: cli_data.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
#
# Store-agnostic: with MRTX_TEST_STORE=rados and MRTX_TEST_RADOS_CONF
# (tests/rados/rados_suite.sh sets both) every store is a RADOS store; backup is
# then checked to refuse with its documented message.
set -u
NAME=data
. "$(dirname "$0")/../support/clilib.sh"
# Writers are stopped between the steps of the two-phase protocol and their
# locks inspected: every mrtx here commits with it (DESIGN §5.2; LMDB's
# one-phase commits, §5.3, are tested in test_txn and cli_chaos).
export MRTX_TWO_PHASE=1

WRITER_PID=
cleanup() {
	[ -n "$WRITER_PID" ] && kill "$WRITER_PID" 2>/dev/null && wait "$WRITER_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# expect_err WANT-RC REGEX DESC CMD... : exit WANT-RC and stderr matches REGEX
# (stdin: whatever the caller redirects)
expect_err() {
	local want=$1 re=$2 desc=$3 got
	shift 3
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	if [ "$got" -eq "$want" ] && grep -qE -- "$re" "$TMP/err"; then
		ok
	else
		bad "$desc: exit $got (want $want), stderr: $(head -c 300 "$TMP/err")"
	fi
}

# ------------------------------------------------------- tables, describe
S=$(store s)
# (only create-table and load make a store, on RADOS too)
if [ "$RADOS" = 0 ]; then
	expect_err 1 'no such store directory' "tables of a missing store" "$MRTX" tables "$S"
	[ ! -e "$S" ] && ok || bad "tables created a store"
else
	for i in 1 2; do
		expect_err 1 'no mrtx store here' "tables of a missing store ($i)" "$MRTX" tables "$S"
	done
	expect_err 1 'no mrtx store here' "get on a missing store" "$MRTX" get "$S" ta r f:q
fi
expect_rc 0 "create-table ta" "$MRTX" create-table "$S" ta f g
expect_rc 0 "create-table tb" "$MRTX" create-table "$S" tb f
expect_out "ta
tb" "tables" "$MRTX" tables "$S"
"$MRTX" tables "$S" --json >"$TMP/j" 2>&1 &&
	"$PY" -c "import json,sys; d=json.load(open(sys.argv[1]))
assert d == [{'name':'ta','families':['f','g']},{'name':'tb','families':['f']}], d" "$TMP/j" &&
	ok || bad "tables --json"
expect_out "table:    ta
families: f g
family:   f VERSIONS=1 MIN_VERSIONS=0 TTL=FOREVER
family:   g VERSIONS=1 MIN_VERSIONS=0 TTL=FOREVER" "describe" "$MRTX" describe "$S" ta
"$MRTX" describe "$S" tb --json >"$TMP/j" 2>&1 &&
	"$PY" -c "import json,sys; d=json.load(open(sys.argv[1]))
assert d['table'] == 'tb' and d['families'] == ['f'], d" "$TMP/j" && ok || bad "describe --json"
expect_err 1 "no table 'nope'" "describe a missing table" "$MRTX" describe "$S" nope
expect_err 2 'usage' "describe without a table" "$MRTX" describe "$S"
expect_err 2 'usage' "tables with an extra argument" "$MRTX" tables "$S" extra

# ------------------------------------------------ dump and load: any bytes
# NUL, newline, CR, space, backslash, high bytes, an empty value and an
# empty qualifier, a row that is all escapes, a large random value
expect_rc 0 "put binary" "$MRTX" put "$S" ta 'r\x00\x0a1' 'f:q \x01\x0d' 'v\xff\\ x\x00'
expect_rc 0 "put empty value" "$MRTX" put "$S" ta r2 g:q ''
expect_rc 0 "put empty qualifier" "$MRTX" put "$S" ta r2 'g:' 'empty qualifier'
expect_rc 0 "put a qualifier with colons" "$MRTX" put "$S" ta r2 'f:x:y:' 'colons'
expect_rc 0 "put escaped row" "$MRTX" put "$S" ta '\x5c\x00\xff\x20' f:a '\x0a\x0a'
"$PY" -c "import random,sys; r=random.Random(11); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(1024*1024+5)))" >"$TMP/large"
expect_rc 0 "put a large value" "$MRTX" put "$S" ta big f:blob --file "$TMP/large"
expect_rc 0 "dump ta to a file" "$MRTX" dump "$S" ta "$TMP/ta.dump"
"$MRTX" dump "$S" ta >"$TMP/ta.stdout" 2>"$TMP/err" && ok || bad "dump ta to stdout"
same_file "dump to a file and to stdout agree" "$TMP/ta.dump" "$TMP/ta.stdout"
# the documented shape: header, one printable line per cell, end N
"$PY" - "$TMP/ta.dump" <<'EOF' && ok || bad "dump shape (header, printable lines, end 6)"
import sys
b = open(sys.argv[1], 'rb').read()
assert b.endswith(b'\n')
lines = b[:-1].split(b'\n')
assert lines[:5] == [b'mrtx-dump 1', b'table ta', b'family f', b'family g', b'cells'], lines[:5]
assert lines[-1] == b'end 6', lines[-1]
for l in lines:
    assert all(0x20 <= c <= 0x7e for c in l), l
for l in lines[5:-1]:
    assert l.count(b' ') == 2, l
EOF

T=$(store t)
expect_out "6 cells in 4 rows loaded into ta (1 transactions)" "load into a new store" \
	"$MRTX" load "$T" ta "$TMP/ta.dump"
expect_rc 0 "dump the loaded table" "$MRTX" dump "$T" ta "$TMP/ta2.dump"
same_file "dump, load, dump round-trips" "$TMP/ta.dump" "$TMP/ta2.dump"
"$MRTX" get "$T" ta big f:blob --raw >"$TMP/got" 2>"$TMP/err" && ok || bad "get the large value"
same_file "the large value round-trips" "$TMP/large" "$TMP/got"
expect_out 'v\xff\\ x\x00' "the binary cell round-trips" "$MRTX" get "$T" ta 'r\x00\x0a1' 'f:q \x01\x0d'
expect_out '' "the empty value round-trips" "$MRTX" get "$T" ta r2 g:q
expect_out colons "a qualifier with colons round-trips" "$MRTX" get "$T" ta r2 'f:x:y:'
# stdin, another table name, batches of one row
expect_out "6 cells in 4 rows loaded into copy (4 transactions)" "load from stdin, --batch 1" \
	"$MRTX" load "$T" copy - --batch 1 <"$TMP/ta.dump"
expect_rc 0 "dump copy" "$MRTX" dump "$T" copy "$TMP/copy.dump"
sed '2s/^table ta$/table copy/' "$TMP/ta.dump" >"$TMP/want"
same_file "load into another table name" "$TMP/want" "$TMP/copy.dump"
# loading again only puts the same cells: the same dump
expect_rc 0 "load twice" "$MRTX" load "$T" ta "$TMP/ta.dump"
expect_rc 0 "dump after loading twice" "$MRTX" dump "$T" ta "$TMP/ta3.dump"
same_file "a load run twice changes nothing" "$TMP/ta.dump" "$TMP/ta3.dump"
# an empty table
expect_rc 0 "create-table empty" "$MRTX" create-table "$S" empty f
expect_out "mrtx-dump 1
table empty
family f
cells
end 0" "dump of an empty table" "$MRTX" dump "$S" empty
# uppercase hex escapes are read too
printf 'mrtx-dump 1\ntable x\nfamily f\ncells\nr\\x4A f:q \\xFF\\x5C\nend 1\n' >"$TMP/upper.dump"
expect_rc 0 "load uppercase escapes" "$MRTX" load "$T" upper "$TMP/upper.dump"
expect_out '\xff\\' "uppercase escapes decoded" "$MRTX" get "$T" upper rJ f:q

# ---------------------------------------------------- dump: bad arguments
expect_err 1 "no table 'nope'" "dump a missing table" "$MRTX" dump "$S" nope
echo keep >"$TMP/keep"
expect_err 1 "no table 'nope'" "dump a missing table to a file" "$MRTX" dump "$S" nope "$TMP/keep"
expect_out keep "a failed dump leaves FILE alone" cat "$TMP/keep"
expect_err 1 '' "dump into a missing directory" "$MRTX" dump "$S" ta "$TMP/no/such/file"
expect_err 2 'usage' "dump without a table" "$MRTX" dump "$S"
if [ "$RADOS" = 0 ]; then
	expect_err 1 'no such store directory' "dump of a missing store" "$MRTX" dump "$TMP/missing" ta
	[ ! -e "$TMP/missing" ] && ok || bad "dump created a store"
	mkdir "$TMP/notstore"
	expect_err 1 'not an mrtx store' "dump of a directory that is not a store" \
		"$MRTX" dump "$TMP/notstore" ta
fi

# ------------------------------------------------ load: every bad input
# good header for the cases below
hdr='mrtx-dump 1\ntable x\nfamily f\ncells\n'
# bad_load NAME REGEX PRINTF-FORMAT : loading the bytes fails naming REGEX,
# and writes nothing (table bad_NAME has no cell afterwards)
bad_load() {
	local name=$1 re=$2
	printf "$3" >"$TMP/bad.dump"
	expect_err 1 "$re" "load: $name" "$MRTX" load "$T" "bad_$name" "$TMP/bad.dump"
	if "$MRTX" scan "$T" "bad_$name" --count >"$TMP/cnt" 2>/dev/null &&
		[ "$(cat "$TMP/cnt")" != 0 ]; then
		bad "load: $name wrote cells: $(cat "$TMP/cnt")"
	else
		ok
	fi
}
bad_load empty 'empty' ''
bad_load magic 'line 1: not an mrtx dump' 'hello\n'
bad_load version 'line 1: dump format version 3' 'mrtx-dump 3\ntable x\n'
bad_load notable 'line 2: expected .table NAME.' 'mrtx-dump 1\nfamily f\n'
bad_load nofamily 'line 3: the header declares no family' 'mrtx-dump 1\ntable x\ncells\nend 0\n'
bad_load twice "line 4: family 'f' declared twice" 'mrtx-dump 1\ntable x\nfamily f\nfamily f\n'
bad_load escape 'line 5: .*escape' "${hdr}"'r f:q \\xZZ\nend 1\n'
bad_load backslash 'line 5: .*escape' "${hdr}"'r f:q a\\\nend 1\n'
bad_load fields 'line 6: ' "${hdr}"'r f:q v\nr f:q\nend 2\n'
bad_load extra 'line 5: ' "${hdr}"'r f:q v w\nend 1\n'
bad_load colon 'line 5: ' "${hdr}"'r fq v\nend 1\n'
bad_load undeclared "line 5: family 'g' is not in the header" "${hdr}"'r g:q v\nend 1\n'
bad_load cr 'line 5: raw byte 0x0d' "${hdr}"'r f:q v\rw\nend 1\n'  # (CR LF ends load)
bad_load rawbyte 'line 5: ' "${hdr}"'r f:q v\377\nend 1\n'
bad_load nul 'line 5: ' "${hdr}"'r f:q v\000w\nend 1\n'
bad_load emptyrow 'line 5: ' "${hdr}"' f:q v\nend 1\n'
bad_load count "line 6: 'end 2', but 1 cell lines were read" "${hdr}"'r f:q v\nend 2\n'
bad_load noend 'stops at line 5, before the .end. line' "${hdr}"'r f:q v\n'
bad_load nonewline 'line 6: no newline at its end' "${hdr}"'r f:q v\nend 1'
bad_load after "line 7: data after the 'end' line" "${hdr}"'r f:q v\nend 1\nmore\n'
bad_load keyword 'line 5: ' "${hdr}"'family g\nend 0\n'
expect_err 1 'No such file' "load a missing file" "$MRTX" load "$T" x "$TMP/no-such-dump"
if [ "$RADOS" = 0 ]; then
	# the store is made only once the header is good
	printf 'mrtx-dump 1\ntable x\nfamily f\nfamily f\n' >"$TMP/bad.dump"
	expect_err 1 'line 4: ' "load a bad header into a missing store" \
		"$MRTX" load "$TMP/newstore" x "$TMP/bad.dump"
	[ ! -e "$TMP/newstore" ] && ok || bad "a load that failed in its header made the store"
	printf 'mrtx-dump 1\ntable x\nfamily f\ncells\nr f:q v\nend 1\n' >"$TMP/good.dump"
	expect_rc 0 "load into a missing store makes it" "$MRTX" load "$TMP/newstore" x "$TMP/good.dump"
	expect_out v "the new store holds the cell" "$MRTX" get "$TMP/newstore" x r f:q
fi
expect_err 2 'usage|--batch' "load --batch not a number" "$MRTX" load "$T" x "$TMP/ta.dump" --batch x
# an existing table without a family of the dump: refused, nothing written
expect_rc 0 "create-table only_f" "$MRTX" create-table "$T" only_f f
expect_err 1 "table 'only_f' has no family 'g'.*nothing was written" \
	"load into a table lacking a family" "$MRTX" load "$T" only_f "$TMP/ta.dump"
expect_out 0 "nothing loaded into only_f" "$MRTX" scan "$T" only_f --count

# batches: with --batch 1 a bad line after three good rows leaves the
# first two committed (the third row's batch was not known to be complete)
# and says so; --batch 0 (one transaction) leaves nothing
printf "${hdr}"'r1 f:q 1\nr2 f:q 2\nr3 f:q 3\nr4 f:q \\x4\nend 4\n' >"$TMP/late.dump"
expect_err 1 'line 8: .*; batches 1-2 \(rows 1-2, lines 5-6\) committed; batch 3 \(row 3, line 7\) not written$' \
	"a late bad line, --batch 1" "$MRTX" load "$T" late1 "$TMP/late.dump" --batch 1
expect_out 2 "--batch 1: the rows of the earlier batches are in" "$MRTX" scan "$T" late1 --count
expect_err 1 "line 8: .*nothing was written but table 'late0', which this load created" \
	"a late bad line, --batch 0: says the table it made is left" \
	"$MRTX" load "$T" late0 "$TMP/late.dump" --batch 0
expect_out 0 "--batch 0: nothing is in" "$MRTX" scan "$T" late0 --count
expect_err 1 "line 8: .*nothing was written$" "a late bad line into that table: nothing" \
	"$MRTX" load "$T" late0 "$TMP/late.dump" --batch 0
# a row's cells never straddle two batches
printf "${hdr}"'r1 f:a 1\nr1 f:b 2\nr2 f:a 3\nend 3\n' >"$TMP/rows.dump"
expect_out "3 cells in 2 rows loaded into rows (2 transactions)" "batches cut at rows" \
	"$MRTX" load "$T" rows "$TMP/rows.dump" --batch 1

# ------------------------------------------------------- versions in the tool
# get --versions, scan --versions (newest first, with their commit
# timestamps), scan --at the first one, and a refused --versions 0.
V=$(store v)
expect_rc 0 "create-table with 3 versions" "$MRTX" create-table "$V" vt h:3
expect_rc 0 "put v1" "$MRTX" put "$V" vt r h:q v1
expect_rc 0 "put v2" "$MRTX" put "$V" vt r h:q v2
ts1=$("$MRTX" get "$V" vt r h:q --versions 5 2>/dev/null | sed -n 2p | cut -d' ' -f1)
ts2=$("$MRTX" get "$V" vt r h:q --versions 5 2>/dev/null | sed -n 1p | cut -d' ' -f1)
if [ -n "$ts1" ] && [ -n "$ts2" ] && [ "$ts2" -gt "$ts1" ] 2>/dev/null; then ok; else
	bad "get --versions: timestamps '$ts2' '$ts1'"
fi
expect_out "r h:q $ts2 v2
r h:q $ts1 v1" "scan --versions 5" "$MRTX" scan "$V" vt --versions 5
expect_out "r h:q $ts2 v2" "scan --versions 1" "$MRTX" scan "$V" vt --versions 1
expect_out "r h:q v1" "scan --at the first" "$MRTX" scan "$V" vt --at "$ts1"
expect_out '{"row":"r","family":"h","qualifier":"q","ts":'"$ts1"',"value":"v1"}' \
	"scan --versions --json --at" "$MRTX" scan "$V" vt --versions 2 --json --at "$ts1"
expect_err 2 'versions: 1 to' "scan --versions 0" "$MRTX" scan "$V" vt --versions 0
# a store of this format: the upgrade has nothing to do, and changes nothing
if [ "$RADOS" = 1 ]; then FMT="4 (0 cells"; else FMT="8 (0 records"; fi
expect_out "$V: format $FMT converted)" "upgrade of a current store" "$MRTX" upgrade "$V"
expect_out "r h:q v2" "scan after the upgrade" "$MRTX" scan "$V" vt

# ------------------------------------------------------------------ backup
if [ "$RADOS" = 1 ]; then
	expect_err 1 'RADOS store: backup is not supported' "backup of a RADOS store" \
		"$MRTX" backup "$S" "$TMP/rados-copy"
	[ ! -e "$TMP/rados-copy" ] && ok || bad "a refused backup created its destination"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi

B=$TMP/b
expect_rc 0 "create-table (backup source)" "$MRTX" create-table "$B" ta f
expect_rc 0 "create-table tb (backup source)" "$MRTX" create-table "$B" tb f
# txn3 TAG VALUE : one transaction writing rows TAG1, TAG2 (ta) and TAG3 (tb)
txn3() {
	printf 'put ta %s1 f:v %s\nput ta %s2 f:v %s\nput tb %s3 f:v %s\n' "$1" "$2" "$1" "$2" "$1" "$2"
}
txn3 a old | "$MRTX" txn "$B" >/dev/null && txn3 b old | "$MRTX" txn "$B" >/dev/null && ok ||
	bad "txn3 old"
# abandoned after the commit point (forward) and after the prewrites (back)
txn3 a new | MRTX_FAILPOINTS=commit.after_point=exit "$MRTX" txn "$B" >/dev/null 2>&1
txn3 b new | MRTX_FAILPOINTS=commit.after_prewrite=exit "$MRTX" txn "$B" >/dev/null 2>&1
# and alive: a writer asleep after its commit point while the backup runs
txn3 c new | MRTX_FAILPOINTS=commit.after_point=sleep:600000 "$MRTX" txn "$B" >/dev/null 2>&1 &
WRITER_PID=$!
for _ in $(seq 1 2000); do
	"$MRTX" locks "$B" --table tb 2>/dev/null | grep -q c3 && break
	sleep 0.01
done
"$MRTX" locks "$B" >"$TMP/locks" 2>&1
[ "$(grep -c PREWRITTEN "$TMP/locks")" -ge 4 ] && ok || bad "source holds the locks: $(cat "$TMP/locks")"
expect_rc 0 "backup with locks held" "$MRTX" backup "$B" "$TMP/copy1"
expect_rc 0 "check --strict on the copy" "$MRTX" check "$TMP/copy1" --strict
expect_out "" "no lock in the copy" "$MRTX" locks "$TMP/copy1"
for t in a c; do
	expect_out new "copy: $t rolled forward ($t""1)" "$MRTX" get "$TMP/copy1" ta ${t}1 f:v
	expect_out new "copy: $t rolled forward ($t""3)" "$MRTX" get "$TMP/copy1" tb ${t}3 f:v
done
expect_out old "copy: b rolled back (b1)" "$MRTX" get "$TMP/copy1" ta b1 f:v
expect_out old "copy: b rolled back (b3)" "$MRTX" get "$TMP/copy1" tb b3 f:v
# (lock.mdb and ts.shm: made by the commands run on the copy above)
[ "$(ls -A "$TMP/copy1" | grep -v -e '^lock\.mdb$' -e '^ts\.shm$')" == data.mdb ] &&
	ok || bad "copy1 holds only the store: $(ls -A "$TMP/copy1" | tr '\n' ' ')"
# the source is only read: its live writer's lock is still there
"$MRTX" locks "$B" --table tb 2>/dev/null | grep -q c3 && ok || bad "backup touched the source's locks"
kill "$WRITER_PID" 2>/dev/null
wait "$WRITER_PID" 2>/dev/null
WRITER_PID=

# refused destinations, left as they were
mkdir "$TMP/full" && echo precious >"$TMP/full/keep"
expect_err 1 'not empty' "backup into a non-empty directory" "$MRTX" backup "$B" "$TMP/full"
[ "$(ls -A "$TMP/full")" == keep ] && [ "$(cat "$TMP/full/keep")" == precious ] && ok ||
	bad "a refused backup changed the directory"
echo data >"$TMP/afile"
expect_err 1 'not a directory' "backup onto a file" "$MRTX" backup "$B" "$TMP/afile"
expect_out data "the file is untouched" cat "$TMP/afile"
expect_err 1 'not empty' "backup over an existing copy" "$MRTX" backup "$B" "$TMP/copy1"
expect_err 1 '' "backup into a missing parent" "$MRTX" backup "$B" "$TMP/no/such/dir"
[ ! -e "$TMP/no" ] && ok || bad "a failed backup left a directory"
expect_err 1 'no such store directory' "backup of a missing store" \
	"$MRTX" backup "$TMP/missing-store" "$TMP/copy-missing"
[ ! -e "$TMP/copy-missing" ] && ok || bad "a failed backup created its destination"
expect_err 2 'usage' "backup without DEST" "$MRTX" backup "$B"
mkdir "$TMP/emptydir"
expect_rc 0 "backup into an empty directory" "$MRTX" backup "$B" "$TMP/emptydir"

# a writer process commits all the while: every transaction puts one value
# into four rows of two tables, and sleeps after its commit point, so the
# copies catch transactions half way; every copy must pass check --strict
# and hold four equal values
W=$TMP/w
expect_rc 0 "create-table (live source)" "$MRTX" create-table "$W" ta f
expect_rc 0 "create-table tb (live source)" "$MRTX" create-table "$W" tb f
mirror() {
	printf 'put ta m1 f:v %s\nput ta m2 f:v %s\nput tb m3 f:v %s\nput tb m4 f:v %s\n' "$1" "$1" "$1" "$1"
}
mirror 0 | "$MRTX" txn "$W" >/dev/null || bad "mirror 0"
(
	i=1
	while :; do
		mirror $i | MRTX_FAILPOINTS=commit.after_point=sleep:5 "$MRTX" txn "$W" >/dev/null 2>&1
		i=$((i + 1))
	done
) &
WRITER_PID=$!
for n in 1 2 3 4 5 6; do
	expect_rc 0 "backup $n under a writer" "$MRTX" backup "$W" "$TMP/live$n"
	expect_rc 0 "backup $n: check --strict" "$MRTX" check "$TMP/live$n" --strict
	vals=$(for r in ta:m1 ta:m2 tb:m3 tb:m4; do
		"$MRTX" get "$TMP/live$n" "${r%%:*}" "${r#*:}" f:v 2>&1
	done | sort -u)
	if [ "$(echo "$vals" | wc -l)" -eq 1 ] && [ "$vals" -ge 0 ] 2>/dev/null; then ok; else
		bad "backup $n: the four rows disagree: $(echo $vals)"
	fi
done
kill "$WRITER_PID" 2>/dev/null
wait "$WRITER_PID" 2>/dev/null
WRITER_PID=

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
