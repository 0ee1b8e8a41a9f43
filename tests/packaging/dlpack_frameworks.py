"""DLPack between libportable and NumPy or PyTorch, with no copy.

libportable.so is loaded through ctypes. A libportable tensor goes out
through pt_to_dlpack (or pt_to_dlpack_legacy, for consumers from before
DLPack 1.0) into np.from_dlpack / torch.from_dlpack, and the framework's
arrays come back through pt_from_dlpack[_legacy]. "No copy" is shown the
only way that means anything: a write on one side is seen on the other,
for whole tensors and for strided views with an offset.

Usage: dlpack_frameworks.py <path of libportable.so> numpy|torch
Exit 77 (skip) when that framework cannot be imported."""
import ctypes
import sys

lib_path, framework = sys.argv[1], sys.argv[2]
try:
    import numpy as np
    if framework == "torch":
        import torch
except ImportError as e:
    print(f"{framework} is not installed for {sys.executable} ({e}): skipped")
    sys.exit(77)

lib = ctypes.CDLL(lib_path)
P, I64 = ctypes.c_void_p, ctypes.c_int64
PT_F32, PT_F64, PT_ALL = 0, 1, -(2**31)
for name, res, args in [
    ("pt_cpu", P, []),
    ("pt_arange", P, [P, ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_double]),
    ("pt_reshape", P, [P, ctypes.c_int, ctypes.POINTER(I64)]),
    ("pt_transpose", P, [P, ctypes.c_int, ctypes.c_int]),
    ("pt_narrow", P, [P, ctypes.c_int, I64, I64]),
    ("pt_contiguous", P, [P]),
    ("pt_fill_", ctypes.c_int, [P, ctypes.c_double]),
    ("pt_to_host", ctypes.c_int, [P, P, ctypes.c_size_t]),
    ("pt_tensor_numel", I64, [P]),
    ("pt_tensor_dtype", ctypes.c_int, [P]),
    ("pt_tensor_strides", ctypes.POINTER(I64), [P]),
    ("pt_tensor_ndim", ctypes.c_int, [P]),
    ("pt_release", None, [P]),
    ("pt_last_error", ctypes.c_char_p, []),
    ("pt_to_dlpack", P, [P]),
    ("pt_to_dlpack_legacy", P, [P]),
    ("pt_from_dlpack", P, [P, ctypes.c_uint]),
    ("pt_from_dlpack_legacy", P, [P, ctypes.c_uint]),
]:
    f = getattr(lib, name)
    f.restype, f.argtypes = res, args

capi = ctypes.pythonapi
capi.PyCapsule_New.restype = ctypes.py_object
capi.PyCapsule_New.argtypes = [P, ctypes.c_char_p, P]
capi.PyCapsule_GetPointer.restype = P
capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capi.PyCapsule_SetName.restype = ctypes.c_int
capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
capi.PyCapsule_IsValid.restype = ctypes.c_int
capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]

failures = 0


def check(ok, what):
    global failures
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures += 1


def need(ptr, what):
    if not ptr:
        sys.exit(f"{what} failed: {lib.pt_last_error().decode()}")
    return ptr


def pt_values(x):
    """A libportable tensor's elements (C order) as a NumPy array (a copy)."""
    n = lib.pt_tensor_numel(x)
    dtype = np.float32 if lib.pt_tensor_dtype(x) == PT_F32 else np.float64
    out = np.empty(n, dtype=dtype)
    need(lib.pt_to_host(x, out.ctypes.data, out.nbytes) == 0 or None, "pt_to_host")
    return out


class Exported:
    """A libportable tensor as a DLPack producer (the __dlpack__ protocol)."""

    def __init__(self, x):
        self.x = x
        self.versions = []

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("libportable exports without copying")
        if max_version is not None and max_version[0] >= 1:
            self.versions.append("versioned")
            return capi.PyCapsule_New(need(lib.pt_to_dlpack(self.x), "pt_to_dlpack"),
                                      b"dltensor_versioned", None)
        self.versions.append("legacy")
        return capi.PyCapsule_New(need(lib.pt_to_dlpack_legacy(self.x), "pt_to_dlpack_legacy"),
                                  b"dltensor", None)


