"""The ctypes declarations agree with include/mrtx.h as the C compiler reads
it: every structure's size and field offsets, every constant, and the
SONAME of the library the tests load.

MRTX_LAYOUT names the program built from layout.c (CTest sets it); without
it the comparison is skipped."""

import ctypes
import os
import subprocess
import unittest

import mrtx
from mrtx import _capi as C

STRUCTS = {
    "mrtx_bytes": C.Bytes, "mrtx_options": C.Options, "mrtx_family_spec": C.FamilySpec,
    "mrtx_scan_spec": C.ScanSpec, "mrtx_cell": C.Cell, "mrtx_version": C.Version,
    "mrtx_key": C.Key, "mrtx_key_part": C.KeyPart, "mrtx_column": C.Column,
    "mrtx_index_spec": C.IndexSpec, "mrtx_index_hit": C.IndexHit,
    "mrtx_key_type": ctypes.c_int,
}


def python_constant(name):
    short = name[len("MRTX_"):]
    return getattr(C, short)


class LayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        prog = os.environ.get("MRTX_LAYOUT")
        if not prog:
            raise unittest.SkipTest("MRTX_LAYOUT is not set")
        out = subprocess.run([prog], check=True, capture_output=True, text=True).stdout
        cls.lines = [line.split(" ", 2) for line in out.splitlines()]

    def test_sizes_and_offsets(self):
        checked = 0
        for kind, what, value in self.lines:
            if kind == "sizeof":
                self.assertEqual(ctypes.sizeof(STRUCTS[what]), int(value), what)
            elif kind == "offsetof":
                struct, field = what.split(".")
                self.assertEqual(getattr(STRUCTS[struct], field).offset, int(value), what)
            else:
                continue
            checked += 1
        self.assertGreater(checked, 50)

    def test_every_field_is_checked(self):
        seen = {what for kind, what, _ in self.lines if kind == "offsetof"}
        for cname, cls in STRUCTS.items():
            for field in getattr(cls, "_fields_", []):
                self.assertIn("%s.%s" % (cname, field[0]), seen)

    def test_constants(self):
        for kind, what, value in self.lines:
            if kind == "const":
                self.assertEqual(python_constant(what), int(value), what)
            elif kind == "string" and what != "MRTX_VERSION_STRING":
                self.assertEqual(str(python_constant(what)), value, what)

    def test_version(self):
        version = [v for k, w, v in self.lines if w == "MRTX_VERSION_STRING"][0]
        self.assertEqual(mrtx.__version__, version)
        major, minor = version.split(".")[:2]
        abi = major if major != "0" else major + "." + minor
        self.assertEqual(C.SONAME, "libmrtx.so." + abi)
        self.assertEqual(os.path.basename(mrtx.library_path), C.SONAME)

    def test_every_error_code_has_a_class(self):
        codes = [int(v) for k, w, v in self.lines
                 if k == "const" and (w.startswith("MRTX_E") or
                                     w in ("MRTX_NOTFOUND", "MRTX_CONFLICT"))]
        self.assertEqual(len(codes), 18)
        for code in codes:
            cls = mrtx.ERRORS[code]
            self.assertTrue(issubclass(cls, mrtx.Error))
            self.assertEqual(cls.code, code)
            self.assertEqual(cls().name, mrtx.strerror(code))
        self.assertEqual(len(set(mrtx.ERRORS.values())), 18)


if __name__ == "__main__":
    unittest.main()
