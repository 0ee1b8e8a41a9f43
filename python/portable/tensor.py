"""Tensors: creation, operators, reading back, devices, autograd.

A Tensor owns one reference to a library tensor and releases it when Python
collects the object, so no pt_scope is needed. Every operation is the
library's (validation, broadcasting and dtype promotion included); failures
raise the library's message as an exception (portable.Error subclasses).
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import dtypes as _dt
from ._errors import InvalidArgumentError, check, last_error
from ._ffi import ffi, lib
from ._device import DeviceLike, as_device, device

_release = lib.pt_release
_NULL = ffi.NULL
ALL = lib.PT_ALL


class Tensor:
    """An n-dimensional array living on one device (see portable.tensor, ones, ...)."""

    __slots__ = ("_h", "__weakref__")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("tensors are made by portable.tensor, ones, zeros, rand, randn, ... (not Tensor())")

    def __del__(self, _release=_release) -> None:  # bound now: module globals are gone at exit
        try:
            h = self._h
        except AttributeError:  # Tensor() refused before it had a handle
            return
        if h is not None:
            self._h = None
            _release(h)

    # ---- properties ----
    @property
    def device(self) -> device:
        """Where the tensor lives."""
        return device._from_ptr(lib.pt_tensor_device(self._h))

    @property
    def dtype(self) -> _dt.dtype:
        return _dt.by_code[lib.pt_tensor_dtype(self._h)]

    @property
    def shape(self) -> Tuple[int, ...]:
        n = lib.pt_tensor_ndim(self._h)
        s = lib.pt_tensor_shape(self._h)
        return tuple(s[i] for i in range(n))

    def size(self, dim: Optional[int] = None):
        """The shape, or its entry dim."""
        return self.shape if dim is None else self.shape[dim]

    @property
    def ndim(self) -> int:
        return lib.pt_tensor_ndim(self._h)

    def dim(self) -> int:
        return lib.pt_tensor_ndim(self._h)

    def numel(self) -> int:
        return lib.pt_tensor_numel(self._h)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def is_contiguous(self) -> bool:
        return bool(lib.pt_tensor_is_contiguous(self._h))

    # ---- reading back (these wait for the device) ----
    def numpy(self) -> np.ndarray:
        """A host copy as a NumPy array (waits for the device; bfloat16 comes back as float32)."""
        t = self.dtype
        if t is _dt.bfloat16:
            bits = np.empty(self.shape, np.uint16)
            check(lib.pt_to_host(self._h, ffi.from_buffer(bits), bits.nbytes))
            out = np.empty(self.shape, np.float32)
            lib.pt_bf16_to_f32(ffi.cast("uint16_t *", ffi.from_buffer(bits)),
                               ffi.cast("float *", ffi.from_buffer(out)), bits.size)
            return out
        out = np.empty(self.shape, t.numpy)
        check(lib.pt_to_host(self._h, ffi.from_buffer(out), out.nbytes))
        return out

    def item(self) -> Union[float, int]:
        """The one element, as a Python number (waits)."""
        v = lib.pt_item(self._h)
        if v != v and lib.pt_last_status() != 0:
            raise last_error()
        return v if self.dtype.is_floating_point else int(v)

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self.item())

    def __repr__(self) -> str:
        try:
            values = self.numpy()
        except Exception as e:  # a tensor whose device failed still prints
            return f"tensor(<unreadable: {e}>, device='{self.device}')"
        # PyTorch's layout: "1." when every value is a whole number, else four decimals
        whole = not self.dtype.is_floating_point or bool(np.all(np.mod(values[np.isfinite(values)], 1) == 0))
        body = np.array2string(values, separator=", ", prefix="tensor(", precision=4,
                               floatmode="maxprec" if whole else "fixed")
        extra = "" if self.dtype in (_dt.float32, _dt.int64) else f", dtype=portable.{self.dtype.name}"
        return f"tensor({body}, device='{self.device}'{extra})"

    __str__ = __repr__

    # ---- devices ----
    def to(self, target: Any = None, dtype: Any = None, non_blocking: bool = False) -> "Tensor":
        """A copy on another device and/or in another dtype; the tensor itself
        when nothing changes (`Z.to(d) is Z` when Z lives on d). non_blocking
        queues the copy (into pinned memory for the cpu) without waiting:
        synchronize the source device before reading it outside the library."""
        if isinstance(target, (_dt.dtype, np.dtype, type)) and dtype is None:
            target, dtype = None, target
        out = self
        if target is not None:
            d = as_device(target)
            h = (lib.pt_to_async if non_blocking else lib.pt_to)(self._h, d.ptr)
            if h == self._h:
                _release(h)  # the library's "same device: x itself, retained"
            else:
                out = _wrap(h)
        if dtype is not None:
            t = _dt.as_dtype(dtype)
            if t.code != lib.pt_tensor_dtype(out._h):
                out = _wrap(lib.pt_cast(out._h, t.code))
        return out

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def float(self) -> "Tensor":
        return self.to(dtype=_dt.float32)

    def double(self) -> "Tensor":
        return self.to(dtype=_dt.float64)

    def long(self) -> "Tensor":
        return self.to(dtype=_dt.int64)

    def half(self) -> "Tensor":
        return self.to(dtype=_dt.float16)

    def bfloat16(self) -> "Tensor":
        return self.to(dtype=_dt.bfloat16)

    # ---- arithmetic (Python scalars become 0-d tensors on this device) ----
    def __add__(self, o: Any) -> "Tensor":
        if type(o) is Tensor:
            return _wrap(_add(self._h, o._h))
        if isinstance(o, numbers.Real) and (self._is_float() or isinstance(o, numbers.Integral)):
            return _wrap(_add_scalar(self._h, o))
        return _binary(_add, self, o)

    __radd__ = __add__

    def __sub__(self, o: Any) -> "Tensor":
        if type(o) is Tensor:
            return _wrap(_sub(self._h, o._h))
        return _binary(_sub, self, o)

    def __rsub__(self, o: Any) -> "Tensor":
        return _binary(_sub, _scalar_like(o, self), self)

    def __mul__(self, o: Any) -> "Tensor":
        if type(o) is Tensor:
            return _wrap(_mul(self._h, o._h))
        if isinstance(o, numbers.Real) and (self._is_float() or isinstance(o, numbers.Integral)):
            return _wrap(lib.pt_mul_scalar(self._h, o))
        return _binary(_mul, self, o)

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> "Tensor":
        a = self if self._is_float() else self.float()  # true division, as in PyTorch
        if type(o) is Tensor and not o._is_float() and o.dtype is not _dt.float64:
            o = o.float()
        return _binary(lib.pt_div, a, o)

    def __rtruediv__(self, o: Any) -> "Tensor":
        a = self if self._is_float() else self.float()
        return _binary(lib.pt_div, _scalar_like(o, a), a)

    def __pow__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_pow, self, o)

    def __rpow__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_pow, _scalar_like(o, self), self)

    def __matmul__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_matmul, self, o)

    def __rmatmul__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_matmul, _tensor_operand(o, self), self)

    def __neg__(self) -> "Tensor":
        return _wrap(lib.pt_neg(self._h))

    def __pos__(self) -> "Tensor":
        return self

    def __abs__(self) -> "Tensor":
        return _wrap(lib.pt_abs(self._h))

    def __eq__(self, o: Any) -> "Tensor":  # type: ignore[override]
        return _binary(lib.pt_eq, self, o)

    def __ne__(self, o: Any) -> "Tensor":  # type: ignore[override]
        return _binary(lib.pt_ne, self, o)

    def __lt__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_lt, self, o)

    def __le__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_le, self, o)

    def __gt__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_gt, self, o)

    def __ge__(self, o: Any) -> "Tensor":
        return _binary(lib.pt_ge, self, o)

    __hash__ = object.__hash__

    def _is_float(self) -> bool:
        return lib.pt_tensor_dtype(self._h) in _FLOAT_CODES

    # ---- element-wise functions ----
    def exp(self) -> "Tensor":
        """Element-wise exp (a new tensor on the same device)."""
        return _wrap(lib.pt_exp(self._h))

    def log(self) -> "Tensor":
        """Element-wise log (a new tensor on the same device)."""
        return _wrap(lib.pt_log(self._h))

    def sqrt(self) -> "Tensor":
        """Element-wise sqrt (a new tensor on the same device)."""
        return _wrap(lib.pt_sqrt(self._h))

    def relu(self) -> "Tensor":
        """Element-wise relu (a new tensor on the same device)."""
        return _wrap(lib.pt_relu(self._h))

    def sigmoid(self) -> "Tensor":
        """Element-wise sigmoid (a new tensor on the same device)."""
        return _wrap(lib.pt_sigmoid(self._h))

    def tanh(self) -> "Tensor":
        """Element-wise tanh (a new tensor on the same device)."""
        return _wrap(lib.pt_tanh(self._h))

    def sin(self) -> "Tensor":
        """Element-wise sin (a new tensor on the same device)."""
        return _wrap(lib.pt_sin(self._h))

    def cos(self) -> "Tensor":
        """Element-wise cos (a new tensor on the same device)."""
        return _wrap(lib.pt_cos(self._h))

    def abs(self) -> "Tensor":
        """Element-wise abs (a new tensor on the same device)."""
        return _wrap(lib.pt_abs(self._h))


    def clamp(self, min: Optional[float] = None, max: Optional[float] = None) -> "Tensor":
        lo = -float("inf") if min is None else min
        hi = float("inf") if max is None else max
        return _wrap(lib.pt_clamp(self._h, lo, hi))

    def maximum(self, o: Any) -> "Tensor":
        """maximum with a tensor or a Python number (broadcasting)."""
        return _binary(lib.pt_maximum, self, o)

    def minimum(self, o: Any) -> "Tensor":
        """minimum with a tensor or a Python number (broadcasting)."""
        return _binary(lib.pt_minimum, self, o)

    def matmul(self, o: Any) -> "Tensor":
        """matmul with a tensor or a Python number (broadcasting)."""
        return _binary(lib.pt_matmul, self, o)


    # ---- reductions ----
    def sum(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        return _wrap(lib.pt_sum(self._h, ALL if dim is None else dim, keepdim))

    def mean(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        return _wrap(lib.pt_mean(self._h, ALL if dim is None else dim, keepdim))

    def max(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        return _wrap(lib.pt_max(self._h, ALL if dim is None else dim, keepdim))

    def argmax(self, dim: Optional[int] = None, keepdim: bool = False) -> "Tensor":
        return _wrap(lib.pt_argmax(self._h, ALL if dim is None else dim, keepdim))

    def norm(self, dim: Union[None, int, Sequence[int]] = None) -> "Tensor":
        """Frobenius norm of all elements, or the 2-norm over dim(s)."""
        if dim is None:
            return _wrap(lib.pt_norm(self._h))
        dims = [dim] if isinstance(dim, int) else list(dim)
        return _wrap(lib.pt_norm_dims(self._h, len(dims), ffi.new("int[]", dims)))

    def softmax(self, dim: int) -> "Tensor":
        return _wrap(lib.pt_softmax(self._h, dim))

    def log_softmax(self, dim: int) -> "Tensor":
        return _wrap(lib.pt_log_softmax(self._h, dim))

    # ---- shape ----
    def reshape(self, *shape) -> "Tensor":
        s = _shape(shape)
        return _wrap(lib.pt_reshape(self._h, len(s), ffi.new("int64_t[]", s)))

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        return _wrap(lib.pt_f_flatten(self._h, start_dim, end_dim))

    def transpose(self, d0: int, d1: int) -> "Tensor":
        return _wrap(lib.pt_transpose(self._h, d0, d1))

    @property
    def T(self) -> "Tensor":
        if self.ndim < 2:
            return self
        return self.permute(*reversed(range(self.ndim)))

    def permute(self, *dims) -> "Tensor":
        p = _shape(dims)
        if len(p) != self.ndim:  # the library reads ndim entries: never hand it fewer
            raise InvalidArgumentError(f"pt_permute: {len(p)} dims given for a tensor of {self.ndim} dims",
                                       "PT_ERR_INVALID_ARGUMENT", int(lib.PT_ERR_INVALID_ARGUMENT))
        return _wrap(lib.pt_permute(self._h, ffi.new("int[]", p)))

    def narrow(self, dim: int, start: int, length: int) -> "Tensor":
        return _wrap(lib.pt_narrow(self._h, dim, start, length))

    def expand(self, *shape) -> "Tensor":
        s = _shape(shape)
        return _wrap(lib.pt_expand(self._h, len(s), ffi.new("int64_t[]", s)))

    def contiguous(self) -> "Tensor":
        h = lib.pt_contiguous(self._h)
        if h == self._h:
            _release(h)
            return self
        return _wrap(h)

    # ---- in place ----
    def copy_(self, src: "Tensor") -> "Tensor":
        check(lib.pt_copy_(self._h, _tensor_operand(src, self)._h))
        return self

    def fill_(self, value: float) -> "Tensor":
        check(lib.pt_fill_(self._h, value))
        return self

    def zero_(self) -> "Tensor":
        return self.fill_(0)

    # ---- autograd ----
    @property
    def requires_grad(self) -> bool:
        """Whether the tensor is a leaf marked for gradients or has history."""
        return bool(lib.pt_requires_grad(self._h))

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        check(lib.pt_set_requires_grad(self._h, bool(value)))

    def requires_grad_(self, value: bool = True) -> "Tensor":
        self.requires_grad = value
        return self

    @property
    def grad(self) -> Optional["Tensor"]:
        """The accumulated gradient (None before any backward)."""
        h = lib.pt_grad(self._h)
        return _wrap(h) if h else None

    @grad.setter
    def grad(self, value: None) -> None:
        if value is not None:
            raise ValueError("grad can only be set to None (it drops the gradient)")
        check(lib.pt_zero_grad(self._h))

    def backward(self) -> None:
        """Fills .grad of every leaf this one-element tensor depends on."""
        check(lib.pt_backward(self._h))

    def detach(self) -> "Tensor":
        """The same storage without history (writes show in both)."""
        return _wrap(lib.pt_detach(self._h))

    @property
    def data(self) -> "Tensor":
        return self.detach()

    # ---- DLPack ----
    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Any = None, copy: Optional[bool] = None):
        """A DLPack capsule over this tensor's memory (no copy; waits for the device)."""
        from ._dlpack import to_capsule
        if copy:
            raise BufferError("portable: __dlpack__(copy=True) is not supported; the export never copies")
        return to_capsule(self, max_version)

    def __dlpack_device__(self) -> Tuple[int, int]:
        from ._dlpack import device_tuple
        return device_tuple(self)


