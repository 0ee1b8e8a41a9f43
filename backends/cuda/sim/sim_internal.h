/* libportable CUDA backend — what the simulated runtime (sim_runtime.cpp)
 * offers the simulated cuBLAS (sim_blas.cpp). C++ only, test builds only. */
#ifndef PTCU_SIM_INTERNAL_H
#define PTCU_SIM_INTERNAL_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

/* Whether [p, p + bytes) lies inside one cudaMalloc allocation of device. */
bool ptcu_sim_device_range(int device, const void *p, size_t bytes);
/* Whether stream is capturing (cudaStreamBeginCapture). */
bool ptcu_sim_stream_capturing(cudaStream_t stream);
/* The device cudaSetDevice last selected on this thread. */
int ptcu_sim_current_device(void);
/* A status code's name and description, as the runtime and cuBLAS report
 * them; PTCU_SIM_CODE(c, text) writes a row. */
template <class Code> struct ptcu_sim_code_text {
    Code code;
    const char *name, *text;
};
#define PTCU_SIM_CODE(c, text) {c, #c, text}

/* The row of code in table, or fallback for a code it does not list. */
template <class Code, size_t N>
const ptcu_sim_code_text<Code> &ptcu_sim_text_of(const ptcu_sim_code_text<Code> (&table)[N], Code code,
                                                 const ptcu_sim_code_text<Code> &fallback) {
    for (const ptcu_sim_code_text<Code> &row : table)
        if (row.code == code) return row;
    return fallback;
}

namespace ptcu_emu {
/* Queues work on stream, after everything queued on it before: kernel
 * launches (declared again in ../tests/kernel_emulation.h) and cuBLAS calls. */
void submit(cudaStream_t stream, std::function<void()> work);
}

#endif
