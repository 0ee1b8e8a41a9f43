#!/usr/bin/env python3
"""PyTorch as the oracle for pt_optimizer_save / pt_optimizer_load.

  torch_oracle_optim_state.py LIBPORTABLE_SO [SEED]

An MLP (Linear 6 -> 9, ReLU, Linear 9 -> 4) with the same weights in
libportable (PORTABLE_BACKEND's default device, through ctypes) and in torch
(CPU, float32) takes the same gradients (of sum(y * g_t) for a new x_t and
g_t at each step), AdamW with clipping and the warm-up + cosine schedule
(torch: LambdaLR), for 5 steps. Then:

  * the file pt_optimizer_save wrote, read here by hand (no safetensors
    package needed), holds torch.optim.AdamW's state_dict()["state"] under
    the flattened names: state.<i>.step equal, exp_avg and exp_avg_sq within
    1e-5 of the largest value; its "__metadata__" names the kind, the
    parameter count and torch's param_groups values exactly;
  * the other way: torch's state written in that format (step as I64) loads
    with pt_optimizer_load into a fresh libportable optimizer, and 3 more
    steps of both give the same weights within 1e-5 relative to 1 + |w|.

Exit 0 on agreement, 1 on any mismatch, 77 (skip) when torch is not
importable, except in CI, where that fails.
"""
import ctypes as C
import json
import math
import os
import struct
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # Debian: apt install python3-torch
    if os.environ.get("CI"):
        print(f"FAIL: PyTorch is not importable ({e}) and CI is set: scripts/install-deps.sh "
              "installs python3-torch, so the oracle must run")
        sys.exit(1)
    print(f"skip: PyTorch is not importable ({e}); install python3-torch to run the oracle")
    sys.exit(77)

failures = 0


def fail(msg):
    global failures
    failures += 1
    print(f"FAIL {msg}")


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
pt_backward = sig("pt_backward", C.c_int, P)
pt_mul = sig("pt_mul", P, P, P)
pt_sum = sig("pt_sum", P, P, C.c_int, C.c_bool)
pt_copy_ = sig("pt_copy_", C.c_int, P, P)
pt_linear_sized = sig("pt_linear_sized", P, C.c_int64, C.c_int64)
pt_relu_module = sig("pt_relu_module", P)
pt_sequential = sig("pt_sequential", P, C.c_int, C.POINTER(P))
pt_module_to = sig("pt_module_to", C.c_int, P, P)
pt_module_forward = sig("pt_module_forward", P, P, P)
pt_module_parameters = sig("pt_module_parameters", C.c_int, P, C.POINTER(C.c_char_p), C.POINTER(P), C.c_int)
pt_module_free = sig("pt_module_free", None, P)
pt_adamw = sig("pt_adamw", P, P, C.c_double, C.c_double, C.c_double, C.c_double, C.c_double)
pt_optimizer_step = sig("pt_optimizer_step", C.c_int, P)
pt_optimizer_zero_grad = sig("pt_optimizer_zero_grad", C.c_int, P)
pt_optimizer_free = sig("pt_optimizer_free", None, P)
pt_optimizer_set_schedule = sig("pt_optimizer_set_schedule", C.c_int, P, C.c_int64, C.c_int64, C.c_double)
pt_optimizer_save = sig("pt_optimizer_save", C.c_int, P, C.c_char_p)
pt_optimizer_load = sig("pt_optimizer_load", C.c_int, P, C.c_char_p, P)
pt_clip_grad_norm = sig("pt_clip_grad_norm", P, P, C.c_double)

dev = pt_default_device()
if not dev:
    print(f"skip: no device: {pt_last_error().decode()}")
    sys.exit(77)
print(f"optimizer state oracle on {pt_device_name(dev).decode()}")
F32 = 0
IN, HIDDEN, OUT, BATCH = 6, 9, 4, 5
STEPS, MORE = 5, 3
LR, BETAS, EPS, DECAY, CLIP = 0.05, (0.9, 0.95), 1e-8, 0.1, 0.5
WARMUP, TOTAL, MIN_RATIO = 2, 6, 0.1
rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 17)