_FLOAT_CODES = frozenset(d.code for d in _dt.by_code if d.is_floating_point)
_add, _sub, _mul, _add_scalar = lib.pt_add, lib.pt_sub, lib.pt_mul, lib.pt_add_scalar
_new = Tensor.__new__


def _wrap(h) -> Tensor:
    """A Tensor owning the new reference h; the library's error when h is NULL."""
    if not h:
        raise last_error()
    t = _new(Tensor)
    t._h = h
    return t


def _scalar_like(v, like: Tensor) -> Tensor:
    """A 0-d tensor of v on like's device: like's dtype, or float32 for a float
    with an integer tensor (PyTorch's promotion of Python scalars)."""
    if isinstance(v, Tensor):
        return v
    if not isinstance(v, numbers.Number):
        return tensor(v, device=like.device)
    if isinstance(v, bool):
        v = int(v)
    code = lib.pt_tensor_dtype(like._h)
    if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) and code not in _FLOAT_CODES:
        code = _dt.float32.code
    return _wrap(lib.pt_full(lib.pt_tensor_device(like._h), code, 0, _NULL, float(v)))


def _tensor_operand(v, like: Tensor) -> Tensor:
    if isinstance(v, Tensor):
        return v
    if isinstance(v, numbers.Number):
        return _scalar_like(v, like)
    return tensor(v, device=like.device)


