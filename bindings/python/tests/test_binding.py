"""The Python binding on an LMDB store: handles, tables, reads and writes,
transactions, conflicts and the retry loop, scans, versions, indexes, keys
and the mapping of every error code.  Nothing here depends on timing: every
conflict is made by a second transaction committed at a chosen point, and
the lock a reader meets is held by a failpoint until the test lets it go."""

import os
import signal
import tempfile
import threading
import time
import unittest

import mrtx


class StoreTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="mrtx-py-")
        self.path = os.path.join(self._tmp.name, "store")
        self.db = mrtx.open(self.path, durability=mrtx.NOSYNC)
        self.db.create_table("t", ["a", "b"])

    def tearDown(self):
        self.db.close()
        self._tmp.cleanup()

    def put(self, row, value, family="a", qualifier=b""):
        with self.db.begin() as txn:
            txn.put("t", row, family, qualifier, value)
        return txn.commit_ts

    def get(self, row, family="a", qualifier=b""):
        with self.db.begin() as txn:
            return txn.get("t", row, family, qualifier)


class OpenCloseTest(StoreTest):
    def test_open_creates_and_reopens(self):
        self.put(b"r", b"v")
        self.db.close()
        self.assertTrue(self.db.closed)
        with mrtx.open(self.path) as db:
            self.assertFalse(db.closed)
            with db.begin() as txn:
                self.assertEqual(txn.get("t", b"r", "a"), b"v")
        self.assertTrue(db.closed)

    def test_close_twice_and_use_after_close(self):
        self.db.close()
        self.db.close()
        with self.assertRaises(mrtx.InvalidArgument):
            self.db.begin()

    def test_close_aborts_open_transactions(self):
        txn = self.db.begin()
        txn.put("t", b"r", "a", b"", b"v")
        self.db.close()
        self.assertFalse(txn.active)
        with self.assertRaises(mrtx.BadTxn):
            txn.get("t", b"r", "a")
        with mrtx.open(self.path) as db, db.begin() as t2:
            self.assertIsNone(t2.get("t", b"r", "a"))

    def test_close_waits_for_calls_in_flight(self):
        # Another thread's commit is held inside the library by a failpoint
        # while this one closes the store: close() must wait for it (the
        # C library would otherwise free the handle under the commit), refuse
        # new calls meanwhile, and then abort what is still open.
        idle = self.db.begin()  # begun here, not in a call: close aborts it
        idle.put("t", b"idle", "a", b"", b"v")
        go = os.path.join(self._tmp.name, "go")
        mrtx.failpoints("commit.after_validate=wait:%s@1" % go)
        out = {}

        def writer():
            try:
                with self.db.begin() as txn:  # (two rows: a one-row commit has no failpoint)
                    txn.put("t", b"x", "a", b"", b"held")
                    txn.put("t", b"y", "a", b"", b"held")
                out["commit"] = txn.commit_ts
            except BaseException as e:
                out["commit"] = e

        def closer():
            self.db.close()
            out["closed"] = True

        w = threading.Thread(target=writer)
        c = threading.Thread(target=closer)
        w.start()
        try:
            while mrtx.failpoint_hits("commit.after_validate") < 1:
                time.sleep(0.001)
            c.start()
            # (close() refuses new calls from its start: wait for that)
            while not self.db._calls.closing and "closed" not in out:
                time.sleep(0.001)
            self.assertNotIn("closed", out)
            with self.assertRaises(mrtx.InvalidArgument):
                self.db.begin()
            with self.assertRaises(mrtx.BadTxn):
                idle.get("t", b"idle", "a")
        finally:
            with open(go, "w"):
                pass
            w.join()
            mrtx.failpoints(None)
            if c.ident:
                c.join()
        self.assertIsInstance(out["commit"], int)
        self.assertTrue(out["closed"])
        self.assertTrue(self.db.closed)
        self.assertFalse(idle.active)
        with mrtx.open(self.path) as db:
            with db.begin() as txn:
                self.assertEqual(txn.get("t", b"x", "a"), b"held")
                self.assertIsNone(txn.get("t", b"idle", "a"))

    def test_close_inside_run_refused(self):
        def fn(txn):
            self.db.close()

        with self.assertRaises(mrtx.InvalidArgument):
            self.db.run(fn)
        self.assertFalse(self.db.closed)
        self.put(b"r", b"v")
        self.assertEqual(self.get(b"r"), b"v")

    def test_close_interrupted_keeps_the_store(self):
        # close() interrupted while it waits for another thread's call (a
        # KeyboardInterrupt): the store stays open and usable, and a later
        # close() closes it (it once stayed "closing" for good, and the
        # next close() and the interpreter's exit hung)
        go = os.path.join(self._tmp.name, "go")
        mrtx.failpoints("commit.after_validate=wait:%s@1" % go)
        out = {}

        def writer():
            with self.db.begin() as txn:
                txn.put("t", b"x", "a", b"", b"held")
                txn.put("t", b"y", "a", b"", b"held")
            out["commit"] = txn.commit_ts

        def interrupter():
            while not self.db._calls.closing:
                time.sleep(0.001)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        w = threading.Thread(target=writer)
        w.start()
        try:
            while mrtx.failpoint_hits("commit.after_validate") < 1:
                time.sleep(0.001)
            i = threading.Thread(target=interrupter)
            i.start()
            with self.assertRaises(KeyboardInterrupt):
                self.db.close()
            i.join()
            self.assertFalse(self.db._calls.closing)
            self.assertFalse(self.db.closed)
        finally:
            with open(go, "w"):
                pass
            w.join()
            mrtx.failpoints(None)
        self.assertIsInstance(out["commit"], int)
        self.assertEqual(self.get(b"x"), b"held")
        self.db.close()
        self.assertTrue(self.db.closed)

    def test_not_a_store(self):
        f = os.path.join(self._tmp.name, "file")
        with open(f, "w") as fp:
            fp.write("x")
        with self.assertRaises(mrtx.NotAStore) as cm:
            mrtx.open(f)
        self.assertEqual(cm.exception.code, mrtx.ENOTSTORE)

    def test_read_only(self):
        self.put(b"r", b"v")
        self.db.close()  # one process opens a store one way at a time
        with mrtx.open(self.path, read_only=True) as ro:
            with ro.begin() as txn:
                self.assertEqual(txn.get("t", b"r", "a"), b"v")
                with self.assertRaises(mrtx.ReadOnly):
                    txn.put("t", b"r", "a", b"", b"w")
            with self.assertRaises(mrtx.ReadOnly):
                ro.create_table("u", ["a"])
        with self.assertRaises(mrtx.NotAStore):
            mrtx.open(os.path.join(self._tmp.name, "missing"), read_only=True)

    def test_create(self):
        missing = os.path.join(self._tmp.name, "missing")
        with self.assertRaises(mrtx.NotAStore):
            mrtx.open(missing, create=False)
        self.assertFalse(os.path.exists(missing))
        with mrtx.open(missing, create=True, durability=mrtx.NOSYNC) as db:
            db.create_table("t", ["a"])
        with mrtx.open(missing, create=False) as db:
            self.assertEqual(db.tables(), ["t"])

    def test_library_path(self):
        self.assertTrue(os.path.basename(mrtx.library_path).startswith("libmrtx.so"))


