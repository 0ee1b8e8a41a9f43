"""What the PyTorch oracle scripts of tests/nn share: importing torch (or
skipping), libportable through ctypes on PORTABLE_BACKEND's default device,
tensors both ways, the comparison, the seed argument, and safetensors files.

  from torch_oracle_lib import *   (the scripts sit beside this file)

Importing it parses the command line (LIBPORTABLE_SO [SEED]), loads the
library and picks the device; it exits 77 (skip) with the reason when torch
is not importable or there is no device, except that a missing torch under CI
(the CI variable set) is a failure: CI installs python3-torch.
"""
import ctypes as C
import json
import math
import os
import struct
import sys

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

TOL = 1e-5
F32, F64, I32, I64, U8 = 0, 1, 2, 3, 4  # pt_dtype values (types.h)
PT_ALL = -2147483648
P = C.c_void_p
failures = 0


def check(name, got, want, tol=TOL, quiet=False):
    """Worst |got - want| / (1 + |want|) within tol; prints the result (only
    a failure when quiet) and counts failures. Returns whether it agreed."""
    global failures
    want = np.asarray(want.detach().numpy() if hasattr(want, "detach") else want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    err = np.max(np.abs(got - want) / (1.0 + np.abs(want))) if want.size else 0.0
    ok = bool(err <= tol)
    if not ok:
        failures += 1
    if not ok or not quiet:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: worst error {err:.2e} (tolerance {tol:.0e})")
    return ok


def fail(message):
    global failures
    failures += 1
    print(f"FAIL {message}")


def finish(what):
    """Prints the verdict and exits 0 when nothing failed, else 1."""
    print(f"{what} on {pt_device_name(dev).decode()}: {'all agree' if not failures else f'{failures} FAILED'}")
    sys.exit(1 if failures else 0)


lib = C.CDLL(sys.argv[1])


def sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


pt_default_device = sig("pt_default_device", P)
pt_cpu = sig("pt_cpu", P)
pt_device_name = sig("pt_device_name", C.c_char_p, P)
pt_from_data = sig("pt_from_data", P, P, C.c_int, C.c_int, C.POINTER(C.c_int64), P)
pt_to_host = sig("pt_to_host", C.c_int, P, P, C.c_size_t)
pt_tensor_ndim = sig("pt_tensor_ndim", C.c_int, P)
pt_tensor_shape = sig("pt_tensor_shape", C.POINTER(C.c_int64), P)
pt_release = sig("pt_release", None, P)
pt_last_error = sig("pt_last_error", C.c_char_p)
pt_manual_seed = sig("pt_manual_seed", None, C.c_uint64)
pt_set_requires_grad = sig("pt_set_requires_grad", C.c_int, P, C.c_bool)
pt_backward = sig("pt_backward", C.c_int, P)
pt_grad = sig("pt_grad", P, P)
pt_mul = sig("pt_mul", P, P, P)
pt_sum = sig("pt_sum", P, P, C.c_int, C.c_bool)
pt_copy_ = sig("pt_copy_", C.c_int, P, P)
pt_module_forward = sig("pt_module_forward", P, P, P)
pt_module_to = sig("pt_module_to", C.c_int, P, P)
pt_module_train = sig("pt_module_train", C.c_int, P, C.c_bool)
pt_module_parameters = sig("pt_module_parameters", C.c_int, P, C.POINTER(C.c_char_p), C.POINTER(P), C.c_int)
pt_module_free = sig("pt_module_free", None, P)
pt_save = sig("pt_save", C.c_int, P, C.c_char_p)
pt_load = sig("pt_load", C.c_int, P, C.c_char_p, P)

dev = pt_default_device()
if not dev:
    print(f"skip: no device: {pt_last_error().decode()}")
    sys.exit(77)


def seed_rng(default):
    """The script's NumPy generator: SEED from the command line, else default."""
    return np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else default)


def need(p, what):
    if not p:
        raise RuntimeError(f"{what}: {pt_last_error().decode()}")
    return p


def ok_or_raise(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: {pt_last_error().decode()}")


NP_OF = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64, U8: np.uint8}
PT_OF = {v: k for k, v in NP_OF.items()}


def upload(t, dtype=F32, on=None):
    """A torch tensor or NumPy array as a new libportable tensor on dev (or on)."""
    a = t.detach().numpy() if hasattr(t, "detach") else t
    a = np.array(a, dtype=NP_OF[dtype], order="C")  # keeps 0-D as 0-D
    shape = (C.c_int64 * max(a.ndim, 1))(*a.shape)
    return need(pt_from_data(on or dev, dtype, a.ndim, shape, a.ctypes.data_as(P)), "pt_from_data")


def download(p, dtype=np.float32):
    nd = pt_tensor_ndim(p)
    shape = tuple(pt_tensor_shape(p)[i] for i in range(nd))
    a = np.empty(shape, dtype=dtype)
    ok_or_raise(pt_to_host(p, a.ctypes.data_as(P), a.nbytes), "pt_to_host")
    return a


def warmup_cosine_factor(epoch, warmup, total, min_ratio=0.1):
    """llm.c's warm-up + cosine schedule (pt_lr_warmup_cosine over max_lr) as a
    torch LambdaLR factor of epoch, the number of updates made so far."""
    if epoch < warmup:
        return (epoch + 1) / warmup
    if epoch >= total:
        return min_ratio
    ratio = (epoch - warmup) / (total - warmup)
    return min_ratio + 0.5 * (1 + math.cos(math.pi * ratio)) * (1 - min_ratio)


def leaf(t):
    p = upload(t)
    pt_set_requires_grad(p, True)
    return p


def grad_of(p):
    g = need(pt_grad(p), "pt_grad")
    a = download(g)
    pt_release(g)
    return a


def backward_weighted(y, g):
    """pt_backward of sum(y * g) for an upstream gradient g (torch tensor)."""
    gp = upload(g)
    prod = need(pt_mul(y, gp), "pt_mul")
    loss = need(pt_sum(prod, PT_ALL, False), "pt_sum")
    ok_or_raise(pt_backward(loss), "pt_backward")
    for p in (gp, prod, loss):
        pt_release(p)


def parameters(m):
    """A module's state dict as {name: borrowed tensor handle}."""
    n = pt_module_parameters(m, None, None, 0)
    names, tens = (C.c_char_p * n)(), (P * n)()
    pt_module_parameters(m, names, tens, n)
    return {names[i].decode(): tens[i] for i in range(n)}


# ---- Safetensors files ----
# With the `safetensors` package when it is importable; otherwise the format
# by hand (an 8-byte little-endian header length, the JSON header padded
# with spaces, the raw little-endian data), so the test never skips for it.
try:
    import safetensors.torch as st_torch
except ImportError:
    st_torch = None
ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64, "U8": np.uint8}


def safetensors_how():
    return "the safetensors package" if st_torch else "the format written out in torch_oracle_lib.py"


def read_safetensors(path):
    if st_torch:
        return st_torch.load_file(path)
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        arr = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=ST_DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def write_safetensors(path, state):
    if st_torch:
        st_torch.save_file({k: v.detach().contiguous() for k, v in state.items()}, path, {"format": "pt"})
        return
    tags = {np.dtype(v): k for k, v in ST_DTYPES.items()}
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(state):
        a = state[name].detach().numpy()
        blob = a.tobytes(order="C")  # (np.ascontiguousarray would make a 0-D tensor 1-D)
        header[name] = {"dtype": tags[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
