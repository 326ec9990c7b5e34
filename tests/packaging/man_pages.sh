#!/usr/bin/env bash
# man_pages.sh - the manual pages format without warnings, and mrtx(1)
# documents every subcommand of `mrtx --help` and every option of each
# subcommand's usage line.
#
#   usage: man_pages.sh PATH/TO/mrtx DOCS/MAN
set -uo pipefail
MRTX=${1:?usage: man_pages.sh PATH/TO/mrtx DOCS/MAN}
MAN=${2:?usage: man_pages.sh PATH/TO/mrtx DOCS/MAN}
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
done
for w in MRTX_FAILPOINTS "EXIT STATUS" EXAMPLES; do
	grep -qF "$w" <<<"$text" && ok || bad "mrtx.1 lacks $w"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