class TableTest(StoreTest):
    def test_create_list_families(self):
        self.db.create_table("t", ["a", "b"])  # idempotent
        self.db.create_table(b"u", ["x"])
        self.assertEqual(self.db.tables(), ["t", "u"])
        self.assertEqual(self.db.families("t"), ["a", "b"])
        with self.assertRaises(mrtx.Exists):
            self.db.create_table("t", ["a"])

    def test_bad_names(self):
        for bad in ["", "a b", "a/b", "a:b", "x" * 65]:
            with self.assertRaises((mrtx.InvalidArgument, mrtx.TooBig)) as cm:
                self.db.create_table(bad, ["a"])
            self.assertTrue(cm.exception.detail or cm.exception.code == mrtx.EINVAL)
        with self.assertRaises(mrtx.InvalidArgument):
            self.db.create_table("t\0x", ["a"])
        with self.assertRaises(mrtx.InvalidArgument):
            self.db.create_table("v", [])
        with self.assertRaises(TypeError):
            self.db.create_table(5, ["a"])

    def test_no_table_and_no_family(self):
        with self.assertRaises(mrtx.NoTable) as cm:
            self.db.families("missing")
        self.assertIn("missing", cm.exception.detail)
        with self.db.begin() as txn:
            with self.assertRaises(mrtx.NoTable):
                txn.get("missing", b"r", "a")
            with self.assertRaises(mrtx.NoFamily):
                txn.put("t", b"r", "zz", b"", b"v")

    def test_add_drop_truncate(self):
        self.db.add_family("t", "c")
        self.assertEqual(self.db.families("t"), ["a", "b", "c"])
        self.put(b"r", b"v", family="c")
        self.db.truncate_table("t")
        self.assertIsNone(self.get(b"r", family="c"))
        self.db.drop_table("t")
        self.assertEqual(self.db.tables(), [])

    def test_splits(self):
        self.db.create_table("s", ["a"], splits=[b"m", b"t"])
        self.assertIn("s", self.db.tables())
        with self.assertRaises(mrtx.InvalidArgument):
            self.db.create_table("s2", ["a"], splits=[b"t", b"m"])


