#!/usr/bin/env python3
"""PyTorch's side of bench_attention.c (CPU, float32), the same work: causal
self-attention forward + backward, B 1, H 12, D 64. PyTorch 1.13 has no
scaled_dot_product_attention, so the peer is attention as written in torch:
softmax(q k^T scale, causal positions filled with -inf) v, and autograd's
backward of it; the loss is sum(out * g) for a fixed random g.

  bench_attention_torch.py time T [reps]   one warm-up, reps (default 5) timed
                                           passes; prints "ms <median wall> min
                                           <min wall> cpu <median CPU ms>"
  bench_attention_torch.py memory T        one pass; prints "rss_before <MiB>
                                           rss_peak <MiB>"
  bench_attention_torch.py isa             the ATen CPU capability and the BLAS
                                           library this torch loaded

Threads: torch.set_num_threads(OMP_NUM_THREADS, default 1).
"""
import os
import resource
import statistics
import sys
import time

import torch

HEADS, DIM = 12, 64
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))


def attention(q, k, v, causal_mask):
    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / DIM**0.5)
    s = s.masked_fill(causal_mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


def inputs(t):
    gen = torch.Generator().manual_seed(1)
    q, k, v, g = (torch.randn(1, HEADS, t, DIM, generator=gen) for _ in range(4))
    for x in (q, k, v):
        x.requires_grad_(True)
    causal_mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    return q, k, v, g, causal_mask


def step(q, k, v, g, causal_mask):
    (attention(q, k, v, causal_mask) * g).sum().backward()
    for x in (q, k, v):
        x.grad = None


def rss_now_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1


def bench_time(t, reps):
    args = inputs(t)
    step(*args)  # warm-up
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        step(*args)
        wall.append(1e3 * (time.perf_counter() - w0))
        cpu.append(1e3 * (time.process_time() - c0))
    print(f"ms {statistics.median(wall):.3f} min {min(wall):.3f} cpu {statistics.median(cpu):.3f}")


def bench_memory(t):
    args = inputs(t)
    before = rss_now_mib()
    step(*args)
    print(f"rss_before {before:.1f} rss_peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")


def isa():
    blas = "unknown"
    with open("/proc/self/maps") as f:
        libs = {os.path.realpath(line.split()[-1]) for line in f if "/" in line}
    libs = {p for p in libs if "blas" in os.path.basename(p)}
    if libs:
        blas = ", ".join(sorted(os.path.basename(p) for p in libs))
    cap = next((line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
                if "CPU capability usage" in line), "unknown")
    print(f"torch {torch.__version__} aten {cap} blas {blas}")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "time" and len(sys.argv) > 2:
        bench_time(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    elif what == "memory" and len(sys.argv) > 2:
        bench_memory(int(sys.argv[2]))
    elif what == "isa":
        torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS library
        isa()
    else:
        sys.exit("usage: bench_attention_torch.py time T [reps] | memory T | isa")


if __name__ == "__main__":
    main()
