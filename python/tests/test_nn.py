"""Autograd, modules, losses, optimizers and save/load, checked against NumPy
(and PyTorch's layers where it is installed)."""
import numpy as np
import pytest

import portable as pt
from portable import nn
from portable.nn import functional as F


def test_autograd_requires_grad_backward_grad(backend_device):
    w = pt.tensor([1.0, -2.0, 3.0], device=backend_device)
    assert not w.requires_grad and w.grad is None
    w.requires_grad = True
    assert w.requires_grad
    loss = (w * w).sum() + (w * 3).sum()
    assert loss.requires_grad
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.array([1, -2, 3]) + 3)
    assert w.grad.device == backend_device
    (w.sum()).backward()  # gradients accumulate
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.array([1, -2, 3]) + 4)
    w.grad = None
    assert w.grad is None
    with pt.no_grad():
        assert not pt.is_grad_enabled() and not (w * 2).requires_grad
    assert pt.is_grad_enabled()
    d = w.detach()
    assert not d.requires_grad and d.numpy().tolist() == [1, -2, 3]
    assert pt.ones(2, requires_grad=True).requires_grad
    with pytest.raises(pt.DTypeError):
        pt.tensor([1, 2]).requires_grad = True
    with pytest.raises(ValueError):
        w.grad = pt.ones(3)

    @pt.no_grad()
    def f(x):
        return x * 2
    assert not f(w).requires_grad


def test_linear_lazy_linear_sequential_relu(backend_device):
    pt.manual_seed(0)
    lin = nn.Linear(3, 2)
    W, b = lin.weight.numpy(), lin.bias.numpy()
    assert W.shape == (2, 3) and np.all(np.abs(W) <= 1 / np.sqrt(3))
    lin.to(backend_device)
    assert lin.weight.device == backend_device
    x = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]], np.float32)
    y = lin(pt.tensor(x, device=backend_device))
    np.testing.assert_allclose(y.numpy(), x @ W.T + b, rtol=1e-5)
    net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
    assert len(net) == 3 and isinstance(net[1], nn.ReLU) and [type(m) for m in net][0] is nn.LazyLinear
    net.to(device=backend_device)
    out = net(pt.tensor(x, device=backend_device))
    assert out.shape == (2, 1) and out.device == backend_device
    sd = net.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    W0, b0, W2, b2 = (sd[k].numpy() for k in sd)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ W0.T + b0, 0) @ W2.T + b2, rtol=1e-5)
    assert net[0].weight.data.device == backend_device
    assert [n for n, _ in net.named_parameters()] == list(sd) and len(net.parameters()) == 4
    assert "LazyLinear(out_features=4)" in repr(net) and "Linear(in_features=3" in repr(lin)
    with pytest.raises(AttributeError):
        net[0].nonexistent
    with pytest.raises(pt.ShapeError):
        net(pt.ones(2, 5, device=backend_device))


def test_device_mismatch_in_a_module_names_both_devices():
    from conftest import backend_available
    if not backend_available("opencl"):
        pytest.skip("opencl: backend unavailable here")
    lin = nn.Linear(3, 2)
    with pytest.raises(pt.DeviceMismatchError) as e:
        lin(pt.ones(1, 3, device="opencl:0"))
    assert "cpu:0" in str(e.value) and "opencl:0" in str(e.value) and isinstance(e.value, RuntimeError)