class ReadWriteTest(StoreTest):
    def test_put_get_delete(self):
        self.put(b"r1", b"v1")
        self.put(b"r1", b"w1", family="b", qualifier=b"q")
        self.assertEqual(self.get(b"r1"), b"v1")
        self.assertEqual(self.get(b"r1", "b", b"q"), b"w1")
        with self.db.begin() as txn:
            txn.delete("t", b"r1", "a")
            self.assertIsNone(txn.get("t", b"r1", "a"))  # own delete is seen
        self.assertIsNone(self.get(b"r1"))
        self.assertEqual(self.get(b"r1", "b", b"q"), b"w1")
        with self.db.begin() as txn:
            txn.delete_row("t", b"r1")
        self.assertIsNone(self.get(b"r1", "b", b"q"))
        with self.db.begin() as txn:
            self.assertEqual(txn.get("t", b"r1", "a", default=b"-"), b"-")

    def test_str_is_utf8(self):
        self.put("zürich", "grüezi", qualifier="q")
        self.assertEqual(self.get("zürich".encode(), qualifier=b"q"), "grüezi".encode())
        self.put(bytearray(b"ba"), memoryview(b"mv"))
        self.assertEqual(self.get(b"ba"), b"mv")
        with self.db.begin() as txn:
            with self.assertRaises(TypeError):
                txn.put("t", b"r", "a", b"", 5)

    def test_binary_round_trip(self):
        every = bytes(range(256))
        rows = [b"\0", b"\0\0", b"a\0b", every[:200], b"\xff" * 10]
        with self.db.begin() as txn:
            for i, row in enumerate(rows):
                txn.put("t", row, "a", b"\0q\0" + bytes([i]), every * (i + 1))
            txn.put("t", b"empty", "a", b"", b"")
        with self.db.begin() as txn:
            for i, row in enumerate(rows):
                self.assertEqual(txn.get("t", row, "a", b"\0q\0" + bytes([i])), every * (i + 1))
            self.assertEqual(txn.get("t", b"empty", "a"), b"")
            cells = list(txn.scan("t"))
        self.assertEqual([c.row for c in cells], sorted(rows + [b"empty"]))
        for c in cells:
            if c.row != b"empty":
                i = rows.index(c.row)
                self.assertEqual(c.qualifier, b"\0q\0" + bytes([i]))
                self.assertEqual(c.value, every * (i + 1))

    def test_large_value(self):
        big = os.urandom(1 << 20)
        self.put(b"big", big)
        self.assertEqual(self.get(b"big"), big)

    def test_limits(self):
        with self.db.begin() as txn:
            with self.assertRaises(mrtx.InvalidArgument):
                txn.put("t", b"", "a", b"", b"v")  # empty row
            with self.assertRaises(mrtx.TooBig) as cm:
                txn.put("t", b"x" * (mrtx.MAX_ROW + 1), "a", b"", b"v")
            self.assertEqual(cm.exception.code, mrtx.ETOOBIG)
            self.assertIsInstance(cm.exception, ValueError)
            txn.put("t", b"x" * mrtx.MAX_ROW, "a", b"", b"v")

    def test_what_the_library_reads_is_the_bytes(self):
        # A bytes subclass that lies about its length, and a str subclass
        # whose encode() is not an encoding: the library reads exactly the
        # object's own bytes (it once read len() bytes from the buffer --
        # heap contents into the store, or a crash)
        class Long(bytes):
            def __len__(self):
                return 200

        class Odd(str):
            def encode(self, *args):
                return 0x1000

        self.put(Long(b"r"), Long(b"x"))
        self.assertEqual(self.get(b"r"), b"x")
        self.put(b"s", Odd("hello"))
        self.assertEqual(self.get(b"s"), b"hello")
        self.put(memoryview(b"abcdef")[::2], b"v")  # (not contiguous)
        self.assertEqual(self.get(b"ace"), b"v")
        self.assertEqual(bytes(mrtx.Key(Long(b"k"))), bytes(mrtx.Key(b"k")))

    def test_integers_out_of_range(self):
        # refused, never wrapped modulo 2**N on their way to C
        self.put(b"r", b"v")
        with self.assertRaises(OverflowError):
            self.db.gc(2**64)  # (once gc(0): every old version collected)
        with self.assertRaises(OverflowError):
            self.db.begin_at(2**64 + 1)
        with self.db.begin() as txn:
            with self.assertRaises(OverflowError):
                txn.scan("t", limit=-1)
            with self.assertRaises(OverflowError):
                txn.scan("t", versions=2**32 + 1)
            with self.assertRaises(OverflowError):
                txn.set_lock_ttl(2**32 + 1)
            with self.assertRaises(TypeError):
                txn.scan("t", limit=True)
        with self.assertRaises(OverflowError):
            self.db.create_table("w", [mrtx.Family("f", 2**32 + 1)])
        with self.assertRaises(OverflowError):
            self.db.run(lambda txn: None, attempts=2**32 + 1)
        with self.assertRaises(OverflowError):
            mrtx.Key().salt(b"a", 2**32 + 7)
        with self.assertRaises(OverflowError):
            mrtx.open(self.path, lock_ttl_ms=-1)
        with self.assertRaises(TypeError):
            self.db.create_table("w", "abc")  # (one name, not three families)
        self.assertEqual(self.get(b"r"), b"v")

    def test_values_outlive_the_transaction(self):
        self.put(b"r", b"v" * 100)
        txn = self.db.begin()
        v = txn.get("t", b"r", "a")
        cells = list(txn.scan("t"))
        txn.abort()
        self.put(b"r", b"w" * 100)
        self.assertEqual(v, b"v" * 100)
        self.assertEqual(cells[0].value, b"v" * 100)


