"""ctypes declarations of include/mrtx.h and the loading of libmrtx.

Every structure mirrors the header field by field; tests/test_layout.py
compares their sizes and offsets with the C compiler's.  Nothing here is
public: the package's __init__ wraps it.

The library is found, in this order:
  1. the environment variable MRTX_LIB (a path to libmrtx.so.*), which the
     tests of a build tree set;
  2. beside an installed package: _installed.py, written by `cmake
     --install`, holds the library's path relative to the package;
  3. the dynamic linker's search path, by SONAME (a library installed in
     a system directory, or one named by LD_LIBRARY_PATH).
"""

import ctypes
import os
import signal
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int32, c_int64,
                    c_long, c_size_t, c_uint, c_uint8, c_uint32, c_uint64, c_void_p)

# The ABI this module is written for: libmrtx's SONAME (0.x: major.minor).
SONAME = "libmrtx.so.0.2"

MAX_KEY = 511
MAX_ROW = 495
MAX_VALUE = 64 * 1024 * 1024
MAX_NAME = 64
MAX_FAMILIES = 255
MAX_TABLES = 500
MAX_SPLITS = 1024
OPTIONS_VERSION = 5
# mrtx_options.create
CREATE_DEFAULT, CREATE_NEVER, CREATE_IF_MISSING = 0, 1, 2
INDEX_SPEC_VERSION = 1
INDEX_FAMILY = "i"

# Error codes, in the header's order.
OK = 0
NOTFOUND = -31000
(CONFLICT, ELOCKED, EUNKNOWN, EINVAL, ETOOBIG, ENOTABLE, ECORRUPT, ENOMEM, ESTORE,
 ENOFAMILY, ENOTSTORE, EFULL, EBADTXN, EEXIST, EREADONLY, ENOTSUP,
 ESNAPSHOT) = range(NOTFOUND + 1, NOTFOUND + 18)

# Durability
SYNC, NOMETASYNC, NOSYNC = 0, 1, 2

# mrtx_key_type
(KEY_BYTES, KEY_U32, KEY_U64, KEY_I32, KEY_I64, KEY_RTS, KEY_FIXED, KEY_HASH,
 KEY_SALT) = range(1, 10)


class Bytes(Structure):
    _fields_ = [("data", c_void_p), ("size", c_size_t)]


class Options(Structure):
    _fields_ = [("version", c_int), ("durability", c_int), ("map_size", c_size_t),
                ("file_mode", c_uint), ("lock_ttl_ms", c_uint32),
                ("lock_wait_ms", c_uint32), ("read_only", c_int), ("create", c_int)]


class FamilySpec(Structure):
    _fields_ = [("name", c_char_p), ("max_versions", c_uint32),
                ("min_versions", c_uint32), ("ttl_ms", c_uint64)]


class ScanSpec(Structure):
    _fields_ = [("table", c_char_p), ("start", Bytes), ("end", Bytes), ("family", c_char_p),
                ("qual_start", Bytes), ("qual_end", Bytes), ("reverse", c_int),
                ("limit_rows", c_size_t)]


class Cell(Structure):
    # family is a c_void_p, not a c_char_p, so that reading it never
    # converts; names are NUL-terminated printable ASCII.
    _fields_ = [("row", Bytes), ("family", c_void_p), ("qualifier", Bytes), ("value", Bytes)]


class Version(Structure):
    _fields_ = [("ts", c_uint64), ("value", Bytes)]


class Key(Structure):
    _fields_ = [("buf", c_uint8 * MAX_KEY), ("size", c_size_t), ("err", c_int)]


class KeyPart(Structure):
    _fields_ = [("type", c_int), ("width", c_size_t), ("bytes", Bytes), ("u", c_uint64),
                ("i", c_int64)]


class Column(Structure):
    _fields_ = [("family", c_char_p), ("qualifier", Bytes)]


class IndexSpec(Structure):
    _fields_ = [("version", c_int), ("name", c_char_p), ("table", c_char_p),
                ("family", c_char_p), ("qualifier", Bytes), ("index_table", c_char_p),
                ("cluster", POINTER(Column)), ("ncluster", c_size_t)]


class IndexHit(Structure):
    _fields_ = [("value", Bytes), ("row", Bytes), ("cells", POINTER(Cell)),
                ("ncells", c_size_t)]


db_p = c_void_p
txn_p = c_void_p
scanner_p = c_void_p

