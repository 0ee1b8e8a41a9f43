/* The one file that calls a backend plugin's vtable (SQLite's VFS rule: one
 * owner of every call through the table). Each wrapper turns a failed call
 * into an error naming the public function and the device, with the
 * plugin's own reason, and each optional member's documented default
 * (backend.h) lives in its wrapper and nowhere else. A test greps the core
 * to keep it that way. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "runtime/trace_internal.h"

static inline const pt_backend_vtable *vt_of(const pt_device *d) { return d->backend->vt; }

static inline pt_status checked(pt_status s, const char *fn, const pt_device *d) {
    return s == PT_OK ? PT_OK : pt__backend_failed(s, fn, d);
}

/* ---- Admission and lifetime ---- */

/* Members every plugin must provide; the rest are optional. */
static const char *missing_required_member(const pt_backend_vtable *vt) {
#define PT__REQUIRE(member) \
    if (!vt->member) return #member;
    PT__REQUIRE(init)
    PT__REQUIRE(device_count)
    PT__REQUIRE(device_info)
    PT__REQUIRE(alloc)
    PT__REQUIRE(free)
    PT__REQUIRE(copy_h2d)
    PT__REQUIRE(copy_d2h)
    PT__REQUIRE(copy_d2d)
    PT__REQUIRE(execute)
    PT__REQUIRE(synchronize)
#undef PT__REQUIRE
    return NULL;
}

bool pt__backend_check_vtable(const char *path, const pt_backend_vtable *vt, char *reason,
                              size_t cap) {
    if (vt->abi_version != PT_BACKEND_ABI_VERSION) {
        snprintf(reason, cap,
                 "ABI version mismatch: %s has ABI version %u, libportable expects %u; "
                 "rebuild the plugin",
                 path, vt->abi_version, PT_BACKEND_ABI_VERSION);
        return false;
    }
    size_t needed = offsetof(pt_backend_vtable, synchronize) + sizeof vt->synchronize;
    if (vt->struct_size < needed) {
        snprintf(reason, cap,
                 "%s's vtable is %u bytes, ABI version %u needs at least %zu; rebuild the plugin",
                 path, vt->struct_size, PT_BACKEND_ABI_VERSION, needed);
        return false;
    }
    const char *missing = missing_required_member(vt);
    if (missing) {
        snprintf(reason, cap, "%s's vtable lacks the required member %s", path, missing);
        return false;
    }
    return true;
}

int pt__backend_start(pt__backend *b) {
    const pt_backend_vtable *vt = b->vt;
    b->host_visible = vt->host_visible;
    pt_status s = vt->init();
    if (s != PT_OK) {
        snprintf(b->reason, sizeof b->reason, "init failed (%s): %s", pt_status_name(s),
                 pt__take_backend_message());
        b->vt = NULL; /* never call into a plugin whose init failed */
        return 0;     /* keep it loaded: init may have registered atexit handlers */
    }
    int n = vt->device_count();
    if (n <= 0) {
        /* unavailable_reason (optional) default: "no devices" */
        const char *why = vt->unavailable_reason ? vt->unavailable_reason() : NULL;
        snprintf(b->reason, sizeof b->reason, "0 devices: %s", why && *why ? why : "no devices");
        return 0;
    }
    return n;
}

void pt__backend_shutdown(pt__backend *b) {
    if (!b->vt || b->shut_down) return;
    b->shut_down = true;
    /* shutdown (optional) default: nothing */
    if (b->vt->shutdown) b->vt->shutdown();
}

/* After shutdown nothing may reach the plugin (a tensor released by a later
 * exit handler, say): those calls fail instead. */
static pt_status after_shutdown(const char *fn, const pt_device *d) {
    return pt__error(PT_ERR_BACKEND, fn, "%s: the %s backend was shut down at process exit",
                     d->name, d->backend->name);
}

/* ---- Devices ---- */

pt_status pt__device_info_call(const pt_device *d, pt_device_props *out) {
    return vt_of(d)->device_info(d->index, out);
}