def need(p, what):
    if not p:
        raise RuntimeError(f"{what}: {pt_last_error().decode()}")
    return p


def ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: {pt_last_error().decode()}")


def upload(a):
    a = np.ascontiguousarray(a, dtype=np.float32)
    shape = (C.c_int64 * max(a.ndim, 1))(*a.shape)
    return need(pt_from_data(dev, F32, a.ndim, shape, a.ctypes.data_as(P)), "pt_from_data")


def download(p, shape):
    a = np.empty(shape, dtype=np.float32)
    ok(pt_to_host(p, a.ctypes.data_as(P), a.nbytes), "pt_to_host")
    return a


def lambda_factor(epoch):
    """llm.c's warm-up + cosine as a LambdaLR factor of the updates made so far."""
    if epoch < WARMUP:
        return (epoch + 1) / WARMUP
    if epoch >= TOTAL:
        return MIN_RATIO
    ratio = (epoch - WARMUP) / (TOTAL - WARMUP)
    return MIN_RATIO + 0.5 * (1 + math.cos(math.pi * ratio)) * (1 - MIN_RATIO)


class Pair:
    """The same MLP and AdamW in libportable and in torch."""

    def __init__(self, weights):
        self.net = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT))
        with torch.no_grad():
            for p, w in zip(self.net.parameters(), weights):
                p.copy_(torch.tensor(w))
        layers = (P * 3)(need(pt_linear_sized(IN, HIDDEN), "linear"), need(pt_relu_module(), "relu"),
                      need(pt_linear_sized(HIDDEN, OUT), "linear"))
        self.m = need(pt_sequential(3, layers), "pt_sequential")
        ok(pt_module_to(self.m, dev), "pt_module_to")
        names, tens = (C.c_char_p * 4)(), (P * 4)()
        pt_module_parameters(self.m, names, tens, 4)
        self.params = [tens[i] for i in range(4)]
        self.shapes = [w.shape for w in weights]
        for t, w in zip(self.params, weights):
            src = upload(w)
            ok(pt_copy_(t, src), "pt_copy_")
            pt_release(src)
        self.opt = need(pt_adamw(self.m, LR, BETAS[0], BETAS[1], EPS, DECAY), "pt_adamw")
        ok(pt_optimizer_set_schedule(self.opt, WARMUP, TOTAL, LR * MIN_RATIO), "pt_optimizer_set_schedule")
        self.topt = torch.optim.AdamW(self.net.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=DECAY)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.topt, lambda_factor)

    def step(self, x, g):
        self.topt.zero_grad()
        (self.net(torch.tensor(x)) * torch.tensor(g)).sum().backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), CLIP)
        self.topt.step()
        self.sched.step()
        ok(pt_optimizer_zero_grad(self.opt), "zero_grad")
        px, pg = upload(x), upload(g)
        y = need(pt_module_forward(self.m, px), "forward")
        prod = need(pt_mul(y, pg), "pt_mul")
        loss = need(pt_sum(prod, -2147483648, False), "pt_sum")
        ok(pt_backward(loss), "pt_backward")
        pt_release(need(pt_clip_grad_norm(self.m, CLIP), "pt_clip_grad_norm"))
        ok(pt_optimizer_step(self.opt), "pt_optimizer_step")
        for p in (px, pg, y, prod, loss):
            pt_release(p)

    def weights(self):
        return [download(t, s) for t, s in zip(self.params, self.shapes)]

    def free(self):
        pt_optimizer_free(self.opt)
        pt_module_free(self.m)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    kinds = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + b:8 + n + end], dtype=kinds[e["dtype"]]).reshape(e["shape"])
    return out, meta


def write_safetensors(path, tensors, meta):
    header, data = {}, b""
    tags = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": tags[a.dtype], "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header["__metadata__"] = meta
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def close(name, got, want, tol=1e-5):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape} vs torch's {want.shape}")
        return
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = float(np.max(np.abs(got - want))) / scale
    if err > tol:
        fail(f"{name}: worst error {err:.2e} of the largest value (tolerance {tol:.0e})")


