#!/usr/bin/env bash
# cli_damage.sh - the read commands on files that are not a sound store: an
# empty data.mdb, random bytes, a store cut short, damaged meta pages.
# Each command, plain and --read-only, must fail with exit 1 and a message
# naming what is wrong -- never exit 0, never die of a signal, never hang
# -- and leave the directory as it found it: data.mdb the same bytes, no
# lock.mdb, no ts.shm.  Then a sound store in a directory its user may not
# write: read commands work with --read-only, say so without it, and
# create nothing.  LMDB only (skipped with MRTX_TEST_STORE=rados).
#
# usage: cli_damage.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
# Checks I20 (DESIGN §10).
set -u
NAME=damage
. "$(dirname "$0")/../support/clilib.sh"

if [ "$RADOS" = 1 ]; then
	echo "skipped: LMDB files only"
	finish
fi

# a sound store of 2,000 rows (about 58 pages)
SRC=$(store src)
for i in $(seq -w 1 2000); do echo "put t row$i f:q value-$i"; done >"$TMP/in"
"$MRTX" create-table "$SRC" t f >/dev/null || bad "create-table"
"$MRTX" txn "$SRC" <"$TMP/in" >/dev/null || bad "load 2,000 rows"
expect_out 2000 "sound store counts" "$MRTX" scan "$SRC" t --count
. "$(dirname "$0")/../support/damagelib.sh"
damage_setup "$SRC"

# the words each kind's refusal must carry
declare -A WORDS=(
	[empty]='is empty \(0 bytes\): not an mrtx store'
	[random]='not an mrtx store'
	[text]='not an mrtx store'
	[short]="is truncated: $SHORT bytes"
	[metas]="is truncated: $METAS bytes"
	[magic0]='meta page 0 is damaged'
	[magic1]='meta page 1 is damaged'
	[txnid]='meta page [01] is damaged'
	[lastpg]='is truncated|meta page [01] is damaged'
	[root]='meta page [01] is damaged'
	[mapsize]='meta page [01] is damaged \(a map size past any address space\)'
	[leafroot]='root, page [0-9]+, is not the branch page'
)

# refused DESC DIR CMD...: exit 1 within 30 s, the kind's words, the
# directory unchanged
refused() {
	local desc=$1 d=$2 before rc
	shift 2
	before=$(ls -A "$d"; md5sum <"$d/data.mdb")
	timeout 30 "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	if [ "$rc" -ne 1 ]; then
		bad "$desc: exit $rc, want 1 ($(head -c 300 "$TMP/err"))"
	elif ! grep -qE -- "$RE" "$TMP/err"; then
		bad "$desc: stderr '$(head -c 300 "$TMP/err")' does not say /$RE/"
	else
		ok
	fi
	[ "$before" == "$(ls -A "$d"; md5sum <"$d/data.mdb")" ] && ok ||
		bad "$desc: the directory changed: $(ls -A "$d")"
}

for kind in empty random text short metas magic0 magic1 txnid lastpg root mapsize leafroot; do
	RE=${WORDS[$kind]}
	for ro in "" --read-only; do
		d=$(damaged "$kind")
		refused "$kind $ro scan" "$d" "$MRTX" $ro scan "$d" t
		refused "$kind $ro scan --count" "$d" "$MRTX" $ro scan "$d" t --count
		refused "$kind $ro scan --reverse" "$d" "$MRTX" $ro scan "$d" t --reverse --count
		refused "$kind $ro get" "$d" "$MRTX" $ro get "$d" t row0399 f:q
		refused "$kind $ro dump" "$d" "$MRTX" $ro dump "$d" t
		refused "$kind $ro check" "$d" "$MRTX" $ro check "$d"
		refused "$kind $ro check --strict" "$d" "$MRTX" $ro check "$d" --strict
		refused "$kind $ro locks" "$d" "$MRTX" $ro locks "$d"
		refused "$kind $ro lock" "$d" "$MRTX" $ro lock "$d" t row0399
		refused "$kind $ro stats" "$d" "$MRTX" $ro stats "$d"
		refused "$kind $ro tables" "$d" "$MRTX" $ro tables "$d"
		refused "$kind $ro describe" "$d" "$MRTX" $ro describe "$d" t
		refused "$kind $ro backup" "$d" "$MRTX" $ro backup "$d" "$TMP/bk-$kind"
		[ ! -e "$TMP/bk-$kind" ] && ok || bad "$kind $ro backup: made $TMP/bk-$kind"
	done
done

