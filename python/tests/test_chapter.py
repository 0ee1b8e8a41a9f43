"""python/examples/gpus.py, the chapter's cells, on cpu (one and two devices)
and OpenCL, checked against the same cells run in PyTorch: the printed
tensors, the devices, and the device-mismatch error."""
import json
import os
import re

import pytest

from conftest import REPO, backend_available, run_python

torch = pytest.importorskip("torch")

SCRIPT = os.path.join(REPO, "python", "examples", "gpus.py")
# Runs the script as a program and hands its tensors and devices to the test.
DRIVER = r"""
import json, runpy, sys
g = runpy.run_path(sys.argv[1], run_name="__main__")
dev = lambda d: str(d)
out = {k: g[k].numpy().tolist() for k in ("x", "X", "Y", "Z")}
out.update({k + "_device": dev(g[k].device) for k in ("x", "X", "Y", "Z")})
out["try_gpu0"], out["try_gpu1"] = dev(g["try_gpu"]()), dev(g["try_gpu"](1))
out["W"] = g["net"][0].weight.numpy().tolist()
out["b"] = g["net"][0].bias.numpy().tolist()
out["net_device"] = dev(g["net"][0].weight.data.device)
out["batch_devices"] = [dev(a.device) for a in g["batch"]]
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
"""


def _torch_cells(v, same_device):
    """The chapter's cells in PyTorch on the values portable drew (rand and the
    lazy layer's initialisation use different generators)."""
    X = torch.ones(2, 3)
    Y = torch.tensor(v["Y"])
    Z = X.clone()  # X.cuda(1)
    net = torch.nn.Sequential(torch.nn.LazyLinear(1))
    net(X)
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor(v["W"]))
        net[0].bias.copy_(torch.tensor(v["b"]))
    printed = [X, Y] + ([X + Y] if same_device else []) + [X, Z, Y + Z, net(X)]
    return [re.sub(r",\s*grad_fn=<\w+>", "", repr(t)) for t in printed]


def _mismatch_in_torch():
    try:
        torch.ones(2, 3) + torch.rand(2, 3, device="meta")
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("env", [{"PORTABLE_BACKEND": "cpu", "PORTABLE_CPU_DEVICES": "2"},
                                 {"PORTABLE_BACKEND": "cpu", "PORTABLE_CPU_DEVICES": "1"},
                                 {"PORTABLE_BACKEND": "opencl"}], ids=["cpu-2-devices", "cpu", "opencl"])
@pytest.mark.filterwarnings("ignore:Lazy modules")
def test_chapter_script_matches_pytorch(env, tmp_path):
    if env["PORTABLE_BACKEND"] == "opencl" and not backend_available("opencl"):
        pytest.skip("opencl: backend unavailable here")
    dump = tmp_path / "cells.json"
    r = run_python(DRIVER, env, args=[SCRIPT, str(dump)])
    assert r.returncode == 0, r.stderr
    v = json.loads(dump.read_text())
    out = r.stdout

    # devices: created on the cpu by default, on try_gpu(i) when asked
    assert v["x_device"] == "cpu:0" and v["X_device"] == v["try_gpu0"] == v["net_device"]
    assert v["Y_device"] == v["Z_device"] == v["try_gpu1"]
    assert v["batch_devices"] == [v["try_gpu0"]] * 2  # Trainer.prepare_batch
    if env["PORTABLE_BACKEND"] == "opencl":
        assert v["X_device"].startswith("opencl:")
    if env.get("PORTABLE_CPU_DEVICES") == "2":
        assert (v["X_device"], v["Y_device"]) == ("cpu:0", "cpu:1")

    # values and the printed tensors, as PyTorch prints them (less the device)
    assert v["x"] == [1, 2, 3] and v["X"] == v["Z"] == [[1.0] * 3] * 2
    ours = [re.sub(r", device='[^']*'", "", t) for t in re.findall(r"tensor\(.*?\)", out, re.S)]
    assert ours == _torch_cells(v, v["X_device"] == v["Y_device"])
    assert re.search(r"^True$", out, re.M)  # Z.cuda(1) is Z

    # X + Y: an error naming both devices exactly when they differ, as in PyTorch
    line = next(l for l in out.splitlines() if l.startswith("X + Y: ")) if "X + Y: " in out else None
    if v["X_device"] != v["Y_device"]:
        torch_msg = _mismatch_in_torch()
        assert torch_msg and "meta" in torch_msg and "cpu" in torch_msg
        assert line and line.startswith("X + Y: DeviceMismatchError: ")
        assert v["X_device"] in line and v["Y_device"] in line
    else:
        assert line is None  # and X + Y was printed: compared above
