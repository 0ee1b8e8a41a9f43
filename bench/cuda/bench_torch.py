#!/usr/bin/env python3
"""bench_torch.py: bench_cuda's measurements made with PyTorch on the same GPU.

Same sizes, same timing method (wall clock around a loop, the device
synchronised before the clock starts and before it is read, warm-up first),
same keys in --json output, so bench/cuda/combine_results.py can put the two
side by side:

  GEMM            torch.mm on random N(0,1) data: FP32 (allow_tf32 False),
                  TF32 (torch.backends.cuda.matmul.allow_tf32 = True) and
                  bf16 tensors (PyTorch's defaults for bf16)
  bandwidth       torch.add on 64M floats vs dst.copy_(src)
  sum             torch.sum of 64M and 256M floats
  per-op overhead a + b on 10 elements, 500 and 20000 ops: enqueue cost,
                  enqueue + one synchronize, and a synchronize after each
  transfers       host<->device, pageable and pinned
  GPU tour        large vs small products, a norm per step vs once, copies
                  (each copy loop once untimed first: PyTorch's pinned-memory
                  cache then holds the blocks, as libportable's does)

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


MATH_NAMES = {"f32": "FP32", "tf32": "TF32", "bf16": "BF16"}


def bench_gemm(dev, quick):
    sizes = [512, 1024] if quick else [1024, 4096, 8192]
    print("\n## GEMM, C = A B with square n x n matrices of N(0,1) values (TFLOP/s, higher is better)\n")
    print("torch.mm; TF32: torch.backends.cuda.matmul.allow_tf32 = True; BF16: bfloat16 tensors.\n")
    print("| n | math | torch.mm |\n|---|---|---|")
    for n in sizes:
        torch.manual_seed(42)
        a32 = torch.randn(n, n, device=dev)
        b32 = torch.randn(n, n, device=dev)
        flop = 2.0 * n * n * n
        for math in ("f32", "tf32", "bf16"):
            torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
            a, b = (a32.bfloat16(), b32.bfloat16()) if math == "bf16" else (a32, b32)

            def run(iters):
                for _ in range(2):
                    torch.mm(a, b)
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                for _ in range(iters):
                    torch.mm(a, b)
                torch.cuda.synchronize(dev)
                return (time.perf_counter() - t0) / iters

            iters = clamp_iters(run(1), 0.05 if quick else 0.3, 3, 200)
            t = min(run(iters), run(iters))
            tf = flop / t / 1e12
            print(f"| {n} | {MATH_NAMES[math]} | {tf:.1f} |")
            record(f"gemm_{math}_{n}_tflops", tf)
        del a32, b32, a, b
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


def bench_sum(dev, quick):
    sizes = [4 << 20, 16 << 20] if quick else [64 << 20, 256 << 20]
    print("\n## Full reduction, torch.sum(x) of n f32 (GB/s of bytes read, higher is better; best of 5)\n")
    print("| n | torch.sum |\n|---|---|")
    for n in sizes:
        x = torch.randn(n, device=dev)
        for _ in range(3):
            torch.sum(x)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        torch.sum(x)
        torch.cuda.synchronize(dev)
        iters = clamp_iters(time.perf_counter() - t0, 0.02 if quick else 0.05, 3, 100)
        best = 1e30
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(iters):
                torch.sum(x)
            torch.cuda.synchronize(dev)
            best = min(best, (time.perf_counter() - t0) / iters)
        gbs = n * 4 / best / 1e9
        print(f"| {n >> 20}M | {gbs:.0f} |")
        record(f"sum_{n >> 20}M_gbps", gbs)
        del x


def bench_overhead(dev, quick):
    counts = (500, 20000)
    rounds = 3
    sync_iters = 1000 if quick else 5000
    a = torch.rand(10, device=dev)
    b = torch.rand(10, device=dev)
    for _ in range(1000):
        a + b
    torch.cuda.synchronize(dev)
    enq = {k: 1e30 for k in counts}
    with_sync = {k: 1e30 for k in counts}
    for _ in range(rounds):
        for k in counts:
            torch.cuda.synchronize(dev)
            t0 = time.perf_counter()
            for _ in range(k):
                a + b
            t1 = time.perf_counter()
            torch.cuda.synchronize(dev)
            t2 = time.perf_counter()
            enq[k] = min(enq[k], (t1 - t0) / k)
            with_sync[k] = min(with_sync[k], (t2 - t0) / k)
    t0 = time.perf_counter()
    for _ in range(sync_iters):
        a + b
        torch.cuda.synchronize(dev)
    t_each = (time.perf_counter() - t0) / sync_iters
    print("\n## Per-op overhead, a + b on 10-element f32 tensors (microseconds per op, lower is better; "
          f"best of {rounds} rounds)\n")
    print("| measurement | us/op |\n|---|---|")
    for k in counts:
        print(f"| {k} ops, enqueue only (clock read before the synchronize) | {enq[k] * 1e6:.2f} |")
        print(f"| {k} ops, enqueue + one torch.cuda.synchronize | {with_sync[k] * 1e6:.2f} |")
        record(f"add10_enqueue_{k}_us", enq[k] * 1e6)
        record(f"add10_enqueue_sync_{k}_us", with_sync[k] * 1e6)
    print(f"| a + b + torch.cuda.synchronize after each op ({sync_iters} ops) | {t_each * 1e6:.2f} |")
    record("add10_sync_us", t_each * 1e6)


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

    def copy_loop(mode):
        outs = []
        copies = []
        for _ in range(50):
            y = torch.matmul(x, x)
            outs.append(y)
            if mode == 1:
                copies.append(y.to("cpu", non_blocking=True))
        if mode == 0:
            copies = [y.cpu() for y in outs]
        return outs, copies

    for mode in (0, 1):
        # Once untimed first: its pinned host blocks go back to PyTorch's
        # caching host allocator when released, and the timed loop reuses
        # them, as bench_cuda's libportable loop reuses its pinned cache.
        outs, copies = copy_loop(mode)
        torch.cuda.synchronize(dev)
        del outs, copies
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        outs, copies = copy_loop(mode)
        torch.cuda.synchronize(dev)
        t = time.perf_counter() - t0
        del outs, copies
        label = "y.to('cpu', non_blocking=True) after each" if mode else "y.cpu() of each (waits)"
        print(f"| 50 x 1000x1000 matmul, then {label} | {t * 1e3:.2f} |")
        record("tour_copy_async_ms" if mode else "tour_copy_sync_ms", t * 1e3)
    print("\n(each loop ran once untimed first)")


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
        bench_sum(dev, args.quick)
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