# damaged metadata: every command that opens the store refuses it, naming
# what it found, and data.mdb is left as it was (the open has made lock.mdb
# by then).  tablerec: a record damaged under its checksum (table t's family
# renamed) -- never a table without its family, nor a row read as missing;
# metalost: a record lost whole (table t's slot gone from its leaf page,
# which no seal and no key order shows) -- never a store without table t.
meta_refused() {
	local kind=$1 needle=$2 d sum ro args rc
	d=$(damaged "$kind")
	sum=$(md5sum <"$d/data.mdb")
	for ro in "" --read-only; do
		for args in "scan $d t" "get $d t row0399 f:q" "dump $d t" "check $d" \
			"check $d --strict" "locks $d" "tables $d" "describe $d t" \
			"put $d t row0399 f:q x" "gc $d" "recover $d" "create-table $d u f"; do
			[ -n "$ro" ] && case $args in put* | gc* | recover* | create-table*) continue ;; esac
			timeout 30 "$MRTX" $ro $args >"$TMP/out" 2>"$TMP/err" </dev/null
			rc=$?
			[ "$rc" -eq 1 ] && grep -q "$needle" "$TMP/err" && ok ||
				bad "$kind $ro ${args%% *}: exit $rc, $(head -c 300 "$TMP/err")"
		done
	done
	[ "$sum" == "$(md5sum <"$d/data.mdb")" ] && ok || bad "$kind: data.mdb changed"
}
meta_refused tablerec "checksum does not match"
meta_refused metalost "do not match their count"

# data.mdb a FIFO or a directory: refused at once, naming it (an open for
# reading must not wait for a FIFO's writer)
for what in fifo dir; do
	d=$TMP/nonreg-$what
	mkdir -p "$d"
	if [ "$what" = fifo ]; then mkfifo "$d/data.mdb"; else mkdir "$d/data.mdb"; fi
	for c in "check --deep" check "check --strict" scan get create-table upgrade recover; do
		case $c in
		scan) args=(scan "$d" t) ;;
		get) args=(get "$d" t row0399 f:q) ;;
		create-table) args=(create-table "$d" u f) ;;
		"check --deep") args=(check "$d" --deep) ;;
		"check --strict") args=(check "$d" --strict) ;;
		*) args=("$c" "$d") ;;
		esac
		expect_err 1 "not a regular file" "data.mdb a $what: $c refused" \
			timeout 30 "$MRTX" "${args[@]}"
	done
done

