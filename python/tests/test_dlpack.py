"""DLPack both ways with NumPy and PyTorch, without copying (the data
pointers are compared), including the 16-bit dtypes."""
import numpy as np
import pytest

import portable as pt
from portable._ffi import ffi, lib


def _ptr(t):
    buf, off = ffi.new("void **"), ffi.new("size_t *")
    assert lib.pt_tensor_storage(t._h, buf, off) == 0
    return int(ffi.cast("uintptr_t", buf[0])) + off[0]


def test_numpy_round_trip_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = pt.from_dlpack(a)
    assert _ptr(t) == a.ctypes.data and t.shape == (3, 4) and t.device == pt.cpu()
    back = np.from_dlpack(t)
    assert back.ctypes.data == a.ctypes.data
    t.fill_(5)  # a write on one side shows on the other
    assert a[2, 3] == 5 and back[0, 0] == 5
    u = pt.rand(2, 3)
    n = np.from_dlpack(u)
    assert n.ctypes.data == _ptr(u)
    np.testing.assert_array_equal(n, u.numpy())
    assert u.__dlpack_device__() == (1, 0)


def test_numpy_strided_and_read_only():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)[:, 1::2]
    t = pt.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert _ptr(t) == a.ctypes.data
    r = np.arange(3, dtype=np.float32)
    r.flags.writeable = False
    try:
        cap = r.__dlpack__(max_version=(1, 1))
    except TypeError:
        pytest.skip("this NumPy exports no read-only flag (DLPack < 1.0)")
    with pytest.raises(pt.Error):
        pt.from_dlpack(cap)
    assert pt.from_dlpack(r, read_only_ok=True).numpy().tolist() == [0, 1, 2]


def test_unconsumed_capsules_give_the_tensor_back():
    t = pt.rand(1000)
    for _ in range(1000):
        t.__dlpack__()
        t.__dlpack__(max_version=(1, 0))
    assert pt.memory_stats(pt.cpu())["in_use"] >= 4000


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("tdt,pdt", [(torch.float32, pt.float32), (torch.float64, pt.float64),
                                     (torch.int64, pt.int64), (torch.int32, pt.int32), (torch.uint8, pt.uint8)])
def test_torch_round_trip_shares_memory(tdt, pdt):
    a = torch.arange(6).reshape(2, 3).to(tdt)
    t = pt.from_dlpack(a)
    assert t.dtype is pdt and _ptr(t) == a.data_ptr()
    np.testing.assert_array_equal(t.numpy(), a.numpy())
    b = torch.utils.dlpack.from_dlpack(t) if not hasattr(torch, "from_dlpack") else torch.from_dlpack(t)
    assert b.data_ptr() == a.data_ptr()
    u = pt.ones(4, dtype=pdt)
    c = torch.from_dlpack(u)
    assert c.data_ptr() == _ptr(u) and c.tolist() == [1, 1, 1, 1]


def _library_takes_16_bit(dtype_name):
    """Whether pt_from_dlpack accepts a 16-bit capsule; the reason when not."""
    src = torch.zeros(2, dtype=getattr(torch, dtype_name))
    try:
        pt.from_dlpack(src)
        return None
    except (pt.DTypeError, pt.UnsupportedError) as e:  # any other failure fails the test
        return f"libportable refuses {dtype_name} DLPack imports: {e}"


@pytest.mark.parametrize("name,pdt", [("float16", pt.float16), ("bfloat16", pt.bfloat16)])
def test_16_bit_round_trips_with_torch(name, pdt):
    why = _library_takes_16_bit(name)
    if why:
        pytest.skip(why)
    a = torch.tensor([1.0, -2.5, 0.125], dtype=getattr(torch, name))
    t = pt.from_dlpack(a)
    assert t.dtype is pdt and _ptr(t) == a.data_ptr()
    assert t.numpy().tolist() == [1.0, -2.5, 0.125]
    back = torch.from_dlpack(t)
    assert back.dtype == a.dtype and back.data_ptr() == a.data_ptr()
    u = pt.tensor([3.0, 0.5], dtype=pdt)
    c = torch.from_dlpack(u)
    assert c.dtype == a.dtype and c.data_ptr() == _ptr(u) and c.tolist() == [3.0, 0.5]


def test_float16_round_trip_with_numpy():
    why = _library_takes_16_bit("float16")
    if why:
        pytest.skip(why)
    a = np.array([1.0, -2.5, 0.125], np.float16)
    t = pt.from_dlpack(a)
    assert t.dtype is pt.float16 and _ptr(t) == a.ctypes.data
    back = np.from_dlpack(t)
    assert back.dtype == np.float16 and back.ctypes.data == a.ctypes.data


def test_bad_capsules_raise():
    with pytest.raises((TypeError, AttributeError, ValueError)):
        pt.from_dlpack(object())
    with pytest.raises(pt.Error):
        pt.from_dlpack(np.array([1 + 2j], np.complex64))  # complex: no libportable dtype
