/** @file
 * libportable — nets: modules, losses, optimizers, safetensors (and, through
 * autograd.h, which this includes, autograd).
 *
 * Everything here is built on the public ops (ops.h), so it runs on the
 * device the tensors live on and is the same code on every backend: a model
 * written once trains on whichever device PORTABLE_BACKEND names.
 * See docs/nets.md for a walk-through.
 *
 * Conventions are those of tensor.h: tensor-valued functions return a new
 * reference (registered in the innermost pt_scope, if any) or NULL with the
 * last error set; a NULL tensor argument gives NULL and keeps the first
 * error. Functions returning pt_status return PT_OK or the error's status.
 * Nothing here waits for a device unless its comment says so. */
#ifndef PORTABLE_NN_H
#define PORTABLE_NN_H

#include "autograd.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @name Modules
 *
 * A pt_module is an opaque handle owned by the caller (pt_module_free), or
 * by the pt_sequential it was given to. Parameters are f32 (or the dtype of
 * the first input for a lazy linear) leaves that require grad. */
/** @{ */
/** A module (layer or container): opaque; see the paragraph above for who
 * frees it. */
typedef struct pt_module pt_module;

/** y = x W^T + b with W [out_features, in_features], b [out_features]; the
 * input size is inferred at the first forward (like torch.nn.LazyLinear),
 * when the parameters are created on the input's device (or on the device of
 * an earlier pt_module_to) with the input's float dtype. Initialised like
 * torch.nn.Linear: W and b ~ U(-1/sqrt(in), 1/sqrt(in)), drawn with pt_rand
 * so the values are the same on every backend for the same seed. NULL +
 * PT_ERR_INVALID_ARGUMENT when out_features < 1. */
PT_API pt_module *pt_linear(int64_t out_features);
/** The same with a known input size: parameters made now, f32 on the cpu. */
PT_API pt_module *pt_linear_sized(int64_t in_features, int64_t out_features);
/** Element-wise max(x, 0). No parameters. */
PT_API pt_module *pt_relu_module(void);
/** Runs the n modules in order, owning them. Parameter names are prefixed
 * with the child's index: "0.weight", "2.bias", "1.0.weight".
 * Errors (NULL returned):
 * - PT_ERR_INVALID_ARGUMENT naming the index when a module is listed twice
 *   or already belongs to another sequential (or n < 0, or modules NULL with
 *   n > 0). Nothing is taken then: every module stays the caller's, usable.
 * - A NULL entry (a constructor in the argument list failed): its error is
 *   kept (else PT_ERR_INVALID_ARGUMENT naming the index) and the other
 *   entries are freed, so pt_sequential(3, (pt_module *[]){pt_linear(256),
 *   pt_relu_module(), pt_linear(10)}) leaks nothing when one constructor
 *   failed. Likewise PT_ERR_OUT_OF_MEMORY frees the entries. */
PT_API pt_module *pt_sequential(int n, pt_module *const *modules);
/** Frees m, its children and its parameters (parameter tensors you
 * retained yourself stay valid). NULL is fine. A module owned by a
 * sequential is freed with it; freeing it directly does nothing and sets
 * PT_ERR_INVALID_ARGUMENT. Free optimizers of m first. */
PT_API void pt_module_free(pt_module *m);
/** The module applied to x: a new tensor on x's device. Records the ops for
 * autograd when grad mode is on. Errors: PT_ERR_DEVICE_MISMATCH (x on
 * another device than the parameters: move one with pt_module_to or pt_to),
 * PT_ERR_SHAPE (x's last dim differs from in_features), PT_ERR_DTYPE. */