# Damage past the meta pages, in the tree LMDB trusts: a branch page's key
# for row0399 or the first row after it that separates two leaves starts
# 0xfe (a lookup of a later row goes to the wrong leaf,
# and a forward scan's seek went back for ever), and the table prefix of
# row0399's lock key flipped in every leaf page that holds it (a key of
# "another table" amid the table's: scans stopped short with exit 0).
# Every command that meets the damage must say so (exit 1), never hang,
# never print a short result with exit 0.  A forward scan walks from leaf
# to leaf (its steps, checked in order, never read a branch key), so over
# the damaged separator it may give the sound store's whole result, as
# check does below; a short one never.
RE='the store is damaged'
"$MRTX" scan "$SRC" t >"$TMP/sound-scan" || bad "scan of the sound store"
"$MRTX" dump "$SRC" t >"$TMP/sound-dump" || bad "dump of the sound store"
"$MRTX" scan "$SRC" t --reverse >"$TMP/sound-rev" || bad "reverse scan of the sound store"
for kind in branch lockprefix; do
	d=$(damaged "$kind")
	for args in "t --count" "t --count --reverse" "t" "t --reverse"; do
		timeout 30 "$MRTX" scan "$d" $args >"$TMP/out" 2>"$TMP/err"
		rc=$?
		if [ "$kind" = branch ] && [ "$rc" -eq 0 ] && [[ "$args" != *--reverse* ]]; then
			want=$TMP/sound-scan
			[ "$args" = "t --count" ] && { echo 2000 >"$TMP/sound-count"; want=$TMP/sound-count; }
			cmp -s "$TMP/out" "$want" && ok ||
				bad "$kind: scan $args: exit 0 with a result unlike the sound store's"
			continue
		fi
		[ "$rc" -eq 1 ] && grep -qE "$RE" "$TMP/err" && ok ||
			bad "$kind: scan $args: exit $rc, $(wc -l <"$TMP/out") lines, $(head -c 200 "$TMP/err")"
	done
	if [ "$kind" = branch ]; then
		timeout 30 "$MRTX" dump "$d" t >"$TMP/out" 2>"$TMP/err"
		rc=$?
		{ [ "$rc" -eq 1 ] && grep -qE "$RE" "$TMP/err"; } ||
			{ [ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/sound-dump"; } && ok ||
			bad "$kind dump: exit $rc, a short or different dump ($(head -c 200 "$TMP/err"))"
	else
		refused "$kind dump" "$d" "$MRTX" dump "$d" t
	fi
	if [ "$kind" = branch ]; then
		# check reads the lock records in one walk, which moves from leaf
		# to leaf without the damaged separator: the sound count, or a
		# refusal, never a short one
		for args in "" "--strict"; do
			timeout 30 "$MRTX" check "$d" $args >"$TMP/out" 2>"$TMP/err"
			rc=$?
			{ [ "$rc" -eq 1 ] && grep -qE "$RE" "$TMP/err"; } ||
				{ [ "$rc" -eq 0 ] && grep -q "2000 lock records" "$TMP/out"; } && ok ||
				bad "$kind: check $args: exit $rc, $(head -c 200 "$TMP/out" "$TMP/err")"
		done
		continue
	fi
	refused "$kind check" "$d" "$MRTX" check "$d"
	refused "$kind check --strict" "$d" "$MRTX" check "$d" --strict
done
# A branch page's number for a neighbouring leaf (the one before row0399's,
# or its last) sent to a free page holding only the store's own records: a
# reverse scan, which seeks each row and steps back once, stepped into that
# page, took it for the table's beginning and stopped short with exit 0.
# Both directions must refuse.
for kind in backlink lastlink; do
	d=$(damaged "$kind")
	for args in "t --count --reverse" "t --reverse" "t --count" "t"; do
		timeout 30 "$MRTX" scan "$d" $args >"$TMP/out" 2>"$TMP/err"
		rc=$?
		[ "$rc" -eq 1 ] && grep -qE "$RE" "$TMP/err" && ok ||
			bad "$kind: scan $args: exit $rc, $(wc -l <"$TMP/out") lines, $(head -c 200 "$TMP/err")"
	done
	timeout 30 "$MRTX" scan "$d" t --reverse --limit 5 >"$TMP/out" 2>"$TMP/err"
	rc=$?
	{ [ "$rc" -eq 1 ] && grep -qE "$RE" "$TMP/err"; } ||
		{ [ "$rc" -eq 0 ] && [ "$(head -5 "$TMP/sound-rev")" == "$(cat "$TMP/out")" ]; } && ok ||
		bad "$kind: scan --reverse --limit 5: exit $rc, a result unlike the sound store's"
done
# A child pointer of the main root sent back to the root: a walk that
# leaves a leaf climbs to it and finds a branch page where a leaf must be.
# LMDB asserts on that (its own check, which nothing before it can make)
# and aborts: the process must say first that the store is damaged.  A
# search down the tree meets the loop as too deep a tree: refused.  Never
# exit 0 with a short or wrong result.
STOPPED='LMDB stopped the process on a page that breaks its own rules'
d=$(damaged cycle)
for args in "scan $d t --count" "scan $d t --reverse --count" "scan $d t" "dump $d t" \
	"check $d" "stats $d" "get $d t row0399 f:q" "get $d t row1999 f:q"; do
	timeout 30 "$MRTX" $args >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	case $rc in
	1) grep -qE "the store is damaged" "$TMP/err" && ok ||
		bad "cycle: ${args%% *}: exit 1 without saying the store is damaged: $(head -c 200 "$TMP/err")" ;;
	134) grep -q "$STOPPED" "$TMP/err" && ok ||
		bad "cycle: ${args%% *}: aborted without the words: $(head -c 200 "$TMP/err")" ;;
	0) case $args in
		"get $d t row0399 f:q") want=value-0399 ;;
		"get $d t row1999 f:q") want=value-1999 ;;
		*) want= ;;
		esac
		[ -n "$want" ] && [ "$(cat "$TMP/out")" = "$want" ] && ok ||
			bad "cycle: $args: exit 0 ($(head -c 100 "$TMP/out"))" ;;
	*) bad "cycle: $args: exit $rc, $(head -c 200 "$TMP/err")" ;;
	esac
done
expect_rc 1 "cycle: check --deep finds it" "$MRTX" check "$d" --deep

