"""Library failures as Python exceptions.

Every status of the library's table has its own class, all of them
RuntimeErrors (as PyTorch raises for a device mismatch or a bad shape), some
also the built-in class a Python caller expects (ValueError for an invalid
argument, TypeError for a dtype, MemoryError, OSError). Each carries the
library's message (naming the function and the values) and its status.
"""
from __future__ import annotations

from ._ffi import ffi, lib


class Error(RuntimeError):
    """A failure reported by libportable: `status` is its name ("PT_ERR_SHAPE"),
    `code` its number, the message the library's own."""

    status: str = "PT_ERR_INTERNAL"
    code: int = 0

    def __init__(self, message: str, status: str | None = None, code: int | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    """PT_ERR_INVALID_ARGUMENT."""


class ShapeError(Error, ValueError):
    """PT_ERR_SHAPE: shapes that do not match or broadcast."""


class DTypeError(Error, TypeError):
    """PT_ERR_DTYPE."""


class DeviceMismatchError(Error):
    """PT_ERR_DEVICE_MISMATCH: operands on different devices (the message names both)."""


class NoDeviceError(Error):
    """PT_ERR_NO_DEVICE."""


class BackendLoadError(Error):
    """PT_ERR_BACKEND_LOAD."""


class OutOfMemoryError(Error, MemoryError):
    """PT_ERR_OUT_OF_MEMORY."""


class UnsupportedError(Error):
    """PT_ERR_UNSUPPORTED: the backend does not run this operation or dtype."""


class IOError_(Error, OSError):
    """PT_ERR_IO."""


class BackendError(Error):
    """PT_ERR_BACKEND: a driver failure."""


_BY_NAME = {
    "PT_ERR_INVALID_ARGUMENT": InvalidArgumentError,
    "PT_ERR_SHAPE": ShapeError,
    "PT_ERR_DTYPE": DTypeError,
    "PT_ERR_DEVICE_MISMATCH": DeviceMismatchError,
    "PT_ERR_NO_DEVICE": NoDeviceError,
    "PT_ERR_BACKEND_LOAD": BackendLoadError,
    "PT_ERR_OUT_OF_MEMORY": OutOfMemoryError,
    "PT_ERR_UNSUPPORTED": UnsupportedError,
    "PT_ERR_IO": IOError_,
    "PT_ERR_BACKEND": BackendError,
}


def last_error(fallback: str = "failed") -> Error:
    """The exception for this thread's last library error (and clears it)."""
    code = int(lib.pt_last_status())
    name = ffi.string(lib.pt_status_name(code)).decode()
    msg = ffi.string(lib.pt_last_error()).decode(errors="replace") or fallback
    lib.pt_clear_error()
    cls = _BY_NAME.get(name, Error)
    if code == 0:
        name = "PT_ERR_INTERNAL"
    return cls(msg, name, code)


def check(status: int) -> None:
    """Raises the last error unless status is PT_OK."""
    if status != 0:
        raise last_error()
