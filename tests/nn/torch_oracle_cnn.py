#!/usr/bin/env python3
"""PyTorch as the oracle for libportable's convolutional-net ops and layers.

  torch_oracle_cnn.py LIBPORTABLE_SO [SEED]

Calls libportable through ctypes on PORTABLE_BACKEND's default device and
PyTorch (CPU, float32) with the same inputs and weights, over random shapes and
arguments:

  * conv2d (stride, padding, dilation, groups, with/without bias), max_pool2d,
    avg_pool2d, batch_norm (training: output, gradients and the updated running
    statistics; evaluation), layer_norm and gelu: outputs and the gradients of
    sum(y * G) for a random G, within 1e-5;
  * a CNN saved by libportable (pt_save) loads into the equivalent
    torch.nn.Sequential and gives the same eval-mode outputs, and a state dict
    written from torch loads into libportable (pt_load) with the same outputs.

Safetensors files go through torch_oracle_lib.py (by hand when the safetensors
package is missing), so only torch and NumPy are needed. Exit 0 on agreement, 1 on any
mismatch, 77 (skip) with the reason when torch is not importable, except in CI
(the CI variable set), where a missing package is a failure: CI installs it.
"""
import os
import tempfile

import torch.nn.functional as F

from torch_oracle_lib import *

I64_2 = C.c_int64 * 2


class ConvOpts(C.Structure):
    _fields_ = [("stride", I64_2), ("padding", I64_2), ("dilation", I64_2), ("groups", C.c_int64)]


class PoolOpts(C.Structure):
    _fields_ = [("kernel", I64_2), ("stride", I64_2), ("padding", I64_2)]


pt_f_conv2d = sig("pt_f_conv2d", P, P, P, P, C.POINTER(ConvOpts))
pt_f_max_pool2d = sig("pt_f_max_pool2d", P, P, C.POINTER(PoolOpts))
pt_f_avg_pool2d = sig("pt_f_avg_pool2d", P, P, C.POINTER(PoolOpts))
pt_f_batch_norm = sig("pt_f_batch_norm", P, P, P, P, P, P, C.c_bool, C.c_double, C.c_double)
pt_f_layer_norm = sig("pt_f_layer_norm", P, P, C.c_int, P, P, C.c_double)
pt_gelu = sig("pt_gelu", P, P)
pt_conv2d = sig("pt_conv2d", P, C.c_int64, C.c_int64, C.c_int64, C.POINTER(ConvOpts), C.c_bool)
pt_batch_norm2d = sig("pt_batch_norm2d", P, C.c_double, C.c_double)
pt_relu_module = sig("pt_relu_module", P)
pt_max_pool2d = sig("pt_max_pool2d", P, C.POINTER(PoolOpts))
pt_avg_pool2d = sig("pt_avg_pool2d", P, C.POINTER(PoolOpts))
pt_flatten = sig("pt_flatten", P)
pt_gelu_module = sig("pt_gelu_module", P)
pt_linear = sig("pt_linear", P, C.c_int64)
pt_sequential = sig("pt_sequential", P, C.c_int, C.POINTER(P))

rng = seed_rng(10)


def rand(*shape):
    return torch.tensor(rng.uniform(-1, 1, size=shape), dtype=torch.float32, requires_grad=True)


