#!/usr/bin/env python3
"""PyTorch's attention written out, softmax(q k^T scale) v, on the GPU: the
row bench_attention prints for libportable, for the same sizes.

  bench_attention_torch.py [T [B [H [D [rounds]]]]]   (1024 1 12 64 5)

f32, not causal; forward, and forward + backward of sum(o), best of the
rounds after a warm-up; the peak is torch.cuda.max_memory_allocated over
one forward + backward, above the inputs. Exit 77 with the reason when
PyTorch or its CUDA device is missing.
"""
import math
import sys
import time

try:
    import torch
except ImportError as e:
    print(f"skip: PyTorch is not importable ({e})")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skip: PyTorch sees no CUDA device")
    sys.exit(77)

args = [int(a) for a in sys.argv[1:]]
t, b, h, d, rounds = (args + [1024, 1, 12, 64, 5][len(args):])[:5]
dev = torch.device("cuda")
torch.manual_seed(7)
q, k, v = (torch.randn(b, h, t, d, device=dev, requires_grad=True) for _ in range(3))
scale = 1.0 / math.sqrt(d)


def step(grad):
    o = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
    if grad:
        o.sum().backward()
        q.grad = k.grad = v.grad = None


def best_ms(grad, reps):
    best = None
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            if grad:
                step(True)
            else:
                with torch.no_grad():
                    step(False)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3 / reps
        best = ms if best is None or ms < best else best
    return best


step(True)
step(True)
torch.cuda.synchronize()
base = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
step(True)
torch.cuda.synchronize()
peak = (torch.cuda.max_memory_allocated() - base) / 1048576.0
reps = 2 if t >= 2048 else 5
fwd, both = best_ms(False, reps), best_ms(True, reps)
print(f"| torch {torch.__version__} {torch.cuda.get_device_name(0)} | softmax(q k^T) v | {b} | {h} | {t} | {d} | "
      f"{fwd:.3f} | {both:.3f} | {peak:.1f} |")
