#!/usr/bin/env bash
# cli_readonly.sh - the global options of the real `mrtx` binary:
#   --map-size SIZE / MRTX_MAP_SIZE: a store filled to MRTX_EFULL is grown by
#     reopening it larger, never shrunk; the flag wins over the variable; bad
#     sizes are usage errors (exit 2) that touch nothing;
#   --read-only / MRTX_READ_ONLY: every write fails (exit 1, the message
#     names read-only) and changes nothing, every read works, stale locks are
#     reported but not settled; a missing store is not created; a store the
#     user cannot write (another uid, a read-only mount) is readable;
#   chaos, crashsim and bench refuse the flags.
#
# usage: cli_readonly.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
#
# Store-agnostic: with MRTX_TEST_STORE=rados and MRTX_TEST_RADOS_CONF
# (tests/rados/rados_suite.sh sets both) every store is a RADOS store; the parts
# about LMDB's map and files skip there.  The unwritable-store parts need a
# second uid (run as root with setpriv, or as a user other than the files'
# owner) and a mount namespace (unshare -m, as root): they say SKIP without.
set -u
NAME=ro
. "$(dirname "$0")/../support/clilib.sh"
# Writers are stopped between the steps of the two-phase protocol and their
# locks inspected: every mrtx here commits with it (DESIGN §5.2; LMDB's
# one-phase commits, §5.3, are tested in test_txn and cli_chaos).
export MRTX_TWO_PHASE=1

