"""Layers over the library's modules (pt_module): each owns its C module and
frees it when collected, unless a Sequential took it (it then frees it)."""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple, Union

from .._errors import check, last_error
from .._ffi import ffi, lib
from .. import dtypes as _dt
from .._device import DeviceLike, as_device
from ..tensor import Tensor, _retained, _wrap

_Pair = Union[int, Tuple[int, int]]


def _pair(v: _Pair) -> Tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


class Parameters(list):
    """module.parameters(): the tensors, and the module they belong to (the
    library's optimizers update a module, so SGD(net.parameters()) needs it)."""

    def __init__(self, module: "Module", tensors: List[Tensor]):
        super().__init__(tensors)
        self.module = module


class Module:
    """A layer or a net: callable on a tensor, movable with .to(device)."""

    def __init__(self, handle, children: Tuple["Module", ...] = ()):
        if not handle:
            raise last_error()
        self._m = handle
        self._children = list(children)
        self._owner: Optional[Module] = None
        # Inside a Sequential the library names a child's parameters by its
        # path ("0.weight"), the same names the child's own handle lists.
        self._prefix = ""

    def __del__(self, _free=lib.pt_module_free) -> None:  # bound now: globals are gone at exit
        m = getattr(self, "_m", None)
        if m is not None and self._owner is None:
            self._m = None
            _free(m)

    def __call__(self, x: Tensor) -> Tensor:
        return _wrap(lib.pt_module_forward(self._m, x._h))

    forward = __call__

    def to(self, device: Optional[DeviceLike] = None, dtype=None) -> "Module":
        """Moves every parameter (and gradient) to device; returns the module."""
        if dtype is not None:
            raise TypeError("Module.to: parameters keep their dtype; see set_compute_dtype for mixed precision")
        if device is not None:
            check(lib.pt_module_to(self._m, as_device(device).ptr))
        return self

    def set_compute_dtype(self, dtype) -> "Module":
        """Computes in dtype (bfloat16, float16) with float32 parameters (autocast)."""
        check(lib.pt_module_set_compute_dtype(self._m, _dt.as_dtype(dtype).code))
        return self

    def _named(self) -> List[Tuple[str, Optional[Tensor]]]:
        n = lib.pt_module_parameters(self._m, ffi.NULL, ffi.NULL, 0)
        if n < 0:
            raise last_error()
        names = ffi.new("const char *[]", max(n, 1))
        ts = ffi.new("pt_tensor *[]", max(n, 1))
        lib.pt_module_parameters(self._m, names, ts, n)
        cut = len(self._prefix)
        return [(ffi.string(names[i]).decode()[cut:], _retained(ts[i]) if ts[i] else None) for i in range(n)]

    def state_dict(self) -> Dict[str, Tensor]:
        """Parameters and buffers by name ("0.weight", "1.running_mean"); they
        share storage with the module's."""
        return {k: v for k, v in self._named() if v is not None}

    def named_parameters(self) -> Iterator[Tuple[str, Tensor]]:
        for k, v in self._named():
            if v is not None and v.requires_grad:
                yield k, v

    def parameters(self) -> Parameters:
        return Parameters(self, [v for _, v in self.named_parameters()])

    def __getattr__(self, name: str) -> Tensor:
        if name.startswith("_"):
            raise AttributeError(name)
        h = lib.pt_module_parameter(self.__dict__["_m"], (self.__dict__["_prefix"] + name).encode())
        if not h:
            err = last_error()
            raise AttributeError(f"{type(self).__name__} has no parameter {name!r}: {err}")
        return _retained(h)

    def _set_prefix(self, prefix: str) -> None:
        self._prefix = prefix

    def zero_grad(self) -> None:
        check(lib.pt_module_zero_grad(self._m))

    def train(self, mode: bool = True) -> "Module":
        check(lib.pt_module_train(self._m, bool(mode)))
        return self

    def eval(self) -> "Module":
        return self.train(False)

    @property
    def training(self) -> bool:
        return bool(lib.pt_module_is_training(self._m))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Sequential(Module):
    """Runs its modules in order; net[i] is the i-th."""

    def __init__(self, *modules: Module):
        for m in modules:
            if not isinstance(m, Module):
                raise TypeError(f"Sequential takes modules, got {m!r}")
        arr = ffi.new("pt_module *[]", [m._m for m in modules]) if modules else ffi.NULL
        super().__init__(lib.pt_sequential(len(modules), arr), modules)
        for i, m in enumerate(modules):
            m._owner = self  # the sequential frees them now
            m._set_prefix(f"{i}.")

    def _set_prefix(self, prefix: str) -> None:
        self._prefix = prefix
        for i, m in enumerate(self._children):
            m._set_prefix(f"{prefix}{i}.")

    def __getitem__(self, i: int) -> Module:
        return self._children[i]

    def __len__(self) -> int:
        return len(self._children)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._children)

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({i}): {m!r}" for i, m in enumerate(self._children))
        return f"Sequential({inner}\n)"


