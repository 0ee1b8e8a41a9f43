/* libportable CUDA backend — a simulated CUDA runtime, for running the real
 * plugin (its host C code and its kernels, built by the host compiler
 * through tests/kernel_emulation.h) on machines without a GPU.
 *
 * It implements the part of the CUDA runtime API the plugin calls, with the
 * behaviour the plugin relies on, so that the conformance suite, the tour
 * and the nets tests can run on `cuda` in CI:
 *   - streams are asynchronous: work is queued and run later, in order, by
 *     one "device" thread (a single queue for every stream is one legal
 *     schedule of CUDA's per-stream ordering); PTCU_SIM_DELAY_US makes that
 *     thread sleep before each item so that a missing synchronisation shows
 *     up as wrong data instead of passing by luck;
 *   - copies follow cudaMemcpyAsync's rules: from pageable host memory the
 *     source is staged at the call, to pageable host memory the call waits,
 *     pinned memory (cudaHostAlloc) is read and written when the copy runs;
 *   - device memory is checked: a copy or free outside what cudaMalloc gave
 *     on that device fails with cudaErrorInvalidValue, cudaMalloc fails
 *     with cudaErrorMemoryAllocation past the device's memory, and
 *     cudaFree/cudaFreeHost wait for the device as the real ones do;
 *   - the admission paths can be provoked: no driver (libcuda.so.1 not
 *     loadable, as the real runtime checks), PTCU_SIM_DEVICES=N (0: no
 *     device), PTCU_SIM_FAIL_CONTEXT=i,j (cudaSetDevice fails on those),
 *     PTCU_SIM_COMPUTE_CAPABILITY=90,75 (per device; below 8.0 there is no
 *     kernel image for it), PTCU_SIM_MEMORY_MB, PTCU_SIM_SMS,
 *     PTCU_SIM_SHARED_OPTIN_KB (the shared memory a block may opt in to
 *     with cudaFuncSetAttribute: 227 as on sm_90; 48, the default without
 *     opting in, makes the kernels that size their tiles to it use small
 *     ones);
 *   - stream capture and graphs (the part the plugin's launch_graph.c
 *     uses): while a stream captures, what would be queued on it (kernel
 *     launches, cuBLAS calls, device copies) becomes a node of the capture's
 *     graph instead, in order; what cannot be captured (a synchronisation,
 *     a copy from or to pageable host memory, an event) fails with
 *     cudaErrorStreamCaptureUnsupported and invalidates the capture, as in
 *     CUDA; cudaGraphInstantiate flattens a graph (child graphs included)
 *     into its executable form, cudaGraphLaunch queues that as one item, and
 *     cudaGraphExecChildGraphNodeSetParams swaps a child's nodes for the
 *     replays queued afterwards, when the new child has the same topology.
 *
 * What it cannot show: timing, real concurrency between streams, the GPU
 * compiler's code, and memory errors inside kernels. The plugin's real
 * build (nvcc, cudart, cuBLAS) is what runs on GPUs; this exists for tests. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim_internal.h"

/* What a graph node does: the kinds a capture makes, and child graphs. */
enum class NodeKind { kernel, memcpy, child };
using Work_fn = std::function<void()>;

/* A graph: its nodes in the order they were added. Dependencies are only
 * checked (a node may depend only on nodes added before it), so insertion
 * order is one legal schedule of the graph, as one queue is of streams. */
struct CUgraph_st {
    std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
};
/* A node: one piece of work, or (NodeKind::child) a copy of a child graph
 * (CUDA clones the child at cudaGraphAddChildGraphNode). */
struct CUgraphNode_st {
    NodeKind kind;
    Work_fn work;
    CUgraph_st child;
};
/* An instantiated graph: per node of the graph it came from, the work it
 * runs (a child's flattened), shared with the replays already queued so
 * that an update reaches only the later ones. */
