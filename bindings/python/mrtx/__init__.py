"""mrtx: multi-row ACID transactions over a sorted store, from Python.

A ctypes binding of libmrtx (include/mrtx.h).  The data model is the C
library's: (table, row, family:qualifier) -> value, rows and qualifiers
arbitrary byte strings (NUL allowed) sorted by memcmp.

    import mrtx

    with mrtx.open("/tmp/store") as db:
        db.create_table("acct", ["bal"])
        with db.begin() as txn:            # commits on normal exit,
            txn.put("acct", b"alice", "bal", b"", b"100")   # aborts on an exception
        def transfer(txn):
            ...
        db.run(transfer)                   # retries Conflict and Locked

Types.  Table, family and index names are str (or ASCII bytes).  Rows,
qualifiers and values are bytes (also bytearray or memoryview); a str is
accepted too and encoded as UTF-8.  Everything read comes back as bytes,
copied out of the library before the memory it lent ends (a read's value
lives until its transaction ends), so results stay valid for good.

Errors.  Every failure raises a subclass of mrtx.Error carrying .code
(mrtx.CONFLICT, ...), .name (mrtx_strerror) and .detail (mrtx_errmsg); see
the classes below and ERRORS, the map from code to class.

Threads.  A Db may be shared by threads; a Txn (and its scanners) must be
used by one thread at a time.  Calls into the library release the GIL.
Db.close() may come from any thread: it waits for the calls in flight on
the store, refuses new ones and aborts what is still open (see Db.close).
"""

import ctypes

from . import _capi as C
from ._capi import (CONFLICT, EBADTXN, ECORRUPT, EEXIST, EFULL, EINVAL, ELOCKED, ENOFAMILY,
                    ENOMEM, ENOTABLE, ENOTSTORE, ENOTSUP, EREADONLY, ESNAPSHOT, ESTORE,
                    ETOOBIG, EUNKNOWN, INDEX_FAMILY, MAX_FAMILIES, MAX_KEY, MAX_NAME, MAX_ROW,
                    MAX_SPLITS, MAX_TABLES, MAX_VALUE, NOMETASYNC, NOSYNC, NOTFOUND, OK, SYNC)
from ._errors import (BadTxn, Conflict, Corrupt, Error, Exists, Full, InvalidArgument, Locked,
                      NoFamily, NoMemory, NoTable, NotAStore, NotFound, NotSupported, ReadOnly,
                      Retryable, SnapshotGone, StoreError, TooBig, Unknown, check, errmsg,
                      error, strerror)
from ._errors import CLASSES as ERRORS
from ._keys import Key, parse_key, prefix_end
from ._txn import Cell, Family, Index, IndexHit, Scanner, Txn
from ._db import Db, upgrade

__version__ = "0.2.0"
#: The path libmrtx was loaded from.
library_path = C.path

__all__ = [
    "open", "Db", "Txn", "Scanner", "Cell", "Family", "Index", "IndexHit", "Key",
    "parse_key", "prefix_end", "upgrade", "strerror", "errmsg", "ERRORS",
    "Error", "Retryable", "NotFound", "Conflict", "Locked", "Unknown", "InvalidArgument",
    "TooBig", "NoTable", "Corrupt", "NoMemory", "StoreError", "NoFamily", "NotAStore",
    "Full", "BadTxn", "Exists", "ReadOnly", "NotSupported", "SnapshotGone",
    "OK", "NOTFOUND", "CONFLICT", "ELOCKED", "EUNKNOWN", "EINVAL", "ETOOBIG", "ENOTABLE",
    "ECORRUPT", "ENOMEM", "ESTORE", "ENOFAMILY", "ENOTSTORE", "EFULL", "EBADTXN",
    "EEXIST", "EREADONLY", "ENOTSUP", "ESNAPSHOT", "SYNC", "NOMETASYNC", "NOSYNC",
    "MAX_KEY", "MAX_ROW", "MAX_VALUE", "MAX_NAME", "MAX_FAMILIES", "MAX_TABLES",
    "MAX_SPLITS", "INDEX_FAMILY",
]


def open(path, *, durability=SYNC, map_size=0, file_mode=0, lock_ttl_ms=0, lock_wait_ms=0,
         read_only=False, create=None):
    """Open the store at path (mrtx_open): a directory, or
    rados://POOL/NAME[?...] in a library built with RADOS.  The keyword
    arguments are mrtx_options' fields; 0 means the library's default.
    create: None (the default: a directory gets a store where it has none,
    a RADOS address must name one), True (create on every backend) or
    False (never create: NotAStore).
    Returns a Db, which is a context manager.  Raises NotAStore,
    InvalidArgument, Corrupt, StoreError, ..."""
    return Db(path, durability=durability, map_size=map_size, file_mode=file_mode,
              lock_ttl_ms=lock_ttl_ms, lock_wait_ms=lock_wait_ms, read_only=read_only,
              create=create)


def failpoints(spec):
    """Arm failpoints for this process (tests): mrtx_failpoints_set's syntax;
    None or "" disarms all."""
    check(C.lib.mrtx_failpoints_set(spec.encode("ascii") if spec else None), "failpoints")


def failpoint_hits(name):
    """Hits of the named failpoint since it was armed; -1 for an unknown name."""
    return C.lib.mrtx_failpoint_hits(name.encode("ascii"))


del ctypes
