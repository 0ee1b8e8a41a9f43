/* Sending a kind the core can also compose (attention, embedding): the
 * caller falls back to its composition when the device says no. */
#include "ops/ops_internal.h"

pt_status pt__run_kind(const char *fn, pt_device *d, pt_op *op) {
    if (pt__capture_now) {
        /* A refused op would end the capture, so the device is asked first.
         * A 16-bit op it refuses runs in f32 (pt__execute widens it), so
         * that is what it is asked about. */
        pt_op asked = *op;
        if (pt_dtype_is_half(op->dtype)) {
            asked.dtype = PT_F32;
            if (asked.out.dtype == op->dtype) asked.out.dtype = PT_F32;
            for (int i = 0; i < asked.n_inputs; ++i)
                if (asked.in[i].dtype == op->dtype) asked.in[i].dtype = PT_F32;
        }
        if (pt__supports_call(fn, d, &asked) != PT_OK) {
            pt_clear_error();
            return PT_ERR_UNSUPPORTED;
        }
    }
    pt_status s = pt__execute(fn, d, op);
    if (s == PT_ERR_UNSUPPORTED) pt_clear_error();
    return s;
}
