#!/usr/bin/env bash
# cli_deep.sh - `mrtx check --deep`: a sound store passes; every kind of
# damage tests/cli/cli_damage.sh makes is found and named (exit 1), with the
# directory left as it was; what the advice says can be read is read (a
# dump of a table the damage does not reach, from a store that fails the
# check); a store whose file ends before its last page, where LMDB left
# free pages unwritten, is sound and opens; RADOS and --strict are usage
# errors.  LMDB only (skipped with MRTX_TEST_STORE=rados).
#
# usage: cli_deep.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=deep
. "$(dirname "$0")/../support/clilib.sh"

if [ "$RADOS" = 1 ]; then
	echo "skipped: LMDB files only"
	finish
fi

# a sound store: tables t (2,000 rows) and u (1,000 rows, a few values over
# a page: overflow runs)
SRC=$(store src)
"$MRTX" create-table "$SRC" t f >/dev/null || bad "create-table t"
"$MRTX" create-table "$SRC" u f >/dev/null || bad "create-table u"
for i in $(seq -w 1 2000); do echo "put t row$i f:q value-$i"; done >"$TMP/in-t"
for i in $(seq -w 1 1000); do echo "put u row$i f:q value-$i"; done >"$TMP/in-u"
cat "$TMP/in-t" "$TMP/in-u" | "$MRTX" txn "$SRC" >/dev/null || bad "load the rows"
for i in 1 2 3; do
	"$MRTX" put "$SRC" u "big$i" f:q "$(head -c $((i * 9000)) /dev/zero | tr '\0' b)" >/dev/null ||
		bad "put a big value"
done
"$MRTX" dump "$SRC" u "$TMP/u.sound" || bad "dump u"

expect_out ok "sound store: --deep" sh -c "'$MRTX' check '$SRC' --deep | tail -1"
"$MRTX" check "$SRC" --deep --json >"$TMP/j" 2>"$TMP/err" && ok || bad "sound --json: exit $?"
pyjson "sound --json: ok, no damage, 2 tables, 3003 lock records, both readable" \
	'd["ok"] and d["damage"] == [] and d["damage_count"] == 0 and d["tables"] == 2 and
	 d["lock_records"] == 3003 and sorted(d["readable_tables"]) == ["t", "u"] and
	 d["newest"] and d["opens"] and d["walked"] + d["free_pages"] + d["leaked"] + 2 == d["pages"]' \
	<"$TMP/j"

# usage
expect_rc 0 "check --help" "$MRTX" check --help
grep -q -- "--deep verifies an LMDB store's file" "$TMP/out" && ok || bad "--help says nothing of --deep"
expect_err 2 "RADOS store has none" "--deep on RADOS is a usage error" \
	"$MRTX" check "rados://pool/name" --deep
expect_err 2 "not --deep" "--deep --strict is a usage error" "$MRTX" check "$SRC" --deep --strict
expect_err 1 "no data.mdb" "--deep on a directory without a store" "$MRTX" check "$TMP" --deep

. "$(dirname "$0")/../support/damagelib.sh"
damage_setup "$SRC"

# what each kind's report must say
declare -A WORDS=(
	[empty]='data.mdb is empty'
	[random]='no LMDB meta page at page 0 or 1'
	[text]='no LMDB meta page at page 0 or 1'
	[short]='DAMAGE page [0-9]+: past the end of the file'
	[metas]="data.mdb is truncated: $METAS bytes"
	[magic0]='DAMAGE page 0: meta page 0: no LMDB meta page header and magic'
	[magic1]='DAMAGE page 1: meta page 1: no LMDB meta page header and magic'
	[txnid]='not one apart'
	[lastpg]='data.mdb is truncated: [0-9]+ bytes, but meta page 1'
	[root]='DAMAGE page 1: meta page 1 .*a database root outside'
	[mapsize]='DAMAGE page 1: meta page 1 .*a map size past any address space'
	[branch]='DAMAGE page [0-9]+ key \\xfe\\x00ROWX\\x00\\x01(\\xff|\\x00q): a key out of order'
	[lockprefix]='DAMAGE page [0-9]+ key \\x01@row0399\\x00\\x01\\xff: a key outside the range'
	[tablerec]='DAMAGE page [0-9]+ key \\x00t/t: its checksum does not match'
	[metalost]='DAMAGE page [0-9]+: its nodes fill'
)