TABLES_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
RUN_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)
INDEX_HIT_FN = CFUNCTYPE(c_int, POINTER(IndexHit), c_void_p)
INDEX_SPEC_FN = CFUNCTYPE(c_int, POINTER(IndexSpec), c_void_p)

# name: (restype, argtypes)
_PROTOTYPES = {
    "mrtx_open": (c_int, [POINTER(db_p), c_char_p, POINTER(Options)]),
    "mrtx_close": (None, [db_p]),
    "mrtx_flush": (c_int, [db_p]),
    "mrtx_create_table": (c_int, [db_p, c_char_p, POINTER(c_char_p), c_size_t]),
    "mrtx_create_table2": (c_int, [db_p, c_char_p, POINTER(FamilySpec), c_size_t]),
    "mrtx_create_table_split": (c_int, [db_p, c_char_p, POINTER(c_char_p), c_size_t,
                                        POINTER(Bytes), c_size_t]),
    "mrtx_table_families": (c_int, [db_p, c_char_p, POINTER(POINTER(c_char_p)),
                                    POINTER(c_size_t)]),
    "mrtx_add_family": (c_int, [db_p, c_char_p, c_char_p]),
    "mrtx_drop_table": (c_int, [db_p, c_char_p]),
    "mrtx_truncate_table": (c_int, [db_p, c_char_p]),
    "mrtx_tables": (c_int, [db_p, TABLES_FN, c_void_p]),
    "mrtx_begin": (c_int, [db_p, POINTER(txn_p)]),
    "mrtx_txn_set_lock_ttl": (c_int, [txn_p, c_uint32]),
    "mrtx_get": (c_int, [txn_p, c_char_p, Bytes, c_char_p, Bytes, POINTER(Bytes)]),
    "mrtx_put": (c_int, [txn_p, c_char_p, Bytes, c_char_p, Bytes, Bytes]),
    "mrtx_delete": (c_int, [txn_p, c_char_p, Bytes, c_char_p, Bytes]),
    "mrtx_delete_row": (c_int, [txn_p, c_char_p, Bytes]),
    "mrtx_commit": (c_int, [txn_p]),
    "mrtx_commit_ts": (c_int, [txn_p, POINTER(c_uint64)]),
    "mrtx_txn_snapshot_ts": (c_uint64, [txn_p]),
    "mrtx_get_versions": (c_int, [txn_p, c_char_p, Bytes, c_char_p, Bytes, POINTER(Version),
                                  c_size_t, POINTER(c_size_t)]),
    "mrtx_begin_at": (c_int, [db_p, c_uint64, POINTER(txn_p)]),
    "mrtx_gc": (c_int, [db_p, c_uint64, POINTER(c_uint64)]),
    "mrtx_upgrade": (c_int, [c_char_p, POINTER(c_uint64)]),
    "mrtx_abort": (None, [txn_p]),
    "mrtx_scan_open": (c_int, [txn_p, POINTER(ScanSpec), POINTER(scanner_p)]),
    "mrtx_scan_next": (c_int, [scanner_p, POINTER(Cell)]),
    "mrtx_scan_versions": (c_int, [scanner_p, c_uint32]),
    "mrtx_scan_ts": (c_uint64, [scanner_p]),
    "mrtx_scan_close": (None, [scanner_p]),
    "mrtx_run": (c_int, [db_p, RUN_FN, c_void_p, c_int]),
    "mrtx_strerror": (c_char_p, [c_int]),
    "mrtx_errmsg": (c_char_p, []),
    "mrtx_failpoints_set": (c_int, [c_char_p]),
    "mrtx_failpoint_hits": (c_long, [c_char_p]),
    "mrtx_backup": (c_int, [db_p, c_char_p]),
    "mrtx_key_init": (None, [POINTER(Key)]),
    "mrtx_key_bytes": (c_int, [POINTER(Key), Bytes]),
    "mrtx_key_u32": (c_int, [POINTER(Key), c_uint32]),
    "mrtx_key_u64": (c_int, [POINTER(Key), c_uint64]),
    "mrtx_key_i32": (c_int, [POINTER(Key), c_int32]),
    "mrtx_key_i64": (c_int, [POINTER(Key), c_int64]),
    "mrtx_key_rts": (c_int, [POINTER(Key), c_uint64]),
    "mrtx_key_fixed": (c_int, [POINTER(Key), Bytes]),
    "mrtx_key_hash": (c_int, [POINTER(Key), Bytes, c_size_t]),
    "mrtx_key_salt": (c_int, [POINTER(Key), Bytes, c_uint]),
    "mrtx_key_finish": (c_int, [POINTER(Key), POINTER(Bytes)]),
    "mrtx_key_prefix_end": (c_int, [POINTER(Key), POINTER(Key)]),
    "mrtx_key_parse": (c_int, [POINTER(KeyPart), c_size_t, Bytes, POINTER(c_uint8), c_size_t]),
    "mrtx_key_format": (c_int, [c_char_p, c_size_t, POINTER(KeyPart), c_size_t]),
    "mrtx_create_index": (c_int, [db_p, POINTER(IndexSpec)]),
    "mrtx_drop_index": (c_int, [db_p, c_char_p]),
    "mrtx_index_scan": (c_int, [txn_p, c_char_p, Bytes, Bytes, c_int, c_size_t, INDEX_HIT_FN,
                                c_void_p]),
    "mrtx_index_lookup": (c_int, [txn_p, c_char_p, Bytes, INDEX_HIT_FN, c_void_p]),
    "mrtx_indexes": (c_int, [db_p, INDEX_SPEC_FN, c_void_p]),
}


