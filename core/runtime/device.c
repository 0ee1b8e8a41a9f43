/* Devices: names, the PORTABLE_BACKEND choice, properties, synchronisation
 * and the allocator's counters. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* ---- Parsing names ---- */

/* Splits "cuda:1" into backend "cuda" and index 1 ("cuda" -> 0). Strict:
 *   name    = backend [":" index]
 *   backend = 1..cap-1 of [A-Za-z0-9_-]
 *   index   = "0" | [1-9][0-9]*      (no sign, space, leading zero or suffix)
 * so "cpu: 1", "cpu:+0", "cpu:00", "cpu:-1" and "cpu:1x" are not names. An
 * index too large for an int is kept as INT_MAX: a well-formed name of a
 * device that does not exist, never wrapped to a small index. */
static bool parse_device_name(const char *name, char *backend, size_t cap, int *index) {
    size_t len = 0;
    for (const char *p = name; *p && *p != ':'; ++p, ++len) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok || len + 1 >= cap) return false;
    }
    if (len == 0) return false;
    memcpy(backend, name, len);
    backend[len] = '\0';
    *index = 0;
    if (name[len] == '\0') return true;
    const char *digits = name + len + 1;
    if (digits[0] < '0' || digits[0] > '9') return false; /* empty, sign or space */
    if (digits[0] == '0' && digits[1] != '\0') return false;  /* "00", "01", "0x1" */
    int64_t v = 0;
    for (const char *p = digits; *p; ++p) {
        if (*p < '0' || *p > '9') return false;
        if (v <= INT_MAX) v = v * 10 + (*p - '0'); /* stops growing once past INT_MAX */
    }
    *index = v > INT_MAX ? INT_MAX : (int)v;
    return true;
}

/* Looks a backend up; on failure sets an error that says why it is missing.
 * load_failure: the status when the plugin itself did not load
 * (pt_device_get promises PT_ERR_NO_DEVICE for every absence; the
 * PORTABLE_BACKEND paths tell a broken plugin apart with
 * PT_ERR_BACKEND_LOAD). */
static pt__backend *usable_backend(const char *fn, const char *backend_name, const char *asked,
                                   pt_status load_failure) {
    pt__backend *b = pt__backend_load(pt__backend_find(backend_name));
    if (!b) {
        char known[256];
        pt__backend_names(known, sizeof known);
        pt__error(PT_ERR_NO_DEVICE, fn,
                  "%s: no backend '%s': no plugin libportable-%s.so in the search path (%s); "
                  "known backends: %s",
                  asked, backend_name, backend_name, pt__plugin_search_path(), known);
        return NULL;
    }
    if (!b->available) {
        pt__error(b->vt || b->dl ? PT_ERR_NO_DEVICE : load_failure, fn,
                  "%s: backend %s is unavailable: %s", asked, b->name, b->reason);
        return NULL;
    }
    return b;
}

pt_device *pt_device_get(const char *name) {
    if (!name) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_device_get", "name is NULL; pass e.g. \"cpu\" or \"cpu:0\"");
        return NULL;
    }
    char backend[32];
    int index;
    if (!parse_device_name(name, backend, sizeof backend, &index)) {
        char known[256];
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_device_get",
                  "'%.64s' is not a device name; use backend or backend:N, e.g. cpu, cpu:1 (N a "
                  "plain decimal index: no sign, spaces or leading zeros; backends found: %s)",
                  name, pt__backend_names(known, sizeof known));
        return NULL;
    }
    pt__backend *b = usable_backend("pt_device_get", backend, name, PT_ERR_NO_DEVICE);
    if (!b) return NULL;
    if (index >= b->ndev) {
        pt__error(PT_ERR_NO_DEVICE, "pt_device_get", "%s: backend %s has %d device%s (%s:0..%s:%d)",
                  name, b->name, b->ndev, b->ndev == 1 ? "" : "s", b->name, b->name, b->ndev - 1);
        return NULL;
    }
    return &b->devices[index];
}

pt_device *pt_cpu(void) {
    pt__backend *b = usable_backend("pt_cpu", "cpu", "cpu", PT_ERR_BACKEND_LOAD);
    return b ? &b->devices[0] : NULL;
}

/* ---- PORTABLE_BACKEND ---- */

typedef struct chosen_backend {
    pt__backend *backend; /* NULL on error (already reported) */
    int index;            /* default device index */
} chosen_backend;