PT_API pt_tensor *pt_module_forward(pt_module *m, pt_tensor *x);
/** Moves every parameter (and its gradient) to d; afterwards
 * pt_tensor_device of each parameter names d, and a lazy linear that has
 * not run yet will create its parameters on d. The parameters are new
 * tensors: borrowed pointers from pt_module_parameters taken before are no
 * longer the module's. Waits for the copies. On failure (PT_ERR_OUT_OF_MEMORY,
 * a backend error, PT_ERR_INVALID_ARGUMENT for NULL) the module is unchanged. */
PT_API pt_status pt_module_to(pt_module *m, pt_device *d);
/** Writes the parameters as a state dict (with buffers such as batch norm's
 * "1.running_mean", which never require grad): names[i] ("0.weight") and
 * tensors[i] for i < min(count, cap) (either array may be NULL), and returns
 * the count (-1 + error for a NULL module). Both are borrowed: valid until
 * the module is freed, moved (pt_module_to) or loaded (pt_load). A lazy
 * linear that has not run yet lists its names with NULL tensors. */
PT_API int pt_module_parameters(pt_module *m, const char **names, pt_tensor **tensors, int cap);
/** The parameter called name (borrowed, as above), or NULL + PT_ERR_INVALID_ARGUMENT. */
PT_API pt_tensor *pt_module_parameter(pt_module *m, const char *name);
/** pt_zero_grad on every parameter. */
PT_API pt_status pt_module_zero_grad(pt_module *m);

/** @} */
/** @name Convolutional layers (NCHW; nn.h's layers call ops.h's pt_f_ ops)
 * Parameter and buffer names are PyTorch's, so a safetensors file moves
 * between pt_sequential and torch.nn.Sequential with the same layers. */
/** @{ */

/** torch.nn.LazyConv2d: weight [out, in / groups, KH, KW] and bias [out]
 * (bias false: none), in taken from the first input; initialised like
 * torch.nn.Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups
 * * KH * KW. opts as pt_f_conv2d (NULL: stride 1, no padding). */
PT_API pt_module *pt_conv2d(int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                            const pt_conv2d_opts *opts, bool bias);
/** pt_f_max_pool2d as a layer (no parameters); opts are copied. */
PT_API pt_module *pt_max_pool2d(const pt_pool2d_opts *opts);
/** pt_f_avg_pool2d as a layer (no parameters); opts are copied. */
PT_API pt_module *pt_avg_pool2d(const pt_pool2d_opts *opts);
/** torch.nn.LazyBatchNorm2d over dim 1 of [N, C, H, W] (or [N, C]): weight 1
 * and bias 0 [C], buffers running_mean 0, running_var 1 [C] and
 * num_batches_tracked (i64, 0-D), made at the first input. Training mode uses
 * the batch statistics and updates the running ones with momentum
 * (running = (1 - momentum) running + momentum batch, the variance unbiased);
 * evaluation mode (pt_module_train(m, false)) uses the running ones.
 * Usual values: eps 1e-5, momentum 0.1. */
PT_API pt_module *pt_batch_norm2d(double eps, double momentum);
/** torch.nn.LayerNorm over the last n_dims dims, whose sizes are shape:
 * weight 1 and bias 0 of that shape, made on the cpu in f32. */
PT_API pt_module *pt_layer_norm(int n_dims, const int64_t *shape, double eps);
/** torch.nn.Dropout(p): in training mode zeroes each element with probability
 * p (pt_f_dropout); the identity in evaluation mode. */
PT_API pt_module *pt_dropout(double p);
/** torch.nn.Flatten: dims 1..-1 merged. */
PT_API pt_module *pt_flatten(void);
/** pt_gelu as a layer. */
PT_API pt_module *pt_gelu_module(void);
/** Training (true, every module's mode when made) or evaluation mode for m
 * and every module inside it; switches dropout and batch norm. */