# ---- conv2d ----
for k in range(8):
    groups = int(rng.choice([1, 1, 2, 3]))
    cin, cout = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    st = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    n, h, w = int(rng.integers(1, 4)), int(rng.integers(dil[0] * (kh - 1) + 1, 10)), int(rng.integers(dil[1] * (kw - 1) + 1, 10))
    bias = k % 3 != 2
    x, wt, b = rand(n, cin, h, w), rand(cout, cin // groups, kh, kw), rand(cout)
    y = F.conv2d(x, wt, b if bias else None, st, pad, dil, groups)
    g = torch.tensor(rng.uniform(-1, 1, size=y.shape), dtype=torch.float32)
    (y * g).sum().backward()
    px, pw, pb = leaf(x), leaf(wt), leaf(b)
    opts = ConvOpts(I64_2(*st), I64_2(*pad), I64_2(*dil), groups)
    py = need(pt_f_conv2d(px, pw, pb if bias else None, C.byref(opts)), "pt_f_conv2d")
    backward_weighted(py, g)
    name = f"conv2d x {list(x.shape)} w {list(wt.shape)} s {st} p {pad} d {dil} g {groups}{'' if bias else ' no bias'}"
    check(name + " y", download(py), y)
    check(name + " dx", grad_of(px), x.grad)
    check(name + " dw", grad_of(pw), wt.grad)
    if bias:
        check(name + " db", grad_of(pb), b.grad)
    for p in (px, pw, pb, py):
        pt_release(p)

# ---- pools ----
for k in range(8):
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    st = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pad = (int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1)))
    x = rand(int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(kh, 9)), int(rng.integers(kw, 9)))
    opts = PoolOpts(I64_2(kh, kw), I64_2(*st), I64_2(*pad))
    for kind in ("max", "avg"):
        xx = x.detach().clone().requires_grad_(True)
        y = (F.max_pool2d if kind == "max" else F.avg_pool2d)(xx, (kh, kw), st, pad)
        g = torch.tensor(rng.uniform(-1, 1, size=y.shape), dtype=torch.float32)
        (y * g).sum().backward()
        px = leaf(xx)
        py = need((pt_f_max_pool2d if kind == "max" else pt_f_avg_pool2d)(px, C.byref(opts)), kind)
        backward_weighted(py, g)
        name = f"{kind}_pool2d x {list(x.shape)} k ({kh}, {kw}) s {st} p {pad}"
        check(name + " y", download(py), y)
        check(name + " dx", grad_of(px), xx.grad)
        pt_release(px)
        pt_release(py)

# ---- batch_norm, both modes ----
for k in range(4):
    n, c = int(rng.integers(2, 5)), int(rng.integers(1, 5))
    x, wt, b = rand(n, c, int(rng.integers(1, 5)), int(rng.integers(1, 5))), rand(c), rand(c)
    rm0 = torch.tensor(rng.uniform(-0.5, 0.5, size=c), dtype=torch.float32)
    rv0 = torch.tensor(rng.uniform(0.5, 1.5, size=c), dtype=torch.float32)
    for training in (True, False):
        xx, ww, bb = (t.detach().clone().requires_grad_(True) for t in (x, wt, b))
        rm, rv = rm0.clone(), rv0.clone()
        y = F.batch_norm(xx, rm, rv, ww, bb, training, 0.1, 1e-5)
        g = torch.tensor(rng.uniform(-1, 1, size=y.shape), dtype=torch.float32)
        (y * g).sum().backward()
        px, pw, pb, prm, prv = leaf(xx), leaf(ww), leaf(bb), upload(rm0), upload(rv0)
        py = need(pt_f_batch_norm(px, prm, prv, pw, pb, training, 0.1, 1e-5), "pt_f_batch_norm")
        backward_weighted(py, g)
        name = f"batch_norm {'training' if training else 'eval'} x {list(x.shape)}"
        check(name + " y", download(py), y)
        check(name + " dx", grad_of(px), xx.grad)
        check(name + " dweight", grad_of(pw), ww.grad)
        check(name + " dbias", grad_of(pb), bb.grad)
        check(name + " running_mean", download(prm), rm)
        check(name + " running_var", download(prv), rv)
        for p in (px, pw, pb, prm, prv, py):
            pt_release(p)

# ---- layer_norm ----
for k in range(4):
    shape = [int(v) for v in rng.integers(1, 6, size=int(rng.integers(2, 5)))]
    nd = int(rng.integers(1, len(shape)))
    x, wt, b = rand(*shape), rand(*shape[-nd:]), rand(*shape[-nd:])
    y = F.layer_norm(x, shape[-nd:], wt, b, 1e-5)
    g = torch.tensor(rng.uniform(-1, 1, size=y.shape), dtype=torch.float32)
    (y * g).sum().backward()
    px, pw, pb = leaf(x), leaf(wt), leaf(b)
    py = need(pt_f_layer_norm(px, nd, pw, pb, 1e-5), "pt_f_layer_norm")
    backward_weighted(py, g)
    name = f"layer_norm x {shape} over {nd} dims"
    check(name + " y", download(py), y)
    check(name + " dx", grad_of(px), x.grad)
    check(name + " dweight", grad_of(pw), wt.grad)
    check(name + " dbias", grad_of(pb), b.grad)
    for p in (px, pw, pb, py):
        pt_release(p)