struct CUgraphExec_st {
    struct Entry {
        const CUgraphNode_st *node;
        std::vector<NodeKind> topology; /* what an update must match */
        std::vector<Work_fn> work;
    };
    std::shared_ptr<const std::vector<Entry>> entries;
};
struct CUstream_st {
    uint64_t last_seq = 0; /* of the newest item queued on this stream */
    /* While capturing (cudaStreamBeginCapture .. EndCapture): the graph
     * being built, and whether something refused invalidated it. */
    std::unique_ptr<CUgraph_st> capture;
    bool invalidated = false;
};
struct CUevent_st {
    uint64_t seq = 0;
    bool timing = true; /* not created with cudaEventDisableTiming */
    /* When the device thread reached the event (steady clock, ns); shared
     * with the queued item, so destroying a pending event is safe, as in CUDA. */
    std::shared_ptr<std::atomic<int64_t>> ns = std::make_shared<std::atomic<int64_t>>(-1);
};

namespace {

constexpr int kMaxSimDevices = 8;

struct Allocation {
    size_t bytes;
    int device; /* -1: pinned host memory */
};

struct SimDevice {
    int compute_capability = 90;
    bool fail_context = false;
    int64_t memory_bytes = 0;
    int64_t used_bytes = 0;
    bool peer_enabled[kMaxSimDevices] = {};
    std::atomic<bool> context_made{false}; /* cudaSetDevice succeeded once */
};

struct Work {
    uint64_t seq;
    std::function<void()> fn;
};

struct Sim {
    std::mutex mu;
    std::condition_variable queued, finished;
    std::deque<Work> queue;
    uint64_t next_seq = 1, done_seq = 0;
    bool worker_started = false;
    int ndev = 0;
    bool have_driver = false;
    int delay_us = 0;
    int sms = 2;
    int shared_optin = 227 * 1024;
    SimDevice dev[kMaxSimDevices];
    std::map<uintptr_t, Allocation> allocations; /* start -> extent */
    CUstream_st legacy_stream;
    std::atomic<uint64_t> graph_launches{0}; /* cudaGraphLaunch calls, for the tests */
};

Sim &sim() {
    /* Never destroyed: the device thread may still run while the process exits. */
    static Sim *s = [] {
        Sim *n = new Sim;
        const char *v;
        n->have_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr;
        n->ndev = (v = getenv("PTCU_SIM_DEVICES")) ? atoi(v) : 2;
        if (n->ndev < 0) n->ndev = 0;
        if (n->ndev > kMaxSimDevices) n->ndev = kMaxSimDevices;
        n->delay_us = (v = getenv("PTCU_SIM_DELAY_US")) ? atoi(v) : 0;
        n->sms = (v = getenv("PTCU_SIM_SMS")) ? atoi(v) : 2;
        if (n->sms < 1) n->sms = 1;
        if ((v = getenv("PTCU_SIM_SHARED_OPTIN_KB")) && atoi(v) >= 48) n->shared_optin = atoi(v) * 1024;
        const int64_t mb = (v = getenv("PTCU_SIM_MEMORY_MB")) ? atoll(v) : 4096;
        std::string ccs = (v = getenv("PTCU_SIM_COMPUTE_CAPABILITY")) ? v : "90";
        std::string fails = (v = getenv("PTCU_SIM_FAIL_CONTEXT")) ? v : "";
        int last_cc = 90;
        size_t pos = 0;
        for (int i = 0; i < kMaxSimDevices; ++i) {
            if (pos < ccs.size()) {
                last_cc = atoi(ccs.c_str() + pos);
                size_t comma = ccs.find(',', pos);
                pos = comma == std::string::npos ? ccs.size() : comma + 1;
            }
            n->dev[i].compute_capability = last_cc;
            n->dev[i].memory_bytes = mb << 20;
        }
        for (size_t p = 0; p < fails.size();) {
            int i = atoi(fails.c_str() + p);
            if (i >= 0 && i < kMaxSimDevices) n->dev[i].fail_context = true;
            size_t comma = fails.find(',', p);
            p = comma == std::string::npos ? fails.size() : comma + 1;
        }
        return n;
    }();
    return *s;
}

thread_local int tl_device = 0;
thread_local cudaError_t tl_last_error = cudaSuccess;

cudaError_t fail(cudaError_t e) {
    tl_last_error = e;
    return e;
}

void worker_loop() {
    Sim &s = sim();
    for (;;) {
        Work w;
        {
            std::unique_lock<std::mutex> lk(s.mu);
            s.queued.wait(lk, [&] { return !s.queue.empty(); });
            w = std::move(s.queue.front());
            s.queue.pop_front();
        }
        if (s.delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(s.delay_us));
        w.fn();
        {
            std::lock_guard<std::mutex> lk(s.mu);
            s.done_seq = w.seq;
        }
        s.finished.notify_all();
    }
}

CUstream_st *stream_of(cudaStream_t st) { return st ? st : &sim().legacy_stream; }

/* Whether st captures (caller holds mu). */
bool capturing_locked(cudaStream_t st) { return st && st->capture; }

bool capturing(cudaStream_t st) {
    std::lock_guard<std::mutex> lk(sim().mu);
    return capturing_locked(st);
}

/* What a stream call that cannot be captured does to a capturing stream:
 * invalidates the capture and fails. */
cudaError_t refuse_in_capture(cudaStream_t st) {
    {
        std::lock_guard<std::mutex> lk(sim().mu);
        st->invalidated = true;
    }
    return fail(cudaErrorStreamCaptureUnsupported);
}

/* Queues fn on st, or, while st captures, appends it to the capture's graph
 * as a node of the given kind (returns 0 then: nothing was queued). */
uint64_t enqueue(cudaStream_t st, std::function<void()> fn, NodeKind kind = NodeKind::kernel) {
    Sim &s = sim();
    uint64_t seq;
    {
        std::lock_guard<std::mutex> lk(s.mu);
        if (capturing_locked(st)) {
            if (!st->invalidated)
                st->capture->nodes.push_back(std::unique_ptr<CUgraphNode_st>(new CUgraphNode_st{kind, std::move(fn), {}}));
            return 0;
        }
        if (!s.worker_started) {
            std::thread(worker_loop).detach();
            s.worker_started = true;
        }
        seq = s.next_seq++;
        stream_of(st)->last_seq = seq;
        s.queue.push_back(Work{seq, std::move(fn)});
    }
    s.queued.notify_one();
    return seq;
}

void wait_for(uint64_t seq) {
    Sim &s = sim();
    std::unique_lock<std::mutex> lk(s.mu);
    s.finished.wait(lk, [&] { return s.done_seq >= seq; });
}

void wait_all() {
    uint64_t seq;
    {
        std::lock_guard<std::mutex> lk(sim().mu);
        seq = sim().next_seq - 1;
    }
    wait_for(seq);
}

bool valid_device(int d) { return d >= 0 && d < sim().ndev; }

/* The allocation holding [p, p + bytes), if any (caller holds mu). */
const Allocation *find_locked(const void *p, size_t bytes, uintptr_t *start) {
    Sim &s = sim();
    const uintptr_t a = (uintptr_t)p;
    auto it = s.allocations.upper_bound(a);
    if (it == s.allocations.begin()) return nullptr;
    --it;
    if (a < it->first || a + bytes > it->first + it->second.bytes || a + bytes < a) return nullptr;
    if (start) *start = it->first;
    return &it->second;
}

/* -1: not ours (pageable host memory), -2: pinned host, >= 0: device. */
int owner_of(const void *p, size_t bytes) {
    std::lock_guard<std::mutex> lk(sim().mu);
    const Allocation *a = find_locked(p, bytes ? bytes : 1, nullptr);
    if (!a) return -1;
    return a->device < 0 ? -2 : a->device;
}

} /* namespace */

