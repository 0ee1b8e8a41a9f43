"""dtypes, from the library's one dtype table (pt_dtype_name)."""
from __future__ import annotations

import numpy as np

from ._ffi import ffi, lib


class dtype:
    """A tensor element type: float32, float64, int32, int64, uint8, float16, bfloat16."""

    __slots__ = ("code", "short", "name", "numpy", "itemsize")

    def __init__(self, code: int, short: str, name: str, np_type):
        self.code, self.short, self.name, self.numpy = code, short, name, np_type
        self.itemsize = int(lib.pt_dtype_size(code))

    @property
    def is_floating_point(self) -> bool:
        return self.short.startswith(("f", "bf"))

    def __repr__(self) -> str:
        return f"portable.{self.name}"


# The library's short names and the NumPy / PyTorch long ones. bfloat16 has no
# NumPy type: its host copies are float32.
_LONG = {"f32": ("float32", np.float32), "f64": ("float64", np.float64), "i32": ("int32", np.int32),
         "i64": ("int64", np.int64), "u8": ("uint8", np.uint8), "f16": ("float16", np.float16),
         "bf16": ("bfloat16", None)}

by_code: list = []
for _code in range(lib.PT_DTYPE_COUNT):
    _short = ffi.string(lib.pt_dtype_name(_code)).decode()
    _name, _np = _LONG[_short]
    by_code.append(dtype(_code, _short, _name, _np))
by_name = {d.name: d for d in by_code}
by_name.update({d.short: d for d in by_code})

float32, float64 = by_name["float32"], by_name["float64"]
int32, int64, uint8 = by_name["int32"], by_name["int64"], by_name["uint8"]
float16, bfloat16 = by_name["float16"], by_name["bfloat16"]

_FROM_NUMPY = {np.dtype(d.numpy): d for d in by_code if d.numpy is not None}
_FROM_NUMPY[np.dtype(np.bool_)] = uint8


def as_dtype(t) -> dtype:
    if isinstance(t, dtype):
        return t
    if isinstance(t, str) and t in by_name:
        return by_name[t]
    try:
        return _FROM_NUMPY[np.dtype(t)]
    except (TypeError, KeyError):
        raise TypeError(f"not a portable dtype: {t!r} (one of {', '.join(d.name for d in by_code)})") from None


def from_numpy(t) -> dtype:
    try:
        return _FROM_NUMPY[np.dtype(t)]
    except KeyError:
        raise TypeError(f"NumPy dtype {np.dtype(t)} has no portable dtype") from None