pt_status pt__memory_info_call(const pt_device *d, int64_t *free_bytes, int64_t *total_bytes) {
    const pt_backend_vtable *vt = vt_of(d);
    if (vt->memory_info) return vt->memory_info(d->index, free_bytes, total_bytes);
    /* memory_info (optional) default: device_info's figures */
    pt_device_props p;
    pt_status s = vt->device_info(d->index, &p);
    if (s == PT_OK) {
        *free_bytes = p.memory_free;
        *total_bytes = p.memory_total;
    }
    return s;
}

/* ---- Memory ---- */

pt_status pt__alloc_call(pt_device *d, size_t bytes, void **buf) {
    if (d->backend->shut_down) return PT_ERR_BACKEND;
    if (pt__tracing()) pt__trace_note_driver_alloc();
    return vt_of(d)->alloc(d->index, bytes, buf);
}

void pt__free_call(pt_device *d, void *buf) {
    if (!d->backend->shut_down) vt_of(d)->free(d->index, buf);
}

pt_status pt__host_alloc_call(const char *fn, pt_device *d, size_t bytes, void **ptr) {
    const pt_backend_vtable *vt = vt_of(d);
    if (vt->host_alloc && vt->host_free) return checked(vt->host_alloc(d->index, bytes, ptr), fn, d);
    /* host_alloc/host_free (optional) default: malloc/free */
    *ptr = malloc(bytes ? bytes : 1);
    if (!*ptr)
        return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for %zu bytes", bytes);
    return PT_OK;
}

bool pt__host_alloc_try(pt_device *d, size_t bytes, void **ptr) {
    const pt_backend_vtable *vt = vt_of(d);
    if (vt->host_alloc && vt->host_free) {
        if (vt->host_alloc(d->index, bytes, ptr) == PT_OK) return true;
        pt__take_backend_message(); /* the plugin's reason goes unused */
        return false;
    }
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr != NULL;
}

void pt__host_free_call(pt_device *d, void *ptr) {
    const pt_backend_vtable *vt = vt_of(d);
    if (vt->host_alloc && vt->host_free) {
        if (!d->backend->shut_down) vt->host_free(d->index, ptr);
    } else {
        free(ptr);
    }
}

/* Appended members exist only in tables at least that large. */
#define PT__HAS_MEMBER(vt, member) \
    ((vt)->struct_size >= offsetof(pt_backend_vtable, member) + sizeof(vt)->member && (vt)->member)

bool pt__marker_supported(const pt_device *d) {
    const pt_backend_vtable *vt = vt_of(d);
    /* marker_* (optional, all or none) default: the cache counts synchronize calls */
    return PT__HAS_MEMBER(vt, marker_record) && PT__HAS_MEMBER(vt, marker_passed) &&
           PT__HAS_MEMBER(vt, marker_release);
}

pt_status pt__marker_record(pt_device *d, void **marker) {
    *marker = NULL;
    if (d->backend->shut_down || !pt__marker_supported(d)) return PT_ERR_UNSUPPORTED;
    return vt_of(d)->marker_record(d->index, marker);
}

bool pt__marker_passed(pt_device *d, void *marker) {
    return !d->backend->shut_down && vt_of(d)->marker_passed(d->index, marker);
}

void pt__marker_release(pt_device *d, void *marker) {
    if (!d->backend->shut_down) vt_of(d)->marker_release(d->index, marker);
}

/* ---- Execution ---- */

/* Every kind and dtype that reached any backend (pt_op_dtypes_reached). */
static _Atomic unsigned reached[PT_OP_COUNT];

unsigned pt_op_dtypes_reached(pt_op_kind kind) {
    if ((unsigned)kind >= (unsigned)PT_OP_COUNT) return 0;
    return atomic_load_explicit(&reached[kind], memory_order_relaxed);
}

