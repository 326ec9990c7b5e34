"""The store handle (mrtx_db): tables, transactions, the retry loop,
indexes and maintenance."""

import ctypes
import os
import threading
import weakref

from . import _capi as C
from ._errors import Error, InvalidArgument, check, error
from ._txn import Family, Index, Txn, _Closing, cstr, data, name


def _path(p):
    p = os.fsencode(p)
    if b"\0" in p:
        raise InvalidArgument(C.EINVAL, "path contains a NUL byte")
    return p


def _names(items, what):
    arr = (ctypes.c_char_p * max(len(items), 1))()
    for i, s in enumerate(items):
        arr[i] = name(s, what)
    return arr


class _Calls:
    """The calls into the library in flight on one handle, counted so that
    Db.close() can wait for them.

    The C library frees a handle, and every transaction of it, in
    mrtx_close and mrtx_abort; a call of another thread still inside the
    library (its GIL released) would then run on freed memory.  So every
    call that can use the handle or one of its transactions holds a gate
    (`with db._gate:` or `db._tgate`, around reading the pointer and the
    call), and close() stops new calls, waits until none is in flight, and
    only then aborts and frees.  A call made from inside another (a run()
    callback's) is let through while closing: close() is waiting for its
    outer call.  Quick calls that end a transaction or a scanner (abort,
    scan close, collection) hold cv instead, which close() holds while it
    frees: they run before it or find the pointer ended.  cv is reentrant,
    as a finalizer may run on the thread that holds it."""

    __slots__ = ("cv", "n", "closing", "local")

    def __init__(self):
        self.cv = threading.Condition(threading.RLock())
        self.n = 0
        self.closing = False
        self.local = threading.local()

    def depth(self):
        return getattr(self.local, "depth", 0)


class _Gate:
    """A context manager counting one call in _Calls; raises what refused()
    makes when the handle is closing or closed."""

    __slots__ = ("calls", "refused")

    def __init__(self, calls, refused):
        self.calls = calls
        self.refused = refused

    # (depth is raised before n and lowered after it: a close() from a
    # signal handler that runs in between finds itself inside a call and
    # refuses, rather than wait for its own thread)
    def __enter__(self):
        c = self.calls
        depth = c.depth()
        c.local.depth = depth + 1
        try:
            with c.cv:
                if c.closing and not depth:
                    raise self.refused()
                c.n += 1
        except BaseException:
            c.local.depth = depth
            raise
        return self

    def __exit__(self, *exc):
        c = self.calls
        with c.cv:
            c.n -= 1
            if not c.n:
                c.cv.notify_all()
        c.local.depth -= 1
        return False


