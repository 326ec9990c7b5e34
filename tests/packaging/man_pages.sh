#!/usr/bin/env bash
# man_pages.sh - the manual pages format without warnings, and mrtx(1)
# documents every subcommand of `mrtx --help`, every option of each
# subcommand's usage line, and every default that subcommand's --help
# states ("default 1000", "default: now", "Defaults: --seconds 30"): the
# value appears in the subcommand's entry of mrtx(1).  mrtx(3) names every
# function and error code that include/mrtx.h declares.
#
#   usage: man_pages.sh PATH/TO/mrtx DOCS/MAN
set -uo pipefail
MRTX=${1:?usage: man_pages.sh PATH/TO/mrtx DOCS/MAN}
MAN=${2:?usage: man_pages.sh PATH/TO/mrtx DOCS/MAN}
HDR=$MAN/../../include/mrtx.h
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

for page in "$MAN/mrtx.1" "$MAN/mrtx.3"; do
	if command -v groff >/dev/null; then
		warn=$(groff -ww -man -z "$page" 2>&1)
		[ -z "$warn" ] && ok || bad "$(basename "$page"): groff warnings: $warn"
	fi
done
# the rendered text of mrtx(1), without hyphenation or adjustment
text=$(groff -man -Tutf8 -rHY=0 -dAD=l -rLL=200n "$MAN/mrtx.1" 2>/dev/null |
	sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g; s/‐/-/g; s/−/-/g')
[ -n "$text" ] || { echo "FAIL: mrtx.1 does not render"; exit 1; }
for s in $("$MRTX" --help | awk '/^  [a-z]/ {print $1}'); do
	grep -qE "^ +$s( |$)" <<<"$text" && ok || bad "mrtx.1 has no entry for $s"
	for o in $("$MRTX" "$s" --help | head -1 | grep -oE -- '--[a-z-]+'); do
		grep -qF -- "$o" <<<"$text" && ok || bad "mrtx.1 does not mention $s $o"
	done
	# the defaults --help states, each in the subcommand's entry (from its
	# first line, indented 7, to the next line indented 7)
	help=$("$MRTX" "$s" --help 2>&1 | tr '\n' ' ')
	entry=$(awk -v s="$s" '$0 ~ "^       "s"( |$)" { on = 1; print; next }
		on && /^       [^ ]/ { on = 0 } on' <<<"$text")
	for v in $({
		grep -oE '[Dd]efault:? [A-Za-z0-9]+' <<<"$help" | awk '{print $2}'
		grep -oE '[Dd]efaults:[^.]*' <<<"$help" | grep -oE -- '--[a-z-]+ [A-Za-z0-9.]+' |
			awk '{print $2}'
	} | grep -vxE 'the|every|and|as|or|a|an|ROW|off|both|no|from|when|only|full|value|is' |
		sort -u); do
		grep -qwF -- "$v" <<<"$entry" && ok ||
			bad "mrtx.1: the entry of $s lacks the default '$v' that $s --help states"
	done
done
# mrtx(3) and the header: every declared function, every error code
if [ -f "$HDR" ]; then
	for f in $(grep -oE '^[a-z][a-z0-9_ ]*[ *](mrtx_[a-z0-9_]+)\(' "$HDR" | grep -oE 'mrtx_[a-z0-9_]+' |
		sort -u) $(grep -oE '^\s+MRTX_E[A-Z]+' "$HDR" | tr -d ' \t' | sort -u); do
		grep -qw -- "$f" "$MAN/mrtx.3" && ok || bad "mrtx.3 does not name $f of mrtx.h"
	done
fi
for w in MRTX_FAILPOINTS "EXIT STATUS" EXAMPLES; do
	grep -qF "$w" <<<"$text" && ok || bad "mrtx.1 lacks $w"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
