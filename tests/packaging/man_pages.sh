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
# (the checks match in bash, not in a grep per check: a few hundred
# processes made this take half a minute on a loaded machine)
nl=$'\n'
subs=$("$MRTX" --help | awk '/^  [a-z]/ {print $1}')
# every subcommand's entry (from its first line, indented 7, to the next
# line indented 7), in one pass: entries[s]
declare -A entries
while IFS=$'\t' read -r k line; do
	entries[$k]+="$line$nl"
done < <(awk -v list="$subs" 'BEGIN { n = split(list, a, "\n"); for (i = 1; i <= n; i++) want[a[i]] = 1 }
	/^       [^ ]/ { split($0, w, " "); cur = (w[1] in want) ? w[1] : "" }
	cur != "" { print cur "\t" $0 }' <<<"$text")
skip=" the every and as or a an ROW off both no from when only full value is "
for s in $subs; do
	re="(^|$nl) +$s( |$nl|\$)"
	[[ $text =~ $re ]] && ok || bad "mrtx.1 has no entry for $s"
	help=$("$MRTX" "$s" --help 2>&1)
	rest=${help%%"$nl"*}
	while [[ $rest =~ (--[a-z-]+)(.*) ]]; do
		o=${BASH_REMATCH[1]}
		rest=${BASH_REMATCH[2]}
		[[ $text == *"$o"* ]] && ok || bad "mrtx.1 does not mention $s $o"
	done
	# the defaults --help states ("default X", "Defaults: --opt X, ..."),
	# each in the subcommand's entry
	help=${help//"$nl"/ }
	declare -A seen=()
	rest=$help
	while [[ $rest =~ [Dd]efault:?\ ([A-Za-z0-9]+)(.*) ]]; do
		seen[${BASH_REMATCH[1]}]=1
		rest=${BASH_REMATCH[2]}
	done
	rest=$help
	while [[ $rest =~ [Dd]efaults:([^.]*)(.*) ]]; do
		list=${BASH_REMATCH[1]}
		rest=${BASH_REMATCH[2]}
		while [[ $list =~ --[a-z-]+\ ([A-Za-z0-9.]+)(.*) ]]; do
			seen[${BASH_REMATCH[1]}]=1
			list=${BASH_REMATCH[2]}
		done
	done
	entry=${entries[$s]-}
	for v in "${!seen[@]}"; do
		[[ $skip == *" $v "* ]] && continue
		re="(^|[^A-Za-z0-9_])${v//./\\.}([^A-Za-z0-9_]|\$)"
		[[ $entry =~ $re ]] && ok ||
			bad "mrtx.1: the entry of $s lacks the default '$v' that $s --help states"
	done
	unset seen
done
# mrtx(3) and the header: every declared function, every error code
if [ -f "$HDR" ]; then
	m3=$(<"$MAN/mrtx.3")
	for f in $(grep -oE '^[a-z][a-z0-9_ ]*[ *](mrtx_[a-z0-9_]+)\(' "$HDR" | grep -oE 'mrtx_[a-z0-9_]+' |
		sort -u) $(grep -oE '^\s+MRTX_E[A-Z]+' "$HDR" | tr -d ' \t' | sort -u); do
		re="(^|[^A-Za-z0-9_])$f([^A-Za-z0-9_]|\$)"
		[[ $m3 =~ $re ]] && ok || bad "mrtx.3 does not name $f of mrtx.h"
	done
fi
for w in MRTX_FAILPOINTS "EXIT STATUS" EXAMPLES; do
	[[ $text == *"$w"* ]] && ok || bad "mrtx.1 lacks $w"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
