"""Tensors: creation, properties, operators with tensors and Python scalars,
reductions, shapes, reading back, repr, errors — on every covered backend."""
import numpy as np
import pytest

import portable as pt


def test_creation_defaults_to_the_cpu_and_takes_shapes_both_ways():
    for make in (pt.ones, pt.zeros, pt.rand, pt.randn, pt.empty):
        a, b = make(2, 3), make((2, 3))
        assert a.shape == b.shape == (2, 3) and a.size() == (2, 3) and a.size(1) == 3
        assert a.device == pt.cpu() and a.dtype is pt.float32
    assert pt.ones(()).shape == () and pt.ones([4]).shape == (4,)
    np.testing.assert_array_equal(pt.ones(2, 2).numpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(pt.zeros(3, dtype=pt.int32).numpy(), np.zeros(3, np.int32))
    np.testing.assert_array_equal(pt.full((2,), 7.5).numpy(), [7.5, 7.5])
    np.testing.assert_array_equal(pt.arange(4).numpy(), [0, 1, 2, 3])
    assert pt.arange(4).dtype is pt.int64 and pt.arange(0.0, 1.0, 0.5).dtype is pt.float32
    with pytest.raises(TypeError):
        pt.ones(2, "x")


def test_tensor_from_data_infers_like_torch():
    assert pt.tensor([1, 2, 3]).dtype is pt.int64
    assert pt.tensor([1.5, 2]).dtype is pt.float32
    assert pt.tensor([True, False]).dtype is pt.uint8
    assert pt.tensor(np.arange(3, dtype=np.int32)).dtype is pt.int32
    assert pt.tensor(np.arange(3, dtype=np.float64)).dtype is pt.float64
    np.testing.assert_array_equal(pt.tensor([[1, 2], [3, 4]]).numpy(), [[1, 2], [3, 4]])
    assert pt.tensor(3.0).shape == () and pt.tensor(3.0).item() == 3.0
    np.testing.assert_array_equal(pt.from_numpy(np.eye(2)).numpy(), np.eye(2))
    h = pt.tensor([1.0, 2.5], dtype=pt.float16)
    assert h.dtype is pt.float16 and h.numpy().tolist() == [1.0, 2.5]
    b = pt.tensor([1.0, 2.5], dtype=pt.bfloat16)
    assert b.dtype is pt.bfloat16 and b.numpy().tolist() == [1.0, 2.5]


def test_manual_seed_repeats_and_rand_is_uniform():
    pt.manual_seed(7)
    a = pt.rand(1000).numpy()
    pt.manual_seed(7)
    b = pt.rand(1000).numpy()
    np.testing.assert_array_equal(a, b)
    assert 0 <= a.min() and a.max() < 1 and 0.4 < a.mean() < 0.6
    assert abs(pt.randn(10000).numpy().std() - 1) < 0.05


def test_operators_match_numpy(backend_device):
    d = backend_device
    an = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)
    bn = np.array([0.5, 2.0, -1.0], np.float32)
    a, b = pt.tensor(an, device=d), pt.tensor(bn, device=d)
    for got, want in [(a + b, an + bn), (a - b, an - bn), (a * b, an * bn), (a / b, an / bn),
                      (a + 1, an + 1), (1 + a, 1 + an), (a - 1, an - 1), (1 - a, 1 - an), (a * 2, an * 2),
                      (2 * a, 2 * an), (a / 2, an / 2), (2 / a, 2 / an), (-a, -an), (abs(a), abs(an)),
                      (a.abs(), abs(an)), (b ** 2, bn ** 2), (2 ** b, 2 ** bn),
                      (a @ b, an @ bn), (a @ a.T, an @ an.T), (a.matmul(a.transpose(0, 1)), an @ an.T),
                      (pt.matmul(a, b), an @ bn), (a.maximum(b), np.maximum(an, bn)),
                      (a.minimum(b), np.minimum(an, bn)), (a.clamp(-1, 2), np.clip(an, -1, 2)),
                      (a.clamp(min=0), np.clip(an, 0, None))]:
        assert got.device == d
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    for got, want in [(a == b, an == bn), (a != b, an != bn), (a < b, an < bn), (a <= b, an <= bn),
                      (a > b, an > bn), (a >= b, an >= bn), (a > 2, an > 2), (a == 3.0, an == 3.0)]:
        assert got.dtype is pt.uint8
        np.testing.assert_array_equal(got.numpy(), want.astype(np.uint8))
    pos = pt.tensor(np.abs(an) + 0.5, device=d)
    for name, ref in [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
                      ("tanh", np.tanh), ("sin", np.sin), ("cos", np.cos), ("relu", lambda x: np.maximum(x, 0))]:
        np.testing.assert_allclose(getattr(pos, name)().numpy(), ref(np.abs(an) + 0.5), rtol=1e-5)


