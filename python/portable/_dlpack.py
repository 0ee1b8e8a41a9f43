"""DLPack capsules: pt_to_dlpack / pt_from_dlpack behind Python's protocol.

Export hands a capsule named "dltensor_versioned" (DLPack >= 1.0 consumers,
who pass max_version) or "dltensor" (older ones: NumPy < 2.1, PyTorch < 2.4).
A consumer renames the capsule "used_..." when it takes ownership; a capsule
nobody consumed gives its managed tensor back through the deleter when it is
collected. Import takes the producer's capsule the same way.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

from ._errors import last_error
from ._ffi import ffi, lib
from . import tensor as _t

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Capsules keep a pointer to their name: these bytes live as long as the module.
_VERSIONED, _LEGACY = b"dltensor_versioned", b"dltensor"
_USED_VERSIONED, _USED_LEGACY = b"used_dltensor_versioned", b"used_dltensor"


# The destructor runs with a raw PyObject *: its own ctypes view of the API.
_GetName = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(("PyCapsule_GetName", _api))
_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))


@ffi.callback("void(void *)")
def _capsule_destructor(capsule) -> None:
    cap = int(ffi.cast("uintptr_t", capsule))
    name = _GetName(cap)
    if name not in (_VERSIONED, _LEGACY):
        return  # consumed: the consumer owns the managed tensor now
    ptr = _GetPointer(cap, name)
    if not ptr:
        return
    if name == _VERSIONED:
        m = ffi.cast("struct DLManagedTensorVersioned *", ptr)
    else:
        m = ffi.cast("DLManagedTensor *", ptr)
    if m.deleter:
        m.deleter(m)


_DESTRUCTOR = int(ffi.cast("uintptr_t", _capsule_destructor))


def to_capsule(x: "_t.Tensor", max_version: Optional[Tuple[int, int]] = None):
    if max_version is not None and max_version[0] >= 1:
        m = lib.pt_to_dlpack(x._h)
        name = _VERSIONED
    else:
        m = lib.pt_to_dlpack_legacy(x._h)
        name = _LEGACY
    if not m:
        err = last_error()
        raise BufferError(str(err)) from err
    return _api.PyCapsule_New(int(ffi.cast("uintptr_t", m)), name, _DESTRUCTOR)


def device_tuple(x: "_t.Tensor") -> Tuple[int, int]:
    """(DLDeviceType, index) of x's device, as its DLPack export names it."""
    kinds = {"cpu": lib.kDLCPU, "cuda": lib.kDLCUDA, "opencl": lib.kDLOpenCL}
    d = x.device
    return (int(kinds.get(d.type, lib.kDLExtDev)), 0 if d.type == "cpu" else (d.index or 0))


def from_dlpack(obj: Any, read_only_ok: bool = False) -> "_t.Tensor":
    """A tensor over the memory of obj (anything with __dlpack__, or a capsule),
    without copying: NumPy arrays and PyTorch tensors on the cpu, CUDA tensors
    on cuda. Writes show on both sides. read_only_ok accepts read-only
    exports (libportable cannot stop in-place ops: the caller promises)."""
    if hasattr(obj, "__dlpack__"):
        try:
            capsule = obj.__dlpack__(max_version=(1, 1))
        except TypeError:  # a producer from before DLPack 1.0
            capsule = obj.__dlpack__()
    else:
        capsule = obj
    name = _api.PyCapsule_GetName(capsule)
    if name not in (_VERSIONED, _LEGACY):
        raise TypeError(f"from_dlpack: expected a DLPack capsule, got one named {name!r}")
    ptr = _api.PyCapsule_GetPointer(capsule, name)
    flags = lib.PT_DLPACK_READ_ONLY_OK if read_only_ok else 0
    if name == _VERSIONED:
        h = lib.pt_from_dlpack(ffi.cast("struct DLManagedTensorVersioned *", ptr), flags)
        used = _USED_VERSIONED
    else:
        h = lib.pt_from_dlpack_legacy(ffi.cast("DLManagedTensor *", ptr), flags)
        used = _USED_LEGACY
    if not h:
        raise last_error()  # the capsule stays the producer's
    _api.PyCapsule_SetName(capsule, used)
    return _t._wrap(h)
