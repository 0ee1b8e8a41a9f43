/* libportable cpu backend — which library runs f32 matrix products.
 *
 * OpenBLAS picks its kernels once, when it is loaded, from the CPU's model
 * number. A CPU it does not know (a new model, or a virtual machine that
 * hides the model, as a Firecracker guest on a Xeon did: "Intel(R) Xeon(R)
 * Processor") gets its oldest x86-64 kernels ("Prescott", SSE3), about five
 * times slower than the AVX2 or AVX-512 ones the CPU runs. By then it is too
 * late to set OPENBLAS_CORETYPE, so f32 products go to oneDNN's sgemm
 * instead, whose JIT picks the ISA from the CPU's feature flags, and a
 * warning says how to give OpenBLAS its right kernels. f64 stays on
 * OpenBLAS (oneDNN has no dgemm).
 *
 * PORTABLE_CPU_GEMM=auto (default) | openblas | onednn forces either path,
 * so tests run both on any machine. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PT_CPU_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef PT_CPU_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "internal.h"

bool pt_cpu_gemm_onednn;
static char g_note[160];

/* OpenBLAS core names whose kernels predate AVX2 + FMA. */
static bool core_predates_avx2(const char *core) {
    static const char *const old[] = {"prescott", "core2",     "penryn",    "dunnington", "nehalem",
                                      "atom",     "sandybridge", "opteron", "opteron_sse3", "barcelona",
                                      "bobcat",   "bulldozer", "piledriver", "katmai",    "coppermine",
                                      "northwood", "banias",   "athlon",    "unknown",    NULL};
    char lower[32];
    size_t n = 0;
    for (; core[n] && n + 1 < sizeof lower; ++n) lower[n] = (char)tolower((unsigned char)core[n]);
    lower[n] = '\0';
    for (int i = 0; old[i]; ++i)
        if (strcmp(lower, old[i]) == 0) return true;
    return false;
}

static bool cpu_has_avx2_fma(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

void pt_cpu_gemm_choose(void) {
    static const char *const paths[] = {"auto", "openblas", "onednn", NULL};
    const int forced = PT_HOST_HAS(pt_cpu_host, env_choice)
                           ? pt_cpu_host->env_choice("PORTABLE_CPU_GEMM", paths, 0)
                           : 0;
    const char *core = "";
#if defined(PT_CPU_HAVE_CBLAS) && defined(PT_CPU_HAVE_OPENBLAS_CONFIG)
    core = openblas_get_corename();
    if (!core) core = "";
#endif
    const bool weak = core[0] && core_predates_avx2(core) && cpu_has_avx2_fma();
#ifdef PT_CPU_HAVE_ONEDNN
    pt_cpu_gemm_onednn = forced == 2 || (forced == 0 && weak);
    if (pt_cpu_gemm_onednn)
        snprintf(g_note, sizeof g_note, "f32 GEMM oneDNN%s%s%s", weak ? " (OpenBLAS chose " : "",
                 weak ? core : "", weak ? " kernels)" : "");
#else
    if (forced == 2 && PT_HOST_HAS(pt_cpu_host, log))
        pt_cpu_host->log(PT_LOG_WARN, "cpu: PORTABLE_CPU_GEMM=onednn, but this plugin was built without "
                                      "oneDNN (install libdnnl-dev and rebuild): OpenBLAS runs f32 products");
#endif
    if (weak && PT_HOST_HAS(pt_cpu_host, log))
        pt_cpu_host->log(PT_LOG_WARN,
                         "cpu: OpenBLAS runs its %s kernels (%s), though this CPU has AVX2 and FMA: matrix "
                         "products run several times slower than they could (%s). Set "
                         "OPENBLAS_CORETYPE=Haswell (AVX2) or SkylakeX (AVX-512) in the environment before "
                         "the program starts",
                         core,
                         getenv("OPENBLAS_CORETYPE") ? "OPENBLAS_CORETYPE chose them"
                                                     : "it does not know this CPU's model",
                         pt_cpu_gemm_onednn ? "f32 products go to oneDNN instead; f64 stays on OpenBLAS"
                         : forced == 1      ? "PORTABLE_CPU_GEMM=openblas keeps them there"
                                            : "no oneDNN in this build to take them over");
}

const char *pt_cpu_gemm_note(void) { return g_note; }

#ifdef PT_CPU_HAVE_ONEDNN
bool pt_cpu_onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
#ifdef _OPENMP
    /* Each call runs on the calling thread: exec_matmul.c already splits a
     * product across the plugin's team (as it does for OpenBLAS, which runs
     * single-threaded), and oneDNN opening a parallel region of its own for
     * every small product made the MLP epoch four times slower on two
     * threads than on one. The sanitizer builds keep their products off the
     * team as well (PT_CPU_ONEDNN_ONE_THREAD, CMakeLists.txt says why). */
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    const bool ok =
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == dnnl_success;
#ifdef _OPENMP
    omp_set_num_threads(before);
#endif
    return ok;
}
#endif
