#!/usr/bin/env bash
# cli_shell.sh - `mrtx shell` with piped input (no terminal: no prompt, no
# editing, no history, the same semantics), and the shell-like quoting of
# the line language in `mrtx txn` too.  The terminal side is
# tests/cli/test_shell.c, through a pseudo-terminal.
#
# usage: cli_shell.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
MRTX=${1:?usage: cli_shell.sh PATH-TO-mrtx}
base=${TMPDIR:-/tmp}
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
TMP=$(mktemp -d "$base/mrtx-shell.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# no history file may appear in piped use, wherever HOME points
export HOME=$TMP/home
mkdir -p "$HOME"
unset MRTX_HISTORY MRTX_FAILPOINTS
S=$TMP/store
"$MRTX" create-table "$S" t f >/dev/null || { echo "FAIL: create-table" >&2; exit 1; }

# shell LINES...: feed the lines to `mrtx shell $S`; sets out, err, rc
shell() {
	out=$(printf '%s\n' "$@" | "$MRTX" shell "$S" 2>"$TMP/err")
	rc=$?
	err=$(cat "$TMP/err")
}
# cell ROW: the value of t/ROW f:q, or "(absent)"
cell() { "$MRTX" get "$S" t "$1" f:q 2>/dev/null || echo "(absent)"; }
check() { # check DESC WANT GOT
	[ "$2" == "$3" ] && ok || bad "$1: got '$3', want '$2'"
}

# ---------------------------------------------------------------- a clean session
shell 'put t a f:q 1' 'get t a f:q' '# a comment' '' 'begin' 'put t b f:q 2' 'get t b f:q' \
	'commit' 'begin' 'put t c f:q 3' 'rollback' 'begin' 'put t c f:q 4' 'abort' 'scan t'
check "clean session: output" $'1\n2\na f:q 1\nb f:q 2' "$out"
check "clean session: exit status" 0 "$rc"
check "clean session: nothing on stderr" "" "$err"
check "autocommit put" 1 "$(cell a)"
check "committed txn" 2 "$(cell b)"
check "rolled back txn" "(absent)" "$(cell c)"

# ---------------------------------------------------------------- errors keep the txn
shell 'begin' 'put t d f:q 5' 'frob t' 'get nosuch r f:q' 'get t d zz:q' \
	"put t e f:q 'open" 'commit' 'commit' 'get t d f:q'
check "typos: output" 5 "$out"
check "typos: exit status" 1 "$rc"
check "typos: the txn committed" 5 "$(cell d)"
grep -q "^mrtx: shell: line 3: unknown command 'frob' (type help)$" <<<"$err" && ok ||
	bad "unknown command names line and word: $err"
grep -q "^mrtx: shell: line 4: get: .*nosuch.*(the transaction is still open)$" <<<"$err" &&
	ok || bad "unknown table keeps the txn: $err"
grep -q "^mrtx: shell: line 6: unterminated single quote (opened at column 13)$" <<<"$err" &&
	ok || bad "unterminated quote message: $err"
grep -q "^mrtx: shell: line 8: no transaction is open" <<<"$err" && ok ||
	bad "commit without begin: $err"
grep -q "^mrtx: shell: line 5: get: .*zz.*(the transaction is still open)$" <<<"$err" &&
	ok || bad "unknown family keeps the txn: $err"
[ "$(grep -c . <<<"$err")" -eq 5 ] && ok || bad "typos: 5 error lines, got: $err"

# ---------------------------------------------------------------- end of input, quit
shell 'begin' 'put t f f:q 6'
check "EOF in txn: exit status" 1 "$rc"
check "EOF in txn: nothing written" "(absent)" "$(cell f)"
grep -q "the open transaction was rolled back" <<<"$err" && ok || bad "EOF in txn says so: $err"
shell 'begin' 'put t f f:q 6' 'quit' 'put t g f:q 7'
check "quit in txn: exit status" 1 "$rc"
check "quit in txn: nothing written" "(absent)" "$(cell f)"
check "quit stops reading" "(absent)" "$(cell g)"
shell 'put t h f:q 8' 'exit' 'put t g f:q 7'
check "exit: status" 0 "$rc"
check "exit: earlier command ran" 8 "$(cell h)"
check "exit stops reading" "(absent)" "$(cell g)"
shell 'begin extra' 'help me'
check "shell words take no arguments" 1 "$rc"
grep -q "begin takes no arguments" <<<"$err" && ok || bad "begin extra: $err"

# ---------------------------------------------------------------- quoting
shell "put t 'two words' cf:\"x\" v" "put t q1 f:\"q\" 'it'\\''s'" "put t q2 f:q \"say \\\"hi\\\"\"" \
	"put t q3 f:q a\\ b\\x21" "put t q4 f:q ''" "get t q1 f:q" "get t q3 f:q" "\"get\" t q2 'f:q'"
check "quoting: output" $'it\'s\na b!\nsay "hi"' "$out"
grep -q "line 1: put: table 't' has no family 'cf'" <<<"$err" && ok || bad "cf:\"x\" names family cf: $err"
check "quoting: empty value" "" "$("$MRTX" get "$S" t q4 f:q)"
out=$(printf '%s\n' "put t 'r x' f:\"q y\" 'a\\x41'" | "$MRTX" txn "$S" && "$MRTX" scan "$S" t --start 'r x' --end 'r y')
check "txn: the same quoting" 'r\x20x f:q\x20y a\\x41' "$out"
printf '%s\n' "put t r f:q it's" | "$MRTX" txn "$S" 2>"$TMP/err"
check "txn: unterminated quote is a usage error" 2 "$?"
grep -q "line 1: unterminated single quote (opened at column 15)" "$TMP/err" && ok ||
	bad "txn quote message: $(cat "$TMP/err")"

# ---------------------------------------------------------------- help, usage, files
shell 'help'
grep -q "^  rollback, abort" <<<"$out" && grep -q "'single quotes'" <<<"$out" && ok ||
	bad "help lists commands and quoting: $out"
"$MRTX" shell --help >"$TMP/out" && grep -q "MRTX_HISTORY" "$TMP/out" && ok ||
	bad "shell --help"
"$MRTX" shell </dev/null 2>/dev/null
check "shell without STORE" 2 "$?"
"$MRTX" shell "$TMP/none" </dev/null 2>/dev/null
check "shell on a missing store" 1 "$?"
[ -e "$TMP/none" ] && bad "a missing store was created" || ok
[ -e "$HOME/.mrtx_history" ] && bad "piped input wrote a history file" || ok
"$MRTX" --help | grep -q "^  shell " && ok || bad "mrtx --help lists shell"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
