#!/usr/bin/env python3
"""PyTorch's side of bench_cnn.c (CPU, float32), the same work:

  bench_cnn_torch.py epoch --data digits.csv.gz   one cnn_digits training epoch
  bench_cnn_torch.py conv                         conv2d fwd+bwd, [32, 64, 32, 32], 64 3x3 filters

One warm-up, then 5 timed repetitions; prints "seconds <median wall> min <min wall>
cpu <median process CPU seconds>".
Threads: torch.set_num_threads(OMP_NUM_THREADS, default 1) (bench_cnn.sh pins both sides
to one core for 1 thread).

  bench_cnn_torch.py isa                          which oneDNN kernel runs the conv (ONEDNN_VERBOSE)
"""
import gzip
import os
import statistics
import sys
import time

import numpy as np
import torch

REPS = 5
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))


def net():
    return torch.nn.Sequential(
        torch.nn.LazyConv2d(16, 3, padding=1), torch.nn.LazyBatchNorm2d(), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.LazyConv2d(32, 3, padding=1), torch.nn.LazyBatchNorm2d(), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.LazyLinear(10))


def bench_epoch(path):
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    order = np.random.RandomState(42).permutation(len(table))
    train = table[order[:int(round(0.8 * len(table)))]]
    x_all = torch.from_numpy((train[:, :64] / 16.0).astype(np.float32)).reshape(-1, 1, 8, 8)
    y_all = torch.from_numpy(train[:, 64].copy())
    torch.manual_seed(0)
    model = net()
    model(x_all[:2])  # materialise the lazy layers
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    times = []
    for r in range(REPS + 1):
        perm = np.random.RandomState(1000 + r).permutation(len(train))
        t0, c0 = time.perf_counter(), time.process_time()
        loss_sum = torch.zeros(())
        for first in range(0, len(train), 64):
            idx = torch.from_numpy(perm[first:first + 64])
            x, y = x_all[idx], y_all[idx]
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss * len(idx)
        loss_sum.item()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    return times[1:]


def bench_conv():
    torch.manual_seed(1)
    x = torch.rand(32, 64, 32, 32, requires_grad=True)
    w = torch.rand(64, 64, 3, 3, requires_grad=True)
    b = torch.rand(64, requires_grad=True)
    times = []
    for r in range(REPS + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        y = torch.nn.functional.conv2d(x, w, b, padding=1)
        y.sum().backward()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
        x.grad = w.grad = b.grad = None
    return times[1:]


if __name__ == "__main__":
    if sys.argv[1] == "isa":  # run with ONEDNN_VERBOSE=1: oneDNN prints the kernel it ran
        torch.nn.functional.conv2d(torch.randn(2, 16, 8, 8), torch.randn(16, 16, 3, 3), padding=1)
        sys.exit(0)
    t = bench_conv() if sys.argv[1] == "conv" else bench_epoch(sys.argv[3])
    wall, cpu = [a for a, _ in t], [b for _, b in t]
    print(f"seconds {statistics.median(wall):.6f} min {min(wall):.6f} cpu {statistics.median(cpu):.6f}")