/* PORTABLE_BACKEND=auto: the backends rank themselves (backend.h's
 * auto_priority, read from each plugin found without starting it); they
 * are started highest first, only as far as needed, and the first with a
 * device its auto_device_score accepts gives its best-scored device (with
 * today's plugins: a CUDA device, else an OpenCL GPU). None: the cpu. */
static bool choose_auto(chosen_backend *c) {
    enum { MAX_RANKED = 64 };
    pt__backend *ranked[MAX_RANKED];
    int32_t prio[MAX_RANKED];
    int n = 0;
    for (int i = 0; i < pt__backend_total() && n < MAX_RANKED; ++i) {
        pt__backend *b = pt__backend_at(i);
        int32_t p = pt__backend_auto_priority(b);
        if (p <= 0) continue;
        int k = n++; /* insertion, highest first, stable: file order on ties */
        while (k > 0 && prio[k - 1] < p) {
            ranked[k] = ranked[k - 1];
            prio[k] = prio[k - 1];
            --k;
        }
        ranked[k] = b;
        prio[k] = p;
    }
    for (int r = 0; r < n; ++r) {
        pt__backend *b = pt__backend_load(ranked[r]);
        int best = -1;
        int32_t best_score = 0;
        for (int i = 0; b->available && i < b->ndev; ++i) {
            int32_t s = pt__device_auto_score(&b->devices[i]);
            if (s > best_score) {
                best_score = s;
                best = i;
            }
        }
        if (best >= 0) {
            c->backend = b;
            c->index = best;
            return true;
        }
    }
    return false;
}

/* Resolves PORTABLE_BACKEND: auto as above; an explicit name loads that
 * plugin alone and never falls back. */
/* Set by pt_set_default_device; NULL: PORTABLE_BACKEND decides. */
static _Atomic(pt_device *) chosen_by_program;

static chosen_backend choose_backend(const char *fn) {
    chosen_backend c = {NULL, 0};
    pt_device *set = atomic_load(&chosen_by_program);
    if (set) {
        c.backend = set->backend;
        c.index = set->index;
        return c;
    }
    const char *env = getenv("PORTABLE_BACKEND");
    if (!env || !*env || strcmp(env, "auto") == 0) {
        if (choose_auto(&c)) return c;
        c.backend = usable_backend(fn, "cpu", "cpu", PT_ERR_BACKEND_LOAD);
        return c;
    }
    char name[32];
    if (!parse_device_name(env, name, sizeof name, &c.index)) {
        char known[256];
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "PORTABLE_BACKEND='%.64s' is not understood; use auto or a backend's name "
                  "(found: %s), optionally :N, N a plain decimal index: no sign, spaces or "
                  "leading zeros",
                  env, pt__backend_names(known, sizeof known));
        return c;
    }
    char asked[64];
    snprintf(asked, sizeof asked, "PORTABLE_BACKEND=%s", env);
    c.backend = usable_backend(fn, name, asked, PT_ERR_BACKEND_LOAD);
    if (c.backend && c.index >= c.backend->ndev) {
        pt__error(PT_ERR_NO_DEVICE, fn, "PORTABLE_BACKEND=%s but backend %s has %d device%s", env,
                  name, c.backend->ndev, c.backend->ndev == 1 ? "" : "s");
        c.backend = NULL;
    }
    return c;
}

/* Whether d is one of the devices the registry handed out (a pt_device * is
 * only ever &backend->devices[i]). */
static bool known_device(const pt_device *d) {
    for (int i = 0; i < pt__backend_total(); ++i) {
        pt__backend *b = pt__backend_at(i);
        /* only a loaded backend has devices; the acquire pairs with its
         * admission. Exactly a handle, not any address inside the array: a
         * pointer into the middle of one would be used as a device. */
        if (!b || !atomic_load_explicit(&b->loaded, memory_order_acquire) || !b->devices) continue;
        for (int j = 0; j < b->ndev; ++j)
            if (d == &b->devices[j]) return true;
    }
    return false;
}

pt_status pt_set_default_device(pt_device *d) {
    if (d && !known_device(d))
        return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_set_default_device",
                         "%p is not a device of this library; pass one from pt_device_get, "
                         "pt_cpu or pt_backend_device (or NULL to follow PORTABLE_BACKEND again)",
                         (void *)d);
    atomic_store(&chosen_by_program, d);
    return PT_OK;
}

pt_device *pt_default_device(void) {
    chosen_backend c = choose_backend("pt_default_device");
    return c.backend ? &c.backend->devices[c.index] : NULL;
}

