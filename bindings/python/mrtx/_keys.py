"""Order-preserving composite keys: the mrtx_key_* builders of the schema
toolkit, encoded by the library itself."""

import ctypes

from . import _capi as C
from ._errors import check, error


def _bytes(v):
    return C.data(v, "key part")


class Key:
    """A composite key under construction; each method appends one component
    and returns the key, so calls chain:

        row = mrtx.Key().str("alice").rts(ts).u64(msg_id).finish()

    The memcmp order of finished keys built from the same sequence of
    component types is the order of their value tuples.  An append that
    would pass MRTX_MAX_KEY raises mrtx.TooBig at once.
    """

    __slots__ = ("_k",)

    def __init__(self, *components):
        self._k = C.Key()
        C.lib.mrtx_key_init(ctypes.byref(self._k))
        for c in components:
            if isinstance(c, int):
                raise TypeError("Key(): give integers with .u64() and the like")
            self.bytes(c)

    def _check(self, rc, what):
        check(rc, "key " + what)
        return self

    def bytes(self, b):
        """An escaped byte string (str: UTF-8); a prefix sorts first."""
        b = _bytes(b)
        return self._check(C.lib.mrtx_key_bytes(ctypes.byref(self._k), C.borrow(b)), "bytes")

    str = bytes

    def u32(self, v):
        return self._check(C.lib.mrtx_key_u32(ctypes.byref(self._k), _range(v, 0, 2**32)),
                           "u32")

    def u64(self, v):
        return self._check(C.lib.mrtx_key_u64(ctypes.byref(self._k), _range(v, 0, 2**64)),
                           "u64")

    def i32(self, v):
        return self._check(C.lib.mrtx_key_i32(ctypes.byref(self._k),
                                              _range(v, -2**31, 2**31)), "i32")

    def i64(self, v):
        return self._check(C.lib.mrtx_key_i64(ctypes.byref(self._k),
                                              _range(v, -2**63, 2**63)), "i64")

    def rts(self, ts):
        """A reverse timestamp (UINT64_MAX - ts): newer sorts first."""
        return self._check(C.lib.mrtx_key_rts(ctypes.byref(self._k), _range(ts, 0, 2**64)),
                           "rts")

    def fixed(self, b):
        """Bytes as they are (every key must use one width here)."""
        b = _bytes(b)
        return self._check(C.lib.mrtx_key_fixed(ctypes.byref(self._k), C.borrow(b)), "fixed")

    def hash(self, b, n):
        """The first n (1..32) bytes of SHA-256(b)."""
        b = _bytes(b)
        return self._check(C.lib.mrtx_key_hash(ctypes.byref(self._k), C.borrow(b),
                                               _range(n, 0, C.SIZE)), "hash")

    def salt(self, b, buckets):
        """One byte: SHA-256(b)'s first 8 bytes mod buckets (1..256)."""
        b = _bytes(b)
        return self._check(C.lib.mrtx_key_salt(ctypes.byref(self._k), C.borrow(b),
                                               _range(buckets, 0, C.U32)), "salt")

    def finish(self):
        """The key so far, as bytes."""
        out = C.Bytes()
        check(C.lib.mrtx_key_finish(ctypes.byref(self._k), ctypes.byref(out)), "key finish")
        return C.copy(out)

    def __bytes__(self):
        return self.finish()

    def __len__(self):
        return self._k.size

    def prefix_end(self):
        """The exclusive end of every key starting with this one (b"" when
        there is none: an unbounded scan end)."""
        out = C.Key()
        check(C.lib.mrtx_key_prefix_end(ctypes.byref(out), ctypes.byref(self._k)),
              "key prefix_end")
        return C.copy(C.Bytes(ctypes.cast(out.buf, ctypes.c_void_p), out.size))


def _range(v, lo, hi):
    return C.ranged(v, lo, hi)


def prefix_end(prefix):
    """The exclusive upper bound of every key that starts with prefix
    (bytes): [prefix, prefix_end(prefix)) holds exactly those keys."""
    prefix = _bytes(prefix)
    p = prefix.rstrip(b"\xff")
    if not p:
        return b""
    return p[:-1] + bytes([p[-1] + 1])


_TYPES = {"bytes": C.KEY_BYTES, "str": C.KEY_BYTES, "u32": C.KEY_U32, "u64": C.KEY_U64,
          "i32": C.KEY_I32, "i64": C.KEY_I64, "rts": C.KEY_RTS, "fixed": C.KEY_FIXED,
          "hash": C.KEY_HASH, "salt": C.KEY_SALT}


def parse_key(key, *types):
    """Split a key into its components (mrtx_key_parse).  Each type is one of
    "bytes", "str" (bytes decoded as UTF-8), "u32", "u64", "i32", "i64",
    "rts" (the timestamp given to rts()), "salt" (the bucket), or a pair
    ("fixed", width) / ("hash", width).  Returns a tuple; raises
    mrtx.InvalidArgument when the key does not match the types."""
    key = _bytes(key)
    n = len(types)
    parts = (C.KeyPart * max(n, 1))()
    for i, t in enumerate(types):
        width = 0
        if isinstance(t, tuple):
            t, width = t
        if t not in _TYPES:
            raise ValueError("unknown key component type %r" % (t,))
        parts[i].type = _TYPES[t]
        parts[i].width = width
    buf = (ctypes.c_uint8 * max(len(key), 1))()
    rc = C.lib.mrtx_key_parse(parts, n, C.borrow(key), buf, len(buf))
    if rc:
        raise error(rc, "key parse")
    out = []
    for i, t in enumerate(types):
        name = t[0] if isinstance(t, tuple) else t
        p = parts[i]
        if name in ("bytes", "fixed", "hash"):
            out.append(C.copy(p.bytes))
        elif name == "str":
            out.append(C.copy(p.bytes).decode("utf-8"))
        elif name in ("i32", "i64"):
            out.append(p.i)
        else:
            out.append(p.u)
    return tuple(out)
