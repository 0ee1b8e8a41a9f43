/* libportable cpu backend — CONV2D, CONV2D_BWD_DATA, CONV2D_BWD_WEIGHT
 * (backend.h, CONV family): which path a convolution takes.
 *
 * oneDNN runs every f32 convolution it has a primitive for; the rest (f64,
 * which oneDNN lacks, and any shape it refuses) is refused here, so the core
 * composes it from IM2COL and MATMUL, per call. PORTABLE_CPU_CONV=im2col
 * refuses them all, =onednn-direct keeps oneDNN to its direct algorithm
 * (the one PyTorch asks it for), and =onednn, the default, adds Winograd
 * on the wide layers where it is faster, so tests run every path on any
 * machine. A plugin built without oneDNN refuses every call. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec_conv.h"
#include "internal.h"

static bool im2col_forced, direct_forced;

static void read_switch(void) {
    static const char *const paths[] = {"onednn", "im2col", "onednn-direct", NULL};
    const int path = PT_HOST_HAS(pt_cpu_host, env_choice) ? pt_cpu_host->env_choice("PORTABLE_CPU_CONV", paths, 0)
                                                          : 0;
    im2col_forced = path == 1;
    direct_forced = path == 2;
}

pt_status pt_cpu_conv(int dev, const pt_op *op, bool run) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_switch);
    if (op->n_inputs != 2 || op->in[0].ndim != 4 || op->in[1].ndim != 4 || op->out.ndim != 4 || op->count < 1)
        return pt_cpu_bad_op(op, "CONV wants two 4-D inputs, a 4-D out and groups >= 1");
    if (im2col_forced)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                           "%s: PORTABLE_CPU_CONV=im2col sends convolutions to im2col and a GEMM",
                           pt_op_name(op->kind));
#ifdef PT_CPU_HAVE_ONEDNN
    if (op->dtype != PT_F32)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                           "%s in %s: oneDNN convolves f32 only; pt_f_conv2d composes it from im2col and a GEMM",
                           pt_op_name(op->kind), pt_dtype_table_name(op->dtype));
    return pt_cpu_conv_onednn(dev, op, run, direct_forced);
#else
    (void)dev;
    (void)run;
    return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                       "%s: this plugin was built without oneDNN (install libdnnl-dev and rebuild); pt_f_conv2d "
                       "composes it from im2col and a GEMM",
                       pt_op_name(op->kind));
#endif
}