def _binary(fn, a: Tensor, b) -> Tensor:
    b = _tensor_operand(b, a)
    return _wrap(fn(a._h, b._h))


def _shape(args) -> list:
    """Shapes as separate ints or as one tuple/list (as PyTorch takes them)."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, numbers.Integral):
            raise TypeError(f"a shape is integers, got {a!r}")
    return [int(a) for a in args]


# ---- creation ----
def _create(fn, shape, dtype, device_):
    s = _shape(shape)
    t = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return _wrap(fn(as_device(device_).ptr, t.code, len(s), ffi.new("int64_t[]", s) if s else _NULL))


def ones(*shape, dtype=None, device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """Ones of the shape (a tuple or separate ints), on the cpu unless device is given."""
    return _grad(_create(lib.pt_ones, shape, dtype, device), requires_grad)


def zeros(*shape, dtype=None, device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """Zeros of the shape, on the cpu unless device is given."""
    return _grad(_create(lib.pt_zeros, shape, dtype, device), requires_grad)


def empty(*shape, dtype=None, device: Optional[DeviceLike] = None) -> Tensor:
    """Uninitialised values of the shape."""
    return _create(lib.pt_empty, shape, dtype, device)


def rand(*shape, dtype=None, device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """U[0, 1) from the library's Philox generator (the same bits on every backend)."""
    return _grad(_create(lib.pt_rand, shape, dtype, device), requires_grad)