for kind in $DAMAGE_KINDS; do
	d=$(damaged "$kind")
	before=$(ls -A "$d"; md5sum <"$d/data.mdb")
	timeout 30 "$MRTX" check "$d" --deep >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne 1 ]; then
		bad "$kind: exit $rc, want 1 ($(head -c 300 "$TMP/err"))"
	elif want=${WORDS[$kind]//ROWX/$(cat "$TMP/branch-row" 2>/dev/null)} &&
		! grep -qE -- "$want" "$TMP/out"; then
		bad "$kind: the report does not say /$want/: $(head -c 400 "$TMP/out")"
	elif ! grep -qE "^FAILED$" "$TMP/out" || ! grep -q "damage in $d/data.mdb" "$TMP/err"; then
		bad "$kind: no FAILED line or no error message"
	else
		ok
	fi
	timeout 30 "$MRTX" check "$d" --deep --json >"$TMP/j" 2>/dev/null
	[ $? -eq 1 ] && ok || bad "$kind --json: exit not 1"
	pyjson "$kind --json: one document, not ok, its damage listed" \
		'not d["ok"] and d["damage_count"] >= 1 and len(d["damage"]) == d["damage_count"] and
		 all(set(x) == {"page", "key", "what"} for x in d["damage"]) and d["advice"]' <"$TMP/j"
	[ "$before" == "$(ls -A "$d"; md5sum <"$d/data.mdb")" ] && ok ||
		bad "$kind: the directory changed: $(ls -A "$d")"
done
# where the open refuses the store, the advice is a backup
grep -q "restore the store from a backup" "$TMP/err" && ok || bad "lockprefix: no advice"
expect_rc 1 "magic0: --deep" "$MRTX" check "$TMP/d-magic0" --deep
grep -q "mrtx cannot open this store" "$TMP/err" && ok || bad "magic0: the advice is not a backup"

# A leaf of table t made unreadable (its node bounds): --deep names t
# damaged and u readable, and a read-only dump of u, as its advice says,
# gives every cell of u, which loads into a new store
D=$TMP/leaf
mkdir "$D"
"$PY" - "$SRC/data.mdb" "$D/data.mdb" <<'EOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
ps = int.from_bytes(d[40:44], 'little')           # the page size
j = d.find(b'\x01\x00row0399\x00\x01\x00q')    # a cell key of t, in a leaf
pg = j // ps * ps
assert d[pg + 10] == 2
d[pg + 12:pg + 14] = b'\xff\xff'             # lower
open(sys.argv[2], 'wb').write(d)
EOF
expect_rc 1 "leaf: --deep" "$MRTX" check "$D" --deep
grep -qE "DAMAGE page [0-9]+: its node bounds lower 65535" "$TMP/out" && ok ||
	bad "leaf: not named: $(head -c 300 "$TMP/out")"
grep -q "^readable tables (the damage does not reach them): u$" "$TMP/out" && ok ||
	bad "leaf: u not listed readable: $(cat "$TMP/out")"
grep -q "^damaged tables: t$" "$TMP/out" && ok || bad "leaf: t not listed damaged"
grep -q "mrtx --read-only dump STORE TABLE FILE" "$TMP/err" && ok || bad "leaf: no dump advice"
expect_rc 0 "leaf: read-only dump of u" "$MRTX" --read-only dump "$D" u "$TMP/u.dump"
same_file "leaf: the dump of u is whole" "$TMP/u.sound" "$TMP/u.dump"
NEW=$TMP/new
expect_rc 0 "leaf: load u into a new store" "$MRTX" load "$NEW" u "$TMP/u.dump"
expect_out 1003 "leaf: the new store holds u" "$MRTX" scan "$NEW" u --count
expect_rc 0 "leaf: the new store passes --deep" "$MRTX" check "$NEW" --deep

# The free list names a page in use: reads still work (every table
# readable), the check says the free list is damaged
D=$TMP/free
mkdir "$D"
"$PY" - "$SRC/data.mdb" "$D/data.mdb" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
ps = int.from_bytes(d[40:44], 'little')           # the page size
metas = [struct.unpack_from('<QQ', d, p * ps + 16 + 120) for p in (0, 1)]  # last, txn
m = (1 if metas[1][1] > metas[0][1] else 0) * ps + 16
free_root, main_root = (struct.unpack_from('<Q', d, m + 24 + 40 + 48 * i)[0] for i in (0, 1))
p = free_root * ps
assert d[p + 10] == 2                          # a leaf: its first entry's first page
o = struct.unpack_from('<H', d, p + 16)[0]
assert struct.unpack_from('<Q', d, p + o + 16)[0] >= 1
struct.pack_into('<Q', d, p + o + 24, main_root)
open(sys.argv[2], 'wb').write(d)
EOF
expect_rc 1 "free: --deep" "$MRTX" check "$D" --deep --json
pyjson "free: the page in use named, the free list damaged, both tables readable" \
	'd["free_list_damaged"] and any("on the free list too" in x["what"] for x in d["damage"]) and
	 sorted(d["readable_tables"]) == ["t", "u"] and "do not write" in d["advice"]' <"$TMP/out"
expect_out 2000 "free: read-only scan of t" "$MRTX" --read-only scan "$D" t --count

# A file that ends before its last page, the pages past its end free (as
# LMDB leaves a file whose highest pages a transaction took and freed
# again): the open accepts it, --deep too, and writes go on.  Made by
# freeing a big value's overflow run at the end of the file, then writing
# until the pages after it are free too; then the free pages at the end
# are cut off.
# free_tail FILE: cut the free pages at the end of FILE (exit 1: none)
free_tail() {
	"$PY" - "$1" <<'EOF'
import os, struct, sys
f = sys.argv[1]
d = open(f, 'rb').read()
ps = int.from_bytes(d[40:44], 'little')           # the page size
metas = [struct.unpack_from('<QQ', d, p * ps + 16 + 120) for p in (0, 1)]  # last, txn
m = (1 if metas[1][1] > metas[0][1] else 0) * ps + 16
last = struct.unpack_from('<Q', d, m + 120)[0]
free = set()
def walk(pg):                                  # the free list (a sound file)
    p = pg * ps
    for i in range((struct.unpack_from('<H', d, p + 12)[0] - 16) // 2):
        o = p + struct.unpack_from('<H', d, p + 16 + 2 * i)[0]
        lo, hi, fl, ks = struct.unpack_from('<HHHH', d, o)
        if d[p + 10] == 1:
            walk(lo | hi << 16 | fl << 32)
            continue
        v = o + 8 + ks
        if fl & 1:
            v = struct.unpack_from('<Q', d, v)[0] * ps + 16
        n = struct.unpack_from('<Q', d, v)[0]
        free.update(struct.unpack_from('<%dQ' % n, d, v + 8))
walk(struct.unpack_from('<Q', d, m + 24 + 40)[0])
end = last + 1
while end - 1 in free:
    end -= 1
if end > last:
    sys.exit(1)
os.truncate(f, end * ps)
EOF
}
D=$TMP/tail
"$MRTX" create-table "$D" t f >/dev/null || bad "tail: create-table"
"$MRTX" txn "$D" <"$TMP/in-t" >/dev/null || bad "tail: load"
for i in 1 2 3 4 5 6; do "$MRTX" put "$D" t "small$i" f:q x >/dev/null; done
"$MRTX" put "$D" t big f:q "$(head -c 90000 /dev/zero | tr '\0' b)" >/dev/null || bad "tail: put"
"$MRTX" del "$D" t big f:q >/dev/null || bad "tail: del"
SIZE=$(stat -c %s "$D/data.mdb")
for i in $(seq 1 20); do
	"$MRTX" put "$D" t "tiny$i" f:q y >/dev/null || bad "tail: put tiny$i"
	cp "$D/data.mdb" "$TMP/tail.mdb"
	free_tail "$TMP/tail.mdb" && break
done
mv "$TMP/tail.mdb" "$D/data.mdb"
rm -f "$D/lock.mdb" "$D/ts.shm"
[ "$(stat -c %s "$D/data.mdb")" -lt "$SIZE" ] && ok || bad "tail: no free pages at the end to cut"
expect_rc 0 "tail: --deep passes a file ending before its free pages" "$MRTX" check "$D" --deep
expect_out $((2006 + i)) "tail: it opens and reads" "$MRTX" scan "$D" t --count
expect_rc 0 "tail: and takes writes" "$MRTX" put "$D" t more f:q "$(head -c 90000 /dev/zero | tr '\0' c)"
expect_rc 0 "tail: --deep after the writes" "$MRTX" check "$D" --deep

finish
