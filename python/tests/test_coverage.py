"""Every public name of the package is exercised somewhere in this suite: a
new function without a test fails here, naming it."""
import glob
import inspect
import os
import re

import portable
from portable import nn, optim
from portable.nn import functional


def _public():
    names = {("portable", n) for n in portable.__all__}
    names |= {("portable.nn", n) for n in nn.__all__}
    names |= {("portable.nn.functional", n) for n, f in vars(functional).items()
              if inspect.isfunction(f) and f.__module__ == functional.__name__ and not n.startswith("_")}
    names |= {("portable.optim", n) for n in ("SGD", "Adam")}
    for cls in (portable.Tensor, nn.Module, optim.Optimizer, portable.device):
        names |= {(cls.__name__, n) for n in dir(cls) if not n.startswith("_")}
    return names


def test_every_public_name_is_used_by_a_test():
    here = os.path.dirname(os.path.abspath(__file__))
    text = "\n".join(open(p).read() for p in glob.glob(os.path.join(here, "test_*.py"))
                     if not p.endswith("test_coverage.py"))
    text += open(os.path.join(here, "..", "..", "python", "examples", "gpus.py")).read()
    missing = sorted(f"{owner}.{n}" for owner, n in _public()
                     if not re.search(rf"(\.|\b){re.escape(n)}\b", text))
    assert missing == []
