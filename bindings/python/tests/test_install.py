"""`cmake --install` of a build tree puts the package where MRTX_INSTALL_PYTHONDIR
says, and the installed package finds the installed library by itself: no
MRTX_LIB, no LD_LIBRARY_PATH, only the package directory on sys.path.

MRTX_BUILD_DIR (the build tree) and MRTX_INSTALL_PYTHONDIR come from CTest;
without them the test is skipped."""

import os
import subprocess
import sys
import tempfile
import unittest

PROGRAM = r"""
import os, sys, tempfile, mrtx
assert mrtx.library_path.startswith(sys.argv[1]), mrtx.library_path
d = tempfile.mkdtemp()
with mrtx.open(os.path.join(d, "s"), durability=mrtx.NOSYNC) as db:
    db.create_table("t", ["f"])
    with db.begin() as txn:
        txn.put("t", b"r\0", "f", b"", b"v\0")
    with db.begin() as txn:
        assert txn.get("t", b"r\0", "f") == b"v\0"
print("installed package ok:", os.path.dirname(mrtx.__file__))
"""


class InstallTest(unittest.TestCase):
    def test_install_and_import(self):
        build = os.environ.get("MRTX_BUILD_DIR")
        pydir = os.environ.get("MRTX_INSTALL_PYTHONDIR")
        if not build or not pydir:
            self.skipTest("MRTX_BUILD_DIR or MRTX_INSTALL_PYTHONDIR is not set")
        with tempfile.TemporaryDirectory(prefix="mrtx-pyinst-") as tmp:
            prefix = os.path.join(tmp, "prefix")
            subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
                           stdout=subprocess.DEVNULL)
            pkgdir = pydir if os.path.isabs(pydir) else os.path.join(prefix, pydir)
            self.assertTrue(os.path.isfile(os.path.join(pkgdir, "mrtx", "_installed.py")))
            env = {k: v for k, v in os.environ.items()
                   if k not in ("MRTX_LIB", "LD_LIBRARY_PATH", "PYTHONPATH")}
            env["PYTHONPATH"] = pkgdir
            out = subprocess.run([sys.executable, "-c", PROGRAM, prefix], env=env, cwd=tmp,
                                 check=True, capture_output=True, text=True).stdout
            self.assertIn("installed package ok", out)


if __name__ == "__main__":
    unittest.main()
