"""examples/mlp_digits.c in Python: an MLP (64 -> 256 -> ReLU -> 10) learning
the UCI digits on whatever device PORTABLE_BACKEND picks. The same data
split, minibatch order, seeds and ops as the C example, so the loss curve is
the same number for number.

    PORTABLE_BACKEND=opencl python mlp_digits.py [--epochs N] [--data digits.csv.gz] [--loss-log FILE]

--loss-log FILE writes every training step's loss as "epoch step loss" (%.9g),
the file the C example writes with the same option; the tests compare the two
step by step.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

import portable
from portable import nn

SPLIT_SEED, TRAIN_SEED = 42, 0
BATCH, EPOCHS, LEARNING_RATE, MOMENTUM = 64, 15, 0.1, 0.9
_MASK = (1 << 64) - 1


def permutation(n, seed):
    """examples/digits_data.c's digits_permutation: Fisher-Yates on a 64-bit LCG."""
    state = (seed ^ 0x9E3779B97F4A7C15) & _MASK
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        state = (state * 6364136223846793005 + 1442695040888963407) & _MASK
        j = (state >> 33) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return np.array(order)


def load(path):
    with gzip.open(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    return (rows[:, :64].astype(np.float32) / np.float32(16)), rows[:, 64]


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=EPOCHS)
    p.add_argument("--data", default=os.path.join(here, "..", "..", "examples", "data", "digits.csv.gz"))
    p.add_argument("--loss-log", metavar="FILE",
                   help='write "epoch step loss" for every training step to FILE (%%.9g)')
    args = p.parse_args(argv)
    # Opened before any work, as the C example checks its path first: a bad
    # path stops the program at once, not after the training.
    try:
        loss_log = open(args.loss_log, "w") if args.loss_log else None
    except OSError as e:
        p.error(f"--loss-log '{args.loss_log}' cannot be written ({e.strerror}); give a path in a writable folder")
    try:
        return train(args, loss_log)
    finally:
        if loss_log:
            loss_log.close()


def train(args, loss_log):
    """Trains, evaluates and returns the exit status; writes each step's loss to loss_log unless None."""
    pixels, labels = load(args.data)
    order = permutation(len(labels), SPLIT_SEED)
    n_train = int(0.8 * len(labels) + 0.5)
    train_x, train_y = pixels[order[:n_train]], labels[order[:n_train]]
    test_x, test_y = pixels[order[n_train:]], labels[order[n_train:]]

    dev = portable.default_device()
    print(f"training on {dev}: {n_train} train / {len(test_y)} test images of 8x8 digits, batch {BATCH}")
    portable.manual_seed(TRAIN_SEED)
    net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
    opt = portable.optim.SGD(net.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    loss_fn = nn.CrossEntropyLoss()
    steps = (n_train + BATCH - 1) // BATCH
    for epoch in range(1, args.epochs + 1):
        perm = permutation(n_train, 1000 + epoch)
        t0 = time.perf_counter()
        loss_sum = portable.zeros((), device=dev)  # summed on the device: no wait per step
        step_losses = []  # the same: read once the epoch is done
        for step in range(steps):
            rows = perm[step * BATCH:(step + 1) * BATCH]
            x = portable.tensor(train_x[rows], device=dev)
            y = portable.tensor(train_y[rows], device=dev)
            loss = loss_fn(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with portable.no_grad():
                loss_sum = loss_sum + loss * len(rows)
                if loss_log is not None:
                    step_losses.append(loss.detach())
        mean_loss = loss_sum.item() / n_train  # waits for the device
        dt = time.perf_counter() - t0
        for step, l in enumerate(step_losses):
            loss_log.write(f"{epoch} {step} {l.item():.9g}\n")
        print(f"epoch {epoch:2d}  loss {mean_loss:.4f}  {n_train / dt:8.0f} samples/s")

    with portable.no_grad():
        guess = net(portable.tensor(test_x, device=dev)).argmax(1)
        acc = (guess == portable.tensor(test_y, device=dev)).float().mean().item()
    print(f"test accuracy on {dev}: {100 * acc:.2f}% ({len(test_y)} images)")
    return 0 if acc >= 0.95 or args.epochs < EPOCHS else 1


if __name__ == "__main__":
    sys.exit(main())
