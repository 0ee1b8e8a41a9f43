/* Losses, as compositions of differentiable ops (so autograd needs no rules
 * of its own for them), mean-reduced to 0-D tensors. */
#include <stdio.h>
#include <string.h>

#include "nn/nn_internal.h"

/* A step of a loss failed and its error names that op ("pt_gather: ...").
 * Re-states it as the loss's error, keeping the status and the step's
 * words, with what (if not NULL) saying what the caller got wrong. */
static void restate_error(const char *fn, const char *what) {
    if (!what) {
        pt__error_as(fn);
        return;
    }
    pt_status s = pt_last_status();
    if (s == PT_OK) return;
    char step[480];
    snprintf(step, sizeof step, "%s", pt_last_error());
    if (strncmp(step, fn, strlen(fn)) == 0) return; /* already ours */
    pt__error(s, fn, "%s (%s)", what, step);
}

pt_tensor *pt_mse_loss(pt_tensor *pred, pt_tensor *target) {
    static const char fn[] = "pt_mse_loss";
    if (!pred) return pt__null_input("pt_mse_loss", "pred");
    if (!target) return pt__null_input("pt_mse_loss", "target");
    bool same = pred->ndim == target->ndim;
    for (int i = 0; same && i < pred->ndim; ++i) same = pred->shape[i] == target->shape[i];
    if (!same) {
        char a[200], b[200];
        pt__error(PT_ERR_SHAPE, fn, "pred %s and target %s differ in shape (reshape one to match)",
                  pt_tensor_describe(pred, a, sizeof a), pt_tensor_describe(target, b, sizeof b));
        return NULL;
    }
    if (pred->dtype != target->dtype || !pt__grad_float(pred->dtype)) {
        char a[200], b[200];
        pt__error(PT_ERR_DTYPE, fn,
                  "pred %s and target %s must have the same float dtype (f32 or f64); cast one "
                  "with pt_cast()",
                  pt_tensor_describe(pred, a, sizeof a), pt_tensor_describe(target, b, sizeof b));
        return NULL;
    }
    pt_tensor *pair[2] = {pred, target};
    if (pt__check_same_device(fn, 2, pair)) return NULL;
    pt_tensor *diff = pt_sub(pred, target);
    pt_tensor *sq = pt_mul(diff, diff);
    pt_tensor *loss = pt_mean(sq, PT_ALL, false);
    pt_release(diff);
    pt_release(sq);
    if (!loss) restate_error(fn, NULL);
    return loss;
}

pt_tensor *pt_cross_entropy(pt_tensor *logits, pt_tensor *labels) {
    static const char fn[] = "pt_cross_entropy";
    if (!logits) return pt__null_input("pt_cross_entropy", "logits");
    if (!labels) return pt__null_input("pt_cross_entropy", "labels");
    char a[200], b[200];
    if (!pt__grad_float(logits->dtype)) {
        pt__error(PT_ERR_DTYPE, fn, "logits are %s; they must be f32/f64 [N, C] (cast with pt_cast())",
                  pt_tensor_describe(logits, a, sizeof a));
        return NULL;
    }
    if (logits->ndim != 2) {
        pt__error(PT_ERR_SHAPE, fn, "logits are %s; they must be f32/f64 [N, C]",
                  pt_tensor_describe(logits, a, sizeof a));
        return NULL;
    }
    if (labels->dtype != PT_I32 && labels->dtype != PT_I64) {
        pt__error(PT_ERR_DTYPE, fn, "labels are %s; they must be i32 or i64 class indices",
                  pt_tensor_describe(labels, b, sizeof b));
        return NULL;
    }
    if (labels->ndim != 1 || labels->shape[0] != logits->shape[0]) {
        pt__error(PT_ERR_SHAPE, fn, "labels %s must be 1-D with one label per row of logits %s",
                  pt_tensor_describe(labels, b, sizeof b), pt_tensor_describe(logits, a, sizeof a));
        return NULL;
    }
    pt_tensor *pair[2] = {logits, labels};
    if (pt__check_same_device(fn, 2, pair)) return NULL;

    /* -log p[label] = -(log_softmax(logits)[label]): log_softmax subtracts
     * the row max first, so large logits do not overflow. The ops run
     * unrecorded; the loss is one node of the tape (CROSS_ENTROPY), whose
     * gradient is one chain instead of the seven ops the parts' rules
     * would take. */
    int64_t column[2] = {labels->shape[0], 1};
    const bool record = pt__grad_wanted(1, &logits);
    if (record) pt__grad_pause();
    pt_tensor *logp = pt_log_softmax(logits, 1);
    pt_tensor *index = pt_reshape(labels, 2, column);
    pt_tensor *picked = pt_gather(logp, 1, index);
    if (logp && index && !picked && pt_last_status() == PT_ERR_INVALID_ARGUMENT) {
        char what[160];
        snprintf(what, sizeof what, "every label must be a class index in [0, %lld)",
                 (long long)logits->shape[1]);
        restate_error(fn, what);
    }
    /* mean(-x) is -mean(x) bit for bit (rounding is symmetric), and a
     * graph fuses the neg into the mean's kernel */
    pt_tensor *neg = pt_neg(picked);
    pt_tensor *loss = pt_mean(neg, PT_ALL, false);
    if (record) {
        pt__grad_resume();
        pt_tensor *in[3] = {logits, labels, logp};
        pt__grad_args args = pt__no_grad_args;
        args.scalar = 1.0 / (double)labels->shape[0];
        if (loss && logp) pt__record(loss, PT__G_CROSS_ENTROPY, 3, in, &args);
    }
    pt_release(logp);
    pt_release(index);
    pt_release(picked);
    pt_release(neg);
    if (!loss) restate_error(fn, NULL);
    return loss;
}
