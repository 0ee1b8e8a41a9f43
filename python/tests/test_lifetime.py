"""Tensors give their C handle back when collected (RSS and the allocator's
counters stay bounded over 100,000 creations), and bad calls raise instead of
crashing the interpreter."""
import gc

import pytest

import portable as pt
from conftest import run_python


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    pytest.skip("no /proc/self/status here")


def test_no_leak_over_100000_tensor_creations():
    x = pt.ones(64)
    for _ in range(2000):  # warm the allocator's caches and Python's free lists
        (x + 1).sum()
    gc.collect()
    rss0, in_use0 = _rss_kib(), pt.memory_stats(pt.cpu())["in_use"]
    for i in range(100_000):
        y = pt.ones(64) if i % 2 else x + 1.5  # 256 bytes each: 25 MB if none were freed
        del y
    gc.collect()
    grown = _rss_kib() - rss0
    assert pt.memory_stats(pt.cpu())["in_use"] == in_use0
    assert grown < 8 * 1024, f"RSS grew by {grown} KiB over 100,000 tensors"


def test_views_keep_their_storage_alive():
    a = pt.arange(10.0)
    v = a.narrow(0, 2, 3)
    del a
    gc.collect()
    assert v.numpy().tolist() == [2, 3, 4]


# The calls run in a child interpreter, one after the other: a crash would
# show as a signal (and the calls after it as missing), not as the exception.
BAD_CALLS = [
    ("pt.ones(2, 3) + pt.ones(4, 5)", "ShapeError"),
    ("pt.ones(2, 3) @ pt.ones(2, 3)", "ShapeError"),
    ("pt.ones(*([2] * 9))", "ShapeError"),
    ("pt.ones(2, device='vulkan:0')", "NoDeviceError"),
    ("pt.ones(2, device='cpu:x')", "InvalidArgumentError"),
    ("pt.ones(2).sum(5)", "InvalidArgumentError"),
    ("pt.ones(2).reshape(3)", "ShapeError"),
    ("pt.ones(2, 2).permute(0, 0)", "InvalidArgumentError"),
    ("pt.ones(2).permute(0, 1)", "InvalidArgumentError"),
    ("pt.tensor([1, 2]).exp()", "DTypeError"),
    ("pt.ones(2).backward()", "ShapeError"),
    ("pt.nn.LazyLinear(0)", "InvalidArgumentError"),
    ("pt.nn.Sequential(pt.nn.Linear(2, 3))(pt.ones(4, 5))", "ShapeError"),
    ("pt.load(pt.nn.Linear(2, 2), '/nonexistent/file')", "IOError_"),
    ("pt.optim.Adam(pt.nn.Linear(2, 2), lr=float('nan'))", "InvalidArgumentError"),
    ("pt.from_dlpack(__import__('numpy').zeros(2, complex))", "DTypeError"),
    ("pt.ones(2).narrow(0, 1, 5)", "InvalidArgumentError"),
    ("pt.cat([], 0)", "InvalidArgumentError"),
    ("pt.ones(2, 2).item()", "ShapeError"),
]


@pytest.fixture(scope="module")
def bad_call_results():
    code = "import portable as pt\n"
    for i, (call, _) in enumerate(BAD_CALLS):
        code += (f"try:\n    {call}\nexcept pt.Error as e:\n"
                 f"    print({i}, type(e).__name__, e.status, e, sep='|', flush=True)\n"
                 f"else:\n    print({i}, 'no exception', sep='|', flush=True)\n")
    r = run_python(code, {"PORTABLE_BACKEND": "cpu"})
    assert r.returncode == 0, f"exit status {r.returncode}: {r.stderr}"
    return {int(line.split("|", 1)[0]): line.split("|")[1:] for line in r.stdout.splitlines()}


@pytest.mark.parametrize("i", range(len(BAD_CALLS)), ids=[c for c, _ in BAD_CALLS])
def test_a_bad_call_raises_never_crashes(bad_call_results, i):
    name, status, msg = bad_call_results[i][0], bad_call_results[i][1], "|".join(bad_call_results[i][2:])
    assert name == BAD_CALLS[i][1] and status.startswith("PT_ERR_") and msg.startswith("pt_"), bad_call_results[i]
