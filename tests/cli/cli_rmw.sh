#!/usr/bin/env bash
# cli_rmw.sh - what the tool offers an HBase shell user beyond put/get:
# whole-row get, incr, append, check-and-put, the script language's check
# (a conditional transfer is atomic: it rolls back whole, and a concurrent
# change makes it fail, never half-applied), scan options in scripts and
# the shell, the one-shot scan's filters, describe's family policies, and
# messages without the library's function names.
#
# usage: cli_rmw.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=rmw
. "$(dirname "$0")/../support/clilib.sh"
unset MRTX_FAILPOINTS MRTX_HISTORY
export HOME=$TMP

S=$(store s)
"$MRTX" create-table "$S" acct bal:3 info >/dev/null || { echo "FAIL: create-table" >&2; exit 1; }
put() { "$MRTX" put "$S" acct "$@" >/dev/null || bad "put $*"; }
val() { "$MRTX" get "$S" acct "$1" "$2" 2>/dev/null || echo "(absent)"; }
same() { [ "$2" == "$3" ] && ok || bad "$1: got '$3', want '$2'"; }

# ------------------------------------------------------------ whole-row get
put alice bal:v 100
put alice info:name 'Alice A'
put alice info:x '\x01'
put alice0 bal:v 7        # a row the whole-row get of alice must not reach
put 'alice\x00' bal:v 8   # nor the row just after it
expect_out "bal:v 100
info:name Alice A
info:x \\x01" "get a whole row" "$MRTX" get "$S" acct alice
"$MRTX" get "$S" acct alice --json | "$PY" -c "import json,sys
d=[json.loads(l) for l in sys.stdin]
assert [(c['row'],c['family'],c['qualifier'],c['value']) for c in d] == [
 ('alice','bal','v','100'),('alice','info','name','Alice A'),('alice','info','x','\x01')], d" &&
	ok || bad "get a whole row --json"
expect_err 1 "acct/nobody: not found \(the row has no cells\)" "get a missing row" \
	"$MRTX" get "$S" acct nobody
expect_err 2 "--raw prints one value" "get a whole row --raw" "$MRTX" get "$S" acct alice --raw
expect_err 2 "expected 3 or 4 arguments" "get without a row" "$MRTX" get "$S" acct
put alice bal:v 101
expect_rc 0 "get a whole row --versions" "$MRTX" get "$S" acct alice --versions 2
grep -cE '^bal:v [0-9]+ 10[01]$' "$TMP/out" | grep -qx 2 && ok ||
	bad "get --versions of a row: $(cat "$TMP/out")"
put alice bal:v 100
# the longest row there is (no end bound fits past it; a cell's key does
# not fit either) reads as missing
long=$(printf 'r%.0s' $(seq 495))
expect_err 1 "not found \(the row has no cells\)" "get the longest row" \
	"$MRTX" get "$S" acct "$long"
expect_out "(not found)
bal:v 8" "txn: get a whole row" "$MRTX" txn "$S" <<<$'get acct nobody\nget acct alice\\x00'

# ------------------------------------------------------------ incr
expect_out 101 "incr" "$MRTX" incr "$S" acct alice bal:v
expect_out 91 "incr -10" "$MRTX" incr "$S" acct alice bal:v -10
expect_out 100 "incr +9" "$MRTX" incr "$S" acct alice bal:v +9
expect_out 1 "incr a missing cell" "$MRTX" incr "$S" acct carol bal:v
same "incr wrote decimal ASCII" 1 "$(val carol bal:v)"
expect_err 1 "acct/alice info:name holds 'Alice A', not a decimal integer.*nothing written" \
	"incr a text cell" "$MRTX" incr "$S" acct alice info:name
same "incr left the text cell" "Alice A" "$(val alice info:name)"
put big bal:v 9223372036854775807
expect_err 1 "9223372036854775807 \+ 1 leaves the signed 64-bit range.*nothing written" \
	"incr overflows" "$MRTX" incr "$S" acct big bal:v
put small bal:v -9223372036854775807
expect_out -9223372036854775808 "incr to the least" "$MRTX" incr "$S" acct small bal:v -1
expect_err 1 "leaves the signed 64-bit range" "incr below the least" \
	"$MRTX" incr "$S" acct small bal:v -1
