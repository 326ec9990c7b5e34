"""Transactions, scanners and the records they return."""

import ctypes
import itertools
import weakref
from collections import namedtuple

from . import _capi as C
from ._errors import InvalidArgument, check, error

#: One cell of a scan.  ts is the commit timestamp of that version (0 for a
#: write of the scanning transaction itself).
Cell = namedtuple("Cell", "row family qualifier value ts")

#: A family with its version policy, for Db.create_table (mrtx_family_spec).
Family = namedtuple("Family", "name max_versions min_versions ttl_ms",
                    defaults=(0, 0, 0))

#: One index entry: the indexed value, the source row, and the clustered
#: copies as a list of Cell (ts 0).
IndexHit = namedtuple("IndexHit", "value row cells")

_keys = itertools.count(1)  # Txn._key: a transaction's entry in Db._open

#: An index declaration (Db.indexes): cluster is a tuple of
#: (family, qualifier) pairs.
Index = namedtuple("Index", "name table family qualifier index_table cluster")


def name(s, what="name"):
    """A table, family or index name as the NUL-terminated bytes C wants."""
    if isinstance(s, str):
        s = str.encode(s, "utf-8")  # (not a subclass's own encode)
    elif isinstance(s, (bytes, bytearray)):
        s = memoryview(s).tobytes()  # (its buffer, whatever it says of itself)
    else:
        raise TypeError("%s: expected str, not %s" % (what, type(s).__name__))
    if b"\0" in s:
        raise InvalidArgument(C.EINVAL, "%s %r contains a NUL byte" % (what, s))
    return s


data = C.data  # (row, qualifier and value bytes: _capi.data)


def cstr(p):
    """A NUL-terminated string the library lends, as str."""
    return ctypes.string_at(p).decode("utf-8", "replace") if p else None


def cell(c, ts=0):
    return Cell(C.copy(c.row), cstr(c.family), C.copy(c.qualifier), C.copy(c.value), ts)