def test_integer_scalars_and_true_division():
    i = pt.tensor([1, 2, 3])
    assert (i + 1).dtype is pt.int64 and (i * 2).numpy().tolist() == [2, 4, 6]
    assert (i + 0.5).dtype is pt.float32 and (i + 0.5).numpy().tolist() == [1.5, 2.5, 3.5]
    assert (i / 2).numpy().tolist() == [0.5, 1.0, 1.5]  # true division, as in PyTorch


def test_reductions_and_shapes(backend_device):
    d = backend_device
    an = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = pt.tensor(an, device=d)
    assert a.sum().item() == an.sum() and a.sum().shape == ()
    np.testing.assert_allclose(a.sum(1).numpy(), an.sum(1))
    np.testing.assert_allclose(a.sum(-1, keepdim=True).numpy(), an.sum(-1, keepdims=True))
    np.testing.assert_allclose(a.mean(0).numpy(), an.mean(0))
    assert a.max().item() == 23 and a.argmax().item() == 23
    np.testing.assert_array_equal(a.argmax(2).numpy(), an.argmax(2))
    np.testing.assert_allclose(a.max(1).numpy(), an.max(1))
    np.testing.assert_allclose(a.norm().item(), np.linalg.norm(an), rtol=1e-6)
    np.testing.assert_allclose(a.norm(dim=(1, 2)).numpy(), np.sqrt((an ** 2).sum((1, 2))), rtol=1e-6)
    np.testing.assert_allclose(a.softmax(-1).numpy().sum(-1), 1, rtol=1e-6)
    np.testing.assert_allclose(a.log_softmax(-1).exp().numpy(), a.softmax(-1).numpy(), rtol=1e-5)
    assert a.reshape(6, 4).shape == (6, 4) and a.view((4, -1)).shape == (4, 6)
    assert a.flatten().shape == (24,) and a.flatten(1).shape == (2, 12)
    np.testing.assert_array_equal(a.permute(2, 0, 1).numpy(), an.transpose(2, 0, 1))
    np.testing.assert_array_equal(a.narrow(1, 1, 2).numpy(), an[:, 1:3])
    np.testing.assert_array_equal(pt.ones(3, device=d).expand(2, 3).numpy(), np.ones((2, 3)))
    t = a.transpose(0, 1)
    assert not t.is_contiguous() and t.contiguous().is_contiguous()
    c = t.contiguous()
    assert c.contiguous() is c
    np.testing.assert_array_equal(pt.cat([a, a], 1).numpy(), np.concatenate([an, an], 1))
    np.testing.assert_array_equal(pt.stack([a, a]).numpy(), np.stack([an, an]))
    np.testing.assert_array_equal(pt.where(a > 10, a, 0.0).numpy(), np.where(an > 10, an, 0))
    assert a.ndim == a.dim() == 3 and a.numel() == 24 and len(a) == 2
    assert a.tolist() == an.tolist()


def test_in_place_and_casts():
    a = pt.zeros(3)
    assert a.fill_(2).numpy().tolist() == [2, 2, 2]
    a.copy_(pt.tensor([1.0, 2.0, 3.0]))
    assert a.numpy().tolist() == [1, 2, 3] and a.zero_().sum().item() == 0
    b = pt.tensor([1.7, -2.2])
    assert b.long().numpy().tolist() == [1, -2] and b.double().dtype is pt.float64
    assert b.to(pt.float64).dtype is pt.float64 and b.float() is b
    assert b.half().dtype is pt.float16 and b.bfloat16().dtype is pt.bfloat16
    assert float(pt.tensor(2.5)) == 2.5 and int(pt.tensor(3)) == 3 and bool(pt.tensor(1))


