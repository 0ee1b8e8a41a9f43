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
import torch.nn.functional as F

from torch_oracle_lib import *

pt_f_embedding = sig("pt_f_embedding", P, P, P)
print(f"embedding oracle on {pt_device_name(dev).decode()}")


def run(idx, weight, g):
    """libportable's rows and weight gradient of sum(out * g)."""
    pi, pw, pg = (upload(a, PT_OF[a.dtype.type]) for a in (idx, weight, g))
    pt_set_requires_grad(pw, True)
    po = need(pt_f_embedding(pi, pw), "pt_f_embedding")
    prod = need(pt_mul(po, pg), "pt_mul")
    loss = need(pt_sum(prod, PT_ALL, False), "pt_sum")
    ok_or_raise(pt_backward(loss), "pt_backward")
    rows = download(po, weight.dtype)
    pgrad = need(pt_grad(pw), "pt_grad")
    grad = download(pgrad, weight.dtype)
    for p in (pi, pw, pg, po, prod, loss, pgrad):
        pt_release(p)
    return rows, grad


rng = seed_rng(41)


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
                if again.tobytes() == grad_got.tobytes():
                    print(f"ok   {name} weight grad: the same bits in a second backward")
                else:
                    fail(f"{name} weight grad: other bits in a second backward")

finish("embedding oracle")
