#!/usr/bin/env bash
# cli_values.sh - values in and out of the real `mrtx` binary: put from a
# file or standard input (binary, large, too large), get --raw and --json
# (the lossless JSON form of bytes), scan --json and --count, delrow, and
# composite row keys (--key FORMAT) printed and given, with every bad input.
#
# usage: cli_values.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
#
# Store-agnostic: with MRTX_TEST_STORE=rados and MRTX_TEST_RADOS_CONF
# (tests/rados/rados_suite.sh sets both) every store is a RADOS store.
set -u
# pyjson is often the last command of a pipeline: run it in this shell, so its
# ok/bad count (job control is off in a script, as lastpipe needs)
shopt -s lastpipe
NAME=val
. "$(dirname "$0")/../support/clilib.sh"

# pyjson DESC PYTHON-EXPR < INPUT : the expression must hold over
#   d     the parsed input (one JSON document), or
#   L     the list of its lines parsed one by one (JSON lines)
#   dec() a byte string in the tool's JSON form back to bytes
#   F()   the bytes of a file
pyjson() {
	local desc=$1 expr=$2
	if "$PY" -c "import base64,json,sys
def dec(v):
    if isinstance(v, str):
        return v.encode('utf-8')
    assert isinstance(v, dict) and list(v) == ['base64'], v
    return base64.b64decode(v['base64'], validate=True)
def F(p):
    return open(p, 'rb').read()
raw = sys.stdin.read()
L = [json.loads(x) for x in raw.splitlines()]
d = json.loads(raw) if len(L) == 1 else None
sys.exit(0 if ($expr) else 1)"; then ok; else bad "$desc"; fi
}

# bytes OCTAL-OR-HEX-PRINTF-FORMAT FILE : write exact bytes
bytes() { printf "$1" >"$2"; }

S=$(store s)
expect_rc 0 "create-table" "$MRTX" create-table "$S" t f g
expect_rc 0 "delrow --help" "$MRTX" delrow --help

# ------------------------------------------------ put from stdin and files
# every byte value, NUL and 0xff included
"$PY" -c "import sys; sys.stdout.buffer.write(bytes(range(256)) + b'\0\xff\0')" >"$TMP/all"
expect_rc 0 "put - (stdin, all bytes)" "$MRTX" put "$S" t r1 f:bin - <"$TMP/all"
"$MRTX" get "$S" t r1 f:bin --raw >"$TMP/got"
same_file "get --raw after put -" "$TMP/all" "$TMP/got"
expect_rc 0 "put --file" "$MRTX" put "$S" t r2 f:bin --file "$TMP/all"
"$MRTX" get "$S" t r2 f:bin --raw >"$TMP/got"
same_file "get --raw after put --file" "$TMP/all" "$TMP/got"
expect_rc 0 "put --file - (stdin)" "$MRTX" put "$S" t r3 f:bin --file - <"$TMP/all"
"$MRTX" get "$S" t r3 f:bin --raw >"$TMP/got"
same_file "get --raw after put --file -" "$TMP/all" "$TMP/got"
expect_rc 0 "put -- - (stdin after --)" "$MRTX" put "$S" t r4 f:bin -- - <"$TMP/all"
"$MRTX" get "$S" t r4 f:bin --raw >"$TMP/got"
same_file "get --raw after put -- -" "$TMP/all" "$TMP/got"
# the escaped text output agrees with the bytes
printf '\0\1\376\377' | "$MRTX" put "$S" t r5 f:x - && ok || bad "put - 4 bytes"
expect_out '\x00\x01\xfe\xff' "escaped get of a binary value" "$MRTX" get "$S" t r5 f:x

# a large value (several MiB, past every buffer size) through both paths
"$PY" -c "import random,sys; r=random.Random(7); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(5*1024*1024+3)))" >"$TMP/large"
expect_rc 0 "put - large" "$MRTX" put "$S" t big f:a - <"$TMP/large"
expect_rc 0 "put --file large" "$MRTX" put "$S" t big f:b --file "$TMP/large"
"$MRTX" get "$S" t big f:a --raw >"$TMP/got"
same_file "large value via stdin" "$TMP/large" "$TMP/got"
"$MRTX" get "$S" t big f:b --raw >"$TMP/got"
same_file "large value via --file" "$TMP/large" "$TMP/got"
"$MRTX" get "$S" t big f:b --json | pyjson "large value --json round-trips" \
	"dec(d['value']) == F('$TMP/large')"