pt_device *pt_try_device(int i) {
    chosen_backend c = choose_backend("pt_try_device");
    if (!c.backend) return NULL;
    if (i >= 0 && i < c.backend->ndev) return &c.backend->devices[i];
    return pt_cpu();
}

int pt_all_devices(pt_device **out, int cap) {
    chosen_backend c = choose_backend("pt_all_devices");
    if (!c.backend) return -1;
    for (int i = 0; out && i < c.backend->ndev && i < cap; ++i) out[i] = &c.backend->devices[i];
    return c.backend->ndev;
}

int pt_device_count(const char *backend) {
    if (!backend) return 0;
    pt__backend *b = pt__backend_load(pt__backend_find(backend));
    return b && b->available ? b->ndev : 0;
}

/* ---- Properties ---- */

const char *pt_device_name(const pt_device *d) { return d ? d->name : "(null)"; }

static pt_status check_device(const char *fn, const pt_device *d) {
    if (!d) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "device is NULL (did pt_device_get fail? see its error)");
    return PT_OK;
}

/* The checks of a sized query: a device, an out struct, and a size at
 * least the first release's (min) of `type`. */
static pt_status check_sized(const char *fn, const pt_device *d, const void *out, size_t size,
                             size_t min, const char *type) {
    pt_status s = check_device(fn, d);
    if (s) return s;
    if (!out) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "out is NULL; pass a %s to fill", type);
    if (size < min)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "size %zu is smaller than any %s (%zu); pass sizeof *out (the %s macro does)",
                         size, type, min, fn);
    return PT_OK;
}

/* The first `size` bytes of the library's full struct at full: zeroes past
 * what the library knows, nothing written past size. */
static void give_sized(void *out, size_t size, const void *full, size_t full_size) {
    memset(out, 0, size);
    memcpy(out, full, size < full_size ? size : full_size);
}

/* Fills a whole pt_device_props of this library's size, then gives the
 * caller the first `size` bytes: members the caller's copy of the header
 * does not have are never written, members it has that this library does
 * not know are zeroed. */
static pt_status device_info(const char *fn, const pt_device *d, pt_device_props *out, size_t size) {
    pt_status s = check_sized(fn, d, out, size, PT_DEVICE_PROPS_SIZE_V1, "pt_device_props");
    if (s) return s;
    pt_device_props p;
    memset(&p, 0, sizeof p);
    s = pt__device_info_call(d, &p);
    if (s) return pt__backend_failed(s, fn, d);
    snprintf(p.backend, sizeof p.backend, "%.15s", d->backend->name);
    int64_t free_b, total_b;
    if (pt__memory_info_call(d, &free_b, &total_b) == PT_OK) {
        p.memory_free = free_b;
        p.memory_total = total_b;
    } else {
        pt__take_backend_message();
    }
    pt_memory_usage m;
    pt_memory_stats_sized((pt_device *)d, &m, sizeof m);
    p.memory_process = m.reserved;
    give_sized(out, size, &p, sizeof p);
    return PT_OK;
}

pt_status pt_device_info_sized(const pt_device *d, pt_device_props *out, size_t size) {
    return device_info("pt_device_info", d, out, size);
}

/* The symbol programs built before the sized entry point call. */
pt_status(pt_device_info)(const pt_device *d, pt_device_props *out) {
    return device_info("pt_device_info", d, out, PT_DEVICE_PROPS_SIZE_V1);
}

pt_status pt_device_synchronize(pt_device *d) {
    pt_status s = check_device("pt_device_synchronize", d);
    return s ? s : pt__synchronize("pt_device_synchronize", d);
}

static pt_status memory_stats(pt_device *d, pt_memory_usage *out, size_t size) {
    static const char fn[] = "pt_memory_stats";
    pt_status s = check_sized(fn, d, out, size, PT_MEMORY_USAGE_SIZE_V1, "pt_memory_usage");
    if (s) return s;
    pt_memory_usage m;
    memset(&m, 0, sizeof m);
    pt__spin_lock(&d->alloc.lock);
    m.in_use = d->alloc.in_use;
    m.cached = d->alloc.cached;
    m.peak = d->alloc.shown_peak;
    m.reserved = d->alloc.in_use + d->alloc.cached;
    pt__spin_unlock(&d->alloc.lock);
    pt__pinned_stats(d, &m.pinned_cached, &m.pinned_allocs, &m.pinned_reuses);
    if (pt__memory_info_call(d, &m.device_free, &m.device_total) != PT_OK) {
        (void)pt__take_backend_message(); /* documented: unknown, not an error */
        m.device_free = m.device_total = -1;
    }
    give_sized(out, size, &m, sizeof m);
    return PT_OK;
}

