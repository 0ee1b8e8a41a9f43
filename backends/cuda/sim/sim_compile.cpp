/* libportable CUDA backend — the simulator's compiler of fused chains'
 * kernels (fused.h: ptcu_compile), standing in for NVRTC (launch_nvrtc.c):
 * the same generated source, with a prelude that makes CUDA's keywords and
 * thread coordinates plain C++ (as tests/kernel_emulation.h does for the
 * eager kernels), built by the host C++ compiler into a shared object. The
 * image is that object's bytes; sim_library.cpp loads it with dlopen and
 * runs the kernel's host entry over every thread of the grid.
 *
 * The compiler and its flags are the ones CMake built the eager kernels
 * with (PTCU_SIM_CXX, PTCU_SIM_CXX_FLAGS, recorded at build time), so both
 * round alike; the environment variable PTCU_SIM_CXX names another. Without
 * a working compiler fused chains are refused with the reason, and the core
 * replays their ops one by one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "fused.h"

#ifndef PTCU_SIM_CXX
#define PTCU_SIM_CXX "c++"
#endif
#ifndef PTCU_SIM_CXX_FLAGS
#define PTCU_SIM_CXX_FLAGS "-O2"
#endif

namespace {

const char kPrelude[] =
    "/* the simulator's prelude (sim_compile.cpp) */\n"
    "#define __global__\n#define __device__\n#define __host__\n#define __forceinline__ inline\n"
    "#define __launch_bounds__(...)\n"
    "struct ptcu_sim_dim3 { unsigned x, y, z; };\n"
    "static thread_local ptcu_sim_dim3 blockIdx, threadIdx, blockDim, gridDim;\n"
    "#line 1 \"ptcu_fused.cu\"\n";

/* Runs every thread of the grid in turn: the generated kernels use no
 * barriers, so any order is one the GPU may choose. */
const char kEpilogue[] =
    "\n/* the simulator's entry (sim_compile.cpp) */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) const unsigned long ptcu_fused_kernel_param_bytes =\n"
    "    sizeof(ptcu_fused_params);\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) void ptcu_fused_kernel_host(unsigned grid, unsigned block,\n"
    "                                                                              const void *params) {\n"
    "    gridDim = {grid, 1, 1};\n    blockDim = {block, 1, 1};\n"
    "    for (unsigned b = 0; b < grid; ++b)\n"
    "        for (unsigned t = 0; t < block; ++t) {\n"
    "            blockIdx = {b, 0, 0};\n            threadIdx = {t, 0, 0};\n"
    "            ptcu_fused_kernel(*(const ptcu_fused_params *)params);\n"
    "        }\n}\n";

const char *compiler() {
    const char *v = getenv("PTCU_SIM_CXX");
    return v && *v ? v : PTCU_SIM_CXX;
}

bool write_file(const std::string &path, const char *text) {
    FILE *f = fopen(path.c_str(), "wb");
    if (!f) return false;
    const size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    return (fclose(f) == 0) && ok;
}

bool read_file(const std::string &path, void **data, size_t *size) {
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) return false;
    std::string bytes;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    fclose(f);
    if (bytes.empty() || !(*data = malloc(bytes.size()))) return false;
    memcpy(*data, bytes.data(), bytes.size());
    *size = bytes.size();
    return true;
}

/* rm -r of the private folder this file made. */
void remove_dir(const std::string &dir) {
    for (int i = 0; i < ptcu_n_sources; ++i) unlink((dir + "/" + ptcu_sources[i].name).c_str());
    for (const char *f : {"/fused.cpp", "/fused.so", "/log.txt"}) unlink((dir + f).c_str());
    rmdir((dir + "/portable").c_str());
    rmdir(dir.c_str());
}

/* A shell word: 'text' with each ' spelled '\''. */
std::string quoted(const std::string &s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

} /* namespace */

extern "C" const char *ptcu_compiler_identity(void) {
    static thread_local std::string id;
    id = std::string(compiler()) + " " + PTCU_SIM_CXX_FLAGS + " -fPIC -shared (simulator)";
    return id.c_str();
}

extern "C" pt_status ptcu_compile(const char *source, int major, int minor, void **image, size_t *size) {
    (void)major;
    (void)minor;
    const char *tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/ptcu-fused-XXXXXX";
    if (!mkdtemp(&dir[0]))
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: cannot make a folder in %s to compile a kernel in",
                         tmp ? tmp : "/tmp");
    bool ok = mkdir((dir + "/portable").c_str(), 0700) == 0;
    for (int i = 0; ok && i < ptcu_n_sources; ++i) ok = write_file(dir + "/" + ptcu_sources[i].name, ptcu_sources[i].text);
    ok = ok && write_file(dir + "/fused.cpp", (std::string(kPrelude) + source + kEpilogue).c_str());
    if (!ok) {
        remove_dir(dir);
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: cannot write a kernel's source under %s", dir.c_str());
    }
    const std::string cmd = quoted(compiler()) + " " + PTCU_SIM_CXX_FLAGS + " -fPIC -shared -w -I" + quoted(dir) +
                            " -o " + quoted(dir + "/fused.so") + " " + quoted(dir + "/fused.cpp") + " > " +
                            quoted(dir + "/log.txt") + " 2>&1";
    const int rc = system(cmd.c_str());
    pt_status s = PT_OK;
    if (rc != 0 || !read_file(dir + "/fused.so", image, size)) {
        void *log = nullptr;
        size_t n = 0;
        std::string text = read_file(dir + "/log.txt", &log, &n) ? std::string((const char *)log, n) : "no output";
        free(log);
        s = ptcu_fail(PT_ERR_UNSUPPORTED,
                      "fused: the host C++ compiler %s could not build a generated kernel (exit status %d; set "
                      "PTCU_SIM_CXX to another): %.1500s",
                      compiler(), rc, text.c_str());
    }
    remove_dir(dir);
    return s;
}
