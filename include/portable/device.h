/** @file
 * libportable — devices.
 *
 * Names are "cpu", "cpu:N", "cuda:N", "opencl:N" ("cuda" means "cuda:0").
 * Parsing is strict: a backend name of letters, digits, '_' and '-'
 * (at most 31), then optionally ':' and a plain decimal index ("0", or no
 * leading zero): "cpu: 1", "cpu:+0", "cpu:00", "cpu:-1", "cpu:1x" and
 * " cpu" are not names. A string that is not a name is
 * PT_ERR_INVALID_ARGUMENT; a name of a device that does not exist (unknown
 * backend, index out of range however large, backend unavailable) is
 * PT_ERR_NO_DEVICE.
 * A pt_device * is owned by the library and valid until the process exits.
 * The first call into this area loads the backend plugins (see
 * docs/plugins.md for the search order and PORTABLE_* variables). */
#ifndef PORTABLE_DEVICE_H
#define PORTABLE_DEVICE_H

#include "op_table.h"
#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A device: opaque, owned by the library, valid until the process exits
 * (never freed by the caller). */
typedef struct pt_device pt_device;

/** The device with this name, or NULL with one of:
 * - PT_ERR_INVALID_ARGUMENT: name is NULL or not a name (see above);
 * - PT_ERR_NO_DEVICE: unknown backend, index out of range, or the backend
 *   is unavailable (its plugin failed to load, or it has no device): the
 *   message says which and why. */
PT_API pt_device *pt_device_get(const char *name);
/** The CPU device (cpu:0). Never NULL unless the cpu backend is unusable:
 * PT_ERR_BACKEND_LOAD when its plugin was not found or failed to load,
 * PT_ERR_NO_DEVICE when it loaded with no device (PORTABLE_CPU_DEVICES=0);
 * the last error says why. */
PT_API pt_device *pt_cpu(void);
/** The device PORTABLE_BACKEND picks: "auto" (default, also when unset or
 * empty: cuda if it has a device, else an OpenCL GPU, else cpu), or a
 * device name ("cpu", "cuda", "opencl", each optionally ":N"). Never a
 * silent fallback: NULL with the reason and one of
 * - PT_ERR_INVALID_ARGUMENT: the value is not "auto" and not a device name
 *   (unparseable, e.g. "cpu: 1" or "cpu:00"; the message quotes it);
 * - PT_ERR_NO_DEVICE: no backend of that name, index out of range, or the
 *   backend loaded but has no usable device;
 * - PT_ERR_BACKEND_LOAD: the backend's plugin was not found or failed to
 *   load (for "auto": the cpu plugin). */
PT_API pt_device *pt_default_device(void);
/** Makes d the device pt_default_device returns from now on, in every
 * thread, overriding PORTABLE_BACKEND (as torch.set_default_device does);
 * pt_try_device and pt_all_devices then pick from d's backend. NULL goes
 * back to PORTABLE_BACKEND. PT_ERR_INVALID_ARGUMENT when d is not a device
 * this library handed out (pt_device_get, pt_cpu, pt_backend_device, ...). */
PT_API pt_status pt_set_default_device(pt_device *d);
/** Accelerator i of the chosen backend, else the CPU (like d2l's try_gpu).
 * With PORTABLE_BACKEND=cpu, device i of the cpu backend, else cpu:0.
 * NULL with pt_default_device's errors when PORTABLE_BACKEND cannot be
 * used (or PT_ERR_BACKEND_LOAD / PT_ERR_NO_DEVICE when the cpu fallback
 * itself is unusable). */
PT_API pt_device *pt_try_device(int i);
/** Writes up to cap devices of the chosen backend into out (every accelerator,
 * or just cpu when there is none; like d2l's try_all_gpus) and returns how
 * many there are (which may exceed cap; out may be NULL). -1 with
 * pt_default_device's errors when PORTABLE_BACKEND cannot be used. */
PT_API int pt_all_devices(pt_device **out, int cap);
/** Number of devices of a backend ("cpu", "cuda", "opencl"); 0 when the
 * backend is absent, unknown or NULL (no error is set: it never fails). */
PT_API int pt_device_count(const char *backend);
/** "cuda:0" etc. Never NULL: "(null)" for a NULL device. */
PT_API const char *pt_device_name(const pt_device *d);
/** Fills *out. Memory figures are read from the driver now (-1 when it
 * cannot say). PT_ERR_INVALID_ARGUMENT for a NULL d or out; otherwise what
 * the backend reports when it fails (PT_ERR_BACKEND, with its reason).
 *
 * pt_device_info(d, out) is a macro calling pt_device_info_sized(d, out,
 * sizeof *out): the library fills the first `size` bytes of the struct as
 * the caller compiled it (members it does not know are zeroed), so the
 * struct can grow without breaking callers. PT_ERR_INVALID_ARGUMENT for a
 * size below PT_DEVICE_PROPS_SIZE_V1. The plain symbol pt_device_info
 * (what programs built before the macro call; `(pt_device_info)(d, out)`)
 * fills the first PT_DEVICE_PROPS_SIZE_V1 bytes. */
