"""torch.nn.functional's names over the library's pt_f_ functions and ops."""
from __future__ import annotations

from typing import Optional

from .._ffi import ffi, lib
from ..tensor import Tensor, _wrap
from .modules import _Pair, _conv_opts, _pool_opts


def relu(x: Tensor) -> Tensor:
    return _wrap(lib.pt_relu(x._h))


def gelu(x: Tensor) -> Tensor:
    return _wrap(lib.pt_gelu(x._h))


def softmax(x: Tensor, dim: int) -> Tensor:
    return _wrap(lib.pt_softmax(x._h, dim))


def log_softmax(x: Tensor, dim: int) -> Tensor:
    return _wrap(lib.pt_log_softmax(x._h, dim))


def cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    return _wrap(lib.pt_cross_entropy(logits._h, labels._h))


def mse_loss(pred: Tensor, target: Tensor) -> Tensor:
    return _wrap(lib.pt_mse_loss(pred._h, target._h))


def conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: _Pair = 1, padding: _Pair = 0,
           dilation: _Pair = 1, groups: int = 1) -> Tensor:
    return _wrap(lib.pt_f_conv2d(x._h, weight._h, bias._h if bias is not None else ffi.NULL,
                                 _conv_opts(stride, padding, dilation, groups)))


def max_pool2d(x: Tensor, kernel_size: _Pair, stride: Optional[_Pair] = None, padding: _Pair = 0) -> Tensor:
    return _wrap(lib.pt_f_max_pool2d(x._h, _pool_opts(kernel_size, stride, padding)))


def avg_pool2d(x: Tensor, kernel_size: _Pair, stride: Optional[_Pair] = None, padding: _Pair = 0) -> Tensor:
    return _wrap(lib.pt_f_avg_pool2d(x._h, _pool_opts(kernel_size, stride, padding)))


def adaptive_avg_pool2d(x: Tensor, output_size: _Pair) -> Tensor:
    h, w = (output_size, output_size) if isinstance(output_size, int) else output_size
    return _wrap(lib.pt_adaptive_avg_pool2d(x._h, h, w))


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    return _wrap(lib.pt_f_dropout(x._h, p, training))


def batch_norm(x: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    h = lambda t: ffi.NULL if t is None else t._h  # noqa: E731
    return _wrap(lib.pt_f_batch_norm(x._h, h(running_mean), h(running_var), h(weight), h(bias), training,
                                     momentum, eps))


def layer_norm(x: Tensor, n_dims: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    h = lambda t: ffi.NULL if t is None else t._h  # noqa: E731
    return _wrap(lib.pt_f_layer_norm(x._h, n_dims, h(weight), h(bias), eps))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return _wrap(lib.pt_f_flatten(x._h, start_dim, end_dim))
