#!/usr/bin/env python3
"""comments.py - the product-comment schema of an online shop, in Python.

The same schema, commands and output as examples/comments.c, so either
program reads what the other wrote.  Every command is one transaction, so
a comment and both of its index rows appear together or not at all.

Tables (family "c" everywhere):

  comment   (order, product)                          -> user, text, ts
  by_user   (user, rts(ts), order, product)           -> ref, text
            newest first per user
  product   (product, 'c', rts(ts), rts(len), order)  -> ref, user, text
            newest first per product, then longest first
            (product, 'r', u32 rank)                  -> order
            the product's top-10 list, sorted by rank
  clock     ('u', user), ('p', product)               -> last (u64, big-endian)
            the user's and the product's comment clock: a new comment's
            ts is max(now in microseconds, each clock's last + 1)

usage: comments.py STORE add USER PRODUCT ORDER TEXT
       comments.py STORE by-user USER [N]
       comments.py STORE by-product PRODUCT [N]
       comments.py STORE rank PRODUCT ORDER...    (1..10 orders, replaces the list)
       comments.py STORE top PRODUCT
"""

import os
import sys
import time

import mrtx
from mrtx import Key

MAX_RANK = 10
PROG = "comments"


class Refused(Exception):
    """A command the data does not allow; explained where it is raised."""


def now_us():
    """The wall clock in microseconds, or MRTX_EXAMPLE_NOW_US when set (the
    tests freeze it there: the orders must not depend on it)."""
    frozen = os.environ.get("MRTX_EXAMPLE_NOW_US")
    return int(frozen) if frozen else time.time_ns() // 1000


def comment_key(order, product):
    return Key().str(order).str(product)


def product_prefix(product, kind):
    return Key().str(product).fixed(kind)


def tick(txn, user, product, now):
    """The comment's ts from now and the user's and product's clocks,
    both advanced to it."""
    keys = [Key().fixed(b"u").str(user).finish(), Key().fixed(b"p").str(product).finish()]
    ts = now
    for k in keys:
        last = txn.get("clock", k, "c", "last")
        if last is not None:
            ts = max(ts, int.from_bytes(last, "big") + 1)
    for k in keys:
        txn.put("clock", k, "c", "last", ts.to_bytes(8, "big"))
    return ts


def add(txn, user, product, order, text, now):
    ts = tick(txn, user, product, now)
    ck = comment_key(order, product).finish()
    if txn.get("comment", ck, "c", "text") is not None:
        raise Refused("add: order %s already has a comment on product %s" % (order, product))
    uk = Key().str(user).rts(ts).str(order).str(product).finish()
    pk = (product_prefix(product, b"c").rts(ts).rts(len(text.encode())).str(order)
          .finish())
    for table, row, cells in [
            ("comment", ck, {"user": user, "text": text, "ts": ts.to_bytes(8, "big")}),
            ("by_user", uk, {"ref": ck, "text": text}),
            ("product", pk, {"ref": ck, "user": user, "text": text})]:
        for qualifier, value in cells.items():
            txn.put(table, row, "c", qualifier, value)


def rows(txn, table, prefix, limit=0):
    """The rows starting with prefix, as (row, {qualifier: value})."""
    out = []
    for cell in txn.scan(table, prefix=prefix, family="c", limit=limit):
        if not out or out[-1][0] != cell.row:
            out.append((cell.row, {}))
        out[-1][1][cell.qualifier] = cell.value
    return out


def comment_line(txn, ref, user, text):
    order, product = mrtx.parse_key(ref, "bytes", "bytes")
    if user is None:
        user = txn.get("comment", ref, "c", "user")
    return "order=%s product=%s user=%s: %s" % tuple(
        b.decode("utf-8", "replace") for b in (order, product, user, text))


def listing(txn, by_user, who, n):
    if by_user:
        table, prefix = "by_user", Key().str(who).finish()
    else:
        table, prefix = "product", product_prefix(who, b"c").finish()
    return [comment_line(txn, c[b"ref"], c.get(b"user"), c[b"text"])
            for _, c in rows(txn, table, prefix, n)]


def rank(txn, product, orders):
    for row, _ in rows(txn, "product", product_prefix(product, b"r").finish()):
        txn.delete_row("product", row)
    for i, order in enumerate(orders):
        if txn.get("comment", comment_key(order, product).finish(), "c", "text") is None:
            raise Refused("rank: order %s has no comment on product %s; the list is unchanged"
                          % (order, product))
        txn.put("product", product_prefix(product, b"r").u32(i + 1).finish(), "c", "order",
                order)


def top(txn, product):
    out = []
    for row, c in rows(txn, "product", product_prefix(product, b"r").finish()):
        name, _, n = mrtx.parse_key(row, "bytes", ("fixed", 1), "u32")
        ck = Key().bytes(c[b"order"]).bytes(name).finish()
        text = txn.get("comment", ck, "c", "text")
        if text is None:
            raise mrtx.Corrupt()
        out.append("%d %s" % (n, comment_line(txn, ck, None, text)))
    return out


def usage():
    print(__doc__[__doc__.index("usage:"):].rstrip(), file=sys.stderr)
    return 2


def main(argv):
    if len(argv) < 4:
        return usage()
    path, cmd, args = argv[1], argv[2], argv[3:]
    ok = {"add": len(args) == 4, "rank": 2 <= len(args) <= 1 + MAX_RANK, "top": len(args) == 1,
          "by-user": len(args) <= 2, "by-product": len(args) <= 2}
    if not ok.get(cmd):
        return usage()
    if cmd == "rank" and len(set(args[1:])) != len(args) - 1:
        print("%s: rank: an order is listed twice" % PROG, file=sys.stderr)
        return 2
    step = "open"
    try:
        with mrtx.open(path, durability=mrtx.NOMETASYNC) as db:
            step = "create-table"
            for table in ("comment", "by_user", "product", "clock"):
                db.create_table(table, ["c"])
            step = cmd
            if cmd == "add":
                user, product, order, text = args
                now = now_us()
                db.run(lambda txn: add(txn, user, product, order, text, now), attempts=20)
                print("added comment of %s on %s (order %s)" % (user, product, order))
            elif cmd == "rank":
                db.run(lambda txn: rank(txn, args[0], args[1:]), attempts=20)
                print("ranked %d comments on %s" % (len(args) - 1, args[0]))
            else:
                # one attempt, and nothing printed before it commits
                if cmd == "top":
                    lines = db.run(lambda txn: top(txn, args[0]), attempts=1)
                else:
                    n = int(args[1]) if len(args) > 1 else 10
                    lines = db.run(lambda txn: listing(txn, cmd == "by-user", args[0],
                                                       n if n > 0 else 10), attempts=1)
                for line in lines:
                    print(line)
    except Refused as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    except mrtx.Error as e:
        print("%s: %s: %s (%s)" % (PROG, step, e.name, e.detail), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
