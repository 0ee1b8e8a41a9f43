#!/usr/bin/env python3
"""A small search over CLBlast's Xgemm parameters for the OpenCL device at
hand, for the GPU machine's run: CLBlast 1.5.3's database has no entry for
recent NVIDIA GPUs (the H100), so it runs generic parameters there.

CLBlast's own tuners are not in Debian's package, and a full tuning takes
longer than the run has, so this tries a few candidates that satisfy the
Xgemm kernel's constraints (tile sizes divisible by thread counts and vector
widths, local memory within 48 KiB), each in a fresh bench_opencl process
through PORTABLE_OPENCL_TUNING, with CLBlast's defaults measured first and
last. It prints a table sorted by speed and the best entry as a line of the
tuning file format (backends/opencl/device_tuning.c), which a later commit puts
into the compiled-in table with the figures that justify it.

    tune_clblast.py BENCH_OPENCL [--size N] [--candidates K] [--timeout S]
                    [--best-out FILE] [--device-part TEXT]
"""
import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time

NAMES = ["GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG",
         "SA", "SB", "STRM", "STRN", "VWM", "VWN"]


def valid(p):
    """The Xgemm kernel's constraints, as its tuner states them."""
    if p["KWG"] % p["KWI"]:
        return False
    if p["MWG"] % (p["MDIMC"] * p["VWM"]) or p["NWG"] % (p["NDIMC"] * p["VWN"]):
        return False
    if p["MWG"] % (p["MDIMA"] * p["VWM"]) or p["NWG"] % (p["NDIMB"] * p["VWN"]):
        return False
    threads = p["MDIMC"] * p["NDIMC"]
    if p["KWG"] % (threads // p["MDIMA"]) or p["KWG"] % (threads // p["NDIMB"]):
        return False
    if not 64 <= threads <= 1024:
        return False
    local_bytes = 4 * p["KWG"] * (p["MWG"] * p["SA"] + p["NWG"] * p["SB"])
    if local_bytes > 48 * 1024:
        return False
    per_thread = (p["MWG"] // p["MDIMC"]) * (p["NWG"] // p["NDIMC"])
    return 8 <= per_thread <= 64


def candidates(k):
    """k candidates, the likeliest first: 256 threads, 16 to 64 results per
    thread, wide vectors."""
    out = []
    for mwg, nwg, kwg, mdimc, ndimc, vwm, vwn in itertools.product(
            (64, 128), (64, 128), (16, 32), (8, 16, 32), (8, 16, 32), (1, 2, 4, 8), (1, 2, 4, 8)):
        p = dict(GEMMK=0, KREG=1, KWG=kwg, KWI=2, MDIMA=mdimc, MDIMC=mdimc, MWG=mwg, NDIMB=ndimc,
                 NDIMC=ndimc, NWG=nwg, SA=1, SB=1, STRM=0, STRN=0, VWM=vwm, VWN=vwn)
        if valid(p):
            out.append(p)

    def score(p):
        threads = p["MDIMC"] * p["NDIMC"]
        per_thread = (p["MWG"] // p["MDIMC"]) * (p["NWG"] // p["NDIMC"])
        return (threads != 256, abs(per_thread - 32), -(p["VWM"] + p["VWN"]), -p["KWG"], p["MWG"] != p["NWG"])

    out.sort(key=score)
    # Spread the picks over the ranking rather than taking near-duplicates.
    picked, seen = [], set()
    for p in out:
        key = (p["MWG"], p["NWG"], p["MDIMC"], p["NDIMC"])
        if key in seen:
            continue
        seen.add(key)
        picked.append(p)
        if len(picked) == k:
            break
    return picked


def params_text(p):
    return ",".join("%s=%d" % (n, p[n]) for n in NAMES)



def measure(bench, size, tuning_line, timeout):
    """(pt_matmul GFLOP/s, CLBlastSgemm GFLOP/s, note) for one process."""
    env = dict(os.environ)
    path = None
    if tuning_line:
        fd, path = tempfile.mkstemp(prefix="pt_tune_", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(tuning_line + "\n")
        env["PORTABLE_OPENCL_TUNING"] = path
        env["PORTABLE_LOG"] = "info"
    else:
        env.pop("PORTABLE_OPENCL_TUNING", None)
    try:
        r = subprocess.run([bench, "--sizes", str(size), "opencl:0"], env=env, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, "timed out after %d s" % timeout
    finally:
        if path:
            os.unlink(path)
    text = r.stdout + r.stderr
    m = re.search(r"^\|\s*%d\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|" % size, text, re.M)
    if r.returncode != 0 or not m:
        last = text.strip().splitlines()[-1:] or ["no output"]
        return None, None, "exit %d: %s" % (r.returncode, last[0][:120])
    note = ""
    if tuning_line and "applied from" not in text:
        refused = re.search(r"refused by CLBlastOverrideParameters[^\n]*", text)
        note = refused.group(0)[:120] if refused else "not applied"
    return float(m.group(1)), float(m.group(2)), note


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--candidates", type=int, default=10)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--best-out")
    ap.add_argument("--device-part", default="*")
    a = ap.parse_args()
    t0 = time.time()
    # A cold first process compiles every kernel it runs (27 s on PoCL on
    # two cores, past a rehearsal's per-run limit): one untimed run first
    # fills the program caches, so each measured process times products.
    warm = measure(a.bench, a.size, None, 3 * a.timeout)
    rows = []
    base = measure(a.bench, a.size, None, a.timeout)
    rows.append(("CLBlast's defaults (first)", None) + base)
    for p in candidates(a.candidates):
        line = "%s|Xgemm|32|%s" % (a.device_part, params_text(p))
        rows.append((params_text(p), line) + measure(a.bench, a.size, line, a.timeout))
    rows.append(("CLBlast's defaults (last)", None) + measure(a.bench, a.size, None, a.timeout))
    defaults = [r[3] for r in rows if r[1] is None and r[3]]
    default = max(defaults) if defaults else None
    print("### CLBlast Xgemm parameters tried on opencl:0, f32, n = %d (%.0f s)\n" % (a.size, time.time() - t0))
    print("GFLOP/s of CLBlastSgemm called directly and of pt_matmul, one process each, after one "
          "untimed process that filled the program caches%s; ratio = CLBlastSgemm / CLBlast's "
          "defaults (the better of the two default runs).\n" % ("" if warm[0] is not None else " (it failed: " + warm[2] + ")"))
    print("| parameters | CLBlastSgemm GFLOP/s | pt_matmul GFLOP/s | vs defaults | note |")
    print("|---|---:|---:|---:|---|")
    ok = [r for r in rows if r[3] is not None]
    for r in sorted(ok, key=lambda r: -r[3]) + [r for r in rows if r[3] is None]:
        ratio = "%.2f" % (r[3] / default) if r[3] is not None and default else "-"
        fmt = lambda v: ("%.0f" if v >= 100 else "%.1f") % v if v is not None else "-"
        print("| %s | %s | %s | %s | %s |" % (r[0], fmt(r[3]), fmt(r[2]), ratio, r[4] or ""))
    tuned = [r for r in ok if r[1] is not None and not r[4]]
    best = max(tuned, key=lambda r: r[3]) if tuned else None
    print()
    if best and default and best[3] > default:
        print("Best: %.0f GFLOP/s, %.2fx CLBlast's defaults: `%s`" % (best[3], best[3] / default, best[1]))
        if a.best_out:
            with open(a.best_out, "w") as f:
                f.write(best[1] + "\n")
    else:
        print("No candidate beat CLBlast's defaults%s." % (" (%.0f GFLOP/s)" % default if default else ""))
    return 0 if default else 1


if __name__ == "__main__":
    sys.exit(main())
