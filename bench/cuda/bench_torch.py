#!/usr/bin/env python3
"""bench_torch.py: bench_cuda's measurements made with PyTorch on the same GPU.

Same sizes, same timing method (wall clock around a loop, the device
synchronised before the clock starts and before it is read, warm-up first),
same keys in --json output, so bench/cuda/combine_results.py can put the two
side by side:

  GEMM            torch.matmul, FP32 (allow_tf32 False) and TF32 (True)
  bandwidth       torch.add on 64M floats vs dst.copy_(src)
  per-op overhead torch.add on 10 elements: enqueue cost, and with a synchronize
  transfers       host<->device, pageable and pinned
  GPU tour        large vs small products, a norm per step vs once, copies

Usage: bench_torch.py [--quick] [--json FILE] [--no-tour | --only-tour] [--device cuda:N]
"""
import argparse
import json
import sys
import time

try:
    import torch
except ImportError:  # pragma: no cover - reported, not raised
    print("bench_torch: PyTorch is not installed", file=sys.stderr)
    sys.exit(77)

RESULTS = {}


def record(key, value):
    RESULTS[key] = float(value)


def clamp_iters(seconds_per_iter, budget, lo, hi):
    n = int(budget / seconds_per_iter) if seconds_per_iter > 0 else hi
    return max(lo, min(hi, n))


def bench_gemm(dev, quick):
    sizes = [1024, 2048] if quick else [1024, 4096, 8192]
    print("\n## GEMM, f32, C = A B with square n x n matrices (TFLOP/s, higher is better)\n")
    print("| n | math | torch.matmul |\n|---|---|---|")
    for n in sizes:
        torch.manual_seed(42)
        a = torch.randn(n, n, device=dev)
        b = torch.randn(n, n, device=dev)
        flop = 2.0 * n * n * n
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32

            def run(iters):
                for _ in range(2):
                    torch.matmul(a, b)
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                for _ in range(iters):
                    torch.matmul(a, b)
                torch.cuda.synchronize(dev)
                return (time.perf_counter() - t0) / iters

            iters = clamp_iters(run(1), 0.1 if quick else 0.4, 3, 200)
            t = min(run(iters), run(iters))
            tf = flop / t / 1e12
            print(f"| {n} | {'TF32' if tf32 else 'FP32'} | {tf:.1f} |")
            record(f"gemm_{'tf32' if tf32 else 'f32'}_{n}_tflops", tf)
        del a, b
    torch.backends.cuda.matmul.allow_tf32 = False


def bench_bandwidth(dev, quick):
    n = (16 if quick else 64) << 20
    iters = 10 if quick else 30
    nbytes = n * 4
    a = torch.rand(n, device=dev)
    b = torch.rand(n, device=dev)
    for _ in range(3):
        torch.add(a, b)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(iters):
        torch.add(a, b)
    torch.cuda.synchronize(dev)
    t_add = (time.perf_counter() - t0) / iters
    dst = torch.empty_like(a)
    for _ in range(3):
        dst.copy_(a)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(iters):
        dst.copy_(a)
    torch.cuda.synchronize(dev)
    t_copy = (time.perf_counter() - t0) / iters
    add_gbs = 3 * nbytes / t_add / 1e9
    copy_gbs = 2 * nbytes / t_copy / 1e9
    print(f"\n## Element-wise bandwidth, {n >> 20}M f32 (GB/s counting bytes read + written)\n")
    print("| operation | time (ms) | GB/s |\n|---|---|---|")
    print(f"| torch.add(a, b) | {t_add * 1e3:.3f} | {add_gbs:.0f} |")
    print(f"| dst.copy_(src) | {t_copy * 1e3:.3f} | {copy_gbs:.0f} |")
    print(f"| add / copy bandwidth | | {100 * add_gbs / copy_gbs:.1f}% |")
    record("add_64M_gbps", add_gbs)
    record("d2d_copy_64M_gbps", copy_gbs)


def bench_overhead(dev, quick):
    iters = 2000 if quick else 20000
    sync_iters = 1000 if quick else 5000
    x = torch.ones(10, device=dev)
    for _ in range(1000):
        torch.add(x, x)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(iters):
        torch.add(x, x)
    t_enqueue = (time.perf_counter() - t0) / iters
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(sync_iters):
        torch.add(x, x)
        torch.cuda.synchronize(dev)
    t_sync = (time.perf_counter() - t0) / sync_iters
    print("\n## Per-op overhead, torch.add on a 10-element f32 tensor (microseconds per op, lower is better)\n")
    print("| measurement | us/op |\n|---|---|")
    print(f"| enqueue only ({iters} ops, then one synchronize) | {t_enqueue * 1e6:.2f} |")
    print(f"| torch.add + torch.cuda.synchronize | {t_sync * 1e6:.2f} |")
    record("add10_enqueue_us", t_enqueue * 1e6)
    record("add10_sync_us", t_sync * 1e6)


