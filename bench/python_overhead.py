#!/usr/bin/env python3
"""Per-op overhead from Python: a 10-element f32 add (c = a + b, the result
collected) with portable and with PyTorch, both on the cpu, in the same run.
Rounds alternate between the two so that load on the machine hits both alike;
the table gives the median per-op time of each and the ratio.

    PORTABLE_LIBRARY=build/lib/libportable.so PORTABLE_CDEF=build/python/_cdef.h \
        PYTHONPATH=python /usr/bin/python3 bench/python_overhead.py [--rounds 15] [--ops 20000]
"""
import argparse
import statistics
import time

import portable
import torch


def per_op(a, b, n):
    t0 = time.perf_counter()
    for _ in range(n):
        c = a + b
    t = time.perf_counter() - t0
    del c
    return t / n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--ops", type=int, default=20000)
    args = p.parse_args()
    torch.set_num_threads(1)
    pa, pb = portable.rand(10), portable.rand(10)
    ta, tb = torch.rand(10), torch.rand(10)
    per_op(pa, pb, 1000), per_op(ta, tb, 1000)  # warm-up
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(per_op(pa, pb, args.ops))
        theirs.append(per_op(ta, tb, args.ops))
    o, t = statistics.median(ours), statistics.median(theirs)
    print(f"{'10-element add, cpu':<24} {'per op (median)':>16} {'min':>10}")
    print(f"{'portable ' + portable.__version__:<24} {o * 1e6:>13.2f} us {min(ours) * 1e6:>7.2f} us")
    print(f"{'torch ' + torch.__version__:<24} {t * 1e6:>13.2f} us {min(theirs) * 1e6:>7.2f} us")
    print(f"ratio portable / torch: {o / t:.2f}x (median), {min(ours) / min(theirs):.2f}x (min)")


if __name__ == "__main__":
    main()