class Db(_Closing):
    """An open store (mrtx_open); use mrtx.open() to make one.  A context
    manager: leaving the block closes it.  Safe to share between threads,
    close() included: it waits for the calls other threads have in flight
    on it (see close)."""

    def __init__(self, path, *, durability=C.SYNC, map_size=0, file_mode=0, lock_ttl_ms=0,
                 lock_wait_ms=0, read_only=False, create=None):
        self._ptr = None
        self._calls = _Calls()
        #: Held by every call on the handle, and by a transaction's or a
        #: scanner's (which then raises BadTxn once the store is closing).
        self._gate = _Gate(self._calls,
                           lambda: InvalidArgument(C.EINVAL, "the store is closed"))
        self._tgate = _Gate(self._calls,
                            lambda: error(C.EBADTXN, detail="the transaction has ended "
                                          "(its store is closed)"))
        self._txns = weakref.WeakSet()
        #: The C pointer of every transaction begun and not yet ended, by
        #: Txn._key: close() aborts them, those of transactions being
        #: collected on another thread included.
        self._open = {}
        o = C.Options(C.OPTIONS_VERSION, C.ranged(durability, -C.INT, C.INT, "durability"),
                      C.ranged(map_size, 0, C.SIZE, "map_size"),
                      C.ranged(file_mode, 0, C.U32, "file_mode"),
                      C.ranged(lock_ttl_ms, 0, C.U32, "lock_ttl_ms"),
                      C.ranged(lock_wait_ms, 0, C.U32, "lock_wait_ms"), 1 if read_only else 0,
                      C.CREATE_DEFAULT if create is None else
                      C.CREATE_IF_MISSING if create else C.CREATE_NEVER)
        ptr = C.db_p()
        check(C.lib.mrtx_open(ctypes.byref(ptr), _path(path), ctypes.byref(o)), "open")
        self._ptr = ptr
        #: The path the store was opened with.
        self.path = path

    def _handle(self):
        """The C handle, for a call made inside the gate."""
        if not self._ptr:
            raise InvalidArgument(C.EINVAL, "the store is closed")
        return self._ptr

    @property
    def closed(self):
        return not self._ptr

    def close(self):
        """Close the store (mrtx_close).  Calls other threads have inside
        the library on this handle are waited for, new ones raise
        InvalidArgument, and then the transactions still open, whichever
        thread began them, are aborted (the C library requires every one to
        be finished) and the handle is freed.  Closing twice, or while
        another thread closes, is a no-op once the store is closed.  Raises
        InvalidArgument when called from inside a call on this store (a
        run() callback), which it would wait for forever."""
        g = self._calls
        with g.cv:
            while True:
                if not self._ptr:
                    return
                if g.depth():
                    raise InvalidArgument(C.EINVAL, "close() inside a call on this store (a "
                                          "run() callback) would wait for itself")
                if not g.closing:
                    break
                g.cv.wait()  # (another thread closes: until it is done or gives up)
            g.closing = True
            try:
                while g.n:
                    g.cv.wait()
            except BaseException:
                # (interrupted while waiting -- KeyboardInterrupt: the store
                # stays open and usable, and a later close() starts over)
                g.closing = False
                g.cv.notify_all()
                raise
            try:
                for t in list(self._txns):
                    if t._ptr and not t._managed:
                        C.lib.mrtx_abort(t._end())
                # (transactions being collected: out of _txns already)
                for ptr in list(self._open.values()):
                    C.lib.mrtx_abort(ptr)
                self._open.clear()
                ptr, self._ptr = self._ptr, None
                C.lib.mrtx_close(ptr)
            finally:
                g.cv.notify_all()

    def flush(self):
        """Wait for the background end of this handle's commits (RADOS)."""
        with self._gate:
            check(C.lib.mrtx_flush(self._handle()), "flush")

    # --------------------------------------------------------------- tables
    def create_table(self, table, families, *, splits=None):
        """Create table with families (idempotent for an identical list).
        Each family is a str, or a Family(name, max_versions, min_versions,
        ttl_ms) to keep older versions (mrtx_create_table2).  splits: row
        keys to pre-split the table at (RADOS; checked on LMDB)."""
        if isinstance(families, (str, bytes, bytearray)):
            raise TypeError("families: a list of names, not one %s" % type(families).__name__)
        families = list(families)
        t = name(table, "table")
        if any(isinstance(f, Family) for f in families):
            if splits:
                raise InvalidArgument(C.EINVAL, "splits with version policies")
            specs = (C.FamilySpec * max(len(families), 1))()
            keep = []
            for i, f in enumerate(families):
                f = f if isinstance(f, Family) else Family(f)
                keep.append(name(f.name, "family"))
                specs[i] = C.FamilySpec(keep[-1],
                                        C.ranged(f.max_versions, 0, C.U32, "max_versions"),
                                        C.ranged(f.min_versions, 0, C.U32, "min_versions"),
                                        C.ranged(f.ttl_ms, 0, C.U64, "ttl_ms"))
            with self._gate:
                rc = C.lib.mrtx_create_table2(self._handle(), t, specs, len(families))
        elif splits is not None:
            rows = [data(r, "split") for r in splits]
            arr = (C.Bytes * max(len(rows), 1))(*[C.borrow(r) for r in rows])
            names = _names(families, "family")
            with self._gate:
                rc = C.lib.mrtx_create_table_split(self._handle(), t, names, len(families), arr,
                                                   len(rows))
        else:
            names = _names(families, "family")
            with self._gate:
                rc = C.lib.mrtx_create_table(self._handle(), t, names, len(families))
        check(rc, "create_table")

    def tables(self):
        """The store's table names, in name order (index tables included)."""
        out = []

        exc = []

        def fn(p, _payload):
            try:
                out.append(cstr(p))
                return 0
            except BaseException as e:
                exc.append(e)
                return 1

        cb = C.TABLES_FN(fn)
        with self._gate, C.held_signals():
            rc = C.lib.mrtx_tables(self._handle(), cb, None)
        if exc:
            raise exc[0]
        check(rc, "tables")
        return out

    def families(self, table):
        """table's family names, in declaration order."""
        arr = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_size_t(0)
        t = name(table, "table")
        with self._gate:  # (the names are the handle's: read them before it can close)
            check(C.lib.mrtx_table_families(self._handle(), t, ctypes.byref(arr),
                                            ctypes.byref(n)), "families")
            return [arr[i].decode("utf-8", "replace") for i in range(n.value)]

    def add_family(self, table, family):
        """Add a family to table (LMDB)."""
        t, f = name(table, "table"), name(family, "family")
        with self._gate:
            check(C.lib.mrtx_add_family(self._handle(), t, f), "add_family")

    def drop_table(self, table):
        """Drop table, its data and its name (transactionally: see mrtx.h)."""
        t = name(table, "table")
        with self._gate:
            check(C.lib.mrtx_drop_table(self._handle(), t), "drop_table")

    def truncate_table(self, table):
        """Delete every row of table, keeping the table."""
        t = name(table, "table")
        with self._gate:
            check(C.lib.mrtx_truncate_table(self._handle(), t), "truncate_table")

    # --------------------------------------------------------- transactions
    def begin(self):
        """A new transaction (a context manager: commit on normal exit,
        abort on an exception)."""
        ptr = C.txn_p()
        with self._gate:
            check(C.lib.mrtx_begin(self._handle(), ctypes.byref(ptr)), "begin")
            return Txn(self, ptr)

    def begin_at(self, ts):
        """A read-only transaction at the past snapshot ts, a commit
        timestamp (Txn.commit()'s value).  Raises SnapshotGone when ts is
        below the collection's safe point, InvalidArgument for ts 0 or one
        past the newest commit."""
        ptr = C.txn_p()
        ts = C.ranged(ts, 0, C.U64, "ts")
        with self._gate:
            check(C.lib.mrtx_begin_at(self._handle(), ts, ctypes.byref(ptr)), "begin_at")
            return Txn(self, ptr)

    def run(self, fn, attempts=10):
        """Run fn(txn) in a fresh transaction and commit it (mrtx_run),
        retrying on Conflict and Locked -- raised inside fn or by the commit
        -- with jittered exponential backoff, up to attempts attempts.
        Returns fn's return value of the attempt that committed.  Any other
        exception from fn aborts and propagates at once; when attempts run
        out, the last Conflict or Locked is raised.

        fn may run several times, and an attempt that is retried may have
        seen an inconsistent mix of values: it should only read and write
        through txn (no effects outside the store), and raise mrtx.Conflict
        when an invariant it relies on looks broken.  It must not commit or
        abort txn."""
        # done: the last attempt ran fn to its end.  An exception that
        # lands as the callback is entered (a signal's) is printed and
        # dropped by ctypes, which then returns 0, and the library commits
        # that attempt -- which buffered nothing of fn: run() must not
        # report it as fn's success.
        state = {"exc": None, "result": None, "done": False}
        attempts = C.ranged(attempts, -C.INT, C.INT, "attempts")

        def attempt(txn_ptr, _payload):
            state["done"] = False
            state["exc"] = None
            txn = Txn(self, txn_ptr, managed=True)
            try:
                state["result"] = fn(txn)
                state["done"] = True
                return 0
            except Error as e:
                # the library retries CONFLICT and ELOCKED (and the
                # BADTXN of a transaction a conflict doomed); a code that
                # is no failure (an Error made with 0) aborts as any
                # other exception does
                state["exc"] = e
                return e.code if isinstance(e.code, int) and e.code < 0 else 1
            except BaseException as e:
                state["exc"] = e
                return 1  # no mrtx code: the library aborts and returns it
            finally:
                txn._end()

        cb = C.RUN_FN(attempt)
        with self._gate:
            rc = C.lib.mrtx_run(self._handle(), cb, None, attempts)
        if rc == 0:
            if not state["done"]:
                raise RuntimeError("mrtx: run(): an exception interrupted the callback "
                                   "before fn ran (ctypes printed it); the attempt "
                                   "committed nothing of fn")
            return state["result"]
        if state["exc"] is not None:
            raise state["exc"]
        raise error(rc, "run")

    # -------------------------------------------------------------- indexes
    def create_index(self, index, table, family, qualifier, index_table, cluster=()):
        """Declare the secondary index `index` of (table, family, qualifier)
        into index_table, and backfill it.  cluster: (family, qualifier)
        pairs of the source row copied into each entry."""
        qualifier = data(qualifier, "qualifier")
        cluster = [(name(f, "family"), data(q, "qualifier")) for f, q in cluster]
        cols = (C.Column * max(len(cluster), 1))(*[C.Column(f, C.borrow(q)) for f, q in cluster])
        spec = C.IndexSpec(C.INDEX_SPEC_VERSION, name(index, "index"), name(table, "table"),
                           name(family, "family"), C.borrow(qualifier),
                           name(index_table, "index table"),
                           cols if cluster else None, len(cluster))
        with self._gate:
            check(C.lib.mrtx_create_index(self._handle(), ctypes.byref(spec)), "create_index")

    def drop_index(self, index):
        """Drop the secondary index `index`: its declaration, then its index
        table (as drop_table; a repeated call finishes a drop cut short)."""
        i = name(index, "index")
        with self._gate:
            check(C.lib.mrtx_drop_index(self._handle(), i), "drop_index")

    def indexes(self):
        """The store's index declarations, in name order, as Index tuples."""
        out = []
        exc = []

        def fn(spec_p, _payload):
            try:
                s = spec_p.contents
                cluster = tuple((s.cluster[i].family.decode("utf-8"),
                                 C.copy(s.cluster[i].qualifier)) for i in range(s.ncluster))
                out.append(Index(s.name.decode("utf-8"), s.table.decode("utf-8"),
                                 s.family.decode("utf-8"), C.copy(s.qualifier),
                                 s.index_table.decode("utf-8"), cluster))
                return 0
            except BaseException as e:
                exc.append(e)
                return 1

        cb = C.INDEX_SPEC_FN(fn)
        with self._gate, C.held_signals():
            rc = C.lib.mrtx_indexes(self._handle(), cb, None)
        if exc:
            raise exc[0]
        check(rc, "indexes")
        return out

    # ---------------------------------------------------------- maintenance
    def gc(self, keep_ms=0):
        """Collect versions the families' policies no longer keep, and
        deletions older than keep_ms behind the newest commit; returns the
        number of versions removed."""
        n = ctypes.c_uint64(0)
        keep_ms = C.ranged(keep_ms, 0, C.U64, "keep_ms")
        with self._gate:
            check(C.lib.mrtx_gc(self._handle(), keep_ms, ctypes.byref(n)), "gc")
        return n.value

    def backup(self, dest_dir):
        """A consistent copy of the (LMDB) store in dest_dir, which must not
        exist or be empty."""
        dest = _path(dest_dir)
        with self._gate:
            check(C.lib.mrtx_backup(self._handle(), dest), "backup")


def upgrade(path):
    """Convert a store of an older format in place (mrtx_upgrade); returns
    the number of records converted."""
    n = ctypes.c_uint64(0)
    check(C.lib.mrtx_upgrade(_path(path), ctypes.byref(n)), "upgrade")
    return n.value
