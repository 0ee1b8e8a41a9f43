#!/usr/bin/env python3
"""PyTorch as the oracle for pt_scaled_dot_product_attention.

  torch_oracle_attention.py LIBPORTABLE_SO [SEED]

Calls libportable through ctypes on PORTABLE_BACKEND's default device and
PyTorch (CPU, float32) with the same q, k, v. Debian's PyTorch 1.13 has no
scaled_dot_product_attention, so the oracle is written out:
softmax(q k^T scale + mask) v, with a bool mask applied as masked_fill(-inf)
and a float mask added. Checks the output and the gradients of sum(o * g) in
q, k and v for [B, H, T, D], [N, T, D] and [T, D], causal or not, bool and
float masks (every row keeps a key: torch gives NaN where none is left, where
libportable gives 0), odd lengths and T from 1 to 1024, within 1e-5 relative
to 1 + |value| (the CNN oracle's measure). Exit 0 on agreement, 1 on any
mismatch, 77 (skip) with the reason when torch is not importable, except in
CI (the CI variable set), where a missing package is a failure.
"""
import math
import os

from torch_oracle_lib import *

pt_sdpa = sig("pt_scaled_dot_product_attention", P, P, P, P, P, C.c_bool, C.c_double)
print(f"attention oracle on {pt_device_name(dev).decode()}")
rng = seed_rng(30)


def rand(*shape, lo=-1.0, hi=1.0, grad=True):
    return torch.tensor(rng.uniform(lo, hi, size=shape), dtype=torch.float32, requires_grad=grad)


def reference(q, k, v, mask, causal, scale):
    s = q @ k.transpose(-2, -1) * scale
    tq, tk = s.shape[-2], s.shape[-1]
    if causal:
        s = s.masked_fill(~torch.ones(tq, tk, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, dim=-1) @ v


# (leading dims, Tq, Tk, D, Dv, causal, mask kind)
cases = [
    ((), 1, 1, 4, 4, False, None),
    ((), 1, 1, 4, 4, True, None),
    ((2, 3), 5, 5, 8, 8, True, None),
    ((2, 3), 7, 11, 8, 6, False, "bool"),
    ((3,), 33, 33, 16, 16, True, "float"),
    ((1, 2), 65, 70, 12, 12, False, "float"),
    ((2, 2), 100, 100, 32, 32, True, "bool"),
    ((1, 1), 257, 257, 16, 16, True, None),
    ((), 1024, 1024, 16, 16, True, None),
    ((1, 1), 1024, 1024, 8, 8, False, "bool"),
]
for lead, tq, tk, d, dv, causal, mkind in cases:
    q, k, v = rand(*lead, tq, d, lo=-2, hi=2), rand(*lead, tk, d, lo=-2, hi=2), rand(*lead, tk, dv)
    mask = None
    if mkind == "bool":
        keep = torch.tensor(rng.uniform(size=(tq, tk)) < 0.6)
        keep[:, 0] = True  # every row keeps a key (torch: NaN otherwise)
        mask = keep
    elif mkind == "float":
        m = torch.tensor(rng.uniform(-2, 2, size=(tq, tk)), dtype=torch.float32)
        m[torch.tensor(rng.uniform(size=(tq, tk)) < 0.2)] = float("-inf")
        m[:, 0] = 0.0
        mask = m
    scale = 1.0 / math.sqrt(d)
    o = reference(q, k, v, mask, causal, scale)
    g = rand(*o.shape, grad=False)
    (o * g).sum().backward()

    pq, pk, pv = upload(q), upload(k), upload(v)
    for p in (pq, pk, pv):
        pt_set_requires_grad(p, True)
    pm = None if mask is None else upload(mask.to(torch.uint8) if mask.dtype == torch.bool else mask,
                                         U8 if mask.dtype == torch.bool else F32)
    po = need(pt_sdpa(pq, pk, pv, pm, causal, 0.0), "pt_scaled_dot_product_attention")
    pg = upload(g)
    prod = need(pt_mul(po, pg), "pt_mul")
    loss = need(pt_sum(prod, PT_ALL, False), "pt_sum")
    ok_or_raise(pt_backward(loss), "pt_backward")
    name = f"attention q {list(q.shape)} k {list(k.shape)} v {list(v.shape)}" \
           f"{' causal' if causal else ''}{' ' + mkind + ' mask' if mkind else ''}"
    check(name + " o", download(po), o)
    check(name + " dq", grad_of(pq), q.grad)
    check(name + " dk", grad_of(pk), k.grad)
    check(name + " dv", grad_of(pv), v.grad)
    for p in (pq, pk, pv, pm, po, pg, prod, loss):
        if p:
            pt_release(p)

def op_kind(name):
    """The pt_op_kind of a row of include/portable/op_table.h (rows in enum order)."""
    table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include", "portable", "op_table.h")
    rows = [line.split("(", 1)[1].split(",", 1)[0].strip() for line in open(table) if line.lstrip().startswith("X(")]
    return rows.index(name)


# PT_TEST_ATTENTION_PATH=fused: the device's ATTENTION kinds ran, not the
# composed path. The core sends ATTENTION_BACKWARD only for the gradient of
# an ATTENTION the device ran, so its having reached a backend in f32 says so.
if os.environ.get("PT_TEST_ATTENTION_PATH") == "fused":
    reached = sig("pt_op_dtypes_reached", C.c_uint, C.c_int)(op_kind("ATTENTION_BACKWARD"))
    fused = bool(reached & (1 << F32))
    if not fused:
        fail("attention ran composed: ATTENTION_BACKWARD never reached the device in f32")
    else:
        print("ok   attention ran on the device's fused kinds (ATTENTION_BACKWARD reached in f32)")

finish("attention oracle")