/* ---- Hooks for the kernel emulation and the simulated cuBLAS ---- */

void ptcu_emu::submit(cudaStream_t stream, std::function<void()> work) { enqueue(stream, std::move(work)); }

bool ptcu_sim_device_range(int device, const void *p, size_t bytes) { return owner_of(p, bytes) == device; }

bool ptcu_sim_stream_capturing(cudaStream_t stream) { return capturing(stream); }

int ptcu_sim_current_device(void) { return tl_device; }

/* ---- Errors and versions ---- */

cudaError_t cudaGetLastError(void) {
    cudaError_t e = tl_last_error;
    tl_last_error = cudaSuccess;
    return e;
}

static const ptcu_sim_code_text<cudaError_t> k_errors[] = {
    PTCU_SIM_CODE(cudaSuccess, "no error"),
    PTCU_SIM_CODE(cudaErrorInvalidValue, "invalid argument"),
    PTCU_SIM_CODE(cudaErrorMemoryAllocation, "out of memory"),
    PTCU_SIM_CODE(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    PTCU_SIM_CODE(cudaErrorDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable"),
    PTCU_SIM_CODE(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    PTCU_SIM_CODE(cudaErrorInvalidDevice, "invalid device ordinal"),
    PTCU_SIM_CODE(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device"),
    PTCU_SIM_CODE(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    PTCU_SIM_CODE(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"),
    PTCU_SIM_CODE(cudaErrorNotSupported, "operation not supported"),
    PTCU_SIM_CODE(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    PTCU_SIM_CODE(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
    PTCU_SIM_CODE(cudaErrorStreamCaptureInvalidated,
                  "operation failed due to a previous error during capture"),
};
static const ptcu_sim_code_text<cudaError_t> k_other_error = PTCU_SIM_CODE(cudaErrorUnknown, "unknown error");

const char *cudaGetErrorName(cudaError_t e) { return ptcu_sim_text_of(k_errors, e, k_other_error).name; }

const char *cudaGetErrorString(cudaError_t e) { return ptcu_sim_text_of(k_errors, e, k_other_error).text; }

cudaError_t cudaRuntimeGetVersion(int *v) {
    if (!v) return fail(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
    if (!v) return fail(cudaErrorInvalidValue);
    *v = sim().have_driver ? CUDART_VERSION : 0;
    return cudaSuccess;
}

/* ---- Devices ---- */

cudaError_t cudaGetDeviceCount(int *count) {
    if (!count) return fail(cudaErrorInvalidValue);
    *count = 0;
    if (!sim().have_driver) return fail(cudaErrorInsufficientDriver);
    if (sim().ndev == 0) return fail(cudaErrorNoDevice);
    *count = sim().ndev;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    if (!prop) return fail(cudaErrorInvalidValue);
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    const SimDevice &d = sim().dev[device];
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "libportable CUDA simulator (CPU)");
    prop->totalGlobalMem = (size_t)d.memory_bytes;
    prop->major = d.compute_capability / 10;
    prop->minor = d.compute_capability % 10;
    prop->multiProcessorCount = sim().sms;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->pciBusID = 0x10 + device;
    /* a fixed UUID per simulated device, so tests can check its form */
    for (int i = 0; i < 16; ++i) prop->uuid.bytes[i] = (char)(0x5a + 16 * device + i);
    return cudaSuccess;
}

/* The attributes the plugin asks for: shared memory per block, by default
 * and opted in to. */
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    if (!value) return fail(cudaErrorInvalidValue);
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = sim().shared_optin; return cudaSuccess;
    default: return fail(cudaErrorInvalidValue); /* not simulated */
    }
}

/* A kernel's dynamic shared memory limit, as CUDA checks it: at most the
 * device's opt-in figure. */
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
    if (!func) return fail(cudaErrorInvalidDeviceFunction);
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return fail(cudaErrorInvalidValue);
    if (value < 0 || value > sim().shared_optin) return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (!sim().have_driver) return fail(cudaErrorInsufficientDriver);
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    /* Since CUDA 12 cudaSetDevice creates the primary context: where that fails. */
    if (sim().dev[device].fail_context) return fail(cudaErrorDevicesUnavailable);
    sim().dev[device].context_made = true;
    tl_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
    if (!device) return fail(cudaErrorInvalidValue);
    *device = tl_device;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
    if (!attr || !func) return fail(cudaErrorInvalidValue);
    if (sim().dev[tl_device].compute_capability < 80) return fail(cudaErrorNoKernelImageForDevice);
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    return cudaSuccess;
}

/* 2048 resident threads per multiprocessor, as on sm_80/sm_90 with few
 * registers: the kernels' grids are sized from this. */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func, int block_size,
                                                          size_t smem) {
    (void)smem;
    if (!blocks || !func || block_size <= 0 || block_size > 1024) return fail(cudaErrorInvalidValue);
    *blocks = 2048 / block_size;
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) {
    if (!can) return fail(cudaErrorInvalidValue);
    if (!valid_device(device) || !valid_device(peer)) return fail(cudaErrorInvalidDevice);
    *can = device != peer;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
    if (flags != 0) return fail(cudaErrorInvalidValue);
    if (!valid_device(peer) || peer == tl_device) return fail(cudaErrorInvalidDevice);
    bool &enabled = sim().dev[tl_device].peer_enabled[peer];
    if (enabled) return fail(cudaErrorPeerAccessAlreadyEnabled);
    enabled = true;
    return cudaSuccess;
}

/* ---- Memory ---- */

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
    if (!ptr) return fail(cudaErrorInvalidValue);
    *ptr = nullptr;
    if (!sim().have_driver) return fail(cudaErrorInsufficientDriver);
    Sim &s = sim();
    SimDevice &d = s.dev[tl_device];
    std::lock_guard<std::mutex> lk(s.mu);
    if (bytes == 0) return cudaSuccess;
    if ((int64_t)bytes > d.memory_bytes - d.used_bytes) return fail(cudaErrorMemoryAllocation);
    void *p = aligned_alloc(256, (bytes + 255) & ~(size_t)255); /* cudaMalloc's alignment */
    if (!p) return fail(cudaErrorMemoryAllocation);
    s.allocations[(uintptr_t)p] = Allocation{bytes, tl_device};
    d.used_bytes += (int64_t)bytes;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
    if (!sim().have_driver) return fail(cudaErrorInsufficientDriver);
    if (!ptr) return cudaSuccess; /* the usual way to create the context */
    wait_all(); /* cudaFree waits for the device */
    Sim &s = sim();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.allocations.find((uintptr_t)ptr);
    if (it == s.allocations.end() || it->second.device < 0) return fail(cudaErrorInvalidValue);
    s.dev[it->second.device].used_bytes -= (int64_t)it->second.bytes;
    s.allocations.erase(it);
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **ptr, size_t bytes, unsigned int flags) {
    (void)flags;
    if (!ptr) return fail(cudaErrorInvalidValue);
    void *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    if (!p) return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lk(sim().mu);
    sim().allocations[(uintptr_t)p] = Allocation{bytes, -1};
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr) {
    if (!ptr) return cudaSuccess;
    wait_all();
    Sim &s = sim();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.allocations.find((uintptr_t)ptr);
    if (it == s.allocations.end() || it->second.device >= 0) return fail(cudaErrorInvalidValue);
    s.allocations.erase(it);
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    if (!free_bytes || !total_bytes) return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(sim().mu);
    const SimDevice &d = sim().dev[tl_device];
    *free_bytes = (size_t)(d.memory_bytes - d.used_bytes);
    *total_bytes = (size_t)d.memory_bytes;
    return cudaSuccess;
}

/* ---- Copies ---- */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    if (!dst || !src) return fail(cudaErrorInvalidValue);
    const int dst_owner = owner_of(dst, count), src_owner = owner_of(src, count);
    /* A capture takes copies between device and pinned memory only: a copy
     * through pageable memory is staged or waited for at the call. */
    if (capturing(stream) && (dst_owner == -1 || src_owner == -1)) return refuse_in_capture(stream);
    switch (kind) {
    case cudaMemcpyHostToDevice:
        if (dst_owner != tl_device || src_owner >= 0) return fail(cudaErrorInvalidValue);
        if (src_owner == -1) {
            /* Pageable source: staged now, so the caller may reuse it on return. */
            auto staged = std::make_shared<std::vector<unsigned char>>((const unsigned char *)src,
                                                                      (const unsigned char *)src + count);
            enqueue(stream, [dst, staged, count] { memcpy(dst, staged->data(), count); });
        } else {
            enqueue(stream, [dst, src, count] { memcpy(dst, src, count); }, NodeKind::memcpy);
        }
        return cudaSuccess;
    case cudaMemcpyDeviceToHost: {
        if (src_owner != tl_device || dst_owner >= 0) return fail(cudaErrorInvalidValue);
        const uint64_t seq = enqueue(stream, [dst, src, count] { memcpy(dst, src, count); }, NodeKind::memcpy);
        if (dst_owner == -1) wait_for(seq); /* pageable destination: the call waits */
        return cudaSuccess;
    }
    case cudaMemcpyDeviceToDevice:
        if (dst_owner != tl_device || src_owner != tl_device) return fail(cudaErrorInvalidValue);
        enqueue(stream, [dst, src, count] { memmove(dst, src, count); }, NodeKind::memcpy);
        return cudaSuccess;
    default:
        return fail(cudaErrorInvalidValue);
    }
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t count,
                                cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    if (!valid_device(dst_device) || !valid_device(src_device)) return fail(cudaErrorInvalidDevice);
    if (owner_of(dst, count) != dst_device || owner_of(src, count) != src_device)
        return fail(cudaErrorInvalidValue);
    enqueue(stream, [dst, src, count] { memmove(dst, src, count); }, NodeKind::memcpy);
    return cudaSuccess;
}

/* ---- Streams and events ---- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
    (void)flags;
    if (!stream) return fail(cudaErrorInvalidValue);
    *stream = new CUstream_st;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (!stream) return fail(cudaErrorInvalidResourceHandle);
    if (capturing(stream)) return fail(cudaErrorIllegalState); /* end the capture first */
    wait_for(stream->last_seq); /* its queued work still completes */
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    if (capturing(stream)) return refuse_in_capture(stream);
    uint64_t seq;
    {
        std::lock_guard<std::mutex> lk(sim().mu);
        seq = stream_of(stream)->last_seq;
    }
    wait_for(seq);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    if (!event) return fail(cudaErrorInvalidValue);
    *event = new CUevent_st;
    (*event)->timing = !(flags & cudaEventDisableTiming);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    /* CUDA records an event into a capture (an event node, or a fork to
     * another stream); the plugin records none while capturing, and the
     * simulator refuses it so that a change that does shows here. */
    if (capturing(stream)) return refuse_in_capture(stream);
    if (event->timing) {
        /* A timing event is an item of its own: the device thread stamps it
         * when it gets there, after the work queued before. */
        auto ns = std::make_shared<std::atomic<int64_t>>(-1);
        event->ns = ns;
        event->seq = enqueue(stream, [ns] {
            ns->store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count());
        });
        return cudaSuccess;
    }
    std::lock_guard<std::mutex> lk(sim().mu);
    event->seq = stream_of(stream)->last_seq;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    wait_for(event->seq);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    if (!ms || !start || !end) return fail(cudaErrorInvalidValue);
    if (!start->timing || !end->timing) return fail(cudaErrorInvalidResourceHandle);
    const int64_t a = start->ns->load(), b = end->ns->load();
    if (a < 0 || b < 0) return cudaErrorNotReady;
    *ms = (float)((double)(b - a) / 1e6);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    (void)flags;
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    /* An event from outside the capture: CUDA's cudaErrorStreamCaptureIsolation. */
    if (capturing(stream)) return refuse_in_capture(stream);
    /* One queue runs every stream in submission order: what the event marks
     * was queued before anything queued from now on, so the order holds. */
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    std::lock_guard<std::mutex> lk(sim().mu);
    /* Not an error for the last-error state, as in CUDA. */
    return sim().done_seq >= event->seq ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    delete event;
    return cudaSuccess;
}

