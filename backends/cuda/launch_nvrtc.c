/* libportable CUDA backend — the compiler of fused chains' kernels: NVRTC,
 * the toolkit's run-time compiler (as PyTorch's jiterator and CuPy use it).
 *
 * Loaded with dlopen at the first fused chain, so the plugin loads and runs
 * every eager op where libnvrtc is absent; there fused chains are refused
 * with the reason and the core replays their ops one by one. The library
 * is looked for as libnvrtc.so.<the toolkit's major> (through the plugin's
 * RUNPATH, then the usual search), then where the build found it.
 *
 * The source is compiled to machine code for the device's exact
 * architecture (sm_XY) when this NVRTC knows it, else to PTX for the newest
 * one it knows, which the driver compiles. Accurate math as the eager
 * kernels (no fast-math), and the same contraction rules (--fmad=true is
 * nvcc's default). NVRTC has no standard library: fused_nvrtc_std.h
 * stands in for the few headers the sources include. */
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fused.h"

#ifndef PTCU_NVRTC_PATH
#define PTCU_NVRTC_PATH "libnvrtc.so"
#endif

typedef nvrtcResult (*version_fn)(int *, int *);
typedef nvrtcResult (*num_archs_fn)(int *);
typedef nvrtcResult (*archs_fn)(int *);
typedef nvrtcResult (*create_fn)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
typedef nvrtcResult (*destroy_fn)(nvrtcProgram *);
typedef nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*size_fn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*get_fn)(nvrtcProgram, char *);
typedef const char *(*error_string_fn)(nvrtcResult);

static struct nvrtc {
    bool loaded;
    char why[512];
    int major, minor;
    int archs[64], n_archs;
    char identity[128];
    create_fn create;
    destroy_fn destroy;
    compile_fn compile;
    size_fn log_size, cubin_size, ptx_size;
    get_fn log, cubin, ptx;
    error_string_fn error_string;
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void *symbol(void *lib, const char *name, bool *ok) {
    void *p = dlsym(lib, name);
    if (!p) *ok = false;
    return p;
}

static void load(void) {
    char soname[64];
    snprintf(soname, sizeof soname, "libnvrtc.so.%d", CUDART_VERSION / 1000);
    const char *tried[] = {soname, PTCU_NVRTC_PATH, "libnvrtc.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof tried / sizeof *tried && !lib; ++i) lib = dlopen(tried[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(nv.why, sizeof nv.why, "NVRTC is not installed (%s, %s: %s); install the CUDA toolkit's NVRTC "
                 "(e.g. the cuda-nvrtc package) to run fused chains as one kernel", soname, PTCU_NVRTC_PATH, dlerror());
        return;
    }
    bool ok = true;
    version_fn version = (version_fn)symbol(lib, "nvrtcVersion", &ok);
    num_archs_fn num_archs = (num_archs_fn)symbol(lib, "nvrtcGetNumSupportedArchs", &ok);
    archs_fn archs = (archs_fn)symbol(lib, "nvrtcGetSupportedArchs", &ok);
    nv.create = (create_fn)symbol(lib, "nvrtcCreateProgram", &ok);
    nv.destroy = (destroy_fn)symbol(lib, "nvrtcDestroyProgram", &ok);
    nv.compile = (compile_fn)symbol(lib, "nvrtcCompileProgram", &ok);
    nv.log_size = (size_fn)symbol(lib, "nvrtcGetProgramLogSize", &ok);
    nv.log = (get_fn)symbol(lib, "nvrtcGetProgramLog", &ok);
    nv.cubin_size = (size_fn)symbol(lib, "nvrtcGetCUBINSize", &ok);
    nv.cubin = (get_fn)symbol(lib, "nvrtcGetCUBIN", &ok);
    nv.ptx_size = (size_fn)symbol(lib, "nvrtcGetPTXSize", &ok);
    nv.ptx = (get_fn)symbol(lib, "nvrtcGetPTX", &ok);
    nv.error_string = (error_string_fn)symbol(lib, "nvrtcGetErrorString", &ok);
    if (!ok || version(&nv.major, &nv.minor) != NVRTC_SUCCESS || num_archs(&nv.n_archs) != NVRTC_SUCCESS ||
        nv.n_archs < 1 || nv.n_archs > (int)(sizeof nv.archs / sizeof *nv.archs) ||
        archs(nv.archs) != NVRTC_SUCCESS) {
        snprintf(nv.why, sizeof nv.why, "the NVRTC found lacks a function this plugin calls or does not answer "
                 "(needs CUDA 11.2 or newer)");
        dlclose(lib);
        return;
    }
    snprintf(nv.identity, sizeof nv.identity, "nvrtc %d.%d -std=c++17 --fmad=true", nv.major, nv.minor);
    nv.loaded = true;
}

