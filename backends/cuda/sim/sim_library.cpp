/* libportable CUDA backend — the simulated runtime's libraries: what
 * cudaLibraryLoadData, cudaLibraryGetKernel, cudaLaunchKernel and
 * cudaLibraryUnload do for the images sim_compile.cpp makes (shared objects
 * holding a kernel's host entry, <name>_host, and its parameter size,
 * <name>_param_bytes). A launch copies the parameter at the call, as CUDA
 * does, and runs on the stream after everything queued before it
 * (ptcu_emu::submit), so a fused kernel orders with the eager ones. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sim_internal.h"

typedef void (*ptcu_sim_host_entry)(unsigned grid, unsigned block, const void *params);

struct CUkern_st {
    ptcu_sim_host_entry entry = nullptr;
    size_t param_bytes = 0;
};
struct CUlib_st {
    void *so = nullptr;
    std::vector<std::unique_ptr<CUkern_st>> kernels; /* handles live as long as their library */
};

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, enum cudaJitOption *, void **, unsigned int,
                                enum cudaLibraryOption *, void **, unsigned int) {
    if (!library || !code) return cudaErrorInvalidValue;
    /* The image's size (cudaLibraryLoadData takes none: CUBIN and PTX say
     * theirs): the section header table ends the file GNU ld writes. */
    const unsigned char *elf = (const unsigned char *)code;
    if (memcmp(elf, "\177ELF", 4) != 0 || elf[4] != 2) return cudaErrorInvalidKernelImage;
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, elf + 0x28, 8);
    memcpy(&shentsize, elf + 0x3a, 2);
    memcpy(&shnum, elf + 0x3c, 2);
    const size_t bytes = (size_t)shoff + (size_t)shentsize * shnum;
    /* dlopen wants a file, under a name of its own: it hands back the
     * library already loaded under a name it is given again. */
    const char *tmp = getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/ptcu-fused-XXXXXX.so";
    const int fd = mkstemps(&path[0], 3);
    if (fd < 0) return cudaErrorSharedObjectInitFailed;
    const bool ok = write(fd, code, bytes) == (ssize_t)bytes;
    close(fd);
    void *so = ok ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    unlink(path.c_str());
    if (!so) return cudaErrorSharedObjectInitFailed;
    *library = new CUlib_st;
    (*library)->so = so;
    return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library, const char *name) {
    if (!kernel || !library || !name) return cudaErrorInvalidValue;
    void *entry = dlsym(library->so, (std::string(name) + "_host").c_str());
    const unsigned long *bytes = (const unsigned long *)dlsym(library->so, (std::string(name) + "_param_bytes").c_str());
    if (!entry || !bytes) return cudaErrorSymbolNotFound;
    library->kernels.push_back(std::make_unique<CUkern_st>());
    *kernel = library->kernels.back().get();
    (*kernel)->entry = (ptcu_sim_host_entry)entry;
    (*kernel)->param_bytes = *bytes;
    return cudaSuccess;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
    if (!library) return cudaErrorInvalidValue;
    dlclose(library->so);
    delete library;
    return cudaSuccess;
}

/* Only kernels of loaded libraries come here: one parameter each. */
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream) {
    const CUkern_st *k = (const CUkern_st *)func;
    if (!k || !args || shared != 0 || grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1)
        return cudaErrorInvalidValue;
    auto params = std::make_shared<std::vector<unsigned char>>((const unsigned char *)args[0],
                                                               (const unsigned char *)args[0] + k->param_bytes);
    const ptcu_sim_host_entry entry = k->entry;
    const unsigned g = grid.x, b = block.x;
    ptcu_emu::submit(stream, [entry, g, b, params]() { entry(g, b, params->data()); });
    return cudaSuccess;
}
