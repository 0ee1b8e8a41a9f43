"""Saving and loading parameters as safetensors (readable by PyTorch)."""
from __future__ import annotations

import os
from typing import Optional, Union

from ._errors import check
from ._ffi import ffi
from ._ffi import lib
from ._device import DeviceLike, as_device
from .nn.modules import Module

PathLike = Union[str, "os.PathLike[str]"]


def save(module: Module, path: PathLike) -> None:
    """Writes module's parameters and buffers to path (waits for their devices)."""
    check(lib.pt_save(module._m, os.fsencode(path)))


def load(module: Module, path: PathLike, map_location: Optional[DeviceLike] = None) -> Module:
    """Replaces module's parameters with path's, created on map_location
    (None: where each parameter lives now). The whole file is checked first;
    on any problem the module is untouched. Returns the module."""
    dev = ffi.NULL if map_location is None else as_device(map_location).ptr
    check(lib.pt_load(module._m, os.fsencode(path), dev))
    return module