class _Closing:
    """A context manager whose exit, and whose collection, call close()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _Hits:
    """Collects index hits from an mrtx_index_scan callback, copying each."""

    def __init__(self):
        self.hits = []
        self.exc = None

        def fn(hit_p, _payload):
            try:
                h = hit_p.contents
                cells = [cell(h.cells[i]) for i in range(h.ncells)]
                self.hits.append(IndexHit(C.copy(h.value), C.copy(h.row), cells))
                return 0
            except BaseException as e:  # re-raised by the caller
                self.exc = e
                return 1

        self.fn = C.INDEX_HIT_FN(fn)

    def result(self, rc, step):
        if self.exc is not None:
            raise self.exc
        if rc != 0 and not C.NOTFOUND <= rc <= C.ESNAPSHOT:  # (no code of fn's nor the library's)
            raise RuntimeError("mrtx: %s: an exception interrupted the hit callback as it "
                               "was entered (ctypes printed it); the hits are incomplete"
                               % step)
        check(rc, step)
        return self.hits


class Txn:
    """A transaction (mrtx_txn).  Nothing is written before commit().

    As a context manager it commits when the block ends normally and aborts
    when it ends with an exception (which then propagates).  A transaction
    of Db.run is driven by run itself: commit() and abort() refuse there.
    """

    # Every call into the library holds the handle's gate (Db._tgate), so
    # that Db.close() on another thread cannot free this transaction or its
    # handle under it; abort() and collection hold Db._calls.cv instead.

    def __init__(self, db, ptr, *, managed=False):
        self._db = db
        self._ptr = ptr
        self._managed = managed
        self._key = next(_keys)
        self._scanners = weakref.WeakSet()
        #: The commit timestamp (mrtx_commit_ts) once commit() succeeded.
        self.commit_ts = None
        db._txns.add(self)
        if not managed:  # (Db.run's are the library's to end)
            db._open[self._key] = ptr

    # ------------------------------------------------------------ lifetime
    def _handle(self):
        if not self._ptr:
            raise error(C.EBADTXN, detail="the transaction has ended")
        return self._ptr

    def _end(self):
        """Detach from the C transaction (inside the gate or its cv) and
        return its pointer for the call that ends it."""
        for s in list(self._scanners):
            s.close()
        ptr, self._ptr = self._ptr, None
        self._db._txns.discard(self)
        self._db._open.pop(self._key, None)
        return ptr

    @property
    def active(self):
        """True until the transaction is committed or aborted."""
        return bool(self._ptr)

    def commit(self):
        """Commit (mrtx_commit_ts) and return the commit timestamp.  The
        transaction ends whatever the result.  Raises Conflict, Locked,
        Unknown (the outcome is unknown), BadTxn, Full, StoreError, ..."""
        if self._managed:
            raise InvalidArgument(C.EINVAL, "Db.run commits its transaction itself")
        ts = ctypes.c_uint64(0)
        with self._db._tgate:
            self._handle()
            rc = C.lib.mrtx_commit_ts(self._end(), ctypes.byref(ts))
        check(rc, "commit")
        self.commit_ts = ts.value
        return ts.value

    def abort(self):
        """Abort (mrtx_abort): nothing is written.  Ending an ended
        transaction again is a no-op."""
        if self._managed:
            raise InvalidArgument(C.EINVAL, "Db.run aborts its transaction itself")
        with self._db._calls.cv:  # (a Db.close() that got here first ended it)
            if self._ptr:
                C.lib.mrtx_abort(self._end())

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._managed or not self._ptr:
            return False
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False

    def __del__(self):
        # (no longer in Db._txns, so Db.close() does not end it through
        # this object; it does through Db._open unless this gets there first)
        try:
            if self._ptr and not self._managed:
                with self._db._calls.cv:
                    ptr = self._db._open.pop(self._key, None)
                    self._ptr = None
                    if ptr is not None and self._db._ptr:
                        C.lib.mrtx_abort(ptr)
        except Exception:
            pass

    # ---------------------------------------------------------------- reads
    @property
    def snapshot_ts(self):
        """mrtx_txn_snapshot_ts: 0 until the first read (LMDB)."""
        with self._db._tgate:
            return C.lib.mrtx_txn_snapshot_ts(self._handle())

    def set_lock_ttl(self, ms):
        """This transaction's lock expiry in milliseconds."""
        ms = C.ranged(ms, 0, C.U32, "lock ttl ms")
        with self._db._tgate:
            rc = C.lib.mrtx_txn_set_lock_ttl(self._handle(), ms)
        check(rc, "set_lock_ttl")

    def get(self, table, row, family, qualifier=b"", default=None):
        """The cell's value as bytes, or default when there is none.  Sees
        the transaction's own writes."""
        row, qualifier = data(row, "row"), data(qualifier, "qualifier")
        t, f = name(table, "table"), name(family, "family")
        out = C.Bytes()
        with self._db._tgate:  # (the value is the transaction's: copied inside)
            rc = C.lib.mrtx_get(self._handle(), t, C.borrow(row), f, C.borrow(qualifier),
                                ctypes.byref(out))
            if rc == C.NOTFOUND:
                return default
            check(rc, "get")
            return C.copy(out)

    def get_versions(self, table, row, family, qualifier=b"", max=16):
        """Up to max versions of the cell, newest first, as a list of
        (ts, value) pairs; ts 0 is this transaction's own write.  [] when
        the cell has none."""
        row, qualifier = data(row, "row"), data(qualifier, "qualifier")
        if C.ranged(max, 0, C.SIZE, "max") < 1:
            raise InvalidArgument(C.EINVAL, "max must be at least 1")
        t, f = name(table, "table"), name(family, "family")
        out = (C.Version * max)()
        n = ctypes.c_size_t(0)
        with self._db._tgate:
            rc = C.lib.mrtx_get_versions(self._handle(), t, C.borrow(row), f,
                                         C.borrow(qualifier), out, max, ctypes.byref(n))
            if rc == C.NOTFOUND:
                return []
            check(rc, "get_versions")
            return [(out[i].ts, C.copy(out[i].value)) for i in range(n.value)]

    def scan(self, table, start=b"", end=b"", *, prefix=None, family=None, qual_start=b"",
             qual_end=b"", reverse=False, limit=0, versions=1):
        """An iterator over the cells of rows [start, end) (b"": unbounded),
        merged with this transaction's writes: a Scanner yielding Cell
        tuples, rows ascending (reverse=True: descending; cells in a row
        stay ascending).  prefix=P scans the rows that start with P.
        family restricts to one family, and then qual_start/qual_end to
        qualifiers [qual_start, qual_end).  limit counts rows (0: all).
        versions=N yields up to N versions of each cell, newest first."""
        if prefix is not None:
            if start or end:
                raise InvalidArgument(C.EINVAL, "give prefix or start/end, not both")
            start = data(prefix, "prefix")
            from ._keys import prefix_end
            end = prefix_end(start)
        return Scanner(self, table, data(start, "start"), data(end, "end"), family,
                       data(qual_start, "qual_start"), data(qual_end, "qual_end"),
                       reverse, limit, versions)

    def index_scan(self, index, start=b"", end=b"", *, reverse=False, limit=0):
        """The entries of index whose value is in [start, end) (end b"":
        unbounded), in value then source row order (reverse: descending), at
        most limit (0: all), as a list of IndexHit."""
        start, end, i = data(start, "start"), data(end, "end"), name(index, "index")
        limit = C.ranged(limit, 0, C.SIZE, "limit")
        hits = _Hits()
        with self._db._tgate, C.held_signals():
            rc = C.lib.mrtx_index_scan(self._handle(), i, C.borrow(start), C.borrow(end),
                                       1 if reverse else 0, limit, hits.fn, None)
        return hits.result(rc, "index_scan")

    def index_lookup(self, index, value):
        """The entries of index holding exactly value, as a list of IndexHit."""
        value, i = data(value), name(index, "index")
        hits = _Hits()
        with self._db._tgate, C.held_signals():
            rc = C.lib.mrtx_index_lookup(self._handle(), i, C.borrow(value), hits.fn, None)
        return hits.result(rc, "index_lookup")

    # --------------------------------------------------------------- writes
    def put(self, table, row, family, qualifier, value):
        """Buffer a put of value into (table, row, family:qualifier)."""
        row, qualifier, value = data(row, "row"), data(qualifier, "qualifier"), data(value)
        t, f = name(table, "table"), name(family, "family")
        with self._db._tgate:
            rc = C.lib.mrtx_put(self._handle(), t, C.borrow(row), f, C.borrow(qualifier),
                                C.borrow(value))
        check(rc, "put")

    def delete(self, table, row, family, qualifier=b""):
        """Buffer the deletion of one cell (a missing cell is no error)."""
        row, qualifier = data(row, "row"), data(qualifier, "qualifier")
        t, f = name(table, "table"), name(family, "family")
        with self._db._tgate:
            rc = C.lib.mrtx_delete(self._handle(), t, C.borrow(row), f, C.borrow(qualifier))
        check(rc, "delete")

    def delete_row(self, table, row):
        """Buffer the deletion of every cell of row."""
        row, t = data(row, "row"), name(table, "table")
        with self._db._tgate:
            rc = C.lib.mrtx_delete_row(self._handle(), t, C.borrow(row))
        check(rc, "delete_row")