PT_API pt_status pt_module_train(pt_module *m, bool training);
/** Whether m is in training mode (false for NULL). */
PT_API bool pt_module_is_training(const pt_module *m);
/** Mixed precision, like torch.autocast (docs/mixed-precision.md): m and
 * every module inside it compute in dtype (PT_BF16 or PT_F16 usually)
 * while their parameters stay as they are, f32 "master weights": what the
 * optimizer updates and pt_save writes. At each forward, linear and conv2d
 * cast their input, weight and bias to dtype (pt_cast, recorded: the
 * backward pass casts the gradients back, so pt_grad of a parameter is
 * f32), and return a dtype result. Batch norm and layer norm widen their
 * input to the parameters' dtype, keep their statistics and running
 * buffers there, and round the result to dtype. Layers without parameters
 * compute in the dtype they are given. A lazy layer that first sees a
 * 16-bit input makes f32 parameters. The net's output is in dtype: cast it
 * to f32 before the loss. Setting the parameters' own dtype makes every
 * cast a no-op. PT_ERR_DTYPE for a dtype that is not a float (naming it),
 * PT_ERR_INVALID_ARGUMENT for a NULL module. */
PT_API pt_status pt_module_set_compute_dtype(pt_module *m, pt_dtype dtype);

/** @} */
/** @name Transformer layers
 * Parameter names, shapes and initialisation are PyTorch's, so a
 * safetensors file moves between these and the torch.nn modules named in
 * each comment (docs/nets.md, "Transformers"). Parameters are made at
 * construction, f32 on the cpu (move them with pt_module_to). */
/** @{ */

/** torch.nn.Embedding(num_embeddings, embedding_dim): parameter weight
 * [num_embeddings, embedding_dim] ~ N(0, 1) (pt_randn). Its forward takes
 * an i32 or i64 index tensor of any shape and returns its shape +
 * [embedding_dim] (pt_f_embedding; PT_ERR_DTYPE for other index dtypes,
 * an index outside the table is an error on the cpu, a row of 0 on
 * accelerators, as pt_gather). NULL + PT_ERR_INVALID_ARGUMENT when either
 * size is < 1. */
PT_API pt_module *pt_embedding(int64_t num_embeddings, int64_t embedding_dim);
/** Self-attention as torch.nn.MultiheadAttention(embed_dim, num_heads,
 * dropout, bias, batch_first=True) called with query = key = value:
 * parameters in_proj_weight [3E, E] (Xavier-uniform), in_proj_bias [3E]
 * (0), out_proj.weight [E, E] (as torch.nn.Linear), out_proj.bias [E] (0);
 * no bias parameters when bias is false. The forward takes x [B, T, E] (or
 * [T, E]) and returns the same shape: q, k, v from the one packed
 * projection, num_heads heads of E / num_heads channels each through
 * pt_scaled_dot_product_attention (fused on the cpu), then out_proj.
 * causal: position t attends to positions <= t (torch's is_causal).
 * dropout: on the attention weights in training mode (then composed from
 * matmul and softmax rather than fused). Errors (NULL): PT_ERR_INVALID_ARGUMENT
 * naming both when num_heads does not divide embed_dim or either is < 1,
 * or dropout outside [0, 1]. */
PT_API pt_module *pt_multihead_attention(int64_t embed_dim, int64_t num_heads, bool bias, double dropout,
                                         bool causal);
/** A pre-norm transformer block, torch.nn.TransformerEncoderLayer(d_model,
 * nhead, dim_feedforward, dropout, activation="gelu", batch_first=True,
 * norm_first=True): h = x + dropout(self_attn(norm1(x))), then
 * h + dropout(linear2(dropout(gelu(linear1(norm2(h)))))), with children
 * self_attn (pt_multihead_attention with biases), linear1 [dim_feedforward,
 * d_model], linear2 [d_model, dim_feedforward], norm1 and norm2 (layer
 * norms, eps 1e-5), so its parameters are called as PyTorch's
 * ("self_attn.in_proj_weight", "linear1.bias", "norm2.weight", ...).
 * causal: each position attends to itself and earlier ones (PyTorch: a
 * causal src_mask). Dropouts follow pt_module_train. Errors as
 * pt_multihead_attention's, and PT_ERR_INVALID_ARGUMENT for
 * dim_feedforward < 1. */
