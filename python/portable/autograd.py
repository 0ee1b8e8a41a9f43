"""Gradient recording switches."""
from __future__ import annotations

import functools

from ._errors import check
from ._ffi import lib


class no_grad:
    """Context manager (and decorator) turning recording off on this thread."""

    def __enter__(self) -> "no_grad":
        lib.pt_no_grad_begin()
        return self

    def __exit__(self, *exc) -> None:
        check(lib.pt_no_grad_end())

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with no_grad():
                return fn(*a, **k)
        return wrapper


def is_grad_enabled() -> bool:
    return bool(lib.pt_grad_enabled())
