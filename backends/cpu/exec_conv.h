/* libportable cpu backend — the convolution kinds (backend.h CONV): exec_conv.c
 * picks the path per call, exec_conv_onednn.c runs oneDNN's, and
 * exec_conv_winograd.c the plugin's own Winograd where oneDNN has none. */
#ifndef PORTABLE_CPU_CONV_H
#define PORTABLE_CPU_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "portable/backend.h"

/* oneDNN's primitive for op (f32, contiguous), built and cached on first
 * use; PT_ERR_UNSUPPORTED with the reason where oneDNN has none. With run
 * false it stops after finding the primitive: supports(). direct_only
 * keeps oneDNN to its direct algorithm; otherwise wide 3x3 stride-1
 * layers ask it for Winograd (exec_conv_onednn.c says where it pays). */
pt_status pt_cpu_conv_onednn(int dev, const pt_op *op, bool run, bool direct_only);
/* Whether op is a CONV2D or CONV2D_BWD_DATA that the plugin's Winograd
 * F(4x4, 3x3) takes: f32, 3x3, stride 1, dilation 1, groups 1, padding
 * 0..2, every operand contiguous NCHW. */
bool pt_cpu_conv_winograd_fits(const pt_op *op);
/* Runs such an op on up to threads of the team (the caller sizes it as for
 * oneDNN); scratch from the core's allocator, whose status a failure to
 * get it returns. exec_conv_winograd.c */
pt_status pt_cpu_conv_winograd(int dev, const pt_op *op, int threads);
/* The widest ISA oneDNN's JIT uses on this CPU ("avx512_core", "avx2", ...;
 * ONEDNN_MAX_CPU_ISA caps it), and "oneDNN <version> <isa>" into dst. */
const char *pt_cpu_onednn_isa(void);
void pt_cpu_onednn_version(char *dst, size_t cap);
/* Copies a [batch, channels, pixels] f32 activation between NCHW and the
 * blocked nChw<blk>c layout (blk 8 or 16, channels a multiple of it): to
 * the blocked one when to_blocked, else back. Split over the team as a
 * copy is. exec_conv_reorder.c */
void pt_cpu_reorder_channel_blocks(const float *src, float *dst, int64_t batch, int64_t channels, int64_t pixels,
                                   int blk, bool to_blocked);

#endif