def _candidates():
    env = os.environ.get("MRTX_LIB")
    if env:
        return [env]
    out = []
    try:
        from . import _installed  # written by `cmake --install`
        here = os.path.dirname(os.path.abspath(__file__))
        out.append(os.path.normpath(os.path.join(here, _installed.LIBRARY)))
    except ImportError:
        pass
    out.append(SONAME)
    return out


def _load():
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib, path
    raise ImportError("mrtx: cannot load %s (set MRTX_LIB to its path): %s"
                      % (SONAME, "; ".join(errors)))


lib, path = _load()


def data(b, what="value"):
    """Row, qualifier, value or key bytes (a str is encoded as UTF-8),
    always a plain bytes object: a subclass's or a view's buffer is copied,
    so that what the library reads is exactly its bytes."""
    if type(b) is bytes:
        return b
    if isinstance(b, str):
        return str.encode(b, "utf-8")  # (not a subclass's own encode)
    if isinstance(b, (bytes, bytearray, memoryview)):
        return memoryview(b).tobytes()  # (its buffer, whatever it says of itself)
    raise TypeError("%s: expected bytes or str, not %s" % (what, type(b).__name__))


def borrow(b):
    """An mrtx_bytes pointing into the bytes object b (keep b alive).  b
    must be exactly bytes: a subclass may say another length than its
    buffer's (callers convert with _txn.data, which copies anything else)."""
    if type(b) is not bytes:
        raise TypeError("mrtx: borrow needs bytes, not %s" % type(b).__name__)
    return Bytes(ctypes.cast(c_char_p(b), c_void_p), bytes.__len__(b))


def ranged(v, lo, hi, what="value"):
    """v as a plain int, lo <= v < hi; a bool or a non-int is a TypeError and
    one out of range an OverflowError (ctypes would wrap it silently)."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError("%s: expected an int, not %s" % (what, type(v).__name__))
    v = int.__int__(v)  # (a subclass's own comparisons are not asked)
    if not lo <= v < hi:
        raise OverflowError("%s: %d out of range [%d, %d)" % (what, v, lo, hi))
    return v


U32, U64, SIZE, INT = 2**32, 2**64, 2**(8 * ctypes.sizeof(c_size_t)), 2**31

# The signals held (those of them with a Python handler, which may raise):
# the interrupt and the ones programs commonly give handlers.  (Holding
# every asynchronous signal cost tens of microseconds a call here.)
_HELD = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM",
                                           "SIGUSR1", "SIGUSR2") if hasattr(signal, n))


class held_signals:
    """Hold signals (_HELD) on the main thread while a call that runs
    Python callbacks of the binding's own (index hits, table names) is in
    the library.  A Python signal handler's exception that lands as such a
    callback is entered is printed and dropped by ctypes, which then returns
    an undefined code to the library: a hit lost, or a made-up error.  Held,
    the signal is taken when the call has returned, and its exception
    raised there."""

    __slots__ = ("old",)

    def __enter__(self):
        self.old = None
        if threading.current_thread() is threading.main_thread():
            held = [s for s in _HELD if callable(signal.getsignal(s))]
            if held:
                self.old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.old)
        return False


def copy(bs):
    """The bytes an mrtx_bytes points to, copied into a Python bytes."""
    if not bs.size:
        return b""
    return ctypes.string_at(bs.data, bs.size)
