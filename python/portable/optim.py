"""Optimizers: the library's, updating a module's parameters on their device."""
from __future__ import annotations

from typing import Tuple, Union

from ._errors import check, last_error
from ._ffi import lib
from .nn.modules import Module, Parameters


def _module(params: Union[Module, Parameters]) -> Module:
    if isinstance(params, Module):
        return params
    if isinstance(params, Parameters):
        return params.module
    raise TypeError("optimizers take net.parameters() or the net itself (the library updates a module)")


class Optimizer:
    def __init__(self, handle, module: Module):
        if not handle:
            raise last_error()
        self._o = handle
        self._module = module  # the module must outlive the optimizer

    def __del__(self, _free=lib.pt_optimizer_free) -> None:  # bound now: globals are gone at exit
        o = getattr(self, "_o", None)
        if o is not None:
            self._o = None
            _free(o)

    def step(self) -> None:
        """One update of every parameter that has a gradient (queued, not waited for)."""
        check(lib.pt_optimizer_step(self._o))

    def zero_grad(self) -> None:
        check(lib.pt_optimizer_zero_grad(self._o))

    def set_lr(self, lr: float) -> None:
        check(lib.pt_optimizer_set_lr(self._o, lr))


class SGD(Optimizer):
    """torch.optim.SGD (momentum, weight decay)."""

    def __init__(self, params: Union[Module, Parameters], lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0):
        m = _module(params)
        super().__init__(lib.pt_sgd(m._m, lr, momentum, weight_decay), m)


class Adam(Optimizer):
    """torch.optim.Adam (L2 weight decay)."""

    def __init__(self, params: Union[Module, Parameters], lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        m = _module(params)
        super().__init__(lib.pt_adam(m._m, lr, betas[0], betas[1], eps, weight_decay), m)
