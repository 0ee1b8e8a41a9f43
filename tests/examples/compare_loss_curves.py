#!/usr/bin/env python3
"""Compares training loss curves written by cnn_digits --loss-log.

usage: compare_loss_curves.py [--rtol R] REFERENCE OTHER...

Each file has one line per training step, "epoch step loss". Every OTHER
curve must have the reference's steps, and at each step
|loss - reference| <= R * |reference| (R defaults to 1e-4, the agreement asked
of the same net, seed and data on different backends). An empty or
missing file is a backend that did not run here (its test was skipped):
it is reported and left out. Prints, per curve, the number of steps
compared and the worst relative difference with where it happened.
Exit status: 0 all compared curves agree, 1 a curve differs or is
malformed, 77 fewer than two curves to compare, 2 bad usage.
"""
import math
import os
import sys


def read_curve(path):
    """{(epoch, step): loss} in file order, or None when there is nothing."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    curve = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = line.split()
            if len(fields) != 3:
                raise ValueError(f"{path}:{number}: expected 'epoch step loss', got {line.strip()!r}")
            key = (int(fields[0]), int(fields[1]))
            if key in curve:
                raise ValueError(f"{path}:{number}: epoch {key[0]} step {key[1]} appears twice")
            curve[key] = float(fields[2])
    return curve


def main(argv):
    rtol = 1e-4
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--rtol":
        rtol = float(args[1])
        args = args[2:]
    if len(args) < 2 or not rtol > 0:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        curves = [(path, read_curve(path)) for path in args]
    except ValueError as e:
        print(f"FAILED: {e}")
        return 1
    for path, curve in curves:
        if curve is None:
            print(f"skipped: {path} is missing or empty (that backend did not run here)")
    ref_path, ref = curves[0]
    others = [(p, c) for p, c in curves[1:] if c is not None]
    if ref is None or not others:
        print("SKIP: fewer than two loss curves to compare")
        return 77
    status = 0
    for path, curve in others:
        if curve.keys() != ref.keys():
            missing = sorted(ref.keys() - curve.keys())[:3]
            extra = sorted(curve.keys() - ref.keys())[:3]
            print(f"FAILED: {path} has other steps than {ref_path} (missing {missing}, extra {extra})")
            status = 1
            continue
        worst, at = 0.0, None
        for key, r in ref.items():
            v = curve[key]
            d = abs(v - r) / abs(r) if r != 0 else abs(v)
            if math.isnan(d):
                d = math.inf
            if d >= worst:
                worst, at = d, key
        verdict = "ok" if worst <= rtol else "FAILED"
        print(f"{verdict}: {path} vs {ref_path}: {len(ref)} steps, worst relative difference {worst:.3g} "
              f"(epoch {at[0]} step {at[1]}: {curve[at]:.9g} vs {ref[at]:.9g}), limit {rtol:g}")
        if worst > rtol:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
