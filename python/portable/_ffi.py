"""Loads libportable and its cffi declarations (ABI mode: nothing is compiled).

The declarations are generated from the public headers at build time
(python/gen_cdef.py): PORTABLE_CDEF names them (a build tree's
python/_cdef.h), else the wheel's _cdef.h, else a source checkout regenerates
them with the C compiler. The library is, in order: $PORTABLE_LIBRARY, the copy inside the
package (the wheel's, with its plugins in _lib/portable/ beside it, where
libportable looks for them), then the system's (the dynamic linker's search,
e.g. a `cmake --install` prefix on LD_LIBRARY_PATH or /usr/local/lib).
"""
from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys

import cffi

_HERE = os.path.dirname(os.path.abspath(__file__))


def _cdef_text() -> str:
    packaged = os.path.join(_HERE, "_cdef.h")
    for path in (os.environ.get("PORTABLE_CDEF", ""), packaged):
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    root = os.path.dirname(os.path.dirname(_HERE))
    gen = os.path.join(root, "python", "gen_cdef.py")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if os.path.isfile(gen) and cc:
        incs = [os.path.join(root, "include"), os.path.join(root, "third_party", "dlpack", "include")]
        out = subprocess.run([sys.executable, gen, cc, "-", *incs], capture_output=True,
                             text=True)
        if out.returncode == 0:
            return out.stdout
    raise ImportError("portable: no binding declarations (_cdef.h): install the package with "
                      "`pip install .`, or set PORTABLE_CDEF to the build tree's python/_cdef.h")


def _library_candidates() -> list[str]:
    found = []
    env = os.environ.get("PORTABLE_LIBRARY")
    if env:
        return [env]  # named explicitly: no silent fallback to another copy
    bundled = os.path.join(_HERE, "_lib", "libportable.so")
    if os.path.isfile(bundled):
        found.append(bundled)
    system = ctypes.util.find_library("portable")
    found.append(system or "libportable.so")
    return found


cdef_text = _cdef_text()
ffi = cffi.FFI()
ffi.cdef(cdef_text)


def _open():
    errors = []
    for path in _library_candidates():
        try:
            return ffi.dlopen(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("portable: cannot load libportable: " + "; ".join(errors))


lib, library_path = _open()
