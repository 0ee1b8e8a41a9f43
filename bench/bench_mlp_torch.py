#!/usr/bin/env python3
"""One epoch of the digits MLP in PyTorch (CPU), timed: the peer side of
bench/bench_mlp.c, which runs this script and prints both in one table.

Same work as the C side: the UCI digits set (examples/data/digits.csv.gz),
80/20 split, MLP 64 -> 256 -> ReLU -> 10, cross-entropy, SGD lr 0.1 momentum
0.9, batch 64, minibatches gathered from a shuffled order each step, the
epoch's loss summed on the device and read once per epoch. One warm-up epoch,
then EPOCHS timed epochs; prints the median.

  bench_mlp_torch.py --data digits.csv.gz --threads N [--epochs 5] [--batch 64]

Output (last line, parsed by bench_mlp.c):
  torch <version> epoch_seconds <median> min_seconds <min> samples <n> threads <n>
"""
import argparse
import gzip
import statistics
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("torch unavailable: %s" % e)
        return 3
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    with gzip.open(args.data, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    rng = np.random.RandomState(42)
    order = rng.permutation(len(table))
    n_train = int(round(0.8 * len(table)))
    train = table[order[:n_train]]
    x_all = torch.from_numpy((train[:, :64] / 16.0).astype(np.float32))
    y_all = torch.from_numpy(train[:, 64].copy())

    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def epoch(seed):
        perm = torch.from_numpy(np.random.RandomState(seed).permutation(n_train))
        loss_sum = torch.zeros(())
        for first in range(0, n_train, args.batch):
            idx = perm[first:first + args.batch]
            x, y = x_all[idx], y_all[idx]
            loss = loss_fn(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(idx)
        return loss_sum.item() / n_train

    epoch(1000)  # warm-up
    times = []
    for e in range(args.epochs):
        t0 = time.perf_counter()
        loss = epoch(1001 + e)
        times.append(time.perf_counter() - t0)
    print("# last epoch loss %.4f" % loss)
    print("torch %s epoch_seconds %.6f min_seconds %.6f samples %d threads %d"
          % (torch.__version__, statistics.median(times), min(times), n_train, torch.get_num_threads()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