PT_API pt_module *pt_transformer_block(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                                       bool causal);

/** The shape of a GPT (pt_gpt). Options structs only ever grow at their end. */
typedef struct pt_gpt_config {
    int64_t vocab_size; /**< tokens in the vocabulary (rows of wte) */
    int64_t context;    /**< the longest sequence, T (rows of wpe; block_size in nanoGPT) */
    int64_t n_layer;    /**< transformer blocks */
    int64_t n_head;     /**< attention heads per block; must divide n_embd */
    int64_t n_embd;     /**< the width (d_model) */
    double dropout;     /**< on the embeddings, the attention weights and each residual branch
                             in training mode; in [0, 1) (0 to switch it off) */
} pt_gpt_config;

/** A GPT-2-style decoder: token embedding "wte" [vocab_size, n_embd] plus
 * position embedding "wpe" [context, n_embd], dropout, n_layer causal
 * blocks "h.0" .. "h.{n_layer-1}" (pt_transformer_block with
 * dim_feedforward 4 n_embd), a final layer norm "ln_f", and an output head
 * tied to wte.weight (weight tying: logits = x wte^T, one parameter, listed,
 * updated and saved once, as safetensors' save_model stores a tied
 * model). Initialised as GPT-2: matrices N(0, 0.02), the residual
 * projections (self_attn.out_proj.weight, linear2.weight)
 * N(0, 0.02 / sqrt(2 n_layer)), biases 0, layer norms 1 and 0. The forward
 * takes token indices [B, T] (i32 or i64, T <= context) and returns logits
 * [B, T, vocab_size] in the parameters' dtype. The config is copied. Errors:
 * NULL + PT_ERR_INVALID_ARGUMENT for a NULL config, a size < 1, n_head not
 * dividing n_embd, dropout outside [0, 1); at the forward, PT_ERR_DTYPE for
 * indices that are not i32/i64 and PT_ERR_SHAPE for indices that are not
 * [B, T] or have T > context (naming both). */
PT_API pt_module *pt_gpt(const pt_gpt_config *config);

/** @} */
/** @name Normalisation and dropout as functions (torch.nn.functional) */
/** @{ */

/** torch.nn.functional.batch_norm over dim 1 of x [N, C, ...]: running_mean
 * and running_var [C] (same dtype and device; NULL allowed only when
 * training), weight and bias [C] or NULL. training: normalises with the
 * batch's mean and biased variance and, when the running tensors are
 * given, updates them in place (not recorded); N * (spatial size) must then
 * be > 1. Differentiable in x, weight and bias. */
PT_API pt_tensor *pt_f_batch_norm(pt_tensor *x, pt_tensor *running_mean, pt_tensor *running_var,
                                  pt_tensor *weight, pt_tensor *bias, bool training, double momentum,
                                  double eps);
/** torch.nn.functional.layer_norm over the last n_dims dims of x; weight and
 * bias (NULL or of those dims' shape). */
PT_API pt_tensor *pt_f_layer_norm(pt_tensor *x, int n_dims, pt_tensor *weight, pt_tensor *bias, double eps);
/** torch.nn.functional.embedding: out[..., :] = weight[indices[...], :].
 * indices are i32 or i64 of any shape, each in [0, num_embeddings) (an
 * index outside is an error, not a read out of bounds); weight is
 * [num_embeddings, embedding_dim]; the result is indices' shape + [dim] in
 * weight's dtype. Differentiable in weight: its gradient sums the output
 * gradient's rows of each index's occurrences in ascending position order
 * (a deterministic scatter-add: the same bits run to run), [num_embeddings,
 * embedding_dim] with 0 in rows no index picked, never an indices x dim x
 * num_embeddings intermediate on a device with the embedding kinds. */