# empty value; a literal "-" is \x2d
expect_rc 0 "put - empty" "$MRTX" put "$S" t e f:x - </dev/null
"$MRTX" get "$S" t e f:x --raw >"$TMP/got"
[ -f "$TMP/got" ] && [ ! -s "$TMP/got" ] && ok || bad "empty value: get --raw not empty"
"$MRTX" get "$S" t e f:x --json | pyjson "empty value --json" "d['value'] == ''"
expect_rc 0 "put \\x2d" "$MRTX" put "$S" t dash f:x '\x2d'
expect_out "-" "one-byte value '-'" "$MRTX" get "$S" t dash f:x

# too big: refused with the limit named, nothing written
head -c $((64 * 1024 * 1024 + 1)) /dev/zero >"$TMP/huge"
expect_err 1 'standard input: .*67108864.*MRTX_MAX_VALUE' "put - over MRTX_MAX_VALUE" \
	bash -c '"$1" put "$2" t huge f:x - <"$3"' _ "$MRTX" "$S" "$TMP/huge"
expect_err 1 "$TMP/huge: .*MRTX_MAX_VALUE" "put --file over MRTX_MAX_VALUE" \
	"$MRTX" put "$S" t huge f:x --file "$TMP/huge"
rm -f "$TMP/huge"
expect_err 1 'not found' "nothing written by a too-big put" "$MRTX" get "$S" t huge f:x
# exactly the limit (MRTX_MAX_VALUE) is read whole; LMDB only: a RADOS
# cluster's own write limit (osd_max_write_size) is its configuration's
if [ "$RADOS" = 0 ]; then
	head -c $((64 * 1024 * 1024)) /dev/zero | "$MRTX" put "$S" t max f:x - && ok ||
		bad "put - of exactly MRTX_MAX_VALUE bytes"
	expect_out 67108864 "MRTX_MAX_VALUE bytes stored" \
		bash -c '"$1" get "$2" t max f:x --raw | wc -c' _ "$MRTX" "$S"
	expect_rc 0 "delrow max" "$MRTX" delrow "$S" t max
fi

# read errors name the path; argument errors are usage errors
expect_err 1 "$TMP/nope: No such file" "--file missing" \
	"$MRTX" put "$S" t r f:x --file "$TMP/nope"
expect_err 1 "$TMP: Is a directory" "--file a directory" "$MRTX" put "$S" t r f:x --file "$TMP"
if [ "$(id -u)" != 0 ]; then
	bytes 'x' "$TMP/noread" && chmod 000 "$TMP/noread"
	expect_err 1 "$TMP/noread: Permission denied" "--file unreadable" \
		"$MRTX" put "$S" t r f:x --file "$TMP/noread"
fi
expect_err 2 'expected 4 arguments, got 5' "--file and VALUE" \
	"$MRTX" put "$S" t r f:x v --file "$TMP/all"
expect_err 2 'needs a value' "--file without a path" "$MRTX" put "$S" t r f:x --file
expect_err 2 'expected 5 arguments' "put without VALUE" "$MRTX" put "$S" t r f:x
expect_err 1 'no such store' "--file read, store missing" \
	"$MRTX" put "$TMP/nostore" t r f:x --file "$TMP/all"
expect_err 1 'not found' "nothing written by failed puts" "$MRTX" get "$S" t r f:x

# ------------------------------------------------------- get --raw / --json
expect_err 2 'exclude each other' "--raw with --json" "$MRTX" get "$S" t r1 f:bin --raw --json
expect_err 2 "unknown option '--raw'" "put --raw" "$MRTX" put "$S" t r f:x v --raw
for mode in "" --raw --json; do
	expect_err 1 "t/nope f:x: not found" "get $mode of a missing cell" \
		"$MRTX" get "$S" t nope f:x $mode
done
if [ -w /dev/full ]; then
	expect_rc 1 "get --raw to a full device" bash -c '"$1" get "$2" t big f:a --raw >/dev/full' \
		_ "$MRTX" "$S"
	grep -q 'standard output' "$TMP/err" && ok || bad "write error not reported"
