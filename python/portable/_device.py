"""Devices, named as in the "GPUs" chapter: cpu(), gpu(i), num_gpus(),
try_gpu(i), try_all_gpus(), synchronize(device)."""
from __future__ import annotations

import os
from typing import Optional, Union

from ._errors import Error, NoDeviceError, check, last_error
from ._ffi import ffi, lib


class device:
    """A device: "cpu", "cpu:N", "cuda:N", "opencl:N".

    Like torch.device, it is a name until used: gpu(1) on a machine with one
    GPU is a device whose use raises NoDeviceError with the library's reason.
    Devices of the same name compare equal; `str(d)` is the name.
    """

    __slots__ = ("_name", "_ptr")

    def __init__(self, name: Union[str, "device"]):
        if isinstance(name, device):
            self._name, self._ptr = name._name, name._ptr
            return
        if not isinstance(name, str):
            raise TypeError(f"device: expected a name like 'cpu' or 'opencl:0', got {name!r}")
        self._name = name
        self._ptr = ffi.NULL

    @classmethod
    def _from_ptr(cls, ptr) -> "device":
        key = int(ffi.cast("uintptr_t", ptr))
        d = _by_ptr.get(key)
        if d is None:
            d = cls.__new__(cls)
            d._name = ffi.string(lib.pt_device_name(ptr)).decode()
            d._ptr = ptr
            _by_ptr[key] = d
        return d

    @property
    def ptr(self):
        """The library's pt_device * (resolved at first use; raises if absent)."""
        if not self._ptr:
            p = lib.pt_device_get(self._name.encode())
            if not p:
                raise last_error()
            self._ptr = p
            self._name = ffi.string(lib.pt_device_name(p)).decode()
        return self._ptr

    @property
    def type(self) -> str:
        """The backend: "cpu", "cuda", "opencl"."""
        return self._name.split(":")[0]

    @property
    def index(self) -> Optional[int]:
        """The device's number within its backend."""
        parts = self._name.split(":")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else (0 if self._ptr else None)

    def _canonical(self) -> str:
        try:
            return ffi.string(lib.pt_device_name(self.ptr)).decode()
        except Error:
            lib.pt_clear_error()
            return self._name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self is other or self._canonical() == other._canonical()

    def __hash__(self) -> int:
        return hash(self._canonical())

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        idx = self.index
        return f"device(type='{self.type}'" + ("" if idx is None else f", index={idx}") + ")"

    def properties(self) -> dict:
        """What the driver says about the device (pt_device_info): name,
        backend, vendor, platform, driver_version, type, compute_units,
        memory_total, memory_free (-1: unknown), supports_f64, and the members
        appended since: supports_f16, max_alloc, local_memory, max_work_group,
        memory_process, device_version, c_version, compute_capability (a
        (major, minor) pair, or None), uuid, pci_bus_id, extensions (a list)."""
        p = ffi.new("pt_device_props *")
        # the sized entry point, as the C header's pt_device_info macro calls it
        check(lib.pt_device_info_sized(self.ptr, p, ffi.sizeof("pt_device_props")))
        s = lambda f: ffi.string(f).decode(errors="replace")  # noqa: E731
        cc = (p.compute_capability_major, p.compute_capability_minor)
        return {"name": s(p.name), "backend": s(p.backend), "vendor": s(p.vendor),
                "platform": s(p.platform), "driver_version": s(p.driver_version),
                "type": int(p.type), "compute_units": p.compute_units,
                "memory_total": p.memory_total, "memory_free": p.memory_free,
                "supports_f64": bool(p.supports_f64), "supports_f16": bool(p.supports_f16),
                "max_alloc": p.max_alloc, "local_memory": p.local_memory,
                "max_work_group": p.max_work_group, "memory_process": p.memory_process,
                "device_version": s(p.device_version), "c_version": s(p.c_version),
                "compute_capability": cc if cc[0] else None, "uuid": s(p.uuid),
                "pci_bus_id": s(p.pci_bus_id), "extensions": s(p.extensions).split()}


_by_ptr: dict = {}
DeviceLike = Union[device, str]


