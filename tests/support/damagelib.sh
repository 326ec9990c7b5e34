# damagelib.sh - damaged copies of an LMDB store's data.mdb, shared by
# tests/cli/cli_damage.sh and tests/cli/cli_deep.sh; sourced after clilib.sh.
#   damage_setup SRC   read SRC/data.mdb's page size and length: sets PS,
#                      SIZE, SHORT (two thirds of it, not a page multiple)
#                      and METAS (inside meta page 1)
#   damaged KIND       a fresh directory $TMP/d-KIND holding SRC's data.mdb
#                      damaged as KIND (DAMAGE_KINDS); prints its path
# The stores hold table t (the first, one family f) with rows row0001..
# (row0399 among them); the
# meta page offsets are LMDB 0.9's on a 64-bit host (storage/lmdb/lmdb_layout.h).
# DAMAGE_KINDS leaves out backlink and lastlink, which need a free leaf page
# holding only the store's own records (cli_damage.sh's store has one), and
# leafroot (the main root pointed at a leaf page) and cycle (a child
# pointer of the main root sent back to the root), which need a tree of two
# levels or more.
DAMAGE_KINDS="empty random text short metas magic0 magic1 txnid lastpg root mapsize tablerec metalost branch lockprefix"

damage_setup() {
	DAMAGE_SRC=$1
	SIZE=$(stat -c %s "$1/data.mdb")
	# LMDB's page size (the system's), from meta page 0's free-database record
	PS=$(od -An -t u4 -j 40 -N 4 "$1/data.mdb" | tr -d ' ')
	SHORT=$((SIZE * 2 / 3 + 1))
	METAS=$((PS + PS / 4))
}

# poke FILE OFFSET BYTE-IN-HEX: overwrite one byte
poke() { printf "\\x$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

damaged() {
	local d=$TMP/d-$1 f
	rm -rf "$d"
	mkdir "$d"
	f=$d/data.mdb
	case $1 in
	empty) : >"$f" ;;
	random) head -c 20000 /dev/urandom >"$f" ;;
	text) echo "not a store" >"$f" ;;
	*) cp "$DAMAGE_SRC/data.mdb" "$f" ;;
	esac
	case $1 in
	short) truncate -s "$SHORT" "$f" ;;
	metas) truncate -s "$METAS" "$f" ;;
	magic0) poke "$f" 16 00 ;;
	magic1) poke "$f" $((PS + 16)) 00 ;;
	txnid) poke "$f" $((PS + 16 + 128 + 5)) 01 ;;
	lastpg) poke "$f" $((PS + 16 + 120 + 4)) 01 && poke "$f" $((16 + 120 + 4)) 01 ;;
	root) poke "$f" $((PS + 16 + 24 + 48 + 40 + 3)) 7f &&
		poke "$f" $((16 + 24 + 48 + 40 + 3)) 7f ;;
	# the map size's top byte in both meta pages: past any address space
	mapsize) poke "$f" $((PS + 16 + 16 + 7)) 7f && poke "$f" $((16 + 16 + 7)) 7f ;;
	leafroot)
		# the newest meta page's main root pointed at the first leaf
		# page, a sound page of the tree (its depth left at 2 or more)
		"$PY" - "$f" "$PS" <<'PYEOF' ;;
