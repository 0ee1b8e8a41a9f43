/* libportable OpenCL backend — OpenCL error codes as names, and reporting.
 *
 * One table maps every code the OpenCL 3.0 headers and the common KHR
 * extensions define to its name, so each message says
 * "clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE" rather than -54.
 * Codes are written as numbers: the headers hide the names of codes newer
 * than CL_TARGET_OPENCL_VERSION, but a newer driver may still return them. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

const pt_host_api *ocl_host = NULL;

static const struct {
    cl_int code;
    const char *name;
} ocl_error_table[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1057, "CL_DEVICE_PARTITION_FAILED_EXT"},
    {-1058, "CL_INVALID_PARTITION_COUNT_EXT"},
    {-1059, "CL_INVALID_PARTITION_NAME_EXT"},
    {-1121, "CL_CONTEXT_TERMINATED_KHR"},
    {-1138, "CL_INVALID_COMMAND_BUFFER_KHR"},
    {-1139, "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR"},
    {-1140, "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR"},
};

const char *ocl_error_name(cl_int err) {
    for (size_t i = 0; i < sizeof ocl_error_table / sizeof ocl_error_table[0]; ++i)
        if (ocl_error_table[i].code == err) return ocl_error_table[i].name;
    static _Thread_local char unknown[48];
    snprintf(unknown, sizeof unknown, "CL_UNKNOWN_ERROR(%d)", (int)err);
    return unknown;
}

pt_status ocl_status_of(cl_int err) {
    switch (err) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
        return PT_ERR_OUT_OF_MEMORY;
    /* Not memory: NVIDIA's driver returns it for a kernel that faulted
     * (an out-of-bounds access), reported by the next call on the queue. */
    case CL_OUT_OF_RESOURCES:
    default:
        return PT_ERR_BACKEND;
    }
}

/* The host may be absent only before pt_backend_entry ran; then reports go
 * nowhere rather than crash. */
static void ocl_report(pt_status s, const char *msg) {
    if (ocl_host && ocl_host->set_error) ocl_host->set_error(s, "%s", msg);
}

pt_status ocl_cl_fail(cl_int err, const char *what_fmt, ...) {
    char what[768], msg[1024];
    va_list ap;
    va_start(ap, what_fmt);
    vsnprintf(what, sizeof what, what_fmt, ap);
    va_end(ap);
    pt_status s = ocl_status_of(err);
    const char *why = s == PT_ERR_OUT_OF_MEMORY ? " (the OpenCL device is out of memory)"
                      : err == CL_OUT_OF_RESOURCES
                          ? " (an execution failure, not out of memory: the device could not run "
                            "this or an earlier kernel, on NVIDIA a kernel that faulted; the "
                            "device's queue may be unusable, restart the process)"
                          : "";
    snprintf(msg, sizeof msg, "%s failed: %s%s", what, ocl_error_name(err), why);
    ocl_report(s, msg);
    return s;
}

pt_status ocl_fail(pt_status s, const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ocl_report(s, msg);
    return s;
}

void ocl_log(pt_log_level level, const char *fmt, ...) {
    if (!ocl_host || !ocl_host->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ocl_host->log(level, "opencl: %s", msg);
}
