#!/usr/bin/env python3
"""messages.py - the message schema of a private messenger for couples
(Between's, the service Haeinsa's transactions were built for), in Python.

Sending a message is one transaction over four tables: the message, its
copy in each member's inbox, the conversation's counters and each
member's clock.  Readers therefore never see a message without its
counters, and two senders racing on one conversation never lose an
increment: the loser conflicts and Db.run runs it again.

Tables:

  conv   one row per conversation: conv            -> c:members, c:count (u64),
                                                      c:last (text of the newest)
                                                      unread:<user> (u64)
  msg    (conv, rts(seq))                           -> m:from, m:text, m:ts
         a conversation's messages, newest first; seq is the conversation's
         count, so the order needs no clock
  inbox  (user, rts(ts), conv, u64(seq))            -> m:from, m:text
         a user's messages of every conversation, newest first
  user   user                                       -> u:last_ts (u64)
         the user's inbox clock: each new inbox row takes
         max(now in microseconds, last_ts + 1), so a user's inbox order is
         strict even when the wall clock steps back

usage: messages.py STORE send CONV FROM TO TEXT
       messages.py STORE list CONV [N]          newest first
       messages.py STORE inbox USER [N]         newest first, every conversation
       messages.py STORE read CONV USER         USER has read CONV: unread to 0
       messages.py STORE stats CONV             count and unread counters
       messages.py STORE check CONV             counters agree with the rows
       messages.py STORE race CONV THREADS N    THREADS threads send N each
"""

import os
import sys
import threading
import time

import mrtx
from mrtx import Key

TABLES = {"conv": ["c", "unread"], "msg": ["m"], "inbox": ["m"], "user": ["u"]}


def u64(b):
    return int.from_bytes(b, "big") if b else 0


def be(n):
    return n.to_bytes(8, "big")


def send(txn, conv, sender, to, text):
    """Buffer one message; returns its sequence number in conv."""
    members = txn.get("conv", conv, "c", "members")
    if members is None:
        txn.put("conv", conv, "c", "members", "%s,%s" % tuple(sorted((sender, to))))
    elif sorted(members.decode().split(",")) != sorted((sender, to)):
        raise ValueError("%s is the conversation of %s" % (conv, members.decode()))
    seq = u64(txn.get("conv", conv, "c", "count")) + 1
    txn.put("conv", conv, "c", "count", be(seq))
    txn.put("conv", conv, "c", "last", text)
    unread = u64(txn.get("conv", conv, "unread", to)) + 1
    txn.put("conv", conv, "unread", to, be(unread))
    frozen = os.environ.get("MRTX_EXAMPLE_NOW_US")  # (the tests freeze the clock)
    now = int(frozen) if frozen else time.time_ns() // 1000
    txn.put("msg", Key().str(conv).rts(seq).finish(), "m", "from", sender)
    txn.put("msg", Key().str(conv).rts(seq).finish(), "m", "text", text)
    txn.put("msg", Key().str(conv).rts(seq).finish(), "m", "ts", be(now))
    for user in {sender, to}:
        ts = max(now, u64(txn.get("user", user, "u", "last_ts")) + 1)
        txn.put("user", user, "u", "last_ts", be(ts))
        row = Key().str(user).rts(ts).str(conv).u64(seq).finish()
        txn.put("inbox", row, "m", "from", sender)
        txn.put("inbox", row, "m", "text", text)
    return seq


def rows(txn, table, prefix, limit=0):
    """(row, {qualifier: value}) of the rows starting with prefix, in order."""
    out = []
    for cell in txn.scan(table, prefix=prefix, limit=limit):
        if not out or out[-1][0] != cell.row:
            out.append((cell.row, {}))
        out[-1][1][cell.qualifier] = cell.value
    return out


def conversation(txn, conv, n):
    out = []
    for row, c in rows(txn, "msg", Key().str(conv).finish(), n):
        _, seq = mrtx.parse_key(row, "str", "rts")
        out.append("#%d %s: %s" % (seq, c[b"from"].decode(), c[b"text"].decode()))
    return out


def inbox(txn, user, n):
    out = []
    for row, c in rows(txn, "inbox", Key().str(user).finish(), n):
        _, _, conv, seq = mrtx.parse_key(row, "str", "rts", "str", "u64")
        out.append("%s #%d %s: %s" % (conv, seq, c[b"from"].decode(), c[b"text"].decode()))
    return out


def stats(txn, conv):
    row = conv.encode()
    cells = {(c.family, c.qualifier): c.value for c in txn.scan("conv", row, row + b"\0")}
    if not cells:
        return ["%s: no such conversation" % conv]
    out = ["count %d" % u64(cells.get(("c", b"count")))]
    for user in sorted(cells[("c", b"members")].split(b",")):
        out.append("unread %s %d" % (user.decode(), u64(cells.get(("unread", user)))))
    return out


def check(txn, conv):
    """Every counter agrees with the rows: raises AssertionError if not."""
    count = u64(txn.get("conv", conv, "c", "count"))
    seqs = [mrtx.parse_key(r, "str", "rts")[1] for r, _ in
            rows(txn, "msg", Key().str(conv).finish())]
    assert seqs == list(range(count, 0, -1)), "count %d, messages %s" % (count, seqs)
    members = txn.get("conv", conv, "c", "members") or b""
    for user in members.decode().split(","):
        mine = [r for r in rows(txn, "inbox", Key().str(user).finish())
                if mrtx.parse_key(r[0], "str", "rts", "str", "u64")[2] == conv]
        assert len(mine) == count, "%s has %d of %d in the inbox" % (user, len(mine), count)
    return ["ok: %d messages" % count]


def race(db, conv, threads, n):
    """threads threads each send n messages on conv at once; the counters
    must come out exact (each lost race is retried by Db.run)."""
    errors = []

    def sender(i):
        try:
            for j in range(n):
                me, peer = ("a", "b") if i % 2 == 0 else ("b", "a")
                db.run(lambda txn: send(txn, conv, me, peer, "t%d-%d" % (i, j)), attempts=100)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=sender, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    with db.begin() as txn:
        return check(txn, conv)


def usage():
    print(__doc__[__doc__.index("usage:"):].rstrip(), file=sys.stderr)
    return 2


def main(argv):
    arity = {"send": (3, 3), "list": (0, 1), "inbox": (0, 1), "read": (1, 1),
             "stats": (0, 0), "check": (0, 0), "race": (2, 2)}
    if len(argv) < 4 or argv[2] not in arity:
        return usage()
    path, cmd, key, args = argv[1], argv[2], argv[3], argv[4:]
    lo, hi = arity[cmd]
    if not lo <= len(args) <= hi:
        return usage()
    try:
        with mrtx.open(path, durability=mrtx.NOMETASYNC) as db:
            for table, families in TABLES.items():
                db.create_table(table, families)
            if cmd == "send":
                seq = db.run(lambda txn: send(txn, key, args[0], args[1], args[2]))
                out = ["sent #%d" % seq]
            elif cmd == "read":
                def read(txn):
                    txn.put("conv", key, "unread", args[0], be(0))
                db.run(read)
                out = []
            elif cmd == "race":
                out = race(db, key, int(args[0]), int(args[1]))
            else:
                fn = {"list": conversation, "inbox": inbox, "stats": stats, "check": check}[cmd]
                extra = [int(args[0]) if args else 0] if cmd in ("list", "inbox") else []
                out = db.run(lambda txn: fn(txn, key, *extra), attempts=1)
    except (mrtx.Error, ValueError, AssertionError) as e:
        print("messages: %s: %s" % (cmd, e), file=sys.stderr)
        return 1
    for line in out:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