const char *ptcu_compiler_identity(void) {
    pthread_once(&nv_once, load);
    return nv.loaded ? nv.identity : "none";
}

/* The named header of ptcu_sources (launch_fused_sources.c, embedded at build time). */
static const char *source_text(const char *name) {
    for (int i = 0; i < ptcu_n_sources; ++i)
        if (!strcmp(ptcu_sources[i].name, name)) return ptcu_sources[i].text;
    return "";
}

/* The image of a compiled program: machine code or PTX (NUL-terminated). */
static pt_status take_image(nvrtcProgram prog, bool cubin, void **image, size_t *size) {
    size_t n = 0;
    if ((cubin ? nv.cubin_size : nv.ptx_size)(prog, &n) != NVRTC_SUCCESS || n == 0 || !(*image = malloc(n)))
        return ptcu_fail(PT_ERR_BACKEND, "fused: NVRTC gave no %s for a compiled kernel", cubin ? "CUBIN" : "PTX");
    if ((cubin ? nv.cubin : nv.ptx)(prog, *image) != NVRTC_SUCCESS) {
        free(*image);
        return ptcu_fail(PT_ERR_BACKEND, "fused: NVRTC could not copy out a compiled kernel");
    }
    *size = n;
    return PT_OK;
}

pt_status ptcu_compile(const char *source, int major, int minor, void **image, size_t *size) {
    pthread_once(&nv_once, load);
    if (!nv.loaded) return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: %s", nv.why);
    /* The exact architecture as machine code, or PTX for the newest below it. */
    const int want = major * 10 + minor;
    int arch = 0;
    bool exact = false;
    for (int i = 0; i < nv.n_archs; ++i) {
        if (nv.archs[i] == want) exact = true;
        if (nv.archs[i] <= want && nv.archs[i] > arch) arch = nv.archs[i];
    }
    if (!arch)
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: NVRTC %d.%d cannot compile for sm_%d (its oldest is sm_%d)",
                         nv.major, nv.minor, want, nv.archs[0]);
    char arch_opt[48];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s_%d", exact ? "sm" : "compute", exact ? want : arch);
    const char *opts[] = {arch_opt, "-std=c++17", "--fmad=true"};
    const char *names[] = {"k_values.cuh", "k_reduce_acc.cuh", "fused_abi.h", "portable/ew_math.h",
                           "portable/half.h", "portable/numeric_rules.h", "stdint.h", "type_traits", "math.h"};
    const char *texts[sizeof names / sizeof *names];
    const char *std_shim = source_text("fused_nvrtc_std.h");
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        texts[i] = !strcmp(names[i], "math.h") ? "" : i >= 6 ? std_shim : source_text(names[i]);
    nvrtcProgram prog;
    nvrtcResult r = nv.create(&prog, source, "ptcu_fused.cu", (int)(sizeof names / sizeof *names), texts, names);
    if (r != NVRTC_SUCCESS) return ptcu_fail(PT_ERR_BACKEND, "fused: nvrtcCreateProgram: %s", nv.error_string(r));
    r = nv.compile(prog, (int)(sizeof opts / sizeof *opts), opts);
    pt_status s = PT_OK;
    if (r != NVRTC_SUCCESS) {
        size_t n = 0;
        char *log = nv.log_size(prog, &n) == NVRTC_SUCCESS && n ? malloc(n) : NULL;
        if (log && nv.log(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
        s = ptcu_fail(PT_ERR_BACKEND, "fused: NVRTC %d.%d could not compile a generated kernel for %s (%s): %.1500s",
                      nv.major, nv.minor, arch_opt, nv.error_string(r), log ? log : "no log");
        free(log);
    } else {
        s = take_image(prog, exact, image, size);
    }
    nv.destroy(&prog);
    return s;
}
