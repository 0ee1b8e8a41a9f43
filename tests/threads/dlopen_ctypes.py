"""libportable through Python's ctypes: the library loads
with dlopen into a process that did not link it, a tensor made on the cpu
with pt_from_data reads back with pt_to_host, an op runs, and an error comes
back with its message. Usage: dlopen_ctypes.py <path of libportable.so>."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.pt_cpu.restype = ctypes.c_void_p
lib.pt_dtype_name.restype = ctypes.c_char_p
lib.pt_dtype_name.argtypes = [ctypes.c_int]
lib.pt_from_data.restype = ctypes.c_void_p
lib.pt_from_data.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
lib.pt_to_host.restype = ctypes.c_int
lib.pt_to_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
lib.pt_add.restype = ctypes.c_void_p
lib.pt_add.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib.pt_reshape.restype = ctypes.c_void_p
lib.pt_reshape.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
lib.pt_release.argtypes = [ctypes.c_void_p]
lib.pt_last_error.restype = ctypes.c_char_p
lib.pt_last_status.restype = ctypes.c_int


def fail(what):
    print("FAILED: %s (last error: %s)" % (what, lib.pt_last_error().decode()))
    sys.exit(1)


f32 = next(t for t in range(16) if lib.pt_dtype_name(t) == b"f32")
cpu = lib.pt_cpu()
if not cpu:
    fail("pt_cpu() returned NULL")

values = [0.5, -1.25, 3.0, 1e-3, 7.75, -0.0]
shape = (ctypes.c_int64 * 2)(2, 3)
data = (ctypes.c_float * 6)(*values)
x = lib.pt_from_data(cpu, f32, 2, shape, data)
if not x:
    fail("pt_from_data")
back = (ctypes.c_float * 6)()
if lib.pt_to_host(x, back, ctypes.sizeof(back)) != 0:
    fail("pt_to_host")
if list(back) != [ctypes.c_float(v).value for v in values]:
    fail("read back %s, wrote %s" % (list(back), values))

y = lib.pt_add(x, x)
if not y or lib.pt_to_host(y, back, ctypes.sizeof(back)) != 0:
    fail("pt_add")
if list(back) != [ctypes.c_float(2 * v).value for v in values]:
    fail("x + x read back as %s" % list(back))

bad = (ctypes.c_int64 * 1)(7)
if lib.pt_reshape(x, 1, bad):
    fail("pt_reshape of 6 elements to [7] succeeded")
message = lib.pt_last_error().decode()
if "pt_reshape" not in message or lib.pt_last_status() == 0:
    fail("the reshape error names pt_reshape: %r" % message)

lib.pt_release(y)
lib.pt_release(x)
print("ctypes: pt_from_data / pt_to_host / pt_add / errors ok")