same "overflow left the cell" 9223372036854775807 "$(val big bal:v)"
expect_err 2 "DELTA 'ten' is not a decimal integer" "incr bad delta" \
	"$MRTX" incr "$S" acct alice bal:v ten
expect_err 2 "outside the signed 64-bit range" "incr huge delta" \
	"$MRTX" incr "$S" acct alice bal:v 99999999999999999999
expect_out 3 "incr --key" "$MRTX" incr "$S" acct '42,x' bal:v 3 --key u64,str
expect_out 3 "incr --key wrote the composite row" "$MRTX" get "$S" acct '(42, "x")' bal:v --key u64,str
expect_err 2 "expected 4 or 5 \(with DELTA\) arguments, got 3" "incr without a column" \
	"$MRTX" incr "$S" acct alice
expect_err 1 "no table 'nope'" "incr a missing table" "$MRTX" incr "$S" nope r bal:v
# no lost update: two processes incr the same cell; every incr that
# returned 0 is counted (conflicts are retried by the command)
for p in 1 2; do
	(n=0; for i in $(seq 25); do "$MRTX" incr "$S" acct ctr bal:v >/dev/null 2>&1 && n=$((n + 1)); done
	 echo $n >"$TMP/ctr.$p") &
done
wait
same "concurrent incr: every increment kept" $(($(cat "$TMP/ctr.1") + $(cat "$TMP/ctr.2"))) \
	"$(val ctr bal:v)"
same "concurrent incr: none failed" 50 "$(val ctr bal:v)"

# ------------------------------------------------------------ append
expect_out "" "append to a missing cell" "$MRTX" append "$S" acct log info:l 'a'
expect_out "" "append" "$MRTX" append "$S" acct log info:l ' b\x00'
same "append result" 'a b\x00' "$(val log info:l)"

# ------------------------------------------------------------ check-and-put
expect_out "" "check-and-put matching" "$MRTX" check-and-put "$S" acct alice bal:v 100 90
same "check-and-put wrote" 90 "$(val alice bal:v)"
expect_err 3 "acct/alice bal:v holds '90'; expected '100'; nothing written" \
	"check-and-put differing" "$MRTX" check-and-put "$S" acct alice bal:v 100 80
same "check-and-put differing wrote nothing" 90 "$(val alice bal:v)"
expect_err 3 "acct/dave bal:v is missing; expected '1'" "check-and-put on a missing cell" \
	"$MRTX" check-and-put "$S" acct dave bal:v 1 2
expect_out "" "check-and-put --absent" "$MRTX" check-and-put "$S" acct dave bal:v --absent 5
expect_err 3 "holds '5'; expected it missing \(--absent\)" "check-and-put --absent, present" \
	"$MRTX" check-and-put "$S" acct dave bal:v --absent 6
same "check-and-put --absent wrote once" 5 "$(val dave bal:v)"
expect_err 2 "expected 6 arguments" "check-and-put without NEWVALUE" \
	"$MRTX" check-and-put "$S" acct dave bal:v 5

# ------------------------------------------------------------ txn: check
transfer() { # AMOUNT: the conditional transfer alice -> bob
	printf 'check acct alice bal:v >= %s\nincr acct alice bal:v -%s\nincr acct bob bal:v %s\n' \
		"$1" "$1" "$1"
}
put alice bal:v 30
expect_out "20
10" "txn: transfer when the balance suffices" "$MRTX" txn "$S" < <(transfer 10)
same "transfer: alice" 20 "$(val alice bal:v)"
same "transfer: bob" 10 "$(val bob bal:v)"
{ echo 'put acct alice info:note before'; transfer 25; } >"$TMP/t25"
expect_err 3 "line 2: check failed: acct/alice bal:v is 20, not >= 25; the transaction was rolled back, nothing written" \
	"txn: transfer over the balance" "$MRTX" txn "$S" "$TMP/t25"
same "refused transfer: alice" 20 "$(val alice bal:v)"
same "refused transfer: bob" 10 "$(val bob bal:v)"
same "refused transfer: the put before the check" "(absent)" "$(val alice info:note)"
for t in '== 20' '!= 0' '< 21' '<= 20' '> 19' '>= 20' present; do
	expect_rc 0 "txn: check $t holds" "$MRTX" txn "$S" <<<"check acct alice bal:v $t"