class TransactionTest(StoreTest):
    def test_commit_on_exit(self):
        ts1 = self.put(b"r", b"1")
        ts2 = self.put(b"r", b"2")
        self.assertGreater(ts1, 0)
        self.assertGreater(ts2, ts1)
        self.assertEqual(self.get(b"r"), b"2")

    def test_abort_on_exception(self):
        class Boom(Exception):
            pass

        with self.assertRaises(Boom):
            with self.db.begin() as txn:
                txn.put("t", b"r", "a", b"", b"v")
                raise Boom()
        self.assertFalse(txn.active)
        self.assertIsNone(txn.commit_ts)
        self.assertIsNone(self.get(b"r"))

    def test_explicit_abort_and_commit(self):
        txn = self.db.begin()
        txn.put("t", b"r", "a", b"", b"v")
        txn.abort()
        txn.abort()  # no-op
        self.assertIsNone(self.get(b"r"))
        txn = self.db.begin()
        txn.put("t", b"r", "a", b"", b"v")
        ts = txn.commit()
        self.assertEqual(ts, txn.commit_ts)
        with self.assertRaises(mrtx.BadTxn):
            txn.get("t", b"r", "a")
        with self.assertRaises(mrtx.BadTxn):
            txn.commit()
        with self.db.begin() as t2:
            # ended inside the block: leaving it does nothing more
            self.assertEqual(t2.get("t", b"r", "a"), b"v")
            t2.abort()

    def test_snapshot_ts(self):
        ts = self.put(b"r", b"v")
        with self.db.begin() as txn:
            self.assertEqual(txn.snapshot_ts, 0)
            txn.get("t", b"r", "a")
            self.assertGreaterEqual(txn.snapshot_ts, ts)
            txn.set_lock_ttl(1000)

    def test_conflict(self):
        self.put(b"acct", b"100")
        t1 = self.db.begin()
        self.assertEqual(t1.get("t", b"acct", "a"), b"100")
        self.put(b"acct", b"50")  # a concurrent commit wins
        t1.put("t", b"acct", "a", b"", b"90")
        with self.assertRaises(mrtx.Conflict) as cm:
            t1.commit()
        e = cm.exception
        self.assertEqual(e.code, mrtx.CONFLICT)
        self.assertIsInstance(e, mrtx.Retryable)
        self.assertEqual(e.name, mrtx.strerror(mrtx.CONFLICT))
        self.assertIn("commit", str(e))
        self.assertFalse(t1.active)
        self.assertEqual(self.get(b"acct"), b"50")

    def test_conflict_in_a_with_block_propagates(self):
        self.put(b"r", b"0")
        with self.assertRaises(mrtx.Conflict):
            with self.db.begin() as t1:
                t1.get("t", b"r", "a")
                self.put(b"r", b"1")
                t1.put("t", b"r", "a", b"", b"2")
        self.assertEqual(self.get(b"r"), b"1")