def writable(a):
    """a itself, or where the framework hands DLPack imports out read-only
    (NumPy < 2: from_dlpack arrays are never writeable), a NumPy array over
    the very same memory: built from a's own data address, shape and strides,
    so a write through it is a write to a's memory, no copy involved."""
    if framework == "torch" or a.flags.writeable:
        return a
    info = a.__array_interface__
    span = max(((n - 1) * st for n, st in zip(a.shape, a.strides)), default=0) + a.itemsize
    raw = (ctypes.c_char * span).from_address(info["data"][0])
    return np.lib.stride_tricks.as_strided(np.frombuffer(raw, dtype=a.dtype), a.shape, a.strides)


def import_array(a):
    """A framework array into libportable through its __dlpack__ capsule."""
    try:
        capsule = a.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0
        capsule = a.__dlpack__()
    if capi.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        x = lib.pt_from_dlpack(capi.PyCapsule_GetPointer(capsule, b"dltensor_versioned"), 0)
        used, kind = b"used_dltensor_versioned", "versioned"
    else:
        x = lib.pt_from_dlpack_legacy(capi.PyCapsule_GetPointer(capsule, b"dltensor"), 0)
        used, kind = b"used_dltensor", "legacy"
    need(x, "pt_from_dlpack")
    capi.PyCapsule_SetName(capsule, used)  # ours now: the capsule must not free it
    return x, kind


if framework == "numpy":
    from_dlpack, as_numpy = np.from_dlpack, lambda a: a
    make = lambda n: np.arange(n, dtype=np.float64)
else:
    from_dlpack, as_numpy = torch.from_dlpack, lambda a: a.numpy()
    make = lambda n: torch.arange(n, dtype=torch.float64)
print(f"{framework} {(np if framework == 'numpy' else torch).__version__}, {sys.executable}")

cpu = need(lib.pt_cpu(), "pt_cpu")
shape = (I64 * 2)(2, 3)
flat = need(lib.pt_arange(cpu, PT_F32, 0, 6, 1), "pt_arange")
x = need(lib.pt_reshape(flat, 2, shape), "pt_reshape")
lib.pt_release(flat)

# ---- libportable -> framework ----
producer = Exported(x)
a = from_dlpack(producer)
print(f"exported as {producer.versions[-1]} DLPack")
check(tuple(a.shape) == (2, 3) and as_numpy(a).tolist() == [[0, 1, 2], [3, 4, 5]],
      f"{framework} sees the tensor's values {as_numpy(a).tolist()}")
writable(a)[1, 2] = 100
check(pt_values(x)[5] == 100, f"a write in {framework} is seen by libportable"
      + ("" if writable(a) is a else " (through a writable alias: NumPy < 2 imports read-only)"))
lib.pt_fill_(x, 7)
check(bool((as_numpy(a) == 7).all()), f"a write in libportable (pt_fill_) is seen by {framework}")