import struct, sys
path, ps = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, 'rb').read())
leaf = next(pg for pg in range(2, len(b) // ps) if b[pg * ps + 10] == 2)
m = max((0, 1), key=lambda m: struct.unpack_from('<Q', b, m * ps + 16 + 128)[0])
assert struct.unpack_from('<H', b, m * ps + 16 + 24 + 48 + 6)[0] >= 2
struct.pack_into('<Q', b, m * ps + 16 + 24 + 48 + 40, leaf)
open(path, 'wb').write(b)
PYEOF
	cycle)
		# the newest meta page's main root: its middle child pointer sent
		# to the root itself (a branch page where a leaf must be)
		"$PY" - "$f" "$PS" <<'PYEOF' ;;
import struct, sys
path, ps = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, 'rb').read())
m = max((0, 1), key=lambda m: struct.unpack_from('<Q', b, m * ps + 16 + 128)[0])
root = struct.unpack_from('<Q', b, m * ps + 16 + 24 + 48 + 40)[0]
at = root * ps
assert b[at + 10] == 1
lower = struct.unpack_from('<H', b, at + 12)[0]
o = struct.unpack_from('<H', b, at + 16 + 2 * (((lower - 16) // 2) // 2))[0]
b[at + o:at + o + 6] = struct.pack('<HHH', root & 0xffff, root >> 16 & 0xffff, 0)
open(path, 'wb').write(b)
PYEOF
	branch | lockprefix | backlink | lastlink)
		# branch: the first separator key of a branch page from row0399's
		# lock key on (its row in $TMP/branch-row) starts 0xfe;
		# lockprefix: the table prefix of row0399's lock key flipped in
		# every leaf page that holds it;
		# backlink: the page number a branch page holds for the leaf
		# before row0399's sends it to a free leaf page holding only
		# records of the store (first key byte 0: an older copy, which a
		# reverse scan took for the table's beginning); lastlink: the same
		# with the branch page's last child, where a reverse scan begins
		"$PY" - "$f" "$1" "$PS" "$TMP/branch-row" <<'PYEOF' ;;
import struct, sys
path, kind, ps, rowfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = open(path, 'rb').read()
b = bytearray(d)
if kind == 'branch':
    seps = []  # (key, offset) of every branch node key
    for pg in range(len(d) // ps):
        p = d[pg * ps:(pg + 1) * ps]
        if p[10] != 1:
            continue
        lower = struct.unpack('<H', p[12:14])[0]
        for i in range(1, (lower - 16) // 2):
            o = struct.unpack('<H', p[16 + 2 * i:18 + 2 * i])[0]
            ks = struct.unpack('<H', p[o + 6:o + 8])[0]
            seps.append((p[o + 8:o + 8 + ks], pg * ps + o + 8))
    key = min(k for k, _ in seps if k >= b'\x01\x00row0399\x00\x01\xff')
    for k, off in seps:
        if k == key:
            b[off] = 0xfe
    open(rowfile, 'w').write(key[2:9].decode())
elif kind in ('backlink', 'lastlink'):
    def keys(p):
        lower = struct.unpack('<H', p[12:14])[0]
        for i in range((lower - 16) // 2):
            o = struct.unpack('<H', p[16 + 2 * i:18 + 2 * i])[0]
            ks = struct.unpack('<H', p[o + 6:o + 8])[0]
            yield o, p[o + 8:o + 8 + ks]
    pages = [d[pg * ps:(pg + 1) * ps] for pg in range(len(d) // ps)]
    stale = min(pg for pg, p in enumerate(pages) if pg > 1 and p[10] & 2 and
                all(k[:1] == b'\x00' for _, k in keys(p)))
    target = b'\x01\x00row0399\x00\x01\xff'
    for pg, p in enumerate(pages):
        if p[10] != 1:
            continue
        kids = list(keys(p))
        i = max(j for j, (_, k) in enumerate(kids) if j == 0 or k <= target)
        if kind == 'backlink' and i == 0:
            continue
        o = kids[i - 1 if kind == 'backlink' else -1][0]
        b[pg * ps + o:pg * ps + o + 6] = struct.pack('<HHH', stale & 0xffff, stale >> 16, 0)
else:
    pat = b'\x01\x00row0399\x00\x01\xff'
    j = d.find(pat)
    while j >= 0:
        if d[j // ps * ps + 10] & 2:
            b[j + 1] ^= 0x40
        j = d.find(pat, j + 1)
open(path, 'wb').write(b)
PYEOF
	tablerec)
		# the family name in table t's metadata record changed from f to g
		# in every copy of the record (its checksum left as it was)
		"$PY" - "$f" <<'PYEOF' ;;
import sys
path = sys.argv[1]
b = bytearray(open(path, 'rb').read())
pat = b'\x00t/t\x01\x00\x01\x01f'
j, n = b.find(pat), 0
while j >= 0:
    b[j + len(pat) - 1] = ord('g')
    n += 1
    j = b.find(pat, j + 1)
assert n
open(path, 'wb').write(b)
PYEOF
	metalost)
		# table t's metadata record lost whole: its slot taken out of the
		# slot array of every leaf page holding it, the page header's
		# count of nodes lowered by one (the node's bytes stay in place)
		"$PY" - "$f" "$PS" <<'PYEOF' ;;
import struct, sys
path, ps = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, 'rb').read())
n = 0
for pg in range(2, len(b) // ps):
    at = pg * ps
    if not b[at + 10] & 2:
        continue
    lower = struct.unpack('<H', b[at + 12:at + 14])[0]
    slots = [struct.unpack('<H', b[at + 16 + 2 * i:at + 18 + 2 * i])[0]
             for i in range((lower - 16) // 2) if at + 18 + 2 * i <= at + ps]
    for i, o in enumerate(slots):
        if o + 8 > ps:
            continue
        ks = struct.unpack('<H', b[at + o + 6:at + o + 8])[0]
        if bytes(b[at + o + 8:at + o + 8 + ks]) == b'\x00t/t':
            rest = slots[i + 1:]
            for j, r in enumerate(rest):
                b[at + 16 + 2 * (i + j):at + 18 + 2 * (i + j)] = struct.pack('<H', r)
            b[at + 12:at + 14] = struct.pack('<H', lower - 2)
            n += 1
            break
assert n
open(path, 'wb').write(b)
PYEOF
	esac
	echo "$d"
}
