/* The names DESIGN.md lists as the public contract: this program only
 * compiles and links when every one exists with external linkage, and when
 * the types and constants it names are declared. Run, it checks that none of
 * the addresses is NULL (the linker resolved each one). */
#include <stdint.h>
#include <stdio.h>

#include "portable/backend.h"
#include "portable/portable.h"

/* Types and constants of the contract. */
static pt_status status_value = PT_ERR_INTERNAL;
static pt_dtype dtype_value = PT_U8;
static pt_device_props props_value;
static pt_memory_usage usage_value;
static pt_scope scope_value;
static pt_op op_value;
static pt_host_api host_api_value;
static pt_backend_vtable vtable_value;

static void *const contract[] = {
    (void *)(uintptr_t)&pt_abs,
    (void *)(uintptr_t)&pt_adam,
    (void *)(uintptr_t)&pt_add,
    (void *)(uintptr_t)&pt_add_scalar,
    (void *)(uintptr_t)&pt_all_devices,
    (void *)(uintptr_t)&pt_arange,
    (void *)(uintptr_t)&pt_argmax,
    (void *)(uintptr_t)&pt_axpy_,
    (void *)(uintptr_t)&pt_backward,
    (void *)(uintptr_t)&pt_cast,
    (void *)(uintptr_t)&pt_cat,
    (void *)(uintptr_t)&pt_clear_error,
    (void *)(uintptr_t)&pt_contiguous,
    (void *)(uintptr_t)&pt_copy_,
    (void *)(uintptr_t)&pt_cpu,
    (void *)(uintptr_t)&pt_cross_entropy,
    (void *)(uintptr_t)&pt_default_device,
    (void *)(uintptr_t)&pt_device_count,
    (void *)(uintptr_t)&pt_device_get,
    (void *)(uintptr_t)&pt_device_info,
    (void *)(uintptr_t)&pt_device_name,
    (void *)(uintptr_t)&pt_device_synchronize,
    (void *)(uintptr_t)&pt_div,
    (void *)(uintptr_t)&pt_empty,
    (void *)(uintptr_t)&pt_empty_cache,
    (void *)(uintptr_t)&pt_eq,
    (void *)(uintptr_t)&pt_exp,
    (void *)(uintptr_t)&pt_from_data,
    (void *)(uintptr_t)&pt_full,
    (void *)(uintptr_t)&pt_gather,
    (void *)(uintptr_t)&pt_grad,
    (void *)(uintptr_t)&pt_gt,
    (void *)(uintptr_t)&pt_item,
    (void *)(uintptr_t)&pt_keep,
    (void *)(uintptr_t)&pt_last_error,
    (void *)(uintptr_t)&pt_last_status,
    (void *)(uintptr_t)&pt_linear,
    (void *)(uintptr_t)&pt_load,
    (void *)(uintptr_t)&pt_log,
    (void *)(uintptr_t)&pt_log_softmax,
    (void *)(uintptr_t)&pt_lt,
    (void *)(uintptr_t)&pt_manual_seed,
    (void *)(uintptr_t)&pt_matmul,
    (void *)(uintptr_t)&pt_max,
    (void *)(uintptr_t)&pt_maximum,
    (void *)(uintptr_t)&pt_mean,
    (void *)(uintptr_t)&pt_memory_stats,
    (void *)(uintptr_t)&pt_minimum,
    (void *)(uintptr_t)&pt_module_forward,
    (void *)(uintptr_t)&pt_module_parameters,
    (void *)(uintptr_t)&pt_module_to,
    (void *)(uintptr_t)&pt_mse_loss,
    (void *)(uintptr_t)&pt_mul,
    (void *)(uintptr_t)&pt_mul_scalar,
    (void *)(uintptr_t)&pt_narrow,
    (void *)(uintptr_t)&pt_neg,
    (void *)(uintptr_t)&pt_no_grad_begin,
    (void *)(uintptr_t)&pt_no_grad_end,
    (void *)(uintptr_t)&pt_norm,
    (void *)(uintptr_t)&pt_norm_dims,
    (void *)(uintptr_t)&pt_one_hot,
    (void *)(uintptr_t)&pt_ones,
    (void *)(uintptr_t)&pt_optimizer_step,
    (void *)(uintptr_t)&pt_permute,
    (void *)(uintptr_t)&pt_pow,
    (void *)(uintptr_t)&pt_rand,
    (void *)(uintptr_t)&pt_randn,
    (void *)(uintptr_t)&pt_release,
    (void *)(uintptr_t)&pt_relu,
    (void *)(uintptr_t)&pt_relu_module,
    (void *)(uintptr_t)&pt_reshape,
    (void *)(uintptr_t)&pt_retain,
    (void *)(uintptr_t)&pt_save,
    (void *)(uintptr_t)&pt_scope_begin,
    (void *)(uintptr_t)&pt_scope_end,
    (void *)(uintptr_t)&pt_sequential,
    (void *)(uintptr_t)&pt_set_requires_grad,
    (void *)(uintptr_t)&pt_sgd,
    (void *)(uintptr_t)&pt_sigmoid,
    (void *)(uintptr_t)&pt_softmax,
    (void *)(uintptr_t)&pt_sqrt,
    (void *)(uintptr_t)&pt_stack,
    (void *)(uintptr_t)&pt_status_name,
    (void *)(uintptr_t)&pt_sub,
    (void *)(uintptr_t)&pt_sum,
    (void *)(uintptr_t)&pt_tanh,
    (void *)(uintptr_t)&pt_tensor_device,
    (void *)(uintptr_t)&pt_tensor_dtype,
    (void *)(uintptr_t)&pt_tensor_ndim,
    (void *)(uintptr_t)&pt_tensor_numel,
    (void *)(uintptr_t)&pt_tensor_shape,
    (void *)(uintptr_t)&pt_to,
    (void *)(uintptr_t)&pt_to_async,
    (void *)(uintptr_t)&pt_to_host,
    (void *)(uintptr_t)&pt_transpose,
    (void *)(uintptr_t)&pt_try_device,
    (void *)(uintptr_t)&pt_where,
    (void *)(uintptr_t)&pt_zero_grad,
    (void *)(uintptr_t)&pt_zeros,
};

int main(void) {
    (void)status_value, (void)dtype_value, (void)props_value, (void)usage_value;
    (void)scope_value, (void)op_value, (void)host_api_value, (void)vtable_value;
    int missing = 0, n = (int)(sizeof contract / sizeof contract[0]);
    for (int i = 0; i < n; ++i) missing += contract[i] == NULL;
    printf("contract: %d passed, %d failed\n", n - missing, missing);
    return missing != 0;
}
