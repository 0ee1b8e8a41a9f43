/** @file
 * libportable — DLPack: sharing tensors with NumPy, PyTorch, CuPy, JAX, ...
 * without copying.
 *
 * Include this header on its own (portable.h does not, so that programs
 * that do not use DLPack do not need dlpack.h): it brings the official
 * dlpack.h (v1.1, vendored from github.com/dmlc/dlpack under
 * third_party/dlpack and installed as <portable/dlpack/dlpack.h>).
 *
 * Export: pt_to_dlpack(x) hands out x's memory as it is (shape, strides in
 * elements, byte offset): cpu tensors as kDLCPU, cpu tensors in pinned
 * memory a CUDA device allocated as kDLCUDAHost, cuda tensors as kDLCUDA
 * (device_id: the cuda:N index), opencl tensors as kDLOpenCL (data is the
 * cl_mem, byte_offset the offset inside it; device_id: the opencl:N index).
 * The device is synchronised first, so the data is ready when the consumer
 * reads it. The storage stays alive until the consumer calls the managed
 * tensor's deleter, whatever happens to x meanwhile (release it freely).
 * Writes on either side are seen on the other: it is the same memory.
 *
 * Import: pt_from_dlpack(m, flags) makes a tensor over m's memory without
 * copying, on the matching device: kDLCPU and kDLCUDAHost on cpu:0, kDLCUDA
 * on `cuda:<device_id>`, kDLOpenCL only for tensors libportable exported
 * itself (a cl_mem of another OpenCL context cannot be used). Strides
 * (NULL: C order) and byte_offset are honoured. On success the tensor owns
 * m: its deleter runs (once) when the last tensor viewing that memory is
 * released. On failure NULL is returned with the reason, and m is untouched
 * and still the caller's (call m->deleter to give it back).
 *
 * What cannot be represented is refused with PT_ERR_UNSUPPORTED (or
 * PT_ERR_DTYPE / PT_ERR_SHAPE / PT_ERR_INVALID_ARGUMENT) naming the value and
 * what would work: other dtypes (bool, complex, int8/16, uint16..64,
 * lanes != 1; f16 is kDLFloat/16 and bf16 kDLBfloat/16 both ways), more
 * than PT_MAX_DIMS dims, negative strides, misaligned data, a DLPack major
 * version other than 1, devices libportable has no backend for; and
 * read-only tensors unless flags has PT_DLPACK_READ_ONLY_OK (libportable
 * cannot stop in-place ops writing: the caller promises not to). */
#ifndef PORTABLE_DLPACK_H
#define PORTABLE_DLPACK_H

#include "dlpack/dlpack.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** pt_from_dlpack flags. */
#define PT_DLPACK_READ_ONLY_OK 1u /**< accept DLPACK_FLAG_BITMASK_READ_ONLY tensors */

/** The current spec's managed tensor (version 1.1, flags 0): NULL with the
 * error set for a NULL x or a tensor it cannot represent (see above). */
PT_API struct DLManagedTensorVersioned *pt_to_dlpack(pt_tensor *x);
/** The same as the legacy DLManagedTensor that consumers from before
 * DLPack 1.0 take (NumPy < 2.1, PyTorch < 2.4). */
PT_API DLManagedTensor *pt_to_dlpack_legacy(pt_tensor *x);

/** A tensor over m's memory (see above). flags: 0 or PT_DLPACK_READ_ONLY_OK. */
PT_API pt_tensor *pt_from_dlpack(struct DLManagedTensorVersioned *m, unsigned flags);
/** The same from a legacy DLManagedTensor (it has no read-only flag). */
PT_API pt_tensor *pt_from_dlpack_legacy(DLManagedTensor *m, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