PT_API pt_tensor *pt_f_embedding(pt_tensor *indices, pt_tensor *weight);
/** torch.nn.functional.dropout: training: x * mask / (1 - p), the mask
 * (uniform >= p) drawn from the library's Philox stream like pt_rand, so
 * every backend drops the same elements for the same seed; p in [0, 1].
 * Not training (or p == 0): x itself (a new reference). */
PT_API pt_tensor *pt_f_dropout(pt_tensor *x, double p, bool training);

/** @} */
/** @name Losses (mean over the batch; results are 0-D tensors) */
/** @{ */

/** mean((pred - target)^2). pred and target must have the same shape
 * (PT_ERR_SHAPE), the same float dtype, f32 or f64 (PT_ERR_DTYPE: mixed
 * dtypes are not promoted; cast one with pt_cast) and the same device
 * (PT_ERR_DEVICE_MISMATCH). The loss has their dtype. */
PT_API pt_tensor *pt_mse_loss(pt_tensor *pred, pt_tensor *target);
/** mean over rows of -log_softmax(logits)[row, label]: logits f32/f64 [N, C],
 * labels i32/i64 [N] with values in [0, C) on the same device (else
 * PT_ERR_DTYPE, PT_ERR_SHAPE or PT_ERR_DEVICE_MISMATCH). Computed as
 * log_softmax + gather, so large logits do not overflow; its gradient is
 * (softmax - one_hot(labels)) / N in one element-wise chain. A label outside
 * [0, C) is an error where the labels are host-visible (cpu); accelerators
 * cannot check without waiting and count that row as 0. */
PT_API pt_tensor *pt_cross_entropy(pt_tensor *logits, pt_tensor *labels);

/** @} */
/** @name Optimizers
 *
 * An optimizer updates the parameters of one module (borrowed: the module
 * must outlive it) in place on their device, with ops only (no host round
 * trip), skipping parameters without a gradient. Its state (momentum, Adam
 * moments) follows the parameters if the module is moved. */
/** @{ */
/** An optimizer: opaque, owned by the caller (pt_optimizer_free). */
typedef struct pt_optimizer pt_optimizer;

/** torch.optim.SGD: d = g + weight_decay p; with momentum > 0,
 * buf = momentum buf + d (buf = d at the first step) and d = buf; p -= lr d.
 * Every hyper-parameter must be finite and in range: lr > 0,
 * 0 <= momentum < 1 (at 1 or above the buffer never decays and the steps
 * grow without bound), weight_decay >= 0. Otherwise NULL +
 * PT_ERR_INVALID_ARGUMENT naming the parameter, its value and the range
 * (also for a NULL module). */
PT_API pt_optimizer *pt_sgd(pt_module *m, double lr, double momentum, double weight_decay);
/** torch.optim.Adam (L2 weight decay added to the gradient, not AdamW).
 * Usual values: lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8, weight_decay 0.
 * Every hyper-parameter must be finite and in range: lr > 0, beta1 and
 * beta2 in [0, 1), eps >= 0, weight_decay >= 0. Otherwise NULL +
 * PT_ERR_INVALID_ARGUMENT naming the parameter, its value and the range
 * (also for a NULL module). */
PT_API pt_optimizer *pt_adam(pt_module *m, double lr, double beta1, double beta2, double eps,
                             double weight_decay);
/** torch.optim.AdamW: Adam with decoupled weight decay, p -= lr
 * weight_decay p before each update (no decay in the gradient). Usual
 * values: lr 1e-3 (3e-4 for transformers), beta1 0.9, beta2 0.999 (0.95),
 * eps 1e-8, weight_decay 0.01 (0.1). Ranges and errors as pt_adam's. */
PT_API pt_optimizer *pt_adamw(pt_module *m, double lr, double beta1, double beta2, double eps,
                              double weight_decay);