def test_to_device_returns_the_same_object_when_there(backend_device):
    x = pt.ones(2, 3, device=backend_device)
    assert x.to(backend_device) is x and x.to(str(backend_device)) is x
    c = x.to(pt.cpu())
    assert c.device == pt.cpu() and c.numpy().tolist() == [[1, 1, 1], [1, 1, 1]]
    assert (c is x) == (backend_device == pt.cpu())
    assert x.cpu().device == pt.cpu()
    y = x.to(pt.cpu(), non_blocking=True)
    pt.synchronize(backend_device)
    assert y.numpy().sum() == 6


def test_repr_shows_values_and_device(backend_device):
    x = pt.tensor([[1.0, 2.5], [3.0, 4.0]], device=backend_device)
    assert repr(x) == f"tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]], device='{backend_device}')"
    assert str(pt.tensor([1, 2], device=backend_device)) == f"tensor([1, 2], device='{backend_device}')"
    assert "dtype=portable.uint8" in repr(pt.tensor([1, 2]) > 1)


def test_errors_carry_the_library_message_and_status():
    with pytest.raises(pt.ShapeError) as e:
        pt.ones(2, 3) + pt.ones(4, 5)
    assert isinstance(e.value, RuntimeError) and e.value.status == "PT_ERR_SHAPE"
    assert "shape" in str(e.value) and "[2, 3]" in str(e.value) and "[4, 5]" in str(e.value)
    with pytest.raises(pt.ShapeError):
        pt.ones(2, 3) @ pt.ones(2, 3)
    with pytest.raises(pt.DTypeError) as e:
        pt.rand(3, dtype=pt.int32)
    assert isinstance(e.value, TypeError) and "pt_rand" in str(e.value)
    with pytest.raises(pt.ShapeError):
        pt.ones(-1)
    with pytest.raises(pt.InvalidArgumentError):
        pt.ones(1).backward()  # no history: nothing to differentiate
    with pytest.raises(pt.ShapeError):
        pt.ones(3).item()
    with pytest.raises(RuntimeError):
        bool(pt.ones(3))
    assert pt.ones(1).item() == 1.0  # the failures above left no error behind


def test_every_status_maps_to_its_exception_class():
    from portable._errors import last_error
    from portable._ffi import ffi, lib
    classes = {"PT_ERR_INVALID_ARGUMENT": (pt.InvalidArgumentError, ValueError),
               "PT_ERR_SHAPE": (pt.ShapeError, ValueError), "PT_ERR_DTYPE": (pt.DTypeError, TypeError),
               "PT_ERR_DEVICE_MISMATCH": (pt.DeviceMismatchError, RuntimeError),
               "PT_ERR_NO_DEVICE": (pt.NoDeviceError, RuntimeError),
               "PT_ERR_BACKEND_LOAD": (pt.BackendLoadError, RuntimeError),
               "PT_ERR_OUT_OF_MEMORY": (pt.OutOfMemoryError, MemoryError),
               "PT_ERR_UNSUPPORTED": (pt.UnsupportedError, RuntimeError), "PT_ERR_IO": (pt.Error, OSError),
               "PT_ERR_BACKEND": (pt.BackendError, RuntimeError), "PT_ERR_INTERNAL": (pt.Error, RuntimeError)}
    for name, (cls, builtin) in classes.items():
        code = getattr(lib, name)
        lib.pt_set_error(code, b"pt_test", b"%s", ffi.new("char[]", b"made up"))
        e = last_error()
        assert isinstance(e, cls) and isinstance(e, builtin) and isinstance(e, pt.Error)
        assert (e.status, e.code, str(e)) == (name, code, "pt_test: made up")
    assert lib.pt_last_status() == 0  # reading the error cleared it


def test_package_surface():
    x = pt.ones(2)
    assert isinstance(x, pt.Tensor) and x.requires_grad_() is x and x.requires_grad
    with pytest.raises(TypeError):
        pt.Tensor()
    assert pt.__version__ == pt.library_version() and pt.cpu().ptr is not None
    net = pt.nn.Sequential(pt.nn.Linear(2, 1))
    assert isinstance(net, pt.nn.Module) and isinstance(net.parameters(), pt.nn.Parameters)
    assert net.forward(x).shape == (1,) and net.parameters().module is net
