"""Devices as the chapter names them, synchronize, memory, `python -m portable devices`."""
import re
import sys

import pytest

import portable as pt
from conftest import build_program, run_python


def test_cpu_and_default_devices():
    c = pt.cpu()
    assert str(c) == "cpu:0" and c.type == "cpu" and c.index == 0 and repr(c) == "device(type='cpu', index=0)"
    assert c == "cpu" == pt.device("cpu:0") and hash(c) == hash(pt.device("cpu"))
    assert pt.default_device() in pt.try_all_gpus() or pt.try_all_gpus() == [pt.cpu()]
    p = c.properties()
    assert p["backend"] == "cpu" and p["compute_units"] >= 1 and p["memory_total"] > 0


def _devices_in_child(env):
    code = ("import portable as pt; print(pt.num_gpus(), pt.try_gpu(), pt.try_gpu(1), pt.try_gpu(10),"
            " [str(d) for d in pt.try_all_gpus()], pt.gpu(0), pt.gpu(1))")
    r = run_python(code, env)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(maxsplit=4)


def test_gpu_names_on_a_cpu_only_backend():
    n, g0, g1, g10, rest = _devices_in_child({"PORTABLE_BACKEND": "cpu", "PORTABLE_CPU_DEVICES": "1"})
    assert (n, g0, g1, g10) == ("0", "cpu:0", "cpu:0", "cpu:0") and rest.startswith("['cpu:0']")


def test_two_cpu_devices_stand_in_for_two_gpus():
    n, g0, g1, g10, rest = _devices_in_child({"PORTABLE_BACKEND": "cpu", "PORTABLE_CPU_DEVICES": "2"})
    assert (n, g0, g1, g10) == ("2", "cpu:0", "cpu:1", "cpu:0")
    assert rest.split("]")[0] == "['cpu:0', 'cpu:1'" and rest.split()[-2:] == ["cpu:0", "cpu:1"]


def test_opencl_as_the_gpu_backend():
    from conftest import backend_available
    if not backend_available("opencl"):
        pytest.skip("opencl: backend unavailable here")
    n, g0, g1, g10, rest = _devices_in_child({"PORTABLE_BACKEND": "opencl"})
    assert int(n) >= 1 and g0 == "opencl:0" and g10 == "cpu:0"


def test_a_named_device_that_does_not_exist_fails_on_use():
    d = pt.device("opencl:99")
    with pytest.raises(pt.NoDeviceError) as e:
        pt.ones(2, device=d)
    assert "opencl:99" in str(e.value) and e.value.status == "PT_ERR_NO_DEVICE"
    with pytest.raises(pt.InvalidArgumentError):
        pt.ones(2, device="cpu: 1")
    with pytest.raises(TypeError):
        pt.device(3)


def test_synchronize_empty_cache_memory_stats(backend_device):
    x = pt.rand(1000, device=backend_device)
    pt.synchronize(backend_device)
    pt.synchronize()
    m = pt.memory_stats(backend_device)
    assert m["in_use"] >= 4000 and m["peak"] >= m["in_use"] and m["reserved"] == m["in_use"] + m["cached"]
    del x
    pt.empty_cache(backend_device)
    assert pt.memory_stats(backend_device)["cached"] == 0


def test_backends_list_says_why_one_is_missing():
    bs = {b["name"]: b for b in pt.backends()}
    assert bs["cpu"]["available"] and bs["cpu"]["devices"] == [pt.cpu()] or len(bs["cpu"]["devices"]) >= 1
    for b in bs.values():
        assert b["available"] or b["reason"]


def _mask_memory(text):
    # free memory moves between two runs; everything else must be identical
    return re.sub(r"\|\s*[0-9.]+ [KMGT]?i?B \|\s*([0-9.]+ [KMGT]?i?B|unknown) \|", "| MEM | MEM |", text)


def test_python_m_portable_devices_prints_what_the_tool_prints():
    import subprocess
    tool = build_program("tools/portable")
    want = subprocess.run([tool, "devices"], capture_output=True, text=True)
    got = subprocess.run([sys.executable, "-m", "portable", "devices"], capture_output=True, text=True)
    assert got.returncode == want.returncode == 0, got.stderr
    assert _mask_memory(got.stdout) == _mask_memory(want.stdout)
    assert "Backends" in got.stdout and "cpu:0" in got.stdout
    v = subprocess.run([sys.executable, "-m", "portable", "version"], capture_output=True, text=True)
    assert v.stdout.strip() == f"libportable {pt.library_version()}" == \
        subprocess.run([tool, "version"], capture_output=True, text=True).stdout.strip()