fi

# which byte strings are JSON text and which base64
bytes 'plain text' "$TMP/v1"
bytes 'caf\303\251 \342\202\254 \360\237\230\200 "q" \\ \000\001\n\t\177\302\205' "$TMP/v2" # UTF-8
bytes '\377' "$TMP/v3"          # not UTF-8
bytes '\300\200' "$TMP/v4"      # overlong NUL
bytes '\355\240\200' "$TMP/v5"  # a surrogate
bytes '\364\220\200\200' "$TMP/v6" # above U+10FFFF
bytes 'ab\342\202' "$TMP/v7"    # truncated sequence
bytes 'xy' "$TMP/v8"            # base64 padding: 1, 2, 0 bytes left over
for i in 1 2 3 4 5 6 7 8; do
	"$MRTX" put "$S" t 'j\x00\xff' "g:q$i\xfe" --file "$TMP/v$i" || bad "put v$i"
done
for i in 1 2; do
	"$MRTX" get "$S" t 'j\x00\xff' "g:q$i\xfe" --json | pyjson "v$i is a JSON string" \
		"isinstance(d['value'], str) and dec(d['value']) == F('$TMP/v$i')"
done
for i in 3 4 5 6 7; do
	"$MRTX" get "$S" t 'j\x00\xff' "g:q$i\xfe" --json | pyjson "v$i is base64" \
		"isinstance(d['value'], dict) and dec(d['value']) == F('$TMP/v$i')"
done
"$MRTX" get "$S" t 'j\x00\xff' 'g:q1\xfe' --json | pyjson "get --json fields" \
	"list(d) == ['row', 'family', 'qualifier', 'value'] and dec(d['row']) == b'j\\0\\xff' and d['family'] == 'g' and dec(d['qualifier']) == b'q1\\xfe'"
# control characters are escaped, never raw, in the JSON text
"$MRTX" get "$S" t 'j\x00\xff' 'g:q2\xfe' --json | LC_ALL=C grep -q $'[\x01-\x1f\x7f]' &&
	bad "raw control character in JSON output" || ok

# ------------------------------------------------------- scan --json, --count
expect_rc 0 "scan --json" "$MRTX" scan "$S" t --json
pyjson "scan --json: JSON lines, one per cell, bytes round-trip" \
	"len(L) == 17 and all(list(x) == ['row', 'family', 'qualifier', 'value'] for x in L) and any(dec(x['row']) == b'r1' and dec(x['value']) == F('$TMP/all') for x in L) and any(dec(x['row']) == b'j\\0\\xff' and dec(x['qualifier']) == b'q8\\xfe' and dec(x['value']) == b'xy' for x in L)" <"$TMP/out"
expect_out "" "scan --json of an empty range" "$MRTX" scan "$S" t --json --start x --end y
expect_out 17 "scan --count" "$MRTX" scan "$S" t --count
expect_out 4 "scan --count [r1, r5)" "$MRTX" scan "$S" t --count --start r1 --end r5
expect_out 2 "scan --count [big, dash)" "$MRTX" scan "$S" t --count --start big --end dash
expect_out 8 "scan --count --family g" "$MRTX" scan "$S" t --count --family g
expect_out 2 "scan --count --limit 1 --reverse" "$MRTX" scan "$S" t --count --limit 1 --reverse \
	--end dash
expect_out 0 "scan --count of an empty range" "$MRTX" scan "$S" t --count --start x --end y
"$MRTX" scan "$S" t --count --json | pyjson "scan --count --json" "d == {'cells': 17, 'rows': 9}"
"$MRTX" scan "$S" t --count --json --start r1 --end r5 | pyjson "scan --count --json on a range" \
	"d == {'cells': 4, 'rows': 4}"
expect_err 1 'table' "scan --count of a missing table" "$MRTX" scan "$S" nope --count