class LazyLinear(Module):
    """y = x W^T + b; the input size comes from the first input."""

    def __init__(self, out_features: int):
        self.out_features = out_features
        super().__init__(lib.pt_linear(out_features))

    def __repr__(self) -> str:
        return f"LazyLinear(out_features={self.out_features})"


class Linear(Module):
    """y = x W^T + b, W [out, in]: parameters made now, float32 on the cpu."""

    def __init__(self, in_features: int, out_features: int):
        self.in_features, self.out_features = in_features, out_features
        super().__init__(lib.pt_linear_sized(in_features, out_features))

    def __repr__(self) -> str:
        return f"Linear(in_features={self.in_features}, out_features={self.out_features})"


class ReLU(Module):
    def __init__(self):
        super().__init__(lib.pt_relu_module())


class GELU(Module):
    def __init__(self):
        super().__init__(lib.pt_gelu_module())


class Flatten(Module):
    def __init__(self):
        super().__init__(lib.pt_flatten())


class Dropout(Module):
    def __init__(self, p: float = 0.5):
        super().__init__(lib.pt_dropout(p))


def _conv_opts(stride: _Pair, padding: _Pair, dilation: _Pair, groups: int):
    o = ffi.new("pt_conv2d_opts *")
    o.stride, o.padding, o.dilation, o.groups = _pair(stride), _pair(padding), _pair(dilation), groups
    return o


class LazyConv2d(Module):
    """torch.nn.LazyConv2d: the input channels come from the first input."""

    def __init__(self, out_channels: int, kernel_size: _Pair, stride: _Pair = 1, padding: _Pair = 0,
                 dilation: _Pair = 1, groups: int = 1, bias: bool = True):
        kh, kw = _pair(kernel_size)
        super().__init__(lib.pt_conv2d(out_channels, kh, kw, _conv_opts(stride, padding, dilation, groups), bias))


def _pool_opts(kernel_size: _Pair, stride: Optional[_Pair], padding: _Pair):
    o = ffi.new("pt_pool2d_opts *")
    o.kernel, o.stride, o.padding = _pair(kernel_size), _pair(stride or 0), _pair(padding)
    return o


class MaxPool2d(Module):
    def __init__(self, kernel_size: _Pair, stride: Optional[_Pair] = None, padding: _Pair = 0):
        super().__init__(lib.pt_max_pool2d(_pool_opts(kernel_size, stride, padding)))


class AvgPool2d(Module):
    def __init__(self, kernel_size: _Pair, stride: Optional[_Pair] = None, padding: _Pair = 0):
        super().__init__(lib.pt_avg_pool2d(_pool_opts(kernel_size, stride, padding)))


class LazyBatchNorm2d(Module):
    """torch.nn.LazyBatchNorm2d: statistics over dim 1, sized at the first input."""

    def __init__(self, eps: float = 1e-5, momentum: float = 0.1):
        super().__init__(lib.pt_batch_norm2d(eps, momentum))


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5):
        s = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        super().__init__(lib.pt_layer_norm(len(s), ffi.new("int64_t[]", s), eps))


class CrossEntropyLoss:
    """mean over rows of -log_softmax(logits)[row, label]."""

    def __call__(self, logits: Tensor, labels: Tensor) -> Tensor:
        return _wrap(lib.pt_cross_entropy(logits._h, labels._h))


class MSELoss:
    """mean((pred - target)^2)."""

    def __call__(self, pred: Tensor, target: Tensor) -> Tensor:
        return _wrap(lib.pt_mse_loss(pred._h, target._h))