class RunTest(StoreTest):
    def test_retry_after_conflict(self):
        self.put(b"n", b"0")
        attempts = []

        def increment(txn):
            n = int(txn.get("t", b"n", "a"))
            if not attempts:
                self.put(b"n", b"10")  # another writer commits mid-way, once
            attempts.append(n)
            txn.put("t", b"n", "a", b"", str(n + 1).encode())
            return n + 1

        self.assertEqual(self.db.run(increment), 11)
        self.assertEqual(attempts, [0, 10])
        self.assertEqual(self.get(b"n"), b"11")

    def test_retry_after_conflict_raised_inside(self):
        calls = []

        def fn(txn):
            calls.append(1)
            if len(calls) < 3:
                raise mrtx.Conflict()
            txn.put("t", b"r", "a", b"", b"done")
            return "ok"

        self.assertEqual(self.db.run(fn), "ok")
        self.assertEqual(len(calls), 3)
        self.assertEqual(self.get(b"r"), b"done")

    def test_attempts_run_out(self):
        self.put(b"n", b"0")
        calls = []

        def always_raced(txn):
            calls.append(1)
            txn.get("t", b"n", "a")
            self.put(b"n", str(len(calls)).encode())
            txn.put("t", b"n", "a", b"", b"mine")

        with self.assertRaises(mrtx.Conflict):
            self.db.run(always_raced, attempts=3)
        self.assertEqual(len(calls), 3)
        self.assertEqual(self.get(b"n"), b"3")

    def test_other_exceptions_abort_at_once(self):
        calls = []

        def fn(txn):
            calls.append(1)
            txn.put("t", b"r", "a", b"", b"v")
            raise KeyError("mine")

        with self.assertRaises(KeyError):
            self.db.run(fn)
        self.assertEqual(len(calls), 1)
        self.assertIsNone(self.get(b"r"))

        def bad_table(txn):
            calls.append(1)
            txn.get("missing", b"r", "a")

        with self.assertRaises(mrtx.NoTable):
            self.db.run(bad_table)
        self.assertEqual(len(calls), 2)

    def test_an_error_of_code_zero_aborts(self):
        # an mrtx.Error whose code is 0 is no success: run() aborts and
        # raises it, and nothing fn wrote is committed
        def fn(txn):
            txn.put("t", b"z", "a", b"", b"v")
            raise mrtx.Error(mrtx.OK)

        with self.assertRaises(mrtx.Error):
            self.db.run(fn)
        self.assertIsNone(self.get(b"z"))

    def test_run_owns_its_transaction(self):
        kept = []

        def fn(txn):
            kept.append(txn)
            with self.assertRaises(mrtx.InvalidArgument):
                txn.commit()
            with self.assertRaises(mrtx.InvalidArgument):
                txn.abort()
            txn.put("t", b"r", "a", b"", b"v")

        self.db.run(fn)
        self.assertFalse(kept[0].active)
        self.assertEqual(self.get(b"r"), b"v")


class LockedTest(unittest.TestCase):
    """A reader meets the lock of a two-phase commit held at a failpoint
    (MRTX_TWO_PHASE=1 for this handle, the failpoint's wait: file to let it
    go): Locked, from a read and from Db.run once its attempts run out."""

    def test_locked(self):
        with tempfile.TemporaryDirectory(prefix="mrtx-py-") as tmp:
            os.environ["MRTX_TWO_PHASE"] = "1"
            try:
                db = mrtx.open(os.path.join(tmp, "s"), durability=mrtx.NOSYNC, lock_wait_ms=1)
            finally:
                del os.environ["MRTX_TWO_PHASE"]
            with db:
                db.create_table("t", ["a"])
                go = os.path.join(tmp, "go")
                mrtx.failpoints("commit.after_validate=wait:%s@1" % go)
                done = []

                def writer():
                    with db.begin() as txn:
                        txn.put("t", b"x", "a", b"", b"new")
                        txn.put("t", b"y", "a", b"", b"new")
                    done.append(txn.commit_ts)

                th = threading.Thread(target=writer)
                th.start()
                try:
                    # the writer's locks are in place once it reaches the
                    # failpoint, and stay until the file exists
                    while mrtx.failpoint_hits("commit.after_validate") < 1:
                        time.sleep(0.001)
                    with db.begin() as txn:
                        with self.assertRaises(mrtx.Locked) as cm:
                            txn.get("t", b"x", "a")
                        self.assertEqual(cm.exception.code, mrtx.ELOCKED)
                        self.assertIsInstance(cm.exception, mrtx.Retryable)
                    calls = []

                    def read(txn):
                        calls.append(1)
                        return txn.get("t", b"y", "a")

                    with self.assertRaises(mrtx.Locked):
                        db.run(read, attempts=2)
                    self.assertEqual(len(calls), 2)
                finally:
                    with open(go, "w"):
                        pass
                    th.join()
                    mrtx.failpoints(None)
                self.assertEqual(len(done), 1)
                with db.begin() as txn:
                    self.assertEqual(txn.get("t", b"x", "a"), b"new")
                    self.assertEqual(txn.get("t", b"y", "a"), b"new")