/** Linear warm-up then cosine decay, as llm.c and nanoGPT schedule: the
 * learning rate of update number step (1 for the first) is max_lr * step /
 * warmup_steps during the warm-up, then falls from max_lr to min_lr along
 * half a cosine until update total_steps, and stays at min_lr after it. A
 * pure function of its arguments (0 for step < 1). */
PT_API double pt_lr_warmup_cosine(double max_lr, double min_lr, int64_t warmup_steps, int64_t total_steps,
                                  int64_t step);
/** Makes the optimizer follow pt_lr_warmup_cosine(lr, min_lr, warmup_steps,
 * total_steps, k) at each parameter's k-th update, lr being the rate it
 * was made with (or given by pt_optimizer_set_lr); AdamW's decay uses the
 * scheduled rate too, as torch's LambdaLR does. The rate is computed on the
 * host from each parameter's update count, which the optimizer keeps, so
 * no step reads a device value, and a step captured in a graph takes the
 * rate of its own step number at each replay (as Adam's bias correction
 * does). PT_ERR_INVALID_ARGUMENT for warmup_steps < 0, total_steps < 1,
 * warmup_steps > total_steps, total_steps > 2^53 (a captured step carries
 * step numbers as doubles), or min_lr outside [0, lr]. */
PT_API pt_status pt_optimizer_set_schedule(pt_optimizer *o, int64_t warmup_steps, int64_t total_steps,
                                           double min_lr);
/** Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_:
 * total = the 2-norm of all the module's gradients together, and each
 * gradient is multiplied in place by min(1, max_norm / (total + 1e-6)).
 * Returns total, a new 0-D tensor on the gradients' device (f32, f64 when
 * one gradient is f64), computed and applied there without a host read:
 * queued, not waited for. Parameters without a gradient are skipped (none
 * at all: a 0-D zero on the cpu). Errors (NULL returned): PT_ERR_INVALID_ARGUMENT
 * for a NULL module or max_norm not finite and > 0; PT_ERR_DEVICE_MISMATCH
 * when the gradients live on different devices. Runs with grad mode off. */
PT_API pt_tensor *pt_clip_grad_norm(pt_module *m, double max_norm);
/** The same over the listed tensors' gradients (count of them; any tensors
 * with a gradient, not only a module's). */
PT_API pt_tensor *pt_clip_grad_norm_params(pt_tensor *const *params, int count, double max_norm);
/** One update of every parameter that has a gradient. Queued, not waited
 * for. Runs with grad mode off. */
PT_API pt_status pt_optimizer_step(pt_optimizer *o);
/** The same update for the listed parameters only (tensors from
 * pt_module_parameters of the optimizer's module; buffers and parameters
 * without a gradient are skipped, as by pt_optimizer_step). Each
 * parameter's state (momentum buffer, Adam moments and step count) is its
 * own, so stepping disjoint subsets that together cover the module, in any
 * order, gives bit for bit what one pt_optimizer_step gives: a
 * data-parallel wrapper steps each bucket of parameters as soon as its
 * averaged gradients arrive. PT_ERR_INVALID_ARGUMENT (nothing updated) for
 * a NULL optimizer, count < 0, params NULL with count > 0, an entry that
 * is not one of the module's parameters, or one listed twice. */
PT_API pt_status pt_optimizer_step_params(pt_optimizer *o, pt_tensor *const *params, int count);
/** pt_module_zero_grad on the optimizer's module. */
PT_API pt_status pt_optimizer_zero_grad(pt_optimizer *o);
/** Changes the learning rate (for schedules). PT_ERR_INVALID_ARGUMENT for
 * lr <= 0, NaN or infinite (or a NULL optimizer). */
