"""libportable for Python: tensors and small nets on the cpu, CUDA and OpenCL.

The names follow the "GPUs" chapter of Dive into Deep Learning (PyTorch
edition): cpu(), gpu(i), num_gpus(), try_gpu(i), try_all_gpus(), tensors
with a .device, .to(device), synchronize(device). PORTABLE_BACKEND picks the
backend (auto, cpu, cuda, opencl).
"""
from . import nn, optim
from ._errors import (BackendError, BackendLoadError, DTypeError, DeviceMismatchError, Error,
                      InvalidArgumentError, NoDeviceError, OutOfMemoryError, ShapeError, UnsupportedError)
from ._ffi import library_path
from ._dlpack import from_dlpack
from .autograd import is_grad_enabled, no_grad
from ._device import (backends, cpu, default_device, device, empty_cache, gpu, memory_stats, num_gpus,
                     synchronize, try_all_gpus, try_gpu)
from .dtypes import bfloat16, dtype, float16, float32, float64, int32, int64, uint8
from .serialization import load, save
from .tensor import (Tensor, arange, cat, empty, from_numpy, full, manual_seed, matmul, ones, rand, randn,
                     stack, tensor, where, zeros)
from .version import __version__, library_version

__all__ = [
    "nn", "optim", "Error", "BackendError", "BackendLoadError", "DTypeError", "DeviceMismatchError",
    "InvalidArgumentError", "NoDeviceError", "OutOfMemoryError", "ShapeError", "UnsupportedError",
    "library_path", "from_dlpack", "is_grad_enabled", "no_grad", "backends", "cpu", "default_device",
    "device", "empty_cache", "gpu", "memory_stats", "num_gpus", "synchronize", "try_all_gpus", "try_gpu",
    "bfloat16", "dtype", "float16", "float32", "float64", "int32", "int64", "uint8", "load", "save",
    "Tensor", "arange", "cat", "empty", "from_numpy", "full", "manual_seed", "matmul", "ones", "rand",
    "randn", "stack", "tensor", "where", "zeros", "__version__", "library_version",
]
