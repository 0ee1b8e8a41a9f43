#!/usr/bin/env python3
"""PyTorch as the oracle for pt_f_embedding.

  torch_oracle_embedding.py LIBPORTABLE_SO [SEED]

Calls libportable through ctypes on PORTABLE_BACKEND's default device and
torch.nn.functional.embedding (CPU) with the same indices and weight, and
checks the rows (exactly: they are copies) and the weight's gradient of
sum(out * g) (within 1e-5 relative to 1 + |value| in float32, 1e-12 in
float64: both sum the same terms, perhaps in another order) for i32 and i64
indices of 1 to 3 dims, heavily repeated indices (every position one row;
a Zipf-like draw as text gives) and a GPT-2 sized table (50257 rows of
768, 4096 positions). Two backward passes must also give the same bits.
Exit 0 on agreement, 1 on any mismatch, 77 (skip) with the reason when
torch is not importable, except in CI (the CI variable set), where a
missing package is a failure.
"""
import ctypes as C
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # Debian: apt install python3-torch
    if os.environ.get("CI"):
        print(f"FAIL: PyTorch is not importable ({e}) and CI is set: scripts/install-deps.sh "
              "installs python3-torch, so the oracle must run")
        sys.exit(1)
    print(f"skip: PyTorch is not importable ({e}); install python3-torch to run the oracle")
    sys.exit(77)

failures = 0


def check(name, got, want, tol):
    global failures
    want = want.detach().numpy().astype(np.float64)
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    err = np.max(np.abs(got - want) / (1.0 + np.abs(want))) if want.size else 0.0
    ok = err <= tol
    if not ok:
        failures += 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}: worst error {err:.2e} (tolerance {tol:.0e})")


lib = C.CDLL(sys.argv[1])
P = C.c_void_p


def sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


pt_default_device = sig("pt_default_device", P)
pt_device_name = sig("pt_device_name", C.c_char_p, P)
pt_from_data = sig("pt_from_data", P, P, C.c_int, C.c_int, C.POINTER(C.c_int64), P)
pt_to_host = sig("pt_to_host", C.c_int, P, P, C.c_size_t)
pt_release = sig("pt_release", None, P)
pt_last_error = sig("pt_last_error", C.c_char_p)
pt_set_requires_grad = sig("pt_set_requires_grad", C.c_int, P, C.c_bool)
pt_backward = sig("pt_backward", C.c_int, P)
pt_grad = sig("pt_grad", P, P)
pt_mul = sig("pt_mul", P, P, P)
pt_sum = sig("pt_sum", P, P, C.c_int, C.c_bool)
pt_f_embedding = sig("pt_f_embedding", P, P, P)

dev = pt_default_device()
if not dev:
    print(f"skip: no device: {pt_last_error().decode()}")
    sys.exit(77)
print(f"embedding oracle on {pt_device_name(dev).decode()}")
PT = {np.float32: 0, np.float64: 1, np.int32: 2, np.int64: 3}  # types.h's dtype order


def need(p, what):
    if not p:
        raise RuntimeError(f"{what}: {pt_last_error().decode()}")
    return p


def upload(a):
    a = np.ascontiguousarray(a)
    shape = (C.c_int64 * max(a.ndim, 1))(*a.shape)
    return need(pt_from_data(dev, PT[a.dtype.type], a.ndim, shape, a.ctypes.data_as(P)), "pt_from_data")


def download(p, shape, dtype):
    a = np.empty(shape, dtype=dtype)
    if pt_to_host(p, a.ctypes.data_as(P), a.nbytes) != 0:
        raise RuntimeError(f"pt_to_host: {pt_last_error().decode()}")
    return a


def run(idx, weight, g):
    """libportable's rows and weight gradient of sum(out * g)."""
    pi, pw, pg = upload(idx), upload(weight), upload(g)
    pt_set_requires_grad(pw, True)
    po = need(pt_f_embedding(pi, pw), "pt_f_embedding")
    prod = need(pt_mul(po, pg), "pt_mul")
    loss = need(pt_sum(prod, -2147483648, False), "pt_sum")  # PT_ALL
    if pt_backward(loss) != 0:
        raise RuntimeError(f"pt_backward: {pt_last_error().decode()}")
    rows = download(po, g.shape, weight.dtype)
    pgrad = need(pt_grad(pw), "pt_grad")
    grad = download(pgrad, weight.shape, weight.dtype)
    for p in (pi, pw, pg, po, prod, loss, pgrad):
        pt_release(p)
    return rows, grad


rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 41)


def zipf_indices(shape, rows):
    """Indices with text's repeats: a few rows picked often, most rarely."""
    return np.minimum(rng.zipf(1.2, size=shape) - 1, rows - 1)


# (index shape, rows, width, index draw)
cases = [
    ((7,), 5, 3, "uniform"),
    ((3, 4), 10, 8, "uniform"),
    ((2, 3, 5), 4, 6, "uniform"),
    ((64,), 9, 16, "same"),
    ((8, 128), 1000, 32, "zipf"),
    ((4, 1024), 50257, 768, "zipf"),
]
for ishape, rows, width, draw in cases:
    for np_f, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        if rows * width > 1 << 20 and np_f == np.float64:
            continue  # the GPT-sized table once, in float32
        for np_i in (np.int32, np.int64):
            if draw == "uniform":
                idx = rng.integers(0, rows, size=ishape)
            elif draw == "same":
                idx = np.full(ishape, rows // 2)
            else:
                idx = zipf_indices(ishape, rows)
            idx = idx.astype(np_i)
            weight = rng.uniform(-1, 1, size=(rows, width)).astype(np_f)
            g = rng.uniform(-1, 1, size=ishape + (width,)).astype(np_f)
            tw = torch.tensor(weight, requires_grad=True)
            out = F.embedding(torch.tensor(idx.astype(np.int64)), tw)
            (out * torch.tensor(g)).sum().backward()
            rows_got, grad_got = run(idx, weight, g)
            name = f"embedding {np.dtype(np_f).name} {np.dtype(np_i).name} indices {list(ishape)} " \
                   f"weight [{rows}, {width}] {draw}"
            check(name + " rows", rows_got, out, 0.0)
            check(name + " weight grad", grad_got, tw.grad, tol)
            if draw == "zipf" and np_i == np.int64:
                _, again = run(idx, weight, g)
                same = again.tobytes() == grad_got.tobytes()
                if not same:
                    failures += 1
                print(f"{'ok  ' if same else 'FAIL'} {name} weight grad: the same bits in a second backward")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