done
expect_rc 3 "txn: check absent fails" "$MRTX" txn "$S" <<<"check acct alice bal:v absent"
expect_rc 0 "txn: check of a missing cell as 0" "$MRTX" txn "$S" <<<"check acct nobody bal:v == 0"
echo "check acct alice info:name > 0" >"$TMP/script"
expect_err 1 "holds 'Alice A', not a decimal integer" "txn: check a text cell" \
	"$MRTX" txn "$S" "$TMP/script"
expect_rc 3 "txn: check-and-put failing rolls back" "$MRTX" txn "$S" \
	<<<$'put acct alice info:note x\ncheck-and-put acct alice bal:v 1 2'
same "txn: check-and-put rollback" "(absent)" "$(val alice info:note)"
expect_out "" "txn: check-and-put, append" "$MRTX" txn "$S" \
	<<<$'check-and-put acct alice bal:v 20 21\ncheck-and-put acct eve bal:v --absent 0\nappend acct log info:l !'
same "txn: check-and-put wrote" 21 "$(val alice bal:v)"
same "txn: check-and-put --absent wrote" 0 "$(val eve bal:v)"
same "txn: append wrote" 'a b\x00!' "$(val log info:l)"
echo "check acct alice bal:v => 1" >"$TMP/script"
expect_err 2 "line 1: check: unknown test '=>'" "txn: bad check" "$MRTX" txn "$S" "$TMP/script"

# A change of alice between the script's check and its commit: the commit
# fails and nothing of the script is written.  The script's input is held
# open until the other write committed (no sleeping: the order is made by
# waiting for the script's output).
put alice bal:v 30
put bob bal:v 10
coproc TX { "$MRTX" txn "$S" 2>"$TMP/tx.err"; }
printf 'check acct alice bal:v >= 30\nincr acct alice bal:v -30\n' >&"${TX[1]}"
read -r line <&"${TX[0]}"
same "race: the script's incr ran" 0 "$line"
expect_out 25 "race: another writer takes 5" "$MRTX" incr "$S" acct alice bal:v -5
printf 'incr acct bob bal:v 30\n' >&"${TX[1]}"
read -r line <&"${TX[0]}"
exec {TX[1]}>&-
wait "$TX_PID"
rc=$?
[ "$rc" -eq 1 ] && grep -q '^mrtx: txn: commit: .*nothing was written: run the script again$' "$TMP/tx.err" && ok ||
	bad "race: script exit $rc, want 1 with a commit message: $(cat "$TMP/tx.err")"
same "race: alice keeps the other write only" 25 "$(val alice bal:v)"
same "race: bob unchanged" 10 "$(val bob bal:v)"

# ------------------------------------------------------------ scan options in scripts
T=$(store t)
"$MRTX" create-table "$T" orders f g >/dev/null
for r in a b c '--reverse'; do "$MRTX" put "$T" orders -- "$r" f:q "$r" >/dev/null; done
"$MRTX" put "$T" orders b g:q gb >/dev/null
expect_out "c f:q c
b f:q b
b g:q gb" "txn: scan --reverse --limit" "$MRTX" txn "$T" <<<"scan orders --reverse --limit 2"
expect_out "b g:q gb" "txn: scan --family" "$MRTX" txn "$T" <<<"scan orders --family g"
expect_out "--reverse f:q --reverse" "txn: a quoted --reverse is a row" \
	"$MRTX" txn "$T" <<<"scan orders '--reverse' a"
expect_out "b f:q b
b g:q gb" "txn: scan --prefix" "$MRTX" txn "$T" <<<"scan orders --prefix b"
echo "scan orders --bogus" >"$TMP/script"
expect_err 2 "line 1: scan: unknown option --bogus" "txn: scan --bogus" "$MRTX" txn "$T" "$TMP/script"
out=$(printf '%s\n' 'scan orders b --limit 1' 'get orders b' 'incr orders n f:c 2' \
	'begin' 'check orders n f:c > 5' 'put orders z f:q z' 'commit' 'check orders n f:c > 5' |
	"$MRTX" shell "$T" 2>"$TMP/sh.err")