# a strided view with an offset: transpose(x)[1:3]
lib.pt_fill_(x, 0)
tr = need(lib.pt_transpose(x, 0, 1), "pt_transpose")
view = need(lib.pt_narrow(tr, 0, 1, 2), "pt_narrow")
v = from_dlpack(Exported(view))
strides = tuple(s // 4 for s in as_numpy(v).strides)
check(tuple(v.shape) == (2, 2) and strides == (1, 3),
      f"the view keeps its strides: shape {tuple(v.shape)}, element strides {strides}")
writable(v)[1, 1] = 42  # x[1][2]
check(pt_values(x).tolist() == [0, 0, 0, 0, 0, 42], f"a write into the {framework} view lands in x[1][2]")
lib.pt_release(view)
lib.pt_release(tr)
lib.pt_release(x)  # the exports hold the storage until the framework lets go
check(as_numpy(a)[1, 2] == 42, f"{framework}'s array outlives pt_release of the tensor")
del a, v

# ---- framework -> libportable ----
base = make(24)
s = base.reshape(4, 6)[::2, 1::2]  # rows 0, 2; columns 1, 3, 5: strided, offset 1 element
y, kind = import_array(s)
print(f"imported as {kind} DLPack")
ystr = lib.pt_tensor_strides(y)
check([ystr[i] for i in range(lib.pt_tensor_ndim(y))] == [12, 2],
      "libportable keeps the framework's strides [12, 2]")
check(pt_values(y).tolist() == as_numpy(s).reshape(-1).tolist(),
      f"libportable reads the strided {framework} view: {pt_values(y).tolist()}")
lib.pt_fill_(y, -1)
expect = [-1.0 if (i // 6) % 2 == 0 and i % 2 == 1 else float(i) for i in range(24)]
check(as_numpy(base).tolist() == expect,
      f"pt_fill_ on the import writes exactly the view's elements of the {framework} array")
s[1, 2] = 99
check(pt_values(y)[5] == 99, f"a write in {framework} is seen through the import")
lib.pt_release(y)  # gives the array back (the producer's deleter)
check(as_numpy(base)[17] == 99, f"the {framework} array is intact after the import's release")

# round trip: a framework view of a libportable tensor, imported back
flat = need(lib.pt_arange(cpu, PT_F64, 0, 4, 1), "pt_arange")
out = from_dlpack(Exported(flat))
back, _ = import_array(writable(out))  # NumPy < 2 re-exports no read-only array: its alias
lib.pt_fill_(back, 5)
check(pt_values(flat).tolist() == [5, 5, 5, 5], "libportable -> framework -> libportable shares memory")
lib.pt_release(back)
lib.pt_release(flat)
del out

# ---- 16-bit floats: f16 as kDLFloat/16 (NumPy and PyTorch), bf16 as
# kDLBfloat/16 (PyTorch only: NumPy has no bfloat16) ----
PT_F16, PT_BF16 = 5, 6
halves = [("f16", PT_F16, np.float16 if framework == "numpy" else torch.float16)]
if framework == "torch":
    halves.append(("bf16", PT_BF16, torch.bfloat16))
lib.pt_cast.restype, lib.pt_cast.argtypes = P, [P, ctypes.c_int]


def widened(x):
    """x's elements as float64 (through pt_cast to f32, a copy)."""
    w = need(lib.pt_cast(x, PT_F32), "pt_cast")
    vals = pt_values(w).tolist()
    lib.pt_release(w)
    return vals


def as_float_list(a):
    return [float(v) for v in (a.float().tolist() if framework == "torch" else a.tolist())]


for name, code, fdtype in halves:
    wide = need(lib.pt_arange(cpu, PT_F32, 0, 4, 1), "pt_arange")
    h = need(lib.pt_cast(wide, code), "pt_cast")
    lib.pt_release(wide)
    a = from_dlpack(Exported(h))
    check(a.dtype == fdtype and as_float_list(a) == [0, 1, 2, 3],
          f"{name} out: {framework} sees dtype {a.dtype} with values {as_float_list(a)}")
    writable(a)[2] = 0.5
    check(widened(h) == [0, 1, 0.5, 3], f"{name} out: a write in {framework} is seen by libportable")
    lib.pt_fill_(h, 1.5)
    check(as_float_list(a) == [1.5] * 4, f"{name} out: pt_fill_ is seen by {framework}")
    lib.pt_release(h)
    del a
    base = (np.arange(6, dtype=np.float16) if framework == "numpy"
            else torch.arange(6, dtype=fdtype))
    y, _ = import_array(base[1::2])
    check(lib.pt_tensor_dtype(y) == code and widened(y) == [1, 3, 5],
          f"{name} in: libportable reads the strided {framework} view as {name}: {widened(y)}")
    lib.pt_fill_(y, -2)
    check(as_float_list(base) == [0, -2, 2, -2, 4, -2],
          f"{name} in: pt_fill_ writes into the {framework} array: {as_float_list(base)}")
    lib.pt_release(y)

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