# ---- gelu ----
x = torch.tensor(rng.uniform(-6, 6, size=(7, 13)), dtype=torch.float32, requires_grad=True)
y = F.gelu(x)
g = torch.tensor(rng.uniform(-1, 1, size=y.shape), dtype=torch.float32)
(y * g).sum().backward()
px = leaf(x)
py = need(pt_gelu(px), "pt_gelu")
backward_weighted(py, g)
check("gelu [7, 13] y", download(py), y)
check("gelu [7, 13] dx", grad_of(px), x.grad)
pt_release(px)
pt_release(py)

# ---- A CNN moving both ways through safetensors ----
def torch_cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 3, padding=1), torch.nn.BatchNorm2d(6), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 8, 3, padding=1, groups=2), torch.nn.BatchNorm2d(8), torch.nn.GELU(),
        torch.nn.AvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 2 * 2, 10))


def pt_cnn():
    pad = ConvOpts(I64_2(1, 1), I64_2(1, 1), I64_2(1, 1), 1)
    pad_g2 = ConvOpts(I64_2(1, 1), I64_2(1, 1), I64_2(1, 1), 2)
    pool = PoolOpts(I64_2(2, 2), I64_2(0, 0), I64_2(0, 0))
    layers = [pt_conv2d(6, 3, 3, C.byref(pad), True), pt_batch_norm2d(1e-5, 0.1), pt_relu_module(),
              pt_max_pool2d(C.byref(pool)), pt_conv2d(8, 3, 3, C.byref(pad_g2), True), pt_batch_norm2d(1e-5, 0.1),
              pt_gelu_module(), pt_avg_pool2d(C.byref(pool)), pt_flatten(), pt_linear(10)]
    return need(pt_sequential(len(layers), (P * len(layers))(*layers)), "pt_sequential")


def pt_eval(net, x, on=None):
    pt_module_train(net, False)
    px = upload(x, on=on)
    py = need(pt_module_forward(net, px), "pt_module_forward")
    out = download(py)
    pt_release(px)
    pt_release(py)
    return out


x = torch.tensor(rng.uniform(0, 1, size=(5, 1, 8, 8)), dtype=torch.float32)
with tempfile.TemporaryDirectory() as tmp:
    # libportable -> torch: two training-mode passes make the running stats non-trivial
    pt_manual_seed(3)
    net = pt_cnn()
    for _ in range(2):
        px = upload(torch.tensor(rng.uniform(0, 1, size=(6, 1, 8, 8)), dtype=torch.float32))
        pt_release(need(pt_module_forward(net, px), "pt_module_forward"))
        pt_release(px)
    path = os.path.join(tmp, "from_portable.safetensors")
    ok_or_raise(pt_save(net, path.encode()), "pt_save")
    model = torch_cnn()
    model.load_state_dict(read_safetensors(path), strict=True)
    model.eval()
    check("CNN saved by libportable, torch eval outputs", pt_eval(net, x), model(x))
    pt_module_free(net)

    # torch -> libportable: a trained-looking state dict with non-trivial running stats
    torch.manual_seed(5)
    model = torch_cnn()
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.rand(6, 1, 8, 8))
    model.eval()
    path = os.path.join(tmp, "from_torch.safetensors")
    write_safetensors(path, model.state_dict())
    net = pt_cnn()
    ok_or_raise(pt_load(net, path.encode(), None), "pt_load")
    check("CNN saved by torch, libportable eval outputs (cpu)", pt_eval(net, x, pt_cpu()), model(x))
    pt_module_free(net)

finish("torch oracle")