class ScanTest(StoreTest):
    def setUp(self):
        super().setUp()
        with self.db.begin() as txn:
            for i in range(10):
                row = b"row%d" % i
                txn.put("t", row, "a", b"x", b"a%d" % i)
                txn.put("t", row, "b", b"y", b"b%d" % i)
                txn.put("t", row, "b", b"z", b"c%d" % i)

    def test_forward_reverse_limit(self):
        with self.db.begin() as txn:
            cells = list(txn.scan("t"))
            self.assertEqual(len(cells), 30)
            self.assertEqual(cells[0], mrtx.Cell(b"row0", "a", b"x", b"a0", cells[0].ts))
            self.assertEqual([c.family for c in cells[:3]], ["a", "b", "b"])
            rows = [c.row for c in txn.scan("t", reverse=True, family="a")]
            self.assertEqual(rows, [b"row%d" % i for i in range(9, -1, -1)])
            rows = [c.row for c in txn.scan("t", b"row3", limit=2, family="a")]
            self.assertEqual(rows, [b"row3", b"row4"])
            rows = {c.row for c in txn.scan("t", b"row3", b"row6")}
            self.assertEqual(rows, {b"row3", b"row4", b"row5"})
            rows = [c.row for c in txn.scan("t", end=b"row6", reverse=True, limit=2)]
            self.assertEqual(rows, [b"row5", b"row5", b"row5", b"row4", b"row4", b"row4"])

    def test_family_and_qualifier_range(self):
        with self.db.begin() as txn:
            cells = list(txn.scan("t", family="b", qual_start=b"z"))
            self.assertEqual([c.value for c in cells], [b"c%d" % i for i in range(10)])
            with self.assertRaises(mrtx.InvalidArgument):
                txn.scan("t", qual_start=b"z")
            with self.assertRaises(mrtx.NoFamily):
                txn.scan("t", family="nope")
            with self.assertRaises(mrtx.NoTable):
                txn.scan("nope")

    def test_prefix(self):
        with self.db.begin() as txn:
            txn.put("t", b"row1\xff", "a", b"", b"")
            txn.put("t", b"row2", "a", b"", b"")
        with self.db.begin() as txn:
            rows = [c.row for c in txn.scan("t", prefix=b"row1", family="a")]
            self.assertEqual(rows, [b"row1", b"row1\xff"])
            with self.assertRaises(mrtx.InvalidArgument):
                txn.scan("t", b"a", prefix=b"row")

    def test_iterator_protocol_and_own_writes(self):
        with self.db.begin() as txn:
            txn.delete_row("t", b"row0")
            txn.put("t", b"row00", "a", b"", b"new")
            sc = txn.scan("t", family="a", limit=2)
            self.assertIs(iter(sc), sc)
            self.assertEqual(next(sc).row, b"row00")
            first = next(sc)
            self.assertEqual((first.row, first.ts), (b"row1", first.ts))
            self.assertGreater(first.ts, 0)
            self.assertRaises(StopIteration, next, sc)
            self.assertRaises(StopIteration, next, sc)
            with txn.scan("t", family="a") as sc2:
                c = next(sc2)
                self.assertEqual((c.value, c.ts), (b"new", 0))  # own write: ts 0

    def test_scanner_ends_with_its_transaction(self):
        txn = self.db.begin()
        sc = txn.scan("t")
        next(sc)
        txn.commit()
        with self.assertRaises(mrtx.BadTxn):
            next(sc)
        sc.close()


class VersionTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="mrtx-py-")
        self.db = mrtx.open(os.path.join(self._tmp.name, "s"), durability=mrtx.NOSYNC)
        self.db.create_table("h", [mrtx.Family("v", max_versions=3), "one"])
        self.ts = []
        for i in range(4):
            with self.db.begin() as txn:
                txn.put("h", b"r", "v", b"q", b"v%d" % i)
                txn.put("h", b"r", "one", b"q", b"o%d" % i)
            self.ts.append(txn.commit_ts)

    def tearDown(self):
        self.db.close()
        self._tmp.cleanup()

    def test_get_versions(self):
        with self.db.begin() as txn:
            self.assertEqual(txn.get_versions("h", b"r", "v", b"q"),
                             [(self.ts[3], b"v3"), (self.ts[2], b"v2"), (self.ts[1], b"v1")])
            self.assertEqual(txn.get_versions("h", b"r", "v", b"q", max=1),
                             [(self.ts[3], b"v3")])
            self.assertEqual(txn.get_versions("h", b"r", "one", b"q"), [(self.ts[3], b"o3")])
            self.assertEqual(txn.get_versions("h", b"none", "v", b"q"), [])
            txn.put("h", b"r", "v", b"q", b"mine")
            self.assertEqual(txn.get_versions("h", b"r", "v", b"q")[0], (0, b"mine"))
            txn.abort()

    def test_scan_versions(self):
        with self.db.begin() as txn:
            cells = list(txn.scan("h", family="v", versions=3))
        self.assertEqual([(c.ts, c.value) for c in cells],
                         [(self.ts[3], b"v3"), (self.ts[2], b"v2"), (self.ts[1], b"v1")])
        with self.db.begin() as txn:
            with self.assertRaises(mrtx.InvalidArgument):
                txn.scan("h", versions=0)

    def test_begin_at(self):
        with self.db.begin_at(self.ts[2]) as txn:
            self.assertEqual(txn.snapshot_ts, self.ts[2])
            self.assertEqual(txn.get("h", b"r", "v", b"q"), b"v2")
            self.assertEqual([c.value for c in txn.scan("h", family="v")], [b"v2"])
            with self.assertRaises(mrtx.SnapshotGone):
                txn.get("h", b"r", "one", b"q")  # one version kept: gone
            with self.assertRaises(mrtx.InvalidArgument):
                txn.put("h", b"r", "v", b"q", b"x")
        with self.assertRaises(mrtx.InvalidArgument):
            self.db.begin_at(0)

    def test_gc(self):
        self.assertGreaterEqual(self.db.gc(), 0)


class IndexTest(StoreTest):
    def setUp(self):
        super().setUp()
        self.db.create_table("users", ["p"])
        with self.db.begin() as txn:
            for uid, city in [(b"u1", b"Oslo"), (b"u2", b"Bern"), (b"u3", b"Oslo")]:
                txn.put("users", uid, "p", b"city", city)
                txn.put("users", uid, "p", b"name", b"name-" + uid)
        self.db.create_index("by_city", "users", "p", b"city", "users_by_city",
                             cluster=[("p", b"name")])

    def test_declaration(self):
        self.assertEqual(self.db.indexes(), [mrtx.Index("by_city", "users", "p", b"city",
                                                        "users_by_city", (("p", b"name"),))])
        self.assertIn("users_by_city", self.db.tables())
        self.assertEqual(self.db.families("users_by_city"), [mrtx.INDEX_FAMILY])

    def test_lookup_and_scan(self):
        with self.db.begin() as txn:
            hits = txn.index_lookup("by_city", b"Oslo")
            self.assertEqual([(h.value, h.row) for h in hits], [(b"Oslo", b"u1"), (b"Oslo", b"u3")])
            self.assertEqual([(c.family, c.qualifier, c.value) for c in hits[0].cells],
                             [("p", b"name", b"name-u1")])
            self.assertEqual([h.row for h in txn.index_scan("by_city")], [b"u2", b"u1", b"u3"])
            self.assertEqual([h.row for h in txn.index_scan("by_city", reverse=True, limit=2)],
                             [b"u3", b"u1"])
            self.assertEqual([h.row for h in txn.index_scan("by_city", b"A", b"C")], [b"u2"])
            self.assertEqual(txn.index_lookup("by_city", b"Rome"), [])
            with self.assertRaises(mrtx.InvalidArgument):
                txn.index_lookup("no_such_index", b"x")

    def test_maintained_with_the_data(self):
        with self.db.begin() as txn:
            txn.put("users", b"u2", "p", b"city", b"Oslo")
            txn.delete_row("users", b"u1")
            # the transaction sees its own index changes
            self.assertEqual([h.row for h in txn.index_lookup("by_city", b"Oslo")],
                             [b"u2", b"u3"])
        with self.db.begin() as txn:
            self.assertEqual([h.row for h in txn.index_lookup("by_city", b"Oslo")],
                             [b"u2", b"u3"])
            self.assertEqual(txn.index_lookup("by_city", b"Bern"), [])

    def test_drop_index(self):
        self.db.drop_index("by_city")
        self.assertEqual(self.db.indexes(), [])
        self.assertNotIn("users_by_city", self.db.tables())
        with self.assertRaises(mrtx.InvalidArgument):
            self.db.drop_index("by_city")

    def test_redeclared_with_another_spec(self):
        with self.assertRaises(mrtx.Exists):
            self.db.create_index("by_city", "users", "p", b"name", "users_by_city")

    def test_exceptions_in_the_callback_are_not_lost(self):
        import mrtx._txn as T

        def broken(c, ts=0):
            raise RuntimeError("copy failed")

        saved, T.cell = T.cell, broken
        try:
            with self.db.begin() as txn:
                with self.assertRaisesRegex(RuntimeError, "copy failed"):
                    txn.index_lookup("by_city", b"Oslo")
        finally:
            T.cell = saved