pt_status pt_reset_peak_memory(pt_device *d) {
    pt_status s = check_device("pt_reset_peak_memory", d);
    if (s) return s;
    pt__spin_lock(&d->alloc.lock);
    d->alloc.shown_peak = d->alloc.in_use;
    pt__spin_unlock(&d->alloc.lock);
    return PT_OK;
}

pt_status pt_memory_stats_sized(pt_device *d, pt_memory_usage *out, size_t size) {
    return memory_stats(d, out, size);
}

pt_status(pt_memory_stats)(pt_device *d, pt_memory_usage *out) {
    return memory_stats(d, out, PT_MEMORY_USAGE_SIZE_V1);
}

/* ---- Backends, for tools ----
 * Names and paths come from the scan alone; asking whether a backend is
 * available, or for its devices, loads its plugin (so `portable devices`,
 * which asks for each, loads them all). */

int pt_backend_count(void) { return pt__backend_total(); }

const char *pt_backend_name(int i) {
    pt__backend *b = pt__backend_at(i);
    return b ? b->name : NULL;
}

bool pt_backend_available(int i, const char **reason) {
    pt__backend *b = pt__backend_load(pt__backend_at(i));
    if (reason) *reason = b ? (b->available ? b->skipped : b->reason) : "no such backend";
    return b && b->available;
}

const char *pt_backend_path(int i) {
    pt__backend *b = pt__backend_at(i);
    return b ? b->path : "";
}

int pt_backend_device_count(int i) {
    pt__backend *b = pt__backend_load(pt__backend_at(i));
    return b && b->available ? b->ndev : 0;
}

pt_device *pt_backend_device(int i, int j) {
    pt__backend *b = pt__backend_load(pt__backend_at(i));
    return b && b->available && j >= 0 && j < b->ndev ? &b->devices[j] : NULL;
}

pt_status pt_device_supports(pt_device *d, pt_op_kind kind, pt_dtype t) {
    static const char fn[] = "pt_device_supports";
    pt_status s = check_device(fn, d);
    if (s) return s;
    if ((unsigned)kind >= (unsigned)PT_OP_COUNT)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "op kind %d is outside the op table (0..%d); use a PT_OP_* value",
                         (int)kind, PT_OP_COUNT - 1);
    if ((unsigned)t >= (unsigned)PT_DTYPE_COUNT)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dtype %d is not a pt_dtype (0..%d)", (int)t,
                         PT_DTYPE_COUNT - 1);
    if (!pt_op_takes_dtype(kind, t)) {
        char takes[64] = "";
        size_t used = 0;
        for (int u = 0; u < PT_DTYPE_COUNT; ++u)
            if (pt_op_takes_dtype(kind, (pt_dtype)u))
                used += (size_t)snprintf(takes + used, sizeof takes - used, "%s%s",
                                         used ? ", " : "", pt_dtype_name((pt_dtype)u));
        return pt__error(PT_ERR_DTYPE, fn, "the core never sends %s in %s (it sends %s)",
                         pt_op_name(kind), pt_dtype_name(t), takes);
    }
    pt_op op;
    pt__probe_op(kind, t, &op);
    s = pt__supports_call(fn, d, &op);
    if (s != PT_ERR_UNSUPPORTED || !pt_dtype_is_half(t) || kind == PT_OP_COPY) return s;
    /* A 16-bit kind the plugin refuses still runs when the core can compute
     * it in f32 (half_widen.c): the kind in f32 and COPY both ways. */
    const char *why = pt_last_error();
    char refused[512];
    snprintf(refused, sizeof refused, "%s", why);
    pt_op f32, to32, from32;
    pt__probe_op(kind, PT_F32, &f32);
    pt__probe_op(PT_OP_COPY, t, &to32);
    to32.out.dtype = PT_F32;
    pt__probe_op(PT_OP_COPY, PT_F32, &from32);
    from32.out.dtype = t;
    if (pt__supports_call(fn, d, &f32) == PT_OK && pt__supports_call(fn, d, &to32) == PT_OK &&
        pt__supports_call(fn, d, &from32) == PT_OK) {
        pt_clear_error();
        return PT_OK;
    }
    const size_t pre = strlen(fn);
    const char *reason = strncmp(refused, fn, pre) == 0 && refused[pre] == ':' ? refused + pre + 2 : refused;
    return pt__error(PT_ERR_UNSUPPORTED, fn, "%s", reason);
}