# ------------------------------------------------------------------ delrow
expect_rc 0 "put r1 g:a" "$MRTX" put "$S" t r1 g:a 1
expect_rc 0 "put r1 g:b" "$MRTX" put "$S" t r1 g:b 2
expect_out 3 "r1 has 3 cells" "$MRTX" scan "$S" t --count --start r1 --end r2
expect_rc 0 "delrow" "$MRTX" delrow "$S" t r1
expect_out 0 "delrow removed every cell" "$MRTX" scan "$S" t --count --start r1 --end r2
expect_out 3 "delrow kept the other rows" "$MRTX" scan "$S" t --count --start r2 --end r5
expect_rc 0 "delrow of a missing row" "$MRTX" delrow "$S" t r1
expect_rc 0 "delrow with escapes" "$MRTX" delrow "$S" t 'j\x00\xff'
expect_out 0 "escaped row deleted" "$MRTX" scan "$S" t --count --family g
expect_err 2 'expected 3 arguments' "delrow with a column" "$MRTX" delrow "$S" t r2 f:bin
expect_err 2 'expected 3 arguments' "delrow without a row" "$MRTX" delrow "$S" t
expect_err 1 'nope' "delrow on a missing table" "$MRTX" delrow "$S" nope r2
expect_err 2 'bad escape' "delrow with a bad escape" "$MRTX" delrow "$S" t 'r\q'

# ------------------------------------------------------------ --key FORMAT
K=$(store keys)
"$MRTX" create-table "$K" u f >/dev/null || bad "create-table keys"
KF=u64,str,i32
n=0
for row in '42,alice,-7' '(42, "bo,b", 3)' ' 7 , x\x00y , 0 ' '42,alice,-2147483648' \
	'18446744073709551615,"",2147483647'; do
	n=$((n + 1))
	expect_rc 0 "put --key $row" "$MRTX" put "$K" u "$row" f:q "v$n" --key $KF
done
expect_rc 0 "put a plain row" "$MRTX" put "$K" u plain f:q v
expect_rc 0 "scan --key" "$MRTX" scan "$K" u --key $KF
cat >"$TMP/want" <<'EOF'
(7, "x\x00y", 0) f:q v3
(42, "alice", -2147483648) f:q v4
(42, "alice", -7) f:q v1
(42, "bo,b", 3) f:q v2
plain f:q v
(18446744073709551615, "", 2147483647) f:q v5
EOF
same_file "scan --key prints keys in tuple order" "$TMP/want" "$TMP/out"
grep -q 'note: 1 row is not of the form --key u64,str,i32 (printed escaped)' "$TMP/err" && ok ||
	bad "scan --key: no note about the plain row: $(cat "$TMP/err")"
"$MRTX" scan "$K" u --key $KF --json 2>"$TMP/err" | pyjson "scan --key --json" \
	"[x.get('key') for x in L] == [[7, 'x\\0y', 0], [42, 'alice', -2147483648], [42, 'alice', -7], [42, 'bo,b', 3], None, [18446744073709551615, '', 2147483647]] and list(L[0]) == ['row', 'key', 'family', 'qualifier', 'value']"
grep -q '"key" is null' "$TMP/err" && ok || bad "scan --key --json: no note"
# --start/--end: leading parts
expect_out 3 "--key prefix range [42, 43)" "$MRTX" scan "$K" u --key $KF --count --start 42 --end 43
expect_out 2 "--key prefix range [(42, alice), (42, alicf))" \
	"$MRTX" scan "$K" u --key $KF --count --start 42,alice --end 42,alicf
expect_out 1 "--key full bound" "$MRTX" scan "$K" u --key $KF --count --start '42,alice,-7' \
	--end 42,alice,-6
# get/del/delrow with --key; printed keys paste back
expect_out v1 "get --key (bare)" "$MRTX" get "$K" u 42,alice,-7 f:q --key $KF
expect_out v1 "get --key (as printed)" "$MRTX" get "$K" u '(42, "alice", -7)' f:q --key $KF
line=$("$MRTX" scan "$K" u --key $KF --start 7 --end 8 2>/dev/null)
expect_out v3 "a printed key (with a NUL) pastes back" \
	"$MRTX" get "$K" u "${line%% f:q *}" f:q --key $KF
"$MRTX" get "$K" u 42,alice,-7 f:q --key $KF --json | pyjson "get --key --json" \
	"d['key'] == [42, 'alice', -7] and list(d) == ['row', 'key', 'family', 'qualifier', 'value']"