def as_device(d: Optional[DeviceLike]) -> device:
    """None is the cpu (tensors are made there unless a device is given, as in PyTorch)."""
    if d is None:
        return cpu()
    if isinstance(d, device):
        return d
    return device(d)


def cpu() -> device:
    """The CPU device: all cores and host memory."""
    p = lib.pt_cpu()
    if not p:
        raise last_error()
    return device._from_ptr(p)


def default_device() -> device:
    """The device PORTABLE_BACKEND picks (auto: CUDA, else an OpenCL GPU, else the cpu)."""
    p = lib.pt_default_device()
    if not p:
        raise last_error()
    return device._from_ptr(p)


def _all() -> list:
    n = lib.pt_all_devices(ffi.NULL, 0)
    if n < 0:
        raise last_error()
    out = ffi.new("pt_device *[]", max(n, 1))
    lib.pt_all_devices(out, n)
    return [device._from_ptr(out[i]) for i in range(n)]


def num_gpus() -> int:
    """How many accelerators the chosen backend has: 0 when there are none and
    the cpu stands in. With PORTABLE_BACKEND=cpu and PORTABLE_CPU_DEVICES=N > 1,
    the N cpu devices stand in for GPUs (as pt_try_device does), so
    multi-device code runs on one machine."""
    devs = _all()
    if len(devs) == 1 and devs[0] == cpu():
        return 0
    return len(devs)


def gpu(i: int = 0) -> device:
    """Accelerator i of the chosen backend. Like torch.device('cuda:1'), a
    device that does not exist can be named; using it raises NoDeviceError."""
    devs = _all()
    if i < len(devs) and num_gpus() > 0:
        return devs[i]
    backend = os.environ.get("PORTABLE_BACKEND", "auto").split(":")[0]
    if backend in ("", "auto"):
        backend = default_device().type
        if backend == "cpu":
            backend = "cuda"  # what the chapter names on a machine without one
    return device(f"{backend}:{i}")


def try_gpu(i: int = 0) -> device:
    """gpu(i) if it exists, otherwise cpu()."""
    p = lib.pt_try_device(int(i))
    if not p:
        raise last_error()
    return device._from_ptr(p)


def try_all_gpus() -> list:
    """Every accelerator of the chosen backend, or [cpu()] when there is none."""
    return _all()


def synchronize(d: Optional[DeviceLike] = None) -> None:
    """Waits for everything queued on d (default: the chosen backend's device)."""
    dev = default_device() if d is None else as_device(d)
    check(lib.pt_device_synchronize(dev.ptr))


def empty_cache(d: Optional[DeviceLike] = None) -> None:
    """Gives d's cached memory back to the driver (torch.cuda.empty_cache)."""
    dev = default_device() if d is None else as_device(d)
    check(lib.pt_empty_cache(dev.ptr))


def memory_stats(d: Optional[DeviceLike] = None) -> dict:
    """The caching allocator's counters for d, in bytes: in_use, cached, peak, reserved."""
    dev = default_device() if d is None else as_device(d)
    m = ffi.new("pt_memory_usage *")
    check(lib.pt_memory_stats(dev.ptr, m))
    return {k: getattr(m, k) for k in ("in_use", "cached", "peak", "reserved", "pinned_cached",
                                       "pinned_allocs", "pinned_reuses")}


def backends() -> list:
    """Every backend the loader knows: dicts of name, available, reason, path, devices."""
    out = []
    for i in range(lib.pt_backend_count()):
        why = ffi.new("const char **")
        ok = bool(lib.pt_backend_available(i, why))
        out.append({
            "name": ffi.string(lib.pt_backend_name(i)).decode(),
            "available": ok,
            "reason": "" if ok or not why[0] else ffi.string(why[0]).decode(errors="replace"),
            "path": ffi.string(lib.pt_backend_path(i)).decode(),
            "devices": [device._from_ptr(lib.pt_backend_device(i, j))
                        for j in range(lib.pt_backend_device_count(i))],
        })
    return out


__all__ = ["device", "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus", "synchronize",
           "default_device", "empty_cache", "memory_stats", "backends", "NoDeviceError"]
