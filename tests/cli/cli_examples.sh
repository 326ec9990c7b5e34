#!/usr/bin/env bash
# cli_examples.sh - drive the example programs (examples/comments.c,
# examples/datastore.c, examples/messages.c) end to end: newest-first
# order, counts exact after deletes, rank replacement and a sent message
# all-or-nothing (also when the process dies in the middle of its commit),
# racing senders losing no increment.
#
#   usage: cli_examples.sh PATH/TO/mrtx      (the examples sit beside it)
set -u

BIN=$(dirname "${1:?usage: cli_examples.sh PATH/TO/mrtx}")
C="$BIN/comments"
D="$BIN/datastore"
MS="$BIN/messages"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mrtx-cli-examples.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
S="$TMP/store"
# The examples' wall clock, frozen: every comment and message gets the same
# "now", so the newest-first orders below hold only through the examples'
# own clocks (max(now, last + 1)), never through the real one.
export MRTX_EXAMPLE_NOW_US=1700000000000000
pass=0
fail=0

ok() { # name, then a command that must succeed
	local name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $name" >&2
	fi
}

same() { # name, expected, actual
	if [ "$2" == "$3" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		printf 'FAIL: %s\n--- expected\n%s\n--- got\n%s\n' "$1" "$2" "$3" >&2
	fi
}

status() { # run, print only the exit status
	"$@" >/dev/null 2>&1
	echo $?
}

for b in "$C" "$D" "$MS"; do
	[ -x "$b" ] || { echo "missing $b"; echo "0 passed, 1 failed"; exit 1; }
done

# ---------------------------------------------------------------- comments
"$C" "$S" add alice p1 o1 "first, on p1" >/dev/null
"$C" "$S" add bob p1 o2 "second" >/dev/null
"$C" "$S" add alice p2 o3 "third, on p2" >/dev/null
"$C" "$S" add carol p1 o4 "fourth" >/dev/null
"$C" "$S" add alice p1 o5 "fifth" >/dev/null

same "by-user newest first" \
"order=o5 product=p1 user=alice: fifth
order=o3 product=p2 user=alice: third, on p2
order=o1 product=p1 user=alice: first, on p1" "$("$C" "$S" by-user alice)"
same "by-user N" "order=o5 product=p1 user=alice: fifth" "$("$C" "$S" by-user alice 1)"
same "by-product newest first" \
"order=o5 product=p1 user=alice: fifth
order=o4 product=p1 user=carol: fourth
order=o2 product=p1 user=bob: second
order=o1 product=p1 user=alice: first, on p1" "$("$C" "$S" by-product p1)"
same "by-product N" 2 "$("$C" "$S" by-product p1 2 | wc -l)"
same "by-product other product" "order=o3 product=p2 user=alice: third, on p2" \
	"$("$C" "$S" by-product p2)"
same "unknown user lists nothing" "" "$("$C" "$S" by-user nobody)"
same "duplicate comment refused" 1 "$(status "$C" "$S" add alice p1 o1 again)"
same "duplicate left no index rows" 3 "$("$C" "$S" by-user alice | wc -l)"
same "usage error" 2 "$(status "$C" "$S" frobnicate x)"

same "rank" 0 "$(status "$C" "$S" rank p1 o4 o1 o2)"
TOP1="$("$C" "$S" top p1)"
same "top list in rank order" \
"1 order=o4 product=p1 user=carol: fourth
2 order=o1 product=p1 user=alice: first, on p1
3 order=o2 product=p1 user=bob: second" "$TOP1"
same "rank with an unknown order fails" 1 "$(status "$C" "$S" rank p1 o5 o9)"
same "failed rank changed nothing" "$TOP1" "$("$C" "$S" top p1)"
same "rank with another product's order fails" 1 "$(status "$C" "$S" rank p1 o3)"
same "failed rank changed nothing (2)" "$TOP1" "$("$C" "$S" top p1)"
same "duplicate order refused" 2 "$(status "$C" "$S" rank p1 o1 o1)"
# Die after prewriting: readers roll the replacement back, whole.
same "rank dies before the commit point" 99 \
	"$(MRTX_FAILPOINTS=commit.after_prewrite=exit status "$C" "$S" rank p1 o5)"
same "rolled back as a whole" "$TOP1" "$("$C" "$S" top p1)"
# Die right after the commit point: readers roll it forward, whole.
same "rank dies after the commit point" 99 \
	"$(MRTX_FAILPOINTS=commit.after_point=exit status "$C" "$S" rank p1 o5 o2)"
same "rolled forward as a whole" \
"1 order=o5 product=p1 user=alice: fifth
2 order=o2 product=p1 user=bob: second" "$("$C" "$S" top p1)"
same "shorter list replaces longer" 0 "$(status "$C" "$S" rank p1 o1)"
same "one entry left" "1 order=o1 product=p1 user=alice: first, on p1" "$("$C" "$S" top p1)"
same "top of unranked product" "" "$("$C" "$S" top p2)"

# --------------------------------------------------------------- datastore
same "add photo 1" "photo 1" "$("$D" "$S" add ann+bo photo beach)"
same "add photo 2" "photo 2" "$("$D" "$S" add ann+bo photo mountain)"
same "add photo 3" "photo 3" "$("$D" "$S" add ann+bo photo city)"
same "add comment 1.1" "comment 1" "$("$D" "$S" add ann+bo comment 1 nice)"
same "add comment 1.2" "comment 2" "$("$D" "$S" add ann+bo comment 1 wow)"
same "add comment 2.1" "comment 1" "$("$D" "$S" add ann+bo comment 2 cold)"
same "comment on a missing photo" 1 "$(status "$D" "$S" add ann+bo comment 9 x)"
same "the missing photo is named" "datastore: add: ann+bo: photo 9 not found" \
	"$("$D" "$S" add ann+bo comment 9 x 2>&1)"
"$D" "$S" add cy+dee photo other-couple >/dev/null
same "list" \
"photos: 3 (next id 4)
photo 1: beach
  comments: 2 (next id 3)
  comment 1: nice
  comment 2: wow
photo 2: mountain
  comments: 1 (next id 2)
  comment 1: cold
photo 3: city" "$("$D" "$S" list ann+bo)"
same "get photo" "mountain" "$("$D" "$S" get ann+bo photo 2)"
same "get comment" "wow" "$("$D" "$S" get ann+bo comment 1 2)"
same "get missing" 1 "$(status "$D" "$S" get ann+bo comment 2 5)"
same "the missing comment is named" "datastore: get: ann+bo: comment 5 of photo 2 not found" \
	"$("$D" "$S" get ann+bo comment 2 5 2>&1)"
same "a missing photo is named" "datastore: get: ann+bo: photo 7 not found" \
	"$("$D" "$S" get ann+bo photo 7 2>&1)"
same "check" "ann+bo: 3 photos, metadata exact" "$("$D" "$S" check ann+bo)"

same "delete photo with its comments" "deleted photo 1 and 2 comments" \
	"$("$D" "$S" delete ann+bo photo 1)"
same "delete comment" "deleted comment 1" "$("$D" "$S" delete ann+bo comment 2 1)"
same "delete missing" 1 "$(status "$D" "$S" delete ann+bo photo 1)"
same "ids are not reused" "photo 4" "$("$D" "$S" add ann+bo photo lake)"
same "list after deletes" \
"photos: 3 (next id 5)
photo 2: mountain
  comments: 0 (next id 2)
photo 3: city
photo 4: lake" "$("$D" "$S" list ann+bo)"
same "check after deletes" "ann+bo: 3 photos, metadata exact" "$("$D" "$S" check ann+bo)"
same "delete dies before the commit point" 99 \
	"$(MRTX_FAILPOINTS=commit.after_prewrite=exit status "$D" "$S" delete ann+bo photo 2)"
same "delete was rolled back" "mountain" "$("$D" "$S" get ann+bo photo 2)"
same "check after killed writers" "ann+bo: 3 photos, metadata exact" "$("$D" "$S" check ann+bo)"
same "other couple untouched" "photos: 1 (next id 2)
photo 1: other-couple" "$("$D" "$S" list cy+dee)"
same "datastore usage error" 2 "$(status "$D" "$S" add ann+bo video x)"

# ---------------------------------------------------------------- messages
# (the commands and lines of examples/python/messages.py's test)
S="$TMP/messages"
"$MS" "$S" send c1 alice bob "hi bob" >/dev/null
"$MS" "$S" send c1 bob alice "hi alice" >/dev/null
"$MS" "$S" send c2 alice carol "hey carol" >/dev/null
same "messages: send numbers in the conversation" "sent #3" \
	"$("$MS" "$S" send c1 alice bob "dinner?")"
same "messages: list newest first" \
"#3 alice: dinner?
#2 bob: hi alice
#1 alice: hi bob" "$("$MS" "$S" list c1)"
same "messages: list N" "#3 alice: dinner?" "$("$MS" "$S" list c1 1)"
same "messages: inbox of every conversation, newest first" \
"c1 #3 alice: dinner?
c2 #1 alice: hey carol
c1 #2 bob: hi alice
c1 #1 alice: hi bob" "$("$MS" "$S" inbox alice)"
same "messages: another inbox" "c2 #1 alice: hey carol" "$("$MS" "$S" inbox carol)"
same "messages: counters" \
"count 3
unread alice 1
unread bob 2" "$("$MS" "$S" stats c1)"
same "messages: read" 0 "$(status "$MS" "$S" read c1 bob)"
same "messages: read clears unread" \
"count 3
unread alice 1
unread bob 0" "$("$MS" "$S" stats c1)"
same "messages: check" "ok: 3 messages" "$("$MS" "$S" check c1)"
same "messages: a stranger is refused" \
	"messages: send: c1 is the conversation of alice,bob" "$("$MS" "$S" send c1 alice carol x 2>&1)"
same "messages: the refused send wrote nothing" "count 3" "$("$MS" "$S" stats c1 | head -1)"
same "messages: usage error" 2 "$(status "$MS" "$S" send c1)"
same "messages: a bad N" 2 "$(status "$MS" "$S" list c1 x)"
same "messages: no such conversation" "c9: no such conversation" "$("$MS" "$S" stats c9)"
# a sender that dies before the commit point leaves nothing, after it
# everything: the counters always agree with the rows
same "messages: send dies before the commit point" 99 \
	"$(MRTX_FAILPOINTS=commit.after_prewrite=exit status "$MS" "$S" send c1 bob alice lost)"
same "messages: rolled back as a whole" "ok: 3 messages" "$("$MS" "$S" check c1)"
same "messages: send dies after the commit point" 99 \
	"$(MRTX_FAILPOINTS=commit.after_point=exit status "$MS" "$S" send c1 bob alice kept)"
same "messages: rolled forward as a whole" "ok: 4 messages" "$("$MS" "$S" check c1)"
same "messages: the kept message is the newest" "#4 bob: kept" "$("$MS" "$S" list c1 1)"
# racing senders on one conversation: every increment kept
same "messages: race" "ok: 30 messages" "$("$MS" "$S" race c 3 10)"
same "messages: race counters" \
"count 30
unread a 10
unread b 20" "$("$MS" "$S" stats c)"

# -------------------------------------------------------------------- demo
# balances print as numbers, and are stored as decimal text (so `mrtx get`
# shows numbers too); the total is kept
M="$BIN/mrtx"
DEMO="$BIN/mrtx-demo"
if [ -x "$DEMO" ]; then
	out=$("$DEMO" "$TMP/demo" 5)
	same "demo exit" 0 $?
	same "demo balances are numbers" 8 \
		"$(grep -cE '^  (checking|savings) +acct-[0-9]{2} +-?[0-9]+$' <<<"$out")"
	ok "demo total kept" grep -q 'total 8000 (expected 8000): OK' <<<"$out"
	if [ -x "$M" ]; then
		bal=$("$M" get "$TMP/demo" checking acct-00 bal:v)
		ok "demo balance stored as a number" grep -qE '^-?[0-9]+$' <<<"$bal"
		same "demo balance via mrtx get" "$bal" \
			"$(grep -E '^  checking +acct-00 ' <<<"$out" | awk '{print $3}')"
	fi
else
	fail=$((fail + 1))
	echo "FAIL: missing $DEMO" >&2
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