PT_API pt_status pt_optimizer_set_lr(pt_optimizer *o, double lr);
/** Frees the optimizer and its state (not the module). NULL is fine. */
PT_API void pt_optimizer_free(pt_optimizer *o);
/** Writes the optimizer's whole state to path as safetensors, so that a
 * run that stops resumes exactly (docs/nets.md, "Resuming training"):
 * per parameter that has been updated, its update count and the tensors
 * the next step reads, named as torch.optim's state_dict flattened
 * ("state.<i>.step" I64 0-D; "state.<i>.exp_avg" and "state.<i>.exp_avg_sq"
 * for Adam and AdamW, "state.<i>.momentum_buffer" for SGD with momentum; i
 * counts the module's parameters without its buffers, as torch's
 * model.parameters() does), and in "__metadata__" the kind ("SGD", "Adam",
 * "AdamW"), the parameter count, the hyper-parameters and the schedule
 * (pt_optimizer_set_schedule). The weights are not included: pt_save them.
 * Copies the state to the host first (waits for its devices), then writes
 * through a temporary file renamed into place, as pt_save does. Errors:
 * PT_ERR_INVALID_ARGUMENT (NULL optimizer or path; called while this
 * thread captures a graph), PT_ERR_IO with the path and the system's
 * reason; the file at path is then as it was. */
PT_API pt_status pt_optimizer_save(pt_optimizer *o, const char *path);
/** Replaces the optimizer's state, hyper-parameters and schedule with
 * those pt_optimizer_save wrote to path (as torch's load_state_dict
 * restores param_groups: set a new lr after loading, not before). Load
 * the module's weights (pt_load) first: the state is checked against its
 * parameters. The tensors are made on map_location (NULL: each
 * parameter's device). State tensors that exist with the same shape,
 * dtype and device take the values in place, so a graph that captured a
 * step replays from the loaded state (its step counts too); the
 * hyper-parameters a graph captured stay those of the capture. Validates
 * everything before changing anything: the file as pt_load does, that its
 * kind is the optimizer's, that it holds the state of as many parameters
 * as the module has, and that each tensor has its parameter's shape and
 * dtype, with every tensor the kind needs present and none unexpected.
 * Any mismatch is PT_ERR_IO with a message naming the file, the tensor or
 * value and the fix, and leaves the optimizer untouched (only a device
 * failing to copy while the state is installed can stop it half way).
 * PT_ERR_INVALID_ARGUMENT for a NULL optimizer or path, or while this
 * thread captures a graph. Waits for the copies to the device. */
PT_API pt_status pt_optimizer_load(pt_optimizer *o, const char *path, pt_device *map_location);

/** @} */
/** @name Safetensors
 *
 * The Hugging Face format, readable by PyTorch's safetensors package: an
 * 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
 *  "__metadata__": {"format": "pt"}} padded with spaces, then the raw
 * little-endian data. dtypes F32 F64 I32 I64 U8. */
/** @{ */

/** Writes m's parameters (copied to the host first: waits for their
 * devices) to path, through a temporary file renamed into place. Errors:
 * PT_ERR_INVALID_ARGUMENT (a lazy linear has not run yet), PT_ERR_IO (with
 * the path and the system's reason). */
PT_API pt_status pt_save(pt_module *m, const char *path);
/** Replaces m's parameters with the tensors in path, created on map_location
 * (NULL: each parameter's current device; cpu for a lazy linear not run
 * yet, which takes the file's shapes). Validates the whole file first:
 * header length against the file size, the JSON, each entry's dtype (F32,
 * F64, F16, BF16, I32, I64, U8; F8_* and others are "unsupported dtype"),
 * shape against the module's parameter, data_offsets in range and consistent with the shape, no
 * overlapping ranges, every parameter present and no unexpected tensor. Any
 * problem gives PT_ERR_IO with a message naming the file, the tensor and the
 * problem, and leaves m untouched. Waits for the copies to the device. */
PT_API pt_status pt_load(pt_module *m, const char *path, pt_device *map_location);

/** @} */
#ifdef __cplusplus
}
#endif
#endif
