"""The digits MLP trained from Python (python/examples/mlp_digits.py) gives
the C example's loss at every training step (both write --loss-log), its
epoch curve and its test accuracy."""
import os
import re
import subprocess

import pytest

from conftest import REPO, backend_available, build_program, run_python

EXAMPLE = os.path.join(REPO, "python", "examples", "mlp_digits.py")
STEPS = 15 * 23  # 15 epochs of ceil(1438 / 64) minibatches


def read_loss_log(path):
    """[(epoch, step, loss)] from an "epoch step loss" file."""
    rows = []
    with open(path) as f:
        for line in f:
            epoch, step, loss = line.split()
            rows.append((int(epoch), int(step), float(loss)))
    return rows


def max_relative_difference(a, b):
    return max(abs(x - y) / abs(x) for x, y in zip(a, b))


def test_max_relative_difference_sees_one_step():
    # the comparison below must catch a single step that moved, wherever it is
    c = [1.5, 0.25, 0.125]
    assert max_relative_difference(c, list(c)) == 0
    assert max_relative_difference(c, [1.5, 0.25, 0.125 * (1 + 2e-6)]) > 1e-6


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_python_losses_equal_the_c_example_at_every_step(backend, tmp_path):
    if not backend_available(backend):
        pytest.skip(f"{backend}: backend unavailable here")
    c_prog = build_program("examples/mlp_digits")
    c_log, py_log = tmp_path / "c.txt", tmp_path / "py.txt"
    env = dict(os.environ, PORTABLE_BACKEND=backend)
    c = subprocess.run([c_prog, "--loss-log", str(c_log)], env=env, capture_output=True, text=True, timeout=600)
    assert c.returncode == 0, c.stdout + c.stderr
    py = run_python(EXAMPLE, {"PORTABLE_BACKEND": backend}, args=["--loss-log", str(py_log)])
    assert py.returncode == 0, py.stdout + py.stderr

    c_steps, py_steps = read_loss_log(c_log), read_loss_log(py_log)
    assert len(c_steps) == STEPS
    assert [(e, s) for e, s, _ in py_steps] == [(e, s) for e, s, _ in c_steps]
    assert all(0 < loss < 10 for _, _, loss in c_steps)
    # The same ops in the same order on the same device give the same f32
    # losses (%.9g prints an f32 exactly). 1e-6 is below the 2e-6 by which the
    # C example's cpu and PoCL curves differ, so another op order or dtype in
    # the Python example shows here.
    worst = max_relative_difference([l for _, _, l in c_steps], [l for _, _, l in py_steps])
    assert worst <= 1e-6, f"{backend}: a step's loss differs by {worst:.3g} relative"

    def curve(text):
        return re.findall(r"^epoch +(\d+) +loss ([0-9.]+)", text, re.M)

    assert len(curve(c.stdout)) == 15
    assert curve(py.stdout) == curve(c.stdout)
    acc = lambda t: re.search(r"^test accuracy on \S+ ([0-9.]+)%", t, re.M).group(1)  # noqa: E731
    assert acc(py.stdout) == acc(c.stdout)


def test_python_loss_log_bad_path_is_refused_before_training(tmp_path):
    # as the C example's command line does (tests/packaging/check_cli.sh)
    for bad in (tmp_path / "no-such-folder" / "losses.txt", tmp_path):
        py = run_python(EXAMPLE, {"PORTABLE_BACKEND": "cpu"}, args=["--epochs", "1", "--loss-log", str(bad)])
        assert py.returncode == 2, py.stdout + py.stderr
        assert f"--loss-log '{bad}' cannot be written" in py.stderr
        assert py.stderr.startswith("usage: ")
        assert "epoch" not in py.stdout and "training on" not in py.stdout