def randn(*shape, dtype=None, device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """N(0, 1) from the library's Philox generator."""
    return _grad(_create(lib.pt_randn, shape, dtype, device), requires_grad)


def full(shape, value: float, dtype=None, device: Optional[DeviceLike] = None) -> Tensor:
    s = _shape((shape,))
    t = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return _wrap(lib.pt_full(as_device(device).ptr, t.code, len(s), ffi.new("int64_t[]", s) if s else _NULL,
                             float(value)))


def arange(start: float, end: Optional[float] = None, step: float = 1, dtype=None,
           device: Optional[DeviceLike] = None) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = _dt.int64 if ints else _dt.float32
    return _wrap(lib.pt_arange(as_device(device).ptr, _dt.as_dtype(dtype).code, start, end, step))


def manual_seed(seed: int) -> None:
    """Resets the generator behind rand/randn and parameter initialisation."""
    lib.pt_manual_seed(int(seed))


def _grad(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, dtype=None, device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """A tensor holding a copy of data (nested lists, numbers, NumPy arrays), on
    the cpu unless device is given. Python ints give int64, floats float32 (as
    in PyTorch)."""
    if isinstance(data, Tensor):
        return _grad(data.to(device if device is not None else data.device, dtype=dtype), requires_grad)
    if dtype is not None:
        t = _dt.as_dtype(dtype)
        arr = np.asarray(data, dtype=np.float32 if t is _dt.bfloat16 else t.numpy)
    else:
        arr = np.asarray(data)
        if arr.dtype == np.float64 and not isinstance(data, np.ndarray):
            arr = arr.astype(np.float32)  # Python floats: float32, as torch.tensor
        elif arr.dtype == np.bool_:
            arr = arr.astype(np.uint8)
        elif arr.dtype.kind in "iu" and arr.dtype != np.uint8 and not isinstance(data, np.ndarray):
            arr = arr.astype(np.int64)
        t = _dt.from_numpy(arr.dtype)
    if t is _dt.bfloat16:
        src = np.array(arr, np.float32, order="C")
        arr = np.empty(src.shape, np.uint16)
        lib.pt_f32_to_bf16(ffi.cast("float *", ffi.from_buffer(src)),
                           ffi.cast("uint16_t *", ffi.from_buffer(arr)), src.size)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    s = list(arr.shape)
    h = lib.pt_from_data(as_device(device).ptr, t.code, len(s), ffi.new("int64_t[]", s) if s else _NULL,
                         ffi.from_buffer(arr))
    return _grad(_wrap(h), requires_grad)


def from_numpy(a: np.ndarray, device: Optional[DeviceLike] = None) -> Tensor:
    """A copy of a NumPy array (from_dlpack shares memory instead)."""
    return tensor(a, dtype=_dt.from_numpy(a.dtype), device=device)


def _seq(xs: Sequence[Tensor]):
    arr = ffi.new("pt_tensor *[]", [x._h for x in xs])
    return len(xs), arr


def cat(xs: Sequence[Tensor], dim: int = 0) -> Tensor:
    n, arr = _seq(xs)
    return _wrap(lib.pt_cat(n, arr, dim))


def stack(xs: Sequence[Tensor], dim: int = 0) -> Tensor:
    n, arr = _seq(xs)
    return _wrap(lib.pt_stack(n, arr, dim))


def where(cond: Tensor, a, b) -> Tensor:
    a = _tensor_operand(a, cond)
    b = _tensor_operand(b, a)
    return _wrap(lib.pt_where(cond._h, a._h, b._h))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return _binary(lib.pt_matmul, a, b)


def _retained(h) -> Tensor:
    """A Tensor for a borrowed handle (takes its own reference)."""
    if not h:
        raise last_error()
    return _wrap(lib.pt_retain(h))
