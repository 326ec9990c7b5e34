"""One exception class per MRTX_E* code of include/mrtx.h."""

from . import _capi as C


class Error(Exception):
    """A failed mrtx call.

    code    the negative MRTX_* code (mrtx.CONFLICT, ...)
    name    mrtx_strerror(code), e.g. "conflict"
    detail  mrtx_errmsg() as it stood right after the failure: which table,
            row, step or limit
    """

    code = None  # each subclass's own code

    def __init__(self, code=None, detail="", step=None):
        if code is None:
            code = type(self).code
        if code is None:
            raise TypeError("mrtx.Error needs a code")
        self.code = code
        self.name = strerror(code)
        self.detail = detail
        self.step = step
        msg = self.name
        if step:
            msg = "%s: %s" % (step, msg)
        if detail:
            msg = "%s (%s)" % (msg, detail)
        super().__init__(msg)


class Retryable(Error):
    """A failure that a new attempt of the transaction may not meet:
    Conflict and Locked, the two codes Db.run retries."""


class NotFound(Error, KeyError):
    """MRTX_NOTFOUND: no such cell.  Txn.get returns None instead."""

    def __str__(self):  # KeyError would quote the message
        return Exception.__str__(self)


class Conflict(Retryable):
    """MRTX_CONFLICT: a concurrent commit won; nothing was written."""


class Locked(Retryable):
    """MRTX_ELOCKED: a live transaction holds a row."""


class Unknown(Error):
    """MRTX_EUNKNOWN: the store failed at the commit point; the outcome is
    unknown until a reader or `mrtx recover` settles it."""


class InvalidArgument(Error, ValueError):
    """MRTX_EINVAL: a bad argument (empty row, bad name, ...)."""


class TooBig(Error, ValueError):
    """MRTX_ETOOBIG: a key, value or name over the limits."""


class NoTable(Error):
    """MRTX_ENOTABLE: no such table."""


class Corrupt(Error):
    """MRTX_ECORRUPT: malformed store data or metadata."""


class NoMemory(Error, MemoryError):
    """MRTX_ENOMEM: an allocation failed."""


class StoreError(Error, OSError):
    """MRTX_ESTORE: the store (LMDB, the file system) failed."""


class NoFamily(Error):
    """MRTX_ENOFAMILY: no such family in the table."""


class NotAStore(Error):
    """MRTX_ENOTSTORE: not an mrtx store, or another format version."""


class Full(Error):
    """MRTX_EFULL: the store's map, its file system or the cluster is full."""


class BadTxn(Error):
    """MRTX_EBADTXN: the transaction failed before; only abort is allowed."""


class Exists(Error):
    """MRTX_EEXIST: the table, family or index exists with another shape."""


class ReadOnly(Error):
    """MRTX_EREADONLY: a write through a handle opened read-only."""


class NotSupported(Error):
    """MRTX_ENOTSUP: not supported by this store's backend."""


class SnapshotGone(Error):
    """MRTX_ESNAPSHOT: versions a read at a past snapshot needs were
    collected."""


CLASSES = {
    C.NOTFOUND: NotFound, C.CONFLICT: Conflict, C.ELOCKED: Locked, C.EUNKNOWN: Unknown,
    C.EINVAL: InvalidArgument, C.ETOOBIG: TooBig, C.ENOTABLE: NoTable, C.ECORRUPT: Corrupt,
    C.ENOMEM: NoMemory, C.ESTORE: StoreError, C.ENOFAMILY: NoFamily,
    C.ENOTSTORE: NotAStore, C.EFULL: Full, C.EBADTXN: BadTxn, C.EEXIST: Exists,
    C.EREADONLY: ReadOnly, C.ENOTSUP: NotSupported, C.ESNAPSHOT: SnapshotGone,
}


def strerror(code):
    """mrtx_strerror: the library's name for a code."""
    return C.lib.mrtx_strerror(code).decode("ascii", "replace")


def errmsg():
    """mrtx_errmsg: this thread's detail of its last failure."""
    return C.lib.mrtx_errmsg().decode("utf-8", "replace")


def error(code, step=None, detail=None):
    """The exception for code.  Call it before any other mrtx call, so that
    mrtx_errmsg still holds this failure's detail."""
    if detail is None:
        detail = errmsg()
    return CLASSES.get(code, Error)(code, detail, step)


def check(code, step=None):
    """Raise the exception of a nonzero code."""
    if code:
        raise error(code, step)


for _code, _cls in CLASSES.items():
    _cls.code = _code
del _code, _cls