PT_API pt_status pt_device_info_sized(const pt_device *d, pt_device_props *out, size_t size);
/** The plain symbol programs built before the sized entry point call: fills
 * the first PT_DEVICE_PROPS_SIZE_V1 bytes. */
PT_API pt_status pt_device_info(const pt_device *d, pt_device_props *out);
#define pt_device_info(d, out) pt_device_info_sized((d), (out), sizeof *(out))
/** Waits for everything queued on d. PT_ERR_INVALID_ARGUMENT for NULL;
 * otherwise the backend's failure (PT_ERR_BACKEND with the driver's reason,
 * also after the backend was shut down at exit). */
PT_API pt_status pt_device_synchronize(pt_device *d);
/** The caching allocator's counters for d, and the driver's total and free
 * figures (-1 each where the driver cannot say), into the first `size` bytes of
 * out (pt_memory_stats(d, out) is a macro passing sizeof *out, as
 * pt_device_info). PT_ERR_INVALID_ARGUMENT for a NULL d or out, or a size
 * below PT_MEMORY_USAGE_SIZE_V1; never fails otherwise. */
PT_API pt_status pt_memory_stats_sized(pt_device *d, pt_memory_usage *out, size_t size);
/** The plain symbol programs built before the sized entry point call: fills
 * the first PT_MEMORY_USAGE_SIZE_V1 bytes. */
PT_API pt_status pt_memory_stats(pt_device *d, pt_memory_usage *out);
#define pt_memory_stats(d, out) pt_memory_stats_sized((d), (out), sizeof *(out))
/** Starts d's peak (pt_memory_stats) again from the memory in use now, like
 * torch.cuda.reset_peak_memory_stats; the allocator's own collection keeps
 * its peak. PT_ERR_INVALID_ARGUMENT for a NULL d. */
PT_API pt_status pt_reset_peak_memory(pt_device *d);
/** Gives every cached (unused) segment of d back to the driver, and the pinned
 * host blocks d owns that are cached for reuse. Waits for d.
 * Free space inside segments that still hold a live tensor stays cached.
 * PT_ERR_INVALID_ARGUMENT for NULL, else pt_device_synchronize's errors. */
PT_API pt_status pt_empty_cache(pt_device *d);
/** The caching allocator's garbage collection on d: before a new driver
 * allocation would make reserved exceed ratio x peak (pt_memory_stats), wholly
 * free cached segments go back to the driver, oldest first (after waiting for
 * d). 0 turns it off; otherwise ratio >= 1. Default: PORTABLE_ALLOC_GC, else 1.5. */
PT_API pt_status pt_set_memory_gc(pt_device *d, double ratio);
/** Whether d's backend runs op kind `kind` (a row of op_table.h) in dtype t:
 * PT_OK, or PT_ERR_UNSUPPORTED with the backend's reason as the last error
 * (PT_ERR_DTYPE when the core itself never sends that pair, naming the
 * dtypes it does; PT_ERR_INVALID_ARGUMENT for a NULL d, or a kind or dtype
 * outside the tables; PT_ERR_BACKEND once the backend was shut down). Asks the plugin's supports member with a one-element
 * descriptor of the kind's family; queues nothing. f16/bf16 kinds the plugin
 * refuses count as supported when the core can compute them in f32 there
 * (the kind in f32 and COPY to and from f32 supported). */
PT_API pt_status pt_device_supports(pt_device *d, pt_op_kind kind, pt_dtype t);
/** The dtypes (bit t = dtype t) in which descriptors of `kind` have been
 * handed to a backend by this process so far, on any device, whether the
 * backend ran them or refused them. The conformance suite's coverage check
 * reads it; 0 for a kind outside the table. */
PT_API unsigned pt_op_dtypes_reached(pt_op_kind kind);

/** @name Backends (for tools: `portable devices`) */
/** @{ */

/** Number of backends the loader knows about (loaded or failed). */
PT_API int pt_backend_count(void);
/** Name of backend i ("cpu", "cuda", "opencl", or a plugin's own name);
 * NULL for i outside 0..pt_backend_count()-1. These enumeration calls set no
 * error. */
PT_API const char *pt_backend_name(int i);
/** Whether backend i loaded and has at least one device; when not, *reason
 * (if non-NULL) gets why: the dlopen text, a missing symbol, an ABI mismatch,
 * an init failure or "0 devices: <driver's reason>". When it did, *reason is
 * "" or names the plugin files of that name that were skipped, and why
 * (another user's file, a world-writable folder: docs/security.md). */
PT_API bool pt_backend_available(int i, const char **reason);
/** The plugin file backend i was loaded from ("" when none was found or i
 * is out of range). */
PT_API const char *pt_backend_path(int i);
/** Device j of backend i, NULL if out of range or unavailable. */
PT_API pt_device *pt_backend_device(int i, int j);
/** Devices of backend i; 0 if out of range or unavailable. */
PT_API int pt_backend_device_count(int i);

/** @} */
#ifdef __cplusplus
}
#endif
#endif