class KeyTest(unittest.TestCase):
    def test_order(self):
        keys = [mrtx.Key().str("bob").rts(ts).u32(n).finish()
                for ts, n in [(5, 1), (9, 2), (1, 3)]]
        self.assertEqual(sorted(keys), [keys[1], keys[0], keys[2]])  # newest first
        self.assertLess(mrtx.Key().i64(-5).finish(), mrtx.Key().i64(3).finish())
        self.assertLess(mrtx.Key("ab").finish(), mrtx.Key("ab\0").finish())
        self.assertLess(mrtx.Key("ab\0").finish(), mrtx.Key("abc").finish())

    def test_parse(self):
        k = (mrtx.Key().bytes(b"a\0b").u32(7).u64(2**64 - 1).i32(-3).i64(-2**63).rts(42)
             .fixed(b"XY").hash(b"h", 4).salt(b"s", 16).str("é"))
        parts = mrtx.parse_key(bytes(k), "bytes", "u32", "u64", "i32", "i64", "rts",
                               ("fixed", 2), ("hash", 4), "salt", "str")
        self.assertEqual(parts[:7], (b"a\0b", 7, 2**64 - 1, -3, -2**63, 42, b"XY"))
        self.assertEqual(len(parts[7]), 4)
        self.assertLess(parts[8], 16)
        self.assertEqual(parts[9], "é")
        with self.assertRaises(mrtx.InvalidArgument):
            mrtx.parse_key(bytes(k), "u32")

    def test_prefix_end(self):
        self.assertEqual(mrtx.prefix_end(b"ab"), b"ac")
        self.assertEqual(mrtx.prefix_end(b"a\xff\xff"), b"b")
        self.assertEqual(mrtx.prefix_end(b"\xff"), b"")
        self.assertEqual(mrtx.Key("ab").prefix_end(), mrtx.prefix_end(mrtx.Key("ab").finish()))

    def test_limits(self):
        k = mrtx.Key()
        k.fixed(b"x" * mrtx.MAX_KEY)
        with self.assertRaises(mrtx.TooBig):
            k.u32(1)
        with self.assertRaises(OverflowError):
            mrtx.Key().u32(-1)
        with self.assertRaises(mrtx.InvalidArgument):
            mrtx.Key().hash(b"x", 33)


class ErrorTest(unittest.TestCase):
    def test_every_code_maps_to_its_class(self):
        self.assertEqual(len(mrtx.ERRORS), 18)
        for code, cls in mrtx.ERRORS.items():
            e = mrtx._errors.error(code, "step")
            self.assertIs(type(e), cls)
            self.assertEqual(e.code, code)
            self.assertTrue(e.name)
            self.assertTrue(str(e).startswith("step: " + e.name))
        self.assertIs(type(mrtx._errors.error(-1)), mrtx.Error)
        self.assertTrue(issubclass(mrtx.Locked, mrtx.Retryable))
        self.assertFalse(issubclass(mrtx.Unknown, mrtx.Retryable))
        self.assertTrue(issubclass(mrtx.NotFound, KeyError))

    def test_strerror(self):
        self.assertEqual(mrtx.strerror(mrtx.CONFLICT), mrtx.Conflict().name)
        self.assertNotEqual(mrtx.strerror(mrtx.ENOTABLE), mrtx.strerror(mrtx.ENOFAMILY))


if __name__ == "__main__":
    unittest.main()