class Scanner(_Closing):
    """An open scan (mrtx_scanner): iterate it for Cell tuples.  It closes
    when exhausted, on close(), when used as a context manager, and when
    its transaction ends (iterating further then raises BadTxn).  Locked
    from a step leaves the scanner where it was: iterating again retries
    the same row."""

    def __init__(self, txn, table, start, end, family, qual_start, qual_end, reverse, limit,
                 versions):
        self._txn = txn
        self._ptr = None
        self._done = False
        spec = C.ScanSpec()
        spec.table = name(table, "table")
        spec.start, spec.end = C.borrow(start), C.borrow(end)
        spec.family = name(family, "family") if family is not None else None
        spec.qual_start, spec.qual_end = C.borrow(qual_start), C.borrow(qual_end)
        spec.reverse = 1 if reverse else 0
        spec.limit_rows = C.ranged(limit, 0, C.SIZE, "limit")
        versions = C.ranged(versions, 0, C.U32, "versions")
        ptr = C.scanner_p()
        # start, end, ... stay referenced by this frame during the call
        with txn._db._tgate:
            check(C.lib.mrtx_scan_open(txn._handle(), ctypes.byref(spec), ctypes.byref(ptr)),
                  "scan")
            self._ptr = ptr
            txn._scanners.add(self)
            rc = C.lib.mrtx_scan_versions(ptr, versions) if versions != 1 else 0
        if rc:
            e = error(rc, "scan versions")
            self.close()
            raise e

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        c = C.Cell()
        with self._txn._db._tgate:  # (the cell is the transaction's: copied inside)
            if not self._ptr:
                raise error(C.EBADTXN, detail="the scan's transaction has ended")
            rc = C.lib.mrtx_scan_next(self._ptr, ctypes.byref(c))
            if rc == 0:
                return cell(c, C.lib.mrtx_scan_ts(self._ptr))
        if rc == C.NOTFOUND:
            self.close()
            self._done = True
            raise StopIteration
        # the scanner stays open: after Locked the next step retries the
        # row; after any other error each step raises it again
        raise error(rc, "scan")

    def close(self):
        """Close the scanner (mrtx_scan_close); closing twice is a no-op."""
        with self._txn._db._calls.cv:
            ptr, self._ptr = self._ptr, None
            if ptr:
                C.lib.mrtx_scan_close(ptr)
                self._txn._scanners.discard(self)