rc=$?
same "shell: scan, row get, incr" $'b f:q b\nb g:q gb\nf:q b\ng:q gb\n2' "$out"
same "shell: exit status after failed checks" 1 "$rc"
grep -q "line 5: check failed: orders/n f:c is 2, not > 5; the transaction can no longer commit" \
	"$TMP/sh.err" && grep -q "line 6: the transaction failed" "$TMP/sh.err" &&
	grep -q "line 7: the transaction had failed" "$TMP/sh.err" &&
	grep -q "line 8: check failed: orders/n f:c is 2, not > 5 (nothing written)" "$TMP/sh.err" &&
	ok || bad "shell: failed checks: $(cat "$TMP/sh.err")"
expect_err 1 "not found" "shell: the doomed txn wrote nothing" "$MRTX" get "$T" orders z f:q

# ------------------------------------------------------------ one-shot scan filters
V=$(store v)
"$MRTX" create-table "$V" t f g >/dev/null
while read -r r c v; do
	"$MRTX" put "$V" t "$r" "$c" "$v" >/dev/null || bad "put $r"
done <<'EOF2'
u1 f:a x1
u1 f:b y1
u1 g:a x2
u2 f:c x3
u\xff f:a z
v f:a x4
EOF2
expect_out "u1 f:a x1
u1 f:b y1
u1 g:a x2
u2 f:c x3
u\\xff f:a z" "scan --prefix" "$MRTX" scan "$V" t --prefix u
expect_out "u\\xff f:a z" "scan --prefix ending in 0xff" "$MRTX" scan "$V" t --prefix 'u\xff'
expect_out "u1 f:b y1
u2 f:c x3" "scan --qual-start --qual-end" "$MRTX" scan "$V" t --family f --qual-start b --qual-end d
expect_out "u1 f:a x1
u1 g:a x2
u\\xff f:a z
v f:a x4" "scan --columns" "$MRTX" scan "$V" t --columns f:a,g:a
expect_out "u1 f:a x1
u1 g:a x2
u2 f:c x3" "scan --value-prefix" "$MRTX" scan "$V" t --value-prefix x --limit 2
expect_out "u2 f:c x3
u1 f:a x1
u1 g:a x2" "scan --value-prefix --reverse --limit" "$MRTX" scan "$V" t --value-prefix x \
	--reverse --limit 2 --end v
expect_out 2 "scan --count with filters" "$MRTX" scan "$V" t --columns g:a,f:c --count
expect_err 2 "add --family F" "scan --qual-start without --family" \
	"$MRTX" scan "$V" t --qual-start a
expect_err 2 "--prefix replaces --start and --end" "scan --prefix --start" \
	"$MRTX" scan "$V" t --prefix u --start a
expect_err 2 "--columns names its families" "scan --columns --family" \
	"$MRTX" scan "$V" t --columns f:a --family f
expect_err 2 "FAMILY:QUALIFIER" "scan --columns without a colon" "$MRTX" scan "$V" t --columns fa
expect_err 2 "--columns: table 't' has no family 'h'" "scan --columns, unknown family" \
	"$MRTX" scan "$V" t --columns f:a,h:a

# ------------------------------------------------------------ describe
P=$(store p)
"$MRTX" create-table "$P" t a b:3:1:60000 >/dev/null
expect_out "table:    t
families: a b
family:   a VERSIONS=1 MIN_VERSIONS=0 TTL=FOREVER
family:   b VERSIONS=3 MIN_VERSIONS=1 TTL=60000ms" "describe: policies" "$MRTX" describe "$P" t
"$MRTX" describe "$P" t --json | pyjson "describe --json: policies" \
	"d['policies'] == [{'name':'a','versions':1,'min_versions':0,'ttl_ms':0},
	                   {'name':'b','versions':3,'min_versions':1,'ttl_ms':60000}]"

# ------------------------------------------------------------ messages
# a library failure is told without the library's function names
expect_err 1 "^mrtx: get: " "get --at in the future" "$MRTX" get "$S" acct alice bal:v --at 99999999999999999
grep -q "mrtx_[a-z_]*:" "$TMP/err" && bad "a function name in: $(cat "$TMP/err")" || ok

finish