weights = [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
batches = [(rng.uniform(-1, 1, (BATCH, IN)).astype(np.float32), rng.uniform(-1, 1, (BATCH, OUT)).astype(np.float32))
           for _ in range(STEPS + MORE)]
work = tempfile.mkdtemp(prefix="pt_optim_state_oracle_")
ours_path, torch_path = os.path.join(work, "ours.safetensors"), os.path.join(work, "torch.safetensors")

# ---- Ours against torch.optim.AdamW's state_dict ----
a = Pair(weights)
for x, g in batches[:STEPS]:
    a.step(x, g)
ok(pt_optimizer_save(a.opt, ours_path.encode()), "pt_optimizer_save")
ours, meta = read_safetensors(ours_path)
sd = a.topt.state_dict()
group = sd["param_groups"][0]
want_meta = {"optimizer": "AdamW", "params": str(len(group["params"])), "beta1": BETAS[0], "beta2": BETAS[1],
             "eps": EPS, "weight_decay": group["weight_decay"], "lr": group["initial_lr"], "schedule": "warmup_cosine",
             "warmup_steps": str(WARMUP), "total_steps": str(TOTAL), "min_lr": LR * MIN_RATIO}
for key, want in want_meta.items():
    got = meta.get(key)
    if got is None or (float(got) != want if isinstance(want, float) else got != want):
        fail(f"__metadata__ {key}: {got!r}, torch has {want!r}")
names = {f"state.{i}.{k}" for i in sd["state"] for k in ("step", "exp_avg", "exp_avg_sq")}
if set(ours) != names:
    fail(f"tensor names {sorted(ours)} are not torch's state flattened {sorted(names)}")
for i, st in sd["state"].items():
    if int(ours.get(f"state.{i}.step", -1)) != int(st["step"]):
        fail(f"state.{i}.step {ours.get(f'state.{i}.step')} vs torch's {float(st['step'])}")
    for k in ("exp_avg", "exp_avg_sq"):
        if f"state.{i}.{k}" in ours:
            close(f"state.{i}.{k}", ours[f"state.{i}.{k}"], st[k].numpy())
print(f"{'ok  ' if not failures else 'FAIL'} AdamW + schedule + clipping: the saved state is torch's after {STEPS} steps")

# ---- torch's state loaded into a fresh libportable optimizer ----
before = failures
tensors = {}
for i, st in sd["state"].items():
    tensors[f"state.{i}.step"] = np.array(int(st["step"]), dtype=np.int64)
    tensors[f"state.{i}.exp_avg"] = st["exp_avg"].numpy().astype(np.float32)
    tensors[f"state.{i}.exp_avg_sq"] = st["exp_avg_sq"].numpy().astype(np.float32)
torch_meta = dict(meta)  # the same keys; the values are torch's
torch_meta.update({"beta1": repr(group["betas"][0]), "beta2": repr(group["betas"][1]), "eps": repr(group["eps"]),
                   "weight_decay": repr(group["weight_decay"]), "lr": repr(group["initial_lr"])})
write_safetensors(torch_path, tensors, torch_meta)
b = Pair([p.detach().numpy().copy() for p in a.net.parameters()])  # torch's weights after STEPS
b.topt.load_state_dict(a.topt.state_dict())
b.sched.load_state_dict(a.sched.state_dict())
ok(pt_optimizer_load(b.opt, torch_path.encode(), None), "pt_optimizer_load of torch's state")
for x, g in batches[STEPS:]:
    b.step(x, g)
for k, (got, want) in enumerate(zip(b.weights(), b.net.parameters())):
    want = want.detach().numpy()
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
    if err > 1e-5:
        fail(f"parameter {k} after {MORE} more steps from torch's state: worst error {err:.2e}")
print(f"{'ok  ' if failures == before else 'FAIL'} torch.optim.AdamW's state loaded with pt_optimizer_load: "
      f"{MORE} more steps agree")
a.free()
b.free()
for p in (ours_path, torch_path):
    os.remove(p)
os.rmdir(work)
print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