def test_losses_match_numpy(backend_device):
    logits = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], np.float32)
    labels = np.array([0, 2])
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -lp[np.arange(2), labels].mean()
    L, Y = pt.tensor(logits, device=backend_device), pt.tensor(labels, device=backend_device)
    np.testing.assert_allclose(nn.CrossEntropyLoss()(L, Y).item(), want, rtol=1e-5)
    np.testing.assert_allclose(F.cross_entropy(L, Y).item(), want, rtol=1e-5)
    t = pt.zeros(2, 3, device=backend_device)
    np.testing.assert_allclose(nn.MSELoss()(L, t).item(), (logits ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(F.mse_loss(L, t).item(), (logits ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(F.softmax(L, 1).numpy(), np.exp(lp), rtol=1e-5)
    np.testing.assert_allclose(F.log_softmax(L, 1).numpy(), lp, rtol=1e-5)
    np.testing.assert_allclose(F.relu(L - 1).numpy(), np.maximum(logits - 1, 0))
    with pytest.raises(pt.DTypeError):
        F.cross_entropy(L, L)


def test_sgd_and_adam_steps_match_their_formulas(backend_device):
    pt.manual_seed(1)
    lin = nn.Linear(2, 1).to(backend_device)
    opt = pt.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    x = pt.tensor([[1.0, 2.0]], device=backend_device)
    W0 = lin.weight.numpy()
    loss = lin(x).sum()
    opt.zero_grad()
    loss.backward()
    g = lin.weight.grad.numpy()
    np.testing.assert_allclose(g, [[1.0, 2.0]])
    opt.step()
    np.testing.assert_allclose(lin.weight.numpy(), W0 - 0.1 * g, rtol=1e-6)
    opt.set_lr(0.05)
    adam = pt.optim.Adam(lin, lr=0.01)
    W1 = lin.weight.numpy()
    adam.zero_grad()
    assert lin.weight.grad is None
    lin(x).sum().backward()
    adam.step()
    # Adam's first step moves each weight by lr * sign(g) (up to eps)
    np.testing.assert_allclose(lin.weight.numpy(), W1 - 0.01 * np.sign(g), rtol=1e-5)
    with pytest.raises(pt.InvalidArgumentError):
        pt.optim.SGD(lin, lr=-1)
    with pytest.raises(TypeError):
        pt.optim.SGD([pt.ones(1)], lr=0.1)
    lin.zero_grad()
    assert lin.weight.grad is None


def test_save_and_load_with_map_location(tmp_path, backend_device):
    pt.manual_seed(3)
    net = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    x = pt.rand(4, 5)
    want = net(x).numpy()
    path = tmp_path / "net.safetensors"
    pt.save(net, path)
    other = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    assert pt.load(other, str(path), map_location=backend_device) is other
    assert other[0].weight.device == backend_device
    np.testing.assert_allclose(other(x.to(backend_device)).numpy(), want, rtol=1e-5)
    with pytest.raises(pt.Error) as e:
        pt.load(nn.Sequential(nn.Linear(5, 4)), path)
    assert e.value.status == "PT_ERR_IO" and isinstance(e.value, OSError) and "net.safetensors" in str(e.value)
    with pytest.raises(OSError):
        pt.save(net, tmp_path / "no" / "such" / "dir.safetensors")


def test_cnn_layers(backend_device):
    pt.manual_seed(5)
    net = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(), nn.MaxPool2d(2),
                        nn.AvgPool2d(2), nn.Flatten(), nn.Dropout(0.0), nn.GELU(), nn.LazyLinear(3),
                        nn.LayerNorm(3))
    x = pt.rand(2, 1, 8, 8)
    y = net(x)
    assert y.shape == (2, 3)
    net.to(backend_device).eval()
    assert not net.training and not net[1].training
    y2 = net(x.to(backend_device))
    assert y2.device == backend_device and y2.shape == (2, 3)
    net.train()
    assert net.training
    torch = pytest.importorskip("torch")
    xn = np.random.default_rng(0).random((2, 3, 6, 6), np.float32)
    wn = np.random.default_rng(1).random((4, 3, 3, 3), np.float32)
    X, Wt = pt.tensor(xn, device=backend_device), pt.tensor(wn, device=backend_device)
    tf = torch.nn.functional
    tx, tw = torch.from_numpy(xn), torch.from_numpy(wn)
    checks = [(F.conv2d(X, Wt, stride=2, padding=1), tf.conv2d(tx, tw, stride=2, padding=1)),
              (F.max_pool2d(X, 2), tf.max_pool2d(tx, 2)), (F.avg_pool2d(X, 3, 1, 1), tf.avg_pool2d(tx, 3, 1, 1)),
              (F.adaptive_avg_pool2d(X, 1), tf.adaptive_avg_pool2d(tx, 1)), (F.gelu(X), tf.gelu(tx)),
              (F.flatten(X, 1), torch.flatten(tx, 1)), (F.dropout(X, 0.5, training=False), tx),
              (F.batch_norm(X, None, None, training=True), tf.batch_norm(tx, None, None, training=True)),
              (F.layer_norm(X, 2), tf.layer_norm(tx, (6, 6)))]
    for got, want in checks:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_compute_dtype():
    net = nn.Sequential(nn.Linear(3, 2))
    net.set_compute_dtype(pt.bfloat16)
    assert net(pt.ones(1, 3)).dtype is pt.bfloat16 and net[0].weight.dtype is pt.float32
    with pytest.raises(pt.DTypeError):
        net.set_compute_dtype(pt.int32)
    with pytest.raises(TypeError):
        net.to(dtype=pt.float64)
    with pytest.raises(TypeError):
        nn.Sequential(3)
