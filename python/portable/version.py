"""Versions: the package's and the loaded library's."""
from ._ffi import ffi, lib

__version__ = f"{lib.PT_VERSION_MAJOR}.{lib.PT_VERSION_MINOR}.{lib.PT_VERSION_PATCH}"  # the headers bound


def library_version() -> str:
    """The loaded libportable's version string (pt_version)."""
    return ffi.string(lib.pt_version().string).decode()