expect_err 1 '^mrtx: get: u/\(42, "alice", 5\) f:q: not found' "get --key: missing cell named as a key" \
	"$MRTX" get "$K" u 42,alice,5 f:q --key $KF
expect_rc 0 "del --key" "$MRTX" del "$K" u '(42, "bo,b", 3)' f:q --key $KF
expect_rc 0 "delrow --key" "$MRTX" delrow "$K" u '42,alice,-7' --key $KF
expect_out 1 "del/delrow --key removed their rows" "$MRTX" scan "$K" u --key $KF --count --start 42 --end 43

# every part type, printed and given back
KA=rts,salt,fixed2,hash4,i64,u32,bytes
expect_rc 0 "put every part type" "$MRTX" put "$K" u \
	'(ts 17, salt 3, 0xabcd, 0x01020304, -9223372036854775808, 4294967295, "z")' f:all x --key $KA
expect_out '(ts 17, salt 3, 0xabcd, 0x01020304, -9223372036854775808, 4294967295, "z") f:all x' \
	"every part type printed" "$MRTX" scan "$K" u --key $KA --start 'ts 17' --end 'ts 16'
expect_out x "every part type given bare" \
	"$MRTX" get "$K" u '17,3,ABCD,01020304,-9223372036854775808,4294967295,z' f:all --key $KA
"$MRTX" scan "$K" u --key $KA --json --start 'ts 17' 2>/dev/null | pyjson "every part type as JSON" \
	"L[0]['key'] == [17, 3, 'abcd', '01020304', -9223372036854775808, 4294967295, 'z']"

# bad formats: usage errors, before the store is touched
for f in '' 'u64,,str' 'blob' 'fixed0' 'fixed' 'fixed512' 'hash33' 'hash0' 'fixed08' 'U64' 'u64,'; do
	expect_err 2 '--key: ' "bad --key '$f'" "$MRTX" scan "$K" u --key "$f"
done
expect_err 2 'more than 64 parts' "65 parts" \
	"$MRTX" scan "$K" u --key "$(printf 'u32,%.0s' $(seq 64))u32"
expect_err 2 '--key: ' "bad --key on put" "$MRTX" put "$K" u 1 f:q v --key u65
expect_err 2 '--key: ' "bad --key on delrow" "$MRTX" delrow "$K" u 1 --key str,
# rows that do not match the format
while IFS='|' read -r fmt row re; do
	expect_err 2 "$re" "--key $fmt row '$row'" "$MRTX" get --key "$fmt" "$K" u -- "$row" f:q
done <<'EOF'
u64,str|42|1 of the 2 parts
u64,str|42,a,b|more than the 2 parts
u64|x|is not an integer
u64|-1|is not an integer
u64|18446744073709551616|is not an integer
u64| |is not an integer
u32|4294967296|is not an integer
i32|2147483648|is not an integer
i32|-2147483649|is not an integer
i64|--1|is not an integer
u64|+1|is not an integer
u64|0x10|is not an integer
str|"abc|unterminated quote
str|(abc|without a closing
str|"a"b|expected ','
str|a\q|bad escape
fixed2|abc|two hex digits
fixed2|0xabcdef|two hex digits
fixed2|zz00|not hexadecimal
salt|256|salt bucket
rts|ts|timestamp
rts|ts -1|timestamp
EOF
expect_err 2 '1 of the 2 parts' "put --key with too few parts" "$MRTX" put "$K" u 5 f:q v --key u64,str
expect_err 2 'is not an integer' "scan --start that does not match" \
	"$MRTX" scan "$K" u --key u64 --start abc
expect_err 1 'longer than 511 bytes' "a key over MRTX_MAX_KEY" \
	"$MRTX" put "$K" u "$(head -c 600 /dev/zero | tr '\0' a)" f:q v --key str
expect_err 1 'row' "a key over MRTX_MAX_ROW (the library's limit)" \
	"$MRTX" put "$K" u "$(head -c 505 /dev/zero | tr '\0' a)" f:q v --key str
expect_out 1 "nothing written by failed --key commands" "$MRTX" scan "$K" u --count --family f \
	--start 42 --end 43 --key u64

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
