# clilib.sh - what the tests/cli_*.sh scripts share; sourced after setting
# NAME (the temp directory's and RADOS stores' prefix), with $1 the mrtx
# binary.  Gives MRTX (that binary; on RADOS a wrapper of it, below), TMP
# (removed at exit), RADOS (1 with MRTX_TEST_STORE=rados, which needs
# MRTX_TEST_RADOS_CONF), PY (the Python 3 interpreter, for the scripts' own
# Python), pass/fail counters and:
#   store NAME                   the address of a fresh store called NAME
#   ok / bad MSG                 count a check (bad prints MSG)
#   expect_rc RC DESC CMD...     CMD exits RC (stdout in $TMP/out, stderr in $TMP/err)
#   expect_err RC RE DESC CMD... CMD exits RC, stderr matches RE, stdout empty
#                                (its stdin is /dev/null)
#   expect_out OUT DESC CMD...   CMD exits 0 printing exactly OUT
#   same_file DESC A B           files A and B are the same bytes
#   pyjson DESC EXPR             the JSON on stdin, as d, makes the Python EXPR true
#   finish                       print "N passed, M failed"; exit 0 iff none failed
# Standard input is /dev/null unless a call redirects it (expect_rc and
# expect_out pass a call's redirection on to CMD).
MRTX=${1:?usage: $0 PATH-TO-mrtx}
# stores on tmpfs when there is one: fsync there is free, and the tests are
# about states, not the disk
_base=${TMPDIR:-/tmp}
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && _base=/dev/shm
TMP=$(mktemp -d "$_base/mrtx-$NAME.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
exec </dev/null

# python3 resolved once to the interpreter it starts: a version manager's
# shim in PATH (pyenv's is a shell script) costs about 0.3 s a call, and the
# damage sweeps call Python hundreds of times
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$PY" ] || PY=python3

RADOS=0
if [ "${MRTX_TEST_STORE:-}" == rados ]; then
	[ -n "${MRTX_TEST_RADOS_CONF:-}" ] || { echo "MRTX_TEST_STORE=rados needs MRTX_TEST_RADOS_CONF" >&2; exit 1; }
	RADOS=1
fi

# On RADOS a sanitized run of the tool costs three times an unsanitized
# one, nearly all of it LeakSanitizer's exit scan of librados's static data
# (over 100 MB).  So there MRTX is a wrapper that leak-checks the first run
# of each subcommand in the script and turns the check off for the later
# ones (ASAN_OPTIONS means nothing to a build without ASan); every run is
# still under ASan and UBSan, and every run on LMDB is leak-checked.
if [ "$RADOS" = 1 ]; then
	{
		echo '#!/bin/bash'
		printf 'bin=%q marks=%q\n' "$MRTX" "$TMP"
		cat <<-'EOF'
		sub= skip=0
		for a in "$@"; do
			if [ "$skip" = 1 ]; then skip=0; continue; fi
			case $a in --map-size) skip=1 ;; -*) ;; *) sub=$a; break ;; esac
		done
		mark="$marks/.leakcheck-${sub//\//_}"
		if [ -e "$mark" ]; then
			export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
		else
			: >"$mark"
		fi
		exec "$bin" "$@"
		EOF
	} >"$TMP/mrtx"
	chmod +x "$TMP/mrtx"
	MRTX=$TMP/mrtx
fi

store() {
	if [ "$RADOS" = 1 ]; then
		echo "rados://mrtx/$NAME$$-$1?conf=$MRTX_TEST_RADOS_CONF"
	else
		echo "$TMP/$1"
	fi
}

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

expect_rc() {
	local want=$1 desc=$2 got
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok; else
		bad "$desc: exit $got, want $want"
		sed 's/^/    /' "$TMP/err" >&2
	fi
}

expect_err() {
	local want=$1 re=$2 desc=$3 got
	shift 3
	"$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	got=$?
	if [ "$got" -eq "$want" ] && grep -qE -- "$re" "$TMP/err" && [ ! -s "$TMP/out" ]; then
		ok
	else
		bad "$desc: exit $got (want $want), stderr: $(head -c 300 "$TMP/err"), stdout $(wc -c <"$TMP/out") bytes"
	fi
}

expect_out() {
	local want=$1 desc=$2 got rc
	shift 2
	got=$("$@" 2>"$TMP/err")
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$got" == "$want" ]; then ok; else
		bad "$desc: exit $rc, output '$got', want '$want'"
		sed 's/^/    /' "$TMP/err" >&2
	fi
}

same_file() {
	if cmp -s "$2" "$3"; then ok; else bad "$1: $2 and $3 differ"; fi
}

pyjson() {
	if "$PY" -c "import json,sys
d = json.loads(sys.stdin.read())
sys.exit(0 if ($2) else 1)"; then ok; else bad "$1"; fi
}

finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