def bench_transfers(dev, quick):
    n = (16 if quick else 64) << 20
    nbytes = n * 4
    reps = 5
    host = torch.arange(n, dtype=torch.float32) % 1024
    pinned = host.pin_memory()
    gb = nbytes / 1e9
    best = {"h2d_pageable": 1e9, "d2h_pageable": 1e9, "h2d_pinned": 1e9, "d2h_pinned": 1e9}
    d = host.to(dev)
    out_pinned = torch.empty(n, dtype=torch.float32).pin_memory()
    for _ in range(reps):
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        d = host.to(dev)
        torch.cuda.synchronize(dev)
        best["h2d_pageable"] = min(best["h2d_pageable"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        h = d.cpu()
        best["d2h_pageable"] = min(best["d2h_pageable"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        d = pinned.to(dev, non_blocking=True)
        torch.cuda.synchronize(dev)
        best["h2d_pinned"] = min(best["h2d_pinned"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        out_pinned.copy_(d, non_blocking=True)
        torch.cuda.synchronize(dev)
        best["d2h_pinned"] = min(best["d2h_pinned"], time.perf_counter() - t0)
    del h
    print(f"\n## Host <-> device copies, {nbytes >> 20} MB (GB/s, best of {reps})\n")
    print("| direction | memory | torch |\n|---|---|---|")
    for key, label in (("h2d_pageable", "host to device | pageable"), ("d2h_pageable", "device to host | pageable"),
                       ("h2d_pinned", "host to device | pinned"), ("d2h_pinned", "device to host | pinned")):
        print(f"| {label} | {gb / best[key]:.1f} |")
        record(f"{key}_gbps", gb / best[key])


def time_matmul_on(dev, n, iters):
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    torch.matmul(a, b)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(iters):
        torch.matmul(a, b)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return (time.perf_counter() - t0) / iters


def bench_tour(dev, quick):
    print("\n## GPU tour experiments (milliseconds, lower is better)\n")
    print("| experiment | time (ms) |\n|---|---|")
    big = 2000 if quick else 5000
    for d, name, iters in ((torch.device("cpu"), "cpu", 2), (dev, "cuda", 10)):
        tb = time_matmul_on(d, big, iters)
        ts = time_matmul_on(d, 100, 200)
        print(f"| matmul {big}x{big} on {name} | {tb * 1e3:.3f} |")
        print(f"| matmul 100x100 on {name} | {ts * 1e3:.4f} |")
        record(f"tour_matmul_big_{name}_ms", tb * 1e3)
        record(f"tour_matmul_100_{name}_ms", ts * 1e3)
    steps = 1000
    a = torch.randn(100, 100, device=dev)
    b = torch.randn(100, 100, device=dev)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        torch.linalg.norm(torch.matmul(a, b)).item()
    t_each = time.perf_counter() - t0
    t0 = time.perf_counter()
    norms = [torch.linalg.norm(torch.matmul(a, b)) for _ in range(steps)]
    torch.stack(norms).cpu()
    t_once = time.perf_counter() - t0
    print(f"| 1000 x (100x100 matmul + norm), .item() each step | {t_each * 1e3:.2f} |")
    print(f"| 1000 x (100x100 matmul + norm), one transfer at the end | {t_once * 1e3:.2f} |")
    record("tour_norm_each_ms", t_each * 1e3)
    record("tour_norm_once_ms", t_once * 1e3)
    x = torch.randn(1000, 1000, device=dev)
    for mode in (0, 1):
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        outs = []
        copies = []
        for _ in range(50):
            y = torch.matmul(x, x)
            outs.append(y)
            if mode == 1:
                copies.append(y.to("cpu", non_blocking=True))
        if mode == 0:
            copies = [y.cpu() for y in outs]
        torch.cuda.synchronize(dev)
        t = time.perf_counter() - t0
        label = "y.to('cpu', non_blocking=True) after each" if mode else "y.cpu() of each (waits)"
        print(f"| 50 x 1000x1000 matmul, then {label} | {t * 1e3:.2f} |")
        record("tour_copy_async_ms" if mode else "tour_copy_sync_ms", t * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--no-tour", action="store_true")
    ap.add_argument("--only-tour", action="store_true", help="the chapter's experiments only")
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench_torch: torch.cuda.is_available() is False", file=sys.stderr)
        return 77
    dev = torch.device(args.device)
    props = torch.cuda.get_device_properties(dev)
    print(f"# bench_torch: PyTorch {torch.__version__} (CUDA {torch.version.cuda}) on {args.device}\n")
    print("| device | SMs | memory |\n|---|---|---|")
    print(f"| {props.name} | {props.multi_processor_count} | {props.total_memory / 2**30:.1f} GiB |")
    if not args.only_tour:
        bench_gemm(dev, args.quick)
        bench_bandwidth(dev, args.quick)
        bench_overhead(dev, args.quick)
        bench_transfers(dev, args.quick)
    if not args.no_tour:
        bench_tour(dev, args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"source": "torch", "torch": torch.__version__, "cuda": torch.version.cuda,
                       "device": props.name, "results": RESULTS}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