void pt__note_reached(const pt_op *op) {
    const unsigned bit = PT_DTYPE_BIT(op->dtype);
    if ((unsigned)op->kind < (unsigned)PT_OP_COUNT &&
        !(atomic_load_explicit(&reached[op->kind], memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(&reached[op->kind], bit, memory_order_relaxed);
}

/* Asks supports once per (device, kind, dtype) that it accepted; a refusal
 * is asked again next time (the plugin may refuse one operand layout only). */
static pt_status check_supported(pt_device *d, const pt_op *op, unsigned bit) {
    const pt_backend_vtable *vt = vt_of(d);
    /* supports (optional) default: execute decides */
    if (!vt->supports) return PT_OK;
    pt_status s = vt->supports(d->index, op);
    if (s == PT_OK) atomic_fetch_or_explicit(&d->supported[op->kind], bit, memory_order_relaxed);
    return s;
}

/* Device stamps for traces (backend.h). */
bool pt__stamps_supported(const pt_device *d) {
    const pt_backend_vtable *vt = vt_of(d);
    /* stamp_* (optional, all or none) default: no device spans */
    return !d->backend->shut_down && PT__HAS_MEMBER(vt, stamp_record) &&
           PT__HAS_MEMBER(vt, stamp_time) && PT__HAS_MEMBER(vt, stamp_release);
}

pt_status pt__stamp_record(pt_device *d, void **stamp) {
    *stamp = NULL;
    if (!pt__stamps_supported(d)) return PT_ERR_UNSUPPORTED;
    pt_status s = vt_of(d)->stamp_record(d->index, stamp);
    if (s != PT_OK) (void)pt__take_backend_message(); /* a trace without this span, no error */
    return s;
}

pt_status pt__stamp_time(pt_device *d, void *stamp, int64_t *ns) {
    if (!pt__stamps_supported(d)) return PT_ERR_UNSUPPORTED;
    pt_status s = vt_of(d)->stamp_time(d->index, stamp, ns);
    if (s != PT_OK) (void)pt__take_backend_message();
    return s;
}

void pt__stamp_release(pt_device *d, void *stamp) {
    if (stamp && pt__stamps_supported(d)) vt_of(d)->stamp_release(d->index, stamp);
}

pt_status pt__execute(const char *fn, pt_device *d, pt_op *op) {
    if (pt__tracing()) return pt__trace_execute(fn, d, op);
    return pt__execute_untraced(fn, d, op);
}

pt_status pt__execute_untraced(const char *fn, pt_device *d, pt_op *op) {
    if (d->backend->shut_down) return after_shutdown(fn, d);
    pt__capture *const capture = pt__capture_now;
    if (capture && d != pt__capture_device()) return pt__capture_refuse_device(fn, d);
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (info && (info->family == PT_OP_FAMILY_ELEMENTWISE || info->family == PT_OP_FAMILY_CREATION))
        pt__coalesce(op);
    const unsigned bit = PT_DTYPE_BIT(op->dtype);
    if (!(atomic_load_explicit(&reached[op->kind], memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(&reached[op->kind], bit, memory_order_relaxed);
    if (!(atomic_load_explicit(&d->supported[op->kind], memory_order_relaxed) & bit)) {
        pt_status s = check_supported(d, op, bit);
        if (s == PT_ERR_UNSUPPORTED && pt_dtype_is_half(op->dtype) && op->kind != PT_OP_COPY) {
            /* No 16-bit kernel: the same op in f32 through the plugin's own
             * conversions (half_widen.c). */
            (void)pt__take_backend_message();
            return pt__execute_widened(fn, d, op);
        }
        if (s != PT_OK) {
            s = pt__backend_failed(s, fn, d);
            return capture ? pt__capture_fail(s) : s;
        }
    }
    if (capture) return pt__capture_record(fn, d, op);
    return checked(vt_of(d)->execute(d->index, op), fn, d);
}

pt_status pt__supports_call(const char *fn, pt_device *d, const pt_op *op) {
    if (d->backend->shut_down) return after_shutdown(fn, d);
    const pt_backend_vtable *vt = vt_of(d);
    return vt->supports ? checked(vt->supports(d->index, op), fn, d) : PT_OK;
}

pt_status pt__synchronize(const char *fn, pt_device *d) {
    if (pt__capture_now && d == pt__capture_device())
        return pt__capture_refuse_transfer(fn, d, "waits for the device to read a value on the host");
    return pt__wait_device(fn, d);
}

pt_status pt__wait_device(const char *fn, pt_device *d) {
    if (d->backend->shut_down) return after_shutdown(fn, d);
    /* Tickets for the pinned cache: a completed synchronize that began after
     * a block's release proves the queue is past it. */
    const uint64_t ticket = atomic_fetch_add(&d->pinned.sync_started, 1) + 1;
    pt__trace_mark m;
    const bool traced = pt__tracing();
    if (traced) pt__trace_sync_begin(&m, fn, d);
    pt_status s = vt_of(d)->synchronize(d->index);
    if (traced) pt__trace_sync_end(&m, d, s);
    if (s == PT_OK) {
        uint64_t done = atomic_load(&d->pinned.sync_done);
        while (done < ticket && !atomic_compare_exchange_weak(&d->pinned.sync_done, &done, ticket)) {}
    }
    return checked(s, fn, d);
}

/* ---- Transfers ---- */

/* Returns the plugin's copy call (its failure named after fn and dev),
 * inside a trace span while tracing. blocking: complete when it returns. */
#define PT__TRACED_COPY(dev, dir, bytes, pinned, blocking, call)                 \
    do {                                                                         \
        pt__trace_mark m_;                                                       \
        const bool traced_ = pt__tracing();                                      \
        if (traced_) pt__trace_copy_begin(&m_, fn, dev, dir, bytes, pinned);     \
        pt_status s_ = checked(call, fn, dev);                                   \
        if (traced_) pt__trace_copy_end(&m_, dev, dir, blocking, s_);            \
        return s_;                                                               \
    } while (0)

/* True when a copy of bytes on d does not go to the plugin, with *s its
 * status: PT_OK for no bytes, an error after shutdown or during this
 * thread's capture on d (which refuses it, saying it `what`). */
static bool copy_skipped(const char *fn, pt_device *d, size_t bytes, const char *what, pt_status *s) {
    *s = PT_OK;
    if (bytes == 0) return true;
    if (d->backend->shut_down) *s = after_shutdown(fn, d);
    else if (pt__capture_now && d == pt__capture_device()) *s = pt__capture_refuse_transfer(fn, d, what);
    return *s != PT_OK;
}

pt_status pt__copy_h2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t bytes, bool async) {
    pt_status s;
    if (copy_skipped(fn, d, bytes, "uploads host data", &s)) return s;
    PT__TRACED_COPY(d, "h2d", bytes, async, !async,
                    vt_of(d)->copy_h2d(d->index, dst, dst_off, src, bytes, async));
}

/* Staging pays where the host and the device work at the same time, and
 * needs queue markers (without them a block could not be reused before the
 * next synchronize). On a device that is the host's own cores (an OpenCL
 * CPU device) the host running ahead takes a core from the kernels, which
 * costs more than the wait on some implementations and less on others, so
 * the plugin's upload_staging answers first; without an answer such a
 * device keeps synchronous uploads. PORTABLE_STAGED_UPLOADS=on|off
 * overrides both. */
static bool staged_uploads(pt_device *d) {
    int v = atomic_load(&d->staged_uploads);
    if (v == 0) {
        static const char *const choices[] = {"auto", "on", "off", NULL};
        const int choice = pt_env_choice("PORTABLE_STAGED_UPLOADS", choices, 0);
        bool on = !d->backend->host_visible && pt__marker_supported(d) && choice != 2;
        if (on && choice == 0) {
            const pt_backend_vtable *vt = vt_of(d);
            const int32_t plugin = PT__HAS_MEMBER(vt, upload_staging) ? vt->upload_staging(d->index) : 0;
            pt_device_props props = {0};
            on = plugin > 0 || (plugin == 0 && pt__device_info_call(d, &props) == PT_OK && props.type != PT_DEVICE_CPU);
            pt__take_backend_message(); /* a refused question only means: do not stage */
        }
        v = on ? 1 : 2;
        atomic_store(&d->staged_uploads, v);
    }
    return v == 1;
}

pt_status pt__upload(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                     size_t bytes) {
    pt_status s;
    if (copy_skipped(fn, d, bytes, "uploads host data", &s)) return s;
    /* A synchronous upload waits for everything queued before it, so the
     * device would idle while the host prepares the work after it. A small
     * one is copied into a pinned block and queued instead; the block goes
     * back to the cache at once, reused when the queue has passed the copy. */
    void *staging = bytes <= PT__STAGED_UPLOAD_MAX && staged_uploads(d) ? pt__pinned_staging(d, bytes) : NULL;
    if (!staging) return pt__copy_h2d(fn, d, dst, dst_off, src, bytes, false);
    memcpy(staging, src, bytes);
    s = pt__copy_h2d(fn, d, dst, dst_off, staging, bytes, true);
    pt__host_free(d, staging);
    return s;
}

pt_status pt__copy_d2h(const char *fn, pt_device *d, void *dst, const void *src, size_t src_off,
                       size_t bytes, bool async) {
    pt_status s;
    if (copy_skipped(fn, d, bytes, "reads a value to the host", &s)) return s;
    PT__TRACED_COPY(d, "d2h", bytes, async, !async,
                    vt_of(d)->copy_d2h(d->index, dst, src, src_off, bytes, async));
}

pt_status pt__copy_d2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t src_off, size_t bytes) {
    pt_status s;
    if (copy_skipped(fn, d, bytes, "copies device memory outside an op", &s)) return s;
    PT__TRACED_COPY(d, "d2d", bytes, false, false,
                    vt_of(d)->copy_d2d(d->index, dst, dst_off, src, src_off, bytes));
}

pt_status pt__copy_peer(const char *fn, pt_device *dst_dev, void *dst, size_t dst_off,
                        pt_device *src_dev, const void *src, size_t src_off, size_t bytes) {
    if (bytes == 0) return PT_OK;
    if (src_dev->backend->shut_down) return after_shutdown(fn, src_dev);
    if (dst_dev->backend->shut_down) return after_shutdown(fn, dst_dev);
    if (pt__capture_now && (src_dev == pt__capture_device() || dst_dev == pt__capture_device()))
        return pt__capture_refuse_transfer(fn, pt__capture_device(), "copies between devices");
    const pt_backend_vtable *vt = vt_of(src_dev);
    if (src_dev->backend == dst_dev->backend && vt->copy_peer)
        PT__TRACED_COPY(src_dev, "peer", bytes, false, false,
                        vt->copy_peer(dst_dev->index, dst, dst_off, src_dev->index, src, src_off,
                                      bytes));
    /* copy_peer (optional) default: stage through pinned host memory of the
     * source device (so the read can run at full speed), synchronously. */
    void *staging = NULL;
    pt_status s = pt__host_alloc(fn, src_dev, bytes, &staging);
    if (s) return s;
    s = pt__copy_d2h(fn, src_dev, staging, src, src_off, bytes, false);
    if (!s) s = pt__copy_h2d(fn, dst_dev, dst, dst_off, staging, bytes, false);
    pt__host_free(src_dev, staging);
    return s;
}

/* ---- What the core learns of a backend from its table (appended members;
 * defaults as backend.h documents them) ---- */

int32_t pt__vtable_auto_priority(const pt_backend_vtable *vt) {
    /* auto_priority (optional) default: 0, never picked by auto */
    return vt && PT__HAS_MEMBER(vt, auto_priority) ? vt->auto_priority : 0;
}

int32_t pt__device_auto_score(pt_device *d) {
    const pt_backend_vtable *vt = vt_of(d);
    if (PT__HAS_MEMBER(vt, auto_device_score)) return vt->auto_device_score(d->index);
    /* auto_device_score (optional) default: 1 for a GPU, else 0 */
    pt_device_props p;
    return pt__device_info_call(d, &p) == PT_OK && p.type == PT_DEVICE_GPU ? 1 : 0;
}

int32_t pt__backend_dlpack_device_type(const pt__backend *b) {
    const pt_backend_vtable *vt = b->vt;
    return vt && PT__HAS_MEMBER(vt, dlpack_device_type) ? vt->dlpack_device_type : 0;
}

int32_t pt__backend_dlpack_host_device_type(const pt__backend *b) {
    const pt_backend_vtable *vt = b->vt;
    return vt && PT__HAS_MEMBER(vt, dlpack_host_device_type) ? vt->dlpack_host_device_type : 0;
}

bool pt__backend_dlpack_imports(const pt__backend *b) {
    const pt_backend_vtable *vt = b->vt;
    return vt && PT__HAS_MEMBER(vt, dlpack_imports) && vt->dlpack_imports;
}

/* ---- Graph replay (backend.h graph_*; the core's default below) ---- */

/* What *inst holds once the plugin declined to instantiate a graph: the
 * default loop from then on, without asking again. */
static char declined_instance;

static bool has_graph_members(const pt_backend_vtable *vt) {
    /* graph_* (optional, all three or none) default: execute each op in order */
    return PT__HAS_MEMBER(vt, graph_instantiate) && PT__HAS_MEMBER(vt, graph_launch) &&
           PT__HAS_MEMBER(vt, graph_destroy);
}

pt_status pt__graph_prepare_call(pt_device *d, void **inst, const pt_op *ops, int32_t n_ops,
                                 bool *own) {
    static const char fn[] = "pt_graph_replay";
    *own = false;
    if (d->backend->shut_down) return after_shutdown(fn, d);
    const pt_backend_vtable *vt = vt_of(d);
    if (*inst == &declined_instance || !has_graph_members(vt)) return PT_OK;
    if (!*inst) {
        pt_status s = vt->graph_instantiate(d->index, ops, n_ops, inst);
        if (s == PT_ERR_UNSUPPORTED) {
            (void)pt__take_backend_message();
            *inst = &declined_instance;
            return PT_OK;
        }
        if (s != PT_OK) {
            *inst = NULL;
            return pt__backend_failed(s, fn, d);
        }
    }
    *own = true;
    return PT_OK;
}

/* Op i of n_ops failed with s in a replay's loop over execute. */
static pt_status replayed_op_failed(pt_status s, pt_device *d, const pt_op *ops, int32_t i,
                                    int32_t n_ops) {
    char why[768];
    snprintf(why, sizeof why, "%s", pt__take_backend_message());
    return pt__error(s, "pt_graph_replay", "%s: op %d of %d (%s) failed: %s", d->name, (int)i,
                     (int)n_ops, pt_op_name(ops[i].kind), why);
}

pt_status pt__graph_execute_call(pt_device *d, const pt_op *ops, int32_t i, int32_t n_ops) {
    pt_status s = vt_of(d)->execute(d->index, &ops[i]);
    return s == PT_OK ? PT_OK : replayed_op_failed(s, d, ops, i, n_ops);
}

pt_status pt__graph_launch_call(pt_device *d, void **inst, const pt_op *ops, int32_t n_ops,
                                const int32_t *changed, int32_t n_changed) {
    bool own;
    pt_status s = pt__graph_prepare_call(d, inst, ops, n_ops, &own);
    if (s != PT_OK) return s;
    const pt_backend_vtable *vt = vt_of(d);
    if (own)
        return checked(vt->graph_launch(d->index, *inst, ops, n_ops, changed, n_changed),
                       "pt_graph_replay", d);
    /* The default: the recorded ops, already validated, coalesced and
     * planned, straight to execute. */
    const int dev = d->index;
    pt_status (*execute)(int, const pt_op *) = vt->execute;
    for (int32_t i = 0; i < n_ops; ++i) {
        s = execute(dev, &ops[i]);
        if (s != PT_OK) return replayed_op_failed(s, d, ops, i, n_ops);
    }
    return PT_OK;
}

void pt__graph_release_call(pt_device *d, void *inst) {
    if (!inst || inst == &declined_instance || d->backend->shut_down) return;
    vt_of(d)->graph_destroy(d->index, inst);
}
