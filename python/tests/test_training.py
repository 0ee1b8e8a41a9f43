"""The digits MLP trained from Python (python/examples/mlp_digits.py) gives
the C example's loss curve, epoch by epoch, and its test accuracy."""
import os
import re
import subprocess

import pytest

from conftest import REPO, backend_available, build_program, run_python


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_python_loss_curve_equals_the_c_example(backend):
    if not backend_available(backend):
        pytest.skip(f"{backend}: backend unavailable here")
    c_prog = build_program("examples/mlp_digits")
    env = dict(os.environ, PORTABLE_BACKEND=backend)
    c = subprocess.run([c_prog], env=env, capture_output=True, text=True, timeout=600)
    assert c.returncode == 0, c.stdout + c.stderr
    py = run_python(os.path.join(REPO, "python", "examples", "mlp_digits.py"), {"PORTABLE_BACKEND": backend})
    assert py.returncode == 0, py.stdout + py.stderr

    def curve(text):
        return re.findall(r"^epoch +(\d+) +loss ([0-9.]+)", text, re.M)

    assert len(curve(c.stdout)) == 15
    assert curve(py.stdout) == curve(c.stdout)
    acc = lambda t: re.search(r"^test accuracy on \S+ ([0-9.]+)%", t, re.M).group(1)  # noqa: E731
    assert acc(py.stdout) == acc(c.stdout)