/* ---- Stream capture and graphs ---- */

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    /* The legacy stream cannot capture. The modes differ in which other
     * calls they forbid meanwhile, which the simulator does not check. */
    if (!stream) return fail(cudaErrorStreamCaptureUnsupported);
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(sim().mu);
    if (stream->capture) return fail(cudaErrorIllegalState);
    stream->capture.reset(new CUgraph_st);
    stream->invalidated = false;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
    if (!graph) return fail(cudaErrorInvalidValue);
    *graph = nullptr;
    std::unique_ptr<CUgraph_st> g;
    bool invalidated;
    {
        std::lock_guard<std::mutex> lk(sim().mu);
        if (!capturing_locked(stream)) return fail(cudaErrorIllegalState);
        g = std::move(stream->capture);
        invalidated = stream->invalidated;
        stream->invalidated = false;
    }
    if (invalidated) return fail(cudaErrorStreamCaptureInvalidated);
    *graph = g.release();
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
    if (!status) return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(sim().mu);
    *status = !capturing_locked(stream) ? cudaStreamCaptureStatusNone
              : stream->invalidated     ? cudaStreamCaptureStatusInvalidated
                                        : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphCreate(cudaGraph_t *graph, unsigned int flags) {
    if (!graph || flags != 0) return fail(cudaErrorInvalidValue);
    *graph = new CUgraph_st;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    if (!graph) return fail(cudaErrorInvalidValue);
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count) {
    if (!graph || !count) return fail(cudaErrorInvalidValue);
    if (nodes)
        for (size_t i = 0; i < *count && i < graph->nodes.size(); ++i) nodes[i] = graph->nodes[i].get();
    *count = graph->nodes.size();
    return cudaSuccess;
}