case $MRTX in /*) ;; *) MRTX=$PWD/$MRTX ;; esac
unset MRTX_MAP_SIZE MRTX_READ_ONLY MRTX_FAILPOINTS
skip() { echo "SKIP: $*" >&2; }

# sums DIR: checksums of an LMDB store's data file (what no read may change)
sums() { md5sum "$1/data.mdb" | cut -d' ' -f1; }

# --------------------------------------------------------- usage errors
S=$(store s)
expect_rc 0 "create-table" "$MRTX" create-table "$S" t f
expect_rc 0 "put r1" "$MRTX" put "$S" t r1 f:q v1
expect_rc 0 "put r2" "$MRTX" put "$S" t r2 f:q v2

for sz in 0 00 junk 12Q 99999999999999999999999 17179869184T -5 1.5G 4KB " 4K" 0K; do
	expect_err 2 "--map-size: '.*' is not a size" "--map-size '$sz'" \
		"$MRTX" --map-size "$sz" get "$S" t r1 f:q
	expect_err 2 "MRTX_MAP_SIZE='.*' is not a size" "MRTX_MAP_SIZE='$sz'" \
		env MRTX_MAP_SIZE="$sz" "$MRTX" get "$S" t r1 f:q
done
expect_err 2 "--map-size: '' is not a size" "--map-size ''" "$MRTX" --map-size "" get "$S" t r1 f:q
# an empty MRTX_MAP_SIZE is "unset"
expect_out v1 "MRTX_MAP_SIZE empty" env MRTX_MAP_SIZE= "$MRTX" get "$S" t r1 f:q
expect_err 2 "--map-size: '12Q'" "--map-size=VALUE form, bad" "$MRTX" --map-size=12Q get "$S" t r1 f:q
expect_out v1 "--map-size=VALUE form" "$MRTX" --map-size=64M get "$S" t r1 f:q
expect_err 2 "option '--map-size' needs a value" "--map-size without a value" "$MRTX" --map-size
expect_err 2 "takes no value" "--read-only=1" "$MRTX" --read-only=1 get "$S" t r1 f:q
expect_err 2 "unknown option '--frob'" "unknown global option" "$MRTX" --frob get "$S" t r1 f:q
expect_err 2 "^usage: mrtx" "global options and no subcommand" "$MRTX" --read-only
expect_err 2 "MRTX_READ_ONLY='maybe'" "MRTX_READ_ONLY=maybe" \
	env MRTX_READ_ONLY=maybe "$MRTX" get "$S" t r1 f:q
if [ "$RADOS" = 0 ]; then
	expect_err 2 "is not a size" "a bad size creates nothing" \
		"$MRTX" --map-size 0 create-table "$TMP/never" t f
	[ ! -e "$TMP/never" ] && ok || bad "--map-size 0 create-table made $TMP/never"
fi
expect_rc 0 "--help after global options" "$MRTX" --read-only --map-size 1G --help
grep -q -- "--map-size SIZE" "$TMP/out" && grep -q -- "--read-only" "$TMP/out" &&
	grep -q MRTX_MAP_SIZE "$TMP/out" && grep -q MRTX_READ_ONLY "$TMP/out" && ok ||
	bad "mrtx --help names the global options and their variables"

# chaos, crashsim and bench make their own stores: the flags do not apply,
# the variables are ignored
for c in chaos crashsim bench; do
	expect_err 2 "$c: --map-size and --read-only do not apply" "$c refuses --read-only" \
		"$MRTX" --read-only "$c" --help
	expect_err 2 "do not apply" "$c refuses --map-size" "$MRTX" --map-size 1G "$c" --help
	expect_rc 0 "$c ignores the variables" env MRTX_READ_ONLY=junk MRTX_MAP_SIZE=junk \
		"$MRTX" "$c" --help
done

# ------------------------------------------------------------ read-only
[ "$RADOS" = 0 ] && before=$(sums "$S")
RO_RE='read-only.*(--read-only|MRTX_READ_ONLY)'
expect_err 1 "$RO_RE" "--read-only put" "$MRTX" --read-only put "$S" t r1 f:q X
expect_err 1 "$RO_RE" "--read-only del" "$MRTX" --read-only del "$S" t r1 f:q
expect_err 1 "$RO_RE" "--read-only delrow" "$MRTX" --read-only delrow "$S" t r1
expect_err 1 "$RO_RE" "--read-only create-table (new table)" \
	"$MRTX" --read-only create-table "$S" t2 f
expect_err 1 "$RO_RE" "--read-only create-table (existing table)" \
	"$MRTX" --read-only create-table "$S" t f
expect_err 1 "$RO_RE" "--read-only recover" "$MRTX" --read-only recover "$S"
expect_err 1 "$RO_RE" "MRTX_READ_ONLY=1 put" env MRTX_READ_ONLY=1 "$MRTX" put "$S" t r1 f:q X
expect_err 1 "$RO_RE" "MRTX_READ_ONLY=yes put" env MRTX_READ_ONLY=yes "$MRTX" put "$S" t r1 f:q X
expect_err 1 "$RO_RE" "MRTX_READ_ONLY=ON put" env MRTX_READ_ONLY=ON "$MRTX" put "$S" t r1 f:q X
expect_err 1 "$RO_RE" "--read-only wins over MRTX_READ_ONLY=0" \
	env MRTX_READ_ONLY=0 "$MRTX" --read-only put "$S" t r1 f:q X
printf 'get t r1 f:q\nput t r1 f:q X\n' >"$TMP/script"
expect_rc 1 "--read-only txn with a put" "$MRTX" --read-only txn "$S" "$TMP/script"
grep -qE "$RO_RE" "$TMP/err" && ok || bad "txn: the message names read-only: $(cat "$TMP/err")"
printf 'get t r1 f:q\nput t r1 f:q X\nbegin\nput t r2 f:q X\ncommit\n' >"$TMP/shell"
"$MRTX" --read-only shell "$S" <"$TMP/shell" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && [ "$(cat "$TMP/out")" == v1 ] && [ "$(grep -cE "$RO_RE" "$TMP/err")" -eq 2 ] &&
	ok || bad "--read-only shell: exit $rc, out '$(cat "$TMP/out")', err $(cat "$TMP/err")"

expect_out v1 "--read-only get" "$MRTX" --read-only get "$S" t r1 f:q
expect_out v2 "MRTX_READ_ONLY=true get" env MRTX_READ_ONLY=true "$MRTX" get "$S" t r2 f:q
expect_out $'r1 f:q v1\nr2 f:q v2' "--read-only scan" "$MRTX" --read-only scan "$S" t
expect_out "" "--read-only locks" "$MRTX" --read-only locks "$S"
expect_rc 0 "--read-only check" "$MRTX" --read-only check "$S"
expect_rc 0 "--read-only lock" "$MRTX" --read-only lock "$S" t r1
expect_rc 0 "--read-only recover --dry-run" "$MRTX" --read-only recover "$S" --dry-run
printf 'get t r1 f:q\nscan t\n' >"$TMP/rscript"
expect_out $'v1\nr1 f:q v1\nr2 f:q v2' "--read-only txn of reads" \
	"$MRTX" --read-only txn "$S" "$TMP/rscript"
expect_rc 0 "--read-only stats" "$MRTX" --read-only stats "$S"
grep -q "read-only" "$TMP/out" && ok || bad "stats shows read-only: $(cat "$TMP/out")"
"$MRTX" --read-only stats "$S" --json | pyjson "stats --json read_only" 'd["read_only"] is True'
"$MRTX" stats "$S" --json | pyjson "stats --json not read_only" 'd["read_only"] is False'
# MRTX_READ_ONLY=0/no/off/empty: read-write
expect_rc 0 "MRTX_READ_ONLY=0 put" env MRTX_READ_ONLY=0 "$MRTX" put "$S" t r3 f:q v3
expect_rc 0 "MRTX_READ_ONLY=off put" env MRTX_READ_ONLY=off "$MRTX" put "$S" t r3 f:q v3
expect_rc 0 "MRTX_READ_ONLY= put" env MRTX_READ_ONLY= "$MRTX" put "$S" t r3 f:q v3
expect_out $'r1 f:q v1\nr2 f:q v2\nr3 f:q v3' "nothing but r3 written" "$MRTX" scan "$S" t
if [ "$RADOS" = 0 ]; then
	expect_rc 0 "delrow r3" "$MRTX" delrow "$S" t r3
	# one more read-only pass over every reader; data.mdb is untouched
	before=$(sums "$S")
	for c in "get $S t r1 f:q" "scan $S t" "locks $S" "check $S" "stats $S" "lock $S t r1" \
		"recover $S --dry-run"; do
		# shellcheck disable=SC2086
		"$MRTX" --read-only $c >/dev/null 2>&1 || bad "--read-only $c"
	done
	"$MRTX" --read-only put "$S" t r1 f:q X 2>/dev/null
	[ "$(sums "$S")" == "$before" ] && ok || bad "a read-only pass changed data.mdb"
fi

# a read-only open creates nothing
M=$(store missing)
expect_err 1 "creates nothing" "--read-only create-table of a missing store" \
	"$MRTX" --read-only create-table "$M" t f
[ "$RADOS" = 1 ] || { [ ! -e "$M" ] && ok || bad "--read-only create-table made $M"; }
expect_err 1 "creates nothing|no such store directory" "--read-only: still nothing there" \
	"$MRTX" --read-only get "$M" t r f:q

# stale locks: a reader may not settle them, recover --dry-run reports them
L=$(store locked)
expect_rc 0 "locked: create-table" "$MRTX" create-table "$L" t f
printf 'put t a f:q 1\nput t b f:q 1\n' | "$MRTX" txn "$L" >/dev/null || bad "locked: setup"
printf 'put t a f:q 2\nput t b f:q 2\n' |
	MRTX_FAILPOINTS=commit.after_point=exit "$MRTX" txn "$L" >/dev/null 2>&1
[ $? -eq 99 ] && ok || bad "locked: the crashed txn did not exit 99"
[ "$RADOS" = 0 ] && before=$(sums "$L")
"$MRTX" --read-only locks "$L" --json | pyjson "--read-only locks lists the crashed txn" \
	'len(d) == 2 and sorted(l["state"] for l in d) == ["COMMITTED", "PREWRITTEN"]'
"$MRTX" --read-only recover "$L" --dry-run --json | pyjson "--read-only recover --dry-run" \
	'd["dry_run"] is True and d["rolled_forward"] == 1 and d["errors"] == 0'
# row b (PREWRITTEN, its primary a COMMITTED): on RADOS rolling forward
# writes, so a read-only handle cannot read it; on LMDB the read comes from
# a snapshot, where the commit is whole (b read through its redo, DESIGN §9)
if [ "$RADOS" = 1 ]; then
	expect_err 1 "read-only handle cannot" "--read-only get of a row to roll forward" \
		"$MRTX" --read-only get "$L" t b f:q
else
	expect_out 2 "--read-only get of a committed row left to roll forward" \
		"$MRTX" --read-only get "$L" t b f:q
fi
expect_err 1 "$RO_RE" "--read-only recover of stale locks" "$MRTX" --read-only recover "$L"
[ "$RADOS" = 1 ] || { [ "$(sums "$L")" == "$before" ] && ok || bad "locked: a read-only reader wrote"; }
expect_rc 0 "locked: recover" "$MRTX" recover "$L"
expect_out 2 "--read-only get after recover" "$MRTX" --read-only get "$L" t b f:q

if [ "$RADOS" = 1 ]; then
	echo "$pass passed, $fail failed (LMDB map and file parts skipped on RADOS)"
	[ "$fail" -eq 0 ]
	exit
fi

# ------------------------------------------------------ map size (LMDB)
# map_json DIR: the map size recorded in the store (a read-only open ignores
# map_size and reports the file's own)
map_of() { "$MRTX" --read-only stats "$1" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["map_size"])'; }

F=$TMP/full
head -c 100000 /dev/urandom >"$TMP/val"
expect_rc 0 "full: create-table at 1M" env MRTX_MAP_SIZE=1M "$MRTX" create-table "$F" t f
[ "$(map_of "$F")" == 1048576 ] && ok || bad "full: map $(map_of "$F"), want 1048576"
n=0
while [ $n -lt 100 ]; do
	MRTX_MAP_SIZE=1M "$MRTX" put "$F" t "r$n" f:q --file "$TMP/val" >/dev/null 2>"$TMP/err" || break
	n=$((n + 1))
done
[ $n -gt 0 ] && [ $n -lt 100 ] && ok || bad "full: $n puts of 100 KB fit in a 1 MiB map"
grep -q "full" "$TMP/err" && grep -q -- "--map-size SIZE or MRTX_MAP_SIZE" "$TMP/err" && ok ||
	bad "full: the error hints at --map-size: $(cat "$TMP/err")"
expect_err 1 "full.*--map-size" "full: still full at 1M" \
	env MRTX_MAP_SIZE=1M "$MRTX" put "$F" t "r$n" f:q --file "$TMP/val"
expect_rc 0 "full: --map-size 4M grows it" "$MRTX" --map-size 4M put "$F" t "r$n" f:q --file "$TMP/val"
[ "$(map_of "$F")" == 4194304 ] && ok || bad "full: map $(map_of "$F"), want 4194304"
n=$((n + 1))
expect_rc 0 "full: a smaller MRTX_MAP_SIZE does not shrink it" \
	env MRTX_MAP_SIZE=1M "$MRTX" put "$F" t "r$n" f:q --file "$TMP/val"
[ "$(map_of "$F")" == 4194304 ] && ok || bad "full: map $(map_of "$F") after a 1M open, want 4194304"
expect_rc 0 "full: MRTX_MAP_SIZE=6m grows it" env MRTX_MAP_SIZE=6m "$MRTX" put "$F" t x f:q 1
[ "$(map_of "$F")" == 6291456 ] && ok || bad "full: map $(map_of "$F"), want 6291456"
expect_rc 0 "full: the flag wins over the variable" \
	env MRTX_MAP_SIZE=16M "$MRTX" --map-size 8M put "$F" t x f:q 2
[ "$(map_of "$F")" == 8388608 ] && ok || bad "full: map $(map_of "$F"), want 8388608 (the flag's)"
expect_rc 0 "full: --read-only ignores --map-size" "$MRTX" --read-only --map-size 1G get "$F" t x f:q
[ "$(map_of "$F")" == 8388608 ] && ok || bad "full: a read-only open changed the map"
expect_out "$((n + 2))" "full: every row is there" "$MRTX" scan "$F" t --count
"$MRTX" check "$F" >/dev/null 2>&1 && ok || bad "full: check after growing"

# ------------------------------------- a store this user cannot write (LMDB)
# Another uid: as root, nobody (setpriv) on files root made and did not
# let others write; as any other user, this user on files made read-only.
P=$TMP/perm
expect_rc 0 "perm: create-table" "$MRTX" create-table "$P" t f
expect_rc 0 "perm: put" "$MRTX" put "$P" t r1 f:q v1
as=()
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null &&
		setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
		chmod 755 "$TMP" "$P" && chmod 644 "$P"/*.mdb
		as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		"${as[@]}" test -r "$P/data.mdb" -a -x "$MRTX" || as=()
	fi
else
	chmod a-w "$P" "$P"/*.mdb
	as=(env)
fi
if [ ${#as[@]} -eq 0 ]; then
	skip "perm: root without setpriv (or nobody cannot reach $TMP or $MRTX): unwritable store not tested"
else
	before=$(sums "$P")
	expect_err 1 "only read can open it with --read-only" "perm: a read-write open suggests --read-only" \
		"${as[@]}" "$MRTX" get "$P" t r1 f:q
	expect_out v1 "perm: --read-only get" "${as[@]}" "$MRTX" --read-only get "$P" t r1 f:q
	expect_out "r1 f:q v1" "perm: --read-only scan" "${as[@]}" "$MRTX" --read-only scan "$P" t
	expect_out "" "perm: --read-only locks" "${as[@]}" "$MRTX" --read-only locks "$P"
	expect_rc 0 "perm: --read-only check" "${as[@]}" "$MRTX" --read-only check "$P"
	expect_rc 0 "perm: --read-only recover --dry-run" \
		"${as[@]}" "$MRTX" --read-only recover "$P" --dry-run
	expect_rc 0 "perm: --read-only stats" "${as[@]}" "$MRTX" --read-only stats "$P"
	grep -q "without lock.mdb" "$TMP/out" && ok || bad "perm: stats shows the lockless open"
	# a backup through a lockless open could be torn by a writer: refused
	expect_err 1 "without its lock.mdb" "perm: --read-only backup refused (lockless)" \
		"${as[@]}" "$MRTX" --read-only backup "$P" "$TMP/perm-copy"
	[ ! -e "$TMP/perm-copy" ] && ok || bad "perm: a refused backup made its destination"
	expect_out v1 "perm: MRTX_READ_ONLY=1 get" \
		"${as[@]}" env MRTX_READ_ONLY=1 "$MRTX" get "$P" t r1 f:q
	expect_err 1 "$RO_RE" "perm: --read-only put" "${as[@]}" "$MRTX" --read-only put "$P" t r1 f:q X
	expect_err 1 "$RO_RE" "perm: --read-only recover" "${as[@]}" "$MRTX" --read-only recover "$P"
	[ "$(sums "$P")" == "$before" ] && ok || bad "perm: data.mdb changed"
	chmod u+w "$P" "$P"/*.mdb
fi

# ------------------------------------------ a read-only mount (LMDB; root)
R=$TMP/rom
mkdir "$R"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
	unshare -m sh -c "mount --bind '$P' '$R' && mount -o remount,bind,ro '$R'" 2>/dev/null; then
	before=$(sums "$P")
	# one namespace per command: each mounts, runs, and drops the mount
	inro() { unshare -m sh -c 'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"' sh "$P" "$R" "$@"; }
	expect_err 1 "Read-only file system" "rom: a read-write open fails" inro "$MRTX" get "$R" t r1 f:q
	expect_out v1 "rom: --read-only get" inro "$MRTX" --read-only get "$R" t r1 f:q
	expect_out "r1 f:q v1" "rom: --read-only scan" inro "$MRTX" --read-only scan "$R" t
	expect_rc 0 "rom: --read-only check" inro "$MRTX" --read-only check "$R"
	expect_rc 0 "rom: --read-only stats" inro "$MRTX" --read-only stats "$R"
	grep -q "without lock.mdb" "$TMP/out" && ok || bad "rom: stats shows the lockless open"
	expect_rc 0 "rom: --read-only recover --dry-run" inro "$MRTX" --read-only recover "$R" --dry-run
	expect_err 1 "$RO_RE" "rom: --read-only put" inro "$MRTX" --read-only put "$R" t r1 f:q X
	[ "$(sums "$P")" == "$before" ] && ok || bad "rom: data.mdb changed"
else
	skip "rom: no mount namespace (not root, or unshare -m refused): read-only mount not tested"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