# a lookup sent to the wrong leaf says so, where it used to say "not found"
d=$TMP/d-branch
n=$((10#$(sed 's/row//' "$TMP/branch-row")))
refused "branch: get of a row past the damaged key" "$d" "$MRTX" get "$d" t \
	"$(printf 'row%04d' $((n + 1)))" f:q
expect_out "$(printf 'value-%04d' $((n - 1)))" "branch: get of a row the damage does not reach" \
	"$MRTX" get "$d" t "$(printf 'row%04d' $((n - 1)))" f:q

# lock.mdb damaged while another process holds the store open (LMDB
# keeps a lock file in use as it is): a reader count past its slots
# (bytes 56-59: LMDB 0.9's lock header on a 64-bit host) is refused at
# open, naming lock.mdb -- no SIGBUS in LMDB's walk of the reader table
d=$TMP/held
cp -r "$SRC" "$d"
rm -f "$d/lock.mdb" "$d/ts.shm"
mkfifo "$TMP/hold"
"$MRTX" shell "$d" <"$TMP/hold" >"$TMP/held.out" 2>&1 &
hold=$!
exec 9>"$TMP/hold"
echo "get t row0001 f:q" >&9
for _ in $(seq 600); do grep -q value-0001 "$TMP/held.out" && break; sleep 0.05; done
if grep -q value-0001 "$TMP/held.out"; then
	count=$(od -An -t x1 -j 56 -N 4 "$d/lock.mdb" | tr -d ' ')
	poke "$d/lock.mdb" 56 ff && poke "$d/lock.mdb" 57 ff && poke "$d/lock.mdb" 58 ff &&
		poke "$d/lock.mdb" 59 7f
	for ro in "" --read-only; do
		expect_err 1 "lock.mdb counts [0-9]+ readers in its [0-9]+ slots" \
			"lock.mdb reader count damaged: get $ro refused" \
			timeout 30 "$MRTX" $ro get "$d" t row0001 f:q
	done
	for i in 0 1 2 3; do poke "$d/lock.mdb" $((56 + i)) "${count:$((2 * i)):2}"; done
	expect_out value-0001 "lock.mdb restored: get" timeout 30 "$MRTX" get "$d" t row0001 f:q
else
	bad "the holding shell did not open the store: $(head -c 300 "$TMP/held.out")"
fi
exec 9>&-
wait "$hold" || bad "the holding shell failed: $(head -c 300 "$TMP/held.out")"

# a sound store whose directory the user may read but not write (as
# nobody: root writes anywhere)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	RO=$TMP/rodir
	cp -r "$SRC" "$RO"
	rm -f "$RO/lock.mdb" "$RO/ts.shm"
	chmod 755 "$TMP" "$RO"
	chmod 644 "$RO/data.mdb"
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	before=$(ls -A "$RO"; md5sum <"$RO/data.mdb")
	expect_out 2000 "unwritable dir: --read-only scan" as_nobody "$MRTX" --read-only scan "$RO" t --count
	expect_out value-0399 "unwritable dir: --read-only get" as_nobody "$MRTX" --read-only get "$RO" t row0399 f:q
	expect_rc 0 "unwritable dir: --read-only check" as_nobody "$MRTX" --read-only check "$RO"
	expect_err 1 "Permission denied" "unwritable dir: scan says why" \
		as_nobody "$MRTX" scan "$RO" t --count
	grep -q -- "only read can open it with --read-only" "$TMP/err" && ok ||
		bad "unwritable dir: scan does not point to --read-only"
	expect_err 1 "Permission denied" "unwritable dir: put says why" \
		as_nobody "$MRTX" put "$RO" t r f:q v
	[ "$before" == "$(ls -A "$RO"; md5sum <"$RO/data.mdb")" ] && ok ||
		bad "unwritable dir: changed: $(ls -A "$RO")"
	# a directory the user may not read at all
	chmod 700 "$RO"
	expect_err 1 "cannot look into the store directory: Permission denied" \
		"unreadable dir: scan says so" \
		as_nobody "$MRTX" --read-only scan "$RO" t --count
	chmod 755 "$RO"
	# a data file the user may not read: no hint at --read-only, which
	# could not read it either
	chmod 600 "$RO/data.mdb"
	expect_err 1 "Permission denied" "unreadable data.mdb: scan says why" \
		as_nobody "$MRTX" scan "$RO" t --count
	grep -q -- "--read-only" "$TMP/err" &&
		bad "unreadable data.mdb: scan points to --read-only, which fails the same" || ok
	chmod 644 "$RO/data.mdb"
else
	echo "skipped: the unwritable-directory checks need root and setpriv"
fi

# lock.mdb publishing an LMDB transaction past the newest commit (its byte
# 48 raised while a shell holds the store, so the file is not made anew):
# reads refuse the store, and so does check, which passed it before
H=$TMP/lockheld
"$MRTX" create-table "$H" t f >/dev/null && "$MRTX" put "$H" t r f:q v1 &&
	"$MRTX" put "$H" t r f:q v2 || bad "held store"
mkfifo "$TMP/hold2"
"$MRTX" shell "$H" <"$TMP/hold2" >"$TMP/held2.out" 2>&1 &
holder=$!
exec 9>"$TMP/hold2"
echo "get t r f:q" >&9
while ! grep -q v2 "$TMP/held2.out"; do
	kill -0 $holder 2>/dev/null || { bad "the holding shell ended"; break; }
	sleep 0.02
done
"$PY" - "$H/lock.mdb" <<'PYEOF'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(48)
    b = f.read(1)
    f.seek(48)
    f.write(bytes([b[0] + 1]))
PYEOF
expect_err 1 "lock.mdb publishes LMDB transaction" "raised lock.mdb txnid: get refuses" \
	"$MRTX" get "$H" t r f:q
expect_err 1 "lock.mdb publishes LMDB transaction" "raised lock.mdb txnid: check refuses" \
	"$MRTX" check "$H"
exec 9>&-
wait $holder

finish