static void copy_graph(const CUgraph_st &from, CUgraph_st &to) {
    for (const auto &n : from.nodes) {
        std::unique_ptr<CUgraphNode_st> c(new CUgraphNode_st{n->kind, n->work, {}});
        copy_graph(n->child, c->child);
        to.nodes.push_back(std::move(c));
    }
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *node, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                       size_t n_deps, cudaGraph_t child) {
    if (!node || !graph || !child || (n_deps && !deps)) return fail(cudaErrorInvalidValue);
    for (size_t i = 0; i < n_deps; ++i) {
        bool in_graph = false;
        for (const auto &n : graph->nodes) in_graph |= n.get() == deps[i];
        if (!in_graph) return fail(cudaErrorInvalidValue);
    }
    std::unique_ptr<CUgraphNode_st> n(new CUgraphNode_st{NodeKind::child, {}, {}});
    copy_graph(*child, n->child);
    *node = n.get();
    graph->nodes.push_back(std::move(n));
    return cudaSuccess;
}

/* A node's work in order, child graphs flattened, and its node kinds. */
static void flatten(const CUgraphNode_st &n, std::vector<Work_fn> &work, std::vector<NodeKind> &topology) {
    topology.push_back(n.kind);
    if (n.kind != NodeKind::child) {
        work.push_back(n.work);
        return;
    }
    for (const auto &c : n.child.nodes) flatten(*c, work, topology);
    topology.push_back(NodeKind::child); /* the child's end */
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
    if (!exec || !graph || flags != 0) return fail(cudaErrorInvalidValue);
    auto entries = std::make_shared<std::vector<CUgraphExec_st::Entry>>();
    for (const auto &n : graph->nodes) {
        CUgraphExec_st::Entry e{n.get(), {}, {}};
        flatten(*n, e.work, e.topology);
        entries->push_back(std::move(e));
    }
    *exec = new CUgraphExec_st{entries};
    return cudaSuccess;
}

cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child) {
    if (!exec || !node || !child) return fail(cudaErrorInvalidValue);
    auto entries = std::make_shared<std::vector<CUgraphExec_st::Entry>>(*exec->entries);
    for (CUgraphExec_st::Entry &e : *entries) {
        if (e.node != node) continue;
        if (node->kind != NodeKind::child) return fail(cudaErrorInvalidValue);
        CUgraphNode_st fresh{NodeKind::child, {}, {}};
        copy_graph(*child, fresh.child);
        std::vector<Work_fn> work;
        std::vector<NodeKind> topology;
        flatten(fresh, work, topology);
        /* CUDA: the new child must have the old one's topology. */
        if (topology != e.topology) return fail(cudaErrorInvalidValue);
        e.work = std::move(work);
        exec->entries = entries;
        return cudaSuccess;
    }
    return fail(cudaErrorInvalidValue); /* not a node of the instantiated graph */
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    if (!exec) return fail(cudaErrorInvalidValue);
    /* CUDA would add the graph to the capture as a child; the plugin never does. */
    if (capturing(stream)) return refuse_in_capture(stream);
    std::shared_ptr<const std::vector<CUgraphExec_st::Entry>> entries = exec->entries;
    enqueue(stream, [entries] {
        for (const CUgraphExec_st::Entry &e : *entries)
            for (const Work_fn &w : e.work) w();
    });
    ++sim().graph_launches;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    if (!exec) return fail(cudaErrorInvalidValue);
    delete exec; /* replays already queued keep their work */
    return cudaSuccess;
}

/* ---- Test hooks (exported, unlike the rest, for tests that dlopen the
 * simulator's plugin: the calling thread's current device, and whether a
 * device's context was ever made) ---- */

extern "C" __attribute__((visibility("default"))) int ptcu_sim_thread_device(void) { return tl_device; }

extern "C" __attribute__((visibility("default"))) int ptcu_sim_context_made(int device) {
    return valid_device(device) && sim().dev[device].context_made.load() ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) void ptcu_sim_set_thread_device(int device) {
    if (cudaSetDevice(device) != cudaSuccess) tl_last_error = cudaSuccess;
}

extern "C" __attribute__((visibility("default"))) unsigned long long ptcu_sim_graph_launches(void) {
    return sim().graph_launches.load();
}
