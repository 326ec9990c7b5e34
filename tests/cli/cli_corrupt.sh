#!/usr/bin/env bash
# cli_corrupt.sh - the reading commands, and check --deep, on hundreds of damaged copies of
# one store: each copy has one byte flipped at a random offset (seeded:
# MRTX_CORRUPT_SEED, 1 unless given, so that every run of the suite tries
# the same copies) or is cut short at a random length.  Each of scan, scan
# --reverse, dump, get and check runs on each copy under a generous time
# limit (a hang, not speed, is what it catches), and each outcome is
# counted: refused (exit 1), the same output as the sound store's (the byte
# was in a page no read reaches), a different output with exit 0 (a wrong
# answer), a hang, a death by signal.
#
# Required: no hang; no wrong answer (every data record carries a checksum,
# and reads check the order of the keys they walk: README, "A damaged LMDB
# file"); deaths by a fault inside LMDB (a damaged page it follows
# unchecked) come with the tool's words, and are counted; check --deep
# never hangs or dies, and flags every copy on which some command did not
# give the sound store's output.  LMDB only.
#
# usage: cli_corrupt.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
# env: MRTX_CORRUPT_SEED (default 1), MRTX_CORRUPT_FLIPS (200),
#      MRTX_CORRUPT_CUTS (20)
# Checks I20 (DESIGN §10).
set -u
NAME=corrupt
. "$(dirname "$0")/../support/clilib.sh"

if [ "$RADOS" = 1 ]; then
	echo "skipped: LMDB files only"
	finish
fi

SEED=${MRTX_CORRUPT_SEED:-1}
FLIPS=${MRTX_CORRUPT_FLIPS:-200}
CUTS=${MRTX_CORRUPT_CUTS:-20}
echo "seed $SEED: $FLIPS flipped bytes, $CUTS truncations (MRTX_CORRUPT_SEED=$SEED replays)"

SRC=$(store src)
for i in $(seq -w 1 2000); do echo "put t row$i f:q value-$i"; done >"$TMP/in"
"$MRTX" create-table "$SRC" t f >/dev/null || bad "create-table"
"$MRTX" txn "$SRC" <"$TMP/in" >/dev/null || bad "load 2,000 rows"
rm -f "$SRC/lock.mdb" "$SRC/ts.shm"

# the commands, and the sound store's output of each
CMDS=("scan @ t" "scan @ t --reverse" "dump @ t" "get @ t row0399 f:q" "check @")
declare -a WANT
for i in "${!CMDS[@]}"; do CMDS[$i]="$MRTX ${CMDS[$i]}"; done
for i in "${!CMDS[@]}"; do WANT[$i]=$(${CMDS[$i]/@/$SRC} 2>/dev/null | md5sum); done

# the damaged copies' recipes: "flip OFFSET XOR BYTE" (BYTE: the flipped
# byte, in octal) or "cut LENGTH", all made by one Python run
"$PY" - "$SRC/data.mdb" "$SEED" "$FLIPS" "$CUTS" >"$TMP/recipes" <<'EOF'
import random, sys
path, seed, flips, cuts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = open(path, "rb").read()
r = random.Random(seed)
for _ in range(flips):
    at, x = r.randrange(len(data)), r.randrange(1, 256)
    print("flip", at, x, "%03o" % (data[at] ^ x))
for _ in range(cuts):
    print("cut", r.randrange(len(data)))
EOF

declare -A N
fault_list=""
differs_here=0
C=$TMP/c
while read -r kind a b byte; do
	rm -rf "$C"
	mkdir "$C"
	cp "$SRC/data.mdb" "$C/"
	if [ "$kind" = flip ]; then
		printf "\\$byte" | dd of="$C/data.mdb" bs=1 seek="$a" conv=notrunc status=none ||
			bad "flip $a $b: dd"
	else
		truncate -s "$a" "$C/data.mdb"
	fi
	for i in "${!CMDS[@]}"; do
		timeout 60 ${CMDS[$i]/@/$C} >"$TMP/out" 2>"$TMP/err" </dev/null
		rc=$?
		got=$(md5sum <"$TMP/out")
		if [ "$rc" -eq 124 ]; then
			N[hang]=$((${N[hang]:-0} + 1))
			bad "hang: $kind $a $b: ${CMDS[$i]}"
		elif [ "$rc" -gt 128 ]; then
			# a fault inside LMDB, on a page it follows unchecked, or one
			# of its assertions: counted, with the words about it required
			N[signal]=$((${N[signal]:-0} + 1))
			fault_list+=" $kind:$a"
			grep -qE "a memory fault: if this command read an LMDB store|LMDB stopped the process on a page that breaks its own rules" "$TMP/err" && ok ||
				bad "signal $((rc - 128)) without the tool's words: $kind $a $b: ${CMDS[$i]}"
		elif [ "$rc" -ne 0 ]; then
			N[refused]=$((${N[refused]:-0} + 1))
			ok
		elif [ "$got" == "${WANT[$i]}" ]; then
			N[same]=$((${N[same]:-0} + 1))
			ok
		else
			N[wrong]=$((${N[wrong]:-0} + 1))
			bad "a wrong answer with exit 0: $kind $a $b: ${CMDS[$i]}"
		fi
		[ "$rc" -ne 0 ] || [ "$got" != "${WANT[$i]}" ] && differs_here=1
	done
	# check --deep, which reads the file without LMDB: never a hang or a
	# signal; it should flag every copy some command read wrongly
	timeout 60 "$MRTX" check "$C" --deep >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -gt 128 ]; then
		bad "check --deep: exit $rc: $kind $a $b"
	elif [ "$rc" -eq 0 ]; then
		N[deep_pass]=$((${N[deep_pass]:-0} + 1))
		[ "$differs_here" = 0 ] && ok ||
			bad "check --deep passed a copy some command did not read as the sound store: $kind $a $b"
	else
		N[deep_flag]=$((${N[deep_flag]:-0} + 1))
		ok
	fi
	differs_here=0
done <"$TMP/recipes"

echo "outcomes of $(( (FLIPS + CUTS) * ${#CMDS[@]} )) runs: refused ${N[refused]:-0}," \
	"same output ${N[same]:-0}, wrong output with exit 0 ${N[wrong]:-0}," \
	"hangs ${N[hang]:-0}, signals ${N[signal]:-0}"
echo "check --deep on $((FLIPS + CUTS)) copies: flagged ${N[deep_flag]:-0}, passed" \
	"${N[deep_pass]:-0} (each read as the sound store by every command)"
[ -n "$fault_list" ] && echo "faults inside LMDB:$(echo "$fault_list" | tr ' ' '\n' | sort -u | head -20 | tr '\n' ' ')"
finish
